#!/usr/bin/env bash
# Fails when the committed generated code differs from what
# hack/update-codegen.sh produces now.
set -o errexit
set -o nounset
set -o pipefail

SCRIPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "${SCRIPT_ROOT}"

TMP="$(mktemp -d)"
trap 'rm -rf "${TMP}"' EXIT

# Snapshot, regenerate, compare, restore: the work tree ends as it started.
cp -a pkg hack "${TMP}/"
"${SCRIPT_ROOT}/hack/update-codegen.sh" >/dev/null
ret=0
diff -Naupr "${TMP}/pkg" pkg || ret=$?
diff -Naupr "${TMP}/hack/api-rules" hack/api-rules || ret=$?
if [[ ${ret} -ne 0 ]]; then
    rm -rf pkg hack/api-rules
    cp -a "${TMP}/pkg" "${TMP}/hack/api-rules" .
    mv api-rules hack/
    echo "generated code is out of date: run hack/update-codegen.sh" >&2
    exit 1
fi
echo "generated code is up to date"
