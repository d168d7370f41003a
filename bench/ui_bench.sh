#!/usr/bin/env bash
# ui_bench.sh KVOL_BINARY [N...]: the live view (/ui/) with N claims (10000 by default; several
# N run one after the other), in headless Chromium through kubectl proxy, as a user opens it.
# The claims are Pending on a class whose provisioner is absent, each with its
# ExternalProvisioning event. For each N it prints:
#   - first load: from the page's navigation to every list in and the first rows drawn
#     (window.kvolUi.loadedMs), and the page's JavaScript heap then;
#   - the server's CPU per second while 100 claims change per second (a label patched), with
#     the page open and, for comparison, with no page open; and Chromium's, with the page open.
# Run as root, with tests/tools/cdp built (build/tests/cdp).
KVOL_BIN=$(realpath "$1")
shift
SIZES=("${@:-10000}")
TESTS=$(realpath "$(dirname "$0")/../tests")
CDP=$(realpath "$(dirname "$KVOL_BIN")/tests/cdp")
source "$TESTS/integration/lib.sh"

claims_yaml() {  # FROM TO
  local i
  for i in $(seq "$1" "$2"); do
    printf -- '---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c%06d}\nspec:\n  storageClassName: absent\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Mi}}\n' "$i"
  done
}

# change SECONDS: patches a label of 100 claims each second, over one connection per second.
change() {
  local s i urls patches=()
  for s in $(seq 1 "$1"); do
    urls=()
    for i in $(seq 0 99); do
      urls+=("$KVOL_URL/api/v1/namespaces/default/persistentvolumeclaims/$(printf c%06d $(((s * 100 + i) % N + 1)))")
    done
    kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' \
      -d "{\"metadata\":{\"labels\":{\"tick\":\"$s\"}}}" "${urls[@]}" >/dev/null &
    patches+=($!)
    sleep 1
  done
  wait "${patches[@]}"
}

# cpu_while_changing PATTERN SECONDS: CPU seconds per second of PATTERN's processes meanwhile.
cpu_while_changing() {
  local hz t0 t1 w0 w1
  hz=$(getconf CLK_TCK)
  t0=$(cpu_ticks "$1")
  w0=$(date +%s.%N)
  change "$2"
  t1=$(cpu_ticks "$1")
  w1=$(date +%s.%N)
  echo "scale=3; ($t1 - $t0) / $hz / ($w1 - $w0)" | bc
}

for n in "${SIZES[@]}"; do
  N=$n
  kvol_start "ui$n"
  server="^$KVOL_BIN server --data-dir $KVOL_DIR "
  kubectl create -f - >/dev/null <<'YAML'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: absent}
provisioner: example.com/absent
YAML
  per=$(((n + 3) / 4))
  creators=()
  for part in 0 1 2 3; do
    from=$((part * per + 1)) to=$(((part + 1) * per))
    [ "$to" -gt "$n" ] && to=$n
    [ "$from" -le "$to" ] || continue
    claims_yaml "$from" "$to" | kubectl create -f - >/dev/null &
    creators+=($!)
  done
  wait "${creators[@]}"
  all_waiting() {
    [ "$(kubectl get events --field-selector reason=ExternalProvisioning --no-headers 2>/dev/null | wc -l)" -ge "$n" ]
  }
  until_true 600 all_waiting || echo "not every claim has its event yet"

  base=$(cpu_while_changing "$server" 20)

  proxy_start || exit 1
  browser_start "$WORK/chromium$n" about:blank || exit 1
  dt=$DEVTOOLS
  "$CDP" "$dt" navigate "$PROXY_URL/ui/" >/dev/null
  ready() { [ "$("$CDP" "$dt" eval 'String(!!(window.kvolUi && window.kvolUi.ready))')" = true ]; }
  until_true 300 ready || { echo "the page did not load"; exit 1; }
  load=$("$CDP" "$dt" eval 'String(Math.round(window.kvolUi.loadedMs))')
  heap=$("$CDP" "$dt" eval 'String(Math.round(performance.memory.usedJSHeapSize / 1048576))')
  shown=$("$CDP" "$dt" eval 'String(window.kvolUi.claims())')
  hz=$(getconf CLK_TCK)
  b0=$(cpu_ticks "user-data-dir=$WORK/chromium$n")
  w0=$(date +%s.%N)
  open=$(cpu_while_changing "$server" 20)
  b1=$(cpu_ticks "user-data-dir=$WORK/chromium$n")
  w1=$(date +%s.%N)
  browser=$(echo "scale=3; ($b1 - $b0) / $hz / ($w1 - $w0)" | bc)
  echo "$n claims: first load ${load} ms (${shown} claims, JS heap ${heap} MiB); 100 claims/s changing: server ${base} CPU s/s without the page, ${open} with it open; Chromium ${browser} CPU s/s"
  pkill -KILL -f -- "--user-data-dir=$WORK/chromium$n"
  { kill -9 "$KVOL_PID" "$PROXY_PID"; wait "$BROWSER_PID" "$KVOL_PID" "$PROXY_PID"; } 2>/dev/null
done
