/* order.c -- phase 1 of the compile (compile.h): check the neurons, give
 * them dense indices (inputs first by id, then the rest by (depth, id)),
 * cut the layers (genome_layers_cut), and map ids to dense indices.
 */
#include <stdlib.h>
#include <string.h>

#include "compile.h"

/* The bits of a depth in [0, 1] as an unsigned key in the same order. */
static uint32_t depth_key(float d)
{
    uint32_t k;
    if (d == 0.0f)
        d = 0.0f; /* -0 sorts with 0 */
    memcpy(&k, &d, sizeof k);
    return k;
}

/* Stable sort of idx[0..n) by key[idx[i]], least significant byte first;
 * tmp has room for n. Passes whose byte is the same for every key are
 * skipped (depths such as 0.5 or 0.25 share their low bytes). Returns the
 * iterations it took. */
static size_t radix_sort_by_key(uint32_t *idx, uint32_t *tmp, size_t n, const uint32_t *key)
{
    size_t work = 0;
    if (n < 32) { /* insertion sort: stable, and no histograms for tiny nets */
        for (size_t i = 1; i < n; i++) {
            uint32_t v = idx[i];
            size_t j = i;
            while (j > 0 && key[idx[j - 1]] > key[v]) {
                idx[j] = idx[j - 1];
                j--;
            }
            idx[j] = v;
            work += i - j + 1;
        }
        return work;
    }
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((key[idx[i]] >> shift) & 0xff) + 1]++;
        work += n + 256;
        int same = 0;
        for (int b = 1; b <= 256; b++)
            if (count[b] == n)
                same = 1;
        if (same)
            continue;
        for (int b = 1; b <= 256; b++)
            count[b] += count[b - 1];
        for (size_t i = 0; i < n; i++)
            tmp[count[(key[idx[i]] >> shift) & 0xff]++] = idx[i];
        memcpy(idx, tmp, n * sizeof *idx);
        work += n;
    }
    return work;
}

static int id_table_init(struct nn_id_table *t, const struct genome *g)
{
    size_t n = g->n_neurons;
    uint32_t max_id = g->neurons[n - 1].id;
    memset(t, 0, sizeof *t);
    t->max_id = max_id;
    if ((size_t)max_id < 4 * n + 1024) {
        t->direct = 1;
        t->slot_idx = calloc((size_t)max_id + 1, sizeof *t->slot_idx);
        if (!t->slot_idx)
            return TV_ENOMEM;
        for (size_t i = 0; i < n; i++)
            t->slot_idx[g->neurons[i].id] = (uint32_t)i + 1;
        return 0;
    }
    size_t cap = 64;
    while (cap < 2 * n)
        cap *= 2;
    t->mask = (uint32_t)(cap - 1);
    t->slot_id = malloc(cap * sizeof *t->slot_id);
    t->slot_idx = calloc(cap, sizeof *t->slot_idx);
    if (!t->slot_id || !t->slot_idx)
        return TV_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        uint32_t h = nn_id_hash(g->neurons[i].id, t->mask);
        while (t->slot_idx[h])
            h = (h + 1) & t->mask;
        t->slot_id[h] = g->neurons[i].id;
        t->slot_idx[h] = (uint32_t)i + 1;
    }
    return 0;
}

/* From then on, the table gives dense indices: new_of[old index]. */
static void id_table_renumber(struct nn_id_table *t, const uint32_t *new_of)
{
    size_t cap = t->direct ? (size_t)t->max_id + 1 : (size_t)t->mask + 1;
    for (size_t h = 0; h < cap; h++)
        if (t->slot_idx[h])
            t->slot_idx[h] = new_of[t->slot_idx[h] - 1] + 1;
}

void nn_id_table_free(struct nn_id_table *t)
{
    free(t->slot_id);
    free(t->slot_idx);
}

