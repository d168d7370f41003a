#!/usr/bin/env bash
# Pods that run, in a real kvol server with its node agent, driven with kubectl: containers are
# real processes that see their volumes at mountPath (shared emptyDir, readOnly, subPath), get
# their environment (values, $(VAR), fieldRef, ConfigMap keys), run init containers first, are
# restarted with crash-loop back-off (`kubectl logs --previous`), end in the phase their restart
# policy gives, are stopped with SIGTERM (then SIGKILL) when the pod is deleted, leave no
# process, mount or directory behind, do not inherit the server's allocator settings, and
# survive the agent being killed.
# Usage: pods_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server
ROOT=$KVOL_DIR/agent

uid_of() { kubectl get pod "$1" -o jsonpath='{.metadata.uid}'; }

# ---- two containers sharing an emptyDir; readOnly; subPath -----------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {level: debug}
---
apiVersion: v1
kind: Pod
metadata: {name: share, labels: {app: share}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c1
    image: busybox
    command: ["sh", "-c", "echo hello >/path1/abc.txt; echo inside >/path1/sub/dir/inner.txt; sleep infinity"]
    volumeMounts:
    - {name: cache-volume, mountPath: /path1}
  - name: c2
    image: busybox
    command: ["sh", "-c"]
    args:
    - |
      until [ -e /path2/abc.txt ]; do sleep 0.1; done
      echo "c2 sees: $(ls /path2 | tr '\n' ' ')"
      touch /path2/x 2>/dev/null && echo "wrote" || echo "read-only refused"
      until [ -e /sub/inner.txt ]; do sleep 0.1; done
      echo "subPath sees: $(ls /sub)"
      echo "env: $POD_NAME $NODE $LEVEL $(GREETING) / $MESSAGE"
      echo "hostname: $(hostname)"
      echo "pid: $$$$"
      sleep infinity
    env:
    - {name: GREETING, value: hello}
    - {name: MESSAGE, value: "$(GREETING) world"}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    - name: LEVEL
      valueFrom: {configMapKeyRef: {name: settings, key: level}}
    volumeMounts:
    - {name: cache-volume, mountPath: /path2, readOnly: true}
    - {name: cache-volume, mountPath: /sub, subPath: sub/dir}
  volumes:
  - name: cache-volume
    emptyDir: {}
YAML
until_true 20 phase_is share Running || fail "the pod runs: $(phase share)"
NEEDLE="pid: 1" until_true 20 logs_contain share -c c2 || fail "c2 logged: $(kubectl logs share -c c2 2>&1)"
out=$(kubectl logs share -c c2)
expect_contains "c2 sees what c1 wrote in the shared emptyDir" "c2 sees: abc.txt sub " "$out"
expect_contains "a readOnly mount refuses writes" "read-only refused" "$out"
expect_contains "subPath mounts the directory inside the volume" "subPath sees: inner.txt" "$out"
expect_contains "env: fieldRef, ConfigMap key, \$(VAR) in command" "env: share $(hostname) debug hello / hello world" "$out"
expect_contains "the container has its own UTS namespace" "hostname: share" "$out"
expect_contains "and its own PID namespace" "pid: 1" "$out"
[ -e /path1/abc.txt ] && fail "the container's mountPath exists only inside it"
expect_eq "READY 2/2" "share 2/2 Running 0" "$(kubectl get pod share --no-headers | awk '{print $1, $2, $3, $4}')"
expect_eq "conditions" "PodScheduled=True kvol.io/VolumesReady=True Initialized=True ContainersReady=True Ready=True" \
  "$(kubectl get pod share -o jsonpath='{range .status.conditions[*]}{.type}={.status} {end}' | sed 's/ $//')"
expect_eq "containers' state" "c1:running c2:running" \
  "$(kubectl get pod share -o jsonpath='{range .status.containerStatuses[*]}{.name}:{.state.running.startedAt}{" "}{end}' | sed -E 's/:[0-9TZ:-]+/:running/g; s/ $//')"
expect_eq "podIP and hostIP are the node's" "$(kubectl get pod share -o jsonpath='{.status.hostIP}')" \
  "$(kubectl get pod share -o jsonpath='{.status.podIP}')"
out=$(kubectl describe pod share)
expect_contains "describe says images are not pulled" "is not pulled: kvol runs the node's own binaries" "$out"
expect_contains "describe shows the image ID" "kvol.io/node-binaries" "$out"
expect_contains "kubectl logs needs a container for two (the API server asks for one)" \
  "a container name must be specified for pod share, choose one of: [c1 c2]" \
  "$(kcurl "$KVOL_URL/api/v1/namespaces/default/pods/share/log")"
expect_contains "an unknown container is refused" "container c3 is not valid for pod share" \
  "$(kubectl logs share -c c3 2>&1)"
expect_eq "--tail" "pid: 1" "$(kubectl logs share -c c2 --tail=1)"

# kubectl exec: in the container's namespaces and root, with stdin, exit codes propagated.
kubectl exec share -c c1 -- touch /path1/from-exec || fail "exec touch"
expect_eq "exec sees the other container's write" "$(printf 'abc.txt\nfrom-exec\nsub')" "$(kubectl exec share -c c2 -- ls /path2)"
expect_eq "exec with stdin" "from stdin" "$(echo "from stdin" | kubectl exec -i share -c c1 -- cat)"
head -c 3000000 /dev/urandom >"$WORK/big"
expect_eq "exec -i: 3 MB through cat, which writes while it reads" \
  "$(md5sum <"$WORK/big" | cut -d' ' -f1)" \
  "$(timeout 60 kubectl exec -i share -c c1 -- cat <"$WORK/big" 2>&1 | md5sum | cut -d' ' -f1)"
kubectl exec share -c c1 -- sh -c 'exit 3'
expect_eq "exec's exit code" "3" "$?"
expect_eq "exec: stdout and stderr" "out" "$(kubectl exec share -c c1 -- sh -c 'echo out; echo err >&2' 2>/dev/null)"
expect_eq "exec: stderr" "err" "$(kubectl exec share -c c1 -- sh -c 'echo out; echo err >&2' 2>&1 >/dev/null)"
expect_eq "exec runs as PID >1 in the container's PID namespace" "share" "$(kubectl exec share -c c1 -- hostname)"
expect_contains "exec of a missing command" 'exec: "nosuchcmd": executable file not found in $PATH' \
  "$(kubectl exec share -c c1 -- nosuchcmd 2>&1)"
expect_contains "exec in an unknown container" "container c3 is not valid for pod share" \
  "$(kubectl exec share -c c3 -- ls 2>&1)"
out=$(printf 'echo tty says hi\nexit 5\n' | script -qc "kubectl exec -it share -c c1 -- sh" /dev/null)
expect_contains "exec -it: a shell on a terminal" "tty says hi" "$out"
expect_contains "exec -it: its exit code" "command terminated with exit code 5" "$out"
out=$(printf 'tty; ls /dev/pts\nexit\n' | script -qc "kubectl exec -it share -c c1 -- sh" /dev/null)
expect_contains "exec -it: the terminal is the container's own" "/dev/pts/0" "$out"
expect_contains "exec -it: the container's devpts" "ptmx" "$out"

# The same over SPDY/3.1, which client-go before 1.29 speaks, and kubectl when told not to use
# WebSockets.
spdy() { KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false kubectl "$@"; }
expect_contains "exec: SPDY is what kvol answers" "Upgrade: SPDY/3.1" \
  "$(spdy exec share -c c1 -v=8 -- true 2>&1)"
expect_eq "SPDY exec: stdout" "out" "$(spdy exec share -c c1 -- sh -c 'echo out; echo err >&2' 2>/dev/null)"
expect_eq "SPDY exec: stderr" "err" "$(spdy exec share -c c1 -- sh -c 'echo out; echo err >&2' 2>&1 >/dev/null)"
spdy exec share -c c1 -- sh -c 'exit 4'
expect_eq "SPDY exec: the exit code" "4" "$?"
expect_eq "SPDY exec: stdin to its end" "from stdin" "$(echo "from stdin" | spdy exec -i share -c c1 -- cat)"
expect_eq "SPDY exec -i: 3 MB through cat" "$(md5sum <"$WORK/big" | cut -d' ' -f1)" \
  "$(timeout 60 bash -c 'KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false kubectl exec -i share -c c1 -- cat' \
    <"$WORK/big" 2>&1 | md5sum | cut -d' ' -f1)"
out=$(printf 'stty size\nexit 6\n' | script -qc "stty cols 91 rows 17; KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false kubectl exec -it share -c c1 -- sh" /dev/null)
expect_contains "SPDY exec -it: the terminal's size through the resize stream" "17 91" "$out"
expect_contains "SPDY exec -it: its exit code" "command terminated with exit code 6" "$out"

# Deletion: SIGTERM (ignored by sleep as PID 1), SIGKILL after the grace period, then volumes,
# then the pod object; nothing left behind.
SHARE_UID=$(uid_of share)
[ "$(container_procs "$SHARE_UID")" -eq 2 ] || fail "two container inits run"
start=$(date +%s%N)
kubectl delete pod share >/dev/null || fail "kubectl delete waits for the pod to go"
took=$((($(date +%s%N) - start) / 1000000))
[ "$took" -ge 1500 ] || fail "the grace period is waited out by a container ignoring SIGTERM (${took} ms)"
[ "$took" -lt 15000 ] || fail "deleted soon after the grace period (${took} ms)"
[ "$(container_procs "$SHARE_UID")" -eq 0 ] || fail "no container process is left"
[ -z "$(awk -v d="$ROOT/pods/$SHARE_UID/" 'index($5, d) == 1' /proc/self/mountinfo)" ] || fail "no mount is left"
until_true 5 test ! -e "$ROOT/pods/$SHARE_UID" || fail "the pod's directory is removed"
until_true 5 test ! -e "$ROOT/containers/$SHARE_UID" || fail "its containers' files are removed"
expect_contains "Killing events" "Stopping container c1" "$(kubectl get events --field-selector involvedObject.uid="$SHARE_UID" -o jsonpath='{.items[*].message}')"

# A container that handles SIGTERM ends at once.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: polite}
spec:
  containers:
  - name: c
    image: busybox
    command: ["bash", "-c", "trap 'exit 0' TERM; echo ready; while true; do sleep 0.1; done"]
YAML
until_true 20 phase_is polite Running || fail "polite runs"
NEEDLE=ready until_true 10 logs_contain polite || fail "polite started its loop"
start=$(date +%s%N)
kubectl delete pod polite >/dev/null
took=$((($(date +%s%N) - start) / 1000000))
[ "$took" -lt 10000 ] || fail "a container that exits on SIGTERM does not wait out the 30 s grace period (${took} ms)"

# ---- restart policies, crash-loop back-off, init containers -----------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo run at $(date +%s%N); exit 3"]
---
apiVersion: v1
kind: Pod
metadata: {name: once}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, command: ["sh", "-c", "echo failing; exit 1"]}
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: OnFailure
  initContainers:
  - name: prepare
    image: busybox
    command: ["sh", "-c", "echo prepared >/work/ready"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: c
    image: busybox
    command: ["cat", "/work/ready"]
    volumeMounts: [{name: work, mountPath: /work}]
  volumes:
  - {name: work, emptyDir: {}}
YAML
waiting_reason() { kubectl get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}'; }
# A function, so that each try of until_true asks again (an argument's $(...) is read once).
crash_looping() { [ "$(waiting_reason crash)" = CrashLoopBackOff ]; }
until_true 20 crash_looping || fail "crash waits in CrashLoopBackOff: $(waiting_reason crash)"
expect_eq "restarted once at once, then backs off" "1" \
  "$(kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].restartCount}')"
expect_eq "lastState says how it ended" "3 Error" \
  "$(kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode} {.status.containerStatuses[0].lastState.terminated.reason}')"
expect_contains "the back-off in the waiting message" "back-off 10s restarting failed container=c pod=crash_default(" \
  "$(kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')"
cur=$(kubectl logs crash)
prev=$(kubectl logs crash --previous)
expect_contains "logs: the current run" "run at" "$cur"
expect_contains "logs --previous: the run before" "run at" "$prev"
[ "$cur" != "$prev" ] || fail "--previous shows another run's log"
expect_contains "STATUS column" "crash 0/1 CrashLoopBackOff 1" "$(kubectl get pod crash --no-headers | awk '{print $1, $2, $3, $4}')"
expect_contains "BackOff event" "Back-off restarting failed container c in pod crash_default" "$(kubectl describe pod crash)"

until_true 20 phase_is once Failed || fail "restartPolicy Never, exit 1: Failed ($(phase once))"
expect_eq "not restarted" "0 1" \
  "$(kubectl get pod once -o jsonpath='{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].state.terminated.exitCode}')"
expect_eq "logs of a finished container" "failing" "$(kubectl logs once)"

until_true 20 phase_is done Succeeded || fail "init container then app, OnFailure, exit 0: Succeeded ($(phase done))"
expect_eq "the app read what the init container wrote" "prepared" "$(kubectl logs done)"
expect_eq "init logs" "" "$(kubectl logs done -c prepare)"
expect_eq "init status" "prepare Completed" \
  "$(kubectl get pod done -o jsonpath='{.status.initContainerStatuses[0].name} {.status.initContainerStatuses[0].state.terminated.reason}')"
expect_contains "STATUS Completed" "done 0/1 Completed 0" "$(kubectl get pod done --no-headers | awk '{print $1, $2, $3, $4}')"
DONE_UID=$(uid_of done)
until_true 10 test ! -e "$ROOT/pods/$DONE_UID/volumes" || fail "a finished pod's volumes are torn down"
kubectl delete pod once done crash >/dev/null || fail "finished and crash-looping pods delete"

# ---- the agent dies: containers keep running and are found again ------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: survivor}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: ["sleep", "infinity"]}
YAML
until_true 20 phase_is survivor Running || fail "survivor runs"
SURV_UID=$(uid_of survivor)
before=$(pgrep -f "container-init $ROOT/containers/$SURV_UID/")
# The server allocates with jemalloc; what it starts gets the caller's environment.
env_of() { tr '\0' '\n' <"/proc/$1/environ"; }
expect_contains "the server runs on jemalloc" "libjemalloc" "$(cat "/proc/$KVOL_PID/maps")"
expect_eq "a container's init has the caller's GLIBC_TUNABLES" \
  "${GLIBC_TUNABLES+GLIBC_TUNABLES=$GLIBC_TUNABLES}" \
  "$(env_of "$before" | grep -E '^(GLIBC_TUNABLES|KVOL_CALLER_GLIBC_TUNABLES)=')"
kill -9 "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null
[ "$(pgrep -f "container-init $ROOT/containers/$SURV_UID/")" = "$before" ] || fail "the container outlives the agent"
kvol_start server
expect_eq "adopted: same process, no restart" "$before 0 Running" \
  "$(pgrep -f "container-init $ROOT/containers/$SURV_UID/") $(kubectl get pod survivor -o jsonpath='{.status.containerStatuses[0].restartCount} {.status.phase}')"
kubectl delete pod survivor >/dev/null
[ "$(container_procs "$SURV_UID")" -eq 0 ] || fail "the adopted container is stopped when its pod is deleted"

finish
