#!/usr/bin/env bash
# Evaluations per second and parallel efficiency of a search whose ranks are
# spread over 2 hosts and talk TCP, against the same ranks on one host over
# shared memory; each with batched messages (`[farm] batch = 0`, automatic)
# and with one child per message (`batch = 1`). Prints a markdown table.
#
#   tests/hosts/bench.sh [TASK]      (default spin; TREVO=build/trevo)
#   POP=200 GENS=10 REPS=3 RANKS="2 3" YIELD=1 tests/hosts/bench.sh spin
#
# evals/s is the search's own count over its own time (sum of n_evals over sum
# of wall_seconds of the generations table: mpirun start-up excluded); the
# best of REPS runs is kept, the repetitions interleaved. Efficiency = evals/s / (workers x evals/s of one
# process alone, no MPI). Needs root and `ip netns` (tests/hosts/netns.sh);
# otherwise prints SKIPPED and exits 77. Hosts: trevo-h1 (198.18.0.1, the
# master) and trevo-h2 (198.18.0.2); all on this machine's cores, so the
# numbers show the cost of the transport, not the gain of more machines.
#
# YIELD=1 (default) runs every MPI row with `--mca mpi_yield_when_idle 1`.
# The emulated hosts share the machine's cores, and each host's ranks poll as
# if they had cores of their own: measured here, an MPI ping-pong between the
# two namespaces took about 9.4 ms per round trip with polling ranks and 65 us
# with yielding ones (raw TCP between them: 40 us; shared memory: 1.0 us
# polling, 1.8-2.8 us yielding). Real hosts do not share cores; YIELD=0 shows
# the emulation's artefact.
set -eu

TASK=${1:-spin}
TREVO=$(realpath "${TREVO:-build/trevo}")
POP=${POP:-200}
GENS=${GENS:-10}
REPS=${REPS:-3}
RANKS=${RANKS:-2 3}
YIELD=${YIELD:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
NETNS="$HERE/netns.sh"
AGENT="$HERE/agent.sh"
SUBNET=198.18.0.0/24
[ -x "$TREVO" ] || { echo "bench.sh: $TREVO: not built (make, or set TREVO=)" >&2; exit 2; }

. "$HERE/lib.sh"
hosts_need_netns "bench.sh: SKIPPED" measured

exec 9>/tmp/trevo-hosts.lock
flock -w 600 9 || { echo "bench.sh: another run holds /tmp/trevo-hosts.lock" >&2; exit 1; }
dir=$(mktemp -d /tmp/trevo-hosts-bench.XXXXXX)
cleanup() { trap - EXIT INT TERM; "$NETNS" down || true; rm -rf "$dir"; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
"$NETNS" up 2
cd "$dir"

# shellcheck disable=SC2054 # "tcp,self" is one word
TCP=(--mca plm_rsh_agent "$AGENT" --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET"
    --mca oob_tcp_if_include "$SUBNET")
POLL=()
[ "$YIELD" = 0 ] || POLL=(--mca mpi_yield_when_idle 1)

config() { # BATCH -> bench-BATCH.ini
    cat >"bench-$1.ini" <<INI
[run]
task = $TASK
seed = 3
generations = $GENS
stop_on_solve = false
[population]
size = $POP
[farm]
batch = $1
[store]
db = unused.db
INI
}
config 0
config 1

rate() { # DB -> evaluations per second of search time
    sqlite3 "$1" "select printf('%.1f', sum(n_evals) / sum(wall_seconds)) from generations"
}
declare -A best
measure() { # KEY DB command... : one run of `command... --db DB`; keeps the best rate
    local key=$1 db=$2 r
    shift 2
    rm -f "$db"*
    "$@" --db "$db" --quiet >run.log 2>&1 || { cat run.log >&2; echo "bench.sh: run failed: $*" >&2; exit 1; }
    r=$(rate "$db")
    best[$key]=$(awk -v a="${best[$key]:-0}" -v b="$r" 'BEGIN{print (b > a) ? b : a}')
}
hostfile() { # N -> hosts-N: the master and half the ranks on host 1, the rest on host 2
    local h1=$((($1 + 1) / 2))
    printf '198.18.0.1 slots=%d\n198.18.0.2 slots=%d\n' "$h1" $(($1 - h1)) >"hosts-$1"
}
for n in $RANKS; do hostfile "$n"; done

# Repetitions outermost, so that the machine's changing load falls alike on
# every configuration and on the single-process baseline.
for rep in $(seq 1 "$REPS"); do
    echo "bench.sh: repetition $rep of $REPS" >&2
    measure base "$dir/base.db" timeout 600 "$TREVO" run bench-0.ini
    for n in $RANKS; do
        for b in 0 1; do
            measure "tcp-$n-$b" "$dir/t.db" on 1 timeout 600 mpirun --hostfile "$dir/hosts-$n" \
                -n "$n" "${TCP[@]}" "${POLL[@]}" "$TREVO" run "bench-$b.ini"
            measure "shm-$n-$b" "$dir/s.db" on 1 timeout 600 mpirun --host "198.18.0.1:$n" \
                -n "$n" "${POLL[@]}" "$TREVO" run "bench-$b.ini"
        done
    done
done

base=${best[base]}
rows=()
for n in $RANKS; do
    w=$((n - 1)) h1=$(((n + 1) / 2))
    plural=""
    [ "$w" = 1 ] || plural=s
    for b in 0 1; do
        label="auto (0)"
        [ "$b" = 0 ] || label="1 child"
        for kind in shm tcp; do
            r=${best[$kind-$n-$b]}
            where="1 host, shared memory"
            [ $kind = shm ] || where="2 hosts ($h1 + $((n - h1)) ranks), TCP"
            eff=$(awk -v r="$r" -v b="$base" -v w="$w" 'BEGIN{printf "%.0f %%", 100 * r / (w * b)}')
            rows+=("| $n (1 master, $w worker$plural) | $where | $label | $r | $eff |")
        done
    done
done

echo "Task \`$TASK\`, population $POP, $GENS generations, best of $REPS; $(nproc) cores;"
echo "one process alone (no MPI): $base evaluations/s; MPI ranks $([ "$YIELD" = 0 ] && echo poll || echo "yield when idle (mpi_yield_when_idle 1)")."
echo
echo "| ranks | placement | batch | evaluations/s | parallel efficiency |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
