/* sparsify_lock.c -- the lock set of lock:N (sparsify.h): (from, to) ->
 * the step it was removed at, an open-addressing hash table; with no
 * expiry, the plain set of existing connections that set and rigl use.
 * Apart from the sparsifier (sparsifier.c), its one user in the library.
 */
#include <stdlib.h>
#include <string.h>

#include "sparsify_impl.h"

static uint64_t lock_key(uint32_t from, uint32_t to)
{
    return ((uint64_t)from << 32 | to) + 1; /* ids are never GENOME_ID_NONE: no wrap */
}

/* The slot of key, or of the empty slot where it would go. cap > 0. */
static size_t lock_slot(const struct nn_sparsify_lock *l, uint64_t key)
{
    size_t mask = l->cap - 1, i = (size_t)tv_mix64(key) & mask;
    while (l->key[i] != 0 && l->key[i] != key)
        i = (i + 1) & mask;
    return i;
}

/* An entry recorded at step s still locks at `now` (always in a plain set). */
static int lock_live(const struct nn_sparsify_lock *l, uint64_t s, uint64_t now)
{
    return l->n_steps == 0 || now < s || now - s < l->n_steps;
}

void nn_sparsify_lock_init(struct nn_sparsify_lock *l, uint64_t n_steps)
{
    memset(l, 0, sizeof *l);
    l->n_steps = n_steps;
}

void nn_sparsify_lock_release(struct nn_sparsify_lock *l)
{
    free(l->key);
    free(l->step);
    nn_sparsify_lock_init(l, l->n_steps);
}

/* Rebuilds l with its live entries at `now` (none unless keep) and room for
 * `room` more at load <= 1/2. */
static int lock_rebuild(struct nn_sparsify_lock *l, uint64_t now, size_t room, int keep,
                        struct tv_error *err)
{
    size_t live = 0;
    for (size_t i = 0; keep && i < l->cap; i++)
        live += l->key[i] != 0 && lock_live(l, l->step[i], now);
    size_t cap = 16;
    while (cap < 2 * (live + room)) {
        if (cap > SIZE_MAX / 4 / sizeof(uint64_t))
            return tv_error_set(err, TV_ENOMEM, "lock set: out of memory for %zu entries", live);
        cap *= 2;
    }
    struct nn_sparsify_lock nl = {calloc(cap, sizeof(uint64_t)), malloc(cap * sizeof(uint64_t)), 0,
                                  cap, l->n_steps};
    if (!nl.key || !nl.step) {
        free(nl.key);
        free(nl.step);
        return tv_error_set(err, TV_ENOMEM, "lock set: out of memory for %zu entries", cap);
    }
    for (size_t i = 0; keep && i < l->cap; i++)
        if (l->key[i] != 0 && lock_live(l, l->step[i], now)) {
            size_t j = lock_slot(&nl, l->key[i]);
            nl.key[j] = l->key[i];
            nl.step[j] = l->step[i];
            nl.n++;
        }
    nn_sparsify_lock_release(l);
    *l = nl;
    return 0;
}

int nn_sparsify_lock_add(struct nn_sparsify_lock *l, uint32_t from, uint32_t to, uint64_t step,
                         struct tv_error *err)
{
    uint64_t key = lock_key(from, to);
    if (l->cap && l->key[lock_slot(l, key)] == key) {
        l->step[lock_slot(l, key)] = step;
        return 0;
    }
    if (2 * (l->n + 1) > l->cap) {
        int rc = lock_rebuild(l, step, 1, 1, err);
        if (rc)
            return rc;
    }
    size_t i = lock_slot(l, key);
    l->key[i] = key;
    l->step[i] = step;
    l->n++;
    return 0;
}

/* Empties l, keeping room for `need` entries (sparsify_impl.h). */
int nn_sparsify_lock_reset(struct nn_sparsify_lock *l, size_t need, struct tv_error *err)
{
    if (l->cap < 2 * (need + 1))
        return lock_rebuild(l, 0, need + 1, 0, err);
    memset(l->key, 0, l->cap * sizeof *l->key);
    l->n = 0;
    return 0;
}

int nn_sparsify_lock_allows(const struct nn_sparsify_lock *l, uint32_t from, uint32_t to,
                            uint64_t step)
{
    if (l->cap == 0)
        return 1;
    size_t i = lock_slot(l, lock_key(from, to));
    return l->key[i] == 0 || !lock_live(l, l->step[i], step);
}
