/* compile.c -- the plain compile (nn_compile_run): triplets to a compact
 * plan in O(n + m), in the phases compile.h lists (ordering in order.c, the
 * tiled form's chunks in tile.c, the rest here). nn_plan_compile (plan.c)
 * sends every genome without channels or cuba neurons here.
 *
 * Nothing enumerates paths, so a deep, looped graph costs what a flat one of
 * the same size does.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "compile.h"

#define ALIGN 64

static size_t round_up(size_t x)
{
    return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* Phase 2: the way of every layer (enum nn_way): what the options say, or
 * from the measured density, or scatter when every neuron of the layer
 * makes zeros. */
static int choose_ways(struct nn_compile *c)
{
    const struct nn_plan *p = &c->hd;
    const struct nn_opts *o = c->o;
    const struct genome *g = c->g;
    struct tv_error *err = c->err;
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
        } else if (o->way == NN_WAY_AUTO) {
            int zeros = 1;
            for (uint32_t j = c->layer_start[l]; j < c->layer_start[l + 1]; j++)
                zeros &= nn_act_makes_zeros(g->neurons[c->old_of[j]].act) != 0;
            w = nn_compile_default_way(l, zeros);
        }
        c->way[l] = (uint8_t)w;
    }
    c->work += p->n_layers + p->n;
    return 0;
}

static void put_idx(void *base, int bits, size_t k, uint32_t v)
{
    if (bits == 16)
        ((uint16_t *)base)[k] = (uint16_t)v;
    else
        ((uint32_t *)base)[k] = v;
}

/* Phase 3, for connection k of the genome (from sj, in category s_cat if
 * feed-forward, in chunk s_ch): checks its end and classifies it, counts
 * it in its row or tile. 0 or TV_EINVAL. */
static inline __attribute__((always_inline)) int
classify_one(struct nn_compile *c, size_t k, uint32_t sj, uint32_t s_cat, uint32_t s_ch)
{
    const struct genome_conn *cn = &c->g->conns[k];
    int64_t t = nn_id_find(&c->ids, cn->to);
    if (t < 0)
        return tv_error_set(c->err, TV_EINVAL, "connection %zu (%u -> %u): no neuron %u", k,
                            cn->from, cn->to, cn->to);
    uint32_t dj = (uint32_t)t, nc = (uint32_t)c->hd.n_chunks;
    if (dj < c->hd.n_in) /* inputs come first in dense order */
        return tv_error_set(c->err, TV_EINVAL, "connection %zu (%u -> %u): ends in input neuron %u",
                            k, cn->from, cn->to, cn->to);
    uint32_t cat = nn_compile_is_recurrent(c->run_end[sj], dj) ? NN_CAT_REC : s_cat;
    if (cat == NN_CAT_REC) {
        c->hd.n_recurrent++;
        c->hd.rec_reads_input |= sj < c->hd.n_in;
    }
    if (nc && (cat == NN_CAT_REC || (cat == NN_CAT_GATHER && c->chunk_of[dj] != s_ch))) {
        c->t_cur[1 + (size_t)c->chunk_of[dj] * 2 * nc + (cat == NN_CAT_REC ? nc : 0) + s_ch]++;
        cat = NN_CAT_TILE;
    }
    if (cat == NN_CAT_GATHER) {
        c->row_g[dj + 1]++;
    } else if (cat == NN_CAT_REC) {
        c->row_r[dj + 1]++;
    } else if (cat == NN_CAT_SCATTER) {
        c->row_s[sj + 1]++;
        c->sd_row[dj + 1]++;
    }
    c->cd[k] = dj | (cat << NN_CAT_SHIFT);
    return 0;
}

/* Phase 3: one pass over the connections in genome order: checks their
 * order, finds each source by a merge walk (conn_start[i]: the first
 * connection with from >= id of i) and each destination through the id
 * table, classifies and counts. 0, TV_EINVAL naming the connection, or
 * TV_ENOMEM. */
