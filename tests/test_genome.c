/* test_genome.c -- genome/: the base layer (errors, RNG, buffers), genes,
 * validation, sizes, starting genomes, mutation, crossover, distance.
 * The codec and the text format have their own files
 * (test_genome_codec.c, test_genome_text.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "genome.h"
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define TU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_ASAN 1
#endif
#endif

/* ---- tv_error ---------------------------------------------------------- */

static void test_tv_error_set_formats_and_returns_code(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_int_equal(tv_error_set(&err, TV_EINVAL, "x.ini:%d: %s", 12, "pop_size"), TV_EINVAL);
    assert_int_equal(err.code, TV_EINVAL);
    assert_string_equal(err.msg, "x.ini:12: pop_size");
    assert_int_equal(tv_error_set(NULL, TV_ELIMIT, "ignored %d", 1), TV_ELIMIT);
    tv_error_clear(&err);
    assert_int_equal(err.code, 0);
    assert_string_equal(err.msg, "");
    tv_error_clear(NULL);
}

static void test_tv_error_set_truncates_long_message(void **state)
{
    (void)state;
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct tv_error err;
    memset(&err, 0x55, sizeof err);
    tv_error_set(&err, TV_EIO, "%s%s", big, big);
    assert_int_equal(err.code, TV_EIO);
    assert_int_equal(strlen(err.msg), TV_ERROR_MSG_MAX - 1);
}

static void test_tv_error_prefix_puts_context_in_front(void **state)
{
    (void)state;
    struct tv_error err = {0};
    tv_error_set(&err, TV_EINVAL, "pop_size: expected an integer");
    assert_int_equal(tv_error_prefix(&err, "%s:%d", "xor.ini", 12), TV_EINVAL);
    assert_string_equal(err.msg, "xor.ini:12: pop_size: expected an integer");
    assert_int_equal(err.code, TV_EINVAL);
    assert_int_equal(tv_error_prefix(NULL, "x"), 0);
    /* An empty message gets just the prefix. */
    tv_error_set(&err, TV_EIO, "%s", "");
    tv_error_prefix(&err, "f");
    assert_string_equal(err.msg, "f: ");
}

static void test_tv_error_prefix_truncates_without_overflow(void **state)
{
    (void)state;
    char big[2000];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct tv_error err;
    /* A full message, then a short prefix: the old message loses its end. */
    tv_error_set(&err, TV_EINVAL, "%s", big);
    tv_error_prefix(&err, "head");
    assert_int_equal(strlen(err.msg), TV_ERROR_MSG_MAX - 1);
    assert_memory_equal(err.msg, "head: bbb", 9);
    /* A prefix longer than the whole buffer. */
    tv_error_set(&err, TV_EINVAL, "tail");
    char prefix[1000];
    memset(prefix, 'p', sizeof prefix - 1);
    prefix[sizeof prefix - 1] = '\0';
    tv_error_prefix(&err, "%s", prefix);
    assert_true(strlen(err.msg) <= TV_ERROR_MSG_MAX - 1);
    assert_int_equal(err.msg[0], 'p');
    /* Repeated prefixes never grow past the buffer. */
    for (int i = 0; i < 100; i++)
        tv_error_prefix(&err, "level %d", i);
    assert_true(strlen(err.msg) <= TV_ERROR_MSG_MAX - 1);
    assert_memory_equal(err.msg, "level 99: ", 10);
}

static void test_tv_code_name_names_every_code(void **state)
{
    (void)state;
    for (int c = TV_EGENOME; c <= TV_OK; c++) {
        assert_non_null(tv_code_name(c));
        assert_string_not_equal(tv_code_name(c), "unknown error");
    }
    assert_string_equal(tv_code_name(TV_EINVAL), "invalid input");
    assert_string_equal(tv_code_name(-1000), "unknown error");
    assert_string_equal(tv_code_name(7), "unknown error");
}

/* ---- tv_rng ------------------------------------------------------------ */

static void test_tv_rng_init_same_seed_same_stream(void **state)
{
    (void)state;
    struct tv_rng a, b, c, d;
    tv_rng_init(&a, 42, 7, 9);
    tv_rng_init(&b, 42, 7, 9);
    tv_rng_init(&c, 42, 9, 7);
    tv_rng_init(&d, 43, 7, 9);
    int differ_c = 0, differ_d = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = tv_rng_u64(&a);
        assert_true(x == tv_rng_u64(&b));
        differ_c += x != tv_rng_u64(&c);
        differ_d += x != tv_rng_u64(&d);
    }
    assert_int_equal(differ_c, 1000);
    assert_int_equal(differ_d, 1000);
    /* Counter-based: a copy of the state continues the same stream. */
    struct tv_rng e = a;
    assert_true(tv_rng_u64(&e) == tv_rng_u64(&a));
}

static void test_tv_rng_below_in_range(void **state)
{
    (void)state;
    static const uint32_t ns[] = {1, 2, 3, 7, 10, 1000, 65537, 0x80000001u, UINT32_MAX};
    struct tv_rng r = tu_rng(1, 2, 3);
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        uint32_t max_seen = 0;
        for (int i = 0; i < 20000; i++) {
            uint32_t v = tv_rng_below(&r, ns[k]);
            assert_true(v < ns[k]);
            if (v > max_seen)
                max_seen = v;
        }
        if (ns[k] > 1)
            assert_true(max_seen >= ns[k] / 2); /* covers the upper half */
    }
}

/* Chi-square over n cells with a fixed seed: deterministic, cannot flake. */
static double chi_square(struct tv_rng *r, uint32_t n, int draws)
{
    int counts[64] = {0};
    for (int i = 0; i < draws; i++)
        counts[tv_rng_below(r, n)]++;
    double e = (double)draws / n, chi = 0;
    for (uint32_t i = 0; i < n; i++)
        chi += (counts[i] - e) * (counts[i] - e) / e;
    return chi;
}

static void test_tv_rng_below_roughly_uniform(void **state)
{
    (void)state;
    struct tv_rng r = tu_rng(2024, 0, 0);
    /* df = n-1; the bound is far above the 99.99th percentile. */
    assert_true(chi_square(&r, 10, 100000) < 40);
    assert_true(chi_square(&r, 3, 30000) < 25);
    assert_true(chi_square(&r, 37, 100000) < 90);
    assert_true(chi_square(&r, 64, 100000) < 130);
}

static void test_tv_rng_uniform_chance_normal(void **state)
{
    (void)state;
    struct tv_rng r = tu_rng(5, 5, 5);
    double sum = 0, sum2 = 0;
    int hits = 0;
    for (int i = 0; i < 100000; i++) {
        double u = tv_rng_uniform(&r);
        assert_true(u >= 0.0 && u < 1.0);
        hits += tv_rng_chance(&r, 0.25);
        assert_int_equal(tv_rng_chance(&r, 0.0), 0);
        assert_int_equal(tv_rng_chance(&r, -1.0), 0);
        assert_int_equal(tv_rng_chance(&r, 1.0), 1);
        double z = tv_rng_normal(&r);
        assert_true(isfinite(z));
        sum += z;
        sum2 += z * z;
    }
    assert_true(hits > 23000 && hits < 27000);
    assert_true(fabs(sum / 100000) < 0.05);
    assert_true(fabs(sum2 / 100000 - 1.0) < 0.05);
}

/* The shuffle is the written loop (i from n - 1 down, a[i] with
 * a[below(i + 1)]), a permutation, and draws nothing for n < 2. */
static void test_tv_rng_shuffle_u32_is_fisher_yates(void **state)
{
    (void)state;
    enum { N = 40 };
    uint32_t a[N], want[N];
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct tv_rng r, q;
        tv_rng_init(&r, seed, 3, 4);
        q = r;
        for (uint32_t i = 0; i < N; i++)
            a[i] = want[i] = 100 + i;
        tv_rng_shuffle_u32(&r, a, N);
        tu_fisher_yates(&q, want, N);
        assert_memory_equal(a, want, sizeof a);
        assert_true(r.ctr == q.ctr);
        uint64_t seen = 0;
        for (size_t i = 0; i < N; i++)
            seen |= (uint64_t)1 << (a[i] - 100);
        assert_true(seen == ((uint64_t)1 << N) - 1);
    }
    struct tv_rng r;
    tv_rng_init(&r, 7, 0, 0);
    uint32_t one = 9;
    tv_rng_shuffle_u32(&r, &one, 1);
    tv_rng_shuffle_u32(&r, NULL, 0);
    assert_int_equal(one, 9);
    assert_true(r.ctr == 0);
}

/* tv_rng_sample_u32: the first k positions of an upward Fisher-Yates over
 * 0..n-1 on a real array, draw for draw; no repeats; k above n gives n. */
