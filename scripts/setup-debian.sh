#!/bin/sh
# Install what libxsched needs on Debian 12 (as root, or through sudo), in three sets:
#
#   scripts/setup-debian.sh          the main job: build the library and run xsched-bench
#                                    (meson, ninja, pkg-config, gcc)
#   scripts/setup-debian.sh --tests  the main job's set and what the test suite needs: g++
#                                    (the header compiles as C++), Debian's ROCm packages
#                                    (the HIP backend is compiled and unit-tested without a
#                                    GPU), PyTorch for the Python scope tests, pytest, gnuplot
#                                    for the plot test
#   scripts/setup-debian.sh --ci     the test set and what .ci/run adds: clang (the second
#                                    --werror build), clang-format (the format check),
#                                    meson-python and venv (pip install . in a fresh venv)
#
# Sizes are in README.md. Packages already installed are not asked for again: when the set
# is complete the script does nothing (no apt, no root). apt's output goes to a log file
# that is printed only when apt fails. The CUDA backend uses the toolkit at $CUDA_PATH or
# /usr/local/cuda when present (this script does not install one).
set -eu

main="meson ninja-build pkg-config gcc"
tests="g++ libamdhip64-dev libhsakmt-dev hipcc python3 python3-torch python3-pytest
	gnuplot-nox fonts-dejavu-core"
ci="clang clang-format python3-mesonpy python3-venv"

case ${1:-} in
'') set_name="main job" pkgs=$main ;;
--tests) set_name="tests" pkgs="$main $tests" ;;
--ci) set_name="CI" pkgs="$main $tests $ci" ;;
*)
	echo "usage: $0 [--tests | --ci]" >&2
	exit 2
	;;
esac

missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing="$missing $p"
done
[ -n "$missing" ] || exit 0

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp "${TMPDIR:-/tmp}/setup-debian.XXXXXX.log")
echo "setup-debian.sh: installing the $set_name set (missing:$missing; apt's output in $log)"
if ! { $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends \
	$missing; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "setup-debian.sh: apt-get failed (output above, also in $log)" >&2
	exit 1
fi
rm -f "$log"
