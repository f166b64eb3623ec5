/* spike.c -- spiking networks of cuba neurons, event-driven (nn.h).
 *
 * A step: fold this step's delay bin into the currents, gather the inputs'
 * currents, update every neuron (one branch-free pass the compiler
 * vectorises), collect the spikes into a queue, then add the weights of the
 * connections leaving the neurons that spiked (rows by source) into their
 * targets' currents, or into the bin of the step they are due. The reference
 * (spike_ref.c) computes the same expressions over every connection.
 */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "spike_impl.h"

/* Carves aligned arrays out of one block: a first pass with base NULL
 * counts, the second points into the block. */
struct carve {
    unsigned char *base;
    size_t off;
};

static void *take(struct carve *c, size_t count, size_t size)
{
    size_t o = (c->off + 63) & ~(size_t)63;
    c->off = o + count * size;
    return c->base ? c->base + o : NULL;
}

static void lay_out(struct nn_spike *s, struct carve *c)
{
    size_t n = s->n_pad, m = s->n_conns;
    s->v = take(c, n, sizeof *s->v);
    s->cur = take(c, 2 * n, sizeof *s->cur);
    s->x = take(c, n, sizeof *s->x);
    s->rest = take(c, n, sizeof *s->rest);
    s->dm = take(c, n, sizeof *s->dm);
    s->de = take(c, n, sizeof *s->de);
    s->di = take(c, n, sizeof *s->di);
    s->ce = take(c, n, sizeof *s->ce);
    s->ci = take(c, n, sizeof *s->ci);
    s->th = take(c, n, sizeof *s->th);
    s->reset = take(c, n, sizeof *s->reset);
    s->ref_m1 = take(c, n, sizeof *s->ref_m1);
    s->cnt = take(c, n, sizeof *s->cnt);
    s->flag = take(c, n, sizeof *s->flag);
    s->fired = take(c, n, sizeof *s->fired);
    s->bins = s->max_delay > 1 ? take(c, s->max_delay * 2 * n, sizeof *s->bins) : NULL;
    s->row = take(c, s->n + 1, sizeof *s->row);
    s->row_w = take(c, s->n, sizeof *s->row_w);
    s->from = take(c, m, sizeof *s->from);
    s->slot = take(c, m, sizeof *s->slot);
    s->delay = take(c, m, sizeof *s->delay);
    s->w = take(c, m, sizeof *s->w);
}

static int positive_time(double tau)
{
    return isfinite(tau) && tau > 0;
}

static int check_desc(const struct nn_spike_desc *d, size_t *max_delay, struct tv_error *err)
{
    if (d->n_in > d->n || d->n >= UINT32_MAX / 2)
        return tv_error_set(err, TV_EINVAL, "spiking network: %zu inputs of %zu neurons", d->n_in,
                            d->n);
    if (d->n_conns >= UINT32_MAX)
        return tv_error_set(err, TV_EINVAL, "spiking network: %zu connections", d->n_conns);
    for (size_t j = d->n_in; j < d->n; j++) {
        const struct nn_spike_neuron *u = &d->neurons[j];
        if (!positive_time(u->tau_m) || !positive_time(u->tau_exc) || !positive_time(u->tau_inh))
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: neuron %zu: a time constant is not > 0", j);
        if (!isfinite(u->threshold) || !isfinite(u->reset) || !isfinite(u->rest) ||
            !isfinite(u->bias))
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: neuron %zu: a value is not finite", j);
    }
    *max_delay = 1;
    for (size_t k = 0; k < d->n_conns; k++) {
        const struct nn_spike_conn *c = &d->conns[k];
        if (c->from >= d->n || c->to >= d->n || c->to < d->n_in)
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: connection %zu (%u -> %u): an end is out of "
                                "range or an input",
                                k, c->from, c->to);
        if (!isfinite(c->weight) || c->delay < 1 || c->delay > NN_SPIKE_MAX_DELAY)
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: connection %zu (%u -> %u): weight not finite or "
                                "delay %u outside [1, %d]",
                                k, c->from, c->to, c->delay, NN_SPIKE_MAX_DELAY);
        if (k > 0 && c->from < d->conns[k - 1].from)
            return tv_error_set(err, TV_EINVAL,
                                "spiking network: connection %zu (%u -> %u): not sorted by from", k,
                                c->from, c->to);
        if (c->from >= d->n_in && c->delay > *max_delay)
            *max_delay = c->delay;
    }
    return 0;
}

