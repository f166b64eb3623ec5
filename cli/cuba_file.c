/* cuba_file.c -- reading the file experiments/cuba_brian2.py writes
 * (cuba_file.h). The arrays grow as their lines arrive, so a count in the
 * file allocates nothing before the lines that back it are there. */
#include "cuba_file.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct reader {
    FILE *f;
    const char *name;
    size_t line;
    char buf[512];
};

static int next_line(struct reader *r, struct tv_error *err)
{
    if (!fgets(r->buf, sizeof r->buf, r->f))
        return tv_error_set(err, TV_EFORMAT, "%s:%zu: unexpected end of file", r->name,
                            r->line + 1);
    r->line++;
    if (!strchr(r->buf, '\n') && !feof(r->f))
        return tv_error_set(err, TV_EFORMAT, "%s:%zu: a line longer than %zu bytes", r->name,
                            r->line, sizeof r->buf - 2);
    return 0;
}

static int bad_line(struct reader *r, const char *want, struct tv_error *err)
{
    r->buf[strcspn(r->buf, "\n")] = 0;
    return tv_error_set(err, TV_EFORMAT, "%s:%zu: expected '%s', got '%.60s'", r->name, r->line,
                        want, r->buf);
}

/* A line "KEY COUNT" whose count is at most max. */
static int read_count(struct reader *r, const char *key, size_t max, size_t *out,
                      struct tv_error *err)
{
    char k[32];
    unsigned long long v;
    if (next_line(r, err))
        return err->code;
    if (sscanf(r->buf, "%31s %llu", k, &v) != 2 || strcmp(k, key) || v > max)
        return bad_line(r, key, err);
    *out = (size_t)v;
    return 0;
}

