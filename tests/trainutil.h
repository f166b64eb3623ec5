/* trainutil.h -- what the tests of the trainer share (test_train,
 * test_sparsify, test_fit, test_cnn): its options and a trainer, each in one
 * call. Include after testutil.h. */
#ifndef TREVO_TRAINUTIL_H
#define TREVO_TRAINUTIL_H

#include "train.h"

/* The default options with the optimizer, the learning rate and the largest
 * batch set. */
static inline struct nn_train_opts tu_train_opts(int optimizer, float lr, size_t max_batch)
{
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    o.optimizer = optimizer;
    o.lr = lr;
    o.max_batch = max_batch;
    return o;
}

/* A trainer of g with the options o (its creation asserted). */
static inline struct nn_trainer *tu_trainer(const struct genome *g, const struct nn_train_opts *o)
{
    struct nn_trainer *t = NULL;
    struct tv_error err = {0};
    assert_ok(nn_trainer_new(g, o, &t, &err), &err);
    return t;
}

#endif
