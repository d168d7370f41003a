#!/usr/bin/env bash
# CSI on one node, with a real kvol server and kubectl: the bundled driver, loop.csi.kvol.io,
# registered for the server's node (CSINode, the Node's csi.volume.kubernetes.io/nodeid
# annotation and topology label); a driver run on its own (`kvol csi-driver`) registered with
# --csi-driver; and a driver that goes away deregistered when its socket goes.
# Usage: csi_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

# ---- the bundled driver ---------------------------------------------------------------------
kvol_start server
NODE=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
csinode_has() {
  [ "$(kubectl get csinode "$NODE" -o jsonpath="{.spec.drivers[?(@.name==\"$1\")].nodeID}")" = "$2" ]
}
until_true 20 csinode_has loop.csi.kvol.io "$NODE" || fail "the bundled driver is not in CSINode"
expect_eq "allocatable count" 128 \
  "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[0].allocatable.count}')"
expect_eq "topology keys" topology.csi.kvol.io/node \
  "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[0].topologyKeys[0]}')"
expect_eq "CSINode owner" "Node/$NODE" \
  "$(kubectl get csinode "$NODE" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')"
expect_eq "node id annotation" "{\"loop.csi.kvol.io\":\"$NODE\"}" \
  "$(kubectl get node "$NODE" -o jsonpath='{.metadata.annotations.csi\.volume\.kubernetes\.io/nodeid}')"
expect_eq "topology label" "$NODE" \
  "$(kubectl get node "$NODE" -o jsonpath='{.metadata.labels.topology\.csi\.kvol\.io/node}')"
kill "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null

# ---- a driver of its own, registered with --csi-driver ---------------------------------------
DRIVER_DIR=$WORK/driver
mkdir -p "$DRIVER_DIR"
"$KVOL_BIN" csi-driver --endpoint "unix://$DRIVER_DIR/csi.sock" --node-id own-node-id \
  --data-dir "$DRIVER_DIR/data" --max-volumes-per-node 9 >"$WORK/driver.log" 2>&1 &
DRIVER_PID=$!
track "$DRIVER_PID"
until_true 10 test -S "$DRIVER_DIR/csi.sock" || fail "the driver did not serve"
kvol_start second --no-bundled-csi-driver --csi-driver "unix://$DRIVER_DIR/csi.sock"
NODE=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
until_true 20 csinode_has loop.csi.kvol.io own-node-id || fail "--csi-driver was not registered"
expect_eq "its volume limit" 9 \
  "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[0].allocatable.count}')"
expect_eq "one driver" 1 "$(kubectl get csinode "$NODE" -o jsonpath='{.spec.drivers[*].name}' | wc -w)"
grep -q "registered at unix://$DRIVER_DIR/csi.sock (--csi-driver)" "$KVOL_LOG" ||
  fail "the server did not log the registration"

finish
