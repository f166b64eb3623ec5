#!/usr/bin/env bash
# make install into a temporary prefix, then the library example of
# docs/library.md (taken from between its two marker comments, so there is one
# copy of it) built with pkg-config, shared and static, and run on an XOR champion
# (text and msgpack) and on a recurrent network (sequences split by a blank
# line): its outputs must be those of `trevo net eval`. Then make uninstall:
# an empty prefix is left empty, a prefix holding other files is left as it
# was, and a DESTDIR install lands under DESTDIR with the real prefix in
# trevo.pc.
set -eu
: "${TREVO:?TREVO must name the trevo binary}"
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Install the build that $TREVO comes from (build/ or build/asan/).
case $TREVO in
"$here"/*/trevo) build=${TREVO#"$here"/} build=${build%/trevo} ;;
*) fail "TREVO=$TREVO is not a build of $here" ;;
esac
mk() { make -j"$(nproc)" -C "$here" --no-print-directory BUILD="$build" "$@" >>"$dir/make.log" 2>&1 ||
    fail "make $*: $(tail -20 "$dir/make.log")"; }
# Under `make asan` (SAN=1) the library is instrumented, so programs link the
# sanitizer runtimes too; they cannot be linked -static.
san=()
[ "${SAN:-}" = 1 ] && san=(-fsanitize=address,undefined)

# ---- install into an empty prefix -----------------------------------------
p=$dir/prefix
mkdir "$p"
mk install PREFIX="$p"
for f in bin/trevo include/trevo/tv.h include/trevo/genome.h include/trevo/nn.h \
    include/trevo/task.h lib/libtrevo.a lib/libtrevo.so lib/pkgconfig/trevo.pc \
    share/man/man1/trevo.1; do
    [ -e "$p/$f" ] || fail "make install did not install $f"
done
cmp -s "$TREVO" "$p/bin/trevo" || fail "the installed trevo is not $TREVO"
"$p/bin/trevo" --help | grep -q "net eval" || fail "the installed trevo does not run"
[ "$(readelf -d "$p/lib/libtrevo.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = libtrevo.so.0 ] ||
    fail "libtrevo.so has no soname libtrevo.so.0"
# The man page renders without a warning (-ww: all of groff's warnings).
groff -man -Tutf8 -ww -P-cbou "$p/share/man/man1/trevo.1" 2>"$dir/groff.err" >"$dir/trevo.man"
[ ! -s "$dir/groff.err" ] || fail "groff warns about trevo.1: $(cat "$dir/groff.err")"
grep -q "^EXAMPLES" "$dir/trevo.man" || fail "the installed man page has no EXAMPLES section"

# Each installed header compiles alone, as a user's first include, in strict C11.
for h in "$p"/include/trevo/*.h; do
    printf '#include <trevo/%s>\n' "${h##*/}" |
        cc -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$p/include" -fsyntax-only -x c - ||
        fail "the installed ${h##*/} does not compile alone"
done

export PKG_CONFIG_PATH=$p/lib/pkgconfig
[ "$(echo $(pkg-config --cflags trevo))" = "-I$p/include" ] || fail "cflags: $(pkg-config --cflags trevo)"
[ "$(echo $(pkg-config --libs trevo))" = "-L$p/lib -ltrevo" ] || fail "libs: $(pkg-config --libs trevo)"
pkg-config --static --libs trevo | grep -q -- "-lmsgpackc" || fail "--static: no -lmsgpackc"

# ---- docs/library.md's program, built against the installed library ---------
sed -n '/^<!-- library-example begin -->$/,/^<!-- library-example end -->$/p' \
    "$here/docs/library.md" | sed '1,2d;$d' | sed '$d' >"$dir/run_net.c"
grep -q "nn_plan_compile" "$dir/run_net.c" || fail "no library example between the markers in docs/library.md"
cc "${san[@]}" -std=c11 -Wall -Wextra -Wpedantic -Werror $(pkg-config --cflags trevo) "$dir/run_net.c" \
    $(pkg-config --libs trevo) -Wl,-rpath,"$p/lib" -o "$dir/run_net" ||
    fail "docs/library.md's program does not build against the installed trevo"
