#!/bin/sh
# Runs every test binary under DIR (or only test_NAME when NAME is given) and
# prints one closing line: "N passed, N failed".
dir=$1
only=$2
pass=0
fail=0
failed=""
for t in $(find "$dir" -type f -name 'test_*' | sort); do
    name=$(basename "$t")
    [ -n "$only" ] && [ "$name" != "test_$only" ] && continue
    echo "== $name"
    if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); failed="$failed $name"; fi
done
[ -n "$failed" ] && echo "failed suites:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
