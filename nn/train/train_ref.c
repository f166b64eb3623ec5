/* train_ref.c -- nn_reference_grad (train.h): the reference trainer, a plain
 * loop over the genome's triplets in double, sample by sample. Obviously
 * correct and slow (O(neurons * connections) per step): for tests.
 *
 * Each step that carries a target is back-propagated on its own, over the
 * window of bptt steps that ends at it (the whole sequence when bptt is 0),
 * and the gradients of all of them are added: the definition of truncated
 * back-propagation through time, with no sharing of work between windows.
 * nn_reference_last_step adds up, over the same windows, dL/dz of every
 * neuron and dL/d(value) of every input at the last step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"
#include "train.h"

static double act_d(int act, double x)
{
    switch (act) {
    case GENOME_ACT_RELU:
        return x > 0 ? x : 0;
    case GENOME_ACT_TANH:
        return tanh(x);
    case GENOME_ACT_SIGMOID:
        return 1 / (1 + exp(-x));
    case GENOME_ACT_NEAT_SIGMOID:
        return 1 / (1 + exp(-4.9 * x));
    case GENOME_ACT_GAUSS:
        return exp(-x * x);
    case GENOME_ACT_SIN:
        return sin(x);
    case GENOME_ACT_ABS:
        return fabs(x);
    case GENOME_ACT_STEP:
        return x > 0 ? 1 : 0;
    default:
        return x;
    }
}

/* d act / dx at x, where y = act(x) */
static double act_deriv_d(int act, double x, double y)
{
    switch (act) {
    case GENOME_ACT_RELU:
        return x > 0 ? 1 : 0;
    case GENOME_ACT_TANH:
        return 1 - y * y;
    case GENOME_ACT_SIGMOID:
        return y * (1 - y);
    case GENOME_ACT_NEAT_SIGMOID:
        return 4.9 * y * (1 - y);
    case GENOME_ACT_GAUSS:
        return -2 * x * y;
    case GENOME_ACT_SIN:
        return cos(x);
    case GENOME_ACT_ABS:
        return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case GENOME_ACT_STEP:
        return 0;
    default:
        return 1;
    }
}

struct ref {
    const struct genome *g;
    size_t n, m, steps, n_in, n_out;
    uint32_t *order;         /* [n] genome indices in evaluation order (nn_reference_order) */
    size_t *in_of, *out_of;  /* [n_in], [n_out] genome indices */
    size_t *from, *to;       /* [m] genome indices of each connection's ends */
    double *z, *y, *dy, *dl; /* [steps][n]; dl: [steps][n_out] dloss/doutput */
    /* nn_reference_last_step's sums ([n][batch], NULL when not asked for)
     * and the sample b they are at */
    double *last_delta, *last_dx;
    size_t batch, b;
};

static int ff(const struct ref *r, size_t c)
{
    return r->g->neurons[r->from[c]].depth < r->g->neurons[r->to[c]].depth;
}

/* The source value that connection c reads at step s. */
static double src_value(const struct ref *r, size_t c, size_t s)
{
    if (ff(r, c))
        return r->y[s * r->n + r->from[c]];
    return s > 0 ? r->y[(s - 1) * r->n + r->from[c]] : 0.0;
}

static void forward(struct ref *r, const float *x, size_t b, size_t batch)
{
    const struct genome *g = r->g;
    for (size_t s = 0; s < r->steps; s++) {
        for (size_t k = 0; k < r->n_in; k++)
            r->y[s * r->n + r->in_of[k]] = x[(s * batch + b) * r->n_in + k];
        for (size_t q = r->n_in; q < r->n; q++) {
            size_t i = r->order[q];
            double z = g->neurons[i].bias;
            for (size_t c = 0; c < r->m; c++)
                if (r->to[c] == i)
                    z += (double)g->conns[c].weight * src_value(r, c, s);
            r->z[s * r->n + i] = z;
            r->y[s * r->n + i] = act_d(g->neurons[i].act, z);
        }
    }
}

/* The loss of sample b at step s into *loss, its gradient into dl[s]; 0 if
 * the step carries no target. */
