# tests/faults/lib.sh -- shared by the fault-matrix scripts (sourced, not run).
#
# Every case script takes the same arguments:
#   CASE.sh [--short|--full] [--config FILE] [--generations N] [--size N] [--np N] TREVO
# and the same environment:
#   CONFIG=FILE       experiment config (default: a small XOR run written to a temp dir);
#                     its [store] db key is ignored (every run gets --db)
#   GENERATIONS=N     generations of every run (trevo run --generations N)
#   SIZE=N            population ([population] size, rewritten in a copy of the config)
#   NP=N              ranks under mpirun (master + NP-1 workers; default 3)
#   FAULTS_SEED=N     seed of the random choices (printed, so a failure can be repeated)
#   FAULTS_REF=DIR    an uninterrupted reference run made by ref_make (run.sh makes one
#                     and shares it with every case)
#   FAULTS_KEEP=1     keep the temp dir (databases, logs) for a post-mortem
# Each case prints one PASS/FAIL line per check, with the reason, and exits
# non-zero if any check failed. Measured facts for RELIABILITY.md are printed
# as "MEASURE <case> | <field>=<value> ..." lines.

set -eu

FAULTS_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODE=short
CONFIG=${CONFIG:-}
GENERATIONS=${GENERATIONS:-}
SIZE=${SIZE:-}
NP=${NP:-3}
TREVO=

faults_usage() {
    echo "usage: $0 [--short|--full] [--config FILE] [--generations N] [--size N] [--np N] TREVO" >&2
    exit 2
}

parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
        --short) MODE=short ;;
        --full) MODE=full ;;
        --config) [ $# -ge 2 ] || faults_usage; CONFIG=$2; shift ;;
        --generations) [ $# -ge 2 ] || faults_usage; GENERATIONS=$2; shift ;;
        --size) [ $# -ge 2 ] || faults_usage; SIZE=$2; shift ;;
        --np) [ $# -ge 2 ] || faults_usage; NP=$2; shift ;;
        -h | --help) faults_usage ;;
        -*) faults_usage ;;
        *) [ -z "$TREVO" ] || faults_usage; TREVO=$1 ;;
        esac
        shift
    done
    [ -n "$TREVO" ] || faults_usage
    [ -x "$TREVO" ] || { echo "FAIL: $TREVO is not an executable" >&2; exit 2; }
    TREVO=$(realpath "$TREVO")
    [ -z "$CONFIG" ] || CONFIG=$(realpath "$CONFIG")
    export TREVO MODE CONFIG GENERATIONS SIZE NP
}

# ---- environment: Open MPI as root, sanitizer builds -------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

faults_env() {
    # A sanitizer build (make BUILD=build/asan SAN=1): the same options as
    # tests/run_integration.sh, unless the caller set them already.
    if ldd "$TREVO" 2>/dev/null | grep -q libasan; then
        FAULTS_ASAN=1
        : "${LSAN_OPTIONS:=suppressions=$FAULTS_LIB_DIR/../lsan.supp:print_suppressions=0}"
        : "${MPIRUN_ASAN:=-x ASAN_OPTIONS=detect_leaks=0}"
        export LSAN_OPTIONS MPIRUN_ASAN
    else
        FAULTS_ASAN=0
    fi
    # Niced: the ranks poll at full speed, three on two cores, and the
    # harness (sqlite3, ps, kill) waiting behind them aims its faults late
    # (a freeze meant for mid-run fell at generation 248 of 250 once). nice
    # execs mpirun, so $! is still mpirun's pid.
    MPIRUN="nice -n 10 mpirun --oversubscribe ${MPIRUN_ASAN:-} -n"
    if [ -z "${FAULTS_SEED:-}" ]; then
        FAULTS_SEED=$(( $(date +%s%N) % 1000000 ))
    fi
    export FAULTS_SEED
    RANDOM=$(( FAULTS_SEED + ${FAULTS_SEED_OFFSET:-0} ))
}

# ---- results ------------------------------------------------------------------
N_PASS=0
N_FAIL=0
CASE_NAME=${CASE_NAME:-$(basename "$0" .sh)}
pass() { N_PASS=$((N_PASS + 1)); echo "PASS [$CASE_NAME] $*"; }
fail() { N_FAIL=$((N_FAIL + 1)); echo "FAIL [$CASE_NAME] $*"; }
note() { echo "     [$CASE_NAME] $*"; }
# One row of the fault matrix: measure "fault=..." "how=..." "times=..."
# "outcome=..." "lost=..." (run.sh turns these lines into RELIABILITY.md's table).
measure() {
    local line="MEASURE $CASE_NAME" f
    for f in "$@"; do line="$line | ${f//|//}"; done
    echo "$line"
}
# Ends the case: summary line, exit status.
finish() {
    echo "[$CASE_NAME] $N_PASS passed, $N_FAIL failed ($(( $(date +%s) - CASE_T0 )) s, FAULTS_SEED=$FAULTS_SEED)"
    [ "$N_FAIL" -eq 0 ]
}
CASE_T0=$(date +%s)

