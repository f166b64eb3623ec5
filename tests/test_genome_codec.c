/* test_genome_codec.c -- genome/codec.c (genome_encode, genome_decode) and
 * the framing check tv_msgpack_check: round trips over random genomes, and
 * every way a message can be wrong. Messages are built with msgpack-c's
 * packer so that each test shows exactly which bytes it sends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <msgpack.h>

#include "genome.h"
#include "testutil.h"

#define MAGIC "trevo-genome"

/* ---- helpers ----------------------------------------------------------- */

static void encode(const struct genome *g, struct tv_buf *out)
{
    struct tv_error err = {0};
    out->len = 0;
    assert_ok(genome_encode(g, out, &err), &err);
}

/* Decodes data[0..len) from an exact-size heap copy, so that ASan sees any
 * read past the end. */
static int decode_exact(struct genome *g, const void *data, size_t len,
                        const struct genome_limits *lim, struct tv_error *err)
{
    void *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, data, len);
    int rc = genome_decode(g, copy, len, lim, err);
    free(copy);
    return rc;
}

static int check_exact(const void *data, size_t len, unsigned depth, struct tv_error *err)
{
    void *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len)
        memcpy(copy, data, len);
    int rc = tv_msgpack_check(copy, len, depth, err);
    free(copy);
    return rc;
}

/* The fields of a message; tests change one and pack. */
struct msg {
    const char *magic;
    int magic_as_bin;
    int64_t version;
    const struct genome *g;
    size_t bin_extra; /* extra bytes appended to the connection bin */
};

static void pack_neuron(msgpack_packer *pk, const struct genome_neuron *n)
{
    msgpack_pack_array(pk, 5);
    msgpack_pack_uint32(pk, n->id);
    msgpack_pack_uint8(pk, n->kind);
    msgpack_pack_uint8(pk, n->act);
    msgpack_pack_float(pk, n->bias);
    msgpack_pack_float(pk, n->depth);
}

static void pack_bin(msgpack_packer *pk, const struct genome *g, size_t extra)
{
    size_t n = g->n_conns * 12 + extra;
    msgpack_pack_bin(pk, n);
    uint8_t *rec = calloc(1, n + 1);
    assert_non_null(rec);
    for (size_t i = 0; i < g->n_conns; i++) {
        uint32_t w;
        memcpy(&w, &g->conns[i].weight, 4);
        uint32_t v[3] = {g->conns[i].from, g->conns[i].to, w};
        for (int k = 0; k < 3; k++)
            for (int b = 0; b < 4; b++)
                rec[i * 12 + k * 4 + b] = (uint8_t)(v[k] >> (8 * b));
    }
    msgpack_pack_bin_body(pk, rec, n);
    free(rec);
}

static void pack_msg(msgpack_sbuffer *sb, const struct msg *m)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4);
    size_t ml = strlen(m->magic);
    if (m->magic_as_bin) {
        msgpack_pack_bin(&pk, ml);
        msgpack_pack_bin_body(&pk, m->magic, ml);
    } else {
        msgpack_pack_str(&pk, ml);
        msgpack_pack_str_body(&pk, m->magic, ml);
    }
    msgpack_pack_int64(&pk, m->version);
    msgpack_pack_array(&pk, m->g->n_neurons);
    for (size_t i = 0; i < m->g->n_neurons; i++)
        pack_neuron(&pk, &m->g->neurons[i]);
    pack_bin(&pk, m->g, m->bin_extra);
}

/* Packs the small genome with one change to the message and decodes it. */
static int decode_msg(const struct msg *m, const struct genome_limits *lim, struct tv_error *err)
{
    msgpack_sbuffer sb;
    pack_msg(&sb, m);
    struct genome *g = genome_new();
    int rc = decode_exact(g, sb.data, sb.size, lim, err);
    if (rc)
        assert_true(g->n_neurons == 0 && g->n_conns == 0);
    genome_free(g);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* Starts a message in a new *sb: the root array of 4, the tag, version. */
static void pack_head(msgpack_sbuffer *sb, msgpack_packer *pk, uint8_t version)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
    msgpack_pack_array(pk, 4);
    msgpack_pack_str_with_body(pk, MAGIC, strlen(MAGIC));
    msgpack_pack_uint8(pk, version);
}

/* A message whose root is [MAGIC, 1, <neurons packed by fn>, bin of g]. */
typedef void (*pack_fn)(msgpack_packer *pk, const struct genome *g);

static int decode_custom(pack_fn fn, const struct genome *g, struct tv_error *err)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    pack_head(&sb, &pk, 1);
    fn(&pk, g);
    pack_bin(&pk, g, 0);
    struct genome *out = genome_new();
    int rc = decode_exact(out, sb.data, sb.size, NULL, err);
    if (rc == 0) {
        struct tv_error verr = {0};
        assert_ok(genome_validate(out, NULL, &verr), &verr);
    }
    genome_free(out);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* ---- encode / decode: round trips ---------------------------------------- */

/* The fixture of the tests on one message: the small genome (a), its
 * encoding (buf), and b, empty, to decode into. */
struct small {
    struct genome a, b;
    struct tv_buf buf;
};

static void small_release(struct small *f)
{
    genome_release(&f->a);
    genome_release(&f->b);
    tv_buf_free(&f->buf);
}

static int small_setup(void **state)
{
    struct small *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    *state = f;
    tu_small_genome(&f->a);
    encode(&f->a, &f->buf);
    return 0;
}

static int small_teardown(void **state)
{
    small_release(*state);
    free(*state);
    return 0;
}
#define SMALL_TEST(test) cmocka_unit_test_setup_teardown(test, small_setup, small_teardown)

