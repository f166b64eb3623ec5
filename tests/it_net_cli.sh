#!/usr/bin/env bash
# trevo net import / export / validate through the real binary: round trips
# are byte-exact, and bad files give a non-zero exit with a message naming the
# file and line.
set -eu
: "${TREVO:?}"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$dir/a.txt" <<'NET'
trevo-net 1
# ids need not be contiguous, lines may come in any order
conn 10 3000000000 0.100000001
inputs 2
outputs 1
neuron 3000000000 out 1 sigmoid 0.333333343
neuron 10 in 0 identity 0
neuron 11 in 0 identity 0
neuron 500 hid 0.25 tanh -1.5e-07
conn 11 500 -2.75
conn 500 3000000000 1e+30
conn 3000000000 500 0.5
conn 500 500 -0.125
NET
"$TREVO" net import "$dir/a.txt" -o "$dir/a.net"
"$TREVO" net export "$dir/a.net" -o "$dir/b.txt"
"$TREVO" net import "$dir/b.txt" -o "$dir/b.net"
cmp "$dir/a.net" "$dir/b.net" || fail "msgpack differs after a text round trip"
"$TREVO" net export "$dir/b.net" -o "$dir/c.txt"
cmp "$dir/b.txt" "$dir/c.txt" || fail "text differs after a second round trip"
"$TREVO" net export "$dir/a.txt" --format msgpack -o "$dir/d.net"
cmp "$dir/a.net" "$dir/d.net" || fail "export --format msgpack differs from import"
out=$("$TREVO" net validate "$dir/a.net")
grep -q "connections: 5 (local 2, skip 1, recurrent 2)" <<<"$out" || fail "validate sizes: $out"

expect_error() { # FILE-CONTENT EXPECTED-MESSAGE-PART
    printf '%b' "$1" >"$dir/bad.txt"
    if msg=$("$TREVO" net import "$dir/bad.txt" -o "$dir/bad.net" 2>&1); then
        fail "accepted bad input: $1"
    fi
    grep -qF -- "$2" <<<"$msg" || fail "message '$msg' lacks '$2'"
    [ ! -e "$dir/bad.net" ] || fail "an output file was written for bad input"
}
expect_error 'trevo-net 7\n' 'bad.txt:1: format version'
expect_error 'trevo-net 2\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\nneuron 1 out 1 relu 0 lif decay=2\n' 'bad.txt:5: lif decay 2 is outside [0, 1]'
expect_error 'hello\n' 'bad.txt:1: not a trevo network'
expect_error 'trevo-net 1\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\nneuron 1 out 1 relu x\n' 'bad.txt:5: bias'
expect_error 'trevo-net 1\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\nneuron 1 out 1 relu 0\nconn 0 1 nan\n' 'bad.txt:6: weight is not a finite number'
expect_error 'trevo-net 1\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\nneuron 1 out 1 relu 0\nconn 1 0 1\n' 'bad.txt:6: connection 1 -> 0 ends in input neuron 0'
expect_error 'trevo-net 1\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\nneuron 1 out 1 relu 0\nneuron 1 hid 0.5 relu 0\n' 'bad.txt:6: neuron 1 already defined on line 5'
expect_error 'trevo-net 1\ninputs 1\noutputs 1\nneuron 0 in 0 identity 0\nneuron 1 out 1 swish 0\n' "bad.txt:5: unknown activation: 'swish'"
expect_error '' 'bad.txt: empty'

# A damaged msgpack file is refused with a clear message, never a crash.
head -c 20 "$dir/a.net" >"$dir/trunc.net"
if msg=$("$TREVO" net validate "$dir/trunc.net" 2>&1); then fail "accepted a truncated file"; fi
grep -q "trunc.net: genome: msgpack: " <<<"$msg" || fail "truncated: $msg"
if msg=$("$TREVO" net validate "$dir/missing.net" 2>&1); then fail "accepted a missing file"; fi
grep -q "missing.net: cannot open" <<<"$msg" || fail "missing: $msg"
# Usage errors exit 2.
set +e; "$TREVO" net import "$dir/a.txt" 2>/dev/null; rc=$?; set -e
[ $rc -eq 2 ] || fail "usage error exit status $rc, expected 2"
"$TREVO" --help | grep -q "net import" || fail "--help does not list net import"
echo ok
