#!/usr/bin/env bash
# Fault 4: the disk fills up while the search commits.
#
#   tmpfs    the database on a small tmpfs (mount -t tmpfs -o size=..., needs
#            root), of a random size between 30 % and 80 % of the finished
#            reference database, so that the disk fills in a batch commit, a
#            generation's close or a WAL checkpoint; one process, and under
#            mpirun. Room is made with mount -o remount,size=... .
#   fill     the database on a roomy tmpfs; once a batch of an open generation
#            is committed (and half of its children are still to come) the
#            writer is frozen (SIGSTOP), a filler file fills the disk, and the
#            writer goes on (SIGCONT): its next batch commit fails while the
#            workers have tasks in flight. Room: rm the filler. With [store]
#            commit_batch and [farm] batch = a quarter of the population, at
#            most 64 (results are then larger messages than Open MPI's eager
#            limit, as with larger genomes); neither changes the results.
#   ulimit   a file-size limit (ulimit -f) instead: the kernel sends SIGXFSZ
#            and, if that is ignored, write() fails with EFBIG. Room: no limit.
#
# Each trial: the job must end (no hang) with a non-zero exit status that is
# not a death by signal, and a message naming the disk/space; the database
# passes integrity_check and what was committed equals the reference; after
# room is made, `trevo resume` ends identical to the uninterrupted run with
# no committed individual evaluated again.
#
# Trials (--short): small tmpfs alone, filled tmpfs under mpirun, ulimit: 1 each.
# (--full): small tmpfs alone 2, under mpirun 1; filled tmpfs alone 1, under
# mpirun 2; ulimit 2.
CASE_NAME=disk_full
FAULTS_SEED_OFFSET=4
. "$(dirname "$0")/lib.sh"
case_begin "$@"
if [ "$MODE" = full ]; then d1=2 d2=1 d3=1 d4=2 d5=2; else d1=1 d2=0 d3=0 d4=1 d5=1; fi
N_ONE=${N_ONE:-$d1} N_MPI=${N_MPI:-$d2} N_FILL1=${N_FILL1:-$d3} N_FILLMPI=${N_FILLMPI:-$d4} N_ULIMIT=${N_ULIMIT:-$d5}

MSG_RE='disk full|[Nn]o space|database or disk is full|[Ff]ile too large|size limit'
mnt=$WORK/mnt
mkdir -p "$mnt"
can_mount=0
if mount -t tmpfs -o size=1m tmpfs "$mnt" 2>"$WORK/mount.err"; then
    umount "$mnt"
    can_mount=1
else
    note "cannot mount a tmpfs ($(head -1 "$WORK/mount.err")); only the ulimit -f trials run"
