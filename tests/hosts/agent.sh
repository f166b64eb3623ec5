#!/bin/sh
# rsh agent for Open MPI over the test hosts of tests/hosts/netns.sh: mpirun
# calls it as it would call ssh, `agent.sh [options] HOST command...`, to start
# its daemon (orted) on HOST. It skips the options, maps HOST to its namespace
# (198.18.0.<i> or trevo-h<i> -> trevo-h<i>) and runs the command there with
# a shell, as sshd would. Any other host is refused.
# Use: mpirun --mca plm_rsh_agent /path/to/tests/hosts/agent.sh ...
set -eu
while [ $# -gt 0 ]; do
    case $1 in
    -*) shift ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "agent.sh: usage: agent.sh [options] HOST command..." >&2; exit 255; }
host=$1
shift
case $host in
198.18.0.[0-9] | 198.18.0.[0-9][0-9] | 198.18.0.[0-9][0-9][0-9]) ns=trevo-h${host##*.} ;;
trevo-h[0-9] | trevo-h[0-9][0-9]) ns=$host ;;
*) echo "agent.sh: $host is not a test host (198.18.0.<i> or trevo-h<i>)" >&2; exit 255 ;;
esac
ip netns list | grep -q "^$ns\\b" || { echo "agent.sh: no namespace $ns for host $host" >&2; exit 255; }
# Like ssh: the words are joined with spaces and read again by a shell there.
exec ip netns exec "$ns" /bin/sh -c "$*"
