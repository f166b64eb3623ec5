#!/usr/bin/env bash
# Training inside evaluation (classify, [task] train_steps > 0) on a small
# CSV made here: the same seed gives the same run alone, under `mpirun -n 2`
# (one worker) and `mpirun -n 3` (every generation, the champion, every
# genome, the final test); Lamarckian children are stored trained (the
# champion test of a generation's best, which scores the stored genome on
# the validation split, is its fitness), Baldwinian ones are not; a run
# killed with kill -9 and resumed ends exactly as the uninterrupted one
# (tests/faults/kill9.sh on this config); bad training keys are refused with
# the key named, before a database exists.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
. "$here/lib_classify.sh"
it_mpi
it_tmpdir it_evotrain
cd "$dir"

classify_csv train.csv 300 21
classify_csv test.csv 60 22
cat >train.ini <<INI
[run]
task = classify
seed = 9
generations = 8
[population]
size = 24
[genome]
init = layered
init_hidden = 6
init_density = 0.6
add_neuron_rate = 0.2
hidden_act = relu
[task]
train = $dir/train.csv
test = $dir/test.csv
validation = 0.2
samples = 1000
scale = zscore
train_steps = 12
train_batch = 16
optimizer = adam
lr = 0.02
sparsity = zero:0.01
lamarckian = 1
[store]
db = unused.db
INI
sed 's/^lamarckian = 1/lamarckian = 0/' train.ini >baldwin.ini

"$TREVO" run train.ini --db one.db --quiet 2>one.log || fail "alone: $(tail -3 one.log)"
classify_signature one.db >one.sig
for np in 2 3; do
    mpirun --oversubscribe ${MPIRUN_ASAN:-} -n $np "$TREVO" run train.ini --db mpi$np.db \
        >mpi$np.log 2>&1 || fail "mpirun -n $np: $(tail -3 mpi$np.log)"
    classify_signature mpi$np.db >mpi$np.sig
    diff one.sig mpi$np.sig >/dev/null ||
        fail "alone and mpirun -n $np differ: $(diff one.sig mpi$np.sig | head -5)"
done
grep -q '^final_test|0\.[0-9]' one.sig || fail "no final test stored: $(tail -2 one.sig)"

# Lamarckian: the stored best is the trained network, whose validation
# accuracy (the champion test) is its fitness, in every generation.
gens() { sqlite3 "$1" "select count(*) from generations where $2"; }
[ "$(gens one.db 'best = champion_test')" = 8 ] ||
    fail "lamarckian: a stored best does not score its fitness: $(sqlite3 one.db 'select generation, best, champion_test from generations')"
# Baldwinian: the same children trained the same way, stored untrained.
"$TREVO" run baldwin.ini --db baldwin.db --quiet 2>baldwin.log || fail "baldwinian: $(tail -3 baldwin.log)"
[ "$(gens baldwin.db 'best > champion_test')" -ge 1 ] ||
    fail "baldwinian: every stored best scores its fitness untrained"
[ "$(sqlite3 baldwin.db 'select fitness from individuals where id = 0')" = \
  "$(sqlite3 one.db 'select fitness from individuals where id = 0')" ] ||
    fail "baldwinian and lamarckian children of generation 0 differ in fitness"

# ---- kill -9 and resume --------------------------------------------------------
classify_kill9 train.ini 30 50 16

# ---- bad training keys: refused before any database exists ----------------------
refused() { # WANT KEY=VALUE
    classify_set train.ini "$2"
    classify_refused "$2" "$1"
}
refused "train_batch" "train_batch=0"
refused "optimizer" "optimizer=rmsprop"
refused "[task] sparsity: set:x" "sparsity=set:x"
refused "[task] train_steps: a trained child is scored on the validation split" "validation=0"
refused "conn_cost" "conn_cost=-1"
echo "it_evotrain: ok"
