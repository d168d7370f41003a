#!/usr/bin/env bash
# kill -9 the node agent (its kvol server) while it mounts 200 pods' volumes, then restart it:
# every pod ends with its volumes ready, and the mount table under the agent's root shows
# exactly two mounts per pod (its memory emptyDir and its kube-api-access-* volume): none duplicated (stacked on the same path), none leaked. Deleting
# the pods then leaves no mount and no pod directory.
# Usage: agent_crash_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
NODE=crash-node
PODS=200
MOUNTS=$((PODS * 2))  # each pod's tmpfs: a memory emptyDir and its kube-api-access-* volume

# The pods are created while no agent runs, so that the restarted agent has all 200 to mount
# and the kill lands in the middle of it.
kvol_start server --node-name "$NODE" --no-controllers --no-agent
ROOT=$KVOL_DIR/agent

# mounts_under: mount points below the agent's root, one per line.
mounts_under() { awk -v d="$ROOT/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo; }
ready_count() {
  kubectl get pods -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="kvol.io/VolumesReady")].status}{"\n"}{end}' |
    grep -c True
}
all_ready() { [ "$(ready_count)" -eq "$PODS" ]; }
no_pod_dirs() { [ -z "$(ls -A "$ROOT/pods")" ]; }

kubectl create configmap settings --from-literal=mode=fast >/dev/null
# What the controllers would have made: the account the pods run as, and the CA their
# kube-api-access-* volumes project.
kubectl create serviceaccount default >/dev/null
kubectl create configmap kube-root-ca.crt --from-file=ca.crt="$KVOL_DIR/pki/ca.crt" >/dev/null
for i in $(seq 1 "$PODS"); do
  cat <<YAML
---
apiVersion: v1
kind: Pod
metadata:
  name: p$i
spec:
  nodeName: $NODE
  containers:
  - name: c
    image: busybox
  volumes:
  - name: shm
    emptyDir:
      medium: Memory
  - name: scratch
    emptyDir: {}
  - name: config
    configMap:
      name: settings
YAML
done >"$WORK/pods.yaml"
kubectl create -f "$WORK/pods.yaml" >/dev/null
kill -9 "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null

# Now with the agent: kill it as soon as some, not all, of the tmpfs mounts exist. The mounts
# start before the server says it is ready, so the count is watched from the start.
kvol_spawn server --node-name "$NODE" --no-controllers
# Counted in the shell itself: a process per look (awk, sleep) lets a slow machine mount them all
# between two looks. And the shell looks from ten nice levels above the agent's threads (the
# test runs as root): on a loaded machine a shell at the same level was once kept waiting
# while the agent made all 200. Where there are two CPUs or more, the agent runs on the first
# only and the shell on the second: beside another test, an agent free to use both CPUs still
# made all 200 between two looks now and then.
CPUS=$(nproc)
if [ "$CPUS" -ge 2 ]; then
  taskset -a -p -c 0 "$KVOL_PID" >/dev/null
  taskset -p -c 1 $$ >/dev/null
fi
renice -n -10 -p $$ >/dev/null
# And the agent runs only in steps of about 2 ms, stopped (SIGSTOP) while the shell counts:
# however long the shell is kept waiting, the agent cannot make all 200 meanwhile (only the
# `mount` processes it has started may still finish). The pause is a builtin: a read with a
# timeout on a FIFO that nobody writes.
pause_fifo="$WORK/pause"
mkfifo "$pause_fifo"
exec 9<>"$pause_fifo"
deadline=$((SECONDS + 120))
while [ "$SECONDS" -lt "$deadline" ]; do
  kill -STOP "$KVOL_PID"
  mounted=0
  while read -r _ _ _ _ mount_point _; do
    [[ $mount_point == "$ROOT/"* ]] && mounted=$((mounted + 1))
  done </proc/self/mountinfo
  [ "$mounted" -ge 10 ] && break
  kill -CONT "$KVOL_PID"
  read -r -t 0.002 -u 9 _ || true
done
exec 9>&-
kill -9 "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null
renice -n 0 -p $$ >/dev/null
[ "$CPUS" -ge 2 ] && taskset -p -c "0-$((CPUS - 1))" $$ >/dev/null
at_kill=$(mounts_under | wc -l)
echo "killed with $at_kill of $MOUNTS tmpfs mounts made"
[ "$at_kill" -lt "$MOUNTS" ] || fail "the kill landed in the middle of mounting (all $MOUNTS were made)"

kvol_start server --node-name "$NODE" --no-controllers
until_true 60 all_ready || fail "every pod's volumes ready after the restart: $(ready_count) of $PODS"
expect_eq "two tmpfs per pod under the root" "$MOUNTS" "$(mounts_under | wc -l)"
expect_eq "no mount duplicated" "" "$(mounts_under | sort | uniq -d)"
expect_eq "every pod has its configMap file" "$PODS" \
  "$(grep -lx fast "$ROOT"/pods/*/volumes/kubernetes.io~configmap/config/mode 2>/dev/null | wc -l)"

kubectl delete pods --all --wait=false >/dev/null
if ! until_true 60 no_pod_dirs; then
  fail "every pod directory removed: $(ls "$ROOT/pods" | wc -l) left"
  # What is left of each, and what the agent said about it.
  for dir in "$ROOT"/pods/*; do
    uid=$(basename "$dir")
    echo "left: pod $uid"
    find "$dir" -maxdepth 5 | sed 's/^/  /' | head -20
    kubectl get pods -o jsonpath="{range .items[?(@.metadata.uid==\"$uid\")]}  object: {.metadata.name} deletionTimestamp={.metadata.deletionTimestamp} phase={.status.phase}{\"\\n\"}{end}"
    grep -h "$uid" "$WORK"/*.log | tail -10 | sed 's/^/  log: /'
  done
fi
expect_eq "no mount leaked" "0" "$(mounts_under | wc -l)"

finish
