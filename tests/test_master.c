/* test_master.c -- master/ and worker/ without MPI: the config parser (every
 * way a config can be wrong, the dump round trip, resume assignments), the
 * task and result batch codec, breeding and evaluating children, and
 * speciation and selection on hand-made populations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "master.h"
#include "quant.h"
#include "state.h"
#include "task.h"
#include "testutil.h"
#include "worker.h"

/* ---- helpers ----------------------------------------------------------- */

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define MINIMAL_XOR "[run]\ntask = xor\n"

static void parse_ok(struct master_config *c, const char *text)
{
    struct tv_error err = {0};
    assert_ok(master_config_parse(c, text, "x.ini", &err), &err);
}

/* Parses text as "x.ini"; it must fail with TV_EINVAL and a message that
 * contains every one of the NULL-terminated substrings. */
static void parse_fails(const char *text, ...)
{
    struct master_config c;
    struct tv_error err = {0};
    int rc = master_config_parse(&c, text, "x.ini", &err);
    va_list ap;
    va_start(ap, text);
    for (const char *sub; (sub = va_arg(ap, const char *));)
        assert_error(rc, &err, TV_EINVAL, sub);
    va_end(ap);
}

/* A malloc'd copy of exactly len bytes, so that ASan sees any over-read. */
static void *copy_of(const void *p, size_t len)
{
    void *q = malloc(len ? len : 1);
    assert_non_null(q);
    if (len)
        memcpy(q, p, len);
    return q;
}

static int tasks_decode_copy(const void *p, size_t len, size_t max, struct tv_error *err)
{
    void *q = copy_of(p, len);
    struct worker_tasks t;
    int rc = worker_tasks_decode(q, len, max, &t, err);
    if (!rc)
        worker_tasks_release(&t);
    free(q);
    return rc;
}

static int results_decode_copy(const void *p, size_t len, size_t max, struct tv_error *err)
{
    void *q = copy_of(p, len);
    struct worker_results r;
    int rc = worker_results_decode(q, len, max, &r, err);
    if (!rc)
        worker_results_release(&r);
    free(q);
    return rc;
}

/* The encoding of a minimal xor genome (3 inputs, 1 output). */
static void minimal_parent(struct tv_buf *out, uint64_t seed)
{
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    struct tv_rng rng = tu_rng(seed, 0, 0);
    assert_ok(genome_build_minimal(&g, 3, 1, GENOME_ACT_NEAT_SIGMOID, 1.0, &rng, &err), &err);
    assert_ok(genome_encode(&g, out, &err), &err);
    genome_release(&g);
}

/* ---- config: happy paths ----------------------------------------------- */

static void test_master_config_parse_minimal_applies_defaults(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, MINIMAL_XOR);
    assert_string_equal(c.task, "xor");
    assert_string_equal(c.name, "xor");
    assert_non_null(c.task_kind);
    assert_string_equal(c.task_kind->name, "xor");
    assert_int_equal(c.seed, 1);
    assert_int_equal(c.generations, 100);
    assert_true(isnan(c.fitness_target));
    assert_int_equal(c.stop_on_solve, 1);
    assert_int_equal(c.pop_size, 150);
    assert_int_equal(c.selection, MASTER_SEL_SPECIATED);
    assert_int_equal(c.elitism, 1);
    assert_true(c.survival_threshold == 0.2);
    assert_true(c.crossover_rate == 0.75);
    assert_true(c.crossover_mutate_rate == 1.0);
    assert_int_equal(c.tournament_size, 3);
    assert_true(c.compat_threshold == 3.0);
    assert_true(c.target_species == 10);
    assert_true(c.threshold_step == 0.3);
    assert_true(c.threshold_min == 0.3);
    assert_true(c.distance.c_excess == 1.0);
    assert_true(c.distance.c_disjoint == 1.0);
    assert_true(c.distance.c_weight == 0.4);
    assert_int_equal(c.distance.small_genome, 20);
    assert_int_equal(c.stagnation, 15);
    assert_int_equal(c.species_elitism, 2);
    assert_int_equal(c.elitism_min_size, 5);
    assert_int_equal(c.worker.init, WORKER_INIT_MINIMAL);
    assert_int_equal(c.worker.n_init_hidden, 0);
    assert_int_equal(c.worker.mutation.hidden_act, GENOME_ACT_NEAT_SIGMOID);
    assert_int_equal(c.worker.mutation.act_choices, 0);
    assert_true(c.worker.mutation.weight_perturb_rate == 0.8);
    assert_true(c.worker.mutation.add_neuron_rate == 0.03);
    assert_int_equal(c.worker.limits.max_neurons, 100000);
    assert_int_equal(c.worker.limits.max_conns, 1000000);
    assert_int_equal(c.worker.max_message_bytes, (size_t)256 << 20);
    assert_string_equal(c.db, "trevo.db");
    assert_int_equal(c.sync_full, 0);
    assert_int_equal(c.commit_batch, 1024);
    assert_int_equal(c.batch, 0);
    assert_int_equal(c.inflight, 2);
    assert_int_equal(c.quiet, 0);
}

static void test_master_config_parse_values_override_defaults(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(
        &c, "; comment\n# another\n[run]\ntask = null\nname = my run\nseed = 18446744073709551615\n"
            "fitness_target = -inf\nstop_on_solve = no\n"
            "[population]\nsize = 2\nselection = generational\n"
            "[genome]\ninit = layered\ninit_hidden = 4, 3,2\nact_choices = tanh,relu\n"
            "act_change_rate = 0.5\n[store]\nsync = full\n[farm]\nmax_message_mb = 3\n"
            "[log]\nquiet = yes\n");
    assert_string_equal(c.name, "my run");
    assert_string_equal(c.task_kind->name, "null");
    assert_true(c.seed == UINT64_MAX);
    assert_true(isinf(c.fitness_target) && c.fitness_target < 0);
    assert_int_equal(c.stop_on_solve, 0);
    assert_int_equal(c.pop_size, 2);
    assert_int_equal(c.selection, MASTER_SEL_GENERATIONAL);
    assert_int_equal(c.worker.init, WORKER_INIT_LAYERED);
    assert_int_equal(c.worker.n_init_hidden, 3);
    assert_int_equal(c.worker.init_hidden[0], 4);
    assert_int_equal(c.worker.init_hidden[1], 3);
    assert_int_equal(c.worker.init_hidden[2], 2);
    assert_int_equal(c.worker.mutation.act_choices,
                     (1u << GENOME_ACT_TANH) | (1u << GENOME_ACT_RELU));
    assert_int_equal(c.sync_full, 1);
    assert_int_equal(c.worker.max_message_bytes, (size_t)3 << 20);
    assert_int_equal(c.quiet, 1);
}

static void test_master_config_parse_crlf_and_the_shipped_xor_ini(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, "[run]\r\ntask = spin\r\nseed = 9\r\n");
    assert_string_equal(c.task, "spin");
    assert_int_equal(c.seed, 9);
    FILE *f = fopen("experiments/xor.ini", "r");
    if (!f)
        f = fopen("../../../experiments/xor.ini", "r");
    if (!f) /* run from elsewhere: nothing more to check */
        return;
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    parse_ok(&c, text);
    assert_string_equal(c.task, "xor");
    assert_string_equal(c.db, "xor.db");
}

static void test_master_config_parse_line_of_189_accepted(void **state)
{
    (void)state;
    char text[512];
    int n = snprintf(text, sizeof text, "[run]\ntask = xor\n;");
    memset(text + n, 'a', 188);
    strcpy(text + n + 188, "\n");
    struct master_config c;
    parse_ok(&c, text);
}

/* ---- config: errors ---------------------------------------------------- */

static void test_master_config_parse_int_key_wrong_type(void **state)
{
    (void)state;
    parse_fails("[population]\nelitism = 1\nsize = abc\n[run]\ntask = xor\n",
                "x.ini:3: size: expected an integer", NULL);
    parse_fails("[run]\ntask = xor\n[population]\nsize = abc\n",
                "x.ini:4: size: expected an integer, got 'abc'", NULL);
    parse_fails("[run]\ntask = xor\n[population]\nsize = 12x\n",
                "x.ini:4: size: expected an integer", NULL);
    parse_fails("[run]\ntask = xor\n[population]\nsize = 1.5\n",
                "x.ini:4: size: expected an integer", NULL);
    parse_fails("[run]\ntask = xor\nseed = -1\n", "x.ini:3: seed: expected a non-negative integer",
                NULL);
    parse_fails("[run]\ntask = xor\n[speciation]\nc_weight = lots\n",
                "x.ini:4: c_weight: expected a number", NULL);
    parse_fails("[run]\ntask = xor\n[speciation]\ncompat_threshold = nan\n",
                "x.ini:4: compat_threshold: expected a number", NULL);
}

static void test_master_config_parse_value_out_of_range(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\n[population]\nsize = 1\n",
                "x.ini:4: size: 1 is out of range [2, 10000000]", NULL);
    parse_fails("[run]\ntask = xor\n[population]\ncrossover_rate = 1.5\n",
                "x.ini:4: crossover_rate: 1.5 is out of range [0, 1]", NULL);
    parse_fails("[run]\ntask = xor\ngenerations = 0\n", "x.ini:3: generations: 0 is out of range",
                NULL);
    parse_fails("[run]\ntask = xor\n[farm]\ninflight = 65\n", "x.ini:4: inflight:", "out of range",
                NULL);
    parse_fails("[run]\ntask = xor\n[genome]\ninit_hidden = 4,0\n",
                "x.ini:4: init_hidden: '0' is not a layer size", NULL);
    parse_fails("[run]\ntask = xor\n[genome]\ninit_hidden = 1,1,1,1,1,1,1,1,1\n",
                "x.ini:4: init_hidden: more than 8 hidden layers", NULL);
    parse_fails("[run]\ntask = xor\n[population]\nsize = 99999999999999999999\n",
                "x.ini:4: size: expected an integer", NULL);
}

static void test_master_config_parse_unknown_key(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\n[population]\npop_size = 10\n",
                "x.ini:4: pop_size: unknown key in [population]", NULL);
    /* a key of another section */
    parse_fails("[run]\ntask = xor\nsize = 10\n", "x.ini:3: size: unknown key in [run]", NULL);
}

static void test_master_config_parse_unknown_section(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\n[populaton]\nsize = 10\n",
                "x.ini:4: size: unknown section [populaton]", NULL);
}

static void test_master_config_parse_duplicate_key(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\nseed = 1\nseed = 2\n", "x.ini:4: seed: given twice in [run]",
                NULL);
    parse_fails("[run]\ntask = xor\n[run]\ntask = null\n", "x.ini:4: task: given twice", NULL);
}

static void test_master_config_parse_key_outside_section(void **state)
{
    (void)state;
    parse_fails("seed = 3\n[run]\ntask = xor\n", "x.ini:1: seed: outside any [section]", NULL);
}

static void test_master_config_parse_missing_task(void **state)
{
    (void)state;
    parse_fails("[run]\nseed = 3\n", "x.ini", "task: required key missing from [run]", NULL);
}

static void test_master_config_parse_unknown_task(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xorr\n", "x.ini", "task: no task named 'xorr'", NULL);
    parse_fails("[run]\ntask =\n", "x.ini", "task: no task named ''", NULL);
}

static void test_master_config_parse_unknown_activation(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\n[genome]\nhidden_act = sigmoidal\n",
                "x.ini:4: hidden_act: unknown activation 'sigmoidal'", NULL);
    parse_fails("[run]\ntask = xor\n[genome]\nact_choices = tanh, foo, relu\n",
                "x.ini:4: act_choices: unknown activation 'foo'", NULL);
}

static void test_master_config_parse_act_change_without_choices(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\n[genome]\nact_change_rate = 0.1\n", "x.ini",
                "act_change_rate: needs act_choices", NULL);
}

static void test_master_config_parse_bad_bool(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\nstop_on_solve = maybe\n",
                "x.ini:3: stop_on_solve: expected true or false, got 'maybe'", NULL);
    parse_fails("[run]\ntask = xor\n[log]\nquiet = TRUE\n",
                "x.ini:4: quiet: expected true or false", NULL);
}

static void test_master_config_parse_bad_enum(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\n[population]\nselection = random\n",
                "x.ini:4: selection: expected one of speciated, generational, nsga2, got 'random'",
                NULL);
    parse_fails("[run]\ntask = xor\n[store]\nsync = off\n", "x.ini:4: sync: expected one of", NULL);
}

static void test_master_config_parse_string_too_long(void **state)
{
    (void)state;
    char text[256];
    int n = snprintf(text, sizeof text, "[run]\ntask = xor\nname = ");
    memset(text + n, 'n', 64);
    strcpy(text + n + 64, "\n");
    parse_fails(text, "x.ini:3: name: longer than 63 characters", NULL);
}

static void test_master_config_parse_empty_text(void **state)
{
    (void)state;
    parse_fails("", "x.ini", "task: required key missing", NULL);
    parse_fails("\n\n; only comments\n", "x.ini", "task: required key missing", NULL);
}

static void test_master_config_parse_binary_text(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\x01\n", "x.ini:2: control character 0x01", NULL);
    parse_fails("[run]\ntask = xor\n\x7f\x45LF\x02\x01\n", "x.ini:3:", "control character", NULL);
}

static void test_master_config_parse_overlong_line(void **state)
{
    (void)state;
    char text[1024];
    int n = snprintf(text, sizeof text, "[run]\ntask = xor\nname = ");
    memset(text + n, 'n', 400);
    strcpy(text + n + 400, "\n");
    parse_fails(text, "x.ini:3: line longer than 190 characters", NULL);
}

/* The boundary: the message says "longer than 190", so a line of exactly
 * 190 characters must be accepted. */
static void test_master_config_parse_line_of_190_accepted(void **state)
{
    (void)state;
    char text[512];
    int n = snprintf(text, sizeof text, "[run]\ntask = xor\n;");
    memset(text + n, 'a', 189);
    strcpy(text + n + 189, "\n");
    struct master_config c;
    struct tv_error err = {0};
    assert_ok(master_config_parse(&c, text, "x.ini", &err), &err);
}

static void test_master_config_parse_syntax_error(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\nseed 3\n", "x.ini:3: syntax error", NULL);
    parse_fails("[run]\ntask = xor\n[population]\nsize\n", "x.ini:4: syntax error", NULL);
    parse_fails("[run]\ntask = xor\n[population]\n= 3\n", "x.ini:4:", NULL);
}

/* A syntax error followed by a bad key: the first error is reported, with
 * its own line (not the syntax error's line with the later key's reason). */
static void test_master_config_parse_syntax_error_before_bad_key(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\nseed 3\nfoo = 1\n", "x.ini:3: syntax error", NULL);
    parse_fails("[run\ntask = xor\n", "x.ini:1: syntax error", NULL);
}

/* An indented key is a key: accepted, or refused naming it and its line;
 * never reported as a second value of the key above. */
static void test_master_config_parse_indented_key(void **state)
{
    (void)state;
    struct master_config c;
    struct tv_error err = {0};
    int rc = master_config_parse(&c, "[run]\ntask = xor\n  seed = 3\n", "x.ini", &err);
    if (rc == 0)
        assert_int_equal(c.seed, 3);
    else
        assert_error(rc, &err, TV_EINVAL, "x.ini:3: seed");
}

static void test_master_config_parse_reports_first_error(void **state)
{
    (void)state;
    parse_fails("[run]\ntask = xor\nseed = x\n[population]\nsize = y\n", "x.ini:3: seed:", NULL);
}

/* ---- config: dump ------------------------------------------------------ */

