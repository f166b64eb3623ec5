/*
 * store.c -- what every part of store/ shares: the prepared statements'
 * SQL, SQLite errors turned into ours, transactions, and the runs this
 * connection writes. See store.h; the parts are opening (open.c), the WAL
 * copy (wal.c), runs (runs.c), individuals (individuals.c), generations
 * (generations.c) and checkpoints (checkpoint.c).
 */
#include "store_impl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

const char *const store_st_sql[ST_COUNT] = {
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
    /* in index order; sorted by id afterwards if need be (store_set_sort) */
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
        " champion, n_species, n_evals, wall_seconds, solved, champion_test, failed,"
        " closed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, " NOW ")",
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
    [ST_IND_ROW] = "SELECT " IND_COLS " FROM individuals i WHERE i.run_id = ?1 AND i.id = ?2",
    [ST_GENOME_IDS] = "SELECT id FROM genomes WHERE run_id = ?1 AND id <= ?2 ORDER BY id",
    [ST_GENOME_DELETE] = "DELETE FROM genomes WHERE run_id = ?1 AND id = ?2",
    [ST_CHAMPIONS] = "SELECT champion FROM generations WHERE run_id = ?1 AND champion IS NOT NULL",
    [ST_CKPT_DROP_OLDER] = "DELETE FROM checkpoints WHERE run_id = ?1 AND generation < ?2",
    [ST_GENOME_IDS_SINCE] = "SELECT g.id FROM genomes g JOIN individuals i"
                            " ON i.run_id = g.run_id AND i.id = g.id WHERE g.run_id = ?1"
                            " AND g.id <= ?2 AND i.generation >= ?3 ORDER BY g.id",
};

/* ---- errors ---------------------------------------------------------------- */

/* Our code for an SQLite result; a write that failed for lack of space is
 * TV_ENOSPACE whether SQLite saw ENOSPC (SQLITE_FULL), EDQUOT or EFBIG. */
int store_code_of(sqlite3 *db, int rc)
{
    int sys = db ? sqlite3_system_errno(db) : 0;
    if (rc == SQLITE_IOERR_NOMEM)
        return TV_ENOMEM;
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

int64_t store_side_file_size(const char *path, const char *suffix)
{
    char p[4200];
    struct stat sb;
    if (snprintf(p, sizeof p, "%s%s", path, suffix) >= (int)sizeof p || stat(p, &sb) != 0)
        return -1;
    return (int64_t)sb.st_size;
}

/* Past the file-size limit (RLIMIT_FSIZE, ulimit -f) a write fails with
 * EFBIG (main() ignores SIGXFSZ), which SQLite reports as a plain I/O error
 * whose errno it has often lost by then (sqlite3_system_errno() reads errno
 * after later calls): 1 if the database or its WAL has no room left under
 * the limit for one more page. */
static int at_file_size_limit(const struct store *s)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    static const char *const suffix[] = {"", "-wal"};
    for (size_t k = 0; k < 2; k++) {
        int64_t size = store_side_file_size(s->path, suffix[k]);
        if (size >= 0 && (rlim_t)size + PAGE_SIZE + 64 > rl.rlim_cur)
            return 1;
    }
    return 0;
}

