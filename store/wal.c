/*
 * wal.c -- the WAL: its copy into the database by a thread of the writer's,
 * and its truncation at a generation boundary. See store.h.
 */
#include "store_impl.h"

#include <signal.h>

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
int store_start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
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
        ck->passes++;
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
    if (store_start_thread(&ck->thread, checkpointer_main, ck) != 0) {
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

void store_checkpointer_stop(struct store *s)
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
int store_wal_hook(void *arg, sqlite3 *db, const char *name, int n_frames)
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
void store_wal_kick(struct store *s)
{
    if (s->flags & STORE_READONLY)
        return;
    if (s->wal_frames < s->next_kick - kick_frames(s))
        s->next_kick = 0; /* the WAL was restarted or truncated */
    if (s->wal_frames < s->next_kick)
        return;
    s->next_kick = s->wal_frames + kick_frames(s);
    s->counters.wal_copies_asked++;
    if (!s->ck.started && !checkpointer_start(s)) {
        sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        s->counters.wal_copies++;
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
void store_wal_truncate(struct store *s)
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

void store_counters_get(struct store *s, struct store_counters *out)
{
    *out = s->counters;
    struct checkpointer *ck = &s->ck;
    if (!ck->started)
        return;
    pthread_mutex_lock(&ck->mu);
    while (ck->requested || ck->running)
        pthread_cond_wait(&ck->cv, &ck->mu);
    out->wal_copies += ck->passes;
    pthread_mutex_unlock(&ck->mu);
}
