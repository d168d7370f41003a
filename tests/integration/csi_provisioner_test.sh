#!/usr/bin/env bash
# kvol's built-in CSI provisioner with a real kvol server, kubectl and the bundled driver: the
# `loop` class (WaitForFirstConsumer, allowVolumeExpansion); a claim on it is provisioned on the
# node its pod goes to (CreateVolume, a PersistentVolume with the driver's topology as node
# affinity, external-provisioner's events), attached and mounted; the data outlives the pod;
# deleting the claim deletes the volume (DeleteVolume), leaving no PV, file, loop device, mount
# or VolumeAttachment; a class whose secret parameters are wrong says so in
# ProvisioningFailed; with a second node (`kvol agent` with a driver of its own), a claim for a
# pod that must run there is made by that node's driver, with that node as its affinity, and
# removed by it; a claim on an xfs class grows while its pod runs (the built-in resizer's
# ControllerExpandVolume, then NodeExpandVolume; `df` in the container sees it), and a second
# node's pod wanting that ReadWriteOnce claim gets the Multi-Attach error; a local-path claim
# for the second node is made and removed by that node's agent, under its own root; each node's
# driver publishes its free space per class (CSIStorageCapacity), and a claim bigger than any
# leaves its pod unschedulable in kube-scheduler's words; when the second node stops answering,
# its volume stays attached until the node is tainted node.kubernetes.io/out-of-service, then is
# detached by force, and the node, back, finishes the detach and unmounts; a claim of a CSI
# driver kvol does not run is left to its external provisioner, and bound to the volume that
# one writes.
# Usage: csi_provisioner_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
NODE=kvol-prov-node

kvol_start server --node-name "$NODE"
expect_eq "the loop class" "loop.csi.kvol.io WaitForFirstConsumer true Delete" \
  "$(kubectl get storageclass loop -o jsonpath='{.provisioner} {.volumeBindingMode} {.allowVolumeExpansion} {.reclaimPolicy}')"
expect_eq "not the default" "" \
  "$(kubectl get storageclass loop -o jsonpath='{.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}')"
csinode_has_driver() {
  [ -n "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[?(@.name=="loop.csi.kvol.io")].nodeID}')" ]
}
until_true 20 csinode_has_driver || fail "the bundled driver is not in CSINode"

claim() {  # claim NAME CLASS SIZE
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: $2
  resources: {requests: {storage: $3}}
YAML
}
events() {  # events KIND NAME REASON: "component: message" lines
  kubectl get events --field-selector "involvedObject.kind=$1,involvedObject.name=$2,reason=$3" \
    -o jsonpath='{range .items[*]}{.source.component}: {.message}{"\n"}{end}'
}

# ---- storage capacity: what the driver has free on this node, per class, for the scheduler -----
capacities() {  # the node's objects: "class segment capacity" lines
  kubectl get csistoragecapacities -n kube-system \
    -l "csi.storage.k8s.io/managed-by=kvol-provisioner-$1,csi.storage.k8s.io/drivername=loop.csi.kvol.io" \
    -o jsonpath='{range .items[*]}{.storageClassName} {.nodeTopology.matchLabels.topology\.csi\.kvol\.io/node} {.capacity}{"\n"}{end}'
}
has_capacity() { capacities "$NODE" | grep -q "^loop $NODE [0-9]"; }
until_true 20 has_capacity || fail "no CSIStorageCapacity for class loop on $NODE: $(kubectl get csistoragecapacities -A -o yaml)"
expect_eq "kubectl get's columns" "NAME STORAGECLASSNAME CAPACITY" \
  "$(kubectl get csistoragecapacities -n kube-system | head -1 | tr -s ' ')"
claim huge loop 1Pi
pod_with huge-pod 'sleep 3600' huge
no_room() {
  [ "$(kubectl get pod huge-pod -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" = Unschedulable ]
}
until_true 20 no_room || fail "huge-pod was not found unschedulable: $(kubectl describe pod huge-pod)"
expect_eq "no room, in the scheduler's words" \
  "0/1 nodes are available: 1 node(s) did not have enough free storage." \
  "$(kubectl get pod huge-pod -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')"
kubectl delete pod huge-pod --wait=true --timeout=30s >/dev/null
kubectl delete pvc huge --wait=true --timeout=30s >/dev/null

