#!/usr/bin/env bash
# A CNN search that trains its children (classify, train_steps > 0, `init =
# net` from a `net init --conv` start) with channel mutations:
# - add_channel_rate > 0: new channels join the existing levels (the form the
#   CNN trainer takes), so every child trains; the run ends, the champion has
#   more channels than the start and no child failed;
# - del_channel_rate > 0 on a start of one hidden channel: a child left
#   without one is a genome the trainer refuses; it is scored failed (fitness
#   NULL), counted in generations.failed and on the progress line, and the run
#   goes on to its last generation, alone and under `mpirun -n 3` alike.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
. "$here/lib_classify.sh"
it_mpi
it_tmpdir it_cnnsearch
cd "$dir"

bars_csv 120 7 >train.csv
bars_csv 30 99 >test.csv
"$TREVO" net init --conv 1x6x6,4k3p1,pool2 --layers 3 --density 0.5 --seed 3 \
    -o four.net >/dev/null || fail "net init --conv (four channels)"
"$TREVO" net init --conv 1x6x6,1k3p1,pool2 --layers 3 --density 0.5 --seed 3 \
    -o one.net >/dev/null || fail "net init --conv (one channel)"
cat >add.ini <<INI
[run]
task = classify
seed = 4
generations = 4
stop_on_solve = false
[population]
size = 6
crossover_rate = 0.0
[genome]
init = net
init_net = $dir/four.net
add_local_rate = 0.0
add_skip_rate = 0.0
add_channel_rate = 0.9
add_filter_rate = 0.3
[task]
train = $dir/train.csv
test = $dir/test.csv
validation = 0.2
samples = 100
train_steps = 10
train_batch = 16
lr = 0.01
lamarckian = 1
[store]
db = unused.db
INI

# ---- channels added: every child trains, the run ends
"$TREVO" run add.ini --db add.db --quiet 2>add.log || fail "add_channel_rate: $(tail -3 add.log)"
[ "$(sqlite3 add.db "select status from runs")" = done ] || fail "add_channel_rate: not done"
[ "$(sqlite3 add.db "select count(*) || ' ' || sum(failed) from generations")" = "4 0" ] ||
    fail "add_channel_rate: generations and failed: $(sqlite3 add.db 'select generation, failed from generations')"
"$TREVO" best add.db --format text -o best.net >/dev/null || fail "best: $?"
"$TREVO" net validate best.net >/dev/null || fail "the champion does not validate"
n=$(grep -c '^channel ' best.net)
[ "$n" -gt 5 ] || fail "the champion has $n channels, the start 5: none added"

# ---- children the trainer refuses: scored failed, counted, the run goes on
sed -e "s|four.net|one.net|" -e "s/^add_channel_rate = .*/del_channel_rate = 0.5/" add.ini >del.ini
"$TREVO" run del.ini --db del.db 2>del.log || fail "del_channel_rate: $(tail -3 del.log)"
[ "$(sqlite3 del.db "select status || ' ' || max(generation) from runs, generations")" = "done 3" ] ||
    fail "del_channel_rate: the run did not reach generation 3"
failed=$(sqlite3 del.db "select sum(failed) from generations")
nulls=$(sqlite3 del.db "select count(*) from individuals where fitness is null")
[ "$failed" -gt 0 ] || fail "no child failed (the test needs some)"
[ "$failed" = "$nulls" ] || fail "$failed counted failed, $nulls individuals without a fitness"
grep -q "  failed [1-9]" del.log || fail "no 'failed N' on the progress lines: $(cat del.log)"
sqlite3 del.db "select mean from generations" | grep -qi inf && fail "a mean of -inf: $(sqlite3 del.db 'select generation, mean from generations')"
classify_signature del.db >one.sig
mpirun --oversubscribe ${MPIRUN_ASAN:-} -n 3 "$TREVO" run del.ini --db mpi3.db \
    >mpi3.log 2>&1 || fail "mpirun -n 3: $(tail -3 mpi3.log)"
classify_signature mpi3.db >mpi3.sig
diff one.sig mpi3.sig >/dev/null || fail "alone and mpirun -n 3 differ: $(diff one.sig mpi3.sig | head -5)"
[ "$(sqlite3 mpi3.db "select sum(failed) from generations")" = "$failed" ] || fail "mpirun -n 3 counts another number failed"

echo "it_cnnsearch: ok"