static int spike_new(const struct nn_spike_desc *d, int reference, struct nn_spike **out,
                     struct tv_error *err)
{
    *out = NULL;
    size_t max_delay = 1;
    int rc = check_desc(d, &max_delay, err);
    if (rc)
        return rc;
    struct nn_spike hd = {.reference = reference, .n = d->n, .n_in = d->n_in};
    hd.n_conns = d->n_conns;
    hd.n_pad = (d->n + NN_SPIKE_PAD - 1) / NN_SPIKE_PAD * NN_SPIKE_PAD;
    hd.max_delay = max_delay;
    struct carve c = {NULL, sizeof hd};
    lay_out(&hd, &c);
    unsigned char *block = calloc(1, c.off);
    if (!block)
        return tv_error_set(err, TV_ENOMEM, "spiking network: out of memory (%zu bytes)", c.off);
    struct nn_spike *s = (struct nn_spike *)block;
    *s = hd;
    s->bytes = c.off;
    c = (struct carve){block, sizeof hd};
    lay_out(s, &c);
    /* inputs and padding never move and never spike */
    for (size_t j = 0; j < s->n_pad; j++) {
        s->dm[j] = s->de[j] = s->di[j] = 1;
        s->th[j] = HUGE_VAL;
    }
    s->uniform = d->n_in == 0 && d->n > 0;
    for (size_t j = 1; j < d->n && s->uniform; j++)
        s->uniform = !memcmp(&d->neurons[j], &d->neurons[0], sizeof d->neurons[0]);
    for (size_t j = d->n_in; j < d->n; j++) {
        const struct nn_spike_neuron *u = &d->neurons[j];
        s->rest[j] = u->rest + u->bias;
        s->dm[j] = exp(-1.0 / u->tau_m);
        nn_spike_coef(u->tau_m, u->tau_exc, &s->de[j], &s->ce[j]);
        nn_spike_coef(u->tau_m, u->tau_inh, &s->di[j], &s->ci[j]);
        s->th[j] = u->threshold;
        s->reset[j] = u->reset;
        s->ref_m1[j] = u->refractory ? (double)u->refractory - 1 : 0;
    }
    for (size_t k = 0; k < d->n_conns; k++) {
        const struct nn_spike_conn *e = &d->conns[k];
        s->row[e->from + 1]++;
        s->from[k] = e->from;
        /* an input's connection feeds x, whatever its sign */
        s->slot[k] = e->to + (e->from >= d->n_in && e->weight < 0 ? (uint32_t)s->n_pad : 0);
        s->delay[k] = (uint16_t)(e->delay - 1);
        s->w[k] = e->weight;
    }
    for (size_t j = 0; j < d->n; j++) {
        s->row[j + 1] += s->row[j];
        s->row_w[j] = NAN;
    }
    for (size_t j = 0; j < d->n; j++) {
        uint32_t e0 = s->row[j], e1 = s->row[j + 1], e = e0;
        while (e < e1 && !memcmp(&s->w[e], &s->w[e0], sizeof *s->w))
            e++;
        if (e0 < e1 && e == e1)
            s->row_w[j] = s->w[e0];
    }
    s->target = nn_target_best();
    nn_spike_reset(s);
    *out = s;
    return 0;
}

int nn_spike_set_target(struct nn_spike *s, int target, struct tv_error *err)
{
    int rc = nn_target_check(target, "nn_spike_set_target", err);
    if (rc)
        return rc;
    s->target = target;
    return 0;
}

int nn_spike_new(const struct nn_spike_desc *d, struct nn_spike **out, struct tv_error *err)
{
    return spike_new(d, 0, out, err);
}

int nn_spike_new_reference(const struct nn_spike_desc *d, struct nn_spike **out,
                           struct tv_error *err)
{
    return spike_new(d, 1, out, err);
}

int nn_spike_clone(const struct nn_spike *src, struct nn_spike **out, struct tv_error *err)
{
    *out = NULL;
    struct nn_spike *s = malloc(src->bytes);
    if (!s)
        return tv_error_set(err, TV_ENOMEM, "spiking network: out of memory (%zu bytes)",
                            src->bytes);
    memcpy(s, src, src->bytes);
    struct carve c = {(unsigned char *)s, sizeof *s};
    lay_out(s, &c);
    *out = s;
    return 0;
}

