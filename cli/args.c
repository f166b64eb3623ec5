/* args.c -- the command line's own parsing, shared by every command
 * (cli.h): a command's three ends (-h/--help with the usage on stdout, a
 * usage error, the one-line failure) and its front (cli_front), options
 * and their values, and the one home of the number parsers (a whole
 * number, a real number, a 64-bit integer, a list of layer sizes), so that
 * every option that takes a number follows the same rules and says the
 * same thing when refused. */
#include "cli.h"
#include "data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    return 0;
}

int cli_help(int argc, char **argv, const char *usage)
{
    if (!cli_wants_help(argc, argv))
        return 0;
    fputs(usage, stdout);
    return 1;
}

int cli_usage_error(const char *usage)
{
    fputs(usage, stderr);
    return 2;
}

int cli_arg_error(const char *arg, struct tv_error *err)
{
    if (arg[0] == '-' && arg[1])
        return tv_error_set(err, TV_EINVAL, "unknown option '%s', or its value is missing", arg);
    return tv_error_set(err, TV_EINVAL, "unexpected argument '%s'", arg);
}

int cli_refuse_arg(const char *cmd, const char *arg, const char *usage)
{
    struct tv_error err = {0};
    cli_arg_error(arg, &err);
    fprintf(stderr, "trevo %s: %s\n", cmd, err.msg);
    return cli_usage_error(usage);
}

int cli_front(int argc, char **argv, const char *cmd, const char *usage,
              int (*parse)(int, char **, void *, struct tv_error *), void *args)
{
    if (cli_help(argc, argv, usage))
        return 0;
    struct tv_error err = {0};
    if (!parse(argc, argv, args, &err))
        return -1;
    fprintf(stderr, "trevo %s: %s\n", cmd, err.msg);
    return cli_usage_error(usage);
}

int cli_take_flag(int *argc, char **argv, const char *flag)
{
    int seen = 0;
    for (int i = 1; i < *argc; i++)
        if (!strcmp(argv[i], flag)) {
            memmove(argv + i, argv + i + 1, (size_t)(*argc - i) * sizeof *argv);
            (*argc)--, i--, seen = 1;
        }
    return seen;
}

int cli_parse_args(int argc, char **argv, const char *cmd, const struct cli_opt *opts,
                   size_t n_opts, const char **positional, const char *usage)
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
            return cli_refuse_arg(cmd, a, usage);
        }
    }
    return -1;
}

int cli_fail(const struct tv_error *err)
{
    fprintf(stderr, "trevo: %s\n", err->msg[0] ? err->msg : tv_code_name(err->code));
    return 1;
}

/* A whole number in [lo, hi] from s. */
int cli_parse_whole(const char *opt, const char *s, double lo, double hi, double *out,
                    struct tv_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi) || v != floor(v))
        return tv_error_set(err, TV_EINVAL, "%s: expected a whole number in %.0f..%.0f, got '%s'",
                            opt, lo, hi, s);
    *out = v;
    return 0;
}

/* A finite number in (lo, hi] (lo_open) or [lo, hi]. */
int cli_parse_real(const char *opt, const char *s, double lo, int lo_open, double hi, double *out,
                   struct tv_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v < lo || (lo_open && v == lo) || v > hi)
        return tv_error_set(err, TV_EINVAL, "%s: expected a number in %c%g, %g], got '%s'", opt,
                            lo_open ? '(' : '[', lo, hi, s);
    *out = v;
    return 0;
}

int cli_parse_header(const char *opt, const char *s, int *header, struct tv_error *err)
{
    *header = DATA_HEADER_AUTO;
    if (s && data_header_parse(s, header))
        return tv_error_set(err, TV_EINVAL, "%s: expected auto, yes or no, got '%s'", opt, s);
    return 0;
}

/* "784,1000,10" into sizes[0..*n). */
int cli_parse_layers(const char *s, uint32_t *sizes, size_t *n, struct tv_error *err)
{
    *n = 0;
    const char *p = s;
    for (;;) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || *p == '-' || *p == '+' || errno || v == 0 ||
            v > GENOME_DEFAULT_MAX_NEURONS || (*end && *end != ',') || *n == CLI_MAX_LAYERS)
            return tv_error_set(err, TV_EINVAL,
                                "--layers: expected 2 to %d comma-separated sizes (1..%zu), "
                                "got '%s'",
                                CLI_MAX_LAYERS, GENOME_DEFAULT_MAX_NEURONS, s);
        sizes[(*n)++] = (uint32_t)v;
        if (!*end)
            break;
        p = end + 1;
    }
    if (*n < 2)
        return tv_error_set(err, TV_EINVAL,
                            "--layers: expected at least 2 sizes (inputs, outputs), got '%s'", s);
    return 0;
}

int cli_parse_u64(const char *opt, const char *v, uint64_t max, uint64_t *out, struct tv_error *err)
{
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end || errno || s > max)
        return tv_error_set(err, TV_EINVAL, "%s: expected a non-negative integer, got '%s'", opt,
                            v);
    *out = (uint64_t)s;
    return 0;
}

int cli_parse_size(const char *opt, const char *s, size_t lo, size_t hi, size_t *out,
                   struct tv_error *err)
{
    double v;
    int rc = cli_parse_whole(opt, s, (double)lo, (double)hi, &v, err);
    if (!rc)
        *out = (size_t)v;
    return rc;
}

int cli_parse_size_list(const char *opt, const char *form, const char *s, size_t n, size_t lo,
                        size_t hi, size_t *out, struct tv_error *err)
{
    const char *p = s;
    for (size_t k = 0; k < n; k++) {
        char field[32], name[64];
        size_t len = strcspn(p, ",");
        if (!len || len >= sizeof field || (k + 1 < n) != (p[len] == ','))
            return tv_error_set(err, TV_EINVAL, "%s: expected %s, got '%s'", opt, form, s);
        memcpy(field, p, len);
        field[len] = '\0';
        snprintf(name, sizeof name, n > 1 ? "%s field %zu" : "%s", opt, k + 1);
        if (cli_parse_size(name, field, lo, hi, &out[k], err))
            return err->code;
        p += len + (k + 1 < n);
    }
    return 0;
}
