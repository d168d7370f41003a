#!/bin/bash
# The bundled CSI driver, loop.csi.kvol.io, against the public CSI sanity suite: csi-sanity from
# kubernetes-csi/csi-test. It runs only where that binary is found: $CSI_SANITY, csi-sanity on
# PATH, or ../shared/tools/csi-sanity beside this checkout. Elsewhere the test says that it did
# not run and why, and ctest reports it skipped.
KVOL_BIN=$1
TESTS=$2
source "$TESTS/integration/lib.sh"

SANITY=${CSI_SANITY:-}
if [ -z "$SANITY" ]; then
  for candidate in "$(command -v csi-sanity 2>/dev/null)" "$TESTS/../../shared/tools/csi-sanity"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then SANITY=$candidate; break; fi
  done
fi
if [ -z "$SANITY" ]; then
  echo "csi-sanity NOT RUN: no csi-sanity binary (set CSI_SANITY, put it on PATH, or place it"
  echo "in ../shared/tools beside the checkout); the driver's own gRPC tests still ran (csi_test)."
  exit 77
fi
echo "csi-sanity: $SANITY"

# sanity_run NAME MAX_VOLUMES ARGS...: a driver of its own, the suite against it, and nothing
# left mounted or attached afterwards.
sanity_run() {
  local name=$1 max=$2
  shift 2
  local dir="$WORK/$name"
  mkdir -p "$dir"
  "$KVOL_BIN" csi-driver --endpoint "unix://$dir/csi.sock" --node-id sanity-node \
    --data-dir "$dir/data" --max-volumes-per-node "$max" >"$dir/driver.log" 2>&1 &
  local pid=$!
  track "$pid"
  until_true 10 test -S "$dir/csi.sock" || fail "$name: the driver did not serve"
  "$SANITY" --csi.endpoint "$dir/csi.sock" --csi.stagingdir "$dir/staging" \
    --csi.mountdir "$dir/mount" --ginkgo.no-color "$@" >"$dir/sanity.log" 2>&1
  local rc=$?
  local summary
  summary=$(grep -E '^(SUCCESS|FAIL)!' "$dir/sanity.log" | tail -1)
  echo "$name: $summary"
  if [ $rc -ne 0 ] || ! grep -q '| 0 Failed |' <<<"$summary"; then
    fail "$name: csi-sanity failed (exit $rc)"
    grep -E '^\s+\[FAIL\]' "$dir/sanity.log"
    # What each failure said: ginkgo's report of it, and the driver's log.
    grep -B4 -A24 '\[FAILED\]' "$dir/sanity.log" | head -120
    tail -40 "$dir/driver.log"
  fi
  kill "$pid"
  wait "$pid" 2>/dev/null
  local left
  left=$(awk -v d="$dir/" 'index($5, d) == 1' /proc/self/mountinfo | wc -l)
  expect_eq "$name: mounts left" 0 "$left"
  left=$(losetup -l -n -O BACK-FILE | grep -c "^$dir/")
  expect_eq "$name: loop devices left" 0 "$left"
}

# Default volumes (10 GiB, sparse: xfs when no filesystem is asked for), and the node's volume
# limit: one more than it allows is refused with RESOURCE_EXHAUSTED.
sanity_run default 8 --csi.testnodevolumeattachlimit
# Volumes of 64 MiB (ext4, below the smallest xfs) grown to 96 MiB; only where ext4 can grow
# while mounted, which takes CAP_SYS_RESOURCE (a container may lack it).
if (( (0x$(awk '/^CapEff/ {print $2}' /proc/self/status) >> 24) & 1 )); then
  sanity_run small 128 --csi.testvolumesize 67108864 --csi.testvolumeexpandsize 100663296
else
  echo "small (ext4): its online-growth test is left out: it needs CAP_SYS_RESOURCE, which this"
  echo "process lacks (csi_test checks that the driver's error names it)"
  sanity_run small 128 --csi.testvolumesize 67108864 --csi.testvolumeexpandsize 100663296 \
    --ginkgo.skip 'node-expand is called after node-publish'
fi
finish
