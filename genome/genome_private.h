/* genome_private.h -- helpers shared by the files of genome/ only. No other
 * folder includes this header. */
#ifndef TREVO_GENOME_PRIVATE_H
#define TREVO_GENOME_PRIVATE_H

#include "genome.h"

/* Sorted distinct depths of g into *out (malloc'd, caller frees); returns
 * their count, or (size_t)-1 when out of memory. */
size_t genome_layers(const struct genome *g, float **out);
/* Index of `depth` in a sorted list of n distinct depths (lower bound). */
size_t genome_layer_of(const float *layers, size_t n, float depth);

/* An open-addressing map from neuron id to index in g->neurons, for O(1)
 * lookups over large genomes (ids from splits are sparse 32-bit hashes). */
struct genome_idmap {
    uint32_t *ids; /* [mask + 1], GENOME_ID_NONE marks an empty slot */
    uint32_t *idx; /* [mask + 1] */
    size_t mask;
};
/* 0 or TV_ENOMEM. Later duplicates of an id are ignored. */
int genome_idmap_build(struct genome_idmap *m, const struct genome *g);
ptrdiff_t genome_idmap_find(const struct genome_idmap *m, uint32_t id);
void genome_idmap_free(struct genome_idmap *m);

#endif