fi
declare -A TIMES OK RCS HANGS ICOK LOST RESOK MSG
# Once a job's log shows the disk-full message, it has HANG_S seconds to end,
# else it hangs (wait_job sets JOB_RC 124).
HANG_S=${HANG_S:-20}
# One trial. KIND: tmpfs1 (one process), tmpfsmpi (under mpirun), ulimit.
trial() { # KIND N
    local kind=$1 n=$2 dir db size limit_kb log rc what
    log=$WORK/$kind$n.log
    if [ "$kind" = ulimit ]; then
        dir=$WORK/u$n
        mkdir -p "$dir"
        limit_kb=$(( REF_DB_BYTES * (30 + RANDOM % 51) / 100 / 1024 ))
        what="ulimit -f $limit_kb (KiB), one process"
    elif [ "${kind#fill}" != "$kind" ]; then
        dir=$mnt
        size=$(( REF_DB_BYTES * 4 + (16 << 20) ))
        mount -t tmpfs -o size=$size tmpfs "$dir"
        MOUNTS+=("$dir")
        what="tmpfs filled up mid-generation, $([ "$kind" = fill1 ] && echo one process || echo "mpirun -n $NP")"
    else
        dir=$mnt
        size=$(( REF_DB_BYTES * (30 + RANDOM % 51) / 100 / 4096 * 4096 ))
        mount -t tmpfs -o size=$size tmpfs "$dir"
        MOUNTS+=("$dir")
        what="tmpfs of $((size / 1024)) KiB, $([ "$kind" = tmpfs1 ] && echo one process || echo "mpirun -n $NP")"
    fi
    db=$dir/d.db
    TOTAL[$kind]=$(( ${TOTAL[$kind]:-0} + 1 ))
    case $kind in
    tmpfs1) "$TREVO" $(run_args "$db") --quiet >"$log" 2>&1 & JOB=$! ;;
    tmpfsmpi) start_mpi "$log" $(run_args "$db") --quiet ;;
    fill1 | fillmpi)
        # Results committed a quarter of a generation (at most 64) at a time,
        # so that a generation has batch commits before its close; under
        # mpirun, task batches as large, so that a result message is larger than Open MPI's eager
        # limit (4 KiB on shared memory) and a worker's send waits for the
        # master to receive it. Neither changes the search's results.
        local b
        b=$(sq "$FAULTS_REF/ref.db" 'select n_evals from generations where generation = 1')
        b=$(( b / 4 )); [ $b -le 64 ] || b=64; [ $b -ge 1 ] || b=1
        cp "$WORK/run.ini" "$WORK/run64.ini"
        config_set "$WORK/run64.ini" store commit_batch $b
        config_set "$WORK/run64.ini" farm batch $b
        if [ "$kind" = fill1 ]; then
            "$TREVO" $(run_args "$db" | sed "s|$WORK/run.ini|$WORK/run64.ini|") --quiet >"$log" 2>&1 &
            JOB=$!
        else
            start_mpi "$log" $(run_args "$db" | sed "s|$WORK/run.ini|$WORK/run64.ini|") --quiet
        fi ;;
    ulimit) bash -c "ulimit -f $limit_kb; exec \"\$@\"" sh "$TREVO" $(run_args "$db") --quiet >"$log" 2>&1 & JOB=$! ;;
    esac
    FAULTS_PIDS="$FAULTS_PIDS $JOB"
    if [ "${kind#fill}" != "$kind" ]; then
        # Freeze the writer (SIGSTOP) once a batch of an open generation is
        # committed and at least half of its children are still to come; fill
        # the disk; let it go on (SIGCONT): its next batch commit finds no
        # room while the workers have tasks in flight.
        wait_gen "$db" $(( RANDOM % (REF_GENS / 2) )) "$JOB" || true
        local wpid= frozen=0 i pend gg nn
        for i in $(seq 1 12); do
            wait_pending "$db" "$JOB" || break
            if [ "$kind" = fill1 ]; then wpid=$JOB; else wpid=$(rank_pid "$JOB" 0 || true); fi
            [ -n "$wpid" ] || break
            kill -STOP "$wpid" 2>/dev/null || break
            gg=$(last_gen "$db")
            pend=$(sq "$db" "select count(*) from individuals where generation > $gg")
            nn=$(sq "$FAULTS_REF/ref.db" "select n_evals from generations where generation = $((gg + 1))")
            if [ -n "$nn" ] && [ "$pend" -gt 0 ] && [ $((pend * 2)) -le "$nn" ]; then
                frozen=1
                break
            fi
            kill -CONT "$wpid"
            wait_gen "$db" $((gg + 1)) "$JOB" || break
        done
        [ $frozen = 0 ] || what="$what, writer frozen with $pend of $nn children of generation $((gg + 1)) committed"
        [ $frozen = 0 ] || fallocate -l "$(df -B1 --output=avail "$dir" | tail -1)" "$dir/filler" 2>/dev/null || true
        [ $frozen = 0 ] || dd if=/dev/zero of="$dir/filler2" bs=4k 2>/dev/null || true
        [ -z "$wpid" ] || kill -CONT "$wpid" 2>/dev/null || true
        if [ $frozen = 0 ]; then
            note "$what: the writer could not be frozen mid-generation (the run ended, or it commits only at generation ends); trial not counted"
            kill_tree 9 "$JOB"
            wait "$JOB" 2>/dev/null || true
            TOTAL[$kind]=$(( ${TOTAL[$kind]} - 1 ))
            umount "$dir" 2>/dev/null || umount -l "$dir"
            return 0
        fi
    fi
    local t0=$(date +%s%N)
    wait_job "$JOB" "$JOB_LIMIT_S" "$log" "$MSG_RE" "$HANG_S"
    rc=$JOB_RC
    local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    RCS[$kind]="${RCS[$kind]:-}$rc "
    local msg
    msg=$(grep -E "$MSG_RE" "$log" | head -1 || true)
    [ -z "$msg" ] || MSG[$kind]=$(echo "$msg" | sed 's/.*run .xor.: //; s/^trevo: [^:]*: //' | cut -c1-90)
    local g st cnt
    g=$(last_gen "$db")
    st=$(sq "$db" 'select status from runs' 2>&1 || true)
    cnt=$(sq "$db" 'select count(*) from individuals' 2>&1 || true)
    what="$what: stopped after generation $g ($cnt individuals, status '$st')"
    local good=1
    if [ "$rc" = 0 ] && [ "${kind#fill}" != "$kind" ] && compare_ref "$db" >/dev/null; then
        # Frozen late in the run, its last commits can fit in blocks it had
        # already (a WAL written again from its start after a checkpoint):
        # the run ends whole and right, the fault never bit; not counted.
        note "$what: exit 0, identical to the uninterrupted run (its last writes needed no new block); trial not counted"
        TOTAL[$kind]=$(( ${TOTAL[$kind]} - 1 ))
        umount "$dir" 2>/dev/null || umount -l "$dir"
        return 0
    fi
    if [ "$rc" = 0 ]; then
        fail "$what: the run exited 0 (the disk never filled? size too large)"
        good=0
    elif [ "$rc" = 124 ]; then
        HANGS[$kind]=$(( ${HANGS[$kind]:-0} + 1 ))
        fail "$what: the job did not end within $HANG_S s of its disk-full message (hang); its output:"
        grep -v '^ *gen ' "$log" | head -4 | sed 's/^/     | /'
        good=0
    elif [ "$rc" -ge 128 ]; then
        fail "$what: killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null || echo ?)) instead of a clean error; output: $(head -c 300 "$log")"
        good=0
    elif [ -z "$msg" ]; then
        fail "$what: exit $rc but no message naming the disk/space: $(head -c 300 "$log")"
        good=0
    else
        pass "$what: exit $rc after $ms ms: $msg"
    fi
    san_check "$log" || { fail "$what: sanitizer report"; good=0; }
    local ic mm
    ic=$(sq "$db" 'pragma integrity_check' 2>&1 | head -3)
    mm=$(partial_mismatches "$db" 2>&1)
    if [ "$ic" = ok ] && [ "$mm" = 0 ]; then
        ICOK[$kind]=$(( ${ICOK[$kind]:-0} + 1 ))
        pass "$what: integrity_check ok, all committed data equal to the reference"
    else
        fail "$what: integrity_check '$ic', committed rows differing from the reference: $mm"
        good=0
    fi
    committed_rows "$db" >"$WORK/$kind$n.snap"
    # make room, then resume
    if [ "$kind" = ulimit ]; then
        "$TREVO" resume "$db" --quiet >"$log.resume" 2>&1 & JOB=$!
    elif [ "${kind#fill}" != "$kind" ]; then
        rm -f "$dir/filler" "$dir/filler2"
        if [ "$kind" = fill1 ]; then "$TREVO" resume "$db" --quiet >"$log.resume" 2>&1 & JOB=$!
        else start_mpi "$log.resume" resume "$db" --quiet; fi
    else
        mount -o remount,size=$(( REF_DB_BYTES * 4 + (16 << 20) )) "$dir"
        if [ "$kind" = tmpfs1 ]; then "$TREVO" resume "$db" --quiet >"$log.resume" 2>&1 & JOB=$!
        else start_mpi "$log.resume" resume "$db" --quiet; fi
    fi
    wait_job "$JOB" "$JOB_LIMIT_S"
    if [ "$JOB_RC" != 0 ]; then
        fail "$what: resume after making room exited $JOB_RC: $(tail -2 "$log.resume")"
        good=0
    elif ! compare_ref "$db"; then
        fail "$what: resume after making room differs from the uninterrupted run"
        good=0
    else
        local why lost rgood=1
        why=$(check_children "$db") || { fail "$what: $why"; rgood=0; }
        lost=$(comm -23 "$WORK/$kind$n.snap" <(committed_rows "$db") | wc -l)
        LOST[$kind]=$(( ${LOST[$kind]:-0} + lost ))
        [ "$lost" = 0 ] || { fail "$what: $lost committed individuals re-evaluated or lost"; rgood=0; }
        [ $rgood = 0 ] || { pass "$what: resume after making room ended identical to the uninterrupted run"; RESOK[$kind]=$(( ${RESOK[$kind]:-0} + 1 )); }
        [ $rgood = 1 ] || good=0
    fi
    san_check "$log.resume" || { fail "$what: sanitizer report in the resume"; good=0; }
    OK[$kind]=$(( ${OK[$kind]:-0} + good ))
    [ "$kind" = ulimit ] || { umount "$dir" 2>/dev/null || umount -l "$dir"; }
}
declare -A TOTAL
if [ $can_mount = 1 ]; then
    for n in $(seq 1 $N_ONE); do trial tmpfs1 "$n"; done
    for n in $(seq 1 $N_FILL1); do trial fill1 "$n"; done
    if [ "$NP" -ge 2 ]; then
        for n in $(seq 1 $N_MPI); do trial tmpfsmpi "$n"; done
        for n in $(seq 1 $N_FILLMPI); do trial fillmpi "$n"; done
    fi
