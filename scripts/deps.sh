#!/bin/sh
# Installs the Debian packages spm needs to build, run and test, when any is
# missing. Quiet when everything is already there.
# usage: sh scripts/deps.sh [tests|deb]
set -e
PKGS="build-essential pkg-config clang-format libzmq3-dev libprotobuf-c-dev protobuf-c-compiler
liblmdb-dev check libopenblas-dev libsuitesparse-dev libinih-dev libxxhash-dev libmicrohttpd-dev
zlib1g-dev libdeflate-dev gnuplot-nox iproute2"
# With "tests": also what some tests use, and skip without (a browser for the
# dashboard, promtool for the metrics, NumPy and SciPy to load the binary
# outputs).
[ "$1" = tests ] && PKGS="$PKGS chromium prometheus python3-numpy python3-scipy"
# With "deb": also what make deb and make check-deb use (debian/control's
# Build-Depends are in PKGS above; systemd for systemd-analyze, systemd-container
# for the container scripts/check-deb.sh installs the package in).
[ "$1" = deb ] && PKGS="$PKGS dpkg-dev debhelper lintian systemd systemd-container"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "spm: installing missing packages:$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
