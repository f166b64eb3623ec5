#!/usr/bin/env bash
# ab.sh REF [NAME...] -- "the benchmarks are within noise": the bench rows of
# git ref REF (A) and of this tree's build (B), measured as A/B pairs in one
# run, so that the load of a shared machine falls on both sides alike.
#
# REF is built in a temporary git worktree (its build/trevo and the bench
# binaries; removed afterwards). Each NAME is a benchmark of `make bench`:
# a binary tests/bench/bench_NAME.c or a script tests/bench/bench_NAME.sh
# (default: nn int8 conv genome). Each runs ROUNDS times per side (default
# 3) in the order A B B A A B ..., with TREVO set to its side's trevo. Every
# markdown table row of the output is matched by its table and first cell,
# and every cell that holds a time (a number followed by s, ms, us or ns) is
# compared: the median of A's rounds, of B's, and B / A. The load average is
# printed before and after.
#
# Environment: ROUNDS (3); BUILD_B (this tree's build directory: build;
# build it first with `make` and `make build/bench/bench_NAME`);
# KEEP=1 keeps the scratch directory. CONV_SECONDS is passed on (bench_conv).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: tests/bench/ab.sh REF [NAME...]" >&2; exit 2; }
top=$(git rev-parse --show-toplevel)
cd "$top"
ref=$(git rev-parse --verify "$1^{commit}")
shift
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(nn int8 conv genome)
rounds=${ROUNDS:-3}
build_b=$(realpath "${BUILD_B:-build}")

scratch=$(mktemp -d /tmp/trevo-ab.XXXXXX)
wt=$scratch/ref-tree
cleanup() {
    git -C "$top" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
    git -C "$top" worktree prune
    if [ "${KEEP:-0}" = 1 ]; then echo "ab: kept $scratch"; else rm -rf "$scratch"; fi
}
trap cleanup EXIT

# bench NAME SIDE_BUILD SIDE_TREE: the command that runs NAME of one side
bench() {
    if [ -f "$3/tests/bench/bench_$1.sh" ]; then
        echo "$3/tests/bench/bench_$1.sh"
    else
        echo "$2/bench/bench_$1"
    fi
}

git worktree add -q --detach "$wt" "$ref"
echo "ab: building $(git rev-parse --short "$ref") in a temporary worktree"
targets=(build/trevo)
for n in "${names[@]}"; do
    [ -f "$wt/tests/bench/bench_$n.c" ] && targets+=("build/bench/bench_$n")
    [ -f "tests/bench/bench_$n.c" ] && [ ! -x "$build_b/bench/bench_$n" ] &&
        { echo "ab: build $build_b/bench/bench_$n first" >&2; exit 2; }
done
if ! nice make -C "$wt" -j2 "${targets[@]}" >"$scratch/build.log" 2>&1; then
    tail -20 "$scratch/build.log" >&2
    echo "ab: the build of $ref failed" >&2
    exit 2
fi

echo "ab: A = $(git rev-parse --short "$ref"), B = this tree ($build_b); $rounds rounds a side"
echo "ab: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${names[@]}"; do
    a_cmd=$(bench "$n" "$wt/build" "$wt")
    b_cmd=$(bench "$n" "$build_b" "$top")
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
        for side in $order; do
            if [ $side = A ]; then
                (cd "$wt" && TREVO="$wt/build/trevo" "$a_cmd") >"$scratch/$n.A.$r" 2>/dev/null
            else
                (cd "$top" && TREVO="$build_b/trevo" "$b_cmd") >"$scratch/$n.B.$r" 2>/dev/null
            fi
        done
    done
    echo
    echo "### $n"
    python3 - "$scratch" "$n" "$rounds" <<'PY'
import re, statistics, sys
scratch, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
unit = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
time_re = re.compile(r"^\s*\**([0-9]+(?:\.[0-9]+)?)\s*(s|ms|us|µs|ns)\b")
label = {}
def rows(path):
    """{(table, first cell, its occurrence, column): seconds} of every timed
    cell; label[key] the row's first cells, for the listing."""
    out, table, head, seen = {}, 0, [], {}
    for line in open(path, errors="replace"):
        if not line.startswith("|"):
            if line.strip() == "":
                table, head = table + 1, []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not cells or set(cells[0]) <= set("-: "):
            continue
        if not head:  # a table's first row names its columns
            head = cells
            continue
        nth = seen[(table, cells[0])] = seen.get((table, cells[0]), 0) + 1
        for k, c in enumerate(cells[1:], 1):
            col = head[k] if k < len(head) else str(k)
            key = (table, cells[0], nth, col)
            m = time_re.match(c)
            u = re.search(r"\b(s|ms|us|µs|ns)\b", col)
            n = re.match(r"^\s*\**([0-9]+(?:\.[0-9]+)?)\**\s*$", c)
            if m:
                out[key] = float(m.group(1)) * unit[m.group(2)]
            elif u and n and "/" not in col and "ratio" not in col:
                # a bare number under a column named "... ms" (or s, us)
                out[key] = float(n.group(1)) * unit[u.group(1)]
            else:
                continue
            label.setdefault(key, " ".join(cells[:3]) if nth > 1 else cells[0])
    return out
sides = {s: [rows(f"{scratch}/{name}.{s}.{r}") for r in range(1, rounds + 1)] for s in "AB"}
keys = [k for k in sides["A"][0] if all(k in x for x in sides["A"] + sides["B"])]
print("| row | column | A (median) | B (median) | B / A |")
print("|---|---|---|---|---|")
ratios = []
for key in keys:
    a = statistics.median(x[key] for x in sides["A"])
    b = statistics.median(x[key] for x in sides["B"])
    ratios.append(b / a if a > 0 else float("nan"))
    print(f"| {label[key][:70]} | {key[3][:30]} | {a * 1e3:.6g} ms | {b * 1e3:.6g} ms | {ratios[-1]:.3f} |")
if ratios:
    print(f"\n{len(ratios)} timed cells; B / A: median {statistics.median(ratios):.3f}, "
          f"min {min(ratios):.3f}, max {max(ratios):.3f}")
else:
    print("\n(no timed cell found in both sides' output)")
PY
done
echo
echo "ab: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
