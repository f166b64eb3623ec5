/*
 * store.h -- the whole history of a search in one SQLite file: runs, every
 * individual ever evaluated with its genome, per-generation statistics,
 * species, and the checkpoints a run resumes from.
 *
 * Invariants:
 *   - A database is ours when its header carries application_id
 *     STORE_APPLICATION_ID and a trevo_meta table; its schema version is
 *     PRAGMA user_version. Anything else (another program's file, a newer
 *     schema, a file that fails PRAGMA quick_check) is refused with a message
 *     saying which, and the file is not modified.
 *   - A generation is *closed* by one transaction holding its statistics, its
 *     species and its checkpoint (the master's opaque state plus the ids of the
 *     population). Generations close in order 0, 1, 2, ...; after a closed
 *     generation G nothing of G (or earlier) is written again. Individuals of
 *     later generations committed before a crash are *pending*: a resume finds
 *     them with the checkpoint, so nothing committed is evaluated twice.
 *   - Every row added in one store_add_individuals() call commits or none does.
 *   - At most one writer per run: writing a run takes an open-file-description
 *     lock on one byte of "<database>-lock"; the kernel drops it when the
 *     process dies (kill -9 included), so a stale lock never blocks a resume.
 *   - WAL journal, page_size 16384, synchronous NORMAL (FULL on request),
 *     busy_timeout on every connection; the WAL is truncated on close and
 *     at a generation boundary once it is over checkpoint_wal_bytes (skipped,
 *     never waited on for longer than checkpoint_wait_ms, while a reader
 *     holds an old snapshot). As it grows, a writer's own thread (with its
 *     own connection) copies what is committed into the database, without
 *     waiting for or blocking anyone, so that a truncation has little left
 *     to copy.
 *
 * Genomes are stored as the msgpack bytes of genome_encode() and decoded with
 * genome_decode() (which validates) when read; a damaged row is an error
 * naming the run and the individual.
 *
 * Files: store.c (prepared statements, SQLite results turned into TV_E*
 * codes, transactions), open.c (opening, checking, creating, migrating,
 * closing), wal.c (the background WAL copy and the truncation), runs.c (runs,
 * writer locks, store_run_pick), individuals.c, generations.c, checkpoint.c,
 * schema.c (tables, indexes, views, migrations); what they share is in the
 * private store_impl.h.
 *
 * This module includes genome/ headers, sqlite3.h (in its .c files and the
 * private store_impl.h only) and the C
 * library; never MPI. It runs threads of its own (a writer's background copy,
 * the prefault of a checkpoint load) that block every signal and never call
 * the program back: under MPI that is MPI_THREAD_FUNNELED. Functions return
 * 0 or a negative TV_E* code and fill the optional `err` with a message that
 * starts with the database's path. A full disk is TV_ENOSPACE; what was
 * committed before stays intact.
 */
#ifndef TREVO_STORE_H
#define TREVO_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "genome.h"

#define STORE_SCHEMA_VERSION 6
#define STORE_APPLICATION_ID 0x54524556 /* "TREV" */

/* "no individual" for parents, species, champion. */
#define STORE_ID_NONE INT64_C(-1)

struct store; /* an open database: one SQLite connection, its statements, its locks */

enum store_open_flags {
    STORE_CREATE = 1 << 0,    /* create the file (or initialise an empty one) if needed */
    STORE_READONLY = 1 << 1,  /* no writes; for status, queries, a second reader */
    STORE_SYNC_FULL = 1 << 2, /* synchronous=FULL: survives power loss, ~3 ms per commit */
    STORE_NO_CHECK = 1 << 3,  /* skip PRAGMA quick_check on open */
    STORE_CHECK_FULL = 1 << 4 /* quick_check the whole file, however large */
};

/* On open, PRAGMA quick_check covers the whole file up to this size (about
 * 0.4 ms per MB here); past it, every table but individuals and genomes,
 * whose pages are checked by SQLite as they are read (a damaged one is then
 * a TV_ECORRUPT naming the run and the individual). */
#define STORE_FULL_CHECK_BYTES ((int64_t)64 << 20)

