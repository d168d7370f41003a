#!/usr/bin/env bash
# pods_bench.sh KVOL_BINARY [N]: N pods (100 by default), each with an emptyDir and a configMap
# volume, created at once with kubectl on one node; the time from the first created to every
# pod Running, and the CPU time the server (with its agent) and the runtime used for it. Run on
# kvol's own runtime and on containerd (`kvol server --container-runtime containerd`, the
# image built locally and imported), one after the other in the same run. Run as root.
KVOL_BIN=$(realpath "$1")
N=${2:-100}
TESTS=$(realpath "$(dirname "$0")/../tests")
source "$TESTS/integration/lib.sh"

pods_yaml() {
  local i
  for i in $(seq 1 "$N"); do
    cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: p$i}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: busybox:1
    command: ["sleep", "999999"]
    volumeMounts:
    - {name: cache, mountPath: /cache}
    - {name: config, mountPath: /config}
  volumes:
  - {name: cache, emptyDir: {}}
  - {name: config, configMap: {name: settings}}
YAML
  done
}

running() { [ "$(kubectl get pods --no-headers 2>/dev/null | grep -c ' Running ')" -eq "$N" ]; }

# run NAME [server flags...]: one round; prints "NAME: <wall> s, server CPU <s> s, runtime CPU <s> s".
run() {
  local name=$1
  shift
  kvol_start "$name" "$@"
  if [ "$name" = containerd ]; then
    ctr -a "$KVOL_DIR/containerd/containerd.sock" -n k8s.io images import \
      --base-name docker.io/library/busybox "$WORK/image.tar" >/dev/null || exit 1
  fi
  kubectl create configmap settings --from-literal=level=debug >/dev/null
  local hz server0 runtime0 t0 t1
  hz=$(getconf CLK_TCK)
  server0=$(cpu_ticks "^$KVOL_BIN server --data-dir $KVOL_DIR ")
  runtime0=$(cpu_ticks "containerd.* $KVOL_DIR/")
  t0=$(date +%s%N)
  pods_yaml | kubectl create -f - >/dev/null
  until_true 600 running || { echo "$name: not all $N pods Running"; kubectl get pods | grep -v Running | head; exit 1; }
  t1=$(date +%s%N)
  local server runtime
  server=$(( $(cpu_ticks "^$KVOL_BIN server --data-dir $KVOL_DIR ") - server0 ))
  runtime=$(( $(cpu_ticks "containerd.* $KVOL_DIR/") - runtime0 ))
  awk -v n="$name" -v w="$(( (t1 - t0) / 1000000 ))" -v s="$server" -v r="$runtime" -v hz="$hz" \
    'BEGIN { printf "%s: %.2f s to all Running, server CPU %.2f s, containerd and shims CPU %.2f s\n", n, w / 1000, s / hz, r / hz }'
  kubectl delete pods --all --wait=false >/dev/null
  gone() { [ -z "$(kubectl get pods -o name 2>/dev/null)" ]; }
  until_true 300 gone || echo "$name: pods left after 300 s"
  kill "$KVOL_PID"
  wait "$KVOL_PID" 2>/dev/null
}

"$TESTS/integration/busybox_image.sh" "$WORK/image.tar" >"$WORK/image.log" 2>&1 ||
  { echo "building the image failed:"; cat "$WORK/image.log"; exit 1; }
echo "$N pods, each with an emptyDir and a configMap volume, on one node"
run builtin
run containerd --container-runtime containerd --pod-logs-dir "$WORK/logs"
