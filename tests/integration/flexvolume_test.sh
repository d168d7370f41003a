#!/usr/bin/env bash
# A FlexVolume driver in a real kvol server, driven with kubectl: a shell driver that attaches
# files as loop devices, installed while the server runs. kvol attaches the volume, formats
# and mounts the device once for the node (the driver's mountdevice is "Not supported", so
# kvol's default runs), binds it into the pod, reports it in the Node's volumesAttached, grows
# it when the claim asks for more (the driver's expandvolume, then xfs_growfs on the node), and
# unmounts and detaches it when the pod goes. The filesystem is xfs, which grows online with
# CAP_SYS_ADMIN alone (ext4's online resize also needs CAP_SYS_RESOURCE, which containers often
# lack); its images are sparse files.
# With ATTACHER "controller" (the default) the attach/detach controller calls the driver's
# attach and detach; with "controller-manager" that controller (and the expand controller's
# expandvolume) runs in `kvol controller-manager`, its own process; with "agent" the node agent
# does (--enable-controller-attach-detach=false) and records each attachment on disk.
# Usage: flexvolume_test.sh KVOL_BINARY TESTS_DIR [ATTACHER]
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
ATTACHER=${3:-controller}
source "$TESTS/integration/lib.sh"

FLEX=$WORK/flex
BACKEND=$WORK/backend
mkdir -p "$FLEX" "$BACKEND/state"
if [ "$ATTACHER" = controller-manager ]; then
  kvol_start server --volume-plugin-dir "$FLEX" --no-controllers
  "$KVOL_BIN" controller-manager --kubeconfig "$KUBECONFIG" --data-dir "$WORK/cm" \
    --flex-volume-plugin-dir "$FLEX" >"$WORK/cm.log" 2>&1 &
  track $!
  # Pods are admitted once its controllers made the default ServiceAccount and kube-root-ca.crt.
  until_true 60 pods_admitted || fail "the controller-manager's controllers run: $(tail -5 "$WORK/cm.log")"
else
  kvol_start server --volume-plugin-dir "$FLEX" \
    --enable-controller-attach-detach=$([ "$ATTACHER" = agent ] && echo false || echo true)
fi
ROOT=$KVOL_DIR/agent
NODE=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')

# ---- the driver, installed after the server started -----------------------------------------
# Volumes are files $BACKEND/<volumeID>.img of the size the option "size" gives (as truncate
# reads it). Every call is
# logged to $BACKEND/calls; the loop devices it makes are listed for the test's clean-up.
mkdir -p "$FLEX/.staging/kvol.io~loop"
cat >"$FLEX/.staging/kvol.io~loop/loop" <<DRIVER
#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
BACKEND=$BACKEND
echo "\$*" >>"\$BACKEND/calls"
ok() { echo "{\"status\": \"Success\"\$1}"; exit 0; }
fail() { echo "{\"status\": \"Failure\", \"message\": \"\$1\"}"; exit 1; }
option() { sed -n "s|.*\"\$1\":\"\\([^\"]*\\)\".*|\\1|p" <<<"\$2"; }
loop_of() { losetup -j "\$1" | cut -d: -f1 | head -n1; }
case "\$1" in
  init) ok ', "capabilities": {"attach": true, "requiresFSResize": true}' ;;
  attach)
    id=\$(option volumeID "\$2"); name=\$(option kubernetes.io/pvOrVolumeName "\$2")
    [ -n "\$id" ] || fail "option volumeID is required"
    img=\$BACKEND/\$id.img
    [ -e "\$img" ] || truncate -s "\$(option size "\$2")" "\$img" || fail "cannot create \$img"
    echo "\$img" >"\$BACKEND/state/\$name"
    dev=\$(loop_of "\$img")
    if [ -z "\$dev" ]; then
      dev=\$(losetup -f --show "\$img") || fail "losetup \$img failed"
    fi
    ok ", \"device\": \"\$dev\"" ;;
  waitforattach) [ -b "\$2" ] && ok ", \"device\": \"\$2\""; fail "\$2 is not a block device" ;;
  detach)
    img=\$(cat "\$BACKEND/state/\$2" 2>/dev/null)
    if [ -n "\$img" ]; then
      for dev in \$(losetup -j "\$img" | cut -d: -f1); do losetup -d "\$dev" || fail "losetup -d \$dev"; done
    fi
    rm -f "\$BACKEND/state/\$2"
    ok ;;
  expandvolume)
    img=\$BACKEND/\$(option volumeID "\$2").img
    truncate -s "\$4" "\$img" || fail "truncate \$img"
    dev=\$(loop_of "\$img"); [ -z "\$dev" ] || losetup -c "\$dev" || fail "losetup -c \$dev"
    ok ;;
  *) echo '{"status": "Not supported"}'; exit 1 ;;
