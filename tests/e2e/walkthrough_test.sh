#!/usr/bin/env bash
# The README's walkthrough, step by step, with the real kubectl against a fresh `kvol server`
# started as `make run` starts it: the seed examples as the README gives them, and what each
# step must print. Paths on the node (/data, /data/nginx) are moved under a temporary directory
# so that the test leaves the machine as it was.
# Usage: walkthrough_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
SEEDS=$TESTS/seeds
HOST=$WORK/host  # stands for the node's / in the README's paths
mkdir -p "$HOST"

kvol_start server
NODE=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
expect_eq "one node, this machine" "$(hostname)" "$NODE"

ready() {
  kubectl wait --for=condition=Ready "pod/$1" --timeout=60s >/dev/null 2>&1 ||
    { fail "pod $1 becomes Ready"; k describe pod "$1"; }
}

# ---- 1. emptyDir shared by two containers ------------------------------------------------------
kubectl create -f "$SEEDS/volume-emptyDir.yml" >/dev/null
ready emptydir-pod
kubectl exec emptydir-pod -c c1 -- touch /path1/abc.txt
expect_eq "1: c2 sees the file c1 made" "abc.txt" "$(kubectl exec emptydir-pod -c c2 -- ls /path2 2>&1)"

# ---- 2. hostPath, type Directory ---------------------------------------------------------------
# The README makes /data first: type Directory requires it to exist.
mkdir -p "$HOST/data"
sed "s|^\( *\)path: /data$|\1path: $HOST/data|" "$SEEDS/volume-hostPath.yml" | kubectl create -f - >/dev/null
ready hostpath-pod
kubectl exec hostpath-pod -- touch /data/abc.txt
expect_contains "2: the file is on the node" "abc.txt" "$(ls -l "$HOST/data")"
expect_contains "2: kubectl get pod -o wide: running on this node" "hostpath-pod 1/1 Running 0" \
  "$(k get pod hostpath-pod -o wide)"

# ---- 3. a ConfigMap volume with items ----------------------------------------------------------
kubectl create -f "$SEEDS/volume-configmap.yml" >/dev/null
ready configmap-pod
out=$(kubectl exec configmap-pod -- ls -l /etc/config 2>&1)
expect_contains "3: ls -l /etc/config: total" "total 0" "$out"
expect_contains "3: log_level is a link into ..data" "log_level -> ..data/log_level" "$out"
expect_contains "3: ui.properties is a link into ..data" "ui.properties -> ..data/ui.properties" "$out"
expect_eq "3: cat log_level" "INFO" "$(kubectl exec configmap-pod -- cat /etc/config/log_level 2>&1)"
expect_eq "3: cat ui.properties" "color.good=purple
color.bad=yellow
allow.textmode=true
how.nice.to.look=fairlyNice" "$(kubectl exec configmap-pod -- cat /etc/config/ui.properties 2>&1)"

# ---- 4. downwardAPI: labels and annotations as files -------------------------------------------
# The seed's loop is bash ([[ ]], echo -en); this machine's sh is dash, so the README runs bash.
sed 's/\["sh", "-c"\]/["bash", "-c"]/' "$SEEDS/volume-downwardApi.yml" | kubectl apply -f - >/dev/null
ready dwapi-pod
out=$(k_until 'prometheus.io/scrape="true"' logs dwapi-pod)
expect_contains "4: the labels file" 'app="dnsutils"
version="1.1"' "$out"
expect_contains "4: the annotations file, sorted, as key=\"value\"" 'prometheus.io/port="80"
prometheus.io/scheme="http"
prometheus.io/scrape="true"' "$out"
expect_contains "4: kubectl apply's annotation, quoted" \
  'kubectl.kubernetes.io/last-applied-configuration="{\"apiVersion\":\"v1\",\"kind\":\"Pod\"' "$out"

# ---- 5. a PV and a claim that selects it -------------------------------------------------------
kubectl apply -f "$SEEDS/nfs-pv.yml" -f "$SEEDS/nfs-pvc.yml" >/dev/null
out=$(get_until "nfs-pvc Bound" pv,pvc)
expect_contains "5: kubectl get pv" "persistentvolume/nfs-pv 5Gi RWO Recycle Bound default/nfs-pvc slow" "$out"
expect_contains "5: kubectl get pvc" "persistentvolumeclaim/nfs-pvc Bound nfs-pv 5Gi RWO slow" "$out"

# ---- 6. delayed binding of a local volume ------------------------------------------------------
mkdir -p "$HOST/data/nginx"
echo '<h1>hello storage class</h1>' >"$HOST/data/nginx/index.html"
sed -e "s/k8s-node01/$NODE/" -e "s|path: /data/nginx|path: $HOST/data/nginx|" \
  "$SEEDS/delay-bound-storage.yml" | kubectl apply -f - >/dev/null
expect_contains "6: the volume waits, Available" "nginx-pv 5Gi RWO Delete Available local-storage" \
  "$(get_until Available pv nginx-pv)"
expect_contains "6: the claim waits, Pending" "nginx-pvc Pending local-storage" "$(k get pvc nginx-pvc)"
expect_contains "6: the claim says why" \
  "Normal WaitForFirstConsumer" "$(describe_until WaitForFirstConsumer pvc nginx-pvc)"
kubectl apply -f "$SEEDS/delay-bound-nginx.yml" >/dev/null
deploy_pod() { kubectl get pods -l appname=nginx -o jsonpath='{.items[0].metadata.name}' 2>/dev/null | grep .; }
until_true 30 deploy_pod || fail "6: the Deployment makes its pod"
POD=$(deploy_pod)
ready "$POD"
expect_contains "6: the claim is Bound to the local volume" "nginx-pvc Bound nginx-pv 5Gi RWO local-storage" \
  "$(k get pvc nginx-pvc)"
expect_eq "6: the pod serves the file from the local path" "<h1>hello storage class</h1>" \
  "$(kubectl exec "$POD" -- cat /usr/share/nginx/html/index.html 2>&1)"

# ---- 7. dynamic provisioning for a StatefulSet -------------------------------------------------
kubectl apply -f "$SEEDS/nfs-storageclass.yml" -f "$SEEDS/nfs-nginx-deploy.yml" >/dev/null
expect_contains "7: the StatefulSet's pods come up" "web 3/3" "$(k_until "web 3/3" get sts web)"
pvs=$(k get pv)
pvcs=$(k get pvc)
for i in 0 1 2; do
  uid=$(kubectl get pvc "data-web-$i" -o jsonpath='{.metadata.uid}')
  expect_contains "7: kubectl get pv: data-web-$i's volume" \
    "pvc-$uid 1Gi RWO Delete Bound default/data-web-$i nfs-storage" "$pvs"
  expect_contains "7: kubectl get pvc: data-web-$i" "data-web-$i Bound pvc-$uid 1Gi RWO nfs-storage" "$pvcs"
done

finish
