#!/usr/bin/env bash
# CSI on one node, with a real kvol server and kubectl: the bundled driver, loop.csi.kvol.io,
# registered for the server's node (CSINode, the Node's csi.volume.kubernetes.io/nodeid
# annotation and topology label); a static PersistentVolume of it used by a pod (attached
# through a VolumeAttachment by the built-in attacher, staged, published), its data seen by the
# next pod, and everything undone after the last; its health as an event; a Block volume, the
# container's device; a volume grown on the node; an inline ephemeral volume, made and removed
# with its pod; a driver run on its own (`kvol csi-driver`) registered with --csi-driver, whose
# limit of one volume per node keeps a second pod off the node until the first goes.
# Usage: csi_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

# ---- the bundled driver ---------------------------------------------------------------------
kvol_start server --volume-stats-agg-period 1s
NODE=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
csinode_has() {
  [ "$(kubectl get csinode "$NODE" -o jsonpath="{.spec.drivers[?(@.name==\"$1\")].nodeID}")" = "$2" ]
}
until_true 20 csinode_has loop.csi.kvol.io "$NODE" || fail "the bundled driver is not in CSINode"
expect_eq "allocatable count" 128 \
  "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[0].allocatable.count}')"
expect_eq "topology keys" topology.csi.kvol.io/node \
  "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[0].topologyKeys[0]}')"
expect_eq "CSINode owner" "Node/$NODE" \
  "$(kubectl get csinode "$NODE" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')"
expect_eq "node id annotation" "{\"loop.csi.kvol.io\":\"$NODE\"}" \
  "$(kubectl get node "$NODE" -o jsonpath='{.metadata.annotations.csi\.volume\.kubernetes\.io/nodeid}')"
expect_eq "topology label" "$NODE" \
  "$(kubectl get node "$NODE" -o jsonpath='{.metadata.labels.topology\.csi\.kvol\.io/node}')"
# ---- a static volume of the bundled driver, used by two pods in turn ------------------------
SOCK="unix://$KVOL_DIR/agent/plugins/loop.csi.kvol.io/csi.sock"
csi_claim "$SOCK" csi-pv data 64
HANDLE=$CSI_HANDLE
pod_with writer 'echo written-by-the-first-pod > /data/f && sleep 3600'
until_true 60 phase_is writer Running || { fail "the writer did not run"; kubectl describe pod writer; }
VA=$(kubectl get volumeattachment -o jsonpath='{.items[0].metadata.name}')
expect_eq "VolumeAttachment named as Kubernetes names it" \
  "csi-$(printf '%s' "${HANDLE}loop.csi.kvol.io$NODE" | sha256sum | cut -d' ' -f1)" "$VA"
expect_eq "attached" true "$(kubectl get volumeattachment "$VA" -o jsonpath='{.status.attached}')"
expect_eq "attacher finalizer" external-attacher/loop.csi.kvol.io \
  "$(kubectl get volumeattachment "$VA" -o jsonpath='{.metadata.finalizers[0]}')"
STAGE="$KVOL_DIR/agent/plugins/kubernetes.io/csi/loop.csi.kvol.io/$(printf '%s' "$HANDLE" | sha256sum | cut -d' ' -f1)"
mountpoint -q "$STAGE/globalmount" || fail "not staged at $STAGE/globalmount"
UID1=$(kubectl get pod writer -o jsonpath='{.metadata.uid}')
PUBLISHED="$KVOL_DIR/agent/pods/$UID1/volumes/kubernetes.io~csi/csi-pv"
mountpoint -q "$PUBLISHED/mount" || fail "not published at $PUBLISHED/mount"
expect_contains "vol_data.json" "\"volumeHandle\":\"$HANDLE\"" "$(cat "$PUBLISHED/vol_data.json")"
# Volume health: the driver's NodeGetVolumeStats says abnormal once the volume's file is gone,
# and the pod gets kubelet's event.
IMG="$KVOL_DIR/csi-loop/volumes/$HANDLE.img"
mv "$IMG" "$IMG.away"
abnormal_event() {
  kubectl get events -o jsonpath='{range .items[?(@.reason=="VolumeConditionAbnormal")]}{.involvedObject.name}: {.message}{"\n"}{end}' |
    grep -qx "writer: Volume d: the volume's file is missing"
}
until_true 20 abnormal_event || fail "no VolumeConditionAbnormal event on the writer"
mv "$IMG.away" "$IMG"
kubectl delete pod writer --wait=true --timeout=60s >/dev/null

pod_with reader 'cat /data/f'
until_true 60 phase_is reader Succeeded || { fail "the reader did not finish"; kubectl describe pod reader; }
expect_eq "the next pod reads the data" written-by-the-first-pod "$(kubectl logs reader)"
kubectl delete pod reader --wait=true --timeout=60s >/dev/null
no_attachments() { [ -z "$(kubectl get volumeattachment -o name)" ]; }
until_true 30 no_attachments || fail "the VolumeAttachment stayed after the last pod"
expect_eq "mounts left" 0 "$(grep -c " $KVOL_DIR/agent/" /proc/self/mountinfo)"
expect_eq "loop devices left" 0 "$(losetup -l -n -O BACK-FILE | grep -c "^$KVOL_DIR/")"
[ -e "$STAGE" ] && fail "the staging directory stayed: $STAGE"
"$KVOL_BIN" csi delete-volume --endpoint "$SOCK" --id "$HANDLE" || fail "the volume was not deleted"

# ---- a Block volume: staged and published as a device, the container's /dev/xvda -----------
csi_claim "$SOCK" csi-block raw 16 ext4 Block
BHANDLE=$CSI_HANDLE
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: raw}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: [sh, -c, "test -b /dev/xvda && printf kvol-csi-block >/dev/xvda && sleep 3600"]
    volumeDevices: [{name: d, devicePath: /dev/xvda}]
  volumes:
  - {name: d, persistentVolumeClaim: {claimName: raw}}
EOF
until_true 60 phase_is raw Running || { fail "the block pod did not run"; kubectl describe pod raw; }
BUID=$(kubectl get pod raw -o jsonpath='{.metadata.uid}')
BLOCK_DIR="$KVOL_DIR/agent/plugins/kubernetes.io/csi/volumeDevices"
expect_eq "the pod's link is the published device" "$BLOCK_DIR/publish/csi-block/$BUID" \
  "$(readlink "$KVOL_DIR/agent/pods/$BUID/volumeDevices/kubernetes.io~csi/csi-block")"
mountpoint -q "$BLOCK_DIR/publish/csi-block/$BUID" || fail "the device is not published"
test -b "$BLOCK_DIR/publish/csi-block/$BUID" || fail "what is published is not a block device"
expect_contains "the block volume's record" "\"specVolID\":\"csi-block\"" \
  "$(cat "$BLOCK_DIR/csi-block/data/vol_data.json")"
test -d "$BLOCK_DIR/staging/csi-block" || fail "the block volume was not staged"
wrote() { [ "$(head -c 14 "$BLOCK_DIR/publish/csi-block/$BUID")" = kvol-csi-block ]; }
until_true 20 wrote || fail "the container did not write its block device"
expect_eq "a block volume is never formatted" "" \
  "$(blkid -s TYPE -o value "$BLOCK_DIR/publish/csi-block/$BUID")"
kubectl delete pod raw --wait=true --timeout=60s >/dev/null
until_true 30 no_attachments || fail "the block volume's VolumeAttachment stayed"
expect_eq "mounts left after the block pod" 0 "$(grep -c " $KVOL_DIR/agent/" /proc/self/mountinfo)"
[ -e "$BLOCK_DIR/csi-block" ] && fail "the block volume's record stayed"
[ -e "$BLOCK_DIR/staging/csi-block" ] && fail "the block volume's staging path stayed"
"$KVOL_BIN" csi delete-volume --endpoint "$SOCK" --id "$BHANDLE" || fail "the block volume stayed"
expect_eq "loop devices left after the block pod" 0 \
  "$(losetup -l -n -O BACK-FILE | grep -c "^$KVOL_DIR/")"

# ---- expansion on the node: NodeExpandVolume once the claim says FileSystemResizePending ------
# The control plane's half (the resizer calling ControllerExpandVolume) is done by hand here:
# the volume grown through the driver, the PersistentVolume's capacity, the claim's condition.
# xfs, which grows online without CAP_SYS_RESOURCE.
csi_claim "$SOCK" csi-grow grow 320 xfs
GHANDLE=$CSI_HANDLE
pod_with grower 'sleep 3600' grow
until_true 60 phase_is grower Running || { fail "the grower did not run"; kubectl describe pod grower; }
GROWN="$KVOL_DIR/agent/pods/$(kubectl get pod grower -o jsonpath='{.metadata.uid}')/volumes/kubernetes.io~csi/csi-grow/mount"
size_of() { df -B1 --output=size "$GROWN" | tail -1 | tr -d ' '; }
BEFORE=$(size_of)
"$KVOL_BIN" csi expand-volume --endpoint "$SOCK" --id "$GHANDLE" --size 402653184 >/dev/null ||
  fail "kvol csi expand-volume"
kubectl patch pv csi-grow --type=merge -p '{"spec":{"capacity":{"storage":"384Mi"}}}' >/dev/null
kubectl patch pvc grow --subresource=status --type=merge \
  -p '{"status":{"conditions":[{"type":"FileSystemResizePending","status":"True"}]}}' >/dev/null
claim_grown() { [ "$(kubectl get pvc grow -o jsonpath='{.status.capacity.storage}')" = 384Mi ]; }
until_true 30 claim_grown || fail "the claim's capacity did not become 384Mi"
expect_eq "no resize condition is left" "" "$(kubectl get pvc grow -o jsonpath='{.status.conditions}')"
AFTER=$(size_of)
[ "$AFTER" -gt $((BEFORE + 50 * 1048576)) ] || fail "the filesystem did not grow: $BEFORE -> $AFTER"
expect_contains "kubelet's event" \
  "MountVolume.NodeExpandVolume succeeded for volume \"csi-grow\"" \
  "$(describe_until "NodeExpandVolume succeeded" pod grower)"
kubectl delete pod grower --wait=true --timeout=60s >/dev/null
until_true 30 no_attachments || fail "the grown volume's VolumeAttachment stayed"
"$KVOL_BIN" csi delete-volume --endpoint "$SOCK" --id "$GHANDLE" || fail "the xfs volume stayed"

# ---- an inline ephemeral volume of the bundled driver ----------------------------------------
expect_eq "the bundled driver's CSIDriver" "true Persistent Ephemeral" \
  "$(kubectl get csidriver loop.csi.kvol.io -o jsonpath='{.spec.attachRequired} {.spec.volumeLifecycleModes[*]}')"
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: [sh, -c, "echo in-an-ephemeral-volume > /scratch/f && cat /scratch/f && df -k /scratch | tail -1 && sleep 3600"]
    volumeMounts: [{name: s, mountPath: /scratch}]
  volumes:
  - name: s
    csi: {driver: loop.csi.kvol.io, volumeAttributes: {size: 32Mi}}
EOF
until_true 60 phase_is scratch Running || { fail "the ephemeral pod did not run"; kubectl describe pod scratch; }
NEEDLE=in-an-ephemeral-volume until_true 20 logs_contain scratch || fail "the pod did not write its volume"
UID2=$(kubectl get pod scratch -o jsonpath='{.metadata.uid}')
EPHEMERAL="$KVOL_DIR/agent/pods/$UID2/volumes/kubernetes.io~csi/s"
mountpoint -q "$EPHEMERAL/mount" || fail "the ephemeral volume is not mounted at $EPHEMERAL/mount"
expect_contains "its record" '"volumeLifecycleMode":"Ephemeral"' "$(cat "$EPHEMERAL/vol_data.json")"
sleep 2  # two gatherings of volume stats (--volume-stats-agg-period 1s)
expect_eq "the ephemeral volume's stats gathered without error" "" \
  "$(grep "volume stats of s (pod $UID2)" "$KVOL_LOG")"
expect_eq "no attachment for an inline volume" "" "$(kubectl get volumeattachment -o name)"
kubectl delete pod scratch --wait=true --timeout=60s >/dev/null
expect_eq "mounts left after the ephemeral pod" 0 "$(grep -c " $KVOL_DIR/agent/" /proc/self/mountinfo)"
expect_eq "loop devices left after the ephemeral pod" 0 \
  "$(losetup -l -n -O BACK-FILE | grep -c "^$KVOL_DIR/")"
expect_eq "the ephemeral volume's file" 0 "$(find "$KVOL_DIR/csi-loop/volumes" -name '*.img' | wc -l)"

kill "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null

# ---- a driver of its own, registered with --csi-driver ---------------------------------------
DRIVER_DIR=$WORK/driver
mkdir -p "$DRIVER_DIR"
"$KVOL_BIN" csi-driver --endpoint "unix://$DRIVER_DIR/csi.sock" --node-id own-node-id \
  --data-dir "$DRIVER_DIR/data" --max-volumes-per-node 1 >"$WORK/driver.log" 2>&1 &
DRIVER_PID=$!
track "$DRIVER_PID"
until_true 10 test -S "$DRIVER_DIR/csi.sock" || fail "the driver did not serve"
kvol_start second --no-bundled-csi-driver --csi-driver "unix://$DRIVER_DIR/csi.sock"
NODE=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
until_true 20 csinode_has loop.csi.kvol.io own-node-id || fail "--csi-driver was not registered"
expect_eq "its volume limit" 1 \
  "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[0].allocatable.count}')"
expect_eq "one driver" 1 "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[*].name}' | wc -w)"
grep -q "registered at unix://$DRIVER_DIR/csi.sock (--csi-driver)" "$KVOL_LOG" ||
  fail "the server did not log the registration"

# ---- its limit of one volume per node, kept by the scheduler ----------------------------------
csi_claim "unix://$DRIVER_DIR/csi.sock" own-pv-1 own-1 32
OWN1=$CSI_HANDLE
csi_claim "unix://$DRIVER_DIR/csi.sock" own-pv-2 own-2 32
OWN2=$CSI_HANDLE
pod_with own-first 'sleep 3600' own-1
until_true 60 phase_is own-first Running || { fail "own-first did not run"; kubectl describe pod own-first; }
pod_with own-second 'echo second-ran > /data/f; sleep 3600' own-2
unschedulable() {
  [ "$(kubectl get pod own-second -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" = Unschedulable ]
}
until_true 10 unschedulable || fail "own-second was not found unschedulable: $(kubectl describe pod own-second)"
expect_eq "the volume limit, in the scheduler's words" \
  "0/1 nodes are available: 1 node(s) exceed max volume count." \
  "$(kubectl get pod own-second -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')"
kubectl delete pod own-first --wait=true --timeout=60s >/dev/null
until_true 60 phase_is own-second Running || { fail "own-second did not run once own-first went"; kubectl describe pod own-second; }
kubectl delete pod own-second --wait=true --timeout=60s >/dev/null
kubectl delete pvc own-1 own-2 --wait=true --timeout=30s >/dev/null
kubectl delete pv own-pv-1 own-pv-2 --wait=true --timeout=30s >/dev/null
for h in "$OWN1" "$OWN2"; do
  "$KVOL_BIN" csi delete-volume --endpoint "unix://$DRIVER_DIR/csi.sock" --id "$h" >/dev/null ||
    fail "volume $h could not be deleted"
done

finish
