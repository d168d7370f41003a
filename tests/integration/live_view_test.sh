#!/usr/bin/env bash
# The live view (/ui/) in a real browser: headless Chromium loads the page through the real
# `kubectl proxy` from a real server, and the test reads what the page shows through Chromium's
# DevTools protocol (cdp):
#   1. a Pending WaitForFirstConsumer claim shows its waiting provisioner step and the event's
#      text;
#   2. once its pod is created, the same claim shows Bound, published and running; a claim of
#      the bundled CSI driver's class shows each step done: provisioned, attached, staged,
#      published;
#   3. a claim whose class names an absent provisioner shows the ExternalProvisioning wait;
#   4. a click on the claim's row opens its details, which link to the YAML of its claim, class,
#      volume, pod and node; the claim's link shows what `kubectl get -o yaml` prints, as does
#      the pod's;
#   5. the nodes view shows the node and the claim's usage.
# Screenshots of each are saved under artifacts/live_view/ in the directory the test runs in.
# Usage: live_view_test.sh KVOL_BINARY TESTS_DIR CDP
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
CDP=$(realpath "$3")
source "$TESTS/integration/lib.sh"

ARTIFACTS=$PWD/artifacts/live_view
rm -rf "$ARTIFACTS" && mkdir -p "$ARTIFACTS"

kvol_start srv --volume-stats-agg-period 1s

# Direct to the server: the page's files need no token, the API it reads does.
expect_eq "the page, direct" 200 \
  "$(curl -s -o "$WORK/index.html" -w '%{http_code}' --cacert "$KVOL_DIR/pki/ca.crt" "$KVOL_URL/ui/")"
expect_contains "the page is the live view" '<script src="app.js">' "$(cat "$WORK/index.html")"
expect_eq "a file the page does not have" 404 \
  "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KVOL_DIR/pki/ca.crt" "$KVOL_URL/ui/nosuch.js")"
expect_contains "/ui redirects to /ui/" "location: /ui/" \
  "$(curl -s -D - -o /dev/null --cacert "$KVOL_DIR/pki/ca.crt" "$KVOL_URL/ui" | tr -d '\r' | tr 'A-Z' 'a-z')"
expect_eq "the API without a token" 401 \
  "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KVOL_DIR/pki/ca.crt" "$KVOL_URL/api/v1/persistentvolumeclaims")"

# ---- kubectl proxy, and the browser on it ------------------------------------------------------
proxy_start || { fail "kubectl proxy did not start"; finish; }
UI=$PROXY_URL/ui/
expect_contains "the page through kubectl proxy" '<script src="app.js">' "$(curl -s "$UI")"

browser_start "$WORK/chromium" "${UI}?q=wait" || { fail "the browser did not start"; finish; }
js() { "$CDP" "$DEVTOOLS" eval "$1"; }
shot() { "$CDP" "$DEVTOOLS" screenshot "$ARTIFACTS/$1.png" && echo "screenshot: $ARTIFACTS/$1.png"; }
page_ready() { [ "$(js 'String(!!(window.kvolUi && window.kvolUi.ready))')" = true ]; }
until_true 60 page_ready || { fail "the page did not load: $(js 'document.body.innerText' 2>&1 | head -20)"; finish; }

# step CLAIM STEP: "state|text" of the claim's cell for STEP ("row" for the row and its why).
step() {
  js "(() => { const r = document.querySelector('[data-claim=\"default/$1\"]');
    if (!r) return 'no row';
    if ('$2' === 'row') return r.dataset.state + '|' + r.innerText.replace(/\\s+/g, ' ');
    const c = r.querySelector('[data-step=$2]');
    return c.dataset.state + '|' + c.innerText.replace(/\\s+/g, ' ').trim(); })()"
}
step_is() { [[ $(step "$1" "$2") == $3 ]]; }

# ---- 1. a WaitForFirstConsumer claim, Pending ---------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: wait}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
YAML
until_true 30 step_is wait provisioner 'waiting|*' ||
  fail "the provisioner step of the pending claim is not waiting: $(step wait provisioner)"
wffc_shown() { [[ $(step wait row) == *"waiting for first consumer to be created before binding"* ]]; }
until_true 30 wffc_shown || fail "the claim's row does not show the event: $(step wait row)"
expect_contains "the class step" "done|local-path" "$(step wait class)"
expect_contains "the claim is Pending" "Pending" "$(step wait row)"
shot 1-waiting-for-first-consumer

# ---- 2. its pod: Bound, published, running ------------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "head -c 1048576 /dev/zero >/data/1m; sleep 999999"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: wait}}]
YAML
until_true 60 step_is wait containers 'done|1/1 running*' ||
  fail "the containers step does not show the pod running: $(step wait containers)"
until_true 10 step_is wait published 'done|user*' || fail "the claim is not shown published: $(step wait published)"
expect_contains "the claim is Bound" "Bound" "$(step wait row)"
expect_contains "the provisioner step is done" "done|kvol.io/local-path" "$(step wait provisioner)"
pv=$(kubectl get pvc wait -o jsonpath='{.spec.volumeName}')
expect_contains "the PV step names the volume" "done|$pv" "$(step wait volume)"
node=$(kubectl get pod user -o jsonpath='{.spec.nodeName}')
expect_contains "the node step names the node" "done|$node" "$(step wait node)"
expect_contains "a local-path volume is not attached" "none|not attachable" "$(step wait attachment)"
expect_contains "the pods step" "done|user Running" "$(step wait pods)"
expect_eq "no step of the running claim waits or failed" "done" "$(step wait row | cut -d'|' -f1)"
shot 2-bound-and-running

