/* trainutil.h -- what the tests of the trainer share (test_train,
 * test_sparsify, test_fit, test_cnn): its options and a trainer, each in one
 * call. Include after testutil.h. */
#ifndef TREVO_TRAINUTIL_H
#define TREVO_TRAINUTIL_H

#include "train.h"

/* The default options with the largest batch set. */
static inline struct nn_train_opts tu_batch_opts(size_t max_batch)
{
    struct nn_train_opts o;
    nn_train_opts_default(&o);
    o.max_batch = max_batch;
    return o;
}

/* The default options with the optimizer, the learning rate and the largest
 * batch set. */
static inline struct nn_train_opts tu_train_opts(int optimizer, float lr, size_t max_batch)
{
    struct nn_train_opts o = tu_batch_opts(max_batch);
    o.optimizer = optimizer;
    o.lr = lr;
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

/* The view v of a trainer holds exactly the connections of g, each with g's
 * weight. */
static inline void tu_expect_view_of(const struct nn_train_view *v, const struct genome *g)
{
    assert_int_equal(v->n_conns, g->n_conns);
    for (size_t k = 0; k < v->n_conns; k++) {
        ptrdiff_t i = genome_find_conn(g, v->from[k], v->to[k]);
        assert_true(i >= 0);
        assert_true(g->conns[i].weight == v->w[k]);
    }
}

#endif
