/* conv_evolve.c -- the mutation and crossover of the convolutional genes
 * (genome_mutate_conv, genome_crossover_conv; genome.h, "channels and
 * filters"). Apart from the genes themselves (conv.c: lookups, insertion,
 * canonical order, validation), which these call and which call nothing
 * here; a genome without channels leaves here at once.
 */
#include "genome.h"
#include "conv_genes.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/* Removes coefficient k of filter i (the filter stays, perhaps empty). */
static void remove_coef(struct genome *g, size_t i, size_t k)
{
    size_t at = g->filters[i].coef0 + k;
    memmove(&g->coefs[at], &g->coefs[at + 1], (g->n_coefs - at - 1) * sizeof *g->coefs);
    g->n_coefs--;
    g->filters[i].n_coefs--;
    for (size_t j = i + 1; j < g->n_filters; j++)
        g->filters[j].coef0--;
}

/* ---- mutation ------------------------------------------------------------ */

/* Within [-max, max] (max <= 0: within the float range). */
static float held(double v, double max)
{
    double m = max > 0 && max < FLT_MAX ? max : FLT_MAX;
    return (float)(v > m ? m : v < -m ? -m : v);
}

/* Perturbs or replaces v: with probability rate_replace a draw of sd_init,
 * else with probability rate_perturb v plus a draw of sd. */
static float vary(float v, double rate_replace, double rate_perturb, double sd, double sd_init,
                  double max, struct tv_rng *rng)
{
    double u = tv_rng_uniform(rng);
    if (u < rate_replace)
        return held(sd_init * tv_rng_normal(rng), max);
    if (u < rate_replace + rate_perturb)
        return held(v + sd * tv_rng_normal(rng), max);
    return v;
}

static void vary_values(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng)
{
    if (cfg->weight_replace_rate > 0 || cfg->weight_perturb_rate > 0)
        for (size_t i = 0; i < g->n_coefs; i++)
            g->coefs[i].w = vary(g->coefs[i].w, cfg->weight_replace_rate, cfg->weight_perturb_rate,
                                 cfg->weight_perturb_sd, cfg->weight_init_sd, cfg->weight_max, rng);
    if (cfg->bias_replace_rate > 0 || cfg->bias_perturb_rate > 0)
        for (size_t i = 0; i < g->n_channels; i++)
            if (g->channels[i].kind == GENOME_CHANNEL_HIDDEN)
                g->channels[i].bias =
                    vary(g->channels[i].bias, cfg->bias_replace_rate, cfg->bias_perturb_rate,
                         cfg->bias_perturb_sd, cfg->bias_init_sd, cfg->weight_max, rng);
}

/* A geometry (kh, kw, stride, pad) that makes dst's map from src's pooled
 * one, the kernel nearest 3 x 3 among strides 1..4 and pads 0..3; 0 if
 * none fits. */
static int fit_geometry(const struct genome_channel *src, const struct genome_channel *dst,
                        struct genome_filter *f)
{
    size_t ph, pw, best = SIZE_MAX;
    genome_channel_pooled(src, &ph, &pw);
    for (size_t s = 1; s <= 4; s++)
        for (size_t pad = 0; pad <= 3; pad++) {
            /* out = (in + 2 pad - k) / s + 1: the smallest k giving out */
            long kh = (long)(ph + 2 * pad) - (long)((dst->h - 1) * s);
            long kw = (long)(pw + 2 * pad) - (long)((dst->w - 1) * s);
            if (kh < 1 || kw < 1 || kh > GENOME_FILTER_MAX_K || kw > GENOME_FILTER_MAX_K ||
                (long)pad >= kh || (long)pad >= kw)
                continue;
            size_t cost = (size_t)labs(kh - 3) + (size_t)labs(kw - 3) + s + pad;
            if (cost < best) {
                best = cost;
                *f = (struct genome_filter){.from = src->id,
                                            .to = dst->id,
                                            .kh = (uint8_t)kh,
                                            .kw = (uint8_t)kw,
                                            .stride = (uint8_t)s,
                                            .pad = (uint8_t)pad};
            }
        }
    return best != SIZE_MAX;
}

