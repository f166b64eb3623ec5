/* generation.c -- one generation: plan (from the population and the
 * checkpointed species state, with the master's rng for this generation),
 * evaluate the children that are not in the store yet (a resume finds the
 * ones committed before a crash), take the results as they arrive, then
 * speciate and close the generation with its statistics and checkpoint in
 * one transaction. */
#include "farm.h"
#include "search.h"
#include "state.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A child's operator travels to the workers as enum worker_op and is stored
 * as enum store_op: one set of codes. */
_Static_assert((int)WORKER_OP_INIT == (int)STORE_OP_INIT &&
                   (int)WORKER_OP_MUTATE == (int)STORE_OP_MUTATE &&
                   (int)WORKER_OP_CROSSOVER == (int)STORE_OP_CROSSOVER &&
                   (int)WORKER_OP_CROSSOVER_MUTATE == (int)STORE_OP_CROSSOVER_MUTATE,
               "enum worker_op and enum store_op must agree");

/* The master's rng stream of a generation: far from any child index. */
#define MASTER_STREAM UINT64_C(0xFFFFFFFFFFFF0001)

static uint64_t child_seed(uint64_t run_seed, int64_t gen, uint64_t index)
{
    struct tv_rng r;
    tv_rng_init(&r, run_seed, (uint64_t)gen, index);
    return tv_rng_u64(&r);
}

/* A child's result (from a worker, or from the store on resume): validated
 * genome into the next population. */
static int take_child(struct search *s, int64_t id, double fitness, int solved,
                      const double *measures, const uint8_t *bytes, size_t len, struct genome **out,
                      struct tv_error *err)
{
    if (id < s->base_id || id >= s->base_id + (int64_t)s->n_plan)
        return tv_error_set(err, TV_EINVAL,
                            "a result for child %" PRId64 ", which generation %" PRId64
                            " does not have",
                            id, s->gen + 1);
    if (master_pop_find(&s->next, id) >= 0)
        return tv_error_set(err, TV_EINVAL, "child %" PRId64 " was returned twice", id);
    struct genome *g = s->n_spare ? s->spare[--s->n_spare] : genome_new();
    if (!g)
        return tv_error_set(err, TV_ENOMEM, "master: out of memory");
    int rc = genome_decode(g, bytes, len, &s->cfg.worker.limits, err);
    if (!rc)
        rc = task_check_shape(s->cfg.worker.task, g, err);
    if (rc) {
        genome_free(g);
        tv_error_prefix(err, "child %" PRId64, id);
        return rc;
    }
    rc = master_pop_add(&s->next, id, fitness, solved, g, err);
    if (rc) {
        genome_free(g);
        return rc;
    }
    master_pop_set_measures(&s->next, measures[0], measures[1], measures[2], measures[3],
                            s->gen + 1);
    rc = master_pop_keep_encoding(&s->next, bytes, len, err);
    if (rc)
        return rc;
    /* keep s->next sorted by id for master_pop_find: insert in place */
    for (size_t i = s->next.n - 1; i > 0 && s->next.m[i - 1].id > s->next.m[i].id; i--) {
        struct master_member t = s->next.m[i];
        s->next.m[i] = s->next.m[i - 1];
        s->next.m[i - 1] = t;
    }
    s->solved |= solved;
    s->n_failed += isnan(fitness) != 0;
    if (out)
        *out = g;
    return 0;
}

static int sink(void *ctx, const struct worker_results *r, struct tv_error *err)
{
    struct search *s = ctx;
    for (size_t i = 0; i < r->n; i++) {
        const struct worker_result *x = &r->items[i];
        double measures[4] = {x->obj[WORKER_OBJ_VALID_ACC], x->obj[WORKER_OBJ_FLASH],
                              x->obj[WORKER_OBJ_RAM], x->obj[WORKER_OBJ_MACS]};
        int rc = take_child(s, x->child_id, x->fitness, x->solved, measures, x->genome,
                            x->genome_len, NULL, err);
        if (rc)
            return rc;
        ptrdiff_t m = master_pop_find(&s->next, x->child_id);
        const struct master_member *mm = &s->next.m[m];
        const struct master_child *c = &s->plan[x->child_id - s->base_id];
        struct store_individual row = {
            x->child_id,     s->gen + 1,      x->fitness,    c->parent1,  c->parent2,
            c->op,           STORE_ID_NONE,   mm->n_neurons, mm->n_conns, mm->n_skip,
            mm->n_recurrent, x->eval_seconds, x->rank,       NULL,        0,
            x->solved,       measures[0],     measures[1],   measures[2], measures[3]};
        rc = master_commit_queue(s, &row, mm->enc_off, mm->enc_len, err);
        if (rc)
            return rc;
        s->evals_total++;
    }
    return 0;
}