static void dump_ok(const struct master_config *c, struct tv_buf *out)
{
    struct tv_error err = {0};
    assert_ok(master_config_dump(c, out, &err), &err);
    assert_true(out->len > 0);
    assert_int_equal(out->data[out->len - 1], '\0');
    assert_int_equal(strlen((const char *)out->data), out->len - 1);
}

static void assert_configs_agree(const struct master_config *a, const struct master_config *b)
{
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->task, b->task);
    assert_ptr_equal(a->task_kind, b->task_kind);
    assert_true(a->seed == b->seed);
    assert_int_equal(a->generations, b->generations);
    assert_true(a->fitness_target == b->fitness_target ||
                (isnan(a->fitness_target) && isnan(b->fitness_target)));
    assert_int_equal(a->pop_size, b->pop_size);
    assert_int_equal(a->selection, b->selection);
    assert_true(a->survival_threshold == b->survival_threshold);
    assert_true(a->crossover_rate == b->crossover_rate);
    assert_true(a->crossover_mutate_rate == b->crossover_mutate_rate);
    assert_true(a->compat_threshold == b->compat_threshold);
    assert_true(a->distance.c_weight == b->distance.c_weight);
    assert_int_equal(a->distance.small_genome, b->distance.small_genome);
    assert_int_equal(a->worker.init, b->worker.init);
    assert_int_equal(a->worker.n_init_hidden, b->worker.n_init_hidden);
    for (size_t i = 0; i < a->worker.n_init_hidden; i++)
        assert_int_equal(a->worker.init_hidden[i], b->worker.init_hidden[i]);
    assert_memory_equal(&a->worker.mutation, &b->worker.mutation, sizeof a->worker.mutation);
    assert_int_equal(a->worker.limits.max_neurons, b->worker.limits.max_neurons);
    assert_int_equal(a->worker.limits.max_conns, b->worker.limits.max_conns);
    assert_int_equal(a->worker.max_message_bytes, b->worker.max_message_bytes);
    assert_string_equal(a->db, b->db);
    assert_int_equal(a->sync_full, b->sync_full);
    assert_int_equal(a->quiet, b->quiet);
}

static void round_trip(const char *text)
{
    struct master_config a, b;
    struct tv_buf d1 = {0}, d2 = {0};
    parse_ok(&a, text);
    dump_ok(&a, &d1);
    struct tv_error err = {0};
    assert_ok(master_config_parse(&b, (const char *)d1.data, "dump", &err), &err);
    dump_ok(&b, &d2);
    assert_string_equal((const char *)d1.data, (const char *)d2.data);
    assert_configs_agree(&a, &b);
    tv_buf_free(&d1);
    tv_buf_free(&d2);
}

static void test_master_config_dump_round_trip_defaults(void **state)
{
    (void)state;
    round_trip(MINIMAL_XOR);
}

static void test_master_config_dump_round_trip_every_kind(void **state)
{
    (void)state;
    round_trip("[run]\ntask = xor\nname = exp-7\nseed = 123456789012345\ngenerations = 17\n"
               "fitness_target = 15.9\nstop_on_solve = false\n"
               "[population]\nsize = 77\nselection = generational\nelitism = 3\n"
               "survival_threshold = 0.1\ncrossover_rate = 0.3\ncrossover_mutate_rate = 0.1\n"
               "tournament_size = 5\n"
               "[speciation]\ncompat_threshold = 2.25\ntarget_species = 7\nc_weight = 0.1\n"
               "small_genome = 4\nstagnation = 9\n"
               "[genome]\ninit = layered\ninit_hidden = 5,4\ninit_density = 0.5\n"
               "hidden_act = tanh\nact_choices = relu, sin,gauss\nact_change_rate = 0.05\n"
               "weight_perturb_sd = 0.1\nweight_max = 0\nmax_neurons = 500\nmax_conns = 9000\n"
               "[store]\ndb = /tmp/some.db\nsync = full\ncommit_batch = 3\n"
               "[farm]\nbatch = 8\ninflight = 4\nmax_message_mb = 7\n[log]\nquiet = true\n");
    /* and the dump says what was given */
    struct master_config c;
    struct tv_buf d = {0};
    parse_ok(&c, "[run]\ntask = xor\nseed = 42\n[genome]\ninit_hidden = 5,4\n"
                 "act_choices = sin, relu\n[population]\ncrossover_rate = 0.1\n");
    dump_ok(&c, &d);
    const char *t = (const char *)d.data;
    assert_non_null(strstr(t, "[run]\n"));
    assert_non_null(strstr(t, "\nseed = 42\n"));
    assert_non_null(strstr(t, "\ninit_hidden = 5,4\n"));
    assert_non_null(strstr(t, "\nact_choices = relu,sin\n"));
    assert_non_null(strstr(t, "\ntask = xor\n"));
    assert_non_null(strstr(t, "\nname = xor\n"));
    tv_buf_free(&d);
}

static void test_master_config_dump_appends(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, MINIMAL_XOR);
    struct tv_buf d = {0};
    struct tv_error err = {0};
    assert_ok(tv_buf_append(&d, "ab", 2), &err);
    assert_ok(master_config_dump(&c, &d, &err), &err);
    assert_memory_equal(d.data, "ab;", 3);
    tv_buf_free(&d);
}

static void test_master_config_help_lists_every_section(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    master_config_help(f);
    fclose(f);
    const char *sections[] = {"[run]",   "[population]", "[speciation]", "[genome]",
                              "[store]", "[farm]",       "[log]"};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        assert_non_null(strstr(text, sections[i]));
    assert_non_null(strstr(text, "; required: task = "));
    assert_non_null(strstr(text, "\nsize = 150\n"));
    free(text);
}

/* ---- config: resume assignments ---------------------------------------- */

static void test_master_config_set_resumable_keys(void **state)
{
    (void)state;
    struct master_config c;
    struct tv_error err = {0};
    parse_ok(&c, MINIMAL_XOR);
    assert_ok(master_config_set(&c, "run.generations=5", &err), &err);
    assert_int_equal(c.generations, 5);
    assert_ok(master_config_set(&c, "generations=6", &err), &err);
    assert_int_equal(c.generations, 6);
    assert_ok(master_config_set(&c, "run.fitness_target=15.5", &err), &err);
    assert_true(c.fitness_target == 15.5);
    assert_ok(master_config_set(&c, "fitness_target=nan", &err), &err);
    assert_true(isnan(c.fitness_target));
    assert_ok(master_config_set(&c, "run.stop_on_solve=false", &err), &err);
    assert_int_equal(c.stop_on_solve, 0);
    assert_ok(master_config_set(&c, "log.quiet=true", &err), &err);
    assert_int_equal(c.quiet, 1);
}

/* master_config_set(c, arg) is refused (TV_EINVAL) with a message that
 * holds want. */
static void set_refused(struct master_config *c, const char *arg, const char *want)
{
    struct tv_error err = {0};
    assert_error(master_config_set(c, arg, &err), &err, TV_EINVAL, want);
}

static void test_master_config_set_non_resumable_refused(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, MINIMAL_XOR);
    set_refused(&c, "population.size=10", "--set population.size=10: size cannot change on resume");
    assert_int_equal(c.pop_size, 150);
    set_refused(&c, "seed=2", "seed cannot change on resume");
    assert_int_equal(c.seed, 1);
    /* a task's own key: it shapes the fitness function */
    parse_ok(&c, "[run]\ntask = pole1\n");
    set_refused(&c, "task.max_steps=10",
                "--set task.max_steps=10: max_steps cannot change on resume");
    set_refused(&c, "task.nope=10", "unknown key 'task.nope'");
}

static void test_master_config_set_unknown_key_refused(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, MINIMAL_XOR);
    set_refused(&c, "run.nope=1", "--set run.nope=1: unknown key 'run.nope'");
    set_refused(&c, "log.generations=1", "unknown key 'log.generations'");
    assert_int_equal(c.generations, 100);
}

/* A section must be named in full: "r.generations" is not [run]. */
static void test_master_config_set_abbreviated_section_refused(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, MINIMAL_XOR);
    set_refused(&c, "r.generations=5", "unknown key 'r.generations'");
    set_refused(&c, ".quiet=true", "unknown key");
}

static void test_master_config_set_missing_equals_refused(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, MINIMAL_XOR);
    set_refused(&c, "run.generations", "--set run.generations: expected key=value");
}

static void test_master_config_set_bad_value_refused(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, MINIMAL_XOR);
    set_refused(&c, "run.generations=0", "--set run.generations=0: 0 is out of range");
    set_refused(&c, "run.generations=ten", "expected an integer");
    set_refused(&c, "log.quiet=perhaps", "expected true or false");
    assert_int_equal(c.generations, 100);
    assert_int_equal(c.quiet, 0);
}

/* ---- message codec ----------------------------------------------------- */

static const uint8_t BIN1[] = {1, 2, 3, 0, 255};
static const uint8_t BIN2[] = {9};

static size_t sample_tasks(struct worker_task *t)
{
    t[0] = (struct worker_task){1, 0, 0, WORKER_OP_INIT, 42, -1, -1, NULL, 0, NULL, 0};
    t[1] = (struct worker_task){
        INT64_MAX, 7, UINT32_MAX, WORKER_OP_MUTATE, UINT64_MAX, 3, -1, BIN1, sizeof BIN1, NULL, 0};
    t[2] = (struct worker_task){-5,          INT64_MAX, 12,         WORKER_OP_CROSSOVER_MUTATE,
                                0,           INT64_MIN, 4,          BIN1,
                                sizeof BIN1, BIN2,      sizeof BIN2};
    t[3] = (struct worker_task){8, 1, 2, WORKER_OP_CROSSOVER, 77, 5, 6, BIN2, sizeof BIN2, BIN1, 0};
    return 4;
}

static size_t sample_results(struct worker_result *r)
{
    r[0] = (struct worker_result){1, 16.0, 1,           0.001,
                                  0, BIN1, sizeof BIN1, {0.875, 4096, 512, 3000, 1234}};
    r[1] = (struct worker_result){INT64_MIN, -INFINITY, 0,           0,
                                  INT32_MAX, BIN2,      sizeof BIN2, {NAN, NAN, NAN, NAN, NAN}};
    r[2] = (struct worker_result){INT64_MAX, 1e-300, 0, 12.5,
                                  3,         BIN1,   0, {-0.0, INFINITY, 1e300, NAN, 0}};
    return 3;
}

static void assert_bin_equal(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    assert_int_equal(an, bn);
    if (!a || !b) {
        assert_true(a == NULL && b == NULL);
        return;
    }
    if (an)
        assert_memory_equal(a, b, an);
}

static void test_worker_tasks_encode_round_trip(void **state)
{
    (void)state;
    struct worker_task in[4];
    size_t n = sample_tasks(in);
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_tasks_encode(in, n, &buf, &err), &err);
    struct worker_tasks out;
    assert_ok(worker_tasks_decode(buf.data, buf.len, buf.len, &out, &err), &err);
    assert_int_equal(out.n, n);
    for (size_t i = 0; i < n; i++) {
        const struct worker_task *a = &in[i], *b = &out.items[i];
        assert_true(a->child_id == b->child_id);
        assert_true(a->generation == b->generation);
        assert_int_equal(a->child_index, b->child_index);
        assert_int_equal(a->op, b->op);
        assert_true(a->seed == b->seed);
        assert_true(a->parent1 == b->parent1);
        assert_true(a->parent2 == b->parent2);
        assert_bin_equal(a->genome1, a->genome1_len, b->genome1, b->genome1_len);
        assert_bin_equal(a->genome2, a->genome2_len, b->genome2, b->genome2_len);
        /* bins point into the message, not copies */
        if (b->genome1 && b->genome1_len) {
            assert_true(b->genome1 >= buf.data && b->genome1 < buf.data + buf.len);
        }
    }
    assert_null(out.items[0].genome1);
    assert_null(out.items[0].genome2);
    assert_null(out.items[1].genome2);
    worker_tasks_release(&out);
    worker_tasks_release(&out); /* released twice: a no-op */
    tv_buf_free(&buf);
}

static void test_worker_tasks_encode_empty_batch(void **state)
{
    (void)state;
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_tasks_encode(NULL, 0, &buf, &err), &err);
    struct worker_tasks out;
    assert_ok(worker_tasks_decode(buf.data, buf.len, 1 << 20, &out, &err), &err);
    assert_int_equal(out.n, 0);
    worker_tasks_release(&out);
    tv_buf_free(&buf);
}

static void test_worker_results_encode_round_trip(void **state)
{
    (void)state;
    struct worker_result in[3];
    size_t n = sample_results(in);
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_results_encode(in, n, &buf, &err), &err);
    struct worker_results out;
    assert_ok(worker_results_decode(buf.data, buf.len, buf.len, &out, &err), &err);
    assert_int_equal(out.n, n);
    for (size_t i = 0; i < n; i++) {
        const struct worker_result *a = &in[i], *b = &out.items[i];
        assert_true(a->child_id == b->child_id);
        assert_memory_equal(&a->fitness, &b->fitness, sizeof a->fitness);
        assert_int_equal(a->solved, b->solved);
        assert_memory_equal(&a->eval_seconds, &b->eval_seconds, sizeof a->eval_seconds);
        assert_int_equal(a->rank, b->rank);
        assert_non_null(b->genome);
        assert_int_equal(a->genome_len, b->genome_len);
        if (a->genome_len)
            assert_memory_equal(a->genome, b->genome, a->genome_len);
        assert_memory_equal(a->obj, b->obj, sizeof a->obj); /* bit for bit, NaN too */
    }
    worker_results_release(&out);
    tv_buf_free(&buf);
}

static void test_worker_results_decode_nan_fitness_kept(void **state)
{
    (void)state;
    struct worker_result in = {4, NAN, 0, 0.5, 1, BIN1, sizeof BIN1, {0}};
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_results_encode(&in, 1, &buf, &err), &err);
    struct worker_results out;
    assert_ok(worker_results_decode(buf.data, buf.len, buf.len, &out, &err), &err);
    assert_true(isnan(out.items[0].fitness));
    worker_results_release(&out);
    tv_buf_free(&buf);
}

static void test_worker_tasks_decode_every_truncation_refused(void **state)
{
    (void)state;
    struct worker_task in[4];
    size_t n = sample_tasks(in);
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_tasks_encode(in, n, &buf, &err), &err);
    for (size_t len = 0; len < buf.len; len++) {
        tv_error_clear(&err);
        int rc = tasks_decode_copy(buf.data, len, 1 << 20, &err);
        assert_int_not_equal(rc, 0);
        assert_int_equal(err.code, rc);
        assert_true(err.msg[0] != '\0');
        /* and without an error struct (not tv_error_prefix's 0: an empty batch) */
        assert_int_equal(tasks_decode_copy(buf.data, len, 1 << 20, NULL), rc);
    }
    /* and a trailing byte */
    assert_ok(tv_buf_append(&buf, "\xc0", 1), &err);
    assert_int_equal(tasks_decode_copy(buf.data, buf.len, 1 << 20, &err), TV_EFORMAT);
    tv_buf_free(&buf);
}

static void test_worker_results_decode_every_truncation_refused(void **state)
{
    (void)state;
    struct worker_result in[3];
    size_t n = sample_results(in);
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_results_encode(in, n, &buf, &err), &err);
    for (size_t len = 0; len < buf.len; len++) {
        tv_error_clear(&err);
        int rc = results_decode_copy(buf.data, len, 1 << 20, &err);
        assert_int_not_equal(rc, 0);
        assert_int_equal(err.code, rc);
        assert_true(err.msg[0] != '\0');
        assert_int_equal(results_decode_copy(buf.data, len, 1 << 20, NULL), rc);
    }
    tv_buf_free(&buf);
}

