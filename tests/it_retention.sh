#!/usr/bin/env bash
# Genome retention ([store] genomes = population | champions | elite, the
# default): a run under
# mpirun -n 3 killed with kill -9 (the whole process tree) in the middle and
# resumed -- twice -- ends identical to the uninterrupted run with the same
# policy (every individual's row, the genomes kept, the statistics, the last
# checkpoint), keeps the genomes it says it keeps, and its database is
# smaller than the same run's with genomes = all, whose rows and statistics
# it shares. `trevo best`, `trevo plot --front` and `trevo status` work on it.
set -eu
: "${TREVO:?}"
T=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$T"' EXIT
MPIRUN="mpirun -n 3 ${MPIRUN_ASAN:-}"
fail() { echo "FAIL: $*"; exit 1; }

config() { # POLICY DB
    cat <<EOF
[run]
task = spin
seed = 5
generations = 60
stop_on_solve = false
[population]
size = 24
[genome]
init = layered
init_hidden = 24,24
[store]
db = $2
genomes = $1
EOF
}

descendants() { local c; for c in $(pgrep -P "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }
closed() { sqlite3 "$1" "SELECT coalesce(max(generation), -1) FROM generations" 2>/dev/null || echo -1; }

# What must not depend on kills and resumes: every individual's row (but the
# rank that evaluated it and the time it took), the genomes kept, each
# generation's statistics (not its wall time), the last checkpoint.
dump() { # DB
    sqlite3 "$1" "SELECT id, generation, fitness, parent1, parent2, op, species, n_neurons,
                    n_conns, n_skip, n_recurrent, solved FROM individuals ORDER BY id;
                  SELECT id, hex(data) FROM genomes ORDER BY id;
                  SELECT generation, best, mean, median, champion, n_species, n_evals, solved
                    FROM generations ORDER BY generation;
                  SELECT generation, hex(state), hex(population) FROM checkpoints
                    ORDER BY generation;"
}

config all "$T/all.db" >"$T/all.ini"
$MPIRUN "$TREVO" run "$T/all.ini" --quiet 2>"$T/all.log" || { cat "$T/all.log"; fail "run with genomes = all"; }
all_bytes=$(stat -c %s "$T/all.db")
rows() { sqlite3 "$1" "SELECT id, generation, fitness, n_conns FROM individuals ORDER BY id;
                       SELECT generation, best, champion FROM generations ORDER BY generation"; }

for policy in population champions elite; do
    ref=$T/ref_$policy.db db=$T/$policy.db
    config "$policy" "$ref" >"$T/ref_$policy.ini"
    config "$policy" "$db" >"$T/$policy.ini"
    $MPIRUN "$TREVO" run "$T/ref_$policy.ini" 2>"$T/ref_$policy.log" ||
        { cat "$T/ref_$policy.log"; fail "$policy: uninterrupted run"; }
    grep -q "; database .* per generation, .* per individual)" "$T/ref_$policy.log" ||
        { cat "$T/ref_$policy.log"; fail "$policy: the closing line does not give the database's growth"; }

    # kill -9 of mpirun and its ranks once generations have closed, twice
    setsid $MPIRUN "$TREVO" run "$T/$policy.ini" --quiet 2>"$T/$policy.log" &
    pid=$!
    for stop_at in 4 25; do
        for _ in $(seq 600); do
            [ "$(closed "$db")" -ge $stop_at ] && break
            kill -0 $pid 2>/dev/null || break
            sleep 0.05
        done
        kill -9 $pid $(descendants $pid) 2>/dev/null || true
        wait $pid 2>/dev/null || true
        [ "$(closed "$db")" -lt 59 ] || fail "$policy: the run ended before it could be killed"
        if [ $stop_at = 4 ]; then
            setsid $MPIRUN "$TREVO" resume "$db" --quiet 2>>"$T/$policy.log" &
            pid=$!
        fi
    done
    $MPIRUN "$TREVO" resume "$db" --quiet 2>>"$T/$policy.log" ||
        { cat "$T/$policy.log"; fail "$policy: the last resume"; }
    [ "$(closed "$db")" = 59 ] || fail "$policy: resumed run ended at generation $(closed "$db")"
    dump "$ref" >"$T/ref.txt"
    dump "$db" >"$T/got.txt"
    cmp -s "$T/ref.txt" "$T/got.txt" ||
        { diff "$T/ref.txt" "$T/got.txt" | head -20; fail "$policy: killed and resumed differs from uninterrupted"; }
    rows "$T/all.db" >"$T/all_rows.txt"
    rows "$db" >"$T/rows.txt"
    cmp -s "$T/all_rows.txt" "$T/rows.txt" || fail "$policy: rows differ from genomes = all's"

    # what is kept: the last population's genomes (and each champion's)
    n_ind=$(sqlite3 "$db" "SELECT count(*) FROM individuals")
    n_gen=$(sqlite3 "$db" "SELECT count(*) FROM genomes")
    n_ckpt=$(sqlite3 "$db" "SELECT count(*) FROM checkpoints")
    no_champ=$(sqlite3 "$db" "SELECT count(*) FROM generations g WHERE NOT EXISTS
                              (SELECT 1 FROM genomes x WHERE x.id = g.champion)")
    [ "$n_ind" = "$(sqlite3 "$T/all.db" "SELECT count(*) FROM individuals")" ] ||
        fail "$policy: $n_ind individuals, not all's"
    [ "$n_ckpt" = 1 ] || fail "$policy: $n_ckpt checkpoints kept"
    if [ $policy = population ]; then
        [ "$n_gen" = 24 ] || fail "population: $n_gen genomes kept, not the population's 24"
    else
        [ "$no_champ" = 0 ] || fail "$policy: $no_champ champions without their genome"
        [ "$n_gen" -ge 24 ] || fail "$policy: only $n_gen genomes kept"
    fi
    bytes=$(stat -c %s "$db")
    [ "$bytes" -lt "$all_bytes" ] || fail "$policy: database of $bytes bytes, not smaller than all's $all_bytes"
    echo "$policy: $n_gen of $n_ind genomes kept, $bytes bytes against $all_bytes with all"

    # the commands that read genomes or rows
    "$TREVO" best "$db" -o "$T/best.net" || fail "$policy: trevo best"
    "$TREVO" status "$db" >"$T/status.txt" || fail "$policy: trevo status"
    grep -q "^database .* per generation, .* per individual); 60 generations, $n_ind individuals, $n_gen with their genome" "$T/status.txt" ||
        { cat "$T/status.txt"; fail "$policy: trevo status does not give the database's size"; }
    if command -v gnuplot >/dev/null; then
        "$TREVO" plot "$db" --front -o "$T/front.png" || fail "$policy: trevo plot --front"
        [ -s "$T/front.png" ] || fail "$policy: empty plot"
        "$TREVO" plot "$db" -o "$T/plot.png" || fail "$policy: trevo plot"
    fi
done
echo "it_retention: ok"
