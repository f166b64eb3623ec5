#!/usr/bin/env bash
# trevo net init --conv / net train of a convolutional network through the
# real binary, on small bar images (bars_csv of tests/lib_classify.sh): a
# sparse start that validates and is the same for the same seed; training
# that learns, keeps the number of coefficients under rigl, writes a genome
# with channels and filters that validates, and gives the same bytes for the
# same seed; its int8 form (net quantize: the channels in NET.q version 3,
# net test at batch 1 and 64 the same, close to the float network; its
# device figures; its C export, compiled, gives net eval's bytes, on the bars
# and on 200 Fashion-MNIST test images when the data set is installed); the
# errors.
set -u
: "${TREVO:?TREVO must name the trevo binary}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$(cd "$(dirname "$0")" && pwd)/lib_classify.sh"
. "$(cd "$(dirname "$0")" && pwd)/lib_it.sh" # it_c_as_eval

bars_csv 300 7 >"$dir/train.csv"
bars_csv 90 99 >"$dir/test.csv"

# ---- net init --conv
spec=1x6x6,4k3p1,pool2,6k2
"$TREVO" net init --conv $spec --layers 3 --density 0.5 --seed 3 --format text \
    -o "$dir/a.net" >"$dir/out" || fail "init exited $?"
grep -q "a.net: [0-9]* coefficients of 132 (.*), head 72 connections" "$dir/out" ||
    fail "init: $(cat "$dir/out")"
"$TREVO" net validate "$dir/a.net" >/dev/null || fail "init: the network does not validate"
grep -q "^filter " "$dir/a.net" || fail "init: no filter line"
"$TREVO" net init --conv $spec --layers 3 --density 0.5 --seed 3 --format text \
    -o "$dir/a2.net" >/dev/null
cmp -s "$dir/a.net" "$dir/a2.net" || fail "init: the same seed gave different networks"

# ---- net train: learns, rigl keeps the count, same bytes for the same seed
train() { # OUT
    "$TREVO" net train "$dir/a.net" --data "$dir/train.csv" --test "$dir/test.csv" \
        --epochs 8 --batch 16 --optimizer adam --lr 0.02 --regrow rigl:0.3 --seed 5 \
        --format text -o "$1"
}
train "$dir/b.net" >"$dir/log" || fail "train exited $?: $(cat "$dir/log")"
grep -q "^epoch 8/8: loss [0-9.]* test_acc [0-9.]* coefficients [0-9]* connections 72 " \
    "$dir/log" || fail "train: $(cat "$dir/log")"
n=$(grep -c "coefficients $(sed -n 's/.*: \([0-9]*\) coefficients of.*/\1/p' "$dir/out") " \
    "$dir/log")
[ "$n" = 8 ] || fail "train: rigl changed the number of coefficients: $(cat "$dir/log")"
acc=$(sed -n 's/^epoch 8\/8: .* test_acc \([0-9.]*\) .*/\1/p' "$dir/log")
awk -v a="$acc" 'BEGIN { exit !(a >= 0.8) }' || fail "train: test accuracy $acc < 0.8"
"$TREVO" net validate "$dir/b.net" >/dev/null || fail "train: the result does not validate"
train "$dir/b2.net" >/dev/null
cmp -s "$dir/b.net" "$dir/b2.net" || fail "train: the same seed gave different networks"

# ---- int8: quantize, test at batch 1 and 64 (the same bits), close to float
"$TREVO" net quantize "$dir/b.net" --calibrate "$dir/train.csv" --samples 100 -o "$dir/b.q" \
    2>"$dir/qlog" || fail "quantize exited $?: $(cat "$dir/qlog")"
[ "$(head -1 "$dir/b.q")" = "trevo-qnet 3" ] || fail "quantize: $(head -1 "$dir/b.q")"
grep -q "b.q: flash [0-9]* bytes, RAM [0-9]* bytes, [0-9]* MACs (int8 C on a device)" \
    "$dir/qlog" || fail "quantize: $(cat "$dir/qlog")"
