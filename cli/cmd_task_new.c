/* cmd_task_new.c -- `trevo task new NAME [DIR]`: writes a task plugin to
 * start from (docs/plugins.md): NAME.c, a complete, commented fitness
 * function (N-bit parity) exported as a plugin; NAME.ini, a config that runs
 * it; a Makefile that builds libNAME.so with `pkg-config --cflags trevo`.
 * The templates are below, one string per line, "@NAME@" standing for the
 * name; tests/it_plugin.sh builds and runs what they make. No existing file
 * is ever overwritten. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* NAME.c: the task, N-bit parity */
static const char *const template_c[] = {
    "/* @NAME@.c -- a trevo task plugin, written by `trevo task new @NAME@`: the",
    " * fitness function networks are evolved for. Start here and make it yours.",
    " *",
    " * As written it is N-bit parity: the network sees `bits` inputs of 0 or 1",
    " * and must answer, on its one output, 1 when an odd number of them are 1 and",
    " * 0 otherwise. Each of the 2^bits patterns is shown once; the fitness is",
    " * 2^bits minus the summed squared error, so a perfect network scores 2^bits.",
    " *",
    " * How trevo uses this file: `make` builds lib@NAME@.so; `task =",
    " * ./lib@NAME@.so` in @NAME@.ini makes every rank load it and call the task it",
    " * exports (TASK_PLUGIN_EXPORT, at the end): open() once per process with the",
    " * [task] values, evaluate() for every child of every generation. The run",
    " * stores the plugin's SHA-256: rebuilt differently, it is a new fitness",
    " * function, and `trevo resume` refuses it unless told to accept it.",
    " * trevo's docs/plugins.md says the rest.",
    " */",
    "#include <stddef.h>",
    "#include <stdint.h>",
    "#include <stdlib.h>",
    "",
    "#include <trevo/plugin.h> /* struct task_kind, TASK_PLUGIN_EXPORT; nn.h, genome.h, tv.h */",
    "",
    "/* The largest `bits` (2^10 = 1024 patterns, one batch). */",
    "#define MAX_BITS 10",
    "/* The target for an odd number of ones; an even number wants 1 - this. */",
    "#define ODD_TARGET 1.0",
    "",
    "/* The keys of @NAME@.ini's [task] section. trevo refuses a key not listed",
    " * here or a value of the wrong type or out of range, with its FILE:LINE,",
    " * before the run starts; open() finds the values in t->params.v[i], i the",
    " * key's index in this table (.i for ints and bools, .d for doubles). */",
    "static const struct task_key keys[] = {",
    "    {.name = \"bits\",",
    "     .type = TASK_KEY_INT,",
    "     .def = 3,",
    "     .min = 1,",
    "     .max = MAX_BITS,",
    "     .doc = \"inputs of the parity function (2^bits patterns)\"},",
    "};",
    "",
    "/* What open() prepares once, for every evaluation: the patterns. */",
    "struct parity {",
    "    size_t bits, n;                       /* inputs, patterns (2^bits) */",
    "    float in[(1 << MAX_BITS) * MAX_BITS]; /* [n][bits]: pattern p's bit b is bit b of p */",
    "    float target[1 << MAX_BITS];          /* [n] */",
    "};",
    "",
    "/* Called once per process (on every rank) before any evaluation: reads the",
    " * [task] values, declares the network's shape, and loads or builds whatever",
    " * the evaluations share into t->data (close() frees it). Returns 0, or a",
    " * TV_E* code with a message in err (tv_error_set) naming what is wrong. */",
    "static int open_task(struct task_instance *t, struct tv_error *err)",
    "{",
    "    struct parity *d = calloc(1, sizeof *d);",
    "    if (!d)",
    "        return tv_error_set(err, TV_ENOMEM, \"out of memory\");",
    "    d->bits = (size_t)t->params.v[0].i;",
    "    d->n = (size_t)1 << d->bits;",
    "    for (size_t p = 0; p < d->n; p++) {",
    "        int ones = 0;",
    "        for (size_t b = 0; b < d->bits; b++) {",
    "            d->in[p * d->bits + b] = (float)((p >> b) & 1);",
    "            ones += (int)((p >> b) & 1);",
    "        }",
    "        d->target[p] = (float)(ones % 2 ? ODD_TARGET : 1 - ODD_TARGET);",
    "    }",
    "    t->data = d;",
    "    t->n_inputs = d->bits; /* a network has exactly these inputs and outputs */",
    "    t->n_outputs = 1;",
    "    t->out_act = GENOME_ACT_NEAT_SIGMOID; /* of the outputs, in generation 0 */",
    "    t->max_fitness = (double)d->n;        /* the best fitness possible, for reports */",
    "    return 0;",
    "}",
    "",
    "/* Called for every child, on whichever rank evaluates it: runs the compiled",
    " * network `plan` and fills *out (fitness, solved, a few named figures). It",
    " * must be a pure function of the network, the [task] values and `rng` (the",
    " * only randomness allowed: seeded from the child), so that a run repeats",
    " * exactly, alone or under mpirun, and resumes exactly. */",
    "static int evaluate_task(const struct task_instance *t, const struct nn_plan *plan,",
    "                         struct tv_rng *rng, struct task_result *out, struct tv_error *err)",
    "{",
    "    (void)rng; /* parity needs no randomness: see tv.h for tv_rng_uniform() and",
    "                  others */",
    "    const struct parity *d = t->data;",
    "    /* Every pattern at once: a state for a batch of n samples, one time step",
    "     * from zero (nn.h: nn_step reads [batch][inputs], writes [batch][outputs]).",
    "     */",
    "    struct nn_state *s;",
    "    int rc = nn_state_new(plan, d->n, &s, err);",
    "    if (rc)",
    "        return rc;",
    "    float y[1 << MAX_BITS];",
    "    nn_step(s, d->in, y);",
    "    nn_state_free(s);",
    "    double sse = 0;",
    "    size_t right = 0;",
    "    for (size_t p = 0; p < d->n; p++) {",
    "        double e = (double)y[p] - d->target[p];",
    "        sse += e * e;",
    "        right += (y[p] >= 0.5f) == (d->target[p] >= 0.5f);",
    "    }",
    "    out->fitness = (double)d->n - sse;",
    "    out->solved = right == d->n;                     /* every pattern on the right side of "
    "0.5 */",
    "    task_result_figure(out, \"right\", (double)right); /* shown by `trevo task eval` */",
    "    return 0;",
    "}",
    "",
    "/* Called once per process at the end: frees what open() made. */",
    "static void close_task(struct task_instance *t)",
    "{",
    "    free(t->data);",
    "}",
    "",
    "/* The task: the row trevo reads. Its name is the run's default name. */",
    "static const struct task_kind task = {",
    "    .abi_version = TASK_ABI_VERSION,",
    "    .name = \"@NAME@\",",
    "    .summary = \"N-bit parity: bits inputs, 1 output, fitness 2^bits - squared error\",",
    "    .keys = keys,",
    "    .n_keys = sizeof keys / sizeof keys[0],",
    "    .open = open_task,",
    "    .evaluate = evaluate_task,",
    "    .close = close_task,",
    "};",
    "",
    "/* The one symbol trevo looks for. */",
    "TASK_PLUGIN_EXPORT(task)",
    NULL,
};

