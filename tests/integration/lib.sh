# Helpers for integration tests: start a real kvol server (and etcd) on free loopback ports in
# temporary directories, drive it with the real kubectl, and clean everything up on exit, even
# when a check fails. Source this file; call kvol_start, then use kubectl as usual.
set -uo pipefail

KVOL_BIN=${KVOL_BIN:?set KVOL_BIN to the kvol binary}
# Under /tmp unless KVOL_WORK_PARENT names another directory (a test that must see the data
# directory hidden from containers keeps it off /tmp, which containers get a /tmp of their own
# over).
WORK=$(mktemp -d "${KVOL_WORK_PARENT:-/tmp}/kvol-it.XXXXXX")
FAILURES=0
PIDS=()
declare -A PID_STARTS=()  # by PID: its start time when tracked

# proc_start PID: the process's start time (field 22 of /proc/PID/stat), "" if it is gone. With
# its PID it names one process: PIDs are reused (pid_max may be 32,768), so a PID this test
# killed and reaped may be another test's server by the time it cleans up.
proc_start() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

# kill_tracked PID START: kill -9 the process, if PID still names the one started at START.
kill_tracked() { [ -n "$2" ] && [ "$(proc_start "$1")" = "$2" ] && kill -9 "$1" 2>/dev/null; }

# unmount_under DIR: unmounts everything mounted below DIR (node agents mount pods' volumes
# there), deepest first.
unmount_under() {
  awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null; done
}

# kill_containers DIR: kills the containers started under DIR (they outlive a killed agent, as
# containers outlive kubelet); a container dies with its init.
kill_containers() {
  pkill -KILL -f "container-init $1/" 2>/dev/null
  local i
  for i in $(seq 1 50); do
    pgrep -f "container-init $1/" >/dev/null || return 0
    sleep 0.1
  done
}

# detach_loops_under DIR: detaches the loop devices whose files are below DIR (a CSI driver's
# volumes there).
detach_loops_under() {
  losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v d="$1/" 'index($2, d) == 1 { print $1 }' |
    xargs -r -n1 losetup -d 2>/dev/null
}

# cri_sweep: kills the containers of the containerds started under $WORK (`kvol server
# --container-runtime containerd`; containers outlive containerd and its shims), then those
# containerds and their shims.
cri_sweep() {
  local sock id
  for sock in $(find "$WORK" -name containerd.sock -type s 2>/dev/null); do
    for id in $(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null); do
      ctr -a "$sock" -n k8s.io tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1
    done
  done
  pkill -KILL -f "containerd.* $WORK/" 2>/dev/null
}

# at_exit CMD: runs CMD (a shell command line) when the test ends, however it ends: for what
# the test makes outside $WORK (a network bridge).
at_exit() { echo "$*" >>"$WORK/at_exit"; }
run_at_exit() { [ -f "$WORK/at_exit" ] && while read -r cmd; do eval "$cmd"; done <"$WORK/at_exit"; }

cleanup() {
  local pid
  cri_sweep
  for pid in "${PIDS[@]}"; do kill_tracked "$pid" "${PID_STARTS[$pid]:-}"; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  kill_containers "$WORK"
  unmount_under "$WORK"
  # Loop devices (the test's own, and those what it ran made: a FlexVolume driver, a CSI
  # driver) are detached by their files, all below $WORK, never by name: a device detached
  # during the test may since be another test's.
  detach_loops_under "$WORK"
  run_at_exit
  rm -rf "$WORK"
}
trap cleanup EXIT

# A watchdog outlives this script only to kill what it started if the script itself is killed
# (e.g. by a test timeout) before its EXIT trap can run. Forked twice, so that it is no longer
# this script's descendant: ctest ends a timed-out test with its whole process tree.
( (
  parent=$$
  while kill -0 "$parent" 2>/dev/null; do sleep 1; done
  if [ -f "$WORK/pids" ]; then
    while read -r pid start; do kill_tracked "$pid" "$start"; done <"$WORK/pids"
  fi
  cri_sweep
  kill_containers "$WORK"
  unmount_under "$WORK"
  detach_loops_under "$WORK"
  run_at_exit
  rm -rf "$WORK"
) >/dev/null 2>&1 & )

