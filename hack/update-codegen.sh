#!/usr/bin/env bash
# Regenerates every generated file: deepcopy, defaulters, conversions,
# OpenAPI definitions, and the clientset, listers, informers and apply
# configurations under pkg/generated. Run it after changing pkg/apis.
set -o errexit
set -o nounset
set -o pipefail

SCRIPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "${SCRIPT_ROOT}"
THIS_PKG="github.com/muster-dev/muster"
# `go list -m` prints an empty Dir for a module that is not in the module
# cache yet (a fresh machine), so download it first.
go mod download k8s.io/code-generator
CODEGEN_PKG="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"
if [[ -z "${CODEGEN_PKG}" || ! -f "${CODEGEN_PKG}/kube_codegen.sh" ]]; then
    echo "cannot find k8s.io/code-generator in the module cache (got '${CODEGEN_PKG}')" >&2
    exit 1
fi
BOILERPLATE="${SCRIPT_ROOT}/hack/boilerplate.go.txt"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${SCRIPT_ROOT}/pkg/apis"

# The known-violations report is committed so that API rule violations that
# we accept (and only those) do not fail the run.
update_report=""
if [[ "${UPDATE_API_KNOWN_VIOLATIONS:-}" == "true" ]]; then
    update_report="--update-report"
fi

kube::codegen::gen_openapi \
    --output-dir "${SCRIPT_ROOT}/pkg/generated/openapi" \
    --output-pkg "${THIS_PKG}/pkg/generated/openapi" \
    --report-filename "${SCRIPT_ROOT}/hack/api-rules/violation_exceptions.list" \
    --output-model-name-file "zz_generated.model_name.go" \
    ${update_report:+"${update_report}"} \
    --boilerplate "${BOILERPLATE}" \
    --extra-pkgs k8s.io/api/core/v1 \
    "${SCRIPT_ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-openapi-schema <(go run "${THIS_PKG}/pkg/generated/openapi/cmd/models-schema") \
    --output-dir "${SCRIPT_ROOT}/pkg/generated" \
    --output-pkg "${THIS_PKG}/pkg/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${SCRIPT_ROOT}/pkg/apis"
