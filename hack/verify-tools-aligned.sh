#!/usr/bin/env bash
# Checks that the control plane's module (hack/tools, the default release)
# resolves every module it shares with muster-apiserver to the same version.
# Then the two share their compiled packages in Go's build cache, and a first
# build compiles k8s.io, gRPC and the rest once, not once per binary
# (docs/build.md). To mend a difference: `go get <module>@<version>` in the
# module whose version is lower, then `go mod tidy` there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# versions <dir> <package...>: "<module> <version, after any replace>" of
# each module that provides a package those packages build from: what the
# build cache could share, not every module of the build list.
versions() {
  local dir=$1
  shift
  (cd "${dir}" && go list -deps -test -f '{{with .Module}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}' "$@") | sort -u
}

main_versions="$(versions "${ROOT}" ./...)"
tools_versions="$(versions "${ROOT}/hack/tools" ./kube)"
differ="$(join <(echo "${main_versions}") <(echo "${tools_versions}") | awk '$2 != $3 {printf "  %s: %s in go.mod, %s in hack/tools/go.mod\n", $1, $2, $3}')"
if [[ -n "${differ}" ]]; then
  echo "hack/tools/go.mod and go.mod resolve shared modules to different versions:" >&2
  echo "${differ}" >&2
  echo "so the control plane and muster-apiserver compile them twice; align them (see this script's header)" >&2
  exit 1
fi
echo "hack/tools and the main module agree on the $(join <(echo "${main_versions}") <(echo "${tools_versions}") | wc -l) modules they share"
