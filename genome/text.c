/* text.c -- the text form of a network, for people and other tools:
 *
 *   # comment
 *   trevo-net 1
 *   inputs 2
 *   outputs 1
 *   neuron ID in|out|hid DEPTH ACTIVATION BIAS
 *   conn FROM TO WEIGHT
 *
 * and, in version 2 ("trevo-net 2"), neuron lines that go on with a model
 * and its parameters: "neuron 7 hid 0.5 identity 0 lif threshold=1 ...".
 * Version 3 ("trevo-net 3") lets a connection line end with its delay:
 * "conn 3 7 0.5 delay=4". Version 4 ("trevo-net 4") adds channel and filter
 * lines (genome.h):
 *   channel ID in|hid H W POOL DEPTH ACTIVATION BIAS FIRST
 *   filter FROM TO KH KW STRIDE PAD KY,KX,W ...
 * Version 5 ("trevo-net 5") adds the input scaling, a line per input:
 *   scale ID SHIFT MUL
 * Version 6 ("trevo-net 6") adds the hyper-parameter genes, one line:
 *   hyper lr_scale=X steps_scale=Y regrow_scale=Z
 * Floats are written with %.9g, which reads back to the same float. Every
 * error names the line. */
#include "genome.h"
#include "conv_genes.h"
#include "scale.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Version 3's channel and filter lines (none for a genome without channels). */
static void write_conv(const struct genome *g, FILE *f)
{
    for (size_t i = 0; i < g->n_channels; i++) {
        const struct genome_channel *c = &g->channels[i];
        fprintf(f, "channel %u %s %u %u %u %.9g %s %.9g %u\n", c->id,
                c->kind == GENOME_CHANNEL_INPUT ? "in" : "hid", c->h, c->w, c->pool,
                (double)c->depth, genome_act_name(c->act), (double)c->bias, c->first);
    }
    for (size_t i = 0; i < g->n_filters; i++) {
        const struct genome_filter *t = &g->filters[i];
        fprintf(f, "filter %u %u %u %u %u %u", t->from, t->to, t->kh, t->kw, t->stride, t->pad);
        for (size_t k = 0; k < t->n_coefs; k++) {
            const struct genome_coef *c = &g->coefs[t->coef0 + k];
            fprintf(f, " %u,%u,%.9g", c->ky, c->kx, (double)c->w);
        }
        fputc('\n', f);
    }
}

int genome_write_text(const struct genome *g, FILE *f, struct tv_error *err)
{
    fprintf(f, "# trevo network: %zu neurons, %zu connections\n", g->n_neurons, g->n_conns);
    int version = genome_format_version(g);
    fprintf(f, "trevo-net %d\ninputs %zu\noutputs %zu\n", version,
            genome_count_kind(g, GENOME_INPUT), genome_count_kind(g, GENOME_OUTPUT));
    for (size_t i = 0; i < g->n_neurons; i++) {
        const struct genome_neuron *n = &g->neurons[i];
        const struct genome_model_info *m = &genome_models[n->model];
        fprintf(f, "neuron %u %s %.9g %s %.9g", n->id, genome_kind_name(n->kind), (double)n->depth,
                genome_act_name(n->act), (double)n->bias);
        if (version > 1 && n->model != GENOME_MODEL_RATE)
            fprintf(f, " %s", m->name);
        for (size_t k = 0; version > 1 && k < m->n_params; k++)
            fprintf(f, " %s=%.9g", m->params[k].name, (double)n->param[k]);
        fputc('\n', f);
    }
    for (size_t i = 0; i < g->n_conns; i++) {
        const struct genome_conn *c = &g->conns[i];
        fprintf(f, "conn %u %u %.9g", c->from, c->to, (double)c->weight);
        if (genome_conn_delay(g, i) != 1)
            fprintf(f, " delay=%u", genome_conn_delay(g, i));
        fputc('\n', f);
    }
    write_conv(g, f);
    for (size_t i = 0, k = 0; k < g->n_scale && i < g->n_neurons; i++)
        if (g->neurons[i].kind == GENOME_INPUT) {
            fprintf(f, "scale %u %.9g %.9g\n", g->neurons[i].id, (double)g->scale[k],
                    (double)g->scale[g->n_scale + k]);
            k++;
        }
    for (size_t k = 0; k < GENOME_N_HYPER && g->has_hyper; k++)
        fprintf(f, "%s%s=%.9g%s", k ? " " : "hyper ", genome_hyper_names[k], (double)g->hyper[k],
                k + 1 < GENOME_N_HYPER ? "" : "\n");
    if (fflush(f) || ferror(f))
        return tv_error_set(err, TV_EIO, "write error: %s", strerror(errno));
    return 0;
}

