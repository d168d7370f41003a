#!/usr/bin/env bash
# `kvol server` as a process and the API's edges: start-up log, files and their modes, health
# without a token, built-in namespaces, namespace refusal, cross-namespace lists, malformed and
# oversized bodies, media types of create bodies, bounded JSON patches, partial request headers,
# watch clients that go away, deletecollection, propagationPolicy, generation, the default
# StorageClass, discovery short names, refusal to start on a taken port or an unusable data
# directory, and a clean stop on SIGTERM/SIGINT that keeps every object.
# Usage: server_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server
port=${KVOL_URL##*:}

# 300 connections that send part of a request header and stall, held through the rest of the
# checks below (which a normal client makes meanwhile); each is closed at the header timeout.
python3 - 127.0.0.1 "$port" "$KVOL_DIR/pki/ca.crt" 300 >"$WORK/partial.out" 2>&1 <<'PY' &
import socket, ssl, sys, time
host, port, ca, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ctx = ssl.create_default_context(cafile=ca)
conns = []
for i in range(n):
    s = ctx.wrap_socket(socket.create_connection((host, port)), server_hostname=host)
    s.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")
    s.setblocking(False)
    conns.append(s)
print("open", len(conns), flush=True)
start, closed = time.time(), set()
while len(closed) < n and time.time() - start < 60:
    for i, s in enumerate(conns):
        if i in closed:
            continue
        try:
            if s.recv(1) == b"":
                closed.add(i)
        except ssl.SSLWantReadError:
            pass
        except OSError:
            closed.add(i)
    time.sleep(0.5)
print("closed", len(closed), "after", int(time.time() - start), "s", flush=True)
PY
PARTIAL_PID=$!
track "$PARTIAL_PID"

# --- start-up ------------------------------------------------------------------------------
log=$(cat "$KVOL_LOG")
expect_contains "log names the data directory" "data directory $KVOL_DIR" "$log"
expect_contains "log names the store" "store: sqlite $KVOL_DIR/kvol.db at revision" "$log"
expect_contains "log names the address" "https: listening on 127.0.0.1:$port" "$log"
expect_contains "log says how to use it" "export KUBECONFIG=$KVOL_DIR/kubeconfig" "$log"
expect_eq "kubeconfig is private" "600" "$(stat -c %a "$KVOL_DIR/kubeconfig")"
expect_eq "token is private" "600" "$(stat -c %a "$KVOL_DIR/token")"
expect_eq "CA key is private" "600" "$(stat -c %a "$KVOL_DIR/pki/ca.key")"
expect_eq "data directory is private" "700" "$(stat -c %a "$KVOL_DIR")"

# --- authentication ------------------------------------------------------------------------
anon() { curl -sS --cacert "$KVOL_DIR/pki/ca.crt" "$@"; }
for p in healthz livez readyz; do
  expect_eq "/$p needs no token" "200" "$(anon -o /dev/null -w '%{http_code}' "$KVOL_URL/$p")"
done
expect_contains "/version needs no token" '"gitVersion"' "$(anon "$KVOL_URL/version")"
out=$(anon -w ' %{http_code}' "$KVOL_URL/api/v1/persistentvolumes")
expect_contains "no token: 401" " 401" "$out"
expect_contains "no token: a Status" '"reason":"Unauthorized"' "$out"

# --- namespaces ----------------------------------------------------------------------------
# The ConfigMaps the test makes: every namespace also has the root CA publisher's.
MINE="--field-selector metadata.name!=kube-root-ca.crt"
expect_eq "built-in namespaces" "default kube-node-lease kube-public kube-system" \
  "$(kubectl get ns -o name | sed 's|namespace/||' | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "a namespace that does not exist" 'error: failed to create configmap: namespaces "nope" not found' \
  "$(kubectl create configmap c -n nope --from-literal=a=1 2>&1)"
expect_eq "nothing half-written" "" "$(kubectl get cm -A $MINE -o name 2>&1)"
kubectl create configmap one -n default --from-literal=a=1 >/dev/null
kubectl create configmap two -n kube-system --from-literal=a=2 >/dev/null
expect_eq "cross-namespace list" "default/one kube-system/two" \
  "$(kubectl get cm -A $MINE -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {end}' | sed 's/ $//')"
expect_contains "cross-namespace table" "kube-system two 1" "$(k get cm -A)"

# --- kubectl's generator commands send protobuf -------------------------------------------
# Each object made by `kubectl create <kind>` (a protobuf body) must equal the one kubectl makes
# from the JSON form of the same command (`--dry-run=client -o json | kubectl create -f -`).
expect_contains "generators send protobuf" "Content-Type: application/vnd.kubernetes.protobuf" \
  "$(kubectl create configmap probe --from-literal=a=1 -v=8 2>&1)"
kubectl delete cm probe >/dev/null
printf 'bin\000\377ary' >"$WORK/binary"
printf 'line one\nline two\n' >"$WORK/text"
# Set by the server each time; and a ClusterRole's rules, null in JSON when absent, have no
# empty form in protobuf.
server_set='^  uid:\|^  resourceVersion:\|^  creationTimestamp:\|^rules: null'
same_as_json() {  # KIND NAME CREATE-ARGS...
  local kind=$1 name=$2 a b
  shift 2
  out=$(kubectl create "$@" 2>&1) || { fail "kubectl create $*: $out"; return; }
  a=$(kubectl get "$kind" "$name" -o yaml | grep -v "$server_set")
  kubectl delete "$kind" "$name" >/dev/null
  local args=() arg dashes=0
  for arg in "$@"; do
    if [ "$arg" = -- ] && [ "$dashes" = 0 ]; then args+=(--dry-run=client -o json); dashes=1; fi
    args+=("$arg")
  done
  [ "$dashes" = 1 ] || args+=(--dry-run=client -o json)
  kubectl create "${args[@]}" | kubectl create -f - >/dev/null
  b=$(kubectl get "$kind" "$name" -o yaml | grep -v "$server_set")
  expect_eq "create $kind from protobuf equals from JSON" "$b" "$a"
  [ -n "$a" ] || fail "create $kind: nothing stored"
}
same_as_json cm gen-cm configmap gen-cm --from-literal=color=blue --from-literal=empty= \
  --from-file=bin="$WORK/binary" --from-file=text="$WORK/text"
same_as_json secret gen-secret secret generic gen-secret --type=example.com/kind \
  --from-literal=password=s3cret --from-file=bin="$WORK/binary"
same_as_json secret gen-reg secret docker-registry gen-reg --docker-server=registry.example \
  --docker-username=u --docker-password=p --docker-email=u@example.com
same_as_json secret gen-tls secret tls gen-tls --cert="$KVOL_DIR/pki/ca.crt" --key="$KVOL_DIR/pki/ca.key"
same_as_json ns gen-ns namespace gen-ns
same_as_json sa gen-sa serviceaccount gen-sa
same_as_json svc gen-ip service clusterip gen-ip --tcp=80:8080,443:https
same_as_json svc gen-headless service clusterip gen-headless --clusterip=None --tcp=53:53
same_as_json svc gen-np service nodeport gen-np --tcp=80:80 --node-port=30080
same_as_json svc gen-lb service loadbalancer gen-lb --tcp=80:80
same_as_json svc gen-en service externalname gen-en --external-name=example.com
same_as_json deploy gen-deploy deployment gen-deploy --image=busybox --image=nginx --port=80 \
  --replicas=0
same_as_json deploy gen-cmd deployment gen-cmd --image=busybox -- sleep 3600
same_as_json job gen-job job gen-job --image=busybox -- echo hello
same_as_json role gen-role role gen-role --verb=get,list --resource=pods,configmaps \
  --resource-name=one
same_as_json rolebinding gen-rb rolebinding gen-rb --role=gen-role --user=alice --group=devs \
  --serviceaccount=default:gen-sa
same_as_json clusterrole gen-cr clusterrole gen-cr --verb=get --non-resource-url=/healthz
same_as_json clusterrole gen-agg clusterrole gen-agg --aggregation-rule=rbac.example.com/aggregate=true
same_as_json clusterrolebinding gen-crb clusterrolebinding gen-crb --clusterrole=gen-cr --user=bob
kubectl delete cm gen-cm >/dev/null

# --- malformed and oversized bodies --------------------------------------------------------
post() { kcurl -w ' %{http_code}' -X POST -H 'Content-Type: application/json' "$@"; }
out=$(post "$KVOL_URL/api/v1/namespaces/default/configmaps" -d '{"apiVersion":"v1","kind":')
expect_contains "malformed JSON: 400" " 400" "$out"
expect_contains "malformed JSON: BadRequest" '"reason":"BadRequest"' "$out"
out=$(post "$KVOL_URL/api/v1/namespaces/default/configmaps" -d '[1,2]')
expect_contains "not an object: 400" " 400" "$out"
out=$(kcurl -w ' %{http_code}' -X PATCH -H 'Content-Type: application/merge-patch+json' \
  "$KVOL_URL/api/v1/namespaces/default/configmaps/one" -d '{"data":')
expect_contains "malformed patch: 400" " 400" "$out"
head -c 4194304 /dev/zero | tr '\0' 'x' | sed 's/^/{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"/; s/$/"}}/' >"$WORK/big.json"
out=$(post "$KVOL_URL/api/v1/namespaces/default/configmaps" --data-binary "@$WORK/big.json")
expect_contains "oversized body: 413" " 413" "$out"
expect_contains "oversized body: RequestEntityTooLarge" '"reason":"RequestEntityTooLarge"' "$out"
# Media types of create bodies: JSON (also when none is given, as Kubernetes takes it), YAML and
# protobuf; anything else is 415 in Kubernetes' words and stores nothing.
typed() { kcurl -w ' %{http_code}' -X POST -H "Content-Type: $1" "$KVOL_URL/api/v1/namespaces/default/configmaps" -d "$2"; }
for type in text/plain application/xml application/x-www-form-urlencoded; do
  out=$(typed "$type" '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mt"}}')
  expect_contains "Content-Type $type: 415" " 415" "$out"
  expect_contains "Content-Type $type: Kubernetes' words" \
    'the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf' "$out"
done
expect_eq "nothing stored from refused media types" "" "$(kubectl get cm mt -o name 2>/dev/null)"
expect_contains "Content-Type with a charset" " 201" \
  "$(typed 'Application/JSON; charset=utf-8' '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mt-json"}}')"
