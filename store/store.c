/*
 * store.c -- opening, checking and creating the database; runs and their
 * writer locks; individuals, generations and checkpoints. See store.h.
 */
#define _GNU_SOURCE /* F_OFD_SETLK: locks owned by an open file, not a process */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <sqlite3.h>

#include "schema.h"

#define DEFAULT_BUSY_MS 5000
#define DEFAULT_CHECKPOINT_WAIT_MS 250
#define PAGE_SIZE 16384

/* ---- prepared statements: made once per connection ----------------------- */

#define IND_COLS                                                                                   \
    "i.id, i.generation, i.fitness, i.parent1, i.parent2, i.op, i.species, i.n_neurons, "          \
    "i.n_conns, i.n_skip, i.n_recurrent, i.eval_seconds, i.rank, i.solved"
#define N_IND_COLS 14
#define IND_INSERT_COLS                                                                            \
    "run_id, id, generation, fitness, parent1, parent2, op, species, n_neurons, n_conns, "         \
    "n_skip, n_recurrent, eval_seconds, rank, solved"
#define N_IND_INSERT_COLS 15
#define IND_VALUES "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
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
    ST_COUNT
};

static const char *const st_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_RUN_INSERT] = "INSERT INTO runs(name, config, seed, status, program_version, created_at,"
                      " updated_at, writer_pid, writer_host, writer_since)"
                      " VALUES (?1, ?2, ?3, 'running', ?4, " NOW ", " NOW ", ?5, ?6, " NOW ")",
    [ST_RUN_BY_NAME] = "SELECT run_id, name, config, program_version, seed, status, created_at,"
                       " updated_at, (SELECT max(generation) FROM generations g"
                       " WHERE g.run_id = runs.run_id) FROM runs WHERE name = ?1",
    [ST_RUN_LIST] = "SELECT run_id, name, config, program_version, seed, status, created_at,"
                    " updated_at, (SELECT max(generation) FROM generations g"
                    " WHERE g.run_id = runs.run_id) FROM runs ORDER BY run_id",
    [ST_RUN_NAME] = "SELECT name FROM runs WHERE run_id = ?1",
    [ST_RUN_WRITER] = "SELECT writer_pid, writer_host, writer_since FROM runs WHERE run_id = ?1",
    [ST_RUN_SET_WRITER] =
        "UPDATE runs SET writer_pid = ?2, writer_host = ?3,"
        " writer_since = " NOW ", status = 'running', updated_at = " NOW " WHERE run_id = ?1",
    [ST_RUN_SET_STATUS] = "UPDATE runs SET status = ?2, updated_at = " NOW " WHERE run_id = ?1",
    [ST_RUN_TOUCH] = "UPDATE runs SET updated_at = " NOW " WHERE run_id = ?1",
    [ST_LAST_CLOSED] = "SELECT max(generation) FROM generations WHERE run_id = ?1",
    /* OR ROLLBACK: a conflict ends the whole batch's transaction (which is
     * what store_add_individuals promises anyway), so SQLite keeps no
     * statement journal for the multi-row form. */
    [ST_IND_INSERT] = "INSERT OR ROLLBACK INTO individuals(" IND_INSERT_COLS ") VALUES " IND_VALUES,
    [ST_GENOME_INSERT] = "INSERT OR ROLLBACK INTO genomes(run_id, id, data) VALUES (?, ?, ?)",
    [ST_IND_GET] = "SELECT " IND_COLS ", g.data FROM individuals i LEFT JOIN genomes g"
                   " ON g.run_id = i.run_id AND g.id = i.id WHERE i.run_id = ?1 AND i.id = ?2",
    [ST_IND_EXISTS] = "SELECT 1 FROM individuals WHERE run_id = ?1 AND id = ?2",
    [ST_IND_ID_RANGE] = "SELECT id FROM individuals WHERE run_id = ?1 AND id BETWEEN ?2 AND ?3"
                        " ORDER BY id",
    /* Without statistics SQLite takes run_id = ? for selective and would
     * scan the run's whole history by primary key: INDEXED BY reads only the
     * generations asked for (in id order within each, since version 2). */
    [ST_IND_OF_GEN] = "SELECT " IND_COLS " FROM individuals i" BY_GENERATION
                      " WHERE i.run_id = ?1 AND i.generation = ?2 ORDER BY i.id",
    [ST_IND_OF_GEN_GENOMES] = "SELECT " IND_COLS ", g.data FROM individuals i" BY_GENERATION
                              " LEFT JOIN genomes g ON g.run_id = i.run_id AND g.id = i.id"
                              " WHERE i.run_id = ?1 AND i.generation = ?2 ORDER BY i.id",
    /* in index order; sorted by id afterwards if need be (set_sort) */
    [ST_IND_PENDING] = "SELECT " IND_COLS ", g.data FROM individuals i" BY_GENERATION
                       " LEFT JOIN genomes g ON g.run_id = i.run_id AND g.id = i.id"
                       " WHERE i.run_id = ?1 AND i.generation > ?2 ORDER BY i.generation, i.id",
    [ST_IND_RANGE] = "SELECT " IND_COLS " FROM individuals i"
                     " WHERE i.run_id = ?1 AND i.id BETWEEN ?2 AND ?3 ORDER BY i.id",
    [ST_GENOME_RANGE] = "SELECT id, data FROM genomes"
                        " WHERE run_id = ?1 AND id BETWEEN ?2 AND ?3 ORDER BY id",
    [ST_GENOME_GET] = "SELECT data FROM genomes WHERE run_id = ?1 AND id = ?2",
    [ST_GENERATION_INSERT] =
        "INSERT INTO generations(run_id, generation, best, mean, median,"
        " champion, n_species, n_evals, wall_seconds, solved, champion_test,"
        " closed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, " NOW ")",
    [ST_IND_MARK_SOLVED] = "UPDATE individuals SET solved = 1 WHERE run_id = ?1 AND id = ?2",
    [ST_GENERATION_GET] = "SELECT generation, best, mean, median, champion, n_evals, wall_seconds,"
                          " n_species, solved, champion_test FROM generations"
                          " WHERE run_id = ?1 AND generation ="
                          " CASE WHEN ?2 >= 0 THEN ?2 ELSE (SELECT max(generation)"
                          " FROM generations WHERE run_id = ?1) END",
    [ST_SPECIES_INSERT] = "INSERT INTO species(run_id, generation, species, size, best_fitness,"
                          " mean_fitness, representative, born, stagnant)"
                          " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [ST_CKPT_INSERT] = "INSERT INTO checkpoints(run_id, generation, state, population,"
                       " n_population, created_at) VALUES (?1, ?2, ?3, ?4, ?5, " NOW ")",
    [ST_CKPT_LATEST] = "SELECT generation, state, population, n_population FROM checkpoints"
                       " WHERE run_id = ?1 ORDER BY generation DESC LIMIT 1",
};

/* A run this connection writes: its writer lock is held on lock_fd. */
struct held_run {
    int64_t run;
    int64_t last_closed; /* -1: none */
    char name[96];       /* for messages, possibly truncated */
};

/* Copies the WAL into the database while the writer goes on (see kick). */
struct checkpointer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sqlite3 *db; /* its own connection, used by the thread only */
    int started;
    int requested; /* a pass is wanted */
    int running;   /* a pass is under way */
    int paused;    /* the writer truncates the WAL: no pass may start */
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
};

/* ---- errors ---------------------------------------------------------------- */

/* Our code for an SQLite result; a write that failed for lack of space is
 * TV_ENOSPACE whether SQLite saw ENOSPC (SQLITE_FULL), EDQUOT or EFBIG. */
static int code_of(sqlite3 *db, int rc)
{
    int sys = db ? sqlite3_system_errno(db) : 0;
    switch (rc & 0xff) {
    case SQLITE_FULL:
        return TV_ENOSPACE;
    case SQLITE_IOERR:
        if (sys == ENOSPC || sys == EFBIG
#ifdef EDQUOT
            || sys == EDQUOT
#endif
        )
            return TV_ENOSPACE;
        return TV_EIO;
    case SQLITE_NOMEM:
        return TV_ENOMEM;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return TV_ECORRUPT;
    case SQLITE_CONSTRAINT:
        return TV_EINVAL;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_READONLY:
        return TV_ESTATE;
    case SQLITE_TOOBIG:
        return TV_ELIMIT;
    default:
        return TV_EDB;
    }
}

/* Past the file-size limit (RLIMIT_FSIZE, ulimit -f) a write fails with
 * EFBIG (main() ignores SIGXFSZ), which SQLite reports as a plain I/O error
 * whose errno it has often lost by then (sqlite3_system_errno() reads errno
 * after later calls): 1 if the database or its WAL has no room left under
 * the limit for one more page. */
/* The size of "<path><suffix>" (the database, its -wal), -1 if it does not
 * exist or the name is too long to tell. */
static int64_t side_file_size(const char *path, const char *suffix)
{
    char p[4200];
    struct stat sb;
    if (snprintf(p, sizeof p, "%s%s", path, suffix) >= (int)sizeof p || stat(p, &sb) != 0)
        return -1;
    return (int64_t)sb.st_size;
}

static int at_file_size_limit(const struct store *s)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    static const char *const suffix[] = {"", "-wal"};
    for (size_t k = 0; k < 2; k++) {
        int64_t size = side_file_size(s->path, suffix[k]);
        if (size >= 0 && (rlim_t)size + PAGE_SIZE + 64 > rl.rlim_cur)
            return 1;
    }
    return 0;
}

/* Sets err to "<path>: <context>: <SQLite's text>" with the mapped code and
 * returns the code. Call before any ROLLBACK, which would reset the text. */
