/* fuzz.h -- what the libFuzzer targets share: the entry point's prototype
 * and CHECK, which aborts (a crash libFuzzer keeps) with the condition and
 * the message of the `err` in scope. */
#ifndef TREVO_FUZZ_H
#define TREVO_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genome.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #cond, err.msg); \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* An exact-size copy of data (NULL when out of memory), so that ASan sees
 * any read past the input. */
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t size)
{
    uint8_t *p = malloc(size ? size : 1);
    if (p && size)
        memcpy(p, data, size);
    return p;
}

/* data as a NUL-terminated string of its own (free() it), for the parsers of
 * one short text (an option's value); NULL past max bytes or out of memory. */
static inline char *fuzz_string(const uint8_t *data, size_t size, size_t max)
{
    char *s = size <= max ? malloc(size + 1) : NULL;
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}

/* 1 if p[0..n) is NULL or lies inside data[0..size). */
static inline int fuzz_inside(const uint8_t *p, size_t n, const uint8_t *data, size_t size)
{
    return !p || (p >= data && n <= size && p - data <= (ptrdiff_t)(size - n));
}

/* Decodes a genome carried in a message as its receiver would (small limits):
 * 0 or an error with a message. */
static inline void fuzz_decode_genome(const uint8_t *p, size_t n)
{
    static const struct genome_limits small = {64, 256};
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    if (p) {
        int rc = genome_decode(&g, p, n, &small, &err);
        CHECK(rc == 0 || (err.code == rc && err.msg[0]));
    }
    genome_release(&g);
}

/* The contract of a batch decoder (worker_tasks_decode, worker_results_decode)
 * on msg[0..size): with a cap below the size, TV_ELIMIT; with `cap`, rc is 0,
 * TV_EFORMAT or TV_ENOMEM, a refusal says why in err and leaves the batch
 * empty. */
#define FUZZ_DECODE_BATCH(rc, decode, msg, size, cap, batch)                                       \
    do {                                                                                           \
        if ((size) > 0) {                                                                          \
            rc = decode(msg, size, (size)-1, &(batch), &err);                                      \
            CHECK(rc == TV_ELIMIT && err.code == rc && FUZZ_BATCH_EMPTY(batch));                   \
        }                                                                                          \
        rc = decode(msg, size, cap, &(batch), &err);                                               \
        if (rc) {                                                                                  \
            CHECK((rc == TV_EFORMAT || rc == TV_ENOMEM) && err.code == rc && err.msg[0]);          \
            CHECK(FUZZ_BATCH_EMPTY(batch));                                                        \
        }                                                                                          \
    } while (0)
#define FUZZ_BATCH_EMPTY(batch) ((batch).n == 0 && !(batch).items && !(batch).holder)

/* A decoded batch `in` encodes (into buf, empty at the start), and the bytes
 * decode (under `cap`) to `out`, a batch of the same length that points into
 * buf; the caller compares the items, then releases out and frees buf. */
#define FUZZ_REENCODE_BATCH(encode, decode, in, cap, buf, out)                                     \
    do {                                                                                           \
        CHECK(encode((in).items, (in).n, &(buf), &err) == 0);                                      \
        CHECK(decode((buf).data, (buf).len, cap, &(out), &err) == 0);                              \
        CHECK((out).n == (in).n);                                                                  \
    } while (0)

/* The whole check of a batch decoder on msg[0..size): FUZZ_DECODE_BATCH with
 * `cap`; whatever decodes passes check_item(item, msg, size) item by item,
 * re-encodes and decodes again (FUZZ_REENCODE_BATCH) to items that
 * same_item(a, b) finds equal; both batches are released. batch_type is the
 * batch's struct. */
#define FUZZ_CHECK_BATCH(batch_type, encode, decode, release, msg, size, cap, check_item,          \
                         same_item)                                                                \
    do {                                                                                           \
        struct tv_error err = {0};                                                                 \
        batch_type in_, out_;                                                                      \
        int rc_;                                                                                   \
        FUZZ_DECODE_BATCH(rc_, decode, msg, size, cap, in_);                                       \
        if (rc_ == 0) {                                                                            \
            for (size_t i_ = 0; i_ < in_.n; i_++)                                                  \
                check_item(&in_.items[i_], msg, size);                                             \
            struct tv_buf buf_ = {0};                                                              \
            FUZZ_REENCODE_BATCH(encode, decode, in_, cap, buf_, out_);                             \
            for (size_t i_ = 0; i_ < in_.n; i_++)                                                  \
                same_item(&in_.items[i_], &out_.items[i_]);                                        \
            release(&out_);                                                                        \
            release(&in_);                                                                         \
            tv_buf_free(&buf_);                                                                    \
        }                                                                                          \
    } while (0)

/* What a genome parser (genome_decode, genome_read_text) must leave, given
 * what it returned (rc) and said (err): refused, an empty genome and a
 * message that starts with `where` (and is not empty); accepted, a valid
 * genome that survives both of its forms, msgpack (encode, decode) and text
 * (write, read back), gene for gene. */
static inline void fuzz_check_parsed(int rc, const struct tv_error *perr, const char *where,
                                     const struct genome *g, const struct genome_limits *lim)
{
    struct tv_error err = *perr;
    if (rc) {
        CHECK(err.code == rc && err.msg[0] != '\0' && strncmp(err.msg, where, strlen(where)) == 0);
        CHECK(g->n_neurons == 0 && g->n_conns == 0);
        return;
    }
    CHECK(genome_validate(g, lim, &err) == 0);
    struct genome h;
    genome_init(&h);
    struct tv_buf buf = {0};
    CHECK(genome_encode(g, &buf, &err) == 0);
    CHECK(genome_decode(&h, buf.data, buf.len, lim, &err) == 0);
    CHECK(genome_equal(g, &h));
    tv_buf_free(&buf);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    CHECK(genome_write_text(g, f, &err) == 0);
    CHECK(fclose(f) == 0);
    CHECK(genome_read_text(&h, text, len, "fuzz", lim, &err) == 0);
    CHECK(genome_equal(g, &h));
    free(text);
    genome_release(&h);
}

#endif
