#!/usr/bin/env bash
# trevo net init / train / test through the real binary, on small CSV data
# made here: a sparse start that validates and is the same for the same seed;
# one SGD step checked by hand; training that learns, writes a network that
# `net eval` and `net test` read, and gives the same bytes for the same seed;
# `net test` exact on a network written by hand; the errors.
set -u
: "${TREVO:?TREVO must name the trevo binary}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# ---- data: 4 features in [0, 1), 3 classes (which of x0, x1, x2 is largest)
# from an LCG (exact in awk's doubles, the same bytes with mawk and gawk).
make_csv() { # ROWS SEED
    awk -v n="$1" -v s="$2" 'BEGIN {
        print "x0,x1,x2,x3,label"
        for (i = 0; i < n; i++) {
            for (k = 0; k < 4; k++) { s = (s * 16807) % 2147483647; x[k] = s / 2147483647 }
            c = 0; if (x[1] > x[c]) c = 1; if (x[2] > x[c]) c = 2
            printf "%.4f,%.4f,%.4f,%.4f,%d\n", x[0], x[1], x[2], x[3], c
        }
    }'
}
make_csv 300 7 >"$dir/train.csv"
make_csv 100 99 >"$dir/test.csv"

# ---- net init
"$TREVO" net init --layers 4,16,3 --density 0.5 --seed 3 -o "$dir/a.net" >"$dir/out" ||
    fail "init exited $?"
grep -q "a.net: 23 neurons, [0-9]* connections" "$dir/out" || fail "init: $(cat "$dir/out")"
"$TREVO" net validate "$dir/a.net" | grep -q "^layers: 3$" || fail "init: not 3 layers"
"$TREVO" net init --layers 4,16,3 --density 0.5 --seed 3 -o "$dir/a2.net" >/dev/null
cmp -s "$dir/a.net" "$dir/a2.net" || fail "init: the same seed gave different networks"
"$TREVO" net init --layers 4,16,3 --density 0.5 --seed 4 -o "$dir/a3.net" >/dev/null
cmp -s "$dir/a.net" "$dir/a3.net" && fail "init: another seed gave the same network"
# density 1: every pair present (4*16 + 16*3), no other kind
"$TREVO" net init --layers 4,16,3 --density 1 --format text -o "$dir/full.txt" >/dev/null
"$TREVO" net validate "$dir/full.txt" | grep -q "connections: 112 (local 112, skip 0, recurrent 0)" ||
    fail "init --density 1: $("$TREVO" net validate "$dir/full.txt")"
# --epsilon (SET's rule): min(1, E (n_a + n_b) / (n_a n_b)); E = 100 fills both pairs
"$TREVO" net init --layers 4,16,3 --epsilon 100 --format text -o "$dir/eps.txt" >/dev/null
"$TREVO" net validate "$dir/eps.txt" | grep -q "connections: 112 (local 112," ||
    fail "init --epsilon 100: $("$TREVO" net validate "$dir/eps.txt")"
# He scale into relu: the 64 weights into the hidden layer have a mean square near 2/4
awk '$1 == "conn" && $2 < 4 { s += $4 * $4; n++ } END { m = s / n; exit !(n == 64 && m > 0.25 && m < 1) }' \
    "$dir/full.txt" || fail "init: weights into the hidden layer not N(0, 2/fan-in)"

# ---- one SGD step by hand: in 0 -> out 1 (w 0.5), out 2 unconnected, one row
# x = 1, label 0: z = (0.5, 0), p0 = e^0.5 / (e^0.5 + 1); with lr 1,
# w' = 0.5 + (1 - p0), b1' = 1 - p0, b2' = -(1 - p0), 1 - p0 = 0.377540669
cat >"$dir/one.txt" <<'NET'
trevo-net 1
inputs 1
outputs 2
neuron 0 in 0 identity 0
neuron 1 out 1 identity 0
neuron 2 out 1 identity 0
conn 0 1 0.5
NET
printf '1,0\n' >"$dir/one.csv"
"$TREVO" net train "$dir/one.txt" --data "$dir/one.csv" --epochs 1 --batch 1 --lr 1 \
    --optimizer sgd --format text -o "$dir/one_out.txt" >"$dir/out" || fail "one step: exit $?"
