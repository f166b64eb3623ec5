/* plan.c -- nn_plan_compile: triplets to a compact plan in O(n + m).
 *
 * Steps, each one pass (n neurons, m connections):
 *   1. check the neurons, order them: inputs by id, the rest by (depth, id)
 *      with a stable radix sort on the depth's bits; cut layers;
 *   2. map every connection's ends to dense indices (the source by a merge
 *      walk, as connections are sorted by source id; the destination through
 *      an id table that gives dense indices), classify it (gather, scatter,
 *      recurrent: an integer compare with the end of the source's depth
 *      run) and count;
 *   3. place the edges source by source in dense order, so every
 *      by-destination row and every tile comes out sorted by source; scatter
 *      edges go through a by-destination buffer first and are then placed
 *      destination by destination, so every by-source row comes out sorted
 *      by destination.
 * Nothing enumerates paths, so a deep, looped graph costs what a flat one of
 * the same size does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "nn_impl.h"

#define ALIGN 64
#define CAT_GATHER 0u
#define CAT_REC 1u
#define CAT_SCATTER 2u
#define CAT_TILE 3u
#define CAT_SHIFT 30
#define IDX_MASK ((1u << CAT_SHIFT) - 1)

static size_t round_up(size_t x)
{
    return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* The bits of a depth in [0, 1] as an unsigned key in the same order. */
static uint32_t depth_key(float d)
{
    uint32_t k;
    if (d == 0.0f)
        d = 0.0f; /* -0 sorts with 0 */
    memcpy(&k, &d, sizeof k);
    return k;
}

/* Stable sort of idx[0..n) by key[idx[i]], least significant byte first;
 * tmp has room for n. Passes whose byte is the same for every key are
 * skipped (depths such as 0.5 or 0.25 share their low bytes). */
static void radix_sort_by_key(uint32_t *idx, uint32_t *tmp, size_t n, const uint32_t *key)
{
    if (n < 32) { /* insertion sort: stable, and no histograms for tiny nets */
        for (size_t i = 1; i < n; i++) {
            uint32_t v = idx[i];
            size_t j = i;
            while (j > 0 && key[idx[j - 1]] > key[v]) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
        }
        return;
    }
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((key[idx[i]] >> shift) & 0xff) + 1]++;
        int same = 0;
        for (int b = 1; b <= 256; b++)
            if (count[b] == n)
                same = 1;
        if (same)
            continue;
        for (int b = 1; b <= 256; b++)
            count[b] += count[b - 1];
        for (size_t i = 0; i < n; i++)
            tmp[count[(key[idx[i]] >> shift) & 0xff]++] = idx[i];
        memcpy(idx, tmp, n * sizeof *idx);
    }
}

/* id -> neuron index: a direct table when ids are compact (the usual case
 * for genomes built from scratch), else open addressing. */
struct id_table {
    uint32_t *slot_id;  /* hash: [cap]; unused for direct */
    uint32_t *slot_idx; /* [cap] index + 1, 0 for empty */
    uint32_t mask;
    int direct;
};

