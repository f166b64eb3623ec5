/* codec.c -- the msgpack form of a genome (format in genome.h).
 *
 * Connections travel as one `bin` of 12-byte little-endian records rather
 * than an array of triplets: decoding 100,000 triplets as msgpack arrays costs
 * 5-7.5 ms, as a bin 0.08 ms (docs/facts.md). Decoding first checks the framing
 * without allocating (tv_msgpack_check) and the sizes against the limits,
 * then reads through msgpack-c, then validates the genome. */
#include "genome.h"
#include "delay.h"
#include "scale.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "trevo-genome"
#define REC_BYTES 12
/* A neuron in its widest encoding: an array32 header, id, kind, act and
 * model as uint64, bias, depth and the parameters as float64. */
#define NEURON_MAX_BYTES (5 + 4 * 9 + (2 + GENOME_MAX_PARAMS) * 9)
/* Version 3: a channel, a filter's fields and bin header at their widest, a
 * coefficient record (ky u8, kx u8, w f32 little-endian). */
#define CHANNEL_MAX_BYTES (5 + 9 * 9)
#define FILTER_MAX_BYTES (5 + 6 * 9 + 5)
#define COEF_BYTES 6

static int encode_conv(const struct genome *g, msgpack_packer *pk);
static int decode_conv(struct genome *g, const msgpack_object *ch, const msgpack_object *fi,
                       const struct genome_limits *limits, struct tv_error *err);

_Static_assert(sizeof(struct genome_conn) == REC_BYTES, "connection records are 12 bytes");

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

/* Fills g->conns (reserved for n records) from n 12-byte little-endian
 * records. */
static void read_records(struct genome *g, const uint8_t *p, size_t n)
{
    if (host_is_little_endian()) {
        if (n)
            memcpy(g->conns, p, n * REC_BYTES);
    } else {
        for (size_t i = 0; i < n; i++, p += REC_BYTES) {
            uint32_t w = get_le32(p + 8);
            g->conns[i].from = get_le32(p);
            g->conns[i].to = get_le32(p + 4);
            memcpy(&g->conns[i].weight, &w, 4);
        }
    }
    g->n_conns = n;
}

/* Version 5's scaling: a bin of n_scale (shift, mul) little-endian f32
 * pairs. 0 or -1 (out of memory). */
static int encode_scale(const struct genome *g, msgpack_packer *pk, struct tv_buf *out)
{
    size_t n = g->n_scale;
    if (msgpack_pack_bin(pk, 8 * n) || tv_buf_reserve(out, 8 * n))
        return -1;
    uint8_t *p = out->data + out->len;
    for (size_t k = 0; k < n; k++, p += 8) {
        uint32_t a, b;
        memcpy(&a, &g->scale[k], 4);
        memcpy(&b, &g->scale[n + k], 4);
        put_le32(p, a);
        put_le32(p + 4, b);
    }
    out->len += 8 * n;
    return 0;
}

/* Reads version 5's scaling bin into g (its neurons decoded). */
static int decode_scale(struct genome *g, const msgpack_object *o, struct tv_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n_neurons; i++)
        n += g->neurons[i].kind == GENOME_INPUT;
    if (o->type != MSGPACK_OBJECT_BIN || o->via.bin.size != 8 * n)
        return tv_error_set(err, TV_EFORMAT,
                            "genome: the input scaling is not a bin of %zu bytes (%zu inputs)",
                            8 * n, n);
    float *v = malloc((2 * n + 1) * sizeof *v);
    if (!v)
        return tv_error_set(err, TV_ENOMEM, "genome: out of memory");
    const uint8_t *p = (const uint8_t *)o->via.bin.ptr;
    for (size_t k = 0; k < n; k++, p += 8) {
        uint32_t a = get_le32(p), b = get_le32(p + 4);
        memcpy(&v[k], &a, 4);
        memcpy(&v[n + k], &b, 4);
    }
    int rc = genome_set_scale(g, v, v + n, n, err);
    free(v);
    return rc;
}

/* Version 6's last element: [scaling bin or nil, [lr, steps, regrow]]. 0 or
 * -1 (out of memory). */
