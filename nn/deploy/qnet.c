/* qnet.c -- the NET.q text format (quant.h): nn_qnet_write, nn_qnet_read.
 * The reader checks every value before it is used, so that whatever it
 * accepts compiles into a safe int8 plan; errors name the file and line. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant_impl.h"

static const char magic[] = "trevo-qnet ";

int nn_qnet_sniff(const void *data, size_t len)
{
    return len >= sizeof magic - 1 && !memcmp(data, magic, sizeof magic - 1);
}

/* ---- writing --------------------------------------------------------------- */

static int put(struct tv_buf *b, struct tv_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int put(struct tv_buf *b, struct tv_error *err, const char *fmt, ...)
{
    char line[640];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line || tv_buf_append(b, line, (size_t)n))
        return tv_error_set(err, TV_ENOMEM, "nn_qnet_write: out of memory");
    return 0;
}

/* Version 3's channels and layers of filters. */
static int write_convs(const struct nn_qnet *q, struct tv_buf *out, struct tv_error *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < q->n_chans; i++) {
        const struct nn_qchan *c = &q->chans[i];
        rc = put(out, err, "chan %u %u %u %u %u %d %d %u %.9g\n", c->j, c->h, c->w, c->pool,
                 c->table, c->bias, c->mult, c->shift, (double)c->acc_scale);
    }
    for (size_t i = 0; !rc && i < q->n_convs; i++) {
        const struct nn_qconv *v = &q->convs[i];
        rc = put(out, err, "conv %u %u %u %u %u %u %u %u %zu\n", v->in_ch, v->out_ch, v->in_h,
                 v->in_w, v->k_h, v->k_w, v->stride, v->pad, v->n_coefs);
        for (uint32_t k = 0; !rc && k < v->in_ch; k++)
            rc = put(out, err, "src %u\n", q->conv_src[v->src0 + k]);
        for (uint32_t k = 0; !rc && k < v->out_ch; k++)
            rc = put(out, err, "dst %u\n", q->conv_dst[v->dst0 + k]);
        for (size_t k = 0; !rc && k < v->n_coefs; k++) {
            const struct nn_qcoef *c = &q->coefs[v->coef0 + k];
            rc = put(out, err, "c %u %u %u %u %d\n", c->out, c->in, c->ky, c->kx, c->w);
        }
    }
    return rc;
}

/* 1 if neuron j is a channel's pixel (chans sorted by j). */
static int is_pixel(const struct nn_qnet *q, size_t j)
{
    size_t lo = 0, hi = q->n_chans;
    while (lo < hi) { /* the first channel starting after j */
        size_t mid = lo + (hi - lo) / 2;
        if (q->chans[mid].j <= j)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const struct nn_qchan *c = &q->chans[lo - 1];
    return j < c->j + (size_t)(c->h / c->pool) * (c->w / c->pool);
}

int nn_qnet_write(const struct nn_qnet *q, struct tv_buf *out, struct tv_error *err)
{
    int version = q->n_chans ? 3 : q->in_scale ? 2 : 1;
    int rc = put(out, err, "trevo-qnet %d\nsize %zu %zu %zu %zu %zu %zu\n", version, q->n, q->n_in,
                 q->n_out, q->n_layers, q->n_tables, q->n_edges);
    if (!rc && version == 3)
        rc = put(out, err, "convs %zu %zu %zu %d\n", q->n_chans, q->n_convs, q->n_coefs,
                 q->in_scale != NULL);
    for (size_t k = 0; !rc && q->in_scale && k < q->n_in; k++)
        rc = put(out, err, "scale %zu %.9g %.9g\n", k, (double)q->in_scale[k],
                 (double)q->in_scale[q->n_in + k]);
    for (size_t l = 0; !rc && l < q->n_layers; l++) {
        const struct nn_qlayer *L = &q->layers[l];
        rc = put(out, err, "layer %u %u %.9g %d %.9g %d\n", L->start, L->end, (double)L->scale,
                 L->zp, (double)L->pscale, L->pzp);
    }
    for (size_t k = 0; !rc && k < q->n_out; k++)
        rc = put(out, err, "out %u\n", q->out_map[k]);
    for (size_t t = 0; !rc && t < q->n_tables; t++) {
        char hex[513];
        for (int i = 0; i < 256; i++)
            snprintf(hex + 2 * i, 3, "%02x", (uint8_t)q->tables[t * 256 + (size_t)i]);
        rc = put(out, err, "table %s\n", hex);
    }
    if (!rc)
        rc = write_convs(q, out, err);
    for (size_t j = q->n_in; !rc && j < q->n; j++) {
        if (is_pixel(q, j))
            continue;
        const struct nn_qneuron *u = &q->neuron[j];
        rc = put(out, err, "neuron %zu %u %d %d %u %.9g %u %u\n", j, u->table, u->bias, u->mult,
                 u->shift, (double)u->acc_scale, q->rec[j] - q->row[j], q->row[j + 1] - q->rec[j]);
        for (uint32_t k = q->row[j]; !rc && k < q->row[j + 1]; k++)
            rc = put(out, err, "e %u %d\n", q->edges[k].src, q->edges[k].w);
    }
    return rc ? rc : put(out, err, "end\n");
}

/* ---- reading --------------------------------------------------------------- */

#define MAX_TOK 10

struct reader {
    const char *p, *end, *name;
    size_t line;
    char buf[600];
    char *tok[MAX_TOK];
    size_t n_tok;
    struct tv_error *err;
};

static int fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct reader *r, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tv_error_set(r->err, TV_EFORMAT, "%s:%zu: %s", r->name, r->line, msg);
}

