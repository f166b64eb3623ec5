/* failalloc.c -- the wrappers behind failalloc.h. The live-block table is
 * an open-addressing hash set of pointers (linear probing, deletion by
 * backward shift) allocated with the real allocator, under one mutex: SQLite
 * allocates from its background thread too. A free of a pointer the table
 * does not hold (allocated while tracking was off, or inside a shared
 * library such as libc's open_memstream) is passed on unchanged. */
#include "failalloc.h"

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
void *__wrap_aligned_alloc(size_t align, size_t n);
FILE *__real_open_memstream(char **buf, size_t *len);
FILE *__wrap_open_memstream(char **buf, size_t *len);

/* ---- the table of live blocks ------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void **slots;       /* [cap], NULL: empty */
static size_t cap, n_live; /* n_live and tracking: changed under the lock, read anywhere */
static int tracking;

static size_t slot_of(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 20) & (cap - 1);
}

/* Grows the table to twice its size; 0, or -1 when out of memory (the block
 * is then simply not tracked). */
static int grow(void)
{
    size_t old_cap = cap, new_cap = cap ? cap * 2 : 4096;
    void **old = slots, **fresh = __real_calloc(new_cap, sizeof *fresh);
    if (!fresh)
        return -1;
    slots = fresh;
    cap = new_cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i])
            continue;
        size_t j = slot_of(old[i]);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = old[i];
    }
    __real_free(old);
    return 0;
}

/* Adds p (not NULL). Called with the lock held. */
static void add_locked(void *p)
{
    if ((n_live + 1) * 2 > cap && grow() != 0)
        return; /* the table is out of memory: p goes untracked */
    size_t j = slot_of(p);
    while (slots[j])
        j = (j + 1) & (cap - 1);
    slots[j] = p;
    __atomic_store_n(&n_live, n_live + 1, __ATOMIC_RELAXED);
}

/* Removes p; 1 if it was tracked. Called with the lock held. */
static int remove_locked(void *p)
{
    if (!p || !n_live)
        return 0;
    size_t j = slot_of(p);
    while (slots[j] && slots[j] != p)
        j = (j + 1) & (cap - 1);
    if (!slots[j])
        return 0;
    /* backward shift: move into the hole every later entry of the run that
     * would otherwise no longer be reachable from its home slot */
    size_t hole = j;
    slots[hole] = NULL;
    for (size_t k = (hole + 1) & (cap - 1); slots[k]; k = (k + 1) & (cap - 1)) {
        size_t home = slot_of(slots[k]);
        if (((k - home) & (cap - 1)) >= ((k - hole) & (cap - 1))) {
            slots[hole] = slots[k];
            slots[k] = NULL;
            hole = k;
        }
    }
    __atomic_store_n(&n_live, n_live - 1, __ATOMIC_RELAXED);
    return 1;
}

/* Unlocked first looks (of values only changed under the lock): an
 * untracking test binary never takes the lock, so that a fork() while
 * another thread allocates cannot leave the child a held mutex. */
static int tracking_now(void)
{
    return __atomic_load_n(&tracking, __ATOMIC_RELAXED);
}

static int any_live(void)
{
    return __atomic_load_n(&n_live, __ATOMIC_RELAXED) != 0;
}

static void track_add(void *p)
{
    if (!p || !tracking_now())
        return;
    pthread_mutex_lock(&lock);
    if (tracking)
        add_locked(p);
    pthread_mutex_unlock(&lock);
}

static void track_remove(void *p)
{
    if (!p || !any_live())
        return;
    pthread_mutex_lock(&lock);
    remove_locked(p);
    pthread_mutex_unlock(&lock);
}

/* After a realloc moved p to q: q is tracked if p was. */
static void track_move(void *p, void *q)
{
    if (!any_live())
        return;
    pthread_mutex_lock(&lock);
    if (remove_locked(p))
        add_locked(q);
    pthread_mutex_unlock(&lock);
}

