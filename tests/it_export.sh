#!/usr/bin/env bash
# trevo net quantize / net export --format c: the exported C file compiles
# (strict C99, and freestanding without the standard library), and, linked
# into a small driver (lib_it.sh's it_c_as_eval), gives outputs bit-identical to `trevo net eval NET.q`
# on random inputs over several time steps and resets, for networks with
# local, skip and recurrent connections and every activation; task eval of a
# NET.q; the float export; the error paths.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
CC=${CC:-cc}
it_tmpdir it_export

# Random rows of N inputs in [-3, 3] as float32 printed with 9 digits (so
# that strtof and strtod agree), an empty line (a reset) every 7 rows.
rows() { # N COUNT SEED
    python3 - "$@" <<'PY'
import random, struct, sys
n, count, seed = map(int, sys.argv[1:])
r = random.Random(seed)
f32 = lambda x: struct.unpack('f', struct.pack('f', x))[0]
for i in range(count):
    if i and i % 7 == 0:
        print()
    print(','.join('%.9g' % f32(r.uniform(-3, 3) if r.random() > 0.1 else 0.0) for _ in range(n)))
PY
}


# net 1: 3 inputs, hidden layers at 0.3 and 0.6, 2 outputs; local, skip
# (input -> output, 0.3 -> 1) and recurrent (output -> 0.3, self loop)
# connections, every activation.
cat >"$dir/mix.txt" <<'NET'
trevo-net 1
inputs 3
outputs 2
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 in 0 identity 0
neuron 3 out 1 sigmoid 0.1
neuron 4 out 1 identity -0.2
neuron 10 hid 0.3 tanh 0.5
neuron 11 hid 0.3 relu -0.1
neuron 12 hid 0.3 gauss 0
neuron 13 hid 0.3 sin 0.2
neuron 20 hid 0.6 neat_sigmoid 0
neuron 21 hid 0.6 abs 0.3
neuron 22 hid 0.6 step -0.4
conn 0 10 1.5
conn 0 11 -0.7
conn 0 4 0.9
conn 1 10 -0.8
conn 1 12 0.6
conn 1 13 1.1
conn 2 11 2
conn 2 13 -0.3
conn 3 10 0.4
conn 4 11 -0.5
conn 10 10 0.25
conn 10 20 1
conn 10 3 0.7
conn 11 21 -1.2
conn 12 20 0.8
conn 12 22 1
conn 13 21 0.5
conn 20 3 -1.5
conn 21 3 0.9
conn 21 4 1.3
conn 22 4 -0.6
conn 20 20 -0.3
NET
# net 2: one input, a recurrent accumulator with identity activations.
cat >"$dir/acc.txt" <<'NET'
trevo-net 1
inputs 1
outputs 1
neuron 10 in 0 identity 0
neuron 30 hid 0.5 tanh 0
neuron 20 out 1 identity 0
conn 10 30 1
conn 30 30 0.9
conn 30 20 2
conn 20 30 0.1
NET