/* The next line's tokens; its first must be `key` with n_args more. */
static int next(struct reader *r, const char *key, size_t n_args)
{
    r->line++;
    if (r->p >= r->end)
        return fail(r, "expected '%s', got the end of the file", key);
    const char *e = memchr(r->p, '\n', (size_t)(r->end - r->p));
    size_t len = e ? (size_t)(e - r->p) : (size_t)(r->end - r->p);
    if (len >= sizeof r->buf)
        return fail(r, "line too long");
    memcpy(r->buf, r->p, len);
    r->buf[len] = '\0';
    if (memchr(r->buf, '\0', len))
        return fail(r, "a NUL byte in the line");
    r->p += len + (e != NULL);
    r->n_tok = 0;
    char *save = NULL;
    for (char *s = strtok_r(r->buf, " \t\r", &save); s; s = strtok_r(NULL, " \t\r", &save)) {
        if (r->n_tok == MAX_TOK)
            return fail(r, "too many fields");
        r->tok[r->n_tok++] = s;
    }
    if (r->n_tok == 0 || strcmp(r->tok[0], key))
        return fail(r, "expected '%s'", key);
    if (r->n_tok != n_args + 1)
        return fail(r, "'%s' takes %zu values, got %zu", key, n_args, r->n_tok - 1);
    return 0;
}

/* Token i as an integer in [lo, hi]. */
static int get_int(struct reader *r, size_t i, const char *what, long long lo, long long hi,
                   long long *v)
{
    char *e;
    errno = 0;
    long long x = strtoll(r->tok[i], &e, 10);
    if (*e || e == r->tok[i] || errno)
        return fail(r, "%s: expected an integer, got '%s'", what, r->tok[i]);
    if (x < lo || x > hi)
        return fail(r, "%s: %lld is not in [%lld, %lld]", what, x, lo, hi);
    *v = x;
    return 0;
}

