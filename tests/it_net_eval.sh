#!/usr/bin/env bash
# trevo net eval: outputs of a small recurrent network row by row, state reset
# on an empty line, and the error paths (line numbers, exit codes).
set -u
: "${TREVO:?TREVO must name the trevo binary}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# evals LABEL NET ROWS WANT: net eval of NET on ROWS (printf %b) prints WANT.
evals() {
    local out
    out=$(printf '%b' "$3" | "$TREVO" net eval "$2") || fail "$1: exited $?"
    [ "$out" = "$4" ] || fail "$1: got [$out], want [$4]"
}
# refused LABEL NET ROWS MESSAGE: net eval of NET on ROWS exits 1 and says
# MESSAGE (a grep pattern) on stderr; what it printed before is in $out.
refused() {
    local rc=0
    out=$(printf '%b' "$3" | "$TREVO" net eval "$2" 2>"$dir/err") || rc=$?
    [ $rc -eq 1 ] || fail "$1: exit $rc, want 1"
    grep -q "$4" "$dir/err" || fail "$1: $(cat "$dir/err")"
}

# in -> h (identity, self loop 1) -> out (x2); out -> h recurrent 0.5:
# h_t = x_t + h_{t-1} + 0.5 out_{t-1}, out_t = 2 h_t
cat >"$dir/acc.txt" <<'NET'
trevo-net 1
inputs 1
outputs 1
neuron 10 in 0 identity 0
neuron 20 out 1 identity 0
neuron 30 hid 0.5 identity 0
conn 10 30 1
conn 30 30 1
conn 30 20 2
conn 20 30 0.5
NET
evals "happy path" "$dir/acc.txt" '1\n2\n3\n\n1\n' $'2\n8\n22\n2'

# two inputs, two outputs (by ascending id), %.9g, blanks and CRLF allowed
cat >"$dir/two.txt" <<'NET'
trevo-net 1
inputs 2
outputs 2
neuron 1 in 0 identity 0
neuron 2 in 0 identity 0
neuron 7 out 1 identity 0.5
neuron 5 out 1 sigmoid 0
conn 1 5 1
conn 2 7 0.1
NET
evals two "$dir/two.txt" ' 0 , 3 \r\n0.25,-1\n' $'0.5,0.800000012\n0.562176526,0.400000006'

# error: wrong row width, with the line number, exit 1, earlier rows printed
refused "short row" "$dir/two.txt" '1,2\n1,2\n1\n1,2\n' '^trevo: stdin:3: expected 2 numbers, got 1$'
[ "$(printf '%s\n' "$out" | wc -l)" -eq 2 ] || fail "short row: rows before the error not printed"
refused "long row" "$dir/two.txt" '1,2,3\n' '^trevo: stdin:1: expected 2 numbers, got 3$'
refused "not a number" "$dir/two.txt" '1,2\n\n0.5,abc\n' "^trevo: stdin:3: value 2 ('abc'): not a number$"
refused inf "$dir/two.txt" 'inf,1\n' "^trevo: stdin:1: value 1 ('inf'): not a finite float$"

# a missing network file, a bad network, usage
refused "missing file" "$dir/none.txt" '' "none.txt"
printf 'trevo-net 1\nbogus\n' >"$dir/bad.txt"
refused "bad net" "$dir/bad.txt" '' "bad.txt"
"$TREVO" net eval 2>/dev/null </dev/null; rc=$?
[ $rc -eq 2 ] || fail "no argument: exit $rc, want 2"
"$TREVO" net eval --help | grep -q "empty line starts a new sequence" || fail "--help"
# empty input: no output, success
evals "empty stdin" "$dir/acc.txt" '' ''
echo "it_net_eval: ok"
