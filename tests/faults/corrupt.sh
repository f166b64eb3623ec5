#!/usr/bin/env bash
# Fault 5: a damaged or foreign database file. `trevo status`, `trevo best`
# and `trevo resume` must each refuse it with exit status 1..127 (never a
# death by signal, never sanitizer output) and a message saying which
# (damaged / truncated / not a trevo database / newer schema / empty ...),
# and leave the file byte-identical (sha256 of the database and of its -wal
# before and after -- an empty -wal counts as none; a -shm, the WAL index
# SQLite rebuilds from the WAL, is reported when it changes).
#
# Damage (trials --short / --full):
#   page        a whole random page (16384 bytes) overwritten with random bytes   2 / 6
#   bytes       1..4096 random bytes at a random offset of a random page         2 / 8
#               (when SQLite's own quick_check cannot see the damage -- bytes
#               inside a stored value -- acceptance is allowed and counted)
#   cut         truncated to a random length (not a multiple of the page size)   1 / 3
#   cut-page    truncated to a random whole number of pages                      1 / 2
#   cut-tail    truncated by 1..16383 bytes (inside the last page)               1 / 2
#   cut-1       truncated by 1 byte                                              1
#   cut-free    a database ending in free pages (a table added and dropped),     1
#               truncated inside its last page: invisible to SQLite's checks
#   wal-page    a run killed mid-generation (-wal and -shm present), a random     1 / 3
#               page of the database file overwritten
#   foreign     another program's SQLite database                                 1
#   empty-sql   an SQLite database with no tables                                 1
#   newer       a trevo database with a newer schema version (user_version + 1,   1
#               trevo_meta schema_version too)
#   zero        a zero-length file                                                1
#   text        a text file                                                       1
#   missing     no file at all (resume must not create one)                       1
CASE_NAME=corrupt
FAULTS_SEED_OFFSET=5
. "$(dirname "$0")/lib.sh"
case_begin "$@"
if [ "$MODE" = full ]; then N_PAGE=6 N_BYTES=8 N_CUT=3 N_CUTPAGE=2 N_CUTTAIL=2 N_WAL=3
else N_PAGE=2 N_BYTES=2 N_CUT=1 N_CUTPAGE=1 N_CUTTAIL=1 N_WAL=1; fi

RE_CORRUPT='damaged|corrupt|malformed|truncated'
PAGE=$(sq "$FAULTS_REF/ref.db" 'pragma page_size')
CLEAN=$WORK/clean.db
cp "$FAULTS_REF/ref.db" "$CLEAN"
NPAGES=$(( $(stat -c %s "$CLEAN") / PAGE ))

# A run killed with kill -9 after a batch of an open generation was
# committed: its -wal holds commits the database file does not have yet.
CRASHED=$WORK/crashed
mkdir -p "$CRASHED"
for try in 1 2 3 4 5; do
    rm -f "$CRASHED"/c.db*
    start_mpi "$WORK/crash.log" $(run_args "$CRASHED/c.db") --quiet
    wait_gen "$CRASHED/c.db" $(( REF_GENS / 3 )) "$JOB" || true
    wait_pending "$CRASHED/c.db" "$JOB" || true
    pids=$(tree_pids "$JOB")
    for i in $(seq 1 200); do [ -s "$CRASHED/c.db-wal" ] && break; sleep 0.005; done
    kill_tree 9 "$JOB" "$pids"
    wait "$JOB" 2>/dev/null || true
    [ -s "$CRASHED/c.db-wal" ] && break
done
rm -f "$CRASHED/c.db-lock"
note "crashed database: last closed generation $(last_gen "$CRASHED/c.db"), -wal $(stat -c %s "$CRASHED/c.db-wal" 2>/dev/null || echo none) bytes, -shm $(stat -c %s "$CRASHED/c.db-shm" 2>/dev/null || echo none) bytes"
# sqlite3 -readonly above may have touched the -shm: take the copy now
rm -rf "$WORK/crashed.orig"
cp -a "$CRASHED" "$WORK/crashed.orig"

