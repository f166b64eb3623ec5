#!/usr/bin/env bash
# trevo plot and the dot drawings through the real binary: a small search is
# plotted into a real PNG (also while a run is still going, and with a run
# name and a database path full of quotes and shell syntax, which must never
# reach a shell); every error path says what is wrong and writes no file;
# temporary files are removed; `trevo best --format dot` parses with
# Graphviz and holds one edge per connection, styled by kind; a hand-written
# network shows its skip and recurrent connections in their own styles.
# What the plot draws (its data and script, caught by a gnuplot wrapper):
# counts that keep their meaning when a neuron appears -- connections,
# feed-forward and recurrent ones; skip ones only when no neuron was added
# or deleted -- and a mark at the generation the run was solved.
set -eu
: "${TREVO:?}"
TREVO=$(realpath "$TREVO") # the PATH tests below must still find it
dir=$(mktemp -d)
bg_pid=
cleanup() {
    [ -n "$bg_pid" ] && kill -9 "$bg_pid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v gnuplot >/dev/null || fail "gnuplot not installed (make deps: apt-get install gnuplot-nox)"
command -v dot >/dev/null || fail "dot not installed (make deps: apt-get install graphviz)"
# trevo plot's temporary files go here; it must be empty after every call.
export TMPDIR="$dir/tmp"
mkdir "$TMPDIR"
tmp_clean() { [ -z "$(ls -A "$TMPDIR")" ] || fail "temporary files left: $(ls -A "$TMPDIR")"; }

config() { # NAME GENERATIONS DB [EXTRA-RUN-LINE]
    printf '[run]\ntask = xor\nname = %s\ngenerations = %s\n%s\n[store]\ndb = %s\n' \
        "$1" "$2" "${4:-}" "$3"
}

# A valid PNG: the 8-byte signature, an IHDR of 1000 x 800, a real size.
check_png() {
    [ -f "$1" ] || fail "$1 not written"
    [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
        fail "$1: no PNG signature"
    [ "$(head -c 24 "$1" | tail -c 8 | od -An -tx1 | tr -d ' \n')" = 000003e800000320 ] ||
        fail "$1: not 1000 x 800"
    [ "$(stat -c %s "$1")" -gt 10000 ] || fail "$1: only $(stat -c %s "$1") bytes"
}

# ---- a small search, plotted --------------------------------------------
config xor 5 "$dir/a.db" >"$dir/a.ini"
"$TREVO" run "$dir/a.ini" --quiet
"$TREVO" plot "$dir/a.db" -o "$dir/a.png"
check_png "$dir/a.png"
tmp_clean
"$TREVO" plot --help | grep -q "gnuplot-nox" || fail "plot --help does not name gnuplot-nox"

# ---- what is drawn: the data and the script, caught on their way ---------
real_gnuplot=$(command -v gnuplot)
mkdir "$dir/capbin" "$dir/cap"
printf '#!/bin/sh\ncp "$1" "%s/plot.gp" && cp "$(dirname "$1")/data.txt" "%s/data.txt" &&\n    exec "%s" "$@"\n' \
    "$dir/cap" "$dir/cap" "$real_gnuplot" >"$dir/capbin/gnuplot"
chmod +x "$dir/capbin/gnuplot"
caught_plot() { # DB: plots DB through the wrapper, which keeps what it drew in $dir/cap
    rm -f "$dir/cap/"*
    PATH="$dir/capbin:$PATH" "$TREVO" plot "$1" -o "$dir/cap.png"
    check_png "$dir/cap.png"
    tmp_clean
}
# the champion of each generation: generation, feed-forward, recurrent, skip
champions() { sqlite3 -separator ' ' "$1" "SELECT generation, n_conns - n_recurrent, n_recurrent,
                                          n_skip FROM v_champions ORDER BY generation"; }
# A run whose networks grow (neurons come and go) and is solved.
printf '[run]\ntask = xor\nname = grow\nseed = 1\ngenerations = 60\nstop_on_solve = false\n[store]\ndb = %s\n' \
    "$dir/grow.db" >"$dir/grow.ini"
"$TREVO" run "$dir/grow.ini" --quiet
[ "$(sqlite3 "$dir/grow.db" "SELECT max(n_neurons) > min(n_neurons) FROM individuals")" = 1 ] ||
    fail "grow: no neuron was added (the test would check nothing)"
solved_at=$(sqlite3 "$dir/grow.db" "SELECT min(generation) FROM generations WHERE solved")
[ -n "$solved_at" ] || fail "grow: never solved (the test would check nothing)"
caught_plot "$dir/grow.db"
awk '!/^#/ && $5 != $6 + $7 { exit 1 }' "$dir/cap/data.txt" ||
    fail "grow: connections are not feed-forward + recurrent"
[ "$(awk '!/^#/ { print $1, $6, $7 }' "$dir/cap/data.txt")" = \
    "$(champions "$dir/grow.db" | cut -d' ' -f1-3)" ] ||
    fail "grow: the feed-forward and recurrent counts are not the champions'"
grep -q "title 'feed-forward'" "$dir/cap/plot.gp" || fail "grow: feed-forward not drawn"
grep -q "title 'recurrent'" "$dir/cap/plot.gp" || fail "grow: recurrent not drawn"
! grep -qi "skip" "$dir/cap/plot.gp" || fail "grow: skip drawn though neurons were added"
grep -q "set arrow 1 from $solved_at, graph 0 to $solved_at, graph 1" "$dir/cap/plot.gp" ||
    fail "grow: no mark at generation $solved_at, where it was solved"
grep -q "solved (generation $solved_at)" "$dir/cap/plot.gp" || fail "grow: the mark has no label"
grep -q "60 generations, solved at generation $solved_at'" "$dir/cap/plot.gp" ||
    fail "grow: the title does not say when it was solved"
# A run on fixed layers (no neuron added or deleted): skip means over 2+
# layers throughout, and is drawn.
printf '[run]\ntask = xor\nname = fixed\nseed = 1\ngenerations = 8\nstop_on_solve = false\n[genome]\ninit = layered\ninit_hidden = 3\nadd_neuron_rate = 0\ndel_neuron_rate = 0\n[store]\ndb = %s\n' \
    "$dir/fixed.db" >"$dir/fixed.ini"
"$TREVO" run "$dir/fixed.ini" --quiet
[ "$(sqlite3 "$dir/fixed.db" "SELECT max(n_neurons) = min(n_neurons) FROM individuals")" = 1 ] ||
    fail "fixed: the neurons changed"
caught_plot "$dir/fixed.db"
grep -q "title 'skip (2+ layers)'" "$dir/cap/plot.gp" || fail "fixed: skip not drawn"
[ "$(awk '!/^#/ { print $1, $6, $7, $8 }' "$dir/cap/data.txt")" = "$(champions "$dir/fixed.db")" ] ||
    fail "fixed: the counts are not the champions'"
# a run never solved: no mark
if [ -z "$(sqlite3 "$dir/a.db" "SELECT min(generation) FROM generations WHERE solved")" ]; then
    caught_plot "$dir/a.db"
    ! grep -q "solved" "$dir/cap/plot.gp" || fail "a run never solved is marked solved"
fi

# ---- error paths: exit 1, a message that says what is wrong, no file -----
expect_fail() { # EXPECTED-MESSAGE-PART trevo-args...
    local want=$1 msg rc
    shift
    rm -f "$dir/x.png"
    set +e
    msg=$("$@" 2>&1)
    rc=$?
    set -e
    [ $rc -eq 1 ] || fail "'$*' exited $rc, expected 1 ($msg)"
    grep -qF -- "$want" <<<"$msg" || fail "'$*': message '$msg' lacks '$want'"
    [ ! -e "$dir/x.png" ] || fail "'$*' wrote an output file"
    tmp_clean
}
expect_fail "missing.db: no such database" "$TREVO" plot "$dir/missing.db" -o "$dir/x.png"
expect_fail "no run named 'nope' (runs: 'xor')" \
    "$TREVO" plot "$dir/a.db" --name nope -o "$dir/x.png"
echo "hello, not a database" >"$dir/text.db"
expect_fail "not a trevo database" "$TREVO" plot "$dir/text.db" -o "$dir/x.png"
sqlite3 "$dir/other.db" 'CREATE TABLE t(x)'
expect_fail "not a trevo database" "$TREVO" plot "$dir/other.db" -o "$dir/x.png"
# no gnuplot in PATH
mkdir "$dir/nobin"
expect_fail "apt-get install gnuplot-nox" \
    env PATH="$dir/nobin" "$TREVO" plot "$dir/a.db" -o "$dir/x.png"
# a gnuplot that fails: its status and its own words are reported
mkdir "$dir/fakebin"
printf '#!/bin/sh\necho "boom: cannot draw" >&2\nexit 3\n' >"$dir/fakebin/gnuplot"
chmod +x "$dir/fakebin/gnuplot"
expect_fail "gnuplot failed (exit status 3): boom: cannot draw" \
    env PATH="$dir/fakebin:$PATH" "$TREVO" plot "$dir/a.db" -o "$dir/x.png"
# an unwritable output
expect_fail "x.png: cannot write there" "$TREVO" plot "$dir/a.db" -o "$dir/no/such/dir/x.png"
# usage errors exit 2
set +e
"$TREVO" plot "$dir/a.db" 2>/dev/null; rc1=$?
"$TREVO" plot -o "$dir/x.png" 2>/dev/null; rc2=$?
"$TREVO" plot "$dir/a.db" -o "$dir/x.png" --bogus 2>/dev/null; rc3=$?
set -e
[ "$rc1$rc2$rc3" = 222 ] || fail "usage errors exited $rc1 $rc2 $rc3, expected 2 2 2"

# ---- several runs: --name is required, and names them -------------------
# The name and the database path are full of quotes and shell syntax: they
# must reach neither a shell nor gnuplot's parser.
# (Commands in them would run in $dir: trevo is started there.)
odd_name="it's \"odd\" \$(touch pwned) \`touch pwned2\` \\"
config "$odd_name" 3 "$dir/a.db" >"$dir/b.ini"
"$TREVO" run "$dir/b.ini" --quiet
(cd "$dir" && expect_fail "a.db holds 2 runs ('xor', '$odd_name'): say which with --name" \
    "$TREVO" plot "$dir/a.db" -o "$dir/x.png")
odd_db="$dir/q'uote \"\$(touch pwned3)\".db"
cp "$dir/a.db" "$odd_db"
(cd "$dir" && "$TREVO" plot "$odd_db" --name "$odd_name" -o "$dir/odd.png")
check_png "$dir/odd.png"
"$TREVO" plot "$dir/a.db" --name xor -o "$dir/xor.png"
check_png "$dir/xor.png"
for f in pwned pwned2 pwned3; do [ ! -e "$dir/$f" ] || fail "a command in a name ran ($f)"; done
tmp_clean

# ---- a run that is still going ---------------------------------------------
config live 100000 "$dir/live.db" "stop_on_solve = false" >"$dir/live.ini"
"$TREVO" run "$dir/live.ini" --quiet &
bg_pid=$!
for _ in $(seq 300); do
    gen=$("$TREVO" status "$dir/live.db" 2>/dev/null | awk '$1 == "live" { print $3 }') || true
    [ -n "$gen" ] && [ "$gen" -ge 3 ] && break
    sleep 0.1
done
[ -n "$gen" ] && [ "$gen" -ge 3 ] || fail "the live run did not reach generation 3"
"$TREVO" status "$dir/live.db" | grep -q "running .* active" || fail "the live run is not active"
"$TREVO" plot "$dir/live.db" -o "$dir/live.png"
check_png "$dir/live.png"
kill -TERM "$bg_pid"
wait "$bg_pid" || fail "the live run did not stop cleanly after SIGTERM"
bg_pid=
tmp_clean

# ---- trevo best --format dot ---------------------------------------------
"$TREVO" best "$dir/a.db" --name xor -o "$dir/champ.txt"
"$TREVO" best "$dir/a.db" --name xor --format dot -o "$dir/champ.dot"
dot -Tsvg "$dir/champ.dot" -o "$dir/champ.svg" || fail "dot refused champ.dot"
sizes=$("$TREVO" net validate "$dir/champ.txt" | sed -n 's/^connections: \([0-9]*\) (local \([0-9]*\), skip \([0-9]*\), recurrent \([0-9]*\))$/\1 \2 \3 \4/p')
read -r n_conns n_local n_skip n_rec <<<"$sizes"
[ -n "$n_conns" ] && [ "$n_conns" -gt 0 ] || fail "no connection count from net validate"
edges=$(grep -cE '^ *n[0-9]+ -> n[0-9]+ \[' "$dir/champ.dot")
[ "$edges" -eq "$n_conns" ] || fail "champ.dot: $edges edges, the network has $n_conns"
[ "$(grep -c -- '->' "$dir/champ.dot")" -eq "$n_conns" ] || fail "champ.dot: '->' outside edges"
[ "$(grep -c 'class="edge"' "$dir/champ.svg")" -eq "$n_conns" ] || fail "champ.svg: edge count"
[ "$(grep -cE -- '-> .*style=dashed' "$dir/champ.dot" || true)" -eq "$n_skip" ] ||
    fail "champ.dot: dashed edges != $n_skip skip connections"
[ "$(grep -cE -- '-> .*constraint=false' "$dir/champ.dot" || true)" -eq "$n_rec" ] ||
    fail "champ.dot: constraint=false edges != $n_rec recurrent connections"
[ "$(grep -E -- '^ *n[0-9]+ -> ' "$dir/champ.dot" | grep -cvE 'dashed|constraint' || true)" -eq "$n_local" ] ||
    fail "champ.dot: plain edges != $n_local local connections"
grep -q "label=\"run 'xor', generation 4: champion " "$dir/champ.dot" || fail "champ.dot: no title"
# standard output, and the same text either way
"$TREVO" best "$dir/a.db" --name xor --format dot | cmp - "$dir/champ.dot" ||
    fail "best --format dot to stdout differs from -o"
"$TREVO" best "$dir/a.db" --name xor --format dot | dot -Tsvg >/dev/null || fail "dot on stdout"
set +e; "$TREVO" best "$dir/a.db" --name xor --format svg 2>/dev/null; rc=$?; set -e
[ $rc -eq 2 ] || fail "best --format svg exited $rc, expected 2"

# ---- a hand-written network: one skip, one recurrent ---------------------
cat >"$dir/h.txt" <<'NET'
trevo-net 1
inputs 2
outputs 1
neuron 0 in 0 identity 0
neuron 1 in 0 identity 0
neuron 2 out 1 sigmoid 0
neuron 5 hid 0.5 tanh 0.25
conn 0 5 1.5
conn 1 5 -0.5
conn 5 2 2
conn 0 2 0.75
conn 2 5 -1
NET
"$TREVO" net validate "$dir/h.txt" | grep -q "connections: 5 (local 3, skip 1, recurrent 1)" ||
    fail "h.txt is not what this test thinks"
"$TREVO" net export "$dir/h.txt" --format dot -o "$dir/h.dot"
"$TREVO" net import "$dir/h.txt" -o "$dir/h.net"
"$TREVO" net export "$dir/h.net" --format dot | cmp - "$dir/h.dot" || fail "dot of text != of msgpack"
edge() { grep -E "^ *n$1 -> n$2 \[" "$dir/h.dot" || fail "h.dot: no edge $1 -> $2"; }
edge 0 2 | grep -q 'style=dashed' || fail "skip 0 -> 2 not dashed"
edge 0 2 | grep -q 'constraint=false' && fail "skip 0 -> 2 drawn as recurrent"
edge 2 5 | grep -q 'constraint=false' || fail "recurrent 2 -> 5 bends the layering"
edge 2 5 | grep -q 'color="#c0392b"' || fail "recurrent 2 -> 5 not in its colour"
edge 2 5 | grep -q 'dashed' && fail "recurrent 2 -> 5 dashed"
for e in "0 5" "1 5" "5 2"; do
    # shellcheck disable=SC2086
    line=$(edge $e)
    grep -qE 'dashed|constraint|c0392b' <<<"$line" && fail "local $e styled: $line"
done
grep -q 'n5 \[label="5\\ntanh\\nb=0.25"' "$dir/h.dot" || fail "h.dot: neuron 5's label"
grep -A3 'rank=source' "$dir/h.dot" | grep -q 'n0 \[' || fail "h.dot: inputs not on the source rank"
grep -A2 'rank=sink' "$dir/h.dot" | grep -q 'n2 \[' || fail "h.dot: output not on the sink rank"
dot -Tsvg "$dir/h.dot" -o "$dir/h.svg" || fail "dot refused h.dot"
grep -A2 '<title>n0&#45;&gt;n2</title>' "$dir/h.svg" | grep -q 'stroke-dasharray' ||
    fail "h.svg: skip edge not dashed"
grep -A2 '<title>n2&#45;&gt;n5</title>' "$dir/h.svg" | grep -q 'stroke="#c0392b"' ||
    fail "h.svg: recurrent edge not red"
set +e; "$TREVO" net export "$dir/h.txt" --format png 2>/dev/null; rc=$?; set -e
[ $rc -eq 2 ] || fail "net export --format png exited $rc, expected 2"
echo ok
