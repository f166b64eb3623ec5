/* int8.c -- the int8 engine: an int8 plan (nn_qplan_compile) and the kernels
 * of its one op, NN_OP_INT8 (nn/ops.c).
 *
 * An int8 plan is one allocation: a struct nn_plan header (so that
 * nn_state_new, nn_step and the tasks run it as any plan), the flat form of
 * quant_impl.h without its rows and slots, and its arrays: per non-input
 * neuron 12 bytes (folded bias, multiplier, shift, pre-activation zero point,
 * table), per edge 2 bytes (its source's offset in its window, its int8
 * weight), per entry 7 bytes, per chunk 8, per distinct table 256.
 *
 * The values a step reads (this step's, then last step's for recurrent
 * edges: 2 (n + 1) slots) are cut into windows of WIN = 256. Within each
 * layer the neurons are numbered by falling fan-in (the plan's own order;
 * out_map and every slot follow it), and each run of up to 16 of them is a
 * chunk. A chunk's edges are grouped by window: per window it touches, an
 * entry (or more, if a neuron has more than 7 edges there) holds how far the
 * window is past the last one (1 byte; a gap over 255 takes entries with no
 * edges) and how many edges each of its 16 neurons has there (3 bits each).
 * The entry's edges follow in two steps: first up to 4 of each neuron (the
 * neurons in order), then the rest; so a step is at most 64 edges, a
 * neuron's at most 4, the bytes of one vpdpbusd lane.
 *
 * A state of an int8 plan keeps u = q + 128 of every neuron in its scatter
 * buffer (s->acc, unused by int8 plans): this step's values [n + 1][stride]
 * then last step's [n + 1][stride]. A step quantizes the inputs, computes
 * the neurons layer by layer (the plan's order within a layer), and at
 * batch 1 or feature-major writes the dequantized outputs to s->y, where
 * nn_state_read (batch 1) and nn_step_feature_major find them. With recurrent edges, a step first
 * copies this step's values to last step's (or, after a reset, every layer's zero code).
 *
 * Paths: batch 1 on target avx512f of a CPU with AVX-512 VNNI, VBMI and
 * VBMI2 runs a chunk at a time: per entry the window's 256 values in four
 * registers, per step the edges expanded into their lanes (vpexpandb), the
 * values looked up (vpermi2b) and multiplied (vpdpbusd): no gathers. The
 * other paths (portable, and batches, 64 samples at a time with vpdpbusd on
 * VNNI) run a neuron at a time over its edge list, which each state lists
 * once from the entries (lists_of). At batches nn_step hands the op its
 * caller's rows (plan->own_io): they are quantized straight into the
 * values' columns (qcols), and nn_state_read dequantizes the outputs from
 * them (nn_int8_read), with no float copy in the state. The sums are exact
 * integers (|acc| < 2^31 by the limits of quant.h), so every path gives the
 * same bits.
 */
#include <stdlib.h>
#include <string.h>

#include "quant_impl.h"

struct nn_qplan {
    struct nn_plan plan; /* first: the kernels get a struct nn_plan * */
    struct nn_qflat f;   /* row and idx unused; w: [n_edges + 64] in entry order */
    uint8_t *off;        /* [n_edges + 64] each edge's source: its offset in its window */
    uint8_t *ent;        /* [n_ents * ENT + 8] the windows' entries */
    uint32_t *cent;      /* [n_chunks + 1] each chunk's first entry */
    uint32_t *cedge;     /* [n_chunks + 1] each chunk's first edge */
    size_t n_chunks, n_ents, n_edges;
    struct nn_op op;
};

#define CHUNK 16
#define WIN 256 /* values a window holds: source slot s is offset s % WIN of window s / WIN */
#define ENT 7   /* bytes of an entry: the window step, then 16 counts of 3 bits */
#define ENT_MAX 7

/* The lanes (neurons) of the chunk starting at neuron j0 of the layer that
 * ends at neuron `end`. */
static inline uint32_t chunk_lanes(uint32_t j0, uint32_t end)
{
    return end - j0 < CHUNK ? end - j0 : CHUNK;
}

/* Entry k of e: its window step (bits 0..7) and lane l's count at bits
 * 8 + 3 l (8 bytes read: the array has one of slack). */
static inline uint64_t entry(const uint8_t *e, size_t k)
{
    uint64_t x;
    memcpy(&x, e + k * ENT, sizeof x);
    return x & 0x00ffffffffffffffu;
}

static inline uint32_t ent_count(uint64_t x, uint32_t lane)
{
    return (uint32_t)(x >> (8 + 3 * lane)) & 7;
}

/* Edges of a lane of count c in the entry's step h (0 or 1): up to 4. */
static inline uint32_t step_count(uint32_t c, uint32_t h)
{
    return c <= 4 * h ? 0 : c - 4 * h > 4 ? 4 : c - 4 * h;
}

/* Entries of a state's edge lists (lists_of): every edge, and up to 3 of
 * padding a non-input neuron. */
static size_t list_cap(const struct nn_qplan *qp)
{
    return qp->n_edges + 3 * (qp->f.n - qp->f.n_in);
}

