#!/usr/bin/env bash
# Fault 1: kill -9 of mpirun and all its ranks at once, at random moments.
#
# A chain is one run killed several times: each kill lands a random delay
# (0 to 1.5 generations) after a random generation has closed, so kills fall
# in evaluation, in batch commits, in the generation's close (checkpoint) and
# in a resume's start-up (every other kill waits first for a batch commit of
# an open generation, which a short generation rarely shows otherwise); after each kill `PRAGMA integrity_check` must say
# ok, every committed generation and individual must equal the reference's,
# and `trevo resume` continues (under mpirun, and is itself killed next).
# The chain's last resume runs to the end: champion, statistics, every
# individual and genome equal the uninterrupted run's, one child per
# (generation, child index), and no committed individual evaluated again
# (its eval_seconds and rank are unchanged).
#
# Kills: 5 (--short), 30 (--full), or KILLS=N; KILLS_PER_CHAIN=N per run.
CASE_NAME=kill9
FAULTS_SEED_OFFSET=1
. "$(dirname "$0")/lib.sh"
case_begin "$@"

if [ "$MODE" = full ]; then KILLS=${KILLS:-30}; PER=${KILLS_PER_CHAIN:-6}; else KILLS=${KILLS:-5}; PER=${KILLS_PER_CHAIN:-5}; fi
[ "$REF_GENS" -ge 3 ] || { fail "the reference run has only $REF_GENS generations (need 3)"; finish; exit; }