static int classify(struct nn_compile *c)
{
    const struct genome *g = c->g;
    size_t n = g->n_neurons, m = g->n_conns;
    c->conn_start = malloc((n + 1) * sizeof *c->conn_start);
    c->cd = malloc((m ? m : 1) * sizeof *c->cd);
    c->row_g = calloc(n + 1, sizeof *c->row_g);
    c->row_r = calloc(n + 1, sizeof *c->row_r);
    c->row_s = calloc(n + 1, sizeof *c->row_s);
    c->sd_row = calloc(n + 1, sizeof *c->sd_row);
    if (!c->conn_start || !c->cd || !c->row_g || !c->row_r || !c->row_s || !c->sd_row)
        return tv_error_set(c->err, TV_ENOMEM, "out of memory compiling %zu connections", m);
    size_t i = 0;
    uint32_t sj = 0, s_cat = NN_CAT_GATHER, s_ch = 0;
    for (size_t k = 0; k < m; k++) {
        const struct genome_conn *cn = &g->conns[k];
        if (k > 0 && (cn->from < cn[-1].from || (cn->from == cn[-1].from && cn->to <= cn[-1].to)))
            return tv_error_set(c->err, TV_EINVAL,
                                "connection %zu (%u -> %u): connections not in canonical order "
                                "or duplicated",
                                k, cn->from, cn->to);
        if (k == 0 || cn->from != cn[-1].from) {
            while (i < n && g->neurons[i].id <= cn->from)
                c->conn_start[i++] = (uint32_t)k;
            if (i == 0 || g->neurons[i - 1].id != cn->from)
                return tv_error_set(c->err, TV_EINVAL, "connection %zu (%u -> %u): no neuron %u", k,
                                    cn->from, cn->to, cn->from);
            sj = c->new_of[i - 1];
            s_cat = c->way[c->layer_of[sj]] == NN_WAY_SCATTER ? NN_CAT_SCATTER : NN_CAT_GATHER;
            s_ch = c->hd.n_chunks ? c->chunk_of[sj] : 0;
        }
        int rc = classify_one(c, k, sj, s_cat, s_ch);
        if (rc)
            return rc;
    }
    while (i < n)
        c->conn_start[i++] = (uint32_t)m;
    c->conn_start[n] = (uint32_t)m;
    c->hd.n_conns = m;
    c->work += n + m;
    return 0;
}

/* Entries of a row of `count` edges: rows of 1 to 7 are padded to 8 (see
 * nn_impl.h). */
static uint32_t short_row(uint32_t count)
{
    return count > 0 && count < 8 ? 8 : count;
}

/* Phase 3, after the pass: row starts from counts, the tiles' starts, and
 * the sizes they give. */
static void count_rows(struct nn_compile *c)
{
    size_t n = c->hd.n;
    nn_compile_tile_starts(c);
    for (size_t j = 0; j < n; j++) {
        if (!c->hd.n_chunks) { /* a tiled plan is read from memory: no padding */
            c->row_g[j + 1] = short_row(c->row_g[j + 1]);
            c->row_r[j + 1] = short_row(c->row_r[j + 1]);
        }
        c->row_g[j + 1] += c->row_g[j];
        c->row_r[j + 1] += c->row_r[j];
        c->row_s[j + 1] += c->row_s[j];
        c->sd_row[j + 1] += c->sd_row[j];
    }
    c->hd.n_gather = c->row_g[n];
    c->hd.n_rec = c->row_r[n];
    c->hd.n_scatter = c->row_s[n];
    c->work += n + 2 * c->hd.n_chunks * c->hd.n_chunks;
}

/* Entry k of a gather or recurrent row: its weight, its source's index and,
 * in a trainable plan (conn not NULL), the genome connection behind it. */
static inline void put_entry(float *wv, void *idx, uint32_t *conn, int bits, uint32_t k,
                             uint32_t src, float w, uint32_t c)
{
    wv[k] = w;
    put_idx(idx, bits, k, src);
    if (conn)
        conn[k] = c;
}

/* Phase 4: the edges of each source, sources in dense order, to the cursors
 * of their rows (row_g, row_r, sd_row) and tiles (t_cur), so that every row
 * and every tile comes out sorted by source. */
static inline __attribute__((always_inline)) void place_edges(struct nn_compile *s,
                                                              struct nn_plan *p, int bits)
{
    size_t n = p->n, nc = p->n_chunks;
    const struct genome *g = s->g;
    const uint32_t *cd = s->cd;
    uint32_t *row_g = s->row_g, *row_r = s->row_r;
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
        uint32_t cs = nc ? s->chunk_of[sj] : 0, s_end = s->run_end[sj];
        uint32_t s_local = (uint32_t)sj - (nc ? p->c_start[cs] : 0);
        for (uint32_t c = s->conn_start[i]; c < c1; c++) {
            uint32_t dj = cd[c] & NN_IDX_MASK, cat = cd[c] >> NN_CAT_SHIFT;
            float w = g->conns[c].weight;
            if (cat == NN_CAT_TILE) {
                uint32_t tc = s->chunk_of[dj];
                size_t q = (size_t)tc * 2 * nc + (nn_compile_is_recurrent(s_end, dj) ? nc : 0) + cs;
                uint32_t k = s->t_cur[q]++;
                p->t_sd[k] = s_local << 16 | (dj - p->c_start[tc]);
                p->t_w[k] = w;
                if (keep)
                    ct[k] = c;
            } else if (cat == NN_CAT_GATHER) {
                put_entry(p->g_w, p->g_idx, cg, bits, row_g[dj]++, s_local, w, c);
            } else if (cat == NN_CAT_REC) {
                put_entry(p->r_w, p->r_idx, cr, bits, row_r[dj]++, s_local, w, c);
            } else {
                uint32_t k = s->sd_row[dj]++;
                s->sd_src[k] = (uint32_t)sj;
                s->sd_w[k] = w;
                if (keep)
                    s->sd_conn[k] = c;
            }
        }
    }
    s->work += n + g->n_conns;
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

