#!/usr/bin/env bash
# The classify task on data sets generated here: a CSV file and an IDX pair
# (images gzipped). The same seed gives the same run alone and under
# `mpirun -n 3` (every generation, the champion, every genome, the final test
# stored with the run); a run killed with kill -9 and resumed ends exactly as
# the uninterrupted one (tests/faults/kill9.sh on this config); every kind of
# bad data is refused with its file and line or byte offset, before a
# database exists; [task] test = 0.2 sets a test share of train aside.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
it_mpi
it_tmpdir it_classify
cd "$dir"

# ---- data -------------------------------------------------------------------
# CSV: 3 classes of 4 features (class k shifts feature k), a header, comments.
. "$here/lib_classify.sh"
classify_csv train.csv 240 11 1
classify_csv test.csv 60 12
# IDX: 4x4 images, class k (of 4) bright in quadrant k; labels 0..3.
idx() { # IMAGES LABELS N SEED [MAGIC_IMAGES [N_LABELS]]
    perl -e 'my ($img, $lab, $n, $seed, $mi, $nl) = @ARGV; my $s = $seed;
        open(my $fi, ">", $img) or die; open(my $fl, ">", $lab) or die;
        binmode $fi; binmode $fl;
        print $fi pack("NNNN", $mi, $n, 4, 4); print $fl pack("NN", 0x801, $nl);
        for my $i (0 .. $n - 1) { my $k = $i % 4;
            for my $p (0 .. 15) { $s = ($s * 1103515245 + 12345) % 2147483648;
                my $q = (int($p / 8)) * 2 + (int(($p % 4) / 2));
                print $fi pack("C", ($s >> 16) % 128 + ($q == $k ? 120 : 0)) }
            print $fl pack("C", $k) if $i < $nl }' "$1" "$2" "$3" "$4" "${5:-2051}" "${6:-$3}"
}
idx img lab 200 5 && gzip -f img
idx timg tlab 40 6

cat >csv.ini <<INI
[run]
task = classify
seed = 5
generations = 12
[population]
size = 60
[task]
train = $dir/train.csv
test = $dir/test.csv
samples = 40
scale = zscore
fitness = xent
[store]
db = unused.db
INI
cat >idx.ini <<INI
[run]
task = classify
seed = 6
generations = 12
[population]
size = 60
[task]
train = $dir/img.gz
train_labels = $dir/lab
test = $dir/timg
test_labels = $dir/tlab
validation = 0.2
samples = 50
scale = minmax
[store]
db = unused.db
INI

signature() { classify_signature "$@"; }

for cfg in csv idx; do
    "$TREVO" run $cfg.ini --db $cfg-1.db --quiet 2>$cfg-1.log || fail "$cfg alone: $(tail -3 $cfg-1.log)"
    mpirun --oversubscribe ${MPIRUN_ASAN:-} -n 3 "$TREVO" run $cfg.ini --db $cfg-3.db \
        >$cfg-3.log 2>&1 || fail "$cfg under mpirun: $(tail -3 $cfg-3.log)"
    signature $cfg-1.db >$cfg-1.sig
    signature $cfg-3.db >$cfg-3.sig
    diff $cfg-1.sig $cfg-3.sig >/dev/null || fail "$cfg: 1 and 3 ranks differ: $(diff $cfg-1.sig $cfg-3.sig | head -5)"
    grep -q '^final_test|0\.[0-9]' $cfg-1.sig || fail "$cfg: no final test stored: $(tail -2 $cfg-1.sig)"
    # the champion test scores the validation split every generation
    [ "$(sqlite3 $cfg-1.db 'select count(*) from generations where champion_test > 0')" = 12 ] ||
        fail "$cfg: champion tests missing"
done
# the closing line gives the final test
"$TREVO" run csv.ini --db csv-again.db 2>&1 | grep -q 'final test 0\.[0-9]' || fail "closing line: no final test"

# ---- kill -9 and resume --------------------------------------------------------
# The fault matrix's kill -9 case on this task: ends identical to the
# uninterrupted run under mpirun.
classify_kill9 csv.ini 80 150 32

