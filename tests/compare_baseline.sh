#!/bin/sh
# compare_baseline.sh [REF] -- "behaviour unchanged": the same configs and
# seeds give the same databases and champions with the trevo of git ref REF
# and with this tree's build/trevo.
#
# REF (default: the merge-base of HEAD and main, or HEAD when on main) is
# built in a temporary git worktree (make -j2 there; the worktree is removed
# afterwards). Both binaries then run experiments/xor.ini (seeds 1 and 105),
# pole1.ini, dpv.ini and dpnv.ini (the ini's own seed; at most 40 to 100
# generations) in one process, and xor.ini (seed 7) and dpnv.ini (30
# generations) under `mpirun -n 3 --oversubscribe`. For each run the
# two databases are compared table by table, every row and column except the
# ones that hold wall-clock times, hosts, pids or the evaluating rank:
#   runs.created_at, updated_at, writer_pid, writer_host, writer_since;
#   individuals.eval_seconds (and individuals.rank in the mpirun run, which
#   depends on which worker was free); generations.wall_seconds, closed_at;
#   checkpoints.created_at; the trevo_meta row 'created_at'
# (store/schema.c, store.c). Floats are compared by their 17 significant digits
# (exact for a double), blobs byte by byte; the schema, PRAGMA user_version
# and application_id too. Then the bytes that `trevo best` writes, as text
# and as msgpack (`best --by fitness` where a binary has that option: the
# fittest, which is what `best` gave before it learnt to prefer solvers).
#
# Prints one line per run, "same" or the first difference, and exits 0 only
# if every run is the same. 30 to 75 s on a shared 2-core machine, the build of REF
# included.
#
# Environment:
#   TREVO_NEW   the binary under test (default: build/trevo of this tree;
#               build it first with `make`)
#   TREVO_BASE  an already built binary of REF: skips the worktree and build
#   EXCLUDE     more columns to leave out, "table.column ..." (e.g.
#               EXCLUDE=runs.config when a change adds keys to the stored
#               config on purpose); printed with the verdicts
#   KEEP=1      keep the scratch directory (its path is printed)
# As root, the OMPI_ALLOW_RUN_AS_ROOT* variables are set for mpirun.
set -eu

