#!/bin/sh
# The folder include graph, checked against the floors docs/ARCHITECTURE.md
# states.
#
#   sh scripts/layers.sh          prints every folder-to-folder include edge
#                                 (with how many includes make it) and checks
#                                 them; exits 1 on a violation
#   sh scripts/layers.sh --quiet  checks only (make check runs it so)
#
# The floors are read from the block between the lines "<!-- floors -->" and
# "<!-- /floors -->" of docs/ARCHITECTURE.md: a numbered item a floor, lowest
# first, whose folders stand in backquotes before its first colon. A file belongs to the longest listed
# folder its path starts with. An include is allowed within its own folder
# and from a higher floor to a lower one; an include of a folder on the same
# floor (sideways) or a higher one (upward), or of a file in no listed
# folder, is a violation. tests/, bench/ and examples/ sit above every floor
# and are not checked. With one way up, the graph has no cycle; a cycle is
# also reported by itself, so that a wrong floor list cannot hide one.
set -u
cd "$(dirname "$0")/.." || exit 1
quiet=0
[ "${1:-}" = "--quiet" ] && quiet=1

floors=$(awk '/<!-- floors -->/ {on = 1; next} /<!-- \/floors -->/ {on = 0} on' docs/ARCHITECTURE.md |
    awk '/^[0-9]+\. / { n = $1 + 0; line = $0; sub(/:.*/, "", line)
                        while (match(line, /`[^`]+`/)) {
                            printf "%s %d\n", substr(line, RSTART + 1, RLENGTH - 2), n
                            line = substr(line, RSTART + RLENGTH) } }')
if [ -z "$floors" ]; then
    echo "layers: docs/ARCHITECTURE.md has no <!-- floors --> block" >&2
    exit 1
fi

files=$(git ls-files '*.c' '*.h' 2>/dev/null | grep -v -e '^tests/' -e '^bench/' -e '^examples/')
[ -n "$files" ] || files=$(find . -name '*.[ch]' ! -path './build/*' ! -path './tests/*' \
    ! -path './bench/*' ! -path './examples/*' | sed 's|^\./||')

# One line per include: FILE INCLUDED (quoted includes only; system headers
# are not the project's).
for f in $files; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
        while read -r inc; do echo "$f $inc"; done
done | awk -v quiet="$quiet" -v floors="$floors" '
function unit(path,    best, u) {
    best = ""
    for (u in floor)
        if (index(path, u "/") == 1 && length(u) > length(best)) best = u
    return best
}
function resolve(file, inc,    dir) {
    # a generated header, or one named from the root, -Iinclude or the
    # including file folder (in that order, as the compiler searches).
    if (inc ~ /\.pb-c\.h$/) return inc
    if (inc in known) return inc
    if (("include/" inc) in known) return "include/" inc
    dir = file; sub(/\/[^\/]*$/, "", dir)
    if ((dir "/" inc) in known) return dir "/" inc
    return ""
}
BEGIN {
    n = split(floors, fl, "\n")
    for (i = 1; i <= n; i++) { split(fl[i], kv, " "); floor[kv[1]] = kv[2] }
    while (("git ls-files \"*.c\" \"*.h\" \"*.proto\" 2>/dev/null" | getline p) > 0) known[p] = 1
    bad = 0
}
{
    file = $1; inc = $2
    target = resolve(file, inc)
    from = unit(file)
    if (from == "") { printf "layers: %s is in no folder docs/ARCHITECTURE.md lists\n", file; bad = 1; next }
    if (target == "") next  # a system header named with quotes, or a generated one elsewhere
    to = unit(target)
    if (to == "") { printf "layers: %s includes %s, which is in no listed folder\n", file, inc; bad = 1; next }
    if (to == from) next
    if (!edge[from " -> " to]++) adj[from] = adj[from] " " to
    if (floor[to] >= floor[from]) {
        printf "layers: %s includes %s: %s (floor %d) may not include %s (floor %d)\n",
            file, inc, from, floor[from], to, floor[to]
        bad = 1
    }
}
function dfs(u,    i, m, vs) {
    state[u] = 1; stack[++depth] = u
    m = split(adj[u], vs, " ")
    for (i = 1; i <= m; i++) {
        if (state[vs[i]] == 1) {
            cyc = vs[i]
            for (k = depth; k >= 1 && stack[k] != vs[i]; k--) cyc = stack[k] " -> " cyc
            if (!seen[cyc]++) printf "layers: cycle: %s -> %s\n", vs[i], cyc
            bad = 1
        } else if (state[vs[i]] == 0)
            dfs(vs[i])
    }
    depth--; state[u] = 2
}
END {
    for (u in adj) if (!state[u]) dfs(u)
    if (!quiet) {
        for (e in edge) printf "%4d  %s\n", edge[e], e | "sort -k2"
        close("sort -k2")
    }
    if (!quiet || bad) {
        if (bad) print "layers: the folder graph breaks the floors of docs/ARCHITECTURE.md"
        else print "layers: no cycle, every include points down"
    }
    exit bad
}'
