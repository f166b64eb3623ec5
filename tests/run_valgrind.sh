#!/usr/bin/env bash
# usage: run_valgrind.sh TREVO
# The single-process search under valgrind --leak-check=full: a short XOR run,
# its resume, and the commands that read the database. Fails on any memory
# error or any definitely/indirectly lost block (possibly-lost blocks of the
# MPI and OpenBLAS-free binary are none of ours: MPI is not initialised when
# alone).
set -eu
trevo=$(realpath "$1")
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
vg() {
    local log=$work/vg.$1.log; shift
    if ! valgrind --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
        --error-exitcode=99 --log-file="$log" "$trevo" "$@" >"$work/out" 2>"$work/err"; then
        echo "valgrind: trevo $*: FAILED"
        grep -E "ERROR SUMMARY|definitely|indirectly|Invalid|uninitialised" "$log" | head -20
        cat "$work/err" | tail -5
        exit 1
    fi
    local sum
    sum=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
    local lost
    lost=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$log" | tail -1)
    echo "valgrind: trevo $*: ${sum:-0} errors, definitely lost ${lost:-0} bytes"
}
db=$work/x.db
vg run run experiments/xor.ini --db "$db" --generations 6 --quiet
vg resume resume "$db" --set run.generations=9 --quiet
vg status status "$db"
vg best best "$db" -o "$work/champ.txt"
vg eval task eval xor "$work/champ.txt"
echo "valgrind: ok"