static int encode_hyper(const struct genome *g, msgpack_packer *pk, struct tv_buf *out)
{
    int bad = msgpack_pack_array(pk, 2);
    bad |= g->n_scale ? encode_scale(g, pk, out) : msgpack_pack_nil(pk);
    bad |= msgpack_pack_array(pk, GENOME_N_HYPER);
    for (size_t k = 0; k < GENOME_N_HYPER; k++)
        bad |= msgpack_pack_float(pk, g->hyper[k]);
    return bad ? -1 : 0;
}

static int get_float(const msgpack_object *o, float *out);

/* Reads version 6's last element into g (its neurons decoded). */
static int decode_hyper(struct genome *g, const msgpack_object *o, struct tv_error *err)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2)
        return tv_error_set(err, TV_EFORMAT,
                            "genome: version 6's last element is not [scaling, genes]");
    const msgpack_object *v = o->via.array.ptr;
    int rc = v[0].type == MSGPACK_OBJECT_NIL ? 0 : decode_scale(g, &v[0], err);
    if (rc)
        return rc;
    float h[GENOME_N_HYPER];
    if (v[1].type != MSGPACK_OBJECT_ARRAY || v[1].via.array.size != GENOME_N_HYPER)
        return tv_error_set(err, TV_EFORMAT,
                            "genome: the hyper-parameter genes are not an array of %d",
                            GENOME_N_HYPER);
    for (size_t k = 0; k < GENOME_N_HYPER; k++)
        if (get_float(&v[1].via.array.ptr[k], &h[k]))
            return tv_error_set(err, TV_EFORMAT, "genome: hyper-parameter gene %s is not a number",
                                genome_hyper_names[k]);
    genome_set_hyper(g, h);
    return 0;
}

