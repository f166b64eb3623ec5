/* sparsify_rigl.c -- rigl's selection (nn_sparsify_rigl_top, sparsify.h):
 * the k absent connections of a layer pair with the largest |gradient|,
 * by a bounded heap over the dot products of values and deltas. Apart from
 * the sparsifier (sparsifier.c), which calls it once per layer pair at the
 * end of an epoch; it sees arrays and a callback, not a trainer.
 */
#include <math.h>
#include <stdlib.h>

#include "sparsify.h"

/* A candidate: |g| with g kept in c.weight. */
struct cand {
    float a;
    struct genome_conn c;
};

/* 1 when x ranks before y: larger |g|, then smaller (from, to). */
static int cand_before(const struct cand *x, const struct cand *y)
{
    if (x->a != y->a)
        return x->a > y->a;
    return genome_conn_cmp(&x->c, &y->c) < 0;
}

static int cand_order(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    return cand_before(x, y) ? -1 : cand_before(y, x) ? 1 : 0;
}

/* Restores the heap (root: the candidate that ranks last) below slot i. */
static void heap_down(struct cand *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && cand_before(&h[w], &h[l]))
            w = l;
        if (r < n && cand_before(&h[w], &h[r]))
            w = r;
        if (w == i)
            return;
        struct cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void heap_up(struct cand *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_before(&h[p], &h[i]))
            return;
        struct cand t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

/* sum of a[b] * b_[b] over b < n in float: 8 interleaved partial sums (a
 * form the compiler vectorizes without reassociating), then added in a fixed
 * order, so every machine gives the same bits. */
static float dot8(const float *a, const float *b, size_t n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (size_t l = 0; l < 8; l++)
            acc[l] += a[k + l] * b[k + l];
    for (; k < n; k++)
        acc[k % 8] += a[k] * b[k];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* 1 if row[0..n) holds a non-zero. */
static int any_nonzero(const float *row, size_t n)
{
    for (size_t b = 0; b < n; b++)
        if (row[b] != 0)
            return 1;
    return 0;
}

int nn_sparsify_rigl_top(const float *value, const float *delta, size_t batch, const uint32_t *id,
                         const uint32_t *from_idx, size_t n_from, const uint32_t *to_idx,
                         size_t n_to, size_t k,
                         int (*absent)(void *ctx, uint32_t from, uint32_t to), void *ctx,
                         struct genome_conn *out, size_t *n_out, struct tv_error *err)
{
    *n_out = 0;
    if (k == 0)
        return 0;
    struct cand *h = k <= SIZE_MAX / sizeof *h ? malloc(k * sizeof *h) : NULL;
    uint8_t *live = malloc(n_from ? n_from : 1); /* value row ii not all 0 */
    if (!h || !live) {
        free(h);
        free(live);
        return tv_error_set(err, TV_ENOMEM, "rigl: out of memory for %zu candidates", k);
    }
    for (size_t ii = 0; ii < n_from; ii++)
        live[ii] = (uint8_t)any_nonzero(value + (size_t)from_idx[ii] * batch, batch);
    size_t n = 0;
    for (size_t jj = 0; jj < n_to; jj++) {
        const float *dj = delta + (size_t)to_idx[jj] * batch;
        uint32_t to = id[to_idx[jj]];
        int live_j = any_nonzero(dj, batch);
        for (size_t ii = 0; ii < n_from; ii++) {
            float g =
                live_j && live[ii] ? dot8(value + (size_t)from_idx[ii] * batch, dj, batch) : 0;
            struct cand c = {fabsf(g), {id[from_idx[ii]], to, g}};
            /* the hash lookup only for a candidate that would enter */
            if ((n == k && !cand_before(&c, &h[0])) || !absent(ctx, c.c.from, to))
                continue;
            if (n < k) {
                h[n] = c;
                heap_up(h, n++);
            } else {
                h[0] = c;
                heap_down(h, n, 0);
            }
        }
    }
    qsort(h, n, sizeof *h, cand_order);
    for (size_t i = 0; i < n; i++)
        out[i] = h[i].c;
    *n_out = n;
    free(h);
    free(live);
    return 0;
}
