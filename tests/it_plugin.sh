#!/usr/bin/env bash
# Plugin tasks end to end (issue 15, docs/plugins.md), outside the repository,
# with trevo installed into a temporary prefix (make install):
#  - `trevo task new parity` writes parity.c, parity.ini and a Makefile (and
#    refuses to write over them, or a bad name); the Makefile builds
#    libparity.so as a user would, with `pkg-config --cflags trevo`;
#  - it runs under `mpirun -n 3` and alone with the same result;
#  - stopped (at 12 of 30 generations) and resumed under mpirun, the run ends
#    identical to the uninterrupted one;
#  - rebuilt with another constant, the resume is refused, naming both
#    hashes, the database untouched; `--set task.plugin_sha256=NEW` accepts it;
#  - ranks that disagree are refused before any evaluation: a worker whose
#    plugin sees another shape (its environment), one whose file differs, one
#    that cannot find the file.
set -eu
: "${TREVO:?}"
root=$PWD
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
sums() { for f in "$1" "$1-wal"; do if [ -e "$f" ]; then sha256sum <"$f"; else echo -; fi; done; }
MPIRUN="mpirun --oversubscribe ${MPIRUN_ASAN:-}"
cd "$dir"

# ---- an installed trevo: `make install` of the build TREVO comes from ---------
case $TREVO in
"$root"/*/trevo) build=${TREVO#"$root"/} build=${build%/trevo} ;;
*) fail "TREVO=$TREVO is not a build of $root" ;;
esac
make -C "$root" --no-print-directory BUILD="$build" install PREFIX="$dir/prefix" >install.log 2>&1 ||
    fail "make install: $(tail -20 install.log)"
export PKG_CONFIG_PATH="$dir/prefix/lib/pkgconfig"
TREVO="$dir/prefix/bin/trevo"
pkg-config --cflags trevo >/dev/null || fail "pkg-config does not find the installed trevo"

# ---- trevo task new ----------------------------------------------------------
"$TREVO" task new parity >out || fail "task new exited $?"
for f in parity/parity.c parity/parity.ini parity/Makefile; do
    [ -s "$f" ] || fail "task new did not write $f"
done
grep -q "next: cd parity && make && trevo run parity.ini" out || fail "task new said: $(cat out)"
before=$(cat parity/*.c parity/*.ini parity/Makefile | sha256sum)
"$TREVO" task new parity 2>err && fail "task new wrote over an existing task"
grep -q "parity/parity.c exists already: nothing written" err || fail "task new again: $(cat err)"
[ "$(cat parity/*.c parity/*.ini parity/Makefile | sha256sum)" = "$before" ] ||
    fail "task new changed the existing files"
touch Makefile
"$TREVO" task new other . 2>err && fail "task new wrote over ./Makefile"
grep -q "./Makefile exists already" err || fail "task new over Makefile: $(cat err)"
[ ! -e other.c ] || fail "task new wrote other.c though Makefile existed"
"$TREVO" task new 'Bad name' 2>err && fail "task new took a bad name"
grep -q "'Bad name' is not a task name" err || fail "task new bad name: $(cat err)"

# ---- build as a user would, run ------------------------------------------------
cd parity
make >build.log 2>&1 || fail "make: $(cat build.log)"
[ -f libparity.so ] || fail "make did not build libparity.so"
# shorter than the template's, and past the first solve
sed -i 's/^generations = .*/generations = 30\nstop_on_solve = false/' parity.ini

signature() { # DB -> champion + statistics + individuals
    "$TREVO" best "$1"
    sqlite3 "$1" "select generation, best, mean, median, champion, n_evals from generations order by generation"
    sqlite3 "$1" "select count(*), count(distinct id), sum(fitness) from individuals"
}
$MPIRUN -n 3 "$TREVO" run parity.ini --db ref.db --quiet || fail "mpirun -n 3 run exited $?"
signature ref.db >ref.sig
[ "$(sqlite3 ref.db 'select count(*) from generations')" = 30 ] || fail "ref.db: not 30 generations"
[ "$(sqlite3 ref.db 'select name from runs')" = parity ] || fail "the run is not named after its task"
sha=$(sha256sum libparity.so | cut -c1-64)
[ "$(sqlite3 ref.db "select value from run_notes where key = 'task.plugin_sha256'")" = "$sha" ] ||
    fail "the run does not keep the plugin's SHA-256 $sha"
[ "$(sqlite3 ref.db "select value from run_notes where key = 'task.plugin_path'")" = "$PWD/libparity.so" ] ||
    fail "the run does not keep the plugin's path"
"$TREVO" run parity.ini --db alone.db --quiet || fail "run alone exited $?"
signature alone.db >alone.sig
cmp -s ref.sig alone.sig || fail "1 process and 3 ranks differ: $(diff ref.sig alone.sig | head)"

