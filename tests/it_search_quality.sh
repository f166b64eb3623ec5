#!/usr/bin/env bash
# Search-quality smoke test: XOR as shipped (experiments/xor.ini, alone, in
# process) is solved in at least 9 of 10 seeds, and each solved run's
# network, as `trevo best` writes it, is checked by running it: all four
# patterns on the right side of 0.5. A search that stops finding solutions,
# or reports solutions that are not, fails here.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/lib_it.sh"
. "$here/tests/xor_ok.sh"
it_tmpdir it_search_quality

solved=0
for seed in 1 2 3 4 5 6 7 8 9 10; do
    db=$dir/s$seed.db
    "$TREVO" run "$here/experiments/xor.ini" --db "$db" --seed "$seed" --quiet
    s=$(sqlite3 "$db" 'select solved from generations order by generation desc limit 1')
    g=$(sqlite3 "$db" 'select max(generation) from generations')
    if [ "$s" = 1 ]; then
        "$TREVO" best "$db" -o "$dir/net$seed.txt" 2>/dev/null
        xor_ok "$dir/net$seed.txt" || fail "seed $seed: the run says solved, its network does not solve XOR"
        solved=$((solved + 1))
        echo "seed $seed: solved after generation $g, network checked"
    else
        echo "seed $seed: not solved in $((g + 1)) generations"
    fi
done
[ "$solved" -ge 9 ] || fail "XOR solved in $solved of 10 seeds (at least 9 expected)"
echo "ok: XOR solved in $solved of 10 seeds"
