#!/usr/bin/env bash
# `trevo best` and `trevo status` on a solved run whose fittest member does
# not solve the task (XOR, seed 105: the run stops solved after generation 4
# by individual 650, fitness 8.64; the fittest, 605 at 8.9999, gets (1,1)
# wrong):
#  - best writes the best solver, and says on stderr that it is not the fittest;
#  - best --by fitness writes the fittest;
#  - status names the solver;
#  - each network written is checked by running it on the four patterns.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/lib_it.sh"
. "$here/tests/xor_ok.sh"
it_tmpdir it_best

"$TREVO" run "$here/experiments/xor.ini" --db "$dir/x.db" --seed 105 --quiet
[ "$(sqlite3 "$dir/x.db" 'select max(generation), max(solved) from generations')" = "4|1" ] ||
    fail "seed 105 no longer stops solved after generation 4: pick another seed"

"$TREVO" best "$dir/x.db" -o "$dir/solver.txt" 2>"$dir/err"
grep -q "best solver, individual 650 " "$dir/err" || fail "best does not say it writes solver 650: $(cat "$dir/err")"
xor_ok "$dir/solver.txt" || fail "best wrote a network that does not solve XOR"

"$TREVO" best "$dir/x.db" --by fitness -o "$dir/fittest.txt" 2>"$dir/err"
[ ! -s "$dir/err" ] || fail "best --by fitness said: $(cat "$dir/err")"
! xor_ok "$dir/fittest.txt" || fail "the fittest (605) solves XOR: the test checks nothing"
"$TREVO" best "$dir/x.db" --by fitness --format msgpack -o "$dir/fittest.bin"
"$TREVO" best "$dir/x.db" --by fitness --format dot | grep -q "champion 605, fitness 8.99985" ||
    fail "best --by fitness --format dot does not title champion 605"
"$TREVO" best "$dir/x.db" --format dot 2>/dev/null | grep -q "best solver 650, fitness 8.63585" ||
    fail "best --format dot does not title best solver 650"

set +e; "$TREVO" best "$dir/x.db" --by age 2>/dev/null; rc=$?; set -e
[ $rc -eq 2 ] || fail "best --by age exited $rc, expected 2"

"$TREVO" status "$dir/x.db" | awk '$1 == "xor" { print $2, $3, $NF }' >"$dir/status"
[ "$(cat "$dir/status")" = "done 4 650" ] || fail "status says '$(cat "$dir/status")', expected 'done 4 650'"

# an unsolved run: best is the fittest, status says '-'
"$TREVO" run "$here/experiments/xor.ini" --db "$dir/u.db" --seed 105 --generations 2 --quiet
"$TREVO" best "$dir/u.db" -o "$dir/u.txt" 2>"$dir/err"
[ ! -s "$dir/err" ] || fail "best on an unsolved run said: $(cat "$dir/err")"
"$TREVO" best "$dir/u.db" --by fitness | cmp -s - "$dir/u.txt" || fail "unsolved run: best differs from --by fitness"
[ "$("$TREVO" status "$dir/u.db" | awk '$1 == "xor" { print $NF }')" = - ] || fail "status names a solver of an unsolved run"
echo ok
