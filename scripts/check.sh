#!/bin/sh
# Runs every test binary under DIR (or only test_NAME when NAME is given) and
# prints one closing line: "N passed, N failed". The last lines of each
# failed suite's output are printed again before it, so that the end of the
# log (all a CI summary may show) names the failing checks.
dir=$1
only=$2
pass=0
fail=0
failed=""
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# The folder graph first: no folder includes one above it (scripts/layers.sh).
if [ -z "$only" ] || [ "$only" = layers ]; then
    echo "== layers"
    if sh "$(dirname "$0")/layers.sh" --quiet >"$logs/layers.log" 2>&1; then
        pass=$((pass + 1))
    else
        cat "$logs/layers.log"
        fail=$((fail + 1))
        failed="$failed layers"
    fi
fi
for t in $(find "$dir" -type f -name 'test_*' | sort); do
    name=$(basename "$t")
    [ -n "$only" ] && [ "$name" != "test_$only" ] && continue
    echo "== $name"
    # Both streams to the terminal and to the log, and the suite's own status.
    if { "$t" 2>&1; echo $? >"$logs/$name.rc"; } | tee "$logs/$name.log"; [ "$(cat "$logs/$name.rc")" -eq 0 ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed="$failed $name"
    fi
done
for name in $failed; do
    echo "== $name failed; its last lines:"
    tail -n 25 "$logs/$name.log"
done
[ -n "$failed" ] && echo "failed suites:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
