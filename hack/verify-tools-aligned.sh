#!/usr/bin/env bash
# Checks that the control plane's module (hack/tools, the default release)
# resolves every module it shares with muster-apiserver to the same version.
# Then the two share their compiled packages in Go's build cache, and a first
# build compiles k8s.io, gRPC and the rest once, not once per binary
# (docs/build.md). To mend a difference: `go get <module>@<version>` in the
# module whose version is lower, then `go mod tidy` there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# versions <dir>: "<module> <version, after any replace>" for each module of
# the build list of the module in <dir>.
versions() {
  (cd "$1" && go list -m -f '{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' all) | sort
}

main_versions="$(versions "${ROOT}")"
tools_versions="$(versions "${ROOT}/hack/tools")"
differ="$(join <(echo "${main_versions}") <(echo "${tools_versions}") | awk '$2 != $3 {printf "  %s: %s in go.mod, %s in hack/tools/go.mod\n", $1, $2, $3}')"
if [[ -n "${differ}" ]]; then
  echo "hack/tools/go.mod and go.mod resolve shared modules to different versions:" >&2
  echo "${differ}" >&2
  echo "so the control plane and muster-apiserver compile them twice; align them (see this script's header)" >&2
  exit 1
fi
echo "hack/tools and the main module agree on the $(join <(echo "${main_versions}") <(echo "${tools_versions}") | wc -l) modules they share"
