/* sparsify_impl.h -- private to nn/train/: what the sparsifier
 * (sparsifier.c) takes from the files below it: the policies' table and
 * range check (sparsify_parse.c) and the emptying of a set
 * (sparsify_lock.c). The files call down: sparsifier.c calls the parser,
 * the rules (sparsify_rules.c), the lock set and rigl's selection
 * (sparsify_rigl.c); none of those calls another.
 */
#ifndef TREVO_NN_SPARSIFY_IMPL_H
#define TREVO_NN_SPARSIFY_IMPL_H

#include <stddef.h>

#include "sparsify.h"

/* One row per kind: its name, the form shown in messages, its parameters. */
struct nn_sparsity_info {
    const char *name;
    const char *form;
    size_t min_args, max_args;
};
/* Indexed by enum nn_sparsity_kind. */
extern const struct nn_sparsity_info nn_sparsity_kinds[NN_SPARSE_COUNT];

/* The ranges of sparsify.h for the n parameters v of kind (a valid kind):
 * 0, or TV_EINVAL "spec: what is wrong". */
int nn_sparsity_check_args(const char *spec, int kind, const double *v, size_t n,
                           struct tv_error *err);

/* Empties l, keeping room for `need` entries (its memory when it has
 * enough). 0 or TV_ENOMEM. */
int nn_sparsify_lock_reset(struct nn_sparsify_lock *l, size_t need, struct tv_error *err);

#endif