static int step_loss(struct ref *r, int loss, const uint32_t *labels, const float *targets,
                     size_t s, size_t b, size_t batch, double *sum)
{
    const double *ys = r->y + s * r->n;
    double *dl = r->dl + s * r->n_out;
    size_t no = r->n_out;
    if (loss == NN_LOSS_XENT) {
        uint32_t lab = labels[s * batch + b];
        if (lab == UINT32_MAX)
            return 0;
        double mx = -INFINITY, z = 0;
        for (size_t k = 0; k < no; k++)
            mx = fmax(mx, ys[r->out_of[k]]);
        for (size_t k = 0; k < no; k++)
            z += exp(ys[r->out_of[k]] - mx);
        *sum += mx + log(z) - ys[r->out_of[lab]];
        for (size_t k = 0; k < no; k++)
            dl[k] = (exp(ys[r->out_of[k]] - mx) / z - (k == lab)) / (double)batch;
        return 1;
    }
    for (size_t k = 0; k < no; k++) {
        double e = ys[r->out_of[k]] - targets[(s * batch + b) * no + k];
        *sum += e * e / (double)no;
        dl[k] = 2 * e / (double)no / (double)batch;
    }
    return 1;
}

/* Back-propagates the loss of step t0 over steps [lo, t0]. */
static void backward(struct ref *r, size_t lo, size_t t0, double *grad, double *bias_grad)
{
    const struct genome *g = r->g;
    size_t n = r->n;
    for (size_t s = lo; s <= t0; s++)
        memset(r->dy + s * n, 0, n * sizeof *r->dy);
    for (size_t k = 0; k < r->n_out; k++)
        r->dy[t0 * n + r->out_of[k]] = r->dl[t0 * r->n_out + k];
    int last = r->last_delta || r->last_dx;
    for (size_t s = t0 + 1; s-- > lo;) {
        /* dy becomes delta = dL/dz, deepest first; an input's (when asked
         * for) stays dL/d(its value) */
        for (size_t q = n; q-- > (last ? 0 : r->n_in);) {
            size_t i = r->order[q];
            double d = r->dy[s * n + i];
            for (size_t c = 0; c < r->m; c++) {
                if (r->from[c] != i)
                    continue;
                if (ff(r, c))
                    d += (double)g->conns[c].weight * r->dy[s * n + r->to[c]];
                else if (s < t0)
                    d += (double)g->conns[c].weight * r->dy[(s + 1) * n + r->to[c]];
            }
            if (q < r->n_in)
                r->dy[s * n + i] = d;
            else
                r->dy[s * n + i] =
                    d * act_deriv_d(g->neurons[i].act, r->z[s * n + i], r->y[s * n + i]);
        }
        if (last && s + 1 == r->steps)
            for (size_t i = 0, k = 0; i < n; i++) {
                double d = r->dy[s * n + i];
                if (g->neurons[i].kind != GENOME_INPUT && r->last_delta)
                    r->last_delta[i * r->batch + r->b] += d;
                else if (g->neurons[i].kind == GENOME_INPUT && r->last_dx)
                    r->last_dx[k * r->batch + r->b] += d;
                k += g->neurons[i].kind == GENOME_INPUT;
            }
        for (size_t c = 0; c < r->m; c++)
            grad[c] += r->dy[s * n + r->to[c]] * src_value(r, c, s);
        for (size_t i = 0; i < n; i++)
            if (g->neurons[i].kind != GENOME_INPUT)
                bias_grad[i] += r->dy[s * n + i];
    }
}

/* nn_reference_grad, and when last_value, last_delta or last_dx is not
 * NULL, nn_reference_last_step's sums. */
