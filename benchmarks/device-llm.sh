#!/bin/sh
# The LLM serving measurements of doc/RESULTS.md on a GPU machine: a release build, then
# benchmarks/python/llm_serve.py once per configuration, each with a time limit; logs under
# OUTDIR (NAME.log: the table and targets; NAME.jsonl: every row; NAME.err: progress).
#
# usage: benchmarks/device-llm.sh OUTDIR SECONDS NAME:ARGS [NAME:ARGS ...]
#
# SECONDS bounds each configuration's run; ARGS are llm_serve.py's options with pluses
# for spaces (e.g. `graph:--modes+alone,prio,xsched+--duration+10`). XSCHED_LIBRARY may
# name another build of the library (a baseline); the default is this tree's.
set -u
out=$1
limit=$2
shift 2
cd "$(dirname "$0")/.."
mkdir -p "$out"
PATH=/opt/torch/.venv/bin:$PATH
export PATH
{
	date -u '+%Y-%m-%d %H:%M:%S UTC'
	nvidia-smi -L 2>/dev/null
	git log -1 --format='%h %s' 2>/dev/null
	meson setup build-dev --buildtype=release -Dhip=disabled >/dev/null &&
		ninja -C build-dev
} >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log"
	exit 1
}
tail -1 "$out/build.log"
export XSCHED_LIBRARY="${XSCHED_LIBRARY:-$PWD/build-dev/libxsched.so}"
export PYTHONUNBUFFERED=1
for cfg in "$@"; do
	name=${cfg%%:*}
	args=$(echo "${cfg#*:}" | tr '+' ' ')
	echo "== $name: llm_serve.py $args ($(date -u +%H:%M:%S))"
	# shellcheck disable=SC2086 # the options are words
	timeout "$limit" python3 benchmarks/python/llm_serve.py $args \
		--jsonl "$out/$name.jsonl" >"$out/$name.log" 2>"$out/$name.err"
	echo "   exit $? ($(date -u +%H:%M:%S))"
	grep -E '^(alone|native|prio|xsched|corun)|^MET|^MISSED|^# the LLM' "$out/$name.log"
done
