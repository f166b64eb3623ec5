/*
 * runs.c -- runs, and the writer lock of each. See store.h.
 */
#include "store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- runs ------------------------------------------------------------------- */

static const char *const status_names[] = {"running", "stopped", "done", "failed"};
#define N_STATUS (int)(sizeof status_names / sizeof status_names[0])

const char *store_status_name(int status)
{
    return status >= 0 && status < N_STATUS ? status_names[status] : "?";
}

static int status_parse(const char *t)
{
    for (int i = 0; i < N_STATUS; i++)
        if (strcmp(t, status_names[i]) == 0)
            return i;
    return -1;
}

void store_run_info_release(struct store_run_info *info)
{
    if (!info)
        return;
    TV_FREE_ALL(info->name, info->config, info->program_version);
    info->name = info->config = info->program_version = NULL;
}

/* Column i as text, "" for NULL; NULL if SQLite ran out of memory. */
static const char *column_text(sqlite3_stmt *q, int i)
{
    int null = sqlite3_column_type(q, i) == SQLITE_NULL; /* before any conversion */
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? (const char *)t : null ? "" : NULL;
}

/* Column i as a string of its own; NULL if out of memory. */
static char *dup_text(sqlite3_stmt *q, int i)
{
    const char *src = column_text(q, i);
    if (!src)
        return NULL;
    size_t n = strlen(src);
    char *p = malloc(n + 1);
    if (p)
        memcpy(p, src, n + 1);
    return p;
}

/* Column i into dst (cut to cap); 0, or -1 if out of memory. */
static int copy_text(char *dst, size_t cap, sqlite3_stmt *q, int i)
{
    const char *t = column_text(q, i);
    snprintf(dst, cap, "%s", t ? t : "");
    return t ? 0 : -1;
}

/* "-lock" beside the database, by its real path so that every name of the
 * same file finds the same lock. */
static int lock_path(const struct store *s, char **out, struct tv_error *err)
{
    char *real = realpath(s->path, NULL);
    if (!real && errno == ENOMEM) /* else: a name of its own, as good as any */
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", s->path);
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
 * (or no lock file), or TV_ENOMEM. Never creates the lock file. */
static int run_has_writer(struct store *s, int64_t run, struct tv_error *err)
{
    if (store_held_run(s, run))
        return 1;
    char *lp;
    int code = lock_path(s, &lp, err);
    if (code)
        return code;
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
    const char *status = column_text(q, 5);
    info->status = status ? status_parse(status) : -1;
    int lost = copy_text(info->created_at, sizeof info->created_at, q, 6) |
               copy_text(info->updated_at, sizeof info->updated_at, q, 7);
    info->last_generation = store_column_id(q, 8);
    if (!info->name || !info->config || !info->program_version || !status || lost) {
        store_run_info_release(info);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory reading a run", s->path);
    }
    info->has_writer = run_has_writer(s, info->run_id, err);
    if (info->has_writer < 0) {
        int code = info->has_writer;
        store_run_info_release(info);
        return code;
    }
    return 0;
}

int store_run_get(struct store *s, const char *name, struct store_run_info *info,
                  struct tv_error *err)
{
    memset(info, 0, sizeof *info);
    sqlite3_stmt *q = store_stmt(s, ST_RUN_BY_NAME);
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(q);
    int code;
    if (rc == SQLITE_ROW)
        code = read_run_row(s, q, info, err);
    else if (rc == SQLITE_DONE)
        code = tv_error_set(err, TV_ENOTFOUND, "%s: no run named '%s'", s->path, name);
    else
        code = store_db_error(s, rc, err, "reading run '%s'", name);
    store_done(q);
    return code;
}

int store_runs_list(struct store *s, struct store_run_info **out, size_t *n, struct tv_error *err)
{
    *out = NULL;
    *n = 0;
    struct store_run_info *runs = NULL;
    size_t count = 0, cap = 0;
    sqlite3_stmt *q = store_stmt(s, ST_RUN_LIST);
    int rc, code = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (tv_grow((void **)&runs, &cap, count + 1, sizeof *runs, NULL)) {
            code = tv_error_set(err, TV_ENOMEM, "%s: out of memory listing runs", s->path);
            break;
        }
        if ((code = read_run_row(s, q, &runs[count], err)) != 0)
            break;
        count++;
    }
    if (!code && rc != SQLITE_DONE)
        code = store_db_error(s, rc, err, "listing runs");
    store_done(q);
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

/* "'a', 'b', 'c'": the names of runs[0..n), cut short ("...") to fit cap. */
static void names_text(const struct store_run_info *runs, size_t n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(out + len, cap - len, "%s'%s'", i ? ", " : "", runs[i].name);
        if (k < 0 || (size_t)k >= cap - len) {
            snprintf(out + (cap > 4 ? cap - 4 : 0), cap > 4 ? 4 : cap, "...");
            return;
        }
        len += (size_t)k;
    }
}

