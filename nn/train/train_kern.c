/* train_kern.c -- the trainer's kernels: forward over the time steps of one
 * block of samples, the loss, and back-propagation through time (truncated
 * to opts.bptt steps back from each step that carries a target, or the
 * whole sequence in one pass).
 *
 * Every sum has a fixed order written here (lane-wise vector code, no fused
 * multiply-add), built once per SIMD target by TR_KERNEL: the same bits on
 * every target. The forward sums each neuron in the inference engine's
 * order for a plan compiled with default options that is not tiled (dot8,
 * forward), so a sample's values have the engine's bits at any batch. The three ways of the
 * transposed product add the same terms in the same order (the recurrent ones by descending
 * destination, then the feed-forward ones by descending destination, then the loss's), so they give
 * the same bits too.
 */
#include <math.h>
#include <string.h>

#include "kernel.h"
#include "train_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

typedef float v8f __attribute__((vector_size(32), may_alias));
typedef float v4f __attribute__((vector_size(16), may_alias));

#define BL TR_BLOCK

/* Up to 4 vectors: one block. */
struct vb {
    v16f v[4];
};

/* S for v = v0, v0 + 1, ..., nv - 1, each v a constant: unrolled before the
 * compiler decides what lives in registers, so a block's vectors do (a loop
 * over v would keep them in memory). */
#define EACH(v0, nv, S)                                                                            \
    do {                                                                                           \
        if ((v0) <= 0) {                                                                           \
            const int v = 0;                                                                       \
            S;                                                                                     \
        }                                                                                          \
        if ((nv) > 1) {                                                                            \
            const int v = 1;                                                                       \
            S;                                                                                     \
        }                                                                                          \
        if ((nv) > 2) {                                                                            \
            const int v = 2;                                                                       \
            S;                                                                                     \
        }                                                                                          \
        if ((nv) > 3) {                                                                            \
            const int v = 3;                                                                       \
            S;                                                                                     \
        }                                                                                          \
    } while (0)

NN_INLINE float hsum(v16f x)
{
    v8f a, b;
    v4f c, d;
    memcpy(&a, &x, sizeof a);
    memcpy(&b, (const char *)&x + sizeof a, sizeof b);
    a = a + b;
    memcpy(&c, &a, sizeof c);
    memcpy(&d, (const char *)&a + sizeof c, sizeof d);
    c = c + d;
    return (c[0] + c[2]) + (c[1] + c[3]);
}

/* sum over the block's lanes of x * y, in a fixed order */
NN_INLINE float dot(const struct vb *x, const float *y, int nv)
{
    const v16f *yv = (const v16f *)y;
    v16f s = x->v[0] * yv[0];
    EACH(1, nv, s += x->v[v] * yv[v]);
    return hsum(s);
}

NN_INLINE float lanes_sum(const struct vb *x, int nv)
{
    v16f s = x->v[0];
    EACH(1, nv, s += x->v[v]);
    return hsum(s);
}

NN_INLINE void load(struct vb *a, const float *row, int nv)
{
    EACH(0, nv, a->v[v] = ((const v16f *)row)[v]);
}

NN_INLINE void store(const struct vb *a, float *row, int nv)
{
    EACH(0, nv, ((v16f *)row)[v] = a->v[v]);
}

/* a += w[k] * rows[idx[k]] over k in [k0, k1) */
NN_INLINE void axpy_rows(struct vb *a, const float *w, const uint32_t *idx, uint32_t k0,
                         uint32_t k1, const float *rows, int nv)
{
    for (uint32_t k = k0; k < k1; k++) {
        const v16f *r = (const v16f *)(rows + (size_t)idx[k] * BL);
        float wk = w[k];
        EACH(0, nv, a->v[v] += wk * r[v]);
    }
}

/* One partial of dot8: a = the sum from +0 of w[k] * rows[idx[k]] for
 * k = pos[q] (q when pos is NULL), q = q0, q0 + 8, ... below q1. */
NN_INLINE void pass8(struct vb *a, const float *w, const uint32_t *idx, const uint32_t *pos,
                     uint32_t q0, uint32_t q1, const float *rows, int nv)
{
    EACH(0, nv, a->v[v] = (v16f){0});
    for (uint32_t q = q0; q < q1; q += 8) {
        uint32_t k = pos ? pos[q] : q;
        const v16f *r = (const v16f *)(rows + (size_t)idx[k] * BL);
        float wk = w[k];
        EACH(0, nv, a->v[v] += wk * r[v]);
    }
}

