/* run.c -- the evolution loop on rank 0 (or alone), with the store.
 *
 * One generation: plan (from the population and the checkpointed species
 * state, with the master's rng for this generation), evaluate the children
 * that are not in the store yet (a resume finds the ones committed before a
 * crash), commit results in batches as they arrive, then speciate and close
 * the generation with its statistics and checkpoint in one transaction. */
#include "farm.h"
#include "master.h"
#include "store.h"

#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define TREVO_VERSION "0.1.0"
#define STATE_TAG "trevo-master"
#define STATE_VERSION 1
/* The master's rng stream of a generation: far from any child index. */
#define MASTER_STREAM UINT64_C(0xFFFFFFFFFFFF0001)

struct search {
    struct master_config cfg;
    const char *db;
    struct store *st;
    int64_t run;
    int n_ranks;
    struct farm *farm;
    struct master_pop pop; /* the population of the last closed generation */
    int64_t gen;           /* last closed generation, -1 before generation 0 */
    int64_t next_id;       /* id of the next child */
    /* the generation being evaluated */
    struct master_pop next;
    int64_t base_id; /* child i has id base_id + i */
    const struct master_child *plan;
    size_t n_plan;
    struct store_individual *rows; /* results not yet committed */
    size_t *row_off;               /* their genome bytes' offsets in row_bytes */
    size_t n_rows, cap_rows;
    struct tv_buf row_bytes;
    int solved;
    double t_start, t_gen, t_first_row;
    double cpu_start;      /* the process's CPU time when the search loop began */
    char resume_name[256]; /* resume: the run to take once its checkpoint loaded */
    int resuming;          /* resume: the run is held for writing */
    uint64_t evals_total;
    /* genomes of a replaced population, reused for the next children's
     * (their arrays keep their capacity: no allocation per child) */
    struct genome **spare;
    size_t n_spare, cap_spare;
    master_progress_fn progress; /* NULL when quiet */
    void *progress_ctx;
};

/* "trevo resume DB --name RUN", once the run is held for writing: what a
 * stop or a failure tells the user to type (read by a signal handler). */
static char resume_hint[600];

const char *master_resume_hint(void)
{
    return resume_hint;
}

