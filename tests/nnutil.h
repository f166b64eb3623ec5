/* nnutil.h -- what the tests of the engine's plans share (test_export,
 * test_quant): whether this CPU runs a target. Include after testutil.h. */
#ifndef TREVO_NNUTIL_H
#define TREVO_NNUTIL_H

#include "nn.h"

/* Whether this CPU runs target t for plan p. */
static inline int tu_target_runs(const struct nn_plan *p, int t)
{
    struct tv_error err = {0};
    struct nn_state *s;
    assert_ok(nn_state_new(p, 1, &s, &err), &err);
    int ok = nn_state_set_target(s, t, &(struct tv_error){0}) == 0;
    nn_state_free(s);
    return ok;
}

#endif
