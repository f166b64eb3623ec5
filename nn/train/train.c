/* train.c -- the trainer (train.h): its compiled form (train_impl.h), the
 * checks of a batch, the optimizers, the view and the way back to a genome.
 * The kernels are in train_kern.c, the physical removal and addition of
 * connections and neurons in train_edit.c (which calls this file, never the
 * other way), the loss in loss.c, the reference trainer in train_ref.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "train_impl.h"

void nn_train_opts_default(struct nn_train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->optimizer = NN_OPT_SGD;
    o->loss = NN_LOSS_XENT;
    o->lr = 0.01f;
    o->momentum = 0.9f;
    o->beta1 = 0.9f;
    o->beta2 = 0.999f;
    o->eps = 1e-8f;
    o->max_batch = 128;
    o->bptt = 0;
}

int nn_trainer_set_lr(struct nn_trainer *t, float lr, struct tv_error *err)
{
    if (!isfinite(lr) || lr < 0)
        return tv_error_set(err, TV_EINVAL, "nn_trainer_set_lr: %g is not a rate (finite, >= 0)",
                            (double)lr);
    t->o.lr = lr;
    return 0;
}

float nn_trainer_lr(const struct nn_trainer *t)
{
    return t->o.lr;
}

float nn_lr_at(float lr, int schedule, uint64_t step, uint64_t total)
{
    if (schedule != NN_LR_COSINE || total == 0)
        return lr;
    double f = 0.5 * (1.0 + cos(M_PI * (double)step / (double)total));
    return (float)((double)lr * f);
}

static const char *const lr_schedule_names[] = {"none", "cosine"};

int nn_lr_schedule_parse(const char *s)
{
    for (int k = 0; k < (int)(sizeof lr_schedule_names / sizeof lr_schedule_names[0]); k++)
        if (!strcmp(s, lr_schedule_names[k]))
            return k;
    return -1;
}

const char *nn_lr_schedule_name(int schedule)
{
    return schedule >= 0 && schedule < (int)(sizeof lr_schedule_names / sizeof lr_schedule_names[0])
               ? lr_schedule_names[schedule]
               : "?";
}

int nn_trainer_set_target(struct nn_trainer *t, int target, struct tv_error *err)
{
    if (target < 0 || target >= NN_TARGET_COUNT || !nn_target_supported(target))
        return tv_error_set(err, TV_EINVAL,
                            "nn_trainer_set_target: target %d is unknown or this CPU cannot run it",
                            target);
    t->target = target;
    return 0;
}

/* ---- life cycle ------------------------------------------------------------ */

static void *alloc_floats(size_t n)
{
    /* 64-byte aligned, for the kernels' vectors; n * 4 a multiple of 64 */
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

void nn_trainer_free(struct nn_trainer *t)
{
    if (!t)
        return;
    genome_release(&t->scale);
    TV_FREE_ALL(t->id, t->kind, t->act, t->layer, t->depth, t->bias, t->bias_grad, t->bias_m,
                t->bias_v, t->run_end, t->oslot, t->out_map, t->by_id, t->seen, t->row, t->rec,
                t->src, t->dst, t->w, t->grad, t->om, t->ov, t->t_row, t->t_rec, t->t_pos, t->t_cur,
                t->f_pos, t->f_split, t->scat, t->wt_w, t->wt_dst, t->wt_row, t->wt_rec, t->v_from,
                t->v_to, t->v_value, t->v_delta, t->z, t->y, t->lossg, t->delta, t->dy, t->tgt,
                t->out_row, t);
}

/* The counts: inputs and outputs are fixed at nn_trainer_new (only hidden
 * neurons are ever removed), connections and steps change. */
size_t nn_trainer_n_inputs(const struct nn_trainer *t)
{
    return t->n_in;
}
size_t nn_trainer_n_outputs(const struct nn_trainer *t)
{
    return t->n_out;
}
size_t nn_trainer_n_conns(const struct nn_trainer *t)
{
    return t->m;
}
uint64_t nn_trainer_steps(const struct nn_trainer *t)
{
    return t->n_steps;
}

/* Lays out the connections by source (pos, the index map) or copies W by
 * source (wo, dso: NN_TRANSPOSE_BUILD): starts trow[n + 1], trec[n]; cur is
 * scratch [2n]. O(n + m). */
static void by_source(const struct nn_trainer *t, uint32_t *trow, uint32_t *trec, uint32_t *cur,
                      uint32_t *pos, float *wo, uint32_t *dso)
{
    size_t n = t->n;
    memset(cur, 0, 2 * n * sizeof *cur);
    for (size_t j = 0; j < n; j++) {
        for (uint32_t k = t->row[j]; k < t->rec[j]; k++)
            cur[t->src[k]]++;
        for (uint32_t k = t->rec[j]; k < t->row[j + 1]; k++)
            cur[n + t->src[k]]++;
    }
    uint32_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        trow[i] = acc;
        trec[i] = acc + cur[i];
        acc += cur[i] + cur[n + i];
        cur[i] = trow[i];
        cur[n + i] = trec[i];
    }
    trow[n] = acc;
    for (size_t j = 0; j < n; j++)
        for (uint32_t k = t->row[j]; k < t->row[j + 1]; k++) {
            uint32_t p = cur[(k >= t->rec[j] ? n : 0) + t->src[k]]++;
            if (pos) {
                pos[p] = k;
            } else {
                wo[p] = t->w[k];
                dso[p] = t->dst[k];
            }
        }
}

