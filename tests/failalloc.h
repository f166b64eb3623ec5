/* failalloc.h -- allocation-failure injection for the test binaries.
 *
 * The Makefile links every tests/test_*.c with tests/failalloc.c and
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=aligned_alloc
 *   -Wl,--wrap=open_memstream
 * so that every call to those functions from an object file of the link
 * (our static libraries and the test itself) goes to failalloc.c, which
 * passes it on unchanged until a test asks for more. open_memstream can be
 * failed, but the buffer libc grows for it is not tracked. Calls made inside
 * shared libraries (msgpack-c's decoder zone, inih, libc's getline, MPI,
 * cmocka) are not seen; SQLite's are, once failalloc_hook_sqlite() has put
 * a counting allocator in front of its own (before SQLite is first used).
 *
 * Every request's size is also noted: failalloc_largest() is the largest
 * single one (what a parser allocated on a header's word, say).
 *
 * Two independent switches:
 *   - tracking: while on, every block allocated (by any thread) is recorded
 *     until it is freed, so failalloc_live() counts what was not freed;
 *   - arming: the calling thread's allocations are counted from
 *     failalloc_arm(k) on, and the k-th returns NULL (k = 0: none fails).
 *     Other threads (SQLite's background copy) are never failed, so the k-th
 *     allocation is the same one on every run.
 * The usual loop: for k = 1, 2, ... arm k, call the entry point, disarm;
 * stop at the first k that did not fire (the call made fewer than k
 * allocations and must have succeeded). */
#ifndef TREVO_FAILALLOC_H
#define TREVO_FAILALLOC_H

#include <stddef.h>

/* Turns tracking of live blocks on or off (blocks tracked stay tracked until
 * freed either way). */
void failalloc_track(int on);
/* Blocks allocated while tracking was on and not freed since. */
size_t failalloc_live(void);

/* The largest single request (malloc, calloc, realloc, aligned_alloc) in
 * bytes since the last reset, of any thread; reset: set it back to 0 after. */
size_t failalloc_largest(int reset);

/* This thread: count allocations from now on and fail the k-th (1-based; 0
 * fails none). */
void failalloc_arm(unsigned long k);
/* Stops counting and failing; returns how many allocations were counted. */
unsigned long failalloc_disarm(void);
/* 1 if the armed failure happened since the last failalloc_arm(). */
int failalloc_fired(void);

/* Routes SQLite's allocations through the same counter and tracking (its own
 * allocator underneath). Must run before SQLite is initialised; returns 0 or
 * SQLite's error code. */
int failalloc_hook_sqlite(void);
/* Whether SQLite's allocations are counted (and so can fail) when armed; on
 * by default. Off, they are only tracked: a sweep of a caller of the store
 * then covers the caller's own allocations in far fewer trials. */
void failalloc_count_sqlite(int on);

#endif
