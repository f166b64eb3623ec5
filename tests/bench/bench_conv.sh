#!/usr/bin/env bash
# bench_conv.sh -- the sparse convolution layer (issue 18) against im2col +
# OpenBLAS sgemm and im2col + our own GEMM on the same layer in the same run
# (`trevo net bench --conv`), one core, as a markdown section on stdout for
# tests/bench/run.sh: 32 -> 64 channels, 3x3, 28x28 and 14x14 maps, batches 1
# and 64, 50/90/95/99 % of the coefficients zero; then the density at which
# dense catches up. OpenBLAS's core type is chosen from the CPU's flags
# (an OPENBLAS_CORETYPE in the environment is dropped), one thread.
# usage: TREVO=build/trevo tests/bench/bench_conv.sh   (CONV_SECONDS=0.5)
set -eu
trevo=$(realpath "${TREVO:-build/trevo}")
cd "$(dirname "$0")/../.."
secs=${CONV_SECONDS:-0.5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() { # H B DENSITY [extra options]: one run into $out
    local h=$1 b=$2 d=$3
    shift 3
    env -u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 "$trevo" net bench --conv "32,64,3,$h,$h" \
        --density "$d" --batch "$b" --seconds "$secs" "$@" >"$out"
}
field() { # the value after "NAME: " in $out (the Nth such line, default 1)
    awk -v k="$1:" -v n="${2:-1}" '$1 == k { if (++i == n) { print $2; exit } }' "$out"
}
median() { # the median in ms of the Nth line starting with LABEL
    awk -v k="$1" -v n="${2:-1}" 'index($0, k) == 1 { if (++i == n) { for (f = 1; f < NF; f++)
        if ($f == "median") { print $(f + 1); exit } } }' "$out"
}
echo "### Sparse convolution against im2col + GEMM"
echo
echo "\`trevo net bench --conv 32,64,3,H,H --density D --batch B --seconds $secs\` (stride 1,"
echo "pad 1), one core; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
run 14 1 0.5 --no-backward
echo "Dense baseline: \`$(sed -n 's/^openblas: //p' "$out")\`."
echo "Times are medians (ms) over rounds alternating the two sides; a ratio is"
echo "the median over rounds of dense time / sparse time (> 1: sparse faster)."
echo
echo "| map | batch | zeros | coefficients | sparse ms | OpenBLAS ms | **vs OpenBLAS** | ours ms | vs our GEMM | backward sparse ms | backward OpenBLAS ms | backward ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for h in 28 14; do
    for b in 1 64; do
        for z in 50 90 95 99; do
            d=$(awk -v z="$z" 'BEGIN { printf "%.2f", 1 - z / 100 }')
            run "$h" "$b" "$d"
            n=$(sed -n 's/.*density [^ ]* (\([0-9]*\) of .*/\1/p' "$out")
            echo "| ${h}x${h} | $b | $z % | $n | $(median "sparse: " 2) | $(median "dense openblas (") |" \
                "**$(field ratio_vs_dense)** | $(median "dense ours") | $(field ratio_vs_own_dense) |" \
                "$(median "sparse backward") | $(median "dense openblas backward") | $(field backward_ratio_vs_dense) |"
        done
    done
done
echo
echo "Where dense catches up (forward only; ratio < 1: dense faster):"
echo
echo "| map | batch | density | vs OpenBLAS | vs our GEMM |"
echo "|---|---|---|---|---|"
for h in 28 14; do
    for b in 1 64; do
        for d in 0.2 0.3 0.5 0.7 1.0; do
            run "$h" "$b" "$d" --no-backward
            echo "| ${h}x${h} | $b | $d | $(field ratio_vs_dense) | $(field ratio_vs_own_dense) |"
        done
    done
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