static void set_resume_hint(const struct search *s)
{
    snprintf(resume_hint, sizeof resume_hint, "trevo resume %s --name %s", s->db, s->cfg.name);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of the whole process (every thread, MPI's included). */
static double process_cpu(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return 0;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

static uint64_t child_seed(uint64_t run_seed, int64_t gen, uint64_t index)
{
    struct tv_rng r;
    tv_rng_init(&r, run_seed, (uint64_t)gen, index);
    return tv_rng_u64(&r);
}

/* ---- the checkpoint's master state ------------------------------------ */

static int buf_write(void *data, const char *bytes, size_t len)
{
    return tv_buf_append(data, bytes, len) ? -1 : 0;
}

static int state_encode(const struct search *s, struct tv_buf *out, struct tv_error *err)
{
    const struct master_pop *p = &s->pop;
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, buf_write);
    struct tv_buf rep = {0};
    int bad = msgpack_pack_array(&pk, 7);
    bad |= msgpack_pack_str_with_body(&pk, STATE_TAG, strlen(STATE_TAG));
    bad |= msgpack_pack_uint32(&pk, STATE_VERSION);
    bad |= msgpack_pack_double(&pk, p->threshold);
    bad |= msgpack_pack_int64(&pk, p->next_species_id);
    bad |= msgpack_pack_int64(&pk, s->next_id);
    bad |= msgpack_pack_array(&pk, p->n_species);
    for (size_t k = 0; k < p->n_species && !bad; k++) {
        const struct master_species *sp = &p->sp[k];
        rep.len = 0;
        int rc = genome_encode(sp->rep, &rep, err);
        if (rc) {
            tv_buf_free(&rep);
            return rc;
        }
        bad |= msgpack_pack_array(&pk, 5);
        bad |= msgpack_pack_int64(&pk, sp->id);
        bad |= msgpack_pack_int64(&pk, sp->born);
        bad |= msgpack_pack_double(&pk, sp->best_ever);
        bad |= msgpack_pack_int64(&pk, sp->last_improved);
        bad |= msgpack_pack_bin_with_body(&pk, rep.data, rep.len);
    }
    tv_buf_free(&rep);
    /* membership and solved flags, in population (id) order */
    bad |= msgpack_pack_array(&pk, p->n);
    for (size_t i = 0; i < p->n && !bad; i++) {
        bad |= msgpack_pack_array(&pk, 3);
        bad |= msgpack_pack_int64(&pk, p->m[i].id);
        bad |= msgpack_pack_int64(&pk, p->m[i].species);
        bad |= p->m[i].solved ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
    }
    return bad ? tv_error_set(err, TV_ENOMEM, "checkpoint: out of memory") : 0;
}

static int get_i64(const msgpack_object *o, int64_t *v)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
        *v = (int64_t)o->via.u64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *v = o->via.i64;
    else
        return -1;
    return 0;
}

/* Restores threshold, species and membership into s->pop, whose members are
 * already loaded (sorted by id). */
static int state_decode(struct search *s, const uint8_t *data, size_t len, struct tv_error *err)
{
    int rc = tv_msgpack_check(data, len, 4, err);
    if (rc) {
        tv_error_prefix(err, "%s: checkpoint state", s->db);
        return rc;
    }
    msgpack_unpacked res;
    msgpack_unpacked_init(&res);
    size_t off = 0;
    struct master_pop *p = &s->pop;
#define BAD(what)                                                                                  \
    do {                                                                                           \
        rc = tv_error_set(err, TV_ECORRUPT, "%s: checkpoint state: %s", s->db, what);              \
        goto done;                                                                                 \
    } while (0)
    if (msgpack_unpack_next(&res, (const char *)data, len, &off) != MSGPACK_UNPACK_SUCCESS)
        BAD("not msgpack");
    const msgpack_object *r = &res.data;
    if (r->type != MSGPACK_OBJECT_ARRAY || r->via.array.size != 7)
        BAD("not an array of 7");
    const msgpack_object *f = r->via.array.ptr;
    if (f[0].type != MSGPACK_OBJECT_STR || f[0].via.str.size != strlen(STATE_TAG) ||
        memcmp(f[0].via.str.ptr, STATE_TAG, strlen(STATE_TAG)))
        BAD("wrong tag");
    if (f[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER || f[1].via.u64 != STATE_VERSION)
        BAD("unknown version");
    if ((f[2].type != MSGPACK_OBJECT_FLOAT64 && f[2].type != MSGPACK_OBJECT_FLOAT32) ||
        get_i64(&f[3], &p->next_species_id) || get_i64(&f[4], &s->next_id) ||
        f[5].type != MSGPACK_OBJECT_ARRAY || f[6].type != MSGPACK_OBJECT_ARRAY)
        BAD("a field has the wrong type");
    p->threshold = f[2].via.f64;
    for (uint32_t k = 0; k < f[5].via.array.size; k++) {
        const msgpack_object *o = &f[5].via.array.ptr[k];
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 5)
            BAD("a species is not an array of 5");
        const msgpack_object *v = o->via.array.ptr;
        struct master_species sp = {0};
        if (get_i64(&v[0], &sp.id) || get_i64(&v[1], &sp.born) ||
            (v[2].type != MSGPACK_OBJECT_FLOAT64 && v[2].type != MSGPACK_OBJECT_FLOAT32) ||
            get_i64(&v[3], &sp.last_improved) || v[4].type != MSGPACK_OBJECT_BIN)
            BAD("a species field has the wrong type");
        sp.best_ever = v[2].via.f64;
        sp.rep = genome_new();
        if (!sp.rep)
            BAD("out of memory");
        rc = genome_decode(sp.rep, v[4].via.bin.ptr, v[4].via.bin.size, &s->cfg.worker.limits, err);
        if (rc || p->n_species == p->cap_species) {
            genome_free(sp.rep);
            if (!rc)
                BAD("too many species");
            tv_error_prefix(err, "%s: checkpoint species %" PRId64, s->db, sp.id);
            goto done;
        }
        p->sp[p->n_species++] = sp;
    }
    if (f[6].via.array.size != p->n)
        BAD("membership does not match the population");
    for (uint32_t i = 0; i < f[6].via.array.size; i++) {
        const msgpack_object *o = &f[6].via.array.ptr[i];
        int64_t id, sid;
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3 ||
            get_i64(&o->via.array.ptr[0], &id) || get_i64(&o->via.array.ptr[1], &sid) ||
            o->via.array.ptr[2].type != MSGPACK_OBJECT_BOOLEAN)
            BAD("a membership entry has the wrong type");
        ptrdiff_t m = master_pop_find(p, id);
        size_t k = 0;
        while (k < p->n_species && p->sp[k].id != sid)
            k++;
        if (m < 0 || k == p->n_species)
            BAD("membership names an unknown individual or species");
        p->m[m].solved = o->via.array.ptr[2].via.boolean;
        struct master_species *sp = &p->sp[k];
        if (sp->n_members == sp->cap_members) {
            size_t cap = sp->cap_members ? 2 * sp->cap_members : 16;
            size_t *mm = realloc(sp->members, cap * sizeof *mm);
            if (!mm)
                BAD("out of memory");
            sp->members = mm;
            sp->cap_members = cap;
        }
        sp->members[sp->n_members++] = (size_t)m;
    }
    /* members were listed in id order, as speciation adds them */
    master_species_finish(p, s->gen);
done:
#undef BAD
    msgpack_unpacked_destroy(&res);
    return rc;
}