int nn_compile_check(struct nn_compile *c)
{
    const struct genome *g = c->g;
    struct tv_error *err = c->err;
    size_t n = g->n_neurons, *n_in = &c->hd.n_in, *n_out = &c->hd.n_out;
    *n_in = *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        const struct genome_neuron *u = &g->neurons[i];
        if (u->id == GENOME_ID_NONE || (i > 0 && u->id <= g->neurons[i - 1].id))
            return tv_error_set(err, TV_EINVAL,
                                "neuron %zu (id %u): ids not unique and ascending (canonicalize "
                                "and validate the genome first)",
                                i, u->id);
        if (u->kind > GENOME_HIDDEN)
            return tv_error_set(err, TV_EINVAL, "neuron %u: unknown kind %u", u->id, u->kind);
        if (u->act >= GENOME_ACT_COUNT)
            return tv_error_set(err, TV_EINVAL, "neuron %u: unknown activation %u", u->id, u->act);
        if (nn_model_check(u, 0, "the engine", err))
            return TV_EINVAL;
        if (!(u->depth >= 0.0f && u->depth <= 1.0f))
            return tv_error_set(err, TV_EINVAL, "neuron %u: depth %g outside [0, 1]", u->id,
                                (double)u->depth);
        if (u->kind == GENOME_INPUT) {
            if (u->depth != 0.0f)
                return tv_error_set(err, TV_EINVAL, "neuron %u: an input must be at depth 0",
                                    u->id);
            (*n_in)++;
        } else if (u->kind == GENOME_OUTPUT) {
            (*n_out)++;
        }
    }
    if (*n_in == 0 || *n_out == 0)
        return tv_error_set(err, TV_EINVAL,
                            "the network needs at least one input and one output "
                            "(has %zu inputs, %zu outputs)",
                            *n_in, *n_out);
    return 0;
}

int nn_compile_order(struct nn_compile *c)
{
    const struct genome *g = c->g;
    size_t n = g->n_neurons, n_in = c->hd.n_in;
    uint32_t *key = calloc(n, sizeof *key);
    c->old_of = malloc(n * sizeof *c->old_of);
    c->new_of = malloc(n * sizeof *c->new_of);
    c->tmp = malloc(n * sizeof *c->tmp);
    c->depth = malloc(n * sizeof *c->depth);
    c->layer_start = malloc((n + 1) * sizeof *c->layer_start);
    c->layer_of = key; /* the keys are done with once the layers are cut */
    if (!key || !c->old_of || !c->new_of || !c->tmp || !c->depth || !c->layer_start ||
        id_table_init(&c->ids, g))
        return tv_error_set(c->err, TV_ENOMEM, "out of memory compiling %zu neurons", n);

    /* inputs (already by id), then the rest stably by depth */
    size_t k_in = 0, k_rest = n_in;
    for (size_t i = 0; i < n; i++) {
        key[i] = depth_key(g->neurons[i].depth);
        if (g->neurons[i].kind == GENOME_INPUT)
            c->old_of[k_in++] = (uint32_t)i;
        else
            c->old_of[k_rest++] = (uint32_t)i;
    }
    c->work += 3 * n + radix_sort_by_key(c->old_of + n_in, c->tmp, n - n_in, key);
    for (size_t j = 0; j < n; j++) {
        uint32_t i = c->old_of[j];
        c->new_of[i] = (uint32_t)j;
        c->depth[j] = g->neurons[i].depth;
    }
    /* the layers (genome.h's cut: the inputs, then a layer per run of equal
     * depth) and each neuron's layer */
    c->hd.n_layers = genome_layers_cut(c->depth, n, n_in, c->layer_start, c->layer_of);
    /* run_end[j]: the first dense index deeper than j (the sort is done with
     * tmp), what nn_compile_is_recurrent() compares with */
    c->run_end = c->tmp;
    genome_depth_run_ends(c->depth, n, c->run_end);
    id_table_renumber(&c->ids, c->new_of);
    c->work += 2 * n + (c->ids.direct ? (size_t)c->ids.max_id + 1 : (size_t)c->ids.mask + 1);
    return 0;
}
