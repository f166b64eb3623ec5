#!/usr/bin/env bash
# Fault 2: one worker rank (not rank 0) killed with kill -9 in the middle of
# a generation. Open MPI 4.1 has no fault tolerance (docs/facts.md), so the job
# must end, non-zero, within a bounded time; its output must name the cause
# (the dead rank) and say how to resume; the database passes integrity_check
# and holds only what the reference holds; `trevo resume` then ends identical
# to the uninterrupted run. The worker is found among mpirun's children by
# OMPI_COMM_WORLD_RANK in /proc/PID/environ.
#
# Trials: 1 (--short), 3 (--full), or TRIALS=N. The full form adds one run
# with --quiet, to record whether the resume hint survives it (a note).
CASE_NAME=worker_kill
FAULTS_SEED_OFFSET=2
. "$(dirname "$0")/lib.sh"
case_begin "$@"
[ "$NP" -ge 2 ] || { fail "needs at least 2 ranks (--np)"; finish; exit; }

if [ "$MODE" = full ]; then TRIALS=${TRIALS:-3}; else TRIALS=${TRIALS:-1}; fi
n_ok=0 end_ms_max=0 rcs= sts= lost_total=0 checked=0 QUIET_HINT= TREVO_SAID= retries=0
trial=0
while [ $trial -lt $((TRIALS + 1)) ]; do
    trial=$((trial + 1))
    quiet=
    if [ "$trial" -gt "$TRIALS" ]; then
        [ "$MODE" = full ] || break
        quiet=--quiet
    fi
    db=$WORK/w$trial.db log=$WORK/w$trial.log
    start_mpi "$log" $(run_args "$db") $quiet
    t=$(( 1 + RANDOM % (REF_GENS / 2 + 1) ))
    wait_gen "$db" "$t" "$JOB" || true
    wait_pending "$db" "$JOB" || true # mid-generation: a batch of the open generation is in
    sleep "$(DELAY_MAX_MS=$((DELAY_MAX_MS / 3)) random_delay)"
    r=$(( 1 + RANDOM % (NP - 1) ))
    wpid=$(rank_pid "$JOB" "$r" || true)
    if [ -z "$wpid" ] || ! kill -0 "$JOB" 2>/dev/null; then
        wait "$JOB" 2>/dev/null || true
        if [ $retries -lt 3 ]; then
            retries=$((retries + 1))
            note "trial $trial: the run ended before rank $r could be killed; again"
            trial=$((trial - 1))
        else
            fail "trial $trial: the run ended before rank $r could be killed (it takes $REF_RUN_MS ms: use more --generations)"
        fi
        continue
    fi
    g=$(last_gen "$db")
    t0=$(date +%s%N)
    kill -9 "$wpid"
    wait_job "$JOB" "$JOB_LIMIT_S"
    end_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    case " $rcs " in *" $JOB_RC "*) ;; *) rcs="$rcs $JOB_RC" ;; esac
    [ $end_ms -le $end_ms_max ] || end_ms_max=$end_ms
    what="trial $trial${quiet:+ (--quiet)}: rank $r (pid $wpid) killed after generation $g"
    if [ "$JOB_RC" = 124 ]; then
        fail "$what: the job did not end within $JOB_LIMIT_S s (hang)"
    elif [ "$JOB_RC" = 0 ]; then
        fail "$what: the job exited 0 (a dead worker must end the job non-zero)"
    else
        pass "$what: the job ended in $end_ms ms with exit status $JOB_RC"
    fi
    # The cause: Open MPI names the dead rank; how to resume: trevo's hint.
    cause=$(grep -E "rank $r .*(signal 9|Killed)" "$log" | head -1 || true)
    hint=$(grep -o 'trevo resume [^)]*' "$log" | head -1 || true)
    tail_msgs=$(grep -E '^trevo' "$log" | grep -v '^trevo: run .* in .*stopped or killed' | head -2 || true)
    if [ -n "$quiet" ]; then
        note "$what: resume hint in the output: ${hint:-none}"
        if [ -n "$hint" ]; then QUIET_HINT=yes; else QUIET_HINT=no; fi
    elif [ -n "$cause" ] && [ -n "$hint" ]; then
        pass "$what: the output names the cause ('$(echo "$cause" | sed 's/^ *//')') and how to resume ('$hint')"
    else
        fail "$what: the output lacks$([ -n "$cause" ] || echo " the cause (which rank died)")$([ -n "$hint" ] || echo " the resume hint (trevo resume ...)")"
        sed 's/^/     | /' "$log" | grep -v '|  *gen ' | tail -12
    fi
    if [ -n "$tail_msgs" ]; then
        note "$what: trevo said: $(echo "$tail_msgs" | head -1 | cut -c1-160)"
        TREVO_SAID=$(echo "$tail_msgs" | head -1 | sed 's|/[^ ]*/||g; s/^trevo: //' | cut -c1-120)
    else
        note "$what: trevo itself printed nothing after the kill (only mpirun's report; the resume hint is the start-up line)"
    fi
    ic=$(sq "$db" 'pragma integrity_check' 2>&1 | head -3)
    mm=$(partial_mismatches "$db" 2>&1)
    st=$(sq "$db" 'select status from runs' 2>&1)
    case " $sts " in *" $st "*) ;; *) sts="$sts $st" ;; esac
    if [ "$ic" = ok ] && [ "$mm" = 0 ]; then
        pass "$what: integrity_check ok, committed data equal to the reference (status '$st')"
    else
        fail "$what: integrity_check '$ic', $mm committed rows differ from the reference"
    fi
    committed_rows "$db" >"$WORK/w$trial.snap"
    start_mpi "$WORK/w$trial.resume.log" resume "$db" --quiet
    wait_job "$JOB" "$JOB_LIMIT_S"
    if [ "$JOB_RC" != 0 ]; then
        fail "$what: resume exited $JOB_RC"
        tail -5 "$WORK/w$trial.resume.log" | sed 's/^/     | /'
        continue
    fi
    ok=1
    compare_ref "$db" || { ok=0; fail "$what: the resumed run differs from the uninterrupted run"; }
    why=$(check_children "$db") || { ok=0; fail "$what: $why"; }
    lost=$(comm -23 "$WORK/w$trial.snap" <(committed_rows "$db") | wc -l)
    lost_total=$((lost_total + lost)) checked=$((checked + $(wc -l <"$WORK/w$trial.snap")))
    [ "$lost" = 0 ] || { ok=0; fail "$what: $lost committed individuals re-evaluated or lost"; }
    san_check "$log" && san_check "$WORK/w$trial.resume.log" || { ok=0; fail "$what: sanitizer report"; }
    if [ $ok = 1 ]; then
        pass "$what: resume ended identical to the uninterrupted run, nothing evaluated twice"
        [ -n "$quiet" ] || n_ok=$((n_ok + 1))
    fi
done
[ "$trial" -ge "$TRIALS" ] || fail "the case stopped early (after $trial of $TRIALS trials)"
measure "fault=a worker rank killed (kill -9) mid-generation" \
    "how=kill -9 of one rank >= 1 (found by OMPI_COMM_WORLD_RANK in /proc/PID/environ) after a batch of an open generation was committed; then mpirun trevo resume" \
    "times=$TRIALS${QUIET_HINT:+ (+1 with --quiet)}" \
    "outcome=the job ends (mpirun exit status$rcs) within $end_ms_max ms; Open MPI names the dead rank; trevo says '${TREVO_SAID:-nothing after the kill, the resume hint is only its start-up line}'${QUIET_HINT:+ (with --quiet too: $QUIET_HINT)}; run status left:$sts; resumed run identical $n_ok/$TRIALS" \
    "lost=committed individuals lost or evaluated again: $lost_total (of $checked)"
finish