#define ALIGN 64
static size_t up(size_t x)
{
    return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* Lays out the arrays after the header; base NULL only measures. */
static size_t layout(struct nn_qplan *qp, unsigned char *base)
{
    struct nn_qflat *f = &qp->f;
    size_t n = f->n - f->n_in, off = up(sizeof *qp); /* per non-input neuron */
#define PLACE(ptr, count)                                                                          \
    do {                                                                                           \
        if (base)                                                                                  \
            ptr = (void *)(base + off);                                                            \
        off += up((count) * sizeof *(ptr));                                                        \
    } while (0)
    PLACE(qp->cent, qp->n_chunks + 1);
    PLACE(qp->cedge, qp->n_chunks + 1);
    PLACE(f->fbias, n);
    PLACE(f->mult, n);
    PLACE(f->shift, n);
    PLACE(f->pzp, n);
    PLACE(f->tab, n);
    PLACE(f->w, qp->n_edges + 64); /* the vector path reads 64 bytes at any edge */
    PLACE(qp->off, qp->n_edges + 64);
    PLACE(qp->ent, qp->n_ents * ENT + 8);
    PLACE(f->tables, f->n_tables * 256 + 64);
    PLACE(f->lstart, f->n_layers + 1);
    PLACE(f->lzero, f->n_layers);
    PLACE(f->out_map, f->n_out);
    PLACE(qp->plan.layer_way, f->n_layers);
#undef PLACE
    return off;
}

/* Lays out the arrays of the row form t in base (NULL only measures); the
 * widest elements first, so that each array is aligned. */
static size_t row_layout(struct nn_qflat *t, unsigned char *base)
{
    size_t n = t->n - t->n_in, off = 0;
#define TAKE(ptr, count)                                                                           \
    do {                                                                                           \
        if (base)                                                                                  \
            ptr = (void *)(base + off);                                                            \
        off += (count) * sizeof *(ptr);                                                            \
    } while (0)
    TAKE(t->row, n + 1);
    TAKE(t->fbias, n);
    TAKE(t->mult, n);
    TAKE(t->lstart, t->n_layers + 1);
    TAKE(t->out_map, t->n_out);
    if (base)
        t->idx = base + off;
    off += t->n_edges * (size_t)t->idx_bits / 8;
    TAKE(t->tab, n);
    TAKE(t->w, t->n_edges);
    TAKE(t->shift, n);
    TAKE(t->pzp, n);
    TAKE(t->lzero, t->n_layers);
    TAKE(t->tables, t->n_tables * 256 + 64);
#undef TAKE
    return off;
}

/* The row form of q (quant_impl.h) into t, in memory *mem of its own (free
 * it). */
static int row_form(const struct nn_qnet *q, struct nn_qflat *t, unsigned char **mem,
                    struct tv_error *err)
{
    int rc = nn_qflat_sizes(q, t, err);
    if (rc)
        return rc;
    size_t bytes = row_layout(t, NULL);
    unsigned char *m = malloc(bytes ? bytes : 1);
    if (!m)
        return tv_error_set(err, TV_ENOMEM, "int8 plan: out of memory (%zu bytes)", bytes);
    row_layout(t, m);
    nn_qflat_fill(q, t);
    *mem = m;
    return 0;
}

static uint32_t row_slot(const struct nn_qflat *t, uint32_t k)
{
    return t->idx_bits == 16 ? ((const uint16_t *)t->idx)[k] : ((const uint32_t *)t->idx)[k];
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The plan's order of each layer: by falling fan-in, ties in the row form's
 * order. old[j'] is the row form's neuron at j', nw[j] the inverse (both of
 * n entries; inputs stay). key: scratch of n entries. */
static void order_by_fan_in(const struct nn_qflat *t, uint32_t *old, uint32_t *nw, uint64_t *key)
{
    for (uint32_t j = 0; j < t->n_in; j++)
        old[j] = j;
    for (size_t l = 1; l < t->n_layers; l++) {
        uint32_t a = t->lstart[l], b = t->lstart[l + 1];
        for (uint32_t j = a; j < b; j++) {
            uint32_t d = t->row[j - t->n_in + 1] - t->row[j - t->n_in];
            key[j] = (uint64_t)(UINT32_MAX - d) << 32 | j;
        }
        qsort(key + a, b - a, sizeof *key, cmp_u64);
        for (uint32_t j = a; j < b; j++)
            old[j] = (uint32_t)key[j];
    }
    for (uint32_t j = 0; j < t->n; j++)
        nw[old[j]] = j;
}

/* The keys of the edges of the chunk of `lanes` neurons from plan neuron j0:
 * window << 40 | lane << 32 | offset << 8 | weight byte, each slot
 * renumbered to the plan's order (a recurrent slot is n + 1 + its source).
 * Returns how many. */
static size_t chunk_keys(const struct nn_qflat *t, const uint32_t *old, const uint32_t *nw,
                         uint32_t j0, uint32_t lanes, uint64_t *key)
{
    size_t k = 0;
    for (uint32_t ln = 0; ln < lanes; ln++) {
        uint32_t i = old[j0 + ln] - (uint32_t)t->n_in;
        for (uint32_t e = t->row[i]; e < t->row[i + 1]; e++) {
            uint32_t s0 = row_slot(t, e);
            uint32_t sl = s0 < t->n    ? nw[s0]
                          : s0 == t->n ? s0
                                       : (uint32_t)t->n + 1 + nw[s0 - t->n - 1];
            key[k++] = (uint64_t)(sl / WIN) << 40 | (uint64_t)ln << 32 | (uint64_t)(sl % WIN) << 8 |
                       (uint8_t)t->w[e];
        }
    }
    qsort(key, k, sizeof *key, cmp_u64);
    return k;
}

/* The entries and edges of a chunk from its sorted keys: per window, while
 * a lane has edges left, an entry of up to ENT_MAX of each lane's, then its
 * edges in its two steps (lanes in order, up to 4 each a step). A window
 * more than 255 past the last one is reached by entries of step 255 and no
 * edges. With ent NULL only counts: returns the entries, adds the edges to
 * *edges. */
static size_t chunk_emit(const uint64_t *key, size_t n, uint8_t *ent, uint8_t *off, int8_t *w,
                         size_t *edges)
{
    size_t ne = 0, p = 0;
    uint32_t win = 0;
    for (size_t k = 0; k < n;) {
        uint32_t wd = (uint32_t)(key[k] >> 40);
        size_t lo[CHUNK] = {0}, hi[CHUNK] = {0}, end = k;
        for (; end < n && (uint32_t)(key[end] >> 40) == wd; end++) {
            uint32_t ln = (uint32_t)(key[end] >> 32) & 0xff;
            if (hi[ln] == 0)
                lo[ln] = end;
            hi[ln] = end + 1;
        }
        for (;;) {
            uint64_t x = 0;
            for (uint32_t ln = 0; ln < CHUNK; ln++) {
                size_t c = hi[ln] - lo[ln] < ENT_MAX ? hi[ln] - lo[ln] : ENT_MAX;
                x |= (uint64_t)c << (8 + 3 * ln);
            }
            if (x == 0)
                break;
            for (; wd - win > 255; win += 255, ne++)
                if (ent) {
                    uint64_t hop = 255;
                    memcpy(ent + ne * ENT, &hop, ENT);
                }
            x |= wd - win;
            win = wd;
            if (ent)
                memcpy(ent + ne * ENT, &x, ENT);
            ne++;
            for (uint32_t h = 0; h < 2; h++)
                for (uint32_t ln = 0; ln < CHUNK; ln++)
                    for (uint32_t r = 0; r < step_count(ent_count(x, ln), h); r++, p++)
                        if (ent) {
                            uint64_t kk = key[lo[ln] + 4 * h + r];
                            off[p] = (uint8_t)(kk >> 8);
                            w[p] = (int8_t)(uint8_t)kk;
                        }
            for (uint32_t ln = 0; ln < CHUNK; ln++)
                lo[ln] += ent_count(x, ln);
        }
        k = end;
    }
    *edges += p;
    return ne;
}

/* Pass 0 counts the entries and edges of every chunk into qp; pass 1 lays
 * them out (qp's arrays placed). */
static void chunks(const struct nn_qflat *t, const uint32_t *old, const uint32_t *nw, uint64_t *key,
                   struct nn_qplan *qp, int pass)
{
    size_t c = 0, ne = 0, edges = 0;
    for (size_t l = 1; l < t->n_layers; l++)
        for (uint32_t j0 = t->lstart[l]; j0 < t->lstart[l + 1]; j0 += CHUNK, c++) {
            size_t n = chunk_keys(t, old, nw, j0, chunk_lanes(j0, t->lstart[l + 1]), key);
            if (pass) {
                qp->cent[c] = (uint32_t)ne;
                qp->cedge[c] = (uint32_t)edges;
                ne += chunk_emit(key, n, qp->ent + ne * ENT, qp->off + edges, qp->f.w + edges,
                                 &edges);
            } else {
                ne += chunk_emit(key, n, NULL, NULL, NULL, &edges);
            }
        }
    if (pass) {
        qp->cent[c] = (uint32_t)ne;
        qp->cedge[c] = (uint32_t)edges;
    } else {
        qp->n_chunks = c;
        qp->n_ents = ne;
        qp->n_edges = edges;
    }
}

int nn_qplan_compile(const struct nn_qnet *q, struct nn_plan **out, struct tv_error *err)
{
    *out = NULL;
    struct nn_qflat t;
    unsigned char *tm = NULL;
    int rc = row_form(q, &t, &tm, err);
    if (rc)
        return rc;
    /* keys: a chunk's edges (at most CHUNK x the largest fan-in), and n + 1
     * for the fan-in order */
    size_t most = 0;
    for (size_t i = 0; i + t.n_in < t.n; i++)
        most = t.row[i + 1] - t.row[i] > most ? t.row[i + 1] - t.row[i] : most;
    most = most * CHUNK > t.n + 1 ? most * CHUNK : t.n + 1;
    uint32_t *old = malloc((t.n + 1) * sizeof *old), *nw = malloc((t.n + 1) * sizeof *nw);
    uint64_t *key = malloc(most * sizeof *key);
    unsigned char *m = NULL;
    struct nn_qplan hd = {0};
    size_t bytes = 0;
    if (!old || !nw || !key) {
        rc = tv_error_set(err, TV_ENOMEM, "int8 plan: out of memory");
        goto fail;
    }
    order_by_fan_in(&t, old, nw, key);
    hd.f = t;
    chunks(&t, old, nw, key, &hd, 0);
    if (hd.n_edges > UINT32_MAX || hd.n_ents > UINT32_MAX) { /* chunk offsets are 32-bit */
        rc = tv_error_set(err, TV_ELIMIT, "int8 plan: %zu edges in %zu entries, more than %u",
                          hd.n_edges, hd.n_ents, (unsigned)UINT32_MAX);
        goto fail;
    }
    bytes = layout(&hd, NULL);
    m = aligned_alloc(ALIGN, bytes);
    if (!m) {
        rc = tv_error_set(err, TV_ENOMEM, "int8 plan: out of memory (%zu bytes)", bytes);
        goto fail;
    }
    memset(m, 0, bytes);
    struct nn_qplan *qp = (struct nn_qplan *)m;
    *qp = hd;
    layout(qp, m);
    struct nn_qflat *f = &qp->f;
    f->row = NULL;
    f->idx = NULL;
    chunks(&t, old, nw, key, qp, 1);
    free(key);
    for (uint32_t j = (uint32_t)t.n_in; j < t.n; j++) {
        uint32_t i = j - (uint32_t)t.n_in, io = old[j] - (uint32_t)t.n_in;
        f->fbias[i] = t.fbias[io];
        f->mult[i] = t.mult[io];
        f->shift[i] = t.shift[io];
        f->pzp[i] = t.pzp[io];
        f->tab[i] = t.tab[io];
    }
    memcpy(f->tables, t.tables, t.n_tables * 256 + 64);
    memcpy(f->lstart, t.lstart, (t.n_layers + 1) * sizeof *f->lstart);
    memcpy(f->lzero, t.lzero, t.n_layers);
    for (size_t k = 0; k < t.n_out; k++)
        f->out_map[k] = nw[t.out_map[k]];
    free(tm);
    free(old);
    free(nw);
    struct nn_plan *p = &qp->plan;
    p->n = q->n;
    p->n_in = q->n_in;
    p->n_out = q->n_out;
    p->n_layers = q->n_layers;
    p->n_conns = q->n_edges;
    p->n_recurrent = q->n_recurrent;
    p->n_gather = q->n_edges;
    p->bytes = bytes;
    /* the edge lists (see lists_of), and at least WIN bytes that a window
     * past the values (batch 1) may read */
    size_t cap = list_cap(qp);
    p->state_extra = (q->n - q->n_in + 1 + cap) * sizeof(uint32_t) + cap;
    p->state_extra = p->state_extra < WIN ? WIN : p->state_extra;
    p->index_bits = p->row_bits = 8; /* offsets in windows of WIN values */
    p->out_map = qp->f.out_map;
    p->layer_start = qp->f.lstart;
    memset(p->layer_way, NN_WAY_GATHER, q->n_layers);
    p->own_io = 1;
    p->out_contiguous = 1;
    for (size_t k = 1; k < q->n_out; k++)
        p->out_contiguous &= f->out_map[k] == f->out_map[0] + k;
    qp->op = (struct nn_op){NN_OP_INT8, 0, (uint32_t)q->n_layers, 0};
    p->ops = &qp->op;
    p->n_ops = 1;
    *out = p;
    return 0;
fail:
    free(tm);
    free(old);
    free(nw);
    free(key);
    return rc;
}

int nn_plan_is_int8(const struct nn_plan *p)
{
    return p->n_ops == 1 && p->ops[0].kind == NN_OP_INT8;
}

/* ---- shared by every path -------------------------------------------------- */

/* This step's values and last step's (stride bytes a neuron). */
static uint8_t *values(const struct nn_state *s)
{
    return (uint8_t *)s->acc;
}

/* Quantizes x[0..n) into u (nn_q_input), and dequantizes u[0..n) into y. */
typedef void qrow_fn(const float *x, size_t n, uint8_t *u, float scale, int32_t zp);
typedef void drow_fn(const uint8_t *u, size_t n, float *y, float scale, int32_t zp);
/* Quantizes a caller's rows in[batch][n_in] into the columns u[k * st + b]. */
typedef void qcols_fn(const float *in, size_t n_in, size_t batch, size_t st, uint8_t *u,
                      float scale, int32_t zp);

static void qrow(const float *x, size_t n, uint8_t *u, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i++)
        u[i] = nn_q_input(x[i], scale, zp);
}

static void drow(const uint8_t *u, size_t n, float *y, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)((int32_t)u[i] - 128 - zp) * scale;
}

