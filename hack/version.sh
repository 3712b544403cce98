#!/usr/bin/env bash
# Prints Muster's version: the one string the image tag, the Helm chart and
# `muster-apiserver --version` share.
#
# From `git describe --tags --match 'v*' --dirty`: v0.1.0 on a tag,
# v0.1.0-3-gabc1234 three commits after it, with -dirty when the work tree
# has uncommitted changes. Before the first tag, v0.0.0-<commits>-g<sha>,
# in the same shape, so every version is a semantic version (Helm requires
# one) and later commits count higher. Outside a git checkout (a source
# archive), set VERSION instead; this prints v0.0.0-unknown.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "v0.0.0-unknown"
	exit 0
fi
if v="$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)"; then
	echo "$v"
	exit 0
fi
v="v0.0.0-$(git rev-list --count HEAD)-g$(git rev-parse --short HEAD)"
# describe --always knows a dirty tree the way the tagged form does.
if [[ "$(git describe --always --dirty)" == *-dirty ]]; then
	v="$v-dirty"
fi
echo "$v"
