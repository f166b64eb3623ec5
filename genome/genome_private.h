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

#endif