/* ---- parsing ----------------------------------------------------------- */

/* "neuron" and its 5 fields, a model and its parameters */
#define MAX_TOKENS (7 + GENOME_MAX_PARAMS)
/* "filter" and its 6 fields, and a whole kernel of coefficients */
#define MAX_FILTER_TOKENS (7 + GENOME_FILTER_MAX_K * GENOME_FILTER_MAX_K)

struct tok {
    const char *s;
    size_t n;
};

struct parser {
    const char *name;
    size_t line;
    struct tv_error *err;
    int version; /* of the header */
};

static int fail(struct parser *p, const char *what, struct tok t)
{
    int n = t.n > 40 ? 40 : (int)t.n;
    return tv_error_set(p->err, TV_EINVAL, "%s:%zu: %s: '%.*s'", p->name, p->line, what, n, t.s);
}

static int tok_is(struct tok t, const char *word)
{
    return t.n == strlen(word) && !memcmp(t.s, word, t.n);
}

/* Copies a token into a NUL-terminated scratch buffer for strto*. */
static int tok_cstr(struct tok t, char *buf, size_t size)
{
    if (t.n >= size)
        return -1;
    memcpy(buf, t.s, t.n);
    buf[t.n] = '\0';
    return 0;
}

static int parse_u32(struct parser *p, struct tok t, const char *what, uint32_t *out)
{
    char buf[32];
    if (tok_cstr(t, buf, sizeof buf) || buf[0] < '0' || buf[0] > '9')
        return fail(p, what, t);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (*end || errno || v >= GENOME_ID_NONE)
        return fail(p, what, t);
    *out = (uint32_t)v;
    return 0;
}

static int parse_float(struct parser *p, struct tok t, const char *what, float *out)
{
    char buf[64];
    if (tok_cstr(t, buf, sizeof buf))
        return fail(p, what, t);
    char *end;
    errno = 0;
    float v = strtof(buf, &end);
    if (end == buf || *end)
        return fail(p, what, t);
    if (!isfinite(v))
        return tv_error_set(p->err, TV_EINVAL, "%s:%zu: %s is not a finite number: '%s'", p->name,
                            p->line, what, buf);
    *out = v;
    return 0;
}

/* A gene with the line it came from, so errors found after sorting can still
 * name the line. The gene comes first: genome_neuron_cmp and genome_conn_cmp
 * order these. */
struct neuron_at {
    struct genome_neuron n;
    size_t line;
};
struct conn_at {
    struct genome_conn c;
    size_t line;
    uint32_t delay;
};

/* A scale line: input `id` takes (x - shift) * mul. */
struct scale_at {
    uint32_t id;
    float shift, mul;
    size_t line;
};

struct lists {
    size_t in_line, out_line; /* lines of the `inputs` and `outputs` counts */
    size_t hyper_line;        /* of the `hyper` line, 0: none */
    float hyper[GENOME_N_HYPER];
    struct scale_at *scales;
    size_t n_scales, cap_scales;
    struct neuron_at *neurons;
    size_t n_neurons, cap_neurons;
    struct conn_at *conns;
    size_t n_conns, cap_conns;
    struct genome conv; /* channels and filters (version 3) */
};

static int parse_conv(struct parser *p, const struct tok *t, int nt, struct genome *conv,
                      const struct genome_limits *limits);

/* Appends the gene of the current line, item (size bytes), to the list *arr
 * of *n, unless that would pass `limit` (`what` names the genes). */
static int push_gene(struct parser *p, void **arr, size_t *n, size_t *cap, size_t size,
                     const void *item, size_t limit, const char *what)
{
    if (*n >= limit)
        return tv_error_set(p->err, TV_ELIMIT, "%s:%zu: more than %zu %s", p->name, p->line, limit,
                            what);
    if (tv_grow(arr, cap, *n + 1, size, NULL))
        return tv_error_set(p->err, TV_ENOMEM, "%s:%zu: out of memory", p->name, p->line);
    memcpy((char *)*arr + *n * size, item, size);
    (*n)++;
    return 0;
}

