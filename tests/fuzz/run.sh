#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS seconds: tests/fuzz/corpus/NAME holds
# the committed seeds (read only), build/fuzz/corpus-NAME what the run finds.
# Prints one line per target with the executions done; fails on any crash.
set -u
secs=$1; shift
cd "$(dirname "$0")/../.."
status=0
for f in "$@"; do
    name=$(basename "$f")
    work=build/fuzz/corpus-$name; mkdir -p "$work" "build/fuzz/artifacts"
    seeds=tests/fuzz/corpus/${name#fuzz_}; mkdir -p "$seeds"
    log=build/fuzz/$name.log
    if "$f" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix=build/fuzz/artifacts/ "$work" "$seeds" >"$log" 2>&1; then
        runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
        echo "fuzz $name: ${runs:-?} executions in ${secs} s, no crash"
    else
        status=1
        echo "fuzz $name: CRASH (see $log and build/fuzz/artifacts/)"
        grep -E 'ERROR|SUMMARY' "$log" | head -5
    fi
done
exit $status
