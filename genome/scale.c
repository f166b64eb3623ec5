/* scale.c -- the input scaling of a genome (genome.h, "input scaling"). */
#include "scale.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void genome_scale_drop(struct genome *g)
{
    free(g->scale);
    g->scale = NULL;
    g->n_scale = 0;
}

int genome_set_scale(struct genome *g, const float *shift, const float *mul, size_t n,
                     struct tv_error *err)
{
    if (n == 0) {
        genome_scale_drop(g);
        return 0;
    }
    float *s = n <= SIZE_MAX / 2 / sizeof *s ? malloc(2 * n * sizeof *s) : NULL;
    if (!s)
        return tv_error_set(err, TV_ENOMEM, "genome: out of memory for the scaling of %zu inputs",
                            n);
    memcpy(s, shift, n * sizeof *s);
    memcpy(s + n, mul, n * sizeof *s);
    genome_scale_drop(g);
    g->scale = s;
    g->n_scale = n;
    return 0;
}

int genome_scale_copy(struct genome *dst, const struct genome *src, struct tv_error *err)
{
    if (dst == src)
        return 0;
    return genome_set_scale(dst, genome_scale_shift(src), genome_scale_mul(src), src->n_scale, err);
}

int genome_scale_equal(const struct genome *a, const struct genome *b)
{
    return a->n_scale == b->n_scale &&
           (!a->n_scale || !memcmp(a->scale, b->scale, 2 * a->n_scale * sizeof *a->scale));
}

int genome_scale_check(const struct genome *g, size_t n_in, struct tv_error *err)
{
    if (!g->n_scale)
        return 0;
    if (g->n_scale != n_in)
        return tv_error_set(err, TV_EINVAL, "input scaling: %zu pairs for %zu inputs", g->n_scale,
                            n_in);
    for (size_t k = 0; k < 2 * g->n_scale; k++)
        if (!isfinite(g->scale[k]))
            return tv_error_set(err, TV_EINVAL, "input scaling: the %s of input %zu is not finite",
                                k < g->n_scale ? "shift" : "mul", k % g->n_scale);
    return 0;
}