/* The model of a neuron line and its NAME=VALUE parameters, t[0..nt) (none:
 * a rate neuron); parameters left out take their defaults. */
static int parse_model(struct parser *p, const struct tok *t, int nt, struct genome_neuron *n)
{
    genome_neuron_set_model(n, GENOME_MODEL_RATE);
    if (nt == 0)
        return 0;
    int model = genome_model_parse(t[0].s, t[0].n);
    if (model < 0)
        return fail(p, "unknown neuron model", t[0]);
    genome_neuron_set_model(n, model);
    const struct genome_model_info *m = &genome_models[model];
    unsigned seen = 0;
    for (int i = 1; i < nt; i++) {
        const char *eq = memchr(t[i].s, '=', t[i].n);
        size_t k = 0, len = eq ? (size_t)(eq - t[i].s) : 0;
        while (k < m->n_params &&
               !(strlen(m->params[k].name) == len && !memcmp(m->params[k].name, t[i].s, len)))
            k++;
        if (!eq || k == m->n_params)
            return fail(p, "expected NAME=VALUE with a parameter of the model", t[i]);
        if (seen >> k & 1)
            return fail(p, "parameter given twice", t[i]);
        seen |= 1u << k;
        struct tok v = {eq + 1, t[i].n - len - 1};
        int rc = parse_float(p, v, m->params[k].name, &n->param[k]);
        if (!rc && (rc = genome_param_check(model, k, n->param[k], p->err)))
            tv_error_prefix(p->err, "%s:%zu", p->name, p->line);
        if (rc)
            return rc;
    }
    return 0;
}

/* "scale ID SHIFT MUL" (version 5) */
static int parse_scale(struct parser *p, const struct tok *t, int nt, struct lists *l,
                       const struct genome_limits *limits)
{
    if (p->version < 5)
        return tv_error_set(p->err, TV_EINVAL, "%s:%zu: 'scale' lines need 'trevo-net 5'", p->name,
                            p->line);
    if (nt != 4)
        return tv_error_set(p->err, TV_EINVAL, "%s:%zu: expected 'scale ID SHIFT MUL'", p->name,
                            p->line);
    struct scale_at a = {.line = p->line};
    int rc = parse_u32(p, t[1], "scale: input id is not an integer below 4294967295", &a.id);
    if (!rc)
        rc = parse_float(p, t[2], "scale shift", &a.shift);
    if (!rc)
        rc = parse_float(p, t[3], "scale mul", &a.mul);
    if (rc)
        return rc;
    return push_gene(p, (void **)&l->scales, &l->n_scales, &l->cap_scales, sizeof a, &a,
                     limits->max_neurons, "scale lines");
}

/* The scale lines onto g's inputs (g's neurons in place and sorted): an
 * input without a line takes shift 0, mul 1. */
static int apply_scales(struct parser *p, const struct lists *l, struct genome *g)
{
    if (!l->n_scales)
        return 0;
    size_t n_in = genome_count_kind(g, GENOME_INPUT);
    float *v = malloc(2 * n_in * sizeof *v);
    size_t *line = calloc(n_in, sizeof *line);
    int rc = !v || !line ? tv_error_set(p->err, TV_ENOMEM, "%s: out of memory", p->name) : 0;
    for (size_t k = 0; k < n_in && !rc; k++)
        v[k] = 0.0f, v[n_in + k] = 1.0f;
    for (size_t i = 0; i < l->n_scales && !rc; i++) {
        const struct scale_at *a = &l->scales[i];
        ptrdiff_t at = genome_find_neuron(g, a->id);
        if (at < 0 || g->neurons[at].kind != GENOME_INPUT) {
            rc = tv_error_set(p->err, TV_EINVAL, "%s:%zu: scale: neuron %u is not an input",
                              p->name, a->line, a->id);
            break;
        }
        size_t k = 0; /* the input's position among the inputs */
        for (ptrdiff_t j = 0; j < at; j++)
            k += g->neurons[j].kind == GENOME_INPUT;
        if (line[k])
            rc = tv_error_set(p->err, TV_EINVAL,
                              "%s:%zu: scale of input %u already given on line %zu", p->name,
                              a->line, a->id, line[k]);
        line[k] = a->line;
        v[k] = a->shift;
        v[n_in + k] = a->mul;
    }
    if (!rc)
        rc = genome_set_scale(g, v, v + n_in, n_in, p->err);
    if (!rc && (rc = genome_scale_check(g, n_in, p->err)))
        tv_error_prefix(p->err, "%s", p->name);
    free(v);
    free(line);
    return rc;
}

