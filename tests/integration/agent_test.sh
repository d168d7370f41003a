#!/usr/bin/env bash
# The node agent inside a real kvol server, driven with the real kubectl, with real mounts: the
# machine registers as a Ready node with its Lease; the seed's configMap, downwardAPI, emptyDir
# and hostPath pods get their volumes on disk exactly as kubelet lays them out; secrets and
# memory-backed emptyDirs are real tmpfs mounts; a local PV is a real bind mount; changes to a
# ConfigMap or a pod's labels reach the files within 2 s; failures are FailedMount events in
# kubelet's words; deleting a pod unmounts and removes everything; `kvol agent` serves a second
# node over HTTPS, and kubectl logs and exec reach its pods through the server, also after it
# was killed with -9 and started again on the same port; a server killed with -9 comes back
# without remounting what is right and cleans up what no pod needs.
# Usage: agent_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"
SEEDS=$TESTS/seeds
NODE=kvol-it-node

kvol_start server --node-name "$NODE" --node-labels "disk=ssd,zone=z1"
ROOT=$KVOL_DIR/agent

# uid POD
uid() { kubectl get pod "$1" -o jsonpath='{.metadata.uid}'; }
# voldir POD PLUGIN VOLUME: where the agent puts a pod's volume.
voldir() { echo "$ROOT/pods/$(uid "$1")/volumes/$2/$3"; }
volumes_ready() {
  [ "$(kubectl get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="kvol.io/VolumesReady")].status}')" = True ]
}
# mount_of PATH: "TYPE SUPER_OPTIONS" of the mount at PATH, from this machine's mount table.
mount_of() { awk -v p="$1" '$5 == p { for (i = 7; $i != "-"; i++); print $(i+1), $(i+3) }' /proc/self/mountinfo; }
mount_id() { awk -v p="$1" '$5 == p { print $1 }' /proc/self/mountinfo; }

# local_volume PREFIX SIZE PATH [VOLUME_MODE] [FS_TYPE]: a local PV PREFIX-pv at PATH on this
# node and a claim PREFIX-claim that binds it, in a class of their own (manual-PREFIX).
local_volume() {
  local prefix=$1 size=$2 path=$3 mode=${4:-Filesystem} fstype=${5:-}
  cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $prefix-pv
spec:
  capacity:
    storage: $size
  accessModes: [ReadWriteOnce]
  volumeMode: $mode
  storageClassName: manual-$prefix
  local:
    path: $path
${fstype:+    fsType: $fstype}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - key: kubernetes.io/hostname
          operator: In
          values: [$NODE]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: $prefix-claim
spec:
  accessModes: [ReadWriteOnce]
  volumeMode: $mode
  storageClassName: manual-$prefix
  resources:
    requests:
      storage: $size
YAML
}

# ---- the node --------------------------------------------------------------------------------
until_true 5 kubectl get node "$NODE" || fail "node $NODE registered"
expect_eq "node is Ready" "True" "$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
expect_eq "Ready reason" "KubeletReady" "$(kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')"
labels=$(kubectl get node "$NODE" -o jsonpath='{.metadata.labels}')
for l in '"kubernetes.io/hostname":"kvol-it-node"' '"kubernetes.io/os":"linux"' '"kubernetes.io/arch":"' '"disk":"ssd"' '"zone":"z1"'; do
  expect_contains "node label" "$l" "$labels"
done
expect_contains "capacity" '"pods":"110"' "$(kubectl get node "$NODE" -o jsonpath='{.status.capacity}')"
expect_eq "node Lease held by the node" "$NODE" "$(kubectl get lease -n kube-node-lease "$NODE" -o jsonpath='{.spec.holderIdentity}')"
expect_contains "get nodes" "$NODE Ready" "$(k get nodes)"
expect_contains "get nodes -o wide shows the node's system" "kvol://$("$KVOL_BIN" --version)" "$(k get nodes -o wide)"
expect_eq "node's kernel" "$(uname -r)" "$(kubectl get node "$NODE" -o jsonpath='{.status.nodeInfo.kernelVersion}')"

