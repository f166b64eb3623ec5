/* codec.c -- the msgpack form of a genome (format in genome.h).
 *
 * Connections travel as one `bin` of 12-byte little-endian records rather
 * than an array of triplets: decoding 100,000 triplets as msgpack arrays costs
 * 5-7.5 ms, as a bin 0.08 ms (FACTS.md). Decoding first checks the framing
 * without allocating (tv_msgpack_check) and the sizes against the limits,
 * then reads through msgpack-c, then validates the genome. */
#include "genome.h"

#include <msgpack.h>
#include <string.h>

#define MAGIC "trevo-genome"
#define FORMAT_VERSION 1
#define REC_BYTES 12

_Static_assert(sizeof(struct genome_conn) == REC_BYTES, "connection records are 12 bytes");

static int buf_write(void *data, const char *bytes, size_t len)
{
    return tv_buf_append(data, bytes, len) ? -1 : 0;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int genome_encode(const struct genome *g, struct tv_buf *out, struct tv_error *err)
{
    if (g->n_conns > UINT32_MAX / REC_BYTES || g->n_neurons > UINT32_MAX)
        return tv_error_set(err, TV_ELIMIT, "encode: genome too large for one message");
    size_t start = out->len;
    size_t bin_len = g->n_conns * REC_BYTES;
    /* Headers + ~12 bytes per neuron + the records: one allocation. */
    if (tv_buf_reserve(out, 64 + g->n_neurons * 24 + bin_len))
        return tv_error_set(err, TV_ENOMEM, "encode: out of memory");
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, buf_write);
    int bad = msgpack_pack_array(&pk, 4);
    bad |= msgpack_pack_str_with_body(&pk, MAGIC, sizeof MAGIC - 1);
    bad |= msgpack_pack_uint32(&pk, FORMAT_VERSION);
    bad |= msgpack_pack_array(&pk, g->n_neurons);
    for (size_t i = 0; i < g->n_neurons && !bad; i++) {
        const struct genome_neuron *n = &g->neurons[i];
        bad |= msgpack_pack_array(&pk, 5);
        bad |= msgpack_pack_uint32(&pk, n->id);
        bad |= msgpack_pack_uint8(&pk, n->kind);
        bad |= msgpack_pack_uint8(&pk, n->act);
        bad |= msgpack_pack_float(&pk, n->bias);
        bad |= msgpack_pack_float(&pk, n->depth);
    }
    bad |= msgpack_pack_bin(&pk, bin_len);
    if (bad || tv_buf_reserve(out, bin_len)) {
        out->len = start;
        return tv_error_set(err, TV_ENOMEM, "encode: out of memory");
    }
    uint8_t *p = out->data + out->len;
    if (host_is_little_endian()) {
        if (bin_len)
            memcpy(p, g->conns, bin_len);
    } else {
        for (size_t i = 0; i < g->n_conns; i++, p += REC_BYTES) {
            uint32_t w;
            memcpy(&w, &g->conns[i].weight, 4);
            put_le32(p, g->conns[i].from);
            put_le32(p + 4, g->conns[i].to);
            put_le32(p + 8, w);
        }
    }
    out->len += bin_len;
    return 0;
}

/* An unsigned integer field that must fit in `max`. */
static int get_uint(const msgpack_object *o, uint64_t max, uint64_t *out)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > max)
        return -1;
    *out = o->via.u64;
    return 0;
}

/* A float field: float32 or float64 (rounded to float), or an integer of at
 * most 24 bits, which a float holds exactly. */
static int get_float(const msgpack_object *o, float *out)
{
    double d;
    if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
        d = o->via.f64;
    else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= (1u << 24))
        d = (double)o->via.u64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && o->via.i64 >= -(1 << 24))
        d = (double)o->via.i64;
    else
        return -1;
    *out = (float)d;
    return 0;
}

