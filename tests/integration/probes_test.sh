#!/usr/bin/env bash
# Container probes in a real kvol server with its node agent, driven with kubectl: a readiness
# probe holds the pod's Ready condition until it passes and takes it away when it fails; a
# failing liveness probe gets the container killed and started again (restartCount, the
# Unhealthy and Killing events in kubelet's words); a startup probe holds the others back; a
# tcpSocket probe connects from the node.
# Usage: probes_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server

cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: c
    image: busybox
    command: [sh, -c, 'touch /data/alive; exec sleep 3600']
    volumeMounts: [{name: data, mountPath: /data}]
    startupProbe: {exec: {command: [test, -e, /data/alive]}, periodSeconds: 1}
    livenessProbe: {exec: {command: [test, -e, /data/alive]}, periodSeconds: 1, failureThreshold: 2}
    readinessProbe: {exec: {command: [test, -e, /data/ready]}, periodSeconds: 1}
YAML
ready() { kubectl get pod probed -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
ready_is() { [ "$(ready)" = "$1" ]; }
restarts() { kubectl get pod probed -o jsonpath='{.status.containerStatuses[0].restartCount}'; }
restarts_are() { [ "$(restarts)" = "$1" ]; }

until_true 60 phase_is probed Running || fail "the probed pod runs: $(phase probed)"
expect_eq "the defaults are filled in" "1 1 2 1" \
  "$(kubectl get pod probed -o jsonpath='{.spec.containers[0].livenessProbe.timeoutSeconds} {.spec.containers[0].livenessProbe.successThreshold} {.spec.containers[0].livenessProbe.failureThreshold} {.spec.containers[0].livenessProbe.periodSeconds}')"
started() { [ "$(kubectl get pod probed -o jsonpath='{.status.containerStatuses[0].started}')" = true ]; }
until_true 20 started || fail "the startup probe passes"
sleep 2
expect_eq "not ready before its readiness probe passes" "False" "$(ready)"
expect_contains "... and why" "containers with unready status: [c]" \
  "$(kubectl get pod probed -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')"
kubectl exec probed -- touch /data/ready
until_true 20 ready_is True || fail "ready once the readiness probe passes"
kubectl exec probed -- rm /data/ready
until_true 20 ready_is False || fail "unready again when it fails"
expect_eq "readiness never restarts" "0" "$(restarts)"

kubectl exec probed -- rm /data/alive
until_true 30 restarts_are 1 || fail "a failing liveness probe restarts the container: $(restarts)"
events=$(k get events --field-selector involvedObject.name=probed)
expect_contains "the Unhealthy event" "Unhealthy pod/probed Liveness probe failed" "$events"
expect_contains "the Killing event" "Container c failed liveness probe, will be restarted" "$events"
until_true 30 phase_is probed Running || fail "running again"
sleep 4
expect_eq "the new run passes its probes (the command made /data/alive again)" "1" "$(restarts)"

# A tcpSocket probe against a port nothing listens on: it fails from the node, and says why.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: tcp}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: [sleep, "3600"]
    readinessProbe: {tcpSocket: {port: 1}, periodSeconds: 1}
YAML
until_true 60 phase_is tcp Running || fail "the tcp pod runs"
tcp_failed() { k get events --field-selector involvedObject.name=tcp | grep -q "Readiness probe failed: dial tcp"; }
until_true 20 tcp_failed || fail "the tcpSocket probe's failure: $(k get events --field-selector involvedObject.name=tcp)"

expect_contains "a probe without a handler is refused" \
  "spec.containers[0].livenessProbe: Required value: must specify a handler type" \
  "$(kubectl run bad --image=busybox --overrides='{"spec":{"containers":[{"name":"bad","image":"busybox","livenessProbe":{"periodSeconds":1}}]}}' 2>&1)"

kubectl delete pod probed tcp --wait=false >/dev/null
finish
