/*
 * master.h -- master/: rank 0's search, and nothing else: the experiment's
 * config, the evolution loop, the MPI farm that feeds the workers, the start
 * of a run on every rank; also the in-process search when trevo runs alone.
 * The `trevo` program that calls it is cli/.
 *
 * Config: INI sections by concern ([run], [population], [speciation],
 * [genome], [store], [farm], [log], and [task]: the keys the task declares in
 * its own table); every key has a documented default (the typed table of
 * config_keys.c, printed by `trevo run --help-config`); unknown keys, duplicate
 * keys, missing required keys and values of the wrong type or range are
 * refused with "FILE:LINE: key: reason". The config text is stored with the
 * run, so a resume needs no file; master_config_set() applies the keys that
 * may change on resume.
 *
 * Evolution (evolve.c, pop.c) is plain computation over a population, with no
 * MPI and no SQLite, so that tests drive it with hand-made populations: NEAT
 * speciation (compatibility distance, threshold steered toward a target
 * species count), explicit fitness sharing, stagnation, elitism per species,
 * selection within species; or a plain generational GA. Every choice uses an
 * rng seeded from (run seed, generation), ties are broken by id, and results
 * are applied in id order, so a generation's plan is a pure function of the
 * population and the checkpointed state.
 *
 * The search (run.c, generation.c, commit.c, state.c; private search.h) runs
 * one generation after another with the store: plan, evaluate through the
 * farm (farm.c) or worker_process(), commit results in batches, speciate,
 * close the generation with its checkpoint (the master's state: state.c, a
 * parser of database bytes). It prints nothing: progress goes to
 * master_run_opts.progress, errors to the caller with the code that happened.
 * task_run.c starts a run on every rank: the workers' side
 * (master_worker_main) and the ranks' agreement on the task.
 *
 * master/ may include MPI (farm.c, run.c, task_run.c), the store, worker/
 * and the tasks; never cli/.
 */
#ifndef TREVO_MASTER_H
#define TREVO_MASTER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "genome.h"
#include "worker.h"

/* ---- config ------------------------------------------------------------ */

enum master_selection {
    MASTER_SEL_SPECIATED = 0,
    MASTER_SEL_GENERATIONAL = 1,
    MASTER_SEL_NSGA2 = 2 /* non-dominated sorting and crowding distance on the objectives */
};

/* The objectives selection = nsga2 can rank on ([evolution] objectives):
 * accuracies are maximised, sizes minimised. */
enum master_obj {
    MASTER_OBJ_VALID_ACC = 0,
    MASTER_OBJ_FITNESS = 1,
    MASTER_OBJ_FLASH = 2,
    MASTER_OBJ_RAM = 3,
    MASTER_OBJ_MACS = 4,
    MASTER_OBJ_CONNECTIONS = 5,
    MASTER_N_OBJ = 6
};

struct master_config {
    /* [run] */
    char name[64];
    char task[128]; /* a registered task's name, or a plugin's file (plugin.h) */
    uint64_t seed;
    int64_t generations;   /* generations to run, including generation 0 */
    double fitness_target; /* stop when reached (NaN: only the task's success test) */
    int stop_on_solve;     /* stop at the first generation with a solver */
    /* [population] */
    int64_t pop_size;
    int selection; /* enum master_selection */
    int64_t elitism;
    double survival_threshold;
    double crossover_rate;
    double crossover_mutate_rate; /* share of crossover children that are also mutated */
    int64_t tournament_size;
    /* [evolution] (selection above: its home is [population], where the
     * dump writes it; [evolution] selection is read as the same key) */
    uint32_t objectives; /* selection = nsga2: a bit per enum master_obj */
    int64_t max_age;     /* members born more than max_age generations ago leave (0: never) */
    /* [speciation] */
    struct genome_distance_cfg distance;
    double compat_threshold;
    double target_species;
    double threshold_step;
    double threshold_min;
    int64_t stagnation;
    int64_t species_elitism;
    int64_t elitism_min_size; /* species smaller than this keep no elite */
    /* [genome] and [farm]: what workers need */
    struct worker_params worker;
    /* [store] */
    char db[256];
    int sync_full;
    int64_t commit_batch; /* results per store transaction */
    int keep_genomes;     /* enum store_genomes: which genome bytes the store keeps */
    /* [farm] */
    int64_t batch;    /* children per message (0: automatic) */
    int64_t inflight; /* messages in flight per worker */
    /* [log] */
    int quiet;
    /* [task]: the kind [run] task names, and the values of its own keys */
    const struct task_kind *task_kind;
    struct task_params task_params;
    /* resume: the plugin's SHA-256 the user accepts in place of the one the
     * run was started with (--set task.plugin_sha256=HEX); "" when not given */
    char plugin_sha256_accept[65];
};