struct store_options {
    unsigned flags;         /* enum store_open_flags */
    int busy_timeout_ms;    /* wait for other connections' locks; 0: 5000 */
    int checkpoint_wait_ms; /* longest wait for readers at a WAL truncation; 0: 250 */
    int64_t max_bytes;      /* quota on the database size (TV_ENOSPACE past it); 0: none */
    /* A generation close copies the WAL into the database and truncates it
     * once the WAL is larger than this; 0: STORE_CHECKPOINT_WAL_BYTES; < 0:
     * at every close. (Each truncation costs a few fsyncs, milliseconds that
     * dominate small searches; the WAL is always truncated on close.) In
     * between, the background copy runs each time the WAL has grown by a
     * quarter of this (at least 1 MiB). */
    int64_t checkpoint_wal_bytes;
};
#define STORE_CHECKPOINT_WAL_BYTES (INT64_C(16) << 20)

/* Opens (with STORE_CREATE: creates) the database at path. opts may be NULL
 * (defaults, no creation). On success *out owns the connection; on error *out
 * is NULL and a refused file is left byte-identical:
 *   TV_ENOTFOUND  no such file (without STORE_CREATE)
 *   TV_EFORMAT    not SQLite, not trevo, or a newer schema version
 *   TV_ECORRUPT   fails PRAGMA quick_check (the message quotes its first line;
 *                 see STORE_FULL_CHECK_BYTES for what is checked)
 *   TV_EINVAL     opened for writing on a network file system (NFS, SMB,
 *                 ...: store_network_fs_name), which SQLite's WAL cannot serve
 *   TV_EDB/EIO/ENOMEM  SQLite could not open it. */
int store_open(const char *path, const struct store_options *opts, struct store **out,
               struct tv_error *err);

/* The name of the network file system with statfs(2) magic f_type, or NULL
 * for a local one (store_open refuses to write on the former). */
const char *store_network_fs_name(unsigned long f_type);

/* Truncates the WAL, releases the run locks, closes. Always frees s (NULL is
 * a no-op); returns a nonzero code only if SQLite reported an error. */
int store_close(struct store *s, struct tv_error *err);

/* The path given to store_open(); borrowed until store_close(). */
const char *store_path(const struct store *s);

/* What a connection has done, for tests and diagnostics. */
struct store_counters {
    uint64_t quick_checks;     /* PRAGMA quick_check statements store_open ran */
    uint64_t wal_copies_asked; /* copies of the WAL into the database asked for */
    uint64_t wal_copies;       /* ... and run to their end (asked ones may merge) */
    uint64_t wal_truncations;  /* WAL truncations at generation closes */
};

/* Fills *out. A copy of the WAL asked for is waited for first, so that the
 * counts cover every call made on s before. */
void store_counters_get(struct store *s, struct store_counters *out);

/* ---- runs ---------------------------------------------------------------- */

/* Stored as text in runs.status; explicit values, grow only at the end. */
enum store_status { STORE_RUNNING = 0, STORE_STOPPED = 1, STORE_DONE = 2, STORE_FAILED = 3 };
const char *store_status_name(int status); /* "running", ...; "?" if unknown */

struct store_run_info {
    int64_t run_id;
    char *name;            /* owned */
    char *config;          /* owned: the config text the run was created with */
    char *program_version; /* owned */
    uint64_t seed;
    int status;              /* enum store_status */
    char created_at[32];     /* UTC, "2025-01-31T12:00:00.000Z" */
    char updated_at[32];     /* last change: creation, a closed generation, status */
    int64_t last_generation; /* last closed generation, -1 if none */
    int has_writer;          /* 1 if a live process holds the run's writer lock */
};
void store_run_info_release(struct store_run_info *info); /* frees the strings */

/* Creates run `name` and makes this connection its writer. TV_ESTATE if a run
 * of that name exists or the store is read-only. */
int store_run_create(struct store *s, const char *name, const char *config, uint64_t seed,
                     const char *program_version, int64_t *run_id, struct tv_error *err);

/* Makes this connection the writer of the existing run `name` (to resume it)
 * and sets its status to running. TV_ENOTFOUND if there is no such run;
 * TV_ESTATE if another live connection writes it ("... is being written by
 * pid P on host H since T"). A writer killed with SIGKILL holds no lock. */
int store_run_resume(struct store *s, const char *name, int64_t *run_id, struct tv_error *err);

/* Reads the run called name into *info (release it afterwards). TV_ENOTFOUND. */
int store_run_get(struct store *s, const char *name, struct store_run_info *info,
                  struct tv_error *err);

