/* fuzz_genome_msgpack.c -- libFuzzer target for genome_decode (and the
 * framing check under it). Any input must give 0 or an error with a message,
 * never a crash; whatever decodes must be valid, re-encode and decode to the
 * same genome, and survive the text form too. Both the default limits and
 * small ones are tried, so the limit paths are reached with small inputs.
 * The fast path (direct reading of what genome_encode writes) must agree
 * with msgpack-c's general path on every input, format versions 1 and 2
 * (neuron models and their parameters) alike, and version 5 (the input
 * scaling, which only the general path reads).
 * Seeds: tests/fuzz/corpus/genome_msgpack/. */
#include <msgpack.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "genome.h"

/* tv_msgpack_check's promise: what it accepts, msgpack-c decodes whole. */
static void check_framing(const uint8_t *data, size_t size)
{
    struct tv_error err = {0};
    int rc = tv_msgpack_check(data, size, 64, &err);
    if (rc) {
        CHECK(rc == TV_EFORMAT && err.code == rc && err.msg[0]);
        return;
    }
    msgpack_unpacked res;
    msgpack_unpacked_init(&res);
    size_t off = 0;
    msgpack_unpack_return ur = msgpack_unpack_next(&res, (const char *)data, size, &off);
    /* msgpack-c itself refuses nesting beyond its own stack (32 levels). */
    CHECK(ur == MSGPACK_UNPACK_SUCCESS || ur == MSGPACK_UNPACK_NOMEM_ERROR);
    if (ur == MSGPACK_UNPACK_SUCCESS)
        CHECK(off == size);
    msgpack_unpacked_destroy(&res);
}

/* genome_decode's fast path and msgpack-c's general path agree: the same
 * verdict, the same message, the same genome bit for bit. */
static void fast_equals_general(const uint8_t *data, size_t size, const struct genome_limits *lim)
{
    struct tv_error err = {0}, err2 = {0};
    struct genome g, h;
    genome_init(&g);
    genome_init(&h);
    int rc = genome_decode(&g, data, size, lim, &err);
    int rc2 = genome_decode_general(&h, data, size, lim, 1, &err2);
    CHECK(rc == rc2);
    if (rc)
        CHECK(strcmp(err.msg, err2.msg) == 0);
    CHECK(g.n_neurons == h.n_neurons && g.n_conns == h.n_conns);
    for (size_t i = 0; i < g.n_neurons; i++) {
        const struct genome_neuron *a = &g.neurons[i], *b = &h.neurons[i];
        CHECK(a->id == b->id && a->kind == b->kind && a->act == b->act);
        CHECK(memcmp(&a->bias, &b->bias, sizeof a->bias) == 0);
        CHECK(memcmp(&a->depth, &b->depth, sizeof a->depth) == 0);
        CHECK(a->model == b->model && memcmp(a->param, b->param, sizeof a->param) == 0);
    }
    CHECK(g.n_conns == 0 || memcmp(g.conns, h.conns, g.n_conns * sizeof *g.conns) == 0);
    CHECK(g.n_scale == h.n_scale); /* the input scaling (version 5) */
    CHECK(g.n_scale == 0 || memcmp(g.scale, h.scale, 2 * g.n_scale * sizeof *g.scale) == 0);
    genome_release(&g);
    genome_release(&h);
}

static void round_trip(const uint8_t *data, size_t size, const struct genome_limits *lim)
{
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    int rc = genome_decode(&g, data, size, lim, &err);
    fuzz_check_parsed(rc, &err, "", &g, lim);
    genome_release(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct genome_limits small = {6, 10};
    check_framing(data, size);
    round_trip(data, size, NULL);
    round_trip(data, size, &small);
    fast_equals_general(data, size, NULL);
    fast_equals_general(data, size, &small);
    return 0;
}
