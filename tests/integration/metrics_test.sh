#!/usr/bin/env bash
# /metrics, driven with the real kubectl: the exposition passes a strict Prometheus text reader
# (metrics_lint), carries kube-apiserver's request, storage and store metrics with Kubernetes'
# names and labels, the process's own, kubelet's volume stats of a claim that grow as its pod
# writes 10 MiB, the controllers' and the node's volume operations and work queues; a wrong or
# missing token gets 401.
# Usage: metrics_test.sh KVOL_BINARY TESTS_DIR METRICS_LINT
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
LINT=$(realpath "$3")
source "$TESTS/integration/lib.sh"

kvol_start srv --volume-stats-agg-period 1s
metric() { # NAME LABELS: the sample's value, or the reader's complaint
  kubectl get --raw /metrics | "$LINT" "$@" 2>&1
}

cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
YAML
kubectl get pvc >/dev/null
kubectl get pvc data >/dev/null
kubectl get pvc nosuch >/dev/null 2>&1

kubectl get --raw /metrics >"$WORK/metrics" || fail "kubectl get --raw /metrics failed"
"$LINT" <"$WORK/metrics" 2>"$WORK/lint.err" ||
  fail "the exposition does not pass the strict reader: $(cat "$WORK/lint.err")"
expect_eq "apiserver_request_total: the claim's create" 1 \
  "$(metric apiserver_request_total verb=POST,resource=persistentvolumeclaims,scope=namespace,code=201,component=apiserver,group=,version=v1)"
expect_eq "apiserver_request_total: a LIST" 1 \
  "$(metric apiserver_request_total verb=LIST,resource=persistentvolumeclaims,scope=namespace,code=200)"
expect_eq "apiserver_request_total: a GET of what is not there" 1 \
  "$(metric apiserver_request_total verb=GET,resource=persistentvolumeclaims,scope=resource,code=404)"
expect_eq "apiserver_request_duration_seconds counts the GETs" 2 \
  "$(metric apiserver_request_duration_seconds_count verb=GET,resource=persistentvolumeclaims,scope=resource)"
expect_eq "apiserver_storage_objects: the claim" 1 \
  "$(metric apiserver_storage_objects resource=persistentvolumeclaims)"
expect_eq "apiserver_storage_objects: a group's resource" 2 \
  "$(metric apiserver_storage_objects resource=storageclasses.storage.k8s.io)"
expect_eq "etcd_request_duration_seconds: the claim's create, in the embedded store" 1 \
  "$(metric etcd_request_duration_seconds_count operation=create,type=persistentvolumeclaims)"
rss=$(metric process_resident_memory_bytes)
[[ $rss =~ ^[0-9.e+]+$ ]] && [ "${rss%.*}" != 0 ] || fail "process_resident_memory_bytes: $rss"
grep -q '^# TYPE apiserver_request_duration_seconds histogram$' "$WORK/metrics" ||
  fail "apiserver_request_duration_seconds is not a histogram"

# ---- kubelet's volume stats: a local-path claim (a directory: measured as du does) ----------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "touch /data/ready; sleep 999999"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
YAML
used() { metric kubelet_volume_stats_used_bytes namespace=default,persistentvolumeclaim=data; }
used_is_number() { [[ $(used) =~ ^[0-9.e+]+$ ]]; }
until_true 60 used_is_number || fail "no kubelet_volume_stats_used_bytes for the claim: $(used)"
before=$(printf '%.0f' "$(used)")
kubectl exec writer -- sh -c 'head -c 10485760 /dev/urandom >/data/10m' || fail "writing 10 MiB"
grown() { [ "$(printf '%.0f' "$(used)")" -ge $((before + 10485760)) ]; }
until_true 30 grown || fail "kubelet_volume_stats_used_bytes did not grow by 10 MiB: $before, then $(used)"
for m in capacity_bytes available_bytes inodes inodes_free inodes_used; do
  v=$(metric kubelet_volume_stats_$m namespace=default,persistentvolumeclaim=data)
  [[ $v =~ ^[0-9.e+]+$ ]] || fail "kubelet_volume_stats_$m: $v"
