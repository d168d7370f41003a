#!/usr/bin/env bash
# Bounded chaos: 8 clients create, update (PUT), merge-patch and delete volumes, claims that bind
# to them and pods that use the claims, while the server is killed with kill -9 five times and
# started again on the same data directory and port. Every write a client got a 2xx for is
# acknowledged: at the end the object is there with the label and annotation of its last
# acknowledged write, or is gone (or going) if that was a delete. A write whose answer was lost
# is read back once the server answers, and must have left either the old state or the new one.
# No two claims are ever bound to one volume (sampled through the kills and checked once the
# controllers settled), volumes and claims point at each other, a volume whose claim is gone is
# not left Bound, and once everything is deleted and the server stopped no container process and
# no mount is left.
# Each kill lands 3-10 s after the restarted server's controllers took the Lease again (15 s after
# a kill -9), so that binding, scheduling, protection and the node agent are at work when it dies.
# Usage: chaos_test.sh KVOL_BINARY TESTS_DIR [KILLS]
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
KILLS=${3:-5}
CLIENTS=8
source "$TESTS/integration/lib.sh"

PORT=$(free_port)
start_server() { KVOL_LISTEN=127.0.0.1:$PORT kvol_start server; }
start_server
ROOT=$KVOL_DIR/agent
CA=$KVOL_DIR/pki/ca.crt
TOKEN=$(kvol_token)
leads() { grep -q "now leads" "$KVOL_LOG"; }
until_true 60 leads || fail "the first server leads its controllers"
mkdir -p "$WORK/ops"
: >"$WORK/samples"
: >"$WORK/double"

cat <<'YAML' | kubectl create -f - >/dev/null || fail "the class is created"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: chaos}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: Immediate
YAML

# ---- the clients -------------------------------------------------------------------------------
# Each client owns the objects named *-c<client>-<n>. Its log, $WORK/ops/c<client>, has a line
# per fact it learnt about one of them: "ACK KIND NAME STATE" for an acknowledged write, "AMB
# KIND NAME STATE" for a write whose answer was lost, "SEEN KIND NAME STATE" for the state read
# back after one, "BAD ..." for an answer that only a lost write explains and "ODD ..." for a
# refusal of a valid write. A state is "V,A" (the chaos-v label and chaos-a annotation of a live
# object) or "gone" (absent, or being deleted).
path_of() {
  case $1 in
    pv) echo "/api/v1/persistentvolumes${2:+/$2}" ;;
    pvc) echo "/api/v1/namespaces/default/persistentvolumeclaims${2:+/$2}" ;;
    pod) echo "/api/v1/namespaces/default/pods${2:+/$2}" ;;
  esac
}
stopping() { [ -e "$WORK/stop" ]; }

# api METHOD PATH [CONTENT_TYPE BODY]: sets CODE (000 without an answer) and RC (curl's exit
# status); the answer's body is in $BODY.
api() {
  local args=(-sS --cacert "$CA" -H "Authorization: Bearer $TOKEN" --connect-timeout 3
    --max-time 30 -o "$BODY" -w '%{http_code}' -X "$1" "$KVOL_URL$2")
  [ $# -gt 2 ] && args+=(-H "Content-Type: $3" --data-binary "$4")
  CODE=$(curl "${args[@]}" 2>/dev/null)
  RC=$?
  [ -n "$CODE" ] || CODE=000
}

state_of_body() {
  jq -r 'if .metadata.deletionTimestamp then "gone" else
    "\(.metadata.labels["chaos-v"] // "-"),\(.metadata.annotations["chaos-a"] // "-")" end' "$BODY"
}

# observe KIND NAME: OBS is the object's state, read from the server (retried while it is down).
observe() {
  local deadline=$((SECONDS + 120))
  while [ $SECONDS -lt $deadline ]; do
    api GET "$(path_of "$1" "$2")"
    case $CODE in
      200) OBS=$(state_of_body) && return 0 ;;
      404) OBS=gone && return 0 ;;
    esac
    sleep 0.2
  done
  return 1
}

# Each line ends with the time, as the server's log gives it.
log() {
  local t
  printf -v t '%(%Y-%m-%dT%H:%M:%S)T.%s' "${EPOCHREALTIME%.*}" "${EPOCHREALTIME#*.}"
  echo "$* @${t:0:23}" >>"$LOG"
}

