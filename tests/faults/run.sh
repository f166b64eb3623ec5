#!/usr/bin/env bash
# The fault matrix (RELIABILITY.md): every fault script of tests/faults/
# against one binary, sharing one uninterrupted reference run.
#
#   tests/faults/run.sh [--short|--full] [--config FILE] [--generations N]
#                       [--size N] [--np N] [--only CASE,...] TREVO
#
#   --short   a few trials of each fault (make test, through tests/it_faults.sh)
#   --full    the whole matrix: 30 kills, several of every signal... (make test-faults)
#   --config  the experiment (default: a small XOR run); CONFIG=FILE does the same,
#             e.g. CONFIG=experiments/dpnv.ini tests/faults/run.sh --full --generations 30 build/trevo
#   --generations N, --size N   shorten the run (trevo run --generations; [population] size)
#   --np N    ranks under mpirun (default 3)
#   --only    some of: kill9 worker_kill signals disk_full corrupt second_writer
#   FAULTS_SEED=N repeats the random choices of an earlier run.
#
# Prints every case's PASS/FAIL lines, then a summary and the measured matrix
# as a Markdown table (the rows of RELIABILITY.md's "Fault matrix"). Exits
# non-zero if any case failed.
CASE_NAME=matrix
. "$(dirname "$0")/lib.sh"
ONLY=
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --only) [ $# -ge 2 ] || faults_usage; ONLY=$2; shift ;;
    *) args+=("$1") ;;
    esac
    shift
done
parse_args "${args[@]+"${args[@]}"}"
faults_env
CASES="kill9 worker_kill signals disk_full corrupt second_writer"
[ -z "$ONLY" ] || CASES=$(echo "$ONLY" | tr ',' ' ')

T0=$(date +%s)
echo "fault matrix ($MODE): $TREVO, ${CONFIG:-default XOR config}${GENERATIONS:+, --generations $GENERATIONS}${SIZE:+, size $SIZE}, $NP ranks, FAULTS_SEED=$FAULTS_SEED$([ "$FAULTS_ASAN" = 1 ] && echo ", sanitizer build")"
ref_make
echo "reference: $REF_GENS generations, $REF_INDIVIDUALS individuals, $((REF_DB_BYTES / 1024)) KiB, ${REF_RUN_MS} ms under mpirun -n $NP (mean generation $REF_GEN_MS ms)"

summary=()
failed=0
for c in $CASES; do
    [ -f "$FAULTS_LIB_DIR/$c.sh" ] || { echo "FAIL [matrix] no case '$c'"; failed=1; continue; }
    t=$(date +%s)
    FAULTS_REF=$FAULTS_REF bash "$FAULTS_LIB_DIR/$c.sh" "--$MODE" "$TREVO" 2>&1 |
        grep --line-buffered -vE '^(tests/faults/|/).*(Killed|File size limit exceeded)' |
        tee "$WORK/$c.out" || true
    status=${PIPESTATUS[0]}
    rc=$(grep -c '^FAIL ' "$WORK/$c.out" || true)
    if [ "$status" != 0 ] && [ "$rc" = 0 ]; then
        echo "FAIL [$c] the case script exited $status without a FAIL line" | tee -a "$WORK/$c.out"
        rc=1
    fi
    grep -qE "^\[$c\] [0-9]+ passed, 0 failed" "$WORK/$c.out" || [ "$rc" != 0 ] || rc=1
    if [ "$rc" = 0 ]; then
        summary+=("[ OK ] $c ($(( $(date +%s) - t )) s)")
    else
        summary+=("[FAIL] $c ($(( $(date +%s) - t )) s): $rc failed checks")
        failed=1
    fi
done

echo
echo "| fault | how injected | times | outcome | data lost |"
echo "|---|---|---|---|---|"
for c in $CASES; do
    grep '^MEASURE ' "$WORK/$c.out" 2>/dev/null | while IFS= read -r line; do
        row=
        for key in fault how times outcome lost; do
            v=$(echo "$line" | tr '|' '\n' | sed -n "s/^ *$key=//p" | sed 's/ *$//' | head -1)
            row="$row | ${v:--}"
        done
        echo "${row# } |"
    done
done
# last, so that the tail of the output (what tests/run_integration.sh shows
# of a failed test) says what failed
echo
grep -h '^FAIL ' "$WORK"/*.out 2>/dev/null | cut -c1-300 || true
echo "== fault matrix ($MODE), $(( $(date +%s) - T0 )) s, FAULTS_SEED=$FAULTS_SEED (repeat: FAULTS_SEED=$FAULTS_SEED $0 --$MODE ...)"
printf '%s\n' "${summary[@]}"
[ $failed = 0 ]
