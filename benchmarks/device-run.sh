#!/bin/sh
# One device session's measurements: release build, the gpu test suite, and the given
# xsched-bench scenarios, logs under OUTDIR. Used for the figures in doc/RESULTS.md.
#
# usage: benchmarks/device-run.sh OUTDIR [SCENARIOS [xsched-bench options...]]
set -u
out=$1
scen=${2:-serve,preempt,overhead}
[ $# -ge 2 ] && shift 2 || shift $#
cd "$(dirname "$0")/.."
mkdir -p "$out"
PATH=/opt/torch/.venv/bin:$PATH
export PATH
{
	date -u '+%Y-%m-%d %H:%M:%S UTC'
	nvidia-smi -L 2>/dev/null
	meson setup build-dev --buildtype=release -Dhip=disabled >/dev/null &&
		ninja -C build-dev
} >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
tail -1 "$out/build.log"
meson test -C build-dev --suite gpu --print-errorlogs >"$out/gpu-tests.log" 2>&1
grep -E "^ *[0-9]+/|^Ok|^Fail" "$out/gpu-tests.log"
build-dev/benchmarks/xsched-bench/xsched-bench --quiet --scenario "$scen" \
	--jsonl "$out/bench.jsonl" "$@" >"$out/bench.log" 2>&1
echo "xsched-bench exit $?"