int genome_encode(const struct genome *g, struct tv_buf *out, struct tv_error *err)
{
    if (g->n_conns > UINT32_MAX / REC_BYTES || g->n_neurons > UINT32_MAX)
        return tv_error_set(err, TV_ELIMIT, "encode: genome too large for one message");
    size_t start = out->len;
    size_t bin_len = g->n_conns * REC_BYTES;
    int version = genome_format_version(g);
    /* Headers + at most 24 bytes per neuron (v2: 48) + the records: one
     * allocation. */
    if (tv_buf_reserve(out, 64 + g->n_neurons * (version == 1 ? 24 : 48) + bin_len))
        return tv_error_set(err, TV_ENOMEM, "encode: out of memory");
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, tv_buf_write);
    /* version 3: 5 elements (delays); 4: 7 (delays or nil, channels, filters);
     * 5: 7 (delays or nil, [channels, filters] or nil, scaling); 6: 7 (as 5,
     * the last [scaling or nil, hyper-parameter genes]) */
    int bad = msgpack_pack_array(&pk, version >= 4 ? 7 : version == 3 ? 5 : 4);
    bad |= msgpack_pack_str_with_body(&pk, MAGIC, sizeof MAGIC - 1);
    bad |= msgpack_pack_uint32(&pk, (uint32_t)version);
    bad |= msgpack_pack_array(&pk, g->n_neurons);
    for (size_t i = 0; i < g->n_neurons && !bad; i++) {
        const struct genome_neuron *n = &g->neurons[i];
        size_t n_params = version == 1 ? 0 : genome_models[n->model].n_params;
        bad |= msgpack_pack_array(&pk, version == 1 ? 5 : 6 + n_params);
        bad |= msgpack_pack_uint32(&pk, n->id);
        bad |= msgpack_pack_uint8(&pk, n->kind);
        bad |= msgpack_pack_uint8(&pk, n->act);
        bad |= msgpack_pack_float(&pk, n->bias);
        bad |= msgpack_pack_float(&pk, n->depth);
        if (version > 1)
            bad |= msgpack_pack_uint8(&pk, n->model);
        for (size_t k = 0; k < n_params; k++)
            bad |= msgpack_pack_float(&pk, n->param[k]);
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
    if (version == 3 && genome_delays_encode(g, out)) {
        out->len = start;
        return tv_error_set(err, TV_ENOMEM, "encode: out of memory");
    }
    if (version >= 4 &&
        (genome_has_delays(g) ? genome_delays_encode(g, out) : msgpack_pack_nil(&pk)) != 0) {
        out->len = start;
        return tv_error_set(err, TV_ENOMEM, "encode: out of memory");
    }
    if (version >= 5 && (g->n_channels ? msgpack_pack_array(&pk, 2) || encode_conv(g, &pk)
                                       : msgpack_pack_nil(&pk))) {
        out->len = start;
        return tv_error_set(err, TV_ENOMEM, "encode: out of memory");
    }
    if ((version == 4 && encode_conv(g, &pk)) || (version == 5 && encode_scale(g, &pk, out)) ||
        (version == 6 && encode_hyper(g, &pk, out))) {
        out->len = start;
        return tv_error_set(err, TV_ENOMEM, "encode: out of memory");
    }
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

/* Neuron i of a message of the given format version (genome.h). */
static int decode_neuron(const msgpack_object *o, int version, size_t i, struct genome_neuron *n,
                         struct tv_error *err)
{
    size_t n_fields = version == 1 ? 5 : 6;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < n_fields ||
        (version == 1 && o->via.array.size != n_fields))
        return tv_error_set(err, TV_EFORMAT, "genome: neuron %zu is not an array of %s", i,
                            version == 1 ? "5" : "6 or more");
    const msgpack_object *v = o->via.array.ptr;
    uint64_t id, kind, act, model = GENOME_MODEL_RATE;
    genome_neuron_set_model(n, GENOME_MODEL_RATE);
    if (get_uint(&v[0], UINT32_MAX, &id) || get_uint(&v[1], 255, &kind) ||
        get_uint(&v[2], 255, &act) || get_float(&v[3], &n->bias) || get_float(&v[4], &n->depth) ||
        (version > 1 && get_uint(&v[5], 255, &model)))
        return tv_error_set(err, TV_EFORMAT, "genome: neuron %zu has a field of the wrong type", i);
    n->id = (uint32_t)id;
    n->kind = (uint8_t)kind;
    n->act = (uint8_t)act;
    if (version == 1)
        return 0;
    if (model >= GENOME_MODEL_COUNT)
        return tv_error_set(err, TV_EFORMAT, "genome: neuron %zu has unknown model %llu", i,
                            (unsigned long long)model);
    const struct genome_model_info *m = &genome_models[model];
    genome_neuron_set_model(n, (int)model);
    if (o->via.array.size != 6 + m->n_params)
        return tv_error_set(err, TV_EFORMAT,
                            "genome: neuron %zu (model %s) has %u fields, expected %zu", i, m->name,
                            (unsigned)o->via.array.size, 6 + m->n_params);
    for (size_t k = 0; k < m->n_params; k++)
        if (get_float(&v[6 + k], &n->param[k]))
            return tv_error_set(err, TV_EFORMAT, "genome: neuron %zu has a field of the wrong type",
                                i);
    return 0;
}

