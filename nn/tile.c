/* tile.c -- the tiled form of a plan (nn.h), on the compile's side: the
 * chunks (runs of whole layers) and the starts of the tiles between them.
 * What goes into a tile is decided where the edges are classified and
 * placed (plan.c); the steps add the tiles in step1.c and stepb.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"

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

int nn_compile_chunks(struct nn_compile *c)
{
    size_t n = c->hd.n, n_layers = c->hd.n_layers;
    size_t t_size = tile_size(c->o->tile_neurons, n), nc = 0;
    if (t_size) {
        c->c_layer = malloc((n_layers + 1) * sizeof *c->c_layer);
        if (!c->c_layer)
            return tv_error_set(c->err, TV_ENOMEM, "out of memory compiling %zu neurons", n);
        nc = cut_chunks(c->layer_start, n_layers, t_size, c->c_layer);
        c->work += n_layers;
    }
    if (nc) {
        c->chunk_of = malloc(n * sizeof *c->chunk_of);
        c->t_cur = calloc(2 * nc * nc + 1, sizeof *c->t_cur);
        if (!c->chunk_of || !c->t_cur)
            return tv_error_set(c->err, TV_ENOMEM, "out of memory compiling %zu neurons", n);
        for (size_t k = 0; k < nc; k++)
            for (uint32_t j = c->layer_start[c->c_layer[k]]; j < c->layer_start[c->c_layer[k + 1]];
                 j++)
                c->chunk_of[j] = (uint32_t)k;
        c->work += n + 2 * nc * nc;
    }
    c->hd.n_chunks = nc;
    return 0;
}

void nn_compile_tile_starts(struct nn_compile *c)
{
    size_t nc = c->hd.n_chunks;
    for (size_t q = 0; nc && q < 2 * nc * nc; q++)
        c->t_cur[q + 1] += c->t_cur[q];
    c->hd.n_tiled = nc ? c->t_cur[2 * nc * nc] : 0;
}

void nn_compile_tile_copy(const struct nn_compile *c, struct nn_plan *p)
{
    size_t nc = p->n_chunks;
    if (!nc)
        return;
    memcpy(p->c_layer, c->c_layer, (nc + 1) * sizeof *c->c_layer);
    for (size_t k = 0; k <= nc; k++)
        p->c_start[k] = c->layer_start[c->c_layer[k]];
    memcpy(p->t_row, c->t_cur, (2 * nc * nc + 1) * sizeof *c->t_cur);
}