expect_contains "a YAML body" " 201" \
  "$(typed application/yaml $'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mt-yaml}\ndata: {a: b}')"
expect_eq "the YAML body's data" "b" "$(kubectl get cm mt-yaml -o jsonpath='{.data.a}')"
kubectl delete cm mt-json mt-yaml >/dev/null

# kvol's write of several objects at once: bad bodies are refused whole, naming the field.
together() { kcurl -w ' %{http_code}' -X POST -H 'Content-Type: application/json' "$KVOL_URL/apis/kvol.io/v1/updatetogether" -d "$1"; }
out=$(together '{}')
expect_contains "updates missing: 400" " 400" "$out"
expect_contains "updates missing: the field" "updates: Required value" "$out"
out=$(together '{"updates":[{"main":true}]}')
expect_contains "an update without its object: the field" "updates[0].object: Required value" "$out"
out=$(together '{"updates":[{"object":{"apiVersion":"v9","kind":"Nope","metadata":{"name":"x"}}}]}')
expect_contains "an unknown kind: 400" " 400" "$out"
expect_contains "an unknown kind: the field" 'updates[0].object: no kind \"Nope\"' "$out"
out=$(together '{"updates":[{"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one","namespace":"default"}},"status":true}]}')
expect_contains "status of a kind without one: the field" "updates[0].status: Invalid value" "$out"
out=$(kcurl -w ' %{http_code}' -X POST -H 'Content-Type: text/plain' "$KVOL_URL/apis/kvol.io/v1/updatetogether" -d '{}')
expect_contains "updates as text: 415" " 415" "$out"
out=$(curl -sS -w ' %{http_code}' --cacert "$KVOL_DIR/pki/ca.crt" -X POST "$KVOL_URL/apis/kvol.io/v1/updatetogether" -d '{}')
expect_contains "updates without a token: 401" " 401" "$out"
# Two updates of one object at the version read, the second following the first: the first is
# made, the second conflicts in the same commit.
rv=$(kubectl get cm one -o jsonpath='{.metadata.resourceVersion}')
cm_at() { echo '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one","namespace":"default","resourceVersion":"'"$rv"'"},"data":{"together":"'"$1"'"}}'; }
out=$(together '{"updates":[{"object":'"$(cm_at yes)"'},{"object":'"$(cm_at again)"',"after":0}]}')
expect_contains "updates together: 200" " 200" "$out"
expect_contains "updates together: the first is made" '"together":"yes"' "$out"
expect_contains "updates together: the second conflicts" '"code":409' "$out"
expect_eq "updates together: what is stored" "yes" "$(kubectl get cm one -o jsonpath='{.data.together}')"

