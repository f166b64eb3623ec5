/* sparsify_rules.c -- the rules of the per-step sparsity policies (l1,
 * lp, threshold, round, zero, zero_prop) as pure functions over a weight
 * array and a removal mask (sparsify.h). Apart from the sparsifier
 * (sparsifier.c), which runs them on a trainer's weights; they know
 * nothing of trainers and call nothing of ours but the random generator.
 */
#include <math.h>

#include "sparsify.h"

/* Marks k in remove when out (0 or 1); 1 if it was not marked before.
 * Branch-free, so that the loops over the weights vectorize. */
static size_t mark(uint8_t *remove, size_t k, int out)
{
    size_t fresh = (size_t)(out & (remove[k] == 0));
    remove[k] |= (uint8_t)out;
    return fresh;
}

/* The removal rule of l1 and lp: x became y. */
static int decayed_out(float x, float y)
{
    return (x == 0) | (y == 0) | ((x > 0) != (y > 0));
}

size_t nn_sparsify_l1(float *w, size_t n, float d, uint8_t *remove)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++) {
        float x = w[k];
        float y = x > 0 ? x - d : x + d;
        int out = decayed_out(x, y);
        c += mark(remove, k, out);
        w[k] = out ? 0 : y;
    }
    return c;
}

size_t nn_sparsify_lp(float *w, size_t n, double d, double p, uint8_t *remove)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++) {
        float x = w[k];
        float y = 0;
        if (x != 0) {
            double a = fabs((double)x), e = p - 1;
            /* |w|^(P-1), without pow() for the usual whole P */
            double f = e == 0 ? 1 : e == 1 ? a : e == 2 ? a * a : pow(a, e);
            y = (float)(x > 0 ? x - d * f : x + d * f);
        }
        int out = decayed_out(x, y);
        c += mark(remove, k, out);
        w[k] = out ? 0 : y;
    }
    return c;
}

size_t nn_sparsify_threshold(const float *w, size_t n, float t, uint8_t *remove)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++)
        c += mark(remove, k, fabsf(w[k]) < t);
    return c;
}

size_t nn_sparsify_round(float *w, size_t n, int k10, uint8_t *remove)
{
    static const double p10[10] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    double s = p10[k10 < 0 ? 0 : k10 > 9 ? 9 : k10];
    size_t c = 0;
    for (size_t k = 0; k < n; k++) {
        float y = (float)(round((double)w[k] * s) / s);
        c += mark(remove, k, y == 0);
        w[k] = y;
    }
    return c;
}

size_t nn_sparsify_zero(size_t n, double p, struct tv_rng *rng, uint8_t *remove)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++)
        c += mark(remove, k, tv_rng_uniform(rng) < p);
    return c;
}

size_t nn_sparsify_zero_prop(const float *w, size_t n, double p, struct tv_rng *rng,
                             uint8_t *remove)
{
    double m = 0, sum = 0;
    for (size_t k = 0; k < n; k++)
        m = fmax(m, fabs((double)w[k]));
    for (size_t k = 0; k < n; k++)
        sum += m > 0 ? 1 - fabs((double)w[k]) / m : 1;
    size_t c = 0;
    for (size_t k = 0; k < n; k++) {
        double r = m > 0 ? 1 - fabs((double)w[k]) / m : 1;
        double pk = sum > 0 ? fmin(1, p * (double)n * r / sum) : p;
        c += mark(remove, k, tv_rng_uniform(rng) < pk);
    }
    return c;
}
