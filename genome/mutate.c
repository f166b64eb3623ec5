/* mutate.c -- the mutation operators. Every operator keeps the genome valid;
 * every random choice comes from the rng passed in, so the same genome, rates
 * and stream give the same child, bit for bit. */
#include "genome.h"
#include "delay.h"
#include "hyper.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How many random (source, target) pairs an add-connection operator tries
 * before giving up (the genome may be saturated). */
#define ADD_CONN_TRIES 32

/* Clamps to [-max, max] (max <= 0: no bound of its own) and always to the
 * finite float range, so that no draw can make a weight infinite. */
static float clamp(double v, double max)
{
    if (!(max > 0) || max > FLT_MAX)
        max = FLT_MAX;
    if (v > max)
        v = max;
    if (v < -max)
        v = -max;
    return (float)v;
}

/* The limit on neurons / connections: cfg's, or the default where it is 0. */
static size_t max_neurons_of(const struct genome_mutation *cfg)
{
    return cfg->limits.max_neurons ? cfg->limits.max_neurons : GENOME_DEFAULT_MAX_NEURONS;
}

static size_t max_conns_of(const struct genome_mutation *cfg)
{
    return cfg->limits.max_conns ? cfg->limits.max_conns : GENOME_DEFAULT_MAX_CONNS;
}

/* ---- per-gene operators ------------------------------------------------ */

static void mutate_weights(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng)
{
    if (cfg->weight_replace_rate <= 0 && cfg->weight_perturb_rate <= 0)
        return;
    for (size_t i = 0; i < g->n_conns; i++) {
        struct genome_conn *c = &g->conns[i];
        double u = tv_rng_uniform(rng);
        if (u < cfg->weight_replace_rate)
            c->weight = clamp(cfg->weight_init_sd * tv_rng_normal(rng), cfg->weight_max);
        else if (u < cfg->weight_replace_rate + cfg->weight_perturb_rate)
            c->weight =
                clamp(c->weight + cfg->weight_perturb_sd * tv_rng_normal(rng), cfg->weight_max);
    }
}

/* A model parameter marked `mutate` in its table row, with the bias rates and
 * sds: a replacement draws around the default; the result is clamped like a
 * bias, then held in the parameter's range (and made whole if it must be). */
static float mutate_param(const struct genome_param_info *p, float v,
                          const struct genome_mutation *cfg, struct tv_rng *rng)
{
    double u = tv_rng_uniform(rng);
    if (u < cfg->bias_replace_rate)
        v = clamp(p->def + cfg->bias_init_sd * tv_rng_normal(rng), cfg->weight_max);
    else if (u < cfg->bias_replace_rate + cfg->bias_perturb_rate)
        v = clamp(v + cfg->bias_perturb_sd * tv_rng_normal(rng), cfg->weight_max);
    else
        return v;
    if (p->integer)
        v = roundf(v);
    return v < p->min ? p->min : v > p->max ? p->max : v;
}

/* Biases, then the model's mutable parameters (a rate neuron has none, so
 * its draws are the bias's alone). */
static void mutate_biases(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng)
{
    if (cfg->bias_replace_rate <= 0 && cfg->bias_perturb_rate <= 0)
        return;
    for (size_t i = 0; i < g->n_neurons; i++) {
        struct genome_neuron *n = &g->neurons[i];
        if (n->kind == GENOME_INPUT)
            continue;
        double u = tv_rng_uniform(rng);
        if (u < cfg->bias_replace_rate)
            n->bias = clamp(cfg->bias_init_sd * tv_rng_normal(rng), cfg->weight_max);
        else if (u < cfg->bias_replace_rate + cfg->bias_perturb_rate)
            n->bias = clamp(n->bias + cfg->bias_perturb_sd * tv_rng_normal(rng), cfg->weight_max);
        const struct genome_model_info *m = &genome_models[n->model];
        for (size_t k = 0; k < m->n_params; k++)
            if (m->params[k].mutate)
                n->param[k] = mutate_param(&m->params[k], n->param[k], cfg, rng);
    }
}

