#!/usr/bin/env bash
# The fault matrix, short form (tests/faults/run.sh --short): kill -9 of
# mpirun and its ranks, a dead worker, SIGTERM/SIGINT/SIGUSR1, a full disk, a
# damaged or foreign database file, a second writer -- each must end cleanly
# or resume to exactly the uninterrupted run. `make test-faults` runs the full
# form (RELIABILITY.md, "Fault matrix").
set -eu
: "${TREVO:?}"
exec bash "$(dirname "$0")/faults/run.sh" --short "$TREVO"
