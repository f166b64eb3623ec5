# tests/hosts/lib.sh -- the start run.sh and bench.sh share (sourced, not
# run; HERE is this folder, NETNS its netns.sh).

# hosts_need_netns SKIPPED WHAT: without root and `ip netns`, says SKIPPED,
# why, and that nothing was WHAT, and exits 77 (a skip); with them, lets Open
# MPI run as root (it refuses root without these) on more ranks than cores.
hosts_need_netns() {
    local rc=0
    "$NETNS" check || rc=$?
    if [ "$rc" != 0 ]; then
        echo "$1: needs root and ip netns (uid $(id -u)); nothing was $2"
        exit 77
    fi
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
}

# on HOST COMMAND...: runs COMMAND in host HOST's namespace (trevo-hHOST).
on() { local h=$1; shift; ip netns exec "trevo-h$h" "$@"; }
