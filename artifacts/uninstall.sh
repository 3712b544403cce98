#!/usr/bin/env bash
# Uninstalls Muster from the cluster of kubectl's current context and leaves
# no pod held by it: no pod keeps the scheduling gate
# scheduling.muster.dev/admission or the finalizer scheduling.muster.dev/tracking.
#
#   artifacts/uninstall.sh            (KUBECTL=... to use another kubectl)
#
# The order matters:
#  1. The pod webhooks and Muster's admission policies go first, so that no
#     new pod is gated while the rest happens.
#  2. The APIService goes, so that API discovery (and with it namespace
#     deletion and the garbage collector) never waits on an API that is
#     about to disappear; then the Deployment, and the script waits until
#     no replica runs, since a running controller would put its finalizer
#     back on the pods that step 3 releases.
#  3. Every pod that still carries the gate or the finalizer loses both, in
#     one patch each. A gated pod is then scheduled like any other pod, with
#     no gang guarantee: delete the pods of gangs you do not want to run
#     before running this script. The capacity-request pods Muster created
#     for autoscalers (label scheduling.muster.dev/capacity-request) are
#     deleted: their owner, a PodGroup, is about to go with the API that
#     serves it, so the garbage collector would never remove them.
#  4. Everything else in the install (RBAC, the PriorityClass of
#     capacity-request pods, the namespace with its etcd and every PodGroup
#     and Workload stored there) is deleted.
set -euo pipefail

KUBECTL="${KUBECTL:-kubectl}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAMESPACE=muster-system
GATE=scheduling.muster.dev/admission
FINALIZER=scheduling.muster.dev/tracking
LABEL=scheduling.muster.dev/pod-group
CAPACITY_REQUEST=scheduling.muster.dev/capacity-request

served() {
  "${KUBECTL}" api-resources -o name | grep -qx "$1"
}

echo "1. removing the pod webhooks and Muster's admission policies"
"${KUBECTL}" delete mutatingwebhookconfiguration,validatingwebhookconfiguration muster-pod-webhook --ignore-not-found
for kind in validatingadmissionpolicybindings validatingadmissionpolicies mutatingadmissionpolicybindings mutatingadmissionpolicies; do
  if served "${kind}.admissionregistration.k8s.io"; then
    "${KUBECTL}" get "${kind}.admissionregistration.k8s.io" -o name | { grep '/muster-' || true; } |
      xargs -r "${KUBECTL}" delete --ignore-not-found
  fi
done

echo "2. removing the APIService and stopping muster-apiserver"
"${KUBECTL}" delete apiservice v1alpha1.scheduling.muster.dev --ignore-not-found
"${KUBECTL}" -n "${NAMESPACE}" delete deployment muster-apiserver --ignore-not-found
for _ in $(seq 120); do
  running="$("${KUBECTL}" -n "${NAMESPACE}" get pods -l app.kubernetes.io/name=muster-apiserver -o name 2>/dev/null || true)"
  [[ -z "${running}" ]] && break
  sleep 1
done
if [[ -n "${running:-}" ]]; then
  echo "muster-apiserver pods still run after 2 minutes: ${running}" >&2
  exit 1
fi

echo "3. releasing every pod Muster still holds"
# A strategic merge patch removes exactly Muster's gate and finalizer, and
# leaves other tools' gates and finalizers where they are.
patch="{\"metadata\":{\"\$deleteFromPrimitiveList/finalizers\":[\"${FINALIZER}\"]},\"spec\":{\"schedulingGates\":[{\"\$patch\":\"delete\",\"name\":\"${GATE}\"}]}}"
held='{{range .items}}{{$held := false}}{{range .metadata.finalizers}}{{if eq . "'"${FINALIZER}"'"}}{{$held = true}}{{end}}{{end}}{{range .spec.schedulingGates}}{{if eq .name "'"${GATE}"'"}}{{$held = true}}{{end}}{{end}}{{if $held}}{{.metadata.namespace}} {{.metadata.name}}{{"\n"}}{{end}}{{end}}'
released=0
while read -r ns name; do
  [[ -z "${name}" ]] && continue
  if "${KUBECTL}" -n "${ns}" patch pod "${name}" --type=strategic -p "${patch}" >/dev/null; then
    released=$((released + 1))
  elif "${KUBECTL}" -n "${ns}" get pod "${name}" >/dev/null 2>&1; then
    echo "could not release pod ${ns}/${name}" >&2
    exit 1
  fi # else the pod is gone already.
done < <("${KUBECTL}" get pods -A -l "${LABEL}" -o go-template="${held}")
echo "   released ${released} pods"
"${KUBECTL}" delete pods -A -l "${CAPACITY_REQUEST}" --ignore-not-found --wait=false

echo "4. deleting the rest of the install"
"${KUBECTL}" delete -k "${HERE}" --ignore-not-found --wait=false
echo "Muster is uninstalled."
