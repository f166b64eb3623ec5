/* test_genome_text.c -- genome/text.c (genome_write_text, genome_read_text):
 * round trips over random genomes through memory FILEs, what the reader
 * accepts (comments, blank lines, CRLF, any order, sparse ids), and every
 * failure with the line it must name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "genome.h"
#include "testutil.h"

/* The reference network; line numbers matter in the tests below.
 *  1 trevo-net 1
 *  2 inputs 2
 *  3 outputs 1
 *  4 neuron 0 in 0 identity 0
 *  5 neuron 1 in 0 identity 0
 *  6 neuron 2 out 1 sigmoid 0.5
 *  7 neuron 10 hid 0.5 tanh 0.125
 *  8 conn 0 10 1.5
 *  9 conn 1 10 -0.75
 * 10 conn 10 2 1
 */
#define HEAD "trevo-net 1\ninputs 2\noutputs 1\n"
#define NEURONS                                                                                    \
    "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\nneuron 2 out 1 sigmoid 0.5\n"             \
    "neuron 10 hid 0.5 tanh 0.125\n"
#define CONNS "conn 0 10 1.5\nconn 1 10 -0.75\nconn 10 2 1\n"
#define BASE HEAD NEURONS CONNS

static void reference(struct genome *g)
{
    struct tv_error err = {0};
    genome_reset(g);
    assert_ok(genome_add_neuron(g, 0, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 1, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 2, GENOME_OUTPUT, GENOME_ACT_SIGMOID, 0.5f, 1, &err), &err);
    assert_ok(genome_add_neuron(g, 10, GENOME_HIDDEN, GENOME_ACT_TANH, 0.125f, 0.5f, &err), &err);
    assert_ok(genome_add_conn(g, 0, 10, 1.5f, &err), &err);
    assert_ok(genome_add_conn(g, 1, 10, -0.75f, &err), &err);
    assert_ok(genome_add_conn(g, 10, 2, 1.0f, &err), &err);
}

/* Parses text (NUL-terminated; its strlen is the length) from an exact-size
 * heap copy named "t.txt". On failure g must be left empty. */
static int parse_lim(struct genome *g, const char *text, size_t len,
                     const struct genome_limits *lim, struct tv_error *err)
{
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    int rc = genome_read_text(g, copy, len, "t.txt", lim, err);
    free(copy);
    if (rc) {
        assert_int_equal(g->n_neurons, 0);
        assert_int_equal(g->n_conns, 0);
    }
    return rc;
}

static int parse(const char *text, struct tv_error *err)
{
    struct genome g;
    genome_init(&g);
    int rc = parse_lim(&g, text, strlen(text), NULL, err);
    genome_release(&g);
    return rc;
}

/* Parses text and checks that it is the reference network. */
static void parse_reference(const char *text)
{
    struct tv_error err = {0};
    struct genome g, want;
    genome_init(&g);
    genome_init(&want);
    reference(&want);
    assert_ok(parse_lim(&g, text, strlen(text), NULL, &err), &err);
    assert_true(genome_equal(&g, &want));
    genome_release(&g);
    genome_release(&want);
}

/* ---- writing, round trips ---------------------------------------------- */

static void test_genome_write_text_format(void **state)
{
    struct genome *g = *state;
    reference(g);
    size_t len;
    char *text = tu_text_of(g, &len);
    assert_string_equal(text, "# trevo network: 4 neurons, 3 connections\n" BASE);
    assert_int_equal(len, strlen(text));
    free(text);
}

static void test_genome_write_text_write_error_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    reference(g);
    FILE *f = fopen("/dev/null", "r"); /* not open for writing */
    assert_non_null(f);
    assert_error(genome_write_text(g, f, &err), &err, TV_EIO, "write error");
    fclose(f);
    /* A fixed memory buffer that is too small. */
    char small[16];
    f = fmemopen(small, sizeof small, "w");
    assert_non_null(f);
    setvbuf(f, NULL, _IONBF, 0);
    assert_error(genome_write_text(g, f, &err), &err, TV_EIO, "write error");
    fclose(f);
}