/* Tiles of 16 samples x 16 inputs (as nn_step's transposition). */
static void qcols(const float *in, size_t n_in, size_t batch, size_t st, uint8_t *u, float scale,
                  int32_t zp)
{
    for (size_t b0 = 0; b0 < batch; b0 += 16)
        for (size_t k0 = 0; k0 < n_in; k0 += 16)
            for (size_t b = b0; b < b0 + 16 && b < batch; b++)
                for (size_t k = k0; k < k0 + 16 && k < n_in; k++)
                    u[k * st + b] = nn_q_input(in[b * n_in + k], scale, zp);
}

/* Before a step: last step's values from this one's (or the zero codes
 * after a reset), then the inputs quantized: at batch 1 from s->y, at
 * batches from the rows s->in_rows ([n_in][stride]), or, when nn_step
 * leaves those NULL (plan->own_io), from its caller's s->in_sample
 * ([batch][n_in]). */
static void begin(const struct nn_plan *p, const struct nn_qflat *f, struct nn_state *s, qrow_fn *q,
                  qcols_fn *qc)
{
    size_t st = s->stride, n = f->n;
    uint8_t *cur = values(s), *prev = cur + (n + 1) * st;
    if (p->n_recurrent && s->steps == 0) {
        for (size_t l = 0; l < f->n_layers; l++)
            memset(prev + (size_t)f->lstart[l] * st, f->lzero[l],
                   (size_t)(f->lstart[l + 1] - f->lstart[l]) * st);
    } else if (p->n_recurrent) {
        memcpy(prev, cur, n * st);
    }
    if (s->batch == 1) {
        q(s->y, f->n_in, cur, f->in_scale, f->in_zp);
        return;
    }
    if (!s->in_rows) {
        qc(s->in_sample, f->n_in, s->batch, st, cur, f->in_scale, f->in_zp);
        return;
    }
    for (size_t k = 0; k < f->n_in; k++)
        q(s->in_rows + k * st, s->batch, cur + k * st, f->in_scale, f->in_zp);
}

