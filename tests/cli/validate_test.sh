#!/usr/bin/env bash
# `kvol validate` end to end: the seed manifests, their published originals, standard input,
# malformed and hostile input. Usage: validate_test.sh KVOL_BINARY TESTS_DIR
set -uo pipefail
kvol=$(realpath "$1")
tests=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect NAME WANT_EXIT WANT_OUTPUT_FILE -- ARGS...
expect() {
  local name=$1 want_exit=$2 want=$3
  shift 4
  local out="$work/out" got_exit
  "$kvol" "$@" >"$out" 2>&1
  got_exit=$?
  if [ "$got_exit" != "$want_exit" ]; then
    fail "$name: exit $got_exit, want $want_exit"; cat "$out"
  fi
  if [ -n "$want" ] && ! diff -u "$want" "$out" >"$work/diff"; then
    fail "$name: output differs"; cat "$work/diff"
  fi
}

# 1. Every seed example is valid.
cat >"$work/seeds.want" <<'OUT'
Deployment/nginx-deploy: valid
Service/nginx-svc: valid
StorageClass/local-storage: valid
PersistentVolume/nginx-pv: valid
PersistentVolumeClaim/nginx-pvc: valid
StatefulSet/web: valid
Deployment/nfs-client-provisioner: valid
PersistentVolume/nfs-pv: valid
PersistentVolumeClaim/nfs-pvc: valid
ServiceAccount/nfs-client-provisioner: valid
ClusterRole/nfs-client-provisioner-runner: valid
ClusterRoleBinding/run-nfs-client-provisioner: valid
Role/leader-locking-nfs-client-provisioner: valid
RoleBinding/leader-locking-nfs-client-provisioner: valid
StorageClass/nfs-storage: valid
StorageClass/nfs-storage: valid
Deployment/nginx: valid
ConfigMap/log-config: valid
Pod/configmap-pod: valid
Pod/dwapi-pod: valid
Pod/emptydir-pod: valid
Pod/hostpath-pod: valid
OUT
expect "seeds" 0 "$work/seeds.want" -- validate -f "$tests/seeds"

# 2. The published originals fail exactly where kubectl fails.
(cd "$tests/seeds" && "$kvol" validate -f original) >"$work/orig.out" 2>&1
orig_exit=$?
[ "$orig_exit" = 1 ] || fail "originals: exit $orig_exit, want 1"
for line in \
  "original/delay-bound-nginx.yml:45:1: could not find expected ':'" \
  "PersistentVolume/nfs-pv: metadata.label: Forbidden: unknown field" \
  "Pod/dwapi-pod: metadata.labels[version]: Invalid value: 1.1: must be a string, not a number"; do
  grep -qxF "$line" "$work/orig.out" || { fail "originals: missing line: $line"; cat "$work/orig.out"; }
done
[ "$(grep -vc ': valid' "$work/orig.out")" = 3 ] || { fail "originals: want exactly 3 problems"; cat "$work/orig.out"; }

# 3. Standard input, several -f, JSON, and errors that name the field.
cat >"$work/bad.yaml" <<'YAML'
apiVersion: v1
kind: PersistentVolume
metadata:
  name: bad-pv
spec:
  capacity:
    storage: -1Gi
  accessModes: [ReadWriteOnce, ReadWriteOncePod]
  hostPath:
    path: /data
    type: Dir
YAML
cat >"$work/bad.want" <<'OUT'
PersistentVolume/bad-pv: spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes
PersistentVolume/bad-pv: spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity
PersistentVolume/bad-pv: spec.capacity[storage]: Invalid value: "-1Gi": must be greater than zero
PersistentVolume/bad-pv: spec.hostPath.type: Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"
OUT
"$kvol" validate -f - <"$work/bad.yaml" >"$work/stdin.out" 2>&1
[ $? = 1 ] || fail "stdin: want exit 1"
diff -u "$work/bad.want" "$work/stdin.out" || fail "stdin: output differs"

echo '{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "kvol.io/local-path"}' >"$work/sc.json"
printf 'StorageClass/fast: valid\n' >"$work/sc.want"
expect "json file" 0 "$work/sc.want" -- validate -f "$work/sc.json"
cat "$work/sc.want" "$work/bad.want" >"$work/both.want"
expect "two files" 1 "$work/both.want" -- validate -f "$work/sc.json" -f "$work/bad.yaml"

# 4. Malformed input: a located error, exit 1, never a crash.
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n' >"$work/broken.yaml"
"$kvol" validate -f "$work/broken.yaml" >"$work/broken.out" 2>&1
rc=$?
[ "$rc" = 1 ] || fail "broken yaml: exit $rc, want 1"
grep -qE "^$work/broken.yaml:[0-9]+:[0-9]+: " "$work/broken.out" || { fail "broken yaml: no line:column"; cat "$work/broken.out"; }
printf '{"kind": "Pod", "apiVersion": "v1",\n "metadata": {"name": "x"\n' >"$work/broken.json"
"$kvol" validate -f "$work/broken.json" >"$work/bj.out" 2>&1
[ $? = 1 ] || fail "broken json: want exit 1"
grep -qE "broken.json:[0-9]+:[0-9]+: " "$work/bj.out" || { fail "broken json: no line:column"; cat "$work/bj.out"; }
printf 'kind: Pod\n' | "$kvol" validate -f - >"$work/nokind.out" 2>&1
[ $? = 1 ] || fail "missing apiVersion: want exit 1"
grep -qF "apiVersion: Required value: Object 'apiVersion' is missing" "$work/nokind.out" || { fail "missing apiVersion message"; cat "$work/nokind.out"; }
head -c 65536 /dev/urandom >"$work/garbage.yaml"
"$kvol" validate -f "$work/garbage.yaml" >/dev/null 2>&1
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "random bytes: exit $rc (crash?)"
"$kvol" validate -f "$work/does-not-exist.yaml" >"$work/missing.out" 2>&1
[ $? = 1 ] || fail "missing file: want exit 1"
grep -qF "no such file or directory" "$work/missing.out" || fail "missing file: message"

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "validate_cli: all checks passed"
