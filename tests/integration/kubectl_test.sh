#!/usr/bin/env bash
# The real kubectl against a real kvol server: apply (and re-apply after an edit), create, get in
# table form, -o yaml, -o jsonpath, get -w, describe with events, the three patch types, edit,
# delete held by a finalizer, wait, explain, errors, List files, and every seed manifest.
# Usage: kubectl_test.sh KVOL_BINARY TESTS_DIR [sqlite|etcd]
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
BACKEND=${3:-sqlite}
source "$TESTS/integration/lib.sh"
SEEDS=$TESTS/seeds

if [ "$BACKEND" = etcd ]; then
  etcd_start
  kvol_start server --store "$ETCD_URL"
else
  kvol_start server
fi
echo "kvol on $KVOL_URL ($BACKEND)"

# --- apply, and apply again after an edit -------------------------------------------------
expect_eq "apply creates" "storageclass.storage.k8s.io/local-storage created
persistentvolume/nginx-pv created
persistentvolumeclaim/nginx-pvc created" "$(k apply -f "$SEEDS/delay-bound-storage.yml")"
expect_eq "apply again leaves it alone" "storageclass.storage.k8s.io/local-storage unchanged
persistentvolume/nginx-pv unchanged
persistentvolumeclaim/nginx-pvc unchanged" "$(k apply -f "$SEEDS/delay-bound-storage.yml")"
sed 's/storage: 5Gi/storage: 8Gi/' "$SEEDS/delay-bound-storage.yml" >"$WORK/bigger.yml"
expect_contains "apply after an edit patches" "persistentvolume/nginx-pv configured" \
  "$(k apply -f "$WORK/bigger.yml")"
expect_eq "the edit took" "8Gi" "$(kubectl get pv nginx-pv -o jsonpath='{.spec.capacity.storage}')"

