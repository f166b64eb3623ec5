/*
 * store_impl.h -- private to store/: what its files share. The connection
 * (struct store), its prepared statements, the runs it writes, and the
 * helpers every part uses: SQLite results turned into our errors,
 * transactions, the WAL copy, reading individual rows. No file outside
 * store/ includes it.
 *
 * Helpers return an SQLite result code where they say so, else 0 or a
 * negative TV_E* code with err filled (as the public functions do).
 */
#ifndef TREVO_STORE_IMPL_H
#define TREVO_STORE_IMPL_H

#define _GNU_SOURCE /* F_OFD_SETLK: locks owned by an open file, not a process */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store.h"

#define DEFAULT_BUSY_MS 5000
#define DEFAULT_CHECKPOINT_WAIT_MS 250
#define PAGE_SIZE 16384

/* ---- prepared statements: made once per connection ----------------------- */

#define IND_COLS                                                                                   \
    "i.id, i.generation, i.fitness, i.parent1, i.parent2, i.op, i.species, i.n_neurons, "          \
    "i.n_conns, i.n_skip, i.n_recurrent, i.eval_seconds, i.rank, i.solved, " IND_OBJ_COLS
#define N_IND_COLS 18
/* The objectives (since version 6), and what a read-only connection reads in
 * their place from an older file (prepare_all substitutes it). */
#define IND_OBJ_COLS "i.valid_acc, i.flash, i.ram, i.macs"
#define IND_OBJ_NULLS "NULL, NULL, NULL, NULL"
#define IND_INSERT_COLS                                                                            \
    "run_id, id, generation, fitness, parent1, parent2, op, species, n_neurons, n_conns, "         \
    "n_skip, n_recurrent, eval_seconds, rank, solved, valid_acc, flash, ram, macs"
#define N_IND_INSERT_COLS 19
#define IND_VALUES "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define N_GENOME_INSERT_COLS 3
/* Rows per multi-row INSERT: a statement run once per row costs more than
 * the row itself, and cursors that stay open append at the end of a b-tree
 * without a search from the root. */
#define INSERT_ROWS 32
#define BY_GENERATION " INDEXED BY individuals_by_generation"
#define NOW "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

enum st {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_RUN_INSERT,
    ST_RUN_BY_NAME,
    ST_RUN_LIST,
    ST_RUN_NAME,
    ST_RUN_WRITER,
    ST_RUN_SET_WRITER,
    ST_RUN_SET_STATUS,
    ST_RUN_TOUCH,
    ST_LAST_CLOSED,
    ST_IND_INSERT,
    ST_GENOME_INSERT,
    ST_IND_INSERT_MANY,    /* INSERT_ROWS rows at once: SQL made by many_sql() */
    ST_GENOME_INSERT_MANY, /* the same for their genomes */
    ST_IND_GET,
    ST_IND_EXISTS,
    ST_IND_ID_RANGE,
    ST_IND_OF_GEN,
    ST_IND_OF_GEN_GENOMES,
    ST_IND_PENDING,
    ST_IND_RANGE,
    ST_GENOME_RANGE,
    ST_GENOME_GET,
    ST_GENERATION_INSERT,
    ST_IND_MARK_SOLVED,
    ST_GENERATION_GET,
    ST_SPECIES_INSERT,
    ST_CKPT_INSERT,
    ST_CKPT_LATEST,
    ST_IND_ROW,          /* one individual's row, no genome */
    ST_GENOME_IDS,       /* the ids of a run's genomes up to an id */
    ST_GENOME_DELETE,    /* retention: one genome */
    ST_CHAMPIONS,        /* every closed generation's champion */
    ST_CKPT_DROP_OLDER,  /* retention: the checkpoints before a generation */
    ST_GENOME_IDS_SINCE, /* the ids of a run's genomes up to an id, of individuals
                            evaluated in a generation or later */
    ST_COUNT
};

/* The SQL of each statement (ST_IND_INSERT_MANY and ST_GENOME_INSERT_MANY:
 * NULL, made by prepare_all()). */
extern const char *const store_st_sql[ST_COUNT];

/* A run this connection writes: its writer lock is held on lock_fd. */
struct held_run {
    int64_t run;
    int64_t last_closed; /* -1: none */
    char name[96];       /* for messages, possibly truncated */
};

/* Copies the WAL into the database while the writer goes on (see store_wal_kick). */
struct checkpointer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sqlite3 *db; /* its own connection, used by the thread only */
    int started;
    uint64_t passes; /* passes run to their end */
    int requested;   /* a pass is wanted */
    int running;     /* a pass is under way */
    int paused;      /* the writer truncates the WAL: no pass may start */
    int stop;
};

struct store {
    sqlite3 *db;
    char *path;
    unsigned flags;
    int busy_ms, checkpoint_ms;
    int64_t checkpoint_wal_bytes;
    sqlite3_stmt *st[ST_COUNT];
    int lock_fd; /* "<path>-lock", -1 until a run is written */
    struct held_run *held;
    size_t n_held;
    /* scratch for store_individual_get()'s borrowed genome */
    struct tv_buf scratch;
    int wal_frames;    /* frames in the WAL after the last commit */
    int64_t next_kick; /* WAL size (frames) at which the next pass starts */
    struct checkpointer ck;
    struct store_counters counters; /* but wal_copies: ck.passes + the writer's own */
};