static int decode_object(struct genome *g, const msgpack_object *root,
                         const struct genome_limits *limits, struct tv_error *err)
{
    if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < 4 ||
        root->via.array.size > 7 || root->via.array.size == 6)
        return tv_error_set(err, TV_EFORMAT, "not a trevo genome (expected an array of 4 or 5)");
    const msgpack_object *f = root->via.array.ptr;
    if (f[0].type != MSGPACK_OBJECT_STR || f[0].via.str.size != sizeof MAGIC - 1 ||
        memcmp(f[0].via.str.ptr, MAGIC, sizeof MAGIC - 1))
        return tv_error_set(err, TV_EFORMAT, "not a trevo genome (no \"" MAGIC "\" tag)");
    uint64_t version;
    if (get_uint(&f[1], UINT32_MAX, &version))
        return tv_error_set(err, TV_EFORMAT, "genome: format version is not an integer");
    if (version < 1 || version > GENOME_FORMAT_VERSION)
        return tv_error_set(err, TV_EFORMAT,
                            "genome: format version %llu, this program reads versions 1 to %d",
                            (unsigned long long)version, GENOME_FORMAT_VERSION);
    unsigned n_top = version >= 4 ? 7u : version == 3 ? 5u : 4u;
    if (root->via.array.size != n_top)
        return tv_error_set(err, TV_EFORMAT, "genome: format version %d is an array of %u",
                            (int)version, n_top);
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
    for (size_t i = 0; i < n_neurons && !rc; i++)
        rc = decode_neuron(&f[2].via.array.ptr[i], (int)version, i, &g->neurons[g->n_neurons++],
                           err);
    if (rc)
        return rc;
    read_records(g, (const uint8_t *)f[3].via.bin.ptr, n_conns);
    if (version >= 3 && !(version >= 4 && f[4].type == MSGPACK_OBJECT_NIL)) {
        if (f[4].type != MSGPACK_OBJECT_BIN)
            return tv_error_set(err, TV_EFORMAT, "genome: delay list is not a bin");
        if (genome_delays_decode(g, (const uint8_t *)f[4].via.bin.ptr, f[4].via.bin.size))
            return tv_error_set(err, TV_EFORMAT,
                                "genome: delay bin of %u bytes for %zu connections (2 bytes each)",
                                (unsigned)f[4].via.bin.size, n_conns);
    }
    if (version == 4 && (rc = decode_conv(g, &f[5], &f[6], limits, err)))
        return rc;
    if (version >= 5 && f[5].type != MSGPACK_OBJECT_NIL &&
        (f[5].type != MSGPACK_OBJECT_ARRAY || f[5].via.array.size != 2))
        return tv_error_set(err, TV_EFORMAT,
                            "genome: the convolutional genes are not nil or an array of 2");
    if (version >= 5 && f[5].type != MSGPACK_OBJECT_NIL &&
        (rc = decode_conv(g, &f[5].via.array.ptr[0], &f[5].via.array.ptr[1], limits, err)))
        return rc;
    if (version == 5 && (rc = decode_scale(g, &f[6], err)))
        return rc;
    if (version == 6 && (rc = decode_hyper(g, &f[6], err)))
        return rc;
    return genome_validate(g, limits, err);
}

/* ---- the fast path ------------------------------------------------------
 * A direct reader for the encodings genome_encode() writes (fixstr tag,
 * fixint or uint version and ids, float32 or float64 floats, any array and
 * bin length form), bounds-checked at every byte. It fills g and returns 0,
 * or returns -1 on anything else, and then genome_decode() goes the general
 * way through msgpack-c, which accepts every other encoding of the same
 * values and names what is wrong. So the fast path changes speed, never what
 * is accepted or the genome that results (tests/fuzz/fuzz_genome_codec.c
 * compares the two). */

struct reader {
    const uint8_t *p, *end;
};

static uint64_t get_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* A length-prefixed form: fix (first byte in [fix_lo, fix_lo + fix_n)) or
 * the 8/16/32-bit forms at codes c8 (0 if none), c16, c32. */
static int rd_len(struct reader *r, uint8_t fix_lo, unsigned fix_n, uint8_t c8, uint8_t c16,
                  uint8_t c32, size_t *out)
{
    if (r->p >= r->end)
        return -1;
    uint8_t b = *r->p++;
    int n = 0;
    if (b >= fix_lo && b - fix_lo < (int)fix_n) {
        *out = (size_t)(b - fix_lo);
        return 0;
    }
    if (c8 && b == c8)
        n = 1;
    else if (b == c16)
        n = 2;
    else if (b == c32)
        n = 4;
    else
        return -1;
    if (r->end - r->p < n)
        return -1;
    *out = (size_t)get_be(r->p, n);
    r->p += n;
    return 0;
}

static int rd_uint(struct reader *r, uint64_t max, uint64_t *out)
{
    if (r->p >= r->end)
        return -1;
    uint8_t b = *r->p++;
    int n;
    if (b <= 0x7f) {
        *out = b;
        return *out <= max ? 0 : -1;
    }
    switch (b) {
    case 0xcc:
        n = 1;
        break;
    case 0xcd:
        n = 2;
        break;
    case 0xce:
        n = 4;
        break;
    case 0xcf:
        n = 8;
        break;
    default:
        return -1;
    }
    if (r->end - r->p < n)
        return -1;
    *out = get_be(r->p, n);
    r->p += n;
    return *out <= max ? 0 : -1;
}