static void test_genome_read_text_reads_reference(void **state)
{
    (void)state;
    parse_reference(BASE);
    /* The writer's output, comment line included. */
    parse_reference("# trevo network: 4 neurons, 3 connections\n" BASE);
}

static void test_genome_read_text_round_trip_random_genomes(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(201, 0, 0);
    static char fixed[1 << 16];
    for (int t = 0; t < 2000; t++) {
        tu_random_genome(a, &r, 25);
        if (t % 2)
            tu_spice_floats(a, &r);
        assert_ok(genome_validate(a, NULL, &err), &err);
        size_t len;
        char *text = tu_text_of(a, &len);
        assert_ok(parse_lim(b, text, len, NULL, &err), &err);
        if (!genome_equal(a, b))
            print_error("round trip differs for:\n%s\n", text);
        assert_true(genome_equal(a, b));
        free(text);
        /* The same through fmemopen into a fixed buffer. */
        FILE *f = fmemopen(fixed, sizeof fixed, "w");
        assert_non_null(f);
        assert_ok(genome_write_text(a, f, &err), &err);
        long n = ftell(f);
        assert_true(n > 0 && (size_t)n < sizeof fixed);
        fclose(f);
        assert_ok(parse_lim(b, fixed, (size_t)n, NULL, &err), &err);
        assert_true(genome_equal(a, b));
    }
}

static void test_genome_read_text_round_trip_odd_floats(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    const char *text = HEAD "neuron 0 in -0 identity -0\nneuron 1 in 0 step 1e-45\n"
                            "neuron 2 out 1 sigmoid 3.40282347e+38\n"
                            "neuron 10 hid -0 tanh -1.17549435e-38\n"
                            "conn 0 10 0x1.8p1\nconn 1 10 1e-50\nconn 10 2 -3.40282347e+38\n"
                            "conn 10 10 0.100000001\n";
    assert_ok(parse_lim(a, text, strlen(text), NULL, &err), &err);
    assert_true(a->neurons[3].depth == 0.0f && signbit(a->neurons[3].depth));
    assert_true(a->conns[0].weight == 3.0f);
    assert_true(a->conns[1].weight == 0.0f);
    size_t len;
    char *out = tu_text_of(a, &len);
    assert_ok(parse_lim(b, out, len, NULL, &err), &err);
    assert_true(genome_equal(a, b));
    free(out);
}

/* ---- what the reader accepts -------------------------------------------- */

static void test_genome_read_text_comments_blank_crlf_accepted(void **state)
{
    (void)state;
    parse_reference("# a network\n\n   \n\t# indented comment\ntrevo-net 1 # the header\n"
                    "inputs 2\r\noutputs 1\r\n\r\n"
                    "neuron 0 in 0 identity 0\r\n"
                    "  neuron\t1   in 0 identity 0   # trailing\n"
                    "neuron 2 out 1 sigmoid 0.5#no space\n"
                    "neuron 10 hid 0.5 tanh 0.125\n"
                    "conn 0 10 1.5\nconn 1 10 -0.75\n# the last one\nconn 10 2 1");
}

static void test_genome_read_text_any_order_accepted(void **state)
{
    (void)state;
    parse_reference("trevo-net 1\nconn 10 2 1\nneuron 10 hid 0.5 tanh 0.125\noutputs 1\n"
                    "conn 1 10 -0.75\nneuron 2 out 1 sigmoid 0.5\nconn 0 10 1.5\n"
                    "neuron 1 in 0 identity 0\ninputs 2\nneuron 0 in 0 identity 0\n");
}