/* A worker's error reaches the master with its own code. */
static void test_worker_error_decode_keeps_the_code(void **state)
{
    (void)state;
    static const int codes[] = {TV_ENOMEM, TV_ELIMIT, TV_ECORRUPT, TV_ENOTFOUND};
    struct tv_error err = {0};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        struct tv_buf buf = {0};
        assert_ok(worker_error_encode(codes[i], "child 7: out of memory", &buf, &err), &err);
        void *q = copy_of(buf.data, buf.len);
        int code = 0;
        char text[64];
        assert_ok(worker_error_decode(q, buf.len, &code, text, sizeof text, &err), &err);
        assert_int_equal(code, codes[i]);
        assert_string_equal(text, "child 7: out of memory");
        free(q);
        tv_buf_free(&buf);
    }
}

static void test_worker_error_decode_malformed_refused(void **state)
{
    (void)state;
    struct tv_error err = {0};
    int code = 0;
    char text[16];
    /* too short, no NUL at the end, a NUL inside, not a negative code */
    static const struct {
        const char *bytes;
        size_t len;
        const char *msg;
    } bad[] = {{"\xfe\xff\xff", 3, "not a code and a NUL-terminated text"},
               {"\xfe\xff\xff\xffxy", 6, "not a code and a NUL-terminated text"},
               {"\xfe\xff\xff\xffx\0y\0", 8, "not a code and a NUL-terminated text"},
               {"\x02\0\0\0x\0", 6, "2 is not an error code"},
               {"\x9c\xff\xff\xffx\0", 6, "-100 is not an error code"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        void *q = copy_of(bad[i].bytes, bad[i].len);
        int rc = worker_error_decode(q, bad[i].len, &code, text, sizeof text, &err);
        assert_error(rc, &err, TV_EFORMAT, bad[i].msg);
        free(q);
    }
}

/* Every single-byte change of a valid message: decoded or refused, never a
 * crash (ASan run). */
static void test_worker_tasks_decode_byte_flips_never_crash(void **state)
{
    (void)state;
    struct worker_task in[4];
    size_t n = sample_tasks(in);
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_tasks_encode(in, n, &buf, &err), &err);
    static const uint8_t values[] = {0x00, 0x7f, 0x80, 0x90, 0xc0, 0xc1, 0xc4, 0xcb,
                                     0xd0, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff};
    for (size_t i = 0; i < buf.len; i++)
        for (size_t v = 0; v < sizeof values; v++) {
            uint8_t *q = copy_of(buf.data, buf.len);
            q[i] = values[v];
            struct worker_tasks t;
            int rc = worker_tasks_decode(q, buf.len, 1 << 20, &t, &err);
            if (!rc)
                worker_tasks_release(&t);
            else
                assert_int_equal(err.code, rc);
            free(q);
        }
    tv_buf_free(&buf);
}

static void test_worker_tasks_decode_over_cap(void **state)
{
    (void)state;
    struct worker_task in[4];
    size_t n = sample_tasks(in);
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_tasks_encode(in, n, &buf, &err), &err);
    struct worker_tasks t;
    assert_error(worker_tasks_decode(buf.data, buf.len, buf.len - 1, &t, &err), &err, TV_ELIMIT,
                 "over the cap");
    assert_null(t.items);
    struct worker_results r;
    assert_error(worker_results_decode(buf.data, buf.len, 10, &r, &err), &err, TV_ELIMIT,
                 "over the cap of 10");
    assert_ok(worker_tasks_decode(buf.data, buf.len, buf.len, &t, &err), &err);
    worker_tasks_release(&t);
    tv_buf_free(&buf);
}

/* A hand-built message: [tag, version, [item]] with item written by fn. */
typedef void (*item_fn)(msgpack_packer *pk);

static void build_msg(struct tv_buf *b, const char *tag, int64_t version, item_fn item)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, b, tv_buf_write);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_str_with_body(&pk, tag, strlen(tag));
    msgpack_pack_int64(&pk, version);
    if (!item) {
        msgpack_pack_array(&pk, 0);
        return;
    }
    msgpack_pack_array(&pk, 1);
    item(&pk);
}

static int decode_tasks_msg(const char *tag, int64_t version, item_fn item, struct tv_error *err)
{
    struct tv_buf b = {0};
    build_msg(&b, tag, version, item);
    int rc = tasks_decode_copy(b.data, b.len, 1 << 20, err);
    tv_buf_free(&b);
    return rc;
}

static int decode_results_msg(const char *tag, int64_t version, item_fn item, struct tv_error *err)
{
    struct tv_buf b = {0};
    build_msg(&b, tag, version, item);
    int rc = results_decode_copy(b.data, b.len, 1 << 20, err);
    tv_buf_free(&b);
    return rc;
}

/* task item fields: child_id, gen, index, op, seed, p1, p2, bin|nil, bin|nil */
static void task_fields(msgpack_packer *pk, int64_t gen, int64_t idx, int64_t op, int seed_str)
{
    msgpack_pack_array(pk, 9);
    msgpack_pack_int64(pk, 1);
    msgpack_pack_int64(pk, gen);
    msgpack_pack_int64(pk, idx);
    msgpack_pack_int64(pk, op);
    if (seed_str)
        msgpack_pack_str_with_body(pk, "42", 2);
    else
        msgpack_pack_uint64(pk, 42);
    msgpack_pack_int64(pk, -1);
    msgpack_pack_int64(pk, -1);
    msgpack_pack_nil(pk);
    msgpack_pack_nil(pk);
}
static void task_good(msgpack_packer *pk)
{
    task_fields(pk, 0, 0, 0, 0);
}
static void task_neg_generation(msgpack_packer *pk)
{
    task_fields(pk, -1, 0, 0, 0);
}
static void task_neg_index(msgpack_packer *pk)
{
    task_fields(pk, 0, -1, 0, 0);
}
static void task_big_index(msgpack_packer *pk)
{
    task_fields(pk, 0, (int64_t)UINT32_MAX + 1, 0, 0);
}
static void task_op_high(msgpack_packer *pk)
{
    task_fields(pk, 0, 0, 4, 0);
}
static void task_op_negative(msgpack_packer *pk)
{
    task_fields(pk, 0, 0, -1, 0);
}
static void task_seed_string(msgpack_packer *pk)
{
    task_fields(pk, 0, 0, 0, 1);
}
static void task_negative_seed(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 9);
    for (int i = 0; i < 4; i++)
        msgpack_pack_int64(pk, 0);
    msgpack_pack_int64(pk, -42);
    msgpack_pack_int64(pk, -1);
    msgpack_pack_int64(pk, -1);
    msgpack_pack_nil(pk);
    msgpack_pack_nil(pk);
}
static void task_genome_as_str(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 9);
    for (int i = 0; i < 5; i++)
        msgpack_pack_int64(pk, 0);
    msgpack_pack_int64(pk, -1);
    msgpack_pack_int64(pk, -1);
    msgpack_pack_str_with_body(pk, "abc", 3);
    msgpack_pack_nil(pk);
}
static void task_eight_fields(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 8);
    for (int i = 0; i < 8; i++)
        msgpack_pack_int64(pk, 0);
}
static void task_not_array(msgpack_packer *pk)
{
    msgpack_pack_int64(pk, 7);
}
static void task_as_map(msgpack_packer *pk)
{
    msgpack_pack_map(pk, 1);
    msgpack_pack_int64(pk, 1);
    msgpack_pack_int64(pk, 2);
}
static void task_float_id(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 9);
    msgpack_pack_double(pk, 1.0);
    for (int i = 0; i < 4; i++)
        msgpack_pack_int64(pk, 0);
    msgpack_pack_int64(pk, -1);
    msgpack_pack_int64(pk, -1);
    msgpack_pack_nil(pk);
    msgpack_pack_nil(pk);
}

/* The objectives: n floats, the one at `as_int` (if < n) an integer. */
static void pack_objectives(msgpack_packer *pk, size_t n, size_t as_int)
{
    msgpack_pack_array(pk, n);
    for (size_t k = 0; k < n; k++) {
        if (k == as_int)
            msgpack_pack_int64(pk, 4096);
        else
            msgpack_pack_double(pk, k == 0 ? 0.75 : NAN);
    }
}

/* result item fields: child_id, fitness, solved, eval_seconds, rank, bin,
 * objectives */
static void result_fields(msgpack_packer *pk, int fitness_str, int solved_int, int64_t rank,
                          int nil_genome)
{
    msgpack_pack_array(pk, 7);
    msgpack_pack_int64(pk, 3);
    if (fitness_str)
        msgpack_pack_str_with_body(pk, "1.5", 3);
    else
        msgpack_pack_double(pk, 1.5);
    if (solved_int)
        msgpack_pack_int64(pk, 1);
    else
        msgpack_pack_true(pk);
    msgpack_pack_double(pk, 0.25);
    msgpack_pack_int64(pk, rank);
    if (nil_genome)
        msgpack_pack_nil(pk);
    else
        msgpack_pack_bin_with_body(pk, BIN1, sizeof BIN1);
    pack_objectives(pk, WORKER_N_OBJ, SIZE_MAX);
}
static void result_good(msgpack_packer *pk)
{
    result_fields(pk, 0, 0, 2, 0);
}
static void result_fitness_str(msgpack_packer *pk)
{
    result_fields(pk, 1, 0, 2, 0);
}
static void result_solved_int(msgpack_packer *pk)
{
    result_fields(pk, 0, 1, 2, 0);
}
static void result_neg_rank(msgpack_packer *pk)
{
    result_fields(pk, 0, 0, -1, 0);
}
static void result_big_rank(msgpack_packer *pk)
{
    result_fields(pk, 0, 0, (int64_t)INT32_MAX + 1, 0);
}
static void result_nil_genome(msgpack_packer *pk)
{
    result_fields(pk, 0, 0, 2, 1);
}
static void result_float32_fitness(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 7);
    msgpack_pack_int64(pk, 3);
    msgpack_pack_float(pk, 2.5f);
    msgpack_pack_false(pk);
    msgpack_pack_double(pk, 0.25);
    msgpack_pack_int64(pk, 0);
    msgpack_pack_bin_with_body(pk, BIN1, sizeof BIN1);
    pack_objectives(pk, WORKER_N_OBJ, SIZE_MAX);
}
static void result_int_fitness(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 7);
    msgpack_pack_int64(pk, 3);
    msgpack_pack_int64(pk, 2);
    msgpack_pack_false(pk);
    msgpack_pack_double(pk, 0.25);
    msgpack_pack_int64(pk, 0);
    msgpack_pack_bin_with_body(pk, BIN1, sizeof BIN1);
    pack_objectives(pk, WORKER_N_OBJ, SIZE_MAX);
}
/* the six fields of version 1: no objectives */
static void result_six_fields(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 6);
    msgpack_pack_int64(pk, 3);
    msgpack_pack_double(pk, 1.5);
    msgpack_pack_false(pk);
    msgpack_pack_double(pk, 0.25);
    msgpack_pack_int64(pk, 0);
    msgpack_pack_bin_with_body(pk, BIN1, sizeof BIN1);
}
static void result_eight_fields(msgpack_packer *pk)
{
    msgpack_pack_array(pk, 8);
    for (int i = 0; i < 8; i++)
        msgpack_pack_int64(pk, 0);
}
/* objectives: one too few, one too many, an integer, not an array */
static void result_objectives(msgpack_packer *pk, size_t n, size_t as_int, int nil)
{
    msgpack_pack_array(pk, 7);
    msgpack_pack_int64(pk, 3);
    msgpack_pack_double(pk, 1.5);
    msgpack_pack_false(pk);
    msgpack_pack_double(pk, 0.25);
    msgpack_pack_int64(pk, 0);
    msgpack_pack_bin_with_body(pk, BIN1, sizeof BIN1);
    if (nil)
        msgpack_pack_nil(pk);
    else
        pack_objectives(pk, n, as_int);
}
static void result_objectives_short(msgpack_packer *pk)
{
    result_objectives(pk, WORKER_N_OBJ - 1, SIZE_MAX, 0);
}
static void result_objectives_long(msgpack_packer *pk)
{
    result_objectives(pk, WORKER_N_OBJ + 1, SIZE_MAX, 0);
}
static void result_objectives_int(msgpack_packer *pk)
{
    result_objectives(pk, WORKER_N_OBJ, WORKER_OBJ_FLASH, 0);
}
static void result_objectives_nil(msgpack_packer *pk)
{
    result_objectives(pk, 0, SIZE_MAX, 1);
}

static void test_worker_tasks_decode_hand_built_good(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_ok(decode_tasks_msg("trevo-tasks", 1, task_good, &err), &err);
    assert_ok(decode_tasks_msg("trevo-tasks", 1, NULL, &err), &err);
    assert_ok(decode_results_msg("trevo-results", 2, result_good, &err), &err);
    assert_ok(decode_results_msg("trevo-results", 2, result_float32_fitness, &err), &err);
}

static void test_worker_tasks_decode_wrong_tag(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_error(decode_tasks_msg("trevo-taskz", 1, task_good, &err), &err, TV_EFORMAT,
                 "not a trevo-tasks message");
    assert_error(decode_tasks_msg("trevo-tasks-and-more", 1, task_good, &err), &err, TV_EFORMAT,
                 "not a trevo-tasks message");
    assert_error(decode_tasks_msg("trevo-task", 1, task_good, &err), &err, TV_EFORMAT,
                 "not a trevo-tasks message");
    assert_error(decode_results_msg("trevo-tasks", 2, result_good, &err), &err, TV_EFORMAT,
                 "not a trevo-results message");
}

static void test_worker_tasks_decode_wrong_shape(void **state)
{
    (void)state;
    struct tv_error err = {0};
    /* root is not a 3-array */
    uint8_t int_root[] = {0x07};
    assert_error(tasks_decode_copy(int_root, sizeof int_root, 100, &err), &err, TV_EFORMAT,
                 "not a trevo-tasks message");
    uint8_t empty_array[] = {0x90};
    assert_error(tasks_decode_copy(empty_array, sizeof empty_array, 100, &err), &err, TV_EFORMAT,
                 "not a trevo-tasks message");
    struct tv_buf b = {0};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &b, tv_buf_write);
    msgpack_pack_array(&pk, 3);
    msgpack_pack_str_with_body(&pk, "trevo-tasks", 11);
    msgpack_pack_int64(&pk, 1);
    msgpack_pack_int64(&pk, 0); /* items not an array */
    assert_error(tasks_decode_copy(b.data, b.len, 100, &err), &err, TV_EFORMAT,
                 "trevo-tasks message: items are not an array");
    tv_buf_free(&b);
    /* nil bytes: an empty message */
    assert_int_not_equal(tasks_decode_copy("", 0, 100, &err), 0);
}

static void test_worker_tasks_decode_wrong_version(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_error(decode_tasks_msg("trevo-tasks", 2, task_good, &err), &err, TV_EFORMAT,
                 "trevo-tasks message: version is not 1");
    assert_error(decode_tasks_msg("trevo-tasks", 0, task_good, &err), &err, TV_EFORMAT,
                 "version is not 1");
    assert_error(decode_tasks_msg("trevo-tasks", -1, task_good, &err), &err, TV_EFORMAT,
                 "version is not 1");
    assert_error(decode_results_msg("trevo-results", 7, result_good, &err), &err, TV_EFORMAT,
                 "trevo-results message: version is not 2");
    /* version 1 (no objectives) is refused by its version */
    assert_error(decode_results_msg("trevo-results", 1, result_six_fields, &err), &err, TV_EFORMAT,
                 "trevo-results message: version is not 2");
}

