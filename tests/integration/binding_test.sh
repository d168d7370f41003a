#!/usr/bin/env bash
# The PV controller inside a real kvol server, driven with the real kubectl: the seed's static
# NFS volume and its claim with a label selector bind; the seed's delayed-binding claim waits
# for its first consumer; a claim naming a volume that does not fit says why; an external
# provisioner's claim is annotated and waits; protection holds a claim while a pod uses it and a
# volume while it is Bound, then lets both go; kvol.io/local-path and the nfs-subdir
# provisioner make volumes and delete (or archive) them; Recycle scrubs a volume for reuse;
# `kvol controller-manager` does the same from its own process over HTTPS.
# Usage: binding_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
SEEDS=$TESTS/seeds

kvol_start server
expect_contains "the controllers start" "persistentvolume-controller, pvc-protection, pv-protection" \
  "$(log_until "persistentvolume-controller")"

# --- the seed's static NFS volume and its claim with a selector ------------------------------
# A bigger, unlabelled volume of the same class must not be taken: the selector excludes it.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: decoy}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: slow
  hostPath: {path: /tmp/decoy}
YAML
k apply -f "$SEEDS/nfs-pv.yml" -f "$SEEDS/nfs-pvc.yml" >/dev/null
kubectl wait pvc/nfs-pvc --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null ||
  fail "nfs-pvc did not bind"
expect_contains "kubectl get pv shows the binding" "nfs-pv 5Gi RWO Recycle Bound default/nfs-pvc slow" \
  "$(k get pv nfs-pv)"
expect_contains "kubectl get pvc shows the binding" "nfs-pvc Bound nfs-pv 5Gi RWO slow" "$(k get pvc nfs-pvc)"
expect_contains "the decoy stays free" "decoy 5Gi RWO Retain Available slow" "$(k get pv decoy)"
expect_eq "annotations of a controller binding" "yes yes yes" \
  "$(kubectl get pvc nfs-pvc -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/bind-completed} {.metadata.annotations.pv\.kubernetes\.io/bound-by-controller}') $(kubectl get pv nfs-pv -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/bound-by-controller}')"
expect_eq "the volume points at the claim instance" "$(kubectl get pvc nfs-pvc -o jsonpath='{.metadata.uid}')" \
  "$(kubectl get pv nfs-pv -o jsonpath='{.spec.claimRef.uid}')"

# --- the seed's delayed binding: Pending until a consumer exists ------------------------------
k apply -f "$SEEDS/delay-bound-storage.yml" >/dev/null
kubectl wait pv/nginx-pv --for=jsonpath='{.status.phase}'=Available --timeout=20s >/dev/null
out=$(describe_until "WaitForFirstConsumer" pvc nginx-pvc)
expect_contains "describe shows the wait" \
  "Normal WaitForFirstConsumer" "$out"
expect_contains "in Kubernetes' words" \
  "persistentvolume-controller waiting for first consumer to be created before binding" "$out"
expect_contains "the claim stays Pending" "nginx-pvc Pending local-storage" "$(k get pvc nginx-pvc)"
expect_contains "and the volume Available" "nginx-pv 5Gi RWO Delete Available local-storage" \
  "$(k get pv nginx-pv)"

# --- a claim that names a volume too small for it ---------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: tiny}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/tiny}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: wants-tiny}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: tiny
  resources: {requests: {storage: 2Gi}}
YAML
out=$(describe_until "VolumeMismatch" pvc wants-tiny)
expect_contains "a mismatch is explained" \
  'Cannot bind to requested volume "tiny": requested PV is too small' "$out"

# --- an external provisioner's claim ----------------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: external}
provisioner: example.com/nas
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: from-nas}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: external
  resources: {requests: {storage: 1Gi}}
YAML
kubectl wait pvc/from-nas --timeout=20s \
  --for=jsonpath='{.metadata.annotations.volume\.kubernetes\.io/storage-provisioner}'=example.com/nas \
  >/dev/null || fail "the claim was not handed to its provisioner"
out=$(describe_until "ExternalProvisioning" pvc from-nas)
expect_contains "the external provisioner is named" \
  "Waiting for a volume to be created either by the external provisioner 'example.com/nas' or manually by the system administrator." "$out"
# A volume the "provisioner" makes, pre-bound to the claim, is taken at once.
uid=$(kubectl get pvc from-nas -o jsonpath='{.metadata.uid}')
cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pvc-$uid
  annotations: {pv.kubernetes.io/provisioned-by: example.com/nas}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: external
  claimRef: {namespace: default, name: from-nas, uid: "$uid"}
  hostPath: {path: /tmp/from-nas}
YAML
kubectl wait pvc/from-nas --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null ||
  fail "the provisioned volume was not bound"
expect_eq "bound to the provisioned volume" "pvc-$uid" "$(kubectl get pvc from-nas -o jsonpath='{.spec.volumeName}')"