static int ref_run(const char *fn, const struct genome *g, int loss, const float *x,
                   const uint32_t *labels, const float *targets, size_t steps, size_t batch,
                   size_t bptt, double *loss_out, double *grad, double *bias_grad,
                   double *last_value, double *last_delta, double *last_dx, struct tv_error *err)
{
    int rc = nn_no_channels(g, fn, err);
    if (rc || (rc = genome_validate(g, NULL, err)))
        return rc;
    for (size_t i = 0; i < g->n_neurons; i++)
        if (nn_model_check(&g->neurons[i], 0, "the trainer", err))
            return TV_EINVAL;
    if (!x || steps == 0 || batch == 0 || (loss == NN_LOSS_XENT && !labels) ||
        (loss == NN_LOSS_MSE && !targets) || (loss != NN_LOSS_XENT && loss != NN_LOSS_MSE))
        return tv_error_set(err, TV_EINVAL, "%s: missing array, no step or sample, or unknown loss",
                            fn);
    struct ref r = {0};
    r.g = g;
    r.n = g->n_neurons;
    r.m = g->n_conns;
    r.steps = steps;
    r.n_in = genome_count_kind(g, GENOME_INPUT);
    r.n_out = genome_count_kind(g, GENOME_OUTPUT);
    r.last_delta = last_delta;
    r.last_dx = last_dx;
    r.batch = batch;
    if (loss == NN_LOSS_XENT)
        for (size_t q = 0; q < steps * batch; q++)
            if (labels[q] != UINT32_MAX && labels[q] >= r.n_out)
                return tv_error_set(err, TV_EINVAL, "%s: label %u outside [0, %zu)", fn, labels[q],
                                    r.n_out);
    size_t sn = steps * r.n;
    r.order = malloc(r.n * sizeof *r.order);
    r.in_of = malloc(r.n_in * sizeof *r.in_of);
    r.out_of = malloc(r.n_out * sizeof *r.out_of);
    r.from = malloc((r.m + 1) * sizeof *r.from);
    r.to = malloc((r.m + 1) * sizeof *r.to);
    r.z = malloc(sn * sizeof *r.z);
    r.y = malloc(sn * sizeof *r.y);
    r.dy = malloc(sn * sizeof *r.dy);
    r.dl = malloc(steps * r.n_out * sizeof *r.dl);
    if (!r.order || !r.in_of || !r.out_of || !r.from || !r.to || !r.z || !r.y || !r.dy || !r.dl) {
        rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory", fn);
        goto done;
    }
    size_t ki = 0, ko = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (g->neurons[i].kind == GENOME_INPUT)
            r.in_of[ki++] = i;
        else if (g->neurons[i].kind == GENOME_OUTPUT)
            r.out_of[ko++] = i;
    }
    if ((rc = nn_reference_order(g, r.order, fn, err)))
        goto done;
    for (size_t c = 0; c < r.m; c++) {
        r.from[c] = (size_t)genome_find_neuron(g, g->conns[c].from);
        r.to[c] = (size_t)genome_find_neuron(g, g->conns[c].to);
    }
    memset(grad, 0, r.m * sizeof *grad);
    memset(bias_grad, 0, r.n * sizeof *bias_grad);
    if (last_delta)
        memset(last_delta, 0, r.n * batch * sizeof *last_delta);
    if (last_dx)
        memset(last_dx, 0, r.n_in * batch * sizeof *last_dx);
    double sum = 0;
    for (size_t b = 0; b < batch; b++) {
        r.b = b;
        forward(&r, x, b, batch);
        for (size_t i = 0; last_value && i < r.n; i++)
            last_value[i * batch + b] = r.y[(steps - 1) * r.n + i];
        for (size_t t0 = 0; t0 < steps; t0++)
            if (step_loss(&r, loss, labels, targets, t0, b, batch, &sum))
                backward(&r, bptt && t0 + 1 > bptt ? t0 + 1 - bptt : 0, t0, grad, bias_grad);
    }
    if (loss_out)
        *loss_out = sum / (double)batch;
done:
    TV_FREE_ALL(r.order, r.in_of, r.out_of, r.from, r.to, r.z, r.y, r.dy, r.dl);
    return rc;
}

int nn_reference_grad(const struct genome *g, int loss, const float *x, const uint32_t *labels,
                      const float *targets, size_t steps, size_t batch, size_t bptt,
                      double *loss_out, double *grad, double *bias_grad, struct tv_error *err)
{
    return ref_run("nn_reference_grad", g, loss, x, labels, targets, steps, batch, bptt, loss_out,
                   grad, bias_grad, NULL, NULL, NULL, err);
}

int nn_reference_last_step(const struct genome *g, int loss, const float *x, const uint32_t *labels,
                           const float *targets, size_t steps, size_t batch, size_t bptt,
                           double *value, double *delta, double *dx, struct tv_error *err)
{
    double *grad = malloc((g->n_conns + 1) * sizeof *grad);
    double *bias_grad = malloc((g->n_neurons + 1) * sizeof *bias_grad);
    int rc = grad && bias_grad
                 ? ref_run("nn_reference_last_step", g, loss, x, labels, targets, steps, batch,
                           bptt, NULL, grad, bias_grad, value, delta, dx, err)
                 : tv_error_set(err, TV_ENOMEM, "nn_reference_last_step: out of memory");
    TV_FREE_ALL(grad, bias_grad);
    return rc;
}
