#!/usr/bin/env bash
# int8 networks on the command line: `task eval TASK NET.q` with --config,
# --set and --generation (classify draws its rows by generation; its champion
# test and final test run too), `net test NET.q`, `net quantize --calibrate
# task:NAME` with the [task] values of --config / --set, and
# `trevo best DB --int8 --calibrate ...` (the same NET.q as best then
# net quantize); --calibrate on every data set --data takes (a labelled CSV,
# gzipped or not, IDX with --labels, fashion-mnist:test) and --samples; the
# error paths.
set -u
: "${TREVO:?TREVO must name the trevo binary}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# ---- a classify task (as tests/it_task_eval.sh): label 0 when x0 > x1 --------------
# the rows of tests/it_task_eval.sh's classify: (i % 4, 3 i % 5) for i = 1..10
{
    echo '# x0,x1,label'
    printf '%s\n' 1,3,1 2,1,0 3,4,1 0,2,1 1,0,0 2,3,1 3,1,0 0,4,1 1,2,1 2,0,0
} >"$dir/train.csv"
printf 'x0,x1,label\n3,1,0\n1,4,1\n2,0,0\n5,1,1\n' >"$dir/test.csv"
printf 'trevo-net 1\ninputs 2\noutputs 2\nneuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n' \
    >"$dir/cls.txt"
printf 'neuron 10 out 1 identity 0\nneuron 11 out 1 identity 0\nconn 0 10 1\nconn 1 11 1\n' \
    >>"$dir/cls.txt"
printf '[run]\ntask = classify\n[task]\ntrain = %s\ntest = %s\nsamples = 4\n' "$dir/train.csv" \
    "$dir/test.csv" >"$dir/cls.ini"

# net quantize --calibrate task:classify: the defaults have no data (refused,
# named); --config FILE's values and the same values by --set give one file
"$TREVO" net quantize "$dir/cls.txt" --calibrate task:classify -o "$dir/c0.q" 2>"$dir/err" &&
    fail "quantize with the default [task] values ran"
grep -q '^trevo: --calibrate task:classify: task classify: \[task\] train: required' "$dir/err" ||
    fail "quantize defaults: $(cat "$dir/err")"
"$TREVO" net quantize "$dir/cls.txt" --calibrate task:classify --config "$dir/cls.ini" \
    -o "$dir/c1.q" 2>/dev/null || fail "quantize --config exited $?"
"$TREVO" net quantize "$dir/cls.txt" --calibrate task:classify --set "train=$dir/train.csv" \
    --set "test=$dir/test.csv" --set samples=4 -o "$dir/c2.q" 2>/dev/null ||
    fail "quantize --set exited $?"
cmp -s "$dir/c1.q" "$dir/c2.q" || fail "quantize: --config and --set gave different files"
# --config of another task than task:NAME
printf '[run]\ntask = xor\n' >"$dir/xor.ini"
"$TREVO" net quantize "$dir/cls.txt" --calibrate task:classify --config "$dir/xor.ini" \
    -o "$dir/c3.q" 2>"$dir/err" && fail "quantize with another task's config ran"
grep -q "task classify: $dir/xor.ini's \[run\] task is xor" "$dir/err" ||
    fail "quantize other config: $(cat "$dir/err")"

# task eval NET.q --generation: the generation line, rows drawn by generation
# (generations 1 and 2 differ in xent), the champion test and the final test
e2=$("$TREVO" task eval "$dir/c1.q" --config "$dir/cls.ini" --generation 2) ||
    fail "task eval NET.q gen 2 exited $?"
e1=$("$TREVO" task eval classify "$dir/c1.q" --config "$dir/cls.ini" --generation 1) ||
    fail "task eval NET.q gen 1 exited $?"
[ "$(printf '%s\n' "$e2" | sed -n 1p)" = "generation: 2" ] || fail "int8 eval gen 2: [$e2]"
[ "$(printf '%s\n' "$e1" | sed -n 1p)" = "generation: 1" ] || fail "int8 eval gen 1: [$e1]"
x1=$(printf '%s\n' "$e1" | sed -n 's/^xent: //p') x2=$(printf '%s\n' "$e2" | sed -n 's/^xent: //p')
[ -n "$x1" ] && [ -n "$x2" ] && [ "$x1" != "$x2" ] || fail "int8 eval: generations 1 and 2 gave xent [$x1] [$x2]"
for want in '^accuracy: 1$' '^champion_accuracy: 1$' '^champion_solved: no$' '^final_accuracy: 0.75$'; do
    printf '%s\n' "$e2" | grep -q "$want" || fail "int8 eval: no line like '$want' in [$e2]"
