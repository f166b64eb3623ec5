#!/usr/bin/env bash
# Convolutional genomes through the CLI: experiments/conv-example.net (two
# 3x3 line detectors over a 6x6 image, pooled 2x2, a head of plain
# connections) evaluated by trevo net eval, converted text -> msgpack -> text
# byte for byte, drawn with its channels as nodes; a filter that does not fit
# its channel is a clear error.
set -u
: "${TREVO:?TREVO must name the trevo binary}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
net=experiments/conv-example.net

# a vertical line in column 2, a horizontal one in row 3, an empty image
row() { # $1: awk condition on the pixel index i
    awk -v OFS=, "BEGIN { for (i = 0; i < 36; i++) printf \"%s%d\", (i ? \",\" : \"\"), ($1) ? 1 : 0; print \"\" }"
}
out=$({ row 'i % 6 == 2'; row 'int(i / 6) == 3'; row '0'; } | "$TREVO" net eval "$net") ||
    fail "eval exited $?"
want=$'3,0\n0,3\n0,0'
[ "$out" = "$want" ] || fail "eval: got [$out], want [$want]"

"$TREVO" net validate "$net" >"$dir/v.txt" || fail "validate exited $?"
grep -q "valid" "$dir/v.txt" || fail "validate: $(cat "$dir/v.txt")"

# text -> msgpack -> text: the same text as text -> text
"$TREVO" net export "$net" -o "$dir/a.txt" || fail "export text exited $?"
"$TREVO" net export "$net" --format msgpack -o "$dir/a.mp" || fail "export msgpack exited $?"
"$TREVO" net export "$dir/a.mp" -o "$dir/b.txt" || fail "export from msgpack exited $?"
cmp -s "$dir/a.txt" "$dir/b.txt" || fail "text -> msgpack -> text differs"
grep -q '^trevo-net 4$' "$dir/a.txt" || fail "not written as version 4"
grep -q '^filter 0 1 3 3 1 1 0,1,1 1,1,1 2,1,1$' "$dir/a.txt" || fail "filter line: $(grep filter "$dir/a.txt")"
out=$(printf '%s\n' "$(row 'i % 6 == 2')" | "$TREVO" net eval "$dir/a.mp") || fail "eval msgpack exited $?"
[ "$out" = "3,0" ] || fail "eval of the msgpack form: got [$out]"

"$TREVO" net export "$net" --format dot -o "$dir/a.dot" || fail "export dot exited $?"
grep -q 'c0 -> c1 \[label="3 of 3x3"' "$dir/a.dot" || fail "dot: no filter edge"
grep -q 'c1 -> n36 \[label="9", style=dotted\]' "$dir/a.dot" || fail "dot: no head edge"

# a 5x5 kernel does not give channel 1's 6x6 map
sed 's/^filter 0 1 3 3 1 1 /filter 0 1 5 5 1 1 /' "$net" >"$dir/bad.net"
if "$TREVO" net eval "$dir/bad.net" </dev/null 2>"$dir/err.txt"; then fail "bad filter accepted"; fi
grep -q "filter 0 -> 1: a 5x5 kernel with stride 1, pad 1 over 6x6 gives 4x4, channel 1 is 6x6" \
    "$dir/err.txt" || fail "bad filter message: $(cat "$dir/err.txt")"
echo "it_conv: ok"
