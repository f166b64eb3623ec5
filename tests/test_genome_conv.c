/* test_genome_conv.c -- convolutional genomes (genome.h, "channels and
 * filters"): validation, the text and msgpack forms of version 3, mutation,
 * crossover, allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "failalloc.h"
#include "genome.h"
#include "nn.h"
#include "quant.h"
#include "testutil.h"
#include "train.h"

/* A 6x6 image (input neurons 0..35), two outputs (36, 37); channel 0 is the
 * image, channel 2 a 6x6 map (3x3, pad 1) at depth 0.25, channel 1 a 4x4 map
 * pooled 2x2 to 2x2 (pixels 100..103) at depth 0.5, fed from 0 and 2; a head
 * of plain connections from pixels. */
static const char *const CONV_TEXT = "trevo-net 4\n"
                                     "inputs 36\n"
                                     "outputs 2\n"
                                     "neuron 36 out 1 identity 0\n"
                                     "neuron 37 out 1 sigmoid 0.5\n"
                                     "conn 100 36 0.5\n"
                                     "conn 101 36 -0.25\n"
                                     "conn 103 37 1.5\n"
                                     "conn 5 36 0.125\n"
                                     "conn 200 37 -1\n"
                                     "channel 0 in 6 6 1 0 identity 0 0\n"
                                     "channel 1 hid 4 4 2 0.5 relu 0.1 100\n"
                                     "channel 2 hid 6 6 1 0.25 tanh -0.2 200\n"
                                     "filter 0 1 3 3 1 0 2,2,0.25 0,0,0.5 1,1,-1\n"
                                     "filter 0 2 3 3 1 1 1,1,1 0,2,0.3\n"
                                     "filter 2 1 3 3 1 0 1,0,0.7\n";

/* CONV_TEXT with the 36 input neuron lines put in after the header. */
static char *with_inputs(const char *text)
{
    size_t n = strlen(text) + 36 * 32 + 1;
    char *s = malloc(n);
    assert_non_null(s);
    const char *nl = strchr(text, '\n') + 1;
    size_t off = (size_t)(nl - text);
    memcpy(s, text, off);
    for (int i = 0; i < 36; i++)
        off += (size_t)snprintf(s + off, n - off, "neuron %d in 0 identity 0\n", i);
    strcpy(s + off, nl);
    return s;
}

static int read_text(struct genome *g, const char *text, struct tv_error *err)
{
    char *s = with_inputs(text);
    int rc = genome_read_text(g, s, strlen(s), "c.txt", NULL, err);
    free(s);
    return rc;
}

static struct genome *conv_genome(void)
{
    struct genome *g = genome_new();
    struct tv_error err = {0};
    assert_non_null(g);
    assert_ok(read_text(g, CONV_TEXT, &err), &err);
    return g;
}

/* A fixture of conv_genome(), released after the test (CONV_TEST(test) in
 * the test table; `struct genome *g = *state;`). */
static int conv_setup(void **state)
{
    *state = conv_genome();
    return 0;
}
#define CONV_TEST(test) cmocka_unit_test_setup_teardown(test, conv_setup, tu_genome_teardown)

/* CONV_TEXT with line `from` replaced by `to` (both whole lines with "\n"). */
static int read_changed(const char *from, const char *to, struct tv_error *err)
{
    const char *at = strstr(CONV_TEXT, from);
    assert_non_null(at);
    size_t n = strlen(CONV_TEXT) + strlen(to) + 1;
    char *s = malloc(n);
    assert_non_null(s);
    size_t a = (size_t)(at - CONV_TEXT);
    memcpy(s, CONV_TEXT, a);
    strcpy(s + a, to);
    strcat(s, at + strlen(from));
    struct genome g;
    genome_init(&g);
    int rc = read_text(&g, s, err);
    genome_release(&g);
    free(s);
    return rc;
}

static char *write_text(const struct genome *g)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct tv_error err = {0};
    assert_ok(genome_write_text(g, f, &err), &err);
    fclose(f);
    return buf;
}

/* ---- reading and the layout of the genes ------------------------------- */