static int rd_float(struct reader *r, float *out)
{
    if (r->end - r->p < 5)
        return -1;
    uint8_t b = *r->p;
    if (b == 0xca) {
        uint32_t u = (uint32_t)get_be(r->p + 1, 4);
        float f;
        memcpy(&f, &u, 4);
        *out = (float)(double)f;
        r->p += 5;
        return 0;
    }
    if (b == 0xcb && r->end - r->p >= 9) {
        uint64_t u = get_be(r->p + 1, 8);
        double d;
        memcpy(&d, &u, 8);
        *out = (float)d;
        r->p += 9;
        return 0;
    }
    return -1;
}

/* One neuron of the given format version, as genome_encode() writes it. */
static int rd_neuron(struct reader *r, int version, struct genome_neuron *nr)
{
    size_t n;
    uint64_t id, kind, act, model = GENOME_MODEL_RATE;
    if (rd_len(r, 0x90, 16, 0, 0xdc, 0xdd, &n) || (version == 1 ? n != 5 : n < 6) ||
        rd_uint(r, UINT32_MAX, &id) || rd_uint(r, 255, &kind) || rd_uint(r, 255, &act) ||
        rd_float(r, &nr->bias) || rd_float(r, &nr->depth) ||
        (version > 1 && rd_uint(r, GENOME_MODEL_COUNT - 1, &model)))
        return -1;
    nr->id = (uint32_t)id;
    nr->kind = (uint8_t)kind;
    nr->act = (uint8_t)act;
    genome_neuron_set_model(nr, (int)model);
    size_t n_params = genome_models[model].n_params;
    if (version > 1 && n != 6 + n_params)
        return -1;
    for (size_t k = 0; k < n_params; k++)
        if (rd_float(r, &nr->param[k]))
            return -1;
    return 0;
}

static int decode_fast(struct genome *g, const uint8_t *data, size_t len,
                       const struct genome_limits *limits)
{
    struct reader r = {data, data + len};
    size_t n, n_neurons, bin_len;
    uint64_t version;
    if (rd_len(&r, 0x90, 16, 0, 0xdc, 0xdd, &n) || n < 4 || n > 5)
        return -1;
    size_t n_top = n;
    if (rd_len(&r, 0xa0, 32, 0xd9, 0xda, 0xdb, &n) || n != sizeof MAGIC - 1 ||
        (size_t)(r.end - r.p) < n || memcmp(r.p, MAGIC, n))
        return -1;
    r.p += n;
    if (rd_uint(&r, UINT32_MAX, &version) || version < 1 || version > GENOME_FORMAT_VERSION ||
        n_top != (version >= 3 ? 5 : 4))
        return -1;
    /* each neuron takes at least 14 bytes in the forms read here */
    if (rd_len(&r, 0x90, 16, 0, 0xdc, 0xdd, &n_neurons) || n_neurons > limits->max_neurons ||
        n_neurons > (size_t)(r.end - r.p) / 14)
        return -1;
    if (genome_reserve(g, n_neurons, 0, NULL))
        return -1;
    for (size_t i = 0; i < n_neurons; i++)
        if (rd_neuron(&r, (int)version, &g->neurons[g->n_neurons++]))
            return -1;
    if (rd_len(&r, 0, 0, 0xc4, 0xc5, 0xc6, &bin_len) || bin_len > (size_t)(r.end - r.p) ||
        (version < 3 && bin_len != (size_t)(r.end - r.p)) || bin_len % REC_BYTES ||
        bin_len / REC_BYTES > limits->max_conns)
        return -1;
    size_t n_conns = bin_len / REC_BYTES;
    if (genome_reserve(g, n_neurons, n_conns, NULL))
        return -1;
    read_records(g, r.p, n_conns);
    if (version < 3)
        return 0;
    r.p += bin_len;
    if (rd_len(&r, 0, 0, 0xc4, 0xc5, 0xc6, &bin_len) || bin_len != (size_t)(r.end - r.p))
        return -1;
    return genome_delays_decode(g, r.p, bin_len);
}

int genome_decode(struct genome *g, const void *data, size_t len,
                  const struct genome_limits *limits, struct tv_error *err)
{
    return genome_decode_general(g, data, len, limits, 0, err);
}

