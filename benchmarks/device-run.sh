#!/bin/sh
# One device session's measurements: release build, the gpu test suite, and the given
# xsched-bench scenarios, logs under OUTDIR. Used for the figures in doc/RESULTS.md.
#
# usage: benchmarks/device-run.sh OUTDIR [SCENARIOS [options...]]
#
# SCENARIOS is a comma-separated list of xsched-bench scenarios; `spatial` in it runs
# benchmarks/spatial_cuda (doc/bench.md) after them: table in OUTDIR/spatial.log, rows in
# OUTDIR/spatial.csv, progress in OUTDIR/spatial.err. The options go to xsched-bench, or
# to spatial_cuda when SCENARIOS is `spatial` alone (e.g. `OUTDIR spatial --quick`).
set -u
out=$1
scen=${2:-serve,preempt,overhead}
[ $# -ge 2 ] && shift 2 || shift $#
cd "$(dirname "$0")/.."
mkdir -p "$out"
PATH=/opt/torch/.venv/bin:$PATH
export PATH
bench=
spatial=0
for s in $(echo "$scen" | tr ',' ' '); do
	if [ "$s" = spatial ]; then
		spatial=1
	else
		bench=${bench:+$bench,}$s
	fi
done
{
	date -u '+%Y-%m-%d %H:%M:%S UTC'
	nvidia-smi -L 2>/dev/null
	meson setup build-dev --buildtype=release -Dhip=disabled >/dev/null &&
		ninja -C build-dev
} >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
tail -1 "$out/build.log"
meson test -C build-dev --suite gpu --print-errorlogs >"$out/gpu-tests.log" 2>&1
grep -E "^ *[0-9]+/|^Ok|^Fail" "$out/gpu-tests.log"
if [ -n "$bench" ]; then
	build-dev/benchmarks/xsched-bench/xsched-bench --quiet --scenario "$bench" \
		--jsonl "$out/bench.jsonl" "$@" >"$out/bench.log" 2>&1
	echo "xsched-bench exit $?"
	set --
fi
if [ "$spatial" = 1 ]; then
	build-dev/benchmarks/spatial_cuda --out "$out/spatial.csv" "$@" \
		>"$out/spatial.log" 2>"$out/spatial.err"
	echo "spatial_cuda exit $?"
fi
