/* calib.c -- calibration (quant.h, nn_calib_*): the float network's plan
 * with the observing op (observe.c) after its own, run by the float engine
 * on the caller's rows. */
#include <stdlib.h>
#include <string.h>

#include "calib.h"

int nn_calib_new(const struct genome *g, const struct nn_quant_opts *o, struct nn_calib **out,
                 struct tv_error *err)
{
    *out = NULL;
    double pct = o ? o->percentile : 0.0;
    if (!(pct >= 0.0 && pct <= 100.0))
        return tv_error_set(err, TV_EINVAL, "calibration: percentile %g is not in [0, 100]", pct);
    struct nn_opts opts = {.way = NN_WAY_GATHER, .tile_neurons = SIZE_MAX};
    struct nn_plan *fp;
    int rc = nn_no_spiking(g, "calibration", "int8", err);
    if (!rc)
        rc = nn_plan_compile(g, &opts, &fp, err);
    if (rc)
        return rc;
    if (fp->conv) /* the channels' pre-activations: observe reads them */
        nn_conv_net_keep_pre(fp->conv);
    struct nn_calib *c = calloc(1, sizeof *c);
    size_t nl = fp->n_layers;
    if (c) {
        c->fp = fp;
        c->ops = calloc(fp->n_ops + 1, sizeof *c->ops);
        c->post = calloc(nl, sizeof *c->post);
        c->pre = calloc(nl, sizeof *c->pre);
    }
    if (!c || !c->ops || !c->post || !c->pre)
        goto nomem;
    c->percentile = pct;
    if (pct > 0.0 && pct < 100.0) {
        /* at most about 2^24 kept values in all */
        size_t cap = ((size_t)1 << 23) / nl + 256;
        cap = cap < NN_CALIB_SAMPLES ? cap : NN_CALIB_SAMPLES;
        for (size_t l = 0; l < nl; l++) {
            c->post[l].cap = c->pre[l].cap = cap;
            c->post[l].samp = malloc(cap * sizeof(float));
            c->pre[l].samp = malloc(cap * sizeof(float));
            if (!c->post[l].samp || !c->pre[l].samp)
                goto nomem;
        }
    }
    memcpy(c->ops, fp->ops, fp->n_ops * sizeof *c->ops);
    c->ops[fp->n_ops] = (struct nn_op){NN_OP_OBSERVE, 0, (uint32_t)nl, 0};
    c->plan = *fp;
    c->plan.ops = c->ops;
    c->plan.n_ops = fp->n_ops + 1;
    *out = c;
    return 0;
nomem:
    if (!c)
        nn_plan_free(fp);
    nn_calib_free(c);
    return tv_error_set(err, TV_ENOMEM, "calibration: out of memory");
}

void nn_calib_free(struct nn_calib *c)
{
    if (!c)
        return;
    for (size_t l = 0; c->fp && l < c->fp->n_layers; l++) {
        if (c->post)
            free(c->post[l].samp);
        if (c->pre)
            free(c->pre[l].samp);
    }
    TV_FREE_ALL(c->post, c->pre, c->ops);
    nn_plan_free(c->fp);
    free(c);
}

const struct nn_plan *nn_calib_plan(const struct nn_calib *c)
{
    return &c->plan;
}

size_t nn_calib_n_observed(const struct nn_calib *c)
{
    return (size_t)c->observed;
}

int nn_calib_run(struct nn_calib *c, const float *rows, size_t n_rows, size_t reset_every,
                 struct tv_error *err)
{
    struct nn_state *s;
    int rc = nn_state_new(&c->plan, 1, &s, err);
    if (rc)
        return rc;
    for (size_t r = 0; r < n_rows; r++) {
        if (reset_every && r % reset_every == 0)
            nn_state_reset(s);
        nn_step(s, rows + r * c->plan.n_in, NULL);
    }
    nn_state_free(s);
    return 0;
}