/* Fills c with the documented defaults. */
void master_config_defaults(struct master_config *c);
/* Parses config text (NUL-terminated) named `file` in messages. TV_EINVAL
 * with "FILE:LINE: key: reason". */
int master_config_parse(struct master_config *c, const char *text, const char *file,
                        struct tv_error *err);
/* Opens c's task with its [task] values (task_open) into *out, which the
 * caller closes with task_close(), and points c->worker.task at it, after
 * master_config_parse (which opened one to learn the task's shape and closed
 * it). A search's ranks use master_config_parse_task instead: one open. */
int master_config_open_task(struct master_config *c, struct task_instance **out,
                            struct tv_error *err);
/* master_config_parse that keeps the task instance it opens to learn the
 * task's shape: *task (NULL on error), closed by the caller with
 * task_close(), and c->worker.task points at it. What a rank of a search
 * calls, so that a task loading data (classify) loads it once per rank. */
int master_config_parse_task(struct master_config *c, const char *text, const char *file,
                             struct task_instance **task, struct tv_error *err);
/* Applies "section.key=value" or "key=value" for a key that may change on
 * resume (run.generations, run.fitness_target, run.stop_on_solve, log.quiet),
 * or "task.plugin_sha256=HASH" for a plugin task: the hash of a changed
 * plugin file the user accepts (plugin_sha256_accept). */
int master_config_set(struct master_config *c, const char *assignment, struct tv_error *err);
/* Applies "task.key=value" or "key=value", a key of kind k's [task] section,
 * to p, checked as a config's [task] line is (`trevo task eval --set`). */
int master_config_task_set(const struct task_kind *k, struct task_params *p, const char *assignment,
                           struct tv_error *err);
/* Appends the whole effective config (every key, its current value) as INI
 * text, NUL-terminated: what a run stores, so that a resume and later
 * versions with other defaults continue exactly. */
int master_config_dump(const struct master_config *c, struct tv_buf *out, struct tv_error *err);
/* Writes every key with its default and documentation, as an INI file. */
void master_config_help(FILE *f);

/* ---- evolution --------------------------------------------------------- */

struct master_member {
    int64_t id;
    double fitness;
    int solved;
    struct genome *genome; /* owned by the population */
    int64_t species;       /* id, or -1 before speciation */
    uint32_t n_neurons, n_conns, n_skip, n_recurrent;
    /* The genome's encoding as it arrived (from a worker or the store), in
     * the population's `encoded` buffer, so that a parent is not encoded
     * again for the workers; len 0: none kept. */
    size_t enc_off, enc_len;
    /* The objectives measured by the worker (NaN: unknown; fitness and
     * n_conns are the others), and the generation the member was evaluated
     * in (its id's individuals.generation): set by master_pop_set_measures,
     * else NaN and -1. */
    double valid_acc, flash, ram, macs;
    int64_t born;
};

struct master_species {
    int64_t id;
    struct genome *rep; /* representative, owned */
    int64_t rep_id;     /* the member whose genome rep copies (-1: not known) */
    int64_t born;
    double best_ever;
    int64_t last_improved; /* generation of the last improvement of best_ever */
    /* this generation: */
    size_t *members; /* indices into the population, by fitness (desc), then id */
    size_t n_members, cap_members;
    double best, mean, adjusted;
    size_t offspring;
};

struct master_pop {
    struct master_member *m; /* by id */
    size_t n, cap;
    struct master_species *sp; /* by id */
    size_t n_species, cap_species;
    double threshold;
    int64_t next_species_id;
    struct tv_buf encoded; /* the members' kept encodings */
};

void master_pop_init(struct master_pop *p, double threshold);
void master_pop_release(struct master_pop *p);
/* Adds a member; takes ownership of genome. */
int master_pop_add(struct master_pop *p, int64_t id, double fitness, int solved,
                   struct genome *genome, struct tv_error *err);
/* Sets the objectives and the birth generation of the last member added. */
void master_pop_set_measures(struct master_pop *p, double valid_acc, double flash, double ram,
                             double macs, int64_t born);
/* Keeps bytes[0..len) as the encoding of the last member added. */
int master_pop_keep_encoding(struct master_pop *p, const uint8_t *bytes, size_t len,
                             struct tv_error *err);
/* Sorts members by id (the order every decision is made in). */
void master_pop_sort(struct master_pop *p);

/* Assigns every member to a species (first whose representative is within
 * the threshold, in species id order; else a new species), drops empty
 * species, updates representatives, steers the threshold. */
int master_speciate(struct master_pop *p, const struct master_config *c, int64_t generation,
                    struct tv_error *err);

/* Ranks the members of every species, sets each member's species, computes
 * best and mean, and records improvements of best_ever. Speciation calls it;
 * so does a resume once the checkpointed membership is restored. */