# ---- configMap, as seed 002 shows it ----------------------------------------------------------
kubectl apply -f "$SEEDS/volume-configmap.yml" >/dev/null
until_true 5 volumes_ready configmap-pod || fail "configmap-pod volumes ready"
CM=$(voldir configmap-pod kubernetes.io~configmap config-vol)
listing=$(ls -l "$CM" | awk 'NR == 1 { print; next } { print $1, $9, $10, $11 }')
expect_eq "ls -l /etc/config as the seed shows" "total 0
lrwxrwxrwx log_level -> ..data/log_level
lrwxrwxrwx ui.properties -> ..data/ui.properties" "$listing"
expect_eq "log_level" "INFO" "$(cat "$CM/log_level")"
expect_eq "configMap files are 0644" "644" "$(stat -L -c %a "$CM/log_level")"
readlink "$CM/..data" | grep -qE '^\.\.[0-9]{4}(_[0-9]{2}){5}\.' || fail "..data names a timestamped directory: $(readlink "$CM/..data")"
expect_eq "ui.properties" "color.good=purple
color.bad=yellow
allow.textmode=true
how.nice.to.look=fairlyNice" "$(cat "$CM/ui.properties")"
expect_contains "the pod runs once its volumes are ready" "configmap-pod 1/1 Running" \
  "$(get_until "1/1 Running" pod configmap-pod)"
expect_eq "hostIP" "$(kubectl get node "$NODE" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')" \
  "$(kubectl get pod configmap-pod -o jsonpath='{.status.hostIP}')"
kubectl patch configmap log-config -p '{"data":{"log_level":"DEBUG"}}' >/dev/null
until_true 2 grep -qx DEBUG "$CM/log_level" || fail "configmap update reaches the file within 2 s: $(cat "$CM/log_level")"

# ---- downwardAPI, as seed 002 shows it --------------------------------------------------------
kubectl apply -f "$SEEDS/volume-downwardApi.yml" >/dev/null
until_true 5 volumes_ready dwapi-pod || fail "dwapi-pod volumes ready"
DW=$(voldir dwapi-pod kubernetes.io~downward-api podinfo)
expect_eq "labels file" 'app="dnsutils"
version="1.1"' "$(cat "$DW/labels")"
annotations=$(cat "$DW/annotations")
expect_contains "annotations file" 'prometheus.io/port="80"
prometheus.io/scheme="http"
prometheus.io/scrape="true"' "$annotations"
expect_contains "last-applied annotation quoted as Go does" 'kubectl.kubernetes.io/last-applied-configuration="{\"apiVersion\":\"v1\"' "$annotations"
kubectl label pod dwapi-pod tier=front >/dev/null
until_true 2 grep -q 'tier="front"' "$DW/labels" || fail "label change reaches the file within 2 s"

# ---- emptyDir (seed) and memory-backed emptyDir and secret on tmpfs --------------------------
kubectl apply -f "$SEEDS/volume-emptyDir.yml" >/dev/null
until_true 5 volumes_ready emptydir-pod || fail "emptydir-pod volumes ready"
ED=$(voldir emptydir-pod kubernetes.io~empty-dir cache-volume)
[ -d "$ED" ] || fail "emptyDir directory $ED"
expect_eq "emptyDir mode" "777" "$(stat -c %a "$ED")"
kubectl create secret generic creds --from-literal=password=s3cr3t >/dev/null
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: tmpfs-pod
spec:
  containers:
  - name: c
    image: busybox
  volumes:
  - name: shm
    emptyDir:
      medium: Memory
      sizeLimit: 16Mi
  - name: creds
    secret:
      secretName: creds
      defaultMode: 0400
  - name: all-in-one
    projected:
      sources:
      - configMap:
          name: log-config
          items:
          - key: log_level
            path: config/log_level
      - secret:
          name: creds
      - downwardAPI:
          items:
          - path: name
            fieldRef:
              fieldPath: metadata.name