NN_INLINE void vb_add(struct vb *a, const struct vb *b, int nv)
{
    EACH(0, nv, a->v[v] += b->v[v]);
}

/* g = the sum of pass8's terms over [q0, q1) in the engine's order (step1.c's
 * dot1): term q into partial (q - q0) % 8, the partials reduced as
 * ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)). */
NN_INLINE void dot8(struct vb *g, const float *w, const uint32_t *idx, const uint32_t *pos,
                    uint32_t q0, uint32_t q1, const float *rows, int nv)
{
    struct vb b, c, d;
#define P8(x, i) pass8(x, w, idx, pos, q0 + (i), q1, rows, nv)
    P8(g, 0);
    P8(&b, 4);
    vb_add(g, &b, nv);
    P8(&b, 2);
    P8(&c, 6);
    vb_add(&b, &c, nv);
    vb_add(g, &b, nv);
    P8(&b, 1);
    P8(&c, 5);
    vb_add(&b, &c, nv);
    P8(&c, 3);
    P8(&d, 7);
    vb_add(&c, &d, nv);
    vb_add(&b, &c, nv);
    vb_add(g, &b, nv);
#undef P8
}

/* a += w[q] * rows[dst[q]] for q = pos[p] (or p when pos is NULL), p from
 * p1 - 1 down to p0 */
NN_INLINE void gather_down(struct vb *a, const float *w, const uint32_t *dst, const uint32_t *pos,
                           uint32_t p0, uint32_t p1, const float *rows, int nv)
{
    for (uint32_t p = p1; p-- > p0;) {
        uint32_t q = pos ? pos[p] : p;
        const v16f *r = (const v16f *)(rows + (size_t)dst[q] * BL);
        float wq = w[q];
        EACH(0, nv, a->v[v] += wq * r[v]);
    }
}

/* d(act)/dz from the sum z and the value y = act(z) */
static float act_deriv(int act, float z, float y)
{
    switch (act) {
    case GENOME_ACT_IDENTITY:
        return 1.0f;
    case GENOME_ACT_RELU:
        return z > 0.0f ? 1.0f : 0.0f;
    case GENOME_ACT_TANH:
        return 1.0f - y * y;
    case GENOME_ACT_SIGMOID:
        return y * (1.0f - y);
    case GENOME_ACT_NEAT_SIGMOID:
        return 4.9f * (y * (1.0f - y));
    case GENOME_ACT_GAUSS:
        return -2.0f * z * y;
    case GENOME_ACT_SIN:
        return cosf(z);
    case GENOME_ACT_ABS:
        return z > 0.0f ? 1.0f : (z < 0.0f ? -1.0f : 0.0f);
    default: /* step */
        return 0.0f;
    }
}

/* delta = act'(z) * a, stored into drow */
NN_INLINE void finish_delta(struct vb *a, int act, const float *zrow, const float *yrow,
                            float *drow, int nv)
{
    if (act == GENOME_ACT_RELU) {
        /* relu: z > 0 exactly where its value y = max(z, 0) is */
        EACH(0, nv, a->v[v] = (v16f)((v16i)a->v[v] & (((const v16f *)yrow)[v] > (v16f){0})));
        store(a, drow, nv);
    } else if (act == GENOME_ACT_IDENTITY) {
        store(a, drow, nv);
    } else { /* lane by lane, in memory (a stays in registers) */
        store(a, drow, nv);
        for (int l = 0; l < 16 * nv; l++)
            drow[l] *= act_deriv(act, zrow[l], yrow[l]);
        load(a, drow, nv);
    }
}

/* The block's inputs at step s into the input rows of ys (padding lanes 0). */
static void put_inputs(const struct nn_trainer *t, const struct tr_block *b, size_t s, float *ys)
{
    size_t nin = t->n_in, nb = b->nb, lanes = 16 * b->nv;
    const float *xs = b->x + (s * b->batch + b->b0) * nin;
    /* input by input: the block's rows of x stay in L1 while the rows of ys
     * are written in order */
    for (size_t i = 0; i < nin; i++) {
        float *r = ys + i * BL;
        for (size_t l = 0; l < nb; l++)
            r[l] = xs[l * nin + i];
        for (size_t l = nb; l < lanes; l++)
            r[l] = 0.0f;
    }
}

/* The loss of step s over the block's samples into b->loss, and its
 * gradient with respect to the output values into lossg (0 in the lanes
 * without a target): softmax cross-entropy by nn_softmax_xent (loss.c, on
 * each sample's outputs gathered into out_row), squared error here. */