static void test_genome_read_text_noncontiguous_ids_accepted(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    const char *text = HEAD "neuron 4294967294 in 0 identity 0\nneuron 7 in 0 identity 0\n"
                            "neuron 1000000 out 1 relu 0\nneuron 3000000000 hid 0.25 abs 0\n"
                            "conn 4294967294 3000000000 1\nconn 3000000000 1000000 1\n"
                            "conn 7 1000000 1\n";
    assert_ok(parse_lim(g, text, strlen(text), NULL, &err), &err);
    assert_int_equal(g->n_neurons, 4);
    assert_int_equal(g->neurons[0].id, 7);
    assert_int_equal(g->neurons[3].id, 4294967294u);
    assert_int_equal(g->conns[0].from, 7);
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_genome_read_text_name_null_uses_placeholder(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    assert_error(genome_read_text(g, "bogus", 5, NULL, NULL, &err), &err, TV_EFORMAT, "<text>:1:");
}

/* ---- failures, each naming its line -------------------------------------- */

/* text (as "t.txt") is refused with code, and the message holds want. */
static void refused(const char *text, int code, const char *want)
{
    struct tv_error err = {0};
    assert_error(parse(text, &err), &err, code, want);
}

static void test_genome_read_text_missing_header_fails(void **state)
{
    (void)state;
    refused("inputs 2\noutputs 1\n" NEURONS CONNS, TV_EFORMAT,
            "t.txt:1: not a trevo network (expected 'trevo-net 1')");
    refused("# c\n\n  \ntrevo-network 1\n", TV_EFORMAT, "t.txt:4: not a trevo network");
    refused("trevo-net\n", TV_EFORMAT, "t.txt:1: not a trevo network");
    refused("trevo-net 1 1\n", TV_EFORMAT, "t.txt:1: not a trevo network");
    refused("", TV_EFORMAT, "t.txt: empty");
    refused("# only a comment\n\n", TV_EFORMAT, "t.txt: empty");
}

static void test_genome_read_text_wrong_version_fails(void **state)
{
    (void)state;
    refused("trevo-net 7\n" NEURONS, TV_EFORMAT,
            "t.txt:1: format version '7', this program reads 1 to 6");
    refused("\ntrevo-net 01\n", TV_EFORMAT, "t.txt:2: format version '01'");
    refused("trevo-net 1.0\n", TV_EFORMAT, "version '1.0'");
}

static void test_genome_read_text_unknown_keyword_fails(void **state)
{
    (void)state;
    refused(HEAD NEURONS "connection 0 10 1\n", TV_EINVAL,
            "t.txt:8: unknown line (expected inputs, outputs, neuron or conn): 'connection'");
    refused(HEAD "trevo-net 1\n", TV_EINVAL, "t.txt:4: unknown line");
    refused(HEAD "Neuron 0 in 0 identity 0\n", TV_EINVAL, "t.txt:4: unknown line");
}

static void test_genome_read_text_bad_kind_fails(void **state)
{
    (void)state;
    refused(HEAD "neuron 0 in 0 identity 0\nneuron 5 mid 0.5 tanh 0\n", TV_EINVAL,
            "t.txt:5: neuron kind must be in, out or hid: 'mid'");
    refused(HEAD "neuron 5 IN 0 identity 0\n", TV_EINVAL, "t.txt:4: neuron kind");
}

static void test_genome_read_text_bad_activation_fails(void **state)
{
    (void)state;
    refused(HEAD "\n\nneuron 5 hid 0.5 tanhh 0\n", TV_EINVAL,
            "t.txt:6: unknown activation: 'tanhh'");
    refused(HEAD "neuron 5 hid 0.5 2 0\n", TV_EINVAL, "t.txt:4: unknown activation: '2'");
}

static void test_genome_read_text_nonfinite_numbers_fail(void **state)
{
    (void)state;
    refused(HEAD "neuron 5 hid nan tanh 0\n", TV_EINVAL,
            "t.txt:4: depth is not a finite number: 'nan'");
    refused(HEAD NEURONS "neuron 5 hid 0.5 tanh inf\n", TV_EINVAL,
            "t.txt:8: bias is not a finite number: 'inf'");
    refused(HEAD NEURONS "conn 0 10 -INFINITY\n", TV_EINVAL,
            "t.txt:8: weight is not a finite number");
    /* Overflows float: inf. */
    refused(HEAD NEURONS "conn 0 10 1e39\n", TV_EINVAL,
            "t.txt:8: weight is not a finite number: '1e39'");
    refused(HEAD NEURONS "conn 0 10 NaN(123)\n", TV_EINVAL,
            "t.txt:8: weight is not a finite number");
}

static void test_genome_read_text_unparsable_numbers_fail(void **state)
{
    (void)state;
    refused(HEAD NEURONS "conn 0 10 1.5x\n", TV_EINVAL, "t.txt:8: weight: '1.5x'");
    refused(HEAD NEURONS "conn 0 10 -\n", TV_EINVAL, "t.txt:8: weight: '-'");
    refused(HEAD "neuron 5 hid 0.5.1 tanh 0\n", TV_EINVAL, "t.txt:4: depth: '0.5.1'");
    refused(HEAD "neuron 5 hid 0.5 tanh zero\n", TV_EINVAL, "t.txt:4: bias: 'zero'");
    refused(HEAD "neuron x5 hid 0.5 tanh 0\n", TV_EINVAL,
            "t.txt:4: neuron id is not an integer below 4294967295: 'x5'");
    refused(HEAD "neuron -1 hid 0.5 tanh 0\n", TV_EINVAL, "t.txt:4: neuron id is not an integer");
    refused(HEAD "neuron 1.0 hid 0.5 tanh 0\n", TV_EINVAL, "t.txt:4: neuron id is not an integer");
    refused(HEAD "neuron +1 hid 0.5 tanh 0\n", TV_EINVAL, "t.txt:4: neuron id is not an integer");
    refused(HEAD NEURONS "conn a 10 1\n", TV_EINVAL,
            "t.txt:8: connection source is not a neuron id: 'a'");
    refused(HEAD NEURONS "conn 0 1e1 1\n", TV_EINVAL,
            "t.txt:8: connection target is not a neuron id: '1e1'");
    refused("trevo-net 1\ninputs two\n", TV_EINVAL,
            "t.txt:2: count is not a non-negative integer: 'two'");
    refused("trevo-net 1\noutputs -1\n", TV_EINVAL, "t.txt:2: count");
    /* A 100,000-character number: refused, and the message stays short. */
    struct tv_error err = {0};
    size_t n = 100000;
    char *text = malloc(n + 100);
    strcpy(text, HEAD "conn 0 10 ");
    size_t h = strlen(text);
    memset(text + h, '1', n);
    strcpy(text + h + n, "\n");
    assert_error(parse(text, &err), &err, TV_EINVAL, "t.txt:4: weight: '1111");
    assert_true(strlen(err.msg) < 200);
    free(text);
}

static void test_genome_read_text_depth_out_of_range_fails(void **state)
{
    (void)state;
    refused(HEAD "neuron 5 hid 1.5 tanh 0\n", TV_EINVAL, "t.txt:4: depth must be in [0, 1]: '1.5'");
    refused(HEAD "neuron 5 hid -0.1 tanh 0\n", TV_EINVAL,
            "t.txt:4: depth must be in [0, 1]: '-0.1'");
    refused(HEAD "neuron 5 hid 1.0000001 tanh 0\n", TV_EINVAL, "t.txt:4: depth must be in [0, 1]");
    refused(HEAD "\nneuron 0 in 0.5 identity 0\n", TV_EINVAL,
            "t.txt:5: an input neuron must have depth 0: '0.5'");
    refused(HEAD "neuron 2 out 0.9 sigmoid 0\n", TV_EINVAL,
            "t.txt:4: an output neuron must have depth 1: '0.9'");
}

static void test_genome_read_text_duplicate_neuron_fails(void **state)
{
    (void)state;
    /* Line 5 and line 9 both define neuron 1: the message names both. */
    refused(BASE "\n# dup\nneuron 1 hid 0.5 relu 0\n", TV_EINVAL,
            "t.txt:13: neuron 1 already defined on line 5");
    refused(HEAD "neuron 0 in 0 identity 0\nneuron 0 in 0 identity 0\nconn 0 2 1\n", TV_EINVAL,
            "t.txt:5: neuron 0 already defined on line 4");
}

static void test_genome_read_text_duplicate_conn_fails(void **state)
{
    (void)state;
    refused(BASE "conn 1 10 3\n", TV_EINVAL,
            "t.txt:11: connection 1 -> 10 already defined on line 9");
    /* The duplicate listed first, in a file in any order. */
    refused("trevo-net 1\nconn 10 2 4\n"
            "inputs 2\noutputs 1\n" NEURONS CONNS,
            TV_EINVAL, "t.txt:11: connection 10 -> 2 already defined on line 2");
}

static void test_genome_read_text_undefined_neuron_fails(void **state)
{
    (void)state;
    refused(BASE "conn 10 99 1\n", TV_EINVAL,
            "t.txt:11: connection 10 -> 99: neuron 99 is not defined");
    refused(HEAD "conn 98 2 1\n" NEURONS, TV_EINVAL,
            "t.txt:4: connection 98 -> 2: neuron 98 is not defined");
}

static void test_genome_read_text_conn_into_input_fails(void **state)
{
    (void)state;
    refused(BASE "conn 10 1 1\n", TV_EINVAL, "t.txt:11: connection 10 -> 1 ends in input neuron 1");
    refused(BASE "conn 0 0 1\n", TV_EINVAL, "t.txt:11: connection 0 -> 0 ends in input neuron 0");
}

static void test_genome_read_text_wrong_field_count_fails(void **state)
{
    (void)state;
    refused("trevo-net 1 a b c d e f g h i j k l m n o\n", TV_EINVAL, "t.txt:1: too many fields");
    refused(BASE "conn 0 2 1 2 3 4 5 6 7 8 9 10 11 12 13 14\n", TV_EINVAL,
            "t.txt:11: too many fields");
    refused(BASE "conn 0 2\n", TV_EINVAL, "t.txt:11: expected 'conn FROM TO WEIGHT'");
    refused(BASE "conn 0 2 1 1\n", TV_EINVAL, "t.txt:11: expected 'conn FROM TO WEIGHT'");
    refused(HEAD "neuron 5 hid 0.5 tanh\n", TV_EINVAL,
            "t.txt:4: expected 'neuron ID in|out|hid DEPTH ACTIVATION BIAS'");
    refused("trevo-net 1\ninputs\n", TV_EINVAL, "t.txt:2: expected 'inputs COUNT'");
    refused("trevo-net 1\noutputs 1 2\n", TV_EINVAL, "t.txt:2: expected 'outputs COUNT'");
    refused(HEAD "inputs 2\n", TV_EINVAL, "t.txt:4: 'inputs' given twice");
}

static void test_genome_read_text_id_too_large_fails(void **state)
{
    (void)state;
    refused(HEAD "neuron 4294967295 hid 0.5 tanh 0\n", TV_EINVAL,
            "t.txt:4: neuron id is not an integer below 4294967295: '4294967295'");
    refused(HEAD "neuron 4294967296 hid 0.5 tanh 0\n", TV_EINVAL,
            "t.txt:4: neuron id is not an integer below 4294967295");
    refused(HEAD "neuron 18446744073709551617 hid 0.5 tanh 0\n", TV_EINVAL, "t.txt:4: neuron id");
    refused(BASE "conn 4294967295 2 1\n", TV_EINVAL,
            "t.txt:11: connection source is not a neuron id: '4294967295'");
    refused(BASE "conn 0 99999999999999999999999999999999999999 1\n", TV_EINVAL,
            "t.txt:11: connection target is not a neuron id");
    refused("trevo-net 1\ninputs 4294967295\n", TV_EINVAL, "t.txt:2:");
}

static void test_genome_read_text_missing_count_line_fails(void **state)
{
    (void)state;
    refused("trevo-net 1\noutputs 1\n" NEURONS CONNS, TV_EINVAL,
            "t.txt: missing 'inputs COUNT' line");
    refused("trevo-net 1\ninputs 2\n" NEURONS CONNS, TV_EINVAL,
            "t.txt: missing 'outputs COUNT' line");
}

static void test_genome_read_text_no_input_or_output_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_error(parse("trevo-net 1\ninputs 0\noutputs 1\nneuron 2 out 1 relu 0\n", &err), &err,
                 TV_EINVAL, "no input neuron");
    assert_msg_has(&err, "t.txt");
    assert_error(parse("trevo-net 1\ninputs 1\noutputs 0\nneuron 2 in 0 relu 0\n", &err), &err,
                 TV_EINVAL, "no output neuron");
}

