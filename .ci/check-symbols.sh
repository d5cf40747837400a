#!/bin/sh
# Every global symbol a library defines must be a public API name from include/xsched.h;
# the static library may also define internal names with the xs_ prefix.
set -eu
here=$(dirname "$0")
# The name is what stands before the first "(", after a space or a "*" (a pointer result:
# XResultName).
api=$(grep -oE '^XSCHED_API [A-Za-z_ *]+[ *][A-Za-z0-9_]+\(' "$here/../include/xsched.h" |
	sed -E 's/.*[ *]([A-Za-z0-9_]+)\($/\1/' | sort -u)
status=0
for lib in "$@"; do
	case "$lib" in
	*.a) allow_internal=1; syms=$(nm -g --defined-only "$lib" | awk 'NF == 3 { print $3 }') ;;
	*) allow_internal=0; syms=$(nm -D --defined-only "$lib" | awk 'NF == 3 { print $3 }') ;;
	esac
	for s in $syms; do
		if echo "$api" | grep -qx "$s"; then
			continue
		fi
		if [ "$allow_internal" = 1 ] && [ "${s#xs_}" != "$s" ]; then
			continue
		fi
		echo "$lib: unexpected global symbol: $s"
		status=1
	done
	echo "$lib: $(echo "$syms" | wc -w) global symbols checked"
done
exit $status