static void step_loss(struct nn_trainer *t, struct tr_block *b, size_t s, const float *ys)
{
    size_t no = t->n_out;
    float *lg = t->lossg + s * no * BL;
    memset(lg, 0, no * BL * sizeof *lg);
    t->tgt[s] = 0;
    double inv_b = 1.0 / (double)b->batch;
    for (size_t l = 0; l < b->nb; l++) {
        size_t bb = b->b0 + l;
        if (b->labels) {
            uint32_t lab = b->labels[s * b->batch + bb];
            if (lab == UINT32_MAX)
                continue;
            for (size_t k = 0; k < no; k++)
                t->out_row[k] = ys[(size_t)t->out_map[k] * BL + l];
            b->loss += nn_softmax_xent(t->out_row, no, 1, lab, lg + l, BL, inv_b);
        } else {
            const float *tg = b->targets + (s * b->batch + bb) * no;
            for (size_t k = 0; k < no; k++) {
                double e = (double)ys[(size_t)t->out_map[k] * BL + l] - (double)tg[k];
                b->loss += e * e / (double)no;
                lg[k * BL + l] = (float)(2.0 * e / (double)no * inv_b);
            }
        }
        t->tgt[s] = 1;
    }
}

NN_INLINE void forward(struct nn_trainer *t, struct tr_block *b, int nv)
{
    size_t n = t->n, nin = t->n_in;
    for (size_t s = 0; s < b->steps; s++) {
        float *ys = t->y + s * n * BL, *zs = t->z + s * n * BL, *yp = s ? ys - n * BL : ys;
        put_inputs(t, b, s, ys);
        for (size_t j = nin; j < n; j++) {
            /* the engine's ((bias + G) + R) + A (stepb.c): G the gathered
             * sources in dot8's order, R the last step's (+0 at step 0), A
             * the scattered sources one by one */
            struct vb a, p;
            uint32_t k0 = t->row[j], ks = t->f_split[j], kr = t->rec[j], k1 = t->row[j + 1];
            dot8(&p, t->w, t->src, t->f_pos, k0, ks, ys, nv);
            EACH(0, nv, a.v[v] = t->bias[j] + p.v[v]);
            if (s > 0 && k1 > kr) {
                dot8(&p, t->w, t->src, NULL, kr, k1, yp, nv);
                vb_add(&a, &p, nv);
            }
            if (kr > ks) {
                EACH(0, nv, p.v[v] = (v16f){0});
                for (uint32_t q = ks; q < kr; q++)
                    axpy_rows(&p, t->w, t->src, t->f_pos[q], t->f_pos[q] + 1, ys, nv);
                vb_add(&a, &p, nv);
            }
            float *zj = zs + j * BL, *yj = ys + j * BL;
            int act = t->act[j];
            if (act != GENOME_ACT_RELU && act != GENOME_ACT_IDENTITY)
                store(&a, zj, nv); /* relu' and identity' come from the value */
            if (act == GENOME_ACT_RELU) {
                EACH(0, nv, a.v[v] = (v16f)((v16i)a.v[v] & (a.v[v] > (v16f){0})));
                store(&a, yj, nv);
            } else {
                store(&a, yj, nv);
                if (act != GENOME_ACT_IDENTITY)
                    nn_acts[act].row(yj, (size_t)(16 * nv));
            }
            if (b->backward && !t->seen[j])
                for (size_t l = 0; l < b->nb; l++)
                    t->seen[j] |= yj[l] != 0.0f;
        }
        if (b->backward)
            step_loss(t, b, s, ys);
    }
}

/* The view's deltas of the block's samples from the deltas ds of one step
 * (inputs: 0). */
static void keep_deltas(struct nn_trainer *t, const struct tr_block *b, const float *ds)
{
    size_t nb = b->nb * sizeof(float);
    for (size_t j = 0; j < t->n; j++) {
        float *vd = t->v_delta + j * b->batch + b->b0;
        if (j < t->n_in || !ds)
            memset(vd, 0, nb);
        else
            memcpy(vd, ds + j * BL, nb);
    }
}

/* Back-propagation over steps [lo, hi]; the loss enters at every step
 * (all) or at hi only. When keep is not NULL, the deltas of step hi go into
 * the view for keep's samples as soon as they are made: the two buffers of
 * deltas alternate by step, so a pass over three steps or more writes over
 * them. */