static void test_genome_encode_decode_round_trip_small(void **state)
{
    struct small *f = *state;
    struct tv_error err = {0};
    /* ["trevo-genome", 1, ...]: fixarray 4, fixstr 12. */
    assert_int_equal(f->buf.data[0], 0x94);
    assert_int_equal(f->buf.data[1], 0xa0 | 12);
    assert_memory_equal(f->buf.data + 2, MAGIC, 12);
    assert_int_equal(f->buf.data[14], 1);
    /* The connections are the last 8 x 12 bytes, little-endian. */
    assert_true(f->buf.len > 96);
    const uint8_t *rec = f->buf.data + f->buf.len - 96;
    assert_int_equal(rec[0], 0); /* (0, 2) first */
    assert_int_equal(rec[4], 2);
    assert_ok(decode_exact(&f->b, f->buf.data, f->buf.len, NULL, &err), &err);
    assert_true(genome_equal(&f->a, &f->b));
    /* Decoding into a genome that already holds genes replaces them. */
    assert_ok(decode_exact(&f->b, f->buf.data, f->buf.len, NULL, &err), &err);
    assert_true(genome_equal(&f->a, &f->b));
}

static void test_genome_encode_appends_to_buffer(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    tu_small_genome(a);
    struct tv_buf buf = {0};
    assert_int_equal(tv_buf_append(&buf, "xyz", 3), 0);
    assert_ok(genome_encode(a, &buf, &err), &err);
    assert_memory_equal(buf.data, "xyz", 3);
    size_t one = buf.len - 3;
    assert_ok(genome_encode(a, &buf, &err), &err);
    assert_int_equal(buf.len, 3 + 2 * one);
    assert_memory_equal(buf.data + 3, buf.data + 3 + one, one);
    assert_ok(decode_exact(b, buf.data + 3, one, NULL, &err), &err);
    assert_true(genome_equal(a, b));
    tv_buf_free(&buf);
}

static void test_genome_decode_round_trip_random_genomes(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(101, 0, 0);
    struct tv_buf buf = {0}, buf2 = {0};
    for (int t = 0; t < 3000; t++) {
        tu_random_genome(a, &r, 25);
        if (t % 2)
            tu_spice_floats(a, &r);
        assert_ok(genome_validate(a, NULL, &err), &err);
        encode(a, &buf);
        /* About 12 bytes per connection plus at most 20 per neuron. */
        assert_true(buf.len <= 32 + 20 * a->n_neurons + 12 * a->n_conns);
        assert_ok(decode_exact(b, buf.data, buf.len, NULL, &err), &err);
        assert_true(genome_equal(a, b));
        /* Tight limits equal to the sizes still pass. */
        struct genome_limits exact = {a->n_neurons, a->n_conns};
        assert_ok(decode_exact(b, buf.data, buf.len, &exact, &err), &err);
        assert_true(genome_equal(a, b));
        /* The encoding is canonical: re-encoding gives the same bytes. */
        encode(b, &buf2);
        assert_int_equal(buf.len, buf2.len);
        assert_memory_equal(buf.data, buf2.data, buf.len);
    }
    tv_buf_free(&buf);
    tv_buf_free(&buf2);
}

/* The fast path (direct reading of what genome_encode writes) and the
 * general path through msgpack-c agree on encoded genomes and on every one
 * of their byte flips and truncations: same code, same message, same genome
 * to the bit. */
static void check_fast_equals_general(const uint8_t *data, size_t len)
{
    struct tv_error e1 = {0}, e2 = {0};
    struct genome a, b;
    genome_init(&a);
    genome_init(&b);
    static const struct genome_limits small = {6, 10};
    for (int l = 0; l < 2; l++) {
        const struct genome_limits *lim = l ? &small : NULL;
        int r1 = genome_decode(&a, data, len, lim, &e1);
        int r2 = genome_decode_general(&b, data, len, lim, 1, &e2);
        assert_int_equal(r1, r2);
        if (r1)
            assert_string_equal(e1.msg, e2.msg);
        assert_true(genome_equal(&a, &b));
        for (size_t i = 0; i < a.n_conns; i++)
            assert_memory_equal(&a.conns[i].weight, &b.conns[i].weight, sizeof(float));
        for (size_t i = 0; i < a.n_neurons; i++) {
            assert_memory_equal(&a.neurons[i].bias, &b.neurons[i].bias, sizeof(float));
            assert_memory_equal(&a.neurons[i].depth, &b.neurons[i].depth, sizeof(float));
        }
    }
    genome_release(&a);
    genome_release(&b);
}

static void test_genome_decode_fast_path_equals_general(void **state)
{
    struct genome *a = *state;
    struct tv_buf buf = {0};
    uint8_t *copy = NULL;
    struct tv_rng r = tu_rng(102, 0, 0);
    for (int t = 0; t < 60; t++) {
        tu_random_genome(a, &r, t % 3 ? 4 : 30); /* some over 16 neurons: array16 */
        if (t % 2)
            tu_spice_floats(a, &r);
        for (size_t i = 0; i < a->n_neurons && t % 4 == 3; i++) /* format version 2 */
            if (a->neurons[i].kind == GENOME_HIDDEN && tv_rng_chance(&r, 0.5)) {
                genome_neuron_set_model(&a->neurons[i], GENOME_MODEL_LIF);
                a->neurons[i].param[1] = (float)tv_rng_uniform(&r);
            }
        encode(a, &buf);
        check_fast_equals_general(buf.data, buf.len);
        copy = realloc(copy, buf.len);
        assert_non_null(copy);
        for (size_t i = 0; i < buf.len; i++) {
            memcpy(copy, buf.data, buf.len);
            copy[i] ^= (uint8_t)(1u << tv_rng_below(&r, 8));
            check_fast_equals_general(copy, buf.len);
            check_fast_equals_general(buf.data, i); /* truncated */
        }
    }
    free(copy);
    tv_buf_free(&buf);
}

/* ---- format version 2 ------------------------------------------------------ */

/* Packs g as format `version`: every neuron as 5 fields (version 1) or 6 plus
 * its model's parameters (version 2), except neuron index `odd`, packed with
 * n_fields fields (model `model` in field 5, then its parameters, 0 past the
 * fourth) and a string in field bad (-1: none). wide: every float as float64,
 * every integer in its widest form, the largest encoding of the values. */
struct v2msg {
    const struct genome *g;
    int version;
    size_t odd, n_fields;
    uint64_t model;
    int bad, wide;
};

static void pack_float_field(msgpack_packer *pk, float v, int wide)
{
    if (wide)
        msgpack_pack_double(pk, v);
    else
        msgpack_pack_float(pk, v);
}

