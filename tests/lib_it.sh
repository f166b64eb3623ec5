# tests/lib_it.sh -- the start the integration tests share (sourced, not run):
# TREVO must name the binary under test; fail ends the test; it_tmpdir makes
# the test's temporary directory; it_mpi lets Open MPI run here.

: "${TREVO:?TREVO must name the trevo binary}"

# fail MESSAGE: the test fails, saying why.
fail() { echo "FAIL: $*"; exit 1; }

# it_tmpdir NAME: a new temporary directory in $dir, removed on exit unless
# KEEP is set (then NAME says where it is kept).
it_tmpdir() {
    dir=$(mktemp -d)
    trap '[ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
    [ -z "${KEEP:-}" ] || echo "$1: keeping $dir"
}

# it_mpi: Open MPI refuses root without these, and more ranks than cores.
it_mpi() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
}