/* "hyper NAME=VALUE..." (version 6): the genes named, 1 for those left out. */
static int parse_hyper(struct parser *p, const struct tok *t, int nt, struct lists *l)
{
    if (p->version < 6)
        return tv_error_set(p->err, TV_EINVAL, "%s:%zu: 'hyper' lines need 'trevo-net 6'", p->name,
                            p->line);
    if (l->hyper_line)
        return tv_error_set(p->err, TV_EINVAL, "%s:%zu: 'hyper' already given on line %zu", p->name,
                            p->line, l->hyper_line);
    if (nt > 1 + GENOME_N_HYPER)
        return tv_error_set(p->err, TV_EINVAL,
                            "%s:%zu: expected 'hyper lr_scale=X steps_scale=Y regrow_scale=Z'",
                            p->name, p->line);
    unsigned seen = 0;
    for (size_t k = 0; k < GENOME_N_HYPER; k++)
        l->hyper[k] = 1.0f;
    for (int i = 1; i < nt; i++) {
        const char *eq = memchr(t[i].s, '=', t[i].n);
        size_t k = 0, len = eq ? (size_t)(eq - t[i].s) : 0;
        while (k < GENOME_N_HYPER && !(strlen(genome_hyper_names[k]) == len &&
                                       !memcmp(genome_hyper_names[k], t[i].s, len)))
            k++;
        if (!eq || k == GENOME_N_HYPER)
            return fail(p, "expected lr_scale=, steps_scale= or regrow_scale=", t[i]);
        if (seen >> k & 1)
            return fail(p, "hyper-parameter gene given twice", t[i]);
        seen |= 1u << k;
        int rc = parse_float(p, (struct tok){eq + 1, t[i].n - len - 1}, genome_hyper_names[k],
                             &l->hyper[k]);
        if (rc)
            return rc;
        if (!(l->hyper[k] >= GENOME_HYPER_MIN && l->hyper[k] <= GENOME_HYPER_MAX))
            return tv_error_set(p->err, TV_EINVAL, "%s:%zu: %s %g is outside [%g, %g]", p->name,
                                p->line, genome_hyper_names[k], (double)l->hyper[k],
                                (double)GENOME_HYPER_MIN, (double)GENOME_HYPER_MAX);
    }
    l->hyper_line = p->line;
    return 0;
}

