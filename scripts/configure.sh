#!/bin/sh
# Configure the build directory (default: build) once; later calls do nothing, quietly, so
# that the README's commands can be run again and in either order. Extra arguments go to
# `meson setup` on the first call.
#
# The one exception: the tools that decide what gets built (a C++ compiler, ROCm's hipcc and
# headers, CUDA's nvcc) are noted at configure time, and when they change (the main job's
# set-up was run first, the test set-up came later) the directory is configured afresh with
# its options kept (meson caches its compiler checks, so --reconfigure would not see them).
set -eu
dir=${BUILD:-build}
tools() {
	for t in c++ hipcc "${CUDA_PATH:-/usr/local/cuda}/bin/nvcc"; do
		command -v "$t" || echo "no $t"
	done
	[ -e /usr/include/hip/hip_runtime_api.h ] || [ -e "${ROCM_PATH:-/opt/rocm}/include/hip" ] ||
		echo "no HIP headers"
}
stamp="$dir/xsched-setup-tools.txt"
if [ -f "$dir/build.ninja" ]; then
	if [ -f "$stamp" ] && [ "$(tools)" != "$(cat "$stamp")" ]; then
		echo "configure.sh: the build tools changed since $dir was configured;" \
			"configuring it again"
		log=$(mktemp)
		meson setup --wipe "$dir" >"$log" 2>&1 || {
			cat "$log" >&2
			rm -f "$log"
			exit 1
		}
		rm -f "$log"
		tools >"$stamp"
	fi
	exit 0
fi
meson setup "$dir" "$@"
tools >"$stamp"