# --- a deleted claim releases its Retain volume -----------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: keep}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: /tmp/keep}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: short-lived}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  resources: {requests: {storage: 1Gi}}
YAML
kubectl wait pvc/short-lived --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null ||
  fail "short-lived did not bind"
# A pod uses the claim: deleting the claim leaves it Terminating until the pod goes.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: short-lived}}]
YAML
kubectl delete pvc short-lived --wait=false >/dev/null
sleep 1
expect_contains "a claim in use stays Terminating" "short-lived Terminating keep 1Gi RWX" "$(k get pvc short-lived)"
expect_eq "held by its protection finalizer" "kubernetes.io/pvc-protection" \
  "$(kubectl get pvc short-lived -o jsonpath='{.metadata.finalizers[*]}')"
# A Bound volume being deleted stays too.
kubectl delete pv keep --wait=false >/dev/null
sleep 0.5
expect_contains "a Bound volume stays Terminating" "keep 1Gi RWX Retain Terminating default/short-lived" \
  "$(k get pv keep)"
kubectl delete pod user >/dev/null
kubectl wait pvc/short-lived --for=delete --timeout=20s >/dev/null || fail "the claim was not let go"
# Its volume is Released (Retain), which also lets its own deletion finish.
kubectl wait pv/keep --for=delete --timeout=20s >/dev/null || fail "the released volume was not let go"

# A claim nothing uses goes at once; its Retain volume is Released and kept.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: kept}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadOnlyMany]
  hostPath: {path: /tmp/kept}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: unused}
spec:
  accessModes: [ReadOnlyMany]
  storageClassName: ""
  resources: {requests: {storage: 1Gi}}
YAML
kubectl wait pvc/unused --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null || fail "unused did not bind"
expect_eq "an unused claim is deleted at once" 'persistentvolumeclaim "unused" deleted' \
  "$(kubectl delete pvc unused --timeout=20s 2>&1)"
kubectl wait pv/kept --for=jsonpath='{.status.phase}'=Released --timeout=20s >/dev/null ||
  fail "kept was not released"
expect_contains "Released and kept" "kept 1Gi ROX Retain Released default/unused" "$(k get pv kept)"

# --- provisioning: kvol.io/local-path --------------------------------------------------------
expect_contains "local-path is the default class" \
  "local-path (default) kvol.io/local-path Delete WaitForFirstConsumer false" "$(k get sc local-path)"
node=$(sed -n 's/.*provisioners: kvol.io\/local-path (default class local-path) on \([^,]*\),.*/\1/p' "$KVOL_LOG")
[ -n "$node" ] || fail "the log does not name this node"
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-now}
provisioner: kvol.io/local-path
volumeBindingMode: Immediate
YAML
# local_now_claim NAME SIZE: a claim of class local-now, waited for until Bound; its uid in $uid.
local_now_claim() {
  kubectl create -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: local-now
  resources: {requests: {storage: $2}}
YAML
  kubectl wait "pvc/$1" --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null ||
    fail "$1 was not provisioned"
  uid=$(kubectl get pvc "$1" -o jsonpath='{.metadata.uid}')
}
local_now_claim scratch 2Gi
expect_contains "bound to pvc-<uid>" "scratch Bound pvc-$uid 2Gi RWO local-now" "$(k get pvc scratch)"
expect_contains "the PV" "pvc-$uid 2Gi RWO Delete Bound default/scratch local-now" "$(k get pv "pvc-$uid")"
dir="$KVOL_DIR/storage/pvc-${uid}_default_scratch"
expect_eq "a hostPath directory under the root" "$dir DirectoryOrCreate" \
  "$(kubectl get pv "pvc-$uid" -o jsonpath='{.spec.hostPath.path} {.spec.hostPath.type}')"
[ -d "$dir" ] || fail "$dir was not made"
expect_eq "node affinity to this node" "kubernetes.io/hostname In $node" \
  "$(kubectl get pv "pvc-$uid" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')"
expect_eq "provisioned-by" "kvol.io/local-path" \
  "$(kubectl get pv "pvc-$uid" -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/provisioned-by}')"
expect_contains "the claim's events" "Successfully provisioned volume pvc-$uid using kvol.io/local-path" \
  "$(k describe pvc scratch)"
touch "$dir/data"
kubectl delete pvc scratch --timeout=20s >/dev/null
kubectl wait pv/"pvc-$uid" --for=delete --timeout=20s >/dev/null || fail "the provisioned volume was not deleted"
[ ! -e "$dir" ] || fail "$dir is still there"
# The volume deleted before its claim: it waits, Terminating, and its storage still goes with
# the claim (the controller's kubernetes.io/pv-controller finalizer holds it until then).
local_now_claim outlived 1Gi
dir="$KVOL_DIR/storage/pvc-${uid}_default_outlived"
expect_contains "both finalizers" "kubernetes.io/pv-controller kubernetes.io/pv-protection" \
  "$(kubectl get pv "pvc-$uid" -o jsonpath='{range .metadata.finalizers[*]}{@}{" "}{end}' | tr ' ' '\n' | sort | xargs)"
