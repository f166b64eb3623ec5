#!/usr/bin/env bash
# A config or data error under mpirun ends every rank cleanly: exit status 1,
# trevo's one line on stderr (from rank 0 only), no MPI_ABORT banner, and no
# database written. Errors found by rank 0 before the farm starts (an unknown
# key, a training file that does not exist), at 2 and 3 ranks.
set -u
. "$(dirname "$0")/lib_it.sh"
it_tmpdir it_mpi_start_errors
it_mpi
cd "$dir"

# start_error NAME RANKS WANT: mpirun -n RANKS trevo run NAME.ini fails as above,
# its one line containing WANT
start_error() {
    local name=$1 ranks=$2 want=$3
    mpirun ${MPIRUN_ASAN:-} -n "$ranks" "$TREVO" run "$name.ini" --db "$name.db" >out 2>err
    local rc=$?
    [ $rc -eq 1 ] || fail "$name at $ranks ranks: exit $rc (wanted 1): $(cat err)"
    [ "$(grep -c '^trevo' err)" -eq 1 ] || fail "$name at $ranks ranks: not one trevo line: $(cat err)"
    grep -q "^trevo: .*$want" err || fail "$name at $ranks ranks: wanted '$want': $(cat err)"
    if grep -q 'MPI_ABORT' err; then fail "$name at $ranks ranks: Open MPI's abort banner: $(cat err)"; fi
    [ ! -e "$name.db" ] || fail "$name at $ranks ranks wrote $name.db"
}

printf '[run]\ntask = xor\n[evolve]\nbogus_key = 3\n' >badkey.ini
printf '[run]\ntask = classify\n[task]\ntrain = %s/missing.csv\n' "$dir" >nodata.ini
for ranks in 2 3; do
    start_error badkey $ranks "badkey.ini:4: bogus_key: unknown section \[evolve\]"
    start_error nodata $ranks "missing.csv: No such file or directory"
done
echo "ok: config and data errors under mpirun end every rank with status 1 and one line"