static int db_error(const struct store *s, int rc, struct tv_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int db_error(const struct store *s, int rc, struct tv_error *err, const char *fmt, ...)
{
    char ctx[TV_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    int code = code_of(s->db, rc);
    const char *what = code == TV_ENOSPACE ? "disk full: " : "";
    if (code == TV_EIO && at_file_size_limit(s)) {
        code = TV_ENOSPACE;
        what = "file-size limit reached (ulimit -f): ";
    }
    int sys = sqlite3_system_errno(s->db);
    char os[96] = "";
    if ((code == TV_EIO || code == TV_ENOSPACE) && sys)
        snprintf(os, sizeof os, " (%s)", strerror(sys));
    return tv_error_set(err, code, "%s: %s: %s%s%s", s->path, ctx, what, sqlite3_errmsg(s->db), os);
}

/* Adds text at the end of err's message (as far as it fits). */
static void append_msg(struct tv_error *err, const char *text)
{
    if (!err)
        return;
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, "%s", text);
}

/* ---- small helpers --------------------------------------------------------- */

static sqlite3_stmt *stmt(struct store *s, enum st id)
{
    sqlite3_stmt *q = s->st[id];
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return q;
}

static void done(sqlite3_stmt *q)
{
    sqlite3_reset(q);
}

static int bind_id(sqlite3_stmt *q, int i, int64_t v)
{
    return v < 0 ? sqlite3_bind_null(q, i) : sqlite3_bind_int64(q, i, v);
}

static int64_t column_id(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? STORE_ID_NONE : sqlite3_column_int64(q, i);
}

static double column_real(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

static char *dup_text(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    const char *src = t ? (const char *)t : "";
    size_t n = strlen(src);
    char *p = malloc(n + 1);
    if (p)
        memcpy(p, src, n + 1);
    return p;
}

static void copy_text(char *dst, size_t cap, sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

/* Runs a statement that returns no rows (or ignores them). */
static int exec_stmt(sqlite3_stmt *q)
{
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Ends a failed transaction; the error was recorded already. */
static void rollback(struct store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        exec_stmt(stmt(s, ST_ROLLBACK));
}

static int begin(struct store *s, struct tv_error *err, const char *what)
{
    int rc = exec_stmt(stmt(s, ST_BEGIN));
    if (rc != SQLITE_OK)
        return db_error(s, rc, err, "%s: begin", what);
    return 0;
}

static int commit(struct store *s, struct tv_error *err, const char *what)
{
    int rc = exec_stmt(stmt(s, ST_COMMIT));
    if (rc != SQLITE_OK) {
        int code = db_error(s, rc, err, "%s: commit", what);
        rollback(s);
        return code;
    }
    return 0;
}

static struct held_run *held_run(struct store *s, int64_t run)
{
    for (size_t i = 0; i < s->n_held; i++)
        if (s->held[i].run == run)
            return &s->held[i];
    return NULL;
}

/* "run 'xor'" (or "run 7" if it has no name we can read) into buf. */
static const char *run_label(struct store *s, int64_t run, char *buf, size_t cap)
{
    struct held_run *h = held_run(s, run);
    if (h) {
        snprintf(buf, cap, "run '%s'", h->name);
        return buf;
    }
    snprintf(buf, cap, "run %lld", (long long)run);
    if (!s->db)
        return buf;
    sqlite3_stmt *q = stmt(s, ST_RUN_NAME);
    sqlite3_bind_int64(q, 1, run);
    if (sqlite3_step(q) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(q, 0);
        snprintf(buf, cap, "run '%.80s'", t ? (const char *)t : "");
    }
    done(q);
    return buf;
}

/* The writer of `run` must be this connection. */
static struct held_run *writer_of(struct store *s, int64_t run, struct tv_error *err,
                                  const char *what)
{
    struct held_run *h = held_run(s, run);
    if (!h) {
        char label[128];
        if (s->flags & STORE_READONLY)
            tv_error_set(err, TV_ESTATE, "%s: %s: the store was opened read-only", s->path, what);
        else
            tv_error_set(err, TV_ESTATE,
                         "%s: %s: %s is not open for writing on this connection"
                         " (store_run_create or store_run_resume first)",
                         s->path, what, run_label(s, run, label, sizeof label));
    }
    return h;
}

/* ---- opening and checking --------------------------------------------------- */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* What an existing file is, judged without SQLite (so without side effects):
 * 0 an empty file, 1 an SQLite file, or an error. The WAL may hold a newer
 * page 1, so application_id and user_version are read again through SQLite.
 *
 * SQLite writes whole pages, and cannot see a file cut short where the lost
 * bytes were zeros or free pages (it reads missing bytes as zeros): with no
 * WAL frames to complete the file, a size that is not a whole number of
 * pages, or fewer pages than the header counts, is a truncated file. */
static int sniff_header(const char *path, off_t size, struct tv_error *err)
{
    if (size == 0)
        return 0;
    unsigned char h[100];
    FILE *f = fopen(path, "rb");
    if (!f)
        return tv_error_set(err, TV_EIO, "%s: cannot read: %s", path, strerror(errno));
    size_t got = fread(h, 1, sizeof h, f);
    fclose(f);
    if (got < sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
        return tv_error_set(err, TV_EFORMAT, "%s: not a trevo database (not an SQLite file)", path);
    uint32_t page = (uint32_t)h[16] << 8 | h[17];
    if (page == 1)
        page = 65536;
    if (page < 512 || (page & (page - 1)) != 0)
        return tv_error_set(err, TV_ECORRUPT, "%s: damaged database: page size %u in its header",
                            path, (unsigned)page);
    /* With frames in the WAL, a checkpoint cut short (a full disk) may have
     * left a partial last page, which the WAL still holds whole: SQLite
     * completes it. */
    int wal_frames = side_file_size(path, "-wal") > 0;
    if (size % page != 0 && !wal_frames)
        return tv_error_set(err, TV_ECORRUPT,
                            "%s: damaged database: truncated (%lld bytes is not a whole number of"
                            " %u-byte pages)",
                            path, (long long)size, (unsigned)page);
    /* The header's page count is valid when its change counter (offset 24)
     * equals "version valid for" (offset 92). */
    uint32_t pages = be32(h + 28);
    if (pages != 0 && be32(h + 24) == be32(h + 92) && (off_t)pages * page > size && !wal_frames)
        return tv_error_set(err, TV_ECORRUPT,
                            "%s: damaged database: truncated (its header counts %u pages, the"
                            " file holds %lld)",
                            path, (unsigned)pages, (long long)(size / page));
    return 1;
}

static int one_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *q;
    int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(q, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        *out = 0;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(q);
    return rc;
}

static char *immutable_uri(const char *path);

static int inspect_with(const char *path, int immutable, int whole, unsigned flags, int *empty,
                        int64_t *version, struct tv_error *err)
{
    sqlite3 *db = NULL;
    int rc;
    if (immutable) {
        char *uri = immutable_uri(path);
        if (!uri)
            return tv_error_set(err, TV_ENOMEM, "%s: out of memory", path);
        rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
        free(uri);
    } else {
        rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    }
    int code = 0;
    int64_t app = 0, n_tables = 0, has_meta = 0;
    *empty = 0;
    if (rc != SQLITE_OK)
        goto sqlite_failed;
    sqlite3_busy_timeout(db, DEFAULT_BUSY_MS);
    if ((rc = one_int(db, "PRAGMA application_id", &app)) != SQLITE_OK ||
        (rc = one_int(db, "PRAGMA user_version", version)) != SQLITE_OK ||
        (rc = one_int(db, "SELECT count(*) FROM sqlite_schema", &n_tables)) != SQLITE_OK ||
        (rc = one_int(db,
                      "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
                      " AND name = 'trevo_meta'",
                      &has_meta)) != SQLITE_OK)
        goto sqlite_failed;
    if (app == 0 && n_tables == 0) {
        *empty = 1;
        goto out;
    }
    if ((uint32_t)app != STORE_APPLICATION_ID) {
        code = tv_error_set(err, TV_EFORMAT,
                            "%s: not a trevo database (SQLite file of another program:"
                            " application_id 0x%08x, trevo's is 0x%08x)",
                            path, (unsigned)app, (unsigned)STORE_APPLICATION_ID);
        goto out;
    }
    if (!has_meta) {
        code =
            tv_error_set(err, TV_EFORMAT, "%s: not a trevo database (no trevo_meta table)", path);
        goto out;
    }
    if (*version > STORE_SCHEMA_VERSION) {
        code = tv_error_set(err, TV_EFORMAT,
                            "%s: schema version %lld is newer than this program's (%d):"
                            " open it with a newer trevo",
                            path, (long long)*version, STORE_SCHEMA_VERSION);
        goto out;
    }
    if (*version < 1) {
        code = tv_error_set(err, TV_ECORRUPT, "%s: damaged trevo database (schema version %lld)",
                            path, (long long)*version);
        goto out;
    }
    if (!(flags & STORE_NO_CHECK)) {
        /* The whole file, or (past STORE_FULL_CHECK_BYTES) every table but
         * the two big ones, whose pages are checked as they are read. */
        static const char *const full[] = {"PRAGMA quick_check(1)", NULL};
        static const char *const small[] = {
            "PRAGMA quick_check(trevo_meta)",    "PRAGMA quick_check(runs)",
            "PRAGMA quick_check(operators)",     "PRAGMA quick_check(generations)",
            "PRAGMA quick_check(species)",       "PRAGMA quick_check(checkpoints)",
            "PRAGMA quick_check(sqlite_schema)", NULL};
        const char *const *checks = whole ? full : small;
        for (size_t k = 0; checks[k] && !code; k++) {
            sqlite3_stmt *q;
            rc = sqlite3_prepare_v2(db, checks[k], -1, &q, NULL);
            if (rc != SQLITE_OK)
                goto sqlite_failed;
            rc = sqlite3_step(q);
            if (rc == SQLITE_ROW) {
                const unsigned char *t = sqlite3_column_text(q, 0);
                if (!t || strcmp((const char *)t, "ok") != 0)
                    code = tv_error_set(err, TV_ECORRUPT,
                                        "%s: damaged database: PRAGMA quick_check failed: %.300s",
                                        path, t ? (const char *)t : "(no answer)");
                rc = SQLITE_OK;
            }
            sqlite3_finalize(q);
            if (rc != SQLITE_OK && rc != SQLITE_DONE)
                goto sqlite_failed;
        }
    }
    goto out;

sqlite_failed:
    if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB)
        code = tv_error_set(err, TV_ECORRUPT, "%s: damaged database: %s", path,
                            db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    else
        code = tv_error_set(err, code_of(db, rc), "%s: cannot open: %s", path,
                            db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
out:
    sqlite3_close(db);
    return code;
}

static int side_file_exists(const char *path, const char *suffix)
{
    size_t n = strlen(path);
    char *p = malloc(n + strlen(suffix) + 1);
    if (!p)
        return 1;
    memcpy(p, path, n);
    strcpy(p + n, suffix);
    struct stat sb;
    int yes = stat(p, &sb) == 0;
    free(p);
    return yes;
}

/* "file:PATH?immutable=1", PATH percent-encoded. */
static char *immutable_uri(const char *path)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = strlen(path);
    char *u = malloc(5 + 3 * n + 12 + 1);
    if (!u)
        return NULL;
    char *o = u;
    memcpy(o, "file:", 5);
    o += 5;
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            strchr("/._~-", *c)) {
            *o++ = (char)*c;
        } else {
            *o++ = '%';
            *o++ = hex[*c >> 4];
            *o++ = hex[*c & 15];
        }
    }
    strcpy(o, "?immutable=1");
    return u;
}

/* Examines an existing SQLite file through a read-only connection: sets
 * *empty if it has no tables at all (a creation that never committed), else
 * checks that it is ours, of a version we read, and (unless STORE_NO_CHECK)
 * passes PRAGMA quick_check.
 *
 * Nothing may be written, not even beside the file: a read-only connection
 * to a WAL database creates -wal and -shm. So when there is no -wal (no
 * connection is open and every commit is in the file) the file is read as
 * immutable, without locks or side files; if a writer appeared meanwhile and
 * the check failed, it is repeated the ordinary way. */
static int inspect(const char *path, off_t size, unsigned flags, int *empty, int64_t *version,
                   struct tv_error *err)
{
    int whole = (flags & STORE_CHECK_FULL) || size <= STORE_FULL_CHECK_BYTES;
    if (side_file_exists(path, "-wal"))
        return inspect_with(path, 0, whole, flags, empty, version, err);
    int rc = inspect_with(path, 1, whole, flags, empty, version, err);
    if (rc && side_file_exists(path, "-wal"))
        rc = inspect_with(path, 0, whole, flags, empty, version, err);
    return rc;
}

static int exec_sql(struct store *s, const char *sql, struct tv_error *err, const char *what)
{
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    sqlite3_free(msg);
    if (rc != SQLITE_OK)
        return db_error(s, rc, err, "%s", what);
    return 0;
}

/* Creates schema version 1 in an empty database, in one transaction. If
 * another process created it meanwhile, does nothing. */
static int create_schema(struct store *s, struct tv_error *err)
{
    int rc = exec_sql(s, "BEGIN IMMEDIATE", err, "creating the schema");
    if (rc)
        return rc;
    int64_t exists = 0;
    int src =
        one_int(s->db, "SELECT count(*) FROM sqlite_schema WHERE name = 'trevo_meta'", &exists);
    if (src != SQLITE_OK) {
        rc = db_error(s, src, err, "creating the schema");
        goto fail;
    }
    if (exists)
        return exec_sql(s, "COMMIT", err, "creating the schema");
    char tail[256];
    snprintf(tail, sizeof tail,
             "INSERT INTO trevo_meta(key, value) VALUES ('format', 'trevo'),"
             " ('schema_version', %d), ('created_at', datetime('now'));"
             "PRAGMA application_id = %d; PRAGMA user_version = %d;",
             STORE_SCHEMA_VERSION, STORE_APPLICATION_ID, STORE_SCHEMA_VERSION);
    for (size_t i = 0; store_schema_sql[i]; i++)
        if ((rc = exec_sql(s, store_schema_sql[i], err, "creating the schema")) != 0)
            goto fail;
    if ((rc = exec_sql(s, tail, err, "creating the schema")) != 0 ||
        (rc = exec_sql(s, "COMMIT", err, "creating the schema")) != 0)
        goto fail;
    return 0;
fail:
    rollback(s);
    return rc;
}

/* Brings a database of an older schema version to STORE_SCHEMA_VERSION, in
 * one transaction (another process may have done it meanwhile). A read-only
 * connection reads older versions as they are: every query of this file
 * works on each of them. */
static int migrate(struct store *s, struct tv_error *err)
{
    int rc = exec_sql(s, "BEGIN IMMEDIATE", err, "migrating the schema");
    if (rc)
        return rc;
    int64_t version = 0;
    int src = one_int(s->db, "PRAGMA user_version", &version);
    if (src != SQLITE_OK) {
        rc = db_error(s, src, err, "migrating the schema");
        goto fail;
    }
    for (int64_t v = version; v >= 1 && v < STORE_SCHEMA_VERSION; v++) {
        char what[96];
        snprintf(what, sizeof what, "migrating schema version %lld to %lld", (long long)v,
                 (long long)v + 1);
        for (const char *const *sql = store_migration_sql[v]; *sql; sql++)
            if ((rc = exec_sql(s, *sql, err, what)) != 0)
                goto fail;
    }
    char tail[160];
    snprintf(tail, sizeof tail,
             "UPDATE trevo_meta SET value = %d WHERE key = 'schema_version';"
             " PRAGMA user_version = %d;",
             STORE_SCHEMA_VERSION, STORE_SCHEMA_VERSION);
    if ((rc = exec_sql(s, tail, err, "migrating the schema")) != 0 ||
        (rc = exec_sql(s, "COMMIT", err, "migrating the schema")) != 0)
        goto fail;
    return 0;
fail:
    rollback(s);
    return rc;
}

static int set_pragmas(struct store *s, struct tv_error *err, int creating)
{
    char sql[256];
    int rc;
    sqlite3_busy_timeout(s->db, s->busy_ms);
    sqlite3_extended_result_codes(s->db, 1);
    if (creating) {
        snprintf(sql, sizeof sql, "PRAGMA page_size = %d", PAGE_SIZE);
        if ((rc = exec_sql(s, sql, err, "setting page_size")) != 0)
            return rc;
    }
    if (!(s->flags & STORE_READONLY)) {
        /* journal_mode answers with a row; exec ignores it. */
        if ((rc = exec_sql(s, "PRAGMA journal_mode = WAL", err, "setting WAL")) != 0)
            return rc;
        snprintf(sql, sizeof sql, "PRAGMA synchronous = %s",
                 (s->flags & STORE_SYNC_FULL) ? "FULL" : "NORMAL");
        if ((rc = exec_sql(s, sql, err, "setting synchronous")) != 0)
            return rc;
    }
    return exec_sql(s, "PRAGMA foreign_keys = OFF", err, "setting foreign_keys");
}

/* A quota: SQLite refuses to grow the file past max_page_count pages with
 * SQLITE_FULL, exactly as on a full disk. */
static int set_quota(struct store *s, int64_t max_bytes, struct tv_error *err)
{
    if (max_bytes <= 0)
        return 0;
    int64_t pages = max_bytes / PAGE_SIZE;
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", (long long)(pages > 1 ? pages : 1));
    return exec_sql(s, sql, err, "setting the size quota");
}

/* "head VALUES tuple, tuple, ..." with k tuples into buf (cap bytes). */
static void many_sql(char *buf, size_t cap, const char *head, const char *tuple, int k)
{
    size_t n = (size_t)snprintf(buf, cap, "%s VALUES %s", head, tuple);
    for (int i = 1; i < k && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, ", %s", tuple);
}

static int prepare_all(struct store *s, struct tv_error *err)
{
    char many[INSERT_ROWS * 64 + 256];
    for (int i = 0; i < ST_COUNT; i++) {
        const char *sql = st_sql[i];
        if (i == ST_IND_INSERT_MANY) {
            many_sql(many, sizeof many, "INSERT OR ROLLBACK INTO individuals(" IND_INSERT_COLS ")",
                     IND_VALUES, INSERT_ROWS);
            sql = many;
        } else if (i == ST_GENOME_INSERT_MANY) {
            many_sql(many, sizeof many, "INSERT OR ROLLBACK INTO genomes(run_id, id, data)",
                     "(?, ?, ?)", INSERT_ROWS);
            sql = many;
        }
        int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL);
        const char *at = rc != SQLITE_OK ? strstr(sql, BY_GENERATION) : NULL;
        if (at) {
            /* a file without the index (dropped by hand): the query works,
             * only slower */
            char plain[1024];
            snprintf(plain, sizeof plain, "%.*s%s", (int)(at - sql), sql,
                     at + strlen(BY_GENERATION));
            rc = sqlite3_prepare_v3(s->db, plain, -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL);
        }
        if (rc != SQLITE_OK)
            return db_error(s, rc, err, "preparing statement %d", i);
    }
    return 0;
}

const char *store_network_fs_name(unsigned long f_type)
{
    /* statfs(2) magic numbers of the file systems SQLite's WAL cannot serve:
     * its locks and its shared-memory index need one host's kernel. */
    switch (f_type) {
    case 0x6969UL:
        return "NFS";
    case 0x517BUL:
        return "SMB";
    case 0xFF534D42UL:
        return "CIFS";
    case 0xFE534D42UL:
        return "SMB2";
    case 0x5346414FUL:
        return "AFS";
    case 0x73757245UL:
        return "Coda";
    case 0x00C36400UL:
        return "CephFS";
    case 0x0BD00BD0UL:
        return "Lustre";
    case 0x47504653UL:
        return "GPFS";
    default:
        return NULL;
    }
}

/* Refuses a database whose directory is on a network file system. */
static int check_local_fs(const char *path, struct tv_error *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct statfs fs;
    if (statfs(dir, &fs) != 0)
        return 0; /* the open that follows reports a missing directory */
    const char *name = store_network_fs_name((unsigned long)fs.f_type);
    if (name)
        return tv_error_set(err, TV_EINVAL,
                            "%s: the database is on a network file system (%s); SQLite's WAL "
                            "needs a local disk: put it on rank 0's local disk (workers never "
                            "open it)",
                            path, name);
    return 0;
}

/* ---- the background checkpointer --------------------------------------------

   Every commit goes to the WAL first and is copied into the database by a
   checkpoint: the same bytes written twice, and a checkpoint of a 100,000
   individual generation takes about as long as the commits themselves. So
   each time the WAL has grown by kick_frames(), a thread with its own
   connection copies what is committed (PASSIVE: it never waits for and
   never blocks the writer or readers) while the writer goes on; the WAL is
   truncated by the writer at a generation boundary, as before, with only
   the last frames left to copy. A checkpoint is crash-safe at any moment
   and syncs the WAL before it copies from it, so durability is as before: a
   commit survives a crash of the program once it is in the WAL, and a power
   loss once the WAL is synced (FULL: at the commit). This replaces SQLite's
   automatic checkpoints, which would run in the writer. */

/* pthread_create() of a thread that blocks every signal, so that signals
 * go to the program's own threads as if the store had none (its handlers
 * may rely on interrupting them). 0 on success. */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static void *checkpointer_main(void *arg)
{
    struct checkpointer *ck = arg;
    pthread_mutex_lock(&ck->mu);
    for (;;) {
        while (!ck->stop && (!ck->requested || ck->paused))
            pthread_cond_wait(&ck->cv, &ck->mu);
        if (ck->stop)
            break;
        ck->requested = 0;
        ck->running = 1;
        pthread_mutex_unlock(&ck->mu);
        /* an error (a full disk) leaves the WAL as it was: the writer's
         * truncation at the next boundary meets it and reports nothing
         * either, since the commits are safe in the WAL */
        sqlite3_wal_checkpoint_v2(ck->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        pthread_mutex_lock(&ck->mu);
        ck->running = 0;
        pthread_cond_broadcast(&ck->cv);
    }
    pthread_mutex_unlock(&ck->mu);
    return NULL;
}

/* Starts the thread and its connection; 0 if it could not (the writer then
 * checkpoints itself). */
static int checkpointer_start(struct store *s)
{
    struct checkpointer *ck = &s->ck;
    if (sqlite3_open_v2(s->path, &ck->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK)
        goto fail;
    const char *sync =
        (s->flags & STORE_SYNC_FULL) ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL";
    if (sqlite3_exec(ck->db, sync, NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    if (pthread_mutex_init(&ck->mu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&ck->cv, NULL) != 0) {
        pthread_mutex_destroy(&ck->mu);
        goto fail;
    }
    if (start_thread(&ck->thread, checkpointer_main, ck) != 0) {
        pthread_cond_destroy(&ck->cv);
        pthread_mutex_destroy(&ck->mu);
        goto fail;
    }
    ck->started = 1;
    return 1;
fail:
    sqlite3_close(ck->db);
    ck->db = NULL;
    return 0;
}

static void checkpointer_stop(struct store *s)
{
    struct checkpointer *ck = &s->ck;
    if (!ck->started)
        return;
    pthread_mutex_lock(&ck->mu);
    ck->stop = 1;
    pthread_cond_broadcast(&ck->cv);
    pthread_mutex_unlock(&ck->mu);
    pthread_join(ck->thread, NULL);
    pthread_cond_destroy(&ck->cv);
    pthread_mutex_destroy(&ck->mu);
    sqlite3_close(ck->db);
    ck->db = NULL;
    ck->started = 0;
}

/* Records the WAL's size after each commit (SQLite calls it). */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int n_frames)
{
    (void)db;
    (void)name;
    ((struct store *)arg)->wal_frames = n_frames;
    return SQLITE_OK;
}

/* Frames the WAL grows by between background passes: a quarter of
 * checkpoint_wal_bytes, at least 1 MiB, so that little is left to copy when
 * the WAL is truncated. */
static int64_t kick_frames(const struct store *s)
{
    int64_t bytes =
        (s->checkpoint_wal_bytes > 0 ? s->checkpoint_wal_bytes : STORE_CHECKPOINT_WAL_BYTES) / 4;
    if (bytes < ((int64_t)1 << 20))
        bytes = (int64_t)1 << 20;
    return bytes / (PAGE_SIZE + 24);
}

/* After a commit: once the WAL has grown by kick_frames() since the last
 * pass was asked for, asks for another. */
static void kick(struct store *s)
{
    if (s->flags & STORE_READONLY)
        return;
    if (s->wal_frames < s->next_kick - kick_frames(s))
        s->next_kick = 0; /* the WAL was restarted or truncated */
    if (s->wal_frames < s->next_kick)
        return;
    s->next_kick = s->wal_frames + kick_frames(s);
    if (!s->ck.started && !checkpointer_start(s)) {
        sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        return;
    }
    pthread_mutex_lock(&s->ck.mu);
    s->ck.requested = 1;
    pthread_cond_broadcast(&s->ck.cv);
    pthread_mutex_unlock(&s->ck.mu);
}

/* Copies the WAL into the database and empties it, waiting at most
 * checkpoint_ms for readers of old snapshots; if they outlast that, the WAL
 * is left for the next boundary (the commit is durable either way). A
 * background pass under way finishes first (it has the checkpoint lock),
 * and none starts meanwhile. */
static void truncate_wal(struct store *s)
{
    if (s->flags & STORE_READONLY)
        return;
    struct checkpointer *ck = &s->ck;
    if (ck->started) {
        pthread_mutex_lock(&ck->mu);
        ck->paused = 1;
        while (ck->running)
            pthread_cond_wait(&ck->cv, &ck->mu);
        pthread_mutex_unlock(&ck->mu);
    }
    sqlite3_busy_timeout(s->db, s->checkpoint_ms);
    sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(s->db, s->busy_ms);
    s->next_kick = 0;
    if (ck->started) {
        pthread_mutex_lock(&ck->mu);
        ck->paused = 0;
        ck->requested = 0;
        pthread_mutex_unlock(&ck->mu);
    }
}

static void free_store(struct store *s)
{
    if (!s)
        return;
    checkpointer_stop(s);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    sqlite3_close(s->db);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* drops every run lock held through it */
    free(s->held);
    free(s->path);
    tv_buf_free(&s->scratch);
    free(s);
}

int store_open(const char *path, const struct store_options *opts, struct store **out,
               struct tv_error *err)
{
    *out = NULL;
    struct store_options o = {0};
    if (opts)
        o = *opts;
    if (!path || !*path)
        return tv_error_set(err, TV_EINVAL, "store_open: no path given");
    if ((o.flags & STORE_CREATE) && (o.flags & STORE_READONLY))
        return tv_error_set(err, TV_EINVAL, "%s: cannot create a database read-only", path);
    if (!(o.flags & STORE_READONLY)) {
        int rc = check_local_fs(path, err);
        if (rc)
            return rc;
    }

    int creating = 0;
    int64_t version = STORE_SCHEMA_VERSION;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT)
            return tv_error_set(err, TV_EIO, "%s: %s", path, strerror(errno));
        if (!(o.flags & STORE_CREATE))
            return tv_error_set(err, TV_ENOTFOUND, "%s: no such database", path);
        creating = 1;
    } else {
        if (!S_ISREG(sb.st_mode))
            return tv_error_set(err, TV_EFORMAT, "%s: not a trevo database (not a regular file)",
                                path);
        int kind = sniff_header(path, sb.st_size, err);
        if (kind < 0)
            return kind;
        int empty = kind == 0;
        if (kind == 1) {
            int rc = inspect(path, sb.st_size, o.flags, &empty, &version, err);
            if (rc)
                return rc;
        }
        if (empty) {
            if (!(o.flags & STORE_CREATE))
                return tv_error_set(err, TV_EFORMAT,
                                    "%s: not a trevo database (an empty file or database)", path);
            creating = 1;
        }
    }

    struct store *s = calloc(1, sizeof *s);
    if (!s)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", path);
    s->lock_fd = -1;
    s->flags = o.flags;
    s->busy_ms = o.busy_timeout_ms > 0 ? o.busy_timeout_ms : DEFAULT_BUSY_MS;
    s->checkpoint_ms = o.checkpoint_wait_ms > 0 ? o.checkpoint_wait_ms : DEFAULT_CHECKPOINT_WAIT_MS;
    s->checkpoint_wal_bytes =
        o.checkpoint_wal_bytes ? o.checkpoint_wal_bytes : STORE_CHECKPOINT_WAL_BYTES;
    s->path = malloc(strlen(path) + 1);
    if (!s->path) {
        free(s);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", path);
    }
    strcpy(s->path, path);

    int oflags = (o.flags & STORE_READONLY) ? SQLITE_OPEN_READONLY
                                            : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(path, &s->db, oflags | SQLITE_OPEN_NOMUTEX, NULL);
    int code = 0;
    if (rc != SQLITE_OK) {
        code = tv_error_set(err, code_of(s->db, rc), "%s: cannot open: %s", path,
                            s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto fail;
    }
    if ((code = set_pragmas(s, err, creating)) != 0)
        goto fail;
    if (!(o.flags & STORE_READONLY))
        sqlite3_wal_hook(s->db, wal_hook, s);
    if (creating && (code = create_schema(s, err)) != 0)
        goto fail;
    if (!creating && version < STORE_SCHEMA_VERSION && !(o.flags & STORE_READONLY) &&
        (code = migrate(s, err)) != 0)
        goto fail;
    if ((code = set_quota(s, o.max_bytes, err)) != 0 || (code = prepare_all(s, err)) != 0)
        goto fail;
    if (creating && !(o.flags & STORE_READONLY))
        sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    *out = s;
    return 0;
fail:
    free_store(s);
    return code;
}

int store_close(struct store *s, struct tv_error *err)
{
    if (!s)
        return 0;
    int code = 0;
    checkpointer_stop(s);
    truncate_wal(s);
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(s->st[i]);
        s->st[i] = NULL;
    }
    int rc = sqlite3_close(s->db);
    if (rc != SQLITE_OK)
        code = db_error(s, rc, err, "closing");
    else
        s->db = NULL;
    if (s->db) {
        sqlite3_close_v2(s->db);
        s->db = NULL;
    }
    free_store(s);
    return code;
}

const char *store_path(const struct store *s)
{
    return s->path;
}

/* ---- runs ------------------------------------------------------------------- */

static const char *const status_names[] = {"running", "stopped", "done", "failed"};
#define N_STATUS (int)(sizeof status_names / sizeof status_names[0])

const char *store_status_name(int status)
{
    return status >= 0 && status < N_STATUS ? status_names[status] : "?";
}

static int status_parse(const unsigned char *t)
{
    for (int i = 0; t && i < N_STATUS; i++)
        if (strcmp((const char *)t, status_names[i]) == 0)
            return i;
    return -1;
}

void store_run_info_release(struct store_run_info *info)
{
    if (!info)
        return;
    free(info->name);
    free(info->config);
    free(info->program_version);
    info->name = info->config = info->program_version = NULL;
}

/* "-lock" beside the database, by its real path so that every name of the
 * same file finds the same lock. */
static int lock_path(const struct store *s, char **out, struct tv_error *err)
{
    char *real = realpath(s->path, NULL);
    const char *base = real ? real : s->path;
    size_t n = strlen(base);
    *out = malloc(n + 6);
    if (!*out) {
        free(real);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", s->path);
    }
    memcpy(*out, base, n);
    memcpy(*out + n, "-lock", 6);
    free(real);
    return 0;
}

/* Is the writer lock of `run` held by some open file description? 1 yes, 0 no
 * (or no lock file). Never creates the lock file. */
static int run_has_writer(struct store *s, int64_t run)
{
    if (held_run(s, run))
        return 1;
    char *lp;
    if (lock_path(s, &lp, NULL))
        return 0;
    int fd = open(lp, O_RDONLY | O_CLOEXEC);
    free(lp);
    if (fd < 0)
        return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)run, .l_len = 1};
    int held = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return held;
}

static int read_run_row(struct store *s, sqlite3_stmt *q, struct store_run_info *info,
                        struct tv_error *err)
{
    memset(info, 0, sizeof *info);
    info->run_id = sqlite3_column_int64(q, 0);
    info->name = dup_text(q, 1);
    info->config = dup_text(q, 2);
    info->program_version = dup_text(q, 3);
    info->seed = (uint64_t)sqlite3_column_int64(q, 4);
    info->status = status_parse(sqlite3_column_text(q, 5));
    copy_text(info->created_at, sizeof info->created_at, q, 6);
    copy_text(info->updated_at, sizeof info->updated_at, q, 7);
    info->last_generation = column_id(q, 8);
    if (!info->name || !info->config || !info->program_version) {
        store_run_info_release(info);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory reading a run", s->path);
    }
    info->has_writer = run_has_writer(s, info->run_id);
    return 0;
}

int store_run_get(struct store *s, const char *name, struct store_run_info *info,
                  struct tv_error *err)
{
    memset(info, 0, sizeof *info);
    sqlite3_stmt *q = stmt(s, ST_RUN_BY_NAME);
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    int code;
    if (rc == SQLITE_ROW)
        code = read_run_row(s, q, info, err);
    else if (rc == SQLITE_DONE)
        code = tv_error_set(err, TV_ENOTFOUND, "%s: no run named '%s'", s->path, name);
    else
        code = db_error(s, rc, err, "reading run '%s'", name);
    done(q);
    return code;
}

int store_runs_list(struct store *s, struct store_run_info **out, size_t *n, struct tv_error *err)
{
    *out = NULL;
    *n = 0;
    struct store_run_info *runs = NULL;
    size_t count = 0, cap = 0;
    sqlite3_stmt *q = stmt(s, ST_RUN_LIST);
    int rc, code = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct store_run_info *p = realloc(runs, ncap * sizeof *p);
            if (!p) {
                code = tv_error_set(err, TV_ENOMEM, "%s: out of memory listing runs", s->path);
                break;
            }
            runs = p;
            cap = ncap;
        }
        if ((code = read_run_row(s, q, &runs[count], err)) != 0)
            break;
        count++;
    }
    if (!code && rc != SQLITE_DONE)
        code = db_error(s, rc, err, "listing runs");
    done(q);
    if (code) {
        store_runs_free(runs, count);
        return code;
    }
    *out = runs;
    *n = count;
    return 0;
}

