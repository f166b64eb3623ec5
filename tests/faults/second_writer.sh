#!/usr/bin/env bash
# Fault 6: a second writer. While a run goes on under mpirun, another
# `trevo run` of the same config, database and run name, a `trevo resume` of
# it, and both again under mpirun, are started: each must be refused
# (exit 1..127, a message saying the run exists or is being written) and end
# promptly; the first run must go on undisturbed and end identical to the
# uninterrupted run.
#
# Trials: 1 (--short), 3 (--full).
CASE_NAME=second_writer
FAULTS_SEED_OFFSET=6
. "$(dirname "$0")/lib.sh"
case_begin "$@"
if [ "$MODE" = full ]; then TRIALS=${TRIALS:-3}; else TRIALS=${TRIALS:-1}; fi
RE='exists already|being written|one writer'
n_refused=0 n_attempts=0 n_ok=0 worst_ms=0

attempt() { # LABEL DB COMMAND...
    local label=$1 db=$2 rc=0 t0 ms out
    shift 2
    n_attempts=$((n_attempts + 1))
    if ! kill -0 "$JOB" 2>/dev/null; then
        note "$label: the first run had ended already; not counted"
        n_attempts=$((n_attempts - 1))
        return 0
    fi
    t0=$(date +%s%N)
    timeout -s KILL "$JOB_LIMIT_S" "$@" >"$WORK/second.out" 2>&1 </dev/null || rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ $ms -le $worst_ms ] || worst_ms=$ms
    out=$(grep -E "$RE" "$WORK/second.out" | head -1 | cut -c1-200 || true)
    if [ -z "$out" ] && ! kill -0 "$JOB" 2>/dev/null; then
        note "$label: the first run ended meanwhile (exit $rc); not counted"
        n_attempts=$((n_attempts - 1))
        return 0
    fi
    if [ $rc = 0 ]; then
        fail "$label: a second writer was accepted (exit 0)"
    elif [ $rc = 137 ] || [ $rc = 124 ]; then
        fail "$label: did not end within $JOB_LIMIT_S s"
    elif [ $rc -ge 128 ]; then
        fail "$label: died of signal $((rc - 128))"
    elif [ -z "$out" ]; then
        fail "$label: refused (exit $rc) without saying why: $(head -3 "$WORK/second.out" | tr '\n' ' ' | cut -c1-200)"
    elif ! san_check "$WORK/second.out"; then
        fail "$label: sanitizer report"
    else
        n_refused=$((n_refused + 1))
        pass "$label: refused in $ms ms (exit $rc): $out"
    fi
}

for trial in $(seq 1 "$TRIALS"); do
    db=$WORK/w$trial.db
    start_mpi "$WORK/w$trial.log" $(run_args "$db") --quiet
    first=$JOB
    wait_gen "$db" $(( 1 + RANDOM % (REF_GENS / 4 + 1) )) "$JOB" || true
    g=$(last_gen "$db")
    attempt "trial $trial, after generation $g: trevo run (same config, database, run name)" "$db" \
        "$TREVO" $(run_args "$db") --quiet
    attempt "trial $trial: trevo resume" "$db" "$TREVO" resume "$db" --quiet
    attempt "trial $trial: mpirun -n 2 trevo resume" "$db" $MPIRUN 2 "$TREVO" resume "$db" --quiet
    attempt "trial $trial: mpirun -n $NP trevo run" "$db" $MPIRUN "$NP" "$TREVO" $(run_args "$db") --quiet
    JOB=$first
    wait_job "$JOB" "$JOB_LIMIT_S"
    if [ "$JOB_RC" != 0 ]; then
        fail "trial $trial: the first run exited $JOB_RC: $(tail -3 "$WORK/w$trial.log" | tr '\n' ' ')"
    elif ! compare_ref "$db"; then
        fail "trial $trial: the first run differs from the uninterrupted run"
    elif ! why=$(check_children "$db"); then
        fail "trial $trial: $why"
    elif [ "$(sq "$db" 'select status from runs')" != done ]; then
        fail "trial $trial: the first run ended with status '$(sq "$db" 'select status from runs')'"
    else
        n_ok=$((n_ok + 1))
        pass "trial $trial: the first run went on undisturbed and ended identical to the uninterrupted run"
    fi
    san_check "$WORK/w$trial.log" || fail "trial $trial: sanitizer report in the first run"
done
[ "$trial" = "$TRIALS" ] || fail "the case stopped early (after $trial of $TRIALS trials)"
[ $n_attempts -gt 0 ] || fail "no attempt was made while a run went on (the run is too short: $REF_RUN_MS ms; use more --generations)"
measure "fault=a second writer of the same database and run" \
    "how=trevo run (same config, database, name) and trevo resume, alone and under mpirun, while the run goes on under mpirun" \
    "times=$n_attempts attempts during $TRIALS runs" \
    "outcome=refused with exit 1 and a message (run 'exists already' / 'is being written by pid P on host H since T') $n_refused/$n_attempts, within $worst_ms ms; the first run ended identical $n_ok/$TRIALS" \
    "lost=none"
finish
