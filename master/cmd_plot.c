/* cmd_plot.c -- `trevo plot` (being written: see issue 6). */
#include <stdio.h>

#include "cli.h"

int master_cmd_plot(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "trevo plot: not available yet\n");
    return 1;
}