void failalloc_track(int on)
{
    pthread_mutex_lock(&lock);
    __atomic_store_n(&tracking, on, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock);
}

size_t failalloc_live(void)
{
    pthread_mutex_lock(&lock);
    size_t n = n_live;
    pthread_mutex_unlock(&lock);
    return n;
}

/* ---- counting and failing (per thread) ---------------------------------- */

static _Thread_local int armed;
static _Thread_local unsigned long counted, fail_at;
static _Thread_local int fired;

void failalloc_arm(unsigned long k)
{
    counted = 0;
    fail_at = k;
    fired = 0;
    armed = 1;
}

unsigned long failalloc_disarm(void)
{
    armed = 0;
    return counted;
}

int failalloc_fired(void)
{
    return fired;
}

/* Counts one allocation of this thread; 1 when it is the one to fail. */
static int should_fail(void)
{
    if (!armed)
        return 0;
    if (++counted == fail_at) {
        fired = 1;
        if (getenv("FAILALLOC_BACKTRACE")) { /* where the failure was injected */
            void *frames[32];
            armed = 0;
            backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
            armed = 1;
        }
        return 1;
    }
    return 0;
}

/* ---- the largest request ------------------------------------------------- */

static _Atomic size_t largest; /* bytes, since the last failalloc_largest(1) */

static void note_size(size_t n)
{
    size_t seen = atomic_load(&largest);
    while (n > seen && !atomic_compare_exchange_weak(&largest, &seen, n))
        ;
}

size_t failalloc_largest(int reset)
{
    return reset ? atomic_exchange(&largest, 0) : atomic_load(&largest);
}

/* ---- the wrappers -------------------------------------------------------- */

static void *tracked(void *p)
{
    track_add(p);
    return p;
}

void *__wrap_malloc(size_t n)
{
    note_size(n);
    return should_fail() ? NULL : tracked(__real_malloc(n));
}

void *__wrap_calloc(size_t n, size_t size)
{
    note_size(size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
    return should_fail() ? NULL : tracked(__real_calloc(n, size));
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
    note_size(n);
    return should_fail() ? NULL : tracked(__real_aligned_alloc(align, n));
}

void *__wrap_realloc(void *p, size_t n)
{
    if (n == 0 || !p)
        return n == 0 ? (track_remove(p), __real_realloc(p, n)) : __wrap_malloc(n);
    note_size(n);
    if (should_fail())
        return NULL; /* p stays valid, as after a real failure */
    void *q = __real_realloc(p, n);
    if (q)
        track_move(p, q);
    return q;
}

/* The stream's buffer is libc's own (not tracked); only its creation can be
 * failed here. */
FILE *__wrap_open_memstream(char **buf, size_t *len)
{
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    return __real_open_memstream(buf, len);
}

void __wrap_free(void *p)
{
    track_remove(p);
    __real_free(p);
}

/* ---- SQLite ------------------------------------------------------------- */

static sqlite3_mem_methods sqlite_own;
static int sqlite_counted = 1; /* failalloc_count_sqlite() */

void failalloc_count_sqlite(int on)
{
    sqlite_counted = on;
}

static void *sq_malloc(int n)
{
    return sqlite_counted && should_fail() ? NULL : tracked(sqlite_own.xMalloc(n));
}

static void sq_free(void *p)
{
    track_remove(p);
    sqlite_own.xFree(p);
}

static void *sq_realloc(void *p, int n)
{
    if (sqlite_counted && should_fail())
        return NULL;
    void *q = sqlite_own.xRealloc(p, n);
    if (q)
        track_move(p, q);
    return q;
}

int failalloc_hook_sqlite(void)
{
    int rc = sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sqlite_own);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_mem_methods m = sqlite_own;
    m.xMalloc = sq_malloc;
    m.xFree = sq_free;
    m.xRealloc = sq_realloc;
    return sqlite3_config(SQLITE_CONFIG_MALLOC, &m);
}
