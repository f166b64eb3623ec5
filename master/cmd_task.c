/* cmd_task.c -- `trevo task eval|list` (being written: see issue 6). */
#include <stdio.h>

#include "cli.h"

int master_cmd_task_eval(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "trevo task eval: not available yet\n");
    return 1;
}

int master_cmd_task_list(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "trevo task list: not available yet\n");
    return 1;
}
