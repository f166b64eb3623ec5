/* lookup.c -- finding genes in a genome (genome.h): a neuron by id and a
 * connection by key (binary search over the canonical order), an id map for
 * many lookups, and the default size limits. The genome's parts (conv.c,
 * delay.c) and the whole (genome.c) both stand on this file. */
#include "lookup.h"

#include <stdlib.h>
#include <string.h>

const struct genome_limits genome_default_limits = {GENOME_DEFAULT_MAX_NEURONS,
                                                    GENOME_DEFAULT_MAX_CONNS};

size_t genome_neuron_lower(const struct genome *g, uint32_t id)
{
    return tv_lower_u32(g->neurons, sizeof *g->neurons, offsetof(struct genome_neuron, id), 0,
                        g->n_neurons, id);
}

size_t genome_conn_lower(const struct genome *g, uint32_t from, uint32_t to)
{
    const struct genome_conn key = {from, to, 0.0f};
    size_t lo = 0, hi = g->n_conns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (genome_conn_cmp(&g->conns[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

ptrdiff_t genome_find_neuron(const struct genome *g, uint32_t id)
{
    size_t i = genome_neuron_lower(g, id);
    return i < g->n_neurons && g->neurons[i].id == id ? (ptrdiff_t)i : -1;
}

ptrdiff_t genome_find_conn(const struct genome *g, uint32_t from, uint32_t to)
{
    size_t i = genome_conn_lower(g, from, to);
    return i < g->n_conns && g->conns[i].from == from && g->conns[i].to == to ? (ptrdiff_t)i : -1;
}

static size_t idmap_slot(uint32_t id, size_t mask)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
}

int genome_idmap_build(struct genome_idmap *m, const struct genome *g)
{
    size_t cap = 16;
    while (cap < 2 * g->n_neurons)
        cap *= 2;
    m->mask = cap - 1;
    m->ids = malloc(cap * sizeof *m->ids);
    m->idx = malloc(cap * sizeof *m->idx);
    if (!m->ids || !m->idx) {
        genome_idmap_free(m);
        return TV_ENOMEM;
    }
    memset(m->ids, 0xff, cap * sizeof *m->ids);
    for (size_t i = 0; i < g->n_neurons; i++) {
        uint32_t id = g->neurons[i].id;
        if (id == GENOME_ID_NONE)
            continue;
        size_t s = idmap_slot(id, m->mask);
        while (m->ids[s] != GENOME_ID_NONE && m->ids[s] != id)
            s = (s + 1) & m->mask;
        if (m->ids[s] == GENOME_ID_NONE) {
            m->ids[s] = id;
            m->idx[s] = (uint32_t)i;
        }
    }
    return 0;
}

ptrdiff_t genome_idmap_find(const struct genome_idmap *m, uint32_t id)
{
    if (id == GENOME_ID_NONE)
        return -1;
    for (size_t s = idmap_slot(id, m->mask);; s = (s + 1) & m->mask) {
        if (m->ids[s] == id)
            return m->idx[s];
        if (m->ids[s] == GENOME_ID_NONE)
            return -1;
    }
}

void genome_idmap_free(struct genome_idmap *m)
{
    free(m->ids);
    free(m->idx);
    m->ids = m->idx = NULL;
}