# A small JSON patch whose copies double a ConfigMap's data: refused before it grows, and the
# server's memory does not grow with it.
rss() { awk '/^VmRSS/ {print $2}' /proc/"$KVOL_PID"/status; }
amplify='[{"op":"add","path":"/data/a","value":"'$(head -c 800 /dev/zero | tr '\0' x)'"}'
for i in $(seq 1 20); do amplify+=',{"op":"copy","from":"/data","path":"/data/c'$i'"}'; done
amplify+=']'
before=$(rss)
for i in 1 2 3 4 5; do
  out=$(kcurl -w ' %{http_code}' -X PATCH -H 'Content-Type: application/json-patch+json' \
    "$KVOL_URL/api/v1/namespaces/default/configmaps/one" -d "$amplify")
done
expect_contains "copy amplification: 422" " 422" "$out"
expect_contains "copy amplification: the copy limit" "the accumulated size increase of copy is" "$out"
grown=$(( ($(rss) - before) / 1024 ))
[ "$grown" -lt 50 ] || fail "the server grew by $grown MiB on refused patches"
expect_eq "still serving after bad bodies" "ok" "$(anon "$KVOL_URL/readyz")"

# 1,000 watch clients from one process: the server holds them on a bounded number of threads
# (not one each), and once they go, their sockets are gone from the server within a second,
# not left in CLOSE_WAIT until the next event.
# From the current revision, so that a client has read everything when it goes (a socket
# closed with unread data is reset, not left half closed).
PORT=${KVOL_URL##*:}
rv=$(kcurl "$KVOL_URL/api/v1/configmaps" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
threads() { awk '/^Threads:/ {print $2}' /proc/"$KVOL_PID"/status; }
threads_before=$(threads)
watch_out=$(python3 - "$PORT" "$KVOL_DIR/pki/ca.crt" "$(kvol_token)" "$rv" "$KVOL_PID" <<'PY'
import resource, socket, ssl, sys, time
port, ca, token, rv, pid = sys.argv[1:6]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
ctx = ssl.create_default_context(cafile=ca)
ctx.check_hostname = False
req = ("GET /api/v1/configmaps?watch=true&resourceVersion=%s HTTP/1.1\r\nHost: kvol\r\n"
       "Authorization: Bearer %s\r\n\r\n" % (rv, token)).encode()
conns = []
for i in range(1000):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(port))))
    s.sendall(req)
    head = b""
    while b"\r\n\r\n" not in head:
        got = s.recv(4096)
        if not got:
            break
        head += got
    if not head.startswith(b"HTTP/1.1 200"):
        print("watch %d answered %r" % (i, head[:60]))
        sys.exit(1)
    conns.append(s)
