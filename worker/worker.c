/* worker.c -- breeding and evaluating children; worker_process(), the whole
 * job on one task batch, shared by MPI workers and the in-process master. */
#include "worker.h"

#include "quant.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct worker_scratch {
    struct genome p1, p2, child;
    /* init = net: the file's network, read and checked once for the params
     * start_of points to (not again for every starting genome) */
    struct genome start;
    const struct worker_params *start_of;
    struct tv_buf out; /* encoded children of the current batch, back to back */
    struct worker_result *results;
    size_t cap_results;
};

struct worker_scratch *worker_scratch_new(void)
{
    return calloc(1, sizeof(struct worker_scratch));
}

void worker_scratch_free(struct worker_scratch *s)
{
    if (!s)
        return;
    genome_release(&s->p1);
    genome_release(&s->p2);
    genome_release(&s->child);
    genome_release(&s->start);
    tv_buf_free(&s->out);
    TV_FREE_ALL(s->results, s);
}

/* Streams of a child's seed: one for breeding, one for evaluation
 * (TASK_STREAM_EVAL, task_evaluate()), so that changing one operator does not
 * shift the other's draws. */
enum { STREAM_BREED = 1 };
_Static_assert(STREAM_BREED != TASK_STREAM_EVAL, "breeding and evaluation share a stream");

static int decode_parent(const struct worker_params *p, const uint8_t *bytes, size_t len,
                         int64_t id, struct genome *g, struct tv_error *err)
{
    if (!bytes)
        return tv_error_set(err, TV_EFORMAT, "parent %lld: genome missing from the task",
                            (long long)id);
    int rc = genome_decode(g, bytes, len, &p->limits, err);
    if (!rc)
        rc = task_check_shape(p->task, g, err);
    if (rc)
        tv_error_prefix(err, "parent %lld", (long long)id);
    return rc;
}

/* Every non-input neuron of g becomes a `model` neuron with its defaults. */
static void set_models(struct genome *g, int model)
{
    for (size_t i = 0; i < g->n_neurons && model != GENOME_MODEL_RATE; i++)
        if (g->neurons[i].kind != GENOME_INPUT)
            genome_neuron_set_model(&g->neurons[i], model);
}

