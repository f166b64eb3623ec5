#!/usr/bin/env bash
# usage: run.sh OUTDIR SECONDS FUZZER...
# Runs each libFuzzer target for SECONDS seconds, or until FUZZ_RUNS
# executions when that is set (a campaign: FUZZ_RUNS=10000000 with
# SECONDS=1800 stops at whichever comes first): tests/fuzz/corpus/NAME holds
# the committed seeds (read only), OUTDIR/corpus-NAME what the run finds.
# Prints one line per target with the executions done, the time taken and
# the coverage reached (libFuzzer's cov: edges and ft: features); on a crash,
# how far it got, the sanitizer's or the check's words and the command that
# reproduces it. Fails on any crash.
set -u
out=$1; secs=$2; shift 2
cd "$(dirname "$0")/../.."
status=0
for f in "$@"; do
    name=$(basename "$f")
    work=$out/corpus-$name; mkdir -p "$work" "$out/artifacts"
    seeds=tests/fuzz/corpus/${name#fuzz_}; mkdir -p "$seeds"
    log=$out/$name.log
    start=$(date +%s)
    if "$f" -max_total_time="$secs" ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix=$out/artifacts/ "$work" "$seeds" >"$log" 2>&1; then
        runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
        cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
        echo "fuzz $name: ${runs:-?} executions in $(($(date +%s) - start)) s, ${cov:-cov: ?}, no crash"
    else
        status=1
        runs=$(sed -n 's/^#\([0-9]*\).*exec\/s: \([0-9]*\).*/\1/p' "$log" | tail -1)
        art=$(sed -n "s/.*Test unit written to \(.*\)/\1/p" "$log" | tail -1)
        echo "fuzz $name: CRASH after about ${runs:-0} executions (log $log)"
        grep -E 'runtime error|ERROR|SUMMARY|check failed' "$log" | head -5
        [ -n "$art" ] && echo "    reproduce: $f $art"
    fi
done
exit $status