time.sleep(1)
with open("/proc/%s/status" % pid) as f:
    threads = [l.split()[1] for l in f if l.startswith("Threads:")][0]
print("watching", len(conns), "threads", threads)
for s in conns:
    s.close()
PY
)
echo "$watch_out (threads before: $threads_before)"
expect_contains "1,000 watches open" "watching 1000" "$watch_out"
watch_threads=$(echo "$watch_out" | awk '/^watching/ {print $4}')
[ "${watch_threads:-100000}" -lt $((threads_before + 64)) ] ||
  fail "1,000 watches took threads: $threads_before before, $watch_threads with them"
sleep 1
expect_eq "closed watch connections are gone from the server within a second" 0 \
  "$(ss -Htn state close-wait "( sport = :$PORT )" | grep -c .)"
expect_eq "no bad object stored" "default/one kube-system/two" \
  "$(kubectl get cm -A $MINE -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name} {end}' | sed 's/ $//')"

# --- deletecollection and propagationPolicy ------------------------------------------------
for i in 1 2 3; do kubectl create configmap "batch-$i" --from-literal=a=$i >/dev/null; done
kubectl label cm batch-1 batch-2 batch-3 batch=yes >/dev/null
out=$(kcurl -X DELETE "$KVOL_URL/api/v1/namespaces/default/configmaps?labelSelector=batch%3Dyes")
expect_contains "deletecollection answers with a list" '"kind":"ConfigMapList"' "$out"
expect_eq "deletecollection deletes what the selector matches" "3" \
  "$(grep -o '"name":"batch-[0-9]"' <<<"$out" | wc -l)"