static void test_genome_read_text_nul_byte_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    const char text[] = HEAD "neuron 0 in 0\0 identity 0\n";
    assert_error(parse_lim(g, text, sizeof text - 1, NULL, &err), &err, TV_EINVAL,
                 "t.txt:4: NUL byte");
}

static void test_genome_read_text_limits_exceeded_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct genome_limits few_neurons = {3, 100};
    assert_error(parse_lim(g, BASE, strlen(BASE), &few_neurons, &err), &err, TV_ELIMIT,
                 "t.txt:7: more than 3 neurons");
    struct genome_limits few_conns = {100, 2};
    assert_error(parse_lim(g, BASE, strlen(BASE), &few_conns, &err), &err, TV_ELIMIT,
                 "t.txt:10: more than 2 connections");
    struct genome_limits exact = {4, 3};
    assert_ok(parse_lim(g, BASE, strlen(BASE), &exact, &err), &err);
}

/* The header's counts disagree with the neurons listed: the message gives
 * both counts and, like every other error of a file, the line (here the
 * 'inputs' line, 2, whose count is wrong). */
static void test_genome_read_text_header_counts_mismatch_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_error(parse("trevo-net 1\ninputs 3\noutputs 1\n" NEURONS CONNS, &err), &err, TV_EINVAL,
                 "3 inputs");
    assert_msg_has(&err, "2 input");
    assert_error(parse("trevo-net 1\ninputs 2\noutputs 2\n" NEURONS CONNS, &err), &err, TV_EINVAL,
                 "2 outputs");
    assert_msg_has(&err, "t.txt:3:");
    assert_error(parse("trevo-net 1\ninputs 3\noutputs 1\n" NEURONS CONNS, &err), &err, TV_EINVAL,
                 "t.txt:2:");
}

