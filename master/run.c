/* run.c -- a search on rank 0 (or alone), with the store: open or resume
 * the run, loop over generations (generation.c) until done, record how it
 * ended. */
#include "farm.h"
#include "search.h"
#include "state.h"
#include "task_run.h"

#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "version.h" /* TREVO_VERSION (the Makefile's) */

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

/* CPU time of the whole process (every thread, MPI's included). */
static double process_cpu(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return 0;
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
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
        if (!rc && (rc = task_check_shape(s->cfg.worker.task, g, err)) != 0)
            tv_error_prefix(err, "%s: individual %" PRId64, s->db, r->id);
        if (!rc)
            rc = master_pop_add(&s->pop, r->id, r->fitness, r->solved, g, err);
        if (rc) { /* master_pop_add takes g only when it succeeds */
            genome_free(g);
        } else {
            master_pop_set_measures(&s->pop, r->valid_acc, r->flash, r->ram, r->macs,
                                    r->generation);
            rc = master_pop_keep_encoding(&s->pop, r->genome, r->genome_len, err);
        }
    }
    if (!rc) {
        master_pop_sort(&s->pop);
        rc = master_state_decode(&s->pop, &s->next_id, s->gen, &s->cfg.worker.limits, s->db,
                                 cp.state, cp.state_len, err);
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
        if (!rc) /* a plugin's hash, which the user may have accepted anew */
            rc = master_plugin_note(s->st, s->run, &s->cfg, err);
    }
    if (!rc && s->gen >= 0) {
        for (size_t i = 0; i < s->pop.n; i++)
            s->solved |= s->pop.m[i].solved;
    }
    struct store_usage u;
    if (!rc && !store_usage_get(s->st, -1, &u, NULL))
        s->db_bytes_start = u.bytes;
    s->gen_start = s->gen;
    s->t_start = tv_now();
    s->cpu_start = process_cpu();
    int first = 1;
    while (!rc && !(s->gen >= 0 && done(s))) {
        rc = master_generation_run(s, first ? &pending : NULL, err);
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

/* Parses the config (a new run's, or the stored one) and opens its task
 * into *task, once: the instance the parse opened to learn the shape. */
static int open_run(struct search *s, const struct master_run_opts *o, struct tv_buf *effective,
                    struct task_instance **task, struct tv_error *err)
{
    int rc;
    if (!o->resume) {
        rc = master_config_parse_task(&s->cfg, o->config_text, o->config_file, task, err);
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
        if (!rc)
            rc = master_plugin_note(s->st, s->run, &s->cfg, err);
        return rc;
    }
    /* resume: the run's stored config, then the allowed changes */
    struct store_run_info info;
    memset(&info, 0, sizeof info);
    rc = store_run_pick(s->st, o->name, &info, err);
    if (!rc)
        rc = master_config_parse_task(&s->cfg, info.config, "stored config", task, err);
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
    if (!rc)
        rc = master_plugin_resume_check(s->st, info.run_id, s->db, info.name, &s->cfg, err);
    if (!rc) {
        effective->len = 0;
        rc = master_config_dump(&s->cfg, effective, err);
    }
    store_run_info_release(&info);
    return rc;
}

/* The champion of the last closed generation: the best fitness, the first
 * of equal ones. */
static size_t champion(const struct search *s)
{
    size_t champ = 0;
    for (size_t i = 1; i < s->pop.n; i++)
        if (s->pop.m[i].fitness > s->pop.m[champ].fitness)
            champ = i;
    return champ;
}

/* The task's final test of the champion (if the kind has one and it ran:
 * classify without a test file has none), stored with the run as its note
 * "final_test" (the score, %.17g) and kept in s->final for the report. */
static int final_test(struct search *s, const struct task_instance *task, struct tv_error *err)
{
    if (!task->kind->final_test || !s->pop.n)
        return 0;
    int rc = task_final_test(task, s->pop.m[champion(s)].genome, &s->final, err);
    if (rc)
        return tv_error_prefix(err, "final test");
    if (!s->final.n_figures)
        return 0;
    char text[32];
    snprintf(text, sizeof text, "%.17g", s->final.fitness);
    return store_run_note_set(s->st, s->run, "final_test", text, err);
}

/* The summary of a search that ended (rc 0 or TV_ESTOP). */
static void report_end(const struct search *s, int rc)
{
    size_t champ = champion(s);
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
                                 .elapsed = tv_now() - s->t_start,
                                 .outcome = rc == TV_ESTOP ? MASTER_STOPPED
                                            : s->solved    ? MASTER_SOLVED
                                                           : MASTER_DONE,
                                 .cpu = cpu,
                                 .own_cpu = cpu - wait_cpu - work_cpu,
                                 .startup_cpu = s->cpu_start,
                                 .final_tested = s->final.n_figures > 0,
                                 .final_score = s->final.fitness,
                                 .generations_run = s->gen - s->gen_start};
    struct store_usage u;
    if (!store_usage_get(s->st, -1, &u, NULL)) {
        ev.db_bytes = u.bytes;
        ev.db_growth = u.bytes - s->db_bytes_start;
    }
    master_search_report(s, &ev);
}

int master_search(const struct master_run_opts *o, struct tv_error *err)
{
    struct search s;
    memset(&s, 0, sizeof s);
    s.gen = -1;
    s.n_ranks = o->n_ranks > 1 ? o->n_ranks : 1;
    struct tv_buf effective = {0};
    struct task_instance *task = NULL;
    int rc = open_run(&s, o, &effective, &task, err);
    broadcast_config(s.n_ranks, rc ? NULL : (const char *)effective.data);
    if (!rc && s.n_ranks > 1) /* before any evaluation: every rank opened the same task */
        rc = master_ranks_agree(&s.cfg, task, s.n_ranks, err);
    if (o->released) /* the workers heard "do not serve" unless MPI itself failed */
        *o->released = rc != 0 && rc != TV_EMPI;
    master_pop_init(&s.pop, s.cfg.compat_threshold);
    if (!rc && !o->resume) /* a resume says it once its checkpoint loaded */
        set_resume_hint(&s);
    if (!rc)
        rc = farm_new(&s.cfg.worker, s.n_ranks, s.cfg.batch, s.cfg.inflight, &s.farm, err);
    if (!o->silent) { /* quiet ([log] quiet, --quiet): the closing summary only */
        s.progress = o->progress;
        s.progress_ctx = o->progress_ctx;
    }
    if (!rc) {
        if (s.progress && !s.cfg.quiet)
            master_search_report(&s, &(struct master_progress){.event = MASTER_EVENT_START});
        rc = search_loop(&s, err);
    }
    /* the final test once the search ended (or stopped), on the master */
    if ((rc == 0 || rc == TV_ESTOP) && s.st && s.run > 0 && (!o->resume || s.resuming)) {
        int f_rc = final_test(&s, task, err);
        if (f_rc)
            rc = f_rc;
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
    tv_buf_free(&s.spare_encoded);
    tv_buf_free(&effective);
    task_close(task);
    struct tv_error close_err = {0};
    /* (an int, whatever store_close returns, is its failure) */
    if (s.st && store_close(s.st, &close_err) && (rc == 0 || rc == TV_ESTOP)) {
        rc = close_err.code ? close_err.code : TV_EDB;
        tv_error_set(err, rc, "%s", close_err.msg);
    }
    return rc;
}