/* After a step: the dequantized outputs into s->y. */
static void finish(const struct nn_qflat *f, struct nn_state *s, drow_fn *d)
{
    if (s->batch > 1 && !s->in_rows)
        return; /* nn_step's caller reads them with nn_int8_read */
    size_t st = s->stride;
    const uint8_t *cur = values(s);
    for (size_t k = 0; k < f->n_out; k++) {
        size_t j = f->out_map[k];
        d(cur + j * st, s->batch, s->y + j * st, f->out_scale, f->out_zp);
    }
}

/* The table entry of neuron j for the sum acc. */
static inline uint8_t neuron_out(const struct nn_qflat *f, uint32_t i, int32_t acc)
{
    uint32_t u = nn_q_requant(acc, f->mult[i], f->shift[i], f->pzp[i]);
    return f->tables[(size_t)f->tab[i] * 256 + u];
}

/* ---- edge lists -------------------------------------------------------------- */

/* The portable paths and the batches run a neuron at a time over its edges,
 * listed in the state's extra (plan->state_extra bytes) from the entries on
 * the first step that needs them: start[i] ([n - n_in + 1]: neuron j = n_in
 * + i has edges [start[i], start[i + 1])), then slot[] and w[], each list
 * padded to a multiple of 4 with slot 0 and weight 0 (so the VNNI kernel
 * takes 4 at a time with no tail): 5 bytes an edge and up to 19 a neuron,
 * in the state, not the plan; the vector batch-1 path reads the plan's
 * entries in place. */
struct lists {
    const uint32_t *start, *slot;
    const int8_t *w;
};

static struct lists lists_of(const struct nn_qplan *qp, struct nn_state *s)
{
    const struct nn_qflat *f = &qp->f;
    size_t nn = f->n - f->n_in;
    size_t cap = list_cap(qp);
    uint32_t *start = (uint32_t *)(void *)s->extra, *slot = start + nn + 1;
    int8_t *w = (int8_t *)(slot + cap);
    if (!s->extra_ready) {
        size_t c = 0;
        memset(start, 0, (nn + 1) * sizeof *start);
        for (size_t l = 1; l < f->n_layers; l++)
            for (uint32_t j0 = f->lstart[l]; j0 < f->lstart[l + 1]; j0 += CHUNK, c++) {
                uint32_t lanes = chunk_lanes(j0, f->lstart[l + 1]), i0 = j0 - (uint32_t)f->n_in;
                for (uint32_t k = qp->cent[c]; k < qp->cent[c + 1]; k++)
                    for (uint32_t ln = 0; ln < lanes; ln++)
                        start[i0 + ln + 1] += ent_count(entry(qp->ent, k), ln);
            }
        for (size_t i = 0; i < nn; i++) /* each list padded to a multiple of 4 */
            start[i + 1] = start[i] + ((start[i + 1] + 3) & ~(uint32_t)3);
        memset(slot, 0, cap * sizeof *slot);
        memset(w, 0, cap);
        c = 0;
        for (size_t l = 1; l < f->n_layers; l++)
            for (uint32_t j0 = f->lstart[l]; j0 < f->lstart[l + 1]; j0 += CHUNK, c++) {
                uint32_t lanes = chunk_lanes(j0, f->lstart[l + 1]), i0 = j0 - (uint32_t)f->n_in;
                uint32_t e = qp->cedge[c], fill[CHUNK];
                size_t win = 0;
                for (uint32_t ln = 0; ln < lanes; ln++)
                    fill[ln] = start[i0 + ln];
                for (uint32_t k = qp->cent[c]; k < qp->cent[c + 1]; k++) {
                    uint64_t x = entry(qp->ent, k);
                    win += x & 0xff;
                    for (uint32_t h = 0; h < 2; h++)
                        for (uint32_t ln = 0; ln < lanes; ln++)
                            for (uint32_t r = step_count(ent_count(x, ln), h); r; r--, e++) {
                                slot[fill[ln]] = (uint32_t)(win * WIN + qp->off[e]);
                                w[fill[ln]++] = f->w[e];
                            }
                }
            }
        s->extra_ready = 1;
    }
    return (struct lists){start, slot, w};
}

