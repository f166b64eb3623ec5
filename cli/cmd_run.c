/* cmd_run.c -- `trevo run`, `resume`, `status`, `best`. Under mpirun rank 0
 * is the master and every other rank a worker; without mpirun the master does
 * the workers' job itself and MPI is never initialised. */
#include "cli.h"
#include "master.h"
#include "store.h"
#include "task_run.h"

#include <inttypes.h>
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Sets the stop flag, and says at once how to continue: when mpirun tears
 * the job down (a rank died), this may be the master's last word. Only
 * async-signal-safe calls. */
static void on_stop_signal(int sig)
{
    (void)sig;
    master_request_stop();
    const char *hint = master_resume_hint();
    if (!*hint)
        return;
    static const char a[] = "trevo: stop requested: what has arrived is committed; continue with: ";
    ssize_t w = write(2, a, sizeof a - 1);
    w = write(2, hint, strlen(hint));
    w = write(2, "\n", 1);
    (void)w;
}

/* 1 when started by a process manager (mpirun, srun): only then is MPI
 * initialised, so that a plain `trevo run` needs no MPI runtime at all. */
static int launched_by_mpi(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

/* "12.3 MB" into buf: bytes in B, kB, MB or GB (powers of 1000). */
static void human_bytes(char *buf, size_t cap, double bytes)
{
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (u < 4 && (bytes >= 1000 || bytes <= -1000)) {
        bytes /= 1000;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

/* "database 150.8 MB (+25.1 MB: 4.2 MB per generation, 642.0 kB per
 * individual)": a database's size and its growth over n_gens generations
 * and n_inds individuals (without "+growth" when it is the whole size; the
 * rates only when there were some). */
static void db_growth(char *buf, size_t cap, int64_t bytes, int64_t growth, int64_t n_gens,
                      int64_t n_inds)
{
    char size[32], grown[40] = "", per_gen[32], per_ind[32];
    human_bytes(size, sizeof size, (double)bytes);
    if (n_gens <= 0 || n_inds <= 0) {
        snprintf(buf, cap, "database %s", size);
        return;
    }
    if (growth != bytes) {
        human_bytes(per_gen, sizeof per_gen, (double)growth);
        snprintf(grown, sizeof grown, "%s%s: ", growth >= 0 ? "+" : "", per_gen);
    }
    human_bytes(per_gen, sizeof per_gen, (double)growth / (double)n_gens);
    human_bytes(per_ind, sizeof per_ind, (double)growth / (double)n_inds);
    snprintf(buf, cap, "database %s (%s%s per generation, %s per individual)", size, grown, per_gen,
             per_ind);
}

/* The command line's progress report: what `trevo run` prints on stderr. */
static void print_progress(void *ctx, const struct master_progress *p)
{
    (void)ctx;
    if (p->event == MASTER_EVENT_START) {
        fprintf(stderr,
                "trevo: run '%s' in %s, task %s, population %" PRId64 ", %d rank%s "
                "(stopped or killed? continue with: trevo resume %s --name %s)\n",
                p->run, p->db, p->task, p->pop_size, p->n_ranks, p->n_ranks > 1 ? "s" : "", p->db,
                p->run);
    } else if (p->event == MASTER_EVENT_GENERATION) {
        char extra[64] = "", failed[48] = "";
        /* classify's champion test is its validation split (its hold-out
         * with [task] holdout); a pole task's
         * is its generalization test */
        if (p->tested)
            snprintf(extra, sizeof extra, "  %s %.6g%s",
                     strcmp(p->task, "classify") ? "test" : "valid", p->test_score,
                     p->test_solved ? " (solved)" : "");
        if (p->failed)
            snprintf(failed, sizeof failed, "  failed %zu", p->failed);
        fprintf(stderr,
                "gen %4" PRId64 "  best %.6g  mean %.6g%s  species %zu  champion %u neurons "
                "%u conns%s  %.0f evals/s  %.2f s\n",
                p->generation, p->best, p->mean, failed, p->n_species, p->n_neurons, p->n_conns,
                extra, p->elapsed > 0 ? (double)p->evals / p->elapsed : 0.0, p->elapsed);
    } else if (p->event == MASTER_EVENT_END) {
        static const char *const outcome[] = {"done", "solved", "stopped"};
        char final[64] = ""; /* the task's final test (classify: test accuracy) */
        if (p->final_tested)
            snprintf(final, sizeof final, "; final test %.6g", p->final_score);
        char db[256];
        db_growth(db, sizeof db, p->db_bytes, p->db_growth, p->generations_run, (int64_t)p->evals);
        fprintf(stderr,
                "trevo: %s after generation %" PRId64 ": best fitness %.9g (individual %" PRId64
                ", %u neurons, %u connections); %" PRIu64 " evaluations in %.3f s, master CPU "
                "%.3f s (own work %.3f s; start-up %.3f s); %s%s%s\n",
                outcome[p->outcome], p->generation, p->best, p->champion, p->n_neurons, p->n_conns,
                p->evals, p->elapsed, p->cpu, p->own_cpu, p->startup_cpu, db, final,
                p->outcome == MASTER_STOPPED ? "; continue with trevo resume" : "");
    }
}

/* Runs the search as every rank does; returns the exit status. */
static int search_main(struct master_run_opts *o)
{
    struct tv_error err = {0};
    int use_mpi = launched_by_mpi(), rank = 0, size = 1, rc;
    /* Before MPI's initialisation, which takes a while: mpirun forwards SIGUSR1 to every
     * rank, and its default action would kill a rank still starting. The
     * handler only sets a flag; workers then ignore the signals. */
    signal(SIGUSR1, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    signal(SIGINT, on_stop_signal);
    if (use_mpi) {
        /* FUNNELED: the store runs threads of its own (store.h), which
         * never call MPI. */
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "trevo: MPI_Init_thread failed\n");
            return 1;
        }
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    o->n_ranks = size;
    o->progress = print_progress;
    int released = 0;
    o->released = &released;
    if (rank == 0) {
        /* SIGUSR1 (forwarded to every rank by mpirun), SIGTERM, SIGINT: commit
         * what has arrived and stop cleanly, exit 0 (handlers set above). */
        rc = master_search(o, &err);
    } else {
        /* Workers finish their batch and wait for the master's STOP. */
        signal(SIGUSR1, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        rc = master_worker_main(&err);
    }
    int status = 0;
    if (rc == TV_ESTOP) {
        status = 0;
    } else if (rc) {
        if ((rank == 0 || rc != TV_EMPI) && err.msg[0]) /* "": rank 0 says why */
            fprintf(stderr, "trevo%s: %s\n", rank ? " worker" : "", err.msg);
        if (rank == 0 && *master_resume_hint())
            fprintf(stderr, "trevo: nothing committed is lost; %scontinue with: %s\n",
                    rc == TV_EMPI ? "a rank was lost (Open MPI 4.1 cannot go on without it): " : "",
                    master_resume_hint());
        status = 1;
    }
    if (use_mpi) {
        /* A master that failed (a full disk, a damaged row, a worker's error,
         * MPI) may have left workers blocked sending results it will never
         * receive: MPI_Finalize would then wait forever. What was committed
         * is in the store, closed already; end the whole job. A failure
         * before the first task released the workers instead: every rank
         * ends by itself, with status 1 and rank 0's one line. */
        if (rc && rc != TV_ESTOP && size > 1 && rank == 0 && !released) {
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Finalize();
    }
    return status;
}

static const char run_usage[] =
    "usage: trevo run CONFIG [--db FILE] [--name RUN] [--seed N] [--generations N]\n"
    "                        [--quiet | --silent]\n"
    "       trevo run --help-config   (every config key with its default)\n"
    "Runs an experiment. Under `mpirun -n N` rank 0 is the master and ranks 1..N-1 evaluate;\n"
    "alone, one process does everything. SIGUSR1, SIGTERM or SIGINT stop it cleanly (what has\n"
    "arrived is committed; exit status 0); `trevo resume DB` continues. --quiet prints only\n"
    "the closing summary, --silent nothing (errors are always printed).\n";

/* --seed, --generations: a whole number in [min, 2^63 - 1] into *out; else
 * the message on stderr and -1. */
static int run_number(const char *opt, const char *v, uint64_t min, int64_t *out)
{
    struct tv_error err = {0};
    uint64_t x;
    if (!cli_parse_u64(opt, v, INT64_MAX, &x, &err) && x < min)
        tv_error_set(&err, TV_EINVAL, "%s: expected at least %llu, got '%s'", opt,
                     (unsigned long long)min, v);
    if (err.code) {
        fprintf(stderr, "trevo run: %s\n", err.msg);
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}

int cli_cmd_run(int argc, char **argv)
{
    struct master_run_opts o = {0};
    o.seed = -1;
    const char *config = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(run_usage, stdout);
            return 0;
        } else if (!strcmp(a, "--help-config")) {
            master_config_help(stdout);
            return 0;
        } else if (!strcmp(a, "--db") && more) {
            o.db = argv[++i];
        } else if (!strcmp(a, "--name") && more) {
            o.name = argv[++i];
        } else if (!strcmp(a, "--seed") && more) {
            if (run_number(a, argv[++i], 0, &o.seed))
                return 2;
        } else if (!strcmp(a, "--generations") && more) {
            if (run_number(a, argv[++i], 1, &o.generations))
                return 2;
        } else if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--silent")) {
            o.silent = 1;
        } else if (a[0] != '-' && !config) {
            config = a;
        } else {
            return cli_refuse_arg("run", a, run_usage);
        }
    }
    if (!config)
        return cli_usage_error(run_usage);
    struct tv_buf text = {0};
    struct tv_error err = {0};
    /* Only rank 0 reads the file: workers receive the effective config by
     * broadcast, and on a cluster the file may exist on rank 0's host only. */
    const char *rank_env = getenv("OMPI_COMM_WORLD_RANK");
    int is_worker = rank_env && strcmp(rank_env, "0") != 0;
    int rc = is_worker ? 0 : cli_read_file(config, 1 << 20, &text, &err);
    const char *nul = rc || is_worker ? NULL : memchr(text.data, 0, text.len);
    if (nul) {
        size_t line = 1;
        for (const uint8_t *q = text.data; q < (const uint8_t *)nul; q++)
            line += *q == '\n';
        rc = tv_error_set(&err, TV_EFORMAT, "%s:%zu: a NUL byte: not a text config file", config,
                          line);
    }
    if (rc) {
        tv_buf_free(&text);
        return cli_fail(&err);
    }
    o.config_text = is_worker ? "" : (const char *)text.data;
    o.config_file = config;
    int status = search_main(&o);
    tv_buf_free(&text);
    return status;
}

int cli_cmd_resume(int argc, char **argv)
{
    static const char usage[] =
        "usage: trevo resume DB [--name RUN] [--set KEY=VALUE]... [--quiet | --silent]\n"
        "Continues a stopped or killed run from its last checkpoint; nothing committed is\n"
        "evaluated again, and it ends as the uninterrupted run would have. Keys that may\n"
        "change: run.generations, run.fitness_target, run.stop_on_solve, log.quiet,\n"
        "store.genomes (which genomes are kept from then on).\n"
        "A plugin task's run refuses a plugin file of another SHA-256 than it started with;\n"
        "--set task.plugin_sha256=HASH (the new file's) accepts it (docs/plugins.md).\n";
    struct master_run_opts o = {0};
    o.seed = -1;
    o.resume = 1;
    const char **sets = calloc((size_t)argc, sizeof *sets);
    if (!sets)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            free(sets);
            return 0;
        } else if (!strcmp(a, "--name") && i + 1 < argc) {
            o.name = argv[++i];
        } else if (!strcmp(a, "--set") && i + 1 < argc) {
            sets[o.n_sets++] = argv[++i];
        } else if (!strcmp(a, "--quiet")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--silent")) {
            o.silent = 1;
        } else if (a[0] != '-' && !o.db) {
            o.db = a;
        } else {
            free(sets);
            return cli_refuse_arg("resume", a, usage);
        }
    }
    if (!o.db) {
        free(sets);
        return cli_usage_error(usage);
    }
    o.sets = sets;
    int status = search_main(&o);
    free(sets);
    return status;
}

int cli_best_solver(struct store *st, int64_t run, int64_t *id, double *fitness,
                    struct tv_error *err)
{
    struct store_checkpoint cp;
    memset(&cp, 0, sizeof cp);
    int rc = store_checkpoint_load(st, run, &cp, err);
    *id = STORE_ID_NONE;
    *fitness = 0;
    for (size_t i = 0; i < cp.population.n && !rc; i++) {
        const struct store_individual *r = &cp.population.rows[i];
        if (r->solved && (*id == STORE_ID_NONE || r->fitness > *fitness ||
                          (r->fitness == *fitness && r->id < *id))) {
            *id = r->id;
            *fitness = r->fitness;
        }
    }
    store_checkpoint_release(&cp);
    return rc;
}

int cli_cmd_status(int argc, char **argv)
{
    static const char usage[] =
        "usage: trevo status DB\nLists the runs in DB: generation, best fitness, status, and "
        "which individual solves a solved run (its best solver). Status: running (a process "
        "writes it now), interrupted (running, but no process writes it: killed, or torn down "
        "with its job; `trevo resume` continues it), stopped, done or failed.\n";
    if (cli_help(argc, argv, usage))
        return 0;
    if (argc != 2)
        return argc < 2 ? cli_usage_error(usage) : cli_refuse_arg("status", argv[2], usage);
    struct tv_error err = {0};
    struct store *st;
    struct store_options so = {.flags = STORE_READONLY};
    int rc = store_open(argv[1], &so, &st, &err);
    if (rc)
        return cli_fail(&err);
    struct store_run_info *runs = NULL;
    size_t n = 0;
    int any_interrupted = 0;
    rc = store_runs_list(st, &runs, &n, &err);
    if (!rc)
        printf("%-20s %-11s %10s %14s %-24s %-6s %s\n", "run", "status", "generation", "best",
               "updated", "writer", "solved by");
    for (size_t i = 0; i < n && !rc; i++) {
        struct store_generation g;
        char best[32] = "-", solver[32] = "-";
        if (runs[i].last_generation >= 0 &&
            !store_generation_get(st, runs[i].run_id, runs[i].last_generation, &g, NULL)) {
            snprintf(best, sizeof best, "%.6g", g.best);
            int64_t id = STORE_ID_NONE;
            double f;
            if (g.solved)
                rc = cli_best_solver(st, runs[i].run_id, &id, &f, &err);
            if (id != STORE_ID_NONE)
                snprintf(solver, sizeof solver, "%" PRId64, id);
        }
        /* 'running' with nobody writing: killed, or its job torn down */
        int interrupted = runs[i].status == STORE_RUNNING && !runs[i].has_writer;
        if (!rc)
            printf("%-20s %-11s %10" PRId64 " %14s %-24s %-6s %s\n", runs[i].name,
                   interrupted ? "interrupted" : store_status_name(runs[i].status),
                   runs[i].last_generation, best, runs[i].updated_at,
                   runs[i].has_writer ? "active" : "-", solver);
        any_interrupted |= interrupted;
    }
    if (!rc && any_interrupted) {
        printf("(interrupted: killed or torn down with its job; nothing committed is lost)\n");
        for (size_t i = 0; i < n; i++)
            if (runs[i].status == STORE_RUNNING && !runs[i].has_writer)
                printf("continue %s with: trevo resume %s --name %s\n", runs[i].name, argv[1],
                       runs[i].name);
    }
    struct store_usage u;
    if (!rc && !(rc = store_usage_get(st, -1, &u, &err))) {
        char line[256], free_b[32];
        db_growth(line, sizeof line, u.bytes, u.bytes, u.generations, u.individuals);
        human_bytes(free_b, sizeof free_b, (double)u.free_bytes);
        printf("%s; %" PRId64 " generations, %" PRId64 " individuals, %" PRId64
               " with their genome; %s free\n",
               line, u.generations, u.individuals, u.genomes, free_b);
    }
    store_runs_free(runs, n);
    if (store_close(st, rc ? NULL : &err) && !rc)
        rc = err.code;
    return rc ? cli_fail(&err) : 0;
}
