#!/usr/bin/env bash
# Namespaces as Kubernetes runs them, in a real kvol server with its node agent, driven with the
# real kubectl: every namespace has a default ServiceAccount; the namespaces the system needs
# cannot be deleted; deleting a namespace turns it
# Terminating, refuses new content, deletes its pods, claims and config maps (a claim waits for
# its pod, a bound local volume is released and a provisioned one deleted by their reclaim
# policies), says in its conditions what a finalizer still holds, refuses a second delete, and
# goes last. ReplicationControllers are listed and watched.
# Usage: namespace_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server
ROOT=$KVOL_DIR/agent
NODE=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')

# ---- the system's namespaces stay ------------------------------------------------------------
for ns in default kube-system kube-public kube-node-lease; do
  expect_contains "$ns may not be deleted" \
    "namespaces \"$ns\" is forbidden: this namespace may not be deleted" \
    "$(k delete ns "$ns" --wait=false)"
done
expect_contains "default stays Active" "default Active" "$(k get ns default)"

# ---- a namespace with content ----------------------------------------------------------------
mkdir -p "$WORK/local"
kubectl create ns t1 >/dev/null
until_true 10 kubectl -n t1 get serviceaccount default || fail "a new namespace gets its default ServiceAccount"
kubectl -n t1 delete serviceaccount default >/dev/null
until_true 10 kubectl -n t1 get serviceaccount default || fail "a deleted default ServiceAccount comes back"
kubectl -n t1 create configmap c --from-literal=a=b >/dev/null
kubectl -n t1 create secret generic s --from-literal=a=b >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: manual
  local: {path: $WORK/local}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$NODE]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: local, namespace: t1}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: provisioned, namespace: t1}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: t1}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: [sh, -c, "echo kept >/local/f; while true; do sleep 1; done"]
    volumeMounts: [{name: l, mountPath: /local}, {name: p, mountPath: /provisioned}]
  volumes:
  - {name: l, persistentVolumeClaim: {claimName: local}}
  - {name: p, persistentVolumeClaim: {claimName: provisioned}}
YAML
running() { [ "$(kubectl -n t1 get pod p -o jsonpath='{.status.phase}')" = Running ]; }
until_true 30 running || { fail "the pod runs"; k -n t1 describe pod p; }
expect_contains "the local volume is bound" "local-pv 1Gi RWO Retain Bound t1/local manual" "$(k get pv local-pv)"
PROVISIONED=$(kubectl -n t1 get pvc provisioned -o jsonpath='{.spec.volumeName}')
[ -n "$PROVISIONED" ] || fail "the provisioned claim has a volume"
# A config map another controller holds with its finalizer keeps the namespace Terminating.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: t1, finalizers: [example.com/hold]}
YAML

# ---- delete it ---------------------------------------------------------------------------------
expect_contains "kubectl delete ns" 'namespace "t1" deleted' "$(k delete ns t1 --wait=false)"
expect_eq "Terminating at once, the kubernetes finalizer in its spec" "Terminating kubernetes" \
  "$(kubectl get ns t1 -o jsonpath='{.status.phase} {.spec.finalizers[*]}')"
expect_contains "no new content in a namespace being deleted" \
  "unable to create new content in namespace t1 because it is being terminated" \
  "$(k -n t1 create configmap late --from-literal=a=b)"
held_only() {
  [ "$(kubectl get ns t1 -o jsonpath='{.status.conditions[?(@.type=="NamespaceContentRemaining")].message}')" = \
    "Some resources are remaining: configmaps. has 1 resource instances" ]
}
until_true 60 held_only || { fail "everything but the held config map goes"; k get ns t1 -o yaml; }
expect_eq "the held config map's finalizer is named" \
  "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances" \
  "$(kubectl get ns t1 -o jsonpath='{.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].status} {.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].reason} {.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}')"
expect_eq "content deletion did not fail" "False ContentDeleted" \
  "$(kubectl get ns t1 -o jsonpath='{.status.conditions[?(@.type=="NamespaceDeletionContentFailure")].status} {.status.conditions[?(@.type=="NamespaceDeletionContentFailure")].reason}')"
expect_contains "kubectl describe shows the conditions" "NamespaceFinalizersRemaining True" \
  "$(k describe ns t1)"
expect_contains "a second delete is refused while it empties" \
  "The system is ensuring all content is removed from this namespace." "$(k delete ns t1 --wait=false)"
expect_eq "pods, claims, secrets and service accounts are gone" "" \
  "$(kubectl -n t1 get pods,pvc,secrets,serviceaccounts -o name 2>&1)"
expect_eq "the pod's container stopped" 0 "$(container_procs)"
expect_contains "the local volume is released to its Retain policy" "local-pv 1Gi RWO Retain Released t1/local manual" \
  "$(get_until Released pv local-pv)"
expect_eq "and keeps its data" "kept" "$(cat "$WORK/local/f" 2>&1)"
gone() { ! kubectl get "$@" >/dev/null 2>&1; }
until_true 30 gone pv "$PROVISIONED" || fail "the provisioned volume is deleted by its Delete policy"

kubectl -n t1 patch configmap held --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
until_true 30 gone ns t1 || { fail "the namespace goes once it is empty"; k get ns t1 -o yaml; }
expect_eq "nothing of it remains" "" "$(kubectl -n t1 get all,cm,pvc -o name 2>&1)"

# ---- a name can be used again --------------------------------------------------------------------
kubectl create ns t1 >/dev/null || fail "t1 can be created again"
expect_eq "a new t1 is Active" "Active" "$(kubectl get ns t1 -o jsonpath='{.status.phase}')"
kubectl delete ns t1 --timeout=30s >/dev/null || fail "an empty namespace is deleted, kubectl waiting for it"
gone ns t1 || fail "the empty namespace is gone when kubectl returns"

# ---- replicationcontrollers: listed and watched (Kubernetes' e2e framework lists them) -----------
expect_contains "kubectl get rc in kube-system" "No resources found in kube-system namespace." \
  "$(k -n kube-system get replicationcontrollers)"
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ReplicationController
metadata: {name: rc1}
spec:
  replicas: 1
  selector: {app: rc1}
  template:
    metadata: {labels: {app: rc1}}
    spec: {containers: [{name: c, image: busybox}]}
YAML
expect_contains "kubectl get rc" "rc1" "$(k get rc)"
expect_contains "a watch of replicationcontrollers" '"type":"ADDED","object":{"apiVersion":"v1","kind":"ReplicationController"' \
  "$(kcurl "$KVOL_URL/api/v1/namespaces/default/replicationcontrollers?watch=1&timeoutSeconds=1")"

finish
