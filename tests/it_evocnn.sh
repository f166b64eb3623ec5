#!/usr/bin/env bash
# A convolutional network evolved and trained through the farm: `[genome]
# init = net` starts the population from a `trevo net init --conv` network
# (each starting genome that network mutated once), classify trains every
# child as a CNN (fit_cnn_run) on small bar images (bars_csv), Lamarckian.
# The same seed gives the same run alone and under `mpirun -n 3`; the
# stored genomes keep their channels and filters, trained (the champion
# scores its fitness on the validation split) and learning (the final test
# beats chance); a run killed with kill -9 and resumed ends as the
# uninterrupted one (tests/faults/kill9.sh); init_net errors name the key
# and the file.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
. "$here/lib_classify.sh"
it_mpi
it_tmpdir it_evocnn
cd "$dir"

bars_csv 300 7 >train.csv
bars_csv 90 99 >test.csv
"$TREVO" net init --conv 1x6x6,4k3p1,pool2 --layers 3 --density 0.5 --seed 3 \
    -o start.net >/dev/null || fail "net init --conv"
cat >cnn.ini <<INI
[run]
task = classify
seed = 4
generations = 5
stop_on_solve = false
[population]
size = 8
crossover_rate = 0.0
[genome]
init = net
init_net = $dir/start.net
weight_perturb_rate = 0.0
weight_replace_rate = 0.0
bias_perturb_rate = 0.0
bias_replace_rate = 0.0
add_local_rate = 0.0
add_skip_rate = 0.0
add_neuron_rate = 0.1
del_neuron_rate = 0.0
del_conn_rate = 0.2
add_coef_rate = 0.3
del_coef_rate = 0.2
del_filter_rate = 0.05
add_filter_rate = 0.2
[task]
train = $dir/train.csv
test = $dir/test.csv
validation = 0.2
samples = 1000
train_steps = 30
train_batch = 16
optimizer = adam
lr = 0.01
lamarckian = 1
[store]
db = unused.db
INI

"$TREVO" run cnn.ini --db one.db --quiet 2>one.log || fail "alone: $(tail -3 one.log)"
classify_signature one.db >one.sig
mpirun --oversubscribe ${MPIRUN_ASAN:-} -n 3 "$TREVO" run cnn.ini --db mpi3.db \
    >mpi3.log 2>&1 || fail "mpirun -n 3: $(tail -3 mpi3.log)"
classify_signature mpi3.db >mpi3.sig
diff one.sig mpi3.sig >/dev/null || fail "alone and mpirun -n 3 differ: $(diff one.sig mpi3.sig | head -5)"

# every stored genome is a convolutional network; the champion is trained
"$TREVO" best one.db --format text -o best.net >/dev/null || fail "best: $?"
grep -q '^filter ' best.net || fail "the champion has no filter line"
"$TREVO" net validate best.net >/dev/null || fail "the champion does not validate"
[ "$(sqlite3 one.db 'select count(*) from generations where best = champion_test')" = 5 ] ||
    fail "a stored best does not score its fitness: $(sqlite3 one.db 'select generation, best, champion_test from generations')"
acc=$(sqlite3 one.db "select value from run_notes where key = 'final_test'")
awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }' || fail "final test $acc: no better than chance (1/3)"

# ---- kill -9 and resume: the run ends as the uninterrupted one
classify_kill9 cnn.ini 60 40 8

# ---- init_net refused with the key and the file named, before any database
refused() { # WANT SED
    sed "$2" cnn.ini >bad.ini
    classify_refused "[$2]" "$1"
}
refused "init = net needs init_net" "/^init_net = /d"
refused "init_net: is read only with init = net" "s/^init = net/init = minimal/"
refused "init_net: $dir/none.net: cannot open" "s|^init_net = .*|init_net = $dir/none.net|"
"$TREVO" net init --layers 5,3 --density 1 -o five.net >/dev/null
refused "init_net: " "s|^init_net = .*|init_net = $dir/five.net|"
refused "init_net: /dev/zero: larger than 268435456 bytes" "s|^init_net = .*|init_net = /dev/zero|"
printf 'trevo-net 9\n' >junk.net
refused "junk.net" "s|^init_net = .*|init_net = $dir/junk.net|"
echo "it_evocnn: ok"