YAML
until_true 5 volumes_ready tmpfs-pod || fail "tmpfs-pod volumes ready"
SHM=$(voldir tmpfs-pod kubernetes.io~empty-dir shm)
SEC=$(voldir tmpfs-pod kubernetes.io~secret creds)
expect_contains "memory emptyDir is a 16Mi tmpfs" "tmpfs rw,size=16384k" "$(mount_of "$SHM")"
expect_contains "secret volume is a tmpfs" "tmpfs" "$(mount_of "$SEC")"
expect_eq "secret value" "s3cr3t" "$(cat "$SEC/password")"
expect_eq "secret mode" "400" "$(stat -L -c %a "$SEC/password")"
PROJ=$(voldir tmpfs-pod kubernetes.io~projected all-in-one)
expect_contains "projected volume is a tmpfs" "tmpfs" "$(mount_of "$PROJ")"
expect_eq "projected configMap item" "DEBUG" "$(cat "$PROJ/config/log_level" 2>&1)"
expect_eq "projected secret" "s3cr3t" "$(cat "$PROJ/password" 2>&1)"
expect_eq "projected downwardAPI" "tmpfs-pod" "$(cat "$PROJ/name" 2>&1)"
expect_eq "projected default mode" "644" "$(stat -L -c %a "$PROJ/name")"
expect_eq "visible names are links into ..data" "..data/config ..data/name ..data/password" \
  "$(cd "$PROJ" && for f in *; do readlink "$f"; done | sort | tr '\n' ' ' | sed 's/ $//')"

# ---- hostPath: the seed's type Directory, missing and then present ---------------------------
HP=$WORK/node-data
sed "s|path: /data|path: $HP|" "$SEEDS/volume-hostPath.yml" | kubectl apply -f - >/dev/null
out=$(describe_until "hostPath type check failed" pod hostpath-pod)
expect_contains "hostPath event" "Warning FailedMount" "$out"
expect_contains "hostPath event message" "MountVolume.SetUp failed for volume \"data-volume\" : hostPath type check failed: $HP is not a directory" "$out"
volumes_ready hostpath-pod && fail "hostpath-pod must not be ready without its directory"
mkdir -p "$HP"
until_true 5 volumes_ready hostpath-pod || fail "hostpath-pod ready once the directory exists (retried)"

# ---- hostPath of each type the node can offer here ---------------------------------------------
mkdir -p "$WORK/hp/dir"
echo "file" >"$WORK/hp/file"
cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: hostpath-types
spec:
  containers:
  - name: c
    image: busybox
  volumes:
  - {name: any, hostPath: {path: $WORK/hp/whatever}}
  - {name: dir, hostPath: {path: $WORK/hp/dir, type: Directory}}
  - {name: dir-or-create, hostPath: {path: $WORK/hp/made/dir, type: DirectoryOrCreate}}
  - {name: file, hostPath: {path: $WORK/hp/file, type: File}}
  - {name: file-or-create, hostPath: {path: $WORK/hp/made-file, type: FileOrCreate}}
  - {name: char, hostPath: {path: /dev/null, type: CharDevice}}
YAML
until_true 10 volumes_ready hostpath-types || { fail "hostpath-types volumes ready"; k describe pod hostpath-types; }
expect_eq "DirectoryOrCreate makes a 0755 directory" "755 directory" "$(stat -c '%a %F' "$WORK/hp/made/dir")"
expect_eq "FileOrCreate makes a 0644 file" "644 regular empty file" "$(stat -c '%a %F' "$WORK/hp/made-file")"
[ -e "$WORK/hp/whatever" ] && fail "type \"\" checks nothing and makes nothing"
cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: hostpath-wrong
spec:
  containers:
  - name: c
    image: busybox
  volumes:
  - {name: not-a-socket, hostPath: {path: $WORK/hp/file, type: Socket}}
  - {name: not-a-block-device, hostPath: {path: /dev/null, type: BlockDevice}}
  - {name: not-a-file, hostPath: {path: $WORK/hp/dir, type: File}}
YAML
out=$(describe_until "is not a file" pod hostpath-wrong)
for want in "volume \"not-a-socket\" : hostPath type check failed: $WORK/hp/file is not a socket file" \
            "volume \"not-a-block-device\" : hostPath type check failed: /dev/null is not a block device" \
            "volume \"not-a-file\" : hostPath type check failed: $WORK/hp/dir is not a file"; do
  expect_contains "hostPath type event" "$want" "$(describe_until "$want" pod hostpath-wrong)"
