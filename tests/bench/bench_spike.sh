#!/usr/bin/env bash
# bench_spike.sh -- the CUBA network (issue 19) on trevo's event-driven
# spiking engine against Brian2's cpp_standalone target on the same network,
# initial state and dt, as a markdown section on stdout for tests/bench/run.sh.
# Without Brian2 (Debian python3-brian) it times trevo alone and says so.
# usage: TREVO=build/trevo tests/bench/bench_spike.sh
set -eu
trevo=$(realpath "${TREVO:-build/trevo}")
cd "$(dirname "$0")/../.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$trevo" net bench --cuba --seconds "${CUBA_SECONDS:-1}" >"$out" 2>/dev/null
echo "### CUBA: event-driven spiking engine against Brian2"
echo
echo "\`trevo net bench --cuba --seconds ${CUBA_SECONDS:-1}\` (load average at the start:"
echo "$(cut -d' ' -f1-3 /proc/loadavg)):"
echo
echo '```'
cat "$out"
echo '```'
echo
echo "### Frustum tiles against layer by layer"
echo
echo "\`trevo net bench --spike-layers 8,131072,16 --steps 96\` (load average at the start:"
echo "$(cut -d' ' -f1-3 /proc/loadavg)):"
echo
echo '```'
"$trevo" net bench --spike-layers 8,131072,16 --steps 96
echo '```'