readelf -d "$dir/run_net" | grep -q "NEEDED.*libtrevo.so.0" || fail "run_net does not use libtrevo.so.0"
progs=("$dir/run_net")
if [ ${#san[@]} -eq 0 ]; then
    cc -static $(pkg-config --cflags trevo) "$dir/run_net.c" $(pkg-config --static --libs trevo) \
        -o "$dir/run_net_static" || fail "docs/library.md's program does not link -static"
    readelf -d "$dir/run_net_static" 2>/dev/null | grep -q NEEDED && fail "run_net_static is not static"
    progs+=("$dir/run_net_static")
fi

# An XOR champion, text and msgpack, and a recurrent accumulator.
"$TREVO" run "$here/experiments/xor.ini" --db "$dir/x.db" --seed 105 --generations 3 --quiet
"$TREVO" best "$dir/x.db" -o "$dir/xor.txt"
"$TREVO" best "$dir/x.db" --format msgpack -o "$dir/xor.mp"
# two inputs, two outputs; a tanh neuron with a self loop, fed back from an output
cat >"$dir/rec.txt" <<'NET'
trevo-net 1
inputs 2
outputs 2
neuron 1 in 0 identity 0
neuron 2 in 0 identity 0
neuron 50 hid 0.5 tanh 0.1
neuron 60 out 1 sigmoid -0.2
neuron 61 out 1 identity 0
conn 1 50 0.7
conn 2 50 -1.3
conn 50 50 0.9
conn 60 50 0.4
conn 50 60 2
conn 50 61 -1
conn 2 61 0.5
NET

xor_rows=$'1,0,0\n1,0,1\n1,1,0\n1,1,1'
want=$(printf '%s\n' "$xor_rows" | "$TREVO" net eval "$dir/xor.txt")
[ "$(printf '%s\n' "$want" | wc -l)" -eq 4 ] || fail "trevo net eval printed [$want]"
rec_rows=$'1,0\n1,0\n0.5,-2\n\n1,0'
want_rec=$(printf '%s\n' "$rec_rows" | "$TREVO" net eval "$dir/rec.txt")
rows=($want_rec)
[ ${#rows[@]} -eq 4 ] && [ "${rows[0]}" != "${rows[1]}" ] && [ "${rows[0]}" = "${rows[3]}" ] ||
    fail "rec.txt: trevo net eval printed [$want_rec]: not a recurrent network reset by a blank line"
for prog in "${progs[@]}"; do
    name=$(basename "$prog")
    for net in xor.txt xor.mp; do
        got=$(printf '%s\n' "$xor_rows" | "$prog" "$dir/$net") || fail "$name $net: exit $?"
        [ "$got" = "$want" ] || fail "$name $net (stdin): [$got], trevo net eval: [$want]"
        got=$("$prog" "$dir/$net" 1,0,0 1,0,1 1,1,0 1,1,1) || fail "$name $net: exit $?"
        [ "$got" = "$want" ] || fail "$name $net (arguments): [$got], trevo net eval: [$want]"
    done
    got=$(printf '%s\n' "$rec_rows" | "$prog" "$dir/rec.txt") || fail "$name rec.txt: exit $?"
    [ "$got" = "$want_rec" ] || fail "$name rec.txt: [$got], trevo net eval: [$want_rec]"
    # its errors: a bad network file (named), a short row
    printf 'trevo-net 1\nbogus\n' >"$dir/bad.txt"
    set +e
    "$prog" "$dir/bad.txt" </dev/null 2>"$dir/err"
    rc=$?
    "$prog" "$dir/xor.txt" 1,0 2>"$dir/err2"
    rc2=$?
    head -c 20 "$dir/xor.mp" >"$dir/cut.mp"
    "$prog" "$dir/cut.mp" </dev/null 2>"$dir/err3"
    rc3=$?
    "$prog" "$dir/none.txt" </dev/null 2>"$dir/err4"
    rc4=$?
    set -e
    [ $rc -eq 1 ] && grep -q "^run_net: $dir/bad.txt:2: " "$dir/err" ||
        fail "$name bad.txt: exit $rc, $(cat "$dir/err")"
    [ $rc2 -eq 1 ] && grep -q "^run_net: '1,0': expected 3 comma-separated numbers$" "$dir/err2" ||
        fail "$name short row: exit $rc2, $(cat "$dir/err2")"
    [ $rc3 -eq 1 ] && grep -q "^run_net: $dir/cut.mp: " "$dir/err3" ||
        fail "$name cut.mp: exit $rc3, $(cat "$dir/err3")"
    [ $rc4 -eq 1 ] && grep -q "^run_net: $dir/none.txt: No such file or directory$" "$dir/err4" ||
        fail "$name none.txt: exit $rc4, $(cat "$dir/err4")"
done

# ---- uninstall ------------------------------------------------------------
mk uninstall PREFIX="$p"
left=$(cd "$p" && find . -mindepth 1)
[ -z "$left" ] || fail "make uninstall left in the prefix: $left"

# A prefix holding other files (and an empty lib/pkgconfig): as it was.
q=$dir/used
mkdir -p "$q/lib/pkgconfig" "$q/share/doc"
echo other >"$q/lib/libother.a"
before=$(cd "$q" && find . | sort)
mk install PREFIX="$q"
mk install PREFIX="$q" # twice: uninstall still knows which directories it made
[ -e "$q/include/trevo/nn.h" ] || fail "install into a used prefix"
mk uninstall PREFIX="$q"
after=$(cd "$q" && find . | sort)
[ "$before" = "$after" ] || fail "uninstall changed a used prefix: before [$before], after [$after]"

# DESTDIR: the files under DESTDIR, the prefix without it in trevo.pc.
mk install DESTDIR="$dir/stage" PREFIX=/opt/trevo
grep -qx "prefix=/opt/trevo" "$dir/stage/opt/trevo/lib/pkgconfig/trevo.pc" ||
    fail "DESTDIR install: trevo.pc says $(grep ^prefix= "$dir/stage/opt/trevo/lib/pkgconfig/trevo.pc")"
mk uninstall DESTDIR="$dir/stage" PREFIX=/opt/trevo
[ ! -e "$dir/stage/opt/trevo" ] || fail "DESTDIR uninstall left $(cd "$dir/stage" && find .)"
echo "it_install: ok"