/* Phase 4, first: the plan's blocks, and in them everything but the edges:
 * row starts, layers, chunks, ops, neurons, outputs. NULL (and the error
 * set) when out of memory. */
static struct nn_plan *plan_new(struct nn_compile *c)
{
    struct nn_plan *hd = &c->hd;
    size_t n = hd->n;
    hd->layer_way = c->way; /* what nn_plan_ops reads to count */
    hd->c_layer = c->c_layer;
    hd->n_ops = nn_plan_ops(hd, NULL);
    size_t block = layout(hd, NULL, NULL), pbytes = round_up(hd->n_param * sizeof(float));
    hd->bytes = block + pbytes;
    struct nn_plan *p = plan_alloc(block);
    float *param = hd->trainable ? aligned_alloc(ALIGN, pbytes) : NULL;
    size_t ns = hd->n_scatter ? hd->n_scatter : 1;
    c->sd_src = malloc(ns * sizeof *c->sd_src);
    c->sd_w = malloc(ns * sizeof *c->sd_w);
    c->sd_conn = hd->trainable ? malloc(ns * sizeof *c->sd_conn) : NULL;
    if (!p || !c->sd_src || !c->sd_w || (hd->trainable && (!param || !c->sd_conn))) {
        free(p);
        free(param);
        tv_error_set(c->err, TV_ENOMEM, "out of memory for a plan of %zu bytes", hd->bytes);
        return NULL;
    }
    *p = *hd;
    layout(p, (unsigned char *)p, (unsigned char *)param);
    if (p->trainable) { /* entries that are no connection: padding, slack, biases */
        memset(p->param, 0, pbytes);
        memset(p->conn_of, 0xff, p->n_param * sizeof *p->conn_of);
    }
    memcpy(p->g_row, c->row_g, (n + 1) * sizeof *c->row_g);
    memcpy(p->r_row, c->row_r, (n + 1) * sizeof *c->row_r);
    memcpy(p->s_row, c->row_s, (n + 1) * sizeof *c->row_s);
    memcpy(p->layer_start, c->layer_start, (p->n_layers + 1) * sizeof *c->layer_start);
    memcpy(p->layer_way, c->way, p->n_layers);
    nn_compile_tile_copy(c, p);
    nn_plan_ops(p, p->ops);
    for (size_t j = 0; j < n; j++) {
        const struct genome_neuron *u = &c->g->neurons[c->old_of[j]];
        p->bias[j] = u->kind == GENOME_INPUT ? 0.0f : u->bias;
        p->act[j] = u->kind == GENOME_INPUT ? GENOME_ACT_IDENTITY : u->act;
        if (p->trainable)
            p->neuron_of[j] = u->kind == GENOME_INPUT ? NN_NONE : c->old_of[j];
    }
    /* outputs in id order: the neurons array is in id order */
    p->out_contiguous = 1;
    for (size_t i = 0, k = 0; i < n; i++) {
        if (c->g->neurons[i].kind != GENOME_OUTPUT)
            continue;
        p->out_map[k] = c->new_of[i];
        if (p->out_map[k] != p->out_map[0] + k)
            p->out_contiguous = 0;
        k++;
    }
    c->work += 2 * n + p->n_layers;
    return p;
}

/* Phase 4, after the edges: the padding of short rows (the cursors stopped
 * at the real end of each row), the slack after the last row, and where
 * each row's input sources end (rows are sorted by source and inputs come
 * first: a binary search). */
static void finish_rows(struct nn_compile *c, struct nn_plan *p)
{
    size_t n = p->n, nc = p->n_chunks;
    const uint32_t *row_g = c->row_g, *row_r = c->row_r;
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
        c->work += 1 + (p->g_row[j + 1] - row_g[j]) + (p->r_row[j + 1] - row_r[j]);
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
            if (v < p->n_in)
                lo = mid + 1;
            else
                hi = mid;
            c->work++;
        }
        p->g_hid[j] = lo;
    }
    c->work += n;
}