rand_bytes() { head -c "$1" /dev/urandom; }
overwrite() { # FILE OFFSET LENGTH
    rand_bytes "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
sums() { # FILE -> sha256 of the file and of its -wal ("-" when absent)
    local f
    for f in "$1" "$1-wal"; do
        if [ -s "$f" ] || { [ -e "$f" ] && [ "$f" = "$1" ]; }; then sha256sum <"$f" | cut -c1-16; else echo -; fi
    done | tr '\n' ' '
}
shm_sum() { if [ -e "$1-shm" ]; then sha256sum <"$1-shm" | cut -c1-16; else echo -; fi; }

declare -A KIND_N KIND_OK KIND_WHY KIND_MSG
# a failure inside check_refused; REASON (short) is remembered for the table
cfail() { # MESSAGE REASON
    fail "$1"
    case "${KIND_WHY[$kind]:-}" in *"$2"*) ;; *) KIND_WHY[$kind]="${KIND_WHY[$kind]:+${KIND_WHY[$kind]}; }$2" ;; esac
}
n_accepted_undetectable=0 n_shm_changed=0
# Runs status, best, resume on FILE; every one must refuse with a message
# matching RE. ALLOW_ACCEPT=1: acceptance is allowed (damage SQLite cannot see).
check_refused() { # KIND LABEL FILE RE
    local kind=$1 label=$2 f=$3 re=$4 cmd out rc before after shm0 ok=1 msgs= existed=1
    [ -e "$f" ] || existed=0
    KIND_N[$kind]=$(( ${KIND_N[$kind]:-0} + 1 ))
    for cmd in status best resume; do
        before=$(sums "$f")
        shm0=$(shm_sum "$f")
        rc=0
        if [ "$cmd" = resume ]; then
            "$TREVO" resume "$f" --quiet >"$WORK/out" 2>&1 </dev/null || rc=$?
        else
            "$TREVO" "$cmd" "$f" >"$WORK/out" 2>&1 </dev/null || rc=$?
        fi
        out=$(grep -v '^ *gen ' "$WORK/out" | head -3 | tr '\n' ' ' | cut -c1-240)
        after=$(sums "$f")
        if ! san_check "$WORK/out"; then
            cfail "$label: trevo $cmd: sanitizer report" "$cmd: sanitizer report"; ok=0
        elif [ $rc -ge 128 ]; then
            cfail "$label: trevo $cmd died of signal $((rc - 128)): $out" "$cmd: died of signal $((rc - 128))"; ok=0
        elif [ $rc = 0 ]; then
            if [ "${ALLOW_ACCEPT:-0}" = 1 ]; then
                msgs="$msgs $cmd:accepted"
            else
                cfail "$label: trevo $cmd accepted it (exit 0): $out" "$cmd accepted it (exit 0)"; ok=0
            fi
        elif ! grep -qE "$re" "$WORK/out"; then
            cfail "$label: trevo $cmd refused (exit $rc) without saying why ($re): $out" "$cmd said: $(head -1 "$WORK/out" | sed "s/^trevo: //; s|/[^ ]*/||g" | cut -c1-70)"; ok=0
        else
            msgs="$msgs $cmd:$rc"
        fi
        if [ $existed = 0 ] && [ -e "$f" ]; then
            cfail "$label: trevo $cmd created $f" "$cmd created the file"; ok=0
            rm -f "$f" "$f-wal" "$f-shm" "$f-lock"
        elif [ "$before" != "$after" ] && { [ $rc != 0 ] || [ "${ALLOW_ACCEPT:-0}" != 1 ]; }; then
            cfail "$label: trevo $cmd (exit $rc) changed the file (sha256 of file and -wal: $before-> $after)" "$cmd changed the file"; ok=0
        fi
        if [ "$shm0" != - ] && [ "$shm0" != "$(shm_sum "$f")" ]; then
            n_shm_changed=$((n_shm_changed + 1))
            note "$label: trevo $cmd rewrote the -shm (WAL index; the database and -wal are unchanged)"
        fi
    done
    if [ $ok = 1 ]; then
        KIND_OK[$kind]=$(( ${KIND_OK[$kind]:-0} + 1 ))
        case "$msgs" in
        *accepted*)
            n_accepted_undetectable=$((n_accepted_undetectable + 1))
            pass "$label: SQLite cannot see this damage; status, best, resume:${msgs} (no crash)" ;;
        *) pass "$label: refused by status, best, resume (exit${msgs}), file unchanged: $(grep -m1 -E "$re" "$WORK/out" | cut -c1-160 || true)"
           [ -n "${KIND_MSG[$kind]:-}" ] || KIND_MSG[$kind]=$(grep -m1 -E "$re" "$WORK/out" | sed 's/^trevo: [^:]*: //' | cut -c1-80 || true) ;;
        esac
    fi
}

t=$WORK/t.db
fresh() { rm -f "$t" "$t-wal" "$t-shm" "$t-lock"; cp "$CLEAN" "$t"; }

for i in $(seq 1 $N_PAGE); do
    fresh
    pg=$(( 1 + RANDOM % NPAGES ))
    overwrite "$t" $(( (pg - 1) * PAGE )) "$PAGE"
    re=$RE_CORRUPT
    [ "$pg" != 1 ] || re="$RE_CORRUPT|not a trevo database|not an SQLite"
    check_refused page "page $pg of $NPAGES overwritten" "$t" "$re"
