#!/usr/bin/env bash
# kill -9 of the server in the middle of a concurrent create load: after a restart every create
# that got a 201 is there, nothing is half-written, and a watch resumes from the last
# resourceVersion it saw without a gap or a duplicate.
# Usage: crash_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server
rv0=$(kcurl "$KVOL_URL/api/v1/persistentvolumes" | sed -n 's/.*"resourceVersion":"\([0-9]*\)".*/\1/p' | tail -1)

# A watcher that will be cut off by the crash.
kcurl -N "$KVOL_URL/api/v1/persistentvolumes?watch=1&resourceVersion=$rv0" >"$WORK/watch1" 2>/dev/null &
track $!

writer() {
  local w=$1 n=0 code
  while true; do
    code=$(kcurl -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
      "$KVOL_URL/api/v1/persistentvolumes" \
      -d '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"crash-'"$w-$n"'"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/crash"}}}' 2>/dev/null)
    [ "$code" = 201 ] && echo "crash-$w-$n" >>"$WORK/acked-$w"
    n=$((n + 1))
  done
}
for w in 1 2 3 4 5 6 7 8; do
  writer "$w" &
  track $!
done
# The kill lands while the writers go on, once they have had 100 creates acknowledged (each
# create is a curl process: on a slow machine that is only tens per second).
acked_so_far() { cat "$WORK"/acked-* 2>/dev/null | wc -l; }
for i in $(seq 1 600); do
  [ "$(acked_so_far)" -ge 100 ] && break
  sleep 0.1
done
kill -9 "$KVOL_PID"
sleep 0.5
for pid in "${PIDS[@]}"; do [ "$pid" != "$KVOL_PID" ] && kill -9 "$pid" 2>/dev/null; done
wait 2>/dev/null
cat "$WORK"/acked-* | sort >"$WORK/acked"
acked=$(wc -l <"$WORK/acked")
echo "acknowledged creates before the crash: $acked"
[ "$acked" -ge 100 ] || fail "too few creates before the crash ($acked): the load did not run"

kvol_start server
kubectl get pv -o name | sed 's|persistentvolume/||' | grep '^crash-' | sort >"$WORK/present"
missing=$(comm -23 "$WORK/acked" "$WORK/present" | wc -l)
expect_eq "every acknowledged create survived" "0" "$missing"
# Nothing half-written: every object decodes and carries its whole spec.
bad=$(kubectl get pv -o jsonpath='{range .items[*]}{.metadata.name} {.spec.capacity.storage} {.spec.hostPath.path} {.metadata.uid}{"\n"}{end}' |
  grep '^crash-' | awk 'NF != 4 || $2 != "1Gi" || $3 != "/tmp/crash"' | wc -l)
expect_eq "no object is half-written" "0" "$bad"

# The watch resumes from the last resourceVersion it saw.
last=$(grep -o '"resourceVersion":"[0-9]*"' "$WORK/watch1" | tail -1 | grep -o '[0-9]*')
[ -n "$last" ] || fail "the first watch saw nothing"
grep -o '"name":"crash-[0-9]*-[0-9]*"' "$WORK/watch1" | sed 's/.*"\(crash-[^"]*\)"/\1/' | sort -u >"$WORK/seen1"
kcurl -N "$KVOL_URL/api/v1/persistentvolumes?watch=1&resourceVersion=$last&timeoutSeconds=3" >"$WORK/watch2"
first=$(grep -o '"resourceVersion":"[0-9]*"' "$WORK/watch2" | head -1 | grep -o '[0-9]*')
if [ -n "$first" ] && [ "$first" -le "$last" ]; then fail "resumed watch repeated revision $first <= $last"; fi
grep -o '"name":"crash-[0-9]*-[0-9]*"' "$WORK/watch2" | sed 's/.*"\(crash-[^"]*\)"/\1/' | sort -u >"$WORK/seen2"
# An event is one resourceVersion (the PV controller's status writes are events of their own).
grep -o '"resourceVersion":"[0-9]*"' "$WORK/watch1" | sort -u >"$WORK/revs1"
grep -o '"resourceVersion":"[0-9]*"' "$WORK/watch2" | sort -u >"$WORK/revs2"
dups=$(comm -12 "$WORK/revs1" "$WORK/revs2" | wc -l)
expect_eq "no event seen twice" "0" "$dups"
gap=$(sort -u "$WORK/seen1" "$WORK/seen2" | comm -13 - "$WORK/present" | wc -l)
expect_eq "no object missed by the two watches" "0" "$gap"
grep -q '"type":"ERROR"' "$WORK/watch2" && fail "resumed watch got an error: $(cat "$WORK/watch2" | head -c 300)"

finish
