#!/usr/bin/env bash
# Issue 14, defect 1: a database whose stored genome is a valid network of the
# wrong shape (5 inputs and 2 outputs in an XOR run, which takes 3 and 1).
# Before the fix, `trevo resume` ran it and died of SIGSEGV (nn_step reads the
# task's inputs by the network's count). Now the resume refuses it with an
# error naming the individual, exit 1, and leaves the file (and its -wal)
# byte-identical, like any other damaged database; `trevo task eval` refuses
# the same network with the same words.
set -u
: "${TREVO:?TREVO must name the trevo binary}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sums() { for f in "$1" "$1-wal"; do if [ -e "$f" ]; then sha256sum <"$f"; else echo -; fi; done; }

"$TREVO" run experiments/xor.ini --db "$dir/x.db" --generations 3 --quiet ||
    fail "run exited $?"
# the champion of the last closed generation: a member of the checkpointed
# population, so the resume loads it
id=$(sqlite3 "$dir/x.db" "SELECT champion FROM generations ORDER BY generation DESC LIMIT 1")
[ -n "$id" ] || fail "no champion in the database"
cat >"$dir/five.txt" <<'NET'
trevo-net 1
inputs 5
outputs 2
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 in 0 identity 0
neuron 3 in 0 identity 0
neuron 4 in 0 identity 0
neuron 10 out 1 sigmoid 0
neuron 11 out 1 sigmoid 0
conn 0 10 1
conn 4 11 -1
NET
"$TREVO" net import "$dir/five.txt" -o "$dir/five.net" || fail "net import exited $?"
"$TREVO" net validate "$dir/five.net" >/dev/null || fail "the 5-input network is not valid"
n=$(sqlite3 "$dir/x.db" "UPDATE genomes SET data = readfile('$dir/five.net') WHERE id = $id;
                         SELECT changes();")
[ "$n" = 1 ] || fail "replacing genome $id changed $n rows"

before=$(sums "$dir/x.db")
"$TREVO" resume "$dir/x.db" --set run.generations=10 --quiet >"$dir/out" 2>"$dir/err"; rc=$?
after=$(sums "$dir/x.db")
[ $rc -eq 1 ] || fail "resume: exit $rc, want 1 (139: the crash of defect 1); stderr: $(cat "$dir/err")"
want="individual $id: the network has 5 inputs and 2 outputs; task xor takes 3 inputs and 1 output"
grep -qF "$want" "$dir/err" || fail "resume: no '$want' in [$(cat "$dir/err")]"
[ "$before" = "$after" ] || fail "resume changed the file: [$before] -> [$after]"
[ "$(sqlite3 "$dir/x.db" "SELECT status FROM runs")" = done ] || fail "the run's status changed"

# the one evaluation path: `task eval` says the same of the same network
"$TREVO" task eval xor "$dir/five.net" >/dev/null 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "task eval: exit $rc, want 1"
grep -qF "five.net: the network has 5 inputs and 2 outputs; task xor takes 3 inputs" "$dir/err" ||
    fail "task eval: $(cat "$dir/err")"
echo "it_resume_wrong_shape: ok"
