#!/bin/sh
# Configure the build directory (default: build) once; later calls do nothing, quietly, so
# that the README's commands can be run again and in either order. Extra arguments go to
# `meson setup` on the first call.
set -eu
dir=${BUILD:-build}
[ -f "$dir/build.ninja" ] && exit 0
exec meson setup "$dir" "$@"