static int parse_line(struct parser *p, struct tok *t, int nt, struct lists *l,
                      const struct genome_limits *limits, long *n_in, long *n_out)
{
    if (tok_is(t[0], "inputs") || tok_is(t[0], "outputs")) {
        long *dst = tok_is(t[0], "inputs") ? n_in : n_out;
        uint32_t v;
        if (nt != 2)
            return tv_error_set(p->err, TV_EINVAL, "%s:%zu: expected '%.*s COUNT'", p->name,
                                p->line, (int)t[0].n, t[0].s);
        if (*dst >= 0)
            return tv_error_set(p->err, TV_EINVAL, "%s:%zu: '%.*s' given twice", p->name, p->line,
                                (int)t[0].n, t[0].s);
        int rc = parse_u32(p, t[1], "count is not a non-negative integer", &v);
        if (rc)
            return rc;
        *dst = v;
        *(dst == n_in ? &l->in_line : &l->out_line) = p->line;
        return 0;
    }
    if (tok_is(t[0], "neuron")) {
        if (p->version == 1 ? nt != 6 : nt < 6)
            return tv_error_set(p->err, TV_EINVAL,
                                "%s:%zu: expected 'neuron ID in|out|hid DEPTH ACTIVATION BIAS%s'",
                                p->name, p->line, p->version == 1 ? "" : " [MODEL NAME=VALUE...]");
        struct neuron_at a = {.line = p->line};
        int rc = parse_u32(p, t[1], "neuron id is not an integer below 4294967295", &a.n.id);
        if (rc)
            return rc;
        a.n.kind = tok_is(t[2], "in")    ? GENOME_INPUT
                   : tok_is(t[2], "out") ? GENOME_OUTPUT
                   : tok_is(t[2], "hid") ? GENOME_HIDDEN
                                         : 255;
        if (a.n.kind == 255)
            return fail(p, "neuron kind must be in, out or hid", t[2]);
        if ((rc = parse_float(p, t[3], "depth", &a.n.depth)))
            return rc;
        if (!(a.n.depth >= 0 && a.n.depth <= 1))
            return fail(p, "depth must be in [0, 1]", t[3]);
        if (a.n.kind == GENOME_INPUT && a.n.depth != 0)
            return fail(p, "an input neuron must have depth 0", t[3]);
        if (a.n.kind == GENOME_OUTPUT && a.n.depth != 1)
            return fail(p, "an output neuron must have depth 1", t[3]);
        int act = genome_act_parse(t[4].s, t[4].n);
        if (act < 0)
            return fail(p, "unknown activation", t[4]);
        a.n.act = (uint8_t)act;
        if ((rc = parse_float(p, t[5], "bias", &a.n.bias)))
            return rc;
        if ((rc = parse_model(p, t + 6, nt - 6, &a.n)))
            return rc;
        return push_gene(p, (void **)&l->neurons, &l->n_neurons, &l->cap_neurons, sizeof a, &a,
                         limits->max_neurons, "neurons");
    }
    if (tok_is(t[0], "conn")) {
        if (nt != 4 && (p->version < 3 || nt != 5))
            return tv_error_set(p->err, TV_EINVAL, "%s:%zu: expected 'conn FROM TO WEIGHT%s'",
                                p->name, p->line, p->version < 3 ? "" : " [delay=D]");
        struct conn_at a = {.line = p->line, .delay = 1};
        if (nt == 5 && (t[4].n < 7 || memcmp(t[4].s, "delay=", 6) ||
                        parse_u32(p, (struct tok){t[4].s + 6, t[4].n - 6}, "delay", &a.delay) ||
                        a.delay < 1 || a.delay > GENOME_MAX_DELAY))
            return tv_error_set(
                p->err, TV_EINVAL, "%s:%zu: expected delay=D with D in [1, %d]: '%.*s'", p->name,
                p->line, GENOME_MAX_DELAY, (int)(t[4].n > 40 ? 40 : t[4].n), t[4].s);
        int rc = parse_u32(p, t[1], "connection source is not a neuron id", &a.c.from);
        if (!rc)
            rc = parse_u32(p, t[2], "connection target is not a neuron id", &a.c.to);
        if (!rc)
            rc = parse_float(p, t[3], "weight", &a.c.weight);
        if (rc)
            return rc;
        return push_gene(p, (void **)&l->conns, &l->n_conns, &l->cap_conns, sizeof a, &a,
                         limits->max_conns, "connections");
    }
    if (tok_is(t[0], "channel") || tok_is(t[0], "filter"))
        return parse_conv(p, t, nt, &l->conv, limits);
    if (tok_is(t[0], "scale"))
        return parse_scale(p, t, nt, l, limits);
    if (tok_is(t[0], "hyper"))
        return parse_hyper(p, t, nt, l);
    return fail(p, "unknown line (expected inputs, outputs, neuron or conn)", t[0]);
}

