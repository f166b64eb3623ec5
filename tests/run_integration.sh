#!/usr/bin/env bash
# Runs every tests/it_*.sh with TREVO set to the binary under test. Each
# script is one test: exit 0 passes. Prints "integration: N passed, M failed".
set -u
export TREVO=$(realpath "$1")
# Open MPI refuses root without these; CI runs as root on 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
cd "$(dirname "$0")/.."
# Under `make asan`: OpenBLAS and Open MPI keep some allocations for the life
# of the process (tests/lsan.supp). Ranks under mpirun also hold allocations
# of dlopened MPI components that LeakSanitizer cannot name, so tests launch
# them with leak detection off ($MPIRUN_ASAN); single processes keep it on.
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export MPIRUN_ASAN="-x ASAN_OPTIONS=detect_leaks=0"
passed=0 failed=0
for t in tests/it_*.sh; do
    [ -e "$t" ] || continue
    log=$(mktemp)
    start=$(date +%s)
    if bash "$t" >"$log" 2>&1; then
        passed=$((passed + 1)); echo "[ OK ] $t ($(( $(date +%s) - start )) s)"
    else
        failed=$((failed + 1)); echo "[FAIL] $t"; tail -40 "$log"
    fi
    rm -f "$log"
done
echo "integration: $passed passed, $failed failed"
[ $failed -eq 0 ]
