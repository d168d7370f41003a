#!/usr/bin/env bash
# Service account tokens in a real kvol server with its node agent, driven with the real
# kubectl: `kubectl create token` gives a token the API server accepts as the service account
# (`kubectl auth whoami`), for discovery only; one for another audience is refused, and a
# TokenReview says why. Tokens stop working when their pod or service account goes, and once
# expired. A pod's projected serviceAccountToken file is filled and replaced before it expires.
# Every pod gets its account's token, the server's CA and its namespace in a kube-api-access-*
# volume unless it or its account opts out, and every namespace the ConfigMap kube-root-ca.crt.
# The server caps tokens at 20 s and the agent sets volumes up again every 2 s, so that
# rotation and expiry happen within the test.
# Usage: token_test.sh KVOL_BINARY TESTS_DIR
KVOL_BIN=$(realpath "$1")
TESTS=$(realpath "$2")
source "$TESTS/integration/lib.sh"

kvol_start server --service-account-max-token-expiration 20s --sync-frequency 2s
until_true 20 kubectl get serviceaccount default || fail "the default ServiceAccount appears"

as() { local token=$1; shift; kubectl --token "$token" "$@" 2>&1 | tr -s ' '; }
# review TOKEN [AUDIENCE]: the TokenReview of TOKEN, made by the admin.
review() {
  local auds=""
  [ -n "${2:-}" ] && auds=",\"audiences\":[\"$2\"]"
  kcurl -X POST -H 'Content-Type: application/json' "$KVOL_URL/apis/authentication.k8s.io/v1/tokenreviews" \
    -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{\"token\":\"$1\"$auds}}"
}
claims() { cut -d. -f2 <<<"$1" | tr '_-' '/+' | awk '{ while (length($0) % 4) $0 = $0 "="; print }' | base64 -d; }

# Pods find the API through the kubernetes Service, which points at the server's port.
expect_eq "the kubernetes Service" "443 ${KVOL_URL##*:}" \
  "$(kubectl get svc kubernetes -o jsonpath='{.spec.ports[0].port} {.spec.ports[0].targetPort}')"

# ---- kubectl create token ----------------------------------------------------------------------
TOKEN=$(kubectl create token default --duration 10m)
ISSUED=$SECONDS
[ -n "$TOKEN" ] || fail "kubectl create token prints a token"
expect_contains "whoami as the service account" "Username system:serviceaccount:default:default" \
  "$(as "$TOKEN" auth whoami)"
expect_contains "the service account's groups" \
  "Groups [system:serviceaccounts system:serviceaccounts:default system:authenticated]" \
  "$(as "$TOKEN" auth whoami)"
expect_contains "the admin is the admin" "Username kvol-admin" "$(k auth whoami)"
expect_contains "discovery is open to the service account" '"versions"' "$(as "$TOKEN" get --raw /api)"
expect_contains "the rest is forbidden to it" \
  'pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group "" in the namespace "default"' \
  "$(as "$TOKEN" get pods)"
expect_contains "the token names its audience and account" '"aud":["https://kubernetes.default.svc.cluster.local"]' \
  "$(claims "$TOKEN")"
expect_contains "a TokenReview accepts it" '"authenticated":true' "$(review "$TOKEN")"
expect_contains "too short a duration is refused" "may not specify a duration less than 10 minutes" \
  "$(k create token default --duration 5m)"
expect_contains "no such account" 'serviceaccounts "nobody" not found' "$(k create token nobody)"

VAULT=$(kubectl create token default --audience vault)
expect_contains "a token for another audience is refused" "Unauthorized" "$(as "$VAULT" auth whoami)"
expect_contains "the review says why" 'is invalid for the target audiences' "$(review "$VAULT")"
expect_contains "reviewed for its audience it passes" '"audiences":["vault"]' "$(review "$VAULT" vault)"
FORGED="$(cut -d. -f1 <<<"$TOKEN").$(printf '{"sub":"x"}' | base64 | tr '+/' '-_' | tr -d '=').$(cut -d. -f3 <<<"$TOKEN")"
expect_contains "a forged token is refused" "Unauthorized" "$(as "$FORGED" auth whoami)"
expect_contains "for its signature" "the JWT's signature does not verify" "$(review "$FORGED")"

# ---- bound to a pod, and to an account ---------------------------------------------------------
kubectl create serviceaccount robot >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: holder}
spec:
  serviceAccountName: robot
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
YAML
BOUND=$(kubectl create token robot --bound-object-kind Pod --bound-object-name holder)
ROBOT=$(kubectl create token robot)
expect_contains "a pod-bound token works" "system:serviceaccount:default:robot" "$(as "$BOUND" auth whoami)"
expect_contains "it names the pod" "authentication.kubernetes.io/pod-name [holder]" "$(as "$BOUND" auth whoami)"
expect_contains "a token for another account's pod is refused" \
  'cannot bind token for serviceaccount "default" to pod running with serviceaccount "robot"' \
  "$(k create token default --bound-object-kind Pod --bound-object-name holder)"