/* NAME.ini: a config that runs it */
static const char *const template_ini[] = {
    "; @NAME@.ini -- evolves networks for the task plugin lib@NAME@.so (@NAME@.c).",
    ";   make && trevo run @NAME@.ini               alone",
    ";   make && mpirun -n 3 trevo run @NAME@.ini   rank 0 the master, 2 workers",
    ";   trevo best @NAME@.db                       the champion network",
    "; `trevo run --help-config` lists every key with its default.",
    "",
    "[run]",
    "; a file (with a '/' or ending in .so) is a plugin, loaded by every rank;",
    "; a relative path is relative to the directory trevo runs in",
    "task = ./lib@NAME@.so",
    "seed = 1",
    "generations = 300",
    "",
    "[population]",
    "size = 150",
    "",
    "[speciation]",
    "c_weight = 0.4",
    "",
    "[genome]",
    "hidden_act = neat_sigmoid",
    "weight_perturb_rate = 0.8",
    "weight_perturb_sd = 1.5",
    "weight_replace_rate = 0.1",
    "; structural mutations, the chance per child of each:",
    ";   add_local_rate      a connection to the next layer",
    ";   add_skip_rate       a connection across layers",
    ";   add_recurrent_rate  a connection that reads the last time step: memory.",
    ";                       A task whose answer depends on earlier steps of a",
    ";                       sequence (evaluate() steps the network over time)",
    ";                       needs it; 0 evolves feed-forward networks only",
    ";   add_neuron_rate     a neuron splitting a connection",
    ";   del_conn_rate, del_neuron_rate   removals",
    "add_local_rate = 0.3",
    "add_skip_rate = 0.1",
    "add_recurrent_rate = 0.05",
    "add_neuron_rate = 0.03",
    "del_conn_rate = 0.05",
    "del_neuron_rate = 0.01",
    "",
    "[store]",
    "db = @NAME@.db",
    "",
    "[task]",
    "; the keys @NAME@.c declares in its table `keys`",
    "bits = 3",
    NULL,
};

