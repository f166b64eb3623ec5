/*
 * open.c -- opening, checking, creating and migrating the database, and
 * closing it. See store.h.
 */
#include "store_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "schema.h"

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
        return tv_error_set(err, errno == ENOMEM ? TV_ENOMEM : TV_EIO, "%s: cannot read: %s", path,
                            strerror(errno));
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
    int wal_frames = store_side_file_size(path, "-wal") > 0;
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
                        int64_t *version, int *n_checks, struct tv_error *err)
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
            (*n_checks)++;
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
        code = tv_error_set(err, store_code_of(db, rc), "%s: cannot open: %s", path,
                            db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
out:
    sqlite3_close(db);
    return code;
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
 * the check failed, it is repeated the ordinary way. *n_checks counts the
 * quick_check statements run. */
static int inspect(const char *path, off_t size, unsigned flags, int *empty, int64_t *version,
                   int *n_checks, struct tv_error *err)
{
    int whole = (flags & STORE_CHECK_FULL) || size <= STORE_FULL_CHECK_BYTES;
    if (store_side_file_size(path, "-wal") >= 0)
        return inspect_with(path, 0, whole, flags, empty, version, n_checks, err);
    int rc = inspect_with(path, 1, whole, flags, empty, version, n_checks, err);
    if (rc && store_side_file_size(path, "-wal") >= 0)
        rc = inspect_with(path, 0, whole, flags, empty, version, n_checks, err);
    return rc;
}

static int exec_sql(struct store *s, const char *sql, struct tv_error *err, const char *what)
{
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, &msg);
    sqlite3_free(msg);
    if (rc != SQLITE_OK)
        return store_db_error(s, rc, err, "%s", what);
    return 0;
}

/* Starts a schema change: BEGIN IMMEDIATE, then *out = the integer sql
 * answers (read inside the transaction). Rolls back on error. */
static int begin_with(struct store *s, const char *sql, int64_t *out, struct tv_error *err,
                      const char *what)
{
    int rc = exec_sql(s, "BEGIN IMMEDIATE", err, what);
    if (rc)
        return rc;
    int src = one_int(s->db, sql, out);
    if (src != SQLITE_OK) {
        rc = store_db_error(s, src, err, "%s", what);
        store_rollback(s);
    }
    return rc;
}

/* Ends a schema change: the statements of tail, then COMMIT. Rolls back on
 * error. */
static int commit_with(struct store *s, const char *tail, struct tv_error *err, const char *what)
{
    int rc;
    if ((rc = exec_sql(s, tail, err, what)) != 0 || (rc = exec_sql(s, "COMMIT", err, what)) != 0)
        store_rollback(s);
    return rc;
}

/* Creates schema version 1 in an empty database, in one transaction. If
 * another process created it meanwhile, does nothing. */
static int create_schema(struct store *s, struct tv_error *err)
{
    int64_t exists = 0;
    int rc = begin_with(s, "SELECT count(*) FROM sqlite_schema WHERE name = 'trevo_meta'", &exists,
                        err, "creating the schema");
    if (rc)
        return rc;
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
    return commit_with(s, tail, err, "creating the schema");
fail:
    store_rollback(s);
    return rc;
}

/* Brings a database of an older schema version to STORE_SCHEMA_VERSION, in
 * one transaction (another process may have done it meanwhile). A read-only
 * connection reads older versions as they are: every query of this file
 * works on each of them. */
static int migrate(struct store *s, struct tv_error *err)
{
    int64_t version = 0;
    int rc = begin_with(s, "PRAGMA user_version", &version, err, "migrating the schema");
    if (rc)
        return rc;
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
    return commit_with(s, tail, err, "migrating the schema");
fail:
    store_rollback(s);
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

/* version: the file's schema version (a read-only connection reads an older
 * one as it is). */
static int prepare_all(struct store *s, int64_t version, struct tv_error *err)
{
    char many[INSERT_ROWS * 64 + 256];
    for (int i = 0; i < ST_COUNT; i++) {
        const char *sql = store_st_sql[i];
        if ((i == ST_GENERATION_INSERT || i == ST_IND_INSERT || i == ST_IND_INSERT_MANY) &&
            (s->flags & STORE_READONLY))
            continue; /* never run read-only; in older versions they name missing columns */
        if (i == ST_IND_INSERT_MANY) {
            many_sql(many, sizeof many, "INSERT OR ROLLBACK INTO individuals(" IND_INSERT_COLS ")",
                     IND_VALUES, INSERT_ROWS);
            sql = many;
        } else if (i == ST_GENOME_INSERT_MANY) {
            many_sql(many, sizeof many, "INSERT OR ROLLBACK INTO genomes(run_id, id, data)",
                     "(?, ?, ?)", INSERT_ROWS);
            sql = many;
        }
        char old[1024];
        const char *obj = version < 6 ? strstr(sql, IND_OBJ_COLS) : NULL;
        if (obj) { /* a file of version 5 or older, read as it is: no objectives */
            snprintf(old, sizeof old, "%.*s%s%s", (int)(obj - sql), sql, IND_OBJ_NULLS,
                     obj + strlen(IND_OBJ_COLS));
            sql = old;
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
            return store_db_error(s, rc, err, "preparing statement %d", i);
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

static void free_store(struct store *s)
{
    if (!s)
        return;
    store_checkpointer_stop(s);
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

    int creating = 0, n_checks = 0;
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
            int rc = inspect(path, sb.st_size, o.flags, &empty, &version, &n_checks, err);
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
    s->counters.quick_checks = (uint64_t)n_checks;
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
        code = tv_error_set(err, store_code_of(s->db, rc), "%s: cannot open: %s", path,
                            s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto fail;
    }
    if ((code = set_pragmas(s, err, creating)) != 0)
        goto fail;
    if (!(o.flags & STORE_READONLY))
        sqlite3_wal_hook(s->db, store_wal_hook, s);
    if (creating && (code = create_schema(s, err)) != 0)
        goto fail;
    if (!creating && version < STORE_SCHEMA_VERSION && !(o.flags & STORE_READONLY) &&
        (code = migrate(s, err)) != 0)
        goto fail;
    if ((code = set_quota(s, o.max_bytes, err)) != 0 ||
        (code = prepare_all(s, (o.flags & STORE_READONLY) ? version : STORE_SCHEMA_VERSION, err)) !=
            0)
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
    store_checkpointer_stop(s);
    store_wal_truncate(s);
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(s->st[i]);
        s->st[i] = NULL;
    }
    int rc = sqlite3_close(s->db);
    if (rc != SQLITE_OK)
        code = store_db_error(s, rc, err, "closing");
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