int store_db_error(const struct store *s, int rc, struct tv_error *err, const char *fmt, ...)
{
    char ctx[TV_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    int code = store_code_of(s->db, rc);
    const char *what = code == TV_ENOSPACE ? "disk full: " : "";
    if (code == TV_EIO && at_file_size_limit(s)) {
        code = TV_ENOSPACE;
        what = "file-size limit reached (ulimit -f): ";
    }
    int sys = sqlite3_system_errno(s->db);
    char os[96] = "";
    if ((code == TV_EIO || code == TV_ENOSPACE) && sys)
        snprintf(os, sizeof os, " (%s)", strerror(sys));
    /* the connection's message only when it is about rc: a code made here
     * (SQLITE_NOMEM for our own malloc) or one a reset cleared has none */
    const char *msg =
        (sqlite3_errcode(s->db) & 0xff) == (rc & 0xff) ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
    return tv_error_set(err, code, "%s: %s: %s%s%s", s->path, ctx, what, msg, os);
}

/* Adds text at the end of err's message (as far as it fits). */
void store_append_msg(struct tv_error *err, const char *text)
{
    if (!err)
        return;
    size_t n = strlen(err->msg);
    snprintf(err->msg + n, sizeof err->msg - n, "%s", text);
}

/* ---- small helpers --------------------------------------------------------- */

sqlite3_stmt *store_stmt(struct store *s, enum st id)
{
    sqlite3_stmt *q = s->st[id];
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return q;
}

sqlite3_stmt *store_stmt2(struct store *s, enum st id, int64_t a, int64_t b)
{
    sqlite3_stmt *q = store_stmt(s, id);
    sqlite3_bind_int64(q, 1, a);
    sqlite3_bind_int64(q, 2, b);
    return q;
}

sqlite3_stmt *store_stmt3(struct store *s, enum st id, int64_t a, int64_t b, int64_t c)
{
    sqlite3_stmt *q = store_stmt2(s, id, a, b);
    sqlite3_bind_int64(q, 3, c);
    return q;
}

void store_done(sqlite3_stmt *q)
{
    sqlite3_reset(q);
}

int store_bind_id(sqlite3_stmt *q, int i, int64_t v)
{
    return v < 0 ? sqlite3_bind_null(q, i) : sqlite3_bind_int64(q, i, v);
}

int64_t store_column_id(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? STORE_ID_NONE : sqlite3_column_int64(q, i);
}

double store_column_real(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

/* Runs a statement that returns no rows (or ignores them). */
int store_exec_stmt(sqlite3_stmt *q)
{
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    }
    sqlite3_reset(q);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Ends a failed transaction; the error was recorded already. */
void store_rollback(struct store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        store_exec_stmt(store_stmt(s, ST_ROLLBACK));
}

int store_begin(struct store *s, struct tv_error *err, const char *what)
{
    int rc = store_exec_stmt(store_stmt(s, ST_BEGIN));
    if (rc != SQLITE_OK)
        return store_db_error(s, rc, err, "%s: begin", what);
    return 0;
}

int store_commit(struct store *s, struct tv_error *err, const char *what)
{
    int rc = store_exec_stmt(store_stmt(s, ST_COMMIT));
    if (rc != SQLITE_OK) {
        int code = store_db_error(s, rc, err, "%s: commit", what);
        store_rollback(s);
        return code;
    }
    return 0;
}

struct held_run *store_held_run(struct store *s, int64_t run)
{
    for (size_t i = 0; i < s->n_held; i++)
        if (s->held[i].run == run)
            return &s->held[i];
    return NULL;
}

/* "run 'xor'" (or "run 7" if it has no name we can read) into buf. */
const char *store_run_label(struct store *s, int64_t run, char *buf, size_t cap)
{
    struct held_run *h = store_held_run(s, run);
    if (h) {
        snprintf(buf, cap, "run '%s'", h->name);
        return buf;
    }
    snprintf(buf, cap, "run %lld", (long long)run);
    if (!s->db)
        return buf;
    sqlite3_stmt *q = store_stmt(s, ST_RUN_NAME);
    sqlite3_bind_int64(q, 1, run);
    if (sqlite3_step(q) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(q, 0);
        snprintf(buf, cap, "run '%.80s'", t ? (const char *)t : "");
    }
    store_done(q);
    return buf;
}

/* The writer of `run` must be this connection. */
struct held_run *store_writer_of(struct store *s, int64_t run, struct tv_error *err,
                                 const char *what)
{
    struct held_run *h = store_held_run(s, run);
    if (!h) {
        char label[128];
        if (s->flags & STORE_READONLY)
            tv_error_set(err, TV_ESTATE, "%s: %s: the store was opened read-only", s->path, what);
        else
            tv_error_set(err, TV_ESTATE,
                         "%s: %s: %s is not open for writing on this connection"
                         " (store_run_create or store_run_resume first)",
                         s->path, what, store_run_label(s, run, label, sizeof label));
    }
    return h;
}
