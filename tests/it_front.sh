#!/usr/bin/env bash
# trevo front and trevo best within a device budget, on a short nsga2 search
# of a small classify CSV made here: the front's rows are the individuals no
# network with less flash beats on validation accuracy (checked against the
# database by SQL), `--csv` the same rows, `-o` a PNG; `best --max-flash B`
# writes the most accurate network within B, `--int8 --format c` its C file
# (within B, compiling, giving `net eval`'s outputs), `--id`; refusals name
# what was wrong and write nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
. "$here/lib_classify.sh"
it_tmpdir it_front
cd "$dir"

classify_csv train.csv 240 31
classify_front_ini front.ini "$dir/train.csv" 9 5
"$TREVO" run front.ini --db f.db --quiet 2>run.log || fail "run: $(tail -3 run.log)"
sq() { sqlite3 f.db "$@"; }

# the front, by flash: each row more accurate than every individual with less
# flash (the database's own figures), and every individual on it is there
"$TREVO" front f.db --csv >front.csv || fail "front --csv exited $?"
[ "$(head -1 front.csv)" = "id,generation,valid_acc,flash,ram,macs,connections,test,kept" ] ||
    fail "front --csv header: $(head -1 front.csv)"
n=$(($(wc -l <front.csv) - 1))
[ "$n" -ge 2 ] || fail "a front of $n rows: $(cat front.csv)"
want=$(sq "select i.id from individuals i where i.valid_acc is not null and i.flash is not null
           and not exists (select 1 from individuals j where j.valid_acc is not null
             and (j.flash < i.flash and j.valid_acc >= i.valid_acc
                  or j.flash = i.flash and (j.valid_acc > i.valid_acc
                      or j.valid_acc = i.valid_acc and j.id < i.id)))
           order by i.flash, i.id")
got=$(tail -n +2 front.csv | cut -d, -f1)
[ "$got" = "$want" ] || fail "front ids [$(echo $got)], the database's [$(echo $want)]"
while IFS=, read -r id gen acc flash ram macs conns test kept; do
    [ "$(sq "select printf('%.6f', valid_acc) || ',' || flash || ',' || ram || ',' || macs
             from individuals where id = $id")" = "$acc,$flash,$ram,$macs" ] ||
        fail "front row $id: $acc,$flash,$ram,$macs"
done < <(tail -n +2 front.csv)
"$TREVO" front f.db >front.txt || fail "front exited $?"
[ "$(($(wc -l <front.txt) - 1))" = "$n" ] || fail "the table and --csv differ: $(cat front.txt)"
"$TREVO" front f.db --generation 0 --csv >front0.csv || fail "front --generation 0"
[ "$(tail -n +2 front0.csv | cut -d, -f2 | sort -u)" = 0 ] ||
    fail "--generation 0 lists later individuals: $(cat front0.csv)"
if command -v gnuplot >/dev/null; then
    "$TREVO" front f.db -o front.png >/dev/null || fail "front -o exited $?"
    [ "$(head -c 4 front.png | tail -c 3)" = PNG ] || fail "front.png is not a PNG"
fi

# best within a budget: the most accurate kept network whose flash fits
small=$(tail -n +2 front.csv | head -1 | cut -d, -f4)
big=$(tail -n +2 front.csv | tail -1 | cut -d, -f4)
budget=$(((small + big) / 2))
pick=$(sq "select i.id from individuals i where i.flash <= $budget and i.valid_acc is not null
           and exists (select 1 from genomes g where g.run_id = i.run_id and g.id = i.id)
           order by i.valid_acc desc, i.flash, i.id limit 1")
"$TREVO" best f.db --max-flash "$budget" -o b.net 2>best.err || fail "best --max-flash: $(cat best.err)"
grep -q "individual $pick (" best.err || fail "best --max-flash wrote [$(cat best.err)], want $pick"
"$TREVO" best f.db --id "$pick" -o id.net 2>/dev/null || fail "best --id $pick exited $?"
cmp -s <(grep -v '^#' b.net) <(grep -v '^#' id.net) ||
    fail "best --max-flash and --id $pick wrote different networks"
"$TREVO" best f.db --max-flash "$budget" --int8 --format c -o b.c 2>bc.err ||
    fail "best --int8 --format c: $(cat bc.err)"
flash=$(sed -n 's/.*On a device: flash \([0-9]*\) bytes.*/\1/p' b.c)
[ -n "$flash" ] && [ "$flash" -le "$budget" ] || fail "the C file's flash '$flash' over $budget"
"$TREVO" best f.db --max-flash "$budget" --int8 -o b.q 2>/dev/null || fail "best --int8 -o b.q"
"$TREVO" net export b.q --format c -o b2.c 2>/dev/null || fail "net export b.q"
cmp -s b.c b2.c || fail "best --format c differs from net export of best --int8"
n_in=$(sed -n 's/^#define TREVO_NET_N_INPUTS //p' b.c)
cut -d, -f1-"$n_in" train.csv | head -50 >rows.csv
it_c_as_eval b.q "$n_in" "$(sed -n 's/^#define TREVO_NET_N_OUTPUTS //p' b.c)" rows.csv

# refusals: nothing written
out=$("$TREVO" best f.db --max-flash $((small - 1)) -o none.net 2>&1) && fail "a budget below all: 0"
grep -q "no network within the budget" <<<"$out" || fail "budget below all: $out"
[ ! -e none.net ] || fail "a file was written for an impossible budget"
out=$("$TREVO" best f.db --max-flash 10x 2>&1); [ $? = 1 ] && grep -q -- "--max-flash: expected" <<<"$out" ||
    fail "--max-flash 10x: $out"
out=$("$TREVO" best f.db --id 1 --max-flash 1000 2>&1); [ $? = 2 ] && grep -q -- "--id picks" <<<"$out" ||
    fail "--id with a budget: $out"
out=$("$TREVO" best f.db --format c 2>&1); [ $? = 2 ] && grep -q -- "give --int8" <<<"$out" ||
    fail "--format c without --int8: $out"
out=$("$TREVO" front f.db --generation 99 2>&1); [ $? = 1 ] && grep -q "generations 0..4" <<<"$out" ||
    fail "--generation 99: $out"
echo "it_front: ok"