void store_runs_free(struct store_run_info *runs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        store_run_info_release(&runs[i]);
    free(runs);
}

/* Takes the writer lock of `run` (a byte of the lock file at offset run_id).
 * Locks belong to the open file description, so two connections of one
 * process exclude each other too, and the kernel drops them with the
 * process. */
static int lock_run(struct store *s, int64_t run, const char *name, struct tv_error *err)
{
    if (s->lock_fd < 0) {
        char *lp;
        int rc = lock_path(s, &lp, err);
        if (rc)
            return rc;
        s->lock_fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (s->lock_fd < 0) {
            rc = tv_error_set(err, TV_EIO, "%s: cannot open the lock file %s: %s", s->path, lp,
                              strerror(errno));
            free(lp);
            return rc;
        }
        free(lp);
    }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)run, .l_len = 1};
    if (fcntl(s->lock_fd, F_OFD_SETLK, &fl) == 0)
        return 0;
    if (errno != EAGAIN && errno != EACCES)
        return tv_error_set(err, TV_EIO, "%s: run '%s': cannot take the writer lock: %s", s->path,
                            name, strerror(errno));
    /* Say who holds it, from what the holder wrote when it took it. */
    char who[160] = "another process";
    sqlite3_stmt *q = stmt(s, ST_RUN_WRITER);
    sqlite3_bind_int64(q, 1, run);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
        const unsigned char *host = sqlite3_column_text(q, 1);
        const unsigned char *since = sqlite3_column_text(q, 2);
        snprintf(who, sizeof who, "pid %lld on host %.60s since %.32s",
                 (long long)sqlite3_column_int64(q, 0), host ? (const char *)host : "?",
                 since ? (const char *)since : "?");
    }
    done(q);
    return tv_error_set(err, TV_ESTATE,
                        "%s: run '%s' is being written by %s; one writer per run (stop it"
                        " first, or wait for it to end)",
                        s->path, name, who);
}