static void test_tv_rng_sample_u32_is_a_partial_fisher_yates(void **state)
{
    (void)state;
    enum { N = 300 };
    uint32_t a[N], got[N];
    for (uint64_t seed = 1; seed <= 20; seed++) {
        size_t k = seed * 14;
        struct tv_rng r, q;
        tv_rng_init(&r, seed, 5, 6);
        q = r;
        for (uint32_t i = 0; i < N; i++)
            a[i] = i;
        for (size_t i = 0; i < k; i++) {
            size_t j = i + tv_rng_below(&q, (uint32_t)(N - i));
            uint32_t t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
        assert_int_equal(tv_rng_sample_u32(&r, N, k, got), 0);
        assert_memory_equal(got, a, k * sizeof *got);
        assert_true(r.ctr == q.ctr);
    }
    struct tv_rng r;
    tv_rng_init(&r, 3, 0, 0);
    assert_int_equal(tv_rng_sample_u32(&r, 5, 9, got), 0);
    uint32_t seen = 0;
    for (size_t i = 0; i < 5; i++)
        seen |= 1u << got[i];
    assert_int_equal(seen, 31);
}

/* The first key not below x in [lo, hi) (of repeats, the first), in a plain
 * array and by a field of an array of structs; hi when there is none. */
static void test_tv_lower_u32_finds_first_not_below(void **state)
{
    (void)state;
    const uint32_t a[] = {2, 4, 4, 4, 9};
    assert_int_equal(tv_lower_u32(a, sizeof *a, 0, 0, 5, 0), 0);
    assert_int_equal(tv_lower_u32(a, sizeof *a, 0, 0, 5, 4), 1);
    assert_int_equal(tv_lower_u32(a, sizeof *a, 0, 0, 5, 5), 4);
    assert_int_equal(tv_lower_u32(a, sizeof *a, 0, 0, 5, 10), 5);
    assert_int_equal(tv_lower_u32(a, sizeof *a, 0, 2, 4, 2), 2);
    assert_int_equal(tv_lower_u32(a, sizeof *a, 0, 3, 3, 9), 3);
    assert_int_equal(tv_lower_u32(NULL, sizeof *a, 0, 0, 0, 1), 0);
    const struct genome_conn c[] = {{1, 5, 0.5f}, {1, 7, 0.25f}, {2, 3, 1.0f}};
    size_t to = offsetof(struct genome_conn, to);
    assert_int_equal(tv_lower_u32(c, sizeof *c, to, 0, 2, 6), 1);
    assert_int_equal(tv_lower_u32(c, sizeof *c, to, 0, 2, 8), 2);
}

/* ---- tv_buf ------------------------------------------------------------ */

static void test_tv_buf_append_grows_and_free_resets(void **state)
{
    (void)state;
    struct tv_buf b = {0};
    assert_int_equal(tv_buf_append(&b, "x", 0), 0);
    assert_int_equal(b.len, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(tv_buf_append(&b, "abc", 3), 0);
    assert_int_equal(b.len, 3000);
    assert_true(b.cap >= 3000);
    assert_memory_equal(b.data + 2997, "abc", 3);
    assert_int_equal(tv_buf_reserve(&b, SIZE_MAX - 10), TV_ENOMEM);
    assert_int_equal(b.len, 3000); /* unchanged */
    tv_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(tv_buf_append(&b, "z", 1), 0);
    tv_buf_free(&b);
}

static void test_tv_grow_doubles_and_refuses_overflow(void **state)
{
    (void)state;
    struct tv_error err = {0};
    uint64_t *a = NULL;
    size_t cap = 0;
    assert_ok(tv_grow((void **)&a, &cap, 0, sizeof *a, &err), &err);
    assert_null(a); /* nothing asked, nothing allocated */
    assert_ok(tv_grow((void **)&a, &cap, 1, sizeof *a, &err), &err);
    assert_int_equal(cap, 16);
    a[15] = 7;
    assert_ok(tv_grow((void **)&a, &cap, 17, sizeof *a, &err), &err);
    assert_int_equal(cap, 32);
    assert_int_equal(a[15], 7); /* kept */
    assert_ok(tv_grow((void **)&a, &cap, 100, sizeof *a, &err), &err);
    assert_int_equal(cap, 128);
    uint64_t *before = a;
    assert_error(tv_grow((void **)&a, &cap, SIZE_MAX / 4, sizeof *a, &err), &err, TV_ENOMEM,
                 "out of memory for 4611686018427387903 elements of 8 bytes");
    assert_ptr_equal(a, before);
    assert_int_equal(cap, 128);
    free(a);
}

static void test_tv_buf_write_appends_msgpack_bytes(void **state)
{
    (void)state;
    struct tv_buf b = {0};
    assert_int_equal(tv_buf_write(&b, "ab", 2), 0);
    assert_int_equal(tv_buf_write(&b, "c", 1), 0);
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "abc", 3);
    tv_buf_free(&b);
}

/* ---- life cycle, genes ------------------------------------------------- */

static void test_genome_conn_cmp_orders_by_from_then_to(void **state)
{
    (void)state;
    const struct genome_conn c[] = {{1, 9, 0.5f}, {2, 0, 0.0f}, {2, 3, -1.0f}, {2, 3, 7.0f}};
    assert_int_equal(genome_conn_cmp(&c[0], &c[1]), -1); /* from decides */
    assert_int_equal(genome_conn_cmp(&c[1], &c[0]), 1);
    assert_int_equal(genome_conn_cmp(&c[1], &c[2]), -1); /* then to */
    assert_int_equal(genome_conn_cmp(&c[2], &c[1]), 1);
    assert_int_equal(genome_conn_cmp(&c[2], &c[3]), 0); /* the weight does not count */
    const struct genome_neuron n[] = {{.id = 4, .depth = 0.5f}, {.id = UINT32_MAX - 1}};
    assert_int_equal(genome_neuron_cmp(&n[0], &n[1]), -1);
    assert_int_equal(genome_neuron_cmp(&n[1], &n[0]), 1);
    assert_int_equal(genome_neuron_cmp(&n[1], &n[1]), 0);
}

static void test_genome_conn_class_targets_are_its_inverse(void **state)
{
    (void)state;
    for (size_t n = 1; n <= 6; n++)
        for (size_t f = 0; f < n; f++)
            for (int cls = 0; cls < GENOME_CONN_CLASSES; cls++) {
                size_t lo, hi;
                genome_conn_class_targets(cls, f, n, &lo, &hi);
                for (size_t t = 0; t < n; t++)
                    assert_int_equal(genome_conn_class(f, t) == cls, t >= lo && t < hi);
            }
    assert_int_equal(genome_conn_class(3, 3), GENOME_CONN_RECURRENT); /* self loop */
    assert_int_equal(genome_conn_class(3, 1), GENOME_CONN_RECURRENT);
    assert_int_equal(genome_conn_class(1, 2), GENOME_CONN_LOCAL);
    assert_int_equal(genome_conn_class(1, 3), GENOME_CONN_SKIP);
}

static void test_genome_layers_are_distinct_sorted_depths(void **state)
{
    struct tu_pair *t = *state;
    tu_small_genome(&t->a);
    float *d;
    size_t n;
    assert_ok(genome_layers(&t->a, &d, &n, &t->err), &t->err);
    assert_int_equal(n, 4);
    assert_true(d[0] == 0.0f && d[1] == 0.5f && d[2] == 0.75f && d[3] == 1.0f);
    assert_int_equal(genome_layer_of(d, n, 0.5f), 1);
    assert_int_equal(genome_layer_of(d, n, 0.6f), 2); /* between layers: the next one up */
    assert_int_equal(genome_conn_class_of(d, n, 0.0f, 1.0f), GENOME_CONN_SKIP);
    assert_int_equal(genome_conn_class_of(d, n, 0.75f, 1.0f), GENOME_CONN_LOCAL);
    assert_int_equal(genome_conn_class_of(d, n, 1.0f, 0.5f), GENOME_CONN_RECURRENT);
    free(d);
    genome_release(&t->a);
}

/* The cut of a dense order: the inputs alone, then runs of equal depth
 * (-0 equals 0); starts and layer_of agree; run ends; no inputs; nothing. */
static void test_genome_layers_cut_inputs_then_runs_of_depth(void **state)
{
    (void)state;
    /* 2 inputs, a hidden neuron at -0 (apart from the inputs), one at 0 (its
     * run), two at 0.5, one at 1 */
    const float d[] = {0.0f, 0.0f, -0.0f, 0.0f, 0.5f, 0.5f, 1.0f};
    uint32_t start[8], of[7], of2[7], run[7];
    assert_int_equal(genome_layers_cut(d, 7, 2, start, of), 4);
    const uint32_t want_start[] = {0, 2, 4, 6, 7}, want_of[] = {0, 0, 1, 1, 2, 2, 3};
    assert_memory_equal(start, want_start, sizeof want_start);
    assert_memory_equal(of, want_of, sizeof want_of);
    genome_layers_index(start, 4, of2);
    assert_memory_equal(of2, want_of, sizeof want_of);
    assert_int_equal(genome_layers_cut(d, 7, 2, NULL, NULL), 4);
    assert_int_equal(genome_layer_end(d, 7, 2, 0), 2);
    assert_int_equal(genome_layer_end(d, 7, 2, 1), 2);
    assert_int_equal(genome_layer_end(d, 7, 2, 2), 4);
    assert_int_equal(genome_layer_end(d, 7, 2, 6), 7);
    assert_int_equal(genome_layer_end(d, 2, 5, 0), 2); /* more inputs than neurons: all */
    /* without inputs the first run is layer 0 */
    assert_int_equal(genome_layers_cut(d, 7, 0, start, of), 3);
    const uint32_t want0[] = {0, 4, 6, 7};
    assert_memory_equal(start, want0, sizeof want0);
    assert_int_equal(genome_layers_cut(d, 0, 0, start, NULL), 0);
    assert_int_equal(start[0], 0);
    /* runs: the first position where the depth rises */
    genome_depth_run_ends(d, 7, run);
    const uint32_t want_run[] = {4, 4, 4, 4, 6, 6, 7};
    assert_memory_equal(run, want_run, sizeof want_run);
    /* NaN equals nothing: a layer of its own */
    const float nan_d[] = {0.0f, NAN, NAN, 1.0f};
    assert_int_equal(genome_layers_cut(nan_d, 4, 1, NULL, NULL), 4);
}

static void test_genome_idmap_finds_every_id_and_no_other(void **state)
{
    struct tu_pair *t = *state;
    struct tv_rng rng = tu_rng(14, 0, 0);
    tu_random_genome(&t->a, &rng, 60); /* split ids: sparse 32-bit values */
    struct genome_idmap m;
    assert_int_equal(genome_idmap_build(&m, &t->a), 0);
    for (size_t i = 0; i < t->a.n_neurons; i++) {
        assert_int_equal(genome_idmap_find(&m, t->a.neurons[i].id), (ptrdiff_t)i);
        assert_int_equal(genome_idmap_find(&m, t->a.neurons[i].id + 1),
                         genome_find_neuron(&t->a, t->a.neurons[i].id + 1));
    }
    assert_int_equal(genome_idmap_find(&m, GENOME_ID_NONE), -1);
    genome_idmap_free(&m);
    assert_null(m.ids);
}

static void test_genome_new_free_init_release(void **state)
{
    (void)state;
    genome_free(NULL);
    struct genome *g = genome_new();
    assert_non_null(g);
    assert_int_equal(g->n_neurons, 0);
    tu_small_genome(g);
    genome_free(g);
    struct genome h;
    genome_init(&h);
    tu_small_genome(&h);
    struct genome_neuron *mem = h.neurons;
    genome_reset(&h);
    assert_int_equal(h.n_neurons, 0);
    assert_int_equal(h.n_conns, 0);
    assert_ptr_equal(h.neurons, mem); /* memory kept */
    genome_release(&h);
    assert_null(h.neurons);
    genome_release(&h); /* twice is fine */
}

static void test_genome_reserve_copy_equal(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    assert_ok(genome_reserve(a, 100, 200, &err), &err);
    assert_true(a->cap_neurons >= 100 && a->cap_conns >= 200);
    tu_small_genome(a);
    assert_ok(genome_copy(b, a, &err), &err);
    assert_true(genome_equal(a, b));
    assert_ptr_not_equal(a->conns, b->conns);
    /* Each field matters, bitwise on floats (-0 != 0). */
    b->conns[3].weight = -b->conns[3].weight;
    assert_false(genome_equal(a, b));
    genome_copy(b, a, &err);
    b->neurons[0].bias = -0.0f;
    assert_true(a->neurons[0].bias == 0.0f);
    assert_false(genome_equal(a, b));
    genome_copy(b, a, &err);
    b->neurons[4].act++;
    assert_false(genome_equal(a, b));
    genome_copy(b, a, &err);
    b->neurons[4].depth = 0.875f;
    assert_false(genome_equal(a, b));
    genome_copy(b, a, &err);
    b->conns[0].to = 11;
    assert_false(genome_equal(a, b));
    genome_copy(b, a, &err);
    b->n_conns--;
    assert_false(genome_equal(a, b));
    /* Copy of an empty genome. */
    genome_reset(a);
    assert_ok(genome_copy(b, a, &err), &err);
    assert_int_equal(b->n_neurons, 0);
    assert_true(genome_equal(a, b));
}

static void test_genome_reserve_impossible_size_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    assert_error(genome_reserve(g, SIZE_MAX / 2, 0, &err), &err, TV_ENOMEM, "out of memory");
    assert_error(genome_reserve(g, 0, SIZE_MAX / 4, &err), &err, TV_ENOMEM, "connections");
}

static void test_genome_add_neuron_keeps_order(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    static const uint32_t want[] = {0, 1, 2, 10, 11};
    assert_int_equal(g->n_neurons, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(g->neurons[i].id, want[i]);
    assert_int_equal(g->neurons[3].kind, GENOME_HIDDEN);
    assert_true(g->neurons[3].bias == 0.125f);
}

static void test_genome_add_neuron_duplicate_or_reserved_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    tu_small_genome(g);
    assert_error(genome_add_neuron(g, 10, GENOME_HIDDEN, 0, 0, 0.5f, &err), &err, TV_EINVAL,
                 "neuron 10 already exists");
    assert_error(genome_add_neuron(g, GENOME_ID_NONE, GENOME_HIDDEN, 0, 0, 0.5f, &err), &err,
                 TV_EINVAL, "4294967295");
    assert_int_equal(g->n_neurons, 5);
}

static void test_genome_add_conn_keeps_order(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    assert_int_equal(g->n_conns, 8);
    for (size_t i = 1; i < g->n_conns; i++)
        assert_true(
            g->conns[i - 1].from < g->conns[i].from ||
            (g->conns[i - 1].from == g->conns[i].from && g->conns[i - 1].to < g->conns[i].to));
    struct tv_error err = {0};
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_genome_add_conn_missing_end_or_duplicate_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    tu_small_genome(g);
    assert_error(genome_add_conn(g, 7, 2, 1, &err), &err, TV_EINVAL, "neuron 7 does not exist");
    assert_msg_has(&err, "7 -> 2");
    assert_error(genome_add_conn(g, 0, 99, 1, &err), &err, TV_EINVAL, "neuron 99 does not exist");
    assert_error(genome_add_conn(g, 10, 11, 1, &err), &err, TV_EINVAL,
                 "connection 10 -> 11 already exists");
    assert_int_equal(g->n_conns, 8);
}

