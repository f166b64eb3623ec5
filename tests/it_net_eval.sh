#!/usr/bin/env bash
# trevo net eval: outputs of a small recurrent network row by row, state reset
# on an empty line, and the error paths (line numbers, exit codes).
set -u
: "${TREVO:?TREVO must name the trevo binary}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

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
out=$(printf '1\n2\n3\n\n1\n' | "$TREVO" net eval "$dir/acc.txt") || fail "happy path exited $?"
want=$'2\n8\n22\n2'
[ "$out" = "$want" ] || fail "outputs: got [$out], want [$want]"

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
out=$(printf ' 0 , 3 \r\n0.25,-1\n' | "$TREVO" net eval "$dir/two.txt") || fail "two: exited $?"
want=$'0.5,0.800000012\n0.562176526,0.400000006'
[ "$out" = "$want" ] || fail "two: got [$out], want [$want]"

# error: wrong row width, with the line number, exit 1, earlier rows printed
out=$(printf '1,2\n1,2\n1\n1,2\n' | "$TREVO" net eval "$dir/two.txt" 2>"$dir/err"); rc=$?
[ $rc -eq 1 ] || fail "short row: exit $rc, want 1"
grep -q '^trevo: stdin:3: expected 2 numbers, got 1$' "$dir/err" || fail "short row: $(cat "$dir/err")"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 2 ] || fail "short row: rows before the error not printed"

printf '1,2,3\n' | "$TREVO" net eval "$dir/two.txt" 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "long row: exit $rc"
grep -q '^trevo: stdin:1: expected 2 numbers, got 3$' "$dir/err" || fail "long row: $(cat "$dir/err")"

printf '1,2\n\n0.5,abc\n' | "$TREVO" net eval "$dir/two.txt" >/dev/null 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "not a number: exit $rc"
grep -q "^trevo: stdin:3: value 2 ('abc'): not a number$" "$dir/err" || fail "nan: $(cat "$dir/err")"

printf 'inf,1\n' | "$TREVO" net eval "$dir/two.txt" >/dev/null 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "inf: exit $rc"
grep -q "^trevo: stdin:1: value 1 ('inf'): not a finite float$" "$dir/err" || fail "inf: $(cat "$dir/err")"

# a missing network file, a bad network, usage
"$TREVO" net eval "$dir/none.txt" </dev/null 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "missing file: exit $rc"
grep -q "none.txt" "$dir/err" || fail "missing file: $(cat "$dir/err")"
printf 'trevo-net 1\nbogus\n' >"$dir/bad.txt"
"$TREVO" net eval "$dir/bad.txt" </dev/null 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "bad net: exit $rc"
grep -q "bad.txt" "$dir/err" || fail "bad net: $(cat "$dir/err")"
"$TREVO" net eval 2>/dev/null </dev/null; rc=$?
[ $rc -eq 2 ] || fail "no argument: exit $rc, want 2"
"$TREVO" net eval --help | grep -q "empty line starts a new sequence" || fail "--help"
# empty input: no output, success
out=$("$TREVO" net eval "$dir/acc.txt" </dev/null) || fail "empty stdin: exit $?"
[ -z "$out" ] || fail "empty stdin printed [$out]"
echo "it_net_eval: ok"