/* Makefile: builds libNAME.so with pkg-config trevo */
static const char *const template_make[] = {
    "# Makefile -- builds lib@NAME@.so, the task plugin @NAME@.ini names, against",
    "# an installed trevo: its compiler flags come from `pkg-config --cflags",
    "# trevo` (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for a trevo installed under",
    "# PREFIX), or give them: make TREVO_CFLAGS=-IDIR (DIR holding trevo/plugin.h).",
    "#",
    "#   make        build lib@NAME@.so",
    "#   make run    build it, then evolve: trevo run @NAME@.ini",
    "#   make clean  remove lib@NAME@.so",
    "#",
    "# The plugin links against nothing: the trevo executable that loads it",
    "# provides the nn_*, genome_*, tv_*, task_* and data_* functions it calls.",
    "# -ffp-contract=off: no fused multiply-add, so that every machine computes",
    "# the same fitness (trevo is built so too).",
    "",
    "TREVO ?= trevo",
    "CFLAGS ?= -O2 -g -Wall -Wextra",
    "ifndef TREVO_CFLAGS",
    "TREVO_CFLAGS := $(shell pkg-config --cflags trevo)",
    "ifneq ($(.SHELLSTATUS),0)",
    "$(error pkg-config does not know trevo: install it (make install in trevo's source), set "
    "PKG_CONFIG_PATH=PREFIX/lib/pkgconfig, or give TREVO_CFLAGS=-I...)",
    "endif",
    "endif",
    "",
    "lib@NAME@.so: @NAME@.c",
    "\t$(CC) $(CFLAGS) -ffp-contract=off $(TREVO_CFLAGS) -shared -fPIC -o $@ $<",
    "",
    "run: lib@NAME@.so",
    "\t$(TREVO) run @NAME@.ini",
    "",
    "clean:",
    "\trm -f lib@NAME@.so",
    "",
    ".PHONY: run clean",
    NULL,
};

/* The files written: NAME + suffix, or a fixed name. */
static const struct {
    const char *suffix, *fixed;
    const char *const *lines;
} files[] = {
    {".c", NULL, template_c}, {".ini", NULL, template_ini}, {NULL, "Makefile", template_make}};
#define N_FILES (sizeof files / sizeof files[0])

#define NAME_MAX_CHARS 31

/* A task's name: a lowercase letter, then letters, digits, '_' or '-' (a
 * file name, a make target and a task name alike). */
static int name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > NAME_MAX_CHARS || name[0] < 'a' || name[0] > 'z')
        return 0;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

/* Writes the lines of a template into path, "@NAME@" replaced by name; a
 * file that exists is refused (O_EXCL), never overwritten. */