static uint32_t id_hash(uint32_t id, uint32_t mask)
{
    return (uint32_t)(((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

static int id_table_init(struct id_table *t, const struct genome *g)
{
    size_t n = g->n_neurons;
    uint32_t max_id = g->neurons[n - 1].id;
    memset(t, 0, sizeof *t);
    if ((size_t)max_id < 4 * n + 1024) {
        t->direct = 1;
        t->slot_idx = calloc((size_t)max_id + 1, sizeof *t->slot_idx);
        if (!t->slot_idx)
            return TV_ENOMEM;
        for (size_t i = 0; i < n; i++)
            t->slot_idx[g->neurons[i].id] = (uint32_t)i + 1;
        return 0;
    }
    size_t cap = 64;
    while (cap < 2 * n)
        cap *= 2;
    t->mask = (uint32_t)(cap - 1);
    t->slot_id = malloc(cap * sizeof *t->slot_id);
    t->slot_idx = calloc(cap, sizeof *t->slot_idx);
    if (!t->slot_id || !t->slot_idx)
        return TV_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        uint32_t h = id_hash(g->neurons[i].id, t->mask);
        while (t->slot_idx[h])
            h = (h + 1) & t->mask;
        t->slot_id[h] = g->neurons[i].id;
        t->slot_idx[h] = (uint32_t)i + 1;
    }
    return 0;
}

/* The index of neuron `id` (after id_table_renumber: its dense index), or -1. */
static int64_t id_table_find(const struct id_table *t, uint32_t id, uint32_t max_id)
{
    if (t->direct)
        return id <= max_id ? (int64_t)t->slot_idx[id] - 1 : -1;
    for (uint32_t h = id_hash(id, t->mask); t->slot_idx[h]; h = (h + 1) & t->mask)
        if (t->slot_id[h] == id)
            return (int64_t)t->slot_idx[h] - 1;
    return -1;
}

/* From then on, the table gives dense indices: new_of[old index]. */
static void id_table_renumber(struct id_table *t, const uint32_t *new_of, uint32_t max_id)
{
    size_t cap = t->direct ? (size_t)max_id + 1 : (size_t)t->mask + 1;
    for (size_t h = 0; h < cap; h++)
        if (t->slot_idx[h])
            t->slot_idx[h] = new_of[t->slot_idx[h] - 1] + 1;
}

static void id_table_free(struct id_table *t)
{
    free(t->slot_id);
    free(t->slot_idx);
}

/* Checks the neurons; counts inputs and outputs. */
static int check_neurons(const struct genome *g, size_t *n_in, size_t *n_out, struct tv_error *err)
{
    size_t n = g->n_neurons;
    *n_in = *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        const struct genome_neuron *u = &g->neurons[i];
        if (u->id == GENOME_ID_NONE || (i > 0 && u->id <= g->neurons[i - 1].id))
            return tv_error_set(err, TV_EINVAL,
                                "neuron %zu (id %u): ids not unique and ascending (canonicalize "
                                "and validate the genome first)",
                                i, u->id);
        if (u->kind > GENOME_HIDDEN)
            return tv_error_set(err, TV_EINVAL, "neuron %u: unknown kind %u", u->id, u->kind);
        if (u->act >= GENOME_ACT_COUNT)
            return tv_error_set(err, TV_EINVAL, "neuron %u: unknown activation %u", u->id, u->act);
        if (!(u->depth >= 0.0f && u->depth <= 1.0f))
            return tv_error_set(err, TV_EINVAL, "neuron %u: depth %g outside [0, 1]", u->id,
                                (double)u->depth);
        if (u->kind == GENOME_INPUT) {
            if (u->depth != 0.0f)
                return tv_error_set(err, TV_EINVAL, "neuron %u: an input must be at depth 0",
                                    u->id);
            (*n_in)++;
        } else if (u->kind == GENOME_OUTPUT) {
            (*n_out)++;
        }
    }
    if (*n_in == 0 || *n_out == 0)
        return tv_error_set(err, TV_EINVAL,
                            "the network needs at least one input and one output "
                            "(has %zu inputs, %zu outputs)",
                            *n_in, *n_out);
    return 0;
}

/* Decides the way of every layer. */
static int choose_ways(const struct nn_plan *p, const struct genome *g, const uint32_t *old_of,
                       const struct nn_opts *o, uint8_t *way, struct tv_error *err)
{
    if (o->density && o->n_density != p->n_layers)
        return tv_error_set(err, TV_EINVAL,
                            "nn_opts.density has %zu layers, the network has %zu (measure with a "
                            "plan of the same genome)",
                            o->n_density, p->n_layers);
    for (size_t l = 0; l < p->n_layers; l++) {
        int w = NN_WAY_GATHER;
        if (o->way == NN_WAY_SCATTER) {
            w = NN_WAY_SCATTER;
        } else if (o->way == NN_WAY_AUTO && o->density) {
            if (o->density[l] <= NN_SCATTER_MAX_DENSITY)
                w = NN_WAY_SCATTER;
        } else if (o->way == NN_WAY_AUTO && l > 0) {
            w = NN_WAY_SCATTER;
            for (uint32_t j = p->layer_start[l]; j < p->layer_start[l + 1]; j++)
                if (!nn_act_makes_zeros(g->neurons[old_of[j]].act))
                    w = NN_WAY_GATHER;
        }
        way[l] = (uint8_t)w;
    }
    return 0;
}

static void put_idx(void *base, int bits, size_t k, uint32_t v)
{
    if (bits == 16)
        ((uint16_t *)base)[k] = (uint16_t)v;
    else
        ((uint32_t *)base)[k] = v;
}

/* Scratch of one compile, freed as a whole. */
struct scratch {
    uint32_t *old_of, *new_of, *tmp, *key; /* [n] */
    uint32_t *conn_start;                  /* [n + 1] by old index */
    uint32_t *cd;                          /* [m] dense destination | category */
    uint32_t *pos;                         /* [n + 1] */
    uint32_t *sd_row;                      /* [n + 1] scatter edges by destination */
    uint32_t *sd_src;                      /* [n_scatter] */
    float *sd_w;                           /* [n_scatter] */
    uint32_t *sd_conn;                     /* [n_scatter] trainable plans only */
    float *depth;                          /* [n] by dense index */
    uint32_t *c_layer;                     /* [n_layers + 1] chunks of the tiled form */
    uint32_t *chunk_of;                    /* [n] by dense index (tiled plans) */
    uint32_t *t_cur;                       /* [2 n_chunks^2 + 1] tile cursors */
};

static void scratch_free(struct scratch *s)
{
    free(s->old_of);
    free(s->new_of);
    free(s->tmp);
    free(s->key);
    free(s->conn_start);
    free(s->cd);
    free(s->pos);
    free(s->sd_row);
    free(s->sd_src);
    free(s->sd_w);
    free(s->sd_conn);
    free(s->depth);
    free(s->c_layer);
    free(s->chunk_of);
    free(s->t_cur);
}

/* Neurons per chunk of the tiled form (nn.h) for n neurons; 0 for none. At
 * least 2 sqrt(n), so that there are at most about sqrt(n) chunks and the
 * 2 n_chunks^2 tile starts stay O(n). */
static size_t tile_size(size_t want, size_t n)
{
    if (want == 0)
        want = n > NN_TILE_MIN_NEURONS ? NN_TILE_NEURONS : SIZE_MAX;
    if (want == SIZE_MAX)
        return 0;
    size_t floor_size = 2 * (size_t)ceil(sqrt((double)n));
    return want > floor_size ? want : floor_size;
}

/* Cuts the layers into chunks of whole layers, each new layer joining the
 * current chunk while it stays within `size` neurons. c_layer: [n_layers + 1].
 * Returns the number of chunks, or 0 when tiles do not apply (one chunk, or
 * one of more than 65536 neurons, which 16-bit local indices cannot reach). */
static size_t cut_chunks(const uint32_t *layer_start, size_t n_layers, size_t size,
                         uint32_t *c_layer)
{
    size_t nc = 0;
    c_layer[0] = 0;
    for (size_t l = 1; l < n_layers; l++)
        if (layer_start[l + 1] - layer_start[c_layer[nc]] > size)
            c_layer[++nc] = (uint32_t)l;
    c_layer[++nc] = (uint32_t)n_layers;
    for (size_t c = 0; c < nc; c++)
        if (layer_start[c_layer[c + 1]] - layer_start[c_layer[c]] > 65536)
            return 0;
    return nc >= 2 ? nc : 0;
}

/* Step 3 of the compile: the edges of each source, sources in dense order,
 * to the cursors of their rows (row_g, row_r, sd_row) and tiles (t_cur), so
 * that every row and every tile comes out sorted by source. run_end is
 * s->tmp (see the compile). */
static inline __attribute__((always_inline)) void place_edges(struct nn_plan *p,
                                                              const struct genome *g,
                                                              struct scratch *s, uint32_t *row_g,
                                                              uint32_t *row_r, int bits)
{
    size_t n = p->n, nc = p->n_chunks;
    const uint32_t *cd = s->cd;
    /* a trainable plan: the genome connection of each entry, by region */
    int keep = p->trainable;
    uint32_t *cg = NULL, *cr = NULL, *ct = NULL;
    if (keep) {
        cg = p->conn_of + (p->g_w - p->param);
        cr = p->conn_of + (p->r_w - p->param);
        ct = p->conn_of + (p->t_w - p->param);
    }
    for (size_t sj = 0; sj < n; sj++) {
        uint32_t i = s->old_of[sj];
        uint32_t c1 = s->conn_start[i + 1];
        uint32_t cs = nc ? s->chunk_of[sj] : 0, s_end = s->tmp[sj];
        uint32_t s_local = (uint32_t)sj - (nc ? p->c_start[cs] : 0);
        for (uint32_t c = s->conn_start[i]; c < c1; c++) {
            uint32_t dj = cd[c] & IDX_MASK, cat = cd[c] >> CAT_SHIFT;
            float w = g->conns[c].weight;
            if (cat == CAT_TILE) {
                uint32_t tc = s->chunk_of[dj];
                size_t q = (size_t)tc * 2 * nc + (dj < s_end ? nc : 0) + cs;
                uint32_t k = s->t_cur[q]++;
                p->t_sd[k] = s_local << 16 | (dj - p->c_start[tc]);
                p->t_w[k] = w;
                if (keep)
                    ct[k] = c;
            } else if (cat == CAT_GATHER) {
                uint32_t k = row_g[dj]++;
                p->g_w[k] = w;
                put_idx(p->g_idx, bits, k, s_local);
                if (keep)
                    cg[k] = c;
            } else if (cat == CAT_REC) {
                uint32_t k = row_r[dj]++;
                p->r_w[k] = w;
                put_idx(p->r_idx, bits, k, s_local);
                if (keep)
                    cr[k] = c;
            } else {
                uint32_t k = s->sd_row[dj]++;
                s->sd_src[k] = (uint32_t)sj;
                s->sd_w[k] = w;
                if (keep)
                    s->sd_conn[k] = c;
            }
        }
    }
}

/* The plan's block. A large one is aligned to 2 MB and asked to be backed
 * by huge pages where the system does that on request (Linux THP in madvise
 * mode): compiling writes rows all over it, and with 4 KB pages nearly every
 * such write would miss the TLB. */
static void *plan_alloc(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes < 2 * huge)
        return aligned_alloc(ALIGN, bytes);
    size_t rounded = (bytes + huge - 1) & ~(huge - 1);
    void *m = aligned_alloc(huge, rounded);
#ifdef MADV_HUGEPAGE
    if (m)
        (void)madvise(m, rounded, MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
    return m;
}

/* Entries of a row of `count` edges: rows of 1 to 7 are padded to 8 (see
 * nn_impl.h). */
static uint32_t short_row(uint32_t count)
{
    return count > 0 && count < 8 ? 8 : count;
}

/* Lays out the plan's arrays: the structure in one block (base), and the
 * weights and biases in it too, or, in a trainable plan, in a block of their
 * own (pbase), whose size in floats goes to p->n_param. Returns the size of
 * the first block. With base NULL only measures. */
static size_t layout(struct nn_plan *p, unsigned char *base, unsigned char *pbase)
{
    size_t off = round_up(sizeof *p), poff = 0;
    size_t ib = (size_t)p->index_bits / 8, rb = (size_t)p->row_bits / 8;
    size_t *woff = p->trainable ? &poff : &off;
    unsigned char *wbase = p->trainable ? pbase : base;
#define TAKE_AT(o, b, field, count, size)                                                          \
    do {                                                                                           \
        if (b)                                                                                     \
            p->field = (void *)((b) + (o));                                                        \
        (o) = round_up((o) + (count) * (size));                                                    \
    } while (0)
#define TAKE(field, count, size) TAKE_AT(off, base, field, count, size)
#define TAKE_W(field, count) TAKE_AT(*woff, wbase, field, count, 4)
    TAKE(ops, p->n_ops, sizeof(struct nn_op));
    TAKE(out_map, p->n_out, 4);
    TAKE(layer_start, p->n_layers + 1, 4);
    TAKE_W(bias, p->n);
    TAKE(g_row, p->n + 1, 4);
    TAKE(r_row, p->n + 1, 4);
    TAKE(g_hid, p->n, 4);
    TAKE(g_end, p->n, 4);
    TAKE(r_end, p->n, 4);
    TAKE(s_row, p->n + 1, 4);
    TAKE_W(g_w, p->n_gather + NN_SLACK);
    TAKE_W(r_w, p->n_rec + NN_SLACK);
    TAKE_W(s_w, p->n_scatter);
    TAKE(g_idx, p->n_gather + NN_SLACK, rb);
    TAKE(r_idx, p->n_rec + NN_SLACK, rb);
    TAKE(s_idx, p->n_scatter, ib);
    size_t nc = p->n_chunks;
    TAKE(c_layer, nc ? nc + 1 : 0, 4);
    TAKE(c_start, nc ? nc + 1 : 0, 4);
    TAKE(t_row, nc ? 2 * nc * nc + 1 : 0, 4);
    TAKE(t_sd, p->n_tiled, 4);
    TAKE_W(t_w, p->n_tiled);
    TAKE(act, p->n, 1);
    TAKE(layer_way, p->n_layers, 1);
    p->n_param = poff / 4;
    TAKE(conn_of, p->n_param, 4);
    TAKE(neuron_of, p->trainable ? p->n : 0, 4);
    if (pbase)
        p->param = (float *)pbase;
#undef TAKE_W
#undef TAKE
#undef TAKE_AT
    return off;
}

int nn_plan_compile(const struct genome *g, const struct nn_opts *opts, struct nn_plan **out,
                    struct tv_error *err)
{
    static const struct nn_opts defaults = {0};
    const struct nn_opts *o = opts ? opts : &defaults;
    *out = NULL;
    if (o->way < NN_WAY_AUTO || o->way > NN_WAY_SCATTER)
        return tv_error_set(err, TV_EINVAL, "nn_opts.way: unknown way %d", o->way);
    if (o->index_bits != 0 && o->index_bits != 16 && o->index_bits != 32)
        return tv_error_set(err, TV_EINVAL, "nn_opts.index_bits: expected 0, 16 or 32, got %d",
                            o->index_bits);
    size_t n = g->n_neurons, m = g->n_conns;
    if (n > IDX_MASK || m > UINT32_MAX)
        return tv_error_set(err, TV_ELIMIT,
                            "%zu neurons, %zu connections: beyond the engine's limits (%u "
                            "neurons, %u connections)",
                            n, m, IDX_MASK, UINT32_MAX);
    struct nn_plan hd = {0}; /* sizes first, the block once they are known */
    hd.n = n;
    int rc = check_neurons(g, &hd.n_in, &hd.n_out, err);
    if (rc)
        return rc;
    /* indices go up to n, the zero slot */
    hd.index_bits = o->index_bits ? o->index_bits : (n < 65536 ? 16 : 32);
    if (hd.index_bits == 16 && n >= 65536)
        return tv_error_set(err, TV_EINVAL, "16-bit indices cannot address %zu neurons", n);

    struct scratch s = {0};
    struct id_table ids = {0};
    struct nn_plan *p = NULL;
    float *param = NULL; /* a trainable plan's weights and biases */
    uint8_t *way = NULL;
    s.old_of = malloc(n * sizeof *s.old_of);
    s.new_of = malloc(n * sizeof *s.new_of);
    s.tmp = malloc(n * sizeof *s.tmp);
    s.key = malloc(n * sizeof *s.key);
    s.depth = malloc(n * sizeof *s.depth);
    s.conn_start = malloc((n + 1) * sizeof *s.conn_start);
    s.pos = malloc((n + 1) * sizeof *s.pos);
    s.sd_row = calloc(n + 1, sizeof *s.sd_row);
    s.cd = malloc((m ? m : 1) * sizeof *s.cd);
    way = malloc(n + 1);
    if (!s.old_of || !s.new_of || !s.tmp || !s.key || !s.depth || !s.conn_start || !s.pos ||
        !s.sd_row || !s.cd || !way || id_table_init(&ids, g)) {
        rc = tv_error_set(err, TV_ENOMEM, "out of memory compiling %zu neurons, %zu connections", n,
                          m);
        goto done;
    }

    /* 1. Order: inputs (already by id), then the rest stably by depth. */
    size_t k_in = 0, k_rest = hd.n_in;
    for (size_t i = 0; i < n; i++) {
        s.key[i] = depth_key(g->neurons[i].depth);
        if (g->neurons[i].kind == GENOME_INPUT)
            s.old_of[k_in++] = (uint32_t)i;
        else
            s.old_of[k_rest++] = (uint32_t)i;
    }
    radix_sort_by_key(s.old_of + hd.n_in, s.tmp, n - hd.n_in, s.key);
    size_t n_layers = 1;
    for (size_t j = 0; j < n; j++) {
        uint32_t i = s.old_of[j];
        s.new_of[i] = (uint32_t)j;
        s.depth[j] = g->neurons[i].depth;
        if (j > hd.n_in && s.key[i] != s.key[s.old_of[j - 1]])
            n_layers++;
        if (j == hd.n_in && j < n)
            n_layers++;
    }
    hd.n_layers = n_layers;

    /* Layer starts (in pos, n + 1 entries) and each neuron's layer. */
    uint32_t *layer_of = s.key; /* the keys are not needed any more */
    {
        size_t l = 0;
        s.pos[0] = 0;
        for (size_t j = 1; j < n; j++)
            if (j == hd.n_in || (j > hd.n_in && s.depth[j] != s.depth[j - 1]))
                s.pos[++l] = (uint32_t)j;
        s.pos[n_layers] = (uint32_t)n;
        for (size_t li = 0; li < n_layers; li++)
            for (uint32_t j = s.pos[li]; j < s.pos[li + 1]; j++)
                layer_of[j] = (uint32_t)li;
    }
    hd.layer_start = s.pos;
    /* run_end[j]: the first dense index deeper than j, so that an edge
     * sj -> dj is feed-forward iff dj >= run_end[sj] (the dense order is by
     * depth; an input and a hidden neuron at depth 0 are equally deep). */
    uint32_t *run_end = s.tmp; /* the sort is done with it */
    run_end[n - 1] = (uint32_t)n;
    for (size_t j = n - 1; j-- > 0;)
        run_end[j] = s.depth[j + 1] > s.depth[j] ? (uint32_t)j + 1 : run_end[j + 1];
    id_table_renumber(&ids, s.new_of, g->neurons[n - 1].id);
    rc = choose_ways(&hd, g, s.old_of, o, way, err);
    if (rc)
        goto done;
    /* Chunks of the tiled form, each neuron's chunk, and tile counts (in
     * t_cur, shifted by one) */
    size_t t_size = tile_size(o->tile_neurons, n), nc = 0;
    if (t_size) {
        s.c_layer = malloc((n_layers + 1) * sizeof *s.c_layer);
        if (!s.c_layer) {
            rc = tv_error_set(err, TV_ENOMEM, "out of memory compiling %zu neurons", n);
            goto done;
        }
        nc = cut_chunks(s.pos, n_layers, t_size, s.c_layer);
    }
    if (nc) {
        s.chunk_of = malloc(n * sizeof *s.chunk_of);
        s.t_cur = calloc(2 * nc * nc + 1, sizeof *s.t_cur);
        if (!s.chunk_of || !s.t_cur) {
            rc = tv_error_set(err, TV_ENOMEM, "out of memory compiling %zu neurons", n);
            goto done;
        }
        for (size_t c = 0; c < nc; c++)
            for (uint32_t j = s.pos[s.c_layer[c]]; j < s.pos[s.c_layer[c + 1]]; j++)
                s.chunk_of[j] = (uint32_t)c;
    }
    hd.n_chunks = nc;
    hd.row_bits = nc ? 16 : hd.index_bits;

    /* 2. Map and classify the connections. */
    uint32_t max_id = g->neurons[n - 1].id;
    /* Counts: g_row, r_row, s_row, sd_row of the plan-to-be, in scratch until
     * the plan's size is known. */
    uint32_t *row_g = calloc(n + 1, sizeof *row_g);
    uint32_t *row_r = calloc(n + 1, sizeof *row_r);
    uint32_t *row_s = calloc(n + 1, sizeof *row_s);
    if (!row_g || !row_r || !row_s) {
        rc = tv_error_set(err, TV_ENOMEM, "out of memory compiling %zu connections", m);
        goto counted;
    }
    /* One pass in genome order: check the order, find each source by a merge
     * walk (conn_start[i]: the first connection with from >= id of i) and
     * each destination through the id table, classify, count. */
    {
        size_t i = 0, n_rec_all = 0;
        uint32_t sj = 0, s_end = 0, s_cat = CAT_GATHER, prev_from = 0, prev_to = 0, s_ch = 0;
        int rec_in = 0;
        const uint32_t *chunk_of = s.chunk_of;
        uint32_t *t_cnt = s.t_cur + 1, nc32 = (uint32_t)nc;
        /* locals, so that the stores below (uint32_t) are not thought to
         * change them */
        const uint32_t *slot = ids.direct ? ids.slot_idx : NULL, n_in = (uint32_t)hd.n_in;
        for (size_t c = 0; c < m; c++) {
            const struct genome_conn *cn = &g->conns[c];
            uint32_t from = cn->from, to = cn->to;
            if (c > 0 && (from < prev_from || (from == prev_from && to <= prev_to))) {
                rc = tv_error_set(err, TV_EINVAL,
                                  "connection %zu (%u -> %u): connections not in canonical order "
                                  "or duplicated",
                                  c, cn->from, cn->to);
                goto counted;
            }
            prev_from = from, prev_to = to;
            if (c == 0 || from != g->conns[c - 1].from) {
                while (i < n && g->neurons[i].id <= cn->from)
                    s.conn_start[i++] = (uint32_t)c;
                if (i == 0 || g->neurons[i - 1].id != cn->from) {
                    rc = tv_error_set(err, TV_EINVAL, "connection %zu (%u -> %u): no neuron %u", c,
                                      cn->from, cn->to, cn->from);
                    goto counted;
                }
                sj = s.new_of[i - 1];
                s_end = run_end[sj];
                s_cat = way[layer_of[sj]] == NN_WAY_SCATTER ? CAT_SCATTER : CAT_GATHER;
                s_ch = nc ? chunk_of[sj] : 0;
            }
            int64_t t = slot ? (to <= max_id ? (int64_t)slot[to] - 1 : -1)
                             : id_table_find(&ids, to, max_id);
            if (t < 0) {
                rc = tv_error_set(err, TV_EINVAL, "connection %zu (%u -> %u): no neuron %u", c,
                                  cn->from, cn->to, cn->to);
                goto counted;
            }
            uint32_t dj = (uint32_t)t;
            if (dj < n_in) { /* inputs come first in dense order */
                rc = tv_error_set(err, TV_EINVAL,
                                  "connection %zu (%u -> %u): ends in input neuron %u", c, cn->from,
                                  cn->to, cn->to);
                goto counted;
            }
            uint32_t cat = dj < s_end ? CAT_REC : s_cat;
            if (cat == CAT_REC) {
                n_rec_all++;
                rec_in |= sj < n_in;
            }
            if (nc && (cat == CAT_REC || (cat == CAT_GATHER && chunk_of[dj] != s_ch))) {
                t_cnt[(size_t)chunk_of[dj] * 2 * nc32 + (cat == CAT_REC ? nc32 : 0) + s_ch]++;
                cat = CAT_TILE;
            }
            if (cat == CAT_GATHER) {
                row_g[dj + 1]++;
            } else if (cat == CAT_REC) {
                row_r[dj + 1]++;
            } else if (cat == CAT_SCATTER) {
                row_s[sj + 1]++;
                s.sd_row[dj + 1]++;
            }
            s.cd[c] = dj | (cat << CAT_SHIFT);
        }
        while (i < n)
            s.conn_start[i++] = (uint32_t)m;
        s.conn_start[n] = (uint32_t)m;
        hd.rec_reads_input = rec_in;
        hd.n_recurrent = n_rec_all;
    }
    hd.n_conns = m;
    for (size_t q = 0; nc && q < 2 * nc * nc; q++)
        s.t_cur[q + 1] += s.t_cur[q];
    hd.n_tiled = nc ? s.t_cur[2 * nc * nc] : 0;
    for (size_t j = 0; j < n; j++) {
        if (!nc) { /* a tiled plan is read from memory: no padding */
            row_g[j + 1] = short_row(row_g[j + 1]);
            row_r[j + 1] = short_row(row_r[j + 1]);
        }
        row_g[j + 1] += row_g[j];
        row_r[j + 1] += row_r[j];
        row_s[j + 1] += row_s[j];
        s.sd_row[j + 1] += s.sd_row[j];
    }
    hd.n_gather = row_g[n];
    hd.n_rec = row_r[n];
    hd.n_scatter = row_s[n];

    /* The plan's block. */
    hd.layer_way = way;
    hd.c_layer = s.c_layer;
    hd.n_ops = nn_plan_ops(&hd, NULL);
    hd.trainable = o->trainable != 0;
    size_t block = layout(&hd, NULL, NULL), pbytes = round_up(hd.n_param * sizeof(float));
    hd.bytes = block + pbytes;
    p = plan_alloc(block);
    if (hd.trainable)
        param = aligned_alloc(ALIGN, pbytes);
    s.sd_src = malloc((hd.n_scatter ? hd.n_scatter : 1) * sizeof *s.sd_src);
    s.sd_w = malloc((hd.n_scatter ? hd.n_scatter : 1) * sizeof *s.sd_w);
    if (hd.trainable)
        s.sd_conn = malloc((hd.n_scatter ? hd.n_scatter : 1) * sizeof *s.sd_conn);
    if (!p || !s.sd_src || !s.sd_w || (hd.trainable && (!param || !s.sd_conn))) {
        rc = tv_error_set(err, TV_ENOMEM, "out of memory for a plan of %zu bytes", hd.bytes);
        goto counted;
    }
    *p = hd;
    layout(p, (unsigned char *)p, (unsigned char *)param);
    if (p->trainable) { /* entries that are no connection: padding, slack, biases */
        memset(p->param, 0, pbytes);
        memset(p->conn_of, 0xff, p->n_param * sizeof *p->conn_of);
    }
    memcpy(p->g_row, row_g, (n + 1) * sizeof *row_g);
    memcpy(p->r_row, row_r, (n + 1) * sizeof *row_r);
    memcpy(p->s_row, row_s, (n + 1) * sizeof *row_s);
    memcpy(p->layer_start, s.pos, (n_layers + 1) * sizeof *s.pos);
    memcpy(p->layer_way, way, n_layers);
    if (nc) {
        memcpy(p->c_layer, s.c_layer, (nc + 1) * sizeof *s.c_layer);
        for (size_t c = 0; c <= nc; c++)
            p->c_start[c] = s.pos[s.c_layer[c]];
        memcpy(p->t_row, s.t_cur, (2 * nc * nc + 1) * sizeof *s.t_cur);
    }
    nn_plan_ops(p, p->ops);
    for (size_t j = 0; j < n; j++) {
        const struct genome_neuron *u = &g->neurons[s.old_of[j]];
        p->bias[j] = u->kind == GENOME_INPUT ? 0.0f : u->bias;
        p->act[j] = u->kind == GENOME_INPUT ? GENOME_ACT_IDENTITY : u->act;
        if (p->trainable)
            p->neuron_of[j] = u->kind == GENOME_INPUT ? NN_NONE : s.old_of[j];
    }
    /* Outputs in id order: the neurons array is in id order. */
    p->out_contiguous = 1;
    for (size_t i = 0, k = 0; i < n; i++) {
        if (g->neurons[i].kind != GENOME_OUTPUT)
            continue;
        p->out_map[k] = s.new_of[i];
        if (p->out_map[k] != p->out_map[0] + k)
            p->out_contiguous = 0;
        k++;
    }

    /* 3. Place, source by source in dense order (row_* become cursors). */
    if (p->row_bits == 16)
        place_edges(p, g, &s, row_g, row_r, 16);
    else
        place_edges(p, g, &s, row_g, row_r, 32);
    /* Padding of short rows (the cursors stopped at the real end of each
     * row), the slack after the last row, and where each row's input
     * sources end (rows are sorted by source and inputs come first: a binary
     * search). */
    memcpy(p->g_end, row_g, n * sizeof *row_g);
    memcpy(p->r_end, row_r, n * sizeof *row_r);
    for (size_t j = 0; j < n; j++) {
        for (uint32_t k = row_g[j]; k < p->g_row[j + 1]; k++) {
            p->g_w[k] = 0.0f;
            put_idx(p->g_idx, p->row_bits, k, (uint32_t)n);
        }
        for (uint32_t k = row_r[j]; k < p->r_row[j + 1]; k++) {
            p->r_w[k] = 0.0f;
            put_idx(p->r_idx, p->row_bits, k, (uint32_t)n);
        }
    }
    /* (a tiled plan's slack is only read masked: any index does) */
    uint32_t slack = nc ? 0 : (uint32_t)n;
    for (size_t k = 0; k < NN_SLACK; k++) {
        p->g_w[p->n_gather + k] = 0.0f;
        put_idx(p->g_idx, p->row_bits, p->n_gather + k, slack);
        p->r_w[p->n_rec + k] = 0.0f;
        put_idx(p->r_idx, p->row_bits, p->n_rec + k, slack);
    }
    /* (in a tiled plan, inputs are all in the first chunk, whose indices
     * count from 0, and rows of other chunks have none) */
    size_t n_with_inputs = nc ? p->c_start[1] : n;
    for (size_t j = 0; j < n; j++) {
        uint32_t lo = p->g_row[j], hi = j < n_with_inputs ? p->g_end[j] : lo;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            uint32_t v = p->row_bits == 16 ? ((const uint16_t *)p->g_idx)[mid]
                                           : ((const uint32_t *)p->g_idx)[mid];
            if (v < hd.n_in)
                lo = mid + 1;
            else
                hi = mid;
        }
        p->g_hid[j] = lo;
    }
    /* Scatter edges, destination by destination (sd_row[dj] now ends row dj,
     * so row dj starts at sd_row[dj - 1]). */
    for (size_t dj = 0, k = 0; dj < n; dj++) {
        for (; k < s.sd_row[dj]; k++) {
            uint32_t sj = s.sd_src[k];
            uint32_t q = row_s[sj]++;
            p->s_w[q] = s.sd_w[k];
            put_idx(p->s_idx, p->index_bits, q, (uint32_t)dj);
            if (p->trainable)
                p->conn_of[(p->s_w - p->param) + q] = s.sd_conn[k];
        }
    }
    *out = p;
    p = NULL;
    param = NULL;
    rc = 0;
counted:
    free(row_g);
    free(row_r);
    free(row_s);
done:
    free(p);
    free(param);
    free(way);
    id_table_free(&ids);
    scratch_free(&s);
    return rc;
}

void nn_plan_free(struct nn_plan *p)
{
    if (p)
        free(p->param);
    free(p);
}

int nn_plan_params(struct nn_plan *p, struct nn_params *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    if (!p->trainable)
        return tv_error_set(
            err, TV_ESTATE,
            "nn_plan_params: the plan was not compiled trainable (nn_opts.trainable)");
    out->w = p->param;
    out->conn_of = p->conn_of;
    out->n_w = p->n_param;
    out->bias = p->bias;
    out->neuron_of = p->neuron_of;
    out->n_bias = p->n;
    return 0;
}

int nn_plan_write_weights(const struct nn_plan *p, struct genome *g, struct tv_error *err)
{
    if (!p->trainable)
        return tv_error_set(err, TV_ESTATE,
                            "nn_plan_write_weights: the plan was not compiled trainable "
                            "(nn_opts.trainable)");
    if (g->n_conns != p->n_conns || g->n_neurons != p->n)
        return tv_error_set(err, TV_EINVAL,
                            "nn_plan_write_weights: the genome has %zu neurons and %zu "
                            "connections, the plan %zu and %zu (write into the genome compiled)",
                            g->n_neurons, g->n_conns, p->n, p->n_conns);
    for (size_t k = 0; k < p->n_param; k++)
        if (p->conn_of[k] != NN_NONE)
            g->conns[p->conn_of[k]].weight = p->param[k];
    for (size_t j = 0; j < p->n; j++)
        if (p->neuron_of[j] != NN_NONE)
            g->neurons[p->neuron_of[j]].bias = p->bias[j];
    return 0;
}

size_t nn_plan_n_inputs(const struct nn_plan *p)
{
    return p->n_in;
}

size_t nn_plan_n_outputs(const struct nn_plan *p)
{
    return p->n_out;
}

size_t nn_plan_n_neurons(const struct nn_plan *p)
{
    return p->n;
}

size_t nn_plan_n_layers(const struct nn_plan *p)
{
    return p->n_layers;
}

size_t nn_plan_n_conns(const struct nn_plan *p)
{
    return p->n_conns;
}

size_t nn_plan_n_recurrent(const struct nn_plan *p)
{
    return p->n_recurrent;
}

size_t nn_plan_bytes(const struct nn_plan *p)
{
    return p->bytes;
}

int nn_plan_index_bits(const struct nn_plan *p)
{
    return p->index_bits;
}

int nn_plan_layer_way(const struct nn_plan *p, size_t l)
{
    return l < p->n_layers ? p->layer_way[l] : -1;
}

size_t nn_plan_n_chunks(const struct nn_plan *p)
{
    return p->n_chunks;
}

size_t nn_plan_n_tiled(const struct nn_plan *p)
{
    return p->n_tiled;
}
