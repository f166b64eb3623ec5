#!/usr/bin/env bash
# A classify search with training (tiny CSV, 3 generations) that uses the
# mechanisms of issue 30 that keep evolution honest: hyper-parameter genes
# ([genome] hyper_rate), function-preserving growth ([genome] preserve), a
# hold-out the champion test scores ([task] holdout) and fresh rows each
# generation ([task] subset = fresh). The genomes it stores carry the genes
# (format version 6; `net validate` prints them); the run is the same alone
# and under `mpirun -n 3`; without the keys no genome carries genes;
# hyper_min above hyper_max is refused with its line, before a database
# exists.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
. "$here/lib_classify.sh"
it_mpi
it_tmpdir it_genes
cd "$dir"

classify_csv train.csv 150 31
cat >genes.ini <<INI
[run]
task = classify
seed = 3
generations = 3
[population]
size = 12
[genome]
init = layered
init_hidden = 4
init_density = 0.6
add_neuron_rate = 0.3
hidden_act = relu
hyper_rate = 0.5
hyper_sigma = 0.3
preserve = true
[task]
train = $dir/train.csv
validation = 0.2
holdout = 0.1
subset = fresh
samples = 10
scale = zscore
train_steps = 6
train_batch = 16
optimizer = adam
lr = 0.02
sparsity = set:0.2
[store]
db = unused.db
INI

"$TREVO" run genes.ini --db one.db --quiet 2>one.log || fail "alone: $(tail -3 one.log)"
# genome_encode's byte 14 is the format version: 6 for a genome with genes
v6() { sqlite3 "$1" "select count(*) from genomes where substr(hex(data), 29, 2) = '06'"; }
[ "$(v6 one.db)" -gt 0 ] || fail "no stored genome carries hyper-parameter genes"
sqlite3 one.db "select writefile('child.net', data) from genomes
                where substr(hex(data), 29, 2) = '06' order by id desc limit 1" >/dev/null
"$TREVO" net validate child.net >validate.out || fail "net validate: $(cat validate.out)"
grep -q '^hyper-parameter genes (scales of a search.s training): lr_scale ' validate.out ||
    fail "net validate does not show the genes: $(cat validate.out)"
"$TREVO" net export child.net --format text | grep -q '^hyper lr_scale=' ||
    fail "the text form has no hyper line"
# the champion test scores the hold-out: a number in every generation
[ "$(sqlite3 one.db 'select count(*) from generations where champion_test between 0 and 1')" = 3 ] ||
    fail "champion tests: $(sqlite3 one.db 'select generation, champion_test from generations')"

mpirun --oversubscribe ${MPIRUN_ASAN:-} -n 3 "$TREVO" run genes.ini --db mpi3.db >mpi3.log 2>&1 ||
    fail "mpirun -n 3: $(tail -3 mpi3.log)"
classify_signature one.db >one.sig
classify_signature mpi3.db >mpi3.sig
diff one.sig mpi3.sig >/dev/null || fail "alone and mpirun -n 3 differ: $(diff one.sig mpi3.sig | head -5)"

# without the keys: no genes in any genome
sed -e '/^hyper_/d' -e '/^preserve/d' -e '/^holdout/d' -e '/^subset/d' genes.ini >plain.ini
"$TREVO" run plain.ini --db plain.db --quiet 2>plain.log || fail "plain: $(tail -3 plain.log)"
[ "$(v6 plain.db)" = 0 ] || fail "a run without hyper_rate stored genomes with genes"

# hyper_min above hyper_max: refused with its line, no database
sed 's/^hyper_sigma = 0.3/hyper_sigma = 0.3\nhyper_min = 3\nhyper_max = 2/' genes.ini >bad.ini
if "$TREVO" run bad.ini --db bad.db --quiet 2>bad.log; then fail "hyper_min > hyper_max accepted"; fi
grep -q 'bad.ini:1[0-9]: hyper_min: 3 is above hyper_max 2' bad.log || fail "message: $(cat bad.log)"
[ ! -e bad.db ] || fail "a refused config made a database"
echo "it_genes: passed"
