/* test_parsers.c -- the parsers that read what other people and other
 * processes send: the experiment config (master/config.c) and the task and
 * result batches (worker/msg.c). The config's fault matrix, table-driven:
 * every key of the key table gets a value of the wrong type and values out
 * of its range, and the whole message is checked ("FILE:LINE: key: reason");
 * then the file-level faults (unknown and duplicate keys, empty and binary
 * files, a line without a key name, a key outside any section, long lines).
 * Each bug the fuzzers (tests/fuzz/) found has its regression test here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "master.h"
#include "testutil.h"
#include "worker.h"

/* ---- helpers ----------------------------------------------------------- */

/* Parses text as "x.ini": it must fail with TV_EINVAL and exactly `want`. */
static void parse_refused(const char *text, const char *want)
{
    struct master_config c;
    struct tv_error err = {0};
    int rc = master_config_parse(&c, text, "x.ini", &err);
    if (rc != TV_EINVAL || err.code != TV_EINVAL || strcmp(err.msg, want)) {
        print_error("config:\n%s\ngot rc %d, message \"%s\"\nwanted \"%s\"\n", text, rc, err.msg,
                    want);
        fail();
    }
}

static void parse_ok(struct master_config *c, const char *text)
{
    struct tv_error err = {0};
    assert_ok(master_config_parse(c, text, "x.ini", &err), &err);
}

/* The dump of c as text (free() it). */
static char *dump_of(const struct master_config *c)
{
    struct tv_error err = {0};
    struct tv_buf d = {0};
    assert_ok(master_config_dump(c, &d, &err), &err);
    char *text = strdup((const char *)d.data);
    assert_non_null(text);
    tv_buf_free(&d);
    return text;
}

/* The dump of c parses and dumps again to the same text. */
static void assert_dump_round_trips(const struct master_config *c)
{
    struct tv_error err = {0};
    struct master_config again;
    char *d1 = dump_of(c);
    assert_ok(master_config_parse(&again, d1, "dump", &err), &err);
    char *d2 = dump_of(&again);
    assert_string_equal(d1, d2);
    TV_FREE_ALL(d1, d2);
}

/* What `trevo run --help-config` prints (free() it). */
static char *help_text(void)
{
    char *help = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&help, &len);
    assert_non_null(f);
    master_config_help(f);
    assert_int_equal(fclose(f), 0);
    return help;
}

/* ---- config: every key ------------------------------------------------- */

/* One row per key of the config's key table: a value of the wrong type and
 * values below and above its range, with the reason each must give (NULL:
 * the key has no such value). A string's range is its length: a value of
 * too_long characters. */
struct bad_key {
    const char *section, *key;
    const char *wrong, *wrong_why;
    const char *low, *low_why;
    const char *high, *high_why;
    size_t too_long;
};

/* A key refusing `wrong` with wrong_why, and `below` and `above` as out of
 * its range; NUMBER and INTEGER: the values not a number ("lots") or not an
 * integer ("ten"). */
#define OUT_OF_RANGE(section, key, wrong, wrong_why, below, above, range)                          \
    {                                                                                              \
        section, key, wrong, wrong_why, below, below " is out of range " range, above,             \
            above " is out of range " range, 0                                                     \
    }
#define NUMBER(section, key, below, above, range)                                                  \
    OUT_OF_RANGE(section, key, "lots", "expected a number, got 'lots'", below, above, range)
#define INTEGER(section, key, below, above, range)                                                 \
    OUT_OF_RANGE(section, key, "ten", "expected an integer, got 'ten'", below, above, range)
/* A key with no range: only `wrong` refused, with wrong_why; ONE_OF: a key
 * of named choices. */
#define ONE_OF(section, key, wrong, choices)                                                       \
    ONLY_WRONG(section, key, wrong, "expected one of " choices ", got '" wrong "'")
#define ONLY_WRONG(section, key, wrong, wrong_why)                                                 \
    {                                                                                              \
        section, key, wrong, wrong_why, NULL, NULL, NULL, NULL, 0                                  \
    }

