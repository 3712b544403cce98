#!/usr/bin/env bash
# Installs the OCI runtime `make image-test` and `make e2e` run the image
# under (runc by default, OCI_RUNTIME=crun for crun) from Debian's
# packages when it is missing. The project's machines run as root;
# elsewhere, run it with sudo or install the runtime by hand.
#
# runc, not crun, by default: Debian 12's crun 1.8.1 refuses to start any
# container on a host whose cgroup v2 hierarchy holds a controller in
# hybrid mode ("cgroups in hybrid mode not supported, drop all controllers
# from cgroupv2"), as this project's machines do; runc runs there.
set -euo pipefail

runtime="${OCI_RUNTIME:-runc}"
if command -v "$runtime" >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-oci-runtime: $runtime is missing and apt-get is not here; install $runtime by hand" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "$runtime"
command -v "$runtime" >/dev/null