static void test_genome_find_neuron_and_conn(void **state)
{
    struct genome *g = *state;
    assert_int_equal(genome_find_neuron(g, 0), -1);
    assert_int_equal(genome_find_conn(g, 0, 0), -1);
    tu_small_genome(g);
    assert_int_equal(genome_find_neuron(g, 0), 0);
    assert_int_equal(genome_find_neuron(g, 11), 4);
    assert_int_equal(genome_find_neuron(g, 5), -1);
    assert_int_equal(genome_find_neuron(g, 12), -1);
    assert_int_equal(genome_find_neuron(g, GENOME_ID_NONE), -1);
    for (size_t i = 0; i < g->n_conns; i++)
        assert_int_equal(genome_find_conn(g, g->conns[i].from, g->conns[i].to), (ptrdiff_t)i);
    assert_int_equal(genome_find_conn(g, 11, 10), -1);
    assert_int_equal(genome_find_conn(g, 2, 11), -1);
}

static void test_genome_canonicalize_sorts_pushed_genes(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    tu_small_genome(a);
    /* Push a's genes into b in reverse order. */
    for (size_t i = a->n_neurons; i-- > 0;)
        assert_ok(genome_push_neuron(b, &a->neurons[i], &err), &err);
    for (size_t i = a->n_conns; i-- > 0;)
        assert_ok(genome_push_conn(b, &a->conns[i], &err), &err);
    assert_false(genome_equal(a, b));
    assert_ok(genome_canonicalize(b, &err), &err);
    assert_true(genome_equal(a, b));
}

static void test_genome_canonicalize_duplicate_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    tu_small_genome(g);
    struct genome_neuron n = g->neurons[3]; /* id 10 */
    assert_ok(genome_push_neuron(g, &n, &err), &err);
    assert_error(genome_canonicalize(g, &err), &err, TV_EINVAL, "neuron 10 is listed twice");
    tu_small_genome(g);
    struct genome_conn c = {11, 2, 9.0f};
    assert_ok(genome_push_conn(g, &c, &err), &err);
    assert_error(genome_canonicalize(g, &err), &err, TV_EINVAL,
                 "connection 11 -> 2 is listed twice");
    /* A duplicate that lands right after an otherwise sorted list. */
    tu_small_genome(g);
    c = g->conns[g->n_conns - 1];
    assert_ok(genome_push_conn(g, &c, &err), &err);
    assert_error(genome_canonicalize(g, &err), &err, TV_EINVAL, "listed twice");
}

static void test_genome_remove_conn_at_keeps_order(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    struct genome_conn last = g->conns[7];
    genome_remove_conn_at(g, 2);
    assert_int_equal(g->n_conns, 7);
    assert_int_equal(g->conns[6].from, last.from);
    assert_int_equal(g->conns[6].to, last.to);
    genome_remove_conn_at(g, 6);
    genome_remove_conn_at(g, 0);
    assert_int_equal(g->n_conns, 5);
    struct tv_error err = {0};
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_genome_act_name_parse_kind_name(void **state)
{
    (void)state;
    for (int a = 0; a < GENOME_ACT_COUNT; a++) {
        const char *name = genome_act_name(a);
        assert_string_not_equal(name, "?");
        assert_int_equal(genome_act_parse(name, strlen(name)), a);
    }
    assert_string_equal(genome_act_name(GENOME_ACT_NEAT_SIGMOID), "neat_sigmoid");
    assert_string_equal(genome_act_name(-1), "?");
    assert_string_equal(genome_act_name(GENOME_ACT_COUNT), "?");
    assert_int_equal(genome_act_parse("relux", 4), GENOME_ACT_RELU); /* length counts */
    assert_int_equal(genome_act_parse("relux", 5), -1);
    assert_int_equal(genome_act_parse("", 0), -1);
    assert_int_equal(genome_act_parse("Tanh", 4), -1);
    assert_string_equal(genome_kind_name(GENOME_INPUT), "in");
    assert_string_equal(genome_kind_name(GENOME_OUTPUT), "out");
    assert_string_equal(genome_kind_name(GENOME_HIDDEN), "hid");
    assert_string_equal(genome_kind_name(3), "?");
}

static void test_genome_count_kind_counts(void **state)
{
    struct genome *g = *state;
    tu_small_genome(g);
    assert_int_equal(genome_count_kind(g, GENOME_INPUT), 2);
    assert_int_equal(genome_count_kind(g, GENOME_OUTPUT), 1);
    assert_int_equal(genome_count_kind(g, GENOME_HIDDEN), 2);
    assert_int_equal(genome_count_kind(g, 7), 0);
}

/* ---- validation: one test per invariant --------------------------------- */

static struct genome *valid_genome(void)
{
    struct genome *g = genome_new();
    assert_non_null(g);
    tu_small_genome(g);
    struct tv_error err = {0};
    assert_ok(genome_validate(g, NULL, &err), &err);
    return g;
}

static void test_genome_validate_accepts_valid(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    struct genome_limits exact = {g->n_neurons, g->n_conns};
    assert_ok(genome_validate(g, &exact, &err), &err);
    /* An input with no edges, hidden at depth 0 and 1, edges out of an output. */
    assert_ok(genome_add_neuron(g, 20, GENOME_INPUT, 0, 0, 0, &err), &err);
    assert_ok(genome_add_neuron(g, 21, GENOME_HIDDEN, 0, 0, 0.0f, &err), &err);
    assert_ok(genome_add_neuron(g, 22, GENOME_HIDDEN, 0, 0, 1.0f, &err), &err);
    assert_ok(genome_add_conn(g, 2, 22, 1, &err), &err);
    assert_ok(genome_add_conn(g, 2, 2, 1, &err), &err);
    assert_ok(genome_add_conn(g, 21, 21, 1, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    genome_free(g);
}

static void test_genome_validate_duplicate_neuron_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    g->neurons[4].id = 10; /* 0 1 2 10 10 */
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "neuron 10: id listed twice");
    genome_free(g);
}

static void test_genome_validate_unsorted_neurons_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    struct genome_neuron t = g->neurons[3];
    g->neurons[3] = g->neurons[4];
    g->neurons[4] = t; /* 0 1 2 11 10 */
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "neuron 10: out of order");
    genome_free(g);
}

static void test_genome_validate_reserved_id_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    g->neurons[4].id = GENOME_ID_NONE;
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "4294967295");
    assert_msg_has(&err, "reserved");
    genome_free(g);
}

static void test_genome_validate_unsorted_conns_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    struct genome_conn t = g->conns[5];
    g->conns[5] = g->conns[6];
    g->conns[6] = t;
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "out of (from, to) order");
    char want[64];
    snprintf(want, sizeof want, "connection 6 (%u -> %u)", g->conns[6].from, g->conns[6].to);
    assert_msg_has(&err, want);
    genome_free(g);
}

static void test_genome_validate_duplicate_conn_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    g->conns[3] = g->conns[2];
    g->conns[3].weight = 5;
    char want[64];
    snprintf(want, sizeof want, "connection 3 (%u -> %u): key listed twice", g->conns[2].from,
             g->conns[2].to);
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, want);
    genome_free(g);
}

static void test_genome_validate_missing_endpoint_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    /* The last connection is 11 -> 2; make it 11 -> 12. */
    g->conns[g->n_conns - 1].to = 12;
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "neuron 12 does not exist");
    assert_msg_has(&err, "(11 -> 12)");
    /* A missing source; 3 is between existing ids. */
    genome_free(g);
    g = valid_genome();
    g->conns[g->n_conns - 1].from = 13;
    g->conns[g->n_conns - 1].to = 2;
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "neuron 13 does not exist");
    /* The reserved id as an endpoint. */
    g->conns[g->n_conns - 1].from = GENOME_ID_NONE;
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL,
                 "neuron 4294967295 does not exist");
    genome_free(g);
}

static void test_genome_validate_edge_into_input_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    assert_ok(genome_add_conn(g, 11, 1, 0.5f, &err), &err);
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "ends in input neuron 1");
    assert_msg_has(&err, "(11 -> 1)");
    genome_free(g);
    /* Input to itself. */
    g = valid_genome();
    assert_ok(genome_add_conn(g, 0, 0, 0.5f, &err), &err);
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "ends in input neuron 0");
    genome_free(g);
}

static void test_genome_validate_nonfinite_weight_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    float bad[] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        g->conns[4].weight = bad[k];
        char want[64];
        snprintf(want, sizeof want, "connection 4 (%u -> %u): weight is not finite",
                 g->conns[4].from, g->conns[4].to);
        assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, want);
    }
    genome_free(g);
}

/* One field of one neuron of valid_genome() set to a value validation must
 * refuse, with the message it must give. */
enum neuron_field { F_BIAS, F_DEPTH, F_KIND, F_ACT };
static const struct bad_neuron {
    size_t neuron; /* index: 0, 1 inputs, 2 output, 3 and 4 hidden 10 and 11 */
    enum neuron_field field;
    float value;
    const char *msg;
} bad_neurons[] = {
    {3, F_BIAS, NAN, "neuron 10: bias is not finite"},
    {3, F_BIAS, INFINITY, "neuron 10: bias is not finite"},
    {3, F_BIAS, -INFINITY, "neuron 10: bias is not finite"},
    {4, F_DEPTH, -0.001f, "neuron 11: depth -0.001 is outside [0, 1]"},
    {4, F_DEPTH, 1.0001f, "neuron 11: depth 1.0001 is outside [0, 1]"},
    {4, F_DEPTH, NAN, "neuron 11: depth nan is outside [0, 1]"},
    {4, F_DEPTH, INFINITY, "neuron 11: depth inf is outside [0, 1]"},
    {4, F_DEPTH, -INFINITY, "neuron 11: depth -inf is outside [0, 1]"},
    {4, F_DEPTH, 2.0f, "neuron 11: depth 2 is outside [0, 1]"},
    {1, F_DEPTH, 0.5f, "neuron 1: an input must have depth 0, not 0.5"},
    {2, F_DEPTH, 0.25f, "neuron 2: an output must have depth 1, not 0.25"},
    {3, F_KIND, 3, "neuron 10: unknown kind 3"},
    {3, F_ACT, GENOME_ACT_COUNT, "neuron 10: unknown activation"},
};

static void test_genome_validate_bad_neuron_field_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    for (size_t i = 0; i < sizeof bad_neurons / sizeof *bad_neurons; i++) {
        const struct bad_neuron *b = &bad_neurons[i];
        struct genome *g = valid_genome();
        struct genome_neuron *n = &g->neurons[b->neuron];
        if (b->field == F_BIAS)
            n->bias = b->value;
        else if (b->field == F_DEPTH)
            n->depth = b->value;
        else if (b->field == F_KIND)
            n->kind = (uint8_t)b->value;
        else
            n->act = (uint8_t)b->value;
        assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, b->msg);
        genome_free(g);
    }
}

static void test_genome_validate_no_input_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    for (size_t i = 0; i < g->n_neurons; i++)
        if (g->neurons[i].kind == GENOME_INPUT)
            g->neurons[i].kind = GENOME_HIDDEN;
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "no input neuron");
    genome_reset(g);
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "no input neuron");
    genome_free(g);
}

static void test_genome_validate_no_output_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    g->neurons[2].kind = GENOME_HIDDEN;
    assert_error(genome_validate(g, NULL, &err), &err, TV_EINVAL, "no output neuron");
    genome_free(g);
}

static void test_genome_validate_limits_exceeded_fails(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome *g = valid_genome();
    struct genome_limits few_neurons = {4, 100};
    assert_error(genome_validate(g, &few_neurons, &err), &err, TV_ELIMIT,
                 "5 neurons, more than the limit of 4");
    struct genome_limits few_conns = {100, 7};
    assert_error(genome_validate(g, &few_conns, &err), &err, TV_ELIMIT,
                 "8 connections, more than the limit of 7");
    genome_free(g);
}

/* ---- stats ------------------------------------------------------------- */