/* Random mutations of valid text: parsed or refused, never a crash, and
 * whatever parses is valid and survives a second round trip. */
static void test_genome_read_text_mangled_text_never_crashes(void **state)
{
    TU_TRIO_GENOMES(a, b, c);
    struct tv_rng r = tu_rng(202, 0, 0);
    static const char junk[] = " \t\r\n#0123456789.-+eEx\0aqz";
    int accepted = 0;
    for (int t = 0; t < 300; t++) {
        tu_random_genome(a, &r, 6);
        size_t len;
        char *text = tu_text_of(a, &len);
        for (int k = 0; k < 20; k++) {
            char *m = malloc(len);
            memcpy(m, text, len);
            int edits = 1 + (int)tv_rng_below(&r, 3);
            for (int e = 0; e < edits; e++)
                m[tv_rng_below(&r, (uint32_t)len)] = junk[tv_rng_below(&r, sizeof junk - 1)];
            size_t mlen = tv_rng_chance(&r, 0.2) ? tv_rng_below(&r, (uint32_t)len + 1) : len;
            struct tv_error err = {0};
            int rc = genome_read_text(b, m, mlen, "m", NULL, &err);
            if (rc == 0) {
                accepted++;
                assert_ok(genome_validate(b, NULL, &err), &err);
                size_t len2;
                char *t2 = tu_text_of(b, &len2);
                assert_ok(genome_read_text(c, t2, len2, "m2", NULL, &err), &err);
                assert_true(genome_equal(b, c));
                free(t2);
            } else {
                assert_int_equal(err.code, rc);
                assert_true(strncmp(err.msg, "m", 1) == 0);
            }
            free(m);
        }
        free(text);
    }
    assert_true(accepted > 100);
}