t1=$("$TREVO" net test "$dir/b.q" --data "$dir/test.csv" --batch 1) || fail "int8 test exited $?"
t64=$("$TREVO" net test "$dir/b.q" --data "$dir/test.csv" --batch 64) || fail "int8 test exited $?"
[ "$t1" = "$t64" ] || fail "int8 test: batch 1 [$t1], batch 64 [$t64]"
f=$("$TREVO" net test "$dir/b.net" --data "$dir/test.csv") || fail "float test exited $?"
qa=$(printf '%s\n' "$t1" | sed -n 's/^accuracy \([0-9.]*\) .*/\1/p')
fa=$(printf '%s\n' "$f" | sed -n 's/^accuracy \([0-9.]*\) .*/\1/p')
awk -v q="$qa" -v f="$fa" 'BEGIN { exit !(q >= f - 0.05) }' || fail "int8 $qa, float $fa"
"$TREVO" net validate "$dir/b.q" >"$dir/v" || fail "validate NET.q exited $?"
grep -q "^channels: [0-9]* (coefficients [0-9]*)$" "$dir/v" || fail "validate: $(cat "$dir/v")"
grep -q "^device: flash [0-9]* bytes, RAM [0-9]* bytes, [0-9]* MACs" "$dir/v" ||
    fail "validate: $(cat "$dir/v")"

# ---- the int8 C export: net eval's bytes on the test rows (and on rows past
# the calibrated range)
cut -d, -f1-36 "$dir/test.csv" | tail -n +2 >"$dir/rows.csv"
awk -F, -v OFS=, 'NR <= 20 { for (i = 1; i <= NF; i++) $i = $i * 3 - 1.3 + i * 0.01; print }' \
    "$dir/rows.csv" >>"$dir/rows.csv"
(cd "$dir" && it_c_as_eval b.q 36 3 rows.csv) || exit 1
fm=/usr/share/datasets/fashion-mnist
if [ -r "$fm/t10k-images-idx3-ubyte.gz" ]; then # an untrained CNN on 200 test images
    "$TREVO" net init --conv 1x28x28,4k3p1,pool2,8k3s2,pool2 --layers 10 --density 0.3 \
        --seed 4 -o "$dir/f.net" >/dev/null || fail "init 28x28"
    "$TREVO" net quantize "$dir/f.net" --calibrate fashion-mnist:test --samples 50 \
        -o "$dir/f.q" 2>/dev/null || fail "quantize fashion-mnist:test exited $?"
    gzip -dc "$fm/t10k-images-idx3-ubyte.gz" | tail -c +17 | head -c $((200 * 784)) |
        od -An -v -tu1 -w784 |
        awk '{ for (i = 1; i <= NF; i++) printf "%s%.6g", (i > 1 ? "," : ""), $i / 255; print "" }' \
            >"$dir/fm.csv"
    [ "$(wc -l <"$dir/fm.csv")" = 200 ] || fail "fashion rows: $(wc -l <"$dir/fm.csv")"
    (cd "$dir" && it_c_as_eval f.q 784 10 fm.csv) || exit 1
fi

# ---- errors
expect_err() { # WHAT TEXT cmd...
    what=$1 text=$2
    shift 2
    "$@" >"$dir/eo" 2>"$dir/ee" && fail "$what: exited 0"
    grep -qF -- "$text" "$dir/ee" || fail "$what: $(cat "$dir/ee")"
}
expect_err "bad spec" "--conv: '4k3x': expected NkK[sS][pP]" \
    "$TREVO" net init --conv 1x6x6,4k3x --layers 3 -o "$dir/x"
expect_err "no input" "--conv: '4k3': expected the input CxHxW first" \
    "$TREVO" net init --conv 4k3 --layers 3 -o "$dir/x"
expect_err "does not fit" "convolution 2 (6k5s1p0, pool 1) does not fit its 3x3 input" \
    "$TREVO" net init --conv 1x6x6,4k3p1,pool2,6k5 --layers 3 -o "$dir/x"
expect_err "density" "--density: expected 1 or 2 numbers in (0, 1], got '0'" \
    "$TREVO" net init --conv $spec --layers 3 --density 0 -o "$dir/x"
expect_err "layers" "--layers: expected 1 to 16 comma-separated sizes" \
    "$TREVO" net init --conv $spec --layers 0 -o "$dir/x"
bars_csv 10 1 | cut -d, -f2- >"$dir/narrow.csv"
expect_err "data" "narrow.csv: the data set has 35 features per row, the network 36 inputs" \
    "$TREVO" net train "$dir/a.net" --data "$dir/narrow.csv" -o "$dir/x"
echo "it_net_cnn: ok"