/* One coefficient at a random place of f's kernel, weight of sd init_sd, or
 * 0 when `zero` (cfg->preserve, into a channel that feeds others: 0 adds
 * nothing; a new channel's first filter keeps its draw, the channel feeding
 * nothing). */
static struct genome_coef draw_coef(const struct genome_filter *f,
                                    const struct genome_mutation *cfg, int zero, struct tv_rng *rng)
{
    struct genome_coef c;
    c.ky = (uint8_t)tv_rng_below(rng, f->kh);
    c.kx = (uint8_t)tv_rng_below(rng, f->kw);
    c.w = zero ? 0.0f : held(cfg->weight_init_sd * tv_rng_normal(rng), cfg->weight_max);
    return c;
}

static size_t coef_limit(const struct genome_mutation *cfg)
{
    return cfg->limits.max_conns ? cfg->limits.max_conns : GENOME_DEFAULT_MAX_CONNS;
}

/* The smallest channel depth above d (d itself when none is). */
static float next_level(const struct genome *g, float d)
{
    float next = d;
    for (size_t k = 0; k < g->n_channels; k++)
        if (g->channels[k].depth > d && (next == d || g->channels[k].depth < next))
            next = g->channels[k].depth;
    return next;
}

/* 1 if f's kernel, stride and padding make dst's map from src's pooled one. */
static int geometry_fits(const struct genome_channel *src, const struct genome_channel *dst,
                         const struct genome_filter *f)
{
    size_t ph, pw;
    genome_channel_pooled(src, &ph, &pw);
    return ph + 2u * f->pad >= f->kh && pw + 2u * f->pad >= f->kw &&
           genome_filter_out(ph, f->kh, f->stride, f->pad) == dst->h &&
           genome_filter_out(pw, f->kw, f->stride, f->pad) == dst->w;
}

/* A filter from src to dst with the kernel, stride and padding of a filter
 * into a channel of dst's depth (the first such); 0 when none is. */
static int level_geometry(const struct genome *g, const struct genome_channel *src,
                          const struct genome_channel *dst, struct genome_filter *f)
{
    for (size_t i = 0; i < g->n_filters; i++) {
        const struct genome_filter *o = &g->filters[i];
        ptrdiff_t k = genome_find_channel(g, o->to);
        if (k >= 0 && g->channels[k].depth == dst->depth) {
            *f = (struct genome_filter){.from = src->id,
                                        .to = dst->id,
                                        .kh = o->kh,
                                        .kw = o->kw,
                                        .stride = o->stride,
                                        .pad = o->pad};
            return 1;
        }
    }
    return 0;
}

/* A filter of one coefficient between a random channel and a random hidden
 * one of the next level of depth (the layered form the CNN trainer,
 * nn/conv/cnn.h, takes) that none joins yet, with a geometry that fits (a few
 * draws). */
static int add_filter(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                      struct tv_error *err)
{
    if (g->n_coefs + 1 > coef_limit(cfg) || g->n_filters >= GENOME_MAX_FILTERS)
        return 0;
    for (int t = 0; t < 8; t++) {
        const struct genome_channel *a = &g->channels[tv_rng_below(rng, (uint32_t)g->n_channels)];
        const struct genome_channel *b = &g->channels[tv_rng_below(rng, (uint32_t)g->n_channels)];
        struct genome_filter f;
        if (b->kind != GENOME_CHANNEL_HIDDEN || !(a->depth < b->depth) ||
            b->depth != next_level(g, a->depth) || genome_find_filter(g, a->id, b->id) >= 0 ||
            !(cfg->conv.join_levels && level_geometry(g, a, b, &f) ? geometry_fits(a, b, &f)
                                                                   : fit_geometry(a, b, &f)))
            continue;
        struct genome_coef c = draw_coef(&f, cfg, cfg->preserve, rng);
        return genome_add_filter(g, &f, &c, 1, err);
    }
    return 0;
}