int genome_decode_general(struct genome *g, const void *data, size_t len,
                          const struct genome_limits *limits, int general_only,
                          struct tv_error *err)
{
    if (!limits)
        limits = &genome_default_limits;
    genome_reset(g);
    /* Cheap size bound before msgpack-c sees anything: a neuron takes at most
     * NEURON_MAX_BYTES, a connection 12. */
    size_t max_len = SIZE_MAX; /* saturating: limits may be as large as SIZE_MAX */
    if (limits->max_neurons < (SIZE_MAX - 64) / 256 && limits->max_conns < (SIZE_MAX - 64) / 256)
        max_len = 64 + limits->max_neurons * (NEURON_MAX_BYTES + CHANNEL_MAX_BYTES) +
                  limits->max_conns * (REC_BYTES + FILTER_MAX_BYTES + COEF_BYTES);
    if (len > max_len)
        return tv_error_set(err, TV_ELIMIT, "genome: %zu bytes is more than the limits allow", len);
    if (!general_only) {
        if (decode_fast(g, data, len, limits) == 0) {
            int rc = genome_validate(g, limits, err);
            if (rc)
                genome_reset(g);
            return rc;
        }
        genome_reset(g);
    }
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

/* ---- version 3: channels and filters ----------------------------------
 *   channels: [[id, kind, h, w, pool, act, bias, depth, first], ...]
 *   filters:  [[from, to, kh, kw, stride, pad, bin], ...]
 * where a filter's bin holds its coefficients, 6 bytes each: ky u8, kx u8,
 * w f32 little-endian, in (ky, kx) order. */

static int encode_conv(const struct genome *g, msgpack_packer *pk)
{
    int bad = msgpack_pack_array(pk, g->n_channels);
    for (size_t i = 0; i < g->n_channels && !bad; i++) {
        const struct genome_channel *c = &g->channels[i];
        bad |= msgpack_pack_array(pk, 9);
        bad |= msgpack_pack_uint32(pk, c->id);
        bad |= msgpack_pack_uint8(pk, c->kind);
        bad |= msgpack_pack_uint16(pk, c->h);
        bad |= msgpack_pack_uint16(pk, c->w);
        bad |= msgpack_pack_uint8(pk, c->pool);
        bad |= msgpack_pack_uint8(pk, c->act);
        bad |= msgpack_pack_float(pk, c->bias);
        bad |= msgpack_pack_float(pk, c->depth);
        bad |= msgpack_pack_uint32(pk, c->first);
    }
    bad |= msgpack_pack_array(pk, g->n_filters);
    for (size_t i = 0; i < g->n_filters && !bad; i++) {
        const struct genome_filter *f = &g->filters[i];
        bad |= msgpack_pack_array(pk, 7);
        bad |= msgpack_pack_uint32(pk, f->from);
        bad |= msgpack_pack_uint32(pk, f->to);
        bad |= msgpack_pack_uint8(pk, f->kh);
        bad |= msgpack_pack_uint8(pk, f->kw);
        bad |= msgpack_pack_uint8(pk, f->stride);
        bad |= msgpack_pack_uint8(pk, f->pad);
        bad |= msgpack_pack_bin(pk, (size_t)f->n_coefs * COEF_BYTES);
        for (size_t k = 0; k < f->n_coefs && !bad; k++) {
            const struct genome_coef *c = &g->coefs[f->coef0 + k];
            uint8_t rec[COEF_BYTES] = {c->ky, c->kx};
            uint32_t w;
            memcpy(&w, &c->w, 4);
            put_le32(rec + 2, w);
            bad |= msgpack_pack_bin_body(pk, rec, sizeof rec);
        }
    }
    return bad;
}

/* Every field of a decoded channel: the ranges the struct holds (validation
 * checks the rest). */
static int decode_channel(const msgpack_object *o, size_t i, struct genome_channel *c,
                          struct tv_error *err)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 9)
        return tv_error_set(err, TV_EFORMAT, "genome: channel %zu is not an array of 9", i);
    const msgpack_object *v = o->via.array.ptr;
    uint64_t x[6], first;
    if (get_uint(&v[0], UINT32_MAX, &x[0]) || get_uint(&v[1], 255, &x[1]) ||
        get_uint(&v[2], UINT16_MAX, &x[2]) || get_uint(&v[3], UINT16_MAX, &x[3]) ||
        get_uint(&v[4], 255, &x[4]) || get_uint(&v[5], 255, &x[5]) || get_float(&v[6], &c->bias) ||
        get_float(&v[7], &c->depth) || get_uint(&v[8], UINT32_MAX, &first))
        return tv_error_set(err, TV_EFORMAT, "genome: channel %zu has a field of the wrong type",
                            i);
    c->id = (uint32_t)x[0];
    c->kind = (uint8_t)x[1];
    c->h = (uint16_t)x[2];
    c->w = (uint16_t)x[3];
    c->pool = (uint8_t)x[4];
    c->act = (uint8_t)x[5];
    c->first = (uint32_t)first;
    return 0;
}