/* ---- committing results ----------------------------------------------- */

static int flush_rows(struct search *s, struct tv_error *err)
{
    if (s->n_rows == 0)
        return 0;
    for (size_t i = 0; i < s->n_rows; i++)
        s->rows[i].genome = s->row_bytes.data + s->row_off[i];
    int rc = store_add_individuals(s->st, s->run, s->rows, s->n_rows, err);
    s->n_rows = 0;
    s->row_bytes.len = 0;
    return rc;
}

static int queue_row(struct search *s, const struct store_individual *row, const uint8_t *genome,
                     size_t len, struct tv_error *err)
{
    if (s->n_rows == s->cap_rows) {
        size_t cap = s->cap_rows ? 2 * s->cap_rows : 256;
        struct store_individual *r = realloc(s->rows, cap * sizeof *r);
        size_t *o = r ? realloc(s->row_off, cap * sizeof *o) : NULL;
        if (r)
            s->rows = r;
        if (!r || !o)
            return tv_error_set(err, TV_ENOMEM, "master: out of memory");
        s->row_off = o;
        s->cap_rows = cap;
    }
    s->row_off[s->n_rows] = s->row_bytes.len;
    if (tv_buf_append(&s->row_bytes, genome, len))
        return tv_error_set(err, TV_ENOMEM, "master: out of memory");
    s->rows[s->n_rows] = *row;
    s->rows[s->n_rows++].genome_len = len;
    /* Commit once commit_batch results wait, or the oldest waited a second
     * (slow evaluations: what arrived is soon safe from a crash). */
    if (s->n_rows == 1)
        s->t_first_row = now();
    if (s->n_rows >= (size_t)s->cfg.commit_batch || now() - s->t_first_row >= 1.0)
        return flush_rows(s, err);
    return 0;
}

/* A child's result (from a worker, or from the store on resume): validated
 * genome into the next population. */
static int take_child(struct search *s, int64_t id, double fitness, int solved,
                      const uint8_t *bytes, size_t len, struct genome **out, struct tv_error *err)
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
    if (out)
        *out = g;
    return 0;
}