/* A network without connections is valid (mutation can delete them all);
 * reading it must not hand qsort a NULL array (undefined behaviour, which
 * the sanitizer build turns into an abort). Listed last in main() because
 * of that abort. */
static void test_genome_read_text_no_connections_accepted(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    const char *text = HEAD "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\n"
                            "neuron 2 out 1 sigmoid 0.5\n";
    assert_ok(parse_lim(g, text, strlen(text), NULL, &err), &err);
    assert_int_equal(g->n_neurons, 3);
    assert_int_equal(g->n_conns, 0);
}

/* ---- format version 2: models ---------------------------------------- */

#define HEAD2 "trevo-net 2\ninputs 2\noutputs 1\n"
#define IO2 "neuron 0 in 0 identity 0\nneuron 1 in 0 identity 0\nneuron 2 out 1 sigmoid 0.5\n"
#define LIF_LINE                                                                                   \
    "neuron 10 hid 0.5 tanh 0.125 lif threshold=0.5 decay=0.75 reset=-0.25 refractory=2\n"

/* reference() with neuron 10 the LIF neuron of LIF_LINE */
static void reference_lif(struct genome *g)
{
    reference(g);
    struct genome_neuron *n = &g->neurons[3];
    genome_neuron_set_model(n, GENOME_MODEL_LIF);
    n->param[0] = 0.5f;
    n->param[1] = 0.75f;
    n->param[2] = -0.25f;
    n->param[3] = 2.0f;
}

