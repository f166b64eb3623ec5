/* conv.c -- the convolutional genes: channels, filters and their
 * coefficients (genome.h, "channels and filters"): lookups, copy and
 * equality, insertion, canonical order and validation; their mutation and
 * crossover are apart (conv_evolve.c), built on these and never called by
 * them. A genome without channels never gets here past a count check, so
 * that its results stay what they were. */
#include "genome.h"
#include "conv_genes.h"
#include "lookup.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

size_t genome_filter_out(size_t in, size_t k, size_t stride, size_t pad)
{
    if (k == 0 || stride == 0 || in + 2 * pad < k)
        return 0;
    return (in + 2 * pad - k) / stride + 1;
}

ptrdiff_t genome_find_channel(const struct genome *g, uint32_t id)
{
    size_t i = tv_lower_u32(g->channels, sizeof *g->channels, offsetof(struct genome_channel, id),
                            0, g->n_channels, id);
    return i < g->n_channels && g->channels[i].id == id ? (ptrdiff_t)i : -1;
}

static int filter_cmp(const void *a, const void *b)
{
    const struct genome_filter *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

/* First filter index whose key is >= (from, to). */
static size_t filter_lower(const struct genome *g, uint32_t from, uint32_t to)
{
    const struct genome_filter key = {.from = from, .to = to};
    size_t lo = 0, hi = g->n_filters;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (filter_cmp(&g->filters[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

ptrdiff_t genome_find_filter(const struct genome *g, uint32_t from, uint32_t to)
{
    size_t i = filter_lower(g, from, to);
    return i < g->n_filters && g->filters[i].from == from && g->filters[i].to == to ? (ptrdiff_t)i
                                                                                    : -1;
}

ptrdiff_t genome_pixel_channel(const struct genome *g, uint32_t id)
{
    for (size_t i = 0; i < g->n_channels; i++) {
        const struct genome_channel *c = &g->channels[i];
        size_t ph, pw;
        if (id >= c->first && (uint64_t)id - c->first < genome_channel_pooled(c, &ph, &pw))
            return (ptrdiff_t)i;
    }
    return -1;
}

int genome_source_depth(const struct genome *g, uint32_t id, float *depth)
{
    ptrdiff_t k = genome_find_neuron(g, id);
    if (k >= 0) {
        *depth = g->neurons[k].depth;
        return 0;
    }
    k = genome_pixel_channel(g, id);
    if (k < 0)
        return -1;
    *depth = g->channels[k].depth;
    return 0;
}

/* ---- life cycle and insertion ------------------------------------------ */

int genome_reserve_conv(struct genome *g, size_t n_channels, size_t n_filters, size_t n_coefs,
                        struct tv_error *err)
{
    if (tv_grow((void **)&g->channels, &g->cap_channels, n_channels, sizeof *g->channels, NULL) ||
        tv_grow((void **)&g->filters, &g->cap_filters, n_filters, sizeof *g->filters, NULL) ||
        /* one more while there are filters: the array exists when a filter
         * (even one without coefficients, before validation) points into it */
        tv_grow((void **)&g->coefs, &g->cap_coefs, n_coefs + (n_filters > 0), sizeof *g->coefs,
                NULL))
        return tv_error_set(err, TV_ENOMEM,
                            "genome: out of memory for %zu channels, %zu filters, %zu coefficients",
                            n_channels, n_filters, n_coefs);
    return 0;
}

int genome_copy_conv(struct genome *dst, const struct genome *src, struct tv_error *err)
{
    dst->n_channels = dst->n_filters = dst->n_coefs = 0;
    if (!src->n_channels && !src->n_filters && !src->n_coefs)
        return 0;
    int rc = genome_reserve_conv(dst, src->n_channels, src->n_filters, src->n_coefs, err);
    if (rc)
        return rc;
    if (src->n_channels)
        memcpy(dst->channels, src->channels, src->n_channels * sizeof *src->channels);
    if (src->n_filters)
        memcpy(dst->filters, src->filters, src->n_filters * sizeof *src->filters);
    if (src->n_coefs)
        memcpy(dst->coefs, src->coefs, src->n_coefs * sizeof *src->coefs);
    dst->n_channels = src->n_channels;
    dst->n_filters = src->n_filters;
    dst->n_coefs = src->n_coefs;
    return 0;
}

int genome_equal_conv(const struct genome *a, const struct genome *b)
{
    if (a->n_channels != b->n_channels || a->n_filters != b->n_filters || a->n_coefs != b->n_coefs)
        return 0;
    for (size_t i = 0; i < a->n_channels; i++) {
        const struct genome_channel *x = &a->channels[i], *y = &b->channels[i];
        if (x->id != y->id || x->kind != y->kind || x->act != y->act || x->pool != y->pool ||
            x->h != y->h || x->w != y->w || !same_bits(x->bias, y->bias) ||
            !same_bits(x->depth, y->depth) || x->first != y->first)
            return 0;
    }
    for (size_t i = 0; i < a->n_filters; i++) {
        const struct genome_filter *x = &a->filters[i], *y = &b->filters[i];
        if (filter_cmp(x, y) || x->kh != y->kh || x->kw != y->kw || x->stride != y->stride ||
            x->pad != y->pad || x->coef0 != y->coef0 || x->n_coefs != y->n_coefs)
            return 0;
    }
    for (size_t i = 0; i < a->n_coefs; i++)
        if (a->coefs[i].ky != b->coefs[i].ky || a->coefs[i].kx != b->coefs[i].kx ||
            !same_bits(a->coefs[i].w, b->coefs[i].w))
            return 0;
    return 1;
}

int genome_add_channel(struct genome *g, const struct genome_channel *c, struct tv_error *err)
{
    if (genome_find_channel(g, c->id) >= 0)
        return tv_error_set(err, TV_EINVAL, "channel %u already exists", c->id);
    int rc = genome_reserve_conv(g, g->n_channels + 1, 0, 0, err);
    if (rc)
        return rc;
    size_t i = g->n_channels;
    while (i > 0 && g->channels[i - 1].id > c->id)
        i--;
    memmove(&g->channels[i + 1], &g->channels[i], (g->n_channels - i) * sizeof *g->channels);
    g->channels[i] = *c;
    g->n_channels++;
    return 0;
}

/* (conv_genes.h) */
int genome_coef_cmp(const void *a, const void *b)
{
    const struct genome_coef *x = a, *y = b;
    if (x->ky != y->ky)
        return x->ky < y->ky ? -1 : 1;
    return (x->kx > y->kx) - (x->kx < y->kx);
}

/* Sorts filter f's coefficients (conv_genes.h). */
int genome_sort_coefs(struct genome *g, const struct genome_filter *f, struct tv_error *err)
{
    struct genome_coef *c = g->coefs + f->coef0;
    if (f->n_coefs > 1)
        qsort(c, f->n_coefs, sizeof *c, genome_coef_cmp);
    for (size_t k = 1; k < f->n_coefs; k++)
        if (!genome_coef_cmp(&c[k - 1], &c[k]))
            return tv_error_set(err, TV_EINVAL, "filter %u -> %u: coefficient (%u, %u) given twice",
                                f->from, f->to, c[k].ky, c[k].kx);
    return 0;
}

int genome_add_filter(struct genome *g, const struct genome_filter *f,
                      const struct genome_coef *coefs, size_t n, struct tv_error *err)
{
    if (genome_find_filter(g, f->from, f->to) >= 0)
        return tv_error_set(err, TV_EINVAL, "filter %u -> %u already exists", f->from, f->to);
    if (n > UINT32_MAX - g->n_coefs)
        return tv_error_set(err, TV_ELIMIT, "filter %u -> %u: too many coefficients", f->from,
                            f->to);
    int rc = genome_reserve_conv(g, 0, g->n_filters + 1, g->n_coefs + n, err);
    if (rc)
        return rc;
    size_t i = filter_lower(g, f->from, f->to);
    uint32_t c0 = i < g->n_filters ? g->filters[i].coef0 : (uint32_t)g->n_coefs;
    memmove(&g->coefs[c0 + n], &g->coefs[c0], (g->n_coefs - c0) * sizeof *g->coefs);
    if (n)
        memcpy(&g->coefs[c0], coefs, n * sizeof *coefs);
    for (size_t k = i; k < g->n_filters; k++)
        g->filters[k].coef0 += (uint32_t)n;
    memmove(&g->filters[i + 1], &g->filters[i], (g->n_filters - i) * sizeof *g->filters);
    g->filters[i] = *f;
    g->filters[i].coef0 = c0;
    g->filters[i].n_coefs = (uint32_t)n;
    g->n_filters++;
    g->n_coefs += n;
    rc = genome_sort_coefs(g, &g->filters[i], err);
    if (rc)
        genome_remove_filter_at(g, i);
    return rc;
}

void genome_remove_filter_at(struct genome *g, size_t i)
{
    struct genome_filter f = g->filters[i];
    memmove(&g->coefs[f.coef0], &g->coefs[f.coef0 + f.n_coefs],
            (g->n_coefs - f.coef0 - f.n_coefs) * sizeof *g->coefs);
    g->n_coefs -= f.n_coefs;
    memmove(&g->filters[i], &g->filters[i + 1], (g->n_filters - i - 1) * sizeof *g->filters);
    g->n_filters--;
    for (size_t j = i; j < g->n_filters; j++)
        g->filters[j].coef0 -= f.n_coefs;
}

void genome_remove_channel_at(struct genome *g, size_t i)
{
    struct genome_channel c = g->channels[i];
    size_t ph, pw, n_px = genome_channel_pooled(&c, &ph, &pw);
    for (size_t j = g->n_filters; j-- > 0;)
        if (g->filters[j].from == c.id || g->filters[j].to == c.id)
            genome_remove_filter_at(g, j);
    size_t w = 0;
    if (c.kind == GENOME_CHANNEL_INPUT) /* its pixels are neurons: they stay */
        n_px = 0;
    for (size_t r = 0; r < g->n_conns; r++)
        if (!(g->conns[r].from >= c.first && (uint64_t)g->conns[r].from - c.first < n_px)) {
            if (g->delays) /* (genome.h, "synaptic delays") */
                g->delays[w] = g->delays[r];
            g->conns[w++] = g->conns[r];
        }
    g->n_conns = w;
    memmove(&g->channels[i], &g->channels[i + 1], (g->n_channels - i - 1) * sizeof *g->channels);
    g->n_channels--;
}

static int channel_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct genome_channel *)a)->id, y = ((const struct genome_channel *)b)->id;
    return (x > y) - (x < y);
}

int genome_conv_canonicalize(struct genome *g, struct tv_error *err)
{
    if (g->n_channels > 1)
        qsort(g->channels, g->n_channels, sizeof *g->channels, channel_cmp);
    for (size_t i = 1; i < g->n_channels; i++)
        if (g->channels[i].id == g->channels[i - 1].id)
            return tv_error_set(err, TV_EINVAL, "channel %u is listed twice", g->channels[i].id);
    if (g->n_filters == 0)
        return 0;
    /* sort the filters, then repack the coefficients in the new order */
    for (size_t i = 0; i < g->n_filters; i++)
        if ((uint64_t)g->filters[i].coef0 + g->filters[i].n_coefs > g->n_coefs)
            return tv_error_set(err, TV_EINVAL, "filter %u -> %u: coefficients out of range",
                                g->filters[i].from, g->filters[i].to);
    qsort(g->filters, g->n_filters, sizeof *g->filters, filter_cmp);
    for (size_t i = 1; i < g->n_filters; i++)
        if (!filter_cmp(&g->filters[i - 1], &g->filters[i]))
            return tv_error_set(err, TV_EINVAL, "filter %u -> %u is listed twice",
                                g->filters[i].from, g->filters[i].to);
    struct genome_coef *c = malloc((g->n_coefs ? g->n_coefs : 1) * sizeof *c);
    if (!c)
        return tv_error_set(err, TV_ENOMEM, "genome: out of memory sorting filters");
    size_t k = 0;
    for (size_t i = 0; i < g->n_filters; i++) {
        struct genome_filter *f = &g->filters[i];
        if (f->n_coefs > g->n_coefs - k) {
            free(c);
            return tv_error_set(err, TV_EINVAL, "filter %u -> %u: coefficients overlap", f->from,
                                f->to);
        }
        memcpy(c + k, g->coefs + f->coef0, f->n_coefs * sizeof *c);
        f->coef0 = (uint32_t)k;
        k += f->n_coefs;
    }
    memcpy(g->coefs, c, k * sizeof *c);
    free(c);
    for (size_t i = 0; i < g->n_filters; i++) {
        int rc = genome_sort_coefs(g, &g->filters[i], err);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- validation -------------------------------------------------------- */

static int validate_channel(const struct genome *g, size_t i, struct tv_error *err)
{
    const struct genome_channel *c = &g->channels[i];
    if (i > 0 && c->id <= g->channels[i - 1].id)
        return tv_error_set(err, TV_EINVAL,
                            c->id == g->channels[i - 1].id
                                ? "channel %u: id listed twice"
                                : "channel %u: out of order (channels must be sorted by id)",
                            c->id);
    if (c->kind > GENOME_CHANNEL_HIDDEN)
        return tv_error_set(err, TV_EINVAL, "channel %u: unknown kind %u", c->id, c->kind);
    if (c->act >= GENOME_ACT_COUNT)
        return tv_error_set(err, TV_EINVAL, "channel %u: unknown activation %u", c->id, c->act);
    if (c->h < 1 || c->w < 1 || c->h > GENOME_CHANNEL_MAX_SIDE || c->w > GENOME_CHANNEL_MAX_SIDE)
        return tv_error_set(err, TV_EINVAL, "channel %u: a %ux%u map is outside 1..%d", c->id, c->h,
                            c->w, GENOME_CHANNEL_MAX_SIDE);
    if (c->pool < 1 || c->pool > GENOME_POOL_MAX || c->pool > c->h || c->pool > c->w)
        return tv_error_set(err, TV_EINVAL, "channel %u: pooling %u does not fit a %ux%u map",
                            c->id, c->pool, c->h, c->w);
    if (!isfinite(c->bias))
        return tv_error_set(err, TV_EINVAL, "channel %u: bias is not finite", c->id);
    size_t ph, pw, n = genome_channel_pooled(c, &ph, &pw);
    if ((uint64_t)c->first + n > GENOME_ID_NONE)
        return tv_error_set(err, TV_EINVAL, "channel %u: pixel ids %u.. pass the largest id", c->id,
                            c->first);
    if (c->kind == GENOME_CHANNEL_INPUT) {
        if (c->pool != 1 || c->act != GENOME_ACT_IDENTITY || c->bias != 0.0f || c->depth != 0.0f)
            return tv_error_set(err, TV_EINVAL,
                                "channel %u: an input channel has pool 1, activation identity, "
                                "bias 0 and depth 0",
                                c->id);
        /* its pixels are input neurons first .. first + n - 1: ids are
         * sorted, so they are n consecutive genes */
        ptrdiff_t k = genome_find_neuron(g, c->first);
        if (k < 0 || (size_t)k + n > g->n_neurons || g->neurons[k + n - 1].id != c->first + n - 1)
            return tv_error_set(err, TV_EINVAL,
                                "channel %u: input neurons %u..%llu do not all exist", c->id,
                                c->first, (unsigned long long)c->first + n - 1);
        for (size_t j = 0; j < n; j++)
            if (g->neurons[k + j].kind != GENOME_INPUT)
                return tv_error_set(err, TV_EINVAL, "channel %u: neuron %u is not an input", c->id,
                                    g->neurons[k + j].id);
        return 0;
    }
    if (!(c->depth > 0.0f && c->depth < 1.0f))
        return tv_error_set(err, TV_EINVAL, "channel %u: depth %g is outside (0, 1)", c->id,
                            (double)c->depth);
    /* no neuron has one of its ids: the first neuron at or above first */
    size_t lo = genome_neuron_lower(g, c->first);
    if (lo < g->n_neurons && (uint64_t)g->neurons[lo].id - c->first < n)
        return tv_error_set(err, TV_EINVAL, "channel %u: pixel id %u is also a neuron", c->id,
                            g->neurons[lo].id);
    return 0;
}

/* Pixel ranges do not overlap: sorted by first, each ends before the next. */
static int cmp_range(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static int validate_ranges(const struct genome *g, struct tv_error *err)
{
    uint64_t(*r)[3] = malloc(g->n_channels * sizeof *r);
    if (!r)
        return tv_error_set(err, TV_ENOMEM, "validate: out of memory");
    for (size_t i = 0; i < g->n_channels; i++) {
        size_t ph, pw;
        r[i][0] = g->channels[i].first;
        r[i][1] = g->channels[i].first + genome_channel_pooled(&g->channels[i], &ph, &pw);
        r[i][2] = g->channels[i].id;
    }
    qsort(r, g->n_channels, sizeof *r, cmp_range);
    int rc = 0;
    for (size_t i = 1; i < g->n_channels && !rc; i++)
        if (r[i][0] < r[i - 1][1])
            rc = tv_error_set(err, TV_EINVAL, "channel %llu: pixel id %llu is also channel %llu's",
                              (unsigned long long)r[i][2], (unsigned long long)r[i][0],
                              (unsigned long long)r[i - 1][2]);
    free(r);
    return rc;
}

static int validate_filter(const struct genome *g, size_t i, size_t coef0, struct tv_error *err)
{
    const struct genome_filter *f = &g->filters[i];
    if (i > 0 && filter_cmp(&g->filters[i - 1], f) >= 0)
        return tv_error_set(err, TV_EINVAL,
                            filter_cmp(&g->filters[i - 1], f) == 0
                                ? "filter %u -> %u: key listed twice"
                                : "filter %u -> %u: out of (from, to) order",
                            f->from, f->to);
    ptrdiff_t a = genome_find_channel(g, f->from), b = genome_find_channel(g, f->to);
    if (a < 0 || b < 0)
        return tv_error_set(err, TV_EINVAL, "filter %u -> %u: channel %u does not exist", f->from,
                            f->to, a < 0 ? f->from : f->to);
    const struct genome_channel *src = &g->channels[a], *dst = &g->channels[b];
    if (dst->kind != GENOME_CHANNEL_HIDDEN)
        return tv_error_set(err, TV_EINVAL, "filter %u -> %u: ends in input channel %u", f->from,
                            f->to, f->to);
    if (!(src->depth < dst->depth))
        return tv_error_set(err, TV_EINVAL,
                            "filter %u -> %u: depth %g to %g does not increase (filters are "
                            "feed-forward)",
                            f->from, f->to, (double)src->depth, (double)dst->depth);
    if (f->kh < 1 || f->kw < 1 || f->kh > GENOME_FILTER_MAX_K || f->kw > GENOME_FILTER_MAX_K ||
        f->stride < 1 || f->stride > GENOME_FILTER_MAX_STRIDE || f->pad >= f->kh || f->pad >= f->kw)
        return tv_error_set(err, TV_EINVAL,
                            "filter %u -> %u: a %ux%u kernel with stride %u, pad %u (kernels are "
                            "1..%d, stride 1..%d, pad below the kernel)",
                            f->from, f->to, f->kh, f->kw, f->stride, f->pad, GENOME_FILTER_MAX_K,
                            GENOME_FILTER_MAX_STRIDE);
    size_t ph, pw;
    genome_channel_pooled(src, &ph, &pw);
    size_t oh = genome_filter_out(ph, f->kh, f->stride, f->pad);
    size_t ow = genome_filter_out(pw, f->kw, f->stride, f->pad);
    if (oh != dst->h || ow != dst->w)
        return tv_error_set(err, TV_EINVAL,
                            "filter %u -> %u: a %ux%u kernel with stride %u, pad %u over %zux%zu "
                            "gives %zux%zu, channel %u is %ux%u",
                            f->from, f->to, f->kh, f->kw, f->stride, f->pad, ph, pw, oh, ow, f->to,
                            dst->h, dst->w);
    if (f->coef0 != coef0 || f->n_coefs > g->n_coefs - coef0)
        return tv_error_set(err, TV_EINVAL,
                            "filter %u -> %u: coefficients at %u (%u of them), expected at %zu "
                            "of %zu",
                            f->from, f->to, f->coef0, f->n_coefs, coef0, g->n_coefs);
    if (f->n_coefs == 0)
        return tv_error_set(err, TV_EINVAL,
                            "filter %u -> %u: no coefficient (an all-zero filter is absent)",
                            f->from, f->to);
    for (size_t k = 0; k < f->n_coefs; k++) {
        const struct genome_coef *c = &g->coefs[coef0 + k];
        if (c->ky >= f->kh || c->kx >= f->kw)
            return tv_error_set(err, TV_EINVAL,
                                "filter %u -> %u: coefficient (%u, %u) is outside the %ux%u kernel",
                                f->from, f->to, c->ky, c->kx, f->kh, f->kw);
        if (k > 0 && genome_coef_cmp(c - 1, c) >= 0)
            return tv_error_set(
                err, TV_EINVAL, "filter %u -> %u: coefficient (%u, %u) %s", f->from, f->to, c->ky,
                c->kx, genome_coef_cmp(c - 1, c) ? "out of (ky, kx) order" : "listed twice");
        if (!isfinite(c->w))
            return tv_error_set(err, TV_EINVAL,
                                "filter %u -> %u: coefficient (%u, %u) is not finite", f->from,
                                f->to, c->ky, c->kx);
    }
    return 0;
}

/* The connections that touch a pixel: feed-forward out of it, none into a
 * hidden channel's. (genome_validate checks the rest of every connection.) */
static int validate_pixel_conns(const struct genome *g, struct tv_error *err)
{
    for (size_t i = 0; i < g->n_conns; i++) {
        const struct genome_conn *c = &g->conns[i];
        if (genome_find_neuron(g, c->to) < 0) {
            ptrdiff_t k = genome_pixel_channel(g, c->to);
            if (k >= 0)
                return tv_error_set(err, TV_EINVAL,
                                    "connection %zu (%u -> %u): ends in a pixel of channel %u", i,
                                    c->from, c->to, g->channels[k].id);
            continue; /* genome_validate names the missing neuron */
        }
        if (genome_find_neuron(g, c->from) >= 0)
            continue;
        ptrdiff_t k = genome_pixel_channel(g, c->from);
        float dt = g->neurons[genome_find_neuron(g, c->to)].depth;
        if (k >= 0 && !(g->channels[k].depth < dt))
            return tv_error_set(err, TV_EINVAL,
                                "connection %zu (%u -> %u): from a pixel of channel %u at depth "
                                "%g to depth %g is not feed-forward",
                                i, c->from, c->to, g->channels[k].id, (double)g->channels[k].depth,
                                (double)dt);
    }
    return 0;
}

int genome_validate_conv(const struct genome *g, const struct genome_limits *limits,
                         struct tv_error *err)
{
    if (!g->n_channels && !g->n_filters && !g->n_coefs)
        return 0;
    if (!limits)
        limits = &genome_default_limits;
    if (g->n_channels > GENOME_MAX_CHANNELS || g->n_filters > GENOME_MAX_FILTERS)
        return tv_error_set(err, TV_ELIMIT,
                            "genome has %zu channels and %zu filters, more than the limits of %d "
                            "and %zu",
                            g->n_channels, g->n_filters, GENOME_MAX_CHANNELS, GENOME_MAX_FILTERS);
    if (g->n_coefs > limits->max_conns || g->n_coefs > UINT32_MAX)
        return tv_error_set(err, TV_ELIMIT,
                            "genome has %zu filter coefficients, more than the limit of %zu",
                            g->n_coefs, limits->max_conns);
    size_t n_px = 0;
    for (size_t i = 0; i < g->n_channels; i++) {
        int rc = validate_channel(g, i, err);
        if (rc)
            return rc;
        size_t ph, pw;
        if (g->channels[i].kind == GENOME_CHANNEL_HIDDEN)
            n_px += genome_channel_pooled(&g->channels[i], &ph, &pw);
    }
    if (n_px > limits->max_neurons - (limits->max_neurons < g->n_neurons ? 0 : g->n_neurons))
        return tv_error_set(err, TV_ELIMIT,
                            "genome has %zu neurons and %zu pixels, more than the limit of %zu",
                            g->n_neurons, n_px, limits->max_neurons);
    int rc = g->n_channels > 1 ? validate_ranges(g, err) : 0;
    size_t coef0 = 0;
    for (size_t i = 0; i < g->n_filters && !rc; i++) {
        rc = validate_filter(g, i, coef0, err);
        coef0 += g->filters[i].n_coefs;
    }
    if (!rc && coef0 != g->n_coefs)
        rc = tv_error_set(err, TV_EINVAL, "genome has %zu coefficients, its filters %zu",
                          g->n_coefs, coef0);
    if (!rc)
        rc = validate_pixel_conns(g, err);
    return rc;
}
