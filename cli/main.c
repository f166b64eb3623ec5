/* main.c -- the trevo program: the table of every command, the dispatch of
 * `trevo CMD [SUB] args...` to it, and how the process ends. Adding a command:
 * its function in a cmd_*.c file (declared in cli.h), one row in commands[]
 * below. The commands call the library and the helpers of args.c and
 * files.c; nothing calls back into this file. */
#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "commit.h"  /* TREVO_COMMIT (the build's git commit, or "") */
#include "version.h" /* TREVO_VERSION */

struct command {
    const char *group; /* NULL for a top-level command */
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static int version(int argc, char **argv);

/* Every command, in the order --help lists them. Adding one touches only
 * this table (and the file that implements it). */
static const struct command commands[] = {
    {NULL, "run", cli_cmd_run, "CONFIG: run an experiment (under mpirun or alone)"},
    {NULL, "resume", cli_cmd_resume, "DB: continue a stopped or killed run"},
    {NULL, "status", cli_cmd_status, "DB: the runs in a database"},
    {NULL, "best", cli_cmd_best, "DB: write the champion network"},
    {NULL, "plot", cli_cmd_plot, "DB -o FILE.png: fitness and complexity per generation"},
    {NULL, "front", cli_cmd_front,
     "DB: the accuracy-flash front (the best network per device size)"},
    {NULL, "version", version, "the version (and the git commit it was built from)"},
    {"task", "eval", cli_cmd_task_eval, "TASK NET: evaluate one network on a task"},
    {"task", "list", cli_cmd_task_list, "the registered tasks"},
    {"task", "new", cli_cmd_task_new, "NAME [DIR]: write a task plugin to start from"},
    {"net", "import", cli_cmd_net_import, "FILE.txt -o NET: text network to msgpack"},
    {"net", "export", cli_cmd_net_export, "NET [--format text|msgpack|dot|c] [-o FILE]"},
    {"net", "validate", cli_cmd_net_validate, "NET: check a network file, print its sizes"},
    {"net", "eval", cli_cmd_net_eval, "NET: run input rows from stdin through the network"},
    {"net", "bench", cli_cmd_net_bench, "sparse engine vs dense OpenBLAS on a random layer"},
    {"net", "quantize", cli_cmd_net_quantize, "NET --calibrate DATA|task:NAME -o NET.q: int8"},

    {"net", "init", cli_cmd_net_init, "--layers ... --density D -o NET: a sparse random start"},
    {"net", "train", cli_cmd_net_train, "NET --data DATA -o OUT: train on a data set"},
    {"net", "test", cli_cmd_net_test, "NET --data DATA: accuracy on a data set"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: trevo COMMAND [ARGS]\n\n"
               "trevo evolves sparse neural networks (triplet chromosomes) with an\n"
               "MPI master/worker search and keeps the whole history in SQLite.\n\n"
               "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s%s", commands[i].group ? commands[i].group : "",
                 commands[i].group ? " " : "", commands[i].name);
        fprintf(f, "  %-14s %s\n", name, commands[i].summary);
    }
    fprintf(f, "\n`trevo COMMAND --help` describes one command.\n");
}

/* `trevo version`, `trevo --version`: the version, and the git commit of a
 * build from a checkout. */
static int version(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        return cli_refuse_arg("version", argv[1], "usage: trevo version\n");
    printf("trevo %s%s%s%s\n", TREVO_VERSION, *TREVO_COMMIT ? " (commit " : "", TREVO_COMMIT,
           *TREVO_COMMIT ? ")" : "");
    return 0;
}

static int cli_dispatch(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version"))
        return version(argc - 1, argv + 1);
    int known_group = 0;
    for (size_t i = 0; i < N_COMMANDS; i++) {
        const struct command *c = &commands[i];
        if (!c->group) {
            if (!strcmp(argv[1], c->name))
                return c->fn(argc - 1, argv + 1);
            continue;
        }
        if (strcmp(argv[1], c->group))
            continue;
        known_group = 1;
        if (argc >= 3 && !strcmp(argv[2], c->name))
            return c->fn(argc - 2, argv + 2);
    }
    if (known_group) {
        fprintf(stderr, "trevo %s: expected one of:", argv[1]);
        for (size_t i = 0; i < N_COMMANDS; i++)
            if (commands[i].group && !strcmp(commands[i].group, argv[1]))
                fprintf(stderr, " %s", commands[i].name);
        fprintf(stderr, "\n");
        return 2;
    }
    fprintf(stderr, "trevo: unknown command '%s' (try trevo --help)\n", argv[1]);
    return 2;
}

int main(int argc, char **argv)
{
    /* Past a file-size limit (ulimit -f, RLIMIT_FSIZE) the kernel sends
     * SIGXFSZ, whose default action kills the process mid-commit. Ignored,
     * the write fails with EFBIG instead, which the store reports like a
     * full disk (TV_ENOSPACE: a clear message, what was committed intact). */
    signal(SIGXFSZ, SIG_IGN);
    return cli_dispatch(argc, argv);
}
