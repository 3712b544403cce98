#!/usr/bin/env bash
# Checks that the binary, the image and the chart carry one version, the
# one hack/version.sh prints (docs/image.md, "One version"):
#   - `muster-apiserver --version` of <binary>;
#   - the tag (org.opencontainers.image.ref.name) of the OCI layout <layout>,
#     which is also the tag the chart's image reference defaults to;
#   - the packaged chart <chart .tgz>: appVersion, and version without the
#     leading v (Helm wants a bare semantic version).
#
# Usage: hack/verify-version.sh <version> <binary> <layout dir> <chart .tgz> <helm>
set -euo pipefail

version=$1 binary=$2 layout=$3 chart=$4 helm=$5
fail=0
check() {
  local what=$1 got=$2 want=$3
  if [[ "${got}" != "${want}" ]]; then
    echo "${what}: ${got:-<none>}, want ${want}" >&2
    fail=1
  else
    echo "${what}: ${got}"
  fi
}

# "muster-apiserver v0.1.0-3-gabc1234 (commit ..., go..., linux/amd64)"
check "muster-apiserver --version" "$("${binary}" --version | awk '{print $2}')" "${version}"
check "image tag in ${layout}" \
  "$(sed -n 's/.*"org\.opencontainers\.image\.ref\.name": *"\([^"]*\)".*/\1/p' "${layout}/index.json")" "${version}"
chart_yaml="$("${helm}" show chart "${chart}")"
check "chart appVersion" "$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' <<<"${chart_yaml}")" "${version}"
check "chart version" "$(sed -n 's/^version: *//p' <<<"${chart_yaml}")" "${version#v}"
# The chart installs the image of its own appVersion unless told otherwise.
image="$("${helm}" template muster "${chart}" --namespace muster-system --show-only templates/deployment.yaml | sed -n 's/^ *image: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' | head -1)"
check "chart's default image" "${image##*:}" "${version}"
exit "${fail}"
