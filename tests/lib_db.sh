# tests/lib_db.sh -- the search the fault matrix (tests/faults/) and the hosts
# test (tests/hosts/run.sh) run, and reading the database of a run that is
# going on (or was killed); sourced, not run. Read-only sqlite3, so that a
# check never checkpoints the WAL of a run (a resume must see the files
# exactly as a crash left them).

# xor400_config FILE GENERATIONS: the config of that search: XOR with 400
# genomes a generation, no stop when solved (every run has the same length).
xor400_config() {
    cat >"$1" <<INI
[run]
task = xor
seed = 7
generations = $2
stop_on_solve = false
[population]
size = 400
[genome]
add_neuron_rate = 0.05
[store]
db = unused.db
INI
}

# sq DB SQL...: sqlite3 read only, waiting up to 5 s for a lock.
sq() { sqlite3 -readonly -cmd '.timeout 5000' "$@"; }

# last_gen DB: the last closed generation (-1 before the first one).
last_gen() { sq "$1" 'select coalesce(max(generation), -1) from generations' 2>/dev/null || echo -1; }

# wait_gen DB TARGET PID: waits until generation TARGET of DB is closed
# (returns 0) or job PID has ended (returns 1).
wait_gen() {
    local g i
    for i in $(seq 1 60000); do
        g=$(last_gen "$1")
        [ "${g:--1}" -ge "$2" ] && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}