/* ---- one generation --------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int close_generation(struct search *s, int64_t gen, size_t n_evals, struct tv_error *err)
{
    struct master_pop *p = &s->pop;
    double *f = malloc(p->n * sizeof *f);
    int64_t *ids = malloc(p->n * sizeof *ids);
    struct store_species *sp = malloc((p->n_species ? p->n_species : 1) * sizeof *sp);
    struct tv_buf state = {0};
    int rc = 0;
    if (!f || !ids || !sp)
        rc = tv_error_set(err, TV_ENOMEM, "master: out of memory");
    size_t champ = 0;
    double sum = 0;
    for (size_t i = 0; i < p->n && !rc; i++) {
        f[i] = p->m[i].fitness;
        ids[i] = p->m[i].id;
        sum += f[i] > -INFINITY ? f[i] : 0; /* failed children (-inf) aside */
        if (p->m[i].fitness > p->m[champ].fitness)
            champ = i; /* ties: the lower id, which comes first */
    }
    if (!rc) {
        qsort(f, p->n, sizeof *f, cmp_double);
        for (size_t k = 0; k < p->n_species; k++)
            sp[k] = (struct store_species){p->sp[k].id,
                                           (uint32_t)p->sp[k].n_members,
                                           p->sp[k].best,
                                           p->sp[k].mean,
                                           p->m[p->sp[k].members[0]].id,
                                           p->sp[k].born,
                                           gen - p->sp[k].last_improved};
    }
    struct task_result test = {0};
    const struct task_instance *task = s->cfg.worker.task;
    /* on the master: the test is deterministic, so a resume repeats it */
    if (!rc && task->kind->champion_test && p->n) {
        rc = task_champion_test(task, p->m[champ].genome, &test, err);
        if (!rc && test.solved) {
            p->m[champ].solved = 1; /* kept in the checkpoint state too */
            s->solved = 1;
        }
    }
    int solved = 0;
    for (size_t i = 0; i < p->n; i++)
        solved |= p->m[i].solved;
    if (!rc)
        rc = s->cfg.keep_genomes == STORE_GENOMES_ALL /* the bytes of version 1, as before */
                 ? master_state_encode(&s->pop, s->next_id, &state, err)
                 : master_state_encode_by_id(&s->pop, s->next_id, &state, err);
    if (!rc) {
        /* mean and median of the members not failed (f[lo..n), sorted) */
        size_t lo = 0;
        while (lo + 1 < p->n && f[lo] == -INFINITY)
            lo++;
        size_t n = p->n - lo;
        double median = n % 2 ? f[lo + n / 2] : (f[lo + n / 2 - 1] + f[lo + n / 2]) / 2;
        struct store_generation g = {.generation = gen,
                                     .best = f[p->n - 1],
                                     .mean = f[lo] == -INFINITY ? -INFINITY : sum / (double)n,
                                     .median = median,
                                     .champion = p->m[champ].id,
                                     .n_evals = n_evals,
                                     .n_failed = s->n_failed,
                                     .wall_seconds = tv_now() - s->t_gen,
                                     .solved = solved,
                                     .champion_tested = task->kind->champion_test != NULL,
                                     .champion_solved = test.solved,
                                     .champion_score = test.fitness,
                                     .species = sp,
                                     .n_species = p->n_species,
                                     .state = state.data,
                                     .state_len = state.len,
                                     .population = ids,
                                     .n_population = p->n,
                                     .keep = s->cfg.keep_genomes};
        rc = store_generation_close(s->st, s->run, &g, err);
        if (!rc && s->progress && !s->cfg.quiet) {
            const struct master_member *c = &p->m[champ];
            struct master_progress ev = {.event = MASTER_EVENT_GENERATION,
                                         .generation = gen,
                                         .best = c->fitness,
                                         .mean = g.mean,
                                         .failed = s->n_failed,
                                         .n_species = p->n_species,
                                         .champion = c->id,
                                         .n_neurons = c->n_neurons,
                                         .n_conns = c->n_conns,
                                         .tested = task->kind->champion_test != NULL,
                                         .test_solved = test.solved,
                                         .test_score = test.fitness,
                                         .evals = s->evals_total,
                                         .elapsed = tv_now() - s->t_start};
            master_search_report(s, &ev);
        }
    }
    tv_buf_free(&state);
    free(f);
    free(ids);
    free(sp);
    return rc;
}