# ---- a claim on loop, provisioned where its pod goes ------------------------------------------
claim data loop 64Mi
sleep 1
expect_eq "waits for its pod" Pending "$(kubectl get pvc data -o jsonpath='{.status.phase}')"
pod_with writer 'echo provisioned > /data/f && sleep 3600' data
until_true 60 phase_is writer Running || { fail "the writer did not run"; kubectl describe pvc data; kubectl describe pod writer; }
UID_C=$(kubectl get pvc data -o jsonpath='{.metadata.uid}')
PV=pvc-$UID_C
expect_eq "bound to the volume named after the claim" "$PV" "$(kubectl get pvc data -o jsonpath='{.spec.volumeName}')"
expect_eq "the PV's source" "loop.csi.kvol.io" "$(kubectl get pv "$PV" -o jsonpath='{.spec.csi.driver}')"
expect_eq "provisioned-by" "loop.csi.kvol.io" \
  "$(kubectl get pv "$PV" -o jsonpath='{.metadata.annotations.pv\.kubernetes\.io/provisioned-by}')"
expect_eq "the driver's topology as node affinity" "topology.csi.kvol.io/node In $NODE" \
  "$(kubectl get pv "$PV" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')"
expect_eq "class, policy, capacity" "loop Delete 64Mi" \
  "$(kubectl get pv "$PV" -o jsonpath='{.spec.storageClassName} {.spec.persistentVolumeReclaimPolicy} {.spec.capacity.storage}')"
expect_eq "the selected node" "$NODE" \
  "$(kubectl get pvc data -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}')"
expect_contains "Provisioning" "csi-provisioner_$NODE: External provisioner is provisioning volume for claim \"default/data\"" \
  "$(events PersistentVolumeClaim data Provisioning)"
expect_eq "ProvisioningSucceeded" "csi-provisioner_$NODE: Successfully provisioned volume $PV" \
  "$(events PersistentVolumeClaim data ProvisioningSucceeded)"
HANDLE=$(kubectl get pv "$PV" -o jsonpath='{.spec.csi.volumeHandle}')
VA="csi-$(printf '%s' "${HANDLE}loop.csi.kvol.io$NODE" | sha256sum | cut -d' ' -f1)"
expect_eq "attached" true "$(kubectl get volumeattachment "$VA" -o jsonpath='{.status.attached}')"
expect_eq "one volume file" 1 "$(find "$KVOL_DIR/csi-loop/volumes" -name '*.img' | wc -l)"

# ---- the data outlives the pod ----------------------------------------------------------------
kubectl delete pod writer --wait=true --timeout=60s >/dev/null || fail "writer deleted"
pod_with reader 'cat /data/f && sleep 3600' data
until_true 60 phase_is reader Running || { fail "the reader did not run"; kubectl describe pod reader; }
NEEDLE=provisioned until_true 10 logs_contain reader || fail "the reader reads what the writer wrote"
kubectl delete pod reader --wait=true --timeout=60s >/dev/null || fail "reader deleted"

# ---- deleting the claim deletes the volume -----------------------------------------------------
kubectl delete pvc data --wait=true --timeout=30s >/dev/null || fail "the claim was not deleted"
pv_gone() { ! kubectl get pv "$PV" >/dev/null 2>&1; }
until_true 30 pv_gone || fail "the PV stayed: $(kubectl get pv "$PV" -o wide)"
expect_eq "no volume file left" 0 "$(find "$KVOL_DIR/csi-loop/volumes" -name '*.img' | wc -l)"
expect_eq "no loop device left" 0 "$(losetup -l -n -O BACK-FILE | grep -c "^$KVOL_DIR/")"
expect_eq "no mount left" 0 "$(grep -c " $KVOL_DIR/agent/" /proc/self/mountinfo)"
no_attachments() { [ -z "$(kubectl get volumeattachment -o name)" ]; }
until_true 30 no_attachments || fail "VolumeAttachments stayed"

# ---- a class whose secrets are wrong -----------------------------------------------------------
kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: half-secret}
provisioner: loop.csi.kvol.io
volumeBindingMode: WaitForFirstConsumer
parameters:
  csi.storage.k8s.io/provisioner-secret-name: creds
YAML
claim bad half-secret 16Mi
pod_with bad-pod 'sleep 3600' bad
failed() { events PersistentVolumeClaim bad ProvisioningFailed | grep -q "both must be given"; }
until_true 30 failed || fail "no ProvisioningFailed for the half-given secret: $(kubectl describe pvc bad)"
expect_contains "the event names the parameters" \
  'failed to provision volume with StorageClass "half-secret": StorageClass parameters csi.storage.k8s.io/provisioner-secret-name and csi.storage.k8s.io/provisioner-secret-namespace: both must be given, or neither' \
  "$(events PersistentVolumeClaim bad ProvisioningFailed)"
