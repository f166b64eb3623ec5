#!/usr/bin/env bash
# bench_search.sh -- the distributed search's own costs (issue 5), as a
# markdown section on stdout for tests/bench/run.sh:
#   1. the master's cost per individual with the `null` task (the evaluation
#      itself is a few microseconds: what is measured is dispatch + receive +
#      commit + the generation's own work), alone in one process and under
#      mpirun with 1 and 2 workers, batched (automatic batch) and unbatched
#      (one child per message);
#   2. the parallel efficiency with 1 and 2 workers on the `spin` task (about
#      0.5 ms of arithmetic per evaluation).
# Times come from the database (the sum of the generations' wall times, so
# mpirun's start-up is not counted) and the master's CPU time from trevo's
# closing line. Each figure is the median of REPEATS runs (default 5).
# usage: TREVO=build/trevo tests/bench/bench_search.sh
set -eu
trevo=$(realpath "${TREVO:-build/trevo}")
repeats=${REPEATS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cores=$(nproc)
# The benchmarks before this one write gigabytes (bench_store): let the
# kernel write them back first, or the write-back competes with the runs.
sync
sleep 2

# run NAME RANKS TASK POP GENS BATCH: prints
#   "wall_seconds evals master_cpu own_cpu startup_cpu"
run() {
    local name=$1 ranks=$2 task=$3 pop=$4 gens=$5 batch=$6
    local db=$work/$name.db cfg=$work/$name.ini log=$work/$name.log
    rm -f "$db" "$db-wal" "$db-shm" "$db-lock"
    printf '[run]\ntask = %s\nseed = 7\ngenerations = %s\n[population]\nsize = %s\n' \
        "$task" "$gens" "$pop" >"$cfg"
    printf '[farm]\nbatch = %s\n[store]\ndb = %s\n' "$batch" "$db" >>"$cfg"
    if [ "$ranks" = 0 ]; then
        "$trevo" run "$cfg" 2>"$log"
    else
        mpirun --oversubscribe -n "$ranks" "$trevo" run "$cfg" 2>"$log"
    fi
    local cpu own up
    cpu=$(sed -n 's/.*master CPU \([0-9.]*\) s.*/\1/p' "$log" | tail -1)
    own=$(sed -n 's/.*(own work \([0-9.]*\) s;.*/\1/p' "$log" | tail -1)
    up=$(sed -n 's/.*; start-up \([0-9.]*\) s).*/\1/p' "$log" | tail -1)
    sqlite3 "$db" "SELECT sum(wall_seconds), sum(n_evals) FROM generations" |
        tr '|' ' ' | sed "s/\$/ ${cpu:-nan} ${own:-nan} ${up:-nan}/"
}

# median NAME RANKS TASK POP GENS BATCH: the run with the median wall time
median() {
    local i
    for i in $(seq "$repeats"); do run "$@"; done | sort -n -k1,1 |
        sed -n "$(((repeats + 1) / 2))p"
}

us() { awk -v t="$1" -v n="$2" 'BEGIN { printf "%.1f", 1e6 * t / n }'; }

echo "Load average when the benchmark started: $(cut -d' ' -f1-3 /proc/loadavg) (on $cores cores;"
echo "other jobs share the machine, which inflates wall times and lowers efficiency)."
echo
echo "### The master's cost per individual (null task)"
echo
echo "Population 2,000, 10 generations (about 19,600 evaluations), median of $repeats runs."
echo "\`µs/ind wall\` is the search's wall time per evaluation (every rank's work"
echo "included); \`master CPU\` is rank 0's CPU time per evaluation during the"
echo "search (from the first generation to the last; every thread of the process),"
echo "and \`master's own work\` the part of it that is the master's cost: dispatch,"
echo "receive, decode, commit, speciation and planning, without waiting for workers"
echo "(polling) and without the evaluations it does itself when alone. The target is"
echo "≤ 5 µs. Start-up (MPI_Init, opening or creating the database) is a one-off cost,"
echo "shown apart in milliseconds of the master's CPU time."
echo
echo "| ranks | batch | evaluations | wall s | µs/ind wall | µs/ind master CPU | µs/ind master's own work | start-up ms | evaluations/s |"
echo "|---|---|---|---|---|---|---|---|---|"
for spec in "0 0 alone" "2 0 1-worker" "3 0 2-workers" "2 1 1-worker" "3 1 2-workers"; do
    set -- $spec
    read -r wall n cpu own up < <(median "null-$1-$2" "$1" null 2000 10 "$2")
    label=$([ "$1" = 0 ] && echo "1 (alone)" || echo "$1 (master + $(($1 - 1)) worker$([ "$1" -gt 2 ] && echo s))")
    echo "| $label | $([ "$2" = 0 ] && echo auto || echo 1) | $n | $(printf %.3f "$wall") |" \
        "$(us "$wall" "$n") | $(us "$cpu" "$n") | $(us "$own" "$n") | $(awk -v u="$up" 'BEGIN { printf "%.0f", 1000 * u }') | $(awk -v t="$wall" -v n="$n" 'BEGIN { printf "%.0f", n / t }') |"
done
echo

echo "### Parallel efficiency (spin task, ~0.5 ms per evaluation)"
echo
echo "Population 200, 10 generations (about 1,970 evaluations), automatic batch,"
echo "median of $repeats runs; efficiency = T(1 worker) / (workers × T(workers))."
echo "This machine has $cores cores: with 2 workers the master shares a core."
echo
echo "| ranks | workers | wall s | evaluations/s | speed-up vs 1 worker | efficiency |"
echo "|---|---|---|---|---|---|"
read -r t0 n0 _ _ _ < <(median spin-alone 0 spin 200 10 0)
echo "| 1 (alone) | in-process | $(printf %.3f "$t0") | $(awk -v t="$t0" -v n="$n0" 'BEGIN { printf "%.0f", n / t }') | | |"
read -r t1 n1 _ _ _ < <(median spin-1 2 spin 200 10 0)
echo "| 2 | 1 | $(printf %.3f "$t1") | $(awk -v t="$t1" -v n="$n1" 'BEGIN { printf "%.0f", n / t }') | 1.00 | 100 % |"
read -r t2 n2 _ _ _ < <(median spin-2 3 spin 200 10 0)
awk -v t1="$t1" -v t2="$t2" -v n="$n2" 'BEGIN {
    printf "| 3 | 2 | %.3f | %.0f | %.2f | %.0f %% |\n", t2, n / t2, t1 / t2, 100 * t1 / (2 * t2) }'
