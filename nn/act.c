/* act.c -- the activation functions, all in one table. Adding one: write its
 * function below, add its id to enum genome_act, add one line to nn_acts. */
#include <assert.h>
#include <math.h>

#include "nn_impl.h"

static inline float act_identity(float x)
{
    return x;
}

static inline float act_relu(float x)
{
    return x > 0.0f ? x : 0.0f;
}

static inline float act_tanh(float x)
{
    return tanhf(x);
}

static inline float act_sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

static inline float act_neat_sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-4.9f * x));
}

static inline float act_gauss(float x)
{
    return expf(-(x * x));
}

static inline float act_sin(float x)
{
    return sinf(x);
}

static inline float act_abs(float x)
{
    return fabsf(x);
}

static inline float act_step(float x)
{
    return x > 0.0f ? 1.0f : 0.0f;
}

/* The row version of each: a plain loop the compiler can vectorize when the
 * function is cheap. Same bits as calling the scalar one on each value. */
#define NN_ROW(name)                                                                               \
    static void row_##name(float *v, size_t n)                                                     \
    {                                                                                              \
        for (size_t i = 0; i < n; i++)                                                             \
            v[i] = act_##name(v[i]);                                                               \
    }
NN_ROW(identity)
NN_ROW(relu)
NN_ROW(tanh)
NN_ROW(sigmoid)
NN_ROW(neat_sigmoid)
NN_ROW(gauss)
NN_ROW(sin)
NN_ROW(abs)
NN_ROW(step)

#define NN_ACT(id, name, zeros) [id] = {act_##name, row_##name, zeros}

const struct nn_act_entry nn_acts[] = {
    NN_ACT(GENOME_ACT_IDENTITY, identity, 0),
    NN_ACT(GENOME_ACT_RELU, relu, 1),
    NN_ACT(GENOME_ACT_TANH, tanh, 0),
    NN_ACT(GENOME_ACT_SIGMOID, sigmoid, 0),
    NN_ACT(GENOME_ACT_NEAT_SIGMOID, neat_sigmoid, 0),
    NN_ACT(GENOME_ACT_GAUSS, gauss, 0),
    NN_ACT(GENOME_ACT_SIN, sin, 0),
    NN_ACT(GENOME_ACT_ABS, abs, 0),
    NN_ACT(GENOME_ACT_STEP, step, 1),
};
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