done

# ---- a local PV, claimed: a real bind mount, read-only when the claim says so ----------------
DISK=$WORK/disks/ssd1
mkdir -p "$DISK"
echo "hello from the local disk" >"$DISK/index.html"
local_volume local 1Gi "$DISK"
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: local-pod
spec:
  containers:
  - name: nginx
    image: nginx
  volumes:
  - name: html
    persistentVolumeClaim:
      claimName: local-claim
      readOnly: true
YAML
until_true 20 volumes_ready local-pod || { fail "local-pod volumes ready"; k describe pod local-pod; k get pv,pvc; }
LP=$(voldir local-pod kubernetes.io~local-volume local-pv)
expect_eq "local volume content through the bind mount" "hello from the local disk" "$(cat "$LP/index.html" 2>&1)"
expect_contains "local volume is mounted read-only" "ro" "$(awk -v p="$LP" '$5 == p { print $6 }' /proc/self/mountinfo)"
touch "$LP/new" 2>/dev/null && fail "a read-only claim refuses writes"

# ---- a local PV on a block device: formatted, mounted once for the node, bound into the pod --
truncate -s 64M "$WORK/disk.img"
loop_attach "$WORK/disk.img"
local_volume blk 64Mi "$LOOP" Filesystem ext4
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: blk-pod
spec:
  containers:
  - name: c
    image: busybox
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: blk-claim
YAML
until_true 20 volumes_ready blk-pod || { fail "blk-pod volumes ready"; k describe pod blk-pod; }
GLOBAL=$ROOT/plugins/kubernetes.io/local-volume/mounts/blk-pv
expect_eq "the blank device was formatted ext4" "ext4" "$(blkid -s TYPE -o value "$LOOP")"
expect_contains "the device is mounted once for the node" "ext4 $LOOP" "$(awk -v p="$GLOBAL" '$5 == p { for (i = 7; $i != "-"; i++); print $(i+1), $(i+2) }' /proc/self/mountinfo)"
BLK=$(voldir blk-pod kubernetes.io~local-volume blk-pv)
echo "on the disk" >"$BLK/file" || fail "the pod's volume is writable"
expect_eq "the pod's volume is the device's filesystem" "on the disk" "$(cat "$GLOBAL/file" 2>&1)"
until_true 15 sh -c "kubectl get node $NODE -o jsonpath='{.status.volumesInUse}' | grep -q kubernetes.io/local-volume/blk-pv" ||
  fail "volumesInUse names the device-mounted volume: $(kubectl get node "$NODE" -o jsonpath='{.status.volumesInUse}')"
kubectl delete pod blk-pod --wait=false --grace-period=1 >/dev/null
until_true 10 test ! -e "$GLOBAL" || fail "the device is unmounted when no pod uses it"
expect_eq "nothing of the device stays mounted" "" "$(awk -v d="$LOOP" '$0 ~ " "d" " { print $5 }' /proc/self/mountinfo)"

# ---- a local PV with volumeMode Block: the raw device is mapped for the pod, not mounted ---------
truncate -s 16M "$WORK/raw.img"
loop_attach "$WORK/raw.img"
RAW=$LOOP
local_volume raw 16Mi "$RAW" Block
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: raw-pod
spec:
  containers:
  - name: c
    image: busybox
    volumeDevices:
    - name: disk
      devicePath: /dev/xvda
  volumes:
  - name: disk
    persistentVolumeClaim:
      claimName: raw-claim
YAML
until_true 20 volumes_ready raw-pod || { fail "raw-pod volumes ready"; k describe pod raw-pod; }
RAW_LINK=$ROOT/pods/$(uid raw-pod)/volumeDevices/kubernetes.io~local-volume/raw-pv
expect_eq "the block volume is the device, mapped" "$RAW" "$(readlink "$RAW_LINK")"
expect_eq "a block device is never formatted" "" "$(blkid -s TYPE -o value "$RAW")"
# In the container, the device is a block device node at devicePath, read and written through.
kubectl wait --for=condition=Ready pod/raw-pod --timeout=30s >/dev/null || fail "raw-pod runs"
kubectl exec raw-pod -- sh -c 'test -b /dev/xvda && printf kvol-block >/dev/xvda' ||
  fail "the container writes its block device at /dev/xvda"