/* Cross-line checks, each naming the line of the culprit. */
static int check_lists(struct parser *p, struct lists *l, long n_in, long n_out)
{
    if (l->n_neurons > 1)
        qsort(l->neurons, l->n_neurons, sizeof *l->neurons, genome_neuron_cmp);
    if (l->n_conns > 1)
        qsort(l->conns, l->n_conns, sizeof *l->conns, genome_conn_cmp);
    long in = 0, out = 0;
    for (size_t i = 0; i < l->n_neurons; i++) {
        if (i > 0 && l->neurons[i].n.id == l->neurons[i - 1].n.id) {
            size_t a = l->neurons[i - 1].line, b = l->neurons[i].line;
            return tv_error_set(p->err, TV_EINVAL, "%s:%zu: neuron %u already defined on line %zu",
                                p->name, a > b ? a : b, l->neurons[i].n.id, a < b ? a : b);
        }
        in += l->neurons[i].n.kind == GENOME_INPUT;
        out += l->neurons[i].n.kind == GENOME_OUTPUT;
    }
    if (in != n_in)
        return tv_error_set(p->err, TV_EINVAL,
                            "%s:%zu: the header says %ld inputs, but %ld input neurons are listed",
                            p->name, l->in_line, n_in, in);
    if (out != n_out)
        return tv_error_set(
            p->err, TV_EINVAL,
            "%s:%zu: the header says %ld outputs, but %ld output neurons are listed", p->name,
            l->out_line, n_out, out);
    for (size_t i = 0; i < l->n_conns; i++) {
        const struct conn_at *c = &l->conns[i];
        if (i > 0 && genome_conn_cmp(c, &l->conns[i - 1]) == 0) {
            size_t a = l->conns[i - 1].line, b = c->line;
            return tv_error_set(p->err, TV_EINVAL,
                                "%s:%zu: connection %u -> %u already defined on line %zu", p->name,
                                a > b ? a : b, c->c.from, c->c.to, a < b ? a : b);
        }
        struct neuron_at key = {.n.id = c->c.from};
        const struct neuron_at *f = NULL, *t = NULL;
        if (l->n_neurons) { /* bsearch on a NULL array is undefined */
            f = bsearch(&key, l->neurons, l->n_neurons, sizeof key, genome_neuron_cmp);
            key.n.id = c->c.to;
            t = bsearch(&key, l->neurons, l->n_neurons, sizeof key, genome_neuron_cmp);
        }
        /* (a pixel of a channel may be a source; validation checks the rest) */
        int f_px = !f && genome_pixel_channel(&l->conv, c->c.from) >= 0;
        int t_px = !t && genome_pixel_channel(&l->conv, c->c.to) >= 0;
        if ((!f && !f_px) || (!t && !t_px))
            return tv_error_set(p->err, TV_EINVAL,
                                "%s:%zu: connection %u -> %u: neuron %u is not defined", p->name,
                                c->line, c->c.from, c->c.to, !f && !f_px ? c->c.from : c->c.to);
        if (t && t->n.kind == GENOME_INPUT)
            return tv_error_set(p->err, TV_EINVAL,
                                "%s:%zu: connection %u -> %u ends in input neuron %u", p->name,
                                c->line, c->c.from, c->c.to, c->c.to);
    }
    return 0;
}

