#!/usr/bin/env bash
# Bad input found by fuzzing and review, through the real binary: each is
# refused with exit 1 and a message that names what was wrong and where.
set -eu
: "${TREVO:?}"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# refused CMD... ; expects exit 1 and stderr containing $want
refused() {
    local st=0
    "$@" >"$dir/out" 2>"$dir/err" || st=$?
    [ "$st" = 1 ] || fail "$* exited $st, not 1: $(cat "$dir/err")"
    grep -qF -- "$want" "$dir/err" || fail "$*: expected '$want', got: $(cat "$dir/err")"
}

# a NUL byte in a config file (inih would stop reading there, silently)
printf '[run]\ntask = xor\ngenerations = 1\n\0[population]\nsize = 1\n' >"$dir/nul.ini"
want="nul.ini:4: a NUL byte" refused "$TREVO" run "$dir/nul.ini" --db "$dir/a.db"
[ ! -e "$dir/a.db" ] || fail "a database was made from a refused config"

# run names that the stored config could not hold
printf '[run]\ntask = xor\ngenerations = 1\n' >"$dir/x.ini"
for name in "$(printf 'a\nb')" ";comment" "#x" " lead" "trail " "" \
    "$(printf '%070d' 0)" "$(printf 'tab\there')"; do
    want="a run name is 1 to 63 printable characters" \
        refused "$TREVO" run "$dir/x.ini" --db "$dir/n.db" --name "$name"
done
"$TREVO" run "$dir/x.ini" --db "$dir/n.db" --name "ok name-1.2" --quiet ||
    fail "a plain run name was refused"

# a text network whose connection names neurons when none are declared
printf 'trevo-net 1\ninputs 0\noutputs 0\nconn 0 1 0.5\n' >"$dir/t.txt"
want="t.txt:4: connection 0 -> 1: neuron 0 is not defined" refused "$TREVO" net validate "$dir/t.txt"

# damage that only loading finds (a stored genome's bytes): resume refuses
# before it writes anything, and does not tell the user to resume
"$TREVO" run "$dir/x.ini" --db "$dir/d.db" --name d --generations 4 --quiet
sqlite3 "$dir/d.db" "update runs set status = 'stopped';
    update genomes set data = x'9301020304'
    where id = (select max(id) from individuals where generation = 3);
    pragma wal_checkpoint(truncate);" >/dev/null
before=$(cat "$dir/d.db"* | sha256sum)
want="damaged genome" refused "$TREVO" resume "$dir/d.db" --set run.generations=8
[ "$(cat "$dir/d.db"* | sha256sum)" = "$before" ] || fail "a refused resume changed the database"
! grep -q "continue with" "$dir/err" || fail "a refused resume said to resume: $(cat "$dir/err")"