void nn_tr_index_map(struct nn_trainer *t)
{
    by_source(t, t->t_row, t->t_rec, t->t_cur, t->t_pos, NULL, NULL);
    for (size_t j = 0; j < t->n; j++) {
        uint32_t q = t->row[j];
        for (int scattered = 0; scattered < 2; scattered++) {
            if (scattered)
                t->f_split[j] = q;
            for (uint32_t k = t->row[j]; k < t->rec[j]; k++)
                if (t->scat[t->src[k]] == scattered)
                    t->f_pos[q++] = k;
        }
    }
}

/* The per-connection arrays of a layout. */
struct conns {
    uint32_t *src, *dst, *pos, *fpos, *from, *to;
    float *w, *grad, *om, *ov;
};

static void conns_free(struct conns *c)
{
    TV_FREE_ALL(c->src, c->dst, c->pos, c->fpos, c->from, c->to, c->w, c->grad, c->om, c->ov);
}

static int conns_alloc(struct conns *c, size_t cap)
{
    memset(c, 0, sizeof *c);
    uint32_t **u[] = {&c->src, &c->dst, &c->pos, &c->fpos, &c->from, &c->to};
    float **f[] = {&c->w, &c->grad, &c->om, &c->ov};
    int ok = 1;
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        ok &= (*u[i] = malloc(cap * sizeof(uint32_t))) != NULL;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        ok &= (*f[i] = calloc(cap, sizeof(float))) != NULL;
    if (!ok)
        conns_free(c);
    return ok ? 0 : TV_ENOMEM;
}