int genome_read_text(struct genome *g, const char *text, size_t len, const char *name,
                     const struct genome_limits *limits, struct tv_error *err)
{
    if (!limits)
        limits = &genome_default_limits;
    genome_reset(g);
    struct parser p = {name ? name : "<text>", 0, err, 1};
    struct lists l = {0};
    long n_in = -1, n_out = -1;
    int seen_header = 0, rc = 0;
    size_t pos = 0;
    while (pos < len && !rc) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl != NULL);
        p.line++;
        struct tok t[MAX_FILTER_TOKENS + 1];
        int nt = 0;
        for (size_t i = 0; i < n;) {
            if (s[i] == '#')
                break;
            if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
                i++;
                continue;
            }
            if (s[i] == '\0') {
                rc = tv_error_set(err, TV_EINVAL, "%s:%zu: NUL byte in text", p.name, p.line);
                break;
            }
            size_t j = i;
            while (j < n && s[j] != ' ' && s[j] != '\t' && s[j] != '\r' && s[j] != '#' &&
                   s[j] != '\0')
                j++;
            if (nt <= MAX_FILTER_TOKENS)
                t[nt] = (struct tok){s + i, j - i};
            nt++;
            i = j;
        }
        if (rc || nt == 0)
            continue;
        if (nt > (tok_is(t[0], "filter") ? MAX_FILTER_TOKENS : MAX_TOKENS)) {
            rc = tv_error_set(err, TV_EINVAL, "%s:%zu: too many fields", p.name, p.line);
        } else if (!seen_header) {
            if (nt != 2 || !tok_is(t[0], "trevo-net"))
                rc = tv_error_set(err, TV_EFORMAT,
                                  "%s:%zu: not a trevo network (expected 'trevo-net 1')", p.name,
                                  p.line);
            else if (t[1].n != 1 || t[1].s[0] < '1' || t[1].s[0] > '0' + GENOME_FORMAT_VERSION)
                rc = tv_error_set(err, TV_EFORMAT,
                                  "%s:%zu: format version '%.*s', this program reads 1 to %d",
                                  p.name, p.line, (int)(t[1].n > 20 ? 20 : t[1].n), t[1].s,
                                  GENOME_FORMAT_VERSION);
            else
                p.version = t[1].s[0] - '0';
            seen_header = 1;
        } else {
            rc = parse_line(&p, t, nt, &l, limits, &n_in, &n_out);
        }
    }
    if (!rc && !seen_header)
        rc = tv_error_set(err, TV_EFORMAT, "%s: empty (expected 'trevo-net 1')", p.name);
    if (!rc && (n_in < 0 || n_out < 0))
        rc = tv_error_set(err, TV_EINVAL, "%s: missing '%s COUNT' line", p.name,
                          n_in < 0 ? "inputs" : "outputs");
    if (!rc)
        rc = check_lists(&p, &l, n_in, n_out);
    if (!rc)
        rc = genome_reserve(g, l.n_neurons, l.n_conns, err);
    if (!rc) {
        for (size_t i = 0; i < l.n_neurons; i++)
            g->neurons[g->n_neurons++] = l.neurons[i].n;
        for (size_t i = 0; i < l.n_conns; i++)
            g->conns[g->n_conns++] = l.conns[i].c;
        for (size_t i = 0; i < l.n_conns && !rc; i++)
            rc = genome_set_delay(g, i, l.conns[i].delay, err);
        genome_set_hyper(g, l.hyper_line ? l.hyper : NULL);
        if (!rc)
            rc = genome_copy_conv(g, &l.conv, err);
        if (!rc)
            rc = genome_validate(g, limits, err);
        if (rc)
            tv_error_prefix(err, "%s", p.name);
    }
    if (!rc) /* (its messages name the file and line) */
        rc = apply_scales(&p, &l, g);
    free(l.neurons);
    free(l.conns);
    free(l.scales);
    genome_release(&l.conv);
    if (rc)
        genome_reset(g);
    return rc;
}

/* ---- version 3: channel and filter lines ---------------------------------- */

/* An integer field of at most max. */
static int parse_small(struct parser *p, struct tok t, const char *what, uint32_t max,
                       uint32_t *out)
{
    int rc = parse_u32(p, t, what, out);
    if (!rc && *out > max)
        rc = fail(p, what, t);
    return rc;
}

/* "KY,KX,W" */
static int parse_coef(struct parser *p, struct tok t, struct genome_coef *c)
{
    const char *a = memchr(t.s, ',', t.n);
    const char *b = a ? memchr(a + 1, ',', t.n - (size_t)(a + 1 - t.s)) : NULL;
    if (!b)
        return fail(p, "expected KY,KX,W", t);
    struct tok ky = {t.s, (size_t)(a - t.s)}, kx = {a + 1, (size_t)(b - a - 1)};
    struct tok w = {b + 1, t.n - (size_t)(b + 1 - t.s)};
    uint32_t y = 0, x = 0;
    int rc = parse_small(p, ky, "coefficient row", 255, &y);
    if (!rc)
        rc = parse_small(p, kx, "coefficient column", 255, &x);
    if (!rc)
        rc = parse_float(p, w, "coefficient", &c->w);
    c->ky = (uint8_t)y;
    c->kx = (uint8_t)x;
    return rc;
}