/* Moves the elites of the old population and the evaluated children into a
 * new population sorted by id; the rest of the old population is freed. */
static int replace_population(struct search *s, const int64_t *elites, size_t n_elites,
                              struct tv_error *err)
{
    for (size_t i = 0; i < n_elites; i++) {
        ptrdiff_t m = master_pop_find(&s->pop, elites[i]);
        if (m < 0)
            return tv_error_set(err, TV_ESTATE, "elite %" PRId64 " is not in the population",
                                elites[i]);
        struct master_member *mm = &s->pop.m[m];
        int rc = master_pop_add(&s->next, mm->id, mm->fitness, mm->solved, mm->genome, err);
        if (rc)
            return rc;
        mm->genome = NULL;
        master_pop_set_measures(&s->next, mm->valid_acc, mm->flash, mm->ram, mm->macs, mm->born);
        if (mm->enc_len) {
            rc = master_pop_keep_encoding(&s->next, s->pop.encoded.data + mm->enc_off, mm->enc_len,
                                          err);
            if (rc)
                return rc;
        }
        s->solved |= mm->solved;
    }
    struct master_pop old = s->pop;
    s->pop = s->next;
    s->pop.sp = old.sp; /* species carry over */
    s->pop.n_species = old.n_species;
    s->pop.cap_species = old.cap_species;
    s->pop.threshold = old.threshold;
    s->pop.next_species_id = old.next_species_id;
    old.sp = NULL;
    old.n_species = 0;
    /* what the new population does not hold becomes spare genomes */
    if (s->cap_spare < s->n_spare + old.n) {
        struct genome **more = realloc(s->spare, (s->n_spare + old.n) * sizeof *more);
        if (more) {
            s->spare = more;
            s->cap_spare = s->n_spare + old.n;
        }
    }
    for (size_t i = 0; i < old.n && s->n_spare < s->cap_spare; i++)
        if (old.m[i].genome) {
            s->spare[s->n_spare++] = old.m[i].genome;
            old.m[i].genome = NULL;
        }
    tv_buf_free(&s->spare_encoded);
    s->spare_encoded = old.encoded;
    memset(&old.encoded, 0, sizeof old.encoded);
    master_pop_release(&old);
    memset(&s->next, 0, sizeof s->next);
    master_pop_sort(&s->pop);
    return 0;
}

/* The children of generation gen: pop_size new genomes for generation 0,
 * else master_plan's (and its elites) with the master's rng for gen. */
static int plan_children(struct search *s, int64_t gen, int64_t **elites, size_t *n_elites,
                         struct master_child **children, size_t *n_children, struct tv_error *err)
{
    if (gen == 0) {
        *n_children = (size_t)s->cfg.pop_size;
        *children = calloc(*n_children, sizeof **children);
        if (!*children)
            return tv_error_set(err, TV_ENOMEM, "master: out of memory");
        for (size_t i = 0; i < *n_children; i++)
            (*children)[i] = (struct master_child){WORKER_OP_INIT, -1, -1};
        return 0;
    }
    struct tv_rng rng;
    tv_rng_init(&rng, s->cfg.seed, (uint64_t)gen, MASTER_STREAM);
    return master_plan(&s->pop, &s->cfg, gen, &rng, elites, n_elites, children, n_children, err);
}

/* Opens the next population (in the spare encoding buffer: its capacity,
 * none of its bytes) and takes the children of generation gen already in
 * the store (committed before a stop or a crash). */
