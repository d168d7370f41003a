#!/usr/bin/env bash
# Controllers act only on whole caches. 2,000 static volumes and 2,000 claims of an Immediate
# class are stored while no controller runs, then the server is started again with its
# controllers; three rounds, each on a data directory of its own. Every claim binds to a static
# volume (none is provisioned while a matching volume exists), and no event says that an object
# which exists was not found.
# Usage: restart_sync_test.sh KVOL_BINARY TESTS_DIR [PAIRS]
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
PAIRS=${3:-2000}
source "$TESTS/integration/lib.sh"

# Creates the objects of a JSON-lines file over 8 connections.
create_all() {
  python3 - "$KVOL_URL" "$KVOL_DIR/pki/ca.crt" "$(kvol_token)" "$1" <<'PY'
import http.client, json, ssl, sys, threading
url, ca, token, path = sys.argv[1:]
host, port = url.split('//')[1].split(':')
ctx = ssl.create_default_context(cafile=ca)
objs = [json.loads(l) for l in open(path)]
errors = []
def worker(part):
    conn = http.client.HTTPSConnection(host, int(port), context=ctx)
    for o in part:
        kind = o['kind']
        where = {'StorageClass': '/apis/storage.k8s.io/v1/storageclasses',
                 'PersistentVolume': '/api/v1/persistentvolumes',
                 'PersistentVolumeClaim': '/api/v1/namespaces/default/persistentvolumeclaims'}[kind]
        conn.request('POST', where, json.dumps(o),
                      {'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'})
        r = conn.getresponse()
        body = r.read()
        if r.status != 201:
            errors.append('%s %s: %d %s' % (kind, o['metadata']['name'], r.status, body[:200]))
threads = [threading.Thread(target=worker, args=(objs[i::8],)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
for e in errors[:5]: print(e)
sys.exit(1 if errors else 0)
PY
}

{
  echo '{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"c"},"provisioner":"kvol.io/local-path","volumeBindingMode":"Immediate"}'
  for i in $(seq 1 "$PAIRS"); do
    echo '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-'$i'"},"spec":{"storageClassName":"c","capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/pv-'$i'"}}}'
    echo '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"pvc-'$i'"},"spec":{"storageClassName":"c","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}'
  done
} >"$WORK/objects.jsonl"
# The class first, then the rest.
head -1 "$WORK/objects.jsonl" >"$WORK/class.jsonl"
tail -n +2 "$WORK/objects.jsonl" >"$WORK/pairs.jsonl"

bound() {
  [ "$(kubectl get pvc -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Bound$')" = "$PAIRS" ]
}

# Each round on a data directory of its own: the objects stored with no controller running,
# then the server started again with them.
for round in 1 2 3; do
  kvol_start "r$round" --no-controllers
  create_all "$WORK/class.jsonl" || fail "round $round: the class is created"
  create_all "$WORK/pairs.jsonl" || fail "round $round: $PAIRS pairs are created"
  kill -TERM "$KVOL_PID"
  wait "$KVOL_PID" 2>/dev/null
  kvol_start "r$round"
  until_true 120 bound ||
    fail "round $round: claims bound: $(kubectl get pvc --no-headers | awk '{print $2}' | sort | uniq -c)"
  expect_eq "round $round: no volume was provisioned" "" \
    "$(kubectl get pv -o name | grep -v '^persistentvolume/pv-[0-9]*$' | head -3)"
  events=$(kubectl get events -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}')
  expect_eq "round $round: no event says an existing object was not found" "" \
    "$(grep -i 'not found' <<<"$events" | sort | uniq -c | head -3)"
  expect_eq "round $round: no provisioning was tried" "" \
    "$(grep -E '^(Provisioning|ProvisioningFailed|ProvisioningSucceeded):' <<<"$events" | head -3)"
  kill -TERM "$KVOL_PID"
  wait "$KVOL_PID" 2>/dev/null
done

finish