esac
DRIVER
chmod 755 "$FLEX/.staging/kvol.io~loop/loop"
mv "$FLEX/.staging/kvol.io~loop" "$FLEX/"

cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: loop}
provisioner: kvol.io/loop
allowVolumeExpansion: true
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-loop}
spec:
  capacity: {storage: 300Mi}
  accessModes: [ReadWriteOnce]
  storageClassName: loop
  flexVolume:
    driver: kvol.io/loop
    fsType: xfs
    options: {volumeID: vol-1, size: 300M}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: loop
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 300Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo kept >/data/file; sleep infinity"]
    volumeMounts:
    - {name: data, mountPath: /data}
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
YAML

until_true 30 phase_is writer Running || {
  fail "the pod runs: $(k describe pod writer | tail -n 8)"
  log_until "never" | grep -i flex
}

UNIQUE=flexvolume-kvol.io/loop/pv-loop
PLUGIN_DIR=$ROOT/plugins/flexvolume-kvol.io/loop
GLOBAL=$PLUGIN_DIR/mounts/pv-loop
DEV=$(losetup -j "$BACKEND/vol-1.img" | cut -d: -f1)
[ -b "$DEV" ] || fail "the driver attached vol-1 as a loop device: \"$DEV\""
expect_contains "the driver was found after the server started" \
  "FlexVolume driver kvol.io/loop loaded from $FLEX/kvol.io~loop/loop (attach)" "$(cat "$KVOL_LOG")"
if [ "$ATTACHER" = controller-manager ]; then
  expect_contains "and by the controller-manager" \
    "FlexVolume driver kvol.io/loop loaded from $FLEX/kvol.io~loop/loop (attach)" "$(cat "$WORK/cm.log")"
fi

# Attached, formatted and mounted once for the node, then bound into the pod.
attached() { kubectl get node "$NODE" -o jsonpath='{range .status.volumesAttached[*]}{.name}={.devicePath} {end}'; }
# Functions, so that each try of until_true asks again (an argument's $(...) is read once).
attached_has() { attached | grep -q "$1"; }
until_true 20 attached_has "$UNIQUE=$DEV" || fail "Node volumesAttached: $(attached)"
expect_contains "Node volumesInUse" "$UNIQUE" \
  "$(kubectl get node "$NODE" -o jsonpath='{.status.volumesInUse}')"
if [ "$ATTACHER" = agent ]; then
  expect_eq "the agent records the attachment with its device" "$DEV" \
    "$(cat "$PLUGIN_DIR/attachments/pv-loop" 2>&1)"
else
  [ -e "$PLUGIN_DIR/attachments/pv-loop" ] && fail "the agent keeps no record of what it did not attach"
  expect_contains "the controller attached it" 'AttachVolume.Attach succeeded for volume "pv-loop"' \
    "$(kubectl get events --field-selector involvedObject.name=writer,reason=SuccessfulAttachVolume \
      -o jsonpath='{.items[*].message}')"
fi
expect_eq "the device was formatted xfs" "xfs" "$(blkid -o value -s TYPE "$DEV")"
expect_eq "the device is mounted at the global path" "xfs $DEV" \
  "$(awk -v p="$GLOBAL" '$5 == p { for (i = 7; $i != "-"; i++); print $(i+1), $(i+2) }' /proc/self/mountinfo)"