/* Token i as a finite float, > 0 unless zero_ok. */
static int get_float(struct reader *r, size_t i, const char *what, int zero_ok, float *v)
{
    char *e;
    errno = 0;
    float x = strtof(r->tok[i], &e);
    if (*e || e == r->tok[i] || !isfinite(x))
        return fail(r, "%s: expected a finite number, got '%s'", what, r->tok[i]);
    if (!(x > 0.0f) && !(zero_ok && x == 0.0f))
        return fail(r, "%s: must be %s, got '%s'", what, zero_ok ? ">= 0" : "> 0", r->tok[i]);
    *v = x;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static int read_layers(struct reader *r, struct nn_qnet *q)
{
    long long v = 0;
    for (size_t l = 0; l < q->n_layers; l++) {
        struct nn_qlayer *L = &q->layers[l];
        int rc = next(r, "layer", 6);
        if (!rc)
            rc = get_int(r, 1, "layer start", 0, (long long)q->n, &v);
        if (!rc && (uint64_t)v != (l ? q->layers[l - 1].end : 0))
            rc = fail(r, "layer %zu starts at %lld, not where the last one ended", l, v);
        L->start = (uint32_t)v;
        if (!rc)
            rc = get_int(r, 2, "layer end", L->start + 1, (long long)q->n, &v);
        L->end = (uint32_t)v;
        if (!rc && l == 0 && L->end != q->n_in)
            rc = fail(r, "layer 0 must be the %zu inputs alone", q->n_in);
        if (!rc && l == q->n_layers - 1 && L->end != q->n)
            rc = fail(r, "the last layer must end at %zu", q->n);
        if (!rc)
            rc = get_float(r, 3, "scale", 0, &L->scale);
        if (!rc)
            rc = get_int(r, 4, "zero point", -128, 127, &v);
        L->zp = (int32_t)v;
        if (!rc)
            rc = get_float(r, 5, "pre-activation scale", l == 0, &L->pscale);
        if (!rc)
            rc = get_int(r, 6, "pre-activation zero point", -128, 127, &v);
        L->pzp = (int32_t)v;
        if (rc)
            return rc;
        for (uint32_t j = L->start; j < L->end; j++)
            q->layer_of[j] = (uint32_t)l;
    }
    return 0;
}

static int read_tables(struct reader *r, struct nn_qnet *q)
{
    long long v = 0;
    for (size_t k = 0; k < q->n_out; k++) {
        int rc = next(r, "out", 1);
        if (!rc)
            rc = get_int(r, 1, "output (a neuron of the last layer)",
                         (long long)q->layers[q->n_layers - 1].start, (long long)q->n - 1, &v);
        if (rc)
            return rc;
        q->out_map[k] = (uint32_t)v;
    }
    for (size_t t = 0; t < q->n_tables; t++) {
        int rc = next(r, "table", 1);
        if (rc)
            return rc;
        const char *h = r->tok[1];
        if (strlen(h) != 512)
            return fail(r, "a table is 512 hex digits, got %zu", strlen(h));
        for (int i = 0; i < 256; i++) {
            int a = hexval(h[2 * i]), b = hexval(h[2 * i + 1]);
            if (a < 0 || b < 0)
                return fail(r, "table: '%c%c' is not two lower-case hex digits", h[2 * i],
                            h[2 * i + 1]);
            q->tables[t * 256 + (size_t)i] = (int8_t)(uint8_t)(a * 16 + b);
        }
    }
    return 0;
}

/* Neuron j's line and its edges, from edge k on. */
static int read_neuron(struct reader *r, struct nn_qnet *q, uint32_t j, size_t *k)
{
    long long v = 0, n_ff = 0, n_rec = 0;
    struct nn_qneuron *u = &q->neuron[j];
    int rc = next(r, "neuron", 8);
    if (!rc && (rc = get_int(r, 1, "neuron", j, j, &v)))
        tv_error_prefix(r->err, "neurons come in order");
    if (!rc)
        rc = get_int(r, 2, "table", 0, (long long)q->n_tables - 1, &v);
    u->table = (uint32_t)v;
    if (!rc)
        rc = get_int(r, 3, "bias", -(1 << 30), 1 << 30, &v);
    u->bias = (int32_t)v;
    if (!rc)
        rc = get_int(r, 4, "multiplier", 0, INT32_MAX, &v);
    u->mult = (int32_t)v;
    if (!rc)
        rc = get_int(r, 5, "shift", 0, 62, &v);
    u->shift = (uint32_t)v;
    if (!rc)
        rc = get_float(r, 6, "accumulator scale", 1, &u->acc_scale);
    if (!rc)
        rc = get_int(r, 7, "feed-forward edges", 0, NN_QUANT_MAX_FANIN, &n_ff);
    if (!rc)
        rc = get_int(r, 8, "recurrent edges", 0, NN_QUANT_MAX_FANIN - n_ff, &n_rec);
    if (!rc && (uint64_t)(n_ff + n_rec) > q->n_edges - *k)
        rc = fail(r, "more edges than the %zu of the size line", q->n_edges);
    if (rc)
        return rc;
    uint32_t first = q->layers[q->layer_of[j]].start; /* of j's layer */
    q->row[j] = (uint32_t)*k;
    q->rec[j] = (uint32_t)(*k + (size_t)n_ff);
    for (long long e = 0; e < n_ff + n_rec; e++, (*k)++) {
        int ff = e < n_ff;
        rc = next(r, "e", 2);
        if (!rc)
            rc = get_int(r, 1, "source", 0, ff ? (long long)first - 1 : (long long)q->n - 1, &v);
        if (!rc && !ff && v < first)
            rc = fail(r, "a recurrent edge's source %lld is in a shallower layer", v);
        q->edges[*k].src = (uint32_t)v;
        if (!rc)
            rc = get_int(r, 2, "weight", -128, 127, &v);
        if (rc)
            return rc;
        q->edges[*k].w = (int8_t)v;
        q->n_recurrent += !ff;
    }
    return 0;
}

/* Version 2's scale lines, k = 0 .. n_in - 1. */
static int read_scale(struct reader *r, struct nn_qnet *q)
{
    q->in_scale = malloc((2 * q->n_in + 1) * sizeof *q->in_scale);
    if (!q->in_scale)
        return tv_error_set(r->err, TV_ENOMEM, "%s: out of memory", r->name);
    long long v = 0;
    for (size_t k = 0; k < q->n_in; k++) {
        int rc = next(r, "scale", 3);
        if (!rc)
            rc = get_int(r, 1, "scale input", (long long)k, (long long)k, &v);
        for (size_t i = 0; i < 2 && !rc; i++) {
            char *e;
            float x = strtof(r->tok[2 + i], &e);
            if (*e || e == r->tok[2 + i] || !isfinite(x))
                return fail(r, "scale %s: expected a finite number, got '%s'", i ? "mul" : "shift",
                            r->tok[2 + i]);
            q->in_scale[i * q->n_in + k] = x;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- version 3: channels and layers of filters ----------------------------- */

/* The channel lines, sorted by j and apart, each channel's pooled pixels in
 * one layer between the inputs' and the outputs'. */
static int read_chans(struct reader *r, struct nn_qnet *q)
{
    long long v[10] = {0};
    size_t next_j = q->n_in;
    for (size_t i = 0; i < q->n_chans; i++) {
        struct nn_qchan *c = &q->chans[i];
        int rc = next(r, "chan", 9);
        if (!rc)
            rc = get_int(r, 1, "channel pixel", (long long)next_j, (long long)q->n - 1, &v[1]);
        if (!rc)
            rc = get_int(r, 2, "channel height", 1, GENOME_CHANNEL_MAX_SIDE, &v[2]);
        if (!rc)
            rc = get_int(r, 3, "channel width", 1, GENOME_CHANNEL_MAX_SIDE, &v[3]);
        if (!rc)
            rc = get_int(r, 4, "channel pooling", 1, GENOME_POOL_MAX, &v[4]);
        if (!rc && (v[4] > v[2] || v[4] > v[3]))
            rc = fail(r, "channel pooling %lld is larger than its %lld x %lld map", v[4], v[2],
                      v[3]);
        if (!rc)
            rc = get_int(r, 5, "table", 0, (long long)q->n_tables - 1, &v[5]);
        if (!rc)
            rc = get_int(r, 6, "bias", -(1 << 30), 1 << 30, &v[6]);
        if (!rc)
            rc = get_int(r, 7, "multiplier", 0, INT32_MAX, &v[7]);
        if (!rc)
            rc = get_int(r, 8, "shift", 0, 62, &v[8]);
        float a = 0.0f;
        if (!rc)
            rc = get_float(r, 9, "accumulator scale", 1, &a);
        if (rc)
            return rc;
        *c = (struct nn_qchan){(uint32_t)v[1], (uint32_t)v[2], (uint32_t)v[3],
                               (uint32_t)v[4], (uint32_t)v[5], (int32_t)v[6],
                               (int32_t)v[7],  (uint32_t)v[8], a};
        size_t end = c->j + (size_t)(c->h / c->pool) * (c->w / c->pool);
        if (end > q->n)
            return fail(r, "the channel's %u x %u pooled pixels from %u pass the %zu neurons",
                        c->h / c->pool, c->w / c->pool, c->j, q->n);
        uint32_t l = q->layer_of[c->j];
        if (q->layer_of[end - 1] != l || l + 1 >= q->n_layers)
            return fail(r,
                        "the channel's pixels [%u, %zu) are not in one layer between the "
                        "inputs and the outputs",
                        c->j, end);
        next_j = end;
    }
    return 0;
}

/* The channel whose pooled map starts at neuron j and has h x w pixels, or
 * -1. */
static ptrdiff_t chan_at(const struct nn_qnet *q, uint32_t j, uint32_t h, uint32_t w)
{
    for (size_t i = 0; i < q->n_chans; i++)
        if (q->chans[i].j == j)
            return q->chans[i].h / q->chans[i].pool == h && q->chans[i].w / q->chans[i].pool == w
                       ? (ptrdiff_t)i
                       : -1;
    return -1;
}

/* Layer of filters v's sources and targets (after its conv line); *layer:
 * the layer of its targets, not shallower than the last layer's. */
static int read_ends(struct reader *r, struct nn_qnet *q, struct nn_qconv *v, uint32_t *layer)
{
    long long x = 0;
    uint32_t oh = (v->in_h + 2 * v->pad - v->k_h) / v->stride + 1;
    uint32_t ow = (v->in_w + 2 * v->pad - v->k_w) / v->stride + 1, deepest = 0;
    for (uint32_t k = 0; k < v->in_ch; k++) {
        int rc = next(r, "src", 1);
        if (!rc)
            rc = get_int(r, 1, "source map", 0, (long long)q->n - 1, &x);
        if (rc)
            return rc;
        size_t px = (size_t)v->in_h * v->in_w;
        if (!((size_t)x + px <= q->n_in || chan_at(q, (uint32_t)x, v->in_h, v->in_w) >= 0))
            return fail(r,
                        "source map %lld: neither %zu inputs nor a channel's %u x %u pooled "
                        "pixels",
                        x, px, v->in_h, v->in_w);
        q->conv_src[v->src0 + k] = (uint32_t)x;
        deepest = q->layer_of[x] > deepest ? q->layer_of[x] : deepest;
    }
    for (uint32_t k = 0; k < v->out_ch; k++) {
        int rc = next(r, "dst", 1);
        if (!rc)
            rc = get_int(r, 1, "target channel", 0, (long long)q->n_chans - 1, &x);
        if (rc)
            return rc;
        const struct nn_qchan *c = &q->chans[x];
        if (c->h != oh || c->w != ow)
            return fail(r, "target channel %lld: its map is %u x %u, the filters make %u x %u", x,
                        c->h, c->w, oh, ow);
        uint32_t l = q->layer_of[c->j];
        if (k == 0 && (l <= deepest || l < *layer))
            return fail(r,
                        "target channel %lld: its layer %u is not deeper than its sources' "
                        "or is shallower than the last filters'",
                        x, l);
        if (k > 0 && l != *layer)
            return fail(r, "target channel %lld: not in the layer of the first target", x);
        *layer = l;
        q->conv_dst[v->dst0 + k] = (uint32_t)x;
    }
    return 0;
}

/* The layers of filters: a conv line, its src, dst and c lines. */
static int read_convs(struct reader *r, struct nn_qnet *q)
{
    size_t *fan = calloc(q->n_chans, sizeof *fan), si = 0, di = 0, ci = 0;
    if (!fan)
        return tv_error_set(r->err, TV_ENOMEM, "%s: out of memory", r->name);
    long long v[10] = {0};
    uint32_t layer = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < q->n_convs; i++) {
        static const char *const what[9] = {"sources",      "targets",       "source height",
                                            "source width", "kernel height", "kernel width",
                                            "stride",       "padding",       "coefficients"};
        rc = next(r, "conv", 9);
        for (size_t t = 0; !rc && t < 9; t++) {
            long long lo = t == 7 ? 0 : 1, hi = (long long)q->n;
            hi = t == 1 ? (long long)q->n_chans : hi;
            hi = t == 2 || t == 3 ? GENOME_CHANNEL_MAX_SIDE : hi;
            hi = t == 4 || t == 5 ? GENOME_FILTER_MAX_K : t == 6 ? GENOME_FILTER_MAX_STRIDE : hi;
            hi = t == 7 ? (v[5] < v[6] ? v[5] : v[6]) - 1 : hi;
            lo = t == 8 ? 0 : lo;
            hi = t == 8 ? (long long)(q->n_coefs - ci) : hi;
            rc = get_int(r, t + 1, what[t], lo, hi, &v[t + 1]);
        }
        if (!rc && (v[3] + 2 * v[8] < v[5] || v[4] + 2 * v[8] < v[6]))
            rc = fail(r, "the kernel is larger than the padded source map");
        if (!rc && (si + (size_t)v[1] > q->n_conv_src || di + (size_t)v[2] > q->n_conv_dst))
            rc = fail(r, "more sources or targets than the file's %zu lines allow", q->n_conv_src);
        if (rc)
            break;
        struct nn_qconv *c = &q->convs[i];
        *c = (struct nn_qconv){(uint32_t)v[1],
                               (uint32_t)v[2],
                               (uint32_t)v[3],
                               (uint32_t)v[4],
                               (uint32_t)v[5],
                               (uint32_t)v[6],
                               (uint32_t)v[7],
                               (uint32_t)v[8],
                               (uint32_t)si,
                               (uint32_t)di,
                               ci,
                               (size_t)v[9]};
        si += c->in_ch, di += c->out_ch;
        rc = read_ends(r, q, c, &layer);
        for (size_t k = 0; !rc && k < c->n_coefs; k++, ci++) {
            long long x[5] = {0};
            long long hi[5] = {c->out_ch - 1, c->in_ch - 1, c->k_h - 1, c->k_w - 1, 127};
            static const char *const cw[5] = {"coefficient target", "coefficient source",
                                              "coefficient row", "coefficient column",
                                              "coefficient"};
            rc = next(r, "c", 5);
            for (size_t t = 0; !rc && t < 5; t++)
                rc = get_int(r, t + 1, cw[t], t == 4 ? -128 : 0, hi[t], &x[t]);
            uint32_t tc = rc ? 0 : q->conv_dst[c->dst0 + x[0]];
            if (!rc && ++fan[tc] > NN_QUANT_MAX_FANIN)
                rc = fail(r, "channel %u has more than %d coefficients", tc, NN_QUANT_MAX_FANIN);
            q->coefs[ci] = (struct nn_qcoef){(uint32_t)x[0], (uint32_t)x[1], (uint8_t)x[2],
                                             (uint8_t)x[3], (int8_t)x[4]};
        }
    }
    if (!rc && ci != q->n_coefs)
        rc = fail(r, "%zu coefficients, the convs line says %zu", ci, q->n_coefs);
    q->n_conv_src = si, q->n_conv_dst = di;
    free(fan);
    return rc;
}

/* Version 3's convs line and arrays (before the scale lines). */
static int read_conv_sizes(struct reader *r, struct nn_qnet *q, size_t len, int *scaled)
{
    long long v[5] = {0};
    int rc = next(r, "convs", 4);
    if (!rc)
        rc = get_int(r, 1, "channels", 1, (long long)(len / 16 + 1), &v[1]);
    if (!rc)
        rc = get_int(r, 2, "layers of filters", 0, (long long)(len / 16 + 1), &v[2]);
    if (!rc)
        rc = get_int(r, 3, "coefficients", 0, (long long)(len / 8 + 1), &v[3]);
    if (!rc)
        rc = get_int(r, 4, "scaled", 0, 1, &v[4]);
    if (rc)
        return rc;
    q->n_chans = (size_t)v[1], q->n_convs = (size_t)v[2], q->n_coefs = (size_t)v[3];
    *scaled = (int)v[4];
    /* every source and target has a line of its own */
    q->n_conv_src = q->n_conv_dst = len / 6 + 1;
    q->chans = calloc(q->n_chans, sizeof *q->chans);
    q->convs = calloc(q->n_convs + 1, sizeof *q->convs);
    q->conv_src = malloc(q->n_conv_src * sizeof *q->conv_src);
    q->conv_dst = malloc(q->n_conv_dst * sizeof *q->conv_dst);
    q->coefs = malloc((q->n_coefs + 1) * sizeof *q->coefs);
    if (!q->chans || !q->convs || !q->conv_src || !q->conv_dst || !q->coefs)
        return tv_error_set(r->err, TV_ENOMEM, "%s: out of memory", r->name);
    return 0;
}

static int read_body(struct reader *r, struct nn_qnet *q, int version)
{
    size_t len = (size_t)(r->end - r->p);
    long long v[6] = {0};
    int rc = next(r, "size", 6);
    /* bounds from the file's length, so that a short file cannot ask for
     * gigabytes: every output, table, edge and neuron but the inputs has a
     * line of its own */
    static const char *const what[6] = {"neurons", "inputs", "outputs",
                                        "layers",  "tables", "edges"};
    long long hi[6] = {NN_QNET_MAX_NEURONS, NN_QNET_MAX_NEURONS, NN_QNET_MAX_NEURONS,
                       NN_QNET_MAX_NEURONS, NN_QFLAT_MAX_TABLES, NN_QNET_MAX_EDGES};
    for (int i = 0; !rc && i < 6; i++)
        rc = get_int(r, (size_t)i + 1, what[i],
                     i == 0             ? 2
                     : i == 4 || i == 5 ? 0
                                        : 1,
                     hi[i], &v[i]);
    if (!rc && (v[1] + v[2] > v[0] || v[3] > v[0] || v[1] > 4 * (long long)len + 64))
        rc = fail(r, "inconsistent sizes (inputs + outputs > neurons, or more layers than "
                     "neurons, or far more inputs than the file holds)");
    /* (a channel's pixels have no line: version 3 allows more neurons) */
    long long room = version == 3 ? 16 * (long long)len : (long long)len / 8;
    if (!rc && (v[0] - v[1] > room || v[4] > (long long)len / 512 || v[5] > (long long)len / 4))
        rc = fail(r, "the file is too short for these sizes");
    if (!rc && v[3] < 2)
        rc = fail(r, "a network has at least 2 layers (inputs and outputs)");
    if (rc)
        return rc;
    q->n = (size_t)v[0], q->n_in = (size_t)v[1], q->n_out = (size_t)v[2];
    q->n_layers = (size_t)v[3], q->n_tables = (size_t)v[4], q->n_edges = (size_t)v[5];
    q->out_map = malloc(q->n_out * sizeof *q->out_map);
    q->layers = calloc(q->n_layers, sizeof *q->layers);
    q->layer_of = malloc(q->n * sizeof *q->layer_of);
    q->neuron = calloc(q->n, sizeof *q->neuron);
    q->row = calloc(q->n + 1, sizeof *q->row);
    q->rec = calloc(q->n, sizeof *q->rec);
    q->edges = malloc((q->n_edges ? q->n_edges : 1) * sizeof *q->edges);
    q->tables = malloc((q->n_tables ? q->n_tables : 1) * 256);
    if (!q->out_map || !q->layers || !q->layer_of || !q->neuron || !q->row || !q->rec ||
        !q->edges || !q->tables)
        return tv_error_set(r->err, TV_ENOMEM, "%s: out of memory", r->name);
    int scaled = version == 2;
    rc = version == 3 ? read_conv_sizes(r, q, len, &scaled) : 0;
    if (!rc && scaled)
        rc = read_scale(r, q);
    if (!rc)
        rc = read_layers(r, q);
    if (!rc)
        rc = read_tables(r, q);
    if (!rc && version == 3)
        rc = read_chans(r, q);
    if (!rc && version == 3)
        rc = read_convs(r, q);
    size_t k = 0;
    for (uint32_t j = (uint32_t)q->n_in; !rc && j < q->n; j++) {
        if (!is_pixel(q, j))
            rc = read_neuron(r, q, j, &k);
        else /* no edges */
            q->row[j] = q->rec[j] = (uint32_t)k;
    }
    if (!rc && k != q->n_edges)
        rc = fail(r, "%zu edges, the size line says %zu", k, q->n_edges);
    q->row[q->n] = (uint32_t)k;
    if (!rc)
        rc = next(r, "end", 0);
    while (!rc && r->p < r->end) {
        char c = *r->p++;
        if (c != '\n' && c != ' ' && c != '\t' && c != '\r')
            rc = fail(r, "text after 'end'");
    }
    return rc;
}

int nn_qnet_read(const char *text, size_t len, const char *name, struct nn_qnet **out,
                 struct tv_error *err)
{
    *out = NULL;
    struct reader r = {.p = text, .end = text + len, .name = name ? name : "NET.q", .err = err};
    int rc = next(&r, "trevo-qnet", 1);
    long long v = 0;
    if (!rc && get_int(&r, 1, "version", 0, INT32_MAX, &v))
        rc = err ? err->code : TV_EFORMAT;
    if (!rc && (v < 1 || v > NN_QNET_VERSION))
        rc = fail(&r, "version %lld is not one this trevo reads (1 to %d)", v, NN_QNET_VERSION);
    if (rc)
        return rc;
    struct nn_qnet *q = calloc(1, sizeof *q);
    if (!q)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", r.name);
    rc = read_body(&r, q, (int)v);
    if (rc) {
        nn_qnet_free(q);
        return rc;
    }
    *out = q;
    return 0;
}
