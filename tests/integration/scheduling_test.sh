#!/usr/bin/env bash
# The scheduler inside a real kvol server, driven with the real kubectl, on nodes that exist
# only as objects (no agent runs on them): the seed's delayed-binding claim becomes Bound to
# nginx-pv once a pod uses it, and the pod lands on the volume's node; three claims of the
# default class get three Bound `pvc-<uid>` volumes on the node their pod was given; a pod
# that fits nowhere says why in Kubernetes' words and is placed when the cluster changes.
# Usage: scheduling_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
SEEDS=$TESTS/seeds

kvol_start server --no-agent
expect_contains "the scheduler starts" "statefulset, snapshot-controller, default-scheduler running" "$(log_until "default-scheduler")"

# pod_scheduled_message POD: the PodScheduled condition's message, once there is one (5 s).
pod_scheduled_message() {
  local i out
  for i in $(seq 1 50); do
    out=$(kubectl get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}')
    [ -n "$out" ] && break
    sleep 0.1
  done
  echo "$out"
}

# A pod with no node yet says so before any node exists.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: early}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
YAML
expect_eq "no nodes at all" "no nodes available to schedule pods" "$(pod_scheduled_message early)"

# The seed's node names, as objects.
for n in k8s-node01 k8s-node02; do
  cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: Node
metadata:
  name: $n
  labels: {kubernetes.io/hostname: $n, kubernetes.io/os: linux}
YAML
done
kubectl wait pod/early --for=jsonpath='{.spec.nodeName}'=k8s-node01 --timeout=20s >/dev/null ||
  fail "the early pod was not placed once nodes existed"
expect_eq "a placed pod is PodScheduled" "True" \
  "$(kubectl get pod early -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}')"
out=$(describe_until "Scheduled" pod early)
expect_contains "describe shows the Scheduled event" \
  "Normal Scheduled" "$out"
expect_contains "in Kubernetes' words" "default-scheduler Successfully assigned default/early to k8s-node01" "$out"

# --- the seed's delayed binding, with its consumer ---------------------------------------------
k apply -f "$SEEDS/delay-bound-storage.yml" >/dev/null
describe_until "WaitForFirstConsumer" pvc nginx-pvc >/dev/null
expect_contains "Pending before a consumer exists" "nginx-pvc Pending local-storage" "$(k get pvc nginx-pvc)"
# The Deployment's pod, as its template in delay-bound-nginx.yml describes it (Deployments are
# not run yet).
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: nginx
  labels: {appname: nginx}
spec:
  containers:
  - name: nginx
    image: nginx
    ports: [{name: http, containerPort: 80, protocol: TCP}]
    volumeMounts: [{name: data, mountPath: /usr/share/nginx/html}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: nginx-pvc}
YAML
kubectl wait pvc/nginx-pvc --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null ||
  fail "nginx-pvc did not bind once its pod existed"
expect_contains "Bound to the seed's volume" "nginx-pvc Bound nginx-pv 5Gi RWO local-storage" \
  "$(k get pvc nginx-pvc)"
expect_contains "and the volume to the claim" "nginx-pv 5Gi RWO Delete Bound default/nginx-pvc local-storage" \
  "$(k get pv nginx-pv)"
kubectl wait pod/nginx --for=jsonpath='{.spec.nodeName}'=k8s-node01 --timeout=20s >/dev/null ||
  fail "the pod was not placed on the volume's node"
expect_contains "kubectl get -o wide shows the node" "nginx 0/1 Pending 0" "$(k get pod nginx -o wide)"
expect_contains "on k8s-node01" "k8s-node01" "$(k get pod nginx -o wide)"

# A second pod of the claim that the volume's node excludes: both reasons, counted by node.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec:
  nodeSelector: {kubernetes.io/hostname: k8s-node02}
  containers: [{name: c, image: nginx}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: nginx-pvc}}]
YAML
expect_eq "volume node affinity conflict" \
  "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had volume node affinity conflict." \
  "$(pod_scheduled_message elsewhere)"
out=$(describe_until "FailedScheduling" pod elsewhere)
expect_contains "describe shows the condition" "PodScheduled False" "$out"
expect_contains "and the event" \
  "Warning FailedScheduling" "$out"
expect_contains "from default-scheduler" "default-scheduler 0/2 nodes are available" "$out"
expect_eq "it stays Pending" "Pending" "$(kubectl get pod elsewhere -o jsonpath='{.status.phase}')"
kubectl delete pod elsewhere --wait=false >/dev/null

