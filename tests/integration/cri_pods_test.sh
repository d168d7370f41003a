#!/usr/bin/env bash
# Pods from real images through CRI: `kvol server --container-runtime containerd` runs its own
# containerd and the node agent runs pods through it, driven with the real kubectl. No registry
# is reachable: the image (busybox) is built here with umoci and imported with ctr; sandboxes
# run kvol's own pause image, which the server imports. Checks:
#   - the node's runtime version;
#   - an emptyDir shared by two containers; a ConfigMap's ..data links seen from inside, and a
#     write into them refused; the downward API through `kubectl logs`;
#   - a local PV, a claim of the default class, a claim of the bundled CSI driver's class and
#     a Block one (the container's /dev/xvda), from one pod, with logs --tail and -f; subPaths of a directory and of a file, and one through a symlink out of
#     its volume refused;
#   - `kubectl exec` with its output and exit code; with stdin to its end (-i), and on a
#     terminal (-it);
#   - kubelet's image events and waiting reasons (already present, ErrImageNeverPull,
#     ErrImagePull then ImagePullBackOff);
#   - restarts with `logs --previous`;
#   - kill -9 of the server, after which the containers still run and are found again;
#   - with a CNI configuration (a bridge), a pod's own network: its podIP, hostname and netns;
#   - no sandbox, container, mount, netns or provisioned volume left once pods and claims are
#     deleted.
# Usage: cri_pods_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

for tool in containerd containerd-shim-runc-v2 runc ctr umoci; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (scripts/setup installs it)"; exit 1; }
done
[ -x /bin/busybox ] || { echo "/bin/busybox is not installed (busybox-static)"; exit 1; }

# ---- an image of the node's static busybox, tagged 1 -------------------------------------------
"$TESTS/integration/busybox_image.sh" "$WORK/image.tar" >"$WORK/image.log" 2>&1 ||
  { echo "building the image failed:"; cat "$WORK/image.log"; exit 1; }

kvol_start srv --container-runtime containerd \
  --pod-logs-dir "$WORK/logs"
SOCK=$KVOL_DIR/containerd/containerd.sock
crt() { ctr -a "$SOCK" -n k8s.io "$@"; }
crt images import --base-name docker.io/library/busybox "$WORK/image.tar" >/dev/null ||
  { echo "importing the image failed"; exit 1; }