static void test_genome_stats_counts_kinds_on_small_genome(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    tu_small_genome(g);
    struct genome_stats s;
    assert_ok(genome_stats(g, &s, &err), &err);
    assert_int_equal(s.n_neurons, 5);
    assert_int_equal(s.n_inputs, 2);
    assert_int_equal(s.n_outputs, 1);
    assert_int_equal(s.n_hidden, 2);
    assert_int_equal(s.n_conns, 8);
    assert_int_equal(s.n_layers, 4);
    /* local: 0->10, 1->10, 10->11, 11->2; skip: 0->2, 0->11; recurrent: 2->10, 10->10 */
    assert_int_equal(s.n_local, 4);
    assert_int_equal(s.n_skip, 2);
    assert_int_equal(s.n_recurrent, 2);
    /* Same-depth edge between distinct neurons is recurrent. */
    assert_ok(genome_add_neuron(g, 12, GENOME_HIDDEN, 0, 0, 0.5f, &err), &err);
    assert_ok(genome_add_conn(g, 10, 12, 1, &err), &err);
    assert_ok(genome_stats(g, &s, &err), &err);
    assert_int_equal(s.n_recurrent, 3);
    assert_int_equal(s.n_layers, 4);
    /* Empty genome. */
    genome_reset(g);
    assert_ok(genome_stats(g, &s, &err), &err);
    assert_int_equal(s.n_layers, 0);
    assert_int_equal(s.n_conns, 0);
}

/* ---- starting genomes -------------------------------------------------- */