awk '$1 == "conn" { w = $4 } $1 == "neuron" && $2 == 1 { b1 = $6 } $1 == "neuron" && $2 == 2 { b2 = $6 }
     END { d = 0.377540669; e = 1e-6
           exit !(w - 0.5 - d < e && 0.5 + d - w < e && b1 - d < e && d - b1 < e && b2 + d < e && -d - b2 < e) }' \
    "$dir/one_out.txt" || fail "one SGD step: $(cat "$dir/one_out.txt")"
grep -q "^epoch 1/1: loss 0.474077 train_acc 1.0000 test_acc - connections 1 seconds " "$dir/out" ||
    fail "one step line: $(cat "$dir/out")"

# ---- training that learns, writes a readable network, is deterministic
train() { # OUT [ARGS...]
    local out=$1; shift
    "$TREVO" net train "$dir/a.net" --data "$dir/train.csv" --test "$dir/test.csv" --epochs 30 \
        --batch 16 --lr 0.05 --optimizer adam --seed 2 -o "$out" "$@"
}
train "$dir/b.net" >"$dir/log" 2>"$dir/err" || fail "train exited $?: $(cat "$dir/err")"
[ "$(grep -c '^epoch [0-9]*/30: loss [0-9.]* train_acc [0-9.]* test_acc [0-9.]* test_loss [0-9.]* connections [0-9]* seconds [0-9.]*$' "$dir/log")" -eq 30 ] ||
    fail "not 30 epoch lines: $(cat "$dir/log")"
[ ! -s "$dir/err" ] || fail "a progress bar on a non-terminal: $(cat "$dir/err")"
last_acc=$(awk '/^epoch 30\/30/ { print $8 }' "$dir/log")
awk -v a="$last_acc" 'BEGIN { exit !(a >= 0.9) }' || fail "test accuracy $last_acc < 0.9 after 30 epochs"
"$TREVO" net validate "$dir/b.net" >/dev/null || fail "trained network does not validate"
printf '0.9,0.1,0.1,0.5\n0.1,0.1,0.9,0.5\n' | "$TREVO" net eval "$dir/b.net" >"$dir/ev" ||
    fail "net eval cannot run the trained network"
[ "$(wc -l <"$dir/ev")" -eq 2 ] || fail "net eval: $(cat "$dir/ev")"
# net test (the engine, not the trainer) agrees with the last epoch's test accuracy
"$TREVO" net test "$dir/b.net" --data "$dir/test.csv" >"$dir/t" || fail "net test exited $?"
grep -q "^accuracy $last_acc (" "$dir/t" || fail "net test: $(cat "$dir/t"), train said $last_acc"
train "$dir/b2.net" >/dev/null || fail "second run"
cmp -s "$dir/b.net" "$dir/b2.net" || fail "the same seed gave different trained networks"
train "$dir/b3.net" --seed 3 >/dev/null || fail "run with seed 3"
cmp -s "$dir/b.net" "$dir/b3.net" && fail "another seed gave the same trained network"

# ---- file order, a short last batch (300 = 2 * 128 + 44), momentum, policies
"$TREVO" net train "$dir/a.net" --data "$dir/train.csv" --epochs 2 --batch 128 --no-shuffle \
    --optimizer momentum --momentum 0.5 --lr 0.1 -o "$dir/c.net" >"$dir/log" || fail "no-shuffle"
"$TREVO" net train "$dir/a.net" --data "$dir/train.csv" --epochs 2 --batch 128 --no-shuffle \
    --optimizer momentum --momentum 0.5 --lr 0.1 --seed 9 -o "$dir/c2.net" >/dev/null
cmp -s "$dir/c.net" "$dir/c2.net" || fail "--no-shuffle depends on the seed"
"$TREVO" net train "$dir/a.net" --data "$dir/train.csv" --epochs 3 --sparsify threshold:0.2 \
    --regrow set:0.3 -o "$dir/d.net" >"$dir/log" || fail "policies: exit $?"
conns0=$("$TREVO" net validate "$dir/a.net" | awk '/^connections:/ { print $2 }')
conns=$("$TREVO" net validate "$dir/d.net" | awk '/^connections:/ { print $2 }')
[ "$conns" -lt "$conns0" ] || fail "threshold:0.2 removed nothing ($conns0 -> $conns)"
grep -q "connections $conns .* removed [1-9][0-9]* grown [1-9][0-9]*" "$dir/log" ||
    fail "policies line: $(cat "$dir/log")"