kubectl delete pod bad-pod --wait=true --timeout=30s >/dev/null
kubectl delete pvc bad --wait=true --timeout=30s >/dev/null

# ---- a claim grown online: the built-in resizer, then NodeExpandVolume in the running pod -----
# xfs (which grows online without CAP_SYS_RESOURCE) through the class's fstype parameter.
kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: loop-xfs}
provisioner: loop.csi.kvol.io
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
parameters:
  csi.storage.k8s.io/fstype: xfs
YAML
claim grow loop-xfs 320Mi
pod_with grower 'sleep 3600' grow
until_true 60 phase_is grower Running || { fail "the grower did not run"; kubectl describe pvc grow; kubectl describe pod grower; }
GROW_PV=pvc-$(kubectl get pvc grow -o jsonpath='{.metadata.uid}')
df_in_pod() { kubectl exec grower -- df -k /data | tail -1 | awk '{print $2}'; }
BEFORE=$(df_in_pod)
[ -n "$BEFORE" ] && [ "$BEFORE" -gt 0 ] || fail "df in the container: \"$BEFORE\""
kubectl patch pvc grow --type=merge -p '{"spec":{"resources":{"requests":{"storage":"512Mi"}}}}' >/dev/null ||
  fail "the claim's request could not grow"
claim_grown() { [ "$(kubectl get pvc grow -o jsonpath='{.status.capacity.storage}')" = 512Mi ]; }
until_true 60 claim_grown || fail "the claim did not grow: $(kubectl describe pvc grow)"
expect_eq "the volume's capacity" 512Mi "$(kubectl get pv "$GROW_PV" -o jsonpath='{.spec.capacity.storage}')"
expect_eq "no resize condition is left" "" "$(kubectl get pvc grow -o jsonpath='{.status.conditions}')"
AFTER=$(df_in_pod)
[ "$AFTER" -gt $((BEFORE + 150 * 1024)) ] || fail "df in the container did not grow: $BEFORE KiB -> $AFTER KiB"
expect_eq "handed to the built-in resizer" "loop.csi.kvol.io" \
  "$(kubectl get pvc grow -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/storage-resizer}')"
expect_eq "the resizer's events" \
  "csi-resizer_$NODE: External resizer is resizing volume $GROW_PV
csi-resizer_$NODE: Require file system resize of volume on node" \
  "$(events PersistentVolumeClaim grow Resizing; events PersistentVolumeClaim grow FileSystemResizeRequired)"
expect_contains "the node's event" "MountVolume.NodeExpandVolume succeeded for volume \"$GROW_PV\"" \
  "$(events Pod grower FileSystemResizeSuccessful)"

# ---- a second node with a driver of its own: the claim is made where its pod goes -------------
NODE2=kvol-prov-node2
D2=$WORK/driver2
mkdir -p "$D2"
"$KVOL_BIN" csi-driver --endpoint "unix://$D2/csi.sock" --node-id "$NODE2" --data-dir "$D2/data" \
  >"$WORK/driver2.log" 2>&1 &
track $!
until_true 10 test -S "$D2/csi.sock" || fail "the second driver did not serve"
"$KVOL_BIN" agent --server "$KVOL_URL" --token "$(kvol_token)" \
  --certificate-authority "$KVOL_DIR/pki/ca.crt" --node-name "$NODE2" --root-dir "$WORK/node2" \
  --address 127.0.0.1 --port 0 --node-ip 127.0.0.1 --csi-driver "unix://$D2/csi.sock" \
  --local-path-root "$WORK/node2-storage" \
  >"$WORK/agent2.log" 2>&1 &
AGENT2_PID=$!
track "$AGENT2_PID"
until_true 10 grep -q "kvol agent is ready" "$WORK/agent2.log" || fail "kvol agent starts: $(cat "$WORK/agent2.log")"
node2_has_driver() {
  [ -n "$(kubectl get csinode "$NODE2" -o jsonpath='{.spec.drivers[?(@.name=="loop.csi.kvol.io")].nodeID}')" ]
}
until_true 20 node2_has_driver || fail "the second node's driver is not in its CSINode"
node2_capacity() { capacities "$NODE2" | grep -q "^loop $NODE2 [0-9]"; }
until_true 20 node2_capacity || fail "no CSIStorageCapacity for the second node: $(kubectl get csistoragecapacities -A -o yaml)"
claim far loop 32Mi
pod_with far-pod 'echo far > /data/f && sleep 3600' far "$NODE2"
until_true 60 phase_is far-pod Running || { fail "far-pod did not run"; kubectl describe pvc far; kubectl describe pod far-pod; }
FAR_PV=pvc-$(kubectl get pvc far -o jsonpath='{.metadata.uid}')
expect_eq "made for the second node" "$NODE2" \
  "$(kubectl get pv "$FAR_PV" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')"
