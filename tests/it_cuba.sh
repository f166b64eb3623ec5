#!/usr/bin/env bash
# trevo net bench --cuba through the real binary, without running Brian2: a
# short run of the network it draws itself, a file in cuba_brian2.py's format
# (a 3-neuron network whose spikes are known) compared spike for spike, and
# a damaged file refused with its name and line.
set -eu
: "${TREVO:?}"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$TREVO" net bench --cuba --no-brian2 --seconds 0.02)
echo "$out" | grep -q '^brian2: not asked' || fail "no note on the skipped comparison: $out"
echo "$out" | grep -Eq '^spikes: [1-9][0-9]*$' || fail "no spikes line: $out"
echo "$out" | grep -q '^ratio_vs_brian2' && fail "a ratio without Brian2: $out"

# Neuron 0 starts above threshold and spikes in step 0; its excitatory
# connection (weight 100: 4.4 after a step) makes neuron 1 spike in step 1.
# Neuron 2 rests. The spikes written here are the true ones.
write() { # $1: the spike lines
    cat <<NET
cuba-brian2 1
target numpy
n 3 n_exc 3
dt 0.0001 steps 5
tau_m 0.0020000000000000001 tau_exc 0.00050000000000000001 tau_inh 0.001
threshold 1 reset 0 rest 0 refractory_steps 100
w_exc 100 w_inh -1
v0 3
2
0
0
conns 1
0 1
spikes 2
$1
run_seconds 0.001
run_cpu_seconds 0.001
wall_seconds 1
NET
}
write "$(printf '0 0\n1 1')" >"$dir/ok.txt"
out=$("$TREVO" net bench --cuba --brian2-file "$dir/ok.txt")
echo "$out" | grep -q '^spikes: 2$' || fail "expected 2 spikes: $out"
echo "$out" | grep -q '^brian2_spikes: 2$' || fail "expected brian2_spikes: 2: $out"
echo "$out" | grep -q '^identical_spike_trains: the whole run' || fail "trains differ: $out"
echo "$out" | grep -Eq '^ratio_vs_brian2: [0-9.]+$' || fail "no ratio: $out"
write "$(printf '0 0\n2 1')" >"$dir/late.txt"
out=$("$TREVO" net bench --cuba --brian2-file "$dir/late.txt")
echo "$out" | grep -q '^identical_spike_trains: the first 0.1 ms (first difference in step 1)' ||
    fail "difference not found: $out"
sed 's/^conns 1$/conns x/' "$dir/ok.txt" >"$dir/bad.txt"
if err=$("$TREVO" net bench --cuba --brian2-file "$dir/bad.txt" 2>&1); then fail "bad file accepted"; fi
echo "$err" | grep -q "bad.txt:12: expected 'conns'" || fail "message: $err"
# counts the file's lines do not back: told where the lines end, not "out of
# memory" from allocating what the counts claim (2^31 connections: 48 GB;
# 2^40 spikes: 8 TB)
for big in 's/^conns 1$/conns 2147483648/' 's/^spikes 2$/spikes 1099511627776/'; do
    sed "$big" "$dir/ok.txt" >"$dir/big.txt"
    if err=$("$TREVO" net bench --cuba --brian2-file "$dir/big.txt" 2>&1); then
        fail "a count past the file accepted"
    fi
    echo "$err" | grep -Eq "big.txt:(14|17): expected '(I J|STEP I)" || fail "message: $err"
done
if err=$("$TREVO" net bench --cuba --bogus 2>&1); then fail "unknown option accepted"; fi
echo "$err" | grep -q "unknown option '--bogus'" || fail "message: $err"
echo "it_cuba: ok"