/* Room for item i in *p (cap items of size elem), doubling. */
static int room(void **p, size_t *cap, size_t i, size_t elem, struct tv_error *err)
{
    if (i < *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 1024;
    void *q = realloc(*p, n * elem);
    if (!q)
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    *p = q;
    *cap = n;
    return 0;
}

static int read_header(struct reader *r, struct cli_cuba *c, struct tv_error *err)
{
    struct nn_spike_neuron *u = &c->unit;
    double tm, te, ti;
    unsigned long long n, n_exc, steps, ref;
    int ok = !next_line(r, err) && !strcmp(r->buf, "cuba-brian2 1\n");
    if (!ok)
        return bad_line(r, "cuba-brian2 1", err);
    if (next_line(r, err) || sscanf(r->buf, "target %31s", c->target) != 1)
        return bad_line(r, "target NAME", err);
    if (next_line(r, err) || sscanf(r->buf, "n %llu n_exc %llu", &n, &n_exc) != 2 || n == 0 ||
        n > 10000000 || n_exc > n)
        return bad_line(r, "n N n_exc NE", err);
    if (next_line(r, err) || sscanf(r->buf, "dt %lf steps %llu", &c->dt, &steps) != 2 ||
        !(c->dt > 0) || !isfinite(c->dt) || steps > 100000000)
        return bad_line(r, "dt DT steps S", err);
    if (next_line(r, err) ||
        sscanf(r->buf, "tau_m %lf tau_exc %lf tau_inh %lf", &tm, &te, &ti) != 3 ||
        !(tm / c->dt > 0 && te / c->dt > 0 && ti / c->dt > 0) ||
        !isfinite(tm / c->dt + te / c->dt + ti / c->dt))
        return bad_line(r, "tau_m T tau_exc T tau_inh T (each > 0)", err);
    if (next_line(r, err) ||
        sscanf(r->buf, "threshold %lf reset %lf rest %lf refractory_steps %llu", &u->threshold,
               &u->reset, &u->rest, &ref) != 4 ||
        !isfinite(u->threshold + u->reset + u->rest) || ref > UINT32_MAX)
        return bad_line(r, "threshold V reset V rest V refractory_steps R", err);
    if (next_line(r, err) || sscanf(r->buf, "w_exc %lf w_inh %lf", &c->w_exc, &c->w_inh) != 2 ||
        !isfinite(c->w_exc + c->w_inh))
        return bad_line(r, "w_exc W w_inh W", err);
    c->n = n;
    c->n_exc = n_exc;
    c->steps = steps;
    u->tau_m = tm / c->dt;
    u->tau_exc = te / c->dt;
    u->tau_inh = ti / c->dt;
    u->bias = 0;
    u->refractory = (uint32_t)ref;
    return 0;
}

static int read_v0(struct reader *r, struct cli_cuba *c, struct tv_error *err)
{
    size_t n_v, cap = 0;
    if (read_count(r, "v0", c->n, &n_v, err))
        return err->code;
    if (n_v != c->n)
        return bad_line(r, "v0 N", err);
    for (size_t j = 0; j < c->n; j++) {
        if (room((void **)&c->v0, &cap, j, sizeof *c->v0, err))
            return err->code;
        if (next_line(r, err) || sscanf(r->buf, "%lf", &c->v0[j]) != 1 || !isfinite(c->v0[j]))
            return bad_line(r, "a potential", err);
    }
    return 0;
}

/* A line "KEY COUNT", then COUNT lines "A B" with A <= a_max and B < n
 * (ascending A when sorted), into *out as A << 32 | B (a_max < 2^32). */
static int read_pairs(struct reader *r, size_t n, const char *key, size_t max,
                      unsigned long long a_max, int sorted, const char *want, uint64_t **out,
                      size_t *n_out, struct tv_error *err)
{
    size_t count, cap = 0;
    if (read_count(r, key, max, &count, err))
        return err->code;
    for (size_t k = 0; k < count; k++) {
        unsigned long long a, b;
        if (room((void **)out, &cap, k, sizeof **out, err))
            return err->code;
        if (next_line(r, err) || sscanf(r->buf, "%llu %llu", &a, &b) != 2 || a > a_max || b >= n ||
            (sorted && k && a < (*out)[k - 1] >> 32))
            return bad_line(r, want, err);
        (*out)[k] = a << 32 | b;
        *n_out = k + 1;
    }
    return 0;
}

/* The connections "I J" (sorted by I, both < n), weighted by their source:
 * w_exc from the first n_exc neurons, else w_inh. */
static int read_conns(struct reader *r, struct cli_cuba *c, struct tv_error *err)
{
    uint64_t *pairs = NULL;
    size_t n = 0;
    int rc = read_pairs(r, c->n, "conns", (size_t)1 << 31, c->n - 1, 1,
                        "I J (sorted by I, both < n)", &pairs, &n, err);
    c->conns = !rc && n ? malloc(n * sizeof *c->conns) : NULL;
    if (!rc && n && !c->conns)
        rc = tv_error_set(err, TV_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < n; k++) {
        uint32_t i = (uint32_t)(pairs[k] >> 32), j = (uint32_t)pairs[k];
        c->conns[k] = (struct nn_spike_conn){i, j, i < c->n_exc ? c->w_exc : c->w_inh, 1};
    }
    c->n_conns = rc ? 0 : n;
    free(pairs);
    return rc;
}

/* Brian2's spikes "STEP I" (STEP <= steps, I < n), as STEP << 32 | I. */
static int read_spikes(struct reader *r, struct cli_cuba *c, struct tv_error *err)
{
    return read_pairs(r, c->n, "spikes", (size_t)1 << 40, c->steps, 0, "STEP I", &c->spikes,
                      &c->n_spikes, err);
}

int cli_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int cli_cuba_read_stream(FILE *f, const char *name, struct cli_cuba *c, struct tv_error *err)
{
    memset(c, 0, sizeof *c);
    struct reader r = {f, name, 0, {0}};
    int rc = read_header(&r, c, err);
    if (!rc)
        rc = read_v0(&r, c, err);
    if (!rc)
        rc = read_conns(&r, c, err);
    if (!rc)
        rc = read_spikes(&r, c, err);
    if (!rc && (next_line(&r, err) || sscanf(r.buf, "run_seconds %lf", &c->run_seconds) != 1 ||
                !(c->run_seconds > 0)))
        rc = bad_line(&r, "run_seconds X", err);
    if (!rc && (next_line(&r, err) || sscanf(r.buf, "run_cpu_seconds %lf", &c->run_cpu) != 1))
        rc = bad_line(&r, "run_cpu_seconds X", err);
    if (!rc && c->n_spikes)
        qsort(c->spikes, c->n_spikes, sizeof *c->spikes, cli_cmp_u64);
    return rc;
}

int cli_cuba_read(const char *path, struct cli_cuba *c, struct tv_error *err)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f)
        return tv_error_set(err, TV_EIO, "%s: %s", path, strerror(errno));
    int rc = cli_cuba_read_stream(f, path, c, err);
    fclose(f);
    return rc;
}

void cli_cuba_free(struct cli_cuba *c)
{
    free(c->v0);
    free(c->conns);
    free(c->spikes);
    memset(c, 0, sizeof *c);
}
