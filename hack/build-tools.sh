#!/usr/bin/env bash
# Builds the binaries that the local cluster harness (test/cluster) runs:
# kube-apiserver, kube-scheduler, kubectl, etcd and kwok, into bin/.
#
# Each tool's version is pinned once, in the go.mod of its module under
# hack/tools/. A binary is rebuilt only when that pin (or anything else in its
# module's go.mod/go.sum) changed since the last build, which a stamp file
# bin/.<tool>.version records.
#
# Usage: hack/build-tools.sh [tool...]   (default: all tools)
# Environment: BIN_DIR (default <repo>/bin), FORCE=1 to rebuild regardless.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${ROOT}/hack/tools"
BIN_DIR="${BIN_DIR:-${ROOT}/bin}"
ALL_TOOLS=(etcd kwok kube-apiserver kube-scheduler kubectl)

# module_field prints a template field (.Version, .Time...) of a module
# required by the tools module in directory $1.
module_field() {
  local dir=$1 module=$2 field=$3
  (cd "${dir}" && go list -m -f "{{${field}}}" "${module}")
}

# fingerprint identifies everything that decides what a module builds.
fingerprint() {
  local dir=$1
  cat "${dir}/go.mod" "${dir}/go.sum" | sha256sum | cut -c1-16
}

# kube_ldflags stamps the release version into the binary so that
# `--version` and kubectl's version-skew checks report the real release.
kube_ldflags() {
  local version=$1 date=$2 flags=() key val
  local major minor
  major="$(echo "${version#v}" | cut -d. -f1)"
  minor="$(echo "${version#v}" | cut -d. -f2)"
  for pair in "gitVersion=${version}" "gitMajor=${major}" "gitMinor=${minor}" \
    "gitTreeState=clean" "buildDate=${date}"; do
    key=${pair%%=*}
    val=${pair#*=}
    flags+=("-X k8s.io/component-base/version.${key}=${val}")
    flags+=("-X k8s.io/client-go/pkg/version.${key}=${val}")
  done
  echo "-s -w ${flags[*]}"
}

# build_tool <name> <module dir> <package> <version> <ldflags>
build_tool() {
  local name=$1 dir=$2 pkg=$3 version=$4 ldflags=$5
  local out="${BIN_DIR}/${name}" stamp="${BIN_DIR}/.${name}.version"
  local want
  want="${version} $(fingerprint "${dir}")"
  if [[ -z "${FORCE:-}" && -x "${out}" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
    echo "${name} ${version} is up to date"
    return
  fi
  echo "building ${name} ${version} (cold build takes several minutes)..."
  local start=${SECONDS}
  (cd "${dir}" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${out}.tmp" "${pkg}")
  mv -f "${out}.tmp" "${out}"
  echo "${want}" >"${stamp}"
  echo "built ${out} in $((SECONDS - start))s"
}

build() {
  local tool=$1 version date
  case "${tool}" in
  kube-apiserver | kube-scheduler | kubectl)
    version="$(module_field "${TOOLS_DIR}" k8s.io/kubernetes .Version)"
    date="$(module_field "${TOOLS_DIR}" k8s.io/kubernetes '.Time.UTC.Format "2006-01-02T15:04:05Z"')"
    build_tool "${tool}" "${TOOLS_DIR}" "k8s.io/kubernetes/cmd/${tool}" "${version}" \
      "$(kube_ldflags "${version}" "${date}")"
    ;;
  etcd)
    version="$(module_field "${TOOLS_DIR}/etcd" go.etcd.io/etcd/server/v3 .Version)"
    build_tool etcd "${TOOLS_DIR}/etcd" go.etcd.io/etcd/server/v3 "${version}" "-s -w"
    ;;
  kwok)
    version="$(module_field "${TOOLS_DIR}/kwok" sigs.k8s.io/kwok .Version)"
    build_tool kwok "${TOOLS_DIR}/kwok" sigs.k8s.io/kwok/cmd/kwok "${version}" \
      "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${version#v}"
    ;;
  *)
    echo "unknown tool ${tool}; known: ${ALL_TOOLS[*]}" >&2
    return 1
    ;;
  esac
}

main() {
  mkdir -p "${BIN_DIR}"
  local tools=("$@")
  if [[ ${#tools[@]} -eq 0 ]]; then
    tools=("${ALL_TOOLS[@]}")
  fi
  # One at a time: each build already uses every core.
  for tool in "${tools[@]}"; do
    build "${tool}"
  done
}

main "$@"
