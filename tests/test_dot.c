/* test_dot.c -- genome/dot.c: the Graphviz drawing of a network. Every
 * connection is one edge line whose style says its kind exactly as
 * genome_stats() counts it (checked on a fixed genome and on random ones),
 * neurons sit on the ranks of their kind and depth, titles are escaped, and
 * invalid genomes and unwritable paths are refused with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "genome.h"
#include "testutil.h"

/* The dot text of g (with title), NUL-terminated, malloc'd. */
static char *dot_of(const struct genome *g, const char *title)
{
    struct tv_buf b = {0};
    struct tv_error err = {0};
    assert_ok(genome_write_dot(g, title, &b, &err), &err);
    assert_ok(tv_buf_append(&b, "", 1), NULL);
    return (char *)b.data;
}

/* The line that starts (after indentation) with prefix, or NULL. Copied into
 * line[size]. */
static const char *line_of(const char *text, const char *prefix, char *line, size_t size)
{
    size_t n = strlen(prefix);
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *q = p;
        while (*q == ' ')
            q++;
        if (!strncmp(q, prefix, n)) {
            snprintf(line, size, "%.*s", (int)len, p);
            return line;
        }
        p += len + (end != NULL);
    }
    return NULL;
}

/* The line of text that starts with prefix must contain want. */
static void expect_line_has(const char *text, const char *prefix, const char *want)
{
    char line[512];
    if (!line_of(text, prefix, line, sizeof line))
        fail_msg("no line starts with '%s'", prefix);
    if (!strstr(line, want))
        fail_msg("line '%s' lacks '%s'", line, want);
}

/* Edge lines by kind, told apart by their style alone. */
struct edge_counts {
    size_t edges, local, skip, recurrent, arrows, same_ranks;
};

static struct edge_counts count_edges(const char *text)
{
    struct edge_counts c = {0};
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        unsigned a, b;
        char bracket;
        if (strstr(line, "->"))
            c.arrows++;
        if (strstr(line, "rank=same"))
            c.same_ranks++;
        if (sscanf(line, " n%u -> n%u %c", &a, &b, &bracket) == 3 && bracket == '[') {
            c.edges++;
            int dashed = strstr(line, "style=dashed") != NULL;
            int rec = strstr(line, "constraint=false") != NULL;
            assert_false(dashed && rec);
            if (rec)
                assert_non_null(strstr(line, "color=\"#c0392b\""));
            c.skip += (size_t)dashed;
            c.recurrent += (size_t)rec;
            c.local += (size_t)(!dashed && !rec);
        }
        p += len + (end != NULL);
    }
    return c;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_genome_write_dot_small_genome_styles(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    char *text = dot_of(g, NULL);
    assert_true(!strncmp(text, "digraph trevo {\n", 16));
    assert_true(strlen(text) > 2 && !strcmp(text + strlen(text) - 2, "}\n"));
    struct edge_counts c = count_edges(text);
    /* 0->10 1->10 10->11 11->2 local; 0->2 0->11 skip; 2->10 10->10 recurrent */
    assert_int_equal(c.edges, 8);
    assert_int_equal(c.arrows, 8);
    assert_int_equal(c.local, 4);
    assert_int_equal(c.skip, 2);
    assert_int_equal(c.recurrent, 2);
    expect_line_has(text, "n0 -> n2 [", "style=dashed");
    expect_line_has(text, "n0 -> n2 [", "label=\"2\"");
    expect_line_has(text, "n10 -> n10 [", "constraint=false");
    expect_line_has(text, "n2 -> n10 [", "constraint=false");
    char line[512];
    assert_non_null(line_of(text, "n10 -> n11 [", line, sizeof line));
    assert_null(strstr(line, "dashed"));
    assert_null(strstr(line, "constraint"));
    /* the largest |weight| (2) gets the widest pen */
    expect_line_has(text, "n0 -> n2 [", "penwidth=3.00");
    /* neurons: id, activation, bias when not 0; inputs first, output last */
    expect_line_has(text, "n10 [", "label=\"10\\ntanh\\nb=0.125\"");
    expect_line_has(text, "n0 [", "label=\"0\\nidentity\"");
    const char *src = strstr(text, "rank=source"), *sink = strstr(text, "rank=sink");
    assert_non_null(src);
    assert_non_null(sink);
    const char *n0 = strstr(text, "    n0 ["), *n1 = strstr(text, "    n1 [");
    const char *n2 = strstr(text, "    n2 [");
    assert_true(src < n0 && n0 < sink && src < n1 && n1 < sink && sink < n2);
    assert_int_equal(c.same_ranks, 2); /* hidden depths 0.5 and 0.75 */
    free(text);
}

