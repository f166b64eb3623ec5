#!/usr/bin/env bash
# Every command example of README.md and docs/*.md runs (docs/contracts.md,
# "The documentation's examples run"). The convention, which the pages
# follow:
#  - a fenced block whose info string starts with `sh` is run; every other
#    block (`text`, `console`, `ini`, `sql`, `c`, none) is only shown. Blocks
#    that cannot run on one machine in CI (SLURM scripts, a hostfile of
#    several machines, `kill -USR1 <pid>`, make targets) are `text`;
#  - the blocks of a page run in order, each as a bash script (`set -e -o
#    pipefail`), all in one scratch directory per page, made for it and
#    holding `build/trevo` (the binary under test) and a copy of
#    experiments/; `trevo` on PATH is the binary under test too. A block
#    starts in the directory the previous one ended in (a `cd` carries over);
#    nothing else does (variables, functions);
#  - a block must exit 0 within BLOCK_SECONDS (60); a block whose info string
#    is `sh long` is an example that would run long (training 30 epochs, an
#    hour's search): it passes when it exits 0 within LONG_SECONDS (5), or is
#    still running then without having printed a usage or error line (a line
#    that starts with `usage:` or holds error, unknown, expected, cannot or
#    refused); it is then stopped, so its last command should be the long one
#    and its directory change is not carried over;
#  - `<!-- it_docs: COMMAND -->`, alone on a line, runs COMMAND there as a
#    block of its own that readers do not see: it stands in for what a cut
#    `sh long` block would have written (`cp start.net trained.net`);
#  - `<!-- it_docs file=NAME -->`, alone on the line before a fenced block,
#    writes that block to NAME in the current directory instead of running
#    it (a C driver that a later `sh` block compiles).
# As root, mpirun needs the OMPI_ALLOW_RUN_AS_ROOT* variables and, with more
# ranks than cores, oversubscription: both are set here, not in the pages.
# A task plugin's Makefile finds trevo's headers with `pkg-config --cflags
# trevo`: a trevo.pc here points at a copy of the headers `make install`
# installs.
#
#   bash tests/it_docs.sh [build/trevo [PAGE.md...]]   (default: every page)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
TREVO=$(realpath "${1:-${TREVO:?TREVO or an argument must name the trevo binary}}")
export TREVO
shift $(($# > 0 ? 1 : 0))
BLOCK_SECONDS=${BLOCK_SECONDS:-60}
LONG_SECONDS=${LONG_SECONDS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

mkdir -p "$work/bin" "$work/prefix/include/trevo" "$work/prefix/lib/pkgconfig"
ln -s "$TREVO" "$work/bin/trevo"
# Under `make asan` (SAN=1), ranks under mpirun hold allocations LeakSanitizer
# cannot name (tests/run_integration.sh): the pages' mpirun lines cannot say
# so, so `mpirun` on PATH does.
if [ "${SAN:-}" = 1 ]; then
    printf '#!/bin/sh\nexec %s -x ASAN_OPTIONS=detect_leaks=0 "$@"\n' "$(command -v mpirun)" \
        >"$work/bin/mpirun"
    chmod +x "$work/bin/mpirun"
fi
export PATH="$work/bin:$PATH"
hdrs=$(make -s -C "$here" --no-print-directory \
    --eval 'it-docs-headers: ; @echo $(LIBTREVO_HDR)' it-docs-headers) || exit 1
for h in $hdrs; do cp "$here/$h" "$work/prefix/include/trevo/"; done
cat >"$work/prefix/lib/pkgconfig/trevo.pc" <<PC
prefix=$work/prefix
Name: trevo
Description: trevo's headers, for the pages' task plugins
Version: 0
Cflags: -I\${prefix}/include
Libs: -L\${prefix}/lib -ltrevo
PC
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"

# PAGE -> lines "N KIND LINE [NAME]" on stdout, step N's text in $2/N.
steps() {
    awk -v out="$2" '
    function emit(kind, line, body, name) {
        n++
        f = sprintf("%s/%04d", out, n)
        printf "%s", body >f
        close(f)
        printf "%04d %s %d %s\n", n, kind, line, name
    }
    function bad(msg) { printf "%s:%d: %s\n", FILENAME, NR, msg >"/dev/stderr"; err = 1; exit 1 }
    !inb && /^<!-- it_docs: .* -->$/ {
        if (file != "") bad("it_docs file= is not followed by a fenced block")
        s = $0; sub(/^<!-- it_docs: /, "", s); sub(/ -->$/, "", s)
        emit("run", NR, s "\n", ""); next
    }
    !inb && /^<!-- it_docs file=[^ ]+ -->$/ {
        file = $0; sub(/^<!-- it_docs file=/, "", file); sub(/ -->$/, "", file); next
    }
    !inb && /^<!-- it_docs/ { bad("not an it_docs directive: " $0) }
    !inb && /^ *```/ {
        inb = 1; start = NR; body = ""
        match($0, /^ */); indent = RLENGTH
        info = substr($0, indent + 4)
        split(info, w, /[ \t]+/)
        kind = w[1] == "sh" ? (w[2] == "long" ? "long" : "run") : ""
        next
    }
    inb && /^ *```[ \t]*$/ {
        inb = 0
        if (file != "") emit("file", start, body, file)
        else if (kind != "") emit(kind, start, body, "")
        file = ""; next
    }
    inb { body = body substr($0, indent + 1) "\n"; next }
    file != "" && NF { bad("it_docs file= is not followed by a fenced block") }
    END { if (!err && inb) bad("unterminated fenced block from line " start) }
    ' "$1"
}

# Runs step file $1 (kind $2) in the page's current directory; 0 passes.
run_block() {
    local step=$1 kind=$2 log=$1.log pid i limit sig
    {
        printf 'cd "%s" || exit 97\n' "$cwd"
        printf "trap 'pwd >\"%s\"' EXIT\n" "$step.cwd"
        printf 'set -e -o pipefail\n'
        cat "$step"
    } >"$step.sh"
    limit=$([ "$kind" = long ] && echo "$LONG_SECONDS" || echo "$BLOCK_SECONDS")
    setsid bash "$step.sh" >"$log" 2>&1 </dev/null &
    pid=$!
    for ((i = 0; i < limit * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    timed_out=0
    if kill -0 "$pid" 2>/dev/null; then timed_out=1; fi
    # The block's whole session: mpirun's ranks and anything left in the background.
    for sig in TERM KILL; do
        kill -"$sig" $(ps -o pid= -s "$pid" 2>/dev/null) 2>/dev/null
        [ $sig = TERM ] && [ $timed_out = 1 ] && sleep 1
    done
    wait "$pid" 2>/dev/null
    rc=$?
    if [ $timed_out = 1 ]; then
        [ "$kind" = long ] || { why="still running after $limit s"; return 1; }
        if grep -Eiq '^usage:|error|unknown|expected|cannot|refused' "$log"; then
            why="printed a usage or error line before the limit"
            return 1
        fi
        return 0 # cut at the limit, as expected of a long example
    fi
    [ $rc -eq 0 ] || { why="exit status $rc"; return 1; }
    [ -s "$step.cwd" ] && cwd=$(cat "$step.cwd")
    return 0
}

pages=("$@")
[ ${#pages[@]} -gt 0 ] || pages=(README.md docs/*.md)
failed=0 blocks=0
for page in "${pages[@]}"; do
    page=${page#"$here"/}
    name=$(basename "$page" .md)
    pdir=$work/pages/$name
    mkdir -p "$pdir/steps" "$pdir/run/build"
    ln -s "$TREVO" "$pdir/run/build/trevo"
    cp -r "$here/experiments" "$pdir/run/"
    cwd=$pdir/run
    list=$(steps "$here/$page" "$pdir/steps") || { failed=$((failed + 1)); continue; }
    start=$(date +%s)
    n=0
    while read -r step kind line fname; do
        [ -n "$step" ] || continue
        f=$pdir/steps/$step
        if [ "$kind" = file ]; then
            cp "$f" "$cwd/$fname" || { echo "FAIL: $page:$line: cannot write $fname"; failed=$((failed + 1)); break; }
            continue
        fi
        n=$((n + 1)) blocks=$((blocks + 1))
        if ! run_block "$f" "$kind"; then
            failed=$((failed + 1))
            echo "FAIL: $page:$line: the block ($kind) $why:"
            sed 's/^/    | /' "$f"
            echo "  its output (last 30 lines):"
            tail -30 "$f.log" | sed 's/^/    > /'
            break # the page's later blocks build on this one
        fi
        [ "$kind" = long ] && [ $timed_out = 1 ] &&
            echo "  $page:$line: long example still running at $LONG_SECONDS s, no error: stopped"
    done <<<"$list"
    echo "$page: $n blocks ($(($(date +%s) - start)) s)"
done
if [ $failed -gt 0 ]; then
    echo "it_docs: $failed failed"
    exit 1
fi
echo "it_docs: ok ($blocks blocks in ${#pages[@]} pages)"