static int add_held(struct store *s, int64_t run, const char *name, struct tv_error *err)
{
    struct held_run *p = realloc(s->held, (s->n_held + 1) * sizeof *p);
    if (!p)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", s->path);
    s->held = p;
    struct held_run *h = &s->held[s->n_held];
    h->run = run;
    h->last_closed = -1;
    snprintf(h->name, sizeof h->name, "%s", name);
    sqlite3_stmt *q = stmt(s, ST_LAST_CLOSED);
    sqlite3_bind_int64(q, 1, run);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        h->last_closed = column_id(q, 0);
    done(q);
    if (rc != SQLITE_ROW)
        return db_error(s, rc, err, "run '%s': reading its last generation", name);
    s->n_held++;
    return 0;
}

static void unlock_run(struct store *s, int64_t run)
{
    struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = (off_t)run, .l_len = 1};
    if (s->lock_fd >= 0)
        fcntl(s->lock_fd, F_OFD_SETLK, &fl);
}

static void host_name(char *buf, size_t cap)
{
    if (gethostname(buf, cap) != 0)
        snprintf(buf, cap, "?");
    buf[cap - 1] = '\0';
}

int store_run_create(struct store *s, const char *name, const char *config, uint64_t seed,
                     const char *program_version, int64_t *run_id, struct tv_error *err)
{
    if (!name || !*name || !config || !program_version)
        return tv_error_set(err, TV_EINVAL,
                            "%s: store_run_create: name, config and"
                            " program version are required",
                            s->path);
    if (s->flags & STORE_READONLY)
        return tv_error_set(err, TV_ESTATE, "%s: cannot create run '%s': opened read-only", s->path,
                            name);
    char what[160];
    snprintf(what, sizeof what, "creating run '%.100s'", name);
    int code = begin(s, err, what);
    if (code)
        return code;
    char host[64];
    host_name(host, sizeof host);
    sqlite3_stmt *q = stmt(s, ST_RUN_INSERT);
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, config, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, (int64_t)seed);
    sqlite3_bind_text(q, 4, program_version, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, (int64_t)getpid());
    sqlite3_bind_text(q, 6, host, -1, SQLITE_TRANSIENT);
    int rc = exec_stmt(q);
    if (rc != SQLITE_OK) {
        if (rc == SQLITE_CONSTRAINT_UNIQUE)
            code = tv_error_set(err, TV_ESTATE,
                                "%s: run '%s' exists already (resume it, or choose another name)",
                                s->path, name);
        else
            code = db_error(s, rc, err, "%s", what);
        rollback(s);
        return code;
    }
    int64_t id = sqlite3_last_insert_rowid(s->db);
    /* Lock before the commit makes the run visible, so no one else can
     * resume it in between. */
    if ((code = lock_run(s, id, name, err)) != 0) {
        rollback(s);
        return code;
    }
    if ((code = commit(s, err, what)) != 0) {
        unlock_run(s, id);
        return code;
    }
    if ((code = add_held(s, id, name, err)) != 0) {
        unlock_run(s, id);
        return code;
    }
    if (run_id)
        *run_id = id;
    return 0;
}