static int sink(void *ctx, const struct worker_results *r, struct tv_error *err)
{
    struct search *s = ctx;
    for (size_t i = 0; i < r->n; i++) {
        const struct worker_result *x = &r->items[i];
        int rc =
            take_child(s, x->child_id, x->fitness, x->solved, x->genome, x->genome_len, NULL, err);
        if (rc)
            return rc;
        ptrdiff_t m = master_pop_find(&s->next, x->child_id);
        const struct master_member *mm = &s->next.m[m];
        const struct master_child *c = &s->plan[x->child_id - s->base_id];
        struct store_individual row = {
            x->child_id,   s->gen + 1,    x->fitness,  c->parent1, c->parent2,      c->op,
            STORE_ID_NONE, mm->n_neurons, mm->n_conns, mm->n_skip, mm->n_recurrent, x->eval_seconds,
            x->rank,       NULL,          0,           x->solved};
        rc = queue_row(s, &row, x->genome, x->genome_len, err);
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

/* The task's champion test on genome g (compiled here, on the master: it is
 * deterministic, so a resume repeats the same verdict). */
static int champion_test(const struct task *task, const struct genome *g, struct task_result *out,
                         struct tv_error *err)
{
    struct nn_plan *plan;
    int rc = nn_plan_compile(g, NULL, &plan, err);
    if (rc) {
        tv_error_prefix(err, "champion test");
        return rc;
    }
    rc = task->champion_test(task, plan, out, err);
    nn_plan_free(plan);
    return rc;
}

/* Sends ev, with the run's names filled in, to the progress callback. */
static void report(const struct search *s, struct master_progress *ev)
{
    ev->run = s->cfg.name;
    ev->db = s->db;
    ev->task = s->cfg.task;
    ev->pop_size = s->cfg.pop_size;
    ev->n_ranks = s->n_ranks;
    s->progress(s->progress_ctx, ev);
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
        sum += f[i];
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
    const struct task *task = s->cfg.worker.task;
    if (!rc && task->champion_test && p->n) {
        rc = champion_test(task, p->m[champ].genome, &test, err);
        if (!rc && test.solved) {
            p->m[champ].solved = 1; /* kept in the checkpoint state too */
            s->solved = 1;
        }
    }
    int solved = 0;
    for (size_t i = 0; i < p->n; i++)
        solved |= p->m[i].solved;
    if (!rc)
        rc = state_encode(s, &state, err);
    if (!rc) {
        double median = p->n % 2 ? f[p->n / 2] : (f[p->n / 2 - 1] + f[p->n / 2]) / 2;
        struct store_generation g = {.generation = gen,
                                     .best = f[p->n - 1],
                                     .mean = sum / (double)p->n,
                                     .median = median,
                                     .champion = p->m[champ].id,
                                     .n_evals = n_evals,
                                     .wall_seconds = now() - s->t_gen,
                                     .solved = solved,
                                     .champion_tested = task->champion_test != NULL,
                                     .champion_solved = test.solved,
                                     .champion_score = test.fitness,
                                     .species = sp,
                                     .n_species = p->n_species,
                                     .state = state.data,
                                     .state_len = state.len,
                                     .population = ids,
                                     .n_population = p->n};
        rc = store_generation_close(s->st, s->run, &g, err);
        if (!rc && s->progress) {
            const struct master_member *c = &p->m[champ];
            struct master_progress ev = {.event = MASTER_EVENT_GENERATION,
                                         .generation = gen,
                                         .best = c->fitness,
                                         .mean = sum / (double)p->n,
                                         .n_species = p->n_species,
                                         .champion = c->id,
                                         .n_neurons = c->n_neurons,
                                         .n_conns = c->n_conns,
                                         .tested = task->champion_test != NULL,
                                         .test_solved = test.solved,
                                         .test_score = test.fitness,
                                         .evals = s->evals_total,
                                         .elapsed = now() - s->t_start};
            report(s, &ev);
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
    master_pop_release(&old);
    memset(&s->next, 0, sizeof s->next);
    master_pop_sort(&s->pop);
    return 0;
}

static int run_generation(struct search *s, const struct store_set *pending, struct tv_error *err)
{
    int64_t gen = s->gen + 1;
    int64_t *elites = NULL;
    size_t n_elites = 0, n_children = 0;
    struct master_child *children = NULL;
    int rc = 0;
    s->t_gen = now();
    s->solved = 0;
    if (gen == 0) {
        n_children = (size_t)s->cfg.pop_size;
        children = calloc(n_children, sizeof *children);
        if (!children)
            return tv_error_set(err, TV_ENOMEM, "master: out of memory");
        for (size_t i = 0; i < n_children; i++)
            children[i] = (struct master_child){WORKER_OP_INIT, -1, -1};
    } else {
        struct tv_rng rng;
        tv_rng_init(&rng, s->cfg.seed, (uint64_t)gen, MASTER_STREAM);
        rc = master_plan(&s->pop, &s->cfg, gen, &rng, &elites, &n_elites, &children, &n_children,
                         err);
        if (rc)
            return rc;
    }
    s->base_id = s->next_id;
    s->plan = children;
    s->n_plan = n_children;
    master_pop_init(&s->next, 0);
    /* Children already in the store (committed before a stop or a crash). */
    for (size_t i = 0; pending && i < pending->n && !rc; i++) {
        const struct store_individual *r = &pending->rows[i];
        if (r->generation != gen)
            continue;
        rc = take_child(s, r->id, r->fitness, r->solved, r->genome, r->genome_len, NULL, err);
    }
    struct worker_task *tasks = malloc((n_children ? n_children : 1) * sizeof *tasks);
    size_t n_tasks = 0;
    if (!tasks && !rc)
        rc = tv_error_set(err, TV_ENOMEM, "master: out of memory");
    for (size_t i = 0; i < n_children && !rc; i++) {
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
    /* Parent genomes travel encoded: as they arrived, or encoded here once
     * (a member whose encoding was not kept). */
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
    if (!rc)
        rc = farm_run(s->farm, tasks, n_tasks, sink, s, err);
    int flush = flush_rows(s, err);
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

/* ---- start, resume, loop ---------------------------------------------- */

static int load_resume(struct search *s, struct store_set *pending, struct tv_error *err)
{
    struct store_checkpoint cp;
    memset(&cp, 0, sizeof cp);
    int rc = store_checkpoint_load(s->st, s->run, &cp, err);
    if (rc == TV_ENOTFOUND) {
        /* no generation closed yet: only children of generation 0 */
        tv_error_clear(err);
        s->gen = -1;
        s->next_id = 0;
        return store_individuals_load(s->st, s->run, 0, 1, pending, err);
    }
    if (rc)
        return rc;
    s->gen = cp.generation;
    for (size_t i = 0; i < cp.population.n && !rc; i++) {
        const struct store_individual *r = &cp.population.rows[i];
        struct genome *g = genome_new();
        rc = g ? store_set_genome(&cp.population, i, g, err)
               : tv_error_set(err, TV_ENOMEM, "out of memory");
        if (!rc) {
            rc = master_pop_add(&s->pop, r->id, r->fitness, r->solved, g, err);
            if (!rc)
                rc = master_pop_keep_encoding(&s->pop, r->genome, r->genome_len, err);
        } else {
            genome_free(g);
        }
    }
    if (!rc) {
        master_pop_sort(&s->pop);
        s->pop.cap_species = 1024 + cp.state_len / 8;
        s->pop.sp = calloc(s->pop.cap_species, sizeof *s->pop.sp);
        rc = s->pop.sp ? state_decode(s, cp.state, cp.state_len, err)
                       : tv_error_set(err, TV_ENOMEM, "out of memory");
    }
    if (!rc) {
        *pending = cp.pending;
        memset(&cp.pending, 0, sizeof cp.pending);
    }
    store_checkpoint_release(&cp);
    return rc;
}

static int done(const struct search *s)
{
    if (s->cfg.stop_on_solve && s->solved)
        return 1;
    if (!isnan(s->cfg.fitness_target))
        for (size_t i = 0; i < s->pop.n; i++)
            if (s->pop.m[i].fitness >= s->cfg.fitness_target)
                return 1;
    return s->gen + 1 >= s->cfg.generations;
}

static int search_loop(struct search *s, struct tv_error *err)
{
    struct store_set pending;
    memset(&pending, 0, sizeof pending);
    int rc = load_resume(s, &pending, err);
    if (!rc && s->resume_name[0]) {
        int64_t loaded = s->gen, run;
        rc = store_run_resume(s->st, s->resume_name, &run, err);
        struct store_generation last;
        int got = rc ? 1 : store_generation_get(s->st, run, -1, &last, NULL);
        if (!rc && (run != s->run || (got == 0 ? last.generation : -1) != loaded))
            rc = tv_error_set(err, TV_ESTATE,
                              "%s: run '%s' changed while its checkpoint was loading (another "
                              "writer?): resume again",
                              s->db, s->resume_name);
        s->resuming = !rc;
        if (!rc)
            set_resume_hint(s);
    }
    if (!rc && s->gen >= 0) {
        for (size_t i = 0; i < s->pop.n; i++)
            s->solved |= s->pop.m[i].solved;
    }
    s->t_start = now();
    s->cpu_start = process_cpu();
    int first = 1;
    while (!rc && !(s->gen >= 0 && done(s))) {
        rc = run_generation(s, first ? &pending : NULL, err);
        first = 0;
    }
    store_set_release(&pending);
    return rc;
}

/* Broadcasts the effective config to the workers (an empty text tells them
 * the master could not start). */
static void broadcast_config(int n_ranks, const char *text)
{
    if (n_ranks <= 1)
        return;
    int len = text ? (int)strlen(text) + 1 : 0;
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (len > 0)
        MPI_Bcast((void *)text, len, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static int open_run(struct search *s, const struct master_run_opts *o, struct tv_buf *effective,
                    struct tv_error *err)
{
    int rc;
    if (!o->resume) {
        rc = master_config_parse(&s->cfg, o->config_text, o->config_file, err);
        if (rc)
            return rc;
        if (o->name) {
            char why[160];
            if (master_run_name_check(o->name, why, sizeof why))
                return tv_error_set(err, TV_EINVAL, "--name '%s': %s", o->name, why);
            snprintf(s->cfg.name, sizeof s->cfg.name, "%s", o->name);
        }
        if (o->seed >= 0)
            s->cfg.seed = (uint64_t)o->seed;
        if (o->generations > 0)
            s->cfg.generations = o->generations;
        if (o->quiet)
            s->cfg.quiet = 1;
        s->db = o->db ? o->db : s->cfg.db;
    } else {
        s->db = o->db;
    }
    /* Only a new run creates the database: a resume of a missing, empty or
     * foreign file must refuse it, not initialise it. */
    struct store_options so = {.flags = (o->resume ? 0 : STORE_CREATE) |
                                        (s->cfg.sync_full ? STORE_SYNC_FULL : 0)};
    rc = store_open(s->db, &so, &s->st, err);
    if (rc)
        return rc;
    if (!o->resume) {
        rc = master_config_dump(&s->cfg, effective, err);
        if (!rc)
            rc = store_run_create(s->st, s->cfg.name, (const char *)effective->data, s->cfg.seed,
                                  TREVO_VERSION, &s->run, err);
        return rc;
    }
    /* resume: the run's stored config, then the allowed changes */
    const char *name = o->name;
    struct store_run_info info;
    memset(&info, 0, sizeof info);
    if (!name) {
        struct store_run_info *runs = NULL;
        size_t n = 0;
        rc = store_runs_list(s->st, &runs, &n, err);
        if (!rc && n != 1)
            rc = tv_error_set(err, TV_EINVAL,
                              "%s holds %zu runs: say which with --name (see trevo status %s)",
                              s->db, n, s->db);
        if (!rc)
            rc = store_run_get(s->st, runs[0].name, &info, err);
        store_runs_free(runs, n);
    } else {
        rc = store_run_get(s->st, name, &info, err);
    }
    if (!rc)
        rc = master_config_parse(&s->cfg, info.config, "stored config", err);
    /* The run is taken for writing (store_run_resume, which writes to the
     * file) only once its checkpoint has loaded (search_loop): a database
     * whose damage only the load finds is refused untouched. */
    if (!rc) {
        s->run = info.run_id;
        snprintf(s->resume_name, sizeof s->resume_name, "%s", info.name);
    }
    for (size_t i = 0; i < o->n_sets && !rc; i++)
        rc = master_config_set(&s->cfg, o->sets[i], err);
    if (!rc && o->generations > 0)
        s->cfg.generations = o->generations;
    if (!rc && o->quiet)
        s->cfg.quiet = 1;
    if (!rc) {
        effective->len = 0;
        rc = master_config_dump(&s->cfg, effective, err);
    }
    store_run_info_release(&info);
    return rc;
}

/* The summary of a search that ended (rc 0 or TV_ESTOP). */
static void report_end(const struct search *s, int rc)
{
    size_t champ = 0;
    for (size_t i = 1; i < s->pop.n; i++)
        if (s->pop.m[i].fitness > s->pop.m[champ].fitness)
            champ = i;
    /* The search's CPU time, start-up (MPI, the database) apart: what
     * waiting for workers and doing their job alone did not take is
     * the master's own work. */
    double cpu = process_cpu() - s->cpu_start;
    double wait_cpu, work_cpu;
    farm_cpu(s->farm, &wait_cpu, &work_cpu);
    const struct master_member *c = &s->pop.m[champ];
    struct master_progress ev = {.event = MASTER_EVENT_END,
                                 .generation = s->gen,
                                 .best = c->fitness,
                                 .champion = c->id,
                                 .n_neurons = c->n_neurons,
                                 .n_conns = c->n_conns,
                                 .evals = s->evals_total,
                                 .elapsed = now() - s->t_start,
                                 .outcome = rc == TV_ESTOP ? MASTER_STOPPED
                                            : s->solved    ? MASTER_SOLVED
                                                           : MASTER_DONE,
                                 .cpu = cpu,
                                 .own_cpu = cpu - wait_cpu - work_cpu,
                                 .startup_cpu = s->cpu_start};
    report(s, &ev);
}

int master_search(const struct master_run_opts *o, struct tv_error *err)
{
    struct search s;
    memset(&s, 0, sizeof s);
    s.gen = -1;
    s.n_ranks = o->n_ranks > 1 ? o->n_ranks : 1;
    struct tv_buf effective = {0};
    int rc = open_run(&s, o, &effective, err);
    broadcast_config(s.n_ranks, rc ? NULL : (const char *)effective.data);
    master_pop_init(&s.pop, s.cfg.compat_threshold);
    if (!rc && !o->resume) /* a resume says it once its checkpoint loaded */
        set_resume_hint(&s);
    if (!rc)
        rc = farm_new(&s.cfg.worker, s.n_ranks, s.cfg.batch, s.cfg.inflight, &s.farm, err);
    if (!s.cfg.quiet) {
        s.progress = o->progress;
        s.progress_ctx = o->progress_ctx;
    }
    if (!rc) {
        if (s.progress)
            report(&s, &(struct master_progress){.event = MASTER_EVENT_START});
        rc = search_loop(&s, err);
    }
    int status = rc == 0 ? STORE_DONE : rc == TV_ESTOP ? STORE_STOPPED : STORE_FAILED;
    if (s.st && s.run > 0 && (!o->resume || s.resuming)) {
        /* A failure to record how the run ended is the search's failure
         * when nothing failed before it. */
        struct tv_error st_err = {0};
        int st_rc = store_run_set_status(s.st, s.run, status, &st_err);
        if (st_rc && (rc == 0 || rc == TV_ESTOP)) {
            rc = st_rc;
            tv_error_set(err, rc, "%s", st_err.msg);
        }
    }
    if (s.progress && s.st && (rc == 0 || rc == TV_ESTOP) && s.pop.n)
        report_end(&s, rc);
    farm_free(s.farm);
    master_pop_release(&s.pop);
    master_pop_release(&s.next);
    for (size_t i = 0; i < s.n_spare; i++)
        genome_free(s.spare[i]);
    free(s.spare);
    free(s.rows);
    free(s.row_off);
    tv_buf_free(&s.row_bytes);
    tv_buf_free(&effective);
    struct tv_error close_err = {0};
    /* (an int, whatever store_close returns, is its failure) */
    if (s.st && store_close(s.st, &close_err) && (rc == 0 || rc == TV_ESTOP)) {
        rc = close_err.code ? close_err.code : TV_EDB;
        tv_error_set(err, rc, "%s", close_err.msg);
    }
    return rc;
}