/* Phase 4, last: the scatter edges, destination by destination (sd_row[dj]
 * now ends row dj, so row dj starts at sd_row[dj - 1]), so that every
 * by-source row comes out sorted by destination. */
static void place_scatter(struct nn_compile *c, struct nn_plan *p)
{
    for (size_t dj = 0, k = 0; dj < p->n; dj++) {
        for (; k < c->sd_row[dj]; k++) {
            uint32_t sj = c->sd_src[k];
            uint32_t q = c->row_s[sj]++;
            p->s_w[q] = c->sd_w[k];
            put_idx(p->s_idx, p->index_bits, q, (uint32_t)dj);
            if (p->trainable)
                p->conn_of[(p->s_w - p->param) + q] = c->sd_conn[k];
        }
    }
    c->work += p->n + p->n_scatter;
}

void nn_compile_free(struct nn_compile *c)
{
    nn_id_table_free(&c->ids);
    TV_FREE_ALL(c->old_of, c->new_of, c->layer_of, c->tmp, c->depth, c->layer_start, c->way,
                c->conn_start, c->cd, c->row_g, c->row_r, c->row_s, c->sd_row, c->sd_src,
                c->sd_conn, c->sd_w, c->c_layer, c->chunk_of, c->t_cur);
}

/* Checks the options and the sizes against the engine's limits. */
static int check_opts(const struct nn_opts *o, const struct genome *g, struct tv_error *err)
{
    if (o->way < NN_WAY_AUTO || o->way > NN_WAY_SCATTER)
        return tv_error_set(err, TV_EINVAL, "nn_opts.way: unknown way %d", o->way);
    if (o->index_bits != 0 && o->index_bits != 16 && o->index_bits != 32)
        return tv_error_set(err, TV_EINVAL, "nn_opts.index_bits: expected 0, 16 or 32, got %d",
                            o->index_bits);
    if (g->n_neurons > NN_IDX_MASK || g->n_conns > UINT32_MAX)
        return tv_error_set(err, TV_ELIMIT,
                            "%zu neurons, %zu connections: beyond the engine's limits (%u "
                            "neurons, %u connections)",
                            g->n_neurons, g->n_conns, NN_IDX_MASK, UINT32_MAX);
    return 0;
}

/* The phases in order (compile.h); *out is the plan when they all succeed. */
static int compile_phases(struct nn_compile *c, struct nn_plan **out)
{
    size_t n = c->g->n_neurons;
    int rc = nn_compile_check(c);
    if (rc)
        return rc;
    /* indices go up to n, the zero slot */
    c->hd.index_bits = c->o->index_bits ? c->o->index_bits : (n < 65536 ? 16 : 32);
    if (c->hd.index_bits == 16 && n >= 65536)
        return tv_error_set(c->err, TV_EINVAL, "16-bit indices cannot address %zu neurons", n);
    c->way = malloc(n + 1);
    if (!c->way)
        return tv_error_set(c->err, TV_ENOMEM, "out of memory compiling %zu neurons", n);
    if ((rc = nn_compile_order(c)) || (c->conv && (rc = c->place(c->conv, c))) ||
        (rc = choose_ways(c)) || (rc = nn_compile_chunks(c)))
        return rc;
    c->hd.conv = c->conv;
    c->hd.row_bits = c->hd.n_chunks ? 16 : c->hd.index_bits;
    if ((rc = classify(c)))
        return rc;
    count_rows(c);
    struct nn_plan *p = plan_new(c);
    if (!p)
        return TV_ENOMEM;
    if (p->row_bits == 16)
        place_edges(c, p, 16);
    else
        place_edges(c, p, 32);
    finish_rows(c, p);
    place_scatter(c, p);
    p->compile_work = c->work;
    *out = p;
    return 0;
}

int nn_compile_run(const struct genome *g, const struct nn_opts *o, struct nn_conv_net *conv,
                   nn_place_fn *place, struct nn_plan **out, struct tv_error *err)
{
    int rc = check_opts(o, g, err);
    if (rc)
        return rc;
    struct nn_compile c = {0};
    c.g = g;
    c.o = o;
    c.err = err;
    c.hd.n = g->n_neurons;
    c.hd.trainable = o->trainable != 0;
    c.conv = conv;
    c.place = place;
    rc = compile_phases(&c, out);
    nn_compile_free(&c);
    return rc;
}