int nn_tr_layout(struct nn_trainer *t, size_t m1, const struct tr_extra *x, const char *who,
                 struct tv_error *err)
{
    size_t n = t->n, m = m1 + x->n, cap = m ? m : 1;
    struct conns c;
    uint32_t *perm = malloc(cap * sizeof *perm), *cnt = calloc(2 * n + 1, sizeof *cnt);
    if (!perm || !cnt || conns_alloc(&c, cap)) {
        free(perm);
        free(cnt);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory laying out %zu connections", who, m);
    }
#define E_SRC(e) ((e) < m1 ? t->src[e] : x->src[(e)-m1])
#define E_DST(e) ((e) < m1 ? t->dst[e] : x->dst[(e)-m1])
    /* by source (stable), then into the rows by destination */
    for (size_t e = 0; e < m; e++)
        cnt[E_SRC(e) + 1]++;
    for (size_t i = 0; i < n; i++)
        cnt[i + 1] += cnt[i];
    for (size_t e = 0; e < m; e++)
        perm[cnt[E_SRC(e)]++] = (uint32_t)e;
    memset(cnt, 0, (2 * n + 1) * sizeof *cnt);
    for (size_t e = 0; e < m; e++)
        cnt[(nn_tr_is_rec(t, E_SRC(e), E_DST(e)) ? n : 0) + E_DST(e)]++;
    uint32_t acc = 0;
    for (size_t j = 0; j < n; j++) {
        uint32_t f = cnt[j], r = cnt[n + j];
        t->row[j] = acc;
        t->rec[j] = acc + f;
        cnt[j] = acc;
        cnt[n + j] = acc + f;
        acc += f + r;
    }
    t->row[n] = acc;
    for (size_t q = 0; q < m; q++) {
        size_t e = perm[q];
        uint32_t i = E_SRC(e), j = E_DST(e);
        uint32_t k = cnt[(nn_tr_is_rec(t, i, j) ? n : 0) + j]++;
        c.src[k] = i;
        c.dst[k] = j;
        if (e < m1) {
            c.w[k] = t->w[e];
            c.grad[k] = t->grad[e];
            c.om[k] = t->om[e];
            c.ov[k] = t->ov[e];
        } else {
            c.w[k] = x->w[e - m1];
        }
    }
#undef E_SRC
#undef E_DST
    free(perm);
    free(cnt);
    struct conns old = {t->src,  t->dst, t->t_pos, t->f_pos, t->v_from,
                        t->v_to, t->w,   t->grad,  t->om,    t->ov};
    conns_free(&old);
    t->src = c.src;
    t->dst = c.dst;
    t->t_pos = c.pos;
    t->f_pos = c.fpos;
    t->v_from = c.from;
    t->v_to = c.to;
    t->w = c.w;
    t->grad = c.grad;
    t->om = c.om;
    t->ov = c.ov;
    t->m = m;
    t->cap_m = cap;
    free(t->wt_w); /* NN_TRANSPOSE_BUILD's copy is made again at its size */
    free(t->wt_dst);
    t->wt_w = NULL;
    t->wt_dst = NULL;
    nn_tr_index_map(t);
    return 0;
}

void nn_tr_neuron_layers(struct nn_trainer *t)
{
    size_t n = t->n;
    t->n_layers = genome_layers_cut(t->depth, n, t->n_in, NULL, t->layer);
    genome_depth_run_ends(t->depth, n, t->run_end);
    for (size_t j0 = 0, j1; j0 < n; j0 = j1) { /* layer by layer (dense order) */
        int zeros = 1;
        for (j1 = j0; j1 < n && t->layer[j1] == t->layer[j0]; j1++)
            zeros &= nn_act_makes_zeros(t->act[j1]) != 0;
        int scat = nn_compile_default_way(t->layer[j0], zeros) == NN_WAY_SCATTER;
        memset(t->scat + j0, scat, j1 - j0);
    }
    size_t k = 0;
    for (size_t q = 0; q < n; q++) {
        uint32_t j = t->by_id[q];
        t->oslot[j] = NN_NONE;
        if (t->kind[j] == GENOME_OUTPUT) {
            t->oslot[j] = (uint32_t)k;
            t->out_map[k++] = j;
        }
    }
}

/* Room for sequences of `steps` steps. */
static int reserve_steps(struct nn_trainer *t, size_t steps, const char *who, struct tv_error *err)
{
    if (steps <= t->cap_steps)
        return 0;
    size_t per = t->n * TR_BLOCK;
    if (steps > SIZE_MAX / sizeof(float) / per / 2)
        return tv_error_set(err, TV_EINVAL, "%s: %zu steps are too many", who, steps);
    float *z = alloc_floats(steps * per), *y = alloc_floats(steps * per);
    float *lg = alloc_floats(steps * t->n_out * TR_BLOCK);
    uint8_t *tgt = malloc(steps);
    if (!z || !y || !lg || !tgt) {
        free(z);
        free(y);
        free(lg);
        free(tgt);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory for %zu steps", who, steps);
    }
    free(t->z);
    free(t->y);
    free(t->lossg);
    free(t->tgt);
    t->z = z;
    t->y = y;
    t->lossg = lg;
    t->tgt = tgt;
    t->cap_steps = steps;
    return 0;
}