expect_eq "what the container wrote is on the device" "kvol-block" "$(head -c 10 "$RAW")"
expect_eq "and reads back in the container" "kvol-block" "$(kubectl exec raw-pod -- head -c 10 /dev/xvda 2>&1)"
kubectl delete pod raw-pod --wait=false --grace-period=1 >/dev/null
until_true 5 test ! -e "$RAW_LINK" || fail "the mapping goes with the pod"

# ---- a claim that is not bound: the pod waits with kubelet's event -------------------------
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: nobody
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: none-such
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: waiting-pod
spec:
  nodeName: $NODE
  containers:
  - name: c
    image: busybox
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: nobody
YAML
out=$(describe_until "PVC is not bound" pod waiting-pod)
expect_contains "unbound claim event" "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data]: error processing PVC default/nobody: PVC is not bound" "$out"

# ---- NFS where the kernel cannot mount it: an event with mount's error, nothing hangs -------
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata:
  name: nfs-pv
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteMany]
  storageClassName: nfs
  mountOptions: [soft, retry=0]
  nfs:
    server: 127.0.0.1
    path: /exports/nothing
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: nfs-claim
spec:
  accessModes: [ReadWriteMany]
  storageClassName: nfs
  resources:
    requests:
      storage: 1Gi
YAML
kubectl wait --for=jsonpath='{.status.phase}'=Bound pvc/nfs-claim --timeout=60s >/dev/null ||
  fail "nfs-claim binds to nfs-pv"
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: nfs-pod
spec:
  nodeName: $NODE
  containers:
  - name: c
    image: busybox
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: nfs-claim
  - name: scratch
    emptyDir: {}
YAML
out=$(describe_until "MountVolume.SetUp failed" pod nfs-pod)
expect_contains "nfs failure event" "MountVolume.SetUp failed for volume \"nfs-pv\" : mount failed: exit status 32" "$out"
expect_contains "nfs failure names the command" "Mounting arguments: -t nfs -o soft,retry=0 127.0.0.1:/exports/nothing" "$out"
until_true 5 test -d "$(voldir nfs-pod kubernetes.io~empty-dir scratch)" || fail "the pod's other volumes carry on"
# Each retry makes the directory for its mount and removes it when the mount fails, so it is
# looked for until a moment between two attempts; one left behind would be there throughout.
until_true 10 test ! -e "$(voldir nfs-pod kubernetes.io~nfs nfs-pv)" ||
  fail "no half-made nfs directory is left"

# ---- deleting a pod unmounts and removes everything ------------------------------------------
TMPFS_UID=$(uid tmpfs-pod)
kubectl delete pod tmpfs-pod --wait=false --grace-period=1 >/dev/null
until_true 5 test ! -e "$ROOT/pods/$TMPFS_UID" || fail "tmpfs-pod's directory removed"
[ -n "$(mount_of "$SHM")$(mount_of "$SEC")" ] && fail "tmpfs-pod's mounts are gone"

# ---- kvol agent on another machine: a second node over HTTPS ----------------------------------
REMOTE=$WORK/remote
"$KVOL_BIN" agent --server "$KVOL_URL" --token "$(kvol_token)" \
  --certificate-authority "$KVOL_DIR/pki/ca.crt" --node-name remote-node --root-dir "$REMOTE" \
  --address 127.0.0.1 --port 0 --node-ip 127.0.0.1 >"$WORK/agent.log" 2>&1 &
AGENT_PID=$!
track "$AGENT_PID"
until_true 10 grep -q "kvol agent is ready" "$WORK/agent.log" || { fail "kvol agent starts"; cat "$WORK/agent.log"; }
expect_eq "remote node is Ready" "True" "$(kubectl get node remote-node -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: remote-pod
spec:
  nodeName: remote-node
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "echo first line; echo second line; until [ -e /tmp/go ]; do sleep 0.1; done; echo after go; exec sleep 1000"]
    volumeMounts:
    - name: config
      mountPath: /etc/config
  volumes:
  - name: shm
    emptyDir:
      medium: Memory
  - name: config
    configMap:
      name: log-config
