#!/usr/bin/env bash
# Builds the binaries that the local cluster harness (test/cluster) runs:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd,
# kwok, jobset (with JobSet's CRDs and RBAC beside it), karpenter
# (Karpenter's kwok cloud provider, with its CRDs beside it) and frameworks:
# the controllers of LeaderWorkerSet, KubeRay and Kubeflow Trainer (lws,
# kuberay, trainer, each with its CRDs and RBAC); and helm, which lints and
# renders charts/muster (make chart-lint, make manifests).
#
# Each tool's version is pinned once, in the go.mod of its module under
# hack/tools/. A binary is rebuilt only when that pin (or anything else in its
# module's go.mod/go.sum) changed since the last build, which a stamp file
# <bin dir>/.<tool>.version records. Builds run BUILD_JOBS (default 2) at a
# time, each tool's output printed whole when it ends.
#
# KUBE_VERSION picks the Kubernetes release of kube-apiserver, kube-scheduler
# and kubectl. The default, the newest supported, is pinned in
# hack/tools/go.mod and built into bin/. Any other supported release has a
# module of its own, hack/tools/kube-<version>/, and is built into
# bin/kube-<version>/, so each version is cached apart. etcd, kwok, jobset,
# karpenter and helm work with every supported release: they are built once into
# bin/, and each version's directory links to them (and to JobSet's and
# Karpenter's manifests), so that directory alone holds everything the
# harness runs.
#
# Usage: hack/build-tools.sh [tool...]   (default: all tools)
#        hack/build-tools.sh --print-bin-dir   (the directory for KUBE_VERSION)
#        hack/build-tools.sh --print-version   (KUBE_VERSION, or the default)
#        hack/build-tools.sh --list-versions   (the supported KUBE_VERSIONs)
# Environment: KUBE_VERSION (default: the newest), BIN_DIR (default
# <repo>/bin), FORCE=1 to rebuild regardless.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${ROOT}/hack/tools"
BIN_DIR="${BIN_DIR:-${ROOT}/bin}"
# Longest first, so the others build beside it.
ALL_TOOLS=(kube karpenter frameworks helm jobset kwok etcd)
# The control plane of a release is one binary, kube (hack/tools/kube), and
# each component a link to it; naming any component builds them all.
KUBE_COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
SHARED_TOOLS=(etcd kwok jobset karpenter helm lws kuberay trainer)
# JobSet's and Karpenter's manifests at the pinned versions, copied from
# their modules by `build jobset` and `build karpenter`, so that the harness
# needs no module cache at run time.
SHARED_FILES=(jobset-crds.yaml jobset-rbac.yaml karpenter-crds.yaml
  lws-crds.yaml lws-rbac.yaml lws-webhooks.yaml kuberay-crds.yaml kuberay-rbac.yaml
  trainer-crds.yaml trainer-rbac.yaml trainer-webhooks.yaml)

# module_field prints a template field (.Version, .Time...) of a module
# required by the tools module in directory $1.
module_field() {
  local dir=$1 module=$2 field=$3
  (cd "${dir}" && go list -m -f "{{${field}}}" "${module}")
}

# default_kube_version prints the release pinned in hack/tools/go.mod,
# without the leading v.
default_kube_version() {
  local v
  v="$(module_field "${TOOLS_DIR}" k8s.io/kubernetes .Version)"
  echo "${v#v}"
}

# kube_version prints the requested release: KUBE_VERSION, with or without
# a leading v, else the default.
kube_version() {
  local v="${KUBE_VERSION:-}"
  v="${v#v}"
  if [[ -z "${v}" ]]; then
    v="$(default_kube_version)"
  fi
  echo "${v}"
}

# supported_versions lists every release that has a tools module.
supported_versions() {
  local dir
  default_kube_version
  for dir in "${TOOLS_DIR}"/kube-*/; do
    [[ -f "${dir}go.mod" ]] && basename "${dir}" | sed 's/^kube-//'
  done
}