# ---- [task] test = 0.2: a test share of the training file ----------------------
# seeded and set aside after the validation rows: the final test is stored,
# `task eval` of the champion gives it again, and alone and under mpirun agree
sed -e "s|^test = .*|test = 0.2|" -e "s/^generations = 12/generations = 4/" csv.ini >share.ini
"$TREVO" run share.ini --db share-1.db --quiet 2>share.log || fail "test share: $(tail -3 share.log)"
mpirun --oversubscribe ${MPIRUN_ASAN:-} -n 2 "$TREVO" run share.ini --db share-2.db \
    >share-2.log 2>&1 || fail "test share under mpirun: $(tail -3 share-2.log)"
[ "$(signature share-1.db)" = "$(signature share-2.db)" ] || fail "test share: 1 and 2 ranks differ"
stored=$(sqlite3 share-1.db "select value from run_notes where key = 'final_test'")
[ -n "$stored" ] || fail "test share: no final test stored"
"$TREVO" best share-1.db -o share.net 2>/dev/null || fail "test share: best exited $?"
again=$("$TREVO" task eval --config share.ini share.net | sed -n 's/^final_accuracy: //p')
awk -v a="$stored" -v b="$again" 'BEGIN { exit !(a - b < 1e-9 && b - a < 1e-9) }' ||
    fail "test share: stored final test $stored, task eval $again"
classify_set share.ini "test=1.5"
classify_refused "test share 1.5" "[task] test: 1.5: a share of train is in (0, 1)"
classify_set share.ini "test=0.5" "validation=0.5"
classify_refused "test share past validation" "[task] test: 0.5 and validation 0.5 of 240 rows leave none to train on"

# ---- bad data: refused before any database exists ------------------------------
refused() { # LABEL BASE WANT KEY=VALUE...
    local label=$1 want=$3
    classify_set "$2" "${@:4}"
    classify_refused "$label" "$want"
}
printf 'a,b,class\n1,2,0\n3,4\n' >ragged.csv
refused ragged csv.ini "[task] train: $dir/ragged.csv:3: 2 columns, expected 3 (as on line 2)" \
    "train=$dir/ragged.csv" "test="
printf '1,2,0\n3,4..5,1\n' >nan.csv
refused number csv.ini "[task] train: $dir/nan.csv:2: column 2: '4..5' is not a number" \
    "train=$dir/nan.csv" "test="
printf '0.1,0.2,0.3,0.4,1\n# c\n0.1,0.2,0.3,0.4,3\n' >badtest.csv
refused label csv.ini "[task] test: $dir/badtest.csv:3: label 3 out of range (a class number 0..2: the classes of [task] train)" \
    "test=$dir/badtest.csv"
idx wm_img wm_lab 10 1 2049
refused magic idx.ini "[task] test: $dir/wm_img: byte offset 0: wrong magic 0x00000801, expected 0x00000803" \
    "test=$dir/wm_img" "test_labels=$dir/wm_lab"
head -c 100 timg >tr_img
refused truncated idx.ini "[task] test: $dir/tr_img: truncated at byte offset 100: the header claims 656 bytes" \
    "test=$dir/tr_img"
head -c 150 img.gz >tr.gz
refused truncated-gzip idx.ini "[task] train: $dir/tr.gz: corrupt gzip data at byte 150 (unexpected end of file)" \
    "train=$dir/tr.gz"
idx cm_img cm_lab 40 6 2051 39
refused count idx.ini "[task] test: $dir/cm_img has 40 images, $dir/cm_lab 39 labels: counts disagree" \
    "test=$dir/cm_img" "test_labels=$dir/cm_lab"
refused labels-of-csv csv.ini "[task] train: $dir/train.csv: a labels file ($dir/lab) goes with IDX images" \
    "train_labels=$dir/lab"
refused no-labels idx.ini "[task] test: $dir/timg: an IDX images file needs its labels file" \
    "test_labels="
echo "it_classify: ok"