static int write_template(const char *path, const char *const *lines, const char *name,
                          struct tv_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return errno == EEXIST
                   ? tv_error_set(err, TV_ESTATE, "%s exists already: not overwritten", path)
                   : tv_error_set(err, TV_EIO, "%s: cannot create: %s", path, strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        remove(path);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; lines[i]; i++) {
        const char *p = lines[i], *at;
        while ((at = strstr(p, "@NAME@")) != NULL) {
            fwrite(p, 1, (size_t)(at - p), f);
            fputs(name, f);
            p = at + 6;
        }
        fputs(p, f);
        fputc('\n', f);
    }
    int bad = ferror(f), saved = errno;
    if (fclose(f))
        bad = 1, saved = errno;
    if (bad) {
        remove(path);
        return tv_error_set(err, TV_EIO, "%s: write error: %s", path, strerror(saved));
    }
    return 0;
}

static const char new_usage[] =
    "usage: trevo task new NAME [DIR]\n\n"
    "Writes a task plugin to start from into DIR (default: ./NAME, made if missing):\n"
    "  NAME.c    the task: a complete, commented fitness function (N-bit parity) that\n"
    "            trevo loads from libNAME.so; edit it into your own problem\n"
    "  NAME.ini  a config that runs it (task = ./libNAME.so, its [task] keys)\n"
    "  Makefile  builds libNAME.so with `pkg-config --cflags trevo`\n"
    "Then: cd DIR && make && trevo run NAME.ini (or mpirun -n 3 trevo run NAME.ini).\n"
    "NAME: 1 to 31 characters a-z, 0-9, '_', '-', starting with a letter. Files that\n"
    "exist are never overwritten: nothing is written if one of the three exists.\n"
    "docs/plugins.md (in trevo's source) is the guide.\n";

int cli_cmd_task_new(int argc, char **argv)
{
    if (cli_help(argc, argv, new_usage))
        return 0;
    if (argc < 2)
        return cli_usage_error(new_usage);
    for (int i = 1; i < argc; i++)
        if (i > 2 || argv[i][0] == '-')
            return cli_refuse_arg("task new", argv[i], new_usage);
    const char *name = argv[1], *dir = argc == 3 ? argv[2] : argv[1];
    struct tv_error err = {0};
    if (!name_ok(name)) {
        tv_error_set(&err, TV_EINVAL,
                     "task new: '%s' is not a task name (1 to %d characters a-z, 0-9, '_', '-', "
                     "starting with a letter)",
                     name, NAME_MAX_CHARS);
        return cli_fail(&err);
    }
    if (mkdir(dir, 0755) && errno != EEXIST) {
        tv_error_set(&err, TV_EIO, "task new: %s: cannot make the directory: %s", dir,
                     strerror(errno));
        return cli_fail(&err);
    }
    char paths[N_FILES][4096];
    for (size_t i = 0; i < N_FILES; i++) {
        int n = files[i].fixed
                    ? snprintf(paths[i], sizeof paths[i], "%s/%s", dir, files[i].fixed)
                    : snprintf(paths[i], sizeof paths[i], "%s/%s%s", dir, name, files[i].suffix);
        struct stat st;
        if (n < 0 || (size_t)n >= sizeof paths[i])
            tv_error_set(&err, TV_EINVAL, "task new: %s: path too long", dir);
        else if (lstat(paths[i], &st) == 0)
            tv_error_set(&err, TV_ESTATE,
                         "task new: %s exists already: nothing written (no file is overwritten; "
                         "choose another NAME or DIR)",
                         paths[i]);
        if (err.code)
            return cli_fail(&err);
    }
    for (size_t i = 0; i < N_FILES; i++)
        if (write_template(paths[i], files[i].lines, name, &err)) {
            while (i-- > 0) /* all three or none */
                remove(paths[i]);
            tv_error_prefix(&err, "task new");
            return cli_fail(&err);
        }
    printf("wrote %s, %s, %s\nnext: cd %s && make && trevo run %s.ini\n", paths[0], paths[1],
           paths[2], dir, name);
    return 0;
}