# Sanitizer reports or a death by signal in a log file: prints why, returns 1.
san_check() { # LOGFILE
    if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: UndefinedBehaviorSanitizer' "$1" 2>/dev/null; then
        grep -m3 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY:' "$1" | sed 's/^/     | /'
        return 1
    fi
    return 0
}

# ---- temp dir -------------------------------------------------------------------
MOUNTS=()
faults_cleanup() {
    local m
    for m in "${MOUNTS[@]+"${MOUNTS[@]}"}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
    # processes this case started and left behind (a failed case)
    local p
    for p in ${FAULTS_PIDS:-}; do kill -9 $p $(descendants $p) 2>/dev/null || true; done
    [ -n "${WORK:-}" ] && [ -z "${FAULTS_KEEP:-}" ] && rm -rf "$WORK"
}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/trevo-faults.XXXXXX")
trap faults_cleanup EXIT
FAULTS_PIDS=

# ---- processes ----------------------------------------------------------------------
descendants() { local c; for c in $(pgrep -P "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }

# The pid of MPI rank R among the descendants of mpirun (its environment says which).
rank_pid() { # MPIRUN_PID RANK
    local c
    for c in $(descendants "$1"); do
        if tr '\0' '\n' 2>/dev/null <"/proc/$c/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

# Waits until none of the pids is alive (zombies count as gone): a process
# killed with SIGKILL closes its files (and drops its locks) on its way out.
wait_gone() {
    local p i alive
    for i in $(seq 1 500); do
        alive=0
        for p in "$@"; do
            if [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]; then
                alive=1
            fi
        done
        [ $alive = 0 ] && return 0
        sleep 0.01
    done
    return 1
}

# Kills a process and all its descendants in one kill(1) call, then waits for
# them. PIDS, when given, is the list to kill (found beforehand with
# tree_pids, so that the kill itself lands without delay).
kill_tree() { # SIG PID [PIDS]
    local pids=${3:-}
    [ -n "$pids" ] || pids=$(tree_pids "$2")
    kill "-$1" $pids 2>/dev/null || true
    wait_gone $pids || true
}
tree_pids() { echo "$1" $(descendants "$1"); }

# Waits for background job PID at most SECONDS; sets JOB_RC (124 on timeout,
# after which the job and its descendants are killed). With LOG, REGEX and
# GRACE: once a line of LOG matches REGEX, the job has GRACE more seconds to
# end, else it counts as hung (124) too.
wait_job() { # PID SECONDS [LOG REGEX GRACE]
    local pid=$1 limit=$2 log=${3:-} re=${4:-} grace=${5:-} t0 seen=
    t0=$(date +%s)
    while kill -0 "$pid" 2>/dev/null; do
        if [ -n "$log" ] && [ -z "$seen" ] && grep -qE "$re" "$log" 2>/dev/null; then
            seen=$(date +%s)
        fi
        if { [ -n "$seen" ] && [ $(( $(date +%s) - seen )) -ge "$grace" ]; } ||
            [ $(( $(date +%s) - t0 )) -ge "$limit" ]; then
            kill_tree 9 "$pid"
            wait "$pid" 2>/dev/null || true
            JOB_RC=124
            return 0
        fi
        sleep 0.05
    done
    JOB_RC=0
    wait "$pid" || JOB_RC=$?
}

# Starts `mpirun -n NP trevo ARGS...` in the background, output to LOG; sets JOB.
start_mpi() { # LOG ARGS...
    local log=$1
    shift
    $MPIRUN "$NP" "$TREVO" "$@" >"$log" 2>&1 &
    JOB=$!
    FAULTS_PIDS="$FAULTS_PIDS $JOB"
}

# ---- the database ------------------------------------------------------------------
# sq (read-only sqlite3), last_gen DB and wait_gen DB TARGET PID.
. "$FAULTS_LIB_DIR/../lib_db.sh"

# Waits until a child of the generation after the last closed one is
# committed (a batch commit of an open generation); gives up (returns 1)
# when job PID has ended or after about three generations' time (a config
# whose generations commit only when they close).
wait_pending() { # DB PID
    local n t0 limit_ms=$(( ${REF_GEN_MS:-1000} * 3 + 100 ))
    t0=$(date +%s%N)
    while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt $limit_ms ]; do
        n=$(sq "$1" "select count(*) from individuals where run_id = (select min(run_id) from runs)
                     and generation > (select coalesce(max(generation), -1) from generations)" 2>/dev/null || echo 0)
        [ "${n:-0}" -gt 0 ] && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.005
    done
    return 1
}

# A random delay in seconds, 0 to DELAY_MAX_MS milliseconds ("0.123").
random_delay() {
    local ms=$(( (RANDOM * 32768 + RANDOM) % (DELAY_MAX_MS + 1) ))
    printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

# Champion, per-generation statistics, every individual and genome, species
# and checkpoints: everything deterministic in the database (not wall times,
# eval times, ranks or timestamps). One labelled line each, so a diff says what.
signature() { # DB
    local db=$1
    echo "champion $("$TREVO" best "$db" 2>&1 | sha256sum | cut -c1-16)"
    sq "$db" "select 'generations', count(*), max(generation) from generations"
    sq "$db" "select 'generation', generation, best, mean, median, champion, n_species, n_evals
              from generations order by generation"
    sq "$db" "select 'individuals', count(*), count(distinct id), min(id), max(id),
              sum(fitness) from individuals"
    echo "individual-rows $(sq "$db" "select id, generation, fitness, parent1, parent2, op,
          species, n_neurons, n_conns, n_skip, n_recurrent, solved, valid_acc, flash, ram, macs
          from individuals order by id" |
          sha256sum | cut -c1-16)"
    echo "genomes $(sq "$db" "select id, hex(data) from genomes order by id" | sha256sum | cut -c1-16)"
    echo "species $(sq "$db" "select * from species order by generation, species" | sha256sum | cut -c1-16)"
    echo "checkpoints $(sq "$db" "select generation, hex(state), hex(population), n_population
          from checkpoints order by generation" | sha256sum | cut -c1-16)"
}

# Structural checks of a finished database: one child per (generation, child
# index) -- a generation's children have the consecutive ids base..base+n-1 --
# and the run ended 'done'. Prints the problem, returns 1.
check_children() { # DB
    local bad
    bad=$(sq "$1" "select generation from individuals group by generation
                   having count(*) != count(distinct id) or max(id) - min(id) + 1 != count(*)
                   limit 3")
    [ -z "$bad" ] || { echo "generation(s) $bad: duplicate or missing child index"; return 1; }
    bad=$(sq "$1" "select generation from generations g where n_evals !=
                   (select count(*) from individuals i where i.generation = g.generation) limit 3")
    [ -z "$bad" ] || { echo "generation(s) $bad: n_evals differs from the children stored"; return 1; }
    return 0
}

# Compares a final database with the reference: returns 1 and prints the first
# differing lines when they differ.
compare_ref() { # DB LABEL
    signature "$1" >"$WORK/cmp.sig" 2>&1 || true
    if cmp -s "$FAULTS_REF/ref.sig" "$WORK/cmp.sig"; then
        return 0
    fi
    diff "$FAULTS_REF/ref.sig" "$WORK/cmp.sig" | head -8 | sed 's/^/     | /'
    return 1
}

# What a crash left must be a prefix of the reference: every closed
# generation and every committed individual equal to the reference's.
# Prints the mismatch count (0 when intact).
partial_mismatches() { # DB
    sq "$1" "attach '$FAULTS_REF/ref-copy.db' as r;
      select (select count(*) from generations g left join r.generations h using (run_id, generation)
              where h.generation is null or not (g.best is h.best and g.mean is h.mean
                and g.median is h.median and g.champion is h.champion and g.n_evals is h.n_evals
                and g.n_species is h.n_species))
           + (select count(*) from individuals i left join r.individuals j using (run_id, id)
              where j.id is null or not (i.generation is j.generation and i.fitness is j.fitness
                and i.parent1 is j.parent1 and i.parent2 is j.parent2 and i.op is j.op
                and i.n_conns is j.n_conns
                -- a champion that passes its task's champion test is marked
                -- solved when its generation closes: compare the flag of
                -- closed generations only
                and (i.solved is j.solved
                     or i.generation > coalesce((select max(generation) from generations), -1))))
           + (select count(*) from genomes a left join r.genomes b using (run_id, id)
              where b.id is null or a.data != b.data)"
}

# (id, eval_seconds, rank) of every committed individual: if a resume
# evaluated one of them again, its row would change.
committed_rows() { sq "$1" "select id || ' ' || eval_seconds || ' ' || rank from individuals" | sort; }

# ---- config ----------------------------------------------------------------------
# The fault matrix's default run: XOR, small enough to run many times, long
# enough (several seconds even on a quiet machine) for signals to land
# mid-run; several commits per generation, so that faults land between them.
default_config() { # FILE
    xor400_config "$1" 250
    echo "commit_batch = 64" >>"$1"
}

# Writes the effective config: CONFIG (or the default) with [population] size
# replaced by SIZE when given, and [store] genomes = all: what a crash left
# is compared with the reference genome by genome (partial_mismatches), and
# the default retention drops, when a generation closes, genomes a crash
# may have left committed before (tests/it_retention.sh and
# it_store_size.sh kill and resume runs with the other policies).
make_config() { # OUT
    local src=${CONFIG:-}
    if [ -z "$src" ]; then
        src=$WORK/default.ini
        default_config "$src"
    fi
    cp "$src" "$1"
    [ -z "$SIZE" ] || config_set "$1" population size "$SIZE"
    config_set "$1" store genomes all
}

# Sets KEY = VALUE in [SECTION] of the config FILE (replaced, or added).
config_set() { # FILE SECTION KEY VALUE
    awk -v sec="$2" -v key="$3" -v val="$4" '
        function flush() { if (insec && !done) { print key " = " val; done = 1 } }
        /^[ \t]*\[/ { flush(); insec = ($0 ~ "^[ \t]*\\[" sec "\\]"); if (insec) seen = 1 }
        insec && $0 ~ "^[ \t]*" key "[ \t]*=" { print key " = " val; done = 1; next }
        { print }
        END { flush(); if (!seen) { print "[" sec "]"; print key " = " val } }' "$1" >"$1.new"
    mv "$1.new" "$1"
}

# trevo run arguments shared by every run of the matrix.
run_args() { # DB
    local a="run $WORK/run.ini --db $1"
    [ -z "$GENERATIONS" ] || a="$a --generations $GENERATIONS"
    echo "$a"
}

# ---- the reference: one uninterrupted run under mpirun ----------------------------
# Makes FAULTS_REF (unless given): ref.db, ref-copy.db, ref.sig, and facts:
# gens (closed generations), gen_ms (mean wall time of a generation),
# run_s (wall time of the run), db_bytes.
ref_make() {
    make_config "$WORK/run.ini"
    if [ -n "${FAULTS_REF:-}" ] && [ -f "$FAULTS_REF/ref.sig" ]; then
        ref_load
        return 0
    fi
    FAULTS_REF=$WORK/ref
    mkdir -p "$FAULTS_REF"
    local t0 t1 rc=0
    t0=$(date +%s%N)
    $MPIRUN "$NP" "$TREVO" $(run_args "$FAULTS_REF/ref.db") --quiet >"$FAULTS_REF/ref.log" 2>&1 || rc=$?
    t1=$(date +%s%N)
    if [ $rc -ne 0 ]; then
        echo "FAIL [reference] the uninterrupted run failed (exit $rc):"
        tail -5 "$FAULTS_REF/ref.log"
        exit 1
    fi
    cp "$FAULTS_REF/ref.db" "$FAULTS_REF/ref-copy.db"
    signature "$FAULTS_REF/ref.db" >"$FAULTS_REF/ref.sig"
    {
        echo "gens=$(sq "$FAULTS_REF/ref.db" 'select count(*) from generations')"
        echo "gen_ms=$(sq "$FAULTS_REF/ref.db" 'select cast(avg(wall_seconds) * 1000 + 1 as int) from generations')"
        echo "run_ms=$(( (t1 - t0) / 1000000 ))"
        echo "db_bytes=$(stat -c %s "$FAULTS_REF/ref.db")"
        echo "individuals=$(sq "$FAULTS_REF/ref.db" 'select count(*) from individuals')"
    } >"$FAULTS_REF/facts"
    export FAULTS_REF
    ref_load
}

ref_load() {
    # shellcheck disable=SC1091
    . "$FAULTS_REF/facts"
    REF_GENS=$gens REF_GEN_MS=$gen_ms REF_RUN_MS=$run_ms REF_DB_BYTES=$db_bytes
    REF_INDIVIDUALS=$individuals
    # Kills land up to 1.5 generations after a generation closed.
    DELAY_MAX_MS=$(( REF_GEN_MS * 3 / 2 + 5 ))
    # Any job that takes this long hangs.
    JOB_LIMIT_S=$(( REF_RUN_MS / 1000 * 5 + 60 ))
}

# What every case script does first: its arguments, the environment, and the
# reference run.
case_begin() { # ARGS...
    parse_args "$@"
    faults_env
    ref_make
}
