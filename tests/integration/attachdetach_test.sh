#!/usr/bin/env bash
# The attach/detach controller with a real kvol server, kubectl and the bundled CSI driver: the
# agent asks for it (volumes.kubernetes.io/controller-managed-attach-detach); a pod's CSI volume
# is attached by the controller (a VolumeAttachment, status.volumesAttached, a
# SuccessfulAttachVolume event), which the agent waits for before staging; a ReadWriteOnce volume
# wanted on a second node gets the Multi-Attach error and no attachment there; a server killed
# with -9 comes back with the same attachment and the pod undisturbed; the last pod gone, the
# volume is detached only after the node stopped using it, and nothing is left; an agent started
# with --enable-controller-attach-detach=false takes the annotation away.
# Usage: attachdetach_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
NODE=kvol-ad-node
ANN='{.metadata.annotations.volumes\.kubernetes\.io/controller-managed-attach-detach}'

kvol_start server --node-name "$NODE"
expect_eq "the agent asks the controller to attach" true "$(kubectl get node "$NODE" -o jsonpath="$ANN")"
csinode_has_driver() {
  [ -n "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[?(@.name=="loop.csi.kvol.io")].nodeID}')" ]
}
until_true 20 csinode_has_driver || fail "the bundled driver is not in CSINode"
SOCK="unix://$KVOL_DIR/agent/plugins/loop.csi.kvol.io/csi.sock"
csi_claim "$SOCK" ad-pv data 64
HANDLE=$CSI_HANDLE
VA="csi-$(printf '%s' "${HANDLE}loop.csi.kvol.io$NODE" | sha256sum | cut -d' ' -f1)"

pod_on() {  # pod_on NAME NODE COMMAND: a pod bound to NODE with the claim at /data
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeName: $2
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: [sh, -c, "$3"], volumeMounts: [{name: d, mountPath: /data}]}
  volumes:
  - {name: d, persistentVolumeClaim: {claimName: data}}
YAML
}
# events POD REASON: the messages of the pod's events of that reason, with their source.
events() {
  kubectl get events --field-selector "involvedObject.name=$1,reason=$2" \
    -o jsonpath='{range .items[*]}{.source.component}: {.message}{"\n"}{end}'
}
attached_names() { kubectl get node "$1" -o jsonpath='{.status.volumesAttached[*].name}'; }
in_use_names() { kubectl get node "$1" -o jsonpath='{.status.volumesInUse[*]}'; }

# ---- attached by the controller -------------------------------------------------------------
pod_on writer "$NODE" 'echo from-the-writer > /data/f && sleep 3600'
until_true 60 phase_is writer Running || { fail "the writer did not run"; kubectl describe pod writer; }
expect_eq "the controller's VolumeAttachment, named as Kubernetes names it" "$VA" \
  "$(kubectl get volumeattachment -o jsonpath='{.items[0].metadata.name}')"
expect_eq "attached" true "$(kubectl get volumeattachment "$VA" -o jsonpath='{.status.attached}')"
expect_eq "the node reports it attached" "kubernetes.io/csi/ad-pv" "$(attached_names "$NODE")"
expect_eq "and in use" "kubernetes.io/csi/ad-pv" "$(in_use_names "$NODE")"
expect_contains "SuccessfulAttachVolume" \
  'attachdetach-controller: AttachVolume.Attach succeeded for volume "ad-pv"' \
  "$(events writer SuccessfulAttachVolume)"
VA_UID=$(kubectl get volumeattachment "$VA" -o jsonpath='{.metadata.uid}')

# ---- Multi-Attach: the same ReadWriteOnce volume on a second node ---------------------------
"$KVOL_BIN" agent --server "$KVOL_URL" --token "$(kvol_token)" \
  --certificate-authority "$KVOL_DIR/pki/ca.crt" --node-name ad-node2 --root-dir "$WORK/node2" \
  --address 127.0.0.1 --port 0 --node-ip 127.0.0.1 >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