static void pack_v2_neuron(msgpack_packer *pk, const struct v2msg *m, size_t i)
{
    const struct genome_neuron *n = &m->g->neurons[i];
    size_t n_params = m->version == 1 ? 0 : genome_models[n->model].n_params;
    size_t n_fields = i == m->odd ? m->n_fields : (m->version == 1 ? 5 : 6 + n_params);
    uint64_t model = i == m->odd ? m->model : n->model;
    msgpack_pack_array(pk, n_fields);
    for (size_t f = 0; f < n_fields; f++) {
        if (i == m->odd && (int)f == m->bad) {
            msgpack_pack_str_with_body(pk, "x", 1);
            continue;
        }
        uint64_t u = f == 0 ? n->id : f == 1 ? n->kind : f == 2 ? n->act : model;
        if (f == 3 || f == 4)
            pack_float_field(pk, f == 3 ? n->bias : n->depth, m->wide);
        else if (f >= 6)
            pack_float_field(pk, f - 6 < GENOME_MAX_PARAMS ? n->param[f - 6] : 0.0f, m->wide);
        else if (m->wide)
            msgpack_pack_fix_uint64(pk, u);
        else
            msgpack_pack_uint64(pk, u);
    }
}

/* Packs m, checks that the fast and the general path agree on it, decodes. */
static int decode_v2(const struct v2msg *m, const struct genome_limits *lim, struct genome *out,
                     struct tv_error *err)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    pack_head(&sb, &pk, (uint8_t)m->version);
    msgpack_pack_array(&pk, m->g->n_neurons);
    for (size_t i = 0; i < m->g->n_neurons; i++)
        pack_v2_neuron(&pk, m, i);
    pack_bin(&pk, m->g, 0);
    check_fast_equals_general((const uint8_t *)sb.data, sb.size);
    int rc = decode_exact(out, sb.data, sb.size, lim, err);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* m decodes (within lim) to the genome it packed, into t->b. */
static void assert_v2_decodes(const struct v2msg *m, const struct genome_limits *lim,
                              struct tu_pair *t)
{
    assert_ok(decode_v2(m, lim, &t->b, &t->err), &t->err);
    assert_true(genome_equal(m->g, &t->b));
}

