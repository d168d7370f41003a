#!/usr/bin/env bash
# The node's pressure conditions from this machine's real figures, driven with the real kubectl.
# A threshold no filesystem can meet ("<100%": less than all of it free) shows which
# filesystem each signal reads:
#   - kvol's own runtime keeps no images: imagefs.available<100% observes nothing, and the
#     node reports MemoryPressure, DiskPressure and PIDPressure False in kubelet's words, with
#     kubelet's events; nodefs.available<100% (statvfs of the agent's directory) sets
#     DiskPressure;
#   - on containerd, imagefs.available<100% reads the filesystem ImageFsInfo names, and sets
#     DiskPressure: the node is tainted node.kubernetes.io/disk-pressure, a pod is not
#     scheduled (FailedScheduling names the taint), and a pod that tolerates it is.
# Usage: node_pressure_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

for tool in containerd containerd-shim-runc-v2 runc; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (scripts/setup installs it)"; exit 1; }
done

condition() { # NODE TYPE: "STATUS REASON"
  kubectl get node "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status} {.status.conditions[?(@.type==\"$2\")].reason}"
}
condition_is() { [ "$(condition "$1" "$2")" = "$3" ]; }
stop_server() { kill "$KVOL_PID"; wait "$KVOL_PID" 2>/dev/null; }

# ---- kvol's own runtime: no image filesystem ---------------------------------------------------
kvol_start own --eviction-hard 'imagefs.available<100%' --eviction-pressure-transition-period 0s
node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
until_true 30 condition_is "$node" Ready "True KubeletReady"
expect_eq "MemoryPressure" "False KubeletHasSufficientMemory" "$(condition "$node" MemoryPressure)"
expect_eq "DiskPressure without images" "False KubeletHasNoDiskPressure" "$(condition "$node" DiskPressure)"
expect_eq "PIDPressure" "False KubeletHasSufficientPID" "$(condition "$node" PIDPressure)"
order=$(kubectl get node "$node" -o jsonpath='{.status.conditions[*].type}')
expect_eq "kubelet's order of conditions" "MemoryPressure DiskPressure PIDPressure Ready" "$order"
described=$(k describe node "$node")
expect_contains "describe node" "DiskPressure False" "$described"
expect_contains "describe node" "kubelet has no disk pressure" "$described"
expect_contains "kubelet's event" "Node $node status is now: NodeHasNoDiskPressure" \
  "$(get_until NodeHasNoDiskPressure events --field-selector involvedObject.kind=Node \
     -o custom-columns=R:.reason,M:.message)"
stop_server

kvol_start own-nodefs --eviction-hard 'nodefs.available<100%'
until_true 30 condition_is "$node" DiskPressure "True KubeletHasDiskPressure" ||
  fail "nodefs.available<100% did not set DiskPressure: $(condition "$node" DiskPressure)"
stop_server

# ---- containerd: its image filesystem ----------------------------------------------------------
kvol_start cri --container-runtime containerd --pod-logs-dir "$WORK/logs" \
  --eviction-hard 'imagefs.available<100%'
until_true 60 condition_is "$node" DiskPressure "True KubeletHasDiskPressure" ||
  fail "imagefs.available<100% did not set DiskPressure on containerd: $(condition "$node" DiskPressure)"
expect_eq "only the disk" "False KubeletHasSufficientMemory" "$(condition "$node" MemoryPressure)"
expect_contains "describe node" "kubelet has disk pressure" "$(k describe node "$node")"
expect_contains "kubelet's event" "NodeHasDiskPressure" \
  "$(get_until NodeHasDiskPressure events --field-selector involvedObject.kind=Node \
     -o custom-columns=R:.reason)"

cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: kept-off}
spec:
  containers: [{name: c, image: busybox:1, imagePullPolicy: Never, command: ["true"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: tolerating}
spec:
  tolerations: [{key: node.kubernetes.io/disk-pressure, operator: Exists, effect: NoSchedule}]
  containers: [{name: c, image: busybox:1, imagePullPolicy: Never, command: ["true"]}]
YAML
expect_contains "kept-off is kept off" "untolerated taint {node.kubernetes.io/disk-pressure: }" \
  "$(describe_until "untolerated taint {node.kubernetes.io/disk-pressure: }" pod kept-off)"
expect_eq "kept-off is not scheduled" "" "$(kubectl get pod kept-off -o jsonpath='{.spec.nodeName}')"
expect_eq "the pod that tolerates disk pressure is scheduled" "$node" \
  "$(get_until "$node" pod tolerating -o jsonpath='{.spec.nodeName}')"
kubectl delete pod kept-off tolerating --wait=false >/dev/null
stop_server

finish