track "$AGENT_PID"
until_true 10 grep -q "kvol agent is ready" "$WORK/agent.log" || fail "kvol agent starts: $(cat "$WORK/agent.log")"
expect_eq "the second agent asks too" true "$(kubectl get node ad-node2 -o jsonpath="$ANN")"
pod_on second ad-node2 'cat /data/f; sleep 3600'
multi() { events second FailedAttachVolume | grep -q Multi-Attach; }
until_true 20 multi || fail "no Multi-Attach event: $(kubectl describe pod second)"
expect_eq "the Multi-Attach error names the pod that holds the volume" \
  'attachdetach-controller: Multi-Attach error for volume "ad-pv" Volume is already used by pod(s) writer' \
  "$(events second FailedAttachVolume)"
expect_eq "no attachment to the second node" 1 "$(kubectl get volumeattachment -o name | grep -c .)"
expect_eq "the second node reports nothing attached" "" "$(attached_names ad-node2)"
expect_eq "the second pod waits" Pending "$(phase second)"
kubectl delete pod second --wait=true --timeout=30s >/dev/null || fail "second pod deleted"

# ---- a server killed with -9 comes back with the same attachment ----------------------------
kill -9 "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null
kvol_start server --node-name "$NODE"
sleep 2  # a pass of the controller and of the agent
expect_eq "the attachment was not made again" "$VA_UID" \
  "$(kubectl get volumeattachment "$VA" -o jsonpath='{.metadata.uid}')"
expect_eq "nor detached" true "$(kubectl get volumeattachment "$VA" -o jsonpath='{.status.attached}')"
expect_eq "still reported attached" "kubernetes.io/csi/ad-pv" "$(attached_names "$NODE")"
expect_eq "the writer runs on" Running "$(phase writer)"

# ---- the next pod on the node reads the data ------------------------------------------------
kubectl delete pod writer --wait=true --timeout=60s >/dev/null || fail "writer deleted"
pod_on reader "$NODE" 'cat /data/f && sleep 3600'
until_true 60 phase_is reader Running || { fail "the reader did not run"; kubectl describe pod reader; }
NEEDLE=from-the-writer until_true 10 logs_contain reader || fail "the reader reads the writer's data"

# ---- the last pod gone: detached once unused ------------------------------------------------
kubectl delete pod reader --wait=true --timeout=60s >/dev/null || fail "reader deleted"
gone() { ! kubectl get volumeattachment "$VA" >/dev/null 2>&1; }
until_true 30 gone || fail "the VolumeAttachment was not deleted"
expect_eq "nothing reported attached" "" "$(attached_names "$NODE")"
expect_eq "nothing in use" "" "$(in_use_names "$NODE")"
expect_eq "no mount of the volume left" "" "$(grep -F "$KVOL_DIR/agent/plugins/kubernetes.io/csi" /proc/self/mountinfo)"
detached_in_log() { grep -q 'DetachVolume.Detach succeeded for volume "kubernetes.io/csi/ad-pv"' "$KVOL_LOG"; }
until_true 5 detached_in_log || fail "the controller did not log the detach"

# ---- an agent that attaches for itself ------------------------------------------------------
kill "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
"$KVOL_BIN" agent --server "$KVOL_URL" --token "$(kvol_token)" \
  --certificate-authority "$KVOL_DIR/pki/ca.crt" --node-name ad-node2 --root-dir "$WORK/node2" \
  --address 127.0.0.1 --port 0 --node-ip 127.0.0.1 --enable-controller-attach-detach=false \
  >"$WORK/agent2.log" 2>&1 &
AGENT_PID=$!
track "$AGENT_PID"
until_true 10 grep -q "kvol agent is ready" "$WORK/agent2.log" || fail "kvol agent restarts: $(cat "$WORK/agent2.log")"
expect_eq "the annotation is gone" "" "$(kubectl get node ad-node2 -o jsonpath="$ANN")"
kill "$AGENT_PID"

kubectl delete pvc data --wait=true --timeout=30s >/dev/null
kubectl delete pv ad-pv --wait=true --timeout=30s >/dev/null
"$KVOL_BIN" csi delete-volume --endpoint "$SOCK" --id "$HANDLE" >/dev/null ||
  fail "the volume could not be deleted"
finish