/* A coefficient at a free place of a random filter's kernel. */
static int add_coef(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                    struct tv_error *err)
{
    if (g->n_filters == 0 || g->n_coefs + 1 > coef_limit(cfg))
        return 0;
    size_t i = tv_rng_below(rng, (uint32_t)g->n_filters);
    struct genome_filter f = g->filters[i];
    struct genome_coef c = draw_coef(&f, cfg, cfg->preserve, rng);
    const struct genome_coef *have = g->coefs + f.coef0;
    for (size_t k = 0; k < f.n_coefs; k++)
        if (!genome_coef_cmp(&have[k], &c))
            return 0; /* taken: this time nothing */
    int rc = genome_reserve_conv(g, 0, 0, g->n_coefs + 1, err);
    if (rc)
        return rc;
    size_t at = f.coef0 + f.n_coefs;
    memmove(&g->coefs[at + 1], &g->coefs[at], (g->n_coefs - at) * sizeof *g->coefs);
    g->coefs[at] = c;
    g->n_coefs++;
    g->filters[i].n_coefs++;
    for (size_t j = i + 1; j < g->n_filters; j++)
        g->filters[j].coef0++;
    return genome_sort_coefs(g, &g->filters[i], err);
}

/* A random coefficient; its filter goes with its last one. */
static void del_coef(struct genome *g, struct tv_rng *rng)
{
    if (g->n_coefs == 0)
        return;
    size_t k = tv_rng_below(rng, (uint32_t)g->n_coefs), i = 0;
    while (g->filters[i].coef0 + g->filters[i].n_coefs <= k)
        i++;
    if (g->filters[i].n_coefs == 1)
        genome_remove_filter_at(g, i);
    else
        remove_coef(g, i, k - g->filters[i].coef0);
}

/* The first id of a free run of n pixel ids: after every channel's range
 * and every neuron id below 2^20 (where split neurons never go), or
 * GENOME_ID_NONE if a neuron lies in the way. */
static uint32_t free_pixel_ids(const struct genome *g, size_t n)
{
    uint64_t first = 0;
    for (size_t i = 0; i < g->n_channels; i++) {
        size_t ph, pw;
        uint64_t end = g->channels[i].first + genome_channel_pooled(&g->channels[i], &ph, &pw);
        first = end > first ? end : first;
    }
    for (size_t i = 0; i < g->n_neurons && g->neurons[i].id < (1u << 20); i++)
        first = g->neurons[i].id + 1u > first ? g->neurons[i].id + 1u : first;
    if (first + n >= GENOME_ID_NONE)
        return GENOME_ID_NONE;
    for (size_t i = 0; i < g->n_neurons; i++)
        if (g->neurons[i].id >= first && g->neurons[i].id - first < n)
            return GENOME_ID_NONE;
    return (uint32_t)first;
}

/* The id and the first pixel id of a new hidden channel of n pooled pixels
 * fed by a filter of one coefficient: 1, or 0 when the limits leave no room. */
static int channel_room(const struct genome *g, const struct genome_mutation *cfg, size_t n,
                        uint32_t *id, uint32_t *first)
{
    size_t n_px = 0;
    *id = 0;
    for (size_t i = 0; i < g->n_channels; i++) {
        const struct genome_channel *c = &g->channels[i];
        size_t h, w;
        n_px += c->kind == GENOME_CHANNEL_HIDDEN ? genome_channel_pooled(c, &h, &w) : 0;
        *id = c->id >= *id ? c->id + 1 : *id;
    }
    size_t max_px = cfg->limits.max_neurons ? cfg->limits.max_neurons : GENOME_DEFAULT_MAX_NEURONS;
    *first = free_pixel_ids(g, n);
    return !(g->n_channels >= GENOME_MAX_CHANNELS || *id == 0 || *first == GENOME_ID_NONE ||
             g->n_neurons + n_px + n > max_px || g->n_coefs + 1 > coef_limit(cfg));
}