/* ---- batch 1 --------------------------------------------------------------- */

static void int8_one(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    (void)op;
    const struct nn_qplan *qp = (const struct nn_qplan *)p;
    const struct nn_qflat *f = &qp->f;
    struct lists g = lists_of(qp, s);
    begin(p, f, s, qrow, qcols);
    uint8_t *v = values(s);
    for (uint32_t j = (uint32_t)f->n_in; j < f->n; j++) {
        uint32_t i = j - (uint32_t)f->n_in;
        int32_t a = f->fbias[i];
        for (uint32_t k = g.start[i]; k < g.start[i + 1]; k++)
            a += g.w[k] * v[g.slot[k]];
        v[j] = neuron_out(f, i, a);
    }
    finish(f, s, drow);
}

/* ---- batches --------------------------------------------------------------- */

/* Samples [b0, b0 + nb) (nb <= 64) of neuron j, portably: its edges are
 * slot[0..len), w[0..len). */
static inline __attribute__((always_inline)) void
block_portable(const struct nn_qflat *f, uint8_t *v, size_t st, uint32_t j, const uint32_t *slot,
               const int8_t *w, uint32_t len, size_t b0, size_t nb)
{
    int32_t a[64];
    uint32_t i = j - (uint32_t)f->n_in;
    for (size_t b = 0; b < nb; b++)
        a[b] = f->fbias[i];
    for (uint32_t k = 0; k < len; k++) {
        const uint8_t *x = v + (size_t)slot[k] * st + b0;
        int32_t wk = w[k];
        for (size_t b = 0; b < nb; b++)
            a[b] += wk * x[b];
    }
    uint8_t *o = v + (size_t)j * st + b0;
    for (size_t b = 0; b < nb; b++)
        o[b] = neuron_out(f, i, a[b]);
}

static void int8_batch(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    (void)op;
    const struct nn_qplan *qp = (const struct nn_qplan *)p;
    const struct nn_qflat *f = &qp->f;
    struct lists g = lists_of(qp, s);
    begin(p, f, s, qrow, qcols);
    uint8_t *v = values(s);
    size_t st = s->stride;
    for (uint32_t j = (uint32_t)f->n_in; j < f->n; j++) {
        uint32_t i = j - (uint32_t)f->n_in, k = g.start[i], len = g.start[i + 1] - k;
        for (size_t b0 = 0; b0 < st; b0 += 64) {
            if (st - b0 >= 64) /* a constant count: the loops vectorize */
                block_portable(f, v, st, j, g.slot + k, g.w + k, len, b0, 64);
            else
                block_portable(f, v, st, j, g.slot + k, g.w + k, len, b0, st - b0);
        }
    }
    finish(f, s, drow);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
/* the batch-1 window path (vpexpandb) only: has_vbmi2 guards it */
#define VBMI2_TARGET                                                                               \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx512vbmi2")))

/* The tail mask of lanes [i, n) of a group of 16. */
#define TAIL16(n, i) ((n) - (i) >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << ((n) - (i))) - 1))

/* nn_q_input of 16 values (m: which), lane-wise: the same operations (IEEE
 * division, truncation, exact differences), so the same bits. */
VNNI_TARGET static inline __m128i q16(const float *x, __mmask16 m, float scale, int32_t zp)
{
    const __m512 lo = _mm512_set1_ps(-1000.0f), hi = _mm512_set1_ps(1000.0f);
    const __m512i one = _mm512_set1_epi32(1);
    __m512 t = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x), _mm512_set1_ps(scale));
    t = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(t, t, _CMP_ORD_Q), t); /* NaN: 0 */
    t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
    __m512 r = _mm512_roundscale_ps(t, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 fr = _mm512_sub_ps(t, r);
    __m512i q = _mm512_cvttps_epi32(r);
    q = _mm512_mask_add_epi32(q, _mm512_cmp_ps_mask(fr, _mm512_set1_ps(0.5f), _CMP_GE_OQ), q, one);
    q = _mm512_mask_sub_epi32(q, _mm512_cmp_ps_mask(fr, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), q, one);
    q = _mm512_add_epi32(q, _mm512_set1_epi32(zp));
    q = _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-128));
    return _mm512_cvtepi32_epi8(_mm512_add_epi32(q, _mm512_set1_epi32(128)));
}

VNNI_TARGET static void qrow_avx512(const float *x, size_t n, uint8_t *u, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = TAIL16(n, i);
        _mm_mask_storeu_epi8(u + i, m, q16(x + i, m, scale, zp));
    }
}

