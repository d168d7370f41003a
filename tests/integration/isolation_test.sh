#!/usr/bin/env bash
# A pod cannot get out, against a real kvol server with its built-in runtime, tried as a hostile
# user would: from inside containers, the capability sets are containerd's default list,
# seccomp is on, no descriptor but stdio crossed in, configMap/secret/downwardAPI/projected
# volumes refuse writes with EROFS, kvol's data, the node's secrets and other pods' volumes are
# not there, and the textbook chroot escape (with CAP_SYS_CHROOT given back) ends in the
# container's own root. From outside: every descriptor of the server is close-on-exec, and a
# server killed with `kill -9` is started again on the same port while its pods keep running.
# Usage: isolation_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
KVOL_WORK_PARENT=/var/lib
source "$TESTS/integration/lib.sh"

PORT=$(free_port)
KVOL_LISTEN=127.0.0.1:$PORT kvol_start server
ROOT=$KVOL_DIR/agent

# ---- a victim with a secret of its own --------------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Secret
metadata: {name: victim-secret}
stringData: {password: hunter2-victim}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {level: debug}
---
apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: ["sleep", "3600"]
    volumeMounts: [{name: s, mountPath: /etc/s}]
  volumes:
  - {name: s, secret: {secretName: victim-secret}}
YAML
until_true 30 phase_is victim Running || fail "the victim runs"
VICTIM_UID=$(kubectl get pod victim -o jsonpath='{.metadata.uid}')
VICTIM_SECRET=$ROOT/pods/$VICTIM_UID/volumes/kubernetes.io~secret/s/password
[ -f "$VICTIM_SECRET" ] || fail "the victim's secret is on the node at $VICTIM_SECRET: $(ls -la "$(dirname "$VICTIM_SECRET")" 2>&1)"

# ---- what a confined container sees ---------------------------------------------------------
# The probe prints one line per fact; the paths it looks for are the node's.
probe_script() {
  cat <<PY
import os, errno
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return line.split(':', 1)[1].strip()
for key in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb', 'Seccomp', 'NoNewPrivs'):
    print(key, status(key))
print('fds', ' '.join(sorted(os.listdir('/proc/self/fd'), key=int)))
for d in ('/etc/config', '/etc/secret', '/etc/downward', '/etc/projected'):
    try:
        open(d + '/new', 'w').write('x')
        print('write', d, 'ok')
    except OSError as e:
        print('write', d, errno.errorcode[e.errno])
for p in ('$KVOL_DIR/token', '$KVOL_DIR/kubeconfig', '$KVOL_DIR/pki/ca.key', '$VICTIM_SECRET',
          '$ROOT/pods', '/root', '/proc/kcore'):
    print('exists', p, os.path.exists(p) and bool(os.listdir(p) if os.path.isdir(p) else os.path.getsize(p)))
print('shadow', repr(open('/etc/shadow').read()))
# The textbook chroot escape: chroot into a subdirectory, keep a descriptor of the old root,
# climb out of it with chdir(".."), chroot there.
try:
    os.makedirs('/tmp/jail', exist_ok=True)
    old = os.open('/', os.O_RDONLY)
    os.chroot('/tmp/jail')
    os.fchdir(old)
    for _ in range(64):
        os.chdir('..')
    os.chroot('.')
    print('escape chroot ok')
except OSError as e:
    print('escape chroot', errno.errorcode[e.errno])
for p in ('$KVOL_DIR/token', '$KVOL_DIR/pki/ca.key', '$VICTIM_SECRET'):
    print('after escape', p, os.path.exists(p))
print('done')
PY
}

# probe_pod NAME SECURITY_CONTEXT_JSON: a pod running the probe with the four API volumes.
probe_pod() {
  cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app: probe}}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: c
    image: python
    command: ["python3", "-c", $(probe_script | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read()))')]
    securityContext: $2
    volumeMounts:
    - {name: cm, mountPath: /etc/config}
    - {name: secret, mountPath: /etc/secret}
    - {name: downward, mountPath: /etc/downward}
    - {name: projected, mountPath: /etc/projected}
  volumes:
  - {name: cm, configMap: {name: settings}}
  - {name: secret, secret: {secretName: victim-secret}}
  - name: downward
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
  - name: projected
    projected: {sources: [{configMap: {name: settings}}]}
YAML
}

probe_pod probe '{}'
NEEDLE=done until_true 30 logs_contain probe || fail "the probe ran: $(kubectl logs probe 2>&1)"
out=$(kubectl logs probe)
# containerd's default list: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP
# NET_BIND_SERVICE, bits 0 1 3 4 5 6 7 8 10.
expect_contains "effective capabilities are the default list" "CapEff 00000000000005fb" "$out"
expect_contains "permitted capabilities are the default list" "CapPrm 00000000000005fb" "$out"
expect_contains "the bounding set is the default list" "CapBnd 00000000000005fb" "$out"
expect_contains "no inheritable capabilities" "CapInh 0000000000000000" "$out"
expect_contains "no ambient capabilities" "CapAmb 0000000000000000" "$out"
expect_contains "a seccomp filter (mode 2)" "Seccomp 2" "$out"
expect_contains "no_new_privs" "NoNewPrivs 1" "$out"
expect_contains "only stdio crosses into the container (3 is listdir's own)" "fds 0 1 2 3" "$out"
for d in config secret downward projected; do
  expect_contains "the $d volume is read-only" "write /etc/$d EROFS" "$out"
done
for p in "$KVOL_DIR/token" "$KVOL_DIR/kubeconfig" "$KVOL_DIR/pki/ca.key" "$VICTIM_SECRET" "$ROOT/pods" /root /proc/kcore; do
  expect_contains "$p is not readable" "exists $p False" "$out"