static void mutate_activations(struct genome *g, const struct genome_mutation *cfg,
                               struct tv_rng *rng)
{
    uint32_t mask = cfg->act_choices & ((1u << GENOME_ACT_COUNT) - 1);
    int n_choices = __builtin_popcount(mask);
    if (cfg->act_change_rate <= 0 || n_choices == 0)
        return;
    for (size_t i = 0; i < g->n_neurons; i++) {
        struct genome_neuron *n = &g->neurons[i];
        if (n->kind != GENOME_HIDDEN || !tv_rng_chance(rng, cfg->act_change_rate))
            continue;
        uint32_t k = tv_rng_below(rng, (uint32_t)n_choices);
        for (int a = 0; a < GENOME_ACT_COUNT; a++)
            if ((mask >> a & 1) && k-- == 0) {
                n->act = (uint8_t)a;
                break;
            }
    }
}

/* ---- structural operators ---------------------------------------------- */

/* A set of 64-bit keys (connection keys, neuron ids) made in one call, so
 * that a batch never makes the same gene twice: open addressing, at most
 * half full. */
struct keyset {
    uint64_t *keys; /* [mask + 1], KEYSET_EMPTY marks a free slot */
    size_t mask;
};
#define KEYSET_EMPTY UINT64_MAX /* no connection key nor id */

/* Room for n keys. 0 or -1 (out of memory). */
static int keyset_init(struct keyset *s, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    s->keys = malloc(cap * sizeof *s->keys);
    if (!s->keys)
        return -1;
    memset(s->keys, 0xff, cap * sizeof *s->keys);
    s->mask = cap - 1;
    return 0;
}

/* 1 if key was in the set; else 0, and key is in it now. */
static int keyset_insert(struct keyset *s, uint64_t key)
{
    size_t i = (size_t)tv_mix64(key) & s->mask;
    for (; s->keys[i] != KEYSET_EMPTY; i = (i + 1) & s->mask)
        if (s->keys[i] == key)
            return 1;
    s->keys[i] = key;
    return 0;
}

static uint64_t conn_key(uint32_t from, uint32_t to)
{
    return (uint64_t)from << 32 | to;
}

/* The depth of the neuron that splits c: feed-forward, halfway; recurrent,
 * below the target, so that a -> h keeps the one-step delay and h -> b is
 * feed-forward. The split must keep the delays: a feed-forward edge needs a
 * depth strictly between its ends, a recurrent one a depth strictly below
 * its target. 1 and *depth, or 0 where floats leave no room (no split). */
static int split_depth(const struct genome *g, const struct genome_conn *c, float *depth)
{
    float df = 0; /* the source may be a channel's pixel */
    (void)genome_source_depth(g, c->from, &df);
    float dt = g->neurons[genome_find_neuron(g, c->to)].depth;
    float d = df < dt ? (float)(((double)df + dt) / 2) : (float)(dt / 2.0);
    *depth = d;
    return df < dt ? d > df && d < dt : d < dt;
}

/* 1 if act(x) = x for every value a neuron of activation src_act gives:
 * identity always; relu after an activation that is never negative. */
static int passes(int act, int src_act)
{
    return act == GENOME_ACT_IDENTITY ||
           (act == GENOME_ACT_RELU &&
            (src_act == GENOME_ACT_RELU || src_act == GENOME_ACT_SIGMOID ||
             src_act == GENOME_ACT_NEAT_SIGMOID || src_act == GENOME_ACT_GAUSS ||
             src_act == GENOME_ACT_ABS || src_act == GENOME_ACT_STEP));
}

/* The activation of the neuron that splits c: hidden_act, or with
 * cfg->preserve identity when hidden_act would not pass c's source's values
 * through (an input's, or a pixel's: a channel's activation before pooling,
 * which max pooling keeps the sign of). */
static int split_act(const struct genome *g, const struct genome_conn *c,
                     const struct genome_mutation *cfg)
{
    if (!cfg->preserve)
        return cfg->hidden_act;
    ptrdiff_t f = genome_find_neuron(g, c->from);
    int src_act = GENOME_ACT_IDENTITY; /* an input's values are anything */
    if (f >= 0 && g->neurons[f].kind != GENOME_INPUT)
        src_act = g->neurons[f].act;
    else if (f < 0 && (f = genome_pixel_channel(g, c->from)) >= 0 &&
             g->channels[f].kind == GENOME_CHANNEL_HIDDEN)
        src_act = g->channels[f].act;
    return passes(cfg->hidden_act, src_act) ? cfg->hidden_act : GENOME_ACT_IDENTITY;
}

