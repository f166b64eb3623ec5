/* layers.c -- the layers of a genome and the classes of its connections
 * (genome.h, "layers and classes of connections"): the one rule that cuts
 * depths into layers, which the compile (nn/order.c), the trainer, the
 * quantizer, the CNN's channel levels and genome_layers all follow.
 */
#include <stdlib.h>

#include "genome.h"

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int genome_layers(const struct genome *g, float **depths, size_t *n_layers, struct tv_error *err)
{
    size_t n = g->n_neurons, k = 0;
    float *d = malloc((n ? n : 1) * sizeof *d);
    if (!d)
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        d[i] = g->neurons[i].depth;
    if (n > 1)
        qsort(d, n, sizeof *d, cmp_float);
    /* the first depth of each layer (no inputs apart: they share depth 0),
     * written behind the reads */
    for (size_t j = 0; j < n; j = genome_layer_end(d, n, 0, j))
        d[k++] = d[j];
    *depths = d;
    *n_layers = k;
    return 0;
}

size_t genome_layer_end(const float *depth, size_t n, size_t n_in, size_t j)
{
    if (j < n_in)
        return n_in < n ? n_in : n;
    size_t e = j + 1;
    while (e < n && depth[e] == depth[e - 1])
        e++;
    return e;
}

size_t genome_layers_cut(const float *depth, size_t n, size_t n_in, uint32_t *start,
                         uint32_t *layer_of)
{
    size_t l = 0;
    for (size_t j = 0, e; j < n; j = e, l++) {
        e = genome_layer_end(depth, n, n_in, j);
        if (start)
            start[l] = (uint32_t)j;
        for (size_t q = j; layer_of && q < e; q++)
            layer_of[q] = (uint32_t)l;
    }
    if (start)
        start[l] = (uint32_t)n;
    return l;
}

void genome_layers_index(const uint32_t *start, size_t n_layers, uint32_t *layer_of)
{
    for (size_t l = 0; l < n_layers; l++)
        for (uint32_t j = start[l]; j < start[l + 1]; j++)
            layer_of[j] = (uint32_t)l;
}

void genome_depth_run_ends(const float *depth, size_t n, uint32_t *run_end)
{
    if (n == 0)
        return;
    run_end[n - 1] = (uint32_t)n;
    for (size_t j = n - 1; j-- > 0;)
        run_end[j] = depth[j + 1] > depth[j] ? (uint32_t)j + 1 : run_end[j + 1];
}

size_t genome_layer_of(const float *depths, size_t n_layers, float depth)
{
    size_t lo = 0, hi = n_layers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (depths[mid] < depth)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int genome_conn_class(size_t from_layer, size_t to_layer)
{
    if (to_layer <= from_layer)
        return GENOME_CONN_RECURRENT;
    return to_layer == from_layer + 1 ? GENOME_CONN_LOCAL : GENOME_CONN_SKIP;
}

int genome_conn_class_of(const float *depths, size_t n_layers, float from_depth, float to_depth)
{
    if (from_depth >= to_depth)
        return GENOME_CONN_RECURRENT;
    return genome_conn_class(genome_layer_of(depths, n_layers, from_depth),
                             genome_layer_of(depths, n_layers, to_depth));
}

void genome_conn_class_targets(int cls, size_t from_layer, size_t n_layers, size_t *lo, size_t *hi)
{
    switch (cls) {
    case GENOME_CONN_LOCAL:
        *lo = from_layer + 1;
        *hi = from_layer + 2 < n_layers ? from_layer + 2 : n_layers;
        break;
    case GENOME_CONN_SKIP:
        *lo = from_layer + 2;
        *hi = n_layers;
        break;
    default: /* recurrent: the source's own layer and every shallower one */
        *lo = 0;
        *hi = from_layer + 1;
    }
}
