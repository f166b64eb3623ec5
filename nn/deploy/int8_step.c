/* int8_step.c -- a step of an int8 plan, portably: the pieces every path
 * shares (the inputs quantized before the step, the edge lists each state
 * makes from the plan's entries) and the portable kernels of NN_OP_INT8,
 * batch 1 and batches. Apart from the AVX-512 kernels (int8_avx512.c),
 * which call these and fall back to them; nothing here calls those.
 */
#include <string.h>

#include "int8_impl.h"

/* ---- shared by every path -------------------------------------------------- */

/* Quantizes x[0..n) into u (nn_q_input). */
static void qrow(const float *x, size_t n, uint8_t *u, float scale, int32_t zp)
{
    for (size_t i = 0; i < n; i++)
        u[i] = nn_q_input(x[i], scale, zp);
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

/* Before a step (int8_impl.h). */
void nn_int8_begin(const struct nn_plan *p, const struct nn_qflat *f, struct nn_state *s,
                   qrow_fn *q, qcols_fn *qc)
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

/* ---- edge lists -------------------------------------------------------------- */

/* (int8_impl.h) */
struct nn_int8_lists nn_int8_lists(const struct nn_qplan *qp, struct nn_state *s)
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
            for (uint32_t j0 = f->lstart[l]; j0 < qp->lend[l]; j0 += CHUNK, c++) {
                uint32_t lanes = chunk_lanes(j0, qp->lend[l]), i0 = j0 - (uint32_t)f->n_in;
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
            for (uint32_t j0 = f->lstart[l]; j0 < qp->lend[l]; j0 += CHUNK, c++) {
                uint32_t lanes = chunk_lanes(j0, qp->lend[l]), i0 = j0 - (uint32_t)f->n_in;
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
    return (struct nn_int8_lists){start, slot, w};
}

/* ---- batch 1 --------------------------------------------------------------- */

void nn_int8_one(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    (void)op;
    const struct nn_qplan *qp = (const struct nn_qplan *)p;
    const struct nn_qflat *f = &qp->f;
    struct nn_int8_lists g = nn_int8_lists(qp, s);
    nn_int8_begin(p, f, s, qrow, qcols);
    if (qp->n_chans)
        nn_qconv_run(qp, s);
    uint8_t *v = values(s);
    for (size_t l = 1; l < f->n_layers; l++)
        for (uint32_t j = f->lstart[l]; j < qp->lend[l]; j++) {
            uint32_t i = j - (uint32_t)f->n_in;
            int32_t a = f->fbias[i];
            for (uint32_t k = g.start[i]; k < g.start[i + 1]; k++)
                a += g.w[k] * v[g.slot[k]];
            v[j] = neuron_out(f, i, a);
        }
    finish(f, s, drow);
}

/* ---- batches --------------------------------------------------------------- */

void nn_int8_batch(const struct nn_plan *p, struct nn_state *s, const struct nn_op *op)
{
    (void)op;
    const struct nn_qplan *qp = (const struct nn_qplan *)p;
    const struct nn_qflat *f = &qp->f;
    struct nn_int8_lists g = nn_int8_lists(qp, s);
    nn_int8_begin(p, f, s, qrow, qcols);
    if (qp->n_chans)
        nn_qconv_run(qp, s);
    uint8_t *v = values(s);
    size_t st = s->stride;
    for (size_t l = 1; l < f->n_layers; l++)
        for (uint32_t j = f->lstart[l]; j < qp->lend[l]; j++) {
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
