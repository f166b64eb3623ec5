/*
 * conv_genes.h -- inside genome/ only: the canonical order of a filter's
 * coefficients, which conv.c (the convolutional genes) keeps and
 * conv_evolve.c (their mutation and crossover) relies on.
 */
#ifndef TREVO_GENOME_CONV_GENES_H
#define TREVO_GENOME_CONV_GENES_H

#include "genome.h"

/* qsort's order of two struct genome_coef: by ky, then kx. */
int genome_coef_cmp(const void *a, const void *b);
/* Sorts filter f's coefficients; TV_EINVAL naming a repeat. */
int genome_sort_coefs(struct genome *g, const struct genome_filter *f, struct tv_error *err);

#endif