expect_contains "by the second node's provisioner" "csi-provisioner_$NODE2: Successfully provisioned volume $FAR_PV" \
  "$(events PersistentVolumeClaim far ProvisioningSucceeded)"
expect_eq "its file on the second node's driver" 1 "$(find "$D2/data" -name '*.img' | wc -l)"
expect_eq "none on the first but the grown claim's" 1 "$(find "$KVOL_DIR/csi-loop/volumes" -name '*.img' | wc -l)"

# ---- the second node stops answering: its volume is detached only once it is out of service ----
FAR_VA=$(kubectl get volumeattachment -o jsonpath="{.items[?(@.spec.source.persistentVolumeName==\"$FAR_PV\")].metadata.name}")
[ -n "$FAR_VA" ] || fail "no VolumeAttachment of $FAR_PV: $(kubectl get volumeattachment -o wide)"
va_deleting() { [ -n "$(kubectl get volumeattachment "$FAR_VA" -o jsonpath='{.metadata.deletionTimestamp}' 2>/dev/null)" ]; }
attached_names() { kubectl get node "$1" -o jsonpath='{.status.volumesAttached[*].name}'; }
kill -STOP "$AGENT2_PID"
kubectl delete pod far-pod --force --grace-period=0 >/dev/null 2>&1
sleep 3  # passes of the attach/detach controller
va_deleting && fail "detached from a node that may still use it"
expect_eq "still reported attached" "kubernetes.io/csi/$FAR_PV" "$(attached_names "$NODE2")"
kubectl taint node "$NODE2" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute >/dev/null
until_true 20 va_deleting || fail "not detached from a node out of service: $(kubectl get volumeattachment "$FAR_VA" -o yaml)"
expect_eq "no longer reported attached" "" "$(attached_names "$NODE2")"
forced_in_log() {
  grep -q "force detaching volume kubernetes.io/csi/$FAR_PV from node $NODE2: the node is out of service" "$KVOL_LOG"
}
until_true 5 forced_in_log || fail "the controller did not log the forced detach"
# The node comes back: its attacher finishes the detach and its agent unmounts what is left.
kill -CONT "$AGENT2_PID"
va_gone() { ! kubectl get volumeattachment "$FAR_VA" >/dev/null 2>&1; }
until_true 60 va_gone || fail "the detach did not finish: $(kubectl get volumeattachment "$FAR_VA" -o yaml)"
kubectl taint node "$NODE2" node.kubernetes.io/out-of-service- >/dev/null
no_node2_mount() { ! grep -q " $WORK/node2/" /proc/self/mountinfo; }
until_true 60 no_node2_mount || fail "the second node's mounts stayed: $(grep " $WORK/node2/" /proc/self/mountinfo)"

# ---- the grown ReadWriteOnce claim, wanted on the second node too: Multi-Attach -----------------
# Bound to that node directly, as a pod that bypasses the scheduler (which would not place it
# there: the volume's node affinity).
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: intruder}
spec:
  nodeName: $NODE2
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: [sh, -c, "sleep 3600"], volumeMounts: [{name: d, mountPath: /data}]}
  volumes:
  - {name: d, persistentVolumeClaim: {claimName: grow}}
YAML
multi() { events Pod intruder FailedAttachVolume | grep -q Multi-Attach; }
until_true 30 multi || fail "no Multi-Attach event: $(kubectl describe pod intruder)"
expect_eq "the Multi-Attach error names the pod that holds the volume" \
  "attachdetach-controller: Multi-Attach error for volume \"$GROW_PV\" Volume is already used by pod(s) grower" \
  "$(events Pod intruder FailedAttachVolume)"
kubectl delete pod intruder grower --wait=true --timeout=60s >/dev/null || fail "intruder and grower deleted"
kubectl delete pvc grow --wait=true --timeout=30s >/dev/null || fail "the grown claim was not deleted"
grow_gone() { ! kubectl get pv "$GROW_PV" >/dev/null 2>&1; }
until_true 30 grow_gone || fail "the grown PV stayed: $(kubectl get pv "$GROW_PV" -o wide)"
kubectl delete pvc far --wait=true --timeout=30s >/dev/null || fail "the far claim was not deleted"
far_gone() { ! kubectl get pv "$FAR_PV" >/dev/null 2>&1; }
until_true 30 far_gone || fail "the far PV stayed: $(kubectl get pv "$FAR_PV" -o wide)"
expect_eq "its file removed by the second node's driver" 0 "$(find "$D2/data" -name '*.img' | wc -l)"