static void test_genome_encode_lif_writes_version_2_and_round_trips(void **state)
{
    struct tu_pair *t = *state;
    tu_lif_genome(&t->a);
    struct tv_buf buf = {0};
    encode(&t->a, &buf);
    assert_int_equal(buf.data[14], 2); /* the version */
    /* neuron 10 is [id, kind, act, bias, depth, model, 4 parameters] */
    msgpack_unpacked res;
    msgpack_unpacked_init(&res);
    assert_int_equal(msgpack_unpack_next(&res, (const char *)buf.data, buf.len, NULL),
                     MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *nr = res.data.via.array.ptr[2].via.array.ptr;
    assert_int_equal(nr[0].via.array.size, 6); /* a rate neuron: no parameters */
    assert_int_equal(nr[3].via.array.size, 10);
    assert_int_equal(nr[3].via.array.ptr[5].via.u64, GENOME_MODEL_LIF);
    assert_true(nr[3].via.array.ptr[6].via.f64 == 0.5);
    msgpack_unpacked_destroy(&res);
    assert_ok(decode_exact(&t->b, buf.data, buf.len, NULL, &t->err), &t->err);
    assert_true(genome_equal(&t->a, &t->b));
    check_fast_equals_general(buf.data, buf.len);
    tv_buf_free(&buf);
}

static void test_genome_decode_version_2_of_rate_neurons_reencodes_as_version_1(void **state)
{
    struct tu_pair *t = *state;
    tu_small_genome(&t->a);
    struct tv_buf buf = {0}, want = {0};
    encode(&t->a, &want); /* version 1 */
    struct v2msg m = {&t->a, 2, 0, 6, GENOME_MODEL_RATE, -1, 0};
    assert_v2_decodes(&m, NULL, t);
    encode(&t->b, &buf);
    assert_int_equal(buf.data[14], 1);
    assert_int_equal(buf.len, want.len); /* the bytes of today's version 1 */
    assert_memory_equal(buf.data, want.data, buf.len);
    tv_buf_free(&buf);
    tv_buf_free(&want);
}

static void test_genome_decode_version_2_bad_neurons_fail(void **state)
{
    struct tu_pair *t = *state;
    tu_lif_genome(&t->a);
    struct v2msg m = {&t->a, 2, 3, 10, GENOME_MODEL_LIF, -1, 0};
    assert_v2_decodes(&m, NULL, t);
    m.n_fields = 9;
    assert_error(decode_v2(&m, NULL, &t->b, &t->err), &t->err, TV_EFORMAT,
                 "genome: neuron 3 (model lif) has 9 fields, expected 10");
    m.n_fields = 11;
    assert_error(decode_v2(&m, NULL, &t->b, &t->err), &t->err, TV_EFORMAT,
                 "has 11 fields, expected 10");
    m.n_fields = 5;
    assert_error(decode_v2(&m, NULL, &t->b, &t->err), &t->err, TV_EFORMAT,
                 "genome: neuron 3 is not an array of 6 or more");
    m.n_fields = 10;
    m.model = 7;
    assert_error(decode_v2(&m, NULL, &t->b, &t->err), &t->err, TV_EFORMAT,
                 "genome: neuron 3 has unknown model 7");
    m.model = GENOME_MODEL_LIF;
    for (int f = 5; f < 10; f++) {
        m.bad = f;
        assert_error(decode_v2(&m, NULL, &t->b, &t->err), &t->err, TV_EFORMAT,
                     "genome: neuron 3 has a field of the wrong type");
    }
    m.bad = -1;
    /* a version 1 message has no model field */
    m.version = 1;
    assert_error(decode_v2(&m, NULL, &t->b, &t->err), &t->err, TV_EFORMAT,
                 "genome: neuron 3 is not an array of 5");
    m.version = 2;
    /* decoded, then validated against the table */
    t->a.neurons[3].param[0] = 500.0f;
    assert_error(decode_v2(&m, NULL, &t->b, &t->err), &t->err, TV_EINVAL,
                 "neuron 10: lif threshold 500 is outside [0.01, 100]");
}

/* The byte bound checked before anything is parsed allows for the largest
 * version 2 neuron: a genome at its limits, every value in its widest form
 * (91 bytes a neuron, where the bound of version 1 allowed 32), still
 * decodes. */
static void test_genome_decode_version_2_widest_at_limits_accepted(void **state)
{
    struct tu_pair *t = *state;
    assert_ok(genome_build_minimal(&t->a, 1, 1, GENOME_ACT_TANH, 0.0, NULL, &t->err), &t->err);
    for (uint32_t i = 0; i < 40; i++) {
        assert_ok(genome_add_neuron(&t->a, 100 + i, GENOME_HIDDEN, 0, 0.25f, 0.5f, &t->err),
                  &t->err);
        genome_neuron_set_model(&t->a.neurons[t->a.n_neurons - 1], GENOME_MODEL_LIF);
    }
    struct genome_limits exact = {t->a.n_neurons, t->a.n_conns};
    struct v2msg m = {&t->a, 2, SIZE_MAX, 0, 0, -1, 1};
    assert_v2_decodes(&m, &exact, t);
}

static void test_genome_decode_accepts_float64_and_integer_fields(void **state)
{
    (void)state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_str_with_body(&pk, MAGIC, 12);
    msgpack_pack_uint64(&pk, 1);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_array(&pk, 5); /* input 0: ints everywhere */
    msgpack_pack_uint64(&pk, 0);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_int(&pk, 0);
    msgpack_pack_array(&pk, 5); /* output 7: float64 bias, integer depth 1, negative bias */
    msgpack_pack_uint32(&pk, 7);
    msgpack_pack_uint32(&pk, 1);
    msgpack_pack_uint32(&pk, GENOME_ACT_TANH);
    msgpack_pack_double(&pk, 0.1);
    msgpack_pack_int8(&pk, 1);
    msgpack_pack_bin(&pk, 12);
    const uint8_t rec[12] = {0, 0, 0, 0, 7, 0, 0, 0, 0x00, 0x00, 0x80, 0xbf}; /* -1.0f */
    msgpack_pack_bin_body(&pk, rec, 12);
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    assert_ok(decode_exact(&g, sb.data, sb.size, NULL, &err), &err);
    assert_int_equal(g.n_neurons, 2);
    assert_int_equal(g.neurons[1].id, 7);
    assert_true(g.neurons[1].bias == 0.1f);
    assert_true(g.neurons[1].depth == 1.0f);
    assert_true(g.conns[0].weight == -1.0f);
    genome_release(&g);
    msgpack_sbuffer_destroy(&sb);
}

/* ---- decode: failures ---------------------------------------------------- */

static void test_genome_decode_truncated_every_offset_fails(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(102, 0, 0);
    struct tv_buf buf = {0};
    for (int t = 0; t < 20; t++) {
        tu_random_genome(a, &r, 10);
        encode(a, &buf);
        for (size_t n = 0; n < buf.len; n++) {
            err.code = 0;
            int rc = decode_exact(b, buf.data, n, NULL, &err);
            assert_true(rc == TV_EFORMAT);
            assert_int_equal(err.code, rc);
            assert_true(strncmp(err.msg, "genome: ", 8) == 0);
            assert_int_equal(b->n_neurons, 0);
            assert_int_equal(b->n_conns, 0);
        }
    }
    assert_error(decode_exact(b, "", 0, NULL, &err), &err, TV_EFORMAT, "truncated at byte 0");
    tv_buf_free(&buf);
}

/* Every single-byte change of a valid message: refused, or a valid genome. */
static void test_genome_decode_corrupted_bytes_never_crash(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_rng r = tu_rng(103, 0, 0);
    struct tv_buf buf = {0};
    for (int t = 0; t < 10; t++) {
        tu_random_genome(a, &r, 10);
        encode(a, &buf);
        uint8_t *m = malloc(buf.len);
        assert_non_null(m);
        for (size_t i = 0; i < buf.len; i++) {
            const uint8_t vals[] = {0x00,
                                    0xff,
                                    0xc1,
                                    0xdd,
                                    0xc6,
                                    0x7f,
                                    (uint8_t)(buf.data[i] ^ 1),
                                    (uint8_t)(buf.data[i] ^ 0x80)};
            for (size_t k = 0; k < sizeof vals; k++) {
                memcpy(m, buf.data, buf.len);
                m[i] = vals[k];
                struct tv_error err = {0};
                int rc = genome_decode(b, m, buf.len, NULL, &err);
                if (rc == 0) {
                    assert_ok(genome_validate(b, NULL, &err), &err);
                } else {
                    assert_int_equal(err.code, rc);
                    assert_true(err.msg[0] != '\0');
                }
            }
        }
        free(m);
    }
    tv_buf_free(&buf);
}

static struct genome *small(void)
{
    struct genome *g = genome_new();
    tu_small_genome(g);
    return g;
}

static void test_genome_decode_wrong_magic_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = small();
    struct msg m = {"trevo-genomf", 0, 1, g, 0};
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "no \"trevo-genome\" tag");
    m.magic = "trevo-genom";
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "trevo-genome");
    m.magic = "trevo-genome!";
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "trevo-genome");
    m.magic = MAGIC;
    m.magic_as_bin = 1;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "trevo-genome");
    m.magic_as_bin = 0;
    assert_ok(decode_msg(&m, NULL, &err), &err);
    genome_free(g);
}

static void test_genome_decode_wrong_version_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = small();
    struct msg m = {MAGIC, 0, 7, g, 0};
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "format version 7");
    assert_msg_has(&err, "reads versions 1 to 6");
    m.version = 0;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "format version 0");
    m.version = 4000000000;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "format version 4000000000");
    m.version = -1;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "version is not an integer");
    genome_free(g);
}

static void test_genome_decode_wrong_root_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    /* A map, an array of 3, an array of 6, a bare integer. */
    static const uint8_t map[] = {0x81, 0x01, 0x02};
    assert_error(decode_exact(g, map, sizeof map, NULL, &err), &err, TV_EFORMAT,
                 "expected an array of 4");
    static const uint8_t three[] = {0x93, 0x01, 0x02, 0x03};
    assert_error(decode_exact(g, three, sizeof three, NULL, &err), &err, TV_EFORMAT,
                 "expected an array of 4");
    static const uint8_t five[] = {0x96, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06};
    assert_error(decode_exact(g, five, sizeof five, NULL, &err), &err, TV_EFORMAT,
                 "expected an array of 4");
    static const uint8_t one[] = {0x01};
    assert_error(decode_exact(g, one, sizeof one, NULL, &err), &err, TV_EFORMAT,
                 "not a trevo genome");
}

