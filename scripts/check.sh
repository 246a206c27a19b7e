#!/bin/sh
# Runs test binaries (tests/*/test_SUITE.c built; the Makefile passes the
# ones T needs) and prints one closing line: "N passed, N failed" (N
# suites). The last lines of each failed suite's output are printed again
# before it, so that the end of the log (all a CI summary may show) names
# the failing checks.
#
#   check.sh "" BIN...             scripts/layers.sh, then every BIN
#   check.sh SUITE BIN...          only test_SUITE (layers: only layers.sh)
#   check.sh SUITE:TEST BIN...     only the test TEST of test_SUITE
#   check.sh --list [SUITE] BIN... prints SUITE:TEST of every test, one a
#                                  line (T=list is the same)
#
# A SUITE or TEST that names nothing ends in one line and exit status 1.
#
# The suites run one after another, printing as they go, each ended by a
# line with its time. SPM_CHECK_JOBS=N runs a whole run's suites N at a
# time, the longest first, each suite's output printed whole when it
# ends. Every suite makes its own directories, ports and namespaces, so
# suites at once never meet, and Check's timeouts are doubled
# (CK_TIMEOUT_MULTIPLIER); but the tests' own limits (a job done within
# 90 s, a node back within a second, a fair share) are set for a suite
# that has the cores to itself: at 2 a time on 2 cores beside other
# work, and under the sanitizers, test_chaos, test_restart and test_ops
# missed them. So 1 is the default, and what CI runs.

# check.sh --one BIN LOGDIR: one suite of a parallel run (through xargs).
if [ "${1:-}" = "--one" ]; then
    name=$(basename "$2")
    start=$(date +%s)
    "$2" >"$3/$name.log" 2>&1
    echo $? >"$3/$name.rc"
    secs=$(($(date +%s) - start))
    echo "$secs" >"$3/$name.secs"
    flock "$3/.print" sh -c 'echo "== $1 ($2 s)"; cat "$3"' sh "$name" "$secs" "$3/$name.log"
    exit 0
fi
list=0
if [ "${1:-}" = "--list" ]; then
    list=1
    shift
fi
only=$1
shift
[ "$only" = list ] && list=1 && only=""
suite=${only%%:*}
test=""
case $only in *:*) test=${only#*:} ;; esac
if [ -z "$suite" ] && [ -n "$test" ]; then
    echo "check: T=$only names no suite (T=SUITE:TEST; make check-list names every suite:test)" >&2
    exit 1
fi
# T is the one selector: a CK_RUN_CASE left in the environment would make
# every suite without such a test fail.
unset CK_RUN_CASE CK_RUN_SUITE

# The binaries of the suite asked for (all when none is).
bins=""
for t in "$@"; do
    name=$(basename "$t")
    [ -n "$suite" ] && [ "$name" != "test_$suite" ] && continue
    bins="${bins:+$bins }$t"
done
if [ -n "$suite" ] && [ -z "$bins" ] && { [ "$list" = 1 ] || [ "$suite" != layers ] || [ -n "$test" ]; }; then
    echo "check: no suite named '$suite' (make check-list names every suite:test)" >&2
    exit 1
fi

if [ "$list" = 1 ]; then
    for t in $bins; do
        name=$(basename "$t")
        "$t" --list | sed "s/^/${name#test_}:/" || exit 1
    done
    exit 0
fi

if [ -n "$test" ] && ! "$bins" --list | grep -qxF "$test"; then
    echo "check: suite $suite has no test named '$test' (make check-list T=$suite names its tests)" >&2
    exit 1
fi

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
# The suites that take longest (a full run on 2 cores), first, so that no
# long one starts last; then the rest in the order given.
slow="chaos restart multihost isolation ops nodes hostile fullstore programs jobs dataagent mine"
ordered=""
for s in $slow; do
    for t in $bins; do
        [ "$(basename "$t")" = "test_$s" ] && ordered="$ordered $t"
    done
done
for t in $bins; do
    case " $ordered " in *" $t "*) ;; *) ordered="$ordered $t" ;; esac
done
jobs=${SPM_CHECK_JOBS:-1}
set -- $ordered
if [ "$jobs" -gt 1 ] && [ $# -gt 1 ]; then
    echo "== $# suites, $jobs at a time (SPM_CHECK_JOBS)"
    # A test's timeout guards against a hang; suites that share the cores
    # take longer, so the limits are doubled unless set.
    export CK_TIMEOUT_MULTIPLIER="${CK_TIMEOUT_MULTIPLIER:-2}"
    : >"$logs/.print"
    printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh "$0" --one {} "$logs"
fi
for t in "$@"; do
    name=$(basename "$t")
    if [ ! -f "$logs/$name.rc" ]; then
        echo "== $name${test:+ $test}"
        start=$(date +%s)
        # Both streams to the terminal and to the log, and the suite's own status.
        { "$t" ${test:+"$test"} 2>&1; echo $? >"$logs/$name.rc"; } | tee "$logs/$name.log"
        echo "== $name: $(($(date +%s) - start)) s"
    fi
    if [ "$(cat "$logs/$name.rc")" -eq 0 ]; then
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