int store_run_pick(struct store *s, const char *name, struct store_run_info *info,
                   struct tv_error *err)
{
    memset(info, 0, sizeof *info);
    if (name) {
        int code = store_run_get(s, name, info, err);
        if (code != TV_ENOTFOUND)
            return code;
    }
    struct store_run_info *runs;
    size_t n;
    int code = store_runs_list(s, &runs, &n, err);
    if (code)
        return code;
    char names[256];
    names_text(runs, n, names, sizeof names);
    if (name)
        code = tv_error_set(err, TV_ENOTFOUND, "%s: no run named '%s' (runs: %s)", s->path, name,
                            n ? names : "none");
    else if (n == 0)
        code = tv_error_set(err, TV_ENOTFOUND, "%s holds no runs", s->path);
    else if (n > 1)
        code = tv_error_set(err, TV_EINVAL, "%s holds %zu runs (%s): say which with --name",
                            s->path, n, names);
    else
        *info = runs[0]; /* taken over: runs[0] is not released below */
    store_runs_free(runs, code ? n : 0);
    return code;
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
    sqlite3_stmt *q = store_stmt(s, ST_RUN_WRITER);
    sqlite3_bind_int64(q, 1, run);
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
        const unsigned char *host = sqlite3_column_text(q, 1);
        const unsigned char *since = sqlite3_column_text(q, 2);
        snprintf(who, sizeof who, "pid %lld on host %.60s since %.32s",
                 (long long)sqlite3_column_int64(q, 0), host ? (const char *)host : "?",
                 since ? (const char *)since : "?");
    }
    store_done(q);
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
    sqlite3_stmt *q = store_stmt(s, ST_LAST_CLOSED);
    sqlite3_bind_int64(q, 1, run);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW)
        h->last_closed = store_column_id(q, 0);
    store_done(q);
    if (rc != SQLITE_ROW)
        return store_db_error(s, rc, err, "run '%s': reading its last generation", name);
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

/* Once the run's lock is taken: remembers the run as written here and
 * returns its id in *run_id (if not NULL), or drops the lock on error. */
