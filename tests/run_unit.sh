#!/usr/bin/env bash
# Runs each cmocka test binary given as an argument; prints a closing
# "unit: N passed, M failed" line counting individual tests, and exits
# non-zero if any binary failed.
set -u
passed=0 failed=0 bad_bins=()
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^\[  (PASSED|FAILED|  OK  |ERROR) |^\[==========\]|FAIL' || true
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ]; then
        bad_bins+=("$t")
        [ -z "${f:-}" ] && failed=$((failed + 1))   # crashed before cmocka's summary
        printf '%s\n' "$out" | tail -40
    fi
done
[ ${#bad_bins[@]} -gt 0 ] && echo "failing test binaries: ${bad_bins[*]}"
echo "unit: $passed passed, $failed failed"
[ ${#bad_bins[@]} -eq 0 ]
