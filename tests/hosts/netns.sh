#!/usr/bin/env bash
# Test hosts as network namespaces on this machine (see tests/hosts/README.md).
#
#   tests/hosts/netns.sh up N     trevo-h0 holds a bridge; trevo-h1..trevo-hN are the
#                                 hosts, host i at 198.18.0.i/24 on its veth "v<i>"
#   tests/hosts/netns.sh down     kills every process left in a trevo-h* namespace and
#                                 deletes those namespaces
#   tests/hosts/netns.sh check    exit 0 if root with a working `ip netns`, else 77
#   tests/hosts/netns.sh list     the project's namespaces that exist
#
# Touches nothing but namespaces named trevo-h<digits> and addresses in
# 198.18.0.0/24 (the benchmarking range, RFC 2544: never a private or public
# range). The bridge and every veth end live inside those namespaces: the
# machine's own network namespace is not changed at all.
set -eu

PREFIX=trevo-h
SUBNET=198.18.0
MAX_HOSTS=8

die() { echo "netns.sh: $*" >&2; exit 1; }

# Our namespaces, and only ours.
ours() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}[0-9]+\$" || true; }

check() {
    [ "$(id -u)" = 0 ] || return 77
    command -v ip >/dev/null 2>&1 || return 77
    ip netns list >/dev/null 2>&1 || return 77
    # Creating one proves it (a container may forbid it even as root).
    local probe="${PREFIX}99"
    ip netns del "$probe" 2>/dev/null || true
    ip netns add "$probe" 2>/dev/null || return 77
    ip netns del "$probe" 2>/dev/null || true
    return 0
}

down() {
    local ns pids
    for ns in $(ours); do
        # Processes still running there are ours (launched by these tests):
        # a namespace outlives nothing, so they are killed first.
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        # shellcheck disable=SC2086 # one word per pid
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    done
    for ns in $(ours); do
        for _ in 1 2 3 4 5; do
            ip netns del "$ns" 2>/dev/null && break
            sleep 0.2
        done
    done
    [ -z "$(ours)" ] || die "could not delete: $(ours | tr '\n' ' ')"
}

up() {
    local n=$1 i
    case $n in '' | *[!0-9]*) die "up: expected a number of hosts, got '$n'" ;; esac
    if [ "$n" -lt 1 ] || [ "$n" -gt "$MAX_HOSTS" ]; then die "up: 1..$MAX_HOSTS hosts"; fi
    down # leftovers of an earlier run
    ip netns add "${PREFIX}0"
    ip -n "${PREFIX}0" link set lo up
    ip -n "${PREFIX}0" link add br0 type bridge
    ip -n "${PREFIX}0" link set br0 up
    for i in $(seq 1 "$n"); do
        local ns="${PREFIX}$i"
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        # v<i> inside host i, b<i> inside the bridge holder: nothing outside.
        ip -n "${PREFIX}0" link add "b$i" type veth peer name "v$i" netns "$ns"
        ip -n "${PREFIX}0" link set "b$i" master br0
        ip -n "${PREFIX}0" link set "b$i" up
        ip -n "$ns" addr add "$SUBNET.$i/24" dev "v$i"
        ip -n "$ns" link set "v$i" up
    done
    # Wait until every host reaches every other (bridge ports start forwarding).
    for i in $(seq 1 "$n"); do
        local j ok=0 rc
        for j in $(seq 1 "$n"); do
            [ "$i" = "$j" ] && continue
            # No ping needed: a TCP connect to a closed port is answered by a
            # reset at once ("refused", status 1) when the peer is reachable,
            # and times out (status 124) when it is not.
            for _ in $(seq 1 20); do
                rc=0
                ip netns exec "${PREFIX}$i" timeout 1 bash -c ": </dev/tcp/$SUBNET.$j/9" \
                    2>/dev/null || rc=$?
                if [ "$rc" = 1 ]; then ok=1; break; fi
                sleep 0.1
            done
            [ "$ok" = 1 ] || die "host $i cannot reach $SUBNET.$j"
        done
    done
}

case "${1:-}" in
up) up "${2:-}" ;;
down) down ;;
check) check ;;
list) ours ;;
*) echo "usage: $0 up N | down | check | list" >&2; exit 2 ;;
esac