/* Rows r[0..16) of 16 bytes to columns, in place. */
VNNI_TARGET static inline __attribute__((always_inline)) void transpose16(__m128i r[16])
{
    __m128i t[16];
    for (int i = 0; i < 8; i++) {
        t[i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
        t[i + 8] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm_unpacklo_epi16(t[2 * i], t[2 * i + 1]);
        r[i + 4] = _mm_unpackhi_epi16(t[2 * i], t[2 * i + 1]);
        r[i + 8] = _mm_unpacklo_epi16(t[2 * i + 8], t[2 * i + 9]);
        r[i + 12] = _mm_unpackhi_epi16(t[2 * i + 8], t[2 * i + 9]);
    }
    for (int i = 0; i < 8; i++) {
        t[i] = _mm_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[i + 8] = _mm_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm_unpacklo_epi64(t[2 * i], t[2 * i + 1]);
        r[4 * i + 1] = _mm_unpackhi_epi64(t[2 * i], t[2 * i + 1]);
        r[4 * i + 2] = _mm_unpacklo_epi64(t[2 * i + 8], t[2 * i + 9]);
        r[4 * i + 3] = _mm_unpackhi_epi64(t[2 * i + 8], t[2 * i + 9]);
    }
}

/* qcols with tiles of 16 x 16 quantized a row at a time and transposed in
 * registers; the edges of the tiling value by value. */
VNNI_TARGET static void qcols_avx512(const float *in, size_t n_in, size_t batch, size_t st,
                                     uint8_t *u, float scale, int32_t zp)
{
    size_t bf = batch / 16 * 16, kf = n_in / 16 * 16;
    for (size_t b0 = 0; b0 < bf; b0 += 16)
        for (size_t k0 = 0; k0 < kf; k0 += 16) {
            __m128i r[16];
            for (size_t b = 0; b < 16; b++)
                r[b] = q16(in + (b0 + b) * n_in + k0, 0xFFFF, scale, zp);
            transpose16(r);
            for (size_t k = 0; k < 16; k++)
                _mm_storeu_si128((__m128i *)(void *)(u + (k0 + k) * st + b0), r[k]);
        }
    for (size_t b = 0; b < batch; b++)
        for (size_t k = b < bf ? kf : 0; k < n_in; k++)
            u[k * st + b] = nn_q_input(in[b * n_in + k], scale, zp);
}

/* The outputs out[batch][n_out] from the columns u[out_map[k] * st + b]:
 * tiles of 16 x 16 transposed in registers and dequantized as drow does
 * (the same bits), the edges of the tiling value by value. */
VNNI_TARGET static void dcols_avx512(const uint8_t *u, const uint32_t *out_map, size_t n_out,
                                     size_t batch, size_t st, float *out, float scale, int32_t zp)
{
    size_t bf = batch / 16 * 16, kf = n_out / 16 * 16;
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512i off = _mm512_set1_epi32(128 + zp);
    for (size_t b0 = 0; b0 < bf; b0 += 16)
        for (size_t k0 = 0; k0 < kf; k0 += 16) {
            __m128i r[16];
            for (size_t k = 0; k < 16; k++)
                r[k] =
                    _mm_loadu_si128((const __m128i *)(const void *)(u + out_map[k0 + k] * st + b0));
            transpose16(r);
            for (size_t b = 0; b < 16; b++) {
                __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(r[b]), off));
                _mm512_storeu_ps(out + (b0 + b) * n_out + k0, _mm512_mul_ps(d, sc));
            }
        }
    for (size_t b = 0; b < batch; b++)
        for (size_t k = b < bf ? kf : 0; k < n_out; k++)
            out[b * n_out + k] =
                (float)((int32_t)u[(size_t)out_map[k] * st + b] - 128 - zp) * scale;
}

/* drow, 16 values at a time (exact conversions, one IEEE multiply). */
VNNI_TARGET static void drow_avx512(const uint8_t *u, size_t n, float *y, float scale, int32_t zp)
{
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512i off = _mm512_set1_epi32(128 + zp);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = TAIL16(n, i);
        __m512i v = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, u + i));
        __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, off));
        _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(d, sc));
    }
}

/* The requantization of 16 lanes, each with its own multiplier, shift (as
 * 32-bit lanes) and zero point, split for 64-bit lanes: even lanes (the low
 * dword of each qword) and odd ones. */
struct rq16 {
    __m512i mult, she, sho, hale, halo, pzp;
};

VNNI_TARGET static inline struct rq16 rq16_make(__m512i mult, __m512i sh, __m512i pzp)
{
    const __m512i one = _mm512_set1_epi64(1), low32 = _mm512_set1_epi64(0xffffffff);
    struct rq16 q = {mult, _mm512_and_si512(sh, low32), _mm512_srli_epi64(sh, 32), one, one, pzp};
    /* 2^(sh - 1), 0 for sh = 0 (a count past 63 shifts everything out) */
    q.hale = _mm512_sllv_epi64(one, _mm512_sub_epi64(q.she, one));
    q.halo = _mm512_sllv_epi64(one, _mm512_sub_epi64(q.sho, one));
    return q;
}

/* 16 sums to 16 table indices u (nn_q_requant, lane-wise). */
VNNI_TARGET static inline __m512i rq16_apply(const struct rq16 *q, __m512i acc)
{
    const __m512i lo = _mm512_set1_epi64(-256), hi = _mm512_set1_epi64(256);
    __m512i ev = _mm512_mul_epi32(acc, q->mult);
    __m512i od = _mm512_mul_epi32(_mm512_srli_epi64(acc, 32), _mm512_srli_epi64(q->mult, 32));
    ev = _mm512_add_epi64(ev, q->hale);
    od = _mm512_add_epi64(od, q->halo);
    ev = _mm512_max_epi64(_mm512_min_epi64(_mm512_srav_epi64(ev, q->she), hi), lo);
    od = _mm512_max_epi64(_mm512_min_epi64(_mm512_srav_epi64(od, q->sho), hi), lo);
    __m512i r = _mm512_mask_blend_epi32(0xAAAA, ev, _mm512_slli_epi64(od, 32));
    r = _mm512_add_epi32(r, q->pzp);
    r = _mm512_max_epi32(_mm512_min_epi32(r, _mm512_set1_epi32(127)), _mm512_set1_epi32(-128));
    return _mm512_add_epi32(r, _mm512_set1_epi32(128));
}

/* One step of an entry: the edges of mask m (a lane's in its dword, from
 * its low byte) expanded from e on, their values looked up in the window
 * t (offset bit 7 picks the half) and multiplied into acc. */
VBMI2_TARGET static inline __m512i window_step(__m512i acc, __mmask64 m, const uint8_t *off,
                                               const int8_t *w, __m512i t0, __m512i t1, __m512i t2,
                                               __m512i t3)
{
    __m512i io = _mm512_loadu_si512(off), wo = _mm512_loadu_si512(w);
    __asm__("" : "+v"(io), "+v"(wo)); /* the register form of vpexpandb */
    __m512i iv = _mm512_maskz_expand_epi8(m, io);
    __m512i wv = _mm512_maskz_expand_epi8(m, wo);
    __m512i lo = _mm512_permutex2var_epi8(t0, iv, t1);
    __m512i hi = _mm512_permutex2var_epi8(t2, iv, t3);
    return _mm512_dpbusd_epi32(acc, _mm512_mask_blend_epi8(_mm512_movepi8_mask(iv), lo, hi), wv);
}

