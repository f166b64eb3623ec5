/* main.c -- the trevo program. All of it is in cli_main(); this file only
 * decides how the process ends. */
#include "cli.h"

#include <signal.h>

int main(int argc, char **argv)
{
    /* Past a file-size limit (ulimit -f, RLIMIT_FSIZE) the kernel sends
     * SIGXFSZ, whose default action kills the process mid-commit. Ignored,
     * the write fails with EFBIG instead, which the store reports like a
     * full disk (TV_ENOSPACE: a clear message, what was committed intact). */
    signal(SIGXFSZ, SIG_IGN);
    return cli_main(argc, argv);
}