/* The id of the neuron that splits c: the first attempt of genome_split_id
 * that is neither in g nor (batch given) made earlier in the batch, which
 * then holds it. */
static uint32_t split_id(const struct genome *g, const struct genome_conn *c, struct keyset *batch)
{
    for (uint32_t attempt = 0;; attempt++) {
        uint32_t id = genome_split_id(c->from, c->to, attempt);
        if (genome_find_neuron(g, id) < 0 && genome_pixel_channel(g, id) < 0 &&
            !(batch && keyset_insert(batch, id)))
            return id;
    }
}

/* Splits a random connection a -> b into a -> h (weight 1) and h -> b (the
 * old weight), NEAT's add-node: the network's function barely changes (with
 * cfg->preserve, not at all: split_act). */
static int split_conn(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                      struct tv_error *err)
{
    if (g->n_conns == 0 || g->n_neurons + 1 > max_neurons_of(cfg) ||
        g->n_conns + 1 > max_conns_of(cfg))
        return 0;
    size_t ci = tv_rng_below(rng, (uint32_t)g->n_conns);
    struct genome_conn old = g->conns[ci];
    unsigned old_delay = genome_conn_delay(g, ci);
    float depth;
    if (!split_depth(g, &old, &depth))
        return 0;
    uint32_t id = split_id(g, &old, NULL);
    genome_remove_conn_at(g, ci);
    int rc = genome_add_neuron(g, id, GENOME_HIDDEN, split_act(g, &old, cfg), 0.0f, depth, err);
    int model = g->neurons[genome_find_neuron(g, old.to)].model;
    if (!rc && model != GENOME_MODEL_RATE) /* a spiking network stays one: the target's model */
        genome_neuron_set_model(&g->neurons[genome_find_neuron(g, id)], model);
    if (!rc)
        rc = genome_add_conn(g, old.from, id, 1.0f, err);
    if (!rc)
        rc = genome_add_conn(g, id, old.to, old.weight, err);
    if (!rc && old_delay != 1) /* the spike's path keeps its delay, plus one step */
        rc = genome_set_delay(g, (size_t)genome_find_conn(g, id, old.to), old_delay, err);
    return rc;
}

/* Removes a random hidden neuron and every connection touching it. */
static void delete_neuron(struct genome *g, struct tv_rng *rng)
{
    size_t n_hidden = genome_count_kind(g, GENOME_HIDDEN);
    if (n_hidden == 0)
        return;
    size_t k = tv_rng_below(rng, (uint32_t)n_hidden), idx = 0;
    for (idx = 0; idx < g->n_neurons; idx++)
        if (g->neurons[idx].kind == GENOME_HIDDEN && k-- == 0)
            break;
    uint32_t id = g->neurons[idx].id;
    memmove(&g->neurons[idx], &g->neurons[idx + 1], (g->n_neurons - idx - 1) * sizeof *g->neurons);
    g->n_neurons--;
    size_t w = 0;
    for (size_t r = 0; r < g->n_conns; r++)
        if (g->conns[r].from != id && g->conns[r].to != id) {
            if (g->delays)
                g->delays[w] = g->delays[r];
            g->conns[w++] = g->conns[r];
        }
    g->n_conns = w;
}

/* Neuron indices ordered by (depth, id), with each layer's start: the ranges
 * an add-connection operator draws targets from. */
struct depth_index {
    size_t *order; /* [n_neurons] neuron indices by depth */
    size_t *start; /* [n_layers + 1] first position of each layer in order */
    size_t *layer; /* [n_neurons] layer of neuron i */
    size_t n_layers;
};

struct depth_key {
    float depth;
    uint32_t id;
    size_t idx;
};

static int cmp_depth_key(const void *a, const void *b)
{
    const struct depth_key *x = a, *y = b;
    if (x->depth != y->depth)
        return (x->depth > y->depth) - (x->depth < y->depth);
    return (x->id > y->id) - (x->id < y->id);
}

static void depth_index_free(struct depth_index *d)
{
    TV_FREE_ALL(d->order, d->start, d->layer);
    d->order = d->start = d->layer = NULL;
}

