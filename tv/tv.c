/* tv.c -- errors, the counter-based generator, array growth, byte buffers.
 * See tv.h. */
#include "tv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int tv_error_set(struct tv_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int tv_error_prefix(struct tv_error *err, const char *fmt, ...)
{
    if (!err)
        return 0;
    char head[TV_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(head, sizeof head - 2, fmt, ap);
    va_end(ap);
    if (n < 0)
        return err->code;
    size_t h = strlen(head);
    memcpy(head + h, ": ", 3);
    h += 2;
    /* Shift the old message right by h bytes (truncating its end). */
    size_t old = strlen(err->msg);
    if (old > sizeof err->msg - 1 - h)
        old = sizeof err->msg - 1 - h;
    memmove(err->msg + h, err->msg, old);
    memcpy(err->msg, head, h);
    err->msg[h + old] = '\0';
    return err->code;
}

void tv_error_clear(struct tv_error *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

const char *tv_code_name(int code)
{
    switch (code) {
    case TV_OK:
        return "ok";
    case TV_ENOMEM:
        return "out of memory";
    case TV_EINVAL:
        return "invalid input";
    case TV_ELIMIT:
        return "limit exceeded";
    case TV_EIO:
        return "input/output error";
    case TV_EFORMAT:
        return "wrong format";
    case TV_ECORRUPT:
        return "corrupt";
    case TV_EDB:
        return "database error";
    case TV_EMPI:
        return "MPI error";
    case TV_ESTATE:
        return "wrong state";
    case TV_ESTOP:
        return "stop requested";
    case TV_ENOSPACE:
        return "disk full";
    case TV_ENOTFOUND:
        return "not found";
    case TV_EGENOME:
        return "genome not taken";
    }
    return "unknown error";
}

/* SplitMix64's finaliser (Stafford's variant 13): a bijection on 64 bits with
 * full avalanche. The generator is counter-based: draw i of a stream is
 * tv_mix64(key + (i + 1) * golden), so streams need no state but the key. */
#define TV_GOLDEN 0x9e3779b97f4a7c15ULL

uint64_t tv_mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void tv_rng_init(struct tv_rng *rng, uint64_t seed, uint64_t a, uint64_t b)
{
    /* Each word passes through the finaliser before the next is folded in,
     * so (s, a, b) and (s, b, a) give unrelated keys. */
    uint64_t k = tv_mix64(seed + TV_GOLDEN);
    k = tv_mix64(k ^ (a + 0x632be59bd9b4e019ULL));
    k = tv_mix64(k ^ (b + 0x8cb92ba72f3d8dd7ULL));
    rng->key = k;
    rng->ctr = 0;
}

uint64_t tv_rng_u64(struct tv_rng *rng)
{
    rng->ctr++;
    return tv_mix64(rng->key + rng->ctr * TV_GOLDEN);
}

uint32_t tv_rng_below(struct tv_rng *rng, uint32_t n)
{
    /* Lemire's multiply-and-reject: unbiased, rarely more than one draw. */
    uint64_t m = (uint64_t)(uint32_t)tv_rng_u64(rng) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t t = (uint32_t)(-n) % n;
        while (low < t) {
            m = (uint64_t)(uint32_t)tv_rng_u64(rng) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

double tv_rng_uniform(struct tv_rng *rng)
{
    return (double)(tv_rng_u64(rng) >> 11) * 0x1.0p-53;
}

int tv_rng_chance(struct tv_rng *rng, double p)
{
    if (p <= 0.0)
        return 0;
    if (p >= 1.0)
        return 1;
    return tv_rng_uniform(rng) < p;
}

double tv_rng_normal(struct tv_rng *rng)
{
    double u1 = 1.0 - tv_rng_uniform(rng); /* (0, 1]: log is finite */
    double u2 = tv_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tv_rng_shuffle_u32(struct tv_rng *rng, uint32_t *a, size_t n)
{
    for (size_t i = n < 2 ? 0 : n - 1; i > 0; i--) {
        size_t j = tv_rng_below(rng, (uint32_t)(i + 1));
        uint32_t tmp = a[i];
        a[i] = a[j];
        a[j] = tmp;
    }
}

/* The value at position i of the virtual array: i itself until a swap
 * stored another (keys SIZE_MAX: free slots). */
static size_t *sample_slot(size_t *key, size_t *val, size_t mask, size_t i)
{
    size_t h = (size_t)tv_mix64(i) & mask;
    while (key[h] != SIZE_MAX && key[h] != i)
        h = (h + 1) & mask;
    if (key[h] == SIZE_MAX) {
        key[h] = i;
        val[h] = i;
    }
    return &val[h];
}

int tv_rng_sample_u32(struct tv_rng *rng, uint32_t n, size_t k, uint32_t *out)
{
    if (k > n)
        k = n;
    size_t cap = 16;
    while (cap < 4 * k)
        cap *= 2;
    size_t *key = malloc(cap * sizeof *key), *val = malloc(cap * sizeof *val);
    if (!key || !val) {
        free(key);
        free(val);
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        key[i] = SIZE_MAX;
    for (size_t i = 0; i < k; i++) {
        size_t j = i + tv_rng_below(rng, (uint32_t)(n - i));
        size_t *pj = sample_slot(key, val, cap - 1, j), at = *pj;
        *pj = *sample_slot(key, val, cap - 1, i); /* position i's value goes to j */
        out[i] = (uint32_t)at;
    }
    free(key);
    free(val);
    return 0;
}

int tv_grow(void **p, size_t *cap, size_t need, size_t elem, struct tv_error *err)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem)
            return tv_error_set(err, TV_ENOMEM, "out of memory for %zu elements of %zu bytes", need,
                                elem);
        n *= 2;
    }
    void *q = realloc(*p, n * elem);
    if (!q)
        return tv_error_set(err, TV_ENOMEM, "out of memory for %zu elements of %zu bytes", need,
                            elem);
    *p = q;
    *cap = n;
    return 0;
}

int tv_buf_reserve(struct tv_buf *b, size_t extra)
{
    if (extra <= b->cap - b->len)
        return 0;
    if (extra > SIZE_MAX / 2 - b->len)
        return TV_ENOMEM;
    /* a buffer starts at 256 bytes: messages are rarely smaller */
    size_t need = b->len + extra < 256 ? 256 : b->len + extra;
    return tv_grow((void **)&b->data, &b->cap, need, 1, NULL);
}

int tv_buf_append(struct tv_buf *b, const void *data, size_t n)
{
    if (n == 0)
        return 0;
    int rc = tv_buf_reserve(b, n);
    if (rc)
        return rc;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return 0;
}

void tv_buf_free(struct tv_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int tv_buf_write(void *data, const char *bytes, size_t len)
{
    return tv_buf_append(data, bytes, len) ? -1 : 0;
}

/* Reads a big-endian unsigned of n bytes. */
static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The types 0xc0..0xdf (nil, bool, bin, ext, numbers, str, array16/32,
 * map16/32): the size of a length field after the type byte, the payload
 * bytes that are always there (ext's type byte, a number's bytes), and what
 * the length counts. 0xc0..0xc3 are whole in their type byte (0xc1, never
 * used, is refused before the table is read). */
enum { MP_BYTES = 0, MP_ARRAY = 1, MP_MAP = 2 };
struct mp_type {
    uint8_t len_bytes, body, counts;
};
static const struct mp_type mp_types[32] = {
    [0xc4 - 0xc0] = {1, 0, MP_BYTES},  [0xc5 - 0xc0] = {2, 0, MP_BYTES}, /* bin8, bin16 */
    [0xc6 - 0xc0] = {4, 0, MP_BYTES},                                    /* bin32 */
    [0xc7 - 0xc0] = {1, 1, MP_BYTES},  [0xc8 - 0xc0] = {2, 1, MP_BYTES}, /* ext8, ext16 */
    [0xc9 - 0xc0] = {4, 1, MP_BYTES},                                    /* ext32 */
    [0xca - 0xc0] = {0, 4, MP_BYTES},  [0xcb - 0xc0] = {0, 8, MP_BYTES}, /* float32, float64 */
    [0xcc - 0xc0] = {0, 1, MP_BYTES},  [0xcd - 0xc0] = {0, 2, MP_BYTES}, /* uint8..uint64 */
    [0xce - 0xc0] = {0, 4, MP_BYTES},  [0xcf - 0xc0] = {0, 8, MP_BYTES},
    [0xd0 - 0xc0] = {0, 1, MP_BYTES},  [0xd1 - 0xc0] = {0, 2, MP_BYTES}, /* int8..int64 */
    [0xd2 - 0xc0] = {0, 4, MP_BYTES},  [0xd3 - 0xc0] = {0, 8, MP_BYTES},
    [0xd4 - 0xc0] = {0, 2, MP_BYTES},  [0xd5 - 0xc0] = {0, 3, MP_BYTES}, /* fixext 1..16 */
    [0xd6 - 0xc0] = {0, 5, MP_BYTES},  [0xd7 - 0xc0] = {0, 9, MP_BYTES},
    [0xd8 - 0xc0] = {0, 17, MP_BYTES}, [0xd9 - 0xc0] = {1, 0, MP_BYTES},
    [0xda - 0xc0] = {2, 0, MP_BYTES}, /* str8..str32 */
    [0xdb - 0xc0] = {4, 0, MP_BYTES},  [0xdc - 0xc0] = {2, 0, MP_ARRAY},
    [0xdd - 0xc0] = {4, 0, MP_ARRAY},                                  /* array16, array32 */
    [0xde - 0xc0] = {2, 0, MP_MAP},    [0xdf - 0xc0] = {4, 0, MP_MAP}, /* map16, map32 */
};

int tv_msgpack_check(const void *data, size_t len, unsigned max_depth, struct tv_error *err)
{
    const uint8_t *p = data;
    uint64_t need[65]; /* elements still to read at each nesting level */
    if (max_depth > 64)
        max_depth = 64;
    int depth = 0;
    size_t pos = 0;
    need[0] = 1;
    while (depth >= 0) {
        if (need[depth] == 0) {
            depth--;
            continue;
        }
        if (pos >= len)
            return tv_error_set(err, TV_EFORMAT, "msgpack: truncated at byte %zu", pos);
        need[depth]--;
        uint8_t t = p[pos];
        size_t head = 1;   /* bytes of the type byte and its length field */
        uint64_t body = 0; /* bytes of payload after the header */
        uint64_t kids = 0; /* nested objects */
        if (t <= 0x7f || t >= 0xe0 || (t >= 0xc0 && t <= 0xc3)) {
            /* fixint, nil, bool */
            if (t == 0xc1)
                return tv_error_set(err, TV_EFORMAT, "msgpack: invalid byte 0xc1 at byte %zu", pos);
        } else if (t <= 0x8f) {
            kids = 2 * (uint64_t)(t & 0x0f);
        } else if (t <= 0x9f) {
            kids = t & 0x0f;
        } else if (t <= 0xbf) {
            body = t & 0x1f;
        } else {
            const struct mp_type *k = &mp_types[t - 0xc0];
            body = k->body;
            if (k->len_bytes) {
                if (len - pos - 1 < (size_t)k->len_bytes)
                    return tv_error_set(err, TV_EFORMAT, "msgpack: truncated at byte %zu", pos);
                uint64_t n = be(p + pos + 1, k->len_bytes);
                head += k->len_bytes;
                if (k->counts == MP_ARRAY)
                    kids = n;
                else if (k->counts == MP_MAP)
                    kids = 2 * n;
                else
                    body += n;
            }
        }
        if (head > len - pos || body > len - pos - head)
            return tv_error_set(err, TV_EFORMAT,
                                "msgpack: object at byte %zu runs past the end (%zu bytes)", pos,
                                len);
        pos += head + (size_t)body;
        if (kids > 0) {
            if (kids > len - pos)
                return tv_error_set(err, TV_EFORMAT,
                                    "msgpack: container at byte %zu announces %llu elements but "
                                    "only %zu bytes follow",
                                    pos - head, (unsigned long long)kids, len - pos);
            if ((unsigned)depth + 1 > max_depth)
                return tv_error_set(err, TV_EFORMAT,
                                    "msgpack: nesting deeper than %u levels at byte %zu", max_depth,
                                    pos - head);
            need[++depth] = kids;
        }
    }
    if (pos != len)
        return tv_error_set(err, TV_EFORMAT, "msgpack: %zu trailing bytes after the object",
                            len - pos);
    return 0;
}

void tv_free_all(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
}

/* ---- clocks ------------------------------------------------------------- */

static double clock_seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double tv_now(void)
{
    return clock_seconds(CLOCK_MONOTONIC);
}

double tv_cpu_now(void)
{
    return clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}
