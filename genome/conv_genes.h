/*
 * conv_genes.h -- inside genome/ only: the canonical order of a filter's
 * coefficients, which conv.c (the convolutional genes) keeps and
 * conv_evolve.c (their mutation and crossover) relies on, and the copy,
 * comparison and sort of the convolutional genes that genome.c and text.c use.
 */
#ifndef TREVO_GENOME_CONV_GENES_H
#define TREVO_GENOME_CONV_GENES_H

#include "genome.h"

/* qsort's order of two struct genome_coef: by ky, then kx. */
int genome_coef_cmp(const void *a, const void *b);
/* Sorts filter f's coefficients; TV_EINVAL naming a repeat. */
int genome_sort_coefs(struct genome *g, const struct genome_filter *f, struct tv_error *err);
/* The convolutional genes of src into dst (its others untouched); 1 when
 * a's and b's are the same (bitwise on floats). Used by genome_copy() and
 * genome_equal(). */
int genome_copy_conv(struct genome *dst, const struct genome *src, struct tv_error *err);
int genome_equal_conv(const struct genome *a, const struct genome *b);
/* Sorts channels by id and filters by key (with their coefficients),
 * repacking the coefficients; TV_EINVAL naming the first repeated key. */
int genome_conv_canonicalize(struct genome *g, struct tv_error *err);

#endif