done

for i in $(seq 1 $N_BYTES); do
    fresh
    pg=$(( 1 + RANDOM % NPAGES ))
    len=$(( 1 + (RANDOM * 32768 + RANDOM) % 4096 ))
    off=$(( (pg - 1) * PAGE + (RANDOM * 32768 + RANDOM) % (PAGE - len + 1) ))
    overwrite "$t" "$off" "$len"
    cp "$t" "$WORK/probe.db"
    qc=$(sqlite3 "file:$WORK/probe.db?immutable=1" 'pragma quick_check' 2>&1 | head -1)
    rm -f "$WORK/probe.db"*
    label="$len random bytes at offset $off (page $pg)"
    re="$RE_CORRUPT|not a trevo database|not an SQLite"
    if [ "$qc" = ok ]; then
        # SQLite cannot see it (the bytes are inside stored values): trevo
        # may accept it; a refusal must still be clear, and nothing may crash
        ALLOW_ACCEPT=1 check_refused bytes-undetectable "$label (quick_check: ok)" "$t" "$re|individual|genome|checkpoint"
    else
        check_refused bytes "$label (quick_check: ${qc:0:60})" "$t" "$re"
    fi
done

for i in $(seq 1 $N_CUT); do
    fresh
    size=$(stat -c %s "$t")
    len=$(( 1 + (RANDOM * 32768 + RANDOM) % (size - 1) ))
    [ $((len % PAGE)) != 0 ] || len=$((len + 1))
    truncate -s "$len" "$t"
    check_refused cut "truncated to $len of $size bytes" "$t" "$RE_CORRUPT|not a trevo database|not an SQLite"
done
for i in $(seq 1 $N_CUTPAGE); do
    fresh
    len=$(( (1 + RANDOM % (NPAGES - 1)) * PAGE ))
    truncate -s "$len" "$t"
    check_refused cut-page "truncated to $((len / PAGE)) of $NPAGES pages" "$t" "$RE_CORRUPT"
done
for i in $(seq 1 $N_CUTTAIL); do
    fresh
    size=$(stat -c %s "$t")
    cut=$(( 1 + RANDOM % (PAGE - 1) ))
    truncate -s $((size - cut)) "$t"
    check_refused cut-tail "last $cut bytes cut off (size not a multiple of $PAGE)" "$t" "$RE_CORRUPT"
done

# 1 byte short: SQLite reads the missing byte as 0 and its quick_check
# rarely notices; only the size (not a multiple of the page size) tells.
fresh
truncate -s -1 "$t"
check_refused cut-1 "the last byte cut off (size not a multiple of $PAGE)" "$t" "$RE_CORRUPT"

# A database that ends in free pages (a table was added and dropped, as a
# user's own experiments in sqlite3 might), cut inside its last page: SQLite
# reads the missing bytes as zeros -- the very bytes that were there -- so no
# check of SQLite's can see it; only the size, not a multiple of the page
# size, tells that the file was cut.
fresh
sqlite3 "$t" 'create table fault_pad(x); insert into fault_pad values (zeroblob(40000)); drop table fault_pad'
rm -f "$t-wal" "$t-shm"
cut=$(( 1 + RANDOM % (PAGE - 1) ))
truncate -s -$cut "$t"
cp "$t" "$WORK/probe.db"
qc=$(sqlite3 "file:$WORK/probe.db?immutable=1" 'pragma quick_check' 2>&1 | head -1)
rm -f "$WORK/probe.db"*
check_refused cut-free "ends in free pages, last $cut bytes cut off (SQLite's quick_check: $qc)" "$t" "$RE_CORRUPT"

for i in $(seq 1 $N_WAL); do
    rm -rf "$CRASHED"
    cp -a "$WORK/crashed.orig" "$CRASHED"
    cn=$(( $(stat -c %s "$CRASHED/c.db") / PAGE ))
    pg=$(( 2 + RANDOM % (cn - 1) ))
    overwrite "$CRASHED/c.db" $(( (pg - 1) * PAGE )) "$PAGE"
    # A page the WAL holds a newer copy of is never read from the file (and
    # the next checkpoint overwrites it): SQLite itself, on a copy of the
    # files, says whether the damage is visible.
    rm -rf "$WORK/probe"
    cp -a "$CRASHED" "$WORK/probe"
    qc=$(sqlite3 -readonly "$WORK/probe/c.db" 'pragma quick_check' 2>&1 | head -1)
    rm -rf "$WORK/probe"
    label="crashed run (-wal $(stat -c %s "$CRASHED/c.db-wal" 2>/dev/null || echo 0) bytes), page $pg overwritten"
    if [ "$qc" = ok ]; then
        ALLOW_ACCEPT=1 check_refused wal-page-superseded "$label (a newer copy is in the WAL; quick_check: ok)" \
            "$CRASHED/c.db" "$RE_CORRUPT"
    else
        check_refused wal-page "$label" "$CRASHED/c.db" "$RE_CORRUPT"
    fi
