/*
 * tv.h -- tv/: trevo's base layer: the one error type every module shares,
 * the explicit counter-based random generator, array growth, a growable byte
 * buffer (with the write callback msgpack-c's packer takes), the clocks and
 * the msgpack framing check.
 *
 * This is the root of the dependency graph: it includes nothing of trevo and
 * nothing but the C library, and every other folder stands on it (data/
 * directly; the rest through genome/genome.h).
 *
 * Errors: library functions return 0 or a negative TV_E* code and, when given
 * a non-NULL `struct tv_error *`, leave beside the code a message that names
 * what failed and where ("xor.ini:12: pop_size: expected an integer").
 * Callers add context in front with tv_error_prefix().
 *
 * Randomness: there is no hidden random state anywhere in trevo. A
 * `struct tv_rng` is a key and a counter; the i-th draw is a hash of
 * (key, i), so a stream is fully determined by its seed words and is cheap to
 * derive per child from (run seed, generation, child index).
 */
#ifndef TREVO_TV_H
#define TREVO_TV_H

#include <stddef.h>
#include <stdint.h>

/* Result codes. Stored and sent values: explicit, only ever grow at the end. */
enum tv_code {
    TV_OK = 0,
    TV_ENOMEM = -1,     /* out of memory */
    TV_EINVAL = -2,     /* bad input: a value, an argument, a gene */
    TV_ELIMIT = -3,     /* a configured size limit would be exceeded */
    TV_EIO = -4,        /* reading or writing a file failed */
    TV_EFORMAT = -5,    /* not of the expected format, or of another version */
    TV_ECORRUPT = -6,   /* recognised, but damaged */
    TV_EDB = -7,        /* the database reported an error */
    TV_EMPI = -8,       /* MPI reported an error */
    TV_ESTATE = -9,     /* not possible in the current state (busy, locked, done) */
    TV_ESTOP = -10,     /* a stop was requested */
    TV_ENOSPACE = -11,  /* the disk is full */
    TV_ENOTFOUND = -12, /* the named thing does not exist */
    TV_EGENOME = -13    /* the evaluation does not take this genome (a search scores the
                           child failed and goes on; docs/searches.md) */
};

#define TV_ERROR_MSG_MAX 512

struct tv_error {
    int code;                   /* 0 or a TV_E* code */
    char msg[TV_ERROR_MSG_MAX]; /* what failed and where; "" when code is 0 */
};

/* Sets *err (if err is not NULL) to `code` and the formatted message.
 * Returns `code`, so that `return tv_error_set(err, TV_EINVAL, ...);` works. */
