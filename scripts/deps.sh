#!/bin/sh
# Installs the Debian 12 packages dynprof's build, tests and demo need, only those
# missing.  Idempotent.  Run as root, or as a user with sudo.
set -eu

# What the build (every target, the tests' included: cmocka) and scripts/demo.sh
# need: make demo installs these alone (DEPS_EXTRA="").
PKGS="build-essential cmake pkg-config
libevent-dev libprotobuf-c-dev protobuf-c-compiler
nanopb libnanopb-dev python3-protobuf
libcmocka-dev libjansson-dev libsqlite3-dev libssl-dev
libcurl4-openssl-dev zlib1g-dev libarchive-dev libyajl-dev
python3"

# Sets beyond the build and the demo, by name; without DEPS_EXTRA, "test torch
# node", what make test installs.  "test": the tools the tests run (pytest, pip
# for the binding's install test, ip for network namespaces, strace for the
# hot path's system calls, valgrind, sqlite3, curl, etcd-server for the etcd
# store and failover tests, chromium for the status page's test in a real
# browser, botocore to check S3 signatures in the trace upload test (the
# object store it runs, s3rver, does not), systemd-analyze for the units,
# file for CPack's Debian packages in
# test_deploy_deb, and lintian, which checks them); "torch": the PyTorch hook
# is tested with real torch; "node": the Kubernetes manifests are validated
# with npm packages, and playwright-core clicks through the status page in
# chromium; "clang": the fuzzers (tests/fuzz/README.md).
for extra in ${DEPS_EXTRA-test torch node}; do
	case "$extra" in
	test)
		PKGS="$PKGS sqlite3 python3-pytest python3-pip python3-setuptools
		    python3-wheel iproute2 procps psmisc strace curl valgrind
		    etcd-server chromium systemd file lintian python3-botocore"
		;;
	torch)	PKGS="$PKGS python3-torch" ;;
	node)
		# A node and npm already on the PATH (Debian's or NodeSource's) serve.
		if ! command -v node >/dev/null 2>&1 ||
		    ! command -v npm >/dev/null 2>&1; then
			PKGS="$PKGS nodejs npm"
		fi
		;;
	clang)	PKGS="$PKGS clang libclang-rt-14-dev" ;;
	*)	echo "deps.sh: unknown extra set '$extra'" >&2; exit 1 ;;
	esac
done

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
	    grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "deps: all packages present"
	exit 0
fi

echo "deps: installing:$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO="sudo"
	else
		echo "deps: need root (or sudo) to install:$missing" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
# A brand-new machine may never have fetched the package lists.
if ! $SUDO apt-get install -y -q --no-install-recommends $missing; then
	$SUDO apt-get update -q
	$SUDO apt-get install -y -q --no-install-recommends $missing
fi