kubectl delete pod holder --wait=true --timeout=30s >/dev/null
expect_contains "the pod's token stops with the pod" "Unauthorized" "$(as "$BOUND" auth whoami)"
expect_contains "the account's token still works" "system:serviceaccount:default:robot" "$(as "$ROBOT" auth whoami)"
kubectl delete serviceaccount robot >/dev/null
expect_contains "the account's token stops with the account" "Unauthorized" "$(as "$ROBOT" auth whoami)"

# ---- a projected token, rotated ----------------------------------------------------------------
# The pod names no account: it runs as default, as the ServiceAccount admission plugin says.
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: busybox
    command: [sleep, "3600"]
    volumeMounts: [{name: tokens, mountPath: /var/run/secrets/tokens}]
  volumes:
  - name: tokens
    projected:
      sources:
      - serviceAccountToken: {path: vault-token, audience: vault, expirationSeconds: 600}
      - serviceAccountToken: {path: api-token}
YAML
until_true 30 phase_is reader Running || fail "the pod with projected tokens runs: $(k describe pod reader | tail -5)"
expect_eq "a pod runs as default unless told" "default" \
  "$(kubectl get pod reader -o jsonpath='{.spec.serviceAccountName}')"
read_token() { kubectl exec reader -- cat "/var/run/secrets/tokens/$1" 2>/dev/null; }
FIRST=$(read_token vault-token)
expect_contains "the projected token is for its audience" '"aud":["vault"]' "$(claims "$FIRST")"
expect_contains "and bound to the pod" '"pod":{"name":"reader"' "$(claims "$FIRST")"
expect_contains "the review accepts it for vault" '"authenticated":true' "$(review "$FIRST" vault)"
expect_contains "the API token works from the pod" "system:serviceaccount:default:default" \
  "$(as "$(read_token api-token)" auth whoami)"
rotated() { local now; now=$(read_token vault-token); [ -n "$now" ] && [ "$now" != "$FIRST" ]; }
until_true 40 rotated || fail "the projected token is replaced before it expires (20 s)"
expect_contains "the new one works" '"authenticated":true' "$(review "$(read_token vault-token)" vault)"
kubectl delete pod reader --wait=true --timeout=30s >/dev/null
expect_contains "the projected token stops with its pod" "service account token has been invalidated" \
  "$(review "$FIRST" vault)"