void nn_spike_free(struct nn_spike *s)
{
    free(s);
}

void nn_spike_reset(struct nn_spike *s)
{
    size_t n = s->n_pad;
    memcpy(s->v, s->rest, n * sizeof *s->v);
    memset(s->cur, 0, 2 * n * sizeof *s->cur);
    memset(s->cnt, 0, n * sizeof *s->cnt);
    memset(s->flag, 0, n * sizeof *s->flag);
    if (s->bins)
        memset(s->bins, 0, s->max_delay * 2 * n * sizeof *s->bins);
    s->n_fired = 0;
    s->t = s->n_spikes = s->n_events = 0;
}

void nn_spike_set_state(struct nn_spike *s, const double *v, const double *i_exc,
                        const double *i_inh)
{
    if (v)
        memcpy(s->v + s->n_in, v + s->n_in, (s->n - s->n_in) * sizeof *v);
    if (i_exc)
        memcpy(s->cur, i_exc, s->n * sizeof *i_exc);
    if (i_inh)
        memcpy(s->cur + s->n_pad, i_inh, s->n * sizeof *i_inh);
}

/* The contributions due at this step join the currents; the inputs' currents
 * of this step are summed into x. */
static void begin_step(struct nn_spike *s, const float *in)
{
    size_t n2 = 2 * s->n_pad;
    if (s->bins) {
        double *restrict b = s->bins + (s->t % s->max_delay) * n2;
        double *restrict cur = s->cur;
        for (size_t k = 0; k < n2; k++) {
            cur[k] += b[k];
            b[k] = 0;
        }
    }
    if (s->n_in == 0)
        return;
    memset(s->x, 0, s->n * sizeof *s->x);
    for (size_t k = 0; k < s->n_in; k++) {
        double xk = in[k];
        for (uint32_t e = s->row[k]; e < s->row[k + 1]; e++)
            s->x[s->slot[e]] += s->w[e] * xk;
    }
}

/* Every neuron's exact update over the step, the threshold, the reset and
 * the refractory count, NN_SPIKE_LANES neurons at a time in vectors (the
 * same operations in the same order as the reference's scalar code, so the
 * same bits); a group with a spike, which is rare, pushes it to the queue. */
/* pick and the loop pass vectors only between inlined code */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef double v8d __attribute__((vector_size(32), aligned(8), may_alias));
typedef int64_t v8l __attribute__((vector_size(32), aligned(8), may_alias));

static inline __attribute__((always_inline)) v8d pick(v8l m, v8d a, v8d b)
{
    return (v8d)((m & (v8l)a) | (~m & (v8l)b));
}

static inline __attribute__((always_inline)) v8d either(int uniform, v8d u, v8d each)
{
    return uniform ? u : each;
}

/* uniform: every neuron has the parameters of neuron 0 and there are no
 * inputs (the parameters are then constants in registers, and a step reads
 * and writes only the state: v, the currents and the counts). */
