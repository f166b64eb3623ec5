#!/usr/bin/env bash
# trevo net bench --conv through the real binary: a tiny layer timed against
# the dense sides ends with the ratio line and the checks agree; a layer with
# stride 2 and no padding; bad options refused with what is wrong.
set -eu
: "${TREVO:?}"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$TREVO" net bench --conv 3,4,3,9,9 --density 0.5 --batch 3 --seconds 0.01)
echo "$out" | grep -Eq '^case: conv 3 -> 4, 3 x 3 kernel, 9 x 9 maps -> 9 x 9, stride 1, pad 1' ||
    fail "no case line: $out"
echo "$out" | tail -1 | grep -Eq '^ratio_vs_dense: [0-9.]+' || fail "last line not the ratio: $out"
echo "$out" | grep -q '^sparse backward' || fail "no backward timing: $out"
# the sparse layer and each dense one compute the same thing
echo "$out" | awk '/^check:/ { if ($NF + 0 > 1e-4) bad = 1; n++ } END { exit !(n >= 1 && !bad) }' ||
    fail "sparse and dense disagree: $out"

out=$("$TREVO" net bench --conv 2,2,3,8,7 --density 1 --stride 2 --pad 0 --no-backward --seconds 0.01)
echo "$out" | grep -q '8 x 7 maps -> 3 x 3, stride 2, pad 0' || fail "stride 2: $out"
echo "$out" | grep -q '^sparse backward' && fail "backward timed with --no-backward: $out"

"$TREVO" net bench --conv --help | grep -q 'usage: trevo net bench --conv' || fail "no usage"
bad() { # expected message, then the arguments
    local want=$1 rc=0
    shift
    err=$("$TREVO" net bench "$@" 2>&1 >/dev/null) || rc=$?
    [ "$rc" = 2 ] || fail "$* exited $rc, not 2"
    echo "$err" | grep -qF -- "$want" || fail "$*: '$err' lacks '$want'"
}
bad "--conv: expected IN,OUT,K,H,W, got '3,4,3'" --conv 3,4,3 --density 0.5
bad "--conv field 2: expected a whole number in 1..65536, got '0'" --conv 3,0,3,9,9 --density 1
bad "give --conv IN,OUT,K,H,W and --density D" --conv 3,4,3,9,9
bad "--density: expected a number in [0, 1], got '2'" --conv 3,4,3,9,9 --density 2
bad "nn_conv_shape_check: padding 3: expected less than the kernel 3 x 3" --conv 3,4,3,9,9 \
    --density 1 --pad 3
bad "does not fit the 2 x 2 map" --conv 1,1,5,2,2 --density 1 --pad 0
echo "it_conv_bench: ok"