int store_run_resume(struct store *s, const char *name, int64_t *run_id, struct tv_error *err)
{
    if (s->flags & STORE_READONLY)
        return tv_error_set(err, TV_ESTATE, "%s: cannot resume run '%s': opened read-only", s->path,
                            name ? name : "");
    struct store_run_info info;
    int code = store_run_get(s, name, &info, err);
    if (code)
        return code;
    int64_t id = info.run_id;
    store_run_info_release(&info);
    if (held_run(s, id)) {
        if (run_id)
            *run_id = id;
        return 0;
    }
    if ((code = lock_run(s, id, name, err)) != 0)
        return code;
    char host[64];
    host_name(host, sizeof host);
    sqlite3_stmt *q = stmt(s, ST_RUN_SET_WRITER);
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, (int64_t)getpid());
    sqlite3_bind_text(q, 3, host, -1, SQLITE_TRANSIENT);
    int rc = exec_stmt(q);
    if (rc != SQLITE_OK) {
        code = db_error(s, rc, err, "resuming run '%s'", name);
        unlock_run(s, id);
        return code;
    }
    if ((code = add_held(s, id, name, err)) != 0) {
        unlock_run(s, id);
        return code;
    }
    if (run_id)
        *run_id = id;
    return 0;
}

int store_run_set_status(struct store *s, int64_t run, int status, struct tv_error *err)
{
    if (!writer_of(s, run, err, "setting the run status"))
        return err ? err->code : TV_ESTATE;
    if (status < 0 || status >= N_STATUS)
        return tv_error_set(err, TV_EINVAL, "%s: run '%s': unknown status %d", s->path,
                            held_run(s, run)->name, status);
    sqlite3_stmt *q = stmt(s, ST_RUN_SET_STATUS);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_text(q, 2, status_names[status], -1, SQLITE_STATIC);
    int rc = exec_stmt(q);
    if (rc != SQLITE_OK)
        return db_error(s, rc, err, "run '%s': setting status %s", held_run(s, run)->name,
                        status_names[status]);
    return 0;
}

/* ---- individuals -------------------------------------------------------------- */

static int check_row(const struct store *s, const struct held_run *h,
                     const struct store_individual *r, size_t i, struct tv_error *err)
{
    const char *bad = NULL;
    if (r->id < 0)
        bad = "id is negative";
    else if (r->generation < 0)
        bad = "generation is negative";
    else if (r->parent1 < STORE_ID_NONE || r->parent2 < STORE_ID_NONE)
        bad = "parent id is below STORE_ID_NONE";
    else if (r->species < STORE_ID_NONE)
        bad = "species is below STORE_ID_NONE";
    else if (r->op < 0)
        bad = "operator is negative";
    else if (r->rank < 0)
        bad = "rank is negative";
    else if (r->solved != 0 && r->solved != 1)
        bad = "solved is neither 0 nor 1";
    else if (!isfinite(r->eval_seconds) || r->eval_seconds < 0)
        bad = "eval_seconds is not a finite non-negative number";
    else if (!r->genome || r->genome_len == 0)
        bad = "no genome bytes";
    if (bad)
        return tv_error_set(err, TV_EINVAL, "%s: run '%s': row %zu (individual %lld): %s", s->path,
                            h->name, i, (long long)r->id, bad);
    if (r->generation <= h->last_closed)
        return tv_error_set(err, TV_ESTATE,
                            "%s: run '%s': individual %lld: generation %lld is closed"
                            " (last closed: %lld)",
                            s->path, h->name, (long long)r->id, (long long)r->generation,
                            (long long)h->last_closed);
    return 0;
}

/* Binds row r's columns: the individual's into q from parameter p0 + 1 on,
 * its genome's into g from g0 + 1 on. Fails only for a genome too large. */
static int bind_row(sqlite3_stmt *q, sqlite3_stmt *g, int p0, int g0, int64_t run,
                    const struct store_individual *r)
{
    sqlite3_bind_int64(q, p0 + 1, run);
    sqlite3_bind_int64(q, p0 + 2, r->id);
    sqlite3_bind_int64(q, p0 + 3, r->generation);
    sqlite3_bind_double(q, p0 + 4, r->fitness); /* NaN binds as NULL */
    bind_id(q, p0 + 5, r->parent1);
    bind_id(q, p0 + 6, r->parent2);
    sqlite3_bind_int(q, p0 + 7, r->op);
    bind_id(q, p0 + 8, r->species);
    sqlite3_bind_int64(q, p0 + 9, r->n_neurons);
    sqlite3_bind_int64(q, p0 + 10, r->n_conns);
    sqlite3_bind_int64(q, p0 + 11, r->n_skip);
    sqlite3_bind_int64(q, p0 + 12, r->n_recurrent);
    sqlite3_bind_double(q, p0 + 13, r->eval_seconds);
    sqlite3_bind_int(q, p0 + 14, r->rank);
    sqlite3_bind_int(q, p0 + 15, r->solved);
    sqlite3_bind_int64(g, g0 + 1, run);
    sqlite3_bind_int64(g, g0 + 2, r->id);
    /* SQLITE_STATIC: no copy here; SQLite copies the bytes once, into the record */
    return sqlite3_bind_blob64(g, g0 + 3, r->genome, r->genome_len, SQLITE_STATIC);
}

/* Inserts rows[0..k): k is INSERT_ROWS (one multi-row statement per table)
 * or 1. Every parameter is bound again, so none needs clearing. */