static void test_genome_read_text_conv_genes_in_order(void **state)
{
    struct genome *g = *state;
    assert_int_equal(g->n_channels, 3);
    assert_int_equal(g->n_filters, 3);
    assert_int_equal(g->n_coefs, 6);
    assert_int_equal(genome_format_version(g), 4);
    /* filter 0 -> 1: coefficients sorted by (ky, kx) */
    assert_int_equal(g->filters[0].from, 0);
    assert_int_equal(g->filters[0].to, 1);
    assert_int_equal(g->filters[0].coef0, 0);
    assert_int_equal(g->filters[0].n_coefs, 3);
    assert_int_equal(g->coefs[0].ky, 0);
    assert_int_equal(g->coefs[2].ky, 2);
    assert_true(g->coefs[1].w == -1.0f);
    assert_int_equal(g->filters[1].coef0, 3);
    assert_int_equal(g->filters[2].coef0, 5);
    assert_int_equal(genome_pixel_channel(g, 103), 1);
    assert_int_equal(genome_pixel_channel(g, 104), -1);
    assert_int_equal(genome_pixel_channel(g, 235), 2);
    float d = 0;
    assert_int_equal(genome_source_depth(g, 200, &d), 0);
    assert_true(d == 0.25f);
    assert_int_equal(genome_source_depth(g, 99, &d), -1);
}

static void test_genome_filter_out_geometry(void **state)
{
    (void)state;
    assert_int_equal(genome_filter_out(28, 3, 1, 1), 28);
    assert_int_equal(genome_filter_out(28, 5, 1, 0), 24);
    assert_int_equal(genome_filter_out(28, 3, 2, 1), 14);
    assert_int_equal(genome_filter_out(2, 5, 1, 1), 0);
    assert_int_equal(genome_filter_out(5, 0, 1, 0), 0);
}

/* ---- validation ------------------------------------------------------- */

static void test_genome_validate_conv_bad_genes_fail(void **state)
{
    (void)state;
    struct tv_error err = {0};
    static const struct {
        const char *from, *to, *msg;
    } cases[] = {
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 1 5 5 1 0 1,0,0.7\n",
         "filter 2 -> 1: a 5x5 kernel with stride 1, pad 0 over 6x6 gives 2x2, channel 1 is 4x4"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 1 2 3 3 1 0 1,0,0.7\n",
         "filter 1 -> 2: depth 0.5 to 0.25 does not increase"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 0 3 3 1 0 1,0,0.7\n",
         "filter 2 -> 0: ends in input channel 0"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 9 3 3 1 0 1,0,0.7\n",
         "filter 2 -> 9: channel 9 does not exist"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 1 3 3 1 0 3,0,0.7\n",
         "filter 2 -> 1: coefficient (3, 0) is outside the 3x3 kernel"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 1 3 3 1 0 1,0,0.7 1,0,2\n",
         "c.txt:52: filter 2 -> 1: coefficient (1, 0) given twice"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 1 3 3 1 0\n",
         "filter 2 -> 1: no coefficient (an all-zero filter is absent)"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 1 3 3 1 3 1,0,0.7\n",
         "filter 2 -> 1: a 3x3 kernel with stride 1, pad 3"},
        {"channel 2 hid 6 6 1 0.25 tanh -0.2 200\n",
         "channel 2 hid 6 6 1 0.25 tanh -0.2 200\n"
         "channel 3 hid 2 2 1 0.5 relu 0 201\n",
         "channel 3: pixel id 201 is also channel 2's"},
        {"channel 2 hid 6 6 1 0.25 tanh -0.2 200\n",
         "channel 2 hid 6 6 1 0.25 tanh -0.2 200\n"
         "channel 3 hid 2 2 1 0.5 relu 0 35\n",
         "channel 3: pixel id 35 is also a neuron"},
        {"channel 2 hid 6 6 1 0.25 tanh -0.2 200\n", "channel 2 hid 6 6 1 0 tanh -0.2 200\n",
         "channel 2: depth 0 is outside (0, 1)"},
        {"channel 2 hid 6 6 1 0.25 tanh -0.2 200\n",
         "channel 2 hid 6 6 1 0.25 tanh -0.2 200\n"
         "channel 3 hid 2 2 3 0.5 relu 0 300\n",
         "channel 3: pooling 3 does not fit a 2x2 map"},
        {"channel 0 in 6 6 1 0 identity 0 0\n", "channel 0 in 6 6 1 0 identity 0 1\n",
         "channel 0: neuron 36 is not an input"},
        {"channel 0 in 6 6 1 0 identity 0 0\n", "channel 0 in 6 6 1 0 identity 0 2000\n",
         "channel 0: input neurons 2000..2035 do not all exist"},
        {"channel 0 in 6 6 1 0 identity 0 0\n", "channel 0 in 6 6 1 0 relu 0 0\n",
         "channel 0: an input channel has pool 1, activation identity, bias 0 and depth 0"},
        {"conn 200 37 -1\n", "conn 37 200 -1\n",
         "connection 1 (37 -> 200): ends in a pixel of "
         "channel 2"},
        {"conn 200 37 -1\n", "conn 300 37 -1\n",
         "c.txt:46: connection 300 -> 37: neuron 300 is not defined"},
        {"channel 1 hid 4 4 2 0.5 relu 0.1 100\n",
         "channel 1 hid 4 4 2 0.5 relu 0.1 100\n"
         "channel 1 hid 4 4 2 0.5 relu 0.1 300\n",
         "c.txt:49: channel 1 already exists"},
        {"channel 1 hid 4 4 2 0.5 relu 0.1 100\n", "channel 1 hid 4 4 2 0.5 relu\n",
         "c.txt:48: expected 'channel ID in|hid H W POOL DEPTH ACTIVATION BIAS FIRST'"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 1 3 3 1 0 1,0\n",
         "c.txt:52: expected KY,KX,W: '1,0'"},
        {"filter 2 1 3 3 1 0 1,0,0.7\n", "filter 2 1 3 3 1 0 1,0,nan\n",
         "c.txt:52: coefficient is not a finite number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = read_changed(cases[i].from, cases[i].to, &err);
        if (rc == 0 || !strstr(err.msg, cases[i].msg))
            print_error("case %zu: got \"%s\"\n", i, err.msg);
        assert_error(rc, &err, TV_EINVAL, cases[i].msg);
    }
}