static inline __attribute__((always_inline)) void update_body(struct nn_spike *s, int uniform)
{
    size_t np = s->n_pad, n = s->n, nf = 0;
    double *restrict v = s->v, *restrict ie = s->cur, *restrict ii = s->cur + np;
    double *restrict cnt = s->cnt;
    const double *restrict rest = s->rest, *restrict x = s->x, *restrict dm = s->dm;
    const double *restrict ce = s->ce, *restrict ci = s->ci, *restrict de = s->de;
    const double *restrict di = s->di, *restrict th = s->th, *restrict reset = s->reset;
    const double *restrict ref_m1 = s->ref_m1;
    const v8d one = {1, 1, 1, 1}, zero = {0};
#define BC(a) ((v8d){(a)[0], (a)[0], (a)[0], (a)[0]})
    const v8d u_eq = BC(rest) + zero, u_dm = BC(dm), u_ce = BC(ce), u_ci = BC(ci), u_de = BC(de);
    const v8d u_di = BC(di), u_th = BC(th), u_reset = BC(reset), u_ref = BC(ref_m1);
#undef BC
    /* blocks of SPIKE_BLOCK groups: the masks of a block are kept, and looked
     * at only when one of them has a spike */
    enum { SPIKE_BLOCK = 8 };
    v8l masks[SPIKE_BLOCK];
    for (size_t j0 = 0; j0 < np; j0 += SPIKE_BLOCK * NN_SPIKE_LANES) {
        size_t j1 = j0 + SPIKE_BLOCK * NN_SPIKE_LANES < np ? j0 + SPIKE_BLOCK * NN_SPIKE_LANES : np;
        v8l acc = {0};
        for (size_t j = j0, b = 0; j < j1; j += NN_SPIKE_LANES, b++) {
#define LD(a) (*(const v8d *)((a) + j))
#define P(a) either(uniform, u_##a, LD(a))
            v8d e = LD(ie), i = LD(ii), vj = LD(v), c = LD(cnt);
            v8d eq = either(uniform, u_eq, LD(rest) + LD(x));
            v8d vn = eq + (vj - eq) * P(dm) + e * P(ce) + i * P(ci);
            *(v8d *)(ie + j) = e * P(de);
            *(v8d *)(ii + j) = i * P(di);
            v8l frozen = c > zero;
            v8d vv = pick(frozen, vj, vn);
            v8l spk = ~frozen & (vv > P(th));
            *(v8d *)(v + j) = pick(spk, P(reset), vv);
            *(v8d *)(cnt + j) =
                pick(spk, either(uniform, u_ref, LD(ref_m1)), pick(frozen, c - one, c));
#undef P
#undef LD
            masks[b] = spk;
            acc |= spk;
        }
        acc |= __builtin_shufflevector(acc, acc, 2, 3, 0, 1);
        acc |= __builtin_shufflevector(acc, acc, 1, 0, 3, 2);
        if (!acc[0])
            continue;
        for (size_t j = j0, b = 0; j < j1; j += NN_SPIKE_LANES, b++)
            for (size_t k = 0; k < NN_SPIKE_LANES && j + k < n; k++)
                if (masks[b][k]) {
                    s->fired[nf++] = (uint32_t)(j + k);
                    s->flag[j + k] = 1;
                }
    }
    s->n_fired = nf;
}

/* update_NAME(s): BODY for target ATTR, on the uniform path or not. */
#define UPDATE_FN(name, attr, body)                                                                \
    attr static void name(struct nn_spike *s)                                                      \
    {                                                                                              \
        if (s->uniform)                                                                            \
            body(s, 1);                                                                            \
        else                                                                                       \
            body(s, 0);                                                                            \
    }
#if defined(__x86_64__) && defined(__GNUC__)
UPDATE_FN(update_avx2, __attribute__((target("avx2"))), update_body)
#endif
UPDATE_FN(update_default, , update_body)

#if defined(__x86_64__) && defined(__GNUC__)
/* The same update with AVX-512 intrinsics, 8 neurons a step: the generic
 * vector code above compiles badly for 512-bit masks. Same operations in the
 * same order, so the same bits. */
