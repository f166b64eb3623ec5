/* fuzz_worker_results.c -- libFuzzer target for worker_results_decode, the
 * decoder of the result batches the master receives from workers. Any input
 * must give 0 or an error with a message, never a crash; a cap below the
 * input's size must give TV_ELIMIT. Whatever decodes must hold valid fields
 * and a genome inside the input, and re-encode and decode to the same batch
 * (fitness and objectives bit for bit, NaN included). The child genomes are decoded too
 * (with small limits), as the master would. The same bytes are also decoded
 * as a worker's error message (worker_error_decode): a code and a text, or
 * TV_EFORMAT.
 * Seeds: tests/fuzz/corpus/worker_results/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "worker.h"

#define CAP ((size_t)1 << 20)

/* One decoded result: a genome inside the message, valid fields; the child
 * genome decodes as the master would decode it. */
static void check_result(const struct worker_result *a, const uint8_t *msg, size_t size)
{
    struct tv_error err = {0}; /* CHECK's message */
    CHECK(a->genome && fuzz_inside(a->genome, a->genome_len, msg, size));
    CHECK(a->rank >= 0 && (a->solved == 0 || a->solved == 1));
    fuzz_decode_genome(a->genome, a->genome_len);
}

/* A result and its re-encoded copy: the same, fitness and objectives bit for bit. */
static void same_result(const struct worker_result *a, const struct worker_result *b)
{
    struct tv_error err = {0};
    CHECK(a->child_id == b->child_id && a->solved == b->solved && a->rank == b->rank);
    CHECK(!memcmp(&a->fitness, &b->fitness, sizeof a->fitness));
    CHECK(!memcmp(&a->eval_seconds, &b->eval_seconds, sizeof a->eval_seconds));
    CHECK(!memcmp(a->obj, b->obj, sizeof a->obj));
    CHECK(a->genome_len == b->genome_len &&
          (a->genome_len == 0 || !memcmp(a->genome, b->genome, a->genome_len)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tv_error err = {0};
    uint8_t *msg = fuzz_copy(data, size);
    if (!msg)
        return 0;
    /* the same bytes as a worker's error message: a code and a text, or refused */
    int code = 0;
    char text[32];
    int erc = worker_error_decode(msg, size, &code, text, sizeof text, &err);
    CHECK(erc == 0 ? code < 0 && strlen(text) < sizeof text : erc == TV_EFORMAT && err.msg[0]);
    FUZZ_CHECK_BATCH(struct worker_results, worker_results_encode, worker_results_decode,
                     worker_results_release, msg, size, CAP, check_result, same_result);
    free(msg);
    return 0;
}
