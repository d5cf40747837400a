#!/bin/sh
# The main job, as README.md runs it: configure the build directory (default: build) with
# scripts/configure.sh, build it with ninja, then run xsched-bench with the arguments given
# (README: --quick). The build's output (about 300 lines of meson and ninja) goes to
# <dir>/main-job-build.log and is printed only when a step fails, so the benchmark's first
# line is the first thing shown after one line saying what is being built.
set -eu
cd "$(dirname "$0")/.."
dir=${BUILD:-build}
log=$(mktemp "${TMPDIR:-/tmp}/main-job-build.XXXXXX.log")
echo "main-job.sh: configuring and building $dir (output in $dir/main-job-build.log)" >&2
if ! { BUILD=$dir scripts/configure.sh && ninja -C "$dir"; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "main-job.sh: the build failed (output above, also in $log)" >&2
	exit 1
fi
cat "$log" >"$dir/main-job-build.log"
rm -f "$log"
exec "$dir/benchmarks/xsched-bench/xsched-bench" "$@"