# --- three claims of the default class --------------------------------------------------------
for c in data-0 data-1 data-2; do
  cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $c}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
done
sleep 0.3
expect_contains "Pending: local-path waits for a consumer" "data-0 Pending local-path" "$(k get pvc data-0)"
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: three}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [k8s-node02]}]
  containers: [{name: c, image: busybox}]
  volumes:
  - {name: a, persistentVolumeClaim: {claimName: data-0}}
  - {name: b, persistentVolumeClaim: {claimName: data-1}}
  - {name: c, persistentVolumeClaim: {claimName: data-2}}
YAML
for c in data-0 data-1 data-2; do
  kubectl wait "pvc/$c" --for=jsonpath='{.status.phase}'=Bound --timeout=20s >/dev/null || fail "$c did not bind"
  uid=$(kubectl get pvc "$c" -o jsonpath='{.metadata.uid}')
  expect_contains "$c is Bound to pvc-<uid>" "$c Bound pvc-$uid 1Gi RWO local-path" "$(k get pvc "$c")"
  expect_contains "pvc-<uid> is Bound to $c" "pvc-$uid 1Gi RWO Delete Bound default/$c local-path" \
    "$(k get pv "pvc-$uid")"
  expect_eq "$c was provisioned for the pod's node" "k8s-node02" \
    "$(kubectl get pvc "$c" -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}')"
  expect_eq "its volume is tied to that node" "k8s-node02" \
    "$(kubectl get pv "pvc-$uid" -o jsonpath='{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}')"
done
expect_eq "three volumes of the class" "3" "$(kubectl get pv --no-headers | grep -c ' local-path ')"
kubectl wait pod/three --for=jsonpath='{.spec.nodeName}'=k8s-node02 --timeout=20s >/dev/null ||
  fail "the pod was not placed once its claims were Bound"

# --- unschedulable until the cluster changes ---------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: wants-ssd}
spec:
  nodeSelector: {disk: ssd}
  containers: [{name: c, image: busybox}]
YAML
expect_eq "no node has the label" \
  "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector." \
  "$(pod_scheduled_message wants-ssd)"
kubectl label node k8s-node02 disk=ssd >/dev/null
kubectl wait pod/wants-ssd --for=jsonpath='{.spec.nodeName}'=k8s-node02 --timeout=20s >/dev/null ||
  fail "labelling a node did not place the pod"

# A claim of no class with no volume for it: the pod waits for the claim.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: static}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: waits-for-claim}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: static}}]
YAML
expect_eq "unbound immediate claim" \
  "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims." \
  "$(pod_scheduled_message waits-for-claim)"
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: static-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/static-pv}
YAML
kubectl wait pod/waits-for-claim --for=jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}'=True \
  --timeout=20s >/dev/null || fail "the pod was not placed once its claim was Bound"

# Another scheduler's pod is left alone.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: not-ours}
spec:
  schedulerName: my-scheduler
  containers: [{name: c, image: busybox}]
YAML
sleep 0.5
expect_eq "not ours: no node, no condition" "|" \
  "$(kubectl get pod not-ours -o jsonpath='{.spec.nodeName}|{.status.conditions}')"
# Its scheduler binds it as every scheduler does, through pods/NAME/binding; an update could not.
expect_contains "spec.nodeName is not updated" "pod updates may not change fields" \
  "$(kubectl patch pod not-ours -p '{"spec":{"nodeName":"k8s-node01"}}' 2>&1)"
cat >"$WORK/binding.json" <<'JSON'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "not-ours"},
 "target": {"kind": "Node", "name": "k8s-node02"}}
JSON
expect_contains "a Binding is created" '"status":"Success"' \
  "$(kubectl create --raw /api/v1/namespaces/default/pods/not-ours/binding -f "$WORK/binding.json" 2>&1)"
expect_eq "bound by its own scheduler" "k8s-node02 True" \
  "$(kubectl get pod not-ours -o jsonpath='{.spec.nodeName} {.status.conditions[?(@.type=="PodScheduled")].status}')"
expect_contains "only once" 'pod not-ours is already assigned to node "k8s-node02"' \
  "$(kubectl create --raw /api/v1/namespaces/default/pods/not-ours/binding -f "$WORK/binding.json" 2>&1)"
expect_contains "discovery lists pods/binding" "pods/binding" "$(kubectl get --raw /api/v1)"

finish
