/* act.c -- the activation functions, all in one table. Their formulas live in
 * act.def (which says why), compiled here into the functions the engine calls.
 * Adding one: its id in enum genome_act, its line in act.def. */
#include <assert.h>
#include <math.h>

#include "nn_impl.h"

/* act_NAME(x): the body of its act.def line. */
#define NN_ACT(id, name, makes_zeros, needs_libm, ...)                                             \
    static inline float act_##name(float x)                                                        \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }
#include "act.def"
#undef NN_ACT

/* The row version of each: a plain loop the compiler can vectorize when the
 * function is cheap. Same bits as calling the scalar one on each value. */
#define NN_ACT(id, name, makes_zeros, needs_libm, ...)                                             \
    static void row_##name(float *v, size_t n)                                                     \
    {                                                                                              \
        for (size_t i = 0; i < n; i++)                                                             \
            v[i] = act_##name(v[i]);                                                               \
    }
#include "act.def"
#undef NN_ACT

#define NN_ACT(id, name, makes_zeros, needs_libm, ...) [id] = {act_##name, row_##name, makes_zeros},
const struct nn_act_entry nn_acts[] = {
#include "act.def"
};
#undef NN_ACT
static_assert(sizeof nn_acts / sizeof nn_acts[0] == GENOME_ACT_COUNT,
              "one nn_acts entry per enum genome_act");

float nn_act_apply(int act, float x)
{
    if (act < 0 || act >= GENOME_ACT_COUNT)
        return x;
    return nn_acts[act].one(x);
}

int nn_act_makes_zeros(int act)
{
    return act >= 0 && act < GENOME_ACT_COUNT && nn_acts[act].makes_zeros;
}
