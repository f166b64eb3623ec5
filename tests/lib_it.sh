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

# it_c_as_eval NET N_IN N_OUT ROWS: `trevo net export NET --format c` (a
# float or int8 network), compiled as strict C99 with a driver that runs each
# line of ROWS (N_IN comma-separated inputs) through trevo_net_predict and
# prints its N_OUT outputs as net eval does (an empty line resets: a new
# sequence), must print byte for byte what `trevo net eval NET <ROWS` prints.
it_c_as_eval() {
    local net=$1 n_in=$2 n_out=$3 rows=$4
    cat >"$net.driver.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
int trevo_net_predict(const float *in, float *out);
void trevo_net_reset(void);
int main(void)
{
    static char line[1 << 16];
    float in[N_IN], out[N_OUT];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == '\n') {
            trevo_net_reset();
            continue;
        }
        char *p = line;
        for (int k = 0; k < N_IN; k++) {
            in[k] = strtof(p, &p);
            p += *p == ',';
        }
        if (trevo_net_predict(in, out))
            return 1;
        for (int k = 0; k < N_OUT; k++)
            printf(k ? ",%.9g" : "%.9g", (double)out[k]);
        printf("\n");
    }
    return 0;
}
C
    "$TREVO" net export "$net" --format c -o "$net.c" || fail "export C of $net"
    ${CC:-cc} -std=c99 -pedantic -Wall -Wextra -Werror -O2 -DN_IN="$n_in" -DN_OUT="$n_out" \
        "$net.driver.c" "$net.c" -o "$net.drv" || fail "$net: the exported C does not compile"
    "$TREVO" net eval "$net" <"$rows" >"$net.want" || fail "net eval $net"
    local drv=$net.drv
    [ "${drv#/}" != "$drv" ] || drv=./$drv
    "$drv" <"$rows" >"$net.got" || fail "$net: the C program failed"
    cmp -s "$net.want" "$net.got" ||
        fail "$net: the C on $rows differs from net eval: $(diff "$net.want" "$net.got" | head -4)"
}