# ---- 2b. a CSI claim: provisioned, attached, staged and published ------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: loop}
spec:
  storageClassName: loop
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 16Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: loop-user}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: [sleep, "999999"], volumeMounts: [{name: v, mountPath: /v}]}
  volumes: [{name: v, persistentVolumeClaim: {claimName: loop}}]
YAML
"$CDP" "$DEVTOOLS" navigate "${UI}?q=loop" >/dev/null
until_true 60 page_ready || fail "the page did not load again"
until_true 90 step_is loop containers 'done|1/1 running*' ||
  fail "the CSI claim's pod is not shown running: $(step loop row)"
expect_contains "the built-in CSI provisioner made it" "done|loop.csi.kvol.io" "$(step loop provisioner)"
expect_contains "its VolumeAttachment is attached to the node" "done|$node" "$(step loop attachment)"
expect_contains "its device is staged on the node" "done|$node" "$(step loop staged)"
expect_contains "it is published to the pod" "done|loop-user" "$(step loop published)"
shot 2b-csi-claim

# ---- 3. a class whose provisioner is absent ------------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: elsewhere}
provisioner: example.com/absent
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: external}
spec:
  storageClassName: elsewhere
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
YAML
"$CDP" "$DEVTOOLS" navigate "${UI}?q=external" >/dev/null
until_true 60 page_ready || fail "the page did not load again"
external_waits() {
  [[ $(step external row) == *"Waiting for a volume to be created either by the external provisioner 'example.com/absent' or manually by the system administrator."* ]]
}
until_true 30 external_waits || fail "the ExternalProvisioning wait is not shown: $(step external row)"
expect_contains "the provisioner step waits" "waiting|example.com/absent" "$(step external provisioner)"
expect_eq "the filter leaves one row" 1 "$(js 'String(window.kvolUi.shown())')"
shot 3-external-provisioning

# ---- 4. YAML, as kubectl prints it ---------------------------------------------------------------
"$CDP" "$DEVTOOLS" navigate "${UI}?q=wait" >/dev/null
until_true 60 page_ready || fail "the page did not load again"
has_row() { [ "$(js "String(!!document.querySelector('[data-claim=\"default/wait\"]'))")" = true ]; }
until_true 10 has_row || fail "no row for the claim"
js "document.querySelector('[data-claim=\"default/wait\"]').click()" >/dev/null
links() { js "[...document.querySelectorAll('#detail a.yaml-link')].map(a => a.getAttribute('href')).join(' ')"; }
detail_open() { [[ $(links) == *"#yaml/api/v1/persistentvolumes/$pv"* ]]; }
until_true 10 detail_open || fail "the claim's details do not link to its volume's YAML: $(links)"
for want in "#yaml/api/v1/namespaces/default/persistentvolumeclaims/wait" \
  "#yaml/api/v1/namespaces/default/pods/user" "#yaml/api/v1/nodes/$node" \
  "#yaml/apis/storage.k8s.io/v1/storageclasses/local-path"; do
  expect_contains "the claim's details link to $want" "$want" "$(links)"
done
shot 4-claim-details
# The claim's own link: the first.
js "document.querySelector('#detail a.yaml-link').click()" >/dev/null
# yaml_ready PATH: the YAML view shows PATH's object.
yaml_ready() {
  [ "$(js "(() => { const y = document.getElementById('yaml');
    return String(y.dataset.path === '$1' && y.dataset.ready === 'true'); })()")" = true ]
}
yaml_text() { js 'document.getElementById("yaml").textContent.replace(/\n$/, "")'; }
until_true 30 yaml_ready /api/v1/namespaces/default/persistentvolumeclaims/wait ||
  fail "the YAML view did not load"
yaml_text >"$WORK/page.yaml"
kubectl get pvc wait -o yaml >"$WORK/kubectl.yaml"
diff -u "$WORK/kubectl.yaml" "$WORK/page.yaml" >"$WORK/yaml.diff" ||
  fail "the page's YAML of the claim differs from kubectl get -o yaml: $(cat "$WORK/yaml.diff")"
"$CDP" "$DEVTOOLS" navigate "${UI}#yaml/api/v1/namespaces/default/pods/user" >/dev/null
until_true 30 yaml_ready /api/v1/namespaces/default/pods/user || fail "the YAML view of the pod did not load"
yaml_text >"$WORK/page-pod.yaml"
kubectl get pod user -o yaml >"$WORK/kubectl-pod.yaml"
diff -u "$WORK/kubectl-pod.yaml" "$WORK/page-pod.yaml" >"$WORK/yaml-pod.diff" ||
  fail "the page's YAML of the pod differs from kubectl get -o yaml: $(cat "$WORK/yaml-pod.diff")"
shot 4-yaml-of-the-pod

# ---- 5. the node, with the claim's usage ----------------------------------------------------------
"$CDP" "$DEVTOOLS" navigate "${UI}#nodes" >/dev/null
until_true 60 page_ready || fail "the page did not load again"
usage() {
  js "(() => { const r = document.querySelector('[data-node=\"$node\"] tr[data-claim=\"default/wait\"] .used');
    return r ? r.textContent : 'none'; })()"
}
usage_shown() { [[ $(usage) == *MiB* ]]; }
until_true 40 usage_shown || fail "the nodes view shows no usage of the claim: $(usage); $(js 'document.getElementById("nodes-view").innerText' 2>&1 | head -20)"
expect_contains "the node is Ready" "Ready" "$(js "document.querySelector('[data-node=\"$node\"] h2').innerText")"
shot 5-nodes

finish
