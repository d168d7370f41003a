#!/usr/bin/env bash
# Deployments and StatefulSets in a real kvol server with its node agent, driven with kubectl
# and the seed manifests: the delayed-binding Deployment's pod is created, placed on the
# volume's node, its claim Bound and its local volume mounted; replicas and template changes
# create and replace pods; `kubectl delete --cascade=orphan` keeps a Deployment's pods and
# `--cascade=foreground` deletes them before it; the seed StatefulSet gets `<name>-<ordinal>` pods with claims
# `data-web-<ordinal>` provisioned as `pvc-<uid>` volumes, one pod after the other (each once the
# one before is Ready), kept when the set goes.
# Usage: workload_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
SEEDS=$TESTS/seeds

# The seed's local volume names its node k8s-node01: this machine's agent registers as that.
kvol_start server --node-name k8s-node01
ROOT=$KVOL_DIR/agent
volumes_ready() {
  [ "$(kubectl get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="kvol.io/VolumesReady")].status}')" = True ]
}
deploy_pods() { kubectl get pods -l appname=nginx -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'; }
pod_count_is() { [ "$(deploy_pods | grep -c .)" -eq "$1" ]; }

# ---- the seed's delayed binding, with its Deployment ------------------------------------------
mkdir -p "$WORK/data/nginx"
echo "served from the local volume" >"$WORK/data/nginx/index.html"
sed "s|path: /data/nginx|path: $WORK/data/nginx|" "$SEEDS/delay-bound-storage.yml" | kubectl apply -f - >/dev/null
kubectl apply -f "$SEEDS/delay-bound-nginx.yml" >/dev/null
until_true 10 pod_count_is 1 || fail "the Deployment makes one pod: $(deploy_pods)"
POD=$(deploy_pods | head -1)
expect_contains "pod named <deployment>-<hash>-<suffix>" "nginx-deploy-" "$POD"
until_true 10 volumes_ready "$POD" || { fail "the Deployment's pod gets its volume"; k describe pod "$POD"; }
expect_eq "placed on the volume's node" "k8s-node01" "$(kubectl get pod "$POD" -o jsonpath='{.spec.nodeName}')"
expect_contains "claim Bound to nginx-pv" "nginx-pvc Bound nginx-pv 5Gi RWO local-storage" "$(k get pvc nginx-pvc)"
LOCAL=$ROOT/pods/$(kubectl get pod "$POD" -o jsonpath='{.metadata.uid}')/volumes/kubernetes.io~local-volume/nginx-pv
expect_eq "the local volume is mounted for the pod" "served from the local volume" "$(cat "$LOCAL/index.html" 2>&1)"
expect_contains "owned by the Deployment" '"kind":"Deployment","name":"nginx-deploy"' \
  "$(kubectl get pod "$POD" -o jsonpath='{.metadata.ownerReferences}')"
out=$(get_until "1/1" deploy nginx-deploy)
expect_contains "kubectl get deploy: its pod runs" "nginx-deploy 1/1 1 1" "$out"
out=$(describe_until "SuccessfulCreate" deploy nginx-deploy)
expect_contains "creation event" "Normal SuccessfulCreate" "$out"
expect_contains "creation event names the pod" "Created pod: $POD" "$out"

# More replicas, then a new template: old pods go, new ones come.
kubectl patch deploy nginx-deploy -p '{"spec":{"replicas":2}}' >/dev/null
until_true 10 pod_count_is 2 || fail "scaled to two pods: $(deploy_pods)"
HASH=$(kubectl get pod "$POD" -o jsonpath='{.metadata.labels.pod-template-hash}')
kubectl patch deploy nginx-deploy --type=json \
  -p '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.25"}]' >/dev/null
new_template() {
  local images
  images=$(kubectl get pods -l appname=nginx -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}')
  [ "$(grep -c . <<<"$images")" -eq 2 ] && ! grep -qvx 'nginx:1.25' <<<"$images"
}
until_true 10 new_template || fail "the new template replaced both pods: $(k get pods)"
kubectl get pods -l "pod-template-hash=$HASH" -o name | grep -q . && fail "no pod of the old template is left"

# Deleting the Deployment deletes its pods.
kubectl delete deploy nginx-deploy >/dev/null
until_true 10 pod_count_is 0 || fail "the Deployment's pods go with it: $(deploy_pods)"

# ---- kubectl delete --cascade: orphan keeps the pods; foreground deletes them first ----------
app_pods() { kubectl get pods -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'; }
app_count_is() { [ "$(app_pods "$1" | grep -c .)" -eq "$2" ]; }
# deployment NAME: two pods that sleep and stop at once when asked.
deployment() {
  kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: 2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: busybox, command: [sleep, "1000"]}]
YAML
}
deployment keep
until_true 10 app_count_is keep 2 || fail "the keep Deployment makes two pods: $(app_pods keep)"
kubectl delete deploy keep --cascade=orphan >/dev/null
gone_deploy() { ! kubectl get deploy "$1" >/dev/null 2>&1; }
until_true 10 gone_deploy keep || fail "an orphaning delete removes the Deployment"
no_owner() { [ -z "$(kubectl get pods -l app=keep -o jsonpath='{.items[*].metadata.ownerReferences}')" ]; }
until_true 10 no_owner || fail "the orphans lose their owner reference: $(kubectl get pods -l app=keep -o yaml)"
app_count_is keep 2 || fail "--cascade=orphan keeps the pods: $(app_pods keep)"
kubectl delete pods -l app=keep --wait=false >/dev/null