done
# the same lines through --set
s2=$("$TREVO" task eval classify "$dir/c1.q" --set "train=$dir/train.csv" \
    --set "test=$dir/test.csv" --set samples=4 --generation 2) || fail "task eval NET.q --set exited $?"
[ "$s2" = "$e2" ] || fail "task eval NET.q: --set gave [$s2], --config [$e2]"

# net test NET.q: the accuracy and loss of the final test
t=$("$TREVO" net test "$dir/c1.q" --data "$dir/test.csv") || fail "net test NET.q exited $?"
fx=$(printf '%s\n' "$e2" | sed -n 's/^final_xent: //p')
printf '%s\n' "$t" | grep -q '^accuracy 0.7500 (3 of 4) loss [0-9.]* connections 2$' ||
    fail "net test NET.q: [$t]"
awk -v a="$(printf '%s\n' "$t" | sed 's/.* loss \([0-9.]*\) .*/\1/')" -v b="$fx" \
    'BEGIN { exit !(a - b < 1e-6 && b - a < 1e-6) }' || fail "net test loss [$t] vs final_xent [$fx]"
"$TREVO" net test "$dir/c1.q" --data "$dir/nothing.csv" 2>"$dir/err" && fail "net test of no data ran"
grep -q 'nothing.csv' "$dir/err" || fail "net test no data: $(cat "$dir/err")"

# ---- best --int8 ----------------------------------------------------------------------
sed -e 's/^generations = 100/generations = 5/' -e 's/^size = 150/size = 30/' experiments/xor.ini \
    >"$dir/x.ini"
"$TREVO" run "$dir/x.ini" --db "$dir/x.db" 2>/dev/null || fail "xor run exited $?"
"$TREVO" best "$dir/x.db" -o "$dir/x.net" || fail "best exited $?"
"$TREVO" net quantize "$dir/x.net" --calibrate task:xor --samples 4 -o "$dir/a.q" 2>/dev/null ||
    fail "quantize xor exited $?"
"$TREVO" best "$dir/x.db" --int8 --calibrate task:xor --samples 4 -o "$dir/b.q" 2>"$dir/err" ||
    fail "best --int8 exited $?"
cmp -s "$dir/a.q" "$dir/b.q" || fail "best --int8 differs from best + net quantize"
# without --calibrate: the run's own task, with its [task] values
"$TREVO" best "$dir/x.db" --int8 --samples 4 -o "$dir/own.q" 2>/dev/null || fail "best --int8 alone"
cmp -s "$dir/a.q" "$dir/own.q" || fail "best --int8 without --calibrate is not task:xor's"
grep -q "b.q: .* neurons, .* edges, .* tables, calibrated on" "$dir/err" || fail "best --int8: $(cat "$dir/err")"
"$TREVO" task eval xor "$dir/b.q" | grep -q '^fitness: ' || fail "task eval of best --int8's file"
# a data file of rows too
printf '0,0,1\n0,1,1\n1,0,1\n1,1,1\n' >"$dir/rows.csv"
"$TREVO" best "$dir/x.db" --int8 --calibrate "$dir/rows.csv" -o "$dir/c.q" 2>/dev/null ||
    fail "best --int8 DATA exited $?"
"$TREVO" net quantize "$dir/x.net" --calibrate "$dir/rows.csv" -o "$dir/d.q" 2>/dev/null ||
    fail "quantize DATA exited $?"
cmp -s "$dir/c.q" "$dir/d.q" || fail "best --int8 DATA differs from net quantize DATA"
# ---- --calibrate takes what --data takes ----------------------------------------------
# a labelled CSV (with a header) calibrates as the same rows unlabelled, each
# its own sequence (a blank line between them: each row from a reset state,
# as net test runs them); --samples N the first N rows in either form
printf 'a,b,bias,xor\n0,0,1,0\n0,1,1,1\n1,0,1,1\n1,1,1,0\n' >"$dir/lab.csv"
printf '0,0,1\n\n0,1,1\n\n1,0,1\n\n1,1,1\n' >"$dir/seq.csv"
for n in 4 2; do
    "$TREVO" net quantize "$dir/x.net" --calibrate "$dir/lab.csv" --samples $n -o "$dir/l$n.q" \
        2>"$dir/err" || fail "quantize labelled CSV --samples $n: $(cat "$dir/err")"
    "$TREVO" net quantize "$dir/x.net" --calibrate "$dir/seq.csv" --samples $n -o "$dir/s$n.q" \
        2>/dev/null || fail "quantize rows --samples $n exited $?"
    cmp -s "$dir/l$n.q" "$dir/s$n.q" || fail "labelled CSV and rows differ (--samples $n)"