static int insert_rows(struct store *s, int64_t run, const struct store_individual *rows, size_t k)
{
    sqlite3_stmt *q = s->st[k == 1 ? ST_IND_INSERT : ST_IND_INSERT_MANY];
    sqlite3_stmt *g = s->st[k == 1 ? ST_GENOME_INSERT : ST_GENOME_INSERT_MANY];
    for (size_t i = 0; i < k; i++) {
        int rc = bind_row(q, g, (int)i * N_IND_INSERT_COLS, (int)i * N_GENOME_INSERT_COLS, run,
                          &rows[i]);
        if (rc != SQLITE_OK)
            return rc;
    }
    int rc = exec_stmt(q);
    if (rc == SQLITE_OK)
        rc = exec_stmt(g);
    return rc;
}

struct id_row {
    int64_t id;
    size_t row;
};

static int cmp_id_row(const void *a, const void *b)
{
    const struct id_row *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* After a batch failed on a key conflict and was rolled back: the first row
 * whose id is in the database or in an earlier row of the batch (the row a
 * row-by-row insertion would have stopped at); n if there is none. */
static size_t first_conflict(struct store *s, int64_t run, const struct store_individual *rows,
                             size_t n)
{
    size_t found = n;
    struct id_row *ids = malloc(n * sizeof *ids);
    if (ids) {
        for (size_t i = 0; i < n; i++)
            ids[i] = (struct id_row){rows[i].id, i};
        qsort(ids, n, sizeof *ids, cmp_id_row);
        /* an id repeated in the batch: the row of its second occurrence */
        for (size_t i = 1; i < n; i++)
            if (ids[i].id == ids[i - 1].id && (i < 2 || ids[i - 2].id != ids[i].id) &&
                ids[i].row < found)
                found = ids[i].row;
        free(ids);
    }
    /* an id in the database, before that */
    sqlite3_stmt *q = s->st[ST_IND_EXISTS];
    for (size_t i = 0; i < found; i++) {
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_int64(q, 2, rows[i].id);
        if (sqlite3_step(q) == SQLITE_ROW)
            found = i;
    }
    sqlite3_reset(q);
    return found;
}

int store_add_individuals(struct store *s, int64_t run, const struct store_individual *rows,
                          size_t n, struct tv_error *err)
{
    struct held_run *h = writer_of(s, run, err, "adding individuals");
    if (!h)
        return err ? err->code : TV_ESTATE;
    if (n == 0)
        return 0;
    if (!rows)
        return tv_error_set(err, TV_EINVAL, "%s: run '%s': %zu rows but no array", s->path, h->name,
                            n);
    for (size_t i = 0; i < n; i++) {
        int code = check_row(s, h, &rows[i], i, err);
        if (code)
            return code;
    }
    char what[200];
    snprintf(what, sizeof what, "run '%s': adding %zu individuals", h->name, n);
    int code = begin(s, err, what);
    if (code)
        return code;
    for (size_t i = 0; i < n;) {
        size_t k = n - i >= INSERT_ROWS ? INSERT_ROWS : 1;
        int rc = insert_rows(s, run, rows + i, k);
        if (rc == SQLITE_OK) {
            i += k;
            continue;
        }
        code = db_error(s, rc, err,
                        "run '%s': adding individuals %lld to %lld (rows %zu to %zu of %zu;"
                        " nothing of this batch was written)",
                        h->name, (long long)rows[i].id, (long long)rows[i + k - 1].id, i, i + k - 1,
                        n);
        rollback(s); /* after a conflict, OR ROLLBACK has done it already */
        if ((rc & 0xff) == SQLITE_CONSTRAINT) {
            size_t at = first_conflict(s, run, rows, n);
            if (at < n)
                code = tv_error_set(err, TV_EINVAL,
                                    "%s: run '%s': individual %lld exists already (row %zu of"
                                    " %zu); nothing of this batch was written",
                                    s->path, h->name, (long long)rows[at].id, at, n);
        }
        return code;
    }
    code = commit(s, err, what);
    if (code) {
        append_msg(err, "; nothing of this batch was written");
        return code;
    }
    kick(s);
    return 0;
}

/* Reads the individual columns (and, with_genome, the genome bytes appended
 * to bytes) of the current row. The row's genome pointer is fixed later. */
static int64_t value_id(sqlite3_value *v)
{
    return sqlite3_value_type(v) == SQLITE_NULL ? STORE_ID_NONE : sqlite3_value_int64(v);
}

static double value_real(sqlite3_value *v)
{
    return sqlite3_value_type(v) == SQLITE_NULL ? NAN : sqlite3_value_double(v);
}

static int read_row(sqlite3_stmt *q, int with_genome, struct store_individual *r,
                    struct tv_buf *bytes, const char *where, struct tv_error *err)
{
    memset(r, 0, sizeof *r);
    /* Each sqlite3_column_*() call costs more than reading the value: take
     * every column's value once (safe here: a connection is only ever used
     * by one thread at a time), then read those. */
    sqlite3_value *v[N_IND_COLS];
    for (int c = 0; c < N_IND_COLS; c++)
        v[c] = sqlite3_column_value(q, c);
    r->id = sqlite3_value_int64(v[0]);
    static const int must_int[] = {0, 1, 5, 7, 8, 9, 10, 12, 13};
    static const char *const names[] = {
        "id",        "generation", "fitness", "parent1",     "parent2",      "op",   "species",
        "n_neurons", "n_conns",    "n_skip",  "n_recurrent", "eval_seconds", "rank", "solved"};
    for (size_t k = 0; k < sizeof must_int / sizeof must_int[0]; k++) {
        int c = must_int[k];
        if (sqlite3_value_type(v[c]) != SQLITE_INTEGER)
            return tv_error_set(err, TV_ECORRUPT,
                                "%s: individual %lld: damaged row: %s is not"
                                " an integer",
                                where, (long long)r->id, names[c]);
    }
    for (int c = 7; c <= 10; c++) {
        int64_t x = sqlite3_value_int64(v[c]);
        if (x < 0 || x > UINT32_MAX)
            return tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: damaged row: %s = %lld",
                                where, (long long)r->id, names[c], (long long)x);
    }
    r->generation = sqlite3_value_int64(v[1]);
    r->fitness = value_real(v[2]);
    r->parent1 = value_id(v[3]);
    r->parent2 = value_id(v[4]);
    r->op = sqlite3_value_int(v[5]);
    r->species = value_id(v[6]);
    r->n_neurons = (uint32_t)sqlite3_value_int64(v[7]);
    r->n_conns = (uint32_t)sqlite3_value_int64(v[8]);
    r->n_skip = (uint32_t)sqlite3_value_int64(v[9]);
    r->n_recurrent = (uint32_t)sqlite3_value_int64(v[10]);
    r->eval_seconds = value_real(v[11]);
    r->rank = sqlite3_value_int(v[12]);
    r->solved = sqlite3_value_int(v[13]) != 0;
    if (!with_genome)
        return 0;
    if (sqlite3_column_type(q, N_IND_COLS) != SQLITE_BLOB)
        return tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: %s", where, (long long)r->id,
                            sqlite3_column_type(q, N_IND_COLS) == SQLITE_NULL
                                ? "no genome row"
                                : "damaged row: genome is not a BLOB");
    const void *b = sqlite3_column_blob(q, N_IND_COLS);
    int len = sqlite3_column_bytes(q, N_IND_COLS);
    if (!b || len <= 0)
        return tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: empty genome", where,
                            (long long)r->id);
    r->genome_len = (size_t)len;
    if (tv_buf_append(bytes, b, (size_t)len))
        return tv_error_set(err, TV_ENOMEM, "%s: individual %lld: out of memory", where,
                            (long long)r->id);
    return 0;
}

static int set_push(struct store_set *set, size_t *cap, struct store_individual **slot,
                    struct tv_error *err)
{
    if (set->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        struct store_individual *p = realloc(set->rows, ncap * sizeof *p);
        if (!p)
            return tv_error_set(err, TV_ENOMEM, "%s: out of memory loading individuals",
                                set->where);
        set->rows = p;
        *cap = ncap;
    }
    *slot = &set->rows[set->n];
    return 0;
}

/* Genome pointers into set->bytes, once it has stopped moving. */
static void set_fix_pointers(struct store_set *set)
{
    size_t off = 0;
    for (size_t i = 0; i < set->n; i++) {
        if (set->rows[i].genome_len) {
            set->rows[i].genome = set->bytes.data + off;
            off += set->rows[i].genome_len;
        }
    }
}

static int cmp_row_id(const void *a, const void *b)
{
    const struct store_individual *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Sorts the rows by id (their genome pointers go with them). */
static void set_sort(struct store_set *set)
{
    for (size_t i = 1; i < set->n; i++)
        if (set->rows[i].id < set->rows[i - 1].id) {
            qsort(set->rows, set->n, sizeof *set->rows, cmp_row_id);
            return;
        }
}

static void set_init(struct store *s, int64_t run, struct store_set *set)
{
    memset(set, 0, sizeof *set);
    char label[128];
    snprintf(set->where, sizeof set->where, "%s: %s", s->path,
             run_label(s, run, label, sizeof label));
}

/* Appends every row q yields to set. */
static int set_load(struct store *s, sqlite3_stmt *q, int with_genomes, struct store_set *set,
                    size_t *cap, struct tv_error *err)
{
    int rc, code = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        struct store_individual *r = NULL;
        if ((code = set_push(set, cap, &r, err)) != 0 ||
            (code = read_row(q, with_genomes, r, &set->bytes, set->where, err)) != 0)
            break;
        set->n++;
    }
    if (!code && rc != SQLITE_DONE)
        code = tv_error_set(err, code_of(s->db, rc), "%s: loading individuals: %s", set->where,
                            sqlite3_errmsg(s->db));
    done(q);
    return code;
}

void store_set_release(struct store_set *set)
{
    if (!set)
        return;
    free(set->rows);
    tv_buf_free(&set->bytes);
    memset(set, 0, sizeof *set);
}

int store_set_genome(const struct store_set *set, size_t i, struct genome *g, struct tv_error *err)
{
    if (i >= set->n)
        return tv_error_set(err, TV_EINVAL, "%s: individual index %zu out of range (%zu loaded)",
                            set->where, i, set->n);
    const struct store_individual *r = &set->rows[i];
    if (!r->genome)
        return tv_error_set(err, TV_EINVAL, "%s: individual %lld: loaded without its genome",
                            set->where, (long long)r->id);
    int code = genome_decode(g, r->genome, r->genome_len, NULL, err);
    if (code) {
        if (err)
            err->code = TV_ECORRUPT;
        tv_error_prefix(err, "%s: individual %lld: damaged genome", set->where, (long long)r->id);
        return TV_ECORRUPT;
    }
    return 0;
}