node=$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')
runtime=$(kubectl get node "$node" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}')
[[ $runtime == containerd://* ]] || fail "containerRuntimeVersion is $runtime, not containerd://..."

# ---- the README's volumes, from the image ------------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {level: debug}
---
apiVersion: v1
kind: Pod
metadata: {name: share, labels: {app: share}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: writer
    image: busybox:1
    command: ["sh", "-c", "echo hello >/cache/abc.txt; sleep 999999"]
    volumeMounts: [{name: cache, mountPath: /cache}]
  - name: reader
    image: busybox:1
    command: ["sh", "-c"]
    args:
    - |
      until [ -f /cache/abc.txt ]; do sleep 0.1; done
      echo "read: $(cat /cache/abc.txt)"
      echo "pod: $(cat /info/name) in $(cat /info/namespace)"
      ls -a /config
      echo "level: $(cat /config/level)"
      echo x >/config/level 2>&1 || true
      sleep 999999
    volumeMounts:
    - {name: cache, mountPath: /cache}
    - {name: config, mountPath: /config}
    - {name: info, mountPath: /info}
  volumes:
  - {name: cache, emptyDir: {}}
  - name: config
    configMap: {name: settings}
  - name: info
    downwardAPI:
      items:
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: namespace, fieldRef: {fieldPath: metadata.namespace}}
YAML
until_true 60 phase_is share Running || fail "pod share is $(phase share), not Running"
NEEDLE="level: debug" until_true 30 logs_contain share -c reader || fail "no log from reader"
logs=$(kubectl logs share -c reader 2>&1)
expect_contains "the emptyDir shared" "read: hello" "$logs"
expect_contains "the downward API" "pod: share in default" "$logs"
expect_contains "the ConfigMap's ..data link" "..data" "$logs"
expect_contains "the ConfigMap's key" "level: debug" "$logs"
expect_contains "a ConfigMap volume is read-only" "Read-only file system" "$logs"
cid=$(kubectl get pod share -o jsonpath='{.status.containerStatuses[0].containerID}')
[[ $cid == containerd://* ]] || fail "containerID is \"$cid\", not containerd://..."
image_id=$(kubectl get pod share -o jsonpath='{.status.containerStatuses[0].imageID}')
[ -n "$image_id" ] || fail "the container status has no imageID"
events=$(k get events --field-selector involvedObject.name=share)
expect_contains "the image event" 'Container image "busybox:1" already present on machine' "$events"
expect_contains "the node network event" "the pod runs in the node's network" "$events"
sandbox_image=$(crt containers ls | awk '$2 ~ /pause/ { print $2; exit }')
expect_eq "the sandboxes' image" "kvol.local/pause:1" "$sandbox_image"

# ---- claims: a local PV, the default class (local-path) and the bundled CSI driver's class ------
mkdir -p "$WORK/local"
echo "from the node" >"$WORK/local/seed"
cat <<YAML | kubectl create -f - >/dev/null
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  local: {path: "$WORK/local"}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$node]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: local-claim}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: default-claim}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: csi-claim}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: loop
  resources: {requests: {storage: 16Mi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: block-claim}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: loop
  volumeMode: Block
  resources: {requests: {storage: 16Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: claims}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: busybox:1
    command: ["sh", "-c"]
    args:
    - |
      echo "local: \$(cat /local/seed)"
      echo written >/local/out
      echo default >/default/f && echo "default: \$(cat /default/f)"
      echo csi >/csi/f && echo "csi: \$(cat /csi/f)"
      echo "block: \$(busybox stat -c %F /dev/xvda)"
      echo through-the-device | dd of=/dev/xvda bs=512 count=1 conv=sync 2>/dev/null
      echo "read back: \$(dd if=/dev/xvda bs=18 count=1 2>/dev/null)"
      grep " /csi " /proc/mounts | cut -d' ' -f3 | sed 's/^/csi fs: /'
      sleep 999999
    volumeMounts:
    - {name: local, mountPath: /local}
    - {name: default, mountPath: /default}
    - {name: csi, mountPath: /csi}
    volumeDevices: [{name: block, devicePath: /dev/xvda}]
  volumes:
  - {name: local, persistentVolumeClaim: {claimName: local-claim}}
  - {name: default, persistentVolumeClaim: {claimName: default-claim}}
  - {name: csi, persistentVolumeClaim: {claimName: csi-claim}}
  - {name: block, persistentVolumeClaim: {claimName: block-claim}}
YAML
until_true 90 phase_is claims Running || {
  fail "pod claims is $(phase claims), not Running"
  kubectl describe pod claims | sed -n '/^Events:/,$p'
}
NEEDLE="csi fs:" until_true 30 logs_contain claims || fail "no log from pod claims"
logs=$(kubectl logs claims 2>&1)
expect_contains "the local PV, from the node" "local: from the node" "$logs"
expect_eq "the container's write, on the node" written "$(cat "$WORK/local/out" 2>&1)"
expect_contains "the default class's claim" "default: default" "$logs"
expect_contains "the CSI claim" "csi: csi" "$logs"
expect_contains "the CSI volume's filesystem" "csi fs: ext4" "$logs"
expect_contains "a Block claim, the container's device" "block: block special file" "$logs"
expect_contains "written to the device and read back" "read back: through-the-device" "$logs"
expect_eq "kubectl logs --tail" "$(kubectl logs claims | tail -1)" "$(kubectl logs claims --tail=1)"
follow=$(timeout 5 kubectl logs -f claims 2>&1)
expect_contains "kubectl logs -f, until stopped" "local: from the node" "$follow"
expect_eq "the default claim's class" local-path \
  "$(kubectl get pvc default-claim -o jsonpath='{.spec.storageClassName}')"

# ---- subPaths: bound for the runtime from inside the volume; a symlink out of it refused --------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: subpaths}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: prepare
    image: busybox:1
    command: ["sh", "-c", "mkdir -p /data/sub && echo hello >/data/sub/hello && ln -s / /data/evil"]
    volumeMounts: [{name: data, mountPath: /data}]
  containers:
  - name: c
    image: busybox:1
    command: ["sh", "-c", "echo \"dir: $(cat /sub/hello) file: $(cat /hello.txt)\"; echo back >/sub/back; sleep 999999"]
    volumeMounts:
    - {name: data, mountPath: /sub, subPath: sub}
    - {name: data, mountPath: /hello.txt, subPath: sub/hello}
  - name: escape
    image: busybox:1
    command: ["ls", "/host"]
    volumeMounts: [{name: data, mountPath: /host, subPath: evil}]
  volumes:
  - {name: data, emptyDir: {}}
YAML
NEEDLE="dir: hello file: hello" until_true 60 logs_contain subpaths -c c ||
  fail "pod subpaths: no subPath contents in its log: $(kubectl logs subpaths -c c 2>&1)"
escape_reason() {
  kubectl get pod subpaths -o jsonpath='{.status.containerStatuses[?(@.name=="escape")].state.waiting.reason}'
}
escape_refused() { [ "$(escape_reason)" = CreateContainerConfigError ]; }
until_true 30 escape_refused || fail "the escaping subPath waits with \"$(escape_reason)\""
expect_contains "why the escaping subPath is refused" "not within volume path" \
  "$(kubectl get pod subpaths -o jsonpath='{.status.containerStatuses[?(@.name=="escape")].state.waiting.message}')"
sub_uid=$(kubectl get pod subpaths -o jsonpath='{.metadata.uid}')
expect_eq "a write through the subPath, in the volume" back \
  "$(cat "$KVOL_DIR/agent/pods/$sub_uid/volumes/kubernetes.io~empty-dir/data/sub/back" 2>&1)"
binds=$(awk -v d="$KVOL_DIR/agent/containers/$sub_uid/c/subpaths/" 'index($5, d) == 1' /proc/self/mountinfo | wc -l)
expect_eq "the running container's subPath binds" 2 "$binds"

# ---- exec without stdin or a terminal ----------------------------------------------------------
expect_eq "kubectl exec" hello "$(kubectl exec share -c writer -- cat /cache/abc.txt 2>&1)"
kubectl exec share -c writer -- sh -c 'echo out; echo err >&2; exit 7' >"$WORK/exec.out" 2>"$WORK/exec.err"
expect_eq "kubectl exec's exit code" 7 "$?"
expect_eq "kubectl exec's stdout" out "$(cat "$WORK/exec.out")"
expect_contains "kubectl exec's stderr" err "$(cat "$WORK/exec.err")"

# ---- exec with stdin and a terminal ------------------------------------------------------------
expect_eq "kubectl exec -i: stdin, to its end" "from stdin" \
  "$(echo "from stdin" | kubectl exec -i share -c writer -- cat 2>&1)"
echo | kubectl exec -i share -c writer -- sh -c 'echo err >&2; exit 4' >/dev/null 2>"$WORK/exec.err"
expect_eq "kubectl exec -i's exit code" 4 "$?"
expect_contains "kubectl exec -i's stderr" err "$(cat "$WORK/exec.err")"
out=$(printf 'echo tty says hi\ntty\nexit 5\n' | script -qc "kubectl exec -it share -c writer -- sh" /dev/null)
expect_contains "kubectl exec -it: a shell on a terminal" "tty says hi" "$out"
expect_contains "kubectl exec -it: the terminal" "/dev/pts/" "$out"
expect_contains "kubectl exec -it: its exit code" "command terminated with exit code 5" "$out"
head -c 3000000 /dev/urandom >"$WORK/big"
expect_eq "kubectl exec -i: 3 MB through stdin" "$(md5sum <"$WORK/big" | cut -d' ' -f1)" \
  "$(kubectl exec -i share -c writer -- busybox md5sum <"$WORK/big" 2>&1 | cut -d' ' -f1)"
expect_eq "kubectl exec -i: 3 MB through cat, which writes while it reads" \
  "$(md5sum <"$WORK/big" | cut -d' ' -f1)" \
  "$(timeout 60 kubectl exec -i share -c writer -- cat <"$WORK/big" 2>&1 | md5sum | cut -d' ' -f1)"
# kubectl's own stdin copy, still writing when the session ends, may log its failed write
# ("broken pipe") on stderr: only the command's output and kubectl's end are checked.
expect_eq "kubectl exec -i whose command ends before its stdin does" "y y y y y " \
  "$(yes | timeout 30 kubectl exec -i share -c writer -- sh -c 'head -c 10' 2>/dev/null | tr '\n' ' ')"
out=$(kubectl exec -i share -c writer -- no-such-command </dev/null 2>&1)
expect_contains "kubectl exec -i of a missing command" "no-such-command" "$out"

# ---- images that are not there -----------------------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  containers:
  - {name: c, image: "busybox:missing", imagePullPolicy: Never, command: ["true"]}
---
apiVersion: v1
kind: Pod
metadata: {name: unpullable}
spec:
  imagePullSecrets: [{name: absent}]
  containers:
  - {name: c, image: "kvol.invalid/none:1", command: ["true"]}
YAML
waiting() { kubectl get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}'; }
waiting_is() { [ "$(waiting "$1")" = "$2" ]; }
until_true 30 waiting_is never ErrImageNeverPull ||
  fail "pod never waits with $(waiting never), not ErrImageNeverPull"
message=$(kubectl get pod never -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')
expect_eq "ErrImageNeverPull's message" \
  'Container image "busybox:missing" is not present with pull policy of Never' "$message"
until_true 60 waiting_is unpullable ErrImagePull ||
  fail "pod unpullable waits with $(waiting unpullable), not ErrImagePull"
until_true 30 waiting_is unpullable ImagePullBackOff ||
  fail "pod unpullable waits with $(waiting unpullable), not ImagePullBackOff"
events=$(k get events --field-selector involvedObject.name=unpullable)
expect_contains "the pulling event" 'Pulling image "kvol.invalid/none:1"' "$events"
expect_contains "the failed pull event" 'Failed to pull image "kvol.invalid/none:1"' "$events"
expect_contains "the missing pull secret" \
  "Unable to retrieve some image pull secrets (absent); attempting to pull the image may not succeed." \
  "$events"
expect_contains "the back-off event" 'Back-off pulling image "kvol.invalid/none:1"' "$events"

# ---- restarts ------------------------------------------------------------------------------------
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - name: c
    image: busybox:1
    command: ["sh", "-c", "echo run; exit 3"]
YAML
restarts() { kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].restartCount}'; }
restarted() { [ "$(restarts)" -ge 1 ] 2>/dev/null; }
until_true 60 restarted || fail "pod crash was not restarted (restartCount $(restarts))"
code=$(kubectl get pod crash -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}')
expect_eq "the last run's exit code" 3 "$code"
expect_eq "logs --previous" run "$(kubectl logs crash --previous 2>&1)"

# ---- kill -9 of the server and its agent: the containers run on and are found again ----------
kill -9 "$KVOL_PID"
wait "$KVOL_PID" 2>/dev/null
running=$(crt tasks ls 2>/dev/null | grep -c RUNNING)
[ "$running" -ge 2 ] || fail "only $running task(s) run while the agent is down"
kvol_start srv --container-runtime containerd \
  --pod-logs-dir "$WORK/logs"
sleep 3  # a few of the runtime's looks
expect_eq "the writer's container after the restart" "$cid" \
  "$(kubectl get pod share -o jsonpath='{.status.containerStatuses[0].containerID}')"
expect_eq "restarts of share's containers" "0 0" \
  "$(kubectl get pod share -o jsonpath='{.status.containerStatuses[*].restartCount}')"
expect_eq "share's phase" Running "$(phase share)"
uid=$(kubectl get pod share -o jsonpath='{.metadata.uid}')
expect_eq "the emptyDir is not torn down" hello \
  "$(cat "$KVOL_DIR/agent/pods/$uid/volumes/kubernetes.io~empty-dir/cache/abc.txt" 2>&1)"

# ---- a network of its own, once containerd has a CNI configuration -----------------------------
bridge=kvolbr$((RANDOM % 100000))
subnet=10.244.$((RANDOM % 250)).0/24  # Kubernetes' usual pod range; apart from another run's
at_exit "ip link del $bridge 2>/dev/null"
netns_before=$(ip netns list 2>/dev/null | cut -d' ' -f1 | sort)
cat >"$KVOL_DIR/containerd/cni/10-kvol-test.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "$bridge",
  "plugins": [
    {"type": "bridge", "bridge": "$bridge", "isGateway": true,
     "ipam": {"type": "host-local", "dataDir": "$WORK/cni-ipam",
              "ranges": [[{"subnet": "$subnet"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
JSON
sleep 2  # containerd picks the configuration up from its directory as it changes
cat <<'YAML' | kubectl create -f - >/dev/null
apiVersion: v1
kind: Pod
metadata: {name: net}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: "busybox:1", command: ["sh", "-c", "echo \"host: $(hostname)\"; sleep 999999"]}
YAML
until_true 60 phase_is net Running || fail "pod net is $(phase net), not Running"
pod_ip=$(kubectl get pod net -o jsonpath='{.status.podIP}')
[[ $pod_ip == "${subnet%.0/24}".* ]] || fail "pod net's podIP is \"$pod_ip\", not one of its network's"
NEEDLE="host: net" until_true 20 logs_contain net || fail "pod net has no hostname of its own: $(kubectl logs net 2>&1)"
[ "$(ip netns list 2>/dev/null | cut -d' ' -f1 | sort)" != "$netns_before" ] ||
  fail "pod net has no network namespace"

# ---- deletion leaves nothing -------------------------------------------------------------------
kubectl delete pod share never unpullable crash claims subpaths net --wait=false >/dev/null
gone() { [ -z "$(kubectl get pods -o name 2>/dev/null)" ]; }
until_true 60 gone || fail "pods left: $(kubectl get pods -o name)"
# The pods' sandboxes and containers go once the pod objects have (as kubelet's garbage
# collection removes them).
no_containers() { [ -z "$(crt containers ls -q)" ]; }
until_true 30 no_containers || fail "containers left in containerd: $(crt containers ls -q)"
expect_eq "tasks left in containerd" "" "$(crt tasks ls -q)"
leftover=$(awk -v d="$KVOL_DIR/containerd/" 'index($5, d) == 1' /proc/self/mountinfo | grep -v '/sandboxes/' || true)
expect_eq "mounts left under containerd's state" "" "$leftover"
[ -z "$(ls "$WORK/logs" 2>/dev/null)" ] || fail "pod log directories left: $(ls "$WORK/logs")"
expect_eq "network namespaces left" "$netns_before" "$(ip netns list 2>/dev/null | cut -d' ' -f1 | sort)"
expect_eq "mounts left under the agent's pods and containers" "" \
  "$(awk -v d="$KVOL_DIR/agent/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo)"
kubectl delete pvc local-claim default-claim csi-claim block-claim --wait=false >/dev/null
no_pvs() { [ -z "$(kubectl get pv -o name | grep -v local-pv)" ]; }
until_true 60 no_pvs || fail "provisioned volumes left: $(kubectl get pv -o name)"
expect_eq "the local PV's files stay" "from the node" "$(cat "$WORK/local/seed")"

finish