# ---- kube-api-access: the token, the CA and the namespace in every pod --------------------------
# The ServiceAccount admission mounts them at /var/run/secrets/kubernetes.io/serviceaccount in
# every container, unless the pod or its account opts out; the root CA publisher keeps the
# ConfigMap kube-root-ca.crt they come from in every namespace.
SA_DIR=/var/run/secrets/kubernetes.io/serviceaccount
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
YAML
volume=$(kubectl get pod client -o jsonpath='{.spec.volumes[0].name}')
[[ "$volume" =~ ^kube-api-access-[a-z0-9]{5}$ ]] || fail "the pod has a kube-api-access-XXXXX volume: '$volume'"
expect_eq "its sources" "token 3607 kube-root-ca.crt ca.crt metadata.namespace 420"   "$(kubectl get pod client -o jsonpath='{.spec.volumes[0].projected.sources[0].serviceAccountToken.path} {.spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds} {.spec.volumes[0].projected.sources[1].configMap.name} {.spec.volumes[0].projected.sources[1].configMap.items[0].path} {.spec.volumes[0].projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath} {.spec.volumes[0].projected.defaultMode}')"
expect_eq "the container mounts it read-only" "$volume $SA_DIR true"   "$(kubectl get pod client -o jsonpath='{.spec.containers[0].volumeMounts[0].name} {.spec.containers[0].volumeMounts[0].mountPath} {.spec.containers[0].volumeMounts[0].readOnly}')"
until_true 30 phase_is client Running || fail "the pod with the token runs: $(k describe pod client | tail -5)"
expect_eq "the namespace file" "default" "$(kubectl exec client -- cat $SA_DIR/namespace)"
expect_eq "ca.crt is the server's CA" "$(cat "$KVOL_DIR/pki/ca.crt")" "$(kubectl exec client -- cat $SA_DIR/ca.crt)"
POD_TOKEN=$(kubectl exec client -- cat $SA_DIR/token)
expect_contains "the token is the pod's account's" "system:serviceaccount:default:default"   "$(as "$POD_TOKEN" auth whoami)"
expect_contains "bound to the pod" "authentication.kubernetes.io/pod-name [client]" "$(as "$POD_TOKEN" auth whoami)"
expect_contains "and verified by ca.crt" '"versions"'   "$(curl -sS --cacert <(kubectl exec client -- cat $SA_DIR/ca.crt) -H "Authorization: Bearer $POD_TOKEN" "$KVOL_URL/api")"
expect_contains "the container cannot write there" "Read-only file system"   "$(kubectl exec client -- sh -c "echo x >$SA_DIR/token" 2>&1)"

kubectl create serviceaccount quiet >/dev/null
kubectl patch serviceaccount quiet --type merge -p '{"automountServiceAccountToken":false}' >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: quiet}
spec:
  serviceAccountName: quiet
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: loud}
spec:
  serviceAccountName: quiet
  automountServiceAccountToken: true
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: opted-out}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
YAML
expect_eq "an account that opts out: no volume" "" "$(kubectl get pod quiet -o jsonpath='{.spec.volumes}')"
expect_eq "a pod that opts out: no volume" "" "$(kubectl get pod opted-out -o jsonpath='{.spec.volumes}')"
expect_contains "a pod opts in over its account" "kube-api-access-"   "$(kubectl get pod loud -o jsonpath='{.spec.volumes[0].name}')"
expect_contains "a pod of a missing account is refused"   'pods "stray" is forbidden: error looking up service account default/nobody: serviceaccount "nobody" not found'   "$(k run stray --image busybox --restart Never --overrides '{"spec":{"serviceAccountName":"nobody"}}')"
kubectl delete pod client quiet loud opted-out --wait=false >/dev/null

root_ca() { kubectl get configmap kube-root-ca.crt -n "$1" -o jsonpath='{.data.ca\.crt}' 2>&1; }
kubectl create namespace fresh >/dev/null
published() { [ "$(root_ca fresh)" = "$(cat "$KVOL_DIR/pki/ca.crt")" ]; }
until_true 20 published || fail "a new namespace gets kube-root-ca.crt: $(root_ca fresh)"
kubectl delete configmap kube-root-ca.crt -n fresh >/dev/null
until_true 20 published || fail "a deleted kube-root-ca.crt comes back: $(root_ca fresh)"
kubectl patch configmap kube-root-ca.crt -n fresh --type merge -p '{"data":{"ca.crt":"edited"}}' >/dev/null
until_true 20 published || fail "an edited kube-root-ca.crt is put back: $(root_ca fresh)"
expect_contains "it says what it is" "CA bundle"   "$(kubectl get configmap kube-root-ca.crt -n fresh -o jsonpath='{.metadata.annotations.kubernetes\.io/description}')"

# ---- expiry ------------------------------------------------------------------------------------
# Asked for 10 minutes, capped at 20 s, accepted a minute longer for clocks a little apart.
expired() { [[ "$(as "$TOKEN" auth whoami)" == *Unauthorized* ]]; }
sleep $((ISSUED + 20 + 60 - SECONDS > 0 ? ISSUED + 20 + 60 - SECONDS : 0))
until_true 10 expired || fail "the token stops working once expired"
expect_contains "the review says it expired" "service account token has expired" "$(review "$TOKEN")"

finish