int worker_load_net(const char *path, const struct genome_limits *limits, struct genome *g,
                    struct tv_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tv_error_set(err, TV_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct tv_buf buf = {0};
    int rc = 0;
    for (size_t n = 1; n > 0 && !rc;) {
        if (tv_buf_reserve(&buf, 65536))
            rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory reading the file", path);
        else if ((n = fread(buf.data + buf.len, 1, 65536, f)) > 0 &&
                 (buf.len += n) > WORKER_NET_FILE_MAX)
            rc = tv_error_set(err, TV_ELIMIT, "%s: larger than %zu bytes", path,
                              (size_t)WORKER_NET_FILE_MAX);
        else if (n == 0 && ferror(f))
            rc = tv_error_set(err, TV_EIO, "%s: read error: %s", path, strerror(errno));
    }
    fclose(f);
    if (!rc)
        rc = genome_load(g, buf.data, buf.len, path, limits, err);
    tv_buf_free(&buf);
    return rc;
}

static int build_initial(const struct worker_params *p, struct worker_scratch *s,
                         struct tv_rng *rng, struct genome *child, struct tv_error *err)
{
    const struct task_instance *t = p->task;
    if (p->init == WORKER_INIT_NET) { /* a mutant of the file's network */
        int rc = 0;
        if (s->start_of != p) {
            s->start_of = NULL;
            if (!(rc = worker_load_net(p->init_net, &p->limits, &s->start, err)) &&
                !(rc = task_check_shape(t, &s->start, err)))
                s->start_of = p;
        }
        if (!rc)
            rc = genome_copy(child, &s->start, err);
        if (!rc)
            rc = genome_mutate(child, &p->mutation, rng, err);
        return rc;
    }
    if (p->init == WORKER_INIT_MINIMAL) {
        int rc = genome_build_minimal(child, (uint32_t)t->n_inputs, (uint32_t)t->n_outputs,
                                      t->out_act, p->init_weight_sd, rng, err);
        set_models(child, p->init_model);
        return rc;
    }
    uint32_t sizes[WORKER_MAX_HIDDEN_LAYERS + 2];
    size_t n = 0;
    sizes[n++] = (uint32_t)t->n_inputs;
    for (size_t i = 0; i < p->n_init_hidden; i++)
        sizes[n++] = p->init_hidden[i];
    sizes[n++] = (uint32_t)t->n_outputs;
    struct genome_layered_spec spec = {sizes,
                                       n,
                                       p->init_density,
                                       p->init_skip_rate,
                                       p->init_recurrent_rate,
                                       p->mutation.hidden_act,
                                       t->out_act,
                                       p->init_weight_sd};
    struct genome_layer_pairs pairs = {p->n_init_densities ? p->init_densities : NULL,
                                       p->n_init_skip_densities ? p->init_skip_densities : NULL};
    int rc = genome_build_layered_pairs(child, &spec, &pairs, rng, err);
    set_models(child, p->init_model);
    return rc;
}

int worker_breed(const struct worker_params *p, const struct worker_task *t,
                 struct worker_scratch *s, struct genome *child, struct tv_error *err)
{
    return worker_breed_attempt(p, t, 0, s, child, err);
}

int worker_breed_attempt(const struct worker_params *p, const struct worker_task *t,
                         uint32_t attempt, struct worker_scratch *s, struct genome *child,
                         struct tv_error *err)
{
    struct tv_rng rng;
    tv_rng_init(&rng, t->seed, STREAM_BREED, attempt);
    int rc = 0;
    switch (t->op) {
    case WORKER_OP_INIT:
        rc = build_initial(p, s, &rng, child, err);
        break;
    case WORKER_OP_MUTATE:
        rc = decode_parent(p, t->genome1, t->genome1_len, t->parent1, &s->p1, err);
        if (!rc)
            rc = genome_copy(child, &s->p1, err);
        if (!rc)
            rc = genome_mutate(child, &p->mutation, &rng, err);
        break;
    case WORKER_OP_CROSSOVER:
    case WORKER_OP_CROSSOVER_MUTATE:
        rc = decode_parent(p, t->genome1, t->genome1_len, t->parent1, &s->p1, err);
        if (!rc)
            rc = decode_parent(p, t->genome2, t->genome2_len, t->parent2, &s->p2, err);
        if (!rc)
            rc = genome_crossover(child, &s->p1, &s->p2, &rng, err);
        if (!rc && t->op == WORKER_OP_CROSSOVER_MUTATE)
            rc = genome_mutate(child, &p->mutation, &rng, err);
        break;
    default:
        rc = tv_error_set(err, TV_EINVAL, "unknown operator %d", (int)t->op);
    }
    if (rc)
        tv_error_prefix(err, "child %lld", (long long)t->child_id);
    return rc;
}

int worker_evaluate(const struct worker_params *p, struct genome *child, uint64_t seed,
                    int64_t generation, struct worker_scratch *s, struct task_result *res,
                    struct tv_error *err)
{
    (void)s;
    return task_evaluate_genome(p->task, child, seed, generation, &p->limits, res, err);
}

/* The device figures of g (nn_genome_cost) into obj[WORKER_OBJ_FLASH ..
 * WORKER_OBJ_MACS]: NaN when the int8 form does not take g (spiking
 * neurons). Fails only for want of memory. */
static int measure_cost(const struct genome *g, double *obj, struct tv_error *err)
{
    struct nn_cost c;
    struct tv_error e = {0};
    int rc = nn_genome_cost(g, &c, &e);
    if (rc == TV_ENOMEM)
        return tv_error_set(err, TV_ENOMEM, "device figures: %s", e.msg);
    obj[WORKER_OBJ_FLASH] = rc ? NAN : (double)c.flash;
    obj[WORKER_OBJ_RAM] = rc ? NAN : (double)c.ram;
    obj[WORKER_OBJ_MACS] = rc ? NAN : (double)c.macs;
    return 0;
}

static int has_budget(const struct worker_params *p)
{
    return p->max_flash > 0 || p->max_ram > 0 || p->max_macs > 0;
}

/* 1 if figures obj are over one of p's budgets (unknown figures are). */
static int over_budget(const struct worker_params *p, const double *obj)
{
    return (p->max_flash > 0 && !(obj[WORKER_OBJ_FLASH] <= (double)p->max_flash)) ||
           (p->max_ram > 0 && !(obj[WORKER_OBJ_RAM] <= (double)p->max_ram)) ||
           (p->max_macs > 0 && !(obj[WORKER_OBJ_MACS] <= (double)p->max_macs));
}

/* Breeds t's child into s->child within p's budgets: bred again from the
 * next sub-stream while it is over one, WORKER_BUDGET_TRIES times at most;
 * *over says whether the last is still over. obj gets its figures when there
 * is a budget. */
static int breed_within(const struct worker_params *p, const struct worker_task *t,
                        struct worker_scratch *s, double *obj, int *over, struct tv_error *err)
{
    *over = 0;
    for (uint32_t k = 0;; k++) {
        int rc = worker_breed_attempt(p, t, k, s, &s->child, err);
        if (rc || !has_budget(p))
            return rc;
        if ((rc = measure_cost(&s->child, obj, err)) != 0)
            return rc;
        *over = over_budget(p, obj);
        if (!*over || k + 1 == WORKER_BUDGET_TRIES)
            return 0;
    }
}

/* The objectives the task's result gives (res) of a child as it left it
 * (child), beside the device figures already in obj: enum worker_obj's
 * order, NaN where unknown. */
static void measure(const struct task_result *res, const struct genome *child, double *obj)
{
    obj[WORKER_OBJ_VALID_ACC] = NAN;
    for (size_t i = 0; i < res->n_figures; i++)
        if (!strcmp(res->figure_names[i], "accuracy"))
            obj[WORKER_OBJ_VALID_ACC] = res->figures[i];
    if (isnan(res->fitness)) /* a failed child has no score */
        obj[WORKER_OBJ_VALID_ACC] = NAN;
    obj[WORKER_OBJ_CONNECTIONS] = (double)child->n_conns;
}

int worker_process(const struct worker_params *p, struct worker_scratch *s, int32_t rank,
                   const void *in, size_t in_len, struct tv_buf *out, struct tv_error *err)
{
    struct worker_tasks tasks;
    int rc = worker_tasks_decode(in, in_len, p->max_message_bytes, &tasks, err);
    if (rc)
        return rc;
    if (tasks.n > s->cap_results) {
        struct worker_result *r = realloc(s->results, tasks.n * sizeof *r);
        if (!r) {
            worker_tasks_release(&tasks);
            return tv_error_set(err, TV_ENOMEM, "worker: out of memory");
        }
        s->results = r;
        s->cap_results = tasks.n;
    }
    s->out.len = 0;
    size_t *offsets = malloc((tasks.n ? tasks.n : 1) * sizeof *offsets);
    if (!offsets)
        rc = tv_error_set(err, TV_ENOMEM, "worker: out of memory");
    for (size_t i = 0; i < tasks.n && !rc; i++) {
        const struct worker_task *t = &tasks.items[i];
        struct task_result res;
        double t0 = tv_now(), obj[WORKER_N_OBJ] = {NAN, NAN, NAN, NAN, NAN};
        int over = 0;
        rc = breed_within(p, t, s, obj, &over, err); /* breed names the child */
        if (!rc && over) { /* refused before any training: scored failed */
            res = (struct task_result){.fitness = NAN};
        } else if (!rc) {
            rc = worker_evaluate(p, &s->child, t->seed, t->generation, s, &res, err);
            if (rc == TV_EGENOME) { /* the genome's own failure, not the run's: */
                res = (struct task_result){.fitness = NAN}; /* scored failed */
                rc = 0;
                if (err)
                    err->code = 0, err->msg[0] = '\0';
            } else if (rc) {
                tv_error_prefix(err, "child %lld", (long long)t->child_id);
            }
            /* the figures of the child as the task left it (training may
             * have grown it): over a budget, it is scored failed */
            if (!rc)
                rc = measure_cost(&s->child, obj, err);
            if (!rc && has_budget(p) && over_budget(p, obj))
                res = (struct task_result){.fitness = NAN};
        }
        if (rc)
            break;
        offsets[i] = s->out.len;
        rc = genome_encode(&s->child, &s->out, err);
        s->results[i] = (struct worker_result){t->child_id,
                                               res.fitness,
                                               res.solved,
                                               tv_now() - t0,
                                               rank,
                                               NULL,
                                               s->out.len - offsets[i],
                                               {0}};
        measure(&res, &s->child, obj);
        memcpy(s->results[i].obj, obj, sizeof obj);
    }
    /* The genome bytes are only placed now: s->out may have moved while it grew. */
    for (size_t i = 0; i < tasks.n && !rc; i++)
        s->results[i].genome = s->out.data + offsets[i];
    if (!rc)
        rc = worker_results_encode(s->results, tasks.n, out, err);
    free(offsets);
    worker_tasks_release(&tasks);
    return rc;
}