static void test_genome_write_text_lif_writes_version_2(void **state)
{
    struct tu_pair *t = *state;
    reference_lif(&t->a);
    size_t len;
    char *text = tu_text_of(&t->a, &len);
    assert_string_equal(text,
                        "# trevo network: 4 neurons, 3 connections\n" HEAD2 IO2 LIF_LINE CONNS);
    assert_ok(parse_lim(&t->b, text, len, NULL, &t->err), &t->err);
    assert_true(genome_equal(&t->a, &t->b));
    free(text);
}

static void test_genome_read_text_version_2_any_order_and_defaults(void **state)
{
    struct tu_pair *t = *state;
    reference_lif(&t->b);
    const char *text = HEAD2 IO2 "neuron 10 hid 0.5 tanh 0.125 lif refractory=2 reset=-0.25 "
                                 "decay=0.75 threshold=0.5\n" CONNS;
    assert_ok(parse_lim(&t->a, text, strlen(text), NULL, &t->err), &t->err);
    assert_true(genome_equal(&t->a, &t->b));
    /* parameters left out take their defaults; "rate" may be named */
    text = HEAD2 IO2 "neuron 10 hid 0.5 tanh 0.125 lif decay=0.75\n" CONNS;
    assert_ok(parse_lim(&t->a, text, strlen(text), NULL, &t->err), &t->err);
    genome_neuron_set_model(&t->b.neurons[3], GENOME_MODEL_LIF);
    t->b.neurons[3].param[1] = 0.75f;
    assert_true(genome_equal(&t->a, &t->b));
    text = HEAD2 IO2 "neuron 10 hid 0.5 tanh 0.125 rate\n" CONNS;
    assert_ok(parse_lim(&t->a, text, strlen(text), NULL, &t->err), &t->err);
    reference(&t->b);
    assert_true(genome_equal(&t->a, &t->b));
    /* a version 2 file of rate neurons reads as the version 1 file */
    parse_reference(HEAD2 NEURONS CONNS);
}