# one argument too many, in every command: exit 2, the first extra one named,
# nothing written (net import/export once took the last of three names)
"$TREVO" net init --layers 2,3,1 --density 1 -o "$dir/a.net" >/dev/null
cp "$dir/a.net" "$dir/b.net"
extra() {
    local st=0
    "$@" >"$dir/out" 2>"$dir/err" </dev/null || st=$?
    [ "$st" = 2 ] || fail "$* exited $st, not 2: $(cat "$dir/err")"
    grep -qF -- "unexpected argument 'EXTRA'" "$dir/err" ||
        fail "$*: the extra argument not named: $(cat "$dir/err")"
    [ ! -e "$dir/o" ] || fail "$*: wrote its output"
}
a=$dir/a.net
extra "$TREVO" run "$dir/x.ini" EXTRA --db "$dir/o"
extra "$TREVO" resume "$dir/d.db" EXTRA
extra "$TREVO" status "$dir/d.db" EXTRA
extra "$TREVO" best "$dir/d.db" EXTRA -o "$dir/o"
extra "$TREVO" plot "$dir/d.db" EXTRA -o "$dir/o"
extra "$TREVO" task eval xor "$a" EXTRA
extra "$TREVO" task list EXTRA
extra "$TREVO" task new foo "$dir/o" EXTRA
extra "$TREVO" net import "$a" EXTRA "$dir/b.net" -o "$dir/o"
extra "$TREVO" net export "$a" EXTRA "$dir/b.net" -o "$dir/o"
extra "$TREVO" net export "$a" EXTRA --format c -o "$dir/o"
extra "$TREVO" net validate "$a" EXTRA
extra "$TREVO" net eval "$a" EXTRA
extra "$TREVO" net quantize "$a" EXTRA --calibrate task:xor -o "$dir/o"
extra "$TREVO" net init --layers 2,1 EXTRA -o "$dir/o"
extra "$TREVO" net init --conv 1x4x4,2k3p1 --layers 2 EXTRA -o "$dir/o"
extra "$TREVO" net test "$a" EXTRA --data task:xor
extra "$TREVO" net bench EXTRA
extra "$TREVO" net bench --conv 1,2,3,4,4 EXTRA
extra "$TREVO" net bench --cuba EXTRA
extra "$TREVO" net bench --spike-layers 2,3,4 EXTRA
# net train names both of its two networks
st=0
"$TREVO" net train "$a" "$dir/b.net" --data task:xor -o "$dir/o" 2>"$dir/err" || st=$?
[ "$st" = 2 ] && grep -qF "one network expected, got '$a' and '$dir/b.net'" "$dir/err" ||
    fail "net train took two networks: $st $(cat "$dir/err")"
[ ! -e "$dir/o" ] || fail "net train wrote its output"

# -o writes through a symbolic link (relative or absolute, even dangling) to
# the file it names, and an existing file keeps its mode
mkdir "$dir/real"
"$TREVO" net export "$a" --format msgpack -o "$dir/real/n.mp"
chmod 600 "$dir/real/n.mp"
ln -s real/n.mp "$dir/rel"
ln -s "$dir/rel" "$dir/chain"
ln -s "$dir/real/new.mp" "$dir/dangling"
for link in rel chain dangling; do
    "$TREVO" net export "$a" --format msgpack -o "$dir/$link" || fail "-o $link refused"
    [ -L "$dir/$link" ] || fail "-o replaced the link $link with a file"
done
[ "$(stat -c %a "$dir/real/n.mp")" = 600 ] ||
    fail "-o reset a 0600 file to $(stat -c %a "$dir/real/n.mp")"
[ -f "$dir/real/new.mp" ] || fail "-o through a dangling link made no file"
cmp -s "$dir/real/n.mp" "$dir/real/new.mp" || fail "-o through links wrote other bytes"
[ -z "$(ls "$dir/real" | grep tmp)" ] || fail "-o left a temporary file: $(ls "$dir/real")"
ln -s loop1 "$dir/loop2"; ln -s loop2 "$dir/loop1"
want="too many levels of symbolic links" refused "$TREVO" net export "$a" -o "$dir/loop1"
want="not a regular file" refused "$TREVO" net export "$a" -o "$dir/real"

# net test on a spiking network runs it one row at a time by default, and a
# --batch it cannot run says what to use instead
cat >"$dir/cuba.txt" <<'NET'
trevo-net 2
inputs 2
outputs 2
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 out 1 identity 0.5 cuba tau_m=200 tau_exc=50 tau_inh=100 threshold=-50 reset=-60 rest=-49 refractory=50
neuron 3 out 1 identity 0.5 cuba tau_m=200 tau_exc=50 tau_inh=100 threshold=-50 reset=-60 rest=-49 refractory=50
conn 0 2 30
conn 1 3 -20
NET
printf '1,0,1\n0,1,0\n1,1,1\n0,0,0\n' >"$dir/d.csv"
out=$("$TREVO" net test "$dir/cuba.txt" --data "$dir/d.csv") || fail "net test refused a spiking network"
case $out in "accuracy 0.5000 (2 of 4)"*) ;; *) fail "net test on cuba: $out" ;; esac
want="a spiking network runs one row at a time: --batch 1, not 4" \
    refused "$TREVO" net test "$dir/cuba.txt" --data "$dir/d.csv" --batch 4
echo ok