done
expect_contains "the node's /etc/shadow is empty in the container" "shadow ''" "$out"
expect_contains "chroot is refused without CAP_SYS_CHROOT" "escape chroot EPERM" "$out"
[ -n "$(cat "$KVOL_DIR/token")" ] || fail "the node's token is still there"
[ ! -e "$ROOT/pods/$(kubectl get pod probe -o jsonpath='{.metadata.uid}')/volumes/kubernetes.io~configmap/cm/new" ] ||
  fail "a write reached the node's configMap directory"

# With CAP_SYS_CHROOT given back the escape runs, and ends in the container's own root.
probe_pod escape '{"capabilities": {"add": ["SYS_CHROOT"]}}'
NEEDLE=done until_true 30 logs_contain escape || fail "the escape probe ran: $(kubectl logs escape 2>&1)"
out=$(kubectl logs escape)
expect_contains "the chroot escape runs with CAP_SYS_CHROOT" "escape chroot ok" "$out"
for p in "$KVOL_DIR/token" "$KVOL_DIR/pki/ca.key" "$VICTIM_SECRET"; do
  expect_contains "after the escape $p is still out of reach" "after escape $p False" "$out"
done
expect_contains "the added capability is in the set" "CapEff 00000000000405fb" "$out"

# allowPrivilegeEscalation: true keeps the filter but not no_new_privs.
probe_pod escalation '{"allowPrivilegeEscalation": true}'
NEEDLE=done until_true 30 logs_contain escalation || fail "the escalation probe ran"
out=$(kubectl logs escalation)
expect_contains "allowPrivilegeEscalation: no no_new_privs" "NoNewPrivs 0" "$out"
expect_contains "allowPrivilegeEscalation: still a seccomp filter" "Seccomp 2" "$out"

# A privileged container has every capability and no filter.
probe_pod privileged '{"privileged": true}'
NEEDLE=done until_true 30 logs_contain privileged || fail "the privileged probe ran"
out=$(kubectl logs privileged)
expect_contains "privileged: no seccomp filter" "Seccomp 0" "$out"
expect_contains "privileged: no no_new_privs" "NoNewPrivs 0" "$out"
# Every capability the runtime itself holds (a machine may withhold some from every process).
expect_contains "privileged: every capability" "CapEff $(awk '/^CapPrm/ {print $2}' /proc/"$KVOL_PID"/status)" "$out"

# runAsUser, runAsGroup and a read-only root.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  securityContext: {runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000]}
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "id -u; id -g; id -G; grep CapEff /proc/self/status; touch /x 2>&1; touch /tmp/x 2>&1; touch /data/x && echo data ok; echo done"]
    securityContext: {readOnlyRootFilesystem: true}
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - {name: data, emptyDir: {}}
YAML
NEEDLE=done until_true 30 logs_contain user || fail "the runAsUser pod ran: $(kubectl logs user 2>&1)"
out=$(kubectl logs user)
expect_eq "runAsUser, runAsGroup and supplementalGroups" "1000 3000 3000 4000" \
  "$(head -3 <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
expect_contains "a non-root user has no effective capabilities" $'CapEff:\t0000000000000000' "$out"
expect_contains "the root is read-only" "cannot touch '/x': Read-only file system" "$out"
expect_contains "so is /tmp" "cannot touch '/tmp/x': Read-only file system" "$out"
expect_contains "volumes stay writable" "data ok" "$out"

# runAsNonRoot without a user: the node's binaries run as root.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: nonroot}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: ["true"], securityContext: {runAsNonRoot: true}}
YAML
out=$(get_until CreateContainerConfigError pod nonroot \
  -o 'jsonpath={.status.containerStatuses[0].state.waiting.reason}: {.status.containerStatuses[0].state.waiting.message}')
expect_contains "runAsNonRoot is refused in kubelet's words" \
  "CreateContainerConfigError: container has runAsNonRoot and image will run as root" "$out"

# ---- from outside: descriptors, and a restart on the same port ------------------------------
kubectl get pods --watch >/dev/null 2>&1 &
track $!
sleep 1
leaked=""
for f in /proc/"$KVOL_PID"/fdinfo/*; do
  case $(basename "$f") in 0 | 1 | 2) continue ;; esac  # stdio, the log here
  flags=$(awk '/^flags:/ {print $2}' "$f" 2>/dev/null) || continue
  [ -n "$flags" ] || continue
  if (( (8#$flags & 8#2000000) == 0 )); then
    leaked+=" $(basename "$f")->$(readlink "/proc/$KVOL_PID/fd/$(basename "$f")")"
  fi
done
expect_eq "every descriptor of the server is close-on-exec" "" "$leaked"

before=$(container_procs)
kill -9 "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null
start=$SECONDS
KVOL_LISTEN=127.0.0.1:$PORT kvol_start server
[ $((SECONDS - start)) -le 5 ] || fail "the restarted server listened after $((SECONDS - start)) s"
grep -q "Address already in use" "$KVOL_LOG" && fail "the port was held: $(cat "$KVOL_LOG")"
expect_eq "the pods' containers kept running" "$before" "$(container_procs)"
until_true 20 phase_is victim Running || fail "the victim still runs after the restart"

kubectl delete pod --all --wait=false >/dev/null
gone() { [ "$(kubectl get pods -o name | grep -c .)" = 0 ]; }
until_true 60 gone || fail "pods deleted: $(kubectl get pods 2>&1)"
expect_eq "no container process is left" 0 "$(container_procs)"
expect_eq "no mount is left under the agent's root" 0 \
  "$(awk -v d="$ROOT/" 'index($5, d) == 1' /proc/self/mountinfo | grep -c .)"

finish
