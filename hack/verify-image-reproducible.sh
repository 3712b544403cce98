#!/usr/bin/env bash
# Builds the image twice into fresh directories (`make image IMAGE_DIR=...`)
# and fails unless both builds print the same index digest and write
# byte-identical OCI archives.
#
# The second build reuses Go's build cache by default, so this proves the
# image assembly and the link step reproducible. IMAGE_REPRO_COLD=1 gives
# the second build an empty GOCACHE, so every package is compiled again
# (several minutes per platform on two cores).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

declare -a digests
for i in 1 2; do
	env=()
	if [[ $i == 2 && "${IMAGE_REPRO_COLD:-}" == 1 ]]; then
		env=(GOCACHE="$tmp/gocache")
	fi
	echo "== build $i into $tmp/$i"
	env "${env[@]}" make --no-print-directory image IMAGE_DIR="$tmp/$i" | tee "$tmp/$i.log"
	digests[$i]="$(awk '$1 == "index" {print $2}' "$tmp/$i.log")"
	if [[ -z "${digests[$i]}" ]]; then
		echo "build $i printed no index digest" >&2
		exit 1
	fi
done

echo "build 1: ${digests[1]}"
echo "build 2: ${digests[2]}"
if [[ "${digests[1]}" != "${digests[2]}" ]]; then
	echo "FAIL: two builds of the same source gave different index digests" >&2
	exit 1
fi
if ! cmp "$tmp/1/muster-apiserver.oci.tar" "$tmp/2/muster-apiserver.oci.tar"; then
	echo "FAIL: same index digest but the OCI archives differ" >&2
	exit 1
fi
echo "PASS: reproducible, index ${digests[1]}"