# write KIND NAME NEW METHOD PATH [CONTENT_TYPE BODY]: a write that leaves KIND NAME in state NEW
# if it is applied. 0 when acknowledged; 1 when refused (CODE says why; nothing was applied); 2
# when its answer was lost, after reading back what the object became (STATE is then that).
write() {
  local kind=$1 name=$2 new=$3 prev=${STATE[$1/$2]:-gone}
  shift 3
  while true; do
    api "$@"
    case $CODE in
      200 | 201 | 202)
        STATE[$kind/$name]=$new
        log "ACK $kind $name $new $1"
        return 0
        ;;
      429) ;;  # not taken up: again
      4??) return 1 ;;
      000)
        # No connection: the request was never sent, so it is simply sent again once the
        # server is back.
        if [ "$RC" = 7 ]; then
          stopping && return 1
          sleep 0.2
          continue
        fi
        ;;
    esac
    # Sent, but no answer (the server died under it) or a 5xx: the write may or may not be
    # applied. What the restarted server has is one of the two states.
    log "AMB $kind $name $new $1 (http $CODE, curl $RC)"
    if ! observe "$kind" "$name"; then
      log "BAD $kind $name: cannot be read back after an unanswered write"
      return 2
    fi
    log "SEEN $kind $name $OBS"
    [ "$OBS" = "$prev" ] || [ "$OBS" = "$new" ] ||
      log "BAD $kind $name: after an unanswered write from $prev to $new it is $OBS"
    STATE[$kind/$name]=$OBS
    return 2
  done
}

live() { [ "${STATE[$1/$2]:-gone}" != gone ]; }
# refused KIND NAME WHAT LOST: after a write was refused. LOST is the status that only a lost
# write explains (NotFound for an object that exists, AlreadyExists for a new name); any other
# refusal of these valid writes is odd. Without an answer (the clients are stopping) it is
# nothing.
refused() {
  local why
  why="$3 answered $CODE while its last known state is ${STATE[$1/$2]:-gone}: $(head -c 300 "$BODY")"
  case $CODE in
    000) ;;
    "$4")
      log "BAD $1 $2: $why"
      STATE[$1/$2]=gone
      ;;
    *) log "ODD $1 $2: $why" ;;
  esac
}

create() {
  local kind=$1 name=$2 body=$3
  write "$kind" "$name" 0,0 POST "$(path_of "$kind")" application/json "$body"
  [ $? = 1 ] && refused "$kind" "$name" "a create of a new name" 409
}

# update KIND NAME: a read, the chaos-v label raised, a PUT of the whole object (again on a
# conflict with a controller's write).
update() {
  local kind=$1 name=$2 tries v a body seen
  for tries in 1 2 3 4 5 6 7 8; do
    live "$kind" "$name" || return
    stopping && return
    api GET "$(path_of "$kind" "$name")"
    case $CODE in
      200) ;;
      404) refused "$kind" "$name" "a read" 404 && return ;;
      *) sleep 0.2 && continue ;;
    esac
    seen=$(state_of_body)
    if [ "$seen" != "${STATE[$kind/$name]}" ]; then
      log "BAD $kind $name: read $seen while its last known state is ${STATE[$kind/$name]}"
      STATE[$kind/$name]=$seen
      return
    fi
    IFS=, read -r v a <<<"$seen"
    v=$((v + 1))
    body=$(jq -c --arg v "$v" '.metadata.labels["chaos-v"] = $v' "$BODY")
    write "$kind" "$name" "$v,$a" PUT "$(path_of "$kind" "$name")" application/json "$body"
    [ $? != 1 ] && return
    [ "$CODE" = 409 ] && grep -q '"reason":"Conflict"' "$BODY" && continue
    refused "$kind" "$name" "an update" 404
    return
  done
}

# patch KIND NAME: a merge patch that raises the chaos-a annotation.
patch() {
  local kind=$1 name=$2 v a
  live "$kind" "$name" || return
  IFS=, read -r v a <<<"${STATE[$kind/$name]}"
  a=$((a + 1))
  write "$kind" "$name" "$v,$a" PATCH "$(path_of "$kind" "$name")" application/merge-patch+json \
    '{"metadata":{"annotations":{"chaos-a":"'"$a"'"}}}'
  [ $? = 1 ] && refused "$kind" "$name" "a merge patch" 404
}