static int take_pending(struct search *s, const struct store_set *pending, int64_t gen,
                        struct tv_error *err)
{
    int rc = 0;
    master_pop_init(&s->next, 0);
    s->next.encoded = s->spare_encoded;
    s->next.encoded.len = 0;
    memset(&s->spare_encoded, 0, sizeof s->spare_encoded);
    for (size_t i = 0; pending && i < pending->n && !rc; i++) {
        const struct store_individual *r = &pending->rows[i];
        if (r->generation != gen)
            continue;
        double measures[4] = {r->valid_acc, r->flash, r->ram, r->macs};
        rc = take_child(s, r->id, r->fitness, r->solved, measures, r->genome, r->genome_len, NULL,
                        err);
    }
    return rc;
}

/* The tasks of the children of generation gen that are not taken yet, into
 * tasks[0..n_children); returns how many. */
static size_t list_tasks(const struct search *s, int64_t gen, const struct master_child *children,
                         size_t n_children, struct worker_task *tasks)
{
    size_t n_tasks = 0;
    for (size_t i = 0; i < n_children; i++) {
        int64_t id = s->base_id + (int64_t)i;
        if (master_pop_find(&s->next, id) >= 0)
            continue;
        struct worker_task t = {id,
                                gen,
                                (uint32_t)i,
                                children[i].op,
                                child_seed(s->cfg.seed, gen, i),
                                children[i].parent1,
                                children[i].parent2,
                                NULL,
                                0,
                                NULL,
                                0};
        tasks[n_tasks++] = t;
    }
    return n_tasks;
}

/* Parent genomes travel encoded: as they arrived, or encoded here once
 * (a member whose encoding was not kept); each task points at its
 * parents' bytes in the population's buffer. */
static int attach_parents(struct search *s, struct worker_task *tasks, size_t n_tasks,
                          struct tv_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < s->pop.n && !rc; i++) {
        struct master_member *mm = &s->pop.m[i];
        if (mm->enc_len)
            continue;
        mm->enc_off = s->pop.encoded.len;
        rc = genome_encode(mm->genome, &s->pop.encoded, err);
        mm->enc_len = s->pop.encoded.len - mm->enc_off;
    }
    for (size_t i = 0; i < n_tasks && !rc; i++) {
        struct worker_task *t = &tasks[i];
        for (int k = 0; k < 2; k++) {
            int64_t pid = k ? t->parent2 : t->parent1;
            if (pid < 0)
                continue;
            const struct master_member *mm = &s->pop.m[master_pop_find(&s->pop, pid)];
            const uint8_t *b = s->pop.encoded.data + mm->enc_off;
            if (k) {
                t->genome2 = b;
                t->genome2_len = mm->enc_len;
            } else {
                t->genome1 = b;
                t->genome1_len = mm->enc_len;
            }
        }
    }
    return rc;
}

int master_generation_run(struct search *s, const struct store_set *pending, struct tv_error *err)
{
    int64_t gen = s->gen + 1;
    int64_t *elites = NULL;
    size_t n_elites = 0, n_children = 0;
    struct master_child *children = NULL;
    s->t_gen = tv_now();
    s->solved = 0;
    int rc = plan_children(s, gen, &elites, &n_elites, &children, &n_children, err);
    if (rc)
        return rc;
    s->base_id = s->next_id;
    s->plan = children;
    s->n_plan = n_children;
    s->n_failed = 0;
    rc = take_pending(s, pending, gen, err);
    struct worker_task *tasks = malloc((n_children ? n_children : 1) * sizeof *tasks);
    size_t n_tasks = 0;
    if (!tasks && !rc)
        rc = tv_error_set(err, TV_ENOMEM, "master: out of memory");
    if (!rc)
        n_tasks = list_tasks(s, gen, children, n_children, tasks);
    if (!rc)
        rc = attach_parents(s, tasks, n_tasks, err);
    if (!rc)
        rc = farm_run(s->farm, tasks, n_tasks, sink, s, err);
    int flush = master_commit_flush(s, err);
    if (!rc)
        rc = flush;
    free(tasks);
    if (!rc)
        rc = replace_population(s, elites, n_elites, err);
    if (!rc)
        rc = master_speciate(&s->pop, &s->cfg, gen, err);
    if (!rc) {
        s->gen = gen;
        s->next_id = s->base_id + (int64_t)n_children;
        rc = close_generation(s, gen, n_children, err);
    }
    free(elites);
    free(children);
    s->plan = NULL;
    return rc;
}
