#!/usr/bin/env bash
# A user's first day, end to end, on CSV files written here the way
# scikit-learn writes its bundled ones (a first line such as
# `150,4,setosa,versicolor`: numbers and words, so a header):
#   1. a classify search with scale = zscore on features of very different
#      magnitudes;
#   2. its champion tested on the raw test rows gives the run's stored final
#      test;
#   3. quantized to int8 with --calibrate on the same labelled file;
#   4. exported as C, whose outputs on raw rows equal `net eval`'s;
#   5. the database stays small by default: genome bytes for champions and
#      elites only, a fraction of what `[store] genomes = all` keeps.
set -u
. "$(dirname "$0")/lib_it.sh"
it_tmpdir it_firstday
cd "$dir"

# 3 classes; feature 1 around 1000, feature 2 around 0.001, feature 3 noise,
# feature 4 around -5000; a header line of numbers and names first
gen() { # FILE N SEED
    awk -v n="$2" -v seed="$3" 'BEGIN { srand(seed); printf "%d,4,low,mid,high\n", n
        for (i = 0; i < n; i++) { k = i % 3
            printf "%.6g,%.6g,%.6g,%.6g,%d\n", 1000 + 200 * k + 120 * (rand() - 0.5),
                0.001 * k + 0.0008 * (rand() - 0.5), 50 + 20 * (rand() - 0.5),
                -5000 + 300 * (k == 2) + 200 * (rand() - 0.5), k } }' >"$1"
}
gen train.csv 450 21
gen test.csv 150 22

config() { # GENOMES: the [store] line, or nothing for the default
    cat <<INI
[run]
task = classify
seed = 3
generations = 12
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
$1
INI
}
config "" >day.ini
config $'[store]\ngenomes = all' >all.ini

# 1. the search
"$TREVO" run day.ini --db day.db --quiet 2>run.log || fail "run: $(cat run.log)"
final=$(sqlite3 day.db "select value from run_notes where key = 'final_test'")
[ -n "$final" ] || fail "no final test stored: $(cat run.log)"
"$TREVO" best day.db -o champ.net 2>/dev/null || fail "best"

# 2. the champion on the raw test file: the stored final test
"$TREVO" net test champ.net --data test.csv >test.out || fail "net test: $(cat test.out)"
got=$(awk '{ gsub(/\(/, "", $3); printf "%.17g", $3 / $5 }' test.out)
[ "$got" = "$final" ] || fail "net test on raw rows: $got ($(cat test.out)); the run stored $final"

# 3. int8, calibrated on the labelled training file
"$TREVO" net quantize champ.net --calibrate train.csv -o champ.q 2>q.err || fail "quantize: $(cat q.err)"
int8=$("$TREVO" net test champ.q --data test.csv | awk '{ print $2 }')
awk -v q="$int8" -v f="$final" 'BEGIN { exit !(q > f - 0.1) }' ||
    fail "int8 accuracy $int8 on raw rows, float $final"

# 4. C, on raw rows, against net eval
tail -n +2 test.csv | cut -d, -f1-4 >rows.csv
it_c_as_eval champ.q 4 3 rows.csv

# 5. the database by default against every genome kept
"$TREVO" run all.ini --db all.db --quiet 2>all.log || fail "run all: $(cat all.log)"
day=$(stat -c %s day.db) all=$(stat -c %s all.db)
kept=$(sqlite3 day.db 'select count(*) from genomes') every=$(sqlite3 all.db 'select count(*) from genomes')
[ "$kept" -lt $((every / 4)) ] || fail "the default kept $kept genomes of $every"
[ "$day" -lt "$all" ] || fail "the default database ($day bytes) is not smaller than all's ($all)"
echo "ok: first day: search, raw-row test $final, int8 $int8, C = net eval, database $day of $all bytes"