/* A neuron of another model shows the model and each parameter. */
static void test_genome_write_dot_lif_neuron_shows_parameters(void **state)
{
    struct genome *g = *state;
    tu_lif_genome(g);
    char *text = dot_of(g, NULL);
    expect_line_has(text, "n10 [",
                    "label=\"10\\ntanh\\nb=0.125\\nlif\\nthreshold=0.5\\ndecay=0."
                    "75\\nreset=-0.25\\nrefractory=2\"");
    expect_line_has(text, "n11 [", "label=\"11\\nrelu\\nb=-0.25\"");
    free(text);
}

/* The drawing's kinds agree with genome_stats() on a thousand random
 * genomes (layered, skip, recurrent, split-made hidden neurons). */
static void test_genome_write_dot_random_genomes_match_stats(void **state)
{
    struct genome *g = *state;
    struct tv_rng rng = tu_rng(6, 0, 0);
    struct tv_error err = {0};
    size_t n_skip = 0, n_recurrent = 0, n_hidden = 0;
    for (int i = 0; i < 1000; i++) {
        tu_random_genome(g, &rng, 8);
        struct genome_stats st;
        assert_ok(genome_stats(g, &st, &err), &err);
        char *text = dot_of(g, "random");
        struct edge_counts c = count_edges(text);
        assert_int_equal(c.edges, st.n_conns);
        assert_int_equal(c.arrows, st.n_conns);
        assert_int_equal(c.local, st.n_local);
        assert_int_equal(c.skip, st.n_skip);
        assert_int_equal(c.recurrent, st.n_recurrent);
        /* one rank=same group per distinct hidden depth */
        assert_true(c.same_ranks <= st.n_hidden && c.same_ranks <= st.n_layers);
        assert_true(st.n_hidden == 0 || c.same_ranks >= 1);
        n_skip += c.skip;
        n_recurrent += c.recurrent;
        n_hidden += st.n_hidden;
        free(text);
    }
    assert_true(n_skip > 100 && n_recurrent > 100 && n_hidden > 100); /* all kinds were seen */
}

static void test_genome_write_dot_title_escaped(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    char *text = dot_of(g, "run 'a\"b\\c'\nx -> y");
    expect_line_has(text, "graph [", "label=\"run 'a\\\"b\\\\c' x -> y\\n");
    free(text);
    /* an empty title is no title */
    text = dot_of(g, "");
    expect_line_has(text, "graph [", "label=\"solid: local");
    free(text);
}

/* Appending keeps what the buffer held. */
static void test_genome_write_dot_appends(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    struct tv_buf b = {0};
    struct tv_error err = {0};
    assert_ok(tv_buf_append(&b, "// x\n", 5), NULL);
    assert_ok(genome_write_dot(g, NULL, &b, &err), &err);
    assert_true(b.len > 5 && !memcmp(b.data, "// x\ndigraph trevo {\n", 21));
    tv_buf_free(&b);
}

static void test_genome_write_dot_invalid_genome_refused(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    g->conns[0].weight = NAN;
    struct tv_buf b = {0};
    struct tv_error err = {0};
    assert_ok(tv_buf_append(&b, "keep", 4), NULL);
    int rc = genome_write_dot(g, "t", &b, &err);
    assert_error(rc, &err, TV_EINVAL, "dot: ");
    assert_msg_has(&err, "weight is not finite");
    assert_int_equal(b.len, 4);
    genome_reset(g); /* no inputs, no outputs */
    rc = genome_write_dot(g, NULL, &b, &err);
    assert_error(rc, &err, TV_EINVAL, "dot: ");
    assert_int_equal(b.len, 4);
    tv_buf_free(&b);
}

static void test_master_write_dot_file_unwritable_path(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    struct tv_error err = {0};
    int rc = cli_write_dot_file(g, NULL, "/nonexistent-dir/net.dot", &err);
    assert_error(rc, &err, TV_EIO, "/nonexistent-dir/net.dot: cannot write there");
    if (strstr(err.msg, ".tmp."))
        fail_msg("the message names the temporary file: %s", err.msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_GENOME_TEST(test_genome_write_dot_small_genome_styles),
        TU_GENOME_TEST(test_genome_write_dot_lif_neuron_shows_parameters),
        TU_GENOME_TEST(test_genome_write_dot_random_genomes_match_stats),
        TU_GENOME_TEST(test_genome_write_dot_title_escaped),
        TU_GENOME_TEST(test_genome_write_dot_appends),
        TU_GENOME_TEST(test_genome_write_dot_invalid_genome_refused),
        TU_GENOME_TEST(test_master_write_dot_file_unwritable_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