static void test_genome_read_text_conv_lines_need_version_3(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_error(read_changed("trevo-net 4\n", "trevo-net 3\n", &err), &err, TV_EINVAL,
                 "c.txt:47: 'channel' lines need 'trevo-net 4'");
}

static void test_genome_validate_conv_feed_forward_head(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    /* a hidden neuron at 0.25, below channel 1 at 0.5: 100 -> it is not feed-forward */
    assert_ok(genome_add_neuron(g, 50, GENOME_HIDDEN, GENOME_ACT_RELU, 0, 0.25f, &err), &err);
    assert_ok(genome_add_conn(g, 50, 36, 1, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    struct genome_conn c = {100, 50, 1};
    assert_ok(genome_push_conn(g, &c, &err), &err);
    assert_ok(genome_canonicalize(g, &err), &err);
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL,
                 "(100 -> 50): from a pixel of channel 1 at depth 0.5 to depth 0.25 is not "
                 "feed-forward");
}

static void test_genome_validate_conv_limits(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    /* few coefficients, then few neurons */
    assert_error(genome_validate(g, &(struct genome_limits){1000, 5}, &err), &err, TV_ELIMIT,
                 "genome has 6 filter coefficients, more than the limit of 5");
    assert_error(genome_validate(g, &(struct genome_limits){40, 100}, &err), &err, TV_ELIMIT,
                 "genome has 38 neurons and 40 pixels, more than the limit of 40");
    struct genome_limits exact = {78, 100};
    assert_ok(genome_validate(g, &exact, &err), &err);
}

/* ---- formats ----------------------------------------------------------- */

static void test_genome_write_text_conv_round_trip(void **state)
{
    struct genome *g = *state, *h = genome_new();
    struct tv_error err = {0};
    char *a = write_text(g);
    assert_non_null(strstr(a, "trevo-net 4\n"));
    assert_non_null(strstr(a, "channel 1 hid 4 4 2 0.5 relu 0.100000001 100\n"));
    assert_non_null(strstr(a, "filter 0 1 3 3 1 0 0,0,0.5 1,1,-1 2,2,0.25\n"));
    assert_ok(genome_read_text(h, a, strlen(a), "a.txt", NULL, &err), &err);
    assert_true(genome_equal(g, h));
    char *b = write_text(h);
    assert_string_equal(a, b);
    TV_FREE_ALL(a, b);
    genome_free(h);
}

static void test_genome_encode_conv_round_trip(void **state)
{
    struct genome *g = *state, *h = genome_new();
    struct tv_error err = {0};
    struct tv_buf a = {0}, b = {0};
    assert_ok(genome_encode(g, &a, &err), &err);
    assert_int_equal(a.data[0], 0x97); /* an array of 7 */
    assert_ok(genome_decode(h, a.data, a.len, NULL, &err), &err);
    assert_true(genome_equal(g, h));
    assert_ok(genome_decode_general(h, a.data, a.len, NULL, 1, &err), &err);
    assert_true(genome_equal(g, h));
    assert_ok(genome_encode(h, &b, &err), &err);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    /* the limits are checked before allocation */
    struct genome_limits few = {1000, 5};
    assert_error(genome_decode(h, a.data, a.len, &few, &err), &err, TV_ELIMIT,
                 "genome: 6 filter coefficients, more than the limit of 5");
    /* a version 4 message must be an array of 7 */
    a.data[0] = 0x94;
    assert_int_not_equal(genome_decode(h, a.data, a.len, NULL, &err), 0);
    tv_buf_free(&a);
    tv_buf_free(&b);
    genome_free(h);
}

static void test_genome_format_version_without_channels_unchanged(void **state)
{
    struct genome *g = *state;
    /* the same network without its convolutional genes is version 1 again,
     * and its encoding an array of 4 */
    while (g->n_channels)
        genome_remove_channel_at(g, g->n_channels - 1);
    assert_int_equal(g->n_filters, 0);
    assert_int_equal(g->n_coefs, 0);
    assert_int_equal(g->n_conns, 1); /* 5 -> 36: the head from pixels went */
    assert_int_equal(genome_format_version(g), 1);
    struct tv_error err = {0};
    struct tv_buf a = {0};
    assert_ok(genome_encode(g, &a, &err), &err);
    assert_int_equal(a.data[0], 0x94);
    char *t = write_text(g);
    assert_non_null(strstr(t, "trevo-net 1\n"));
    assert_null(strstr(t, "channel"));
    free(t);
    tv_buf_free(&a);
}

static void test_genome_copy_equal_conv(void **state)
{
    struct genome *g = *state, *h = genome_new();
    struct tv_error err = {0};
    assert_ok(genome_copy(h, g, &err), &err);
    assert_true(genome_equal(g, h));
    h->coefs[3].w += 1;
    assert_false(genome_equal(g, h));
    h->coefs[3].w = g->coefs[3].w;
    h->channels[2].bias = 3;
    assert_false(genome_equal(g, h));
    genome_reset(h);
    assert_int_equal(h->n_channels + h->n_filters + h->n_coefs, 0);
    genome_free(h);
}

/* ---- variation --------------------------------------------------------- */

static struct genome_mutation conv_mutation(void)
{
    struct genome_mutation m = tu_aggressive_mutation();
    m.conv.add_filter_rate = 0.5;
    m.conv.del_filter_rate = 0.1;
    m.conv.add_coef_rate = 0.8;
    m.conv.del_coef_rate = 0.3;
    m.conv.add_channel_rate = 0.2;
    m.conv.del_channel_rate = 0.05;
    m.add_head_per_conn = 0.2; /* genomes with channels only */
    return m;
}

static void test_genome_mutate_conv_keeps_valid(void **state)
{
    (void)state;
    struct genome_mutation m = conv_mutation();
    struct tv_error err = {0};
    size_t grew = 0, added_channels = 0;
    for (uint64_t seed = 0; seed < 20; seed++) {
        struct genome *g = conv_genome();
        struct tv_rng rng = tu_rng(seed, 1, 2);
        for (int k = 0; k < 40; k++) {
            assert_ok(genome_mutate(g, &m, &rng, &err), &err);
            assert_ok(genome_validate(g, NULL, &err), &err);
        }
        grew += g->n_coefs > 6;
        added_channels += g->n_channels > 3;
        genome_free(g);
    }
    assert_true(grew > 0);
    assert_true(added_channels > 0);
}

static void test_genome_mutate_conv_nothing_without_channels(void **state)
{
    (void)state;
    struct genome_mutation m = conv_mutation();
    struct genome_mutation plain = tu_aggressive_mutation();
    struct tv_error err = {0};
    struct genome *a = genome_new(), *b = genome_new();
    struct tv_rng r1, r2;
    tv_rng_init(&r1, 9, 0, 0);
    tv_rng_init(&r2, 9, 0, 0);
    tu_random_genome(a, &r1, 3);
    tv_rng_init(&r1, 9, 1, 0);
    assert_ok(genome_copy(b, a, &err), &err);
    tv_rng_init(&r2, 9, 1, 0);
    for (int k = 0; k < 20; k++) {
        assert_ok(genome_mutate(a, &m, &r1, &err), &err);
        assert_ok(genome_mutate(b, &plain, &r2, &err), &err);
    }
    assert_true(genome_equal(a, b));
    assert_true(r1.ctr == r2.ctr);
    genome_free(a);
    genome_free(b);
}

/* conv_genome() with two hidden neurons: 50 in the head (depth 0.75,
 * feeding output 36) and 51 at depth 0.3, shallower than the deepest
 * channel (channel 1, depth 0.5, pooled pixels 100..103). */
static struct genome *head_genome(void)
{
    struct genome *g = conv_genome();
    struct tv_error err = {0};
    assert_ok(genome_add_neuron(g, 50, GENOME_HIDDEN, GENOME_ACT_RELU, 0, 0.75f, &err), &err);
    assert_ok(genome_add_neuron(g, 51, GENOME_HIDDEN, GENOME_ACT_RELU, 0, 0.3f, &err), &err);
    assert_ok(genome_add_conn(g, 50, 36, 0.5f, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    return g;
}

/* add_head_per_conn: the new connections start at a pooled pixel of the
 * deepest channels and end in a neuron deeper than them (outputs and the
 * head's hidden neuron; never neuron 51, never a pixel of the shallower
 * channel 2); with preserve they start at 0; the genome stays valid; a
 * rate of 1 finds nearly every free pair. */
static void test_genome_mutate_head_grows_from_deepest_pixels(void **state)
{
    (void)state;
    struct tv_error err = {0};
    size_t full = 0, into_hidden = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        struct genome *parent = head_genome(), *g = head_genome();
        struct genome_mutation m = {0};
        m.weight_init_sd = 1;
        m.add_head_per_conn = 1;
        m.preserve = seed % 2;
        struct tv_rng rng = tu_rng(seed, 7, 8);
        assert_ok(genome_mutate(g, &m, &rng, &err), &err);
        assert_ok(genome_validate(g, NULL, &err), &err);
        size_t added = 0;
        for (size_t i = 0; i < g->n_conns; i++) {
            const struct genome_conn *c = &g->conns[i];
            if (genome_find_conn(parent, c->from, c->to) >= 0)
                continue;
            added++;
            assert_in_range(c->from, 100, 103);
            assert_true(c->to == 36 || c->to == 37 || c->to == 50);
            into_hidden += c->to == 50;
            if (m.preserve)
                assert_true(c->weight == 0.0f);
            else
                assert_true(c->weight != 0.0f);
        }
        /* 4 pixels x 3 targets, 3 taken; Binomial(6, 1) = 6 draws */
        assert_in_range(added, 1, 6);
        full += added == 6;
        genome_free(parent);
        genome_free(g);
    }
    assert_true(full >= 30);
    assert_true(into_hidden > 0);
}

/* The head grows no further than max_conns; it does not grow on a genome
 * without hidden channels (no pixels a head can read). */
static void test_genome_mutate_head_limits(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome_mutation m = {0};
    m.weight_init_sd = 1;
    m.add_head_per_conn = 1;
    m.limits.max_conns = 8;
    for (uint64_t seed = 0; seed < 10; seed++) {
        struct genome *g = head_genome();
        struct tv_rng rng = tu_rng(seed, 9, 0);
        assert_ok(genome_mutate(g, &m, &rng, &err), &err);
        assert_true(g->n_conns <= 8);
        genome_free(g);
    }
    /* channel 0 (the image) alone: its pixels are inputs, not a head's */
    static const char *const only_input = "trevo-net 4\n"
                                          "inputs 36\n"
                                          "outputs 2\n"
                                          "neuron 36 out 1 identity 0\n"
                                          "neuron 37 out 1 sigmoid 0.5\n"
                                          "conn 5 36 0.125\n"
                                          "channel 0 in 6 6 1 0 identity 0 0\n";
    struct genome g;
    genome_init(&g);
    assert_ok(read_text(&g, only_input, &err), &err);
    m.limits.max_conns = 0;
    struct tv_rng rng = tu_rng(1, 9, 1);
    assert_ok(genome_mutate(&g, &m, &rng, &err), &err);
    assert_int_equal(g.n_conns, 1);
    genome_release(&g);
}

/* del_conn_per_conn removes connections of a genome with channels too (the
 * channels, filters and coefficients stay): all at 1, some at 0.5. */
static void test_genome_mutate_head_shrinks(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome_mutation m = {0};
    m.del_conn_per_conn = 1;
    struct genome *g = head_genome();
    struct tv_rng rng = tu_rng(3, 0, 0);
    assert_ok(genome_mutate(g, &m, &rng, &err), &err);
    assert_int_equal(g->n_conns, 0);
    assert_int_equal(g->n_channels, 3);
    assert_int_equal(g->n_coefs, 6);
    assert_ok(genome_validate(g, NULL, &err), &err);
    genome_free(g);
    size_t removed = 0;
    m.del_conn_per_conn = 0.5;
    for (uint64_t seed = 0; seed < 20; seed++) {
        g = head_genome();
        rng = tu_rng(seed, 0, 1);
        assert_ok(genome_mutate(g, &m, &rng, &err), &err);
        assert_ok(genome_validate(g, NULL, &err), &err);
        removed += 6 - g->n_conns;
        genome_free(g);
    }
    assert_in_range(removed, 30, 90); /* 60 expected of 120 */
}

static void test_genome_mutate_conv_perturbs_coefficients(void **state)
{
    (void)state;
    struct genome_mutation m = {0};
    m.weight_perturb_rate = 1;
    m.weight_perturb_sd = 0.5;
    struct genome *g = conv_genome(), *h = conv_genome();
    struct tv_rng rng = tu_rng(3, 0, 0);
    struct tv_error err = {0};
    assert_ok(genome_mutate(g, &m, &rng, &err), &err);
    for (size_t i = 0; i < g->n_coefs; i++)
        assert_true(g->coefs[i].w != h->coefs[i].w);
    assert_int_equal(g->n_coefs, h->n_coefs);
    genome_free(g);
    genome_free(h);
}

static void test_genome_crossover_conv_aligns_by_key(void **state)
{
    (void)state;
    struct genome *a = conv_genome(), *b = conv_genome(), *child = genome_new();
    struct tv_error err = {0};
    /* b: every coefficient 100 + its index, filter 2 -> 1 gone, a
     * coefficient (2, 2) added to 0 -> 2 */
    for (size_t i = 0; i < b->n_coefs; i++)
        b->coefs[i].w = 100.0f + (float)i;
    genome_remove_filter_at(b, 2);
    genome_remove_filter_at(b, 1);
    const struct genome_filter f = {.from = 0, .to = 2, .kh = 3, .kw = 3, .stride = 1, .pad = 1};
    const struct genome_coef c[3] = {{2, 2, 7.0f}, {1, 1, 5.0f}, {0, 2, 6.0f}};
    assert_ok(genome_add_filter(b, &f, c, 3, &err), &err);
    assert_ok(genome_validate(b, NULL, &err), &err);
    size_t from_b = 0;
    for (uint64_t seed = 0; seed < 16; seed++) {
        struct tv_rng rng = tu_rng(seed, 0, 0);
        assert_ok(genome_crossover(child, a, b, &rng, &err), &err);
        assert_ok(genome_validate(child, NULL, &err), &err);
        /* fitter a's structure */
        assert_int_equal(child->n_filters, 3);
        assert_int_equal(child->n_coefs, 6);
        for (size_t i = 0; i < 3; i++) /* 0 -> 1 matches coefficient by coefficient */
            assert_true(child->coefs[i].w == a->coefs[i].w ||
                        child->coefs[i].w == 100.0f + (float)i);
        /* 0 -> 2: (0, 2) and (1, 1) match b's 6 and 5; 2 -> 1 only in a */
        assert_true(child->coefs[3].w == a->coefs[3].w || child->coefs[3].w == 6.0f);
        assert_true(child->coefs[4].w == a->coefs[4].w || child->coefs[4].w == 5.0f);
        assert_true(child->coefs[5].w == a->coefs[5].w);
        from_b += child->coefs[3].w == 6.0f;
    }
    assert_true(from_b > 0 && from_b < 16);
    genome_free(a);
    genome_free(b);
    genome_free(child);
}

/* ---- allocation failures ----------------------------------------------- */

static void test_genome_conv_alloc_failures(void **state)
{
    struct genome *g = *state;
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(genome_encode(g, &buf, &err), &err);
    char *text = write_text(g);
    struct genome_mutation m = conv_mutation();
    for (int what = 0; what < 4; what++) {
        for (unsigned long k = 1;; k++) {
            struct genome *h = genome_new();
            assert_non_null(h);
            struct tv_rng rng = tu_rng(5, 0, 0);
            failalloc_arm(k);
            int rc = what == 0   ? genome_copy(h, g, &err)
                     : what == 1 ? genome_read_text(h, text, strlen(text), "t", NULL, &err)
                     : what == 2 ? genome_decode(h, buf.data, buf.len, NULL, &err)
                                 : genome_crossover(h, g, g, &rng, &err);
            int fired = failalloc_fired();
            failalloc_disarm();
            if (!fired) {
                assert_ok(rc, &err);
                assert_true(genome_equal(h, g));
                genome_free(h);
                break;
            }
            assert_int_equal(rc, TV_ENOMEM);
            assert_non_null(strstr(err.msg, "out of memory"));
            genome_free(h);
        }
    }
    /* mutation: fails cleanly or succeeds with a valid genome */
    for (unsigned long k = 1; k < 40; k++) {
        struct genome *h = conv_genome();
        struct tv_rng rng = tu_rng(11, k, 0);
        failalloc_arm(k);
        int rc = 0;
        for (int i = 0; i < 5 && !rc; i++)
            rc = genome_mutate(h, &m, &rng, &err);
        failalloc_disarm();
        if (rc)
            assert_int_equal(rc, TV_ENOMEM);
        genome_free(h);
    }
    free(text);
    tv_buf_free(&buf);
}

static void test_genome_write_dot_conv_channels_as_nodes(void **state)
{
    struct genome *g = *state;
    struct tv_buf b = {0};
    struct tv_error err = {0};
    assert_ok(genome_write_dot(g, "conv", &b, &err), &err);
    assert_ok(tv_buf_append(&b, "", 1), &err);
    const char *s = (const char *)b.data;
    static const char *const want[] = {
        "    c1 [label=\"channel 1\\n4x4\\nrelu\\npool 2: 2x2\\nb=0.1\", shape=box3d];\n",
        "    c0 -> c1 [label=\"3 of 3x3\", penwidth=2];\n",
        "    c1 -> n36 [label=\"2\", style=dotted];\n",
        "    c2 -> n37 [label=\"1\", style=dotted];\n", "    n5 -> n36 ["};
    tu_assert_has_all(s, want, sizeof want / sizeof want[0]);
    assert_null(strstr(s, "n100"));
    tv_buf_free(&b);
}

/* ---- plans ------------------------------------------------------------- */

/* The plan of g against the reference, `steps` steps of random inputs of a
 * batch (nn_step and, batched, nn_step_feature_major). */
static void check_plan(const struct genome *g, size_t batch, uint64_t seed)
{
    struct tv_error err = {0};
    struct nn_plan *p = NULL;
    struct nn_state *s = NULL, *sf = NULL;
    struct nn_reference *r = NULL;
    assert_ok(nn_plan_compile(g, NULL, &p, &err), &err);
    assert_ok(nn_state_new(p, batch, &s, &err), &err);
    assert_ok(nn_state_new(p, batch, &sf, &err), &err);
    assert_ok(nn_reference_new(g, batch, &r, &err), &err);
    size_t n_in = nn_plan_n_inputs(p), n_out = nn_plan_n_outputs(p);
    float *in = malloc(n_in * batch * sizeof *in), *fm = malloc(n_in * batch * sizeof *fm);
    float *a = malloc(n_out * batch * sizeof *a), *b = malloc(n_out * batch * sizeof *b);
    float *c = malloc(n_out * batch * sizeof *c);
    assert_true(in && fm && a && b && c);
    struct tv_rng rng = tu_rng(seed, 7, 7);
    for (int step = 0; step < 3; step++) {
        for (size_t k = 0; k < n_in * batch; k++)
            in[k] = (float)(2 * tv_rng_uniform(&rng) - 1);
        for (size_t bi = 0; bi < batch; bi++)
            for (size_t k = 0; k < n_in; k++)
                fm[k * batch + bi] = in[bi * n_in + k];
        nn_step(s, in, a);
        nn_reference_step(r, in, b);
        nn_step_feature_major(sf, fm, c);
        for (size_t bi = 0; bi < batch; bi++)
            for (size_t k = 0; k < n_out; k++) {
                float x = a[bi * n_out + k], y = b[bi * n_out + k], z = c[k * batch + bi];
                if (!(fabsf(x - y) <= 1e-5f * (1 + fabsf(y))) ||
                    !(fabsf(z - y) <= 1e-5f * (1 + fabsf(y))))
                    fail_msg("seed %llu batch %zu step %d sample %zu output %zu: plan %g, "
                             "feature-major %g, reference %g",
                             (unsigned long long)seed, batch, step, bi, k, (double)x, (double)z,
                             (double)y);
            }
    }
    TV_FREE_ALL(in, fm, a, b, c);
    nn_reference_free(r);
    nn_state_free(s);
    nn_state_free(sf);
    nn_plan_free(p);
}

static void test_nn_plan_conv_matches_reference(void **state)
{
    struct genome *g = *state;
    check_plan(g, 1, 0);
    check_plan(g, 5, 1);
    check_plan(g, 17, 2);
}

/* Random small convolutional genomes: the base grown and pruned by the
 * convolutional and the ordinary operators. */
static void test_nn_plan_conv_random_genomes_match_reference(void **state)
{
    (void)state;
    struct genome_mutation m = conv_mutation();
    m.conv.add_coef_rate = 1;
    struct tv_error err = {0};
    for (uint64_t seed = 0; seed < 12; seed++) {
        struct genome *g = conv_genome();
        struct tv_rng rng = tu_rng(seed, 3, 4);
        for (uint64_t k = 0; k < 5 + seed * 3; k++)
            assert_ok(genome_mutate(g, &m, &rng, &err), &err);
        check_plan(g, 1 + (seed % 3) * 7, seed);
        genome_free(g);
    }
}

static void test_nn_plan_conv_trainable_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct nn_plan *p = NULL;
    struct nn_opts o = {.trainable = 1};
    assert_error(nn_plan_compile(g, &o, &p, &err), &err, TV_EINVAL,
                 "nn_opts.trainable: a genome with channels");
    assert_null(p);
}

/* The paths that run plain triplets only refuse a genome with channels
 * (the int8 calibration takes one: test_qconv.c). */
static void test_nn_triplet_only_paths_refuse_channels(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct nn_trainer *t = NULL;
    struct nn_train_opts o = {0};
    o.lr = 0.1f;
    o.max_batch = 1;
    assert_error(nn_trainer_new(g, &o, &t, &err), &err, TV_EINVAL,
                 "nn_trainer_new: a genome with channels (convolutional) is not supported");
    struct tv_buf b = {0};
    assert_error(nn_net_export_c(g, "net", &b, &err), &err, TV_EINVAL,
                 "export: a genome with channels");
    tv_buf_free(&b);
}

/* Every allocation of compiling a conv plan and making its state may fail:
 * TV_ENOMEM, nothing left allocated. */
static void test_nn_plan_conv_alloc_failures(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    for (unsigned long k = 1;; k++) {
        struct nn_plan *p = NULL;
        struct nn_state *s = NULL;
        failalloc_track(1);
        size_t live = failalloc_live();
        failalloc_arm(k);
        int rc = nn_plan_compile(g, NULL, &p, &err);
        if (!rc)
            rc = nn_state_new(p, 3, &s, &err);
        int fired = failalloc_fired();
        failalloc_disarm();
        if (!fired) {
            assert_ok(rc, &err);
            nn_state_free(s);
            nn_plan_free(p);
            failalloc_track(0);
            break;
        }
        assert_int_equal(rc, TV_ENOMEM);
        nn_state_free(s);
        nn_plan_free(p);
        assert_int_equal(failalloc_live(), live);
        failalloc_track(0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        CONV_TEST(test_genome_read_text_conv_genes_in_order),
        cmocka_unit_test(test_genome_filter_out_geometry),
        cmocka_unit_test(test_genome_validate_conv_bad_genes_fail),
        cmocka_unit_test(test_genome_read_text_conv_lines_need_version_3),
        CONV_TEST(test_genome_validate_conv_feed_forward_head),
        CONV_TEST(test_genome_validate_conv_limits),
        CONV_TEST(test_genome_write_text_conv_round_trip),
        CONV_TEST(test_genome_encode_conv_round_trip),
        CONV_TEST(test_genome_format_version_without_channels_unchanged),
        CONV_TEST(test_genome_copy_equal_conv),
        cmocka_unit_test(test_genome_mutate_conv_keeps_valid),
        cmocka_unit_test(test_genome_mutate_conv_nothing_without_channels),
        cmocka_unit_test(test_genome_mutate_head_grows_from_deepest_pixels),
        cmocka_unit_test(test_genome_mutate_head_limits),
        cmocka_unit_test(test_genome_mutate_head_shrinks),
        cmocka_unit_test(test_genome_mutate_conv_perturbs_coefficients),
        cmocka_unit_test(test_genome_crossover_conv_aligns_by_key),
        CONV_TEST(test_genome_conv_alloc_failures),
        CONV_TEST(test_genome_write_dot_conv_channels_as_nodes),
        CONV_TEST(test_nn_plan_conv_matches_reference),
        cmocka_unit_test(test_nn_plan_conv_random_genomes_match_reference),
        CONV_TEST(test_nn_plan_conv_trainable_fails),
        CONV_TEST(test_nn_triplet_only_paths_refuse_channels),
        CONV_TEST(test_nn_plan_conv_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
