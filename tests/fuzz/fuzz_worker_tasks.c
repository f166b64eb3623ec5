/* fuzz_worker_tasks.c -- libFuzzer target for worker_tasks_decode, the
 * decoder of the task batches a worker receives from the master. Any input
 * must give 0 or an error with a message, never a crash or an allocation
 * beyond what the size cap allows; a cap below the input's size must give
 * TV_ELIMIT. Whatever decodes must hold valid fields, point only into the
 * input, and re-encode and decode to the same batch. The parent genomes are
 * decoded too (with small limits), as the worker would.
 * Seeds: tests/fuzz/corpus/worker_tasks/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "worker.h"

/* The size cap of this fuzzer's messages: ASan's malloc limit is far above. */
#define CAP ((size_t)1 << 20)

static int inside(const uint8_t *p, size_t n, const uint8_t *data, size_t size)
{
    return !p || (p >= data && n <= size && p - data <= (ptrdiff_t)(size - n));
}

static int same_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    return (a == NULL) == (b == NULL) && na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

static void decode_parent(const uint8_t *p, size_t n)
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tv_error err = {0};
    struct worker_tasks t, u;
    /* An exact-size copy, so that ASan sees any read past the message. */
    uint8_t *msg = malloc(size ? size : 1);
    if (!msg)
        return 0;
    if (size)
        memcpy(msg, data, size);
    if (size > 0) {
        int rc = worker_tasks_decode(msg, size, size - 1, &t, &err);
        CHECK(rc == TV_ELIMIT && err.code == rc && t.n == 0 && !t.items && !t.holder);
    }
    int rc = worker_tasks_decode(msg, size, CAP, &t, &err);
    if (rc) {
        CHECK((rc == TV_EFORMAT || rc == TV_ENOMEM) && err.code == rc && err.msg[0]);
        CHECK(t.n == 0 && !t.items && !t.holder);
        free(msg);
        return 0;
    }
    for (size_t i = 0; i < t.n; i++) {
        const struct worker_task *a = &t.items[i];
        CHECK(a->generation >= 0 && a->op >= WORKER_OP_INIT && a->op <= WORKER_OP_CROSSOVER_MUTATE);
        CHECK(inside(a->genome1, a->genome1_len, msg, size));
        CHECK(inside(a->genome2, a->genome2_len, msg, size));
        decode_parent(a->genome1, a->genome1_len);
        decode_parent(a->genome2, a->genome2_len);
    }
    struct tv_buf buf = {0};
    CHECK(worker_tasks_encode(t.items, t.n, &buf, &err) == 0);
    CHECK(worker_tasks_decode(buf.data, buf.len, CAP, &u, &err) == 0);
    CHECK(u.n == t.n);
    for (size_t i = 0; i < t.n; i++) {
        const struct worker_task *a = &t.items[i], *b = &u.items[i];
        CHECK(a->child_id == b->child_id && a->generation == b->generation &&
              a->child_index == b->child_index && a->op == b->op && a->seed == b->seed &&
              a->parent1 == b->parent1 && a->parent2 == b->parent2);
        CHECK(same_bytes(a->genome1, a->genome1_len, b->genome1, b->genome1_len));
        CHECK(same_bytes(a->genome2, a->genome2_len, b->genome2, b->genome2_len));
    }
    worker_tasks_release(&u);
    worker_tasks_release(&t);
    tv_buf_free(&buf);
    free(msg);
    return 0;
}
