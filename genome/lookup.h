/*
 * lookup.h -- inside genome/ only: where a gene goes in the canonical order
 * (lookup.c), for the functions that insert one.
 */
#ifndef TREVO_GENOME_LOOKUP_H
#define TREVO_GENOME_LOOKUP_H

#include "genome.h"

/* The first index whose neuron id is >= id. */
size_t genome_neuron_lower(const struct genome *g, uint32_t id);
/* The first index whose connection key is >= (from, to). */
size_t genome_conn_lower(const struct genome *g, uint32_t from, uint32_t to);

#endif
