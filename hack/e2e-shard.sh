#!/usr/bin/env bash
# Prints the `go test -run` pattern of shard <i> (1-based) of <n> of the
# tests of package <pkg> that match <filter> (default: all), so that
# `make e2e` can run one package's tests in <n> processes at once, each
# with its own local cluster. The suites wait on clusters far more than they
# compute (a warm `make test` kept 0.6 of 2 cores busy), so shards finish
# together in much less time than one process takes.
#
# The tests are dealt longest first, each to the shard with the least time
# so far (hack/e2e-durations.txt, measured; 20 s for a test missing there),
# so the shards end close together. Each listed test goes to exactly one
# shard. To refresh the durations after a `make e2e`:
#   grep -hE '^--- (PASS|FAIL)' _out/e2e/e2e-newest-*.log |
#     sed 's/.*: \(Test[^ ]*\) (\([0-9.]*\)s)/\2 \1/' | sort -rn
#
# Usage: hack/e2e-shard.sh <pkg> <n> <i> [filter]
set -euo pipefail

pkg=$1 n=$2 i=$3 filter=${4:-.}
if ! [[ "${n}" =~ ^[1-9][0-9]*$ && "${i}" =~ ^[1-9][0-9]*$ && "${i}" -le "${n}" ]]; then
  echo "usage: $0 <pkg> <n> <i in 1..n> [filter]" >&2
  exit 2
fi
durations="$(dirname "${BASH_SOURCE[0]}")/e2e-durations.txt"

tests="$(go test -list "${filter}" "${pkg}" | grep -E '^(Test|Example)' || true)"
if [[ -z "${tests}" ]]; then
  echo "no test of ${pkg} matches ${filter}" >&2
  exit 1
fi
mine="$(awk -v n="${n}" -v i="${i}" '
  FNR == NR { if ($0 !~ /^#/ && NF == 2) secs[$2] = $1; next }
  { name[++count] = $1; cost[count] = ($1 in secs) ? secs[$1] : 20 }
  END {
    # Longest first (ties by name), each to the least loaded shard
    # (ties to the lowest): a selection sort is plenty for ~100 tests.
    for (a = 1; a <= count; a++) {
      best = a
      for (b = a + 1; b <= count; b++)
        if (cost[b] > cost[best] || (cost[b] == cost[best] && name[b] < name[best])) best = b
      t = name[a]; name[a] = name[best]; name[best] = t
      t = cost[a]; cost[a] = cost[best]; cost[best] = t
    }
    for (s = 1; s <= n; s++) load[s] = 0
    for (a = 1; a <= count; a++) {
      s = 1
      for (k = 2; k <= n; k++) if (load[k] < load[s]) s = k
      load[s] += cost[a]
      if (s == i) print name[a]
    }
  }' "${durations}" - <<<"${tests}")"
if [[ -z "${mine}" ]]; then
  # More shards than tests: this one runs nothing.
  echo '^$'
  exit 0
fi
echo "^($(paste -sd'|' <<<"${mine}"))\$"