/* Batch 1: a chunk at a time; per entry its window's 256 values in four
 * registers, and per step the edges (up to 4 of each of the 16 neurons, a
 * neuron's in its dword) expanded from the stream into place, looked up
 * with vpermi2b and multiplied with vpdpbusd; then the 16 sums requantized
 * and looked up in their tables together. The step masks come from the
 * entry's counts: lane l's byte r is an edge of step h if r + 4 h < count. */
VBMI2_TARGET static void int8_one_avx512(const struct nn_plan *p, struct nn_state *s,
                                         const struct nn_op *op)
{
    (void)op;
    const struct nn_qplan *qp = (const struct nn_qplan *)p;
    const struct nn_qflat *f = &qp->f;
    begin(p, f, s, qrow_avx512, qcols_avx512);
    uint8_t *v = values(s);
    size_t c = 0;
    /* byte B of the counts vector: bits 3 (B / 4) of the counts (its lane's) */
    uint8_t cs[64], rp[64];
    for (int b = 0; b < 64; b++) {
        cs[b] = (uint8_t)(3 * (b / 4));
        rp[b] = (uint8_t)(b % 4);
    }
    const __m512i ctrl = _mm512_loadu_si512(cs), r0 = _mm512_loadu_si512(rp);
    const __m512i r4 = _mm512_add_epi8(r0, _mm512_set1_epi8(4)), seven = _mm512_set1_epi8(7);
    for (size_t l = 1; l < f->n_layers; l++)
        for (uint32_t j0 = f->lstart[l]; j0 < f->lstart[l + 1]; j0 += CHUNK, c++) {
            uint32_t lanes = chunk_lanes(j0, f->lstart[l + 1]), i0 = j0 - (uint32_t)f->n_in;
            __mmask16 m = (__mmask16)((1u << lanes) - 1);
            /* two sums, entries alternating: vpdpbusd's latency is not a chain */
            __m512i acc = _mm512_maskz_loadu_epi32(m, f->fbias + i0), acc2 = _mm512_setzero_si512();
            uint32_t e = qp->cedge[c];
            size_t win = 0;
            for (uint32_t k = qp->cent[c]; k < qp->cent[c + 1]; k++) {
                uint64_t x = entry(qp->ent, k);
                win += x & 0xff;
                /* a window past the values reads the state's next bytes (at least
                 * WIN: state_extra), never an edge's */
                const uint8_t *vb = v + win * WIN;
                __m512i t0 = _mm512_loadu_si512(vb), t1 = _mm512_loadu_si512(vb + 64);
                __m512i t2 = _mm512_loadu_si512(vb + 128), t3 = _mm512_loadu_si512(vb + 192);
                __m512i cb = _mm512_and_si512(
                    _mm512_multishift_epi64_epi8(ctrl, _mm512_set1_epi64((long long)(x >> 8))),
                    seven);
                __mmask64 m0 = _mm512_cmplt_epu8_mask(r0, cb), m1 = _mm512_cmplt_epu8_mask(r4, cb);
                __m512i a = window_step(acc2, m0, qp->off + e, f->w + e, t0, t1, t2, t3);
                e += (uint32_t)__builtin_popcountll(m0);
                if (m1) {
                    a = window_step(a, m1, qp->off + e, f->w + e, t0, t1, t2, t3);
                    e += (uint32_t)__builtin_popcountll(m1);
                }
                acc2 = acc;
                acc = a;
            }
            acc = _mm512_add_epi32(acc, acc2);
            __m512i mult = _mm512_maskz_loadu_epi32(m, f->mult + i0);
            __m512i sh = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, f->shift + i0));
            __m512i pzp = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, f->pzp + i0));
            struct rq16 rq = rq16_make(mult, sh, pzp);
            __m512i u = rq16_apply(&rq, acc);
            __m512i tab = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, f->tab + i0));
            if (_mm512_mask_cmpeq_epi32_mask(m, tab, _mm512_set1_epi32(f->tab[i0])) == m) {
                /* one table (the common case): looked up in registers */
                const uint8_t *tb = f->tables + (size_t)f->tab[i0] * 256;
                __m512i z = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(u));
                __m512i lo = _mm512_permutex2var_epi8(_mm512_loadu_si512(tb), z,
                                                      _mm512_loadu_si512(tb + 64));
                __m512i hi = _mm512_permutex2var_epi8(_mm512_loadu_si512(tb + 128), z,
                                                      _mm512_loadu_si512(tb + 192));
                __m512i o = _mm512_mask_blend_epi8(_mm512_movepi8_mask(z), lo, hi);
                _mm_mask_storeu_epi8(v + j0, m, _mm512_castsi512_si128(o));
            } else {
                __m512i at = _mm512_add_epi32(_mm512_slli_epi32(tab, 8), u);
                __m512i out =
                    _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, at, f->tables, 1);
                _mm512_mask_cvtepi32_storeu_epi8(v + j0, m, out);
            }
        }
    finish(f, s, drow);
}

/* Samples [b0, b0 + 64) of neuron j: 4 edges at a time into 4 sums of 16
 * samples. Sum m, lane 4i + r holds sample 16i + 4m + r (the order the byte
 * and word interleaves leave); the bytes are put back in order at the end.
 * Its edges: slot[0..len), w[0..len), len a multiple of 4 (lists_of pads). */