static void test_genome_read_text_bad_model_or_parameter_fails(void **state)
{
    (void)state;
#define L7 HEAD2 IO2 "neuron 10 hid 0.5 tanh 0.125 "
    refused(L7 "izhikevich\n" CONNS, TV_EINVAL, "t.txt:7: unknown neuron model: 'izhikevich'");
    refused(L7 "lif gain=2\n" CONNS, TV_EINVAL,
            "t.txt:7: expected NAME=VALUE with a parameter of the model: 'gain=2'");
    refused(L7 "lif threshold\n" CONNS, TV_EINVAL,
            "t.txt:7: expected NAME=VALUE with a parameter of the model: 'threshold'");
    refused(L7 "rate decay=1\n" CONNS, TV_EINVAL,
            "t.txt:7: expected NAME=VALUE with a parameter of the model: 'decay=1'");
    refused(L7 "lif decay=0.5 decay=0.5\n" CONNS, TV_EINVAL,
            "t.txt:7: parameter given twice: 'decay=0.5'");
    refused(L7 "lif decay=x\n" CONNS, TV_EINVAL, "t.txt:7: decay: 'x'");
    refused(L7 "lif decay=\n" CONNS, TV_EINVAL, "t.txt:7: decay: ''");
    refused(L7 "lif decay=1.5\n" CONNS, TV_EINVAL, "t.txt:7: lif decay 1.5 is outside [0, 1]");
    refused(L7 "lif refractory=0.5\n" CONNS, TV_EINVAL,
            "t.txt:7: lif refractory 0.5 is not a whole number");
    refused(L7 "lif threshold=1 decay=1 reset=0 refractory=0 a b c d e\n" CONNS, TV_EINVAL,
            "t.txt:7: too many fields");
#undef L7
    /* version 1 has no model field */
    refused(HEAD NEURONS "neuron 11 hid 0.5 tanh 0 lif\n", TV_EINVAL,
            "t.txt:8: expected 'neuron ID in|out|hid DEPTH ACTIVATION BIAS'");
    refused(HEAD2 "neuron 11 hid 0.5 tanh\n", TV_EINVAL,
            "t.txt:4: expected 'neuron ID in|out|hid DEPTH ACTIVATION BIAS [MODEL "
            "NAME=VALUE...]'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_GENOME_TEST(test_genome_write_text_format),
        TU_GENOME_TEST(test_genome_write_text_write_error_fails),
        cmocka_unit_test(test_genome_read_text_reads_reference),
        TU_PAIR_TEST(test_genome_read_text_round_trip_odd_floats),
        cmocka_unit_test(test_genome_read_text_comments_blank_crlf_accepted),
        cmocka_unit_test(test_genome_read_text_any_order_accepted),
        TU_GENOME_TEST(test_genome_read_text_noncontiguous_ids_accepted),
        TU_GENOME_TEST(test_genome_read_text_name_null_uses_placeholder),
        cmocka_unit_test(test_genome_read_text_missing_header_fails),
        cmocka_unit_test(test_genome_read_text_wrong_version_fails),
        cmocka_unit_test_setup_teardown(test_genome_write_text_lif_writes_version_2, tu_pair_setup,
                                        tu_pair_teardown),
        cmocka_unit_test_setup_teardown(test_genome_read_text_version_2_any_order_and_defaults,
                                        tu_pair_setup, tu_pair_teardown),
        cmocka_unit_test(test_genome_read_text_bad_model_or_parameter_fails),
        cmocka_unit_test(test_genome_read_text_unknown_keyword_fails),
        cmocka_unit_test(test_genome_read_text_bad_kind_fails),
        cmocka_unit_test(test_genome_read_text_bad_activation_fails),
        cmocka_unit_test(test_genome_read_text_nonfinite_numbers_fail),
        cmocka_unit_test(test_genome_read_text_unparsable_numbers_fail),
        cmocka_unit_test(test_genome_read_text_depth_out_of_range_fails),
        cmocka_unit_test(test_genome_read_text_duplicate_neuron_fails),
        cmocka_unit_test(test_genome_read_text_duplicate_conn_fails),
        cmocka_unit_test(test_genome_read_text_undefined_neuron_fails),
        cmocka_unit_test(test_genome_read_text_conn_into_input_fails),
        cmocka_unit_test(test_genome_read_text_wrong_field_count_fails),
        cmocka_unit_test(test_genome_read_text_id_too_large_fails),
        cmocka_unit_test(test_genome_read_text_missing_count_line_fails),
        TU_GENOME_TEST(test_genome_read_text_nul_byte_fails),
        TU_GENOME_TEST(test_genome_read_text_limits_exceeded_fails),
        cmocka_unit_test(test_genome_read_text_header_counts_mismatch_fails),
        /* These read networks without connections: see the last test. */
        TU_PAIR_TEST(test_genome_read_text_round_trip_random_genomes),
        cmocka_unit_test(test_genome_read_text_no_input_or_output_fails),
        TU_TRIO_TEST(test_genome_read_text_mangled_text_never_crashes),
        TU_GENOME_TEST(test_genome_read_text_no_connections_accepted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