void master_species_finish(struct master_pop *p, int64_t generation);

/* One planned child. */
struct master_child {
    int32_t op;               /* enum worker_op */
    int64_t parent1, parent2; /* ids; parent1 is the fitter */
};

/* Plans the next generation from a speciated population: elites (ids kept,
 * not re-evaluated) and children (to evaluate). rng is the master's stream
 * for this generation. *elites and *children are malloc'd arrays. */
int master_plan(struct master_pop *p, const struct master_config *c, int64_t generation,
                struct tv_rng *rng, int64_t **elites, size_t *n_elites,
                struct master_child **children, size_t *n_children, struct tv_error *err);

/* The index of member id, or -1. */
ptrdiff_t master_pop_find(const struct master_pop *p, int64_t id);

/* ---- the search -------------------------------------------------------- */

/* What a search reports as it goes (to master_run_opts.progress; nothing when
 * the config says log.quiet). Strings are borrowed for the call. */
enum master_event {
    MASTER_EVENT_START = 0,      /* the run is open: run, db, task, pop_size, n_ranks */
    MASTER_EVENT_GENERATION = 1, /* a generation closed: generation .. elapsed */
    MASTER_EVENT_END = 2         /* the search ended (done, solved or stopped): the summary */
};
enum master_outcome { MASTER_DONE = 0, MASTER_SOLVED = 1, MASTER_STOPPED = 2 };

struct master_progress {
    int event; /* enum master_event */
    const char *run, *db, *task;
    int64_t pop_size;
    int n_ranks;
    int64_t generation;               /* the last closed one */
    double best, mean;                /* GENERATION: the champion's fitness, the mean
                                         (of the members not failed) */
    size_t failed;                    /* GENERATION: children whose evaluation failed */
    size_t n_species;                 /* GENERATION */
    int64_t champion;                 /* END: the champion's id */
    uint32_t n_neurons, n_conns;      /* the champion's */
    int tested, test_solved;          /* GENERATION: the task's champion test, if it has one */
    double test_score;                /* GENERATION */
    uint64_t evals;                   /* evaluations since the search (re)started */
    double elapsed;                   /* seconds since then */
    int outcome;                      /* END: enum master_outcome */
    double cpu, own_cpu, startup_cpu; /* END: the master's CPU seconds */
    int final_tested;                 /* END: the task's final test ran on the champion */
    double final_score;               /* END: its score (classify: test accuracy) */
    /* END: the database's size (page count x page size) and how much it
     * grew in this search (since the start or resume), over the generations
     * and evaluations of this search */
    int64_t db_bytes, db_growth, generations_run;
};
typedef void (*master_progress_fn)(void *ctx, const struct master_progress *p);

struct master_run_opts {
    const char *config_text; /* for a new run */
    const char *config_file; /* its name, for messages */
    const char *db;          /* overrides [store] db */
    const char *name;        /* overrides [run] name */
    int64_t seed;            /* >= 0 overrides [run] seed */
    int64_t generations;     /* > 0 overrides [run] generations */
    int resume;              /* 1: continue run `name` in db */
    const char *const *sets; /* resume: key=value assignments */
    size_t n_sets;
    int quiet;                   /* no line per generation; the closing summary stays */
    int silent;                  /* no progress at all */
    int n_ranks;                 /* MPI_COMM_WORLD's size, 1 when alone */
    master_progress_fn progress; /* NULL: none */
    void *progress_ctx;
    /* out, may be NULL: 1 when the search failed before the workers' first
     * task (a config, data or task error) and told them so: they end on
     * their own, so the job needs no MPI_Abort */
    int *released;
};

/* Runs (or resumes) a search, as rank 0 of MPI_COMM_WORLD when n_ranks > 1
 * (the workers wait in master_worker_main) or alone. Returns 0 when the run
 * ended, TV_ESTOP when it stopped on request (everything that arrived is
 * committed), else an error code. */
int master_search(const struct master_run_opts *o, struct tv_error *err);
/* 0 if name can name a run (in a config file or with --name), else -1 and
 * why says what a run name may be. */
int master_run_name_check(const char *name, char *why, size_t why_len);

/* "trevo resume DB --name RUN" once master_search holds its run for
 * writing (a resume: once the checkpoint loaded), else
 * "" (a static buffer: safe to read from a signal handler). */
const char *master_resume_hint(void);

/* A rank >= 1: receives the config from rank 0 and serves tasks until told
 * to stop. TV_ESTATE with an empty message when rank 0 could not start or
 * refused what the ranks opened (rank 0 reports why). */
int master_worker_main(struct tv_error *err);

/* Set from a signal handler: finish what has arrived, commit, stop. */
void master_request_stop(void);

#endif