expect_eq "and nothing else" "configmap/one" "$(kubectl get cm $MINE -o name)"
kubectl create configmap fg --from-literal=a=1 >/dev/null
kubectl create configmap orphan --from-literal=a=1 >/dev/null
expect_eq "foreground deletion" 'configmap "fg" deleted' "$(kubectl delete cm fg --cascade=foreground 2>&1)"
expect_eq "orphan deletion" 'configmap "orphan" deleted' "$(kubectl delete cm orphan --cascade=orphan 2>&1)"
out=$(kcurl -w ' %{http_code}' -X DELETE "$KVOL_URL/api/v1/namespaces/default/configmaps/one?propagationPolicy=Sideways")
expect_contains "unknown propagationPolicy: 422" " 422" "$out"
expect_contains "unknown propagationPolicy names the field" \
  'propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\"' "$out"
expect_eq "and deletes nothing" "configmap/one" "$(kubectl get cm $MINE -o name)"

# --- generation moves with the spec only ---------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: gen}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/gen}
YAML
gen() { kubectl get pv gen -o jsonpath='{.metadata.generation}'; }
expect_eq "new object: generation 1" "1" "$(gen)"
kubectl label pv gen a=b >/dev/null
expect_eq "a label leaves it" "1" "$(gen)"
kubectl patch pv gen --subresource=status --type=merge -p '{"status":{"phase":"Available"}}' >/dev/null
expect_eq "status leaves it" "1" "$(gen)"
kubectl patch pv gen --type=merge -p '{"spec":{"capacity":{"storage":"2Gi"}}}' >/dev/null
expect_eq "a spec change bumps it" "2" "$(gen)"

# --- the default StorageClass --------------------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: example.com/standard
YAML
expect_contains "the default class is marked" "standard (default) example.com/standard Delete Immediate" \
  "$(k get sc)"
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: classless}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
expect_eq "a claim without a class gets the default" "standard" \
  "$(kubectl get pvc classless -o jsonpath='{.spec.storageClassName}')"

# --- discovery -----------------------------------------------------------------------------
for short in pv pvc sc cm no po ev ns csinode csidrivers volumeattachments leases secrets; do
  out=$(kubectl get "$short" -A 2>&1)
  if grep -q "error\|doesn't have a resource type" <<<"$out"; then fail "kubectl get $short: $out"; fi
done
expect_contains "short names in discovery" '"shortNames":["pvc"]' "$(kcurl "$KVOL_URL/api/v1")"
expect_eq "api-resources of storage.k8s.io" "csidrivers csinodes csistoragecapacities storageclasses volumeattachments" \
  "$(kubectl api-resources --api-group=storage.k8s.io -o name | sed 's/\..*//' | sort | tr '\n' ' ' | sed 's/ $//')"

v2=$(kcurl -H 'Accept: application/json' "$KVOL_URL/openapi/v2")
expect_contains "/openapi/v2 is Swagger 2.0" '"swagger":"2.0"' "$v2"
expect_contains "/openapi/v2 has the paths" '"/api/v1/persistentvolumes/{name}":' "$v2"
expect_contains "/openapi/v2 defines the kinds" \
  '"io.k8s.api.core.v1.PersistentVolume":{"properties":{"apiVersion":{"type":"string"}' "$v2"
expect_contains "/openapi/v2 refers to its definitions" \
  '"$ref":"#/definitions/io.k8s.api.core.v1.PersistentVolumeSpec"' "$v2"
expect_eq "/openapi/v2 has no v3 references" "0" "$(grep -c 'components/schemas' <<<"$v2")"
# In protobuf, as kubectl asks for it: the swagger version and info, no definitions (field 9).
pb=$(kcurl -w ' %{http_code} %{content_type}' -H 'Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf' \
  "$KVOL_URL/openapi/v2" | od -An -c | tr -s ' \n' ' ')