static int check_opts(const struct nn_train_opts *o, struct tv_error *err)
{
    if (o->optimizer < NN_OPT_SGD || o->optimizer > NN_OPT_ADAM)
        return tv_error_set(err, TV_EINVAL, "nn_trainer_new: unknown optimizer %d", o->optimizer);
    if (o->loss < NN_LOSS_XENT || o->loss > NN_LOSS_MSE)
        return tv_error_set(err, TV_EINVAL, "nn_trainer_new: unknown loss %d", o->loss);
    if (!isfinite(o->lr) || !isfinite(o->momentum) || !isfinite(o->beta1) || !isfinite(o->beta2) ||
        !isfinite(o->eps))
        return tv_error_set(err, TV_EINVAL,
                            "nn_trainer_new: lr, momentum, beta1, beta2 and eps must be finite");
    if (o->max_batch == 0 || o->max_batch > ((size_t)1 << 24))
        return tv_error_set(err, TV_EINVAL, "nn_trainer_new: max_batch %zu outside [1, 2^24]",
                            o->max_batch);
    return 0;
}

static int alloc_neurons(struct nn_trainer *t, size_t n, size_t n_out, size_t max_batch)
{
    uint32_t **u[] = {&t->id,  &t->layer, &t->run_end, &t->oslot,  &t->by_id,  &t->row,
                      &t->rec, &t->t_row, &t->t_rec,   &t->wt_row, &t->wt_rec, &t->f_split};
    int ok = 1;
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        ok &= (*u[i] = calloc(n + 1, sizeof(uint32_t))) != NULL;
    float **f[] = {&t->depth, &t->bias, &t->bias_grad, &t->bias_m, &t->bias_v};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        ok &= (*f[i] = calloc(n, sizeof(float))) != NULL;
    ok &= (t->out_map = calloc(n_out, sizeof *t->out_map)) != NULL;
    ok &= (t->out_row = calloc(n_out, sizeof *t->out_row)) != NULL;
    ok &= (t->t_cur = calloc(2 * n, sizeof *t->t_cur)) != NULL;
    ok &= (t->kind = calloc(n, 1)) != NULL;
    ok &= (t->act = calloc(n, 1)) != NULL;
    ok &= (t->seen = calloc(n, 1)) != NULL;
    ok &= (t->scat = calloc(n, 1)) != NULL;
    ok &= (t->v_value = calloc(n * max_batch, sizeof(float))) != NULL;
    ok &= (t->v_delta = calloc(n * max_batch, sizeof(float))) != NULL;
    ok &= (t->delta = alloc_floats(2 * n * TR_BLOCK)) != NULL;
    ok &= (t->dy = alloc_floats(2 * n * TR_BLOCK)) != NULL;
    return ok ? 0 : TV_ENOMEM;
}

/* The trainer's neurons from g, in the dense order of the compile's phase 1,
 * and the dense ends of g's connections into src, dst. */
static int from_genome(struct nn_trainer *t, const struct genome *g, uint32_t *src, uint32_t *dst,
                       struct tv_error *err)
{
    struct nn_compile c = {0};
    c.g = g;
    c.err = err;
    int rc = nn_compile_check(&c);
    if (!rc)
        rc = nn_compile_order(&c);
    if (rc) {
        nn_compile_free(&c);
        return rc;
    }
    size_t n = g->n_neurons;
    t->n = n;
    t->n_in = c.hd.n_in;
    t->n_out = c.hd.n_out;
    for (size_t j = 0; j < n; j++) {
        const struct genome_neuron *u = &g->neurons[c.old_of[j]];
        t->id[j] = u->id;
        t->kind[j] = u->kind;
        t->act[j] = u->act;
        t->depth[j] = u->depth;
        t->bias[j] = u->kind == GENOME_INPUT ? 0.0f : u->bias;
    }
    for (size_t i = 0; i < n; i++)
        t->by_id[i] = c.new_of[i];
    for (size_t k = 0; k < g->n_conns; k++) {
        src[k] = (uint32_t)nn_id_find(&c.ids, g->conns[k].from);
        dst[k] = (uint32_t)nn_id_find(&c.ids, g->conns[k].to);
    }
    nn_compile_free(&c);
    nn_tr_neuron_layers(t);
    return 0;
}