/* The run a command means, read into *info (release it afterwards): the run
 * called name, or with name NULL the only run of the database.
 *   TV_ENOTFOUND  "<db>: no run named 'x' (runs: 'a', 'b')", "<db> holds no runs"
 *   TV_EINVAL     "<db> holds 3 runs ('a', 'b', 'c'): say which with --name" */
int store_run_pick(struct store *s, const char *name, struct store_run_info *info,
                   struct tv_error *err);

/* Every run, in creation order: *out is an array of *n entries, free it with
 * store_runs_free(). */
int store_runs_list(struct store *s, struct store_run_info **out, size_t *n, struct tv_error *err);
void store_runs_free(struct store_run_info *runs, size_t n);

/* Sets the run's status (this connection must be its writer). */
int store_run_set_status(struct store *s, int64_t run, int status, struct tv_error *err);

/* Notes of a run: named text values stored with it (table run_notes), for
 * what belongs to a run as a whole and is not in its config -- a plugin
 * task's path and SHA-256, the final champion's test accuracy. Keys are
 * short names ("task.plugin_sha256"); a key holds one value.
 * store_run_note_set sets or replaces one (this connection must be the run's
 * writer). store_run_note_get reads one into *value (malloc'd, the caller
 * frees it): TV_ENOTFOUND when the run has no such note (also in a database
 * of schema version 2 opened read-only, which has no notes yet). */
int store_run_note_set(struct store *s, int64_t run, const char *key, const char *value,
                       struct tv_error *err);
int store_run_note_get(struct store *s, int64_t run, const char *key, char **value,
                       struct tv_error *err);

/* ---- individuals ---------------------------------------------------------- */

/* Operator codes: stored, explicit, grow only at the end. The table
 * `operators` maps them to names; unknown codes are stored as given. */
enum store_op {
    STORE_OP_INIT = 0,             /* a starting genome */
    STORE_OP_MUTATE = 1,           /* one parent, mutated */
    STORE_OP_CROSSOVER = 2,        /* two parents, no mutation */
    STORE_OP_CROSSOVER_MUTATE = 3, /* two parents, then mutated */
    STORE_OP_ELITE = 4,            /* a copy of parent1 carried over */
    STORE_OP_IMPORT = 5            /* from a file */
};

struct store_individual {
    int64_t id;               /* assigned by the master, unique within the run, >= 0 */
    int64_t generation;       /* >= 0 */
    double fitness;           /* NaN is stored as NULL and read back as NaN */
    int64_t parent1, parent2; /* STORE_ID_NONE for none */
    int32_t op;               /* enum store_op */
    int64_t species;          /* STORE_ID_NONE for none */
    uint32_t n_neurons, n_conns, n_skip, n_recurrent;
    double eval_seconds;
    int32_t rank;          /* MPI rank that evaluated it (0: the master) */
    const uint8_t *genome; /* genome_encode() bytes; borrowed (see store_set) */
    size_t genome_len;
    int32_t solved; /* 1 if it passed the task's success test, else 0 */
    /* The objectives the worker measured (since version 6; NaN is stored as
     * NULL and read back as NaN, as are the rows of older versions): the
     * validation accuracy, and the int8 form's flash and RAM bytes and
     * multiply-accumulates (whole numbers, stored as integers) */
    double valid_acc, flash, ram, macs;
};

/* Adds rows[0..n) to the run in one transaction: all or nothing. This
 * connection must be the run's writer. TV_EINVAL for a bad row or an id that
 * exists (the message names it), TV_ESTATE for a generation already closed,
 * TV_ENOSPACE on a full disk. */
int store_add_individuals(struct store *s, int64_t run, const struct store_individual *rows,
                          size_t n, struct tv_error *err);

/* A set of individuals read back: rows[i].genome points into memory the set
 * owns (NULL, 0 when loaded without genomes), valid until the release. */
struct store_set {
    struct store_individual *rows; /* [n] */
    size_t n;
    struct tv_buf bytes; /* the genomes, back to back */
    char where[192];     /* "run.db: run 'xor'", the prefix of decode errors */
};
void store_set_release(struct store_set *set); /* leaves an empty set */