UID_W=$(kubectl get pod writer -o jsonpath='{.metadata.uid}')
POD_DIR=$ROOT/pods/$UID_W/volumes/flexvolume-kvol.io~loop/pv-loop
mountpoint -q "$POD_DIR" || fail "the pod's directory is a mount: $POD_DIR"
until_true 10 test -e "$GLOBAL/file" || fail "what the container wrote is on the volume"
# One process runs the driver, which calls init first; with the controller-manager, two do,
# each calling init whenever it finds the driver.
if [ "$ATTACHER" = controller-manager ]; then
  expect_eq "init once in each process" 2 "$(grep -cx init "$BACKEND/calls")"
  calls=$(cut -d' ' -f1 "$BACKEND/calls" | grep -vx init | tr '\n' ' ')
  expect_contains "the driver's calls, in order" "attach waitforattach mountdevice mount" "$calls"
else
  calls=$(cut -d' ' -f1 "$BACKEND/calls" | tr '\n' ' ')
  expect_contains "the driver's calls, in order" "init attach waitforattach mountdevice mount" "$calls"
fi

# ---- expansion: the claim asks for 600Mi ------------------------------------------------------
kubectl patch pvc data --type merge -p '{"spec":{"resources":{"requests":{"storage":"600Mi"}}}}' >/dev/null ||
  fail "the claim's request may grow"
claim_capacity() { kubectl get pvc data -o jsonpath='{.status.capacity.storage}'; }
claim_capacity_is() { claim_capacity | grep -qx "$1"; }
until_true 30 claim_capacity_is 600Mi || fail "the claim's capacity grew: $(claim_capacity)"
expect_eq "the volume's capacity grew" "600Mi" \
  "$(kubectl get pv pv-loop -o jsonpath='{.spec.capacity.storage}')"
expect_eq "the backing device grew" "629145600" "$(blockdev --getsize64 "$DEV")"
fs_bytes=$(df -B1 --output=size "$GLOBAL" | tail -n1 | tr -d ' ')
[ "$fs_bytes" -gt 500000000 ] || fail "the filesystem grew to the device: $fs_bytes bytes"
expect_eq "no resize condition is left" "" "$(kubectl get pvc data -o jsonpath='{.status.conditions}')"
expect_contains "the node grew the filesystem" \
  "MountVolume.NodeExpandVolume succeeded for volume \"pv-loop\" $NODE" \
  "$(describe_until "NodeExpandVolume succeeded" pod writer)"
expect_contains "the driver expanded the volume" "expandvolume" "$(cat "$BACKEND/calls")"
expect_eq "the data is still there" "kept" "$(cat "$GLOBAL/file")"

# A class without allowVolumeExpansion refuses growth.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fixed}
provisioner: kvol.io/loop
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-fixed}
spec:
  capacity: {storage: 8Mi}
  accessModes: [ReadWriteOnce]
  storageClassName: fixed
  flexVolume: {driver: kvol.io/loop, options: {volumeID: vol-2, size: 8M}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fixed}
spec:
  storageClassName: fixed
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 8Mi}}
YAML
get_until Bound pvc fixed >/dev/null
expect_contains "growth without allowVolumeExpansion is forbidden" \
  'Error from server (Forbidden): persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize' \
  "$(k patch pvc fixed --type merge -p '{"spec":{"resources":{"requests":{"storage":"16Mi"}}}}')"

# ---- the pod goes: unmounted, unmounted for the node, detached --------------------------------
kubectl delete pod writer --wait=false >/dev/null
gone() { ! kubectl get pod writer >/dev/null 2>&1; }
until_true 30 gone || fail "the pod is deleted"
detached() { [ -z "$(losetup -j "$BACKEND/vol-1.img")" ]; }
until_true 20 detached || fail "the loop device was detached: $(losetup -j "$BACKEND/vol-1.img")"
expect_eq "nothing is mounted under the agent's root" "" \
  "$(awk -v d="$ROOT/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo)"
[ -e "$PLUGIN_DIR/attachments/pv-loop" ] && fail "the attachment record is removed"
nothing_attached() { [ -z "$(attached)" ]; }
until_true 20 nothing_attached || fail "Node volumesAttached is empty: $(attached)"
calls=$(cut -d' ' -f1 "$BACKEND/calls" | grep -vx init | tr '\n' ' ')
expect_contains "tear-down calls, in order" "unmount unmountdevice detach" "$calls"

finish