static int decode_object(struct genome *g, const msgpack_object *root,
                         const struct genome_limits *limits, struct tv_error *err)
{
    if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size != 4)
        return tv_error_set(err, TV_EFORMAT, "not a trevo genome (expected an array of 4)");
    const msgpack_object *f = root->via.array.ptr;
    if (f[0].type != MSGPACK_OBJECT_STR || f[0].via.str.size != sizeof MAGIC - 1 ||
        memcmp(f[0].via.str.ptr, MAGIC, sizeof MAGIC - 1))
        return tv_error_set(err, TV_EFORMAT, "not a trevo genome (no \"" MAGIC "\" tag)");
    uint64_t version;
    if (get_uint(&f[1], UINT32_MAX, &version))
        return tv_error_set(err, TV_EFORMAT, "genome: format version is not an integer");
    if (version != FORMAT_VERSION)
        return tv_error_set(err, TV_EFORMAT,
                            "genome: format version %llu, this program reads version %d",
                            (unsigned long long)version, FORMAT_VERSION);
    if (f[2].type != MSGPACK_OBJECT_ARRAY)
        return tv_error_set(err, TV_EFORMAT, "genome: neuron list is not an array");
    if (f[3].type != MSGPACK_OBJECT_BIN)
        return tv_error_set(err, TV_EFORMAT, "genome: connection list is not a bin");
    size_t n_neurons = f[2].via.array.size;
    size_t bin_len = f[3].via.bin.size;
    if (n_neurons > limits->max_neurons)
        return tv_error_set(err, TV_ELIMIT, "genome: %zu neurons, more than the limit of %zu",
                            n_neurons, limits->max_neurons);
    if (bin_len % REC_BYTES)
        return tv_error_set(err, TV_EFORMAT,
                            "genome: connection bin of %zu bytes is not a multiple of %d", bin_len,
                            REC_BYTES);
    size_t n_conns = bin_len / REC_BYTES;
    if (n_conns > limits->max_conns)
        return tv_error_set(err, TV_ELIMIT, "genome: %zu connections, more than the limit of %zu",
                            n_conns, limits->max_conns);
    int rc = genome_reserve(g, n_neurons, n_conns, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < n_neurons; i++) {
        const msgpack_object *o = &f[2].via.array.ptr[i];
        uint64_t id, kind, act;
        struct genome_neuron n;
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 5)
            return tv_error_set(err, TV_EFORMAT, "genome: neuron %zu is not an array of 5", i);
        const msgpack_object *v = o->via.array.ptr;
        if (get_uint(&v[0], UINT32_MAX, &id) || get_uint(&v[1], 255, &kind) ||
            get_uint(&v[2], 255, &act) || get_float(&v[3], &n.bias) || get_float(&v[4], &n.depth))
            return tv_error_set(err, TV_EFORMAT, "genome: neuron %zu has a field of the wrong type",
                                i);
        n.id = (uint32_t)id;
        n.kind = (uint8_t)kind;
        n.act = (uint8_t)act;
        g->neurons[g->n_neurons++] = n;
    }
    const uint8_t *p = (const uint8_t *)f[3].via.bin.ptr;
    if (host_is_little_endian()) {
        if (bin_len)
            memcpy(g->conns, p, bin_len);
    } else {
        for (size_t i = 0; i < n_conns; i++, p += REC_BYTES) {
            uint32_t w = get_le32(p + 8);
            g->conns[i].from = get_le32(p);
            g->conns[i].to = get_le32(p + 4);
            memcpy(&g->conns[i].weight, &w, 4);
        }
    }
    g->n_conns = n_conns;
    return genome_validate(g, limits, err);
}

int genome_decode(struct genome *g, const void *data, size_t len,
                  const struct genome_limits *limits, struct tv_error *err)
{
    if (!limits)
        limits = &genome_default_limits;
    genome_reset(g);
    /* Cheap size bound before msgpack-c sees anything: each neuron takes at
     * least 6 bytes, each connection 12. */
    size_t max_len = SIZE_MAX; /* saturating: limits may be as large as SIZE_MAX */
    if (limits->max_neurons < (SIZE_MAX - 64) / 64 && limits->max_conns < (SIZE_MAX - 64) / 64)
        max_len = 64 + limits->max_neurons * 32 + limits->max_conns * REC_BYTES;
    if (len > max_len)
        return tv_error_set(err, TV_ELIMIT, "genome: %zu bytes is more than the limits allow", len);
    int rc = tv_msgpack_check(data, len, 4, err);
    if (rc) {
        tv_error_prefix(err, "genome");
        return rc;
    }
    msgpack_unpacked res;
    msgpack_unpacked_init(&res);
    size_t off = 0;
    msgpack_unpack_return ur = msgpack_unpack_next(&res, data, len, &off);
    if (ur != MSGPACK_UNPACK_SUCCESS || off != len)
        rc = tv_error_set(err, ur == MSGPACK_UNPACK_NOMEM_ERROR ? TV_ENOMEM : TV_EFORMAT,
                          "genome: msgpack decoding failed (code %d)", (int)ur);
    else
        rc = decode_object(g, &res.data, limits, err);
    msgpack_unpacked_destroy(&res);
    if (rc)
        genome_reset(g);
    return rc;
}