static int depth_index_build(struct depth_index *d, const struct genome *g, struct tv_error *err)
{
    size_t n = g->n_neurons;
    d->order = malloc(n * sizeof *d->order);
    d->start = malloc((n + 1) * sizeof *d->start);
    d->layer = malloc(n * sizeof *d->layer);
    if (!d->order || !d->start || !d->layer) {
        depth_index_free(d);
        return tv_error_set(err, TV_ENOMEM, "mutation: out of memory");
    }
    struct depth_key *keys = malloc(n * sizeof *keys);
    if (!keys) {
        depth_index_free(d);
        return tv_error_set(err, TV_ENOMEM, "mutation: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct depth_key){g->neurons[i].depth, g->neurons[i].id, i};
    qsort(keys, n, sizeof *keys, cmp_depth_key);
    for (size_t i = 0; i < n; i++)
        d->order[i] = keys[i].idx;
    free(keys);
    d->n_layers = 0;
    for (size_t p = 0; p < n; p++) {
        float depth = g->neurons[d->order[p]].depth;
        if (p == 0 || depth != g->neurons[d->order[p - 1]].depth)
            d->start[d->n_layers++] = p;
        d->layer[d->order[p]] = d->n_layers - 1;
    }
    d->start[d->n_layers] = n;
    return 0;
}

/* What a batch of new connections checks a pair against: the genome's
 * rows, row[i] the first connection from neuron i (neurons and connections
 * are both in id order: one merge pass makes them), so that a lookup
 * searches one neuron's few connections, not the whole list; and the keys
 * the batch made. */
struct conn_batch {
    size_t *row; /* [n_neurons + 1] */
    struct keyset keys;
};

static void conn_rows(const struct genome *g, size_t *row)
{
    size_t c = 0;
    for (size_t i = 0; i < g->n_neurons; i++) {
        while (c < g->n_conns && g->conns[c].from < g->neurons[i].id)
            c++;
        row[i] = c;
    }
    row[g->n_neurons] = g->n_conns;
}

/* 1 if g has the connection from neuron index src to neuron id `to`. */
static int row_has(const struct genome *g, const size_t *row, size_t src, uint32_t to)
{
    size_t i = tv_lower_u32(g->conns, sizeof *g->conns, offsetof(struct genome_conn, to), row[src],
                            row[src + 1], to);
    return i < row[src + 1] && g->conns[i].to == to;
}

/* Draws a connection of class cls (enum genome_conn_class) between random
 * neurons not yet connected in g nor (batch given) earlier in the batch,
 * which then holds its key. 1 and *out, or 0 if ADD_CONN_TRIES draws find no
 * such pair. */
static int draw_conn(const struct genome *g, const struct genome_mutation *cfg, int cls,
                     const struct depth_index *d, struct conn_batch *batch, struct tv_rng *rng,
                     struct genome_conn *out)
{
    for (int t = 0; t < ADD_CONN_TRIES; t++) {
        size_t src = tv_rng_below(rng, (uint32_t)g->n_neurons);
        size_t l = d->layer[src];
        size_t lo, hi; /* target layers, then positions in d->order */
        genome_conn_class_targets(cls, l, d->n_layers, &lo, &hi);
        if (lo >= hi)
            continue;
        lo = d->start[lo];
        hi = d->start[hi];
        size_t dst = d->order[lo + tv_rng_below(rng, (uint32_t)(hi - lo))];
        if (g->neurons[dst].kind == GENOME_INPUT)
            continue;
        uint32_t from = g->neurons[src].id, to = g->neurons[dst].id;
        if (batch
                ? row_has(g, batch->row, src, to) || keyset_insert(&batch->keys, conn_key(from, to))
                : genome_find_conn(g, from, to) >= 0)
            continue;
        /* preserve: a new connection starts at 0, which adds nothing */
        float w =
            cfg->preserve ? 0.0f : clamp(cfg->weight_init_sd * tv_rng_normal(rng), cfg->weight_max);
        *out = (struct genome_conn){from, to, w};
        return 1;
    }
    return 0;
}

/* Adds one connection of class cls between random neurons that are not yet
 * connected; does nothing if ADD_CONN_TRIES draws find no such pair. */
static int add_conn(struct genome *g, const struct genome_mutation *cfg, int cls,
                    const struct depth_index *d, struct tv_rng *rng, struct tv_error *err)
{
    struct genome_conn c;
    if (g->n_conns + 1 > max_conns_of(cfg) || !draw_conn(g, cfg, cls, d, NULL, rng, &c))
        return 0;
    return genome_add_conn(g, c.from, c.to, c.weight, err);
}

static int add_conns(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                     struct tv_error *err)
{
    /* indexed by enum genome_conn_class */
    int fire[GENOME_CONN_CLASSES] = {tv_rng_chance(rng, cfg->add_local_rate),
                                     tv_rng_chance(rng, cfg->add_skip_rate),
                                     tv_rng_chance(rng, cfg->add_recurrent_rate)};
    if (!fire[0] && !fire[1] && !fire[2])
        return 0;
    struct depth_index d = {0};
    int rc = depth_index_build(&d, g, err);
    for (int k = 0; k < GENOME_CONN_CLASSES && !rc; k++)
        if (fire[k])
            rc = add_conn(g, cfg, k, &d, rng, err);
    depth_index_free(&d);
    return rc;
}

/* ---- operators that scale with the genome ------------------------------
 * Each picks every gene with a probability p by drawing the geometric gaps
 * between picks: O(picks) draws, and none at all when p is 0. New genes are
 * made into a batch, sorted once and merged into the genome's sorted lists
 * from the back, in place: O(genes + k log k) for k new genes, never
 * O(genes * k). Every allocation comes before the genome changes, so out of
 * memory leaves it as it was. */

struct gaps {
    double log_q; /* log(1 - p) */
    int all;      /* p >= 1: every gene */
};

static void gaps_init(struct gaps *s, double p)
{
    s->all = p >= 1;
    s->log_q = s->all ? 0 : log1p(-p);
}

/* The next picked index in [from, n), or n (no draw once from >= n). */
static size_t gaps_next(const struct gaps *s, struct tv_rng *rng, size_t from, size_t n)
{
    if (from >= n || s->all)
        return from < n ? from : n;
    double gap = floor(log(1.0 - tv_rng_uniform(rng)) / s->log_q);
    return gap < (double)(n - from) ? from + (size_t)gap : n;
}

/* Binomial(n, p) by its gaps: the count of picks. 0 without a draw if p <= 0. */
static size_t binomial(struct tv_rng *rng, size_t n, double p)
{
    if (!(p > 0))
        return 0;
    struct gaps s;
    gaps_init(&s, p);
    size_t k = 0;
    for (size_t i = gaps_next(&s, rng, 0, n); i < n; i = gaps_next(&s, rng, i + 1, n))
        k++;
    return k;
}

/* How many more genes fit under limit. */
static size_t room_under(size_t limit, size_t have)
{
    return limit > have ? limit - have : 0;
}

/* Merges the sorted add[0..k) into the sorted base[0..n), which has room
 * for n + k elements of `size` bytes, from the back: O(n + k). Inlined into
 * each caller, where size and cmp are constants: no call per element. */
static inline __attribute__((always_inline)) void merge_back(void *base_, size_t n,
                                                             const void *add_, size_t k,
                                                             size_t size,
                                                             int (*cmp)(const void *, const void *))
{
    char *base = base_;
    const char *add = add_;
    for (size_t w = n + k; k > 0;) {
        if (n > 0 && cmp(base + (n - 1) * size, add + (k - 1) * size) > 0)
            memcpy(base + --w * size, base + --n * size, size);
        else
            memcpy(base + --w * size, add + --k * size, size);
    }
}

static int out_of_memory(struct tv_error *err)
{
    return tv_error_set(err, TV_ENOMEM, "mutation: out of memory");
}

static void bulk_delete_conns(struct genome *g, double rate, struct tv_rng *rng)
{
    if (!(rate > 0))
        return;
    struct gaps s;
    gaps_init(&s, rate);
    size_t n = g->n_conns, w = gaps_next(&s, rng, 0, n);
    for (size_t r = w, next = w; r < n; r++) {
        if (r == next)
            next = gaps_next(&s, rng, r + 1, n);
        else
            g->conns[w++] = g->conns[r];
    }
    g->n_conns = w;
}

/* Removes each hidden neuron with probability rate, and every connection
 * touching one removed. */
static int bulk_delete_neurons(struct genome *g, double rate, struct tv_rng *rng,
                               struct tv_error *err)
{
    if (!(rate > 0))
        return 0;
    size_t n_hidden = genome_count_kind(g, GENOME_HIDDEN);
    struct gaps s;
    gaps_init(&s, rate);
    size_t pick = gaps_next(&s, rng, 0, n_hidden);
    if (pick == n_hidden)
        return 0;
    unsigned char *dead = calloc(g->n_neurons, 1);
    struct genome_idmap map = {0};
    if (!dead || genome_idmap_build(&map, g)) {
        free(dead);
        return out_of_memory(err);
    }
    for (size_t i = 0, h = 0; i < g->n_neurons; i++)
        if (g->neurons[i].kind == GENOME_HIDDEN && h++ == pick) {
            dead[i] = 1;
            pick = gaps_next(&s, rng, h, n_hidden);
        }
    size_t w = 0;
    for (size_t r = 0; r < g->n_conns; r++) {
        const struct genome_conn *c = &g->conns[r];
        if (!dead[genome_idmap_find(&map, c->from)] && !dead[genome_idmap_find(&map, c->to)])
            g->conns[w++] = *c;
    }
    g->n_conns = w;
    w = 0;
    for (size_t r = 0; r < g->n_neurons; r++)
        if (!dead[r])
            g->neurons[w++] = g->neurons[r];
    g->n_neurons = w;
    genome_idmap_free(&map);
    free(dead);
    return 0;
}

/* Splits each connection with probability add_neuron_per_neuron * n_neurons
 * / n_conns (at most 1), as split_conn splits one, while the limits allow. */
static int bulk_split(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                      struct tv_error *err)
{
    size_t n = g->n_conns, room = room_under(max_neurons_of(cfg), g->n_neurons);
    if (room_under(max_conns_of(cfg), n) < room)
        room = room_under(max_conns_of(cfg), n); /* a split adds one connection */
    if (!(cfg->add_neuron_per_neuron > 0) || n == 0 || room == 0)
        return 0;
    struct gaps s;
    gaps_init(&s, cfg->add_neuron_per_neuron * (double)g->n_neurons / (double)n);
    /* the picks counted on a copy of the stream first: one allocation */
    struct tv_rng probe = *rng;
    size_t k = 0;
    for (size_t i = gaps_next(&s, &probe, 0, n); i < n && k < room;
         i = gaps_next(&s, &probe, i + 1, n))
        k++;
    if (k == 0) {
        *rng = probe;
        return 0;
    }
    size_t *pick = malloc(k * sizeof *pick); /* [k] indices of the connections to split */
    if (!pick)
        return out_of_memory(err);
    pick[0] = gaps_next(&s, rng, 0, n);
    for (size_t t = 1; t < k; t++)
        pick[t] = gaps_next(&s, rng, pick[t - 1] + 1, n);
    struct genome_neuron *nn = malloc(k * sizeof *nn);   /* [k] the new neurons */
    struct genome_conn *nc = malloc(2 * k * sizeof *nc); /* [2k] their connections */
    struct keyset ids = {0};
    int rc = !nn || !nc || keyset_init(&ids, k) ? out_of_memory(err) : 0;
    if (!rc)
        rc = genome_reserve(g, g->n_neurons + k, n + k, err);
    size_t m = 0; /* splits made; pick[0..m) their connections */
    for (size_t t = 0; t < k && !rc; t++) {
        struct genome_conn old = g->conns[pick[t]];
        float depth;
        if (!split_depth(g, &old, &depth))
            continue;
        uint32_t id = split_id(g, &old, &ids);
        nn[m] = (struct genome_neuron){.id = id,
                                       .kind = GENOME_HIDDEN,
                                       .act = (uint8_t)split_act(g, &old, cfg),
                                       .depth = depth};
        int model = g->neurons[genome_find_neuron(g, old.to)].model;
        if (model != GENOME_MODEL_RATE) /* as split_conn: the target's model */
            genome_neuron_set_model(&nn[m], model);
        nc[2 * m] = (struct genome_conn){old.from, id, 1.0f};
        nc[2 * m + 1] = (struct genome_conn){id, old.to, old.weight};
        pick[m++] = pick[t];
    }
    if (!rc && m > 0) {
        size_t w = pick[0];
        for (size_t r = pick[0], t = 0; r < n; r++) {
            if (t < m && r == pick[t])
                t++;
            else
                g->conns[w++] = g->conns[r];
        }
        qsort(nc, 2 * m, sizeof *nc, genome_conn_cmp);
        merge_back(g->conns, n - m, nc, 2 * m, sizeof *nc, genome_conn_cmp);
        g->n_conns = n + m;
        qsort(nn, m, sizeof *nn, genome_neuron_cmp);
        merge_back(g->neurons, g->n_neurons, nn, m, sizeof *nn, genome_neuron_cmp);
        g->n_neurons += m;
    }
    free(ids.keys);
    free(nc);
    free(nn);
    free(pick);
    return rc;
}

/* New connections of each class, Binomial(n_conns, rate) of them (fewer
 * where draws find no free pair), while the limit allows. */
static int bulk_add_conns(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                          struct tv_error *err)
{
    /* indexed by enum genome_conn_class */
    const double rates[GENOME_CONN_CLASSES] = {cfg->add_local_per_conn, cfg->add_skip_per_conn,
                                               cfg->add_recurrent_per_conn};
    size_t want[GENOME_CONN_CLASSES], total = 0;
    size_t room = room_under(max_conns_of(cfg), g->n_conns);
    for (int c = 0; c < GENOME_CONN_CLASSES; c++) {
        want[c] = binomial(rng, g->n_conns, rates[c]);
        if (want[c] > room - total)
            want[c] = room - total;
        total += want[c];
    }
    if (total == 0)
        return 0;
    struct genome_conn *nc = malloc(total * sizeof *nc); /* [total] the new connections */
    struct conn_batch batch = {malloc((g->n_neurons + 1) * sizeof *batch.row), {0}};
    struct depth_index d = {0};
    int rc = !nc || !batch.row || keyset_init(&batch.keys, total) ? out_of_memory(err) : 0;
    if (!rc)
        rc = depth_index_build(&d, g, err);
    if (!rc)
        rc = genome_reserve(g, 0, g->n_conns + total, err);
    if (!rc)
        conn_rows(g, batch.row);
    size_t m = 0;
    for (int c = 0; c < GENOME_CONN_CLASSES && !rc; c++)
        for (size_t i = 0; i < want[c]; i++)
            m += (size_t)draw_conn(g, cfg, c, &d, &batch, rng, &nc[m]);
    if (!rc) {
        qsort(nc, m, sizeof *nc, genome_conn_cmp);
        merge_back(g->conns, g->n_conns, nc, m, sizeof *nc, genome_conn_cmp);
        g->n_conns += m;
    }
    depth_index_free(&d);
    free(batch.keys.keys);
    free(batch.row);
    free(nc);
    return rc;
}

/* The pooled pixels of the deepest hidden channels (genome.h,
 * add_head_per_conn): their channel indices into ch[], their count. */
static size_t deepest_channels(const struct genome *g, size_t *ch)
{
    float deep = 0;
    size_t n = 0;
    for (size_t i = 0; i < g->n_channels; i++)
        if (g->channels[i].kind == GENOME_CHANNEL_HIDDEN && g->channels[i].depth > deep)
            deep = g->channels[i].depth;
    for (size_t i = 0; i < g->n_channels && deep > 0; i++)
        if (g->channels[i].kind == GENOME_CHANNEL_HIDDEN && g->channels[i].depth == deep)
            ch[n++] = i;
    return n;
}

/* One new head connection not in g nor earlier in the batch (keys): from a
 * pixel of a channel ch[0..n_ch) to a neuron to[0..n_to). 1 and *out, or 0
 * if ADD_CONN_TRIES draws find none free. */
static int draw_head_conn(const struct genome *g, const struct genome_mutation *cfg,
                          const size_t *ch, size_t n_ch, const size_t *to, size_t n_to,
                          struct keyset *keys, struct tv_rng *rng, struct genome_conn *out)
{
    for (int t = 0; t < ADD_CONN_TRIES; t++) {
        const struct genome_channel *c = &g->channels[ch[tv_rng_below(rng, (uint32_t)n_ch)]];
        size_t ph, pw, n_px = genome_channel_pooled(c, &ph, &pw);
        uint32_t from = c->first + tv_rng_below(rng, (uint32_t)n_px);
        uint32_t dst = g->neurons[to[tv_rng_below(rng, (uint32_t)n_to)]].id;
        if (genome_find_conn(g, from, dst) >= 0 || keyset_insert(keys, conn_key(from, dst)))
            continue;
        float w =
            cfg->preserve ? 0.0f : clamp(cfg->weight_init_sd * tv_rng_normal(rng), cfg->weight_max);
        *out = (struct genome_conn){from, dst, w};
        return 1;
    }
    return 0;
}

/* add_head_per_conn (genome.h): Binomial(n_conns, rate) new connections into
 * a CNN's head while the limit allows. */
static int bulk_add_head(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                         struct tv_error *err)
{
    size_t want = binomial(rng, g->n_conns, cfg->add_head_per_conn);
    size_t room = room_under(max_conns_of(cfg), g->n_conns);
    want = want < room ? want : room;
    if (want == 0)
        return 0;
    size_t *ch = malloc((g->n_channels + 1) * sizeof *ch),
           *to = malloc((g->n_neurons + 1) * sizeof *to);
    struct genome_conn *nc = malloc(want * sizeof *nc);
    struct keyset keys = {0};
    int rc = !ch || !to || !nc || keyset_init(&keys, want) ? out_of_memory(err) : 0;
    size_t n_ch = rc ? 0 : deepest_channels(g, ch), n_to = 0, m = 0;
    float deep = n_ch ? g->channels[ch[0]].depth : 1;
    for (size_t i = 0; i < g->n_neurons && n_ch; i++)
        if (g->neurons[i].kind != GENOME_INPUT && g->neurons[i].depth > deep)
            to[n_to++] = i;
    if (!rc && n_to)
        rc = genome_reserve(g, 0, g->n_conns + want, err);
    for (size_t i = 0; i < want && n_to && !rc; i++)
        m += (size_t)draw_head_conn(g, cfg, ch, n_ch, to, n_to, &keys, rng, &nc[m]);
    if (!rc) {
        qsort(nc, m, sizeof *nc, genome_conn_cmp);
        merge_back(g->conns, g->n_conns, nc, m, sizeof *nc, genome_conn_cmp);
        g->n_conns += m;
    }
    free(keys.keys);
    TV_FREE_ALL(ch, to, nc);
    return rc;
}

int genome_mutate(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                  struct tv_error *err)
{
    int rc = 0;
    if (tv_rng_chance(rng, cfg->add_neuron_rate))
        rc = split_conn(g, cfg, rng, err);
    if (!rc && tv_rng_chance(rng, cfg->del_neuron_rate))
        delete_neuron(g, rng);
    if (!rc)
        rc = add_conns(g, cfg, rng, err);
    if (!rc && g->n_conns > 0 && tv_rng_chance(rng, cfg->del_conn_rate))
        genome_remove_conn_at(g, tv_rng_below(rng, (uint32_t)g->n_conns));
    /* The per-gene operators move connections in bulk without a delay array
     * beside them, and neurons without channels' pixels beside them: they
     * leave such genomes alone, but for removing connections and growing a
     * CNN's head. */
    int bulk = !g->delays && g->n_channels == 0;
    if (!rc && !g->delays)
        bulk_delete_conns(g, cfg->del_conn_per_conn, rng);
    if (!rc && bulk)
        rc = bulk_delete_neurons(g, cfg->del_neuron_per_neuron, rng, err);
    if (!rc && bulk)
        rc = bulk_split(g, cfg, rng, err);
    if (!rc && bulk)
        rc = bulk_add_conns(g, cfg, rng, err);
    if (!rc && !g->delays && g->n_channels)
        rc = bulk_add_head(g, cfg, rng, err);
    if (!rc) {
        mutate_weights(g, cfg, rng);
        mutate_biases(g, cfg, rng);
        mutate_activations(g, cfg, rng);
        rc = genome_delays_mutate(g, cfg, rng, err);
    }
    if (!rc)
        rc = genome_mutate_conv(g, cfg, rng, err);
    if (!rc) /* last, so that a rate of 0 leaves every other draw as it was */
        genome_hyper_mutate(g, cfg, rng);
    return rc;
}