static void test_worker_tasks_decode_bad_items(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const char *T = "trevo-tasks";
    assert_error(decode_tasks_msg(T, 1, task_eight_fields, &err), &err, TV_EFORMAT,
                 "task batch: item 0 is not an array of 9");
    assert_error(decode_tasks_msg(T, 1, task_not_array, &err), &err, TV_EFORMAT,
                 "item 0 is not an array of 9");
    assert_error(decode_tasks_msg(T, 1, task_as_map, &err), &err, TV_EFORMAT,
                 "item 0 is not an array of 9");
    item_fn bad[] = {task_neg_generation, task_neg_index,     task_big_index,
                     task_op_high,        task_op_negative,   task_seed_string,
                     task_negative_seed,  task_genome_as_str, task_float_id};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tv_error_clear(&err);
        assert_error(decode_tasks_msg(T, 1, bad[i], &err), &err, TV_EFORMAT,
                     "task batch: item 0 has a bad field");
    }
}

static void test_worker_results_decode_bad_items(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const char *R = "trevo-results";
    assert_error(decode_results_msg(R, 2, result_eight_fields, &err), &err, TV_EFORMAT,
                 "result batch: item 0 is not an array of 7");
    assert_error(decode_results_msg(R, 2, result_six_fields, &err), &err, TV_EFORMAT,
                 "result batch: item 0 is not an array of 7");
    assert_error(decode_results_msg(R, 2, task_good, &err), &err, TV_EFORMAT,
                 "item 0 is not an array of 7");
    item_fn bad[] = {result_fitness_str,      result_solved_int,      result_neg_rank,
                     result_big_rank,         result_nil_genome,      result_int_fitness,
                     result_objectives_short, result_objectives_long, result_objectives_int,
                     result_objectives_nil};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tv_error_clear(&err);
        assert_error(decode_results_msg(R, 2, bad[i], &err), &err, TV_EFORMAT,
                     "result batch: item 0 has a bad field");
    }
}

static void test_worker_results_decode_task_batch_refused(void **state)
{
    (void)state;
    struct worker_task in[4];
    size_t n = sample_tasks(in);
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_ok(worker_tasks_encode(in, n, &buf, &err), &err);
    struct worker_results r;
    assert_error(worker_results_decode(buf.data, buf.len, buf.len, &r, &err), &err, TV_EFORMAT,
                 "not a trevo-results message");
    assert_null(r.items);
    tv_buf_free(&buf);
    struct worker_result rin[3];
    n = sample_results(rin);
    assert_ok(worker_results_encode(rin, n, &buf, &err), &err);
    struct worker_tasks t;
    assert_error(worker_tasks_decode(buf.data, buf.len, buf.len, &t, &err), &err, TV_EFORMAT,
                 "not a trevo-tasks message");
    tv_buf_free(&buf);
}

/* ---- breeding and evaluating ------------------------------------------- */

struct wfix {
    struct master_config c;
    struct task_instance *task;
    struct worker_scratch *s;
    struct tv_buf parent, parent2;
    struct genome g[3]; /* empty, for the test's children and parents */
};

static int wfix_setup(void **state)
{
    struct wfix *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    struct tv_error err = {0};
    if (master_config_parse(&f->c, MINIMAL_XOR, "x.ini", &err) ||
        master_config_open_task(&f->c, &f->task, &err))
        return -1;
    f->s = worker_scratch_new();
    if (!f->s)
        return -1;
    *state = f;
    return 0;
}

static int wfix_teardown(void **state)
{
    struct wfix *f = *state;
    worker_scratch_free(f->s);
    task_close(f->task);
    tv_buf_free(&f->parent);
    tv_buf_free(&f->parent2);
    for (int i = 0; i < 3; i++)
        genome_release(&f->g[i]);
    free(f);
    return 0;
}

static struct worker_task init_task(int64_t id, uint64_t seed)
{
    return (struct worker_task){id, 0, 0, WORKER_OP_INIT, seed, -1, -1, NULL, 0, NULL, 0};
}

static void test_worker_breed_init_is_deterministic(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct genome *a = &f->g[0], *b = &f->g[1], *c = &f->g[2];
    struct worker_task t = init_task(1, 42);
    assert_ok(worker_breed(&f->c.worker, &t, f->s, a, &err), &err);
    assert_ok(worker_breed(&f->c.worker, &t, f->s, b, &err), &err);
    assert_true(genome_equal(a, b));
    assert_ok(genome_validate(a, NULL, &err), &err);
    assert_int_equal(genome_count_kind(a, GENOME_INPUT), 3);
    assert_int_equal(genome_count_kind(a, GENOME_OUTPUT), 1);
    assert_int_equal(a->n_conns, 3);
    /* a fresh scratch, another child id: the same child */
    struct worker_scratch *s2 = worker_scratch_new();
    assert_non_null(s2);
    t.child_id = 99;
    assert_ok(worker_breed(&f->c.worker, &t, s2, b, &err), &err);
    assert_true(genome_equal(a, b));
    worker_scratch_free(s2);
    t.seed = 43;
    assert_ok(worker_breed(&f->c.worker, &t, f->s, c, &err), &err);
    assert_false(genome_equal(a, c));
}

static void test_worker_breed_layered_init(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct master_config c;
    parse_ok(&c, "[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 4,2\n");
    struct task_instance *task;
    assert_ok(master_config_open_task(&c, &task, &err), &err);
    struct genome *a = &f->g[0];
    struct worker_task t = init_task(1, 5);
    assert_ok(worker_breed(&c.worker, &t, f->s, a, &err), &err);
    assert_ok(genome_validate(a, NULL, &err), &err);
    assert_int_equal(genome_count_kind(a, GENOME_HIDDEN), 6);
    task_close(task);
}

static void test_worker_breed_mutate_gives_valid_child(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    minimal_parent(&f->parent, 3);
    struct genome *parent = &f->g[0], *a = &f->g[1], *b = &f->g[2];
    assert_ok(genome_decode(parent, f->parent.data, f->parent.len, NULL, &err), &err);
    struct worker_task t = {12,   1, 0, WORKER_OP_MUTATE, 7, 7, -1, f->parent.data, f->parent.len,
                            NULL, 0};
    assert_ok(worker_breed(&f->c.worker, &t, f->s, a, &err), &err);
    assert_ok(genome_validate(a, &f->c.worker.limits, &err), &err);
    assert_int_equal(genome_count_kind(a, GENOME_INPUT), 3);
    assert_int_equal(genome_count_kind(a, GENOME_OUTPUT), 1);
    assert_ok(worker_breed(&f->c.worker, &t, f->s, b, &err), &err);
    assert_true(genome_equal(a, b));
    /* the parent is not the child: the default rates perturb weights */
    assert_false(genome_equal(a, parent));
}

/* A parent of another shape than the task (a valid 5-input, 2-output
 * network) is refused by name before anything is bred from it, for either
 * parent of a crossover: the worker never runs a network the task cannot
 * feed. */
static void test_worker_breed_refuses_parent_of_wrong_shape(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct genome *g = &f->g[0], *child = &f->g[1];
    struct tv_rng rng = tu_rng(3, 0, 0);
    assert_ok(genome_build_minimal(g, 5, 2, GENOME_ACT_TANH, 1.0, &rng, &err), &err);
    assert_ok(genome_encode(g, &f->parent2, &err), &err);
    minimal_parent(&f->parent, 3);
    struct worker_task t = {12,   1, 0, WORKER_OP_MUTATE, 7, 8, -1, f->parent2.data, f->parent2.len,
                            NULL, 0};
    assert_int_equal(worker_breed(&f->c.worker, &t, f->s, child, &err), TV_EINVAL);
    assert_string_equal(err.msg, "child 12: parent 8: the network has 5 inputs and 2 outputs; "
                                 "task xor takes 3 inputs and 1 output");
    t = (struct worker_task){13,
                             1,
                             1,
                             WORKER_OP_CROSSOVER,
                             7,
                             7,
                             8,
                             f->parent.data,
                             f->parent.len,
                             f->parent2.data,
                             f->parent2.len};
    assert_int_equal(worker_breed(&f->c.worker, &t, f->s, child, &err), TV_EINVAL);
    assert_non_null(strstr(err.msg, "child 13: parent 8: the network has 5 inputs"));
}

static void test_worker_breed_crossover_gives_valid_child(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    minimal_parent(&f->parent, 3);
    minimal_parent(&f->parent2, 4);
    struct genome *a = &f->g[0];
    for (int32_t op = WORKER_OP_CROSSOVER; op <= WORKER_OP_CROSSOVER_MUTATE; op++) {
        struct worker_task t = {
            12, 1, 0, op, 7, 7, 8, f->parent.data, f->parent.len, f->parent2.data, f->parent2.len};
        assert_ok(worker_breed(&f->c.worker, &t, f->s, a, &err), &err);
        assert_ok(genome_validate(a, NULL, &err), &err);
        assert_int_equal(a->n_conns, 3);
    }
}

static void test_worker_breed_corrupt_parent_named(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    minimal_parent(&f->parent, 3);
    struct genome *a = &f->g[0];
    /* truncated */
    struct worker_task t = {
        12, 1, 0, WORKER_OP_MUTATE, 7, 7, -1, f->parent.data, f->parent.len - 1, NULL, 0};
    int rc = worker_breed(&f->c.worker, &t, f->s, a, &err);
    assert_int_not_equal(rc, 0);
    assert_msg_has(&err, "child 12: parent 7");
    /* garbage bytes */
    uint8_t junk[32];
    memset(junk, 0xc1, sizeof junk);
    t.genome1 = junk;
    t.genome1_len = sizeof junk;
    rc = worker_breed(&f->c.worker, &t, f->s, a, &err);
    assert_int_not_equal(rc, 0);
    assert_msg_has(&err, "parent 7");
    /* the second parent of a crossover */
    struct worker_task x = {13,   1, 0, WORKER_OP_CROSSOVER, 7, 7, 8, f->parent.data, f->parent.len,
                            junk, 5};
    rc = worker_breed(&f->c.worker, &x, f->s, a, &err);
    assert_int_not_equal(rc, 0);
    assert_msg_has(&err, "child 13: parent 8");
    /* every truncation of the parent is refused */
    for (size_t len = 0; len < f->parent.len; len++) {
        uint8_t *q = copy_of(f->parent.data, len);
        struct worker_task u = {14, 1, 0, WORKER_OP_MUTATE, 7, 9, -1, q, len, NULL, 0};
        tv_error_clear(&err);
        rc = worker_breed(&f->c.worker, &u, f->s, a, &err);
        assert_int_not_equal(rc, 0);
        assert_msg_has(&err, "parent 9");
        free(q);
    }
}

static void test_worker_breed_missing_parent_named(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct genome *a = &f->g[0];
    struct worker_task t = {12, 1, 0, WORKER_OP_MUTATE, 7, 7, -1, NULL, 0, NULL, 0};
    assert_error(worker_breed(&f->c.worker, &t, f->s, a, &err), &err, TV_EFORMAT,
                 "child 12: parent 7: genome missing from the task");
    minimal_parent(&f->parent, 3);
    struct worker_task x = {
        13, 1, 0, WORKER_OP_CROSSOVER_MUTATE, 7, 7, 8, f->parent.data, f->parent.len, NULL, 0};
    assert_error(worker_breed(&f->c.worker, &x, f->s, a, &err), &err, TV_EFORMAT,
                 "child 13: parent 8: genome missing");
}

static void test_worker_breed_unknown_op(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct genome *a = &f->g[0];
    struct worker_task t = init_task(5, 1);
    t.op = 9;
    assert_error(worker_breed(&f->c.worker, &t, f->s, a, &err), &err, TV_EINVAL,
                 "child 5: unknown operator 9");
}

/* [genome] max_neurons must bound what mutation makes: a parent already at
 * the limit gets no new neuron even when add_neuron_rate is 1, so that the
 * master (which decodes children with the same limits) can take the child. */
static void test_worker_breed_respects_configured_limits(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct master_config c;
    parse_ok(&c, "[run]\ntask = xor\n[genome]\nmax_neurons = 4\nmax_conns = 3\n"
                 "add_neuron_rate = 1\nadd_local_rate = 1\nadd_skip_rate = 1\n"
                 "add_recurrent_rate = 1\ndel_conn_rate = 0\n");
    struct task_instance *task;
    assert_ok(master_config_open_task(&c, &task, &err), &err);
    minimal_parent(&f->parent, 3); /* 4 neurons, 3 connections: at the limits */
    struct genome *a = &f->g[0];
    int rc = 0;
    for (uint64_t seed = 1; seed <= 5 && !rc; seed++) {
        struct worker_task t = {
            12, 1, 0, WORKER_OP_MUTATE, seed, 7, -1, f->parent.data, f->parent.len, NULL, 0};
        rc = worker_breed(&c.worker, &t, f->s, a, &err);
        if (!rc)
            rc = genome_validate(a, &c.worker.limits, &err);
    }
    task_close(task);
    assert_ok(rc, &err);
}

static void test_worker_evaluate_xor_is_deterministic(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct genome *a = &f->g[0];
    struct worker_task t = init_task(1, 42);
    assert_ok(worker_breed(&f->c.worker, &t, f->s, a, &err), &err);
    struct task_result r1, r2;
    assert_ok(worker_evaluate(&f->c.worker, a, 42, 0, f->s, &r1, &err), &err);
    assert_ok(worker_evaluate(&f->c.worker, a, 42, 0, f->s, &r2, &err), &err);
    assert_memory_equal(&r1.fitness, &r2.fitness, sizeof r1.fitness);
    assert_true(r1.fitness >= 0 && r1.fitness <= 16);
    assert_int_equal(r1.n_figures, 4);
}

static void test_worker_evaluate_invalid_genome_refused(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct genome a;
    genome_init(&a); /* empty: no inputs, no outputs */
    struct task_result r;
    assert_int_not_equal(worker_evaluate(&f->c.worker, &a, 1, 0, f->s, &r, &err), 0);
    assert_true(err.msg[0] != '\0');
    genome_release(&a);
}

