#!/usr/bin/env bash
# snapshot.storage.k8s.io/v1 served built in, through the real kubectl: discovery and short
# names, apply, the CRDs' printer columns, validation errors that name the field (exactly one
# source, immutable sources, the deletion policy, a content's snapshot reference), the status
# subresource, and explain. The API alone: no controller or node agent acts on the objects.
# Usage: snapshot_api_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server --no-controllers --no-agent
echo "kvol on $KVOL_URL"

# --- discovery ------------------------------------------------------------------------------
expect_eq "the group is discovered" "snapshot.storage.k8s.io/v1" \
  "$(kubectl api-versions | grep '^snapshot.storage.k8s.io/')"
expect_eq "its resources, with short names" \
  "volumesnapshotclasses vsclass,vsclasses false VolumeSnapshotClass
volumesnapshotcontents vsc,vscs false VolumeSnapshotContent
volumesnapshots vs true VolumeSnapshot" \
  "$(kubectl api-resources --api-group=snapshot.storage.k8s.io --no-headers | tr -s ' ' |
     cut -d' ' -f1,2,4,5)"

# --- apply and tables -----------------------------------------------------------------------
cat >"$WORK/snapshots.yaml" <<'YAML'
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: loop
  annotations: {snapshot.storage.kubernetes.io/is-default-class: "true"}
driver: loop.csi.kvol.io
deletionPolicy: Delete
parameters: {speed: fast}
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: s1}
spec:
  volumeSnapshotClassName: loop
  source: {persistentVolumeClaimName: data}
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotContent
metadata: {name: imported}
spec:
  deletionPolicy: Retain
  driver: loop.csi.kvol.io
  source: {snapshotHandle: snap-0001}
  volumeSnapshotRef: {name: s2, namespace: default}
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: s2}
spec:
  source: {volumeSnapshotContentName: imported}
YAML
expect_eq "apply creates them" "volumesnapshotclass.snapshot.storage.k8s.io/loop created
volumesnapshot.snapshot.storage.k8s.io/s1 created
volumesnapshotcontent.snapshot.storage.k8s.io/imported created
volumesnapshot.snapshot.storage.k8s.io/s2 created" "$(k apply -f "$WORK/snapshots.yaml")"
expect_eq "apply again leaves them" "4" \
  "$(k apply -f "$WORK/snapshots.yaml" | grep -c unchanged)"

expect_eq "classes print as the CRD says" "NAME DRIVER DELETIONPOLICY AGE
loop loop.csi.kvol.io Delete" "$(k get vsclass | sed 's/ [0-9]*s$//')"
expect_eq "snapshot columns" \
  "NAME READYTOUSE SOURCEPVC SOURCESNAPSHOTCONTENT RESTORESIZE SNAPSHOTCLASS SNAPSHOTCONTENT CREATIONTIME AGE" \
  "$(k get vs | head -1)"
expect_eq "a snapshot of a claim, not yet taken" "s1 data loop" \
  "$(k get vs s1 --no-headers | sed 's/ [0-9]*s$//')"
expect_eq "content columns" \
  "NAME READYTOUSE RESTORESIZE DELETIONPOLICY DRIVER VOLUMESNAPSHOTCLASS VOLUMESNAPSHOT VOLUMESNAPSHOTNAMESPACE AGE" \
  "$(k get vsc | head -1)"
expect_eq "a pre-provisioned content" "imported Retain loop.csi.kvol.io s2 default" \
  "$(k get vsc imported --no-headers | sed 's/ [0-9]*s$//')"

# --- the status subresource ------------------------------------------------------------------
k patch vs s1 --subresource=status --type=merge \
  -p '{"status":{"readyToUse":true,"restoreSize":"16Mi","boundVolumeSnapshotContentName":"snapcontent-x"}}' >/dev/null
expect_eq "status is written through /status" "s1 true data 16Mi loop snapcontent-x" \
  "$(k get vs s1 --no-headers | sed 's/ [0-9]*s$//')"
