#!/bin/sh
# Runs every libFuzzer target under DIR (or only fuzz_NAME when NAME is
# given) for $FUZZ_SECONDS each, growing a working corpus in
# build/fuzz/corpus/NAME from the seeds in tests/fuzz/corpus/NAME, and
# prints one line per target: executions, corpus size, and whether it
# crashed. Stops with a non-zero status at the first crash.
dir=$1
only=$2
secs=${FUZZ_SECONDS:-60}
status=0
for f in $(find "$dir" -maxdepth 1 -type f -name 'fuzz_*' | sort); do
    name=$(basename "$f" | sed 's/^fuzz_//')
    [ -n "$only" ] && [ "$name" != "$only" ] && continue
    work=build/fuzz/corpus/$name
    mkdir -p "$work" tests/fuzz/corpus/"$name"
    log=build/fuzz/$name.log
    "$f" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix=build/fuzz/crash-"$name"- "$work" tests/fuzz/corpus/"$name" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    echo "fuzz $name: ${execs:-?} executions in ${secs}s, $cov, corpus $(ls "$work" | wc -l) inputs, exit $rc"
    if [ "$rc" -ne 0 ]; then
        grep -m5 -A15 'ERROR\|runtime error\|fuzz .*:' "$log"
        status=1
        break
    fi
done
exit $status
