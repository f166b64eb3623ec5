#!/usr/bin/env bash
# Names that say what they are: `trevo version` and `trevo --version`; the
# help lists net export's formats; --help-config prints the shortest exact
# decimal (0.1); epoch lines give milliseconds; the progress line calls
# classify's champion test `valid`; --quiet keeps only the closing summary,
# --silent prints nothing; `trevo status` shows an interrupted run with the
# command that continues it, by its name; `task eval --db DB --name RUN`
# evaluates with the run's stored config, as --config does with its file;
# `best --int8` says what it wrote.
set -u
. "$(dirname "$0")/lib_it.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
it_tmpdir it_names
cd "$dir"

for v in version --version; do
    out=$("$TREVO" $v) || fail "trevo $v exited $?"
    printf '%s\n' "$out" | grep -qx 'trevo [0-9][0-9.]*\( (commit [0-9a-f]*\(-dirty\)\?)\)\?' ||
        fail "trevo $v: [$out]"
done
"$TREVO" --help | grep -q 'net export .*text|msgpack|dot|c' || fail "--help: net export's formats"
help=$("$TREVO" run --help-config)
printf '%s\n' "$help" | grep -qx ';validation = 0.1' || fail "--help-config: validation"
if printf '%s\n' "$help" | grep -q '[0-9]\.[0-9]*0000000[1-9]'; then
    fail "--help-config prints a binary float's long decimal"
fi

# a classify run: its progress lines, --quiet, --silent
for i in $(seq 0 59); do
    a=$((i % 7)) b=$((i * 3 % 5))
    echo "$a,$b,$([ $a -gt $b ] && echo 0 || echo 1)"
done >train.csv
printf '[run]\ntask = classify\ngenerations = 3\n[population]\nsize = 12\n[task]\ntrain = %s/train.csv\nsamples = 8\n' \
    "$dir" >cls.ini
"$TREVO" run cls.ini --db a.db 2>err || fail "run exited $?"
grep -q '^gen *2 .*  valid [0-9.]*' err || fail "progress line: no valid figure: $(cat err)"
if grep -q '  test [0-9]' err; then fail "progress line still says test: $(cat err)"; fi
"$TREVO" run cls.ini --db b.db --quiet 2>err || fail "run --quiet exited $?"
[ "$(wc -l <err)" -eq 1 ] && grep -q '^trevo: done after generation 2' err ||
    fail "--quiet: wanted the closing summary only: $(cat err)"
"$TREVO" run cls.ini --db c.db --silent 2>err || fail "run --silent exited $?"
[ ! -s err ] || fail "--silent printed: $(cat err)"

# task eval with the run's stored config, as with its file
"$TREVO" best a.db -o champ.net || fail "best exited $?"
want=$("$TREVO" task eval champ.net --config cls.ini --generation 2) || fail "eval --config"
got=$("$TREVO" task eval champ.net --db a.db --generation 2) || fail "eval --db"
[ "$got" = "$want" ] || fail "task eval --db: [$got], --config: [$want]"
got=$("$TREVO" task eval classify champ.net --db a.db --name classify --generation 2) ||
    fail "eval --db --name"
[ "$got" = "$want" ] || fail "task eval --db --name: [$got]"

# epoch lines: seconds to the millisecond
"$TREVO" net train champ.net --data train.csv --epochs 1 -o t.net >out || fail "net train"
grep -q ' seconds [0-9]*\.[0-9][0-9][0-9]$' out || fail "epoch line: $(cat out)"

# best --int8 says what it wrote
cut -d, -f1,2 train.csv >rows.csv
"$TREVO" best a.db --int8 --calibrate rows.csv -o champ.q 2>err || fail "best --int8: $(cat err)"
grep -q '^champ.q: [0-9]* neurons' err || fail "best --int8 said: $(cat err)"

# an interrupted run: status names it, and the command that continues it
printf '[run]\nname = long\ntask = xor\ngenerations = 100000\nstop_on_solve = false\n[population]\nsize = 50\n' >long.ini
"$TREVO" run long.ini --db long.db --silent &
pid=$!
for _ in $(seq 100); do
    sleep 0.1
    "$TREVO" status long.db 2>/dev/null | grep -q '^long .* active' && break
done
sleep 0.3
kill -9 $pid
wait $pid 2>/dev/null
out=$("$TREVO" status long.db) || fail "status exited $?"
printf '%s\n' "$out" | grep -q '^long  *interrupted ' || fail "status: [$out]"
printf '%s\n' "$out" | grep -qx 'continue long with: trevo resume long.db --name long' ||
    fail "status: no resume line: [$out]"
echo "ok: version, help, help-config, progress line, quiet and silent, task eval --db, status"
