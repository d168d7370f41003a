#!/usr/bin/env bash
# Snapshots, restores and clones end to end, with a real kvol server, kubectl and the bundled
# driver: a file written in a claim of the loop class; a snapshot of it (the snapshot controller
# makes its content and protects the claim, the built-in CSI snapshotter takes it) until
# `kubectl get volumesnapshot` says READYTOUSE true; a claim restored from it (its dataSourceRef
# kept in step with its dataSource) and a clone of the claim, where pods read the file; a
# restore that asks for less than the snapshot waits in external-provisioner's words; deleting
# the snapshot removes its content and storage snapshot under Delete and keeps them under
# Retain; and nothing is left behind.
# Usage: snapshot_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
NODE=kvol-snap-node

kvol_start server --node-name "$NODE"
csinode_has_driver() {
  [ -n "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[?(@.name=="loop.csi.kvol.io")].nodeID}')" ]
}
until_true 20 csinode_has_driver || fail "the bundled driver is not in CSINode"

claim() {  # claim NAME SIZE [SOURCE_KIND SOURCE_NAME]
  local source=""
  case "${3:-}" in
    VolumeSnapshot) source="dataSource: {apiGroup: snapshot.storage.k8s.io, kind: VolumeSnapshot, name: $4}" ;;
    PersistentVolumeClaim) source="dataSource: {kind: PersistentVolumeClaim, name: $4}" ;;
  esac
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: loop
  resources: {requests: {storage: $2}}
  $source
YAML
}
snapshot() {  # snapshot NAME CLAIM CLASS
  kubectl apply -f - >/dev/null <<YAML
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: $1}
spec:
  volumeSnapshotClassName: $3
  source: {persistentVolumeClaimName: $2}
YAML
}
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: loop-delete}
driver: loop.csi.kvol.io
deletionPolicy: Delete
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: loop-retain}
driver: loop.csi.kvol.io
deletionPolicy: Retain
YAML
succeeded() { phase_is "$1" Succeeded; }
ready() { [ "$(kubectl get vs "$1" -o jsonpath='{.status.readyToUse}')" = true ]; }
gone() { ! kubectl get "$@" >/dev/null 2>&1; }

# ---- a claim with a file ----------------------------------------------------------------------
claim data 32Mi
pod_with writer "echo kept > /data/file && sync"
until_true 60 succeeded writer || fail "the writer did not finish: $(kubectl describe pod writer)"
kubectl delete pod writer --wait=true >/dev/null

# ---- a snapshot of it -------------------------------------------------------------------------
snapshot s1 data loop-delete
until_true 60 ready s1 || fail "s1 is not ready: $(kubectl get vs s1 -o yaml)"
uid=$(kubectl get vs s1 -o jsonpath='{.metadata.uid}')
expect_eq "kubectl get volumesnapshot" "s1 true data 32Mi loop-delete snapcontent-$uid" \
  "$(k get vs s1 --no-headers | cut -d' ' -f1-6)"
expect_eq "its content" "snapcontent-$uid true 33554432 Delete loop.csi.kvol.io loop-delete s1 default" \
  "$(k get vsc "snapcontent-$uid" --no-headers | cut -d' ' -f1-8)"
expect_eq "the snapshot's finalizers" \
  "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection snapshot.storage.kubernetes.io/volumesnapshot-bound-protection" \
  "$(kubectl get vs s1 -o jsonpath='{.metadata.finalizers[*]}')"
expect_contains "events in external-snapshotter's words" "SnapshotReady" \
  "$(kubectl get events --field-selector involvedObject.kind=VolumeSnapshot,involvedObject.name=s1 -o jsonpath='{.items[*].reason}')"
no_source_finalizer() {
  [ -z "$(kubectl get pvc data -o jsonpath='{.metadata.finalizers[?(@=="snapshot.storage.kubernetes.io/pvc-as-source-protection")]}')" ]
}
until_true 20 no_source_finalizer || fail "the claim keeps pvc-as-source-protection after its snapshot is ready"