/* Decodes and validates rows[i]'s genome into g. TV_ECORRUPT naming the run
 * and the individual if the bytes are damaged; TV_EINVAL if i is out of
 * range or the set was loaded without genomes. */
int store_set_genome(const struct store_set *set, size_t i, struct genome *g, struct tv_error *err);

/* Every individual of `generation` committed so far, by id. with_genomes: 0
 * reads only the rows (fast), 1 also the genome bytes. */
int store_individuals_load(struct store *s, int64_t run, int64_t generation, int with_genomes,
                           struct store_set *out, struct tv_error *err);

/* One individual's row, without its genome (genome NULL, genome_len 0):
 * what the row-only questions need, also for an individual whose genome was
 * dropped. TV_ENOTFOUND if there is no such individual. */
int store_individual_row(struct store *s, int64_t run, int64_t id, struct store_individual *out,
                         struct tv_error *err);

/* One individual's row (genome borrowed until the next call on s: copy it) */
int store_individual_get(struct store *s, int64_t run, int64_t id, struct store_individual *out,
                         struct tv_error *err);

/* Reads individual id's genome into g, decoded and validated. TV_ENOTFOUND if
 * there is no such individual, or its genome was dropped by the run's
 * retention policy (enum store_genomes: the message says so), TV_ECORRUPT if
 * its row is damaged. */
int store_genome_read(struct store *s, int64_t run, int64_t id, struct genome *g,
                      struct tv_error *err);

/* ---- generations, species, checkpoints ------------------------------------ */

struct store_species {
    int64_t id;
    uint32_t size;
    double best_fitness;
    double mean_fitness;
    int64_t representative; /* an individual id, or STORE_ID_NONE */
    int64_t born;           /* generation the species appeared in */
    int64_t stagnant;       /* generations without improvement */
};

/* Which genome bytes a run keeps (struct store_generation.keep; [store]
 * genomes in a config). Explicit values, grow only at the end. The rows of
 * individuals are always kept, whatever the policy: only bytes in the
 * genomes table (and the checkpoints of earlier generations, whose master
 * state holds copies of the species' representatives) are dropped, in the
 * transaction that closes a generation, so a resume -- after kill -9
 * included -- always finds what the latest checkpoint needs.
 *   ALL         every genome ever evaluated, and every checkpoint (what
 *               versions before 4 did; 0, so a zeroed struct keeps all).
 *   POPULATION  closing generation G keeps the genomes of G's checkpoint
 *               population (its children and the elites carried over) and
 *               of every individual with a higher id than all of them (the
 *               children of G + 1 committed before a crash); every other
 *               genome of the run, and every checkpoint before G's, goes.
 *   CHAMPIONS   as POPULATION, and also the champion of every closed
 *               generation (generations.champion), so each generation's
 *               champion can still be written or drawn.
 *   ELITE       as CHAMPIONS, and also every elite: a genome carried over
 *               from an earlier generation into a closed generation's
 *               population keeps its bytes for good (closing G drops only
 *               genomes of individuals evaluated in G - 1 or G, so on a
 *               switch from another policy on resume, what older
 *               generations kept stays). The default of [store] genomes. */
enum store_genomes {
    STORE_GENOMES_ALL = 0,
    STORE_GENOMES_POPULATION = 1,
    STORE_GENOMES_CHAMPIONS = 2,
    STORE_GENOMES_ELITE = 3
};

struct store_generation {
    int64_t generation;        /* must be the last closed generation + 1 (0 first) */
    double best, mean, median; /* of the fitnesses evaluated in this generation */
    int64_t champion;          /* id of the best individual, or STORE_ID_NONE */
    uint64_t n_evals;          /* evaluations made in this generation */
    uint64_t n_failed;         /* of them, failed (fitness NaN: the genome refused); written,
                                  not read back (schema version 5) */
    double wall_seconds;       /* wall time of the generation */
    int solved;                /* a member of the population meets the task's success test */
    /* The task's champion test, for tasks that have one (tested = 1): its
     * score, and whether the champion passed (it is then marked solved). */
    int champion_tested, champion_solved;
    double champion_score;
    const struct store_species *species; /* [n_species], borrowed */
    size_t n_species;
    /* The checkpoint: everything the master needs to continue exactly. */
    const void *state; /* the master's own bytes (RNG, species state, counters) */
    size_t state_len;
    const int64_t *population; /* [n_population] ids the next generation is bred from */
    size_t n_population;       /* >= 1; every id must already be committed */
    int keep;                  /* enum store_genomes: what the close drops (0, ALL: nothing) */
};

