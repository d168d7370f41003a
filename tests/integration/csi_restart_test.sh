#!/usr/bin/env bash
# CSI across failures, with a real kvol server, kubectl and a driver process of its own
# (`kvol csi-driver`, registered with --csi-driver): the driver killed (-9) and started again
# while pods mount its volumes; then the server, with its node agent, killed (-9) and started
# again while pods mount. Every pod ends up running with its volume, staged and published once;
# deleting the pods leaves no mount, no loop device, no staging directory, no VolumeAttachment.
# Usage: csi_restart_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
NODE=restart-node
PODS=12
DRIVER_DIR=$WORK/driver
SOCK=unix://$DRIVER_DIR/csi.sock
mkdir -p "$DRIVER_DIR"

start_driver() {
  "$KVOL_BIN" csi-driver --endpoint "$SOCK" --node-id "$NODE" --data-dir "$DRIVER_DIR/data" \
    >>"$WORK/driver.log" 2>&1 &
  DRIVER_PID=$!
  track "$DRIVER_PID"
  until_true 10 test -S "$DRIVER_DIR/csi.sock" || fail "the driver did not serve"
}
start_server() {
  kvol_start server --node-name "$NODE" --no-bundled-csi-driver --csi-driver "$SOCK"
  ROOT=$KVOL_DIR/agent
}
# mounts_under: mount points below the agent's root, one per line.
mounts_under() { awk -v d="$ROOT/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo; }
running_count() { kubectl get pods -o jsonpath='{.items[*].status.phase}' | tr ' ' '\n' | grep -c Running; }
all_running() { [ "$(running_count)" -eq "$PODS" ]; }
no_pods() { [ -z "$(kubectl get pods -o name)" ]; }
no_attachments() { [ -z "$(kubectl get volumeattachment -o name)" ]; }
# wait_for_first_mount: returns as soon as anything is mounted below the root, looking every
# few milliseconds with builtins only, so that the kill that follows lands while pods mount.
wait_for_first_mount() {
  local deadline=$((SECONDS + 60)) fifo="$WORK/pause.$RANDOM"
  mkfifo "$fifo"
  exec 9<>"$fifo"
  while [ "$SECONDS" -lt "$deadline" ]; do
    while read -r _ _ _ _ mount_point _; do
      [[ $mount_point == "$ROOT/"* ]] && { exec 9>&-; return 0; }
    done </proc/self/mountinfo
    read -r -t 0.005 -u 9 _ || true
  done
  exec 9>&-
  return 1
}
pods() {  # pods PREFIX: one pod per volume, each writing into it
  local i
  for i in $(seq 1 "$PODS"); do
    cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: $1-$i}
spec:
  nodeName: $NODE
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: [sh, -c, "echo $1 > /data/f && sleep 3600"], volumeMounts: [{name: d, mountPath: /data}]}
  volumes:
  - {name: d, persistentVolumeClaim: {claimName: c$i}}
YAML
  done
}
# mount_and_kill PREFIX PID: creates the pods, and kills PID (-9) as soon as anything is mounted.
mount_and_kill() {
  pods "$1" >"$WORK/$1.yaml"
  kubectl create -f "$WORK/$1.yaml" >/dev/null
  wait_for_first_mount || fail "nothing was mounted"
  kill -9 "$2"
  wait "$2" 2>/dev/null
  KILLED_AT=$(mounts_under | wc -l)
  echo "$1: killed with $KILLED_AT of $((3 * PODS)) mounts made"
}
# settled PREFIX: every pod running, each volume staged once and published once, nothing
# doubled, and each pod's words in its volume.
settled() {
  until_true 90 all_running || {
    fail "$(running_count) of $PODS pods running"
    local pod
    kubectl get pods --no-headers | grep -v Running
    for pod in $(kubectl get pods --field-selector=status.phase!=Running -o name); do
      kubectl describe "$pod" | sed -n '/^Events:/,$p'
    done
    grep -E "csi|CSI" "$KVOL_LOG" | tail -40
    echo "the driver's log:"; tail -20 "$WORK/driver.log"
  }
  expect_eq "mounts under the root: a staging, a publish and a kube-api-access tmpfs per pod" \
    $((3 * PODS)) \
    "$(mounts_under | wc -l)"
  expect_eq "no mount doubled" "" "$(mounts_under | sort | uniq -d)"
  # A running pod writes a moment after it starts.
  NEEDLE=$1 until_true 20 all_wrote || fail "$(wrote_count "$1") of $PODS pods wrote their volume"
}
wrote_count() { cat "$ROOT"/pods/*/volumes/kubernetes.io~csi/*/mount/f 2>/dev/null | grep -c "$1"; }
all_wrote() { [ "$(wrote_count "$NEEDLE")" -eq "$PODS" ]; }
cleaned_up() {
  kubectl delete pods --all --wait=false >/dev/null
  until_true 60 no_pods || fail "the pods were not deleted"
  until_true 30 no_attachments || fail "VolumeAttachments stayed after the pods"
  expect_eq "mounts left" 0 "$(mounts_under | wc -l)"
  expect_eq "staging directories left" "" \
    "$(find "$ROOT/plugins/kubernetes.io/csi" -name globalmount 2>/dev/null)"
}

start_driver
start_server
HANDLES=()
for i in $(seq 1 "$PODS"); do
  csi_claim "$SOCK" "pv$i" "c$i" 16 && HANDLES+=("$CSI_HANDLE")
done

# ---- the driver killed while pods mount ------------------------------------------------------
mount_and_kill first "$DRIVER_PID"
sleep 1
start_driver
settled first
cleaned_up

# ---- the server and its agent killed while pods mount ----------------------------------------
mount_and_kill second "$KVOL_PID"
[ "$KILLED_AT" -lt $((3 * PODS)) ] || fail "the kill landed in the middle of mounting"
start_server
settled second
cleaned_up
expect_eq "loop devices attached at the end" 0 \
  "$(losetup -l -n -O BACK-FILE | grep -c "^$DRIVER_DIR/")"
for handle in "${HANDLES[@]}"; do
  "$KVOL_BIN" csi delete-volume --endpoint "$SOCK" --id "$handle" >/dev/null ||
    fail "volume $handle could not be deleted"
done

finish