/* ---- errors (store.c) ------------------------------------------------------ */

/* Our code for an SQLite result rc of db (NULL: no connection). */
int store_code_of(sqlite3 *db, int rc);

/* The size of "<path><suffix>" (the database, its -wal), -1 if it does not
 * exist or the name is too long to tell. */
int64_t store_side_file_size(const char *path, const char *suffix);

/* Sets err to "<path>: <context>: <SQLite's text>" with the mapped code and
 * returns the code. Call before any ROLLBACK, which would reset the text. */
int store_db_error(const struct store *s, int rc, struct tv_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Adds text at the end of err's message (as far as it fits). */
void store_append_msg(struct tv_error *err, const char *text);

/* ---- statements and transactions (store.c) ---------------------------------- */

/* Statement id, reset and without bindings. */
sqlite3_stmt *store_stmt(struct store *s, enum st id);
/* ... with (a, b) bound to ?1 and ?2: (run, id), (run, generation) */
sqlite3_stmt *store_stmt2(struct store *s, enum st id, int64_t a, int64_t b);
/* ... and c to ?3: the range scans (run, first id, last id) */
sqlite3_stmt *store_stmt3(struct store *s, enum st id, int64_t a, int64_t b, int64_t c);
void store_done(sqlite3_stmt *q);                     /* resets it: its locks and cursors go */
int store_bind_id(sqlite3_stmt *q, int i, int64_t v); /* v < 0 binds NULL */
int64_t store_column_id(sqlite3_stmt *q, int i);      /* NULL reads STORE_ID_NONE */
double store_column_real(sqlite3_stmt *q, int i);     /* NULL reads NaN */
/* Runs a statement that returns no rows (or ignores them): an SQLite code. */
int store_exec_stmt(sqlite3_stmt *q);
/* Ends a failed transaction; the error was recorded already. */
void store_rollback(struct store *s);
int store_begin(struct store *s, struct tv_error *err, const char *what);
int store_commit(struct store *s, struct tv_error *err, const char *what);

/* ---- the runs this connection writes (store.c) ------------------------------ */

struct held_run *store_held_run(struct store *s, int64_t run); /* NULL: not written here */
/* "run 'xor'" (or "run 7" if it has no name we can read) into buf. */
const char *store_run_label(struct store *s, int64_t run, char *buf, size_t cap);
/* The writer of `run` must be this connection: its entry, or NULL with err set. */
struct held_run *store_writer_of(struct store *s, int64_t run, struct tv_error *err,
                                 const char *what);

/* ---- the WAL (wal.c) ---------------------------------------------------------- */

/* pthread_create() of a thread that blocks every signal. 0 on success. */
int store_start_thread(pthread_t *t, void *(*fn)(void *), void *arg);
/* SQLite's WAL hook: records the WAL's size after each commit. */
int store_wal_hook(void *arg, sqlite3 *db, const char *name, int n_frames);
/* After a commit: asks for a background copy once the WAL has grown enough. */
void store_wal_kick(struct store *s);
/* Copies the WAL into the database and empties it (readers permitting). */
void store_wal_truncate(struct store *s);
/* Ends the background copy's thread and connection (none started: nothing). */
void store_checkpointer_stop(struct store *s);

/* ---- reading individuals (individuals.c) ------------------------------------ */

/* Reads the individual columns of q's current row into r (and, with_genome,
 * appends the genome bytes to bytes; the row's genome pointer is fixed
 * later). TV_ECORRUPT naming where and the individual for a damaged row. */
int store_read_row(sqlite3_stmt *q, int with_genome, struct store_individual *r,
                   struct tv_buf *bytes, const char *where, struct tv_error *err);
/* An empty set whose messages start "<path>: run 'name'". */
void store_set_init(struct store *s, int64_t run, struct store_set *set);
/* Appends every row q yields to set (cap: its rows' capacity). */
int store_set_load(struct store *s, sqlite3_stmt *q, int with_genomes, struct store_set *set,
                   size_t *cap, struct tv_error *err);
/* Genome pointers into set->bytes, once it has stopped moving. */
void store_set_fix_pointers(struct store_set *set);
/* Sorts the rows by id (their genome pointers go with them). */
void store_set_sort(struct store_set *set);

/* ---- population ids (generations.c) ----------------------------------------- */

struct member {
    int64_t id;
    size_t pos; /* index in the population */
};

/* ids[0..n) with their positions, sorted by id. NULL if out of memory. */
struct member *store_members_sorted(const int64_t *ids, size_t n);

/* Ids closer than this are read by one range scan rather than lookups. */
#define RUN_GAP 8

/* The end of the run of nearby ids that starts at m[k]. */
size_t store_member_run_end(const struct member *m, size_t k, size_t n);

#endif
