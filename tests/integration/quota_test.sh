#!/usr/bin/env bash
# ResourceQuota in a real kvol server, driven with the real kubectl: `kubectl create quota`
# gets its status counted (claims, requested storage in all and per class, object counts, the
# quotas themselves); a claim that would go past it is refused with Kubernetes' message, and one
# that fits is charged at once; a dry run is checked but not charged; usage comes back when a
# claim goes; pods must state the compute resources a quota limits; a service that becomes a
# load balancer is charged as one; `kubectl get` and `kubectl describe` show it.
# Usage: quota_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server
kubectl create namespace q1 >/dev/null
GOLD=gold.storageclass.storage.k8s.io
kubectl -n q1 create quota storage \
  --hard=persistentvolumeclaims=2,requests.storage=3Gi,$GOLD/requests.storage=1Gi,resourcequotas=2,count/configmaps=5 \
  >/dev/null || fail "kubectl create quota"

used() { kubectl -n q1 get quota "${2:-storage}" -o go-template="{{index .status.used \"$1\"}}" 2>&1; }
used_is() { [ "$(used "$1" "${3:-storage}")" = "$2" ]; }
claim() {  # claim NAME SIZE [CLASS] [kubectl create flags]
  local name=$1 size=$2 class=${3:-}
  shift 3 2>/dev/null || shift $#
  kubectl -n q1 create "$@" -f - 2>&1 <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $name}
spec:
  accessModes: [ReadWriteOnce]
  ${class:+storageClassName: $class}
  resources: {requests: {storage: $size}}
YAML
}

until_true 20 used_is persistentvolumeclaims 0 || fail "the quota is counted: $(used persistentvolumeclaims)"
expect_eq "it counts itself" "1" "$(used resourcequotas)"
expect_eq "status.hard follows spec.hard" "3Gi" \
  "$(kubectl -n q1 get quota storage -o jsonpath='{.status.hard.requests\.storage}')"
expect_contains "kubectl get quota" "persistentvolumeclaims: 0/2" "$(k -n q1 get quota storage)"

# ---- admission ---------------------------------------------------------------------------------
expect_contains "a claim that fits" "created" "$(claim a 1Gi)"
expect_eq "... is charged before the count catches up" "1 1Gi" \
  "$(used persistentvolumeclaims) $(used requests.storage)"
expect_contains "a gold claim past the gold limit" \
  "persistentvolumeclaims \"b\" is forbidden: exceeded quota: storage, requested: $GOLD/requests.storage=2Gi, used: $GOLD/requests.storage=0, limited: $GOLD/requests.storage=1Gi" \
  "$(claim b 2Gi gold)"
expect_contains "a dry run that fits" "created (server dry run)" "$(claim c 1Gi "" --dry-run=server)"
expect_eq "... is not charged" "1" "$(used persistentvolumeclaims)"
expect_contains "a dry run that does not fit is refused" "exceeded quota" \
  "$(claim c 3Gi "" --dry-run=server)"
expect_contains "a second claim" "created" "$(claim c 1Gi gold)"
expect_contains "a third claim, past the count" \
  "exceeded quota: storage, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=2, limited: persistentvolumeclaims=2" \
  "$(claim d 1Mi)"
expect_eq "the refused ones were not written" "a c" \
  "$(kubectl -n q1 get pvc -o jsonpath='{.items[*].metadata.name}')"
expect_eq "per class" "1Gi" "$(used $GOLD/requests.storage)"
kubectl -n q1 create configmap one >/dev/null
# It and the root CA publisher's kube-root-ca.crt.
until_true 20 used_is count/configmaps 2 || fail "object counts: $(used count/configmaps)"
describe=$(k -n q1 describe quota storage)
expect_contains "kubectl describe quota" "requests.storage 2Gi 3Gi" "$describe"

# ---- usage released ----------------------------------------------------------------------------
kubectl -n q1 delete pvc a --wait=false >/dev/null
until_true 20 used_is requests.storage 1Gi || fail "a deleted claim's storage is released: $(used requests.storage)"
expect_contains "and its place taken" "created" "$(claim d 2Gi)"

# ---- compute: pods must say what they want -------------------------------------------------------
kubectl -n q1 create quota compute --hard=requests.cpu=1,pods=1 >/dev/null
until_true 20 used_is pods 0 compute || fail "the compute quota is counted"
pod() {
  kubectl -n q1 create -f - 2>&1 <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  nodeSelector: {no-such-node: "true"}
  containers: [{name: c, image: busybox, command: [sleep, "60"] ${2:-}}]
YAML
}
expect_contains "a pod that does not say how much cpu it wants" \
  'pods "p1" is forbidden: failed quota: compute: must specify requests.cpu' "$(pod p1)"
expect_contains "one that does" "created" "$(pod p2 ', resources: {requests: {cpu: 500m}}')"
expect_contains "one pod too many" "exceeded quota: compute, requested: pods=1, used: pods=1, limited: pods=1" \
  "$(pod p3 ', resources: {requests: {cpu: 100m}}')"
expect_eq "the storage quota counts quotas" "2" "$(used resourcequotas)"
expect_contains "a third quota, past resourcequotas=2" "exceeded quota: storage" \
  "$(kubectl -n q1 create quota third --hard=pods=9 2>&1)"

# ---- services: a load balancer is counted when a service becomes one ----------------------------
kubectl -n q1 delete quota compute >/dev/null
until_true 20 used_is resourcequotas 1 || fail "a deleted quota is released: $(used resourcequotas)"
kubectl -n q1 create quota lb --hard=services=2,services.loadbalancers=0 >/dev/null || fail "the lb quota"
until_true 20 used_is services 0 lb || fail "the lb quota is counted: $(used services lb)"
expect_contains "a ClusterIP service" "created" "$(kubectl -n q1 create service clusterip web --tcp=80 2>&1)"
expect_contains "made a load balancer, past services.loadbalancers=0" \
  'services "web" is forbidden: exceeded quota: lb, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0' \
  "$(kubectl -n q1 patch service web -p '{"spec":{"type":"LoadBalancer"}}' 2>&1)"
expect_eq "it stays a ClusterIP service" "ClusterIP" "$(kubectl -n q1 get service web -o jsonpath='{.spec.type}')"
expect_contains "a change that takes nothing more" "labeled" \
  "$(kubectl -n q1 label service web tier=front 2>&1)"

# ---- bad input -----------------------------------------------------------------------------------
expect_contains "a quota on what is not a quota resource" \
  'spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota' \
  "$(kubectl -n q1 create quota bad --hard=storage=1Gi 2>&1)"

kubectl delete namespace q1 --wait=false >/dev/null
until_true 60 bash -c '! kubectl get namespace q1' || fail "the namespace goes, quotas and all"
finish