static void pack_neurons_as_map(msgpack_packer *pk, const struct genome *g)
{
    (void)g;
    msgpack_pack_map(pk, 0);
}

static void pack_neurons_ok(msgpack_packer *pk, const struct genome *g)
{
    msgpack_pack_array(pk, g->n_neurons);
    for (size_t i = 0; i < g->n_neurons; i++)
        pack_neuron(pk, &g->neurons[i]);
}

/* Neuron 1 of the list is replaced by what `bad_neuron` packs. */
static int bad_neuron;

static void pack_neurons_bad(msgpack_packer *pk, const struct genome *g)
{
    msgpack_pack_array(pk, g->n_neurons);
    for (size_t i = 0; i < g->n_neurons; i++) {
        const struct genome_neuron *n = &g->neurons[i];
        if (i != 1) {
            pack_neuron(pk, n);
            continue;
        }
        switch (bad_neuron) {
        case 0: /* not an array */
            msgpack_pack_uint8(pk, 1);
            break;
        case 1: /* array of 4 */
            msgpack_pack_array(pk, 4);
            msgpack_pack_uint32(pk, n->id);
            msgpack_pack_uint8(pk, n->kind);
            msgpack_pack_uint8(pk, n->act);
            msgpack_pack_float(pk, n->bias);
            break;
        default:
            msgpack_pack_array(pk, 5);
            if (bad_neuron == 2) /* negative id */
                msgpack_pack_int32(pk, -1);
            else if (bad_neuron == 3) /* id too large */
                msgpack_pack_uint64(pk, 1ull << 32);
            else if (bad_neuron == 4) /* id as a string */
                msgpack_pack_str_with_body(pk, "1", 1);
            else
                msgpack_pack_uint32(pk, n->id);
            if (bad_neuron == 5) /* kind over 255 */
                msgpack_pack_uint16(pk, 256);
            else
                msgpack_pack_uint8(pk, n->kind);
            if (bad_neuron == 6) /* act as nil */
                msgpack_pack_nil(pk);
            else
                msgpack_pack_uint8(pk, n->act);
            if (bad_neuron == 7) /* bias as a string */
                msgpack_pack_str_with_body(pk, "0.5", 3);
            else if (bad_neuron == 8) /* an integer a float cannot hold exactly */
                msgpack_pack_uint32(pk, (1u << 24) + 1);
            else if (bad_neuron == 9)
                msgpack_pack_int32(pk, -(1 << 24) - 1);
            else
                msgpack_pack_float(pk, n->bias);
            if (bad_neuron == 10) /* depth as bool */
                msgpack_pack_true(pk);
            else
                msgpack_pack_float(pk, n->depth);
        }
    }
}

static void test_genome_decode_wrong_types_fail(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = small();
    assert_ok(decode_custom(pack_neurons_ok, g, &err), &err);
    assert_error(decode_custom(pack_neurons_as_map, g, &err), &err, TV_EFORMAT,
                 "neuron list is not an array");
    bad_neuron = 0;
    assert_error(decode_custom(pack_neurons_bad, g, &err), &err, TV_EFORMAT,
                 "neuron 1 is not an array of 5");
    bad_neuron = 1;
    assert_error(decode_custom(pack_neurons_bad, g, &err), &err, TV_EFORMAT,
                 "neuron 1 is not an array of 5");
    for (bad_neuron = 2; bad_neuron <= 10; bad_neuron++) {
        assert_error(decode_custom(pack_neurons_bad, g, &err), &err, TV_EFORMAT,
                     "neuron 1 has a field of the wrong type");
    }
    /* The connection list as an array of triplets instead of a bin. */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_str_with_body(&pk, MAGIC, 12);
    msgpack_pack_uint8(&pk, 1);
    pack_neurons_ok(&pk, g);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_uint8(&pk, 2);
    msgpack_pack_float(&pk, 1.0f);
    struct genome out;
    genome_init(&out);
    assert_error(decode_exact(&out, sb.data, sb.size, NULL, &err), &err, TV_EFORMAT,
                 "connection list is not a bin");
    /* ... and as a str. */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_str_with_body(&pk, MAGIC, 12);
    msgpack_pack_uint8(&pk, 1);
    pack_neurons_ok(&pk, g);
    msgpack_pack_str_with_body(&pk, "abcdefghijkl", 12);
    assert_error(decode_exact(&out, sb.data, sb.size, NULL, &err), &err, TV_EFORMAT,
                 "connection list is not a bin");
    genome_release(&out);
    msgpack_sbuffer_destroy(&sb);
    genome_free(g);
}

static void test_genome_decode_bin_not_multiple_of_12_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = small();
    struct msg m = {MAGIC, 0, 1, g, 1};
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT,
                 "connection bin of 97 bytes is not a multiple of 12");
    m.bin_extra = 11;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EFORMAT, "107 bytes");
    m.bin_extra = 12; /* a 9th record of zeros: 0 -> 0 ends in an input */
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EINVAL, "(0 -> 0)");
    genome_free(g);
}

static void test_genome_decode_counts_over_limits_fail(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = small(); /* 5 neurons, 8 connections */
    struct msg m = {MAGIC, 0, 1, g, 0};
    struct genome_limits few_neurons = {4, 100};
    assert_error(decode_msg(&m, &few_neurons, &err), &err, TV_ELIMIT,
                 "5 neurons, more than the limit of 4");
    struct genome_limits few_conns = {100, 7};
    assert_error(decode_msg(&m, &few_conns, &err), &err, TV_ELIMIT,
                 "8 connections, more than the limit of 7");
    struct genome_limits exact = {5, 8};
    assert_ok(decode_msg(&m, &exact, &err), &err);
    /* A message far larger than any genome within the limits. */
    struct genome_limits tiny = {0, 0};
    assert_error(decode_msg(&m, &tiny, &err), &err, TV_ELIMIT, "more than the limits allow");
    genome_free(g);
}