/* A hidden channel of a random channel's pooled size, fed from it by a 3 x 3
 * filter (pad 1) of one coefficient, halfway between its source and the
 * next deeper channel (or 1). */
static int add_channel(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                       struct tv_error *err)
{
    const struct genome_channel *src = &g->channels[tv_rng_below(rng, (uint32_t)g->n_channels)];
    size_t ph, pw, n = genome_channel_pooled(src, &ph, &pw);
    double next = 1.0;
    for (size_t i = 0; i < g->n_channels; i++)
        if (g->channels[i].depth > src->depth && g->channels[i].depth < next)
            next = g->channels[i].depth;
    float depth = (float)(((double)src->depth + next) / 2);
    uint32_t id, first;
    if (!channel_room(g, cfg, n, &id, &first) || ph < 3 || pw < 3 ||
        !(depth > src->depth && depth < next))
        return 0;
    struct genome_channel c = {.id = id,
                               .kind = GENOME_CHANNEL_HIDDEN,
                               .act = (uint8_t)cfg->hidden_act,
                               .pool = 1,
                               .h = (uint16_t)ph,
                               .w = (uint16_t)pw,
                               .depth = depth,
                               .first = first};
    struct genome_filter f = {.from = src->id, .to = id, .kh = 3, .kw = 3, .stride = 1, .pad = 1};
    struct genome_coef k = draw_coef(&f, cfg, 0, rng);
    int rc = genome_add_channel(g, &c, err);
    if (!rc)
        rc = genome_add_filter(g, &f, &k, 1, err);
    return rc;
}

/* join_levels: a hidden channel like a random hidden one (its depth, size,
 * pooling, activation; bias 0), fed by a filter of one coefficient from a
 * random channel of the level before, with the geometry of the filters into
 * the level (or fit_geometry's when none is). */
static int join_channel(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                        struct tv_error *err)
{
    size_t n_hidden = 0, n_src = 0, ph, pw;
    for (size_t i = 0; i < g->n_channels; i++)
        n_hidden += g->channels[i].kind == GENOME_CHANNEL_HIDDEN;
    if (n_hidden == 0)
        return 0;
    size_t k = tv_rng_below(rng, (uint32_t)n_hidden), li = 0;
    for (;; li++)
        if (g->channels[li].kind == GENOME_CHANNEL_HIDDEN && k-- == 0)
            break;
    const struct genome_channel like = g->channels[li];
    float prev = 0; /* the level before: the deepest below like's (inputs: 0) */
    for (size_t i = 0; i < g->n_channels; i++)
        if (g->channels[i].depth < like.depth && g->channels[i].depth > prev)
            prev = g->channels[i].depth;
    for (size_t i = 0; i < g->n_channels; i++)
        n_src += g->channels[i].depth == prev;
    k = tv_rng_below(rng, (uint32_t)n_src);
    size_t si = 0;
    for (;; si++)
        if (g->channels[si].depth == prev && k-- == 0)
            break;
    const struct genome_channel *src = &g->channels[si];
    uint32_t id, first;
    if (!channel_room(g, cfg, genome_channel_pooled(&like, &ph, &pw), &id, &first))
        return 0;
    struct genome_channel c = like;
    c.id = id;
    c.bias = 0;
    c.first = first;
    struct genome_filter f;
    if (!(level_geometry(g, src, &c, &f) ? geometry_fits(src, &c, &f) : fit_geometry(src, &c, &f)))
        return 0;
    struct genome_coef coef = draw_coef(&f, cfg, 0, rng);
    int rc = genome_add_channel(g, &c, err);
    if (!rc)
        rc = genome_add_filter(g, &f, &coef, 1, err);
    return rc;
}