int nn_trainer_new(const struct genome *g, const struct nn_train_opts *o, struct nn_trainer **out,
                   struct tv_error *err)
{
    *out = NULL;
    int rc = check_opts(o, err);
    if (rc || (rc = nn_no_channels(g, "nn_trainer_new", err)) ||
        (rc = genome_validate(g, NULL, err)))
        return rc;
    for (size_t i = 0; i < g->n_neurons; i++)
        if (nn_model_check(&g->neurons[i], 0, "the trainer", err))
            return TV_EINVAL;
    struct nn_trainer *t = calloc(1, sizeof *t);
    size_t m = g->n_conns;
    uint32_t *src = malloc((m ? m : 1) * sizeof *src), *dst = malloc((m ? m : 1) * sizeof *dst);
    float *w = malloc((m ? m : 1) * sizeof *w);
    if (!t || !src || !dst || !w ||
        alloc_neurons(t, g->n_neurons, genome_count_kind(g, GENOME_OUTPUT), o->max_batch)) {
        rc = tv_error_set(err, TV_ENOMEM, "nn_trainer_new: out of memory for %zu neurons",
                          g->n_neurons);
        goto done;
    }
    t->o = *o;
    t->target = NN_TARGET_COUNT - 1;
    while (!nn_target_supported(t->target))
        t->target--;
    t->transpose = NN_TRANSPOSE_SCATTER; /* the fastest (train.h) */
    t->keep_values = 1;
    if ((rc = from_genome(t, g, src, dst, err)) ||
        (rc = genome_set_scale(&t->scale, genome_scale_shift(g), genome_scale_mul(g), g->n_scale,
                               err)))
        goto done;
    for (size_t k = 0; k < m; k++)
        w[k] = g->conns[k].weight;
    struct tr_extra x = {m, src, dst, w};
    if ((rc = nn_tr_layout(t, 0, &x, "nn_trainer_new", err)) ||
        (rc = reserve_steps(t, 1, "nn_trainer_new", err)))
        goto done;
    *out = t;
    t = NULL;
done:
    free(src);
    free(dst);
    free(w);
    nn_trainer_free(t);
    return rc;
}

int nn_trainer_set_transpose(struct nn_trainer *t, int way, struct tv_error *err)
{
    if (way < NN_TRANSPOSE_MAP || way > NN_TRANSPOSE_BUILD)
        return tv_error_set(err, TV_EINVAL, "nn_trainer_set_transpose: unknown way %d", way);
    t->transpose = way;
    return 0;
}

/* ---- gradients and steps ---------------------------------------------------- */

static int check_batch(const struct nn_trainer *t, const char *who, const float *x, size_t steps,
                       size_t batch, struct tv_error *err)
{
    if (!x)
        return tv_error_set(err, TV_EINVAL, "%s: no inputs (x is NULL)", who);
    if (steps == 0)
        return tv_error_set(err, TV_EINVAL, "%s: a sample needs at least one step", who);
    if (batch == 0 || batch > t->o.max_batch)
        return tv_error_set(err, TV_EINVAL, "%s: batch %zu outside [1, %zu] (opts.max_batch)", who,
                            batch, t->o.max_batch);
    return 0;
}

static int check_targets(const struct nn_trainer *t, const char *who, const uint32_t *labels,
                         const float *targets, size_t steps, size_t batch, struct tv_error *err)
{
    if (t->o.loss == NN_LOSS_XENT) {
        if (!labels)
            return tv_error_set(err, TV_EINVAL, "%s: the cross-entropy loss needs labels", who);
        for (size_t s = 0; s < steps; s++)
            for (size_t b = 0; b < batch; b++) {
                uint32_t l = labels[s * batch + b];
                if (l != UINT32_MAX && l >= t->n_out)
                    return tv_error_set(err, TV_EINVAL,
                                        "%s: label %u of sample %zu at step %zu is outside "
                                        "[0, %zu) (the outputs)",
                                        who, l, b, s, t->n_out);
            }
    } else if (!targets) {
        return tv_error_set(err, TV_EINVAL, "%s: the squared-error loss needs targets", who);
    }
    return 0;
}