int store_individuals_load(struct store *s, int64_t run, int64_t generation, int with_genomes,
                           struct store_set *out, struct tv_error *err)
{
    set_init(s, run, out);
    sqlite3_stmt *q = stmt(s, with_genomes ? ST_IND_OF_GEN_GENOMES : ST_IND_OF_GEN);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, generation);
    size_t cap = 0;
    int code = set_load(s, q, with_genomes, out, &cap, err);
    if (code) {
        store_set_release(out);
        return code;
    }
    set_fix_pointers(out);
    return 0;
}

int store_individual_get(struct store *s, int64_t run, int64_t id, struct store_individual *out,
                         struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    char label[128], where[300];
    snprintf(where, sizeof where, "%s: %s", s->path, run_label(s, run, label, sizeof label));
    sqlite3_stmt *q = stmt(s, ST_IND_GET);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, id);
    int rc = sqlite3_step(q);
    int code = 0;
    s->scratch.len = 0;
    if (rc == SQLITE_ROW) {
        code = read_row(q, 1, out, &s->scratch, where, err);
        if (!code)
            out->genome = s->scratch.data;
    } else if (rc == SQLITE_DONE) {
        code = tv_error_set(err, TV_ENOTFOUND, "%s: no individual %lld", where, (long long)id);
    } else {
        code = tv_error_set(err, code_of(s->db, rc), "%s: reading individual %lld: %s", where,
                            (long long)id, sqlite3_errmsg(s->db));
    }
    done(q);
    return code;
}

int store_genome_read(struct store *s, int64_t run, int64_t id, struct genome *g,
                      struct tv_error *err)
{
    char label[128];
    sqlite3_stmt *q = stmt(s, ST_GENOME_GET);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, id);
    int rc = sqlite3_step(q);
    int code;
    if (rc == SQLITE_ROW) {
        if (sqlite3_column_type(q, 0) != SQLITE_BLOB) {
            code = tv_error_set(err, TV_ECORRUPT,
                                "%s: %s: individual %lld: damaged genome row"
                                " (not a BLOB)",
                                s->path, run_label(s, run, label, sizeof label), (long long)id);
        } else {
            const void *b = sqlite3_column_blob(q, 0);
            size_t len = (size_t)sqlite3_column_bytes(q, 0);
            code = genome_decode(g, b, len, NULL, err);
            if (code) {
                done(q);
                if (err)
                    err->code = TV_ECORRUPT;
                tv_error_prefix(err, "%s: %s: individual %lld: damaged genome", s->path,
                                run_label(s, run, label, sizeof label), (long long)id);
                return TV_ECORRUPT;
            }
        }
    } else if (rc == SQLITE_DONE) {
        code = tv_error_set(err, TV_ENOTFOUND, "%s: %s: no genome for individual %lld", s->path,
                            run_label(s, run, label, sizeof label), (long long)id);
    } else {
        code = tv_error_set(err, code_of(s->db, rc), "%s: %s: reading genome %lld: %s", s->path,
                            run_label(s, run, label, sizeof label), (long long)id,
                            sqlite3_errmsg(s->db));
    }
    done(q);
    return code;
}

/* ---- population ids ------------------------------------------------------ */

struct member {
    int64_t id;
    size_t pos; /* index in the population */
};

static int cmp_member(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* ids[0..n) with their positions, sorted by id (the master keeps its
 * population sorted: then there is nothing to sort). NULL if out of memory. */
static struct member *members_sorted(const int64_t *ids, size_t n)
{
    struct member *m = malloc((n ? n : 1) * sizeof *m);
    if (!m)
        return NULL;
    int sorted = 1;
    for (size_t i = 0; i < n; i++) {
        m[i] = (struct member){ids[i], i};
        sorted &= i == 0 || ids[i - 1] <= ids[i];
    }
    if (!sorted)
        qsort(m, n, sizeof *m, cmp_member);
    return m;
}

/* Ids closer than this are read by one range scan rather than lookups. */
#define RUN_GAP 8

/* The end of the run of nearby ids that starts at m[k]. */
static size_t run_end(const struct member *m, size_t k, size_t n)
{
    size_t e = k + 1;
    while (e < n && m[e].id - m[e - 1].id <= RUN_GAP)
        e++;
    return e;
}

/* Sets *missing to the position of the first of ids[0..n) (in their order)
 * that is not an individual of run, n if every one is; an SQLite result
 * code. One range scan per run of nearby ids, not one lookup per id: a
 * population is mostly one or two generations, dense ranges. */
static int find_missing(struct store *s, int64_t run, const int64_t *ids, size_t n, size_t *missing)
{
    *missing = n;
    struct member *m = members_sorted(ids, n);
    if (!m)
        return SQLITE_NOMEM;
    int rc = SQLITE_DONE;
    for (size_t k = 0; k < n;) {
        size_t e = run_end(m, k, n), j = k;
        sqlite3_stmt *q = stmt(s, ST_IND_ID_RANGE);
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_int64(q, 2, m[k].id);
        sqlite3_bind_int64(q, 3, m[e - 1].id);
        while (j < e && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            for (; j < e && m[j].id <= id; j++)
                if (m[j].id < id && m[j].pos < *missing)
                    *missing = m[j].pos;
        }
        done(q);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            break;
        rc = SQLITE_DONE;
        for (; j < e; j++)
            if (m[j].pos < *missing)
                *missing = m[j].pos;
        k = e;
    }
    free(m);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* ---- generations and checkpoints ----------------------------------------------- */

static void put_le64(uint8_t *p, int64_t v)
{
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (8 * i));
}

static int64_t get_le64(const uint8_t *p)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u |= (uint64_t)p[i] << (8 * i);
    return (int64_t)u;
}

int store_generation_close(struct store *s, int64_t run, const struct store_generation *g,
                           struct tv_error *err)
{
    struct held_run *h = writer_of(s, run, err, "closing a generation");
    if (!h)
        return err ? err->code : TV_ESTATE;
    if (g->generation != h->last_closed + 1)
        return tv_error_set(
            err, TV_ESTATE, "%s: run '%s': cannot close generation %lld: the next to close is %lld",
            s->path, h->name, (long long)g->generation, (long long)(h->last_closed + 1));
    if (g->n_population == 0 || !g->population)
        return tv_error_set(err, TV_EINVAL,
                            "%s: run '%s': generation %lld: the checkpoint has no population",
                            s->path, h->name, (long long)g->generation);
    if ((g->n_species && !g->species) || (g->state_len && !g->state))
        return tv_error_set(err, TV_EINVAL, "%s: run '%s': generation %lld: missing %s array",
                            s->path, h->name, (long long)g->generation,
                            g->state_len && !g->state ? "state" : "species");
    if (g->n_population > SIZE_MAX / 8 || g->n_population > INT_MAX / 8)
        return tv_error_set(err, TV_ELIMIT, "%s: run '%s': population of %zu is too large", s->path,
                            h->name, g->n_population);
    uint8_t *ids = malloc(g->n_population * 8);
    if (!ids)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", s->path);
    for (size_t i = 0; i < g->n_population; i++)
        put_le64(ids + 8 * i, g->population[i]);

    char what[200];
    snprintf(what, sizeof what, "run '%s': closing generation %lld", h->name,
             (long long)g->generation);
    int code = begin(s, err, what);
    if (code)
        goto out;
    size_t missing;
    int rc = find_missing(s, run, g->population, g->n_population, &missing);
    if (rc != SQLITE_OK) {
        code = db_error(s, rc, err, "%s: looking up the population", what);
        goto fail;
    }
    if (missing < g->n_population) {
        code = tv_error_set(err, TV_EINVAL,
                            "%s: %s: population member %zu (individual %lld) was never added",
                            s->path, what, missing, (long long)g->population[missing]);
        goto fail;
    }
    sqlite3_stmt *q = stmt(s, ST_GENERATION_INSERT);
    q = stmt(s, ST_GENERATION_INSERT);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, g->generation);
    sqlite3_bind_double(q, 3, g->best);
    sqlite3_bind_double(q, 4, g->mean);
    sqlite3_bind_double(q, 5, g->median);
    bind_id(q, 6, g->champion);
    sqlite3_bind_int64(q, 7, (int64_t)g->n_species);
    sqlite3_bind_int64(q, 8, (int64_t)g->n_evals);
    sqlite3_bind_double(q, 9, g->wall_seconds);
    sqlite3_bind_int(q, 10, g->solved || (g->champion_tested && g->champion_solved));
    if (g->champion_tested)
        sqlite3_bind_double(q, 11, g->champion_score);
    else
        sqlite3_bind_null(q, 11);
    if ((rc = exec_stmt(q)) != SQLITE_OK) {
        code = db_error(s, rc, err, "%s: statistics", what);
        goto fail;
    }
    if (g->champion_tested && g->champion_solved && g->champion != STORE_ID_NONE) {
        q = stmt(s, ST_IND_MARK_SOLVED);
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_int64(q, 2, g->champion);
        if ((rc = exec_stmt(q)) != SQLITE_OK) {
            code = db_error(s, rc, err, "%s: marking the champion solved", what);
            goto fail;
        }
    }
    for (size_t i = 0; i < g->n_species; i++) {
        const struct store_species *sp = &g->species[i];
        q = stmt(s, ST_SPECIES_INSERT);
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_int64(q, 2, g->generation);
        sqlite3_bind_int64(q, 3, sp->id);
        sqlite3_bind_int64(q, 4, sp->size);
        sqlite3_bind_double(q, 5, sp->best_fitness);
        sqlite3_bind_double(q, 6, sp->mean_fitness);
        bind_id(q, 7, sp->representative);
        sqlite3_bind_int64(q, 8, sp->born);
        sqlite3_bind_int64(q, 9, sp->stagnant);
        if ((rc = exec_stmt(q)) != SQLITE_OK) {
            if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
                code = tv_error_set(err, TV_EINVAL, "%s: %s: species %lld appears twice", s->path,
                                    what, (long long)sp->id);
            else
                code = db_error(s, rc, err, "%s: species %lld", what, (long long)sp->id);
            goto fail;
        }
    }
    q = stmt(s, ST_CKPT_INSERT);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, g->generation);
    sqlite3_bind_blob64(q, 3, g->state_len ? g->state : "", g->state_len, SQLITE_STATIC);
    sqlite3_bind_blob64(q, 4, ids, g->n_population * 8, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, (int64_t)g->n_population);
    if ((rc = exec_stmt(q)) != SQLITE_OK) {
        code = db_error(s, rc, err, "%s: checkpoint", what);
        goto fail;
    }
    q = stmt(s, ST_RUN_TOUCH);
    sqlite3_bind_int64(q, 1, run);
    if ((rc = exec_stmt(q)) != SQLITE_OK) {
        code = db_error(s, rc, err, "%s: run row", what);
        goto fail;
    }
    if ((code = commit(s, err, what)) != 0) {
        append_msg(err, "; the generation stays open");
        goto out;
    }
    h->last_closed = g->generation;
    if (s->checkpoint_wal_bytes < 0 || side_file_size(s->path, "-wal") > s->checkpoint_wal_bytes)
        truncate_wal(s);
    else
        kick(s);
    goto out;
fail:
    rollback(s);