static void del_channel(struct genome *g, struct tv_rng *rng)
{
    size_t n_hidden = 0;
    for (size_t i = 0; i < g->n_channels; i++)
        n_hidden += g->channels[i].kind == GENOME_CHANNEL_HIDDEN;
    if (n_hidden == 0)
        return;
    size_t k = tv_rng_below(rng, (uint32_t)n_hidden), i = 0;
    for (;; i++)
        if (g->channels[i].kind == GENOME_CHANNEL_HIDDEN && k-- == 0)
            break;
    genome_remove_channel_at(g, i);
}

int genome_mutate_conv(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                       struct tv_error *err)
{
    if (g->n_channels == 0)
        return 0;
    const struct genome_conv_mutation *m = &cfg->conv;
    int rc = 0;
    if (tv_rng_chance(rng, m->add_channel_rate))
        rc = m->join_levels ? join_channel(g, cfg, rng, err) : add_channel(g, cfg, rng, err);
    if (!rc && tv_rng_chance(rng, m->del_channel_rate))
        del_channel(g, rng);
    if (!rc && tv_rng_chance(rng, m->add_filter_rate))
        rc = add_filter(g, cfg, rng, err);
    if (!rc && g->n_filters && tv_rng_chance(rng, m->del_filter_rate))
        genome_remove_filter_at(g, tv_rng_below(rng, (uint32_t)g->n_filters));
    if (!rc && tv_rng_chance(rng, m->add_coef_rate))
        rc = add_coef(g, cfg, rng, err);
    if (!rc && tv_rng_chance(rng, m->del_coef_rate))
        del_coef(g, rng);
    if (!rc)
        vary_values(g, cfg, rng);
    return rc;
}

/* ---- crossover ----------------------------------------------------------- */

/* One bit of a 64-bit draw per matching gene, as the connections do. */
struct coin {
    uint64_t bits;
    int n;
};

static int flip(struct coin *c, struct tv_rng *rng)
{
    if (c->n == 0) {
        c->bits = tv_rng_u64(rng);
        c->n = 64;
    }
    int b = (int)(c->bits & 1);
    c->bits >>= 1;
    c->n--;
    return b;
}

int genome_crossover_conv(struct genome *child, const struct genome *fitter,
                          const struct genome *other, struct tv_rng *rng, struct tv_error *err)
{
    if (fitter->n_channels == 0)
        return 0;
    int rc = genome_copy_conv(child, fitter, err);
    if (rc)
        return rc;
    struct coin coin = {0, 0};
    for (size_t i = 0; i < child->n_channels; i++) {
        struct genome_channel *c = &child->channels[i];
        ptrdiff_t j = genome_find_channel(other, c->id);
        if (j >= 0 && c->kind == GENOME_CHANNEL_HIDDEN && other->channels[j].kind == c->kind &&
            flip(&coin, rng))
            c->bias = other->channels[j].bias;
    }
    for (size_t i = 0; i < child->n_filters; i++) {
        const struct genome_filter *f = &child->filters[i];
        ptrdiff_t j = genome_find_filter(other, f->from, f->to);
        if (j < 0)
            continue;
        const struct genome_filter *o = &other->filters[j];
        if (o->kh != f->kh || o->kw != f->kw || o->stride != f->stride || o->pad != f->pad)
            continue; /* another kernel: fitter's whole */
        /* a merge walk over both sorted coefficient lists */
        struct genome_coef *a = child->coefs + f->coef0;
        const struct genome_coef *b = other->coefs + o->coef0;
        for (size_t x = 0, y = 0; x < f->n_coefs && y < o->n_coefs;) {
            int c = genome_coef_cmp(&a[x], &b[y]);
            if (c == 0 && flip(&coin, rng))
                a[x].w = b[y].w;
            x += c <= 0;
            y += c >= 0;
        }
    }
    return 0;
}