int tv_error_set(struct tv_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts the formatted text and ": " in front of err->msg (context such as a
 * file name). Returns err->code; a no-op when err is NULL. */
int tv_error_prefix(struct tv_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void tv_error_clear(struct tv_error *err);

/* A short name for a code ("invalid input", "out of memory", ...). */
const char *tv_code_name(int code);

/* ---- random numbers ---------------------------------------------------- */

struct tv_rng {
    uint64_t key; /* which stream */
    uint64_t ctr; /* how many draws were taken */
};

/* A stream determined by three words, e.g. (run seed, generation, child). */
void tv_rng_init(struct tv_rng *rng, uint64_t seed, uint64_t a, uint64_t b);
uint64_t tv_rng_u64(struct tv_rng *rng);
/* Uniform integer in [0, n); n must be > 0. Unbiased. */
uint32_t tv_rng_below(struct tv_rng *rng, uint32_t n);
/* Uniform double in [0, 1), 53 random bits. */
double tv_rng_uniform(struct tv_rng *rng);
/* 1 with probability p (p <= 0 never, p >= 1 always). */
int tv_rng_chance(struct tv_rng *rng, double p);
/* Standard normal deviate (Box-Muller, two uniform draws per call). */
double tv_rng_normal(struct tv_rng *rng);
/* The Fisher-Yates shuffle, trevo's one: a[0..n) into a uniformly random
 * order, i from n - 1 down to 1 swapping a[i] with a[tv_rng_below(i + 1)]
 * (n - 1 draws of tv_rng_below; none when n < 2). n <= 2^32. What the
 * classify split and the epoch order of tasks/fit.h draw. */
void tv_rng_shuffle_u32(struct tv_rng *rng, uint32_t *a, size_t n);
/* k of 0..n-1 without repeats into out[k] (k above n: n): positions 0..k-1
 * of that shuffle's counterpart drawn upwards, i from 0 swapping with
 * i + tv_rng_below(n - i) (k draws), over a virtual array, so that it costs
 * O(k) time and memory, not O(n). 0, or -1 when out of memory. */
int tv_rng_sample_u32(struct tv_rng *rng, uint32_t n, size_t k, uint32_t *out);
/* The 64-bit finaliser the generator is built on; also handy for hashing. */
uint64_t tv_mix64(uint64_t x);

/* ---- growing arrays ---------------------------------------------------- */

/* Makes the array *p (of *cap elements of elem bytes, NULL while empty) hold
 * at least `need` elements: its capacity doubles from 16 until it does, so n
 * appends cost O(n). 0, or TV_ENOMEM (also when the byte size would overflow)
 * with *p and *cap unchanged and a message in *err (may be NULL). */
int tv_grow(void **p, size_t *cap, size_t need, size_t elem, struct tv_error *err);

/* Frees p[0..n) (NULL entries are fine). Through TV_FREE_ALL(a, b, c): the
 * one line a release function needs for the arrays it owns. */
void tv_free_all(void *const *p, size_t n);
#define TV_FREE_ALL(...)                                                                           \
    tv_free_all((void *const[]){__VA_ARGS__}, sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* ---- sorted keys ------------------------------------------------------- */

/* The binary search over sorted ids: the first i in [lo, hi) whose key is >=
 * x, or hi if none. Key i is the uint32_t at byte `off` of element i of base,
 * an array of `size`-byte elements whose keys ascend over [lo, hi): a plain
 * uint32_t array a is (a, sizeof *a, 0); an array s of structs sorted by a
 * field id is (s, sizeof *s, offsetof(struct ..., id)). Inline: the callers'
 * constant size and offset make it the loop they would write by hand. */
static inline size_t tv_lower_u32(const void *base, size_t size, size_t off, size_t lo, size_t hi,
                                  uint32_t x)
{
    const unsigned char *b = base;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (*(const uint32_t *)(b + mid * size + off) < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* ---- a growable byte buffer -------------------------------------------- */

struct tv_buf {
    uint8_t *data; /* owned; NULL while empty */
    size_t len;
    size_t cap;
};

/* Makes room for `extra` more bytes. 0 or TV_ENOMEM (buffer unchanged). */
int tv_buf_reserve(struct tv_buf *b, size_t extra);
int tv_buf_append(struct tv_buf *b, const void *data, size_t n);
/* Frees the memory; the buffer is empty and reusable afterwards. */
void tv_buf_free(struct tv_buf *b);
/* The write callback of msgpack-c's packer, appending to the struct tv_buf
 * passed as data: msgpack_packer_init(&pk, &buf, tv_buf_write). 0, or -1
 * when out of memory (the packer's convention). */
int tv_buf_write(void *data, const char *bytes, size_t len);

/* ---- clocks ------------------------------------------------------------- */

/* Seconds of the monotonic clock (CLOCK_MONOTONIC): wall time between two
 * calls. The one clock of progress lines, evaluation times and benches. */
double tv_now(void);
/* Seconds of CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID). */
double tv_cpu_now(void);

/* ---- msgpack framing --------------------------------------------------- */

/* Checks, without allocating, that data[0..len) is exactly one well-formed
 * msgpack object: no truncation, no trailing bytes, nesting at most
 * max_depth (<= 64), every array or map announcing no more elements than
 * bytes remain. After it passes, msgpack-c's decoder allocates at most a
 * small multiple of len, so a hostile 5-byte header cannot ask for 48 GB
 * (docs/facts.md). TV_EFORMAT with the byte offset of the problem otherwise. */
int tv_msgpack_check(const void *data, size_t len, unsigned max_depth, struct tv_error *err);

#endif
