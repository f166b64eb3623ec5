#!/usr/bin/env bash
# A network carries its input scaling (genome.h, "input scaling"): a
# classify search with scale = zscore on features of very different
# magnitudes stores the statistics in its genomes, so that its champion,
# tested on the RAW test file, gives exactly the run's stored final test;
# `net validate` and `net export` show the scaling; `net train --scale
# zscore` on unscaled rows learns (better than the majority class) where
# training on the raw rows does not (plain SGD, the defaults), and its OUT
# takes raw rows.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
it_tmpdir it_scale
cd "$dir"

# 3 classes; feature 1 around 1000 (class shifts it by 200), feature 2
# around 0.001 (class shifts it by 0.001), feature 3 noise around 50,
# feature 4 around -5000 (class 2 shifts it by 300).
gen() { # FILE N SEED
    awk -v n="$2" -v seed="$3" 'BEGIN { srand(seed)
        for (i = 0; i < n; i++) { k = i % 3
            printf "%.6g,%.6g,%.6g,%.6g,%d\n", 1000 + 200 * k + 120 * (rand() - 0.5),
                0.001 * k + 0.0008 * (rand() - 0.5), 50 + 20 * (rand() - 0.5),
                -5000 + 300 * (k == 2) + 200 * (rand() - 0.5), k } }' >"$1"
}
gen train.csv 450 11
gen test.csv 150 12

cat >s.ini <<INI
[run]
task = classify
seed = 5
generations = 10
[population]
size = 40
[genome]
hidden_act = relu
[task]
train = $dir/train.csv
test = $dir/test.csv
samples = 100
scale = zscore
fitness = xent
[store]
db = unused.db
INI
"$TREVO" run s.ini --db s.db --quiet 2>run.log || fail "run: $(tail -3 run.log)"
final=$(sqlite3 s.db "select value from run_notes where key = 'final_test'")
[ -n "$final" ] || fail "no final test stored"
"$TREVO" best s.db -o champ.net 2>/dev/null || fail "best"

# the champion on the raw test file: the stored final test, to the bit
"$TREVO" net test champ.net --data test.csv >test.out || fail "net test: $(cat test.out)"
got=$(awk '{ gsub(/\(/, "", $3); printf "%.17g", $3 / $5 }' test.out)
[ "$got" = "$final" ] || fail "net test on raw rows gives $got ($(cat test.out)), the run stored $final"
"$TREVO" net test champ.net --data test.csv --batch 1 | cmp -s - test.out ||
    fail "net test batch 1 differs from batch 128"

# shown by net validate and net export
"$TREVO" net validate champ.net >v.out || fail "validate: $(cat v.out)"
grep -q '^input scaling: raw inputs' v.out || fail "validate shows no scaling: $(cat v.out)"
[ "$(grep -c '^  [0-3]: ' v.out)" = 4 ] || fail "validate: not 4 pairs: $(cat v.out)"
"$TREVO" net export champ.net --format text >champ.txt || fail "export text"
grep -q '^trevo-net 5$' champ.txt || fail "export: not version 5: $(head -3 champ.txt)"
[ "$(grep -c '^scale ' champ.txt)" = 4 ] || fail "export: not 4 scale lines"
# the text form reads back to the same network (same test result)
"$TREVO" net test champ.txt --data test.csv | cmp -s - test.out || fail "text form tests otherwise"

# net eval on a raw row: the same outputs as the champion's net test implies
head -1 test.csv | cut -d, -f1-4 | "$TREVO" net eval champ.net >eval.out || fail "net eval"
[ "$(tr ',' '\n' <eval.out | wc -l)" = 3 ] || fail "net eval: not 3 outputs: $(cat eval.out)"

# ---- int8 and the C exports of the champion, on raw rows
cut -d, -f1-4 train.csv >cal.csv
cut -d, -f1-4 test.csv >rows.csv
"$TREVO" net quantize champ.net --calibrate cal.csv -o champ.q 2>q.err || fail "quantize: $(cat q.err)"
head -1 champ.q | grep -q '^trevo-qnet 2$' || fail "NET.q of a scaled network is not version 2"
[ "$(grep -c '^scale ' champ.q)" = 4 ] || fail "NET.q: not 4 scale lines"
for net in champ.q champ.net; do # the int8 export, then the float one
    it_c_as_eval $net 4 3 rows.csv
done
# the int8 network on raw rows is about as good as the float one
int8=$("$TREVO" net test champ.q --data test.csv | awk '{ print $2 }')
awk -v q="$int8" -v f="$final" 'BEGIN { exit !(q > f - 0.1) }' ||
    fail "int8 accuracy $int8 on raw rows, float $final"
"$TREVO" net test champ.q --data test.csv --batch 1 | cmp -s - <("$TREVO" net test champ.q --data test.csv) ||
    fail "int8: batch 1 and batch 128 differ"

# ---- net train --scale
"$TREVO" net init --layers 4,3 --density 1 --seed 3 -o a.net >/dev/null || fail "net init"
"$TREVO" net train a.net --data train.csv --epochs 20 --scale zscore \
    -o z.net >z.log || fail "train --scale zscore: $(tail -2 z.log)"
"$TREVO" net test z.net --data test.csv >z.out || fail "test z.net"
acc=$(awk '{ print $2 }' z.out)
awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }' || fail "--scale zscore: accuracy $acc, not above 0.6"
"$TREVO" net validate z.net | grep -q '^input scaling' || fail "z.net carries no scaling"
"$TREVO" net train a.net --data train.csv --epochs 20 -o r.net >r.log || fail "train raw: $(tail -2 r.log)"
raw=$(awk '{ print $2 }' <("$TREVO" net test r.net --data test.csv))
awk -v a="$acc" -v r="$raw" 'BEGIN { exit !(a > r + 0.2) }' ||
    fail "--scale zscore ($acc) not clearly better than raw rows ($raw)"
"$TREVO" net validate r.net | grep -q '^input scaling' && fail "r.net carries a scaling"
"$TREVO" net train a.net --data train.csv --scale bogus -o b.net 2>b.err &&
    fail "--scale bogus accepted"
grep -q "expected none, zscore or minmax, got 'bogus'" b.err || fail "--scale bogus: $(cat b.err)"
[ ! -e b.net ] || fail "--scale bogus wrote b.net"
echo "it_scale: ok (final test $final, --scale zscore $acc, raw $raw)"
