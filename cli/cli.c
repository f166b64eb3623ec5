/* cli.c -- `trevo` command dispatch and the helpers every command shares. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct command {
    const char *group; /* NULL for a top-level command */
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

/* Every command, in the order --help lists them. Adding one touches only
 * this table (and the file that implements it). */
static const struct command commands[] = {
    {NULL, "run", cli_cmd_run, "CONFIG: run an experiment (under mpirun or alone)"},
    {NULL, "resume", cli_cmd_resume, "DB: continue a stopped or killed run"},
    {NULL, "status", cli_cmd_status, "DB: the runs in a database"},
    {NULL, "best", cli_cmd_best, "DB: write the champion network"},
    {NULL, "plot", cli_cmd_plot, "DB -o FILE.png: fitness and complexity per generation"},
    {"task", "eval", cli_cmd_task_eval, "TASK NET: evaluate one network on a task"},
    {"task", "list", cli_cmd_task_list, "the registered tasks"},
    {"task", "new", cli_cmd_task_new, "NAME [DIR]: write a task plugin to start from"},
    {"net", "import", cli_cmd_net_import, "FILE.txt -o NET: text network to msgpack"},
    {"net", "export", cli_cmd_net_export, "NET [--format text|msgpack] [-o FILE]"},
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

int cli_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
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

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    return 0;
}

int cli_parse_args(int argc, char **argv, const struct cli_opt *opts, size_t n_opts,
                   const char **positional, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        size_t k = 0;
        while (k < n_opts && !(i + 1 < argc && !strcmp(a, opts[k].name)))
            k++;
        if (k < n_opts) {
            *opts[k].value = argv[++i];
        } else if (a[0] != '-' && !*positional) {
            *positional = a;
        } else {
            fputs(usage, stderr);
            return 2;
        }
    }
    return -1;
}

int cli_fail(const struct tv_error *err)
{
    fprintf(stderr, "trevo: %s\n", err->msg[0] ? err->msg : tv_code_name(err->code));
    return 1;
}

int cli_read_file(const char *path, size_t max_bytes, struct tv_buf *out, struct tv_error *err)
{
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return tv_error_set(err, TV_EIO, "%s: cannot open: %s", path, strerror(errno));
    out->len = 0;
    int rc = 0;
    for (;;) {
        if (tv_buf_reserve(out, 65536 + 1)) {
            rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory reading the file", path);
            break;
        }
        size_t n = fread(out->data + out->len, 1, out->cap - out->len - 1, f);
        out->len += n;
        if (out->len > max_bytes) {
            rc = tv_error_set(err, TV_ELIMIT, "%s: larger than the limit of %zu bytes", path,
                              max_bytes);
            break;
        }
        if (n == 0) {
            if (ferror(f))
                rc = tv_error_set(err, TV_EIO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    if (!rc)
        out->data[out->len] = '\0';
    if (!is_stdin)
        fclose(f);
    return rc;
}

int cli_write_file(const char *path, const void *data, size_t len, struct tv_error *err)
{
    if (!strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout))
            return tv_error_set(err, TV_EIO, "stdout: write error: %s", strerror(errno));
        return 0;
    }
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return tv_error_set(err, TV_EINVAL, "%s: path too long", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return tv_error_set(err, TV_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fflush(f) == 0) && ok;
    ok = (fsync(fileno(f)) == 0) && ok;
    int saved = errno;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        remove(tmp);
        return tv_error_set(err, saved == ENOSPC ? TV_ENOSPACE : TV_EIO, "%s: write error: %s",
                            path, strerror(saved));
    }
    if (rename(tmp, path)) {
        saved = errno;
        remove(tmp);
        return tv_error_set(err, TV_EIO, "%s: cannot rename into place: %s", path, strerror(saved));
    }
    return 0;
}

/* The largest network file we read: a 1<<27-connection genome is ~1.6 GB
 * of msgpack; text is about three times that. Files beyond are refused. */
#define MASTER_NET_FILE_MAX ((size_t)4 << 30)

int cli_load_net(const char *path, struct genome *g, struct tv_error *err)
{
    struct tv_buf buf = {0};
    int rc = cli_read_file(path, MASTER_NET_FILE_MAX, &buf, err);
    if (!rc)
        rc = genome_load(g, buf.data, buf.len, path, NULL, err);
    tv_buf_free(&buf);
    return rc;
}

int cli_write_dot_file(const struct genome *g, const char *title, const char *path,
                       struct tv_error *err)
{
    struct tv_buf buf = {0};
    int rc = genome_write_dot(g, title, &buf, err);
    if (!rc)
        rc = cli_write_file(path, buf.data, buf.len, err);
    tv_buf_free(&buf);
    return rc;
}

int cli_net_format_known(const char *format)
{
    return !strcmp(format, "text") || !strcmp(format, "msgpack") || !strcmp(format, "dot");
}

int cli_write_net(const struct genome *g, const char *format, const char *title, const char *path,
                  struct tv_error *err)
{
    if (!strcmp(format, "dot"))
        return cli_write_dot_file(g, title, path, err);
    if (!strcmp(format, "msgpack")) {
        struct tv_buf buf = {0};
        int rc = genome_encode(g, &buf, err);
        if (!rc)
            rc = cli_write_file(path, buf.data, buf.len, err);
        tv_buf_free(&buf);
        return rc;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    int rc = genome_write_text(g, mem, err);
    if (fclose(mem) && !rc)
        rc = tv_error_set(err, TV_ENOMEM, "out of memory");
    if (!rc)
        rc = cli_write_file(path, text, len, err);
    free(text);
    return rc;
}