/* Limits meaning "no limit" (SIZE_MAX) must not turn into a tiny bound. */
static void test_genome_decode_huge_limits_accept_valid(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = small();
    struct msg m = {MAGIC, 0, 1, g, 0};
    struct genome_limits huge = {SIZE_MAX, SIZE_MAX};
    assert_ok(decode_msg(&m, &huge, &err), &err);
    struct genome_limits big = {SIZE_MAX / 16, SIZE_MAX / 16};
    assert_ok(decode_msg(&m, &big, &err), &err);
    genome_free(g);
}

static void test_genome_decode_huge_announced_count_fails_fast(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    /* [MAGIC, 1, array32 announcing 2^32-1 neurons]: 20 bytes. msgpack-c
     * alone would try to allocate 96 GB (docs/facts.md). Refused by the framing
     * check before anything is allocated. */
    uint8_t m[] = {0x94, 0xac, 't', 'r', 'e',  'v',  'o',  '-',  'g',  'e',
                   'n',  'o',  'm', 'e', 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff};
    assert_error(decode_exact(g, m, sizeof m, NULL, &err), &err, TV_EFORMAT,
                 "announces 4294967295 elements");
    /* The same at the root, as a map32, and a bin32 of 4 GB. */
    assert_error(decode_exact(g, m + 15, 5, NULL, &err), &err, TV_EFORMAT, "announces");
    m[15] = 0xdf;
    assert_error(decode_exact(g, m, sizeof m, NULL, &err), &err, TV_EFORMAT, "announces");
    m[15] = 0xc6;
    assert_error(decode_exact(g, m, sizeof m, NULL, &err), &err, TV_EFORMAT, "runs past the end");
}

static void test_genome_decode_trailing_bytes_fail(void **state)
{
    struct small *f = *state;
    struct tv_error err = {0};
    assert_int_equal(tv_buf_append(&f->buf, "\xc0", 1), 0);
    assert_error(decode_exact(&f->b, f->buf.data, f->buf.len, NULL, &err), &err, TV_EFORMAT,
                 "1 trailing bytes");
    /* Two whole messages back to back. */
    f->buf.len--;
    size_t one = f->buf.len;
    assert_int_equal(tv_buf_append(&f->buf, f->buf.data, one), 0);
    assert_error(decode_exact(&f->b, f->buf.data, f->buf.len, NULL, &err), &err, TV_EFORMAT,
                 "trailing");
    assert_int_equal(f->b.n_neurons, 0);
}

static void test_genome_decode_nesting_too_deep_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    /* [MAGIC, 1, [[[[[1]]]]], bin]: the neuron list nests 5 deep. */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_str_with_body(&pk, MAGIC, 12);
    msgpack_pack_uint8(&pk, 1);
    for (int i = 0; i < 5; i++)
        msgpack_pack_array(&pk, 1);
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_bin(&pk, 0);
    assert_error(decode_exact(g, sb.data, sb.size, NULL, &err), &err, TV_EFORMAT,
                 "nesting deeper than");
    /* 40 levels: msgpack-c alone reports a misleading out-of-memory. */
    msgpack_sbuffer_clear(&sb);
    for (int i = 0; i < 40; i++)
        msgpack_pack_array(&pk, 1);
    msgpack_pack_nil(&pk);
    assert_error(decode_exact(g, sb.data, sb.size, NULL, &err), &err, TV_EFORMAT,
                 "nesting deeper than");
    msgpack_sbuffer_destroy(&sb);
}

static void test_genome_decode_invalid_byte_c1_fails(void **state)
{
    struct small *f = *state;
    struct tv_error err = {0};
    assert_int_equal(f->buf.data[14], 0x01); /* the version */
    f->buf.data[14] = 0xc1;
    assert_error(decode_exact(&f->b, f->buf.data, f->buf.len, NULL, &err), &err, TV_EFORMAT,
                 "invalid byte 0xc1 at byte 14");
    assert_error(decode_exact(&f->b, "\xc1", 1, NULL, &err), &err, TV_EFORMAT, "0xc1 at byte 0");
}

/* Well-framed messages whose genome breaks an invariant are refused by
 * genome_validate, with its message. */
static void test_genome_decode_invalid_genome_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = small();
    struct msg m = {MAGIC, 0, 1, g, 0};
    g->conns[2].weight = NAN;
    char want[64];
    snprintf(want, sizeof want, "connection 2 (%u -> %u): weight is not finite", g->conns[2].from,
             g->conns[2].to);
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EINVAL, want);
    tu_small_genome(g);
    struct genome_conn t = g->conns[0];
    g->conns[0] = g->conns[1];
    g->conns[1] = t;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EINVAL, "out of (from, to) order");
    tu_small_genome(g);
    g->conns[7].to = 0; /* 11 -> 0: into an input */
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EINVAL, "ends in input neuron 0");
    tu_small_genome(g);
    g->neurons[4].depth = 1.5f;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EINVAL, "neuron 11: depth 1.5");
    tu_small_genome(g);
    g->neurons[3].kind = 9;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EINVAL, "neuron 10: unknown kind 9");
    tu_small_genome(g);
    g->neurons[0].id = 1; /* 1 1 2 10 11 */
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EINVAL, "neuron 1: id listed twice");
    tu_small_genome(g);
    g->neurons[4].id = GENOME_ID_NONE;
    assert_error(decode_msg(&m, NULL, &err), &err, TV_EINVAL, "reserved");
    genome_free(g);
}

/* ---- tv_msgpack_check ---------------------------------------------------- */

/* Valid objects of every type; each must pass, each strict prefix must fail
 * as truncated, and one byte more must fail as trailing. */