/* Runs the blocks of a batch (backward: with the loss and the gradients). */
static void run_blocks(struct nn_trainer *t, struct tr_block *b)
{
    for (size_t b0 = 0; b0 < b->batch; b0 += TR_BLOCK) {
        b->b0 = b0;
        b->nb = b->batch - b0 < TR_BLOCK ? b->batch - b0 : TR_BLOCK;
        b->nv = (b->nb + 15) / 16;
        nn_tr_run[t->target](t, b);
    }
}

static int grad(struct nn_trainer *t, const char *who, const float *x, const uint32_t *labels,
                const float *targets, size_t steps, size_t batch, double *loss,
                struct tv_error *err)
{
    int rc = check_batch(t, who, x, steps, batch, err);
    if (rc || (rc = check_targets(t, who, labels, targets, steps, batch, err)) ||
        (rc = reserve_steps(t, steps, who, err)))
        return rc;
    if (t->transpose == NN_TRANSPOSE_BUILD) {
        /* the copy of W by source, made at each backward pass (what this way
         * costs); its memory is kept from call to call */
        if (!t->wt_w) {
            t->wt_w = malloc(t->cap_m * sizeof *t->wt_w);
            t->wt_dst = malloc(t->cap_m * sizeof *t->wt_dst);
        }
        if (!t->wt_w || !t->wt_dst) {
            free(t->wt_w);
            free(t->wt_dst);
            t->wt_w = NULL;
            t->wt_dst = NULL;
            return tv_error_set(err, TV_ENOMEM, "%s: out of memory for the transposed copy", who);
        }
        by_source(t, t->wt_row, t->wt_rec, t->t_cur, NULL, t->wt_w, t->wt_dst);
    }
    memset(t->grad, 0, t->m * sizeof *t->grad);
    memset(t->bias_grad, 0, t->n * sizeof *t->bias_grad);
    struct tr_block b = {0};
    b.steps = steps;
    b.batch = batch;
    b.x = x;
    b.labels = t->o.loss == NN_LOSS_XENT ? labels : NULL;
    b.targets = t->o.loss == NN_LOSS_MSE ? targets : NULL;
    b.backward = 1;
    run_blocks(t, &b);
    t->v_batch = t->keep_values ? batch : 0;
    if (loss)
        *loss = b.loss / (double)batch;
    return 0;
}

int nn_trainer_grad(struct nn_trainer *t, const float *x, const uint32_t *labels,
                    const float *targets, size_t steps, size_t batch, double *loss,
                    struct tv_error *err)
{
    return grad(t, "nn_trainer_grad", x, labels, targets, steps, batch, loss, err);
}

int nn_trainer_step(struct nn_trainer *t, const float *x, const uint32_t *labels,
                    const float *targets, size_t steps, size_t batch, double *loss,
                    struct tv_error *err)
{
    int rc = grad(t, "nn_trainer_step", x, labels, targets, steps, batch, loss, err);
    if (rc)
        return rc;
    nn_trainer_update(t);
    return 0;
}

void nn_trainer_update(struct nn_trainer *t)
{
    t->n_steps++;
    float c1 = (float)(1.0 - pow((double)t->o.beta1, (double)t->n_steps));
    float c2 = (float)(1.0 - pow((double)t->o.beta2, (double)t->n_steps));
    size_t ni = t->n_in;
    nn_tr_update[t->target](&t->o, c1, c2, t->w, t->grad, t->om, t->ov, t->m);
    nn_tr_update[t->target](&t->o, c1, c2, t->bias + ni, t->bias_grad + ni, t->bias_m + ni,
                            t->bias_v + ni, t->n - ni);
}

