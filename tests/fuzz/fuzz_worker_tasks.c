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

static int same_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    return (a == NULL) == (b == NULL) && na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

/* One decoded task: valid fields, genomes only inside the message; the
 * parent genomes decode as the worker would decode them. */
static void check_task(const struct worker_task *a, const uint8_t *msg, size_t size)
{
    struct tv_error err = {0}; /* CHECK's message */
    CHECK(a->generation >= 0 && a->op >= WORKER_OP_INIT && a->op <= WORKER_OP_CROSSOVER_MUTATE);
    CHECK(fuzz_inside(a->genome1, a->genome1_len, msg, size));
    CHECK(fuzz_inside(a->genome2, a->genome2_len, msg, size));
    fuzz_decode_genome(a->genome1, a->genome1_len);
    fuzz_decode_genome(a->genome2, a->genome2_len);
}

/* A task and its re-encoded copy: the same. */
static void same_task(const struct worker_task *a, const struct worker_task *b)
{
    struct tv_error err = {0};
    CHECK(a->child_id == b->child_id && a->generation == b->generation &&
          a->child_index == b->child_index && a->op == b->op && a->seed == b->seed &&
          a->parent1 == b->parent1 && a->parent2 == b->parent2);
    CHECK(same_bytes(a->genome1, a->genome1_len, b->genome1, b->genome1_len));
    CHECK(same_bytes(a->genome2, a->genome2_len, b->genome2, b->genome2_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *msg = fuzz_copy(data, size);
    if (!msg)
        return 0;
    FUZZ_CHECK_BATCH(struct worker_tasks, worker_tasks_encode, worker_tasks_decode,
                     worker_tasks_release, msg, size, CAP, check_task, same_task);
    free(msg);
    return 0;
}
