#!/bin/sh
# layers.sh --allow FOLDER:INCLUDE_PATH ... OBJ... -- the house's rules,
# checked from what the objects of the libraries really call (nm), not from
# what their headers say (docs/architecture.md, "The house"):
#
#   1. a folder calls only the folders whose headers its include path holds
#      (the Makefile's INC_NAME, given as --allow "nn:-Inn -Inn/train ...
#      -Igenome -Itv"): calls go down, and the Makefile is the one home of
#      the layering; a sub-folder (nn/train) takes its top folder's rule;
#      inside nn/, a capability calls no other capability but as written
#      below (the engine at nn/'s top reaches them through its dispatch
#      points: plan.c, ops.c, state.c);
#   2. no two files call each other, directly or round a longer circle: the
#      files of the libraries form a DAG (a table of function pointers is
#      how a file above reaches a kernel below without being called back);
#   3. genome/, nn/ and data/ include no MPI or SQLite header, and genome/
#      and nn/ no zlib or data-set header (they are plain C libraries).
#
# OBJ is build/obj/FOLDER/.../FILE.o of each library source. Prints each
# broken rule with the files and the names that break it; exits 1 if any.
set -eu

allow_list=
while [ $# -gt 0 ] && [ "$1" = --allow ]; do
    allow_list="$allow_list
$2"
    shift 2
done
# folder: the folders it may call, from its --allow include path.
allowed() {
    top=${1%%/*}
    echo "$allow_list" | awk -v f="$top" -F: '$1 == f {
        n = split($2, w, " ")
        for (i = 1; i <= n; i++) if (w[i] ~ /^-I/) printf "%s ", substr(w[i], 3) }'
}
# Inside nn/: what a capability may not call.
nn_forbidden() {
    case $1 in
    nn/train) echo "nn/conv nn/spike nn/deploy" ;;
    nn/conv) echo "nn/spike nn/deploy" ;;
    nn/spike) echo "nn/train nn/conv nn/deploy" ;;
    nn/deploy) echo "nn/train nn/spike" ;;
    *) echo "" ;;
    esac
}

[ $# -gt 0 ] && [ -n "$allow_list" ] ||
    { echo "usage: layers.sh --allow FOLDER:INCLUDE_PATH ... OBJ..." >&2; exit 2; }
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

# "from to symbol": file `from` calls (or reads) `symbol`, defined by `to`.
for o in "$@"; do
    src=${o#*obj/}
    src=${src%.o}.c
    nm "$o" | awk -v f="$src" '$1 == "U" { print "U", f, $2 } $2 ~ /^[TDBRCVW]$/ { print "D", f, $3 }'
done | awk '$1 == "D" { def[$3] = $2; next }
    { use[++n] = $2 " " $3 }
    END { for (i = 1; i <= n; i++) { split(use[i], a, " ")
              if ((a[2] in def) && def[a[2]] != a[1]) print a[1], def[a[2]], a[2] } }' >"$edges"

bad=0
# 1. folders
while read -r from to sym; do
    ff=${from%/*} tf=${to%/*}
    [ "$ff" = "$tf" ] && continue
    ok=0
    for a in $(allowed "$ff"); do [ "$a" = "$tf" ] && ok=1; done
    for x in $(nn_forbidden "$ff"); do [ "$x" = "$tf" ] && ok=0; done
    if [ $ok = 0 ]; then
        echo "layers: $from calls $sym of $to: $ff/ may not call $tf/ (its include path: $(allowed "$ff"))"
        bad=1
    fi
done <"$edges"

# 2. circles of files: each group of files that reach one another
cycles=$(awk '
{ if (!(($1, $2) in e)) { e[$1, $2] = $3; adj[$1] = adj[$1] " " $2 } nodes[$1]; nodes[$2] }
END {
    for (s in nodes) {
        delete seen; q[1] = s; h = 1; t = 1; seen[s] = 1
        while (h <= t) {
            x = q[h++]; k = split(adj[x], nb, " ")
            for (i = 1; i <= k; i++) if (!(nb[i] in seen)) { seen[nb[i]] = 1; q[++t] = nb[i] }
        }
        for (d in seen) reach[s, d] = 1
    }
    for (s in nodes) if (!(s in done)) {
        grp = s; done[s] = 1; c = 1
        for (d in nodes) if (d != s && ((s, d) in reach) && ((d, s) in reach)) { grp = grp " " d; done[d] = 1; c++ }
        if (c > 1) {
            print "layers: files that call each other round a circle:", grp
            m = split(grp, g, " ")
            for (i = 1; i <= m; i++) for (j = 1; j <= m; j++)
                if ((g[i], g[j]) in e) print "    " g[i] " -> " g[j] " (" e[g[i], g[j]] ", ...)"
        }
    }
}' "$edges")
if [ -n "$cycles" ]; then
    echo "$cycles"
    bad=1
fi

# 3. headers
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
for f in $(find genome nn data -name '*.[ch]'); do
    if grep -qE '#include *[<"](mpi|sqlite3)\.h' "$f"; then
        echo "layers: $f includes MPI or SQLite"
        bad=1
    fi
done
for f in $(find genome nn -name '*.[ch]'); do
    if grep -qE '#include *[<"](zlib|data)\.h' "$f"; then
        echo "layers: $f includes zlib or the data sets"
        bad=1
    fi
done

[ $bad = 0 ] && echo "layers: ok ($(wc -l <"$edges") calls between $# files; no circle)"
exit $bad