out:
    free(ids);
    return code;
}

int store_generation_get(struct store *s, int64_t run, int64_t generation,
                         struct store_generation *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    char label[128];
    sqlite3_stmt *q = stmt(s, ST_GENERATION_GET);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, generation);
    int rc = sqlite3_step(q);
    int code = 0;
    if (rc == SQLITE_ROW) {
        out->generation = sqlite3_column_int64(q, 0);
        out->best = column_real(q, 1);
        out->mean = column_real(q, 2);
        out->median = column_real(q, 3);
        out->champion = column_id(q, 4);
        out->n_evals = (uint64_t)sqlite3_column_int64(q, 5);
        out->wall_seconds = column_real(q, 6);
        out->n_species = (size_t)sqlite3_column_int64(q, 7);
        out->solved = sqlite3_column_int(q, 8);
        out->champion_tested = sqlite3_column_type(q, 9) != SQLITE_NULL;
        out->champion_score = column_real(q, 9);
    } else if (rc == SQLITE_DONE) {
        if (generation < 0)
            code = tv_error_set(err, TV_ENOTFOUND, "%s: %s: no generation closed yet", s->path,
                                run_label(s, run, label, sizeof label));
        else
            code = tv_error_set(err, TV_ENOTFOUND, "%s: %s: generation %lld is not closed", s->path,
                                run_label(s, run, label, sizeof label), (long long)generation);
    } else {
        code = db_error(s, rc, err, "reading generation %lld", (long long)generation);
    }
    done(q);
    return code;
}

/* ---- loading a population -------------------------------------------------- */

/* Maps the first n bytes of fresh memory at p in one system call: faulting
 * in a 200 MB buffer a page at a time costs about as much as reading the
 * genomes into it (0.5 ms per MB here), in bulk about a quarter less. A
 * hint: without it (Linux < 5.14) the pages fault in as they are written. */
static void prefault(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = 4096;
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

/* prefault() on another thread, for buffers at least this large (a thread
 * costs more than faulting in a small one). */
#define PREFAULT_BYTES ((size_t)4 << 20)

struct prefaulter {
    pthread_t thread;
    void *p;
    size_t n;
    int started;
};

static void *prefault_main(void *arg)
{
    struct prefaulter *pf = arg;
    prefault(pf->p, pf->n);
    return NULL;
}

/* Starts prefault(p, n) on another thread (done here if none can start). */
static void prefault_start(struct prefaulter *pf, void *p, size_t n)
{
    pf->p = p;
    pf->n = n;
    pf->started = start_thread(&pf->thread, prefault_main, pf) == 0;
    if (!pf->started)
        prefault(p, n);
}

/* Waits for it to end: before the memory may move or be freed (writing to
 * it meanwhile is safe: populating never changes a page already there). */
static void prefault_join(struct prefaulter *pf)
{
    if (pf->started)
        pthread_join(pf->thread, NULL);
    pf->started = 0;
}

/* Loads the individuals ids[0..n) (any order, repeats allowed) with their
 * genomes into set->rows in that order. The ids are sorted and read in runs
 * of nearby ids by range scans of individuals and of genomes: a population
 * is mostly one or two generations, i.e. dense ranges, and a scan is several
 * times cheaper than a lookup per id. */
static int load_members(struct store *s, int64_t run, const int64_t *ids, size_t n, int64_t gen,
                        struct store_set *set, struct tv_error *err)
{
    const char *where = set->where;
    struct prefaulter pf = {0};
    struct member *m = members_sorted(ids, n);
    size_t *off = malloc(n * sizeof *off);
    set->rows = calloc(n, sizeof *set->rows);
    int code = 0, rc = SQLITE_DONE;
    if (!m || !off || !set->rows) {
        code = tv_error_set(err, TV_ENOMEM, "%s: out of memory loading the population", where);
        goto out;
    }
    /* Room for the genomes, guessed from the first one's size, mapped in by
     * another thread while this one reads the rows. */
    sqlite3_stmt *q = stmt(s, ST_GENOME_GET);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, m[0].id);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_bytes(q, 0) > 0) {
        size_t len = (size_t)sqlite3_column_bytes(q, 0);
        if (tv_buf_reserve(&set->bytes, len * n / 8 * 9 + 64) == 0 && len * n >= PREFAULT_BYTES)
            prefault_start(&pf, set->bytes.data, len * n);
    }
    done(q);
    for (size_t k = 0; k < n && !code;) {
        size_t e = run_end(m, k, n);
        /* the rows */
        q = stmt(s, ST_IND_RANGE);
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_int64(q, 2, m[k].id);
        sqlite3_bind_int64(q, 3, m[e - 1].id);
        size_t j = k;
        rc = SQLITE_DONE;
        while (!code && j < e && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            if (m[j].id < id)
                break; /* m[j] is missing */
            if (m[j].id > id)
                continue;
            struct store_individual *r = &set->rows[m[j].pos];
            code = read_row(q, 0, r, NULL, where, err);
            for (j++; !code && j < e && m[j].id == id; j++)
                set->rows[m[j].pos] = *r;
        }
        if (!code && rc != SQLITE_ROW && rc != SQLITE_DONE)
            code = tv_error_set(err, code_of(s->db, rc), "%s: loading individuals: %s", where,
                                sqlite3_errmsg(s->db));
        done(q);
        if (!code && j < e)
            code = tv_error_set(err, TV_ECORRUPT,
                                "%s: checkpoint of generation %lld names individual %lld,"
                                " which is missing",
                                where, (long long)gen, (long long)m[j].id);
        if (code)
            break;
        /* their genomes */
        q = stmt(s, ST_GENOME_RANGE);
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_int64(q, 2, m[k].id);
        sqlite3_bind_int64(q, 3, m[e - 1].id);
        j = k;
        rc = SQLITE_DONE;
        while (!code && j < e && (rc = sqlite3_step(q)) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            if (m[j].id < id)
                break;
            if (m[j].id > id)
                continue;
            int len = sqlite3_column_bytes(q, 1);
            if (sqlite3_column_type(q, 1) != SQLITE_BLOB || len <= 0) {
                code = tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: damaged genome row",
                                    where, (long long)id);
                break;
            }
            if (set->bytes.len + (size_t)len > set->bytes.cap)
                prefault_join(&pf); /* the buffer may move */
            if (set->bytes.cap == 0 && tv_buf_reserve(&set->bytes, (size_t)len * n / 8 * 9 + 64))
                code = TV_ENOMEM;
            size_t at = set->bytes.len;
            if (code || tv_buf_append(&set->bytes, sqlite3_column_blob(q, 1), (size_t)len)) {
                code = tv_error_set(err, TV_ENOMEM, "%s: out of memory loading genomes", where);
                break;
            }
            for (; j < e && m[j].id == id; j++) {
                off[m[j].pos] = at;
                set->rows[m[j].pos].genome_len = (size_t)len;
            }
        }
        if (!code && rc != SQLITE_ROW && rc != SQLITE_DONE)
            code = tv_error_set(err, code_of(s->db, rc), "%s: loading genomes: %s", where,
                                sqlite3_errmsg(s->db));
        done(q);
        if (!code && j < e)
            code = tv_error_set(err, TV_ECORRUPT, "%s: individual %lld: no genome row", where,
                                (long long)m[j].id);
        k = e;
    }
    if (!code) {
        for (size_t i = 0; i < n; i++)
            set->rows[i].genome = set->bytes.data + off[i];
        set->n = n;
    }
out:
    prefault_join(&pf);
    free(m);
    free(off);
    return code;
}

void store_checkpoint_release(struct store_checkpoint *c)
{
    if (!c)
        return;
    free(c->state);
    store_set_release(&c->population);
    store_set_release(&c->pending);
    memset(c, 0, sizeof *c);
}

int store_checkpoint_load(struct store *s, int64_t run, struct store_checkpoint *out,
                          struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    set_init(s, run, &out->population);
    set_init(s, run, &out->pending);
    const char *where = out->population.where;
    int code = 0;
    /* One read transaction, so the checkpoint, its population and the pending
     * rows are one snapshot even while a writer commits. */
    int rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return db_error(s, rc, err, "loading the checkpoint: begin");
    sqlite3_stmt *q = stmt(s, ST_CKPT_LATEST);
    sqlite3_bind_int64(q, 1, run);
    rc = sqlite3_step(q);
    if (rc == SQLITE_DONE) {
        code =
            tv_error_set(err, TV_ENOTFOUND, "%s: no checkpoint (no generation closed yet)", where);
        goto fail;
    }
    if (rc != SQLITE_ROW) {
        code = tv_error_set(err, code_of(s->db, rc), "%s: reading the checkpoint: %s", where,
                            sqlite3_errmsg(s->db));
        goto fail;
    }
    out->generation = sqlite3_column_int64(q, 0);
    int64_t n_pop = sqlite3_column_int64(q, 3);
    if (sqlite3_column_type(q, 1) != SQLITE_BLOB || sqlite3_column_type(q, 2) != SQLITE_BLOB ||
        n_pop <= 0 || sqlite3_column_bytes(q, 2) != n_pop * 8) {
        code = tv_error_set(err, TV_ECORRUPT,
                            "%s: checkpoint of generation %lld is damaged (population of %lld"
                            " ids in %d bytes)",
                            where, (long long)out->generation, (long long)n_pop,
                            sqlite3_column_bytes(q, 2));
        goto fail;
    }
    size_t state_len = (size_t)sqlite3_column_bytes(q, 1);
    out->state = malloc(state_len ? state_len : 1);
    uint8_t *ids = malloc((size_t)n_pop * 8);
    if (!out->state || !ids) {
        free(ids);
        code = tv_error_set(err, TV_ENOMEM, "%s: out of memory loading the checkpoint", where);
        goto fail;
    }
    if (state_len)
        memcpy(out->state, sqlite3_column_blob(q, 1), state_len);
    out->state_len = state_len;
    memcpy(ids, sqlite3_column_blob(q, 2), (size_t)n_pop * 8);
    done(q);

    int64_t *pop_ids = malloc((size_t)n_pop * sizeof *pop_ids);
    if (!pop_ids) {
        free(ids);
        code = tv_error_set(err, TV_ENOMEM, "%s: out of memory loading the population", where);
        goto fail;
    }
    for (int64_t i = 0; i < n_pop; i++)
        pop_ids[i] = get_le64(ids + 8 * i);
    free(ids);
    code = load_members(s, run, pop_ids, (size_t)n_pop, out->generation, &out->population, err);
    free(pop_ids);
    if (code)
        goto fail;

    q = stmt(s, ST_IND_PENDING);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_int64(q, 2, out->generation);
    size_t cap = 0;
    if ((code = set_load(s, q, 1, &out->pending, &cap, err)) != 0)
        goto fail;
    set_fix_pointers(&out->pending);
    set_sort(&out->pending);
    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    return 0;
fail:
    done(s->st[ST_CKPT_LATEST]);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    store_checkpoint_release(out);
    return code;
}