/* Closes a generation: statistics, species and checkpoint in one transaction
 * (with g->keep other than ALL, the genomes and checkpoints it no longer
 * needs are deleted in the same transaction), then truncates the WAL. TV_ESTATE if the generation
 * is not the next one, TV_EINVAL if a population id is not committed, TV_ENOSPACE on a full disk
 * (the generation then stays open, and may be closed again). */
int store_generation_close(struct store *s, int64_t run, const struct store_generation *g,
                           struct tv_error *err);

/* Statistics of a closed generation, read back (generation < 0: the last).
 * species/state/population are left NULL/0, and champion_solved 0 (the
 * champion's own solved flag says it). TV_ENOTFOUND. */
int store_generation_get(struct store *s, int64_t run, int64_t generation,
                         struct store_generation *out, struct tv_error *err);

struct store_checkpoint {
    int64_t generation; /* the closed generation it was written with */
    uint8_t *state;     /* owned: the master's bytes */
    size_t state_len;
    struct store_set population; /* in the order of the saved ids, with genomes */
    struct store_set pending;    /* individuals of later generations (committed
                                    before a stop or a crash), by id, with genomes */
};
void store_checkpoint_release(struct store_checkpoint *c);

/* Loads the run's latest checkpoint with its population and the pending
 * individuals. TV_ENOTFOUND if no generation was closed yet (then only
 * pending individuals of generation 0 may exist: see store_individuals_load). */
int store_checkpoint_load(struct store *s, int64_t run, struct store_checkpoint *out,
                          struct tv_error *err);

/* ---- size and the accuracy-size front ------------------------------------- */

struct store_usage {
    int64_t bytes;       /* the database: page_count x page_size, as this connection sees it */
    int64_t free_bytes;  /* of which free pages (reused before the file grows) */
    int64_t individuals; /* rows of individuals of the run */
    int64_t genomes;     /* ... that still have their genome */
    int64_t generations; /* closed generations of the run */
};

/* Fills *out for run (run < 0: every run of the database together). Cheap:
 * the page counts, and counts read from indexes (the genome bytes are not
 * read). */
int store_usage_get(struct store *s, int64_t run, struct store_usage *out, struct tv_error *err);

/* A point of the accuracy-connections front (the view v_front). */
struct store_front_point {
    int64_t id, generation;
    double fitness;
    uint32_t n_conns, n_neurons, n_skip, n_recurrent;
    double champion_test; /* the best champion test it had as a champion; NaN: none */
};

/* The run's front, by connections (and so by fitness), into *out (*n points,
 * malloc'd: free it). Also on a version 3 file opened read-only. */
int store_front_load(struct store *s, int64_t run, struct store_front_point **out, size_t *n,
                     struct tv_error *err);

/* ---- networks on a device (front.c; schema version 6) ---------------------- */

/* An individual with its device figures (docs/sql.md: individuals). */
struct store_device_point {
    int64_t id, generation;
    double valid_acc, fitness;
    int64_t flash, ram, macs; /* -1: not known */
    int64_t n_conns;
    int has_genome;       /* 1 if its genome is kept ([store] genomes) */
    double champion_test; /* the best champion test it had as a champion; NaN: none */
};

/* The individuals of run born in generations 0..last_generation that have a
 * validation accuracy and a flash figure, into *out (*n, malloc'd: free it):
 * front = 1, only the accuracy-flash front among them (schema.h,
 * STORE_FLASH_FRONT_SELECT), by flash then id; front = 0, all of them, by
 * generation then id. */
int store_device_points_load(struct store *s, int64_t run, int64_t last_generation, int front,
                             struct store_device_point **out, size_t *n, struct tv_error *err);

/* A device budget: -1 leaves a figure free. */
struct store_budget {
    int64_t max_flash, max_ram, max_macs;
};
/* The most accurate individual of run (valid_acc; then less flash, then the
 * lower id) within budget b whose genome is kept; TV_ENOTFOUND if none. */
int store_best_within(struct store *s, int64_t run, const struct store_budget *b,
                      struct store_device_point *out, struct tv_error *err);

#endif