# ---- net test, exact: outputs are the inputs (class = the larger input)
cat >"$dir/id.txt" <<'NET'
trevo-net 1
inputs 2
outputs 2
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 out 1 identity 0
neuron 3 out 1 identity 0
conn 0 2 1
conn 1 3 1
NET
printf '1,0,0\n0,1,1\n0,1,0\n0.5,0.5,0\n' >"$dir/id.csv"
out=$("$TREVO" net test "$dir/id.txt" --data "$dir/id.csv" --batch 3) || fail "test exact: $?"
# losses: log(1+e^-1) twice, log(1+e), log 2
[ "$out" = "accuracy 0.7500 (3 of 4) loss 0.658233 connections 2" ] || fail "net test: [$out]"

# ---- errors: usage (exit 2) and bad input (exit 1), with the message
expect() { # EXIT MESSAGE-PART COMMAND...
    local want=$1 part=$2; shift 2
    "$TREVO" "$@" >/dev/null 2>"$dir/err"; local rc=$?
    [ $rc -eq "$want" ] || fail "$*: exit $rc, want $want ($(cat "$dir/err"))"
    grep -qF -- "$part" "$dir/err" || fail "$*: message '$(cat "$dir/err")' lacks '$part'"
}
expect 2 "--layers, --density (or --epsilon) and -o are required" net init --layers 4,3 -o "$dir/x.net"
expect 2 "--density and --epsilon exclude each other" net init --layers 4,3 --density 0.5 --epsilon 2 -o "$dir/x.net"
expect 2 "--epsilon: expected a number in (0, 1e+09], got '-2'" net init --layers 4,3 --epsilon -2 -o "$dir/x.net"
expect 2 "--layers: expected 2 to 64 comma-separated sizes" net init --layers 4,0,3 --density 0.5 -o "$dir/x.net"
expect 2 "--layers: expected at least 2 sizes" net init --layers 4 --density 0.5 -o "$dir/x.net"
expect 2 "--density: expected a number in (0, 1], got '0'" net init --layers 4,3 --density 0 -o "$dir/x.net"
expect 2 "--hidden: unknown activation 'relux'" net init --layers 4,3 --density 1 --hidden relux -o "$dir/x.net"
expect 2 "NET, --data and -o are required" net train "$dir/a.net" -o "$dir/x.net"
expect 2 "--optimizer: expected sgd, momentum or adam, got 'rmsprop'" \
    net train "$dir/a.net" --data "$dir/train.csv" --optimizer rmsprop -o "$dir/x.net"
expect 2 "--epochs: expected a whole number in 1..1000000, got '0'" \
    net train "$dir/a.net" --data "$dir/train.csv" --epochs 0 -o "$dir/x.net"
expect 2 "--lr: expected a number in (0, 1e+06], got '-1'" \
    net train "$dir/a.net" --data "$dir/train.csv" --lr -1 -o "$dir/x.net"
expect 2 "--sparsify l1:x: 'x' is not a number" \
    net train "$dir/a.net" --data "$dir/train.csv" --sparsify l1:x -o "$dir/x.net"
expect 2 "--regrow l1:0.1: --regrow takes set:F[,S] or rigl:F" \
    net train "$dir/a.net" --data "$dir/train.csv" --regrow l1:0.1 -o "$dir/x.net"
expect 2 "--sparsify set:0.3: set and rigl are given with --regrow" \
    net train "$dir/a.net" --data "$dir/train.csv" --sparsify set:0.3 -o "$dir/x.net"
expect 2 "unknown option '--bogus'" net train "$dir/a.net" --data "$dir/train.csv" --bogus 1 -o "$dir/x.net"
printf '1,2,3,4,5,0\n' >"$dir/wide.csv"
expect 1 "wide.csv: the data set has 5 features per row, the network 4 inputs" \
    net train "$dir/a.net" --data "$dir/wide.csv" -o "$dir/x.net"
printf '1,2,3,4,7\n' >"$dir/many.csv"
expect 1 "many.csv:1: label 7 out of range (a class number 0..2: the network has 3 outputs)" \
    net train "$dir/a.net" --data "$dir/train.csv" --test "$dir/many.csv" -o "$dir/x.net"
expect 1 "missing.csv" net train "$dir/a.net" --data "$dir/missing.csv" -o "$dir/x.net"
expect 1 "nonet.net" net train "$dir/nonet.net" --data "$dir/train.csv" -o "$dir/x.net"
expect 1 "wide.csv: the data set has 5 features per row, the network 4 inputs" \
    net test "$dir/a.net" --data "$dir/wide.csv"
[ ! -e "$dir/x.net" ] || fail "an output was written on error"
echo "it_net_train: ok"
