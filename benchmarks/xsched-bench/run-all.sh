#!/bin/sh
# Build libxsched with xsched-bench and run every scenario, keeping the output.
#
# usage: benchmarks/xsched-bench/run-all.sh OUTDIR [xsched-bench options...]
#
# Writes OUTDIR/bench.log (the tables), OUTDIR/bench.jsonl (every sample) and
# OUTDIR/build.log. BUILD (default build-bench) is the build directory. Extra options go
# to xsched-bench (for instance --duration 10 or --modes native,xsched-lv2+prio).
# With CONNECTIONS_32=1 it also runs the systematic scenario again with
# CUDA_DEVICE_MAX_CONNECTIONS=32 (OUTDIR/bench-conn32.{log,jsonl}).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [xsched-bench options...]" >&2; exit 2; }
out=$1
shift
cd "$(dirname "$0")/../.."
build=${BUILD:-build-bench}
mkdir -p "$out"
{
	echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n)"
	command -v nvidia-smi >/dev/null && nvidia-smi -L || true
	[ -d "$build" ] || meson setup "$build" --buildtype=release
	ninja -C "$build" benchmarks/xsched-bench/xsched-bench
} >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
bench="$build/benchmarks/xsched-bench/xsched-bench"
echo "+ $bench --quiet --jsonl $out/bench.jsonl $*" | tee "$out/bench.log"
rc="$out/.rc"
{
	if "$bench" --quiet --jsonl "$out/bench.jsonl" "$@" 2>&1; then
		echo 0 >"$rc"
	else
		echo $? >"$rc"
	fi
} | tee -a "$out/bench.log"
status=$(cat "$rc")
if [ "${CONNECTIONS_32:-0}" = 1 ]; then
	echo "+ CUDA_DEVICE_MAX_CONNECTIONS=32 $bench --quiet --scenario systematic" \
		"--jsonl $out/bench-conn32.jsonl $*" | tee "$out/bench-conn32.log"
	{
		if CUDA_DEVICE_MAX_CONNECTIONS=32 "$bench" --quiet --scenario systematic \
			--jsonl "$out/bench-conn32.jsonl" "$@" 2>&1; then
			echo 0 >"$rc"
		else
			echo $? >"$rc"
		fi
	} | tee -a "$out/bench-conn32.log"
	[ "$(cat "$rc")" = 0 ] || status=1
fi
rm -f "$rc"
exit "$status"
