#!/usr/bin/env bash
# One input row gives the same outputs whatever the batch it is in and
# whatever the path. The network's hidden neuron sums 1e8, 1 and -1e8: in
# the engine's order (8 partials, then a tree) that is 1, summed in edge order
# it is 0. On a row of ones the first output is then 1 (class 0, right), or
# 0, below the second output's bias 0.5 (class 1, wrong); a row of zeros is
# class 1. net eval, net test at every --batch, net train's test accuracy
# (learning rate 1e-30: the weights keep their values, the zero biases move
# by less than any output's rounding) and task eval (classify, 1 to 128
# rows, in batches of up to 32) must all score every row right, with the
# hidden neuron identity and relu (a layer the engine scatters).
set -u
. "$(dirname "$0")/lib_it.sh"
it_tmpdir it_batch_invariant
cd "$dir"

# check ACT: the checks with hidden neuron 10 of activation ACT (relu: its
# layer is one the engine scatters)
check() {
    local act=$1
    cat >cancel.net <<NET
trevo-net 2
inputs 5
outputs 2
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 in 0 identity 0
neuron 3 in 0 identity 0
neuron 4 in 0 identity 0
neuron 5 out 1 identity 0
neuron 6 out 1 identity 0.5
neuron 10 hid 0.5 $act 0
conn 0 10 1e8
conn 1 10 1
conn 2 10 -1e8
conn 10 5 1
NET
    "$TREVO" net validate cancel.net >/dev/null || fail "net validate refused the network"

    # 200 rows: ones (class 0) and zeros (class 1) in an irregular pattern, so
    # that the rows of ones fall at every position of the batches
    for i in $(seq 0 199); do
        if [ $(((i * 7 + i / 3) % 5)) -lt 3 ]; then echo "1,1,1,1,1,0"; else echo "0,0,0,0,0,1"; fi
    done >rows.csv

    out=$(printf '1,1,1,1,1\n\n0,0,0,0,0\n' | "$TREVO" net eval cancel.net) || fail "net eval exited $?"
    [ "$out" = $'1,0.5\n0,0.5' ] || fail "net eval: [$out], wanted [1,0.5 / 0,0.5]"

    for b in 1 3 64 128 ""; do
        out=$("$TREVO" net test cancel.net --data rows.csv ${b:+--batch $b}) ||
            fail "net test --batch ${b:-default} exited $?"
        case $out in "accuracy 1.0000 (200 of 200)"*) ;; *) false ;; esac ||
            fail "net test --batch ${b:-default}: [$out]"
    done

    "$TREVO" net train cancel.net --data rows.csv --test rows.csv --lr 1e-30 --batch 64 -o trained.net \
        >train.out || fail "net train exited $?"
    grep -q ' test_acc 1.0000 ' train.out || fail "net train's test_acc: $(cat train.out)"

    for n in 1 3 64 128; do
        out=$("$TREVO" task eval classify cancel.net --set "train=$PWD/rows.csv" --set samples=$n) ||
            fail "task eval samples=$n exited $?"
        printf '%s\n' "$out" | grep -qx 'accuracy: 1' || fail "task eval samples=$n: [$out]"
    done
}

check identity
check relu
echo "ok: net eval, net test (batches 1, 3, 64, 128, default), net train's test_acc and task eval (1 to 128 rows) agree"