static void test_worker_process_batch_round_trip(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    minimal_parent(&f->parent, 3);
    minimal_parent(&f->parent2, 4);
    struct worker_task in[5] = {
        init_task(100, 42),
        init_task(101, 43),
        {102, 1, 2, WORKER_OP_MUTATE, 44, 7, -1, f->parent.data, f->parent.len, NULL, 0},
        {103, 1, 3, WORKER_OP_CROSSOVER_MUTATE, 45, 7, 8, f->parent.data, f->parent.len,
         f->parent2.data, f->parent2.len},
        {104, 1, 4, WORKER_OP_CROSSOVER, 46, 8, 7, f->parent2.data, f->parent2.len, f->parent.data,
         f->parent.len},
    };
    struct tv_buf msg = {0}, out = {0};
    assert_ok(worker_tasks_encode(in, 5, &msg, &err), &err);
    double t0 = monotonic_seconds();
    assert_ok(worker_process(&f->c.worker, f->s, 3, msg.data, msg.len, &out, &err), &err);
    double wall = monotonic_seconds() - t0;
    struct worker_results res;
    assert_ok(worker_results_decode(out.data, out.len, out.len, &res, &err), &err);
    assert_int_equal(res.n, 5);
    /* each child's evaluation time is its own, measured inside the call: not
     * zero, and together no more than the call took */
    double sum = 0;
    for (size_t i = 0; i < 5; i++) {
        assert_true(res.items[i].eval_seconds > 0);
        sum += res.items[i].eval_seconds;
    }
    assert_true(sum <= wall);
    struct genome *got = &f->g[0], *want = &f->g[1];
    for (size_t i = 0; i < 5; i++) {
        const struct worker_result *r = &res.items[i];
        assert_true(r->child_id == in[i].child_id);
        assert_int_equal(r->rank, 3);
        assert_ok(genome_decode(got, r->genome, r->genome_len, NULL, &err), &err);
        /* the same child and fitness as breeding it alone */
        assert_ok(worker_breed(&f->c.worker, &in[i], f->s, want, &err), &err);
        assert_true(genome_equal(got, want));
        struct task_result tr;
        assert_ok(
            worker_evaluate(&f->c.worker, want, in[i].seed, in[i].generation, f->s, &tr, &err),
            &err);
        assert_memory_equal(&tr.fitness, &r->fitness, sizeof tr.fitness);
        assert_int_equal(tr.solved, r->solved);
        /* objectives: this task has no "accuracy" figure; the connections
         * and the device figures are the child's */
        assert_true(isnan(r->obj[WORKER_OBJ_VALID_ACC]));
        assert_true(r->obj[WORKER_OBJ_CONNECTIONS] == (double)want->n_conns);
        struct nn_cost cost;
        assert_ok(nn_genome_cost(want, &cost, &err), &err);
        assert_true(r->obj[WORKER_OBJ_FLASH] == (double)cost.flash);
        assert_true(r->obj[WORKER_OBJ_RAM] == (double)cost.ram);
        assert_true(r->obj[WORKER_OBJ_MACS] == (double)cost.macs);
    }
    worker_results_release(&res);
    /* a second batch through the same scratch: the same bytes */
    struct tv_buf out2 = {0};
    assert_ok(worker_process(&f->c.worker, f->s, 3, msg.data, msg.len, &out2, &err), &err);
    assert_ok(worker_results_decode(out2.data, out2.len, out2.len, &res, &err), &err);
    for (size_t i = 0; i < 5; i++) {
        assert_ok(genome_decode(got, res.items[i].genome, res.items[i].genome_len, NULL, &err),
                  &err);
        assert_ok(worker_breed(&f->c.worker, &in[i], f->s, want, &err), &err);
        assert_true(genome_equal(got, want));
    }
    worker_results_release(&res);
    tv_buf_free(&msg);
    tv_buf_free(&out);
    tv_buf_free(&out2);
}

/* Budgets: a child over max_flash is bred again from the next sub-streams
 * of its seed (worker_breed_attempt) until it fits, and returned as that
 * child; one that never fits in WORKER_BUDGET_TRIES is scored failed
 * (fitness NaN) with its figures; the same batch gives the same bytes. */
static void test_worker_process_budget_breeds_again(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    minimal_parent(&f->parent, 3);
    struct genome *parent = &f->g[2];
    assert_ok(genome_decode(parent, f->parent.data, f->parent.len, NULL, &err), &err);
    struct nn_cost pc;
    assert_ok(nn_genome_cost(parent, &pc, &err), &err);
    f->c.worker.mutation.add_neuron_rate = 0.5; /* a new neuron: more flash */
    f->c.worker.max_flash = (int64_t)pc.flash;  /* the parent's: a new neuron is over */
    enum { N = 24 };
    struct worker_task in[N];
    for (size_t i = 0; i < N; i++)
        in[i] = (struct worker_task){200 + (int64_t)i,
                                     1,
                                     (uint32_t)i,
                                     WORKER_OP_MUTATE,
                                     1000 + i,
                                     7,
                                     -1,
                                     f->parent.data,
                                     f->parent.len,
                                     NULL,
                                     0};
    struct tv_buf msg = {0}, out = {0}, out2 = {0};
    assert_ok(worker_tasks_encode(in, N, &msg, &err), &err);
    assert_ok(worker_process(&f->c.worker, f->s, 1, msg.data, msg.len, &out, &err), &err);
    assert_ok(worker_process(&f->c.worker, f->s, 1, msg.data, msg.len, &out2, &err), &err);
    struct worker_results res, res2;
    assert_ok(worker_results_decode(out.data, out.len, out.len, &res, &err), &err);
    assert_ok(worker_results_decode(out2.data, out2.len, out2.len, &res2, &err), &err);
    for (size_t i = 0; i < N; i++) { /* the same but for the time taken */
        const struct worker_result *a = &res.items[i], *b = &res2.items[i];
        assert_memory_equal(&a->fitness, &b->fitness, sizeof a->fitness);
        assert_memory_equal(a->obj, b->obj, sizeof a->obj);
        assert_int_equal(a->genome_len, b->genome_len);
        assert_memory_equal(a->genome, b->genome, a->genome_len);
    }
    worker_results_release(&res2);
    size_t bred_again = 0;
    struct genome *got = &f->g[0], *first = &f->g[1];
    for (size_t i = 0; i < N; i++) {
        const struct worker_result *r = &res.items[i];
        assert_false(isnan(r->fitness)); /* half the tries fit: 8 in a row over is rare */
        assert_true(r->obj[WORKER_OBJ_FLASH] <= (double)pc.flash);
        assert_ok(genome_decode(got, r->genome, r->genome_len, NULL, &err), &err);
        assert_ok(worker_breed(&f->c.worker, &in[i], f->s, first, &err), &err);
        if (genome_equal(got, first))
            continue;
        bred_again++;
        int found = 0; /* it is one of the later tries */
        for (uint32_t k = 1; k < WORKER_BUDGET_TRIES && !found; k++) {
            assert_ok(worker_breed_attempt(&f->c.worker, &in[i], k, f->s, first, &err), &err);
            found = genome_equal(got, first);
        }
        assert_true(found);
    }
    assert_true(bred_again > 0);
    worker_results_release(&res);
    /* a budget no child fits: every one failed, not evaluated, its figures kept */
    f->c.worker.max_flash = 1;
    out.len = 0;
    assert_ok(worker_process(&f->c.worker, f->s, 1, msg.data, msg.len, &out, &err), &err);
    assert_ok(worker_results_decode(out.data, out.len, out.len, &res, &err), &err);
    for (size_t i = 0; i < N; i++) {
        assert_true(isnan(res.items[i].fitness));
        assert_true(res.items[i].obj[WORKER_OBJ_FLASH] > 1); /* measured, over */
        assert_true(isnan(res.items[i].obj[WORKER_OBJ_VALID_ACC]));
    }
    worker_results_release(&res);
    tv_buf_free(&msg);
    tv_buf_free(&out);
    tv_buf_free(&out2);
}

/* A task whose evaluation grows the child, as training may: a hidden neuron
 * between the first input and the output (more flash), fitness 1. */
static int grow_open(struct task_instance *t, struct tv_error *err)
{
    (void)err;
    t->n_inputs = 3;
    t->n_outputs = 1;
    t->out_act = GENOME_ACT_NEAT_SIGMOID;
    t->max_fitness = 1;
    return 0;
}

static int grow_evaluate(const struct task_instance *t, const struct nn_plan *plan,
                         struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    (void)t, (void)plan, (void)rng, (void)err;
    out->fitness = 1;
    return 0;
}

static int grow_evaluate_genome(const struct task_instance *t, struct genome *g, int64_t generation,
                                struct tv_rng *rng, struct task_result *out, struct tv_error *err)
{
    (void)t, (void)generation, (void)rng;
    uint32_t out_id = 0;
    for (size_t i = 0; i < g->n_neurons; i++)
        if (g->neurons[i].kind == GENOME_OUTPUT)
            out_id = g->neurons[i].id;
    int rc = genome_add_neuron(g, 5000, GENOME_HIDDEN, GENOME_ACT_RELU, 0, 0.5f, err);
    if (!rc)
        rc = genome_add_conn(g, 0, 5000, 0.5f, err);
    if (!rc)
        rc = genome_add_conn(g, 5000, out_id, 0.5f, err);
    out->fitness = 1;
    return rc;
}

static const struct task_kind task_grow = {.abi_version = TASK_ABI_VERSION,
                                           .name = "grow",
                                           .summary = "grows the child it evaluates",
                                           .open = grow_open,
                                           .evaluate = grow_evaluate,
                                           .evaluate_genome = grow_evaluate_genome};

/* A child within the budget when bred but over it once the task left it
 * (training may grow a network) is scored failed, with the figures of what
 * the task left; within a larger budget it keeps its fitness. */
static void test_worker_process_budget_checked_after_training(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct task_instance *grow;
    struct task_params tp = {0};
    assert_ok(task_open(&task_grow, &tp, &grow, &err), &err);
    minimal_parent(&f->parent, 3);
    struct genome *parent = &f->g[2];
    assert_ok(genome_decode(parent, f->parent.data, f->parent.len, NULL, &err), &err);
    struct nn_cost pc;
    assert_ok(nn_genome_cost(parent, &pc, &err), &err);
    struct worker_params wp = f->c.worker;
    wp.task = grow;
    wp.mutation.add_neuron_rate = 0; /* bred: the parent's size */
    wp.mutation.add_local_rate = 0;
    wp.mutation.add_skip_rate = 0;
    wp.max_flash = (int64_t)pc.flash;
    struct worker_task in = {300,           1,    0, WORKER_OP_MUTATE, 77, 7, -1, f->parent.data,
                             f->parent.len, NULL, 0};
    struct tv_buf msg = {0}, out = {0};
    assert_ok(worker_tasks_encode(&in, 1, &msg, &err), &err);
    for (int big = 0; big < 2; big++) {
        wp.max_flash = big ? (int64_t)pc.flash * 4 : (int64_t)pc.flash;
        out.len = 0;
        assert_ok(worker_process(&wp, f->s, 1, msg.data, msg.len, &out, &err), &err);
        struct worker_results res;
        assert_ok(worker_results_decode(out.data, out.len, out.len, &res, &err), &err);
        const struct worker_result *r = &res.items[0];
        assert_ok(genome_decode(&f->g[0], r->genome, r->genome_len, NULL, &err), &err);
        assert_int_equal(f->g[0].n_neurons, parent->n_neurons + 1); /* grown */
        assert_true(r->obj[WORKER_OBJ_FLASH] > (double)pc.flash);
        if (big)
            assert_true(r->fitness == 1);
        else
            assert_true(isnan(r->fitness));
        worker_results_release(&res);
    }
    tv_buf_free(&msg);
    tv_buf_free(&out);
    task_close(grow);
}

/* ---- a CNN search with training (classify, init = net with channels) ---- */

/* In tu_tmpdir(): cnn.csv (2x2 images, 3 classes) and cnn_ACT.net, a start
 * of one input channel and one hidden channel of activation act. */
static void cnn_files(const char *act)
{
    char path[256];
    snprintf(path, sizeof path, "%s/cnn.csv", tu_tmpdir());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "p0,p1,p2,p3,label\n");
    for (int i = 0; i < 30; i++)
        fprintf(f, "%d,%d,%d,%d,%d\n", i % 3 == 0, i % 3 == 1, i % 3 == 2, i % 2, i % 3);
    fclose(f);
    snprintf(path, sizeof path, "%s/cnn_%s.net", tu_tmpdir(), act);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "trevo-net 4\ninputs 4\noutputs 3\n");
    for (int i = 0; i < 4; i++)
        fprintf(f, "neuron %d in 0 identity 0\n", i);
    for (int i = 4; i < 7; i++)
        fprintf(f, "neuron %d out 1 identity 0\nconn %d %d 0.5\n", i, 96 + i, i);
    fprintf(f,
            "channel 0 in 2 2 1 0 identity 0 0\n"
            "channel 1 hid 2 2 1 0.5 %s 0.1 100\n"
            "filter 0 1 3 3 1 1 1,1,0.5 0,1,-0.25\n",
            act);
    fclose(f);
}

/* A classify config over cnn_files(act): [genome] lines `genome`, [task]
 * lines `task`. */
static char *cnn_config(const char *act, const char *genome, const char *task)
{
    char *text = malloc(4096);
    assert_non_null(text);
    snprintf(text, 4096,
             "[run]\ntask = classify\n[genome]\ninit = net\ninit_net = %s/cnn_%s.net\n%s"
             "[task]\ntrain = %s/cnn.csv\nvalidation = 0.3\n%s",
             tu_tmpdir(), act, genome, tu_tmpdir(), task);
    return text;
}

static void test_master_config_cnn_training_refuses_input_conns(void **state)
{
    (void)state;
    cnn_files("relu");
    static const char *const keys[] = {"add_local_rate", "add_skip_rate", "add_local_per_conn",
                                       "add_skip_per_conn"};
    for (size_t k = 0; k < 4; k++) {
        char genome[160], line[64];
        snprintf(genome, sizeof genome, "%s = 0.25\n%s = 0\nadd_channel_rate = 0.5\n", keys[k],
                 k == 0 ? "add_skip_rate" : "add_local_rate");
        if (k >= 2)
            strcat(genome, "add_skip_rate = 0\n");
        char *text = cnn_config("relu", genome, "train_steps = 5\n");
        snprintf(line, sizeof line, "x.ini:6: %s: is 0.25;", keys[k]);
        parse_fails(text, line, "train_steps > 0", "set add_local_rate, add_skip_rate", NULL);
        free(text);
    }
    /* the defaults (add_local_rate 0.3) too, named without a line */
    char *text = cnn_config("relu", "", "train_steps = 5\n");
    parse_fails(text, "x.ini: add_local_rate: is 0.3;", NULL);
    free(text);
    /* accepted without training, or with the rates at 0; training turns
     * join_levels on */
    struct master_config c;
    text = cnn_config("relu", "add_channel_rate = 0.5\n", "");
    parse_ok(&c, text);
    assert_int_equal(c.worker.mutation.conv.join_levels, 0);
    free(text);
    text = cnn_config("relu", "add_local_rate = 0\nadd_skip_rate = 0\n", "train_steps = 5\n");
    parse_ok(&c, text);
    assert_int_equal(c.worker.mutation.conv.join_levels, 1);
    free(text);
}

/* A child whose genome the CNN trainer refuses (its channel's activation is
 * sigmoid) is returned scored failed (fitness NaN), and the batch goes on to
 * the next child; a start the trainer takes scores. */
static void test_worker_process_refused_genome_scored_failed(void **state)
{
    (void)state;
    const char *acts[2] = {"sigmoid", "relu"};
    for (int a = 0; a < 2; a++) {
        cnn_files(acts[a]);
        char *text = cnn_config(acts[a], "add_local_rate = 0\nadd_skip_rate = 0\n",
                                "train_steps = 4\ntrain_batch = 4\n");
        struct master_config c;
        struct task_instance *task = NULL;
        struct tv_error err = {0};
        assert_ok(master_config_parse_task(&c, text, "x.ini", &task, &err), &err);
        struct worker_scratch *s = worker_scratch_new();
        assert_non_null(s);
        struct worker_task in[2] = {init_task(10, 1), init_task(11, 2)};
        struct tv_buf msg = {0}, out = {0};
        assert_ok(worker_tasks_encode(in, 2, &msg, &err), &err);
        assert_ok(worker_process(&c.worker, s, 0, msg.data, msg.len, &out, &err), &err);
        struct worker_results res;
        assert_ok(worker_results_decode(out.data, out.len, out.len, &res, &err), &err);
        assert_int_equal(res.n, 2);
        for (size_t i = 0; i < 2; i++) {
            assert_true(res.items[i].child_id == in[i].child_id);
            assert_int_equal(isnan(res.items[i].fitness) != 0, a == 0);
            assert_int_equal(res.items[i].solved, 0);
            /* the validation accuracy classify scored, none for a failed child */
            double acc = res.items[i].obj[WORKER_OBJ_VALID_ACC];
            if (a == 0)
                assert_true(isnan(acc));
            else
                assert_true(acc >= 0 && acc <= 1);
            assert_true(res.items[i].obj[WORKER_OBJ_CONNECTIONS] >= 0);
        }
        worker_results_release(&res);
        tv_buf_free(&msg);
        tv_buf_free(&out);
        worker_scratch_free(s);
        task_close(task);
        free(text);
    }
}