top=$(git rev-parse --show-toplevel)
cd "$top"
if [ $# -ge 1 ]; then
    ref=$1
elif git rev-parse -q --verify main >/dev/null; then
    ref=$(git merge-base HEAD main)
else
    ref=HEAD
fi
ref_sha=$(git rev-parse --verify "$ref^{commit}")
new=${TREVO_NEW:-$top/build/trevo}
case $new in /*) ;; *) new=$PWD/$new ;; esac
[ -x "$new" ] || { echo "compare_baseline: no binary $new (run make first)" >&2; exit 2; }

scratch=$(mktemp -d /tmp/trevo-compare.XXXXXX)
wt=
cleanup() {
    if [ -n "$wt" ]; then
        git -C "$top" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
        git -C "$top" worktree prune
    fi
    if [ "${KEEP:-0}" = 1 ]; then
        echo "compare_baseline: kept $scratch"
    else
        rm -rf "$scratch"
    fi
}
trap cleanup EXIT
trap 'exit 130' HUP INT PIPE TERM

if [ -n "${TREVO_BASE:-}" ]; then
    base=$TREVO_BASE
else
    wt=$scratch/ref-tree
    git worktree add -q --detach "$wt" "$ref_sha"
    echo "compare_baseline: building $(git rev-parse --short "$ref_sha") in a temporary worktree"
    if ! nice make -C "$wt" -j2 build/trevo >"$scratch/build.log" 2>&1; then
        tail -20 "$scratch/build.log" >&2
        echo "compare_baseline: the build of $ref failed" >&2
        exit 2
    fi
    cp "$wt/build/trevo" "$scratch/trevo-ref"
    git -C "$top" worktree remove --force "$wt"
    git -C "$top" worktree prune
    wt=
    base=$scratch/trevo-ref
fi

if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# dump DB EXCLUDED -> every table's rows, one row per line
# ("table|col=value|col=value..."; newlines in text shown as \n), without the
# columns named in EXCLUDED (a space-separated list of table.column).
dump() {
    sqlite3 "$1" 'PRAGMA user_version' 'PRAGMA application_id'
    sqlite3 "$1" "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name"
    # the tables that say most first, then any other in name order
    for t in $(sqlite3 "$1" "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY \
        instr('runs generations individuals genomes species checkpoints', name) = 0, \
        instr('runs generations individuals genomes species checkpoints', name), name"); do
        skip="'-'"
        for e in $2; do
            case $e in "$t".*) skip="$skip, '${e#*.}'" ;; esac
        done
        cols=$(sqlite3 "$1" "SELECT group_concat('''' || name || '=''' || ' || CASE typeof(' \
            || name || ') WHEN ''real'' THEN printf(''%!.17g'', ' || name || ') ELSE replace(quote(' \
            || name || '), char(10), ''\\n'') END', ' || ''|'' || ') FROM pragma_table_info('$t') \
            WHERE name NOT IN ($skip)")
        keys=$(sqlite3 "$1" "SELECT group_concat(name, ', ') FROM \
            (SELECT name FROM pragma_table_info('$t') WHERE pk > 0 ORDER BY pk)")
        sqlite3 "$1" "SELECT '$t|' || $cols FROM \"$t\" ORDER BY ${keys:-1}"
    done | grep -v "^trevo_meta|key='created_at'|"
}

# first_difference A B: the first row where two dumps differ, as "table
# key...: column=A's value vs column=B's value", long values cut to 48
# characters from a little before the first one that differs.
first_difference() {
    awk -v A="$1" -v B="$2" 'BEGIN {
        for (;;) {
            ra = getline a <A; rb = getline b <B
            if (ra <= 0 || rb <= 0) break
            if (a != b) break
        }
        if (ra <= 0 && rb <= 0) { print "(no difference)"; exit }
        if (ra <= 0) { print "only B has: " substr(b, 1, 120); exit }
        if (rb <= 0) { print "only A has: " substr(a, 1, 120); exit }
        na = split(a, fa, "|"); split(b, fb, "|")
        for (k = 2; k <= na && fa[k] == fb[k]; k++) ;
        key = ""
        for (i = 2; i < k && i <= 4; i++) key = key " " fa[i]
        x = fa[k]; y = fb[k]
        for (j = 1; j <= length(x) && substr(x, j, 1) == substr(y, j, 1); j++) ;
        at = j > 24 ? j - 16 : 1
        col = substr(x, 1, index(x, "=") - 1)
        cut = at > 1 ? col ", from character " at ": ..." : ""
        dots = at > 1 ? "..." : ""
        printf "%s%s: %s%s vs %s%s\n", fa[1], key, cut, substr(x, at, 48), dots, substr(y, at, 48)
    }'
}

EXCL_TIME="runs.created_at runs.updated_at runs.writer_pid runs.writer_host runs.writer_since
individuals.eval_seconds generations.wall_seconds generations.closed_at checkpoints.created_at ${EXCLUDE:-}"

# champion BIN DB OUT: the bytes `best` writes, text then msgpack.
champion() {
    by=
    if "$1" best --help 2>&1 | grep -q -- '--by'; then by='--by fitness'; fi
    # shellcheck disable=SC2086
    "$1" best "$2" $by >"$3.txt" 2>/dev/null || echo "best failed" >"$3.txt"
    # shellcheck disable=SC2086
    "$1" best "$2" $by --format msgpack -o "$3.mp" 2>/dev/null || echo "best failed" >"$3.mp"
}

# one LABEL CONFIG GENERATIONS RANKS [SEED]: runs both binaries (the config's
# own seed, or SEED), prints the verdict.
status=0
one() {
    label=$1 config=$2 gens=$3 ranks=$4 seed=${5:+--seed $5}
    excl=$EXCL_TIME
    [ "$ranks" -gt 1 ] && excl="$excl individuals.rank"
    for side in base new; do
        dir=$scratch/$label/$side
        mkdir -p "$dir"
        if [ $side = base ]; then bin=$base; else bin=$new; fi
        if [ "$ranks" -gt 1 ]; then
            launch="mpirun -n $ranks --oversubscribe"
        else
            launch=
        fi
        # the same relative --db on both sides: the stored config names it
        rc=0
        (cd "$dir" && nice $launch "$bin" run "$top/experiments/$config" --db run.db $seed \
            --generations "$gens" --quiet >run.log 2>&1) || rc=$?
        if [ $rc != 0 ]; then
            echo "$label: $side run failed (exit status $rc): $(tail -1 "$dir/run.log")"
            status=1
            return
        fi
        dump "$dir/run.db" "$excl" >"$dir/dump.txt"
        champion "$bin" "$dir/run.db" "$dir/best"
    done
    b=$scratch/$label/base n=$scratch/$label/new
    if ! cmp -s "$b/dump.txt" "$n/dump.txt"; then
        # printf, not echo: dash's echo would expand the \n of the dump
        printf '%s: differ: database: %s\n' "$label" "$(first_difference "$b/dump.txt" "$n/dump.txt")"
        status=1
    elif ! cmp -s "$b/best.txt" "$n/best.txt"; then
        echo "$label: differ: trevo best (text): $(cmp "$b/best.txt" "$n/best.txt" 2>&1)"
        status=1
    elif ! cmp -s "$b/best.mp" "$n/best.mp"; then
        echo "$label: differ: trevo best (msgpack): $(cmp "$b/best.mp" "$n/best.mp" 2>&1)"
        status=1
    else
        echo "$label: same ($(grep -c '^individuals|' "$n/dump.txt") individuals," \
            "$(grep -c '^generations|' "$n/dump.txt") generations)"
    fi
}

echo "compare_baseline: $(git rev-parse --short "$ref_sha") ($base) against $new"
[ -z "${EXCLUDE:-}" ] || echo "compare_baseline: also left out: $EXCLUDE"
one xor xor.ini 100 1
one xor-seed105 xor.ini 100 1 105
one pole1 pole1.ini 40 1
one dpv dpv.ini 40 1
one dpnv dpnv.ini 100 1
one xor-mpirun-3 xor.ini 100 3 7
one dpnv-mpirun-3 dpnv.ini 30 3
exit $status