static inline __attribute__((always_inline, target("avx512f"))) void
update512_body(struct nn_spike *s, int uniform)
{
    size_t np = s->n_pad, n = s->n, nf = 0;
    double *restrict v = s->v, *restrict ie = s->cur, *restrict ii = s->cur + np;
    double *restrict cnt = s->cnt;
    const __m512d one = _mm512_set1_pd(1), zero = _mm512_setzero_pd();
    const __m512d u_eq = _mm512_add_pd(_mm512_set1_pd(s->rest[0]), zero);
    const __m512d u_dm = _mm512_set1_pd(s->dm[0]), u_ce = _mm512_set1_pd(s->ce[0]);
    const __m512d u_ci = _mm512_set1_pd(s->ci[0]), u_de = _mm512_set1_pd(s->de[0]);
    const __m512d u_di = _mm512_set1_pd(s->di[0]), u_th = _mm512_set1_pd(s->th[0]);
    const __m512d u_reset = _mm512_set1_pd(s->reset[0]), u_ref = _mm512_set1_pd(s->ref_m1[0]);
    for (size_t j = 0; j < np; j += 8) {
#define LD(a) _mm512_loadu_pd((a) + j)
#define P(a) (uniform ? u_##a : LD(s->a))
        __m512d e = LD(ie), i = LD(ii), vj = LD(v), c = LD(cnt);
        __m512d eq = uniform ? u_eq : _mm512_add_pd(LD(s->rest), LD(s->x));
        __m512d vn = _mm512_add_pd(eq, _mm512_mul_pd(_mm512_sub_pd(vj, eq), P(dm)));
        vn = _mm512_add_pd(vn, _mm512_mul_pd(e, P(ce)));
        vn = _mm512_add_pd(vn, _mm512_mul_pd(i, P(ci)));
        _mm512_storeu_pd(ie + j, _mm512_mul_pd(e, P(de)));
        _mm512_storeu_pd(ii + j, _mm512_mul_pd(i, P(di)));
        __mmask8 frozen = _mm512_cmp_pd_mask(c, zero, _CMP_GT_OQ);
        __m512d vv = _mm512_mask_blend_pd(frozen, vn, vj);
        __mmask8 spk = _mm512_mask_cmp_pd_mask((__mmask8)~frozen, vv, P(th), _CMP_GT_OQ);
        _mm512_storeu_pd(v + j, _mm512_mask_blend_pd(spk, vv, P(reset)));
        __m512d cn = _mm512_mask_sub_pd(c, frozen, c, one);
        _mm512_storeu_pd(cnt + j, _mm512_mask_blend_pd(spk, cn, uniform ? u_ref : LD(s->ref_m1)));
#undef P
#undef LD
        if (spk)
            for (size_t k = 0; k < 8 && j + k < n; k++)
                if (spk >> k & 1) {
                    s->fired[nf++] = (uint32_t)(j + k);
                    s->flag[j + k] = 1;
                }
    }
    s->n_fired = nf;
}

UPDATE_FN(update_avx512f, __attribute__((target("avx512f"))), update512_body)
#endif

static void update(struct nn_spike *s)
{
    for (size_t f = 0; f < s->n_fired; f++) /* last step's flags */
        s->flag[s->fired[f]] = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (s->target == NN_TARGET_AVX512F)
        update_avx512f(s);
    else if (s->target == NN_TARGET_AVX2)
        update_avx2(s);
    else
#endif
        update_default(s);
}

void nn_spike_step(struct nn_spike *s, const float *in)
{
    if (s->reference) {
        nn_spike_ref_step(s, in);
        return;
    }
    begin_step(s, in);
    update(s);
    size_t nf = s->n_fired;
    s->n_spikes += nf;
    /* the scatter: only the rows of the neurons that spiked */
    double *restrict cur = s->cur;
    const uint32_t *restrict slot = s->slot;
    const double *restrict w = s->w;
    uint64_t events = 0;
    if (!s->bins) {
        for (size_t f = 0; f < nf; f++) {
            uint32_t j = s->fired[f], e0 = s->row[j], e1 = s->row[j + 1];
            double wj = s->row_w[j];
            if (wj == wj) /* one weight for the whole row: it is not read again */
                for (uint32_t e = e0; e < e1; e++)
                    cur[slot[e]] += wj;
            else
                for (uint32_t e = e0; e < e1; e++)
                    cur[slot[e]] += w[e];
            events += e1 - e0;
        }
    } else {
        size_t n2 = 2 * s->n_pad, D = s->max_delay;
        for (size_t f = 0; f < nf; f++) {
            uint32_t j = s->fired[f], e0 = s->row[j], e1 = s->row[j + 1];
            for (uint32_t e = e0; e < e1; e++) {
                size_t d = s->delay[e];
                if (d == 0)
                    cur[slot[e]] += w[e];
                else
                    s->bins[((s->t + d + 1) % D) * n2 + slot[e]] += w[e];
            }
            events += e1 - e0;
        }
    }
    s->n_events += events;
    s->t++;
}

size_t nn_spike_fired(const struct nn_spike *s, const uint32_t **idx)
{
    *idx = s->fired;
    return s->n_fired;
}

const double *nn_spike_v(const struct nn_spike *s)
{
    return s->v;
}

uint64_t nn_spike_steps(const struct nn_spike *s)
{
    return s->t;
}

uint64_t nn_spike_n_spikes(const struct nn_spike *s)
{
    return s->n_spikes;
}

uint64_t nn_spike_n_events(const struct nn_spike *s)
{
    return s->n_events;
}