# ---- a local-path claim for the second node: made and removed by that node's agent -----------
claim near local-path 16Mi
pod_with near-pod 'echo near > /data/f && sleep 3600' near "$NODE2"
until_true 60 phase_is near-pod Running || { fail "near-pod did not run"; kubectl describe pvc near; kubectl describe pod near-pod; }
NEAR_PV=pvc-$(kubectl get pvc near -o jsonpath='{.metadata.uid}')
NEAR_DIR=$(kubectl get pv "$NEAR_PV" -o jsonpath='{.spec.hostPath.path}')
expect_eq "under the second node's local-path root" "$WORK/node2-storage" "$(dirname "$NEAR_DIR")"
until_true 10 test -s "$NEAR_DIR/f" || fail "the pod did not write into $NEAR_DIR"
expect_eq "what the pod wrote" near "$(cat "$NEAR_DIR/f")"
expect_eq "made by the second node's agent" \
  "kvol.io/local-path_$NODE2: Successfully provisioned volume $NEAR_PV" \
  "$(events PersistentVolumeClaim near ProvisioningSucceeded)"
kubectl delete pod near-pod --wait=true --timeout=60s >/dev/null || fail "near-pod deleted"
kubectl delete pvc near --wait=true --timeout=30s >/dev/null || fail "the near claim was not deleted"
near_gone() { ! kubectl get pv "$NEAR_PV" >/dev/null 2>&1; }
until_true 30 near_gone || fail "the near PV stayed: $(kubectl describe pv "$NEAR_PV")"
[ -e "$NEAR_DIR" ] && fail "the near volume's directory stayed: $NEAR_DIR"

# ---- a CSI driver kvol does not run: the claim is left to its external provisioner --------------
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: nas}
provisioner: nas.csi.example.com
reclaimPolicy: Retain
YAML
claim outside nas 1Gi
handed() {
  [ "$(kubectl get pvc outside -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/storage-provisioner}')" = nas.csi.example.com ]
}
until_true 20 handed || fail "the claim was not handed to its provisioner: $(kubectl describe pvc outside)"
waiting() { events PersistentVolumeClaim outside ExternalProvisioning | grep -q "external provisioner 'nas.csi.example.com'"; }
until_true 20 waiting || fail "no ExternalProvisioning event: $(kubectl describe pvc outside)"
# What external-provisioner writes once its driver has made the volume: a csi PV for the claim.
OUTSIDE_UID=$(kubectl get pvc outside -o jsonpath='{.metadata.uid}')
kubectl create -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pvc-$OUTSIDE_UID
  annotations: {pv.kubernetes.io/provisioned-by: nas.csi.example.com}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: nas
  claimRef: {namespace: default, name: outside, uid: "$OUTSIDE_UID"}
  csi: {driver: nas.csi.example.com, volumeHandle: nas-1, fsType: ext4}
YAML
kubectl wait pvc/outside --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null ||
  fail "the external provisioner's volume was not bound: $(kubectl describe pvc outside)"
expect_eq "bound to the external provisioner's volume" "nas-1" \
  "$(kubectl get pv "pvc-$OUTSIDE_UID" -o jsonpath='{.spec.csi.volumeHandle}')"
expect_eq "kvol's provisioner left it alone all along" "" \
  "$(events PersistentVolumeClaim outside Provisioning)$(events PersistentVolumeClaim outside ProvisioningFailed)"
kubectl delete pvc outside --wait=true --timeout=30s >/dev/null || fail "the outside claim was not deleted"
kubectl delete pv "pvc-$OUTSIDE_UID" --wait=true --timeout=30s >/dev/null || fail "its volume was not deleted"

# ---- nothing is left -----------------------------------------------------------------------------
expect_eq "no volume file left" 0 "$(find "$KVOL_DIR/csi-loop/volumes" -name '*.img' | wc -l)"
expect_eq "no loop device left" 0 "$(losetup -l -n -O BACK-FILE | grep -c "^$KVOL_DIR/")"
expect_eq "no mount left" 0 "$(grep -c " $KVOL_DIR/agent/" /proc/self/mountinfo)"
until_true 30 no_attachments || fail "VolumeAttachments stayed: $(kubectl get volumeattachment)"
expect_eq "no PV left" "" "$(kubectl get pv -o name)"
finish
