#!/usr/bin/env bash
# Fail before the work, not after: `net train -o PATH` and `net quantize -o
# PATH` check that PATH can be written before they train or calibrate (no
# epoch line, exit 1, the message names PATH, not a temporary file); `trevo
# run --bogus` names the option (exit 2).
set -u
. "$(dirname "$0")/lib_it.sh"
it_tmpdir it_fail_early
cd "$dir"

printf '0,0,0\n0,1,1\n1,0,1\n1,1,0\n' >xor.csv
"$TREVO" net init --layers 2,4,2 --density 1 -o x.net >/dev/null || fail "net init"
mkdir folder

# early CMD... : exits 1 at once, stdout empty, stderr names the path it was given
early() {
    local path=$1
    shift
    "$TREVO" "$@" >out 2>err
    local rc=$?
    [ $rc -eq 1 ] || fail "$*: exit $rc, wanted 1: $(cat err)"
    [ ! -s out ] || fail "$*: worked before failing: $(cat out)"
    grep -qF "trevo: $path: " err || fail "$*: the message does not name $path: $(cat err)"
    if grep -q '\.tmp\.' err; then fail "$*: names a temporary file: $(cat err)"; fi
}
early missing/y.net net train x.net --data xor.csv --epochs 3 -o missing/y.net
early folder net train x.net --data xor.csv --epochs 3 -o folder
early missing/x.q net quantize x.net --calibrate xor.csv -o missing/x.q

"$TREVO" run --bogus >out 2>err
rc=$?
[ $rc -eq 2 ] || fail "run --bogus: exit $rc, wanted 2"
grep -q "^trevo run: unknown option '--bogus'" err || fail "run --bogus: $(cat err)"
echo "ok: net train and net quantize check -o first; run names an unknown option"