# kube_module_dir prints the tools module of release $1, or fails naming
# the supported ones.
kube_module_dir() {
  local version=$1
  if [[ "${version}" == "$(default_kube_version)" ]]; then
    echo "${TOOLS_DIR}"
    return
  fi
  local dir="${TOOLS_DIR}/kube-${version}"
  if [[ ! -f "${dir}/go.mod" ]]; then
    echo "KUBE_VERSION=${version} is not supported; supported: $(supported_versions | tr '\n' ' ')(see hack/tools/README.md to add one)" >&2
    return 1
  fi
  local pinned
  pinned="$(module_field "${dir}" k8s.io/kubernetes .Version)"
  if [[ "${pinned}" != "v${version}" ]]; then
    echo "${dir}/go.mod pins k8s.io/kubernetes ${pinned}, not v${version}" >&2
    return 1
  fi
  echo "${dir}"
}

# kube_bin_dir prints where release $1's binaries go: BIN_DIR for the
# default, BIN_DIR/kube-<version> for any other.
kube_bin_dir() {
  local version=$1
  if [[ "${version}" == "$(default_kube_version)" ]]; then
    echo "${BIN_DIR}"
  else
    echo "${BIN_DIR}/kube-${version}"
  fi
}

# fingerprint identifies everything that decides what a module builds: its
# go.mod and go.sum, and the sources of the multi-call kube binary where the
# module has them.
fingerprint() {
  local dir=$1
  cat "${dir}/go.mod" "${dir}/go.sum" $(compgen -G "${dir}/kube/*.go") | sha256sum | cut -c1-16
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

# build_tool <bin dir> <name> <module dir> <package> <version> <ldflags>
build_tool() {
  local bin=$1 name=$2 dir=$3 pkg=$4 version=$5 ldflags=$6
  local out="${bin}/${name}" stamp="${bin}/.${name}.version"
  local want
  want="${version} $(fingerprint "${dir}")"
  # One build of a binary at a time, should two runs of this script (make
  # -j e2e e2e-oldest) both find it missing: the second waits, then finds
  # it up to date.
  exec {lock}>"${out}.lock"
  flock "${lock}"
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

# build <tool> <kube module dir> <kube bin dir>
build() {
  local tool=$1 kube_dir=$2 kube_bin=$3 spec dir pkg version date
  spec="$(tool_package "${tool}" "${kube_dir}")" || return 1
  dir="${spec%% *}"
  pkg="${spec#* }"
  case "${tool}" in
  kube | kube-apiserver | kube-controller-manager | kube-scheduler | kubectl)
    version="$(module_field "${dir}" k8s.io/kubernetes .Version)"
    date="$(module_field "${dir}" k8s.io/kubernetes '.Time.UTC.Format "2006-01-02T15:04:05Z"')"
    build_tool "${kube_bin}" kube "${dir}" "${pkg}" "${version}" "$(kube_ldflags "${version}" "${date}")"
    local component
    for component in "${KUBE_COMPONENTS[@]}"; do
      ln -sfn kube "${kube_bin}/${component}"
    done
    ;;
  etcd)
    version="$(module_field "${dir}" go.etcd.io/etcd/server/v3 .Version)"
    build_tool "${BIN_DIR}" etcd "${dir}" "${pkg}" "${version}" "-s -w"
    ;;
  kwok)
    version="$(module_field "${dir}" sigs.k8s.io/kwok .Version)"
    build_tool "${BIN_DIR}" kwok "${dir}" "${pkg}" "${version}" \
      "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${version#v}"
    ;;
  jobset)
    version="$(module_field "${dir}" sigs.k8s.io/jobset .Version)"
    build_tool "${BIN_DIR}" jobset "${dir}" "${pkg}" "${version}" \
      "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=${version}"
    copy_jobset_manifests
    ;;
  karpenter)
    version="$(module_field "${dir}" sigs.k8s.io/karpenter .Version)"
    build_tool "${BIN_DIR}" karpenter "${dir}" "${pkg}" "${version}" \
      "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=${version}"
    copy_karpenter_manifests
    ;;
  frameworks)
    build_frameworks "${dir}"
    ;;
  helm)
    # The version is stamped as Helm's own Makefile does, so that `helm
    # version` names the pinned release.
    version="$(module_field "${dir}" helm.sh/helm/v4 .Version)"
    build_tool "${BIN_DIR}" helm "${dir}" "${pkg}" "${version}" \
      "-s -w -X helm.sh/helm/v4/internal/version.version=${version} -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
    ;;
  esac
}