# track PID: remember a process to kill at the end.
track() {
  PIDS+=("$1")
  PID_STARTS[$1]=$(proc_start "$1")
  echo "$1 ${PID_STARTS[$1]}" >>"$WORK/pids"
}

# loop_attach FILE: a loop device backed by FILE (below $WORK), detached at the end; sets LOOP.
loop_attach() {
  LOOP=$(losetup -f --show "$1") || { echo "losetup failed"; exit 1; }
}

fail() {
  echo "FAIL: $*"
  FAILURES=$((FAILURES + 1))
}

finish() {
  if [ "$FAILURES" -gt 0 ]; then
    echo "$FAILURES check(s) failed"
    exit 1
  fi
  echo "all checks passed"
  exit 0
}

# A TCP port on 127.0.0.1 that nothing answers on, below the kernel's ephemeral range, so that
# no client connection of this machine is given it while the test holds it (a server restarted
# on its port would find it taken).
free_port() {
  local p low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
  [ "${low:-0}" -gt 12000 ] || low=32768
  while true; do
    p=$((10000 + RANDOM % (low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return
    fi
  done
}

# etcd from Debian on free ports; sets ETCD_URL. A port found free can be taken by another test
# before etcd binds it, so a start that loses that race is tried again on new ports.
etcd_start() {
  local client peer pid attempt i dir=$WORK/etcd
  mkdir -p "$dir"
  for attempt in 1 2 3 4 5; do
    client=$(free_port)
    peer=$(free_port)
    rm -rf "$dir/data"
    etcd --name kvol-it --data-dir "$dir/data" \
      --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "kvol-it=http://127.0.0.1:$peer" --log-level warn >"$dir/log" 2>&1 &
    pid=$!
    track "$pid"
    ETCD_URL="etcd://127.0.0.1:$client"
    for i in $(seq 1 150); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$client") 2>/dev/null; then
        sleep 0.2  # what answered may be another test's listener while this etcd is failing
        if kill -0 "$pid" 2>/dev/null; then return 0; fi
        break
      fi
      sleep 0.1
    done
    if ! grep -q "address already in use" "$dir/log"; then break; fi
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  echo "etcd did not start:"; cat "$dir/log"
  exit 1
}

# kvol_spawn NAME [server flags...]: starts a server with its data in $WORK/NAME and returns at
# once, without waiting for it. Sets KVOL_PID, KVOL_DIR, KVOL_LOG.
kvol_spawn() {
  local name=$1
  shift
  KVOL_DIR=$WORK/$name
  mkdir -p "$KVOL_DIR"
  local listen=${KVOL_LISTEN:-127.0.0.1:0}
  KVOL_LOG=$WORK/$name.$(date +%s%N).log  # one log per start: a restart must not read the last one
  "$KVOL_BIN" server --data-dir "$KVOL_DIR" --listen "$listen" "$@" >"$KVOL_LOG" 2>&1 &
  KVOL_PID=$!
  track "$KVOL_PID"
}

# kvol_start NAME [server flags...]: kvol_spawn, then waits until the server is ready and points
# kubectl at it (KUBECONFIG, a fresh KUBECACHEDIR). Also sets KVOL_URL.
kvol_start() {
  local name=$1
  kvol_spawn "$@"
  local i
  for i in $(seq 1 300); do
    if grep -q "kvol is ready" "$KVOL_LOG" 2>/dev/null && [ -s "$KVOL_DIR/kubeconfig" ]; then
      export KUBECONFIG=$KVOL_DIR/kubeconfig
      export KUBECACHEDIR=$WORK/kubecache-$name-$RANDOM
      KVOL_URL=$(sed -n 's/^ *server: //p' "$KUBECONFIG")
      # Pods run as their namespace's "default" ServiceAccount and mount the ConfigMap
      # kube-root-ca.crt: a server running its own controllers makes both for "default"
      # before a test's first pod.
      if [[ " $* " != *" --no-controllers "* ]] && ! until_true 60 pods_admitted; then
        echo "kvol server made no default ServiceAccount or kube-root-ca.crt in 60 s:"
        cat "$KVOL_LOG"
        exit 1
      fi
      return 0
    fi
    if ! kill -0 "$KVOL_PID" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "kvol server did not start:"; cat "$KVOL_LOG"
  exit 1
}

kvol_token() { cat "$KVOL_DIR/token"; }

pods_admitted() {
  kcurl -f -o /dev/null "$KVOL_URL/api/v1/namespaces/default/serviceaccounts/default" &&
    kcurl -f -o /dev/null "$KVOL_URL/api/v1/namespaces/default/configmaps/kube-root-ca.crt"
}

# curl against the server with the admin token.
kcurl() { curl -sS --cacert "$KVOL_DIR/pki/ca.crt" -H "Authorization: Bearer $(kvol_token)" "$@"; }

# expect_eq DESCRIPTION WANT GOT
expect_eq() {
  if [ "$2" != "$3" ]; then
    fail "$1"
    echo "  want: $2"
    echo "  got:  $3"
  fi
}

# expect_contains DESCRIPTION NEEDLE HAYSTACK
expect_contains() {
  if ! grep -qF -- "$2" <<<"$3"; then
    fail "$1: missing \"$2\""
    echo "$3" | sed 's/^/  | /'
  fi
}

# k_until TEXT ARGS...: `kubectl ARGS` output (spaces squeezed) once it contains TEXT (something
# a controller writes soon), or the last one after 20 s (a loaded machine is slow).
k_until() {
  local text=$1 out i
  shift
  for i in $(seq 1 200); do
    out=$(k "$@")
    grep -qF -- "$text" <<<"$out" && break
    sleep 0.1
  done
  echo "$out"
}
# describe_until TEXT KIND NAME / get_until TEXT ARGS...: k_until for describe / get.
describe_until() {
  local text=$1
  shift
  k_until "$text" describe "$@"
}
get_until() {
  local text=$1
  shift
  k_until "$text" get "$@"
}

# until_true SECONDS CMD...: runs CMD every 50 ms until it succeeds; false after SECONDS.
# CMD's arguments are expanded once, by the call: to read something again on every try (a
# `$(...)`, a `<(...)`), put the check in a function and pass the function.
until_true() {
  local deadline=$((SECONDS + $1))
  shift
  while ! "$@" >/dev/null 2>&1; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.05
  done
}

# cpu_ticks PATTERN: the CPU ticks (user + system, with their reaped children's) of the processes
# whose command line matches PATTERN; getconf CLK_TCK of them make a second.
cpu_ticks() {
  local ticks=0 pid
  for pid in $(pgrep -f -- "$1"); do
    ticks=$((ticks + $(awk '{ sub(/.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
  done
  echo "$ticks"
}

# proxy_start: `kubectl proxy` on a free port, logging to $WORK/proxy.N.log; sets PROXY_PID and
# PROXY_URL (http://127.0.0.1:PORT). False when it does not serve within 20 s.
proxy_start() {
  local log=$WORK/proxy.$RANDOM.log
  kubectl proxy --port=0 >"$log" 2>&1 &
  PROXY_PID=$!
  track "$PROXY_PID"
  proxy_port() { sed -n 's/^Starting to serve on 127.0.0.1:\([0-9]*\).*/\1/p' "$log"; }
  proxy_serves() { [ -n "$(proxy_port)" ]; }
  until_true 20 proxy_serves || { echo "kubectl proxy did not start: $(cat "$log")"; return 1; }
  PROXY_URL=http://127.0.0.1:$(proxy_port)
}

# browser_start PROFILE_DIR URL: headless Chromium loading URL, its profile in PROFILE_DIR, its
# DevTools protocol (tests/tools/cdp) on a free port; sets BROWSER_PID and DEVTOOLS (that port).
# False when it does not start within 60 s.
browser_start() {
  local browser
  browser=$(command -v chromium || command -v chromium-browser) ||
    { echo "chromium is not installed (scripts/setup --container-runtime containerd installs it)"; return 1; }
  rm -rf "$1"
  "$browser" --headless=new --no-sandbox --disable-gpu --no-first-run --disable-dev-shm-usage \
    --disable-extensions --user-data-dir="$1" --remote-debugging-port=0 --window-size=1366,800 \
    "$2" >"$1.log" 2>&1 &
  BROWSER_PID=$!
  track "$BROWSER_PID"
  devtools_up() { [ -s "$1/DevToolsActivePort" ]; }
  until_true 60 devtools_up "$1" || { echo "chromium did not start: $(tail -5 "$1.log")"; return 1; }
  DEVTOOLS=$(head -1 "$1/DevToolsActivePort")
}

# log_until TEXT: the server's log once it contains TEXT, or as it is after 10 s.
log_until() {
  local i
  for i in $(seq 1 100); do
    grep -qF -- "$1" "$KVOL_LOG" && break
    sleep 0.1
  done
  cat "$KVOL_LOG"
}

# Pods: the phase of pod NAME, and whether it is PHASE; whether `kubectl logs ARGS` holds
# $NEEDLE; how many containers run under the agent's root $ROOT (of pod UID, or all).
phase() { kubectl get pod "$1" -o jsonpath='{.status.phase}'; }
phase_is() { [ "$(phase "$1")" = "$2" ]; }
logs_contain() { kubectl logs "$@" 2>/dev/null | grep -q -- "${NEEDLE:?}"; }
container_procs() { pgrep -f "container-init ${ROOT:?}/containers/${1:+$1/}" | grep -c .; }

# Runs kubectl, squeezing runs of spaces (columns depend on widths), stdout and stderr together.
k() { kubectl "$@" 2>&1 | tr -s ' '; }

# csi_claim ENDPOINT NAME CLAIM MIB [FSTYPE] [MODE]: a volume of MIB MiB of the loop.csi.kvol.io
# driver at ENDPOINT (kvol csi create-volume, named NAME), a PersistentVolume NAME for it and a
# claim CLAIM bound to it (MODE: Filesystem, the default, or Block). Sets CSI_HANDLE to the
# volume's handle; fails (and returns 1) when the driver made none.
csi_claim() {
  local endpoint=$1 name=$2 claim=$3 mib=$4 fs_type=${5:-ext4} mode=${6:-Filesystem}
  local block=()
  [ "$mode" = Block ] && block=(--block)
  CSI_HANDLE=$("$KVOL_BIN" csi create-volume --endpoint "$endpoint" --name "$name" \
    --size $((mib * 1048576)) --fs-type "$fs_type" "${block[@]}" |
    sed -n 's/.*"volumeId":"\([^"]*\)".*/\1/p')
  [ -n "$CSI_HANDLE" ] || { fail "kvol csi create-volume $name gave no volume"; return 1; }
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: $name}
spec:
  capacity: {storage: ${mib}Mi}
  accessModes: [ReadWriteOnce]
  volumeMode: $mode
  storageClassName: ""
  csi: {driver: loop.csi.kvol.io, volumeHandle: $CSI_HANDLE, fsType: $fs_type}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $claim}
spec:
  accessModes: [ReadWriteOnce]
  volumeMode: $mode
  storageClassName: ""
  volumeName: $name
  resources: {requests: {storage: ${mib}Mi}}
YAML
}

# pod_with NAME COMMAND [CLAIM] [NODE_SELECTOR_HOST]: a pod running COMMAND in busybox with
# CLAIM (default: data) at /data; on the node of that hostname when given.
pod_with() {
  local selector=""
  [ -n "${4:-}" ] && selector="nodeSelector: {kubernetes.io/hostname: $4}"
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  $selector
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: [sh, -c, "$2"], volumeMounts: [{name: d, mountPath: /data}]}
  volumes:
  - {name: d, persistentVolumeClaim: {claimName: ${3:-data}}}
YAML
}