static int parse_channel(struct parser *p, const struct tok *t, int nt, struct genome *conv)
{
    if (nt != 10)
        return tv_error_set(p->err, TV_EINVAL,
                            "%s:%zu: expected 'channel ID in|hid H W POOL DEPTH ACTIVATION BIAS "
                            "FIRST'",
                            p->name, p->line);
    if (conv->n_channels >= GENOME_MAX_CHANNELS)
        return tv_error_set(p->err, TV_ELIMIT, "%s:%zu: more than %d channels", p->name, p->line,
                            GENOME_MAX_CHANNELS);
    struct genome_channel c = {0};
    uint32_t h, w, pool;
    int rc = parse_u32(p, t[1], "channel id is not an integer below 4294967295", &c.id);
    if (rc)
        return rc;
    if (!tok_is(t[2], "in") && !tok_is(t[2], "hid"))
        return fail(p, "channel kind must be in or hid", t[2]);
    c.kind = tok_is(t[2], "in") ? GENOME_CHANNEL_INPUT : GENOME_CHANNEL_HIDDEN;
    int act = genome_act_parse(t[7].s, t[7].n);
    if ((rc = parse_small(p, t[3], "channel height", UINT16_MAX, &h)) ||
        (rc = parse_small(p, t[4], "channel width", UINT16_MAX, &w)) ||
        (rc = parse_small(p, t[5], "channel pooling", 255, &pool)) ||
        (rc = parse_float(p, t[6], "depth", &c.depth)) ||
        (rc = act < 0 ? fail(p, "unknown activation", t[7]) : 0) ||
        (rc = parse_float(p, t[8], "bias", &c.bias)) ||
        (rc = parse_u32(p, t[9], "first pixel id", &c.first)))
        return rc;
    c.h = (uint16_t)h;
    c.w = (uint16_t)w;
    c.pool = (uint8_t)pool;
    c.act = (uint8_t)act;
    if ((rc = genome_add_channel(conv, &c, p->err)))
        tv_error_prefix(p->err, "%s:%zu", p->name, p->line);
    return rc;
}

static int parse_filter(struct parser *p, const struct tok *t, int nt, struct genome *conv,
                        const struct genome_limits *limits)
{
    if (nt < 7)
        return tv_error_set(p->err, TV_EINVAL,
                            "%s:%zu: expected 'filter FROM TO KH KW STRIDE PAD KY,KX,W ...'",
                            p->name, p->line);
    if (conv->n_filters >= GENOME_MAX_FILTERS ||
        (size_t)(nt - 7) > limits->max_conns - conv->n_coefs)
        return tv_error_set(p->err, TV_ELIMIT, "%s:%zu: more than %zu filters or %zu coefficients",
                            p->name, p->line, GENOME_MAX_FILTERS, limits->max_conns);
    static const char *const what[4] = {"kernel height", "kernel width", "stride", "padding"};
    struct genome_filter f = {0};
    struct genome_coef c[MAX_FILTER_TOKENS];
    uint32_t k[4] = {0};
    int rc = parse_u32(p, t[1], "filter source is not a channel id", &f.from);
    if (!rc)
        rc = parse_u32(p, t[2], "filter target is not a channel id", &f.to);
    for (int i = 0; i < 4 && !rc; i++)
        rc = parse_small(p, t[3 + i], what[i], 255, &k[i]);
    for (int i = 7; i < nt && !rc; i++)
        rc = parse_coef(p, t[i], &c[i - 7]);
    if (rc)
        return rc;
    f.kh = (uint8_t)k[0];
    f.kw = (uint8_t)k[1];
    f.stride = (uint8_t)k[2];
    f.pad = (uint8_t)k[3];
    if ((rc = genome_add_filter(conv, &f, c, (size_t)(nt - 7), p->err)))
        tv_error_prefix(p->err, "%s:%zu", p->name, p->line);
    return rc;
}

static int parse_conv(struct parser *p, const struct tok *t, int nt, struct genome *conv,
                      const struct genome_limits *limits)
{
    if (p->version < 4)
        return tv_error_set(p->err, TV_EINVAL, "%s:%zu: '%.*s' lines need 'trevo-net 4'", p->name,
                            p->line, (int)t[0].n, t[0].s);
    return tok_is(t[0], "channel") ? parse_channel(p, t, nt, conv)
                                   : parse_filter(p, t, nt, conv, limits);
}

int genome_load(struct genome *g, const void *data, size_t len, const char *name,
                const struct genome_limits *limits, struct tv_error *err)
{
    const uint8_t *b = data;
    if (len > 0 && (b[0] == 0x94 || b[0] == 0x95 || b[0] == 0x97)) {
        int rc = genome_decode(g, data, len, limits, err);
        return rc ? tv_error_prefix(err, "%s", name) : 0;
    }
    return genome_read_text(g, data, len, name, limits, err);
}