static void test_genome_build_minimal_shape(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(1, 0, 0);
    assert_ok(genome_build_minimal(g, 3, 2, GENOME_ACT_SIGMOID, 1.0, &r, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    assert_int_equal(g->n_neurons, 5);
    assert_int_equal(g->n_conns, 6);
    for (uint32_t i = 0; i < 5; i++) {
        assert_int_equal(g->neurons[i].id, i);
        assert_int_equal(g->neurons[i].kind, i < 3 ? GENOME_INPUT : GENOME_OUTPUT);
        assert_true(g->neurons[i].depth == (i < 3 ? 0.0f : 1.0f));
        if (i >= 3)
            assert_int_equal(g->neurons[i].act, GENOME_ACT_SIGMOID);
    }
    int nonzero = 0;
    for (size_t i = 0; i < g->n_conns; i++) {
        assert_true(g->conns[i].from < 3 && g->conns[i].to >= 3);
        nonzero += g->conns[i].weight != 0;
    }
    assert_true(nonzero >= 5);
    /* sd 0: weights 0; a second build replaces the first. */
    assert_ok(genome_build_minimal(g, 1, 1, GENOME_ACT_IDENTITY, 0.0, &r, &err), &err);
    assert_int_equal(g->n_neurons, 2);
    assert_int_equal(g->n_conns, 1);
    assert_true(g->conns[0].weight == 0.0f);
}

static void test_genome_build_minimal_bad_args_fail(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(1, 0, 0);
    assert_error(genome_build_minimal(g, 0, 2, 0, 1, &r, &err), &err, TV_EINVAL, "(got 0, 2)");
    assert_error(genome_build_minimal(g, 2, 0, 0, 1, &r, &err), &err, TV_EINVAL, "(got 2, 0)");
    assert_error(genome_build_minimal(g, 2, 2, GENOME_ACT_COUNT, 1, &r, &err), &err, TV_EINVAL,
                 "unknown output activation");
    assert_error(genome_build_minimal(g, 2, 2, -1, 1, &r, &err), &err, TV_EINVAL, "activation -1");
    assert_error(genome_build_minimal(g, 1u << 20, 1u << 20, 0, 1, &r, &err), &err, TV_ELIMIT,
                 "1048576 x 1048576 is too large");
    assert_error(genome_build_minimal(g, UINT32_MAX, 1, 0, 1, &r, &err), &err, TV_ELIMIT,
                 "too large");
}

static void test_genome_build_layered_ids_depths_valid(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(2, 0, 0);
    uint32_t sizes[] = {3, 4, 5, 2};
    struct genome_layered_spec spec = {sizes, 4, 0.5, 0.2, 0.1, GENOME_ACT_RELU, GENOME_ACT_SIGMOID,
                                       1.0};
    assert_ok(genome_build_layered(g, &spec, &r, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    assert_int_equal(g->n_neurons, 14);
    /* inputs 0..2, outputs 3..4, hidden layer 1: 5..8 at 1/3, layer 2: 9..13 at 2/3 */
    for (uint32_t i = 0; i < 14; i++) {
        const struct genome_neuron *n = &g->neurons[i];
        assert_int_equal(n->id, i);
        if (i < 3) {
            assert_int_equal(n->kind, GENOME_INPUT);
            assert_true(n->depth == 0.0f);
        } else if (i < 5) {
            assert_int_equal(n->kind, GENOME_OUTPUT);
            assert_int_equal(n->act, GENOME_ACT_SIGMOID);
            assert_true(n->depth == 1.0f);
        } else {
            assert_int_equal(n->kind, GENOME_HIDDEN);
            assert_int_equal(n->act, GENOME_ACT_RELU);
            assert_true(n->depth == (i < 9 ? (float)(1.0 / 3) : (float)(2.0 / 3)));
        }
    }
    struct genome_stats s;
    assert_ok(genome_stats(g, &s, &err), &err);
    assert_int_equal(s.n_layers, 4);
}

static void test_genome_build_layered_density_and_kinds(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(3, 0, 0);
    uint32_t sizes[] = {100, 100, 100};
    /* local pairs 2 x 10^4 at 0.1: ~2000; skip 10^4 at 0.05: ~500;
     * recurrent (1,1), (2,1), (2,2): 3 x 10^4 at 0.01: ~300. */
    struct genome_layered_spec spec = {sizes, 3, 0.1, 0.05, 0.01, 0, 0, 1.0};
    assert_ok(genome_build_layered(g, &spec, &r, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    struct genome_stats s;
    assert_ok(genome_stats(g, &s, &err), &err);
    assert_true(s.n_local > 1700 && s.n_local < 2300);
    assert_true(s.n_skip > 380 && s.n_skip < 620);
    assert_true(s.n_recurrent > 220 && s.n_recurrent < 380);
    assert_int_equal(s.n_local + s.n_skip + s.n_recurrent, g->n_conns);
    /* Rates 0: none of those kinds. */
    spec.skip_rate = 0;
    spec.recurrent_rate = 0;
    assert_ok(genome_build_layered(g, &spec, &r, &err), &err);
    assert_ok(genome_stats(g, &s, &err), &err);
    assert_int_equal(s.n_skip, 0);
    assert_int_equal(s.n_recurrent, 0);
    assert_true(s.n_local > 1700);
    /* Density 1: complete; density 0 and rates 0: no connection at all. */
    uint32_t small[] = {3, 4, 2};
    struct genome_layered_spec full = {small, 3, 1.0, 1.0, 1.0, 0, 0, 0.0};
    assert_ok(genome_build_layered(g, &full, &r, &err), &err);
    assert_ok(genome_stats(g, &s, &err), &err);
    assert_int_equal(s.n_local, 3 * 4 + 4 * 2);
    assert_int_equal(s.n_skip, 3 * 2);
    assert_int_equal(s.n_recurrent, 4 * 4 + 2 * 4 + 2 * 2);
    struct genome_layered_spec none = {small, 3, 0.0, 0.0, 0.0, 0, 0, 1.0};
    assert_ok(genome_build_layered(g, &none, &r, &err), &err);
    assert_int_equal(g->n_conns, 0);
    assert_int_equal(g->n_neurons, 9);
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_genome_build_layered_large_sparse_is_cheap(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(4, 0, 0);
    /* 10^10 pairs at 1e-7: ~1000 connections; a dense walk would never end. */
    uint32_t sizes[] = {100000, 100000};
    struct genome_layered_spec spec = {sizes, 2, 1e-7, 0, 0, 0, 0, 1.0};
    assert_ok(genome_build_layered(g, &spec, &r, &err), &err);
    assert_true(g->n_conns > 800 && g->n_conns < 1200);
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_genome_build_layered_bad_spec_fails(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(5, 0, 0);
    uint32_t sizes[] = {2, 3, 1};
    struct genome_layered_spec spec = {sizes, 1, 0.5, 0, 0, 0, 0, 1.0};
    assert_error(genome_build_layered(g, &spec, &r, &err), &err, TV_EINVAL,
                 "need at least 2 layers, got 1");
    spec.n_layers = 3;
    sizes[1] = 0;
    assert_error(genome_build_layered(g, &spec, &r, &err), &err, TV_EINVAL, "layer 1 is empty");
    sizes[1] = 3;
    spec.density = 1.5;
    assert_error(genome_build_layered(g, &spec, &r, &err), &err, TV_EINVAL,
                 "density must be in [0, 1], got 1.5");
    spec.density = NAN;
    assert_error(genome_build_layered(g, &spec, &r, &err), &err, TV_EINVAL, "density");
    spec.density = 0.5;
    spec.skip_rate = -0.1;
    assert_error(genome_build_layered(g, &spec, &r, &err), &err, TV_EINVAL, "skip_rate");
    spec.skip_rate = 0;
    spec.recurrent_rate = 2;
    assert_error(genome_build_layered(g, &spec, &r, &err), &err, TV_EINVAL, "recurrent_rate");
    spec.recurrent_rate = 0;
    spec.hidden_act = GENOME_ACT_COUNT;
    assert_error(genome_build_layered(g, &spec, &r, &err), &err, TV_EINVAL, "unknown activation");
    spec.hidden_act = 0;
    spec.out_act = -1;
    assert_error(genome_build_layered(g, &spec, &r, &err), &err, TV_EINVAL, "unknown activation");
    spec.out_act = 0;
    uint32_t huge[] = {1u << 24, 1};
    struct genome_layered_spec big = {huge, 2, 0, 0, 0, 0, 0, 1.0};
    assert_error(genome_build_layered(g, &big, &r, &err), &err, TV_ELIMIT, "16777217 neurons");
}

/* ---- split ids --------------------------------------------------------- */

/* Split ids are stored in every database and line up neurons in crossover:
 * they are pinned to the values of the first version, so a change to the hash
 * cannot go unnoticed (it would misalign genomes already stored). */
static void test_genome_split_id_fixed_values_never_reserved(void **state)
{
    (void)state;
    assert_int_equal(genome_split_id(0, 1, 0), 2552531643u);
    assert_int_equal(genome_split_id(3, 7, 0), 1481803586u);
    assert_int_equal(genome_split_id(3, 7, 1), 3737248891u);
    assert_int_equal(genome_split_id(7, 3, 0), 3307961667u);
    assert_int_equal(genome_split_id(0xfffffffeu, 0xffffffffu, 3), 2198229354u);
    struct tv_rng r = tu_rng(6, 0, 0);
    static const uint32_t edge[] = {0, 1, 2, 1u << 20, 0x7fffffffu, 0xfffffffeu, 0xffffffffu};
    for (int i = 0; i < 20000; i++) {
        uint32_t a = i < 49 ? edge[i % 7] : (uint32_t)tv_rng_u64(&r);
        uint32_t b = i < 49 ? edge[i / 7] : (uint32_t)tv_rng_u64(&r);
        uint32_t k = tv_rng_below(&r, 4);
        uint32_t id = genome_split_id(a, b, k);
        assert_true(id != GENOME_ID_NONE);
        assert_true(id >= (1u << 20));
        assert_true(id != genome_split_id(a, b, k + 1) || id != genome_split_id(a, b, k + 2));
    }
    /* Direction matters: a->b and b->a are different connections. */
    int same = 0;
    for (uint32_t a = 0; a < 100; a++)
        same += genome_split_id(a, a + 1, 0) == genome_split_id(a + 1, a, 0);
    assert_true(same < 2);
}

/* ---- mutation ---------------------------------------------------------- */

static struct genome_mutation no_mutation(void)
{
    struct genome_mutation m = {0};
    m.hidden_act = GENOME_ACT_RELU;
    m.weight_init_sd = 1.0;
    return m;
}

static void test_genome_mutate_zero_rates_changes_nothing(void **state)
{
    TU_PAIR_GENOMES(g, copy);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(7, 0, 0);
    for (int t = 0; t < 50; t++) {
        tu_random_genome(g, &r, 10);
        assert_ok(genome_copy(copy, g, &err), &err);
        struct genome_mutation m = no_mutation();
        assert_ok(genome_mutate(g, &m, &r, &err), &err);
        assert_true(genome_equal(g, copy));
    }
}

/* Finds the key of a that is not in b (exactly one expected). */
static const struct genome_conn *lost_conn(const struct genome *a, const struct genome *b)
{
    const struct genome_conn *lost = NULL;
    for (size_t i = 0; i < a->n_conns; i++)
        if (genome_find_conn(b, a->conns[i].from, a->conns[i].to) < 0) {
            assert_null(lost);
            lost = &a->conns[i];
        }
    return lost;
}

static void test_genome_mutate_add_neuron_splits_with_split_id(void **state)
{
    TU_PAIR_GENOMES(g, before);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(8, 0, 0);
    struct genome_mutation m = no_mutation();
    m.add_neuron_rate = 1;
    m.hidden_act = GENOME_ACT_GAUSS;
    for (int t = 0; t < 300; t++) {
        if (t % 10 == 0)
            tu_random_genome(g, &r, 6);
        if (g->n_conns == 0)
            continue;
        assert_ok(genome_copy(before, g, &err), &err);
        struct genome_stats s0, s1;
        assert_ok(genome_stats(g, &s0, &err), &err);
        assert_ok(genome_mutate(g, &m, &r, &err), &err);
        assert_ok(genome_validate(g, NULL, &err), &err);
        assert_ok(genome_stats(g, &s1, &err), &err);
        assert_int_equal(s1.n_recurrent, s0.n_recurrent); /* delays kept */
        assert_int_equal(g->n_neurons, before->n_neurons + 1);
        assert_int_equal(g->n_conns, before->n_conns + 1);
        const struct genome_conn *old = lost_conn(before, g);
        assert_non_null(old);
        uint32_t k = 0, id;
        while (genome_find_neuron(before, id = genome_split_id(old->from, old->to, k)) >= 0)
            k++;
        ptrdiff_t h = genome_find_neuron(g, id);
        assert_true(h >= 0);
        assert_int_equal(g->neurons[h].kind, GENOME_HIDDEN);
        assert_int_equal(g->neurons[h].act, GENOME_ACT_GAUSS);
        ptrdiff_t in = genome_find_conn(g, old->from, id);
        ptrdiff_t out = genome_find_conn(g, id, old->to);
        assert_true(in >= 0 && out >= 0);
        assert_true(g->conns[in].weight == 1.0f);
        assert_true(memcmp(&g->conns[out].weight, &old->weight, sizeof(float)) == 0);
        /* The new neuron sits below the target; between the ends when feed-forward. */
        float df = before->neurons[genome_find_neuron(before, old->from)].depth;
        float dt = before->neurons[genome_find_neuron(before, old->to)].depth;
        float dh = g->neurons[h].depth;
        assert_true(dh <= dt);
        if (df < dt)
            assert_true(dh >= df);
    }
}

static void test_genome_mutate_add_neuron_taken_id_uses_next_attempt(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(9, 0, 0);
    assert_ok(genome_build_minimal(g, 1, 1, 0, 1.0, &r, &err), &err);
    uint32_t id0 = genome_split_id(0, 1, 0), id1 = genome_split_id(0, 1, 1);
    assert_ok(genome_add_neuron(g, id0, GENOME_HIDDEN, 0, 0, 0.5f, &err), &err);
    struct genome_mutation m = no_mutation();
    m.add_neuron_rate = 1;
    assert_ok(genome_mutate(g, &m, &r, &err), &err);
    assert_ok(genome_validate(g, NULL, &err), &err);
    assert_int_equal(g->n_neurons, 4);
    assert_true(genome_find_neuron(g, id1) >= 0);
    assert_true(genome_find_conn(g, 0, id1) >= 0);
    assert_true(genome_find_conn(g, id1, 1) >= 0);
    assert_true(genome_find_conn(g, 0, 1) < 0);
}

/* Two different genomes that share the connection 0 -> 3 make the same
 * neuron when each splits it: no innovation table needed. */
static void split_until(struct genome *g, uint32_t from, uint32_t to, uint64_t seed)
{
    struct tv_error err = {0};
    struct genome_mutation m = no_mutation();
    m.add_neuron_rate = 1;
    struct genome trial;
    genome_init(&trial);
    for (uint64_t s = 0;; s++) {
        assert_true(s < 10000);
        struct tv_rng r = tu_rng(seed, s, 0);
        assert_ok(genome_copy(&trial, g, &err), &err);
        assert_ok(genome_mutate(&trial, &m, &r, &err), &err);
        if (genome_find_conn(&trial, from, to) < 0)
            break;
    }
    genome_copy(g, &trial, &err);
    genome_release(&trial);
}

static void test_genome_mutate_split_same_conn_same_id_across_genomes(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(10, 0, 0);
    assert_ok(genome_build_minimal(a, 3, 1, 0, 1.0, &r, &err), &err); /* ids 0,1,2 -> 3 */
    uint32_t sizes[] = {3, 5, 1};
    struct genome_layered_spec spec = {sizes, 3, 1.0, 1.0, 0.3, 0, 0, 1.0};
    assert_ok(genome_build_layered(b, &spec, &r, &err), &err); /* 0,1,2 -> 4..8 -> 3 */
    assert_true(genome_find_conn(b, 0, 3) >= 0);
    assert_false(genome_equal(a, b));
    split_until(a, 0, 3, 111);
    split_until(b, 0, 3, 222);
    uint32_t id = genome_split_id(0, 3, 0);
    ptrdiff_t ia = genome_find_neuron(a, id), ib = genome_find_neuron(b, id);
    assert_true(ia >= 0 && ib >= 0);
    assert_true(a->neurons[ia].depth == b->neurons[ib].depth);
    assert_true(genome_find_conn(a, 0, id) >= 0 && genome_find_conn(b, 0, id) >= 0);
    assert_true(genome_find_conn(a, id, 3) >= 0 && genome_find_conn(b, id, 3) >= 0);
}

static void test_genome_mutate_del_neuron_removes_incident_conns(void **state)
{
    TU_PAIR_GENOMES(g, before);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(11, 0, 0);
    struct genome_mutation m = no_mutation();
    m.del_neuron_rate = 1;
    for (int t = 0; t < 200; t++) {
        tu_random_genome(g, &r, 8);
        assert_ok(genome_copy(before, g, &err), &err);
        assert_ok(genome_mutate(g, &m, &r, &err), &err);
        assert_ok(genome_validate(g, NULL, &err), &err);
        size_t hid = genome_count_kind(before, GENOME_HIDDEN);
        if (hid == 0) {
            assert_true(genome_equal(g, before));
            continue;
        }
        assert_int_equal(g->n_neurons, before->n_neurons - 1);
        assert_int_equal(genome_count_kind(g, GENOME_HIDDEN), hid - 1);
        uint32_t gone = GENOME_ID_NONE;
        for (size_t i = 0; i < before->n_neurons; i++)
            if (genome_find_neuron(g, before->neurons[i].id) < 0)
                gone = before->neurons[i].id;
        assert_true(gone != GENOME_ID_NONE);
        size_t incident = 0;
        for (size_t i = 0; i < before->n_conns; i++) {
            const struct genome_conn *c = &before->conns[i];
            if (c->from == gone || c->to == gone)
                incident++;
            else
                assert_true(genome_find_conn(g, c->from, c->to) >= 0);
        }
        assert_int_equal(g->n_conns, before->n_conns - incident);
    }
}

static void test_genome_mutate_del_conn_removes_one(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(12, 0, 0);
    tu_small_genome(g);
    struct genome_mutation m = no_mutation();
    m.del_conn_rate = 1;
    for (size_t n = 8; n > 0; n--) {
        assert_int_equal(g->n_conns, n);
        assert_ok(genome_mutate(g, &m, &r, &err), &err);
        assert_ok(genome_validate(g, NULL, &err), &err);
    }
    assert_int_equal(g->n_conns, 0);
    assert_ok(genome_mutate(g, &m, &r, &err), &err); /* nothing left: no-op */
}

/* Each add-connection operator alone adds connections of its kind only. */
static void check_add_kind(double local, double skip, double rec, int which)
{
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(13, (uint64_t)which, 0);
    struct genome g;
    genome_init(&g);
    uint32_t sizes[] = {4, 6, 6, 6, 3};
    struct genome_layered_spec spec = {sizes, 5, 0.1, 0.0, 0.0, 0, 0, 1.0};
    struct genome_mutation m = no_mutation();
    m.add_local_rate = local;
    m.add_skip_rate = skip;
    m.add_recurrent_rate = rec;
    int grew = 0;
    for (int t = 0; t < 100; t++) {
        if (t % 10 == 0)
            assert_ok(genome_build_layered(&g, &spec, &r, &err), &err);
        struct genome_stats s0, s1;
        assert_ok(genome_stats(&g, &s0, &err), &err);
        assert_ok(genome_mutate(&g, &m, &r, &err), &err);
        assert_ok(genome_validate(&g, NULL, &err), &err);
        assert_ok(genome_stats(&g, &s1, &err), &err);
        assert_true(s1.n_conns <= s0.n_conns + 1);
        assert_int_equal(s1.n_neurons, s0.n_neurons);
        size_t d_local = s1.n_local - s0.n_local, d_skip = s1.n_skip - s0.n_skip,
               d_rec = s1.n_recurrent - s0.n_recurrent;
        assert_int_equal(d_local + d_skip + d_rec, s1.n_conns - s0.n_conns);
        if (which != 0)
            assert_int_equal(d_local, 0);
        if (which != 1)
            assert_int_equal(d_skip, 0);
        if (which != 2)
            assert_int_equal(d_rec, 0);
        grew += s1.n_conns > s0.n_conns;
    }
    assert_true(grew >= 90); /* sparse genome: a free pair is almost always found */
    genome_release(&g);
}

static void test_genome_mutate_add_local_adds_local(void **state)
{
    (void)state;
    check_add_kind(1, 0, 0, 0);
}

static void test_genome_mutate_add_skip_adds_skip(void **state)
{
    (void)state;
    check_add_kind(0, 1, 0, 1);
}

static void test_genome_mutate_add_recurrent_adds_recurrent(void **state)
{
    (void)state;
    check_add_kind(0, 0, 1, 2);
}

static void test_genome_mutate_add_on_saturated_genome_is_noop(void **state)
{
    TU_PAIR_GENOMES(g, before);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(14, 0, 0);
    uint32_t sizes[] = {2, 2, 2};
    struct genome_layered_spec spec = {sizes, 3, 1.0, 1.0, 1.0, 0, 0, 1.0};
    assert_ok(genome_build_layered(g, &spec, &r, &err), &err);
    genome_copy(before, g, &err);
    struct genome_mutation m = no_mutation();
    m.add_local_rate = m.add_skip_rate = m.add_recurrent_rate = 1;
    for (int t = 0; t < 20; t++)
        assert_ok(genome_mutate(g, &m, &r, &err), &err);
    assert_true(genome_equal(g, before));
}

static void test_genome_mutate_limits_stop_growth(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(15, 0, 0);
    struct genome_mutation m = tu_aggressive_mutation();
    m.del_conn_rate = 0;
    m.del_neuron_rate = 0;
    m.add_neuron_rate = 1;
    m.add_local_rate = m.add_skip_rate = m.add_recurrent_rate = 1;
    for (int t = 0; t < 20; t++) {
        tu_random_genome(g, &r, 4);
        m.limits.max_neurons = g->n_neurons + 3;
        m.limits.max_conns = g->n_conns + 5;
        for (int k = 0; k < 50; k++) {
            assert_ok(genome_mutate(g, &m, &r, &err), &err);
            assert_ok(genome_validate(g, &m.limits, &err), &err);
        }
        assert_true(g->n_neurons <= m.limits.max_neurons);
        assert_true(g->n_conns <= m.limits.max_conns);
    }
}

static void test_genome_mutate_act_change_picks_from_choices(void **state)
{
    TU_PAIR_GENOMES(g, before);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(16, 0, 0);
    struct genome_mutation m = no_mutation();
    m.act_change_rate = 1;
    m.act_choices = 1u << GENOME_ACT_SIN | 1u << GENOME_ACT_STEP | 1u << 30; /* 30: ignored */
    int seen_sin = 0, seen_step = 0;
    for (int t = 0; t < 100; t++) {
        tu_random_genome(g, &r, 8);
        genome_copy(before, g, &err);
        assert_ok(genome_mutate(g, &m, &r, &err), &err);
        assert_ok(genome_validate(g, NULL, &err), &err);
        for (size_t i = 0; i < g->n_neurons; i++) {
            const struct genome_neuron *n = &g->neurons[i];
            if (n->kind == GENOME_HIDDEN) {
                assert_true(n->act == GENOME_ACT_SIN || n->act == GENOME_ACT_STEP);
                seen_sin += n->act == GENOME_ACT_SIN;
                seen_step += n->act == GENOME_ACT_STEP;
            } else {
                assert_int_equal(n->act, before->neurons[i].act);
            }
        }
    }
    assert_true(seen_sin > 0 && seen_step > 0);
    /* No choices: nothing changes. */
    m.act_choices = 0;
    genome_copy(before, g, &err);
    assert_ok(genome_mutate(g, &m, &r, &err), &err);
    assert_true(genome_equal(g, before));
}

static void test_genome_mutate_weight_max_clamps(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(17, 0, 0);
    struct genome_mutation m = no_mutation();
    m.weight_perturb_rate = 0.5;
    m.weight_perturb_sd = 100;
    m.weight_replace_rate = 0.5;
    m.weight_init_sd = 100;
    m.bias_perturb_rate = 0.5;
    m.bias_perturb_sd = 100;
    m.bias_replace_rate = 0.5;
    m.bias_init_sd = 100;
    m.weight_max = 2.0;
    for (int t = 0; t < 50; t++) {
        tu_random_genome(g, &r, 4);
        assert_ok(genome_mutate(g, &m, &r, &err), &err);
        for (size_t i = 0; i < g->n_conns; i++)
            assert_true(fabsf(g->conns[i].weight) <= 2.0f);
        for (size_t i = 0; i < g->n_neurons; i++) {
            if (g->neurons[i].kind == GENOME_INPUT)
                assert_true(g->neurons[i].bias == 0.0f);
            else
                assert_true(fabsf(g->neurons[i].bias) <= 2.0f);
        }
    }
}

static void test_genome_mutate_huge_sd_stays_finite(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(18, 0, 0);
    struct genome_mutation m = no_mutation();
    m.weight_perturb_rate = 1;
    m.weight_perturb_sd = 1e300; /* N(0, sd^2) overflows float */
    m.bias_perturb_rate = 1;
    m.bias_perturb_sd = 1e300;
    tu_random_genome(g, &r, 4);
    assert_ok(genome_mutate(g, &m, &r, &err), &err);
    /* genome.h: "Mutates g in place; g stays valid." */
    assert_ok(genome_validate(g, NULL, &err), &err);
}

static void test_genome_mutate_same_seed_same_child(void **state)
{
    TU_TRIO_GENOMES(base, a, b);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(19, 0, 0);
    struct genome_mutation m = tu_aggressive_mutation();
    int differ = 0;
    for (int t = 0; t < 200; t++) {
        tu_random_genome(base, &r, 10);
        genome_copy(a, base, &err);
        genome_copy(b, base, &err);
        struct tv_rng ra, rb, rc;
        tv_rng_init(&ra, 77, (uint64_t)t, 1);
        tv_rng_init(&rb, 77, (uint64_t)t, 1);
        tv_rng_init(&rc, 77, (uint64_t)t, 2);
        for (int k = 0; k < 3; k++) {
            assert_ok(genome_mutate(a, &m, &ra, &err), &err);
            assert_ok(genome_mutate(b, &m, &rb, &err), &err);
        }
        assert_true(genome_equal(a, b));
        assert_true(ra.ctr == rb.ctr);
        genome_copy(b, base, &err);
        for (int k = 0; k < 3; k++)
            assert_ok(genome_mutate(b, &m, &rc, &err), &err);
        differ += !genome_equal(a, b);
    }
    assert_true(differ > 190);
}

/* When the add-connection operators' index cannot be allocated, genome_mutate must report
 * TV_ENOMEM (the header: "Only TV_ENOMEM can fail") and not crash. Run in a
 * child with a small address-space limit so that the add-connection
 * operator's index cannot be allocated. */
static void test_genome_mutate_out_of_memory_reports_enomem(void **state)
{
    (void)state;
#ifdef TU_ASAN
    skip(); /* ASan reserves terabytes of address space: RLIMIT_AS cannot work */
#else
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(20, 0, 0);
    struct genome g;
    genome_init(&g);
    uint32_t sizes[] = {1u << 19, 1u << 19}; /* 2^20 neurons, 16 MB */
    struct genome_layered_spec spec = {sizes, 2, 0, 0, 0, 0, 0, 1.0};
    assert_ok(genome_build_layered(&g, &spec, &r, &err), &err);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Room for about 20 MB more: the index needs 8 + 8 + 8 + 16 MB. */
        FILE *f = fopen("/proc/self/statm", "r");
        unsigned long pages = 0;
        if (!f || fscanf(f, "%lu", &pages) != 1)
            _exit(3);
        fclose(f);
        struct rlimit lim;
        lim.rlim_cur = lim.rlim_max = pages * (rlim_t)sysconf(_SC_PAGESIZE) + (20u << 20);
        if (setrlimit(RLIMIT_AS, &lim))
            _exit(3);
        struct genome_mutation m = no_mutation();
        m.add_local_rate = 1;
        int rc = genome_mutate(&g, &m, &r, &err);
        _exit(rc == TV_ENOMEM || rc == 0 ? 0 : 4);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        print_error("child: %s %d\n", WIFSIGNALED(status) ? "killed by signal" : "exit status",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    genome_release(&g);
#endif
}

/* ---- properties over random genomes ------------------------------------ */

static void test_genome_mutate_random_genomes_stay_valid(void **state)
{
    struct genome *g = *state;
    struct tv_rng r = tu_rng(21, 0, 0);
    size_t max_hidden = 0, with_rec = 0, with_skip = 0;
    for (int t = 0; t < 1500; t++) {
        tu_random_genome(g, &r, 30); /* validates after every mutation */
        struct genome_stats s;
        struct tv_error err = {0};
        assert_ok(genome_stats(g, &s, &err), &err);
        assert_int_equal(s.n_local + s.n_skip + s.n_recurrent, s.n_conns);
        if (s.n_hidden > max_hidden)
            max_hidden = s.n_hidden;
        with_rec += s.n_recurrent > 0;
        with_skip += s.n_skip > 0;
    }
    /* The generator does make what the properties claim to cover. */
    assert_true(max_hidden > 20);
    assert_true(with_rec > 500);
    assert_true(with_skip > 500);
}

/* Two related parents: one ancestor, each mutated apart. */
static void related_parents(struct genome *a, struct genome *b, struct tv_rng *r)
{
    struct tv_error err = {0};
    tu_random_genome(a, r, 10);
    assert_ok(genome_copy(b, a, &err), &err);
    struct genome_mutation m = tu_aggressive_mutation();
    uint32_t na = tv_rng_below(r, 6), nb = tv_rng_below(r, 6);
    for (uint32_t i = 0; i < na; i++)
        assert_ok(genome_mutate(a, &m, r, &err), &err);
    for (uint32_t i = 0; i < nb; i++)
        assert_ok(genome_mutate(b, &m, r, &err), &err);
    if (tv_rng_chance(r, 0.1))
        tu_random_genome(b, r, 10); /* sometimes unrelated */
}

static void test_genome_crossover_properties(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(22, 0, 0);
    struct genome fit, oth, child, child2;
    genome_init(&fit);
    genome_init(&oth);
    genome_init(&child);
    genome_init(&child2);
    int comparable = 0, differ = 0, took_other = 0;
    for (int t = 0; t < 1500; t++) {
        related_parents(&fit, &oth, &r);
        struct tv_rng rc, rc2;
        tv_rng_init(&rc, 99, (uint64_t)t, 0);
        tv_rng_init(&rc2, 99, (uint64_t)t, 0);
        assert_ok(genome_crossover(&child, &fit, &oth, &rc, &err), &err);
        assert_ok(genome_validate(&child, NULL, &err), &err);
        /* Exactly fitter's neuron ids and connection keys, in order. */
        assert_int_equal(child.n_neurons, fit.n_neurons);
        assert_int_equal(child.n_conns, fit.n_conns);
        int could_differ = 0;
        for (size_t i = 0; i < fit.n_neurons; i++) {
            const struct genome_neuron *c = &child.neurons[i], *f = &fit.neurons[i];
            assert_int_equal(c->id, f->id);
            assert_int_equal(c->kind, f->kind);
            assert_true(memcmp(&c->depth, &f->depth, sizeof(float)) == 0);
            ptrdiff_t j = genome_find_neuron(&oth, f->id);
            const struct genome_neuron *o = j >= 0 ? &oth.neurons[j] : NULL;
            int bias_ok = memcmp(&c->bias, &f->bias, sizeof(float)) == 0 ||
                          (o && memcmp(&c->bias, &o->bias, sizeof(float)) == 0);
            assert_true(bias_ok);
            assert_true(c->act == f->act || (o && c->act == o->act));
            if (o && f->kind != GENOME_INPUT && o->kind == f->kind &&
                (f->bias != o->bias || f->act != o->act))
                could_differ = 1;
        }
        for (size_t i = 0; i < fit.n_conns; i++) {
            const struct genome_conn *c = &child.conns[i], *f = &fit.conns[i];
            assert_int_equal(c->from, f->from);
            assert_int_equal(c->to, f->to);
            ptrdiff_t j = genome_find_conn(&oth, f->from, f->to);
            const struct genome_conn *o = j >= 0 ? &oth.conns[j] : NULL;
            int from_f = memcmp(&c->weight, &f->weight, sizeof(float)) == 0;
            int from_o = o && memcmp(&c->weight, &o->weight, sizeof(float)) == 0;
            assert_true(from_f || from_o);
            if (o && f->weight != o->weight) {
                could_differ = 1;
                took_other += from_o;
            }
        }
        /* Same seed, same child, bit for bit; a different seed usually differs. */
        assert_ok(genome_crossover(&child2, &fit, &oth, &rc2, &err), &err);
        assert_true(genome_equal(&child, &child2));
        if (could_differ) {
            comparable++;
            tv_rng_init(&rc2, 98, (uint64_t)t, 0);
            assert_ok(genome_crossover(&child2, &fit, &oth, &rc2, &err), &err);
            differ += !genome_equal(&child, &child2);
        }
    }
    assert_true(comparable > 1000);
    assert_true(differ > comparable * 3 / 4);
    assert_true(took_other > 1000);
    genome_release(&fit);
    genome_release(&oth);
    genome_release(&child);
    genome_release(&child2);
}

static void test_genome_crossover_with_self_copy_is_identity(void **state)
{
    TU_TRIO_GENOMES(a, b, child);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(23, 0, 0);
    for (int t = 0; t < 100; t++) {
        tu_random_genome(a, &r, 10);
        genome_copy(b, a, &err);
        assert_ok(genome_crossover(child, a, b, &r, &err), &err);
        assert_true(genome_equal(child, a));
    }
}

static void test_genome_crossover_child_is_parent_fails(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(24, 0, 0);
    tu_small_genome(a);
    tu_small_genome(b);
    assert_error(genome_crossover(a, a, b, &r, &err), &err, TV_EINVAL,
                 "the child must not be a parent");
    assert_error(genome_crossover(b, a, b, &r, &err), &err, TV_EINVAL,
                 "the child must not be a parent");
    assert_int_equal(a->n_conns, 8); /* untouched */
    assert_int_equal(b->n_conns, 8);
}

static void test_genome_distance_properties(void **state)
{
    TU_TRIO_GENOMES(a, b, c);
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(25, 0, 0);
    struct genome_distance_cfg cfg = {1.0, 1.0, 0.4, 20};
    int positive = 0;
    for (int t = 0; t < 2000; t++) {
        related_parents(a, b, &r);
        double ab = genome_distance(a, b, &cfg), ba = genome_distance(b, a, &cfg);
        assert_true(ab == ba);
        assert_true(ab >= 0 && isfinite(ab));
        positive += ab > 0;
        assert_true(genome_distance(a, a, &cfg) == 0.0);
        genome_copy(c, a, &err);
        assert_true(genome_distance(a, c, &cfg) == 0.0);
    }
    assert_true(positive > 1800);
}

/* The sketch bound never exceeds the distance (up to the margin speciation
 * leaves for rounding), for several coefficient sets, and it is not
 * trivially 0: it must be able to pass over far representatives. */
static void test_genome_distance_bound_below_distance(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_rng r = tu_rng(26, 0, 0);
    const struct genome_distance_cfg cfgs[] = {
        {1.0, 1.0, 0.4, 20}, {1.0, 2.0, 0.5, 1}, {3.0, 0.5, 0.0, 5}, {0.0, 1.0, 1.0, 20}};
    int useful = 0;
    for (int t = 0; t < 3000; t++) {
        related_parents(a, b, &r);
        struct genome_sketch sa, sb;
        genome_sketch(a, &sa);
        genome_sketch(b, &sb);
        assert_int_equal(sa.n_conns, a->n_conns);
        for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++) {
            double d = genome_distance(a, b, &cfgs[k]);
            double lb = genome_distance_bound(&sa, &sb, &cfgs[k]);
            assert_true(lb == genome_distance_bound(&sb, &sa, &cfgs[k]));
            assert_true(lb >= 0);
            assert_true(lb * GENOME_BOUND_MARGIN <= d);
            useful += lb > 0.5 * d && d > 0;
        }
        /* a genome's own sketch: bound 0 */
        assert_true(genome_distance_bound(&sa, &sa, &cfgs[0]) == 0.0);
    }
    assert_true(useful > 1000);
    /* a negative coefficient: no bound */
    struct genome_sketch sa, sb;
    genome_sketch(a, &sa);
    genome_sketch(b, &sb);
    const struct genome_distance_cfg neg = {1.0, 1.0, -0.4, 20};
    assert_true(genome_distance_bound(&sa, &sb, &neg) == 0.0);
}

static void test_genome_distance_hand_computed(void **state)
{
    TU_PAIR_GENOMES(a, b);
    struct tv_error err = {0};
    tu_small_genome(a);
    genome_copy(b, a, &err);
    /* keys: (0,2) (0,10) (0,11) (1,10) (2,10) (10,10) (10,11) (11,2) */
    struct genome_distance_cfg cfg = {1.0, 2.0, 0.5, 1};
    b->conns[0].weight += 1.0f;               /* |dw| = 1 */
    genome_remove_conn_at(b, 3);              /* (1,10): a only */
    genome_remove_conn_at(b, b->n_conns - 1); /* (11,2): a only */
    assert_ok(genome_add_neuron(b, 50, GENOME_HIDDEN, 0, 0, 0.5f, &err), &err);
    assert_ok(genome_add_conn(b, 50, 2, 1.0f, &err), &err); /* (50,2): b only */
    /* matching 6, W = 1/6; (1,10) and (11,2) are disjoint (below b's last key
     * (50,2)), (50,2) is excess; N = 8 since 8 >= small_genome. */
    double want = 1.0 * 1 / 8 + 2.0 * 2 / 8 + 0.5 * (1.0 / 6);
    assert_true(fabs(genome_distance(a, b, &cfg) - want) < 1e-12);
    assert_true(fabs(genome_distance(b, a, &cfg) - want) < 1e-12);
    /* Below small_genome, N = 1. */
    cfg.small_genome = 20;
    want = 1.0 * 1 + 2.0 * 2 + 0.5 * (1.0 / 6);
    assert_true(fabs(genome_distance(a, b, &cfg) - want) < 1e-12);
    /* Empty genomes. */
    genome_reset(a);
    genome_reset(b);
    assert_true(genome_distance(a, b, &cfg) == 0.0);
}

/* A split must not change what the network computes beyond the new neuron:
 * a feed-forward a -> b stays two feed-forward halves, a recurrent one keeps
 * exactly one delay. Corner cases: ends at adjacent floats (no float lies
 * strictly between) and a recurrent edge into a hidden neuron at depth 0. */
static void test_genome_mutate_add_neuron_keeps_delays(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    struct tv_rng r = tu_rng(26, 0, 0);
    struct genome_mutation m = no_mutation();
    m.add_neuron_rate = 1;
    float lo = 0.5f, hi = nextafterf(0.5f, 1.0f);
    for (int c = 0; c < 2; c++) {
        genome_reset(g);
        assert_ok(genome_add_neuron(g, 0, GENOME_INPUT, 0, 0, 0, &err), &err);
        assert_ok(genome_add_neuron(g, 1, GENOME_OUTPUT, 0, 0, 1, &err), &err);
        if (c == 0) { /* the only connection: 5 -> 6, depths 0.5 and the next float */
            assert_ok(genome_add_neuron(g, 5, GENOME_HIDDEN, 0, 0, lo, &err), &err);
            assert_ok(genome_add_neuron(g, 6, GENOME_HIDDEN, 0, 0, hi, &err), &err);
            assert_ok(genome_add_conn(g, 5, 6, 1, &err), &err);
        } else { /* the only connection: recurrent 1 -> 5, 5 at depth 0 */
            assert_ok(genome_add_neuron(g, 5, GENOME_HIDDEN, 0, 0, 0.0f, &err), &err);
            assert_ok(genome_add_conn(g, 1, 5, 1, &err), &err);
        }
        struct genome_stats s0, s1;
        assert_ok(genome_stats(g, &s0, &err), &err);
        assert_ok(genome_mutate(g, &m, &r, &err), &err);
        assert_ok(genome_validate(g, NULL, &err), &err);
        assert_ok(genome_stats(g, &s1, &err), &err);
        if (s1.n_recurrent != s0.n_recurrent)
            print_error("case %d: %zu recurrent connections before the split, %zu after\n", c,
                        s0.n_recurrent, s1.n_recurrent);
        assert_int_equal(s1.n_recurrent, s0.n_recurrent);
    }
}

/* An empty genome is already canonical; qsort must not be handed its NULL
 * arrays (undefined behaviour, an abort in the sanitizer build: listed
 * last in main()). */
static void test_genome_canonicalize_empty_genome_ok(void **state)
{
    struct genome *g = *state;
    struct tv_error err = {0};
    assert_ok(genome_canonicalize(g, &err), &err);
    assert_int_equal(g->n_neurons, 0);
}

/* ---- the graph builder ------------------------------------------------------------ */

static void test_genome_build_graph_makes_valid_genomes_with_every_kind(void **state)
{
    struct tu_pair *t = *state;
    struct tv_rng rng = tu_rng(8, 8, 8);
    struct genome_graph_spec sp = {2000,           20, 10, 40000, 16, 0.1, 0.3, GENOME_ACT_RELU,
                                   GENOME_ACT_TANH};
    assert_int_equal(genome_build_graph(&t->a, &sp, &rng, &t->err), 0);
    assert_int_equal(genome_validate(&t->a, NULL, &t->err), 0);
    struct genome_stats st;
    assert_int_equal(genome_stats(&t->a, &st, &t->err), 0);
    assert_int_equal(st.n_inputs, 20);
    assert_int_equal(st.n_outputs, 10);
    assert_true(st.n_conns > 38000 && st.n_conns <= 40100);
    assert_true(st.n_local > 1000 && st.n_skip > 1000);
    assert_true(st.n_recurrent > 3000 && st.n_recurrent < 5000);
    genome_release(&t->a);
}

static void test_genome_build_graph_rejects_bad_spec(void **state)
{
    struct tu_pair *t = *state;
    struct tv_rng rng = tu_rng(8, 8, 8);
    struct genome_graph_spec sp = {3, 2, 2, 10, 1, 0.1, 0.3, GENOME_ACT_RELU, GENOME_ACT_TANH};
    assert_int_equal(genome_build_graph(&t->a, &sp, &rng, &t->err), TV_EINVAL);
    assert_string_equal(t->err.msg,
                        "genome_build_graph: 3 neurons cannot hold 2 inputs and 2 outputs");
    sp = (struct genome_graph_spec){10, 2, 2, 10, 1, 1.5, 0.3, GENOME_ACT_RELU, GENOME_ACT_TANH};
    assert_int_equal(genome_build_graph(&t->a, &sp, &rng, &t->err), TV_EINVAL);
    assert_string_equal(t->err.msg, "genome_build_graph: rec_rate 1.5 outside [0, 1]");
    genome_release(&t->a);
}

/* ---- neuron models ----------------------------------------------------- */

static void test_genome_models_table_is_consistent(void **state)
{
    (void)state;
    for (int m = 0; m < GENOME_MODEL_COUNT; m++) {
        const struct genome_model_info *mi = &genome_models[m];
        assert_int_equal(genome_model_parse(mi->name, strlen(mi->name)), m);
        assert_true(mi->n_params <= GENOME_MAX_PARAMS);
        struct genome_neuron n;
        memset(&n, 0xff, sizeof n);
        genome_neuron_set_model(&n, m);
        assert_int_equal(n.model, m);
        for (size_t k = 0; k < GENOME_MAX_PARAMS; k++) {
            if (k >= mi->n_params) {
                assert_true(n.param[k] == 0.0f);
                continue;
            }
            const struct genome_param_info *p = &mi->params[k];
            assert_true(n.param[k] == p->def);
            assert_int_equal(genome_param_check(m, k, p->def, NULL), 0); /* defaults valid */
            assert_true(p->min <= p->max);
        }
    }
    assert_int_equal(genome_models[GENOME_MODEL_RATE].n_params, 0);
    assert_int_equal(genome_model_parse("lif", 3), GENOME_MODEL_LIF);
    assert_int_equal(genome_model_parse("li", 2), -1);
    assert_int_equal(genome_model_parse("lifx", 4), -1);
}

static void test_genome_validate_model_parameters_checked(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome g = {0};
    tu_lif_genome(&g);
    assert_ok(genome_validate(&g, NULL, &err), &err);
    struct genome_neuron *n = &g.neurons[genome_find_neuron(&g, 10)];
    n->param[0] = 500.0f;
    assert_error(genome_validate(&g, NULL, &err), &err, TV_EINVAL,
                 "neuron 10: lif threshold 500 is outside [0.01, 100]");
    n->param[0] = 0.5f;
    n->param[1] = NAN;
    assert_error(genome_validate(&g, NULL, &err), &err, TV_EINVAL,
                 "neuron 10: lif decay is not finite");
    n->param[1] = 0.75f;
    n->param[3] = 1.5f;
    assert_error(genome_validate(&g, NULL, &err), &err, TV_EINVAL,
                 "neuron 10: lif refractory 1.5 is not a whole number");
    n->param[3] = 2.0f;
    n->model = GENOME_MODEL_COUNT;
    assert_error(genome_validate(&g, NULL, &err), &err, TV_EINVAL, "neuron 10: unknown model 3");
    /* a rate neuron's slots are all unused: they must be 0 */
    n->model = GENOME_MODEL_RATE;
    assert_error(genome_validate(&g, NULL, &err), &err, TV_EINVAL,
                 "neuron 10: parameter slot 0 is unused by model rate but holds 0.5");
    genome_neuron_set_model(n, GENOME_MODEL_RATE);
    assert_ok(genome_validate(&g, NULL, &err), &err);
    n->param[3] = -0.0f; /* bitwise: -0 is not the 0 the formats can carry */
    assert_error(genome_validate(&g, NULL, &err), &err, TV_EINVAL, "slot 3 is unused");
    genome_release(&g);
}

static void test_genome_equal_compares_model_and_parameters(void **state)
{
    struct tu_pair *t = *state;
    tu_lif_genome(&t->a);
    tu_lif_genome(&t->b);
    assert_true(genome_equal(&t->a, &t->b));
    t->b.neurons[3].param[2] = 0.0f;
    assert_false(genome_equal(&t->a, &t->b));
    tu_small_genome(&t->b);
    assert_false(genome_equal(&t->a, &t->b)); /* same but for the model */
}

static void test_genome_format_version_is_the_oldest_that_fits(void **state)
{
    (void)state;
    struct genome g = {0};
    assert_int_equal(genome_format_version(&g), 1); /* empty */
    tu_small_genome(&g);
    assert_int_equal(genome_format_version(&g), 1); /* rate neurons only */
    tu_lif_genome(&g);
    assert_int_equal(genome_format_version(&g), 2);
    /* a LIF neuron at its defaults still needs version 2: version 1 has no
     * model field */
    genome_neuron_set_model(&g.neurons[3], GENOME_MODEL_LIF);
    assert_int_equal(genome_format_version(&g), 2);
    genome_release(&g);
}

/* With every rate but bias perturbation at 0, each non-input neuron takes 3
 * draws (a uniform, a normal of two): a rate neuron no more, a LIF neuron 3
 * more per mutable parameter (threshold, decay) and none for the others. */
static void test_genome_mutate_parameters_draw_only_for_models_that_have_them(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome_mutation m = {0};
    m.bias_perturb_rate = 1.0;
    m.bias_perturb_sd = 0.3;
    struct genome g = {0};
    tu_small_genome(&g); /* 3 non-input neurons */
    struct tv_rng r = tu_rng(5, 0, 0);
    assert_ok(genome_mutate(&g, &m, &r, &err), &err);
    assert_int_equal(r.ctr, 3 * 3);
    tu_lif_genome(&g);
    tv_rng_init(&r, 5, 0, 0);
    assert_ok(genome_mutate(&g, &m, &r, &err), &err);
    assert_int_equal(r.ctr, 3 * 3 + 2 * 3);
    const struct genome_neuron *n = &g.neurons[3];
    assert_true(n->param[0] != 0.5f && n->param[1] != 0.75f);  /* perturbed */
    assert_true(n->param[2] == -0.25f && n->param[3] == 2.0f); /* not mutable */
    genome_release(&g);
}

static void test_genome_mutate_parameters_stay_in_range(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome_mutation m = tu_aggressive_mutation();
    m.bias_perturb_sd = 50.0; /* far past every range */
    m.bias_init_sd = 50.0;
    struct genome g = {0};
    tu_lif_genome(&g);
    struct tv_rng r = tu_rng(6, 0, 0);
    int hit_min = 0, hit_max = 0;
    for (int i = 0; i < 300; i++) {
        assert_ok(genome_mutate(&g, &m, &r, &err), &err);
        assert_ok(genome_validate(&g, NULL, &err), &err);
        ptrdiff_t j = genome_find_neuron(&g, 10);
        if (j < 0)
            break; /* deleted by a mutation */
        hit_min += g.neurons[j].param[1] == 0.0f;
        hit_max += g.neurons[j].param[1] == 1.0f;
    }
    assert_true(hit_min > 0 && hit_max > 0); /* decay clamped to [0, 1] both ways */
    genome_release(&g);
}

static void test_genome_crossover_parameters_from_either_parent(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct genome fit = {0}, oth = {0}, child = {0};
    tu_lif_genome(&fit);
    tu_lif_genome(&oth);
    const float other_params[4] = {0.7f, 0.5f, 0.25f, 3.0f};
    memcpy(oth.neurons[3].param, other_params, sizeof other_params);
    int from_other[4] = {0};
    for (uint64_t s = 0; s < 64; s++) {
        struct tv_rng r = tu_rng(7, s, 0);
        assert_ok(genome_crossover(&child, &fit, &oth, &r, &err), &err);
        assert_ok(genome_validate(&child, NULL, &err), &err);
        for (size_t k = 0; k < 4; k++) {
            float v = child.neurons[3].param[k];
            assert_true(v == fit.neurons[3].param[k] || v == oth.neurons[3].param[k]);
            from_other[k] += v == oth.neurons[3].param[k];
        }
    }
    for (size_t k = 0; k < 4; k++)
        assert_true(from_other[k] > 8 && from_other[k] < 56);
    /* Models differ: the fitter's model and parameters, whole. */
    tu_small_genome(&oth);
    struct tv_rng r = tu_rng(7, 0, 0);
    assert_ok(genome_crossover(&child, &fit, &oth, &r, &err), &err);
    assert_int_equal(child.neurons[3].model, GENOME_MODEL_LIF);
    assert_memory_equal(child.neurons[3].param, fit.neurons[3].param, sizeof fit.neurons[3].param);
    genome_release(&fit);
    genome_release(&oth);
    genome_release(&child);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tv_error_set_formats_and_returns_code),
        cmocka_unit_test(test_tv_error_set_truncates_long_message),
        cmocka_unit_test(test_tv_error_prefix_puts_context_in_front),
        cmocka_unit_test(test_tv_error_prefix_truncates_without_overflow),
        cmocka_unit_test(test_tv_code_name_names_every_code),
        cmocka_unit_test(test_tv_rng_init_same_seed_same_stream),
        cmocka_unit_test(test_tv_rng_below_in_range),
        cmocka_unit_test(test_tv_rng_below_roughly_uniform),
        cmocka_unit_test(test_tv_rng_uniform_chance_normal),
        cmocka_unit_test(test_tv_rng_shuffle_u32_is_fisher_yates),
        cmocka_unit_test(test_tv_rng_sample_u32_is_a_partial_fisher_yates),
        cmocka_unit_test(test_tv_lower_u32_finds_first_not_below),
        cmocka_unit_test(test_tv_buf_append_grows_and_free_resets),
        cmocka_unit_test(test_tv_grow_doubles_and_refuses_overflow),
        cmocka_unit_test(test_tv_buf_write_appends_msgpack_bytes),
        cmocka_unit_test(test_genome_conn_cmp_orders_by_from_then_to),
        cmocka_unit_test_setup_teardown(test_genome_idmap_finds_every_id_and_no_other,
                                        tu_pair_setup, tu_pair_teardown),
        cmocka_unit_test(test_genome_conn_class_targets_are_its_inverse),
        cmocka_unit_test_setup_teardown(test_genome_layers_are_distinct_sorted_depths,
                                        tu_pair_setup, tu_pair_teardown),
        cmocka_unit_test(test_genome_layers_cut_inputs_then_runs_of_depth),
        cmocka_unit_test(test_genome_new_free_init_release),
        TU_PAIR_TEST(test_genome_reserve_copy_equal),
        TU_GENOME_TEST(test_genome_reserve_impossible_size_fails),
        TU_GENOME_TEST(test_genome_add_neuron_keeps_order),
        TU_GENOME_TEST(test_genome_add_neuron_duplicate_or_reserved_fails),
        TU_GENOME_TEST(test_genome_add_conn_keeps_order),
        TU_GENOME_TEST(test_genome_add_conn_missing_end_or_duplicate_fails),
        TU_GENOME_TEST(test_genome_find_neuron_and_conn),
        TU_PAIR_TEST(test_genome_canonicalize_sorts_pushed_genes),
        TU_GENOME_TEST(test_genome_canonicalize_duplicate_fails),
        TU_GENOME_TEST(test_genome_remove_conn_at_keeps_order),
        cmocka_unit_test(test_genome_act_name_parse_kind_name),
        TU_GENOME_TEST(test_genome_count_kind_counts),
        cmocka_unit_test(test_genome_validate_accepts_valid),
        cmocka_unit_test(test_genome_validate_bad_neuron_field_fails),
        cmocka_unit_test(test_genome_validate_duplicate_neuron_fails),
        cmocka_unit_test(test_genome_validate_unsorted_neurons_fails),
        cmocka_unit_test(test_genome_validate_reserved_id_fails),
        cmocka_unit_test(test_genome_validate_unsorted_conns_fails),
        cmocka_unit_test(test_genome_validate_duplicate_conn_fails),
        cmocka_unit_test(test_genome_validate_missing_endpoint_fails),
        cmocka_unit_test(test_genome_validate_edge_into_input_fails),
        cmocka_unit_test(test_genome_validate_nonfinite_weight_fails),
        cmocka_unit_test(test_genome_validate_no_input_fails),
        cmocka_unit_test(test_genome_validate_no_output_fails),
        cmocka_unit_test(test_genome_validate_limits_exceeded_fails),
        TU_GENOME_TEST(test_genome_stats_counts_kinds_on_small_genome),
        TU_GENOME_TEST(test_genome_build_minimal_shape),
        TU_GENOME_TEST(test_genome_build_minimal_bad_args_fail),
        TU_GENOME_TEST(test_genome_build_layered_ids_depths_valid),
        TU_GENOME_TEST(test_genome_build_layered_density_and_kinds),
        TU_GENOME_TEST(test_genome_build_layered_large_sparse_is_cheap),
        TU_GENOME_TEST(test_genome_build_layered_bad_spec_fails),
        cmocka_unit_test(test_genome_split_id_fixed_values_never_reserved),
        TU_PAIR_TEST(test_genome_mutate_zero_rates_changes_nothing),
        TU_PAIR_TEST(test_genome_mutate_add_neuron_splits_with_split_id),
        TU_GENOME_TEST(test_genome_mutate_add_neuron_taken_id_uses_next_attempt),
        TU_PAIR_TEST(test_genome_mutate_split_same_conn_same_id_across_genomes),
        TU_GENOME_TEST(test_genome_mutate_add_neuron_keeps_delays),
        TU_PAIR_TEST(test_genome_mutate_del_neuron_removes_incident_conns),
        TU_GENOME_TEST(test_genome_mutate_del_conn_removes_one),
        cmocka_unit_test(test_genome_mutate_add_local_adds_local),
        cmocka_unit_test(test_genome_mutate_add_skip_adds_skip),
        cmocka_unit_test(test_genome_mutate_add_recurrent_adds_recurrent),
        TU_PAIR_TEST(test_genome_mutate_add_on_saturated_genome_is_noop),
        TU_GENOME_TEST(test_genome_mutate_limits_stop_growth),
        TU_PAIR_TEST(test_genome_mutate_act_change_picks_from_choices),
        TU_GENOME_TEST(test_genome_mutate_weight_max_clamps),
        TU_GENOME_TEST(test_genome_mutate_huge_sd_stays_finite),
        TU_TRIO_TEST(test_genome_mutate_same_seed_same_child),
        cmocka_unit_test(test_genome_mutate_out_of_memory_reports_enomem),
        TU_GENOME_TEST(test_genome_mutate_random_genomes_stay_valid),
        cmocka_unit_test(test_genome_crossover_properties),
        TU_TRIO_TEST(test_genome_crossover_with_self_copy_is_identity),
        TU_PAIR_TEST(test_genome_crossover_child_is_parent_fails),
        TU_TRIO_TEST(test_genome_distance_properties),
        TU_PAIR_TEST(test_genome_distance_hand_computed),
        TU_PAIR_TEST(test_genome_distance_bound_below_distance),
        TU_GENOME_TEST(test_genome_canonicalize_empty_genome_ok),
        cmocka_unit_test_setup_teardown(test_genome_build_graph_makes_valid_genomes_with_every_kind,
                                        tu_pair_setup, tu_pair_teardown),
        cmocka_unit_test_setup_teardown(test_genome_build_graph_rejects_bad_spec, tu_pair_setup,
                                        tu_pair_teardown),
        cmocka_unit_test(test_genome_models_table_is_consistent),
        cmocka_unit_test(test_genome_validate_model_parameters_checked),
        cmocka_unit_test_setup_teardown(test_genome_equal_compares_model_and_parameters,
                                        tu_pair_setup, tu_pair_teardown),
        cmocka_unit_test(test_genome_format_version_is_the_oldest_that_fits),
        cmocka_unit_test(test_genome_mutate_parameters_draw_only_for_models_that_have_them),
        cmocka_unit_test(test_genome_mutate_parameters_stay_in_range),
        cmocka_unit_test(test_genome_crossover_parameters_from_either_parent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
