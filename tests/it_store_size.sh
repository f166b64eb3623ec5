#!/usr/bin/env bash
# The default genome retention ([store] genomes = elite) keeps a database
# small: a 100-generation classify search (population 150) on a digits-like
# CSV (64 features, 10 classes, 300 rows) stays under 25 MB, keeps a row for
# every individual and the genome of every champion, every elite and the
# last population -- and no other; `genomes = all` is larger and has the
# same rows and statistics; a run killed with kill -9 and resumed ends as
# the uninterrupted one.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib_it.sh"
it_tmpdir it_store_size
cd "$dir"

# 300 rows of 64 pixels 0..15, class k brightens every pixel j with j % 10 = k
awk -v n=300 'BEGIN { srand(3)
    for (i = 0; i < n; i++) { k = i % 10
        for (j = 0; j < 64; j++) printf "%d,", int(rand() * 8) + (j % 10 == k ? 8 : 0)
        print k } }' >digits.csv

config() { # DB [GENOMES]
    cat <<EOF
[run]
task = classify
seed = 7
generations = 100
stop_on_solve = false
[population]
size = 150
[task]
train = $dir/digits.csv
validation = 0.2
samples = 64
scale = zscore
[store]
db = $dir/$1
EOF
    [ -z "${2:-}" ] || echo "genomes = $2"
}
config def.db >def.ini
config all.db all >all.ini
config kill.db >kill.ini

start=$(date +%s)
"$TREVO" run def.ini --quiet 2>def.log || { cat def.log; fail "the run with the default retention"; }
echo "default run: $(( $(date +%s) - start )) s"
"$TREVO" run all.ini --quiet 2>all.log || { cat all.log; fail "the run with genomes = all"; }

def_bytes=$(stat -c %s def.db)
all_bytes=$(stat -c %s all.db)
echo "database: $def_bytes bytes by default, $all_bytes with genomes = all"
[ "$def_bytes" -lt $((25 * 1000 * 1000)) ] || fail "default database of $def_bytes bytes, not under 25 MB"
[ "$all_bytes" -gt "$def_bytes" ] || fail "genomes = all ($all_bytes bytes) is not larger than the default"
[ "$(sqlite3 def.db "SELECT count(*) FROM checkpoints")" = 1 ] || fail "older checkpoints kept"

rows() { sqlite3 "$1" "SELECT id, generation, fitness, parent1, parent2, op, species, n_neurons,
                         n_conns, n_skip, n_recurrent, solved FROM individuals ORDER BY id;
                       SELECT generation, best, mean, median, champion, n_species, n_evals, solved,
                         champion_test FROM generations ORDER BY generation"; }
rows def.db >def_rows.txt
rows all.db >all_rows.txt
[ "$(wc -l <def_rows.txt)" -gt 10000 ] || fail "only $(wc -l <def_rows.txt) rows"
cmp -s def_rows.txt all_rows.txt || fail "the rows differ from genomes = all's"

# The genomes the default must keep, from genomes = all's checkpoints (it
# keeps one per generation): every champion, the last population, and every
# elite (a member of generation G's population evaluated before G).
sqlite3 all.db "SELECT generation, hex(population) FROM checkpoints ORDER BY generation" |
    perl -ne 'my ($g, $h) = split /\|/; chomp $h;
        print "$g $_\n" for unpack("q<*", pack("H*", $h))' >pops.txt
sqlite3 all.db "SELECT id, generation FROM individuals" | tr '|' ' ' >gens.txt
last=$(sqlite3 all.db "SELECT max(generation) FROM checkpoints")
awk -v last="$last" 'NR == FNR { gen[$1] = $2; next }
    $1 == last || gen[$2] < $1 { print $2 }' gens.txt pops.txt >want.txt
sqlite3 all.db "SELECT champion FROM generations" >>want.txt
sort -nu want.txt >want_sorted.txt
sqlite3 def.db "SELECT id FROM genomes ORDER BY id" >kept.txt
n_elite=$(awk -v last="$last" 'NR == FNR { gen[$1] = $2; next } gen[$2] < $1 { print $2 }' \
    gens.txt pops.txt | sort -u | wc -l)
[ "$n_elite" -gt 0 ] || fail "the run carried no elite over (the test checks nothing)"
cmp -s want_sorted.txt kept.txt ||
    { diff want_sorted.txt kept.txt | head; fail "the genomes kept are not the champions, elites and last population"; }
echo "kept $(wc -l <kept.txt) genomes ($n_elite distinct elites) of $(sqlite3 def.db "SELECT count(*) FROM individuals")"
sqlite3 def.db "SELECT id, hex(data) FROM genomes ORDER BY id" >def_genomes.txt
sqlite3 all.db "SELECT id, hex(data) FROM genomes WHERE id IN ($(paste -sd, kept.txt)) ORDER BY id" \
    >all_genomes.txt
cmp -s def_genomes.txt all_genomes.txt || fail "a kept genome differs from genomes = all's"

# kill -9 in the middle, then resume: the same database as the uninterrupted run
"$TREVO" run kill.ini --quiet 2>kill.log &
pid=$!
for _ in $(seq 1200); do
    [ "$(sqlite3 kill.db "SELECT coalesce(max(generation), -1) FROM generations" 2>/dev/null ||
        echo -1)" -ge 30 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
closed=$(sqlite3 kill.db "SELECT max(generation) FROM generations")
[ "$closed" -lt 99 ] || fail "the run ended before it could be killed"
"$TREVO" resume kill.db --quiet 2>>kill.log || { cat kill.log; fail "resume after kill -9"; }
dump() { rows "$1"; sqlite3 "$1" "SELECT id, hex(data) FROM genomes ORDER BY id;
                                  SELECT generation, hex(state), hex(population) FROM checkpoints"; }
dump def.db >a.txt
dump kill.db >b.txt
cmp -s a.txt b.txt || { diff a.txt b.txt | head -5; fail "killed at generation $closed and resumed differs"; }
echo "killed after generation $closed, resumed: identical"
"$TREVO" best def.db -o best.net || fail "trevo best on the default database"
echo "it_store_size: ok"