static void test_worker_process_empty_batch(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct tv_buf msg = {0}, out = {0};
    assert_ok(worker_tasks_encode(NULL, 0, &msg, &err), &err);
    assert_ok(worker_process(&f->c.worker, f->s, 1, msg.data, msg.len, &out, &err), &err);
    struct worker_results res;
    assert_ok(worker_results_decode(out.data, out.len, out.len, &res, &err), &err);
    assert_int_equal(res.n, 0);
    worker_results_release(&res);
    tv_buf_free(&msg);
    tv_buf_free(&out);
}

static void test_worker_process_bad_input_refused(void **state)
{
    struct wfix *f = *state;
    struct tv_error err = {0};
    struct tv_buf out = {0};
    uint8_t junk[] = {0x93, 0x01, 0x02, 0x03};
    assert_error(worker_process(&f->c.worker, f->s, 1, junk, sizeof junk, &out, &err), &err,
                 TV_EFORMAT, "not a trevo-tasks message");
    /* a batch whose second task has a corrupt parent */
    minimal_parent(&f->parent, 3);
    struct worker_task in[2] = {
        init_task(100, 42),
        {101, 1, 1, WORKER_OP_MUTATE, 44, 77, -1, f->parent.data, 3, NULL, 0},
    };
    struct tv_buf msg = {0};
    assert_ok(worker_tasks_encode(in, 2, &msg, &err), &err);
    int rc = worker_process(&f->c.worker, f->s, 1, msg.data, msg.len, &out, &err);
    assert_int_not_equal(rc, 0);
    assert_msg_has(&err, "child 101: parent 77");
    assert_int_equal(out.len, 0);
    /* over the cap */
    struct worker_params p = f->c.worker;
    p.max_message_bytes = msg.len - 1;
    assert_error(worker_process(&p, f->s, 1, msg.data, msg.len, &out, &err), &err, TV_ELIMIT,
                 "over the cap");
    tv_buf_free(&msg);
    tv_buf_free(&out);
}

/* ---- populations ------------------------------------------------------- */

/* Group A: the minimal xor genome (inputs 0, 1, 2; output 3), weights 0.5 +
 * jitter. Group B: A plus four hidden neurons and eight more connections, so
 * that A and B are 8 apart (c_excess = c_disjoint = 1, small genomes). */
static struct genome *make_genome(int group, float jitter)
{
    struct genome *g = tu_minimal_genome(3, 1, GENOME_ACT_NEAT_SIGMOID, 0.5f + jitter);
    struct tv_error err = {0};
    if (group == 1) {
        for (uint32_t h = 100; h < 104; h++)
            assert_ok(genome_add_neuron(g, h, GENOME_HIDDEN, GENOME_ACT_TANH, 0.0f, 0.5f, &err),
                      &err);
        for (uint32_t h = 100; h < 104; h++) {
            assert_ok(genome_add_conn(g, h - 100 < 3 ? h - 100 : 0, h, 1.0f + jitter, &err), &err);
            assert_ok(genome_add_conn(g, h, 3, -1.0f + jitter, &err), &err);
        }
    }
    assert_ok(genome_validate(g, NULL, &err), &err);
    return g;
}

static void add_member(struct master_pop *p, int64_t id, double fitness, int group, float jitter)
{
    struct tv_error err = {0};
    assert_ok(master_pop_add(p, id, fitness, 0, make_genome(group, jitter), &err), &err);
}

/* A config for the evolution tests: xor defaults, population 10. */
static void evo_config(struct master_config *c)
{
    parse_ok(c, "[run]\ntask = xor\n[population]\nsize = 10\n");
}

/* Ids 1..6 in group A (fitness 10, 9, ..., 5), ids 7..10 in group B
 * (fitness 4, 3, 2, 1), added out of order. */
static void two_groups(struct master_pop *p, const struct master_config *c)
{
    master_pop_init(p, c->compat_threshold);
    for (int64_t id = 10; id >= 7; id--)
        add_member(p, id, (double)(11 - id), 1, 0.01f * (float)id);
    for (int64_t id = 1; id <= 6; id++)
        add_member(p, id, (double)(11 - id), 0, 0.01f * (float)id);
    master_pop_sort(p);
}

static const struct master_species *species_of(const struct master_pop *p, int64_t member_id)
{
    ptrdiff_t i = master_pop_find(p, member_id);
    assert_true(i >= 0);
    for (size_t k = 0; k < p->n_species; k++)
        if (p->sp[k].id == p->m[i].species)
            return &p->sp[k];
    fail_msg("member %lld has no species", (long long)member_id);
    return NULL;
}

static void test_master_pop_add_sort_find(void **state)
{
    (void)state;
    struct master_pop p;
    master_pop_init(&p, 3.0);
    assert_true(p.threshold == 3.0);
    add_member(&p, 9, 1.0, 0, 0);
    add_member(&p, 2, NAN, 1, 0);
    add_member(&p, 5, 3.0, 0, 0);
    master_pop_sort(&p);
    assert_int_equal(p.n, 3);
    assert_true(p.m[0].id == 2 && p.m[1].id == 5 && p.m[2].id == 9);
    assert_int_equal(master_pop_find(&p, 2), 0);
    assert_int_equal(master_pop_find(&p, 9), 2);
    assert_int_equal(master_pop_find(&p, 4), -1);
    assert_int_equal(master_pop_find(&p, 100), -1);
    assert_true(isinf(p.m[0].fitness) && p.m[0].fitness < 0); /* NaN ranks last */
    assert_int_equal(p.m[0].n_neurons, 8);
    assert_int_equal(p.m[0].n_conns, 11);
    assert_int_equal(p.m[1].n_conns, 3);
    assert_true(p.m[0].species == -1);
    master_pop_release(&p);
    master_pop_release(&p); /* twice: a no-op */
    /* many members: growth */
    master_pop_init(&p, 3.0);
    for (int64_t id = 200; id > 0; id--)
        add_member(&p, id, 0, 0, 0);
    master_pop_sort(&p);
    for (int64_t id = 1; id <= 200; id++)
        assert_int_equal(master_pop_find(&p, id), id - 1);
    master_pop_release(&p);
}

static void test_master_speciate_separates_groups(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    struct master_pop p;
    two_groups(&p, &c);
    struct tv_error err = {0};
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_int_equal(p.n_species, 2);
    const struct master_species *a = species_of(&p, 1), *b = species_of(&p, 7);
    assert_true(a->id != b->id);
    for (int64_t id = 1; id <= 6; id++)
        assert_true(species_of(&p, id) == a);
    for (int64_t id = 7; id <= 10; id++)
        assert_true(species_of(&p, id) == b);
    assert_int_equal(a->n_members, 6);
    assert_int_equal(b->n_members, 4);
    /* members by fitness, then id; best, mean, improvements */
    for (size_t i = 0; i < a->n_members; i++)
        assert_true(p.m[a->members[i]].id == (int64_t)i + 1);
    assert_true(a->best == 10.0);
    assert_true(a->mean == 7.5);
    assert_true(b->best == 4.0);
    assert_true(b->mean == 2.5);
    assert_true(a->best_ever == 10.0);
    assert_int_equal(a->last_improved, 0);
    assert_int_equal(a->born, 0);
    /* species ids in order of first member: A holds id 1 */
    assert_true(a->id < b->id);
    assert_true(genome_distance(a->rep, p.m[0].genome, &c.distance) < 1.0);
    assert_true(genome_distance(b->rep, p.m[6].genome, &c.distance) < 1.0);
    /* Speciating again keeps the species and their ids. */
    int64_t ida = a->id, idb = b->id;
    assert_ok(master_speciate(&p, &c, 1, &err), &err);
    assert_int_equal(p.n_species, 2);
    assert_true(species_of(&p, 2)->id == ida);
    assert_true(species_of(&p, 9)->id == idb);
    assert_int_equal(species_of(&p, 2)->last_improved, 0); /* no improvement */
    master_pop_release(&p);
}

static void test_master_speciate_one_group_one_species(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    struct master_pop p;
    master_pop_init(&p, c.compat_threshold);
    for (int64_t id = 1; id <= 5; id++)
        add_member(&p, id, 1.0, 1, 0.001f * (float)id);
    struct tv_error err = {0};
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_int_equal(p.n_species, 1);
    assert_int_equal(p.sp[0].n_members, 5);
    /* equal fitness: ranked by id */
    for (size_t i = 0; i < 5; i++)
        assert_true(p.m[p.sp[0].members[i]].id == (int64_t)i + 1);
    master_pop_release(&p);
}

static void test_master_speciate_threshold_steering(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    struct tv_error err = {0};
    struct master_pop p;
    /* too few species (2 < 10): down by threshold_step */
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_true(fabs(p.threshold - (3.0 - 0.3)) < 1e-12);
    assert_ok(master_speciate(&p, &c, 1, &err), &err);
    assert_true(fabs(p.threshold - (3.0 - 0.6)) < 1e-12);
    /* never below threshold_min */
    c.threshold_min = 2.5;
    assert_ok(master_speciate(&p, &c, 2, &err), &err);
    assert_true(p.threshold == 2.5);
    assert_ok(master_speciate(&p, &c, 3, &err), &err);
    assert_true(p.threshold == 2.5);
    assert_int_equal(p.n_species, 2);
    master_pop_release(&p);
    /* too many species (2 > 1): up */
    c.target_species = 1;
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_true(fabs(p.threshold - 3.3) < 1e-12);
    master_pop_release(&p);
    /* on target: unchanged; target 0: fixed */
    c.target_species = 2;
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_true(p.threshold == 3.0);
    master_pop_release(&p);
    c.target_species = 0;
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_true(p.threshold == 3.0);
    master_pop_release(&p);
}

/* Speciation passes over representatives by a distance bound: the
 * membership must still be exactly that of comparing every distance, in
 * species order. Random lineages (mutated copies of a few founders, sizes
 * from 3 to about 40 connections), several generations, thresholds tight
 * and loose; each generation is checked against a naive first-match pass
 * over copies of the representatives it started from. */
static void test_master_speciate_equals_naive_first_match(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    struct tv_error err = {0};
    struct genome_mutation mut = tu_aggressive_mutation();
    size_t longest = 0;
    for (int trial = 0; trial < 4; trial++) {
        struct tv_rng r = tu_rng(77, (uint64_t)trial, 0);
        c.distance.small_genome = trial % 2 ? 1 : 20;
        struct master_pop p;
        master_pop_init(&p, 0.5 + trial);
        struct genome *founders[4];
        for (int f = 0; f < 4; f++) {
            founders[f] = genome_new();
            tu_random_genome(founders[f], &r, 2 + 6 * (uint32_t)f);
        }
        int64_t id = 1;
        for (int gen = 0; gen < 5; gen++) {
            /* the population: fresh mutants of the founders */
            for (size_t i = 0; i < p.n; i++)
                genome_free(p.m[i].genome);
            p.n = 0;
            for (int i = 0; i < 150; i++) {
                struct genome *g = genome_new();
                assert_ok(genome_copy(g, founders[tv_rng_below(&r, 4)], &err), &err);
                uint32_t k = tv_rng_below(&r, 4);
                for (uint32_t j = 0; j < k; j++)
                    assert_ok(genome_mutate(g, &mut, &r, &err), &err);
                assert_ok(master_pop_add(&p, id++, tv_rng_uniform(&r), 0, g, &err), &err);
            }
            /* the naive pass, on copies of the representatives */
            size_t n_reps = p.n_species, cap = p.n_species + p.n;
            struct genome **reps = calloc(cap, sizeof *reps);
            int64_t *rep_ids = calloc(cap, sizeof *rep_ids), *want = calloc(p.n, sizeof *want);
            assert_true(reps && rep_ids && want);
            for (size_t k = 0; k < n_reps; k++) {
                reps[k] = genome_new();
                assert_ok(genome_copy(reps[k], p.sp[k].rep, &err), &err);
                rep_ids[k] = p.sp[k].id;
            }
            int64_t next_sid = p.next_species_id;
            double threshold = p.threshold;
            size_t founded = 0;
            for (size_t i = 0; i < p.n; i++) {
                size_t k = 0;
                while (k < n_reps &&
                       !(genome_distance(p.m[i].genome, reps[k], &c.distance) < threshold))
                    k++;
                if (k == n_reps) {
                    reps[n_reps] = genome_new();
                    assert_ok(genome_copy(reps[n_reps], p.m[i].genome, &err), &err);
                    rep_ids[n_reps++] = next_sid++;
                    founded++;
                }
                want[i] = rep_ids[k];
            }
            assert_ok(master_speciate(&p, &c, gen, &err), &err);
            for (size_t i = 0; i < p.n; i++)
                assert_int_equal(p.m[i].species, want[i]);
            /* members ranked by fitness, then id (long lists are sorted
             * another way than short ones) */
            for (size_t k = 0; k < p.n_species; k++) {
                const struct master_species *sp = &p.sp[k];
                longest = sp->n_members > longest ? sp->n_members : longest;
                for (size_t i = 1; i < sp->n_members; i++) {
                    const struct master_member *x = &p.m[sp->members[i - 1]],
                                               *y = &p.m[sp->members[i]];
                    assert_true(x->fitness > y->fitness ||
                                (x->fitness == y->fitness && x->id < y->id));
                }
            }

            assert_int_equal(p.next_species_id, next_sid);
            assert_true(founded > 0 || gen > 0);
            for (size_t k = 0; k < n_reps; k++)
                genome_free(reps[k]);
            TV_FREE_ALL(reps, rep_ids, want);
        }
        for (int f = 0; f < 4; f++)
            genome_free(founders[f]);
        master_pop_release(&p);
    }
    assert_true(longest > 32); /* the qsort branch of the ranking ran */
}

static void test_master_speciate_drops_empty_species(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    c.target_species = 0;
    struct tv_error err = {0};
    struct master_pop p;
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_int_equal(p.n_species, 2);
    int64_t ida = species_of(&p, 1)->id;
    /* the next generation has only group A members */
    struct master_pop q;
    master_pop_init(&q, p.threshold);
    q.sp = p.sp;
    q.n_species = p.n_species;
    q.cap_species = p.cap_species;
    q.next_species_id = p.next_species_id;
    p.sp = NULL;
    p.n_species = p.cap_species = 0;
    master_pop_release(&p);
    for (int64_t id = 20; id < 25; id++)
        add_member(&q, id, 1.0, 0, 0.02f);
    assert_ok(master_speciate(&q, &c, 1, &err), &err);
    assert_int_equal(q.n_species, 1);
    assert_true(q.sp[0].id == ida);
    assert_int_equal(q.sp[0].n_members, 5);
    master_pop_release(&q);
}