# copy_jobset_manifests writes JobSet's CRDs and its controller's
# ClusterRole, from the module the binary was built from, into BIN_DIR. They
# are rewritten on every run (a copy: no network once the module is cached),
# so they always match the pin; cat, not cp, since the module cache is
# read-only and the copies need not be.
copy_jobset_manifests() {
  local dir
  dir="$(cd "${TOOLS_DIR}/jobset" && go mod download -json sigs.k8s.io/jobset | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  if [[ -z "${dir}" || ! -d "${dir}/config/components" ]]; then
    echo "cannot find the sigs.k8s.io/jobset module directory for its manifests" >&2
    return 1
  fi
  cat "${dir}"/config/components/crd/bases/*.yaml >"${BIN_DIR}/jobset-crds.yaml.tmp"
  mv -f "${BIN_DIR}/jobset-crds.yaml.tmp" "${BIN_DIR}/jobset-crds.yaml"
  cat "${dir}/config/components/rbac/role.yaml" >"${BIN_DIR}/jobset-rbac.yaml.tmp"
  mv -f "${BIN_DIR}/jobset-rbac.yaml.tmp" "${BIN_DIR}/jobset-rbac.yaml"
}

# FRAMEWORKS are the workload frameworks' controllers, "<binary>
# <module> <package>", that hack/tools/frameworks builds together: their
# releases agree on controller-runtime v0.22's API, so one module (and one
# compile of k8s.io and controller-runtime) serves all three.
FRAMEWORKS=(
  "lws sigs.k8s.io/lws sigs.k8s.io/lws/cmd"
  "kuberay github.com/ray-project/kuberay/ray-operator github.com/ray-project/kuberay/ray-operator"
  "trainer github.com/kubeflow/trainer/v2 github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"
)

# build_frameworks <module dir> builds every controller of FRAMEWORKS in
# one go build, named lws, kuberay and trainer in BIN_DIR, and copies each
# release's manifests beside them; the stamp .frameworks.version names the
# three versions and the module's fingerprint.
build_frameworks() {
  local dir=$1 entry name module pkg versions=() pkgs=() ldflags="-s -w"
  for entry in "${FRAMEWORKS[@]}"; do
    read -r name module pkg <<<"${entry}"
    versions+=("${name}@$(module_field "${dir}" "${module}" .Version)")
    pkgs+=("${pkg}")
  done
  ldflags+=" -X sigs.k8s.io/lws/pkg/version.GitVersion=$(module_field "${dir}" sigs.k8s.io/lws .Version)"
  local stamp="${BIN_DIR}/.frameworks.version" want
  want="${versions[*]} $(fingerprint "${dir}")"
  exec {lock}>"${BIN_DIR}/.frameworks.lock"
  flock "${lock}"
  if [[ -z "${FORCE:-}" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]] &&
    [[ -x "${BIN_DIR}/lws" && -x "${BIN_DIR}/kuberay" && -x "${BIN_DIR}/trainer" ]]; then
    echo "frameworks ${versions[*]} are up to date"
  else
    echo "building frameworks ${versions[*]} (cold build takes several minutes)..."
    local start=${SECONDS} out
    out="$(mktemp -d "${BIN_DIR}/.frameworks.XXXXXX")"
    (cd "${dir}" && CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${out}/" "${pkgs[@]}")
    for entry in "${FRAMEWORKS[@]}"; do
      read -r name module pkg <<<"${entry}"
      mv -f "${out}/$(basename "${pkg}")" "${BIN_DIR}/${name}"
    done
    rmdir "${out}"
    echo "${want}" >"${stamp}"
    echo "built lws, kuberay and trainer in $((SECONDS - start))s"
  fi
  copy_framework_manifests "${dir}"
}

# copy_framework_manifests <module dir> writes each framework's CRDs and
# controller ClusterRole (and LeaderWorkerSet's and Trainer's webhook
# configurations) from
# the modules the binaries were built from into BIN_DIR, as
# <name>-crds.yaml, <name>-rbac.yaml and <name>-webhooks.yaml; rewritten on
# every run, like JobSet's.
copy_framework_manifests() {
  local dir=$1 lws ray trainer
  lws="$(module_dir "${dir}" sigs.k8s.io/lws)"
  ray="$(module_dir "${dir}" github.com/ray-project/kuberay/ray-operator)"
  trainer="$(module_dir "${dir}" github.com/kubeflow/trainer/v2)"
  concat "${BIN_DIR}/lws-crds.yaml" "${lws}"/config/crd/bases/*.yaml
  concat "${BIN_DIR}/lws-rbac.yaml" "${lws}/config/rbac/role.yaml"
  concat "${BIN_DIR}/lws-webhooks.yaml" "${lws}/config/webhook/manifests.yaml"
  concat "${BIN_DIR}/kuberay-crds.yaml" "${ray}"/config/crd/bases/*.yaml
  concat "${BIN_DIR}/kuberay-rbac.yaml" "${ray}/config/rbac/role.yaml"
  concat "${BIN_DIR}/trainer-crds.yaml" "${trainer}"/manifests/base/crds/trainer.kubeflow.org_*.yaml
  concat "${BIN_DIR}/trainer-rbac.yaml" "${trainer}/manifests/base/rbac/role.yaml"
  concat "${BIN_DIR}/trainer-webhooks.yaml" "${trainer}/manifests/base/webhook/manifests.yaml"
}

# concat <out> <file...> writes the files into out as one multi-document
# YAML file, or fails naming the first that is missing.
concat() {
  local out=$1 f
  shift
  for f in "$@"; do
    if [[ ! -f "${f}" ]]; then
      echo "cannot find ${f} for ${out}" >&2
      return 1
    fi
  done
  for f in "$@"; do
    echo "---"
    cat "${f}"
  done >"${out}.tmp"
  mv -f "${out}.tmp" "${out}"
}

# module_dir prints the directory of module $2 as the tools module in
# directory $1 requires it (downloading it if need be).
module_dir() {
  local dir=$1 module=$2
  (cd "${dir}" && go mod download -json "${module}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

# copy_karpenter_manifests writes the CRDs Karpenter's kwok cloud provider
# serves, from the module the binary was built from, into BIN_DIR as one
# file: NodePool, NodeClaim, NodeOverlay and CapacityBuffer
# (kwok/charts/crds, the chart's copies of the core CRDs) and KWOKNodeClass
# (kwok/apis/crds). Rewritten on every run, like JobSet's.
copy_karpenter_manifests() {
  local dir
  dir="$(module_dir "${TOOLS_DIR}/karpenter" sigs.k8s.io/karpenter)"
  if [[ -z "${dir}" || ! -d "${dir}/kwok/charts/crds" || ! -d "${dir}/kwok/apis/crds" ]]; then
    echo "cannot find the sigs.k8s.io/karpenter module directory for its CRDs" >&2
    return 1
  fi
  local f
  for f in "${dir}"/kwok/charts/crds/*.yaml "${dir}"/kwok/apis/crds/*.yaml; do
    echo "---"
    cat "${f}"
  done >"${BIN_DIR}/karpenter-crds.yaml.tmp"
  mv -f "${BIN_DIR}/karpenter-crds.yaml.tmp" "${BIN_DIR}/karpenter-crds.yaml"
}

# link_shared makes the shared tools (and files) visible in a version's bin dir.
link_shared() {
  local kube_bin=$1 tool
  [[ "${kube_bin}" == "${BIN_DIR}" ]] && return
  for tool in "${SHARED_TOOLS[@]}" "${SHARED_FILES[@]}"; do
    ln -sfn "../${tool}" "${kube_bin}/${tool}"
  done
}

main() {
  local version kube_dir kube_bin
  version="$(kube_version)"
  case "${1:-}" in
  --list-versions)
    supported_versions
    return
    ;;
  --print-bin-dir)
    kube_module_dir "${version}" >/dev/null
    kube_bin_dir "${version}"
    return
    ;;
  --print-version)
    kube_module_dir "${version}" >/dev/null
    echo "${version}"
    return
    ;;
  esac
  kube_dir="$(kube_module_dir "${version}")"
  kube_bin="$(kube_bin_dir "${version}")"
  mkdir -p "${BIN_DIR}" "${kube_bin}"
  local tools=("$@")
  if [[ ${#tools[@]} -eq 0 ]]; then
    tools=("${ALL_TOOLS[@]}")
  fi
  build_all "${kube_dir}" "${kube_bin}" "${tools[@]}"
  link_shared "${kube_bin}"
}

# build_all <kube module dir> <kube bin dir> <tool...> builds the tools,
# BUILD_JOBS (default 2) at a time. Each go build already compiles on every
# core, but a cold one also waits on the module proxy and links one large
# binary on one core; a second build fills those gaps. Each tool's output is
# printed whole when it ends, and the first failure fails the script once
# every build has ended.
build_all() {
  local kube_dir=$1 kube_bin=$2
  shift 2
  local jobs="${BUILD_JOBS:-2}" logs tool failed=0 running=0
  logs="$(mktemp -d)"
  # Every module's sources first, all at once: network, not CPU.
  prefetch "${kube_dir}" "$@"
  for tool in "$@"; do
    if ((running >= jobs)); then
      wait -n || failed=1
      running=$((running - 1))
    fi
    (
      # The build stops at its first error (set -e); this subshell does not,
      # so that it prints the build's output either way.
      set +e
      (set -e; build "${tool}" "${kube_dir}" "${kube_bin}") >"${logs}/${tool}.log" 2>&1
      status=$?
      cat "${logs}/${tool}.log"
      exit "${status}"
    ) &
    running=$((running + 1))
  done
  while ((running > 0)); do
    wait -n || failed=1
    running=$((running - 1))
  done
  rm -rf "${logs}"
  if ((failed)); then
    echo "hack/build-tools.sh: a build failed (its output is above)" >&2
    return 1
  fi
}

# prefetch <kube module dir> <tool...> downloads the modules each tool's
# package needs (go list -deps loads them; no compiling), for all tools at
# once; with a warm module cache it takes a second.
prefetch() {
  local kube_dir=$1 tool spec pids=()
  shift
  for tool in "$@"; do
    spec="$(tool_package "${tool}" "${kube_dir}")" || return 1
    # shellcheck disable=SC2086 # a tool may have several packages.
    (cd "${spec%% *}" && go list -deps ${spec#* } >/dev/null) &
    pids+=($!)
  done
  local pid
  for pid in "${pids[@]}"; do
    wait "${pid}" || { echo "downloading the tools' modules failed" >&2; return 1; }
  done
}

# tool_package <tool> <kube module dir> prints "<module dir> <package>" of
# the tool's binary.
tool_package() {
  local tool=$1 kube_dir=$2
  case "${tool}" in
  kube | kube-apiserver | kube-controller-manager | kube-scheduler | kubectl) echo "${kube_dir} ./kube" ;;
  etcd) echo "${TOOLS_DIR}/etcd go.etcd.io/etcd/server/v3" ;;
  kwok) echo "${TOOLS_DIR}/kwok sigs.k8s.io/kwok/cmd/kwok" ;;
  jobset) echo "${TOOLS_DIR}/jobset sigs.k8s.io/jobset" ;;
  frameworks)
    local entry name module pkg pkgs=()
    for entry in "${FRAMEWORKS[@]}"; do
      read -r name module pkg <<<"${entry}"
      pkgs+=("${pkg}")
    done
    echo "${TOOLS_DIR}/frameworks ${pkgs[*]}"
    ;;
  karpenter) echo "${TOOLS_DIR}/karpenter sigs.k8s.io/karpenter/kwok" ;;
  helm) echo "${TOOLS_DIR}/helm helm.sh/helm/v4/cmd/helm" ;;
  *)
    echo "unknown tool ${tool}; known: ${ALL_TOOLS[*]}" >&2
    return 1
    ;;
  esac
}

main "$@"
