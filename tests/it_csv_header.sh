#!/usr/bin/env bash
# CSV headers and what a bad data file says, through the real binary:
# scikit-learn's first line ("569,30,malignant,benign": numbers and words) is
# a header under --header auto (the default) in net train, net test and
# net quantize --calibrate and under [task] header in a classify run; --header
# yes skips a first line of numbers, --header no reads a header as data; a
# label that is not a whole number says so; a label past the classes (the
# network's outputs, [task] classes, the training file's) names the file and
# line; a truncated or damaged .gz says "corrupt gzip data at byte N".
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
it_tmpdir it_csv_header
cd "$dir"

expect() { # EXIT MESSAGE-PART COMMAND...
    local want=$1 part=$2; shift 2
    "$TREVO" "$@" >out 2>err; local rc=$?
    [ $rc -eq "$want" ] || fail "$*: exit $rc, want $want ($(cat err))"
    grep -qF -- "$part" err || fail "$*: message '$(cat err)' lacks '$part'"
}

# ---- data: 2 features, class 1 when x0 > x1, scikit-learn's kind of header --
rows() { # N SEED
    awk -v n="$1" -v s="$2" 'BEGIN {
        for (i = 0; i < n; i++) {
            s = (s * 16807) % 2147483647; a = s / 2147483647
            s = (s * 16807) % 2147483647; b = s / 2147483647
            printf "%.4f,%.4f,%d\n", a, b, (a > b) }
    }'
}
{ echo "200,2,below,above"; rows 200 7; } >sk.csv
rows 200 7 >plain.csv
"$TREVO" net init --layers 2,8,2 --density 1 --seed 1 -o a.net >/dev/null || fail "net init"

# net train and net test read the header as one: the same as the plain file
"$TREVO" net train a.net --data sk.csv --epochs 2 --lr 0.1 -o sk.net >sk.out ||
    fail "net train on a scikit-learn header: $(cat sk.out)"
"$TREVO" net train a.net --data plain.csv --epochs 2 --lr 0.1 -o plain.net >/dev/null ||
    fail "net train plain"
cmp -s sk.net plain.net || fail "the header changed the training"
t1=$("$TREVO" net test sk.net --data sk.csv) || fail "net test sk.csv"
t2=$("$TREVO" net test sk.net --data plain.csv --header auto) || fail "net test plain.csv"
[ "$t1" = "$t2" ] || fail "net test: [$t1] vs [$t2]"
echo "$t1" | grep -q "(.* of 200)" || fail "net test: not 200 rows: $t1"
# --header no: the header is data, refused at its word; yes: a first line of
# numbers is skipped
expect 1 "sk.csv:1: column 3: 'below' is not a number" net test sk.net --data sk.csv --header no
"$TREVO" net test sk.net --data plain.csv --header yes | grep -q "(.* of 199)" ||
    fail "--header yes did not skip the first row"
expect 2 "--header: expected auto, yes or no, got 'maybe'" net test sk.net --data sk.csv \
    --header maybe
expect 2 "--header: expected auto, yes or no, got 'on'" net train a.net --data sk.csv \
    --header on -o x.net
# --calibrate reads it the same way
"$TREVO" net quantize sk.net --calibrate sk.csv -o a.q 2>/dev/null || fail "quantize sk.csv"
"$TREVO" net quantize sk.net --calibrate plain.csv -o b.q 2>/dev/null || fail "quantize plain"
cmp -s a.q b.q || fail "quantize: the header changed the calibration"
expect 1 "sk.csv:1: column 3: 'below' is not a number" net quantize sk.net --calibrate sk.csv \
    --header no -o c.q

# ---- labels: not a whole number, past the network's outputs ------------------
{ echo "x0,x1,y"; echo "0.1,0.2,1"; echo "0.3,0.4,0.5"; } >half.csv
expect 1 "half.csv:3: label 0.5 is not a whole number" net test sk.net --data half.csv
{ echo "x0,x1,y"; echo "0.1,0.2,1"; echo "0.3,0.4,4"; } >four.csv
expect 1 "four.csv:3: label 4 out of range (a class number 0..1: the network has 2 outputs)" \
    net train a.net --data four.csv -o x.net
expect 1 "four.csv:3: label 4 out of range (a class number 0..1: the network has 2 outputs)" \
    net test sk.net --data four.csv

# ---- gzip: truncated and damaged ------------------------------------------------
gzip -c sk.csv >sk.csv.gz
"$TREVO" net test sk.net --data sk.csv.gz | grep -q "(.* of 200)" || fail "gzipped sk.csv"
size=$(wc -c <sk.csv.gz)
head -c $((size / 2)) sk.csv.gz >cut.csv.gz
expect 1 "cut.csv.gz: corrupt gzip data at byte $((size / 2)) (unexpected end of file)" \
    net test sk.net --data cut.csv.gz
head -c 15 sk.csv.gz >tiny.csv.gz # ends in the gzip header: was "no data rows"
expect 1 "tiny.csv.gz: corrupt gzip data at byte 15" net test sk.net --data tiny.csv.gz
perl -e 'local $/; my $d = <STDIN>; substr($d, 30, 20) ^= "\x5a" x 20; print $d' \
    <sk.csv.gz >bad.csv.gz
expect 1 "bad.csv.gz: corrupt gzip data at byte" net test sk.net --data bad.csv.gz

# ---- classify: [task] header and classes ----------------------------------------
cat >h.ini <<INI
[run]
task = classify
generations = 2
[population]
size = 10
[task]
train = $dir/sk.csv
samples = 20
[store]
db = unused.db
INI
"$TREVO" run h.ini --db h.db --quiet 2>h.log || fail "classify on a header: $(cat h.log)"
run_refused() { # WANT KEY=VALUE
    sed "/^\[task\]/a ${2%%=*} = ${2#*=}" h.ini >bad.ini
    "$TREVO" run bad.ini --db bad.db >bad.log 2>&1 && fail "$2: accepted"
    grep -qF -- "$1" bad.log || fail "$2: want [$1] in [$(cat bad.log)]"
    [ ! -e bad.db ] || fail "$2: a database was created"
}
run_refused "[task] train: $dir/sk.csv:1: column 3: 'below' is not a number" "header=no"
run_refused "header: expected one of auto, yes, no, got 'maybe'" "header=maybe"
{ echo "0.1,0.2,0"; echo "0.3,0.4,2"; echo "0.5,0.1,1"; } >three.csv
sed -e "s|^train = .*|train = $dir/three.csv|" h.ini >c.ini
sed "/^\[task\]/a classes = 2" c.ini >bad.ini
"$TREVO" run bad.ini --db bad.db >bad.log 2>&1 && fail "classes = 2: accepted"
grep -qF "[task] train: $dir/three.csv:2: label 2 out of range (a class number 0..1: [task] classes = 2)" \
    bad.log || fail "classes = 2: $(cat bad.log)"
[ ! -e bad.db ] || fail "classes = 2: a database was created"
echo "it_csv_header: ok"