NN_INLINE void backward(struct nn_trainer *t, size_t lo, size_t hi, int all,
                        const struct tr_block *keep, int nv)
{
    size_t n = t->n, nin = t->n_in, no = t->n_out, nbl = n * BL;
    int way = t->transpose;
    const float *wt = way == TR_T_BUILD ? t->wt_w : t->w;
    const uint32_t *dt = way == TR_T_BUILD ? t->wt_dst : t->dst;
    const uint32_t *pos = way == TR_T_BUILD ? NULL : t->t_pos;
    const uint32_t *trow = way == TR_T_BUILD ? t->wt_row : t->t_row;
    const uint32_t *trec = way == TR_T_BUILD ? t->wt_rec : t->t_rec;
    if (way == TR_T_SCATTER)
        memset(t->dy + (hi & 1) * nbl + nin * BL, 0, (n - nin) * BL * sizeof(float));
    for (size_t s = hi + 1; s-- > lo;) {
        const float *ys = t->y + s * nbl, *zs = t->z + s * nbl, *yp = s ? ys - nbl : ys;
        float *ds = t->delta + (s & 1) * nbl;
        const float *dn = t->delta + ((s + 1) & 1) * nbl;
        float *dys = t->dy + (s & 1) * nbl, *dyp = t->dy + ((s + 1) & 1) * nbl;
        const float *lg = (all || s == hi) && t->tgt[s] ? t->lossg + s * no * BL : NULL;
        if (way == TR_T_SCATTER && s > lo)
            memset(dyp + nin * BL, 0, (n - nin) * BL * sizeof(float));
        for (size_t j = n; j-- > nin;) {
            struct vb a;
            if (way == TR_T_SCATTER) {
                load(&a, dys + j * BL, nv);
            } else {
                EACH(0, nv, a.v[v] = (v16f){0});
                if (s < hi)
                    gather_down(&a, wt, dt, pos, trec[j], trow[j + 1], dn, nv);
                gather_down(&a, wt, dt, pos, trow[j], trec[j], ds, nv);
            }
            if (lg && t->oslot[j] != NN_NONE) {
                const v16f *r = (const v16f *)(lg + (size_t)t->oslot[j] * BL);
                EACH(0, nv, a.v[v] += r[v]);
            }
            finish_delta(&a, t->act[j], zs + j * BL, ys + j * BL, ds + j * BL, nv);
            t->bias_grad[j] += lanes_sum(&a, nv);
            for (uint32_t k = t->row[j]; k < t->rec[j]; k++) {
                uint32_t i = t->src[k];
                t->grad[k] += dot(&a, ys + (size_t)i * BL, nv);
                if (way == TR_T_SCATTER && i >= nin) {
                    v16f *r = (v16f *)(dys + (size_t)i * BL);
                    float wk = t->w[k];
                    EACH(0, nv, r[v] += wk * a.v[v]);
                }
            }
            if (s == 0)
                continue;
            for (uint32_t k = t->rec[j]; k < t->row[j + 1]; k++) {
                uint32_t i = t->src[k];
                t->grad[k] += dot(&a, yp + (size_t)i * BL, nv);
                if (way == TR_T_SCATTER && s > lo && i >= nin) {
                    v16f *r = (v16f *)(dyp + (size_t)i * BL);
                    float wk = t->w[k];
                    EACH(0, nv, r[v] += wk * a.v[v]);
                }
            }
        }
        if (keep && s == hi)
            keep_deltas(t, keep, ds);
    }
}

/* The view's values of the last step, for the block's samples. */
static void keep_view_values(struct nn_trainer *t, const struct tr_block *b)
{
    size_t n = t->n, s = b->steps - 1, nb = b->nb * sizeof(float);
    const float *ys = t->y + s * n * BL;
    for (size_t j = 0; j < n; j++)
        memcpy(t->v_value + j * b->batch + b->b0, ys + j * BL, nb);
}

NN_INLINE void run_nv(struct nn_trainer *t, struct tr_block *b, int nv)
{
    forward(t, b, nv);
    if (!b->backward) {
        size_t last = b->steps;
        for (size_t s = 0; s < last; s++)
            for (size_t l = 0; l < b->nb; l++)
                for (size_t k = 0; k < t->n_out; k++)
                    b->out[(s * b->batch + b->b0 + l) * t->n_out + k] =
                        t->y[(s * t->n + t->out_map[k]) * BL + l];
        return;
    }
    size_t T = b->steps, K = t->o.bptt;
    const struct tr_block *keep = t->keep_values ? b : NULL;
    if (K == 0 || K >= T) {
        backward(t, 0, T - 1, 1, keep, nv);
    } else {
        for (size_t s = 0; s < T; s++)
            if (t->tgt[s])
                backward(t, s + 1 >= K ? s + 1 - K : 0, s, 0, s == T - 1 ? keep : NULL, nv);
        /* no window ends at a last step without a target: its deltas are 0 */
        if (keep && !t->tgt[T - 1])
            keep_deltas(t, b, NULL);
    }
    if (keep)
        keep_view_values(t, b);
}

