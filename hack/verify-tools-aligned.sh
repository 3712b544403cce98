#!/usr/bin/env bash
# Checks that modules which are built on one machine resolve every module
# they share to the same version, so that they share their compiled packages
# in Go's build cache and a first build compiles k8s.io, gRPC and the rest
# once per group, not once per binary (docs/build.md). The cache reuses a
# package only if every package under it matches too, so one differing
# module at the bottom (protobuf, say) recompiles everything above it.
# The groups:
#   - muster-apiserver, the default control plane (hack/tools) and helm
#     (hack/tools/helm): k8s.io v0.37;
#   - kwok and jobset (hack/tools/kwok, hack/tools/jobset): k8s.io v0.36.
# To mend a difference: `go get <module>@<version>` in the module whose
# version is lower, then `go mod tidy` there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# versions <dir> <package...>: "<module> <version, after any replace>" of
# each module that provides a package those packages (and, with TEST=-test,
# their tests) build from: what the build cache could share, not every
# module of the build list.
versions() {
  local dir=$1
  shift
  (cd "${dir}" && go list -deps ${TEST:-} -f '{{with .Module}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}' "$@") | sort -u
}

failed=0
# aligned <name a> <versions a> <name b> <versions b>
aligned() {
  local differ shared
  differ="$(join <(echo "$2") <(echo "$4") | awk -v a="$1" -v b="$3" '$2 != $3 {printf "  %s: %s in %s, %s in %s\n", $1, $2, a, $3, b}')"
  shared="$(join <(echo "$2") <(echo "$4") | wc -l)"
  if [[ -n "${differ}" ]]; then
    echo "$1 and $3 resolve shared modules to different versions:" >&2
    echo "${differ}" >&2
    echo "so they compile them twice; align them (see this script's header)" >&2
    failed=1
    return
  fi
  echo "$1 and $3 agree on the ${shared} modules they share"
}

main_versions="$(TEST=-test versions "${ROOT}" ./...)"
aligned go.mod "${main_versions}" hack/tools/go.mod "$(TEST=-test versions "${ROOT}/hack/tools" ./kube)"
aligned go.mod "${main_versions}" hack/tools/helm/go.mod "$(versions "${ROOT}/hack/tools/helm" helm.sh/helm/v4/cmd/helm)"
aligned hack/tools/kwok/go.mod "$(versions "${ROOT}/hack/tools/kwok" sigs.k8s.io/kwok/cmd/kwok)" \
  hack/tools/jobset/go.mod "$(versions "${ROOT}/hack/tools/jobset" sigs.k8s.io/jobset)"
exit "${failed}"
