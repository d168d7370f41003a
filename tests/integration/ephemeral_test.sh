#!/usr/bin/env bash
# Generic ephemeral volumes in a real kvol server with its node agent, driven with the real
# kubectl: a pod's ephemeral volume gets the claim "<pod>-<volume>", made from its template and
# owned by the pod, provisioned once the pod is placed (WaitForFirstConsumer), Bound and mounted;
# the claim and its volume go with the pod; a claim of that name the pod does not own is refused
# with Kubernetes' event; a volume without a template is refused at creation.
# Usage: ephemeral_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server
ROOT=$KVOL_DIR/agent

# pod NAME: a pod writing to its ephemeral volume "scratch" of the default class.
pod() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: [sh, -c, "echo scratch of $1 >/scratch/f; while true; do sleep 1; done"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        metadata: {labels: {kind: scratch}}
        spec:
          accessModes: [ReadWriteOnce]
          resources: {requests: {storage: 1Gi}}
YAML
}

# ---- validation --------------------------------------------------------------------------------
out=$(k apply -f - <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: scratch, ephemeral: {}}]
YAML
)
expect_contains "an ephemeral volume needs its template" \
  "spec.volumes[0].ephemeral.volumeClaimTemplate: Required value" "$out"

# ---- a pod with an ephemeral volume --------------------------------------------------------------
pod p
running() { [ "$(kubectl get pod "$1" -o jsonpath='{.status.phase}')" = Running ]; }
until_true 30 running p || { fail "the pod runs with its ephemeral volume"; k describe pod p; k describe pvc p-scratch; }
expect_contains "its claim is Bound, of the default class" "p-scratch Bound pvc-" "$(k get pvc p-scratch)"
expect_eq "owned by the pod" "Pod p true true $(kubectl get pod p -o jsonpath='{.metadata.uid}')" \
  "$(kubectl get pvc p-scratch -o jsonpath='{.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].controller} {.metadata.ownerReferences[0].blockOwnerDeletion} {.metadata.ownerReferences[0].uid}')"
expect_eq "labelled from the template" "scratch" "$(kubectl get pvc p-scratch -o jsonpath='{.metadata.labels.kind}')"
PV=$(kubectl get pvc p-scratch -o jsonpath='{.spec.volumeName}')
written() { [ "$(kubectl exec p -- cat /scratch/f 2>/dev/null)" = "scratch of p" ]; }
until_true 10 written || fail "the container writes to its ephemeral volume: $(kubectl exec p -- cat /scratch/f 2>&1)"

# ---- a claim of that name the pod does not own ----------------------------------------------------
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: q-scratch}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
pod q
out=$(k_until "pod is not owner" get events --field-selector involvedObject.name=q)
expect_contains "the pod is told the claim is not its own" \
  "Warning FailedBinding pod/q ephemeral volume scratch: PVC default/q-scratch was not created for pod default/q (pod is not owner)" "$out"
running q && fail "the pod does not run on a claim it does not own"
kubectl delete pod q --wait=false >/dev/null

# ---- the claim goes with its pod -------------------------------------------------------------------
kubectl delete pod p >/dev/null
gone() { ! kubectl get "$@" >/dev/null 2>&1; }
until_true 30 gone pvc p-scratch || fail "the claim goes with its pod"
until_true 30 gone pv "$PV" || fail "and its volume by the class's Delete policy"
kubectl get pvc q-scratch >/dev/null 2>&1 || fail "the claim q did not own stays"

finish