delete() {
  local kind=$1 name=$2
  live "$kind" "$name" || return
  write "$kind" "$name" gone DELETE "$(path_of "$kind" "$name")"
  [ $? = 1 ] && refused "$kind" "$name" "a delete" 404
}

pv_body() {
  echo '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"'"$1"'","labels":{"chaos-v":"0"},"annotations":{"chaos-a":"0"}},"spec":{"storageClassName":"chaos","capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"'"$WORK/volumes/$1"'","type":"DirectoryOrCreate"}}}'
}
pvc_body() {
  echo '{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"'"$1"'","labels":{"chaos-v":"0"},"annotations":{"chaos-a":"0"}},"spec":{"storageClassName":"chaos","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}'
}
# A pod with the claim and a tmpfs emptyDir (a mount on the node).
pod_body() {
  echo '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'"$1"'","labels":{"chaos-v":"0"},"annotations":{"chaos-a":"0"}},"spec":{"terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"busybox","command":["sleep","3600"],"volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"scratch","mountPath":"/scratch"}]}],"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"'"$2"'"}},{"name":"scratch","emptyDir":{"medium":"Memory"}}]}}'
}

# client C: cycles of a volume, a claim and a pod using it; a few updates and patches of its
# objects; then the previous cycle's objects deleted (pod, claim, volume) or, now and then,
# kept to the end.
client() {
  local c=$1 n=0 prev="" kept=() objs i o
  declare -gA STATE=()
  LOG=$WORK/ops/c$c
  BODY=$WORK/ops/body-c$c
  : >"$LOG"
  while ! stopping; do
    n=$((n + 1))
    local set="c$c-$n"
    create pv "pv-$set" "$(pv_body "pv-$set")"
    create pvc "claim-$set" "$(pvc_body "claim-$set")"
    live pvc "claim-$set" && create pod "pod-$set" "$(pod_body "pod-$set" "claim-$set")"
    objs=()
    for o in $set $prev "${kept[@]}"; do objs+=("pv pv-$o" "pvc claim-$o" "pod pod-$o"); done
    for i in 1 2 3 4; do
      stopping && break
      o=${objs[RANDOM % ${#objs[@]}]}
      if [ $((RANDOM % 2)) = 0 ]; then update $o; else patch $o; fi
    done
    if [ -n "$prev" ] && ! stopping; then
      if [ ${#kept[@]} -lt 2 ] && [ $((RANDOM % 4)) = 0 ]; then
        kept+=("$prev")
      else
        delete pod "pod-$prev"
        delete pvc "claim-$prev"
        delete pv "pv-$prev"
      fi
    fi
    prev=$set
  done
}

# Two claims never name one volume, at any moment: sampled through the kills.
sampler() {
  local BODY=$WORK/ops/body-sampler
  while ! stopping; do
    api GET "$(path_of pvc)"
    if [ "$CODE" = 200 ]; then
      echo >>"$WORK/samples"
      jq -r '[.items[] | select(.spec.volumeName) | {v: .spec.volumeName, c: .metadata.name}]
        | group_by(.v) | map(select(length > 1)) | .[]
        | "\(.[0].v) is named by the claims \(map(.c) | join(" "))"' "$BODY" >>"$WORK/double"
    fi
    sleep 0.5
  done
}

for c in $(seq 1 "$CLIENTS"); do
  client "$c" &
  track $!
  CLIENT_PIDS+=("$!")
done
sampler &
track $!
SAMPLER_PID=$!

# ---- the kills ---------------------------------------------------------------------------------
acked() { cat "$WORK"/ops/c* 2>/dev/null | grep -c '^ACK'; }
for k in $(seq 1 "$KILLS"); do
  until_true 60 leads || fail "kill $k: the server led its controllers within 60 s"
  sleep "$((3 + RANDOM % 7)).$((RANDOM % 10))"
  before=$(acked)
  kill -9 "$KVOL_PID"
  wait "$KVOL_PID" 2>/dev/null
  start=$SECONDS
  start_server
  echo "kill $k: $before writes acknowledged before it; the server answered again after $((SECONDS - start)) s"
done
# The last server's controllers at work for a while under the load, then the clients stop.
until_true 60 leads || fail "the last server led its controllers within 60 s"
sleep 5
touch "$WORK/stop"
for pid in "${CLIENT_PIDS[@]}" "$SAMPLER_PID"; do wait "$pid"; done

# ---- what was acknowledged is there ------------------------------------------------------------
cat "$WORK"/ops/c* >"$WORK/ops.all"
acks=$(grep -c '^ACK' "$WORK/ops.all")
unanswered=$(grep -c '^AMB' "$WORK/ops.all")
methods=$(awk '$1 == "ACK" { n[$5]++ }
  END { printf "%d POST, %d PUT, %d PATCH, %d DELETE", n["POST"], n["PUT"], n["PATCH"], n["DELETE"] }' "$WORK/ops.all")
echo "$acks acknowledged writes ($methods), $unanswered writes whose answer was lost (read back after)"
[ "$acks" -ge 200 ] || fail "too few writes were acknowledged ($acks): the load did not run"
[ "$unanswered" -ge 1 ] || echo "note: no kill landed under a write"
expect_eq "no answer that only a lost write explains" "" "$(grep '^BAD' "$WORK/ops.all" | head -20)"
expect_eq "no valid write was refused" "" "$(grep '^ODD' "$WORK/ops.all" | head -20)"

# The last acknowledged (or read back) state of each object, and what the server has.
awk '$1 == "ACK" || $1 == "SEEN" { last[$2 " " $3] = $4 } END { for (o in last) print o, last[o] }' \
  "$WORK/ops.all" | sort >"$WORK/expected"
for kind in pv pvc pod; do
  kubectl get "$kind" -o json | jq -r --arg k "$kind" '.items[] | "\($k) \(.metadata.name) \(
    if .metadata.deletionTimestamp then "gone" else
    "\(.metadata.labels["chaos-v"] // "-"),\(.metadata.annotations["chaos-a"] // "-")" end)"'
done | sort >"$WORK/actual"
[ -s "$WORK/actual" ] || fail "the objects could not be listed"
lost=$(awk 'NR == FNR { have[$1 " " $2] = $3; next }
  { got = ($1 " " $2) in have ? have[$1 " " $2] : "gone"
    if (got != $3) print $1, $2, "want", $3, "got", got }' "$WORK/actual" "$WORK/expected")
objects=$(wc -l <"$WORK/expected")
live_objects=$(grep -vc ' gone$' "$WORK/expected")
echo "checked $objects objects against their last acknowledged write: $live_objects live, $((objects - live_objects)) deleted"
expect_eq "every acknowledged write survived the kills" "" "$(head -20 <<<"$lost")"
[ "$live_objects" -ge 10 ] || fail "too few objects were left live to check ($live_objects)"

# ---- no claim bound twice ----------------------------------------------------------------------
samples=$(wc -l <"$WORK/samples")
[ "$samples" -ge 20 ] || fail "the claims were listed only $samples times through the kills"
expect_eq "no two claims named one volume in $samples lists through the kills" "" "$(sort -u "$WORK/double" | head -10)"
# Once the controllers have caught up: no volume is named by two claims, a Bound claim's volume
# points back at it, a volume points only at a claim that names it; and a volume whose claim
# is gone is not left Bound (it is Released, and can then be deleted). The last deletions are
# still finishing (a claim goes once its pod is gone, then its volume is released), so each
# look judges one list of both kinds, and the verdict is that of the first look that found
# nothing wrong, or of the last one.
binding_errors() {
  local json
  json=$(kubectl get pv,pvc -o json 2>&1) || { echo "cannot list volumes and claims: ${json:0:200}"; return; }
  jq -r '
    [.items[] | select(.kind == "PersistentVolume")] as $pvs
    | [.items[] | select(.kind == "PersistentVolumeClaim")] as $pvcs
    | ($pvs | map({key: .metadata.name, value: .}) | from_entries) as $pv
    | ($pvcs | map({key: .metadata.uid, value: .}) | from_entries) as $pvc
    | ($pvcs | map(select(.spec.volumeName)) | group_by(.spec.volumeName) | map(select(length > 1))
        | .[] | "volume \(.[0].spec.volumeName) is named by the claims \(map(.metadata.name) | join(" "))"),
      ($pvcs[] | select(.status.phase == "Bound")
        | select(($pv[.spec.volumeName].spec.claimRef.uid // "") != .metadata.uid)
        | "claim \(.metadata.name) is Bound to \(.spec.volumeName), which points at \($pv[.spec.volumeName].spec.claimRef.name // "nothing")"),
      ($pvs[] | select(.spec.claimRef.uid) | . as $v | $pvc[$v.spec.claimRef.uid] as $c
        | select($c != null and ($c.spec.volumeName // "") != $v.metadata.name)
        | "volume \($v.metadata.name) points at claim \($c.metadata.name), which names \($c.spec.volumeName // "no volume")"),
      ($pvs[] | select(.status.phase == "Bound") | select($pvc[.spec.claimRef.uid // ""] == null)
        | "released \(.metadata.name) \(.spec.claimRef.name // "-")")' <<<"$json" ||
    echo "cannot read the list of volumes and claims"
}
settled() {
  binding_errors >"$WORK/binding"
  [ ! -s "$WORK/binding" ]
}
until_true 60 settled || true
expect_eq "volumes and claims are bound one to one" "" "$(grep -v '^released ' "$WORK/binding" | head -10)"
stale=$(sed -n 's/^released //p' "$WORK/binding")
if [ -n "$stale" ]; then
  fail "volumes still Bound to claims that are gone: $(awk '{ printf "%s (claim %s) ", $1, $2 }' <<<"$stale")"
  # When each of those was created, deleted and bound, beside when the controllers started.
  while read -r volume claim; do
    grep -h -e " $volume " -e " $claim " "$WORK"/ops/c* | sed 's/^/  /'
    kubectl get pv "$volume" -o jsonpath='  {.metadata.name} Bound at {.status.lastPhaseTransitionTime}{"\n"}' 2>&1
  done <<<"$(head -5 <<<"$stale")"
  grep -h "now leads" "$WORK"/server.*.log | sed 's/^/  /'
fi
bound=$(kubectl get pvc -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Bound$')
echo "$bound claims are bound, $(container_procs) containers run"
[ "$bound" -ge 1 ] || fail "no claim is bound: binding was not exercised"

# ---- nothing is left ---------------------------------------------------------------------------
none_of() { [ -z "$(kubectl get "$1" -o name 2>&1)" ]; }
kubectl delete pods --all --wait=false >/dev/null
until_true 120 none_of pods || fail "pods left after their deletion: $(kubectl get pods --no-headers 2>&1 | head -5)"
kubectl delete pvc --all --wait=false >/dev/null
until_true 60 none_of pvc || fail "claims left after their deletion: $(kubectl get pvc --no-headers 2>&1 | head -5)"
kubectl delete pv --all --wait=false >/dev/null
until_true 60 none_of pv || fail "volumes left after their deletion: $(kubectl get pv --no-headers 2>&1 | head -5)"
mounts_left() { awk -v d="$WORK/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo; }
cleaned() { [ "$(container_procs)" = 0 ] && [ -z "$(mounts_left)" ]; }
until_true 30 cleaned || true
kill -TERM "$KVOL_PID"
# Ended: gone, or a zombie until it is waited for.
ended() { [ ! -e "/proc/$KVOL_PID" ] || [ "$(awk '{ print $3 }' "/proc/$KVOL_PID/stat")" = Z ]; }
until_true 30 ended || fail "the server stopped within 30 s of SIGTERM"
kill -9 "$KVOL_PID" 2>/dev/null
wait "$KVOL_PID" 2>/dev/null
expect_eq "no container process is left" "0" "$(container_procs)"
expect_eq "no mount is left" "" "$(mounts_left | head -5)"
expect_eq "no process of the test's directory is left" "" "$(pgrep -af "$WORK/" | head -5)"

echo "summary: $KILLS kills, $acks acknowledged writes checked over $objects objects," \
  "$unanswered unanswered writes read back, $samples lists of claims, $bound claims bound at the end"
finish