expect_contains "/openapi/v2 in protobuf: swagger 2.0 first (field 1, 3 bytes)" "\n 003 2 . 0 022" "$pb"
expect_contains "/openapi/v2 in protobuf: answered with its type" \
  "a p p l i c a t i o n / c o m . g i t h u b . p r o t o - o p e n a p i . s p e c . v 2 . v 1 . 0 + p r o t o b u f" "$pb"
expect_contains "/openapi/v2 in other types: 406" " 406" \
  "$(kcurl -w ' %{http_code}' -H 'Accept: application/xml' "$KVOL_URL/openapi/v2")"

# --- refusals ------------------------------------------------------------------------------
# refuse NAME WANT_MESSAGE ARGS...: the server exits non-zero at once, saying why.
refuse() {
  local name=$1 want=$2 rc
  shift 2
  timeout 20 "$KVOL_BIN" server "$@" >"$WORK/refused.log" 2>&1
  rc=$?
  if [ "$rc" = 0 ] || [ "$rc" = 124 ]; then fail "$name: exit status $rc"; fi
  expect_contains "$name" "$want" "$(cat "$WORK/refused.log")"
}
refuse "port taken" "cannot listen on 127.0.0.1:$port" --data-dir "$WORK/other" --listen "127.0.0.1:$port"
refuse "data dir in use" "data directory $KVOL_DIR is in use by another kvol server (pid $KVOL_PID)" \
  --data-dir "$KVOL_DIR" --listen 127.0.0.1:0
touch "$WORK/a-file"
refuse "data dir is a file" "cannot create data directory $WORK/a-file: Not a directory" --data-dir "$WORK/a-file" --listen 127.0.0.1:0
refuse "data dir under a file" "cannot create data directory $WORK/a-file/sub" \
  --data-dir "$WORK/a-file/sub" --listen 127.0.0.1:0
mkdir -p "$WORK/garbage"
head -c 8192 /dev/urandom >"$WORK/garbage/kvol.db"
refuse "store file is not a database" "$WORK/garbage/kvol.db" --data-dir "$WORK/garbage" --listen 127.0.0.1:0
refuse "bad listen address" '--listen must be ADDRESS:PORT, got "nonsense"' \
  --data-dir "$WORK/other" --listen nonsense
expect_eq "refusals left the server alone" "ok" "$(anon "$KVOL_URL/readyz")"

# --- clean stop, and nothing lost ----------------------------------------------------------
stop_with() {
  local sig=$1 i
  kill "-$sig" "$KVOL_PID"
  for i in $(seq 1 100); do kill -0 "$KVOL_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$KVOL_PID" 2>/dev/null; then fail "$sig did not stop the server in 10 s"; return; fi
  wait "$KVOL_PID"
  expect_eq "$sig: exit status" "0" "$?"
  expect_contains "$sig: logged" "received $sig, shutting down" "$(cat "$KVOL_LOG")"
  expect_contains "$sig: stopped" "stopped" "$(tail -1 "$KVOL_LOG")"
}
wait "$PARTIAL_PID"
out=$(cat "$WORK/partial.out")
expect_contains "300 connections with a partial header were held" "open 300" "$out"
expect_contains "and all closed by the header timeout" "closed 300 after" "$out"
after=$(sed -n 's/.*closed 300 after \([0-9]*\) s/\1/p' <<<"$out")
# Counted from when the last was opened; the first were opened up to a few seconds before.
[ -n "$after" ] && [ "$after" -ge 25 ] && [ "$after" -le 45 ] ||
  fail "partial headers closed after ${after:-?} s, not at the 32 s header timeout"

# A watch open across the stop must not hold it up.
kubectl get pv -w >/dev/null 2>&1 &
track $!
sleep 0.5
stop_with SIGTERM
kvol_start server
expect_eq "objects survive a restart" "configmap/one" "$(kubectl get cm $MINE -o name)"
expect_eq "generation survives" "2" "$(gen)"
expect_eq "the same CA" "ok" "$(anon "$KVOL_URL/readyz")"
stop_with SIGINT

finish