static int hold_run(struct store *s, int64_t id, const char *name, int64_t *run_id,
                    struct tv_error *err)
{
    int code = add_held(s, id, name, err);
    if (code) {
        unlock_run(s, id);
        return code;
    }
    if (run_id)
        *run_id = id;
    return 0;
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
    int code = store_begin(s, err, what);
    if (code)
        return code;
    char host[64];
    host_name(host, sizeof host);
    sqlite3_stmt *q = store_stmt(s, ST_RUN_INSERT);
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, config, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, (int64_t)seed);
    sqlite3_bind_text(q, 4, program_version, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 5, (int64_t)getpid());
    sqlite3_bind_text(q, 6, host, -1, SQLITE_TRANSIENT);
    int rc = store_exec_stmt(q);
    if (rc != SQLITE_OK) {
        if (rc == SQLITE_CONSTRAINT_UNIQUE)
            code = tv_error_set(err, TV_ESTATE,
                                "%s: run '%s' exists already (resume it, or choose another name)",
                                s->path, name);
        else
            code = store_db_error(s, rc, err, "%s", what);
        store_rollback(s);
        return code;
    }
    int64_t id = sqlite3_last_insert_rowid(s->db);
    /* Lock before the commit makes the run visible, so no one else can
     * resume it in between. */
    if ((code = lock_run(s, id, name, err)) != 0) {
        store_rollback(s);
        return code;
    }
    if ((code = store_commit(s, err, what)) != 0) {
        unlock_run(s, id);
        return code;
    }
    return hold_run(s, id, name, run_id, err);
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
    if (store_held_run(s, id)) {
        if (run_id)
            *run_id = id;
        return 0;
    }
    if ((code = lock_run(s, id, name, err)) != 0)
        return code;
    char host[64];
    host_name(host, sizeof host);
    sqlite3_stmt *q = store_stmt(s, ST_RUN_SET_WRITER);
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, (int64_t)getpid());
    sqlite3_bind_text(q, 3, host, -1, SQLITE_TRANSIENT);
    int rc = store_exec_stmt(q);
    if (rc != SQLITE_OK) {
        code = store_db_error(s, rc, err, "resuming run '%s'", name);
        unlock_run(s, id);
        return code;
    }
    return hold_run(s, id, name, run_id, err);
}

int store_run_set_status(struct store *s, int64_t run, int status, struct tv_error *err)
{
    if (!store_writer_of(s, run, err, "setting the run status"))
        return err ? err->code : TV_ESTATE;
    if (status < 0 || status >= N_STATUS)
        return tv_error_set(err, TV_EINVAL, "%s: run '%s': unknown status %d", s->path,
                            store_held_run(s, run)->name, status);
    sqlite3_stmt *q = store_stmt(s, ST_RUN_SET_STATUS);
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_text(q, 2, status_names[status], -1, SQLITE_STATIC);
    int rc = store_exec_stmt(q);
    if (rc != SQLITE_OK)
        return store_db_error(s, rc, err, "run '%s': setting status %s",
                              store_held_run(s, run)->name, status_names[status]);
    return 0;
}

/* ---- notes ---------------------------------------------------------------- */

int store_run_note_set(struct store *s, int64_t run, const char *key, const char *value,
                       struct tv_error *err)
{
    struct held_run *h = store_writer_of(s, run, err, "setting a run note");
    if (!h)
        return err ? err->code : TV_ESTATE;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(
        s->db, "INSERT OR REPLACE INTO run_notes(run_id, key, value) VALUES (?1, ?2, ?3)", -1, &q,
        NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, run);
        sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, value, -1, SQLITE_STATIC);
        rc = store_exec_stmt(q);
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_OK)
        return store_db_error(s, rc, err, "run '%s': setting note %s", h->name, key);
    return 0;
}

int store_run_note_get(struct store *s, int64_t run, const char *key, char **value,
                       struct tv_error *err)
{
    *value = NULL;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT value FROM run_notes WHERE run_id = ?1 AND key = ?2",
                                -1, &q, NULL);
    if (rc != SQLITE_OK) {
        /* a version-2 database opened read-only: no notes table, no notes */
        int missing = strstr(sqlite3_errmsg(s->db), "no such table") != NULL;
        sqlite3_finalize(q);
        if (missing)
            return tv_error_set(err, TV_ENOTFOUND, "%s: run %lld has no note %s", s->path,
                                (long long)run, key);
        return store_db_error(s, rc, err, "reading note %s of run %lld", key, (long long)run);
    }
    sqlite3_bind_int64(q, 1, run);
    sqlite3_bind_text(q, 2, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(q);
    int code = 0;
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(q, 0);
        if (!(*value = strdup(t ? t : "")))
            code = tv_error_set(err, TV_ENOMEM, "%s: out of memory reading note %s", s->path, key);
    } else if (rc == SQLITE_DONE) {
        code = tv_error_set(err, TV_ENOTFOUND, "%s: run %lld has no note %s", s->path,
                            (long long)run, key);
    } else {
        code = store_db_error(s, rc, err, "reading note %s of run %lld", key, (long long)run);
    }
    sqlite3_finalize(q);
    return code;
}
