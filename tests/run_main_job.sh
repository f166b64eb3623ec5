#!/usr/bin/env bash
# The main job: the XOR experiment under mpirun on this machine (a master and
# as many workers as there are cores), into xor.db.
set -eu
trevo=$(realpath "$1")
cd "$(dirname "$0")/.."
np=$(( $(nproc) + 1 ))
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -f xor.db xor.db-wal xor.db-shm
echo "\$ mpirun --oversubscribe -n $np trevo run experiments/xor.ini"
mpirun --oversubscribe -n "$np" "$trevo" run experiments/xor.ini
cat <<TXT

The whole history is in $(pwd)/xor.db. Try:
  sqlite3 -header -column xor.db 'select * from v_progress'
  sqlite3 -header -column xor.db 'select * from v_champions order by generation desc limit 5'
  $trevo best xor.db
TXT