fi
for n in $(seq 1 $N_ULIMIT); do trial ulimit "$n"; done
disk_done=1

legend() { # exit statuses -> what the unusual ones mean
    case " $1 " in *" 124 "*) printf ' (124: hung, killed by the test)' ;; esac
    case " $1 " in *" 153 "*) printf ' (153: killed by SIGXFSZ)' ;; esac
    case " $1 " in *" 139 "*) printf ' (139: segmentation fault)' ;; esac
}
for kind in tmpfs1 fill1 tmpfsmpi fillmpi ulimit; do
    [ "${TOTAL[$kind]:-0}" != 0 ] || continue
    case $kind in
    tmpfs1) label="disk full (small tmpfs), one process" ;;
    fill1) label="disk full (tmpfs filled mid-generation), one process" ;;
    tmpfsmpi) label="disk full (small tmpfs), mpirun -n $NP" ;;
    fillmpi) label="disk full (tmpfs filled mid-generation), mpirun -n $NP" ;;
    ulimit) label="file-size limit (ulimit -f), one process" ;;
    esac
    case $kind in
    tmpfs1 | tmpfsmpi) how="the database on a tmpfs of 30-80 % of the finished database's size; room: mount -o remount,size=..." ;;
    fill1 | fillmpi) how="a filler file fills the database's tmpfs after a batch commit of an open generation; room: rm the filler" ;;
    ulimit) how="ulimit -f 30-80 % of the finished database's size; room: no limit" ;;
    esac
    measure "fault=$label" "how=$how; then trevo resume" "times=${TOTAL[$kind]}" \
        "outcome=exit status ${RCS[$kind]}$(legend "${RCS[$kind]}"); hangs ${HANGS[$kind]:-0}; message: ${MSG[$kind]:-none}; integrity_check ok and committed data intact ${ICOK[$kind]:-0}/${TOTAL[$kind]}; resumed identical ${RESOK[$kind]:-0}/${TOTAL[$kind]}" \
        "lost=committed individuals lost or evaluated again: ${LOST[$kind]:-0}"
done
[ "${disk_done:-0}" = 1 ] || fail "the case stopped early"
finish