# ---- resume with the same plugin: exactly the uninterrupted run ---------------
$MPIRUN -n 3 "$TREVO" run parity.ini --db k.db --generations 12 --quiet || fail "run of 12 exited $?"
$MPIRUN -n 3 "$TREVO" resume k.db --set run.generations=30 --quiet || fail "resume exited $?"
signature k.db >k.sig
cmp -s ref.sig k.sig || fail "stopped and resumed differs: $(diff ref.sig k.sig | head)"

# ---- a changed plugin: refused, naming both hashes; accepted when told -------
sed -i 's/^#define ODD_TARGET 1.0$/#define ODD_TARGET 0.9/' parity.c
grep -q "ODD_TARGET 0.9" parity.c || fail "the template has no ODD_TARGET 1.0 to change"
make >build.log 2>&1 || fail "make after the change: $(cat build.log)"
new=$(sha256sum libparity.so | cut -c1-64)
[ "$new" != "$sha" ] || fail "the rebuilt plugin hashes as before"
before=$(sums k.db)
$MPIRUN -n 3 "$TREVO" resume k.db --set run.generations=40 --quiet 2>err && fail "resume took a changed plugin"
[ "$(sums k.db)" = "$before" ] || fail "the refused resume changed the database"
grep -qF "plugin ./libparity.so changed since the run started (SHA-256 $sha then, $new now)" err ||
    fail "refusal: $(cat err)"
grep -qF -- "--set task.plugin_sha256=$new" err || fail "the refusal does not say how to accept: $(cat err)"
$MPIRUN -n 3 "$TREVO" resume k.db --set run.generations=40 --set "task.plugin_sha256=$sha" \
    --quiet 2>err && fail "resume accepted the old hash for the new file"
grep -qF "the plugin ./libparity.so hashes $new" err || fail "wrong acceptance: $(cat err)"
$MPIRUN -n 3 "$TREVO" resume k.db --set run.generations=40 --set "task.plugin_sha256=$new" --quiet ||
    fail "resume with the new hash accepted exited $?"
[ "$(sqlite3 k.db 'select count(*) from generations')" = 40 ] || fail "the accepted resume did not run to 40"
[ "$(sqlite3 k.db "select value from run_notes where key = 'task.plugin_sha256'")" = "$new" ] ||
    fail "the run does not keep the accepted hash"
"$TREVO" resume k.db --set run.generations=45 --quiet || fail "a second resume with the accepted plugin exited $?"

# ---- ranks that disagree: refused before any evaluation -------------------------
cd "$dir"
src="$root/tests/plugins/test_task.c"
inc="-I$root/tasks -I$root/nn -I$root/genome -I$root/tv"
cc -shared -fPIC $inc "$src" -o libplugtest.so || fail "cc test plugin"
mkdir other empty
cc -O2 -shared -fPIC $inc "$src" -o other/libplugtest.so || fail "cc other test plugin"
printf '[run]\ntask = ./libplugtest.so\ngenerations = 3\n[population]\nsize = 20\n' >t.ini
$MPIRUN -n 3 "$TREVO" run t.ini --db agree.db --quiet || fail "the test plugin under mpirun exited $?"
refused() { # DB WANT: the run failed, with WANT, before any individual was stored
    grep -qF "$2" err || fail "$1: no '$2' in: $(cat err)"
    [ "$(sqlite3 "$1" 'select count(*) from individuals')" = 0 ] || fail "$1: individuals were stored"
}
$MPIRUN -n 2 "$TREVO" run t.ini --db shape.db --quiet : -n 1 env TREVO_TEST_INPUTS=5 "$TREVO" run t.ini \
    2>err && fail "ranks of different shapes were not refused"
refused shape.db "rank 2 opened task ./libplugtest.so with 5 inputs and 1 outputs, rank 0 (the master) with 2 inputs and 1 outputs"
other=$(sha256sum other/libplugtest.so | cut -c1-64)
$MPIRUN -n 2 "$TREVO" run t.ini --db file.db --quiet : -n 1 -wdir "$dir/other" "$TREVO" run t.ini \
    2>err && fail "ranks of different files were not refused"
refused file.db "rank 2 loaded task ./libplugtest.so with SHA-256 $other, rank 0 (the master) with"
$MPIRUN -n 2 "$TREVO" run t.ini --db missing.db --quiet : -n 1 -wdir "$dir/empty" "$TREVO" run t.ini \
    2>err && fail "a rank without the file was not refused"
refused missing.db "rank 2: config from rank 0:"
grep -qF "task: ./libplugtest.so: cannot open: No such file or directory" err || fail "missing: $(cat err)"
echo "it_plugin: ok"
