#!/usr/bin/env bash
# Two kvol servers on one etcd: one leads the controllers (Lease kube-system/
# kvol-controller-manager). After `kill -9` of the leader, the standby takes the Lease within
# its duration plus one retry period (15 s + 2 s, as Kubernetes' defaults) and its controllers
# run at once: a claim created right after the kill is bound soon after the takeover.
# Usage: failover_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

etcd_start
kvol_start a --store "$ETCD_URL" --no-agent
A_PID=$KVOL_PID A_CONFIG=$KUBECONFIG
kvol_start b --store "$ETCD_URL" --no-agent
B_PID=$KVOL_PID B_CONFIG=$KUBECONFIG

holder() { kubectl -n kube-system get lease kvol-controller-manager -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
has_holder() { [ -n "$(holder)" ]; }
until_true 30 has_holder || fail "a server leads: $(kubectl -n kube-system get lease 2>&1)"
leader=$(holder)
case $leader in
  *_"$A_PID") dead=$A_PID standby_config=$B_CONFIG standby_pid=$B_PID ;;
  *_"$B_PID") dead=$B_PID standby_config=$A_CONFIG standby_pid=$A_PID ;;
  *) fail "the holder $leader is one of the two servers"; finish ;;
esac
export KUBECONFIG=$standby_config

# The leader binds while it leads.
pair() {
  cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-$1}
spec:
  storageClassName: ""
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/pv-$1}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pvc-$1}
spec:
  storageClassName: ""
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
}
bound() { [ "$(kubectl get pvc "pvc-$1" -o jsonpath='{.status.phase}')" = Bound ]; }
pair before
until_true 20 bound before || fail "the leader binds"

kill -9 "$dead"
wait "$dead" 2>/dev/null
killed_at=$(date +%s%N)
pair after
until_true 40 bound after || fail "the standby binds after the leader died"
took_ms=$(( ($(date +%s%N) - killed_at) / 1000000 ))
echo "the claim made after the kill was bound $took_ms ms after it"
# The standby sees the leader's last renewal up to one retry period (2 s) after it was made,
# takes the Lease at its first try 15 s after that (up to 2 s more), and its controllers start
# and bind within a second or two: at most about 21 s, Kubernetes' 17 s on average.
[ "$took_ms" -le 21000 ] || fail "failover took $took_ms ms, more than the lease and two retries"
new_leader=$(holder)
expect_contains "the standby holds the Lease" "_$standby_pid" "$new_leader"

finish