static void test_tv_msgpack_check_every_type(void **state)
{
    (void)state;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    char blob[70000];
    memset(blob, 'x', sizeof blob);
    size_t starts[64], n = 0;
#define OBJ(stmt)                                                                                  \
    do {                                                                                           \
        starts[n++] = sb.size;                                                                     \
        stmt;                                                                                      \
    } while (0)
    OBJ(msgpack_pack_nil(&pk));
    OBJ(msgpack_pack_true(&pk));
    OBJ(msgpack_pack_false(&pk));
    OBJ(msgpack_pack_uint8(&pk, 5));
    OBJ(msgpack_pack_int8(&pk, -5));
    OBJ(msgpack_pack_uint8(&pk, 200));
    OBJ(msgpack_pack_uint16(&pk, 60000));
    OBJ(msgpack_pack_uint32(&pk, 4000000000u));
    OBJ(msgpack_pack_uint64(&pk, 1ull << 40));
    OBJ(msgpack_pack_int8(&pk, -100));
    OBJ(msgpack_pack_int16(&pk, -30000));
    OBJ(msgpack_pack_int32(&pk, -2000000000));
    OBJ(msgpack_pack_int64(&pk, -(1ll << 40)));
    OBJ(msgpack_pack_float(&pk, 1.5f));
    OBJ(msgpack_pack_double(&pk, 1.5));
    OBJ(msgpack_pack_str_with_body(&pk, blob, 5));
    OBJ(msgpack_pack_str_with_body(&pk, blob, 200));
    OBJ(msgpack_pack_str_with_body(&pk, blob, 300));
    OBJ(msgpack_pack_str_with_body(&pk, blob, 66000));
    OBJ(msgpack_pack_bin_with_body(&pk, blob, 0));
    OBJ(msgpack_pack_bin_with_body(&pk, blob, 200));
    OBJ(msgpack_pack_bin_with_body(&pk, blob, 300));
    OBJ(msgpack_pack_bin_with_body(&pk, blob, 66000));
    OBJ(msgpack_pack_ext_with_body(&pk, blob, 1, 7));
    OBJ(msgpack_pack_ext_with_body(&pk, blob, 2, 7));
    OBJ(msgpack_pack_ext_with_body(&pk, blob, 4, 7));
    OBJ(msgpack_pack_ext_with_body(&pk, blob, 8, 7));
    OBJ(msgpack_pack_ext_with_body(&pk, blob, 16, 7));
    OBJ(msgpack_pack_ext_with_body(&pk, blob, 3, 7));
    OBJ(msgpack_pack_ext_with_body(&pk, blob, 300, 7));
    OBJ(msgpack_pack_ext_with_body(&pk, blob, 66000, 7));
    OBJ(msgpack_pack_array(&pk, 0));
    OBJ(msgpack_pack_map(&pk, 0));
    OBJ({
        msgpack_pack_array(&pk, 3);
        msgpack_pack_nil(&pk);
        msgpack_pack_array(&pk, 1);
        msgpack_pack_uint8(&pk, 1);
        msgpack_pack_str_with_body(&pk, "ab", 2);
    });
    OBJ({
        msgpack_pack_array(&pk, 20);
        for (int i = 0; i < 20; i++)
            msgpack_pack_int(&pk, i);
    });
    OBJ({
        msgpack_pack_array(&pk, 70000);
        for (int i = 0; i < 70000; i++)
            msgpack_pack_nil(&pk);
    });
    OBJ({
        msgpack_pack_map(&pk, 2);
        msgpack_pack_uint8(&pk, 1);
        msgpack_pack_nil(&pk);
        msgpack_pack_str_with_body(&pk, "k", 1);
        msgpack_pack_map(&pk, 1);
        msgpack_pack_nil(&pk);
        msgpack_pack_nil(&pk);
    });
    OBJ({
        msgpack_pack_map(&pk, 20);
        for (int i = 0; i < 40; i++)
            msgpack_pack_int(&pk, i);
    });
    OBJ({
        msgpack_pack_map(&pk, 70000);
        for (int i = 0; i < 140000; i++)
            msgpack_pack_nil(&pk);
    });
#undef OBJ
    starts[n] = sb.size;
    struct tv_error err = {0};
    for (size_t k = 0; k < n; k++) {
        const char *o = sb.data + starts[k];
        size_t len = starts[k + 1] - starts[k];
        assert_ok(check_exact(o, len, 8, &err), &err);
        /* Prefixes: all of the short ones, a sample of the long ones. */
        for (size_t p = 0; p < len; p += p < 64 ? 1 : 997) {
            int rc = check_exact(o, p, 8, &err);
            assert_int_equal(rc, TV_EFORMAT);
            assert_true(strstr(err.msg, "truncated") || strstr(err.msg, "runs past the end") ||
                        strstr(err.msg, "announces"));
        }
        char *more = malloc(len + 1);
        memcpy(more, o, len);
        more[len] = 0x01;
        assert_error(check_exact(more, len + 1, 8, &err), &err, TV_EFORMAT,
                     "1 trailing bytes after the object");
        free(more);
    }
    /* And the whole stream is n objects, not one. */
    assert_error(check_exact(sb.data, sb.size, 8, &err), &err, TV_EFORMAT, "trailing bytes");
    msgpack_sbuffer_destroy(&sb);
}

static void test_tv_msgpack_check_depth_limit(void **state)
{
    (void)state;
    struct tv_error err = {0};
    uint8_t m[200];
    for (unsigned d = 1; d <= 70; d++) {
        memset(m, 0x91, d); /* d nested arrays of one element */
        m[d] = 0xc0;
        if (d <= 64)
            assert_ok(check_exact(m, d + 1, d, &err), &err);
        assert_error(check_exact(m, d + 1, d - 1, &err), &err, TV_EFORMAT, "nesting deeper than");
        /* max_depth above 64 counts as 64. */
        if (d > 64)
            assert_error(check_exact(m, d + 1, 1000, &err), &err, TV_EFORMAT, "64 levels");
        else
            assert_ok(check_exact(m, d + 1, 1000, &err), &err);
    }
    /* Empty containers do not nest: [[[]]] at depth 2. */
    static const uint8_t e[] = {0x91, 0x91, 0x90};
    assert_ok(check_exact(e, 3, 2, &err), &err);
    /* Scalars need no depth at all. */
    assert_ok(check_exact("\x05", 1, 0, &err), &err);
    assert_error(check_exact("\x91\x05", 2, 0, &err), &err, TV_EFORMAT, "nesting deeper than 0");
}