done
"$LINT" storage_operation_duration_seconds_count \
  operation_name=volume_mount,status=success,migrated=false,volume_plugin=kubernetes.io/host-path \
  <<<"$(kubectl get --raw /metrics)" >/dev/null ||
  fail "storage_operation_duration_seconds has no volume_mount of the local-path claim: $(kubectl get --raw /metrics | grep storage_operation_duration_seconds_count)"
expect_eq "storage_operation_duration_seconds: the claim's provisioning" 1 \
  "$(metric storage_operation_duration_seconds_count operation_name=volume_provision,status=success,volume_plugin=kvol.io/local-path)"
claims_added=$(metric workqueue_adds_total name=claims)
[[ $claims_added =~ ^[0-9.e+]+$ ]] && [ "${claims_added%.*}" -ge 1 ] ||
  fail "workqueue_adds_total of the PV controller's claims queue: $claims_added"
for m in workqueue_queue_duration_seconds_count workqueue_work_duration_seconds_count; do
  v=$(metric $m name=claims)
  [[ $v =~ ^[0-9.e+]+$ ]] && [ "${v%.*}" -ge 1 ] || fail "$m of the claims queue: $v"
done
[[ $(metric workqueue_depth name=volumes) =~ ^[0-9.e+]+$ ]] || fail "no workqueue_depth for volumes"

# A volume that cannot be mounted: an error, counted as Kubernetes counts it.
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: nodir}
spec:
  containers:
  - {name: c, image: busybox, command: [sleep, "999999"], volumeMounts: [{name: h, mountPath: /h}]}
  volumes: [{name: h, hostPath: {path: /nonexistent-kvol-metrics-test, type: Directory}}]
YAML
mount_failed() {
  [[ $(metric volume_operation_total_errors operation_name=volume_mount,plugin_name=kubernetes.io/host-path) =~ ^[1-9] ]]
}
until_true 30 mount_failed ||
  fail "volume_operation_total_errors has no failed volume_mount: $(kubectl get --raw /metrics | grep volume_operation_total_errors)"
expect_eq "the failed mount's duration, with status fail-unknown" 0 \
  "$("$LINT" storage_operation_duration_seconds_count operation_name=volume_mount,status=fail-unknown,volume_plugin=kubernetes.io/host-path <<<"$(kubectl get --raw /metrics)" >/dev/null; echo $?)"
kubectl delete pod nodir --wait=false >/dev/null

expect_eq "pv_collector_bound_pvc_count: the claim, bound" 1 \
  "$(metric pv_collector_bound_pvc_count namespace=default,storage_class=local-path)"
expect_eq "pv_collector_bound_pv_count: its volume" 1 \
  "$(metric pv_collector_bound_pv_count storage_class=local-path)"
expect_eq "pv_collector_total_pv_count: by plugin" 1 \
  "$(metric pv_collector_total_pv_count plugin_name=kubernetes.io/host-path,volume_mode=Filesystem)"
for state in desired_state_of_world actual_state_of_world; do
  expect_eq "volume_manager_total_volumes: the writer's claim in the $state" 1 \
    "$(metric volume_manager_total_volumes plugin_name=kubernetes.io/host-path,state=$state)"
done
node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
kubectl get --raw "/api/v1/nodes/$node/proxy/metrics" >"$WORK/node-metrics" ||
  fail "kubectl get --raw /api/v1/nodes/$node/proxy/metrics failed"
"$LINT" kubelet_volume_stats_used_bytes persistentvolumeclaim=data <"$WORK/node-metrics" >/dev/null ||
  fail "the node's /metrics has no kubelet_volume_stats_used_bytes for the claim"
expect_contains "a node that does not exist" 'nodes "nosuch" not found' \
  "$(kubectl get --raw /api/v1/nodes/nosuch/proxy/metrics 2>&1)"
expect_eq "the capacity is the filesystem's" \
  "$(df -B1 --output=size "$KVOL_DIR" | tail -1 | tr -d ' ')" \
  "$(printf '%.0f' "$(metric kubelet_volume_stats_capacity_bytes persistentvolumeclaim=data)")"

code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KVOL_DIR/pki/ca.crt" \
  -H "Authorization: Bearer wrong" "$KVOL_URL/metrics")
expect_eq "a wrong token" 401 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$KVOL_DIR/pki/ca.crt" "$KVOL_URL/metrics")
expect_eq "no token" 401 "$code"

finish