done
cmp -s "$dir/l4.q" "$dir/l2.q" && fail "--samples 2 calibrated as all 4 rows"
"$TREVO" best "$dir/x.db" --int8 --calibrate "$dir/lab.csv" --samples 4 -o "$dir/bl.q" \
    2>/dev/null || fail "best --int8 labelled CSV exited $?"
cmp -s "$dir/l4.q" "$dir/bl.q" || fail "best --int8 labelled CSV differs from net quantize"
# gzipped, and --header no reads its header as data
gzip -c "$dir/lab.csv" >"$dir/lab.csv.gz"
"$TREVO" net quantize "$dir/x.net" --calibrate "$dir/lab.csv.gz" -o "$dir/lz.q" 2>/dev/null ||
    fail "quantize gzipped labelled CSV exited $?"
cmp -s "$dir/l4.q" "$dir/lz.q" || fail "gzipped labelled CSV differs"
"$TREVO" net quantize "$dir/x.net" --calibrate "$dir/lab.csv" --header no -o "$dir/e.q" \
    2>"$dir/err" && fail "--header no: accepted a header"
grep -q "lab.csv:1: column 1: 'a' is not a number" "$dir/err" || fail "--header no: $(cat "$dir/err")"
# a labelled file of another width: named with both counts
printf '0,0,1,0,0\n1,1,1,0,1\n' >"$dir/narrow.csv"
"$TREVO" net quantize "$dir/x.net" --calibrate "$dir/narrow.csv" -o "$dir/e.q" 2>"$dir/err" &&
    fail "quantize on 4 features for 3 inputs ran"
grep -q "narrow.csv: the data set has 4 features per row, the network 3 inputs" "$dir/err" ||
    fail "narrow calibration: $(cat "$dir/err")"
# IDX images with --labels, and fashion-mnist:test (when installed) as the same files
fm=/usr/share/datasets/fashion-mnist
if [ -r "$fm/t10k-images-idx3-ubyte.gz" ]; then
    "$TREVO" net init --layers 784,10 --density 0.01 -o "$dir/f.net" >/dev/null || fail "init 784"
    "$TREVO" net quantize "$dir/f.net" --calibrate fashion-mnist:test --samples 50 -o "$dir/f1.q" \
        2>/dev/null || fail "quantize fashion-mnist:test exited $?"
    "$TREVO" net quantize "$dir/f.net" --calibrate "$fm/t10k-images-idx3-ubyte.gz" \
        --labels "$fm/t10k-labels-idx1-ubyte.gz" --samples 50 -o "$dir/f2.q" 2>/dev/null ||
        fail "quantize IDX --labels exited $?"
    cmp -s "$dir/f1.q" "$dir/f2.q" || fail "fashion-mnist:test and its IDX files differ"
fi
"$TREVO" net quantize "$dir/x.net" --calibrate task:xor --header yes -o "$dir/e.q" 2>"$dir/err" &&
    fail "--header with task:xor: accepted"
grep -q "trevo: --header: goes with --calibrate DATA, not task:xor" "$dir/err" ||
    fail "--header with task:xor: $(cat "$dir/err")"
[ ! -e "$dir/e.q" ] || fail "a refused quantize wrote a file"

# usage errors: --calibrate without --int8 (--int8 alone takes the run's task)
"$TREVO" best "$dir/x.db" --calibrate task:xor -o "$dir/e.q" 2>"$dir/err"; rc=$?
[ $rc -eq 2 ] && grep -q "calibrate goes with --int8" "$dir/err" ||
    fail "best --calibrate without --int8: exit $rc, $(cat "$dir/err")"
"$TREVO" best "$dir/x.db" --int8 --calibrate task:nosuch -o "$dir/e.q" 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] && grep -q "task:nosuch: task nosuch: the run's config's \\[run\\] task is xor" "$dir/err" || fail "best --int8 task:nosuch: $rc $(cat "$dir/err")"
[ ! -e "$dir/e.q" ] || fail "best --int8 wrote a file on error"
echo "it_int8_cli: ok"