kubectl delete pv "pvc-$uid" --wait=false >/dev/null
expect_contains "the deleted volume waits" "pvc-$uid 1Gi RWO Delete Terminating default/outlived local-now" \
  "$(k get pv "pvc-$uid")"
[ -d "$dir" ] || fail "$dir went with the volume object while its claim is bound"
kubectl delete pvc outlived --timeout=20s >/dev/null
kubectl wait pv/"pvc-$uid" --for=delete --timeout=20s >/dev/null || fail "the deleted volume was not let go"
[ ! -e "$dir" ] || fail "$dir was left behind by a volume deleted before its claim"

# --- provisioning: the seed's nfs-subdir class -------------------------------------------------
k apply -f "$SEEDS/nfs-storageclass.yml" >/dev/null   # archiveOnDelete: "false"
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: shared-data}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: nfs-storage
  resources: {requests: {storage: 1Gi}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: nfs-archive}
provisioner: k8s-sigs.io/nfs-subdir-external-provisioner
parameters: {pathPattern: "${.PVC.namespace}/${.PVC.name}"}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: archived-data}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: nfs-archive
  resources: {requests: {storage: 1Gi}}
YAML
kubectl wait pvc/shared-data pvc/archived-data --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null ||
  fail "the subdir claims were not provisioned"
uid=$(kubectl get pvc shared-data -o jsonpath='{.metadata.uid}')
dir="$KVOL_DIR/shared/default-shared-data-pvc-$uid"
expect_eq "one directory per volume on the share" "$dir" \
  "$(kubectl get pv "pvc-$uid" -o jsonpath='{.spec.hostPath.path}')"
[ -d "$dir" ] || fail "$dir was not made"
[ -d "$KVOL_DIR/shared/default/archived-data" ] || fail "pathPattern was not followed"
kubectl delete pvc shared-data archived-data --timeout=20s >/dev/null
kubectl wait pv/"pvc-$uid" --for=delete --timeout=20s >/dev/null || fail "the subdir volume was not deleted"
[ ! -e "$dir" ] || fail "archiveOnDelete=false left $dir"
for i in $(seq 1 50); do [ -d "$KVOL_DIR/shared/default/archived-archived-data" ] && break; sleep 0.1; done
[ -d "$KVOL_DIR/shared/default/archived-archived-data" ] || fail "the default is to archive"

# --- Recycle ---------------------------------------------------------------------------------
mkdir -p "$WORK/recycled/sub"
touch "$WORK/recycled/old" "$WORK/recycled/sub/older"
cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: reusable}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Recycle
  storageClassName: reuse
  hostPath: {path: $WORK/recycled}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: borrower}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: reuse
  resources: {requests: {storage: 1Gi}}
YAML
kubectl wait pvc/borrower --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null || fail "borrower did not bind"
kubectl delete pvc borrower --timeout=20s >/dev/null
kubectl wait pv/reusable --for=jsonpath='{.status.phase}'=Available --timeout=20s >/dev/null ||
  fail "the recycled volume is not Available again"
expect_eq "scrubbed" "" "$(ls -A "$WORK/recycled")"
[ -d "$WORK/recycled" ] || fail "the volume's directory itself must stay"
expect_contains "recycled, with an event" "Volume recycled" "$(k describe pv reusable)"
expect_eq "and free again" "" "$(kubectl get pv reusable -o jsonpath='{.spec.claimRef}')"

# --- the controllers as their own process, over HTTPS -----------------------------------------
kill "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null
kvol_start apart --no-controllers
expect_contains "a server without controllers says so" "controllers: not run here (--no-controllers)" \
  "$(cat "$KVOL_LOG")"
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: remote}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/remote}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: remote}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  resources: {requests: {storage: 1Gi}}
YAML
sleep 0.5
expect_contains "nothing binds without controllers" "remote Pending" "$(k get pvc remote)"
"$KVOL_BIN" controller-manager --kubeconfig "$KUBECONFIG" --data-dir "$WORK/cm" >"$WORK/cm.log" 2>&1 &
track $!
kubectl wait pvc/remote --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null ||
  fail "the controller-manager did not bind the claim"
expect_contains "the controller-manager names its server" "controller-manager: API server $KVOL_URL" \
  "$(cat "$WORK/cm.log")"
expect_eq "it holds the controllers' Lease" "1" \
  "$(kubectl -n kube-system get lease kvol-controller-manager -o jsonpath='{.spec.holderIdentity}' | grep -c "_$!$")"

finish
