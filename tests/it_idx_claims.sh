#!/usr/bin/env bash
# An IDX header that claims more than its file holds: `trevo net test` on a
# 16-byte images file whose header claims about 10 GB (and one claiming about
# 2^64 bytes), plain and gzipped, ends at once with exit code 1 and "truncated
# at byte offset 16: the header claims M bytes", within 3 seconds and under
# 100 MB resident (peak RSS measured with GNU time -v when it is installed):
# nothing of the claimed size is allocated.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
it_tmpdir it_idx_claims
cd "$dir"

"$TREVO" net init --layers 4,3 --density 1 --seed 1 -o a.net >/dev/null || fail "net init"

# header IMAGES N R C: an IDX images header (magic 0x803, N x R x C), nothing
# after it; labels LABELS N BODY: a labels file of N labels, BODY of them
# there (all 0).
header() { perl -e 'print pack("NNNN", 0x803, @ARGV[1 .. 3])' "$@" >"$1"; }
labels() { perl -e 'print pack("NN", 0x801, $ARGV[0]), "\0" x $ARGV[1]' "$2" "$3" >"$1"; }

time_v=
/usr/bin/time -v true >/dev/null 2>&1 && time_v=1

# refused LABEL IMAGES LABELS CLAIM: net test on them exits 1 with the
# message, in under 3 s and under 100 MB resident.
refused() {
    local label=$1 img=$2 lab=$3 claim=$4 st start ms
    start=$(date +%s%N)
    if [ -n "$time_v" ]; then
        /usr/bin/time -v -o time.log "$TREVO" net test a.net --data "$img" --labels "$lab" \
            >out.log 2>err.log
    else
        "$TREVO" net test a.net --data "$img" --labels "$lab" >out.log 2>err.log
    fi
    st=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    [ $st = 1 ] || fail "$label: exit code $st, not 1: [$(cat err.log)]"
    grep -qF -- "trevo: $img: truncated at byte offset 16: the header claims $claim bytes" err.log ||
        fail "$label: want the truncation in [$(cat err.log)]"
    [ $ms -lt 3000 ] || fail "$label: took $ms ms"
    if [ -n "$time_v" ]; then
        local kb
        kb=$(awk -F': *' '/Maximum resident set size/ { print $2 }' time.log)
        [ -n "$kb" ] || fail "$label: no peak RSS in [$(cat time.log)]"
        [ "$kb" -lt 102400 ] || fail "$label: peak RSS $kb KiB"
    fi
    [ ! -s out.log ] || fail "$label: printed [$(cat out.log)]"
}

header big 10000 1000 1000 # 10^10 bytes of pixels
labels big_l 10000 10000
refused "10 GB claim" big big_l 10000000016
gzip -c big >big.gz
refused "10 GB claim, gzipped" big.gz big_l 10000000016
header huge 4294967295 4294967295 1 # about 2^64
labels huge_l 4294967295 0
refused "2^64 claim" huge huge_l 18446744065119617041
gzip -c huge >huge.gz
gzip -c huge_l >huge_l.gz # (a plain labels file this short is refused first)
refused "2^64 claim, gzipped" huge.gz huge_l.gz 18446744065119617041
echo "it_idx_claims: ok"