int nn_trainer_input_grad(const struct nn_trainer *t, float *dx, struct tv_error *err)
{
    if (!t->v_batch)
        return tv_error_set(err, TV_ESTATE,
                            "nn_trainer_input_grad: no deltas kept (no grad/step call yet, or "
                            "nn_trainer_keep_values(t, 0))");
    size_t nb = t->v_batch;
    memset(dx, 0, nb * t->n_in * sizeof *dx);
    for (size_t j = t->n_in; j < t->n; j++) {
        const float *d = t->v_delta + j * nb;
        for (uint32_t k = t->row[j]; k < t->rec[j]; k++) {
            if (t->src[k] >= t->n_in)
                break; /* sorted by source: the inputs come first */
            float w = t->w[k], *dxk = dx + (size_t)t->src[k] * nb;
            for (size_t b = 0; b < nb; b++)
                dxk[b] += w * d[b];
        }
    }
    return 0;
}

int nn_trainer_predict(struct nn_trainer *t, const float *x, size_t steps, size_t batch, float *out,
                       struct tv_error *err)
{
    int rc = check_batch(t, "nn_trainer_predict", x, steps, batch, err);
    if (rc)
        return rc;
    if (!out)
        return tv_error_set(err, TV_EINVAL, "nn_trainer_predict: no output array (out is NULL)");
    if ((rc = reserve_steps(t, steps, "nn_trainer_predict", err)))
        return rc;
    struct tr_block b = {0};
    b.steps = steps;
    b.batch = batch;
    b.x = x;
    b.out = out;
    run_blocks(t, &b);
    return 0;
}

/* ---- the view ------------------------------------------------------------------ */

void nn_trainer_view(struct nn_trainer *t, struct nn_train_view *v)
{
    for (size_t k = 0; k < t->m; k++) {
        t->v_from[k] = t->id[t->src[k]];
        t->v_to[k] = t->id[t->dst[k]];
    }
    memset(v, 0, sizeof *v);
    v->n_conns = t->m;
    v->from = t->v_from;
    v->to = t->v_to;
    v->w = t->w;
    v->grad = t->grad;
    v->n_neurons = t->n;
    v->id = t->id;
    v->kind = t->kind;
    v->layer = t->layer;
    v->n_layers = t->n_layers;
    v->bias = t->bias;
    v->bias_grad = t->bias_grad;
    v->batch = t->v_batch;
    v->value = t->v_batch ? t->v_value : NULL;
    v->delta = t->v_batch ? t->v_delta : NULL;
}

void nn_trainer_keep_values(struct nn_trainer *t, int on)
{
    t->keep_values = on != 0;
    t->v_batch = 0; /* what they hold now is not the last batch's */
}

/* ---- back to a genome -------------------------------------------------------- */

int nn_trainer_write_genome(const struct nn_trainer *t, struct genome *g, struct tv_error *err)
{
    struct genome tmp;
    genome_init(&tmp);
    int rc = genome_reserve(&tmp, t->n, t->m, err);
    if (rc) {
        genome_release(&tmp);
        return tv_error_set(err, rc, "nn_trainer_write_genome: out of memory");
    }
    for (size_t r = 0; r < t->n; r++) {
        uint32_t j = t->by_id[r];
        struct genome_neuron *u = &tmp.neurons[r];
        memset(u, 0, sizeof *u);
        u->id = t->id[j];
        u->kind = t->kind[j];
        u->act = t->act[j];
        u->bias = t->bias[j];
        u->depth = t->depth[j];
        u->model = GENOME_MODEL_RATE;
    }
    tmp.n_neurons = t->n;
    for (size_t k = 0; k < t->m; k++)
        tmp.conns[k] = (struct genome_conn){t->id[t->src[k]], t->id[t->dst[k]], t->w[k]};
    tmp.n_conns = t->m;
    if (tmp.n_conns)
        qsort(tmp.conns, tmp.n_conns, sizeof *tmp.conns, genome_conn_cmp);
    if ((rc = genome_set_scale(&tmp, genome_scale_shift(&t->scale), genome_scale_mul(&t->scale),
                               t->scale.n_scale, err))) {
        genome_release(&tmp);
        return rc;
    }
    genome_release(g);
    *g = tmp;
    return 0;
}