deployment fg
until_true 10 app_count_is fg 2 || fail "the fg Deployment makes two pods: $(app_pods fg)"
HELD=$(app_pods fg | head -1)
kubectl patch pod "$HELD" --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
kubectl delete deploy fg --cascade=foreground --wait=false >/dev/null
expect_eq "a foreground delete holds the Deployment with foregroundDeletion" "foregroundDeletion" \
  "$(kubectl get deploy fg -o jsonpath='{.metadata.finalizers[*]}')"
only_held() { [ "$(app_pods fg)" = "$HELD" ]; }
until_true 20 only_held || fail "the pods are deleted first: $(app_pods fg)"
kubectl get deploy fg >/dev/null 2>&1 || fail "the Deployment waits for its pod the finalizer holds"
kubectl patch pod "$HELD" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
until_true 20 gone_deploy fg || fail "the Deployment goes once its pods are gone"
app_count_is fg 0 || fail "no pod of fg is left: $(app_pods fg)"

# ---- the seed's StatefulSet with volumeClaimTemplates -----------------------------------------
kubectl apply -f "$SEEDS/nfs-storageclass.yml" >/dev/null
sed -n '/^kind: StatefulSet/,$p' "$SEEDS/nfs-nginx-deploy.yml" | sed '1i apiVersion: apps/v1' | kubectl apply -f - >/dev/null
until_true 10 volumes_ready web-0 || { fail "web-0 created with its volume"; k describe pod web-0; }
expect_contains "data-web-0 is Bound to a provisioned volume" "data-web-0 Bound pvc-" "$(k get pvc data-web-0)"
expect_eq "the volume is named after the claim's uid" "pvc-$(kubectl get pvc data-web-0 -o jsonpath='{.metadata.uid}')" \
  "$(kubectl get pvc data-web-0 -o jsonpath='{.spec.volumeName}')"
expect_eq "web-0's volume is the claim's" "data-web-0" \
  "$(kubectl get pod web-0 -o jsonpath='{.spec.volumes[?(@.name=="data")].persistentVolumeClaim.claimName}')"
expect_contains "kubectl get sts: the pods come up one after the other" "web 3/3" "$(get_until "web 3/3" sts web)"
ready_at=$(kubectl get pod web-0 -o jsonpath='{.status.conditions[?(@.type=="Ready")].lastTransitionTime}')
created=$(kubectl get pod web-1 -o jsonpath='{.metadata.creationTimestamp}')
[[ ! "$created" < "$ready_at" ]] || fail "OrderedReady: web-1 ($created) waits for web-0 to be Ready ($ready_at)"
out=$(describe_until "create Pod web-0" sts web)
expect_contains "claim event" "create Claim data-web-0 Pod web-0 in StatefulSet web success" "$out"
expect_contains "pod event" "create Pod web-0 in StatefulSet web successful" "$out"

# A Parallel set makes every pod and claim at once.
sed -n '/^kind: StatefulSet/,$p' "$SEEDS/nfs-nginx-deploy.yml" | sed '1i apiVersion: apps/v1' |
  sed 's/^  name: web$/  name: fast/; s/^  serviceName: "nginx"$/  serviceName: "nginx"\n  podManagementPolicy: Parallel/' |
  kubectl apply -f - >/dev/null
all_fast() { for i in 0 1 2; do volumes_ready "fast-$i" || return 1; done; }
until_true 15 all_fast || { fail "fast-0..2 ready"; k get pods,pvc; }
expect_eq "three Bound claims" "3" "$(kubectl get pvc -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}' | grep -c '^data-fast-[0-2] Bound$')"

# Scaling down removes the highest ordinal and keeps its claim; deleting the set keeps them all.
kubectl patch sts fast -p '{"spec":{"replicas":2}}' >/dev/null
gone() { ! kubectl get pod "$1" >/dev/null 2>&1; }
until_true 10 gone fast-2 || fail "fast-2 goes when the set shrinks"
kubectl get pod fast-1 >/dev/null 2>&1 || fail "fast-1 stays"
kubectl get pvc data-fast-2 >/dev/null 2>&1 || fail "data-fast-2 is kept"
kubectl delete sts fast web >/dev/null
until_true 10 gone fast-0 || fail "the set's pods go with it"
until_true 10 gone web-0 || fail "web-0 goes with its set"
expect_eq "claims are kept" "6" "$(kubectl get pvc -o name | grep -c -e data-fast -e data-web)"

finish