for net in mix acc; do
    n_in=$(sed -n 's/^inputs //p' "$dir/$net.txt")
    rows "$n_in" 200 1 >"$dir/cal.csv"
    rows "$n_in" 60 2 >"$dir/test.csv"
    "$TREVO" net quantize "$dir/$net.txt" --calibrate "$dir/cal.csv" -o "$dir/$net.q" \
        2>"$dir/q.err" || fail "$net: quantize exited $?: $(cat "$dir/q.err")"
    "$TREVO" net export "$dir/$net.q" --format c -o "$dir/$net.c" || fail "$net: export exited $?"
    $CC -std=c99 -pedantic -Wall -Wextra -Werror -O2 -c "$dir/$net.c" -o "$dir/$net.o" ||
        fail "$net: the export does not compile as strict C99"
    $CC -std=c99 -ffreestanding -nostdlib -c "$dir/$net.c" -o "$dir/free.o" ||
        fail "$net: the export does not compile freestanding"
    # the device figures net validate prints are the object file's: flash its
    # constant arrays (each in a section of its own), RAM its writable data
    $CC -std=c99 -O0 -fdata-sections -c "$dir/$net.c" -o "$dir/sec.o" || fail "$net: -fdata-sections"
    want=$(size -A "$dir/sec.o" | awk '/^\.rodata\.trevo_net_/ { r += $2 }
        /^\.(bss|data)/ { w += $2 } END { printf "flash %d bytes, RAM %d bytes", r, w }')
    "$TREVO" net validate "$dir/$net.q" >"$dir/v.out" || fail "$net: validate exited $?"
    grep -q "^device: $want, " "$dir/v.out" ||
        fail "$net: validate says '$(grep ^device "$dir/v.out")', the object file '$want'"
    grep -q "flash [0-9]* bytes of constant arrays" "$dir/$net.c" ||
        fail "$net: the file's head does not state its figures"
    ! grep -Eq '#include *<(math|stdio|stdlib|string)\.h>|malloc\(|printf\(' "$dir/$net.c" ||
        fail "$net: the export uses libm, stdio or malloc"
    it_c_as_eval "$dir/$net.q" "$n_in" "$(sed -n 's/^outputs //p' "$dir/$net.txt")" "$dir/test.csv"
    cp "$dir/$net.q.want" "$dir/want.out"
    [ "$(wc -l <"$dir/want.out")" -eq 60 ] || fail "$net: eval printed $(wc -l <"$dir/want.out") rows"
    # the int8 network follows the float one (not bit for bit; values past the
    # calibrated range saturate, hence the mean)
    "$TREVO" net eval "$dir/$net.txt" <"$dir/test.csv" >"$dir/float.out" || fail "$net: float eval"
    python3 - "$dir/float.out" "$dir/want.out" <<'PY' || fail "$net: int8 far from float"
import sys
a = [float(x) for l in open(sys.argv[1]) for x in l.split(',')]
b = [float(x) for l in open(sys.argv[2]) for x in l.split(',')]
span = max(a) - min(a) or 1.0
mean = sum(abs(x - y) for x, y in zip(a, b)) / len(a)
sys.exit(0 if mean < 0.03 * span else 1)
PY
done

# --prefix names everything
"$TREVO" net export "$dir/acc.q" --format c --prefix pole_ctl -o "$dir/p.c" || fail "--prefix"
grep -q '^#define POLE_CTL_N_INPUTS 1$' "$dir/p.c" || fail "--prefix: no POLE_CTL_N_INPUTS"
grep -q '^int pole_ctl_predict_int8(const int8_t \*in, int8_t \*out);$' "$dir/p.c" ||
    fail "--prefix: no pole_ctl_predict_int8"
! grep -q 'trevo_net' "$dir/p.c" || fail "--prefix: trevo_net left in the file"

# task eval takes a NET.q: a hand-made xor solution stays a solution in int8
cat >"$dir/xor.txt" <<'NET'
trevo-net 1
inputs 3
outputs 1
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 in 0 identity 0
neuron 3 out 1 identity 0
neuron 10 hid 0.5 relu -1
conn 1 3 1
conn 2 3 1
conn 1 10 1
conn 2 10 1
conn 10 3 -2
NET
"$TREVO" net quantize "$dir/xor.txt" --calibrate task:xor --samples 1 -o "$dir/xor.q" 2>/dev/null ||
    fail "quantize task:xor exited $?"
out=$("$TREVO" task eval xor "$dir/xor.q") || fail "task eval xor NET.q exited $?"
printf '%s\n' "$out" | grep -qx 'solved: yes' || fail "xor in int8: [$out]"

# a float network with activations that need no libm exports too
cat >"$dir/relu.txt" <<'NET'
trevo-net 1
inputs 2
outputs 1
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 out 1 relu 0.5
conn 0 2 1
conn 1 2 -2
conn 2 2 0.5
NET
printf '1,0.25\n2,0\n\n1,0.25\n' >"$dir/f.csv"
it_c_as_eval "$dir/relu.txt" 2 1 "$dir/f.csv"

# ---- errors ----------------------------------------------------------------
err=$("$TREVO" net export "$dir/mix.txt" --format c -o "$dir/x.c" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$err" | grep -q "has activation tanh, which needs libm" ||
    fail "float export of sigmoid: rc $rc [$err]"
err=$("$TREVO" net export "$dir/acc.q" --format c --prefix 1x -o "$dir/x.c" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$err" | grep -q "prefix '1x' is not a C identifier" ||
    fail "bad prefix: rc $rc [$err]"
sed 's/^trevo-qnet 1$/trevo-qnet 7/' "$dir/acc.q" >"$dir/v7.q"
err=$("$TREVO" net eval "$dir/v7.q" </dev/null 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$err" | grep -q "v7.q:1: version 7" || fail "version 7: rc $rc [$err]"
err=$("$TREVO" net quantize "$dir/acc.txt" --calibrate task:nope -o "$dir/x.q" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$err" | grep -q "task:nope: unknown task" || fail "task:nope: [$err]"
err=$("$TREVO" net quantize "$dir/acc.txt" --calibrate task:xor -o "$dir/x.q" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$err" | grep -q "the network has 1 inputs and 1 outputs; the task takes 3" ||
    fail "task of the wrong shape: [$err]"
# a file of unlabelled rows (its first line the network's 1 input) with a
# row of 2 (a labelled file of 2 columns is a data set: it_int8_cli.sh)
printf '0.5\n1,2\n' >"$dir/bad.csv"
err=$("$TREVO" net quantize "$dir/acc.txt" --calibrate "$dir/bad.csv" -o "$dir/x.q" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$err" | grep -q "bad.csv:2: expected 1 numbers, got 2" ||
    fail "bad calibration row: [$err]"
err=$("$TREVO" task eval pole1 "$dir/acc.q" 2>&1); rc=$?
[ $rc -eq 1 ] && printf '%s' "$err" | grep -q "task pole1 takes 5 inputs" ||
    fail "task eval of the wrong shape: [$err]"
"$TREVO" net quantize "$dir/acc.txt" -o "$dir/x.q" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "quantize without --calibrate: exit $rc, want 2"
exit 0