VNNI_TARGET static void block_vnni(const struct nn_qflat *f, uint8_t *v, size_t st, uint32_t j,
                                   const uint32_t *slot, const int8_t *w, uint32_t len, size_t b0)
{
    uint32_t i = j - (uint32_t)f->n_in;
    __m512i a0 = _mm512_set1_epi32(f->fbias[i]), a1 = a0, a2 = a0, a3 = a0;
    const uint8_t *vb = v + b0;
    for (uint32_t k = 0; k < len; k += 4) {
        const uint8_t *p0 = vb + (size_t)slot[k] * st, *p1 = vb + (size_t)slot[k + 1] * st;
        const uint8_t *p2 = vb + (size_t)slot[k + 2] * st, *p3 = vb + (size_t)slot[k + 3] * st;
        uint32_t w4;
        memcpy(&w4, w + k, sizeof w4);
        __m512i wv = _mm512_set1_epi32((int32_t)w4);
        __m512i x0 = _mm512_loadu_si512(p0), x1 = _mm512_loadu_si512(p1);
        __m512i x2 = _mm512_loadu_si512(p2), x3 = _mm512_loadu_si512(p3);
        __m512i l01 = _mm512_unpacklo_epi8(x0, x1), h01 = _mm512_unpackhi_epi8(x0, x1);
        __m512i l23 = _mm512_unpacklo_epi8(x2, x3), h23 = _mm512_unpackhi_epi8(x2, x3);
        a0 = _mm512_dpbusd_epi32(a0, _mm512_unpacklo_epi16(l01, l23), wv);
        a1 = _mm512_dpbusd_epi32(a1, _mm512_unpackhi_epi16(l01, l23), wv);
        a2 = _mm512_dpbusd_epi32(a2, _mm512_unpacklo_epi16(h01, h23), wv);
        a3 = _mm512_dpbusd_epi32(a3, _mm512_unpackhi_epi16(h01, h23), wv);
    }
    struct rq16 rq = rq16_make(_mm512_set1_epi32(f->mult[i]), _mm512_set1_epi32(f->shift[i]),
                               _mm512_set1_epi32(f->pzp[i]));
    __m512i z = _mm512_castsi128_si512(_mm512_cvtepi32_epi8(rq16_apply(&rq, a0)));
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(rq16_apply(&rq, a1)), 1);
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(rq16_apply(&rq, a2)), 2);
    z = _mm512_inserti32x4(z, _mm512_cvtepi32_epi8(rq16_apply(&rq, a3)), 3);
    /* sample 16i + 4m + r is byte 16m + 4i + r of z */
    static const uint8_t order[64] __attribute__((aligned(64))) = {
        0,  1,  2,  3,  16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, 4,  5,  6,  7,  20, 21,
        22, 23, 36, 37, 38, 39, 52, 53, 54, 55, 8,  9,  10, 11, 24, 25, 26, 27, 40, 41, 42, 43,
        56, 57, 58, 59, 12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63};
    z = _mm512_permutexvar_epi8(_mm512_load_si512(order), z);
    const uint8_t *tb = f->tables + (size_t)f->tab[i] * 256;
    __m512i t0 = _mm512_loadu_si512(tb), t1 = _mm512_loadu_si512(tb + 64);
    __m512i t2 = _mm512_loadu_si512(tb + 128), t3 = _mm512_loadu_si512(tb + 192);
    __m512i lo = _mm512_permutex2var_epi8(t0, z, t1), hi = _mm512_permutex2var_epi8(t2, z, t3);
    _mm512_storeu_si512(v + (size_t)j * st + b0,
                        _mm512_mask_blend_epi8(_mm512_movepi8_mask(z), lo, hi));
}

VNNI_TARGET static void int8_batch_vnni(const struct nn_plan *p, struct nn_state *s,
                                        const struct nn_op *op)
{
    (void)op;
    const struct nn_qplan *qp = (const struct nn_qplan *)p;
    const struct nn_qflat *f = &qp->f;
    struct lists g = lists_of(qp, s);
    begin(p, f, s, qrow_avx512, qcols_avx512);
    uint8_t *v = values(s);
    size_t st = s->stride, full = st / 64 * 64;
    for (uint32_t j = (uint32_t)f->n_in; j < f->n; j++) {
        uint32_t i = j - (uint32_t)f->n_in, k = g.start[i], len = g.start[i + 1] - k;
        for (size_t b0 = 0; b0 < full; b0 += 64)
            block_vnni(f, v, st, j, g.slot + k, g.w + k, len, b0);
        if (full < st)
            block_portable(f, v, st, j, g.slot + k, g.w + k, len, full, st - full);
    }
    finish(f, s, drow_avx512);
}

static int has_vnni(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512vbmi");
}

static void int8_one_avx512_entry(const struct nn_plan *p, struct nn_state *s,
                                  const struct nn_op *op)
{
    if (has_vnni() && __builtin_cpu_supports("avx512vbmi2"))
        int8_one_avx512(p, s, op);
    else
        int8_one(p, s, op);
}

/* The avx512f entry: VNNI where the CPU has it (checked on every step: one
 * cached load), else the portable loop. */
static void int8_batch_avx512(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    if (has_vnni())
        int8_batch_vnni(p, s, op);
    else
        int8_batch(p, s, op);
}
#else
static int has_vnni(void)
{
    return 0;
}
#define int8_batch_avx512 int8_batch
#define int8_one_avx512_entry int8_one
#endif

int nn_int8_uses_vnni(int target)
{
    return target == NN_TARGET_AVX512F && has_vnni();
}

nn_op_fn *const nn_int8_1[NN_TARGET_COUNT] = {int8_one, int8_one, int8_one_avx512_entry};
nn_op_fn *const nn_int8_b[NN_TARGET_COUNT] = {int8_batch, int8_batch, int8_batch_avx512};

void nn_int8_read(const struct nn_state *s, float *out)
{
    const struct nn_qflat *f = &((const struct nn_qplan *)s->plan)->f;
    const uint8_t *u = values(s);
    size_t st = s->stride, n_out = f->n_out;
    if (s->steps == 0) { /* new or reset: 0, as nn.h promises (and batch 1 gives) */
        memset(out, 0, s->batch * n_out * sizeof *out);
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (s->target == NN_TARGET_AVX512F && has_vnni()) {
        dcols_avx512(u, f->out_map, n_out, s->batch, st, out, f->out_scale, f->out_zp);
        return;
    }
#endif
    for (size_t b0 = 0; b0 < s->batch; b0 += 16) /* tiles, as qcols */
        for (size_t k0 = 0; k0 < n_out; k0 += 16)
            for (size_t b = b0; b < b0 + 16 && b < s->batch; b++)
                for (size_t k = k0; k < k0 + 16 && k < n_out; k++)
                    out[b * n_out + k] =
                        (float)((int32_t)u[(size_t)f->out_map[k] * st + b] - 128 - f->out_zp) *
                        f->out_scale;
}

void nn_qstate_read_int8(const struct nn_state *s, int8_t *out)
{
    const struct nn_plan *p = s->plan;
    const uint8_t *cur = values(s);
    for (size_t b = 0; b < s->batch; b++)
        for (size_t k = 0; k < p->n_out; k++)
            out[b * p->n_out + k] =
                (int8_t)((int32_t)cur[(size_t)p->out_map[k] * s->stride + b] - 128);
}
