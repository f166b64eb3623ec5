#!/usr/bin/env bash
# The spiking tasks through the farm: a spiking XOR search (cuba neurons,
# synaptic delays mutated) alone and under `mpirun -n 3` gives the same
# champion, statistics and individuals; its champion is a spiking network
# whose delays survive `trevo best`; the config keys of spiking searches
# refused with their names; the effective config of a search that leaves them
# at their defaults does not mention them (stored configs keep their bytes).
set -eu
: "${TREVO:?}"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*"; exit 1; }
MPIRUN="mpirun --oversubscribe ${MPIRUN_ASAN:-} -n"

cat >sx.ini <<'INI'
[run]
task = spike_xor
seed = 5
generations = 25
stop_on_solve = false
[population]
size = 100
[genome]
init_model = cuba
add_recurrent_rate = 0.1
add_neuron_rate = 0.1
delay_rate = 0.3
delay_max = 6
[store]
db = unused.db
INI

signature() { # DB -> champion + statistics + individuals
    "$TREVO" best "$1"
    sqlite3 "$1" "select generation, best, mean, median, champion, n_evals from generations order by generation"
    sqlite3 "$1" "select count(*), count(distinct id), sum(fitness) from individuals"
    sqlite3 "$1" "select id, hex(data) from genomes order by id"
}

"$TREVO" run sx.ini --db one.db --quiet
signature one.db >one.sig
$MPIRUN 3 "$TREVO" run sx.ini --db three.db --quiet
signature three.db >three.sig
cmp -s one.sig three.sig || { diff one.sig three.sig | head; fail "3 ranks differ from 1 process"; }

# the champion is made of cuba neurons; delays were mutated (version 3 genomes)
"$TREVO" best one.db -o champ.net
grep -q ' cuba tau_m=' champ.net || fail "champion has no cuba neuron: $(cat champ.net)"
n3=$(sqlite3 one.db "select count(*) from genomes where substr(hex(data), 1, 2) = '95'")
[ "$n3" -gt 0 ] || fail "no individual with delays (format version 3)"
"$TREVO" task eval spike_xor champ.net | grep -q '^spikes_01: ' || fail "task eval of the champion"

# the effective config names init_model (set) but not delay keys left at default
sqlite3 one.db "select config from runs" | grep -q '^init_model = cuba$' || fail "init_model not stored"
sed -e '/^init_model/d' -e '/^delay_/d' -e 's/spike_xor/xor/' sx.ini >plain.ini
"$TREVO" run plain.ini --db plain.db --quiet --generations 1
sqlite3 plain.db "select config from runs" | grep -Eq '^(init_model|delay_rate|delay_max) ' &&
    fail "keys at their defaults written into the stored config"

refused() { # expected message, then config lines of [genome] or [task]
    local want=$1; shift
    { printf '[run]\ntask = spike_xor\n'; printf '%s\n' "$@"; } >bad.ini
    if out=$("$TREVO" run bad.ini --db bad.db --quiet 2>&1); then fail "accepted: $*"; fi
    echo "$out" | grep -qF "$want" || fail "wanted '$want', got: $out"
}
refused "init_model" '[genome]' 'init_model = izhikevich'
refused "lif neurons are read and written, not run (use cuba)" '[genome]' 'init_model = lif'
refused "delay_max" '[genome]' 'delay_max = 1025'
refused "delay_rate" '[genome]' 'delay_rate = 2'
refused "window" '[task]' 'window = 0'
refused "spikes" '[task]' 'spikes = -1'
# a rate search on a spiking task stops at its first evaluation, with the key to set
refused "[genome] init_model = cuba" '[store]' 'db = x.db'
echo ok
