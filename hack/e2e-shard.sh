#!/usr/bin/env bash
# Prints the `go test -run` pattern of shard <i> (1-based) of <n> of the
# tests of package <pkg> that match <filter> (default: all), so that
# `make e2e` can run one package's tests in <n> processes at once, each
# with its own local cluster. The suites wait on clusters far more than they
# compute (a warm `make test` keeps 0.6 of 2 cores busy), so shards finish
# together in much less time than one process takes.
#
# Tests are dealt round-robin in name order, the longest known first
# (E2E_SLOW below), so that no shard gets all the slow ones. A test in no
# shard, or in two, cannot happen: each listed name goes to exactly one.
#
# Usage: hack/e2e-shard.sh <pkg> <n> <i> [filter]
set -euo pipefail

pkg=$1 n=$2 i=$3 filter=${4:-.}
if ! [[ "${n}" =~ ^[1-9][0-9]*$ && "${i}" =~ ^[1-9][0-9]*$ && "${i}" -le "${n}" ]]; then
  echo "usage: $0 <pkg> <n> <i in 1..n> [filter]" >&2
  exit 2
fi

# The tests that take a minute or more (go test -v of `make e2e`), dealt
# out first. A name here that no longer exists is ignored.
E2E_SLOW=(
  TestEtcdRestore
  TestHelmUpgradeUnderLoad
  TestCertRotationUnderLoad
  TestKarpenterScaleUpGang
  TestMusterOutage
  TestCrashMidRelease
)

tests="$(go test -list "${filter}" "${pkg}" | grep -E '^(Test|Example)' || true)"
if [[ -z "${tests}" ]]; then
  echo "no test of ${pkg} matches ${filter}" >&2
  exit 1
fi
ordered="$( (for t in "${E2E_SLOW[@]}"; do grep -Fx "${t}" <<<"${tests}" || true; done
  grep -Fvx -f <(printf '%s\n' "${E2E_SLOW[@]}") <<<"${tests}" | sort) )"
mine="$(awk -v n="${n}" -v i="${i}" '(NR - 1) % n == i - 1' <<<"${ordered}")"
if [[ -z "${mine}" ]]; then
  # More shards than tests: this one runs nothing, and says so.
  echo '^$'
  exit 0
fi
echo "^($(paste -sd'|' <<<"${mine}"))\$"
