#!/usr/bin/env bash
# The main job until the evolution loop lands: a network round trip through
# every network command of the trevo binary.
set -eu
trevo=$(realpath "$1")
dir=$(mktemp -d)
cat >"$dir/xor.txt" <<'NET'
# A hand-made XOR network: 2 inputs, a bias-like hidden layer, 1 output.
trevo-net 1
inputs 2
outputs 1
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 out 1 neat_sigmoid -2.5
neuron 7 hid 0.5 neat_sigmoid -1.5
neuron 9 hid 0.5 neat_sigmoid -4.5
conn 0 7 2
conn 1 7 2
conn 0 9 2
conn 1 9 2
conn 7 2 2.5
conn 9 2 -5
NET
echo "\$ trevo net import xor.txt -o xor.net"; "$trevo" net import "$dir/xor.txt" -o "$dir/xor.net"
echo "\$ trevo net validate xor.net"; "$trevo" net validate "$dir/xor.net"
echo "\$ trevo net export xor.net"; "$trevo" net export "$dir/xor.net"
rm -rf "$dir"
