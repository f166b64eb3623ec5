/* cmd_nn.c -- `trevo net eval` and `trevo net bench`: the sparse engine from
 * the command line. Placeholder until nn/ lands. */
#include "cli.h"

#include <stdio.h>

int master_cmd_net_eval(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "trevo %s: not built yet\n", argv[0]);
    return 1;
}

int master_cmd_net_bench(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "trevo %s: not built yet\n", argv[0]);
    return 1;
}