done

rm -f "$t"*
sqlite3 "$t" 'create table notes(id integer primary key, text); insert into notes(text) values ("hello")'
check_refused foreign "another program's SQLite database" "$t" 'not a trevo database|another program'

rm -f "$t"*
sqlite3 "$t" 'pragma page_size = 4096; vacuum'
check_refused empty-sql "an SQLite database without tables ($(stat -c %s "$t") bytes)" "$t" 'empty|not a trevo database'

fresh
v=$(sq "$t" 'pragma user_version')
sqlite3 "$t" "pragma user_version = $((v + 1)); update trevo_meta set value = $((v + 1)) where key = 'schema_version'"
rm -f "$t-wal" "$t-shm"
check_refused newer "schema version $((v + 1)) (this trevo: $v)" "$t" 'newer'

rm -f "$t"*
: >"$t"
check_refused zero "a zero-length file" "$t" 'empty|not a trevo database'

rm -f "$t"*
printf 'run,generation,best\nxor,0,3.5\n' >"$t"
check_refused text "a text file" "$t" 'not an SQLite|not a trevo database'

rm -f "$t"*
check_refused missing "no such file" "$t" 'no such|not found|does not exist'
corrupt_done=1

declare -A DESC=(
    [page]="a random whole page overwritten with random bytes"
    [bytes]="1-4096 random bytes overwritten in a random page (damage quick_check sees)"
    [bytes-undetectable]="1-4096 random bytes overwritten inside stored values (quick_check cannot see it)"
    [cut]="truncated to a random length"
    [cut-page]="truncated to a random whole number of pages"
    [cut-tail]="truncated by 1-16383 bytes (inside the last page)"
    [cut-1]="truncated by 1 byte"
    [cut-free]="a database ending in free pages, truncated inside the last page"
    [wal-page]="a run killed mid-generation (-wal, -shm present), a random page of the database overwritten"
    [wal-page-superseded]="the same, on a page the WAL holds a newer copy of (never read; healed by the next checkpoint)"
    [foreign]="another program's SQLite database"
    [empty-sql]="an SQLite database without tables"
    [newer]="a newer schema version (user_version and trevo_meta)"
    [zero]="a zero-length file"
    [text]="a text file"
    [missing]="no file at all"
)
for kind in page bytes bytes-undetectable cut cut-page cut-tail cut-1 cut-free wal-page wal-page-superseded foreign empty-sql newer zero text missing; do
    [ -n "${KIND_N[$kind]:-}" ] || continue
    n=${KIND_N[$kind]} ok=${KIND_OK[$kind]:-0}
    if [ "$kind" = bytes-undetectable ]; then
        outcome="no crash $ok/$n (accepted: SQLite keeps no checksums)"
        lost="the damaged values"
    elif [ "$kind" = wal-page-superseded ]; then
        outcome="no crash $ok/$n (accepted: the damaged page is never read)"
        lost="none"
    else
        outcome="refused by status, best and resume, exit 1, no crash, file byte-identical: $ok/$n"
        [ -z "${KIND_MSG[$kind]:-}" ] || outcome="$outcome ('${KIND_MSG[$kind]}')"
        [ -z "${KIND_WHY[$kind]:-}" ] || outcome="$outcome; FAILED: ${KIND_WHY[$kind]}"
        lost="none by trevo (file unchanged $ok/$n)"
    fi
    case $kind in
    wal-page | wal-page-superseded) how="dd into a copy of a run killed with kill -9 mid-generation" ;;
    missing) how="a path with no file" ;;
    foreign | empty-sql | text | zero) how="a file made with sqlite3, printf or :" ;;
    newer) how="sqlite3 on a copy of a finished run's database" ;;
    *) how="dd / truncate / sqlite3 on a copy of a finished run's database" ;;
    esac
    measure "fault=${DESC[$kind]}" "how=$how; then trevo status, trevo best, trevo resume" \
        "times=$n" "outcome=$outcome" "lost=$lost"
done
[ "${corrupt_done:-0}" = 1 ] || fail "the case stopped early"
note "-shm (WAL index) rewritten by a command: $n_shm_changed times; damage SQLite cannot see, accepted: $n_accepted_undetectable times"
finish