# Every other seed manifest goes in unchanged (the two nfs-storage classes are alternatives).
for f in "$SEEDS"/*.yml; do
  case $(basename "$f") in
    delay-bound-storage.yml | nfs-storageclass.yml) continue ;;
  esac
  out=$(k apply -f "$f")
  if grep -q -i "error" <<<"$out"; then fail "apply $f"; echo "$out"; fi
done
expect_eq "replace one nfs-storage class by the other" 'storageclass.storage.k8s.io "nfs-storage" deleted
storageclass.storage.k8s.io/nfs-storage created' \
  "$(k delete sc nfs-storage; k apply -f "$SEEDS/nfs-storageclass.yml")"
expect_eq "everything from the seeds is there" \
  "deployment.apps/nfs-client-provisioner deployment.apps/nginx deployment.apps/nginx-deploy statefulset.apps/web service/kubernetes service/nginx-svc serviceaccount/nfs-client-provisioner" \
  "$(kubectl get deploy,sts,svc,sa -o name | grep -v 'serviceaccount/default' | tr '\n' ' ' | sed 's/ $//')"

# --- create and errors ---------------------------------------------------------------------
cat >"$WORK/pv-local.yaml" <<'YAML'
apiVersion: v1
kind: PersistentVolume
metadata:
  name: local-1
  labels: {tier: gold}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/local-1}
YAML
expect_eq "create" "persistentvolume/local-1 created" "$(k create -f "$WORK/pv-local.yaml")"
expect_contains "create twice" \
  'Error from server (AlreadyExists): error when creating "'"$WORK"'/pv-local.yaml": persistentvolumes "local-1" already exists' \
  "$(kubectl create -f "$WORK/pv-local.yaml" 2>&1)"
expect_eq "get a missing object" 'Error from server (NotFound): persistentvolumes "nope" not found' \
  "$(kubectl get pv nope 2>&1)"
sed 's/storage: 1Gi/storage: -1Gi/; s/local-1/bad/' "$WORK/pv-local.yaml" >"$WORK/pv-bad.yaml"
out=$(kubectl create -f "$WORK/pv-bad.yaml" 2>&1)
expect_contains "invalid object" 'The PersistentVolume "bad" is invalid:' "$out"
expect_contains "invalid object names the field" \
  '* spec.capacity[storage]: Invalid value: "-1Gi": must be greater than zero' "$out"
expect_contains "strict field validation" 'unknown field "metadata.label"' \
  "$(kubectl apply -f "$TESTS/seeds/original/nfs-pv.yml" 2>&1)"
expect_contains "wrong token" "error: You must be logged in to the server (Unauthorized)" \
  "$(kubectl --token=wrong get pv 2>&1)"
expect_eq "health needs no token" "ok" "$(curl -sS --cacert "$KVOL_DIR/pki/ca.crt" "$KVOL_URL/readyz")"

# --- tables, yaml, jsonpath -----------------------------------------------------------------
expect_eq "pv columns" "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS REASON AGE" \
  "$(k get pv | head -1)"
# The PV controller makes a new volume Available.
kubectl wait pv/local-1 --for=jsonpath='{.status.phase}'=Available --timeout=20s >/dev/null
expect_contains "pv row" "local-1 1Gi RWO Retain Available" "$(k get pv local-1)"
expect_eq "pvc columns" "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS AGE" "$(k get pvc | head -1)"
expect_contains "pvc row" "nginx-pvc Pending local-storage" "$(k get pvc nginx-pvc)"
expect_eq "storageclass columns" "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE" \
  "$(k get sc | head -1)"
expect_contains "storageclass row" "local-storage kubernetes.io/no-provisioner Delete WaitForFirstConsumer false" \
  "$(k get sc local-storage)"
expect_eq "wide pod columns" "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES" \
  "$(k get pods -o wide | head -1)"
expect_contains "pod row: the agent sets up its volumes and runs both containers" "emptydir-pod 2/2 Running 0" \
  "$(get_until "2/2 Running" pod emptydir-pod)"
expect_contains "short names and label selectors" "local-1" "$(k get pv -l tier=gold)"
expect_eq "selector excludes" "No resources found" "$(k get pv -l tier=silver)"
expect_contains "yaml" "storageClassName: local-storage" "$(kubectl get pvc nginx-pvc -o yaml)"
expect_contains "yaml has the protection finalizer" "kubernetes.io/pvc-protection" \
  "$(kubectl get pvc nginx-pvc -o yaml)"
expect_eq "jsonpath" "5Gi ReadWriteOnce" \
  "$(kubectl get pvc nginx-pvc -o jsonpath='{.spec.resources.requests.storage} {.spec.accessModes[0]}')"
expect_eq "field selector" "pod/dwapi-pod" "$(kubectl get pods --field-selector metadata.name=dwapi-pod -o name)"

# --- get -w sees a change --------------------------------------------------------------------
timeout 6 kubectl get pv local-1 -w --output-watch-events >"$WORK/watch.out" 2>&1 &
wpid=$!
sleep 1.5
kubectl label pv local-1 watched=yes >/dev/null
wait "$wpid"
expect_contains "watch sees the label change" "MODIFIED" "$(tr -s ' ' <"$WORK/watch.out")"

# --- describe shows events ------------------------------------------------------------------
uid=$(kubectl get pvc nginx-pvc -o jsonpath='{.metadata.uid}')
cat >"$WORK/event.yaml" <<YAML
apiVersion: v1
kind: Event
metadata: {name: nginx-pvc.wffc, namespace: default}
involvedObject: {kind: PersistentVolumeClaim, name: nginx-pvc, namespace: default, uid: "$uid", apiVersion: v1}
reason: WaitForFirstConsumer
message: waiting for first consumer to be created before binding
type: Normal
source: {component: persistentvolume-controller}
count: 10
firstTimestamp: "$(date -u -d '-2 min' +%Y-%m-%dT%H:%M:%SZ)"
lastTimestamp: "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
YAML
kubectl create -f "$WORK/event.yaml" >/dev/null
out=$(k describe pvc nginx-pvc)
expect_contains "describe shows the class" "StorageClass: local-storage" "$out"
expect_contains "describe shows finalizers" "Finalizers: [kubernetes.io/pvc-protection]" "$out"
expect_contains "describe shows events" \
  "Normal WaitForFirstConsumer" "$out"
expect_contains "describe shows the event message" \
  "persistentvolume-controller waiting for first consumer to be created before binding" "$out"

# --- patches and edit -----------------------------------------------------------------------
expect_eq "merge patch" "persistentvolume/local-1 patched" \
  "$(k patch pv local-1 --type=merge -p '{"spec":{"storageClassName":"fast"}}')"
expect_eq "json patch" "persistentvolume/local-1 patched" \
  "$(k patch pv local-1 --type=json -p '[{"op":"replace","path":"/spec/capacity/storage","value":"2Gi"}]')"
expect_eq "strategic merge patch" "persistentvolume/local-1 patched" \
  "$(k patch pv local-1 -p '{"metadata":{"finalizers":["example.com/hold"]}}')"
expect_eq "same patch again" "persistentvolume/local-1 patched (no change)" \
  "$(k patch pv local-1 -p '{"metadata":{"finalizers":["example.com/hold"]}}')"
expect_eq "patched values" "fast 2Gi kubernetes.io/pv-protection example.com/hold" \
  "$(kubectl get pv local-1 -o jsonpath='{.spec.storageClassName} {.spec.capacity.storage} {.metadata.finalizers[*]}')"
cat >"$WORK/editor.sh" <<'SH'
#!/bin/sh
sed -i 's/storage: 2Gi/storage: 3Gi/' "$1"
SH
chmod +x "$WORK/editor.sh"
expect_eq "edit" "persistentvolume/local-1 edited" "$(KUBE_EDITOR="$WORK/editor.sh" k edit pv local-1)"
expect_eq "edited value" "3Gi" "$(kubectl get pv local-1 -o jsonpath='{.spec.capacity.storage}')"

# --- wait, status subresource ---------------------------------------------------------------
kubectl wait pv/local-1 --for=jsonpath='{.metadata.labels.ready}'=yes --timeout=20s >"$WORK/wait.out" 2>&1 &
waitpid=$!
sleep 1
kubectl label pv local-1 ready=yes >/dev/null
wait "$waitpid"
expect_eq "wait for a jsonpath" "persistentvolume/local-1 condition met" "$(cat "$WORK/wait.out")"
k patch pv local-1 --subresource=status --type=merge -p '{"status":{"message":"checked"}}' >/dev/null
expect_eq "status subresource" "checked 3Gi" \
  "$(kubectl get pv local-1 -o jsonpath='{.status.message} {.spec.capacity.storage}')"

# --- delete waits for finalizers ------------------------------------------------------------
kubectl delete pv local-1 --timeout=30s >"$WORK/delete.out" 2>&1 &
delpid=$!
sleep 1.5
expect_contains "held by its finalizers" "local-1 3Gi RWO Retain Terminating" "$(k get pv local-1)"
kill -0 "$delpid" 2>/dev/null || fail "delete returned while finalizers remain"
k patch pv local-1 --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]' >/dev/null
wait "$delpid"
expect_eq "delete finished once the finalizers went" 'persistentvolume "local-1" deleted' \
  "$(cat "$WORK/delete.out")"
expect_eq "and it is gone" 'Error from server (NotFound): persistentvolumes "local-1" not found' \
  "$(kubectl get pv local-1 2>&1)"

# --- explain --------------------------------------------------------------------------------
out=$(kubectl explain pv.spec 2>&1)
expect_contains "explain names the kind" "KIND: PersistentVolume" "$(tr -s ' ' <<<"$out")"
expect_contains "explain shows the type" "FIELD: spec <PersistentVolumeSpec>" "$(tr -s ' ' <<<"$out")"
expect_contains "explain lists fields" "persistentVolumeReclaimPolicy" "$out"

# --- a List file, validated without flags ------------------------------------------------------
# kubectl validates a List against /openapi/v2 in protobuf; the server validates each item.
cat >"$WORK/list.json" <<'JSON'
{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "listed-a"}, "data": {"k": "v"}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "listed-b"}}]}
JSON
expect_eq "kubectl create -f of a List" "$(printf 'configmap/listed-a created\nconfigmap/listed-b created')" \
  "$(kubectl create -f "$WORK/list.json" 2>&1)"
expect_contains "kubectl apply -f of a List" "configmap/listed-b configured" \
  "$(kubectl apply -f "$WORK/list.json" 2>&1)"
sed 's/"listed-b"/"Listed_B"/' "$WORK/list.json" >"$WORK/bad-list.json"
expect_contains "a bad item of a List is refused by the server, naming the field" \
  'metadata.name: Invalid value: "Listed_B"' "$(kubectl create -f "$WORK/bad-list.json" 2>&1)"

finish