# ---- a restore, and a clone -------------------------------------------------------------------
claim restored 32Mi VolumeSnapshot s1
expect_eq "dataSourceRef kept in step with dataSource" "snapshot.storage.k8s.io VolumeSnapshot s1" \
  "$(kubectl get pvc restored -o jsonpath='{.spec.dataSourceRef.apiGroup} {.spec.dataSourceRef.kind} {.spec.dataSourceRef.name}')"
pod_with reader "cat /data/file" restored
until_true 60 succeeded reader || fail "the restore's reader did not finish: $(kubectl describe pod reader; kubectl describe pvc restored)"
NEEDLE=kept until_true 10 logs_contain reader || fail "the restored claim lacks the file"
claim cloned 32Mi PersistentVolumeClaim data
pod_with clone-reader "cat /data/file" cloned
until_true 60 succeeded clone-reader || fail "the clone's reader did not finish: $(kubectl describe pod clone-reader; kubectl describe pvc cloned)"
NEEDLE=kept until_true 10 logs_contain clone-reader || fail "the cloned claim lacks the file"
expect_eq "the clone's source is let go" "kubernetes.io/pvc-protection" \
  "$(kubectl get pvc data -o jsonpath='{.metadata.finalizers[*]}')"

# ---- a restore too small waits, saying why ----------------------------------------------------
claim small 16Mi VolumeSnapshot s1
pod_with small-reader "true" small  # the loop class waits for a consumer
small_refused() {
  kubectl get events --field-selector involvedObject.name=small,reason=ProvisioningFailed \
    -o jsonpath='{.items[*].message}' | grep -q "requested volume size 16777216 is less than the size 33554432 for the source snapshot s1"
}
until_true 30 small_refused || fail "no ProvisioningFailed for a restore smaller than its snapshot: $(kubectl describe pvc small)"
expect_eq "and it stays Pending" "Pending" "$(kubectl get pvc small -o jsonpath='{.status.phase}')"
kubectl delete pod small-reader --wait=true >/dev/null
kubectl delete pvc small --wait=false >/dev/null

# ---- deletion under Delete and Retain -----------------------------------------------------------
snapshot s2 data loop-retain
until_true 60 ready s2 || fail "s2 is not ready: $(kubectl get vs s2 -o yaml)"
uid2=$(kubectl get vs s2 -o jsonpath='{.metadata.uid}')
kubectl delete pod reader clone-reader --wait=true >/dev/null
kubectl delete vs s1 --wait=false >/dev/null
until_true 30 gone vs s1 || fail "s1 stays: $(kubectl get vs s1 -o yaml)"
until_true 30 gone vsc "snapcontent-$uid" || fail "its content stays under Delete"
kubectl delete vs s2 --wait=false >/dev/null
until_true 30 gone vs s2 || fail "s2 stays: $(kubectl get vs s2 -o yaml)"
expect_eq "Retain keeps the content, marked" "yes" \
  "$(kubectl get vsc "snapcontent-$uid2" -o jsonpath='{.metadata.annotations.snapshot\.storage\.kubernetes\.io/volumesnapshot-being-deleted}')"
kubectl delete vsc "snapcontent-$uid2" --wait=false >/dev/null
until_true 30 gone vsc "snapcontent-$uid2" || fail "a released Retain content is not let go when deleted"

# ---- nothing left behind ---------------------------------------------------------------------
kubectl delete pvc restored cloned data --wait=false >/dev/null
no_pvs() { [ -z "$(kubectl get pv -o name)" ]; }
until_true 60 no_pvs || fail "volumes remain: $(kubectl get pv)"
expect_eq "no snapshot objects" "" "$(kubectl get vs,vsc -A -o name)"
expect_eq "no loop devices of this test" "" \
  "$(losetup -l -n -O BACK-FILE | grep -F "$KVOL_DIR" || true)"
finish