/* Checks a plan against the rules that hold for every plan. */
static void check_plan(const struct master_pop *p, const struct master_config *c,
                       const int64_t *elites, size_t n_elites, const struct master_child *ch,
                       size_t n_children)
{
    assert_int_equal(n_elites + n_children, (size_t)c->pop_size);
    for (size_t i = 0; i < n_elites; i++) {
        assert_true(master_pop_find(p, elites[i]) >= 0);
        if (i)
            assert_true(elites[i - 1] < elites[i]);
    }
    for (size_t i = 0; i < n_children; i++) {
        ptrdiff_t a = master_pop_find(p, ch[i].parent1);
        assert_true(a >= 0);
        if (ch[i].op == WORKER_OP_MUTATE) {
            assert_true(ch[i].parent2 == -1);
            continue;
        }
        assert_true(ch[i].op == WORKER_OP_CROSSOVER || ch[i].op == WORKER_OP_CROSSOVER_MUTATE);
        ptrdiff_t b = master_pop_find(p, ch[i].parent2);
        assert_true(b >= 0);
        assert_true(a != b);
        const struct master_member *x = &p->m[a], *y = &p->m[b];
        assert_true(x->fitness > y->fitness || (x->fitness == y->fitness && x->id < y->id));
    }
}

static size_t rank_in_species(const struct master_pop *p, const struct master_species *s,
                              int64_t id)
{
    for (size_t i = 0; i < s->n_members; i++)
        if (p->m[s->members[i]].id == id)
            return i;
    fail_msg("member %lld not in species %lld", (long long)id, (long long)s->id);
    return 0;
}

static void test_master_plan_speciated(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    struct tv_error err = {0};
    struct master_pop p;
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    size_t n_cross = 0;
    for (uint64_t seed = 0; seed < 20; seed++) {
        struct tv_rng rng = tu_rng(seed, 0, 0);
        int64_t *elites;
        struct master_child *ch;
        size_t ne, nc;
        assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
        check_plan(&p, &c, elites, ne, ch, nc);
        /* species A (6 >= elitism_min_size 5) keeps its best; B (4) keeps none */
        assert_int_equal(ne, 1);
        assert_true(elites[0] == 1);
        /* shares of mean fitness above the lowest (1): A 6.5, B 1.5 of 10
         * -> 8.125 and 1.875 -> 8 and 2 */
        const struct master_species *a = species_of(&p, 1), *b = species_of(&p, 7);
        assert_int_equal(a->offspring, 8);
        assert_int_equal(b->offspring, 2);
        size_t from_a = 0, from_b = 0;
        for (size_t i = 0; i < nc; i++) {
            const struct master_species *s = species_of(&p, ch[i].parent1);
            from_a += s == a;
            from_b += s == b;
            /* parents are among the survivors of their species: ceil(0.2 n),
             * at least 2 */
            assert_true(rank_in_species(&p, s, ch[i].parent1) < 2);
            if (ch[i].parent2 >= 0) {
                assert_true(species_of(&p, ch[i].parent2) == s);
                assert_true(rank_in_species(&p, s, ch[i].parent2) < 2);
                n_cross++;
            }
        }
        assert_int_equal(from_a, 7);
        assert_int_equal(from_b, 2);
        TV_FREE_ALL(elites, ch);
    }
    assert_true(n_cross > 0);
    master_pop_release(&p);
}

static void test_master_plan_elitism_min_size_zero(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    c.elitism_min_size = 0;
    c.elitism = 2;
    struct tv_error err = {0};
    struct master_pop p;
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    struct tv_rng rng = tu_rng(1, 0, 0);
    int64_t *elites;
    struct master_child *ch;
    size_t ne, nc;
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    /* the two best of each species, sorted by id */
    assert_int_equal(ne, 4);
    assert_true(elites[0] == 1 && elites[1] == 2 && elites[2] == 7 && elites[3] == 8);
    TV_FREE_ALL(elites, ch);
    master_pop_release(&p);
}

static void test_master_plan_same_seed_same_plan(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    struct tv_error err = {0};
    struct master_pop p;
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    for (int sel = 0; sel < 2; sel++) {
        c.selection = sel;
        int64_t *e[2];
        struct master_child *ch[2];
        size_t ne[2], nc[2];
        for (int k = 0; k < 2; k++) {
            struct tv_rng rng = tu_rng(1234, 5, 0);
            assert_ok(master_plan(&p, &c, 0, &rng, &e[k], &ne[k], &ch[k], &nc[k], &err), &err);
        }
        assert_int_equal(ne[0], ne[1]);
        assert_int_equal(nc[0], nc[1]);
        for (size_t i = 0; i < ne[0]; i++)
            assert_true(e[0][i] == e[1][i]);
        for (size_t i = 0; i < nc[0]; i++) {
            assert_int_equal(ch[0][i].op, ch[1][i].op);
            assert_true(ch[0][i].parent1 == ch[1][i].parent1);
            assert_true(ch[0][i].parent2 == ch[1][i].parent2);
        }
        for (int k = 0; k < 2; k++) {
            free(e[k]);
            free(ch[k]);
        }
    }
    master_pop_release(&p);
}

static void test_master_plan_stagnant_species_gets_nothing(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    c.species_elitism = 1;
    struct tv_error err = {0};
    struct master_pop p;
    two_groups(&p, &c);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    struct master_species *b = (struct master_species *)species_of(&p, 7);
    b->last_improved = -100; /* far past, and B's best_ever (4) is not the best */
    struct tv_rng rng = tu_rng(1, 0, 0);
    int64_t *elites;
    struct master_child *ch;
    size_t ne, nc;
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    assert_int_equal(b->offspring, 0);
    assert_int_equal(species_of(&p, 1)->offspring, 10);
    for (size_t i = 0; i < nc; i++)
        assert_true(ch[i].parent1 <= 6 && ch[i].parent2 <= 6);
    for (size_t i = 0; i < ne; i++)
        assert_true(elites[i] <= 6);
    TV_FREE_ALL(elites, ch);
    /* protected while among the species_elitism best */
    c.species_elitism = 2;
    tv_rng_init(&rng, 1, 0, 0);
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    assert_true(b->offspring > 0);
    TV_FREE_ALL(elites, ch);
    /* the best species stagnant but protected: it keeps breeding */
    c.species_elitism = 1;
    b->last_improved = 0;
    struct master_species *a = (struct master_species *)species_of(&p, 1);
    a->last_improved = -100;
    tv_rng_init(&rng, 1, 0, 0);
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    assert_int_equal(a->offspring, 8);
    assert_int_equal(b->offspring, 2);
    TV_FREE_ALL(elites, ch);
    /* every species stagnant and unprotected: all breed rather than none */
    c.species_elitism = 0;
    b->last_improved = -100;
    tv_rng_init(&rng, 1, 0, 0);
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    assert_int_equal(a->offspring + b->offspring, 10);
    TV_FREE_ALL(elites, ch);
    master_pop_release(&p);
}

static void test_master_plan_generational(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    c.selection = MASTER_SEL_GENERATIONAL;
    c.elitism = 3;
    struct tv_error err = {0};
    struct master_pop p;
    two_groups(&p, &c); /* no speciation needed */
    size_t n_cross = 0;
    for (uint64_t seed = 0; seed < 10; seed++) {
        struct tv_rng rng = tu_rng(seed, 0, 0);
        int64_t *elites;
        struct master_child *ch;
        size_t ne, nc;
        assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
        check_plan(&p, &c, elites, ne, ch, nc);
        assert_int_equal(ne, 3);
        assert_true(elites[0] == 1 && elites[1] == 2 && elites[2] == 3);
        assert_int_equal(nc, 7);
        for (size_t i = 0; i < nc; i++)
            n_cross += ch[i].parent2 >= 0;
        TV_FREE_ALL(elites, ch);
    }
    assert_true(n_cross > 0);
    /* elitism above the population: every member kept, and no more than pop_size */
    c.elitism = 1000;
    struct tv_rng rng = tu_rng(1, 0, 0);
    int64_t *elites;
    struct master_child *ch;
    size_t ne, nc;
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    assert_int_equal(ne, 10);
    assert_int_equal(nc, 0);
    TV_FREE_ALL(elites, ch);
    /* a larger next generation than the population */
    c.elitism = 1;
    c.pop_size = 25;
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    TV_FREE_ALL(elites, ch);
    master_pop_release(&p);
}

static void test_master_plan_ties_broken_by_id(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    c.selection = MASTER_SEL_GENERATIONAL;
    c.elitism = 1;
    c.crossover_rate = 1.0;
    c.tournament_size = 1;
    struct tv_error err = {0};
    struct master_pop p;
    master_pop_init(&p, 3.0);
    add_member(&p, 5, 7.0, 0, 0);
    add_member(&p, 3, 7.0, 0, 0);
    master_pop_sort(&p);
    struct tv_rng rng = tu_rng(1, 0, 0);
    int64_t *elites;
    struct master_child *ch;
    size_t ne, nc;
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    assert_int_equal(ne, 1);
    assert_true(elites[0] == 3);
    for (size_t i = 0; i < nc; i++)
        if (ch[i].parent2 >= 0)
            assert_true(ch[i].parent1 == 3 && ch[i].parent2 == 5);
    TV_FREE_ALL(elites, ch);
    /* speciated: the species' best is the lower id, and the elite */
    c.selection = MASTER_SEL_SPECIATED;
    c.elitism_min_size = 1;
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_int_equal(p.n_species, 1);
    assert_true(p.m[p.sp[0].members[0]].id == 3);
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    assert_int_equal(ne, 1);
    assert_true(elites[0] == 3);
    TV_FREE_ALL(elites, ch);
    master_pop_release(&p);
}

static void test_master_plan_single_member_species_mutates_only(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    c.crossover_rate = 1.0;
    c.elitism_min_size = 1;
    struct tv_error err = {0};
    struct master_pop p;
    master_pop_init(&p, 3.0);
    add_member(&p, 1, 2.0, 0, 0);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    struct tv_rng rng = tu_rng(1, 0, 0);
    int64_t *elites;
    struct master_child *ch;
    size_t ne, nc;
    assert_ok(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err);
    check_plan(&p, &c, elites, ne, ch, nc);
    assert_int_equal(ne, 1);
    for (size_t i = 0; i < nc; i++)
        assert_int_equal(ch[i].op, WORKER_OP_MUTATE);
    TV_FREE_ALL(elites, ch);
    master_pop_release(&p);
}

static void test_master_plan_empty_population_refused(void **state)
{
    (void)state;
    struct master_config c;
    evo_config(&c);
    struct master_pop p;
    master_pop_init(&p, 3.0);
    struct tv_rng rng = tu_rng(1, 0, 0);
    int64_t *elites = NULL;
    struct master_child *ch = NULL;
    size_t ne = 0, nc = 0;
    struct tv_error err = {0};
    for (int sel = 0; sel < 2; sel++) {
        c.selection = sel;
        assert_error(master_plan(&p, &c, 0, &rng, &elites, &ne, &ch, &nc, &err), &err, TV_ESTATE,
                     "plan: the population is empty");
    }
    master_pop_release(&p);
}

/* ---- the input row parser of `trevo net eval` (row.c) -------------------- */

static void expect_row_error(const char *line, size_t n, const char *msg)
{
    struct tv_error err = {0};
    float v[8];
    assert_int_equal(cli_row_parse(line, strlen(line), v, n, &err), TV_EINVAL);
    assert_int_equal(err.code, TV_EINVAL);
    assert_string_equal(err.msg, msg);
}

static void test_master_row_parse_reads_numbers(void **state)
{
    (void)state;
    struct tv_error err = {0};
    float v[4];
    const char *line = " 1.5, -2e-3 ,0x1p-2,\t7 \r";
    assert_int_equal(cli_row_parse(line, strlen(line), v, 4, &err), 0);
    assert_true(v[0] == 1.5f && v[1] == -2e-3f && v[2] == 0.25f && v[3] == 7.0f);
    /* only len bytes are read: no NUL needed */
    const char buf[3] = {'4', ',', '5'};
    assert_int_equal(cli_row_parse(buf, 3, v, 2, &err), 0);
    assert_true(v[0] == 4.0f && v[1] == 5.0f);
}

static void test_master_row_parse_rejects_bad_rows(void **state)
{
    (void)state;
    expect_row_error("1,2", 3, "expected 3 numbers, got 2");
    expect_row_error("1,2,3,4", 3, "expected 3 numbers, got 4");
    expect_row_error("1,2,3,4,5,6", 2, "expected 2 numbers, got 6");
    expect_row_error("", 1, "expected 1 numbers, got 0");
    expect_row_error("1,,3", 3, "value 2: empty");
    expect_row_error("1,2,", 3, "value 3: empty");
    expect_row_error("1,x1,3", 3, "value 2 ('x1'): not a number");
    expect_row_error("1,2 3", 2, "value 2 ('2 3'): not a number");
    expect_row_error("nan", 1, "value 1 ('nan'): not a finite float");
    expect_row_error("-inf", 1, "value 1 ('-inf'): not a finite float");
    expect_row_error("1e999", 1, "value 1 ('1e999'): not a finite float");
    expect_row_error("1111111111111111111111111111111111111111111111111111111111111111111", 1,
                     "value 1 ('111111111111111111111111...'): not a number (too long)");
    expect_row_error("1,\x01", 2, "value 2 ('?'): not a number");
}

/* ---- the checkpoint's master state (state.c) ---------------------------- */

/* Damages for test_master_state_decode_damage_refused: a member of a
 * species that does not exist, one member fewer than the population. */
static void damage_member_species(struct master_pop *p)
{
    p->m[0].species = 999;
}

static void damage_drop_member(struct master_pop *p)
{
    p->n--;
}

/* (member 2 listed twice, member 3 not at all: found by fuzzing) */
static void damage_member_twice(struct master_pop *p)
{
    p->m[3].id = p->m[2].id;
}

/* A speciated two_groups population, one member marked solved, and its
 * state encoded with next_id 11. */
static void state_sample(struct master_pop *p, struct master_config *c, struct tv_buf *out)
{
    struct tv_error err = {0};
    evo_config(c);
    two_groups(p, c);
    assert_ok(master_speciate(p, c, 0, &err), &err);
    p->m[master_pop_find(p, 7)].solved = 1;
    assert_ok(master_state_encode(p, 11, out, &err), &err);
}

/* Decodes bytes[0..len) (a malloc'd copy: ASan sees over-reads) into a fresh
 * two_groups population, as a resume does; returns the code. */
static int state_decode_copy(const void *bytes, size_t len, struct master_pop *into,
                             int64_t *next_id, struct tv_error *err)
{
    struct master_config c;
    evo_config(&c);
    two_groups(into, &c);
    void *q = copy_of(bytes, len);
    int rc = master_state_decode(into, next_id, 0, &c.worker.limits, "t.db", q, len, err);
    free(q);
    return rc;
}

/* Decoding bytes[0..len) must fail with code and a message holding what. */
static void expect_state_refused(const void *bytes, size_t len, int code, const char *what)
{
    struct master_pop q;
    struct tv_error err = {0};
    int64_t next_id;
    int rc = state_decode_copy(bytes, len, &q, &next_id, &err);
    assert_error(rc, &err, code, what);
    assert_msg_has(&err, "t.db: checkpoint state: ");
    master_pop_release(&q);
    /* and without an error struct: an error all the same */
    assert_int_equal(state_decode_copy(bytes, len, &q, &next_id, NULL), code);
    master_pop_release(&q);
}