YAML
until_true 10 volumes_ready remote-pod || fail "remote-pod volumes ready through kvol agent"
REMOTE_UID=$(uid remote-pod)
expect_contains "remote agent mounts a tmpfs" "tmpfs" "$(mount_of "$REMOTE/pods/$REMOTE_UID/volumes/kubernetes.io~empty-dir/shm")"
expect_eq "remote agent writes the ConfigMap" "DEBUG" "$(cat "$REMOTE/pods/$REMOTE_UID/volumes/kubernetes.io~configmap/config/log_level" 2>&1)"

# Logs and exec of a pod on the remote node: the server dials the agent at the port and with
# the certificate its Node publishes.
expect_eq "remote node publishes its agent's port" "$(sed -n 's/.*served on 127.0.0.1:\([0-9]*\),.*/\1/p' "$WORK/agent.log")" \
  "$(kubectl get node remote-node -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}')"
expect_eq "remote node publishes its agent's certificate" "$(sed -n 's/.*certificate SHA-256 //p' "$WORK/agent.log")" \
  "$(kubectl get node remote-node -o jsonpath='{.metadata.annotations.kvol\.io/agent-certificate-sha256}')"
until_true 10 sh -c 'kubectl logs remote-pod 2>/dev/null | grep -q "second line"' || fail "remote-pod's container runs"
expect_eq "kubectl logs of a remote pod" "$(printf 'first line\nsecond line')" "$(kubectl logs remote-pod 2>&1)"
expect_eq "kubectl logs --tail of a remote pod" "second line" "$(kubectl logs remote-pod --tail 1 2>&1)"
expect_contains "kubectl logs --previous of a remote pod: the agent's error" \
  'previous terminated container "c" in pod "remote-pod" not found' "$(kubectl logs remote-pod --previous 2>&1)"
out=$(kubectl exec remote-pod -- sh -c 'cat /etc/config/log_level; echo to-stderr >&2; exit 3' 2>"$WORK/exec.err")
expect_eq "kubectl exec on a remote pod: exit code" "3" "$?"
expect_eq "kubectl exec on a remote pod: stdout" "DEBUG" "$out"
expect_contains "kubectl exec on a remote pod: stderr" "to-stderr" "$(cat "$WORK/exec.err")"
expect_eq "kubectl exec -i on a remote pod: stdin" "through stdin" "$(echo 'through stdin' | kubectl exec -i remote-pod -- cat 2>&1)"
out=$(printf 'tty\nexit\n' | script -qc "kubectl exec -it remote-pod -- sh" /dev/null)
expect_contains "kubectl exec -it on a remote pod: a terminal" "/dev/pts/0" "$out"
kubectl logs -f remote-pod >"$WORK/follow.out" 2>&1 &
FOLLOW_PID=$!
track "$FOLLOW_PID"
until_true 5 grep -q "second line" "$WORK/follow.out" || fail "kubectl logs -f of a remote pod starts"
kubectl exec remote-pod -- touch /tmp/go
until_true 5 grep -q "after go" "$WORK/follow.out" || fail "kubectl logs -f of a remote pod follows"
kill "$FOLLOW_PID" 2>/dev/null
# Only the API server, with the token the agent uses, is served; only the pinned certificate is
# accepted.
AGENT_PORT=$(kubectl get node remote-node -o jsonpath='{.status.daemonEndpoints.kubeletEndpoint.Port}')
expect_contains "the agent refuses requests without its token" '"code":401' \
  "$(curl -sk "https://127.0.0.1:$AGENT_PORT/containerLogs/default/remote-pod/$REMOTE_UID/c")"
PIN=$(kubectl get node remote-node -o jsonpath='{.metadata.annotations.kvol\.io/agent-certificate-sha256}')
kubectl annotate node remote-node --overwrite kvol.io/agent-certificate-sha256=0000 >/dev/null
expect_contains "a certificate other than the pinned one is refused" "presented a certificate with SHA-256 $PIN" \
  "$(kubectl logs remote-pod 2>&1)"
