#!/bin/sh
# Install what libxsched needs to build and test on Debian 12 (as root, or through sudo).
# The CUDA backend additionally uses the toolkit at $CUDA_PATH or /usr/local/cuda when
# present; the HIP backend uses Debian's ROCm packages installed here. gnuplot draws the
# benchmark's plots (xsched-bench --plot).
set -eu
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
	meson ninja-build pkg-config gcc g++ clang clang-format binutils \
	python3 python3-pytest python3-torch gnuplot-nox fonts-dejavu-core \
	libamdhip64-dev libhsakmt-dev hipcc