static void test_master_state_decode_round_trip(void **state)
{
    (void)state;
    struct master_config c;
    struct master_pop p, q;
    struct tv_buf a = {0}, b = {0};
    struct tv_error err = {0};
    state_sample(&p, &c, &a);
    int64_t next_id = 0;
    assert_ok(state_decode_copy(a.data, a.len, &q, &next_id, &err), &err);
    assert_true(next_id == 11);
    assert_memory_equal(&q.threshold, &p.threshold, sizeof p.threshold);
    assert_true(q.next_species_id == p.next_species_id);
    assert_int_equal(q.n_species, p.n_species);
    assert_true(p.n_species >= 2);
    for (size_t k = 0; k < p.n_species; k++) {
        const struct master_species *x = &p.sp[k], *y = &q.sp[k];
        assert_true(x->id == y->id && x->born == y->born && x->last_improved == y->last_improved);
        assert_memory_equal(&x->best_ever, &y->best_ever, sizeof x->best_ever);
        assert_true(genome_equal(x->rep, y->rep));
        assert_int_equal(x->n_members, y->n_members);
        assert_memory_equal(x->members, y->members, x->n_members * sizeof *x->members);
    }
    for (size_t i = 0; i < p.n; i++) {
        assert_true(q.m[i].species == p.m[i].species);
        assert_int_equal(q.m[i].solved, p.m[i].id == 7);
    }
    /* and the same bytes again */
    assert_ok(master_state_encode(&q, next_id, &b, &err), &err);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    master_pop_release(&p);
    master_pop_release(&q);
    tv_buf_free(&a);
    tv_buf_free(&b);
}

/* Version 2 names each representative by the member it copies: it decodes
 * to the same species (their representatives equal, by copy), re-encodes to
 * the same bytes, is smaller than version 1, and a representative naming no
 * member is refused. */
static void test_master_state_encode_by_id_round_trip(void **state)
{
    (void)state;
    struct master_config c;
    struct master_pop p, q;
    struct tv_buf v1 = {0}, a = {0}, b = {0};
    struct tv_error err = {0};
    state_sample(&p, &c, &v1);
    for (size_t k = 0; k < p.n_species; k++) {
        ptrdiff_t m = master_pop_find(&p, p.sp[k].rep_id);
        assert_true(m >= 0);
        assert_true(genome_equal(p.sp[k].rep, p.m[m].genome));
    }
    assert_ok(master_state_encode_by_id(&p, 11, &a, &err), &err);
    assert_true(a.len < v1.len);
    int64_t next_id = 0;
    assert_ok(state_decode_copy(a.data, a.len, &q, &next_id, &err), &err);
    assert_true(next_id == 11);
    assert_int_equal(q.n_species, p.n_species);
    for (size_t k = 0; k < p.n_species; k++) {
        assert_true(p.sp[k].id == q.sp[k].id && p.sp[k].rep_id == q.sp[k].rep_id);
        assert_true(genome_equal(p.sp[k].rep, q.sp[k].rep));
        assert_int_equal(p.sp[k].n_members, q.sp[k].n_members);
    }
    assert_ok(master_state_encode_by_id(&q, next_id, &b, &err), &err);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    master_pop_release(&q);
    /* a representative naming an id no member has */
    b.len = 0;
    p.sp[0].rep_id = 1000; /* not a member: written as bytes */
    assert_ok(master_state_encode_by_id(&p, 11, &b, &err), &err);
    assert_true(b.len > a.len);
    assert_ok(state_decode_copy(b.data, b.len, &q, &next_id, &err), &err);
    assert_true(genome_equal(p.sp[0].rep, q.sp[0].rep));
    master_pop_release(&q);
    b.len = 0;
    p.sp[0].rep_id = p.m[0].id;
    assert_ok(master_state_encode_by_id(&p, 11, &b, &err), &err);
    struct master_pop fewer;
    two_groups(&fewer, &c);
    fewer.m[0].id = -5; /* the member the representative names is gone */
    master_pop_sort(&fewer);
    void *copy = copy_of(b.data, b.len);
    assert_error(
        master_state_decode(&fewer, &next_id, 0, &c.worker.limits, "t.db", copy, b.len, &err), &err,
        TV_ECORRUPT, "t.db: checkpoint state: a representative names an unknown member");
    free(copy);
    master_pop_release(&fewer);
    master_pop_release(&p);
    tv_buf_free(&v1);
    tv_buf_free(&a);
    tv_buf_free(&b);
}

static void test_master_state_decode_every_truncation_refused(void **state)
{
    (void)state;
    struct master_config c;
    struct master_pop p;
    struct tv_buf a = {0};
    state_sample(&p, &c, &a);
    for (size_t len = 0; len < a.len; len++)
        expect_state_refused(a.data, len, TV_EFORMAT, "t.db: checkpoint state: ");
    master_pop_release(&p);
    tv_buf_free(&a);
}

/* Well-formed msgpack that is not a valid state: each refused as damaged,
 * the message naming what is wrong. */
static void test_master_state_decode_damage_refused(void **state)
{
    (void)state;
    struct {
        const char *what;
        void (*damage)(struct master_pop *);
    } cases[] = {
        {"membership names an unknown individual or species", damage_member_species},
        {"membership does not match the population", damage_drop_member},
        {"membership is not in id order (a member listed twice?)", damage_member_twice},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct master_config c;
        struct master_pop d;
        struct tv_buf bad = {0};
        struct tv_error err = {0};
        state_sample(&d, &c, &bad);
        bad.len = 0;
        size_t n = d.n;
        cases[i].damage(&d);
        assert_ok(master_state_encode(&d, 11, &bad, &err), &err);
        d.n = n;
        expect_state_refused(bad.data, bad.len, TV_ECORRUPT, cases[i].what);
        master_pop_release(&d);
        tv_buf_free(&bad);
    }
    /* a different tag, a later version, not an array of 7, a field's type */
    static const struct {
        const char *bytes;
        size_t len;
        const char *what;
    } raw[] = {{"\x97\xa3xyz\x01\xcb\0\0\0\0\0\0\0\0\0\0\x90\x90", 19, "wrong tag"},
               {"\x97\xactrevo-master\x03\xcb\0\0\0\0\0\0\0\0\0\0\x90\x90", 28, "unknown version"},
               {"\x93\x01\x02\x03", 4, "not an array of 7"},
               {"\x97\xactrevo-master\x01\x00\0\0\x90\x90", 20, "a field has the wrong type"}};
    for (size_t i = 0; i < sizeof raw / sizeof *raw; i++)
        expect_state_refused(raw[i].bytes, raw[i].len, TV_ECORRUPT, raw[i].what);
}

/* ---- the search, in process -------------------------------------------- */

struct progress_log {
    int events[64];
    int64_t generations[64];
    size_t n;
    struct master_progress end;
};

static void log_progress(void *ctx, const struct master_progress *p)
{
    struct progress_log *l = ctx;
    assert_true(l->n < 64);
    assert_string_equal(p->run, "xor");
    assert_string_equal(p->task, "xor");
    l->events[l->n] = p->event;
    l->generations[l->n++] = p->generation;
    if (p->event == MASTER_EVENT_END)
        l->end = *p;
}

static int silent; /* search_alone's opts.silent */

/* Runs `text` alone into a fresh temporary database (removed after);
 * returns master_search's code. */
static int search_alone(const char *text, struct progress_log *log, struct tv_error *err)
{
    char db[] = "/tmp/trevo-test-search-XXXXXX";
    int fd = mkstemp(db);
    assert_true(fd >= 0);
    close(fd);
    remove(db);
    struct master_run_opts o = {.config_text = text,
                                .config_file = "t.ini",
                                .db = db,
                                .seed = -1,
                                .n_ranks = 1,
                                .progress = log_progress,
                                .progress_ctx = log,
                                .silent = silent};
    int rc = master_search(&o, err);
    char aux[600];
    remove(db);
    snprintf(aux, sizeof aux, "%s-wal", db);
    remove(aux);
    snprintf(aux, sizeof aux, "%s-shm", db);
    remove(aux);
    return rc;
}

#define XOR_THREE_GENERATIONS                                                                      \
    "[run]\ntask = xor\nseed = 3\ngenerations = 3\nstop_on_solve = false\n[population]\n"          \
    "size = 20\n"

/* The library prints nothing: it reports start, every generation and the
 * end through the callback, in order. */
static void test_master_search_reports_progress(void **state)
{
    (void)state;
    struct progress_log log = {0};
    struct tv_error err = {0};
    assert_ok(search_alone(XOR_THREE_GENERATIONS, &log, &err), &err);
    assert_int_equal(log.n, 5);
    assert_int_equal(log.events[0], MASTER_EVENT_START);
    for (int g = 0; g < 3; g++) {
        assert_int_equal(log.events[1 + g], MASTER_EVENT_GENERATION);
        assert_int_equal(log.generations[1 + g], g);
    }
    assert_int_equal(log.events[4], MASTER_EVENT_END);
    assert_int_equal(log.end.generation, 2);
    /* generation 0's 20, then 20 a generation less the elites kept */
    assert_true(log.end.evals > 20 && log.end.evals <= 60);
    assert_true(log.end.outcome == MASTER_DONE || log.end.outcome == MASTER_SOLVED);
}

/* [log] quiet: the closing summary only; opts.silent: nothing at all. */
static void test_master_search_quiet_reports_the_end_only(void **state)
{
    (void)state;
    struct progress_log log = {0};
    struct tv_error err = {0};
    assert_ok(search_alone(XOR_THREE_GENERATIONS "[log]\nquiet = true\n", &log, &err), &err);
    assert_int_equal(log.n, 1);
    assert_int_equal(log.events[0], MASTER_EVENT_END);
    memset(&log, 0, sizeof log);
    silent = 1;
    assert_ok(search_alone(XOR_THREE_GENERATIONS, &log, &err), &err);
    silent = 0;
    assert_int_equal(log.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_master_config_parse_minimal_applies_defaults),
        cmocka_unit_test(test_master_config_parse_values_override_defaults),
        cmocka_unit_test(test_master_config_parse_crlf_and_the_shipped_xor_ini),
        cmocka_unit_test(test_master_config_parse_line_of_189_accepted),
        cmocka_unit_test(test_master_config_parse_int_key_wrong_type),
        cmocka_unit_test(test_master_config_parse_value_out_of_range),
        cmocka_unit_test(test_master_config_parse_unknown_key),
        cmocka_unit_test(test_master_config_parse_unknown_section),
        cmocka_unit_test(test_master_config_parse_duplicate_key),
        cmocka_unit_test(test_master_config_parse_key_outside_section),
        cmocka_unit_test(test_master_config_parse_missing_task),
        cmocka_unit_test(test_master_config_parse_unknown_task),
        cmocka_unit_test(test_master_config_parse_unknown_activation),
        cmocka_unit_test(test_master_config_parse_act_change_without_choices),
        cmocka_unit_test(test_master_config_parse_bad_bool),
        cmocka_unit_test(test_master_config_parse_bad_enum),
        cmocka_unit_test(test_master_config_parse_string_too_long),
        cmocka_unit_test(test_master_config_parse_empty_text),
        cmocka_unit_test(test_master_config_parse_binary_text),
        cmocka_unit_test(test_master_config_parse_overlong_line),
        cmocka_unit_test(test_master_config_parse_line_of_190_accepted),
        cmocka_unit_test(test_master_config_parse_syntax_error),
        cmocka_unit_test(test_master_config_parse_syntax_error_before_bad_key),
        cmocka_unit_test(test_master_config_parse_indented_key),
        cmocka_unit_test(test_master_config_parse_reports_first_error),
        cmocka_unit_test(test_master_config_dump_round_trip_defaults),
        cmocka_unit_test(test_master_config_dump_round_trip_every_kind),
        cmocka_unit_test(test_master_config_dump_appends),
        cmocka_unit_test(test_master_config_help_lists_every_section),
        cmocka_unit_test(test_master_config_set_resumable_keys),
        cmocka_unit_test(test_master_config_set_non_resumable_refused),
        cmocka_unit_test(test_master_config_set_unknown_key_refused),
        cmocka_unit_test(test_master_config_set_abbreviated_section_refused),
        cmocka_unit_test(test_master_config_set_missing_equals_refused),
        cmocka_unit_test(test_master_config_set_bad_value_refused),
        cmocka_unit_test(test_worker_tasks_encode_round_trip),
        cmocka_unit_test(test_worker_tasks_encode_empty_batch),
        cmocka_unit_test(test_worker_results_encode_round_trip),
        cmocka_unit_test(test_worker_results_decode_nan_fitness_kept),
        cmocka_unit_test(test_worker_tasks_decode_every_truncation_refused),
        cmocka_unit_test(test_worker_results_decode_every_truncation_refused),
        cmocka_unit_test(test_worker_tasks_decode_byte_flips_never_crash),
        cmocka_unit_test(test_worker_tasks_decode_over_cap),
        cmocka_unit_test(test_worker_tasks_decode_hand_built_good),
        cmocka_unit_test(test_worker_tasks_decode_wrong_tag),
        cmocka_unit_test(test_worker_tasks_decode_wrong_shape),
        cmocka_unit_test(test_worker_tasks_decode_wrong_version),
        cmocka_unit_test(test_worker_tasks_decode_bad_items),
        cmocka_unit_test(test_worker_results_decode_bad_items),
        cmocka_unit_test(test_worker_results_decode_task_batch_refused),
        cmocka_unit_test_setup_teardown(test_worker_breed_init_is_deterministic, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_breed_layered_init, wfix_setup, wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_breed_mutate_gives_valid_child, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_breed_refuses_parent_of_wrong_shape, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_breed_crossover_gives_valid_child, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_breed_corrupt_parent_named, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_breed_missing_parent_named, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_breed_unknown_op, wfix_setup, wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_breed_respects_configured_limits, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_evaluate_xor_is_deterministic, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_evaluate_invalid_genome_refused, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_process_batch_round_trip, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_process_budget_breeds_again, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_process_budget_checked_after_training,
                                        wfix_setup, wfix_teardown),
        cmocka_unit_test_setup_teardown(test_worker_process_empty_batch, wfix_setup, wfix_teardown),
        cmocka_unit_test(test_master_config_cnn_training_refuses_input_conns),
        cmocka_unit_test(test_worker_process_refused_genome_scored_failed),
        cmocka_unit_test_setup_teardown(test_worker_process_bad_input_refused, wfix_setup,
                                        wfix_teardown),
        cmocka_unit_test(test_master_pop_add_sort_find),
        cmocka_unit_test(test_master_speciate_separates_groups),
        cmocka_unit_test(test_master_speciate_one_group_one_species),
        cmocka_unit_test(test_master_speciate_threshold_steering),
        cmocka_unit_test(test_master_speciate_drops_empty_species),
        cmocka_unit_test(test_master_speciate_equals_naive_first_match),
        cmocka_unit_test(test_master_plan_speciated),
        cmocka_unit_test(test_master_plan_elitism_min_size_zero),
        cmocka_unit_test(test_master_plan_same_seed_same_plan),
        cmocka_unit_test(test_master_plan_stagnant_species_gets_nothing),
        cmocka_unit_test(test_master_plan_generational),
        cmocka_unit_test(test_master_plan_ties_broken_by_id),
        cmocka_unit_test(test_master_plan_single_member_species_mutates_only),
        cmocka_unit_test(test_master_plan_empty_population_refused),
        cmocka_unit_test(test_worker_error_decode_keeps_the_code),
        cmocka_unit_test(test_worker_error_decode_malformed_refused),
        cmocka_unit_test(test_master_row_parse_reads_numbers),
        cmocka_unit_test(test_master_row_parse_rejects_bad_rows),
        cmocka_unit_test(test_master_state_decode_round_trip),
        cmocka_unit_test(test_master_state_encode_by_id_round_trip),
        cmocka_unit_test(test_master_state_decode_every_truncation_refused),
        cmocka_unit_test(test_master_state_decode_damage_refused),
        cmocka_unit_test(test_master_search_reports_progress),
        cmocka_unit_test(test_master_search_quiet_reports_the_end_only),
    };
    return cmocka_run_group_tests(tests, tu_tmpdir_setup, tu_tmpdir_teardown);
}
