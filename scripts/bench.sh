#!/bin/sh
# Runs every benchmark under DIR (or only bench_NAME when NAME is given).
dir=$1
only=$2
for b in $(find "$dir" -type f -name 'bench_*' | sort); do
    name=$(basename "$b")
    [ -n "$only" ] && [ "$name" != "bench_$only" ] && continue
    echo "== $name"
    "$b" || exit 1
done