static int decode_filter(const msgpack_object *o, size_t i, struct genome *g, struct tv_error *err)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 7)
        return tv_error_set(err, TV_EFORMAT, "genome: filter %zu is not an array of 7", i);
    const msgpack_object *v = o->via.array.ptr;
    uint64_t x[6];
    for (int k = 0; k < 6; k++)
        if (get_uint(&v[k], k < 2 ? UINT32_MAX : 255, &x[k]))
            return tv_error_set(err, TV_EFORMAT, "genome: filter %zu has a field of the wrong type",
                                i);
    if (v[6].type != MSGPACK_OBJECT_BIN || v[6].via.bin.size % COEF_BYTES)
        return tv_error_set(err, TV_EFORMAT,
                            "genome: filter %zu: coefficients are not a bin of 6-byte records", i);
    struct genome_filter *f = &g->filters[g->n_filters++];
    *f = (struct genome_filter){(uint32_t)x[0],       (uint32_t)x[1],
                                (uint8_t)x[2],        (uint8_t)x[3],
                                (uint8_t)x[4],        (uint8_t)x[5],
                                (uint32_t)g->n_coefs, (uint32_t)(v[6].via.bin.size / COEF_BYTES)};
    const uint8_t *p = (const uint8_t *)v[6].via.bin.ptr;
    for (size_t k = 0; k < f->n_coefs; k++, p += COEF_BYTES) {
        struct genome_coef *c = &g->coefs[g->n_coefs++];
        uint32_t w = get_le32(p + 2);
        c->ky = p[0];
        c->kx = p[1];
        memcpy(&c->w, &w, 4);
    }
    return 0;
}

static int decode_conv(struct genome *g, const msgpack_object *ch, const msgpack_object *fi,
                       const struct genome_limits *limits, struct tv_error *err)
{
    if (ch->type != MSGPACK_OBJECT_ARRAY || fi->type != MSGPACK_OBJECT_ARRAY)
        return tv_error_set(err, TV_EFORMAT, "genome: channel or filter list is not an array");
    size_t n_ch = ch->via.array.size, n_fi = fi->via.array.size, n_coefs = 0;
    if (n_ch > GENOME_MAX_CHANNELS || n_fi > GENOME_MAX_FILTERS)
        return tv_error_set(err, TV_ELIMIT,
                            "genome: %zu channels and %zu filters, more than the limits of %d and "
                            "%zu",
                            n_ch, n_fi, GENOME_MAX_CHANNELS, GENOME_MAX_FILTERS);
    for (size_t i = 0; i < n_fi; i++) {
        const msgpack_object *o = &fi->via.array.ptr[i];
        if (o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 7 &&
            o->via.array.ptr[6].type == MSGPACK_OBJECT_BIN)
            n_coefs += o->via.array.ptr[6].via.bin.size / COEF_BYTES;
    }
    if (n_coefs > limits->max_conns)
        return tv_error_set(err, TV_ELIMIT,
                            "genome: %zu filter coefficients, more than the limit of %zu", n_coefs,
                            limits->max_conns);
    int rc = genome_reserve_conv(g, n_ch, n_fi, n_coefs, err);
    for (size_t i = 0; i < n_ch && !rc; i++)
        rc = decode_channel(&ch->via.array.ptr[i], i, &g->channels[g->n_channels++], err);
    for (size_t i = 0; i < n_fi && !rc; i++)
        rc = decode_filter(&fi->via.array.ptr[i], i, g, err);
    return rc;
}