static const struct bad_key bad_keys[] = {
    /* strings and the keys of other forms */
    {"run", "task", "nope", "no task named 'nope'", NULL, NULL, NULL, "longer than 127 characters",
     128},
    {"run", "name", NULL, NULL, NULL, NULL, NULL, "longer than 63 characters", 64},
    {"run", "seed", "-1", "expected a non-negative integer, got '-1'", NULL, NULL,
     "18446744073709551616", "expected a non-negative integer, got '18446744073709551616'", 0},
    {"genome", "init_net", NULL, NULL, NULL, NULL, NULL, "longer than 179 characters", 180},
    {"genome", "init_hidden", "4,x", "'x' is not a layer size in [1, 10000000]", "0",
     "'0' is not a layer size in [1, 10000000]", "4,10000001",
     "'10000001' is not a layer size in [1, 10000000]", 0},
    {"genome", "init_densities", "0.1,x", "'x' is not a number in [0, 1]", "-0.5",
     "'-0.5' is not a number in [0, 1]", "0.5,1.5", "'1.5' is not a number in [0, 1]", 0},
    {"genome", "init_skip_densities", "0.1,x", "'x' is not a number in [0, 1]", "-0.5",
     "'-0.5' is not a number in [0, 1]", "0.5,1.5", "'1.5' is not a number in [0, 1]", 0},
    {"store", "db", NULL, NULL, NULL, NULL, NULL, "longer than 185 characters", 186},
    /* keys without a range: only a wrong value */
    ONLY_WRONG("run", "fitness_target", "lots", "expected a number, got 'lots'"),
    ONLY_WRONG("run", "stop_on_solve", "maybe", "expected true or false, got 'maybe'"),
    ONE_OF("population", "selection", "other", "speciated, generational, nsga2"),
    ONLY_WRONG("evolution", "objectives", "valid_acc,accuracy",
               "unknown objective 'accuracy' (one of valid_acc, fitness, flash, ram, macs, "
               "connections)"),
    ONE_OF("genome", "init", "other", "minimal, layered, net"),
    ONLY_WRONG("genome", "hidden_act", "tanhh", "unknown activation 'tanhh'"),
    ONLY_WRONG("genome", "act_choices", "tanh,nope", "unknown activation 'nope'"),
    ONE_OF("genome", "init_model", "izhikevich", "rate, lif, cuba"),
    ONE_OF("store", "sync", "other", "normal, full"),
    ONE_OF("store", "genomes", "some", "all, population, champions, elite"),
    ONLY_WRONG("log", "quiet", "maybe", "expected true or false, got 'maybe'"),
    /* numbers and integers: a wrong value, and values out of range */
    NUMBER("genome", "add_filter_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "del_filter_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_coef_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "del_coef_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_channel_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "del_channel_rate", "-0.5", "1.5", "[0, 1]"),
    INTEGER("run", "generations", "0", "1000000001", "[1, 1000000000]"),
    INTEGER("population", "size", "1", "10000001", "[2, 10000000]"),
    INTEGER("population", "elitism", "-1", "1000001", "[0, 1000000]"),
    INTEGER("evolution", "max_age", "-1", "1000000001", "[0, 1000000000]"),
    INTEGER("evolution", "max_flash", "-1", "1000000000000001", "[0, 1000000000000000]"),
    INTEGER("evolution", "max_ram", "-1", "1000000000000001", "[0, 1000000000000000]"),
    INTEGER("evolution", "max_macs", "-1", "1000000000000001", "[0, 1000000000000000]"),
    NUMBER("population", "survival_threshold", "0.001", "1.5", "[0.01, 1]"),
    NUMBER("population", "crossover_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("population", "crossover_mutate_rate", "-0.5", "1.5", "[0, 1]"),
    INTEGER("population", "tournament_size", "0", "1000001", "[1, 1000000]"),
    NUMBER("speciation", "compat_threshold", "-0.5", "2e+09", "[0, 1e+09]"),
    NUMBER("speciation", "target_species", "-0.5", "2e+06", "[0, 1e+06]"),
    NUMBER("speciation", "threshold_step", "-0.5", "2e+09", "[0, 1e+09]"),
    NUMBER("speciation", "threshold_min", "-0.5", "2e+09", "[0, 1e+09]"),
    NUMBER("speciation", "c_excess", "-0.5", "2e+09", "[0, 1e+09]"),
    NUMBER("speciation", "c_disjoint", "-0.5", "2e+09", "[0, 1e+09]"),
    NUMBER("speciation", "c_weight", "-0.5", "2e+09", "[0, 1e+09]"),
    INTEGER("speciation", "small_genome", "-1", "1000000001", "[0, 1000000000]"),
    INTEGER("speciation", "stagnation", "0", "1000000001", "[1, 1000000000]"),
    INTEGER("speciation", "species_elitism", "-1", "1000001", "[0, 1000000]"),
    INTEGER("speciation", "elitism_min_size", "-1", "1000000001", "[0, 1000000000]"),
    NUMBER("genome", "init_weight_sd", "-0.5", "2e+06", "[0, 1e+06]"),
    NUMBER("genome", "init_density", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "init_skip_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "init_recurrent_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "act_change_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "weight_perturb_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "weight_perturb_sd", "-0.5", "2e+06", "[0, 1e+06]"),
    NUMBER("genome", "weight_replace_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "weight_init_sd", "-0.5", "2e+06", "[0, 1e+06]"),
    NUMBER("genome", "weight_max", "-0.5", "2e+30", "[0, 1e+30]"),
    NUMBER("genome", "bias_perturb_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "bias_perturb_sd", "-0.5", "2e+06", "[0, 1e+06]"),
    NUMBER("genome", "bias_replace_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "bias_init_sd", "-0.5", "2e+06", "[0, 1e+06]"),
    NUMBER("genome", "add_local_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_skip_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_recurrent_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "del_conn_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_neuron_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "del_neuron_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "delay_rate", "-0.5", "1.5", "[0, 1]"),
    INTEGER("genome", "delay_max", "0", "1025", "[1, 1024]"),
    NUMBER("genome", "add_local_per_conn", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_skip_per_conn", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_recurrent_per_conn", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "del_conn_per_conn", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_head_per_conn", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "add_neuron_per_neuron", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "del_neuron_per_neuron", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "hyper_rate", "-0.5", "1.5", "[0, 1]"),
    NUMBER("genome", "hyper_sigma", "-0.5", "11", "[0, 10]"),
    NUMBER("genome", "hyper_min", "0.0001", "1001", "[0.001, 1000]"),
    NUMBER("genome", "hyper_max", "0.0001", "1001", "[0.001, 1000]"),
    ONLY_WRONG("genome", "preserve", "maybe", "expected true or false, got 'maybe'"),
    INTEGER("genome", "max_neurons", "0", "16777217", "[1, 16777216]"),
    INTEGER("genome", "max_conns", "0", "134217729", "[1, 134217728]"),
    INTEGER("store", "commit_batch", "0", "10000001", "[1, 10000000]"),
    INTEGER("farm", "batch", "-1", "1000001", "[0, 1000000]"),
    INTEGER("farm", "inflight", "0", "65", "[1, 64]"),
    INTEGER("farm", "max_message_mb", "0", "2048", "[1, 2047]"),
};
#define N_BAD_KEYS (sizeof bad_keys / sizeof bad_keys[0])

/* Writes a config whose line `*line` is "key = value" (or "key=value" when
 * that would be too long) in the key's section, after pad comment and blank
 * lines, so that line numbers vary. [run] task = xor comes first unless the
 * key is task itself. */
static void build_config(char *text, size_t cap, const struct bad_key *b, const char *value,
                         int pad, int *line)
{
    int n = 0, l = 0;
    n += snprintf(text + n, cap - (size_t)n, "[run]\n");
    l++;
    if (strcmp(b->key, "task")) {
        n += snprintf(text + n, cap - (size_t)n, "task = xor\n");
        l++;
    }
    if (strcmp(b->section, "run")) {
        n += snprintf(text + n, cap - (size_t)n, "[%s]\n", b->section);
        l++;
    }
    for (int i = 0; i < pad; i++, l++)
        n += snprintf(text + n, cap - (size_t)n, i % 2 ? "\n" : "; a comment\n");
    const char *sep = strlen(b->key) + 3 + strlen(value) > 190 ? "=" : " = ";
    n += snprintf(text + n, cap - (size_t)n, "%s%s%s\n", b->key, sep, value);
    assert_true((size_t)n < cap);
    *line = l + 1;
}

static void check_refused(const struct bad_key *b, const char *value, const char *why, int pad)
{
    char text[1024], want[512];
    int line;
    build_config(text, sizeof text, b, value, pad, &line);
    snprintf(want, sizeof want, "x.ini:%d: %s: %s", line, b->key, why);
    parse_refused(text, want);
}

/* Every key `trevo run --help-config` lists has a row, and every row is a
 * key it lists: a new key needs its faults here. */
static void test_config_every_key_has_a_row(void **state)
{
    (void)state;
    char *help = help_text();
    unsigned char listed[N_BAD_KEYS] = {0};
    char section[64] = "";
    size_t n_keys = 0;
    for (char *line = strtok(help, "\n"); line; line = strtok(NULL, "\n")) {
        if (sscanf(line, "[%63[^]]]", section) == 1)
            continue;
        if (!strncmp(line, "; required: ", 12))
            line += 12;
        else if (line[0] == ';')
            continue;
        char key[64];
        assert_int_equal(sscanf(line, "%63s =", key), 1);
        size_t i = 0;
        while (i < N_BAD_KEYS &&
               (strcmp(bad_keys[i].section, section) || strcmp(bad_keys[i].key, key)))
            i++;
        if (i == N_BAD_KEYS) {
            print_error("[%s] %s has no row in bad_keys\n", section, key);
            fail();
        }
        listed[i] = 1;
        n_keys++;
    }
    for (size_t i = 0; i < N_BAD_KEYS; i++)
        if (!listed[i]) {
            print_error("bad_keys row [%s] %s is not a key\n", bad_keys[i].section,
                        bad_keys[i].key);
            fail();
        }
    assert_int_equal(n_keys, N_BAD_KEYS);
    free(help);
}

static void test_config_every_key_wrong_type(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_BAD_KEYS; i++)
        if (bad_keys[i].wrong)
            check_refused(&bad_keys[i], bad_keys[i].wrong, bad_keys[i].wrong_why, (int)(i % 4));
}

static void test_config_every_key_out_of_range(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_BAD_KEYS; i++) {
        const struct bad_key *b = &bad_keys[i];
        if (b->low)
            check_refused(b, b->low, b->low_why, (int)(i % 3));
        if (b->high)
            check_refused(b, b->high, b->high_why, (int)(i % 5));
        if (b->too_long) {
            char value[512];
            assert_true(b->too_long < sizeof value);
            memset(value, 'n', b->too_long);
            value[b->too_long] = '\0';
            check_refused(b, value, b->high_why, (int)(i % 2));
        }
    }
}

/* The defaults, dumped, read back to the same dump (the round trip's base). */
static void test_config_defaults_round_trip(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, "[run]\ntask = xor\n");
    assert_dump_round_trips(&c);
}

/* ---- config: the file-level faults ------------------------------------- */

static void test_config_unknown_key_refused(void **state)
{
    (void)state;
    parse_refused("[run]\ntask = xor\n[population]\npop_size = 10\n",
                  "x.ini:4: pop_size: unknown key in [population]");
    parse_refused("[run]\ntask = xor\n\n[farm]\nsize = 10\n",
                  "x.ini:5: size: unknown key in [farm]");
    parse_refused("[run]\ntask = xor\n[runn]\nseed = 1\n",
                  "x.ini:4: seed: unknown section [runn] (sections: run, population, evolution, "
                  "speciation, genome, store, farm, log, task)");
}

static void test_config_duplicate_key_refused(void **state)
{
    (void)state;
    parse_refused("[run]\ntask = xor\nseed = 1\nseed = 1\n",
                  "x.ini:4: seed: given twice in [run] (first on line 3)");
    /* the same section opened twice */
    parse_refused("[run]\ntask = xor\n[genome]\nmax_conns = 9\n[run]\nseed = 1\n[genome]\n"
                  "max_conns = 9\n",
                  "x.ini:8: max_conns: given twice in [genome] (first on line 4)");
    parse_refused("[run]\ntask = xor\ntask = xor\n",
                  "x.ini:3: task: given twice in [run] (first on line 2)");
}

static void test_config_empty_file_refused(void **state)
{
    (void)state;
    /* no line to name: the file and the missing key */
    parse_refused("", "x.ini: task: required key missing from [run]");
    parse_refused("\n\n", "x.ini: task: required key missing from [run]");
    parse_refused("; nothing but a comment\n[run]\n",
                  "x.ini: task: required key missing from [run]");
}

static void test_config_binary_file_refused(void **state)
{
    (void)state;
    parse_refused("\x7f"
                  "ELF\x02\x01\x01",
                  "x.ini:1: control character 0x02 (not a text config file)");
    parse_refused("[run]\ntask = xor\n\x1b[0m\n",
                  "x.ini:3: control character 0x1b (not a text config file)");
    /* Random bytes, NUL included (the parser reads up to the first NUL,
     * as the C string it takes): always refused with the file name and,
     * when a line is at fault, a line of the text. */
    struct tv_rng rng = tu_rng(7, 0, 0);
    for (int round = 0; round < 2000; round++) {
        size_t len = 1 + tv_rng_below(&rng, 400);
        char *text = malloc(len + 1);
        assert_non_null(text);
        for (size_t i = 0; i < len; i++)
            text[i] = (char)tv_rng_below(&rng, 256);
        text[len] = '\0';
        size_t n_lines = 1;
        for (const char *p = text; *p; p++)
            n_lines += *p == '\n';
        struct master_config c;
        struct tv_error err = {0};
        int rc = master_config_parse(&c, text, "x.ini", &err);
        assert_int_equal(rc, TV_EINVAL);
        assert_int_equal(err.code, TV_EINVAL);
        assert_true(!strncmp(err.msg, "x.ini:", 6));
        if (err.msg[6] == ' ') {
            assert_string_equal(err.msg, "x.ini: task: required key missing from [run]");
        } else {
            char *end;
            unsigned long line = strtoul(err.msg + 6, &end, 10);
            assert_true(line >= 1 && line <= n_lines);
            assert_true(end[0] == ':' && end[1] == ' ' && end[2] != '\0');
        }
        free(text);
    }
}

/* "= 3" gave "x.ini:3: : unknown key in [run]": an empty key name. */
static void test_config_missing_key_name_refused(void **state)
{
    (void)state;
    parse_refused("[run]\ntask = xor\n= 3\n", "x.ini:3: missing key name before '='");
    parse_refused("[run]\ntask = xor\n\n  =\n", "x.ini:4: missing key name before '='");
    parse_refused("[run]\ntask = xor\n: 3\n", "x.ini:3: missing key name before ':'");
    parse_refused("= 3\n[run]\ntask = xor\n", "x.ini:1: missing key name before '='");
}

static void test_config_key_outside_section_refused(void **state)
{
    (void)state;
    parse_refused("seed = 3\n[run]\ntask = xor\n", "x.ini:1: seed: outside any [section]");
    parse_refused("; first a comment\ntask = xor\n", "x.ini:2: task: outside any [section]");
}

static char long_text[200100];

/* long_text = head, n times ch, tail. */
static const char *repeat_text(const char *head, char ch, size_t n, const char *tail)
{
    size_t h = strlen(head);
    assert_true(h + n + strlen(tail) < sizeof long_text);
    memcpy(long_text, head, h);
    memset(long_text + h, ch, n);
    strcpy(long_text + h + n, tail);
    return long_text;
}

static void test_config_long_line_refused(void **state)
{
    (void)state;
    static const char *const why = "x.ini:3: line longer than 190 characters";
    parse_refused(repeat_text("[run]\ntask = xor\n; ", 'a', 189, "\n"), why);
    parse_refused(repeat_text("[run]\ntask = xor\nname = ", 'n', 200000, "\n"), why);
    /* a header that long */
    parse_refused(repeat_text("[run]\ntask = xor\n[", 's', 300, "]\n"), why);
}

static void test_config_syntax_errors_refused(void **state)
{
    (void)state;
    parse_refused("[run]\ntask = xor\nseed 3\n",
                  "x.ini:3: syntax error (expected [section] or key = value)");
    parse_refused("[run\ntask = xor\n",
                  "x.ini:1: syntax error (expected [section] or key = value)");
    /* the first error is the one reported, syntax or not */
    parse_refused("[run]\ntask = xor\nseed 3\n= 4\n",
                  "x.ini:3: syntax error (expected [section] or key = value)");
    parse_refused("[run]\ntask = xor\n= 4\nseed 3\n", "x.ini:3: missing key name before '='");
}

/* Faults found only once every key is read name the line of the key. */
static void test_config_cross_key_errors_name_the_line(void **state)
{
    (void)state;
    parse_refused("[run]\n\ntask = xorr\n", "x.ini:3: task: no task named 'xorr'");
    parse_refused("[run]\ntask = xor\n[genome]\nhidden_act = tanh\nact_change_rate = 0.1\n",
                  "x.ini:5: act_change_rate: needs act_choices");
    parse_refused("[run]\ntask = xor\n[genome]\ninit = layered\ninit_density = 0\n",
                  "x.ini:5: init_density: a layered start needs density > 0");
}

/* The starting genome is built before any limit applies (worker/): a
 * config whose start cannot fit the genome limits is refused up front.
 * xor has 3 inputs and 1 output. */
static void test_config_start_over_the_genome_limits_refused(void **state)
{
    (void)state;
    parse_refused("[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 10000000,10000000\n",
                  "x.ini:5: init_hidden: a starting genome of 20000004 neurons is over "
                  "max_neurons = 100000");
    parse_refused("[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 2000,2000\n",
                  "x.ini:5: init_hidden: a starting genome of about 4008000 connections is over "
                  "max_conns = 1000000");
    parse_refused("[run]\ntask = xor\n[genome]\nmax_conns = 2\n",
                  "x.ini:4: max_conns: a starting genome of 3 connections is over max_conns = 2");
    parse_refused("[run]\ntask = xor\n[genome]\nmax_neurons = 3\n",
                  "x.ini:4: max_neurons: a starting genome of 4 neurons is over max_neurons = 3");
    /* sparse enough: 0.1 * 4008000 = 400800 */
    struct master_config c;
    parse_ok(&c, "[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 2000,2000\n"
                 "init_density = 0.1\n");
    parse_refused("[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 2000,2000\n"
                  "init_density = 0.1\nmax_conns = 400000\n",
                  "x.ini:5: init_hidden: a starting genome of about 400800 connections is over "
                  "max_conns = 400000");
    parse_ok(&c, "[run]\ntask = xor\n[genome]\nmax_neurons = 4\nmax_conns = 3\n");
}

/* ---- config: the keys for large genomes -------------------------------- */

/* A density per layer pair: one value per pair of the layers init_hidden
 * makes, refused naming the key and its line otherwise; the start's size
 * estimate reads them. xor has 3 inputs and 1 output. */
static void test_config_pair_densities(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, "[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 4,2\n"
                 "init_densities = 0.5, 0.25,1\ninit_skip_densities = 0.1,0.2,0.3\n");
    assert_int_equal(c.worker.n_init_densities, 3);
    assert_true(c.worker.init_densities[1] == 0.25);
    assert_int_equal(c.worker.n_init_skip_densities, 3);
    assert_true(c.worker.init_skip_densities[2] == 0.3);
    assert_dump_round_trips(&c);
    parse_refused("[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 4,2\n\n"
                  "init_densities = 0.5,0.25\n",
                  "x.ini:7: init_densities: 2 values for the 3 adjacent layer pairs of 2 hidden "
                  "layers");
    parse_refused("[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 4,2\n"
                  "init_skip_densities = 0.5\n",
                  "x.ini:6: init_skip_densities: 1 values for the 3 skip layer pairs of 2 hidden "
                  "layers");
    parse_refused("[run]\ntask = xor\n[genome]\ninit = layered\ninit_densities = 0\n",
                  "x.ini:5: init_densities: a layered start needs density > 0");
    /* 3 x 2000 x 0.01 + 2000 x 2000 x 0.1 + 2000 x 1 x 1 = 402060 */
    parse_refused("[run]\ntask = xor\n[genome]\ninit = layered\ninit_hidden = 2000,2000\n"
                  "init_densities = 0.01,0.1,1\nmax_conns = 400000\n",
                  "x.ini:5: init_hidden: a starting genome of about 402060 connections is over "
                  "max_conns = 400000");
    /* 1e-9 is written back as 1e-09: 34 of them fit on a line as given, not
     * on the stored config's line */
    char text[512] = "[run]\ntask = xor\n[genome]\ninit_skip_densities=";
    for (int i = 0; i < 34; i++)
        strcat(text, i ? ",1e-9" : "1e-9");
    strcat(text, "\n");
    parse_refused(text, "x.ini:4: init_skip_densities: 34 values do not fit on one line of the "
                        "stored config");
}

/* The keys for large genomes are written by the dump only when set: the
 * stored config of a run that does not use them keeps its bytes. */
static void test_config_dump_leaves_out_unset_scale_keys(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, "[run]\ntask = xor\n");
    char *d = dump_of(&c);
    assert_null(strstr(d, "per_conn"));
    assert_null(strstr(d, "per_neuron"));
    assert_null(strstr(d, "densities"));
    free(d);
    parse_ok(&c, "[run]\ntask = xor\n[genome]\ndel_conn_per_conn = 0.01\n"
                 "add_neuron_per_neuron = 0.002\ninit_densities = 0.05\n");
    assert_true(c.worker.mutation.del_conn_per_conn == 0.01);
    assert_true(c.worker.mutation.add_neuron_per_neuron == 0.002);
    d = dump_of(&c);
    assert_non_null(strstr(d, "\ninit_densities = 0.05\n"));
    assert_non_null(strstr(d, "\ndel_conn_per_conn = 0.01"));
    assert_non_null(strstr(d, "\nadd_neuron_per_neuron = 0.002"));
    assert_null(strstr(d, "add_local_per_conn"));
    free(d);
    assert_dump_round_trips(&c);
}

/* ---- config: regressions from fuzz_config ------------------------------ */

/* A subnormal value (strtod: ERANGE) was accepted when written in hex and
 * refused when the dump wrote it in decimal: a stored config that a resume
 * could not read. Gradual underflow is now a value; underflow to 0 is not. */
static void test_config_subnormal_double_round_trips(void **state)
{
    (void)state;
    struct master_config c;
    parse_ok(&c, "[run]\ntask = xor\n[speciation]\nthreshold_step = 0x1p-1060\n"
                 "c_weight = 1e-310\n");
    assert_true(c.threshold_step == 0x1p-1060);
    assert_true(c.distance.c_weight > 0 && c.distance.c_weight < 1e-309);
    assert_dump_round_trips(&c);
    parse_refused("[run]\ntask = xor\n[speciation]\nc_weight = 1e-400\n",
                  "x.ini:4: c_weight: expected a number, got '1e-400'");
    parse_refused("[run]\ntask = xor\n[genome]\nweight_max = 1e400\n",
                  "x.ini:4: weight_max: expected a number, got '1e400'");
}

/* "db=" and 187 characters fit a line, but the dump writes "db = " and
 * the value: 192 characters, which the parser refuses. A string is now no
 * longer than its dump line allows. */
static void test_config_long_string_dump_round_trips(void **state)
{
    (void)state;
    static const char *const head = "[run]\ntask = xor\n[store]\ndb=";
    struct master_config c;
    parse_ok(&c, repeat_text(head, 'd', 185, "\n"));
    assert_int_equal(strlen(c.db), 185);
    assert_dump_round_trips(&c);
    parse_refused(repeat_text(head, 'd', 187, "\n"), "x.ini:4: db: longer than 185 characters");
}

/* "name =;x" gave the name ";x", which the dump wrote as "name = ;x":
 * read back, an inline comment and an empty name. */
static void test_config_string_starting_with_semicolon_refused(void **state)
{
    (void)state;
    parse_refused("[run]\ntask = xor\nname =; a name\n",
                  "x.ini:3: name: must not start with ';' (it would read as a comment)");
    parse_refused("[run]\ntask = xor\n[store]\ndb=;x.db\n",
                  "x.ini:4: db: must not start with ';' (it would read as a comment)");
    /* after a blank, ';' starts a comment: an empty name, the task's */
    struct master_config c;
    parse_ok(&c, "[run]\ntask = xor\nname = ; a comment\n");
    assert_string_equal(c.name, "xor");
    parse_ok(&c, "[run]\ntask = xor\nname = a;b\n");
    assert_string_equal(c.name, "a;b");
    assert_dump_round_trips(&c);
}

/* A run name in a config file obeys the same rule as --name. */
static void test_config_run_name_rule(void **state)
{
    (void)state;
    static const char why[] = "a run name is 1 to 63 printable characters, not starting with "
                              "';', '#' or a space nor ending with one";
    char want[256];
    snprintf(want, sizeof want, "x.ini:3: name: %s", why);
    parse_refused("[run]\ntask = xor\nname = #x\n", want);
    parse_refused("[run]\ntask = xor\nname = a\tb\n", want);
    char reason[200];
    assert_int_equal(master_run_name_check("ok name-1.2", reason, sizeof reason), 0);
    assert_int_equal(master_run_name_check("", reason, sizeof reason), -1);
    assert_string_equal(reason, why);
}

/* ---- messages ---------------------------------------------------------- */

static const uint8_t BIN[] = {1, 2, 3};

/* The decoder refuses a result without a genome; the encoder sent one. */
/* ---- config: [task], the keys of the task's own table ------------------ */

/* [task] may come before [run]; its values reach the instance, and the dump
 * lists them, in a [task] section of its own, only when one differs from its
 * default (so the configs of today keep their bytes). */
static void test_config_task_section(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct master_config c;
    parse_ok(&c, "[task]\nmax_steps = 500\n[run]\ntask = pole1\n");
    assert_string_equal(c.task_kind->name, "pole1");
    assert_true(c.task_params.v[0].i == 500);
    char *text = dump_of(&c);
    assert_non_null(strstr(text, "\nquiet = false\n\n[task]\nmax_steps = 500\n"));
    free(text);
    assert_dump_round_trips(&c);
    struct task_instance *t;
    assert_ok(master_config_open_task(&c, &t, &err), &err);
    assert_ptr_equal(c.worker.task, t);
    assert_true(t->max_fitness == 500);
    task_close(t);
    /* the default, given or not: no [task] in the dump */
    parse_ok(&c, "[run]\ntask = pole1\n[task]\nmax_steps = 100000\n");
    text = dump_of(&c);
    assert_null(strstr(text, "[task]"));
    free(text);
    parse_ok(&c, "[run]\ntask = xor\n[task]\n");
    text = dump_of(&c);
    assert_null(strstr(text, "[task]"));
    free(text);
}

static void test_config_task_key_faults_name_the_line(void **state)
{
    (void)state;
    parse_refused("[run]\ntask = pole1\n\n[task]\nmax_step = 5\n",
                  "x.ini:5: max_step: unknown key in [task] (task pole1 has: max_steps)");
    parse_refused("[task]\nmax_steps = 5\n[run]\ntask = xor\n",
                  "x.ini:2: max_steps: unknown key in [task] (task xor has no keys)");
    parse_refused("[run]\ntask = dpv\n[task]\nmax_steps = ten\n",
                  "x.ini:4: max_steps: expected an integer, got 'ten'");
    parse_refused("[run]\ntask = dpv\n[task]\nmax_steps = 0\n",
                  "x.ini:4: max_steps: 0 is out of range [1, 1000000000]");
    parse_refused("[run]\ntask = pole1\n[task]\nmax_steps = 5\nmax_steps = 6\n",
                  "x.ini:5: max_steps: given twice in [task] (first on line 4)");
    /* the task itself must be known first */
    parse_refused("[run]\ntask = pole\n[task]\nmax_steps = 5\n",
                  "x.ini:2: task: no task named 'pole'");
}

/* --help-config lists each task's keys, commented out (they apply to their
 * task only), with their defaults and docs. */
static void test_config_help_lists_task_keys(void **state)
{
    (void)state;
    char *help = help_text();
    const char *task = strstr(help, "\n[task]\n");
    assert_non_null(task);
    assert_non_null(strstr(task, "; task pole1: steps of an episode"));
    assert_non_null(strstr(task, "\n;max_steps = 100000\n"));
    assert_non_null(strstr(task, "; task dpv: "));
    /* classify's samples are validation rows once children are trained */
    assert_non_null(strstr(task, "; task classify: rows scored per evaluation, the same for every "
                                 "child of a generation: training rows, or validation rows when "
                                 "train_steps > 0\n;samples = 100\n"));
    free(help);
}

static void test_worker_results_encode_null_genome_refused(void **state)
{
    (void)state;
    struct worker_result r[2] = {{5, 1.0, 0, 0.1, 1, BIN, sizeof BIN, {0}},
                                 {7, 2.0, 1, 0.2, 1, NULL, 0, {0}}};
    struct tv_buf buf = {0};
    struct tv_error err = {0};
    assert_error(worker_results_encode(r, 2, &buf, &err), &err, TV_EINVAL,
                 "result batch: item 1 (child 7) has no genome");
    assert_int_equal(buf.len, 0); /* nothing appended */
    /* with the genome it encodes, and decodes */
    r[1].genome = BIN;
    assert_ok(worker_results_encode(r, 2, &buf, &err), &err);
    struct worker_results out;
    assert_ok(worker_results_decode(buf.data, buf.len, buf.len, &out, &err), &err);
    assert_int_equal(out.n, 2);
    worker_results_release(&out);
    tv_buf_free(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_every_key_has_a_row),
        cmocka_unit_test(test_config_every_key_wrong_type),
        cmocka_unit_test(test_config_every_key_out_of_range),
        cmocka_unit_test(test_config_defaults_round_trip),
        cmocka_unit_test(test_config_unknown_key_refused),
        cmocka_unit_test(test_config_duplicate_key_refused),
        cmocka_unit_test(test_config_empty_file_refused),
        cmocka_unit_test(test_config_binary_file_refused),
        cmocka_unit_test(test_config_missing_key_name_refused),
        cmocka_unit_test(test_config_key_outside_section_refused),
        cmocka_unit_test(test_config_long_line_refused),
        cmocka_unit_test(test_config_syntax_errors_refused),
        cmocka_unit_test(test_config_cross_key_errors_name_the_line),
        cmocka_unit_test(test_config_start_over_the_genome_limits_refused),
        cmocka_unit_test(test_config_pair_densities),
        cmocka_unit_test(test_config_dump_leaves_out_unset_scale_keys),
        cmocka_unit_test(test_config_subnormal_double_round_trips),
        cmocka_unit_test(test_config_long_string_dump_round_trips),
        cmocka_unit_test(test_config_string_starting_with_semicolon_refused),
        cmocka_unit_test(test_config_run_name_rule),
        cmocka_unit_test(test_config_task_section),
        cmocka_unit_test(test_config_task_key_faults_name_the_line),
        cmocka_unit_test(test_config_help_lists_task_keys),
        cmocka_unit_test(test_worker_results_encode_null_genome_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