static void test_tv_msgpack_check_bad_inputs_name_offset(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_error(check_exact("", 0, 4, &err), &err, TV_EFORMAT, "msgpack: truncated at byte 0");
    assert_error(check_exact("\x93\x01\x02\xc1", 4, 4, &err), &err, TV_EFORMAT,
                 "invalid byte 0xc1 at byte 3");
    assert_error(check_exact("\x93\x01\x02", 3, 4, &err), &err, TV_EFORMAT,
                 "container at byte 0 announces 3 elements but only 2 bytes follow");
    /* Counts that fit the bytes, but the nested ones use them up. */
    assert_error(check_exact("\x92\x91\x01", 3, 4, &err), &err, TV_EFORMAT, "truncated at byte 3");
    /* A map of one pair with its value missing. */
    assert_error(check_exact("\x81\x01", 2, 4, &err), &err, TV_EFORMAT,
                 "announces 2 elements but only 1 bytes follow");
    /* Headers cut inside their length field. */
    assert_error(check_exact("\xdd\x00\x00", 3, 4, &err), &err, TV_EFORMAT, "truncated at byte 0");
    assert_error(check_exact("\x91\xc5\x01", 3, 4, &err), &err, TV_EFORMAT, "truncated at byte 1");
    assert_error(check_exact("\xcb\x00\x00", 3, 4, &err), &err, TV_EFORMAT, "runs past the end");
    /* Containers that announce more elements than bytes remain. */
    assert_error(check_exact("\xdc\xff\xff\x01\x02", 5, 4, &err), &err, TV_EFORMAT,
                 "announces 65535 elements but only 2 bytes follow");
    assert_error(check_exact("\xdf\x7f\xff\xff\xff", 5, 4, &err), &err, TV_EFORMAT,
                 "announces 4294967294 elements");
    assert_error(check_exact("\xc6\xff\xff\xff\xff", 5, 4, &err), &err, TV_EFORMAT,
                 "runs past the end");
    assert_error(check_exact("\xc9\xff\xff\xff\xff\x01", 6, 4, &err), &err, TV_EFORMAT,
                 "runs past the end");
    /* An ext with its type byte but no data. */
    assert_error(check_exact("\xd4\x01", 2, 4, &err), &err, TV_EFORMAT, "runs past the end");
    assert_int_equal(tv_msgpack_check("\x01", 1, 4, NULL), 0);
    assert_int_equal(tv_msgpack_check("\xc1", 1, 4, NULL), TV_EFORMAT);
}

/* Whatever passes the check, msgpack-c decodes completely; the fuzz target
 * explores this further. */
static void test_tv_msgpack_check_agrees_with_msgpack_c(void **state)
{
    (void)state;
    struct tv_rng r = tu_rng(104, 0, 0);
    static const uint8_t alphabet[] = {0x90, 0x91, 0x92, 0x93, 0x80, 0x81, 0x82, 0xc0, 0xc2,
                                       0xc3, 0x01, 0x7f, 0xff, 0xa1, 0xa2, 0xc4, 0xcc, 0xcd,
                                       0xdc, 0xde, 0xd4, 0xca, 0x00, 0x02, 0x41};
    uint8_t m[24];
    int passed = 0;
    for (int t = 0; t < 200000; t++) {
        size_t len = 1 + tv_rng_below(&r, sizeof m);
        for (size_t i = 0; i < len; i++)
            m[i] = alphabet[tv_rng_below(&r, sizeof alphabet)];
        if (tv_msgpack_check(m, len, 8, NULL) != 0)
            continue;
        passed++;
        msgpack_unpacked res;
        msgpack_unpacked_init(&res);
        size_t off = 0;
        assert_int_equal(msgpack_unpack_next(&res, (const char *)m, len, &off),
                         MSGPACK_UNPACK_SUCCESS);
        assert_int_equal(off, len);
        msgpack_unpacked_destroy(&res);
    }
    assert_true(passed > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        SMALL_TEST(test_genome_encode_decode_round_trip_small),
        TU_PAIR_TEST(test_genome_encode_appends_to_buffer),
        TU_PAIR_TEST(test_genome_decode_round_trip_random_genomes),
        TU_GENOME_TEST(test_genome_decode_fast_path_equals_general),
        cmocka_unit_test_setup_teardown(test_genome_encode_lif_writes_version_2_and_round_trips,
                                        tu_pair_setup, tu_pair_teardown),
        cmocka_unit_test_setup_teardown(
            test_genome_decode_version_2_of_rate_neurons_reencodes_as_version_1, tu_pair_setup,
            tu_pair_teardown),
        cmocka_unit_test_setup_teardown(test_genome_decode_version_2_bad_neurons_fail,
                                        tu_pair_setup, tu_pair_teardown),
        cmocka_unit_test_setup_teardown(test_genome_decode_version_2_widest_at_limits_accepted,
                                        tu_pair_setup, tu_pair_teardown),
        cmocka_unit_test(test_genome_decode_accepts_float64_and_integer_fields),
        TU_PAIR_TEST(test_genome_decode_truncated_every_offset_fails),
        TU_PAIR_TEST(test_genome_decode_corrupted_bytes_never_crash),
        cmocka_unit_test(test_genome_decode_wrong_magic_fails),
        cmocka_unit_test(test_genome_decode_wrong_version_fails),
        TU_GENOME_TEST(test_genome_decode_wrong_root_fails),
        cmocka_unit_test(test_genome_decode_wrong_types_fail),
        cmocka_unit_test(test_genome_decode_bin_not_multiple_of_12_fails),
        cmocka_unit_test(test_genome_decode_counts_over_limits_fail),
        cmocka_unit_test(test_genome_decode_huge_limits_accept_valid),
        TU_GENOME_TEST(test_genome_decode_huge_announced_count_fails_fast),
        SMALL_TEST(test_genome_decode_trailing_bytes_fail),
        TU_GENOME_TEST(test_genome_decode_nesting_too_deep_fails),
        SMALL_TEST(test_genome_decode_invalid_byte_c1_fails),
        cmocka_unit_test(test_genome_decode_invalid_genome_fails),
        cmocka_unit_test(test_tv_msgpack_check_every_type),
        cmocka_unit_test(test_tv_msgpack_check_depth_limit),
        cmocka_unit_test(test_tv_msgpack_check_bad_inputs_name_offset),
        cmocka_unit_test(test_tv_msgpack_check_agrees_with_msgpack_c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
