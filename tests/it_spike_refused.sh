#!/usr/bin/env bash
# The paths that run rate neurons only, given a spiking (cuba) network that
# `net validate` accepts and `net eval` runs: `net quantize`, `best --int8`
# (after a 2-generation run of experiments/spike_xor.ini) and `net export
# --format c` refuse it by its model with exit code 1 and write nothing; the
# trainer (`net train`, plain and convolutional) says that it is the trainer
# that runs rate neurons only; a command that takes a float network names an
# int8 NET.q for what it is.
set -u
. "$(dirname "$0")/lib_it.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
it_tmpdir it_spike_refused
cd "$dir"

# refused WANT OUT CMD...: CMD exits 1, says WANT, and OUT does not exist.
refused() {
    local want=$1 out=$2
    shift 2
    "$TREVO" "$@" >stdout 2>stderr
    local rc=$?
    [ $rc -eq 1 ] || fail "$* exited $rc (wanted 1): $(cat stderr)"
    grep -qF -- "$want" stderr || fail "$*: wanted '$want', got: $(cat stderr)"
    [ ! -e "$out" ] || fail "$* wrote $out"
}

cat >cuba.net <<'NET'
trevo-net 2
inputs 2
outputs 1
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 out 1 identity 0.5 cuba
conn 0 2 1.5
conn 1 2 -0.7
NET
printf '1,0\n0,1\n1,1\n' >rows.txt
"$TREVO" net validate cuba.net >/dev/null || fail "net validate refused the cuba network"
"$TREVO" net eval cuba.net <rows.txt >/dev/null || fail "net eval refused the cuba network"

int8="the network is spiking (neuron 2 has model cuba); int8 runs rate neurons only"
refused "calibration: $int8" cuba.q net quantize cuba.net --calibrate rows.txt -o cuba.q
export_c="the network is spiking (neuron 2 has model cuba); the C export runs rate neurons only"
refused "cuba.net: export: $export_c" cuba.c net export cuba.net --format c -o cuba.c

# the champion of a short spiking search
"$TREVO" run "$root/experiments/spike_xor.ini" --db sx.db --quiet --generations 2 ||
    fail "spike_xor run exited $?"
"$TREVO" best sx.db -o champ.net || fail "best exited $?"
grep -q ' cuba' champ.net || fail "the champion has no cuba neuron: $(cat champ.net)"
refused "int8 runs rate neurons only" b.q best sx.db --int8 --calibrate task:spike_xor --samples 2 \
    -o b.q
refused "int8 runs rate neurons only" c.q best sx.db --int8 --calibrate rows.txt -o c.q
refused "the C export runs rate neurons only" champ.c net export champ.net --format c -o champ.c

# the trainer names itself, plain and convolutional
printf '0,0,0\n0,1,1\n1,0,1\n1,1,0\n' >xor.csv
cat >cuba2.net <<'NET'
trevo-net 2
inputs 2
outputs 2
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 out 1 identity 0.5 cuba
neuron 3 out 1 identity 0.5 cuba
conn 0 2 1.5
conn 1 3 -0.7
NET
refused "neuron 2: model cuba is not run by the trainer (rate neurons only)" t.net \
    net train cuba2.net --data xor.csv -o t.net
"$TREVO" net init --conv 1x4x4,2k3p1,pool2 --layers 2 --format text -o cv.net >/dev/null ||
    fail "net init --conv exited $?"
sed 's/^\(neuron 1[67] out 1 identity 0\)$/\1 cuba/' cv.net >cvs.net
grep -q ' cuba$' cvs.net || fail "no cuba neuron in cvs.net"
python3 -c 'print("\n".join(",".join(["0.5"] * 16) + ",%d" % (i % 2) for i in range(4)))' >img.csv
refused "nn_cnn_from_genome: neuron 16: model cuba is not run by the trainer (rate neurons only)" \
    ct.net net train cvs.net --data img.csv -o ct.net

# an int8 NET.q where a float network is wanted
"$TREVO" net init --layers 2,3,2 --density 1 --format text -o r.net >/dev/null ||
    fail "net init exited $?"
"$TREVO" net quantize r.net --calibrate rows.txt -o r.q 2>/dev/null || fail "net quantize exited $?"
nq="r.q: an int8 NET.q (trevo net quantize); this command takes a float network (text or msgpack)"
refused "$nq" rt.net net train r.q --data xor.csv -o rt.net
refused "$nq" r2.q net quantize r.q --calibrate rows.txt -o r2.q
refused "$nq" r.txt net export r.q -o r.txt
"$TREVO" net export r.q --format c -o r.c || fail "net export NET.q --format c exited $?"
echo "it_spike_refused: ok"
