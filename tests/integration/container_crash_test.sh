#!/usr/bin/env bash
# kill -9 of `kvol server` while 50 pods start, 10 times. After each restart the server listens
# on the same port within 5 seconds (its pods' containers hold none of its descriptors), the
# container processes on the node are exactly the running containers the pods' status lists (a
# container started just before the kill is found, none is started twice), and once the pods
# are deleted no container process and no mount is left.
# Usage: container_crash_test.sh KVOL_BINARY TESTS_DIR [ROUNDS]
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
ROUNDS=${3:-10}
PODS=50
source "$TESTS/integration/lib.sh"

PORT=$(free_port)
KVOL_LISTEN=127.0.0.1:$PORT kvol_start server
ROOT=$KVOL_DIR/agent

running_in_status() {
  kubectl get pods -o jsonpath='{range .items[*]}{range .status.containerStatuses[*]}{.state.running.startedAt}{"\n"}{end}{end}' |
    grep -c .
}
# True once every pod that exists runs and the processes on the node are its running
# containers.
settled() {
  local pods running procs
  pods=$(kubectl get pods -o name | grep -c .)
  running=$(running_in_status)
  procs=$(container_procs)
  [ "$running" = "$pods" ] && [ "$procs" = "$pods" ]
}
# True once nothing of the pods is left on the node.
cleaned() { [ "$(container_procs)" = 0 ] && [ "$(mounts_left)" = 0 ]; }
mounts_left() { awk -v d="$ROOT/" 'index($5, d) == 1' /proc/self/mountinfo | grep -c .; }

pods_yaml() {
  local i
  for i in $(seq 1 "$PODS"); do
    cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: p$1-$i}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: ["sleep", "3600"], volumeMounts: [{name: scratch, mountPath: /scratch}]}
  volumes:
  - {name: scratch, emptyDir: {medium: Memory}}
YAML
  done
}

created=0  # pods that made it into the API before the kills, over all rounds
for round in $(seq 1 "$ROUNDS"); do
  # The kill lands while the pods are created and their containers start: kubectl may see
  # some creates fail, and the pods it did create are the ones that must run.
  pods_yaml "$round" | kubectl create -f - >/dev/null 2>&1 &
  creator=$!
  # Once the creates have begun (kubectl's start takes longer on a loaded machine), at a
  # random moment while they go on.
  some_created() { kubectl get pods -o name 2>/dev/null | grep -q .; }
  until_true 10 some_created || true
  sleep "0.$((RANDOM % 9))"
  kill -9 "$KVOL_PID"
  wait "$KVOL_PID" 2>/dev/null
  wait "$creator" 2>/dev/null
  start=$SECONDS
  KVOL_LISTEN=127.0.0.1:$PORT kvol_start server
  took=$((SECONDS - start))
  [ "$took" -le 5 ] || fail "round $round: the restarted server listened after $took s"
  created=$((created + $(kubectl get pods -o name | grep -c .)))
  if ! until_true 90 settled; then
    fail "round $round: $(kubectl get pods -o name | grep -c .) pods, $(running_in_status) running in status, $(container_procs) container processes"
  fi
  kubectl delete pods --all --wait=false >/dev/null
  until_true 90 cleaned || true
  expect_eq "round $round: no container process left" 0 "$(container_procs)"
  expect_eq "round $round: no mount left" 0 "$(mounts_left)"
  none() { [ "$(kubectl get pods -o name | grep -c .)" = 0 ]; }
  until_true 30 none || fail "round $round: pods left: $(kubectl get pods -o name | head -3)"
  [ "$FAILURES" -eq 0 ] || break
done
# Every round's kill lands after its first create.
echo "$created pods were created before the kills, over $ROUNDS rounds"
[ "$created" -ge "$PODS" ] || fail "only $created pods were created before the kills"

finish