NN_INLINE void run_block(struct nn_trainer *t, struct tr_block *b)
{
    switch (b->nv) {
    case 1:
        run_nv(t, b, 1);
        break;
    case 2:
        run_nv(t, b, 2);
        break;
    case 3:
        run_nv(t, b, 3);
        break;
    default:
        run_nv(t, b, 4);
        break;
    }
}

/* ---- the optimizers ------------------------------------------------------ */

/* Correctly rounded square roots, 4 lanes at a time on x86-64 (sqrtps gives
 * the bits of sqrtf, which -fmath-errno keeps from vectorizing). */
NN_INLINE v16f vsqrt(v16f x)
{
    v16f r;
#if defined(__x86_64__) && defined(__GNUC__)
    for (int q = 0; q < 4; q++) {
        __m128 h;
        memcpy(&h, (const char *)&x + 16 * q, sizeof h);
        h = _mm_sqrt_ps(h);
        memcpy((char *)&r + 16 * q, &h, sizeof h);
    }
#else
    for (int l = 0; l < 16; l++)
        r[l] = sqrtf(x[l]);
#endif
    return r;
}

/* One optimizer step (train.h's formulas) on parameters p[k], k in [k0, k1),
 * 16 at a time from k0; the same bits as one at a time. */
NN_INLINE void update_body(const struct nn_train_opts *o, float c1, float c2, float *p,
                           const float *g, float *m, float *v, size_t n)
{
    float lr = o->lr, mo = o->momentum, b1 = o->beta1, b2 = o->beta2, eps = o->eps;
    size_t k = 0;
    for (; k + 16 <= n; k += 16) {
        v16fu *pk = (v16fu *)(p + k), *mk = (v16fu *)(m + k), *vk = (v16fu *)(v + k);
        v16f gk = *(const v16fu *)(g + k);
        if (o->optimizer == NN_OPT_SGD) {
            *pk -= lr * gk;
        } else if (o->optimizer == NN_OPT_MOMENTUM) {
            *mk = mo * *mk + gk;
            *pk -= lr * *mk;
        } else {
            *mk = b1 * *mk + (1.0f - b1) * gk;
            *vk = b2 * *vk + (1.0f - b2) * (gk * gk);
            *pk -= lr * (*mk / c1) / (vsqrt(*vk / c2) + eps);
        }
    }
    for (; k < n; k++) {
        if (o->optimizer == NN_OPT_SGD) {
            p[k] -= lr * g[k];
        } else if (o->optimizer == NN_OPT_MOMENTUM) {
            m[k] = mo * m[k] + g[k];
            p[k] -= lr * m[k];
        } else {
            m[k] = b1 * m[k] + (1.0f - b1) * g[k];
            v[k] = b2 * v[k] + (1.0f - b2) * (g[k] * g[k]);
            p[k] -= lr * (m[k] / c1) / (sqrtf(v[k] / c2) + eps);
        }
    }
}

#define TR_KERNEL_FN(attr, sfx)                                                                    \
    attr static void run_##sfx(struct nn_trainer *t, struct tr_block *b)                           \
    {                                                                                              \
        run_block(t, b);                                                                           \
    }                                                                                              \
    attr static void update_##sfx(const struct nn_train_opts *o, float c1, float c2, float *p,     \
                                  const float *g, float *m, float *v, size_t n)                    \
    {                                                                                              \
        update_body(o, c1, c2, p, g, m, v, n);                                                     \
    }
#if defined(__x86_64__) && defined(__GNUC__)
TR_KERNEL_FN(, default)
TR_KERNEL_FN(__attribute__((target("avx2"))), avx2)
TR_KERNEL_FN(__attribute__((target("avx512f"))), avx512f)
tr_fn *const nn_tr_run[NN_TARGET_COUNT] = {run_default, run_avx2, run_avx512f};
tr_update_fn *const nn_tr_update[NN_TARGET_COUNT] = {update_default, update_avx2, update_avx512f};
#else
TR_KERNEL_FN(, default)
tr_fn *const nn_tr_run[NN_TARGET_COUNT] = {run_default, run_default, run_default};
tr_update_fn *const nn_tr_update[NN_TARGET_COUNT] = {update_default, update_default,
                                                     update_default};
#endif