kills=0 chain=0 max_chains=$(( KILLS / PER * 2 + 3 ))
n_ident=0 lost_total=0 checked=0 n_startup=0 n_end=0 n_none=0 n_part=0 n_all=0 n_ic=0 n_intact=0
while [ $kills -lt "$KILLS" ] && [ $chain -lt $max_chains ]; do
    chain=$((chain + 1))
    db=$WORK/k$chain.db
    : >"$WORK/snap$chain"
    start_mpi "$WORK/k$chain.log" $(run_args "$db") --quiet
    prev_g=-1
    for k in $(seq 1 "$PER"); do
        [ $kills -lt "$KILLS" ] || break
        # the next target: spread over what is left of the run (the same
        # generation again sometimes, so that a kill lands in a resume's start-up)
        cur=$(last_gen "$db")
        span=$(( (REF_GENS - 2 - cur) * 2 / (PER - k + 2) ))
        [ $span -ge 1 ] || span=1
        t=$(( cur + RANDOM % (span + 1) ))
        [ $t -ge 0 ] || t=0
        wait_gen "$db" "$t" "$JOB" || true
        d=$(random_delay)
        if [ $((k % 2)) = 0 ]; then
            # every other kill: after a batch of an open generation was committed
            wait_pending "$db" "$JOB" || true
            d=$(DELAY_MAX_MS=$((DELAY_MAX_MS / 3)) random_delay)
        fi
        pids=$(tree_pids "$JOB")
        sleep "$d"
        if ! kill -0 "$JOB" 2>/dev/null; then
            note "chain $chain: the run ended before the kill aimed at generation $t"
            break
        fi
        wal=$(stat -c %s "$db-wal" 2>/dev/null || echo 0)
        kill_tree 9 "$JOB" "$pids $(descendants "$JOB")"
        wait "$JOB" 2>/dev/null || true
        kills=$((kills + 1))
        if [ ! -f "$db" ]; then
            note "kill $kills: before the database existed"
            n_startup=$((n_startup + 1))
            start_mpi "$WORK/k$chain.log" $(run_args "$db") --quiet
            continue
        fi
        g=$(last_gen "$db")
        pending=$(sq "$db" "select count(*) from individuals where generation > $g" 2>/dev/null || echo '?')
        n_next=$(sq "$FAULTS_REF/ref.db" "select n_evals from generations where generation = $((g + 1))")
        if [ "$g" = "$prev_g" ] && [ "$pending" = "${prev_pending:-}" ]; then
            phase="resume start-up (nothing new committed)"; n_startup=$((n_startup + 1))
        elif [ "$pending" = 0 ] && [ "$g" -ge $((REF_GENS - 1)) ]; then
            phase="last generation closed, the run was ending"; n_end=$((n_end + 1))
        elif [ "$pending" = 0 ]; then
            phase="generation boundary (close, planning, first evaluations; no child of $((g + 1)) committed)"
            n_none=$((n_none + 1))
        elif [ "$pending" = "$n_next" ]; then
            phase="all $pending children of generation $((g + 1)) committed, generation not closed"; n_all=$((n_all + 1))
        else
            phase="mid-generation: $pending of $n_next children of generation $((g + 1)) committed"; n_part=$((n_part + 1))
        fi
        prev_g=$g prev_pending=$pending
        ic=$(sq "$db" 'pragma integrity_check' 2>&1 | head -3)
        if [ "$ic" = ok ]; then n_ic=$((n_ic + 1)); else
            fail "kill $kills (chain $chain, after generation $g +${d}s): integrity_check: $ic"
        fi
        mm=$(partial_mismatches "$db" 2>&1)
        if [ "$mm" = 0 ]; then n_intact=$((n_intact + 1)); else
            fail "kill $kills (chain $chain, after generation $g): $mm committed rows differ from the reference"
        fi
        committed_rows "$db" >>"$WORK/snap$chain"
        note "kill $kills: chain $chain, aimed after generation $t +${d}s; last closed $g; $phase; WAL $wal bytes; integrity $ic"
        start_mpi "$WORK/k$chain.log" resume "$db" --quiet
    done
    wait_job "$JOB" "$JOB_LIMIT_S"
    if [ "$JOB_RC" -ne 0 ]; then
        fail "chain $chain: the last resume exited $JOB_RC"
        tail -5 "$WORK/k$chain.log" | sed 's/^/     | /'
        continue
    fi
    if compare_ref "$db"; then pass "chain $chain: after the kills, resume ended identical to the uninterrupted run"; n_ident=$((n_ident + 1))
    else fail "chain $chain: the resumed run differs from the uninterrupted run"; fi
    why=$(check_children "$db") && pass "chain $chain: one child per (generation, child index)" \
        || fail "chain $chain: $why"
    lost=$(sort -u "$WORK/snap$chain" | comm -23 - <(committed_rows "$db") | wc -l)
    lost_total=$((lost_total + lost)) checked=$((checked + $(sort -u "$WORK/snap$chain" | wc -l)))
    if [ "$lost" = 0 ]; then pass "chain $chain: no committed individual was evaluated again or lost"
    else fail "chain $chain: $lost committed individuals were re-evaluated or lost after a resume"; fi
    san_check "$WORK/k$chain.log" && pass "chain $chain: no sanitizer report" \
        || fail "chain $chain: sanitizer report in the output"
done

[ $kills -ge "$KILLS" ] && pass "$kills kills landed while the job ran" \
    || fail "only $kills of $KILLS kills landed while the job ran"
[ $n_ic -eq $kills ] && pass "integrity_check ok after $n_ic of $kills kills" || true
[ $n_intact -eq $kills ] && pass "committed data equal to the reference after $n_intact of $kills kills" || true
measure "fault=kill -9 of mpirun and all its ranks at once" \
    "how=kill -9 of the process tree a random 0-1.5 generations after a random generation closed (every other kill after a batch commit); integrity_check; mpirun trevo resume, itself killed next" \
    "times=$kills kills in $chain runs (landed: $n_none at a generation boundary, $n_part mid-generation, $n_all with a generation committed but not closed, $n_startup in a resume's start-up, $n_end while the run ended)" \
    "outcome=integrity_check ok $n_ic/$kills; committed data equal to the reference $n_intact/$kills; resumed run identical (champion, statistics, every individual and genome) $n_ident/$chain" \
    "lost=committed individuals lost or evaluated again: $lost_total (of $checked)"
finish
