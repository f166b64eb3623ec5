/* delay.c -- the synaptic delays of a genome's connections (genome.h): an
 * array beside the connections, NULL while every delay is 1. */
#include "delay.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

int genome_delays_fit(struct genome *g)
{
    if (!g->delays || g->cap_delays >= g->cap_conns)
        return 0;
    uint16_t *d = realloc(g->delays, g->cap_conns * sizeof *d);
    if (!d)
        return -1;
    g->delays = d;
    g->cap_delays = g->cap_conns;
    return 0;
}

void genome_delays_drop(struct genome *g)
{
    free(g->delays);
    g->delays = NULL;
    g->cap_delays = 0;
}

/* Makes the array (every delay 1) if g has none. */
int genome_delays_make(struct genome *g, struct tv_error *err)
{
    if (g->delays)
        return 0;
    size_t cap = g->cap_conns ? g->cap_conns : 1;
    g->delays = malloc(cap * sizeof *g->delays);
    if (!g->delays)
        return tv_error_set(err, TV_ENOMEM, "genome: out of memory for %zu delays", cap);
    g->cap_delays = cap;
    for (size_t i = 0; i < g->n_conns; i++)
        g->delays[i] = 1;
    return 0;
}

int genome_set_delay(struct genome *g, size_t i, unsigned delay, struct tv_error *err)
{
    if (!g->delays && delay == 1)
        return 0;
    int rc = genome_delays_make(g, err);
    if (!rc)
        g->delays[i] = (uint16_t)(delay > UINT16_MAX ? UINT16_MAX : delay);
    return rc;
}

int genome_has_delays(const struct genome *g)
{
    for (size_t i = 0; g->delays && i < g->n_conns; i++)
        if (g->delays[i] != 1)
            return 1;
    return 0;
}

void genome_delays_inserted(struct genome *g, size_t i)
{
    if (!g->delays)
        return;
    memmove(&g->delays[i + 1], &g->delays[i], (g->n_conns - 1 - i) * sizeof *g->delays);
    g->delays[i] = 1;
}

void genome_delays_removed(struct genome *g, size_t i)
{
    if (g->delays)
        memmove(&g->delays[i], &g->delays[i + 1], (g->n_conns - i) * sizeof *g->delays);
}

int genome_delays_copy(struct genome *dst, const struct genome *src, struct tv_error *err)
{
    if (!src->delays) {
        genome_delays_drop(dst);
        return 0;
    }
    int rc = genome_delays_make(dst, err);
    if (rc)
        return rc;
    if (genome_delays_fit(dst))
        return tv_error_set(err, TV_ENOMEM, "genome: out of memory for %zu delays", src->n_conns);
    if (src->n_conns)
        memcpy(dst->delays, src->delays, src->n_conns * sizeof *src->delays);
    return 0;
}

int genome_delays_equal(const struct genome *a, const struct genome *b)
{
    if (!a->delays && !b->delays)
        return 1;
    for (size_t i = 0; i < a->n_conns; i++)
        if (genome_conn_delay(a, i) != genome_conn_delay(b, i))
            return 0;
    return 1;
}

/* A connection with its delay, ordered by genome_conn_cmp. */
struct conn_delay {
    struct genome_conn c;
    uint16_t delay;
};

int genome_delays_sort(struct genome *g, struct tv_error *err)
{
    if (!g->delays) {
        qsort(g->conns, g->n_conns, sizeof *g->conns, genome_conn_cmp);
        return 0;
    }
    struct conn_delay *t = malloc((g->n_conns + 1) * sizeof *t);
    if (!t)
        return tv_error_set(err, TV_ENOMEM, "genome: out of memory sorting %zu connections",
                            g->n_conns);
    for (size_t i = 0; i < g->n_conns; i++)
        t[i] = (struct conn_delay){g->conns[i], g->delays[i]};
    qsort(t, g->n_conns, sizeof *t, genome_conn_cmp);
    for (size_t i = 0; i < g->n_conns; i++) {
        g->conns[i] = t[i].c;
        g->delays[i] = t[i].delay;
    }
    free(t);
    return 0;
}

int genome_delays_check(const struct genome *g, size_t i, int from_kind, int to_model,
                        struct tv_error *err)
{
    unsigned d = genome_conn_delay(g, i);
    const struct genome_conn *c = &g->conns[i];
    if (d < 1 || d > GENOME_MAX_DELAY)
        return tv_error_set(err, TV_EINVAL,
                            "connection %zu (%u -> %u): delay %u is outside [1, %d]", i, c->from,
                            c->to, d, GENOME_MAX_DELAY);
    if (d != 1 && (from_kind == GENOME_INPUT || to_model != GENOME_MODEL_CUBA))
        return tv_error_set(err, TV_EINVAL,
                            "connection %zu (%u -> %u): delay %u, but only a connection from a "
                            "non-input into a cuba neuron may have a delay other than 1",
                            i, c->from, c->to, d);
    return 0;
}

int genome_delays_mutate(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                         struct tv_error *err)
{
    if (cfg->delay_rate <= 0 || cfg->delay_max < 2)
        return 0;
    unsigned max = cfg->delay_max < GENOME_MAX_DELAY ? (unsigned)cfg->delay_max : GENOME_MAX_DELAY;
    for (size_t i = 0; i < g->n_conns; i++) {
        const struct genome_neuron *f = &g->neurons[genome_find_neuron(g, g->conns[i].from)];
        const struct genome_neuron *t = &g->neurons[genome_find_neuron(g, g->conns[i].to)];
        if (f->kind == GENOME_INPUT || t->model != GENOME_MODEL_CUBA ||
            !tv_rng_chance(rng, cfg->delay_rate))
            continue;
        unsigned d = genome_conn_delay(g, i);
        d = tv_rng_u64(rng) & 1 ? d + 1 : d - 1;
        d = d < 1 ? 1 : d > max ? max : d;
        int rc = genome_set_delay(g, i, d, err);
        if (rc)
            return rc;
    }
    return 0;
}

int genome_delays_encode(const struct genome *g, struct tv_buf *out)
{
    size_t len = g->n_conns * 2;
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, tv_buf_write);
    if (msgpack_pack_bin(&pk, len) || tv_buf_reserve(out, len))
        return -1;
    uint8_t *p = out->data + out->len;
    for (size_t i = 0; i < g->n_conns; i++) {
        unsigned d = genome_conn_delay(g, i);
        p[2 * i] = (uint8_t)d;
        p[2 * i + 1] = (uint8_t)(d >> 8);
    }
    out->len += len;
    return 0;
}

int genome_delays_decode(struct genome *g, const uint8_t *p, size_t bin_len)
{
    if (bin_len != g->n_conns * 2 || genome_delays_make(g, NULL))
        return -1;
    for (size_t i = 0; i < g->n_conns; i++)
        g->delays[i] = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
    return 0;
}