kubectl annotate node remote-node --overwrite "kvol.io/agent-certificate-sha256=$PIN" >/dev/null
expect_eq "the pinned certificate is accepted again" "after go" "$(kubectl logs remote-pod --tail 1 2>&1)"
# The agent's own paths through the API server's node proxy, as kubelet's.
expect_contains "the remote agent's /metrics through nodes/remote-node/proxy" \
  "# TYPE process_cpu_seconds_total counter" \
  "$(kubectl get --raw /api/v1/nodes/remote-node/proxy/metrics 2>&1)"
expect_eq "the remote agent's /healthz through the proxy" "ok" \
  "$(kubectl get --raw /api/v1/nodes/remote-node/proxy/healthz 2>&1)"
expect_contains "a path the agent does not serve" "the node agent serves no /configz" \
  "$(kubectl get --raw /api/v1/nodes/remote-node/proxy/configz 2>&1)"
expect_contains "the agent's /metrics wants its token too" '"code":401' \
  "$(curl -sk "https://127.0.0.1:$AGENT_PORT/metrics")"
# kill -9 and a restart on the same port while the pod runs: its container holds none of the
# agent's descriptors, so the port is free.
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
"$KVOL_BIN" agent --server "$KVOL_URL" --token "$(kvol_token)" \
  --certificate-authority "$KVOL_DIR/pki/ca.crt" --node-name remote-node --root-dir "$REMOTE" \
  --address 127.0.0.1 --port "$AGENT_PORT" --node-ip 127.0.0.1 >"$WORK/agent2.log" 2>&1 &
AGENT_PID=$!
track "$AGENT_PID"
until_true 5 grep -q "kvol agent is ready" "$WORK/agent2.log" ||
  fail "kvol agent restarts on port $AGENT_PORT: $(cat "$WORK/agent2.log")"
expect_eq "the restarted agent serves the running pod's logs" "after go" \
  "$(kubectl logs remote-pod --tail 1 2>&1)"
kubectl delete pod remote-pod --wait=false --grace-period=1 >/dev/null
until_true 5 test ! -e "$REMOTE/pods/$REMOTE_UID" || fail "remote agent tears down"
kill -TERM "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
expect_contains "kvol agent stops on SIGTERM" "stopped" "$(cat "$WORK/agent2.log")"
# Nothing marks a stopped agent's node NotReady yet; take it out of scheduling as an admin would.
kubectl delete node remote-node >/dev/null

# ---- kill -9 and restart: nothing right is remounted, what no pod needs is cleaned up --------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata:
  name: survivor
spec:
  containers:
  - name: c
    image: busybox
  volumes:
  - name: shm
    emptyDir:
      medium: Memory
YAML
until_true 5 volumes_ready survivor || fail "survivor volumes ready"
SURV=$(voldir survivor kubernetes.io~empty-dir shm)
echo "state" >"$SURV/file"
id_before=$(mount_id "$SURV")
LOCAL_UID=$(uid local-pod)
LP_ID=$(mount_id "$LP")
kill -9 "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null
# While the agent is down: local-pod goes away (deleted through another server on the same data
# is not possible, so remove it from the store after the restart with the agent off)...
kvol_start server --node-name "$NODE" --no-agent
kubectl delete pod local-pod --wait=false --grace-period=1 >/dev/null
kill -9 "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null
kvol_start server --node-name "$NODE"
until_true 5 test ! -e "$ROOT/pods/$LOCAL_UID" || fail "the deleted pod's volumes are torn down after the restart"
[ -n "$(mount_of "$LP")" ] && fail "the deleted pod's bind mount is gone"
[ -d "$DISK" ] && [ -f "$DISK/index.html" ] || fail "the local disk's data stays"
until_true 5 volumes_ready survivor || fail "survivor still ready"
expect_eq "the survivor's tmpfs was not remounted" "$id_before" "$(mount_id "$SURV")"
expect_eq "the survivor's data is intact" "state" "$(cat "$SURV/file" 2>&1)"

finish
