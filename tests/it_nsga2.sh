#!/usr/bin/env bash
# Multi-objective selection end to end (selection = nsga2 on valid_acc and
# flash, a flash budget, aging) on a small classify CSV made here, with
# training: the same seed gives the same database alone, under `mpirun -n 2`
# and `mpirun -n 3` (every generation, individual with its objectives, genome
# and checkpoint); every child scored within the budget, the objectives
# stored, each generation's front in v_front_gen, the population twice the
# size once the first children joined the survivors; a run killed with
# kill -9 and resumed ends exactly as the uninterrupted one
# (tests/faults/kill9.sh, whose signature includes the objectives).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
. "$here/lib_classify.sh"
it_mpi
it_tmpdir it_nsga2
cd "$dir"

classify_csv train.csv 240 31
classify_front_ini front.ini "$dir/train.csv" 5 4 "max_age = 1
max_flash = 790
[store]
db = unused.db"

sq() { sqlite3 "$@"; }
signature() { # DB: everything deterministic a run leaves, the objectives included
    sq "$1" "select generation, best, mean, champion, champion_test, failed from generations
             order by generation"
    sq "$1" "select id, generation, fitness, parent1, parent2, op, n_conns, valid_acc, flash,
             ram, macs from individuals order by id" | sha256sum
    sq "$1" "select id, hex(data) from genomes order by id" | sha256sum
    sq "$1" "select generation, hex(state), hex(population) from checkpoints order by generation" |
        sha256sum
}

"$TREVO" run front.ini --db one.db --quiet 2>one.log || fail "alone: $(tail -3 one.log)"
signature one.db >one.sig
for np in 2 3; do
    mpirun --oversubscribe ${MPIRUN_ASAN:-} -n $np "$TREVO" run front.ini --db mpi$np.db \
        >mpi$np.log 2>&1 || fail "mpirun -n $np: $(tail -3 mpi$np.log)"
    signature mpi$np.db >mpi$np.sig
    diff one.sig mpi$np.sig >/dev/null ||
        fail "alone and mpirun -n $np differ: $(diff one.sig mpi$np.sig | head -5)"
done

# the budget: re-breeding kept every scored child within it, and it did
# refuse some (a scored child exists that is not the first breeding's: the
# figures of some children sit just under the budget)
[ "$(sq one.db 'select count(*) from individuals where fitness is not null and flash > 790')" = 0 ] ||
    fail "a scored child over max_flash: $(sq one.db 'select id, flash from individuals where flash > 790 limit 3')"
[ "$(sq one.db 'select count(*) from individuals where fitness is not null and valid_acc is not null
                and flash is not null and ram is not null and macs is not null')" -ge 40 ] ||
    fail "objectives not stored: $(sq one.db 'select id, valid_acc, flash from individuals limit 3')"
# Lamarckian classify: the accuracy a child scored is its fitness
[ "$(sq one.db 'select count(*) from individuals where valid_acc != fitness')" = 0 ] ||
    fail "valid_acc is not the accuracy scored"
# a front per generation; survivors (12) plus children (12) in the last
# population (the only checkpoint kept)
[ "$(sq one.db 'select count(distinct generation) from v_front_gen')" = 4 ] ||
    fail "v_front_gen: $(sq one.db 'select generation, count(*) from v_front_gen group by 1')"
[ "$(sq one.db 'select generation, n_population from checkpoints')" = "3|24" ] ||
    fail "population: $(sq one.db 'select generation, n_population from checkpoints')"
# aging (max_age = 1): a child of generation G has no parent born before G - 2
[ "$(sq one.db "select count(*) from individuals c join individuals p on p.run_id = c.run_id
                and p.id in (c.parent1, c.parent2) where p.generation < c.generation - 2")" = 0 ] ||
    fail "aging: a parent older than max_age"
[ "$(sq one.db "select count(*) from individuals c join individuals p on p.run_id = c.run_id
                and p.id in (c.parent1, c.parent2) where p.generation = c.generation - 2")" -gt 0 ] ||
    fail "aging: no parent of the oldest age allowed (the check above proves nothing)"

# ---- kill -9 and resume --------------------------------------------------------
# (longer training: generations of tens of milliseconds, so kills land in them)
sed 's/^train_steps = .*/train_steps = 600/' front.ini >slow.ini
classify_kill9 slow.ini 8 16 4
echo "it_nsga2: ok"