k patch vs s1 --type=merge -p '{"status":{"readyToUse":false},"metadata":{"labels":{"a":"b"}}}' >/dev/null
expect_eq "and not through the object itself" "true b" \
  "$(kubectl get vs s1 -o jsonpath='{.status.readyToUse} {.metadata.labels.a}')"
k patch vsc imported --subresource=status --type=merge \
  -p '{"status":{"snapshotHandle":"snap-0001","readyToUse":true,"restoreSize":16777216,"creationTime":1700000000000000000}}' >/dev/null
expect_eq "a content's status in bytes and nanoseconds" "imported true 16777216 Retain" \
  "$(k get vsc imported --no-headers | cut -d' ' -f1-4)"

# --- validation names the field -------------------------------------------------------------
bad() {  # bad NAME MANIFEST EXPECTED: creating MANIFEST fails with EXPECTED in the error
  printf '%s\n' "$2" >"$WORK/bad.yaml"
  expect_contains "$1" "$3" "$(kubectl create -f "$WORK/bad.yaml" 2>&1)"
}
bad "a snapshot of a claim and a content at once" '
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: both}
spec: {source: {persistentVolumeClaimName: a, volumeSnapshotContentName: b}}' \
  'spec.source: Invalid value: "object": exactly one of volumeSnapshotContentName and persistentVolumeClaimName must be set'
bad "an empty class name" '
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata: {name: noclass}
spec: {volumeSnapshotClassName: "", source: {persistentVolumeClaimName: a}}' \
  'spec.volumeSnapshotClassName: Invalid value: "string": volumeSnapshotClassName must not be the empty string when set'
bad "a deletion policy that does not exist" '
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata: {name: keep}
driver: loop.csi.kvol.io
deletionPolicy: Keep' \
  'deletionPolicy: Unsupported value: "Keep": supported values: "Delete", "Retain"'
bad "a content without its snapshot" '
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotContent
metadata: {name: orphan}
spec: {deletionPolicy: Delete, driver: loop.csi.kvol.io, source: {snapshotHandle: x}}' \
  'spec.volumeSnapshotRef: Required value'
bad "a content with both handles" '
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotContent
metadata: {name: twohandles}
spec:
  deletionPolicy: Delete
  driver: loop.csi.kvol.io
  source: {snapshotHandle: snap-x, volumeHandle: vol-y}
  volumeSnapshotRef: {name: s, namespace: default}' \
  'spec.source: Invalid value: "object": exactly one of volumeHandle and snapshotHandle must be set'
expect_contains "a snapshot's source claim cannot change" \
  'spec.source.persistentVolumeClaimName: Invalid value: "string": persistentVolumeClaimName is immutable' \
  "$(kubectl patch vs s1 --type=merge -p '{"spec":{"source":{"persistentVolumeClaimName":"other"}}}' 2>&1)"
expect_contains "a content's handle cannot change" \
  'spec.source.snapshotHandle: Invalid value: "string": snapshotHandle is immutable' \
  "$(kubectl patch vsc imported --type=merge -p '{"spec":{"source":{"snapshotHandle":"snap-0002"}}}' 2>&1)"
expect_eq "nothing half-written" "s1 s2" "$(kubectl get vs -o name | sed 's|.*/||' | tr '\n' ' ' | sed 's/ $//')"

# --- explain --------------------------------------------------------------------------------
out=$(kubectl explain volumesnapshot.spec.source 2>&1 | tr -s ' ')
expect_contains "explain names the kind" "KIND: VolumeSnapshot" "$out"
expect_contains "explain lists the source's fields" "persistentVolumeClaimName" "$out"
expect_contains "explain knows contents" "volumeSnapshotRef" \
  "$(kubectl explain vsc.spec 2>&1)"

# --- delete ---------------------------------------------------------------------------------
expect_eq "delete" 'volumesnapshot.snapshot.storage.k8s.io "s1" deleted' "$(k delete vs s1)"
finish
