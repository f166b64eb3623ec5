/* test_alloc.c -- the public entry points below under allocation failure: for
 * k = 1, 2, ... the k-th allocation the call makes fails (tests/failalloc.h),
 * until a k is never reached and the call succeeds. Each failing call must
 * return an error with a message (TV_ENOMEM, or for the store and the search
 * one of the codes below) and leave no block allocated once its results are
 * released; ASan (make asan) adds double frees and use after free.
 *
 * What is covered: our own calls to malloc, calloc, realloc, aligned_alloc
 * and open_memstream, and SQLite's allocations (its allocator is routed
 * through the same counter). Not covered: msgpack-c's decoder zone, inih's
 * and libc's own allocations (shared libraries, not wrapped). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "failalloc.h"
#include "master.h"
#include "nn.h"
#include "store.h"
#include "testutil.h"
#include "worker.h"

/* ---- the sweep ----------------------------------------------------------- */

/* One call of an entry point with allocation k failing (k = 0: none). */
struct trial {
    unsigned long k;
    int rc;
    struct tv_error err;
    unsigned long counted; /* allocations the armed call made */
    int fired;
    int same; /* set by the case: the call's result is the one expected */
};

/* Runs `call` (an expression giving an int) with t's allocation armed. */
#define ARMED(t, call)                                                                             \
    do {                                                                                           \
        failalloc_arm((t)->k);                                                                     \
        (t)->rc = (call);                                                                          \
        (t)->counted = failalloc_disarm();                                                         \
        (t)->fired = failalloc_fired();                                                            \
    } while (0)

/* A case: sets up, calls the entry point with ARMED, checks and releases
 * everything it made. */
typedef void (*case_fn)(struct trial *t, void *ctx);

/* Sweeps k = 1, 2, ... over fn and prints the number of allocation points
 * (k values that failed), which must be > 0. Each failure must give TV_ENOMEM
 * with a message saying so (SQLite's own included: SQLITE_NOMEM), unless
 * the call absorbed it (a documented fallback) and its result is the same. */
static void sweep(const char *name, case_fn fn, void *ctx)
{
    failalloc_track(1);
    /* twice without failure: lazy one-time state (SQLite's) is made by the
     * first call, which may also reuse memory an earlier test freed (pages
     * SQLite's page cache kept), so that it counts fewer allocations than
     * the calls after it (seen once: 0 against 2 in store_close); the second
     * call's count is the one every trial must end with */
    struct trial t0 = {0};
    fn(&t0, ctx);
    assert_ok(t0.rc, &t0.err);
    t0 = (struct trial){0};
    fn(&t0, ctx);
    assert_ok(t0.rc, &t0.err);
    unsigned long k, absorbed = 0;
    for (k = 1;; k++) {
        size_t base = failalloc_live();
        struct trial t = {.k = k};
        fn(&t, ctx);
        size_t live = failalloc_live();
        if (live != base)
            fail_msg("%s: allocation %lu failed (rc %d, \"%s\"): %zu blocks leaked", name, k, t.rc,
                     t.err.msg, live - base);
        if (!t.fired) {
            assert_ok(t.rc, &t.err);
            assert_int_equal(t.counted, t0.counted);
            break;
        }
        if (t.rc == 0) {
            /* a fallback absorbed it: only if the result is the same */
            if (!t.same)
                fail_msg("%s: allocation %lu failed, yet the call returned 0", name, k);
            absorbed++;
            continue;
        }
        if (t.rc != TV_ENOMEM)
            fail_msg("%s: allocation %lu failed: got rc %d (%s), \"%s\"", name, k, t.rc,
                     tv_code_name(t.rc), t.err.msg);
        assert_int_equal(t.err.code, t.rc);
        if (!strstr(t.err.msg, "memory"))
            fail_msg("%s: allocation %lu: message \"%s\" does not say out of memory", name, k,
                     t.err.msg);
    }
    failalloc_track(0);
    print_message("[ alloc    ] %s: %lu allocation points (%lu absorbed)\n", name, k - 1, absorbed);
    assert_true(k - 1 > 0); /* the entry point allocates: the sweep can fail */
}

/* ---- genomes ------------------------------------------------------------- */

/* A layered genome with skip and recurrent connections: 4 inputs, hidden
 * layers of 12 and 8, 3 outputs. */
static void layered(struct genome *g, uint64_t seed)
{
    struct tv_error err = {0};
    static const uint32_t sizes[] = {4, 12, 8, 3};
    struct genome_layered_spec spec = {sizes, 4, 0.5, 0.3, 0.2, GENOME_ACT_TANH, GENOME_ACT_SIGMOID,
                                       1.0};
    struct tv_rng rng = tu_rng(seed, 0, 0);
    genome_init(g);
    assert_ok(genome_build_layered(g, &spec, &rng, &err), &err);
}

struct genomes {
    int variant; /* which form of the entry point the next sweep calls */
    struct genome a, b;
    struct tv_buf enc;
    char *text;
    size_t text_len;
};

static int genomes_setup(void **state)
{
    struct genomes *f = calloc(1, sizeof *f);
    assert_non_null(f);
    layered(&f->a, 1);
    layered(&f->b, 2);
    struct tv_error err = {0};
    assert_ok(genome_encode(&f->a, &f->enc, &err), &err);
    f->text = tu_text_of(&f->a, &f->text_len);
    *state = f;
    return 0;
}

static int genomes_teardown(void **state)
{
    struct genomes *f = *state;
    genome_release(&f->a);
    genome_release(&f->b);
    tv_buf_free(&f->enc);
    TV_FREE_ALL(f->text, f);
    return 0;
}

static void case_encode(struct trial *t, void *ctx)
{
    struct genomes *f = ctx;
    struct tv_buf out = {0};
    ARMED(t, genome_encode(&f->a, &out, &t->err));
    t->same = out.len == f->enc.len && !memcmp(out.data, f->enc.data, out.len);
    tv_buf_free(&out);
}

static void test_genome_encode_out_of_memory(void **state)
{
    sweep("genome_encode", case_encode, *state);
}

/* Decodes into a genome that already holds genes, as a worker's scratch
 * does: on failure it must stay releasable. variant 1: msgpack-c's path. */
static void case_decode(struct trial *t, void *ctx)
{
    struct genomes *f = ctx;
    struct genome g;
    genome_init(&g);
    tu_small_genome(&g);
    ARMED(t, genome_decode_general(&g, f->enc.data, f->enc.len, NULL, f->variant, &t->err));
    t->same = genome_equal(&g, &f->a);
    genome_release(&g);
}

static void test_genome_decode_out_of_memory(void **state)
{
    struct genomes *f = *state;
    sweep("genome_decode", case_decode, f);
    f->variant = 1;
    sweep("genome_decode_general", case_decode, f);
    f->variant = 0;
}

static void case_read_text(struct trial *t, void *ctx)
{
    struct genomes *f = ctx;
    struct genome g;
    genome_init(&g);
    ARMED(t, genome_read_text(&g, f->text, f->text_len, "net.txt", NULL, &t->err));
    t->same = genome_equal(&g, &f->a);
    genome_release(&g);
}

static void test_genome_read_text_out_of_memory(void **state)
{
    sweep("genome_read_text", case_read_text, *state);
}

/* genome_write_text allocates nothing of its own (stdio buffers are libc's):
 * checked, so that a new allocation there gets a sweep. */
static void test_genome_write_text_allocates_nothing(void **state)
{
    struct genomes *f = *state;
    struct tv_error err = {0};
    FILE *out = tmpfile();
    assert_non_null(out);
    fputc(' ', out); /* let stdio allocate its buffer before arming */
    failalloc_arm(0);
    int rc = genome_write_text(&f->a, out, &err);
    unsigned long n = failalloc_disarm();
    assert_ok(rc, &err);
    assert_int_equal(n, 0);
    fclose(out);
}

static void case_mutate(struct trial *t, void *ctx)
{
    struct genomes *f = ctx;
    struct tv_error err = {0};
    struct genome g;
    genome_init(&g);
    assert_ok(genome_copy(&g, &f->a, &err), &err);
    struct genome_mutation m = tu_aggressive_mutation();
    m.add_local_rate = m.add_skip_rate = m.add_recurrent_rate = m.add_neuron_rate = 1.0;
    struct tv_rng rng = tu_rng(7, 0, 0);
    for (int i = 0; i < 4 && !t->rc; i++) /* growth: several calls */
        ARMED(t, genome_mutate(&g, &m, &rng, &t->err));
    /* "g stays valid", failure or not */
    assert_ok(genome_validate(&g, NULL, &err), &err);
    genome_release(&g);
}

static void test_genome_mutate_out_of_memory(void **state)
{
    sweep("genome_mutate", case_mutate, *state);
}

static void case_crossover(struct trial *t, void *ctx)
{
    struct genomes *f = ctx;
    struct genome child;
    genome_init(&child);
    struct tv_rng rng = tu_rng(8, 0, 0);
    ARMED(t, genome_crossover(&child, &f->a, &f->b, &rng, &t->err));
    genome_release(&child);
}

static void test_genome_crossover_out_of_memory(void **state)
{
    sweep("genome_crossover", case_crossover, *state);
}

/* ---- the engine ----------------------------------------------------------- */

/* variant 1: the tiled form (chunks of sqrt(neurons)) */
static void case_compile(struct trial *t, void *ctx)
{
    struct genomes *f = ctx;
    size_t tile_neurons = (size_t)f->variant;
    struct nn_opts o = {.tile_neurons = tile_neurons};
    struct nn_plan *p = (struct nn_plan *)1;
    ARMED(t, nn_plan_compile(&f->a, &o, &p, &t->err));
    if (t->rc)
        assert_null(p);
    else
        assert_int_equal(nn_plan_n_chunks(p) > 0, tile_neurons == 1);
    nn_plan_free(p);
}

static void test_nn_plan_compile_out_of_memory(void **state)
{
    struct genomes *f = *state;
    sweep("nn_plan_compile", case_compile, f);
    f->variant = 1;
    sweep("nn_plan_compile (tiled)", case_compile, f);
    f->variant = 0;
}

static void case_state_step(struct trial *t, void *ctx)
{
    struct genomes *f = ctx;
    struct tv_error err = {0};
    struct nn_plan *p = NULL;
    assert_ok(nn_plan_compile(&f->a, NULL, &p, &err), &err);
    struct nn_state *s = (struct nn_state *)1;
    ARMED(t, nn_state_new(p, 16, &s, &t->err));
    if (t->rc) {
        assert_null(s);
    } else {
        /* a step allocates nothing */
        float in[16 * 4] = {0}, out[16 * 3];
        in[1] = 1.0f;
        failalloc_arm(1);
        nn_step(s, in, out);
        nn_step_feature_major(s, in, out);
        assert_int_equal(failalloc_disarm(), 0);
    }
    nn_state_free(s);
    nn_plan_free(p);
}

static void test_nn_state_new_and_step_out_of_memory(void **state)
{
    sweep("nn_state_new + nn_step", case_state_step, *state);
}

/* ---- the worker ----------------------------------------------------------- */

struct wfx {
    struct master_config c;
    struct task_instance *task; /* opened by the setup: c.worker.task */
    struct tv_buf p1, p2, msg;
    struct tv_buf want; /* the results, from a call without failure */
};

static int worker_setup(void **state)
{
    struct wfx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    struct tv_error err = {0};
    assert_ok(master_config_parse(&f->c, "[run]\ntask = xor\n", "x.ini", &err), &err);
    assert_ok(master_config_open_task(&f->c, &f->task, &err), &err);
    struct genome g;
    genome_init(&g);
    struct tv_rng rng = tu_rng(4, 0, 0);
    assert_ok(genome_build_minimal(&g, 3, 1, GENOME_ACT_NEAT_SIGMOID, 1.0, &rng, &err), &err);
    assert_ok(genome_encode(&g, &f->p1, &err), &err);
    struct genome_mutation m = tu_aggressive_mutation();
    for (int i = 0; i < 6; i++)
        assert_ok(genome_mutate(&g, &m, &rng, &err), &err);
    assert_ok(genome_encode(&g, &f->p2, &err), &err);
    genome_release(&g);
    struct worker_task in[4] = {
        {100, 0, 0, WORKER_OP_INIT, 42, -1, -1, NULL, 0, NULL, 0},
        {101, 1, 1, WORKER_OP_MUTATE, 44, 7, -1, f->p1.data, f->p1.len, NULL, 0},
        {102, 1, 2, WORKER_OP_CROSSOVER_MUTATE, 45, 8, 7, f->p2.data, f->p2.len, f->p1.data,
         f->p1.len},
        {103, 1, 3, WORKER_OP_CROSSOVER, 46, 7, 8, f->p1.data, f->p1.len, f->p2.data, f->p2.len},
    };
    assert_ok(worker_tasks_encode(in, 4, &f->msg, &err), &err);
    struct worker_scratch *s = worker_scratch_new();
    assert_non_null(s);
    assert_ok(worker_process(&f->c.worker, s, 1, f->msg.data, f->msg.len, &f->want, &err), &err);
    worker_scratch_free(s);
    *state = f;
    return 0;
}

static int worker_teardown(void **state)
{
    struct wfx *f = *state;
    struct tv_buf *bufs[] = {&f->p1, &f->p2, &f->msg, &f->want};
    for (size_t i = 0; i < 4; i++)
        tv_buf_free(bufs[i]);
    task_close(f->task);
    free(f);
    return 0;
}

/* 1 if both result batches hold the same children, fitnesses and verdicts
 * (the evaluation times differ). */
static int same_results(const struct tv_buf *a, const struct tv_buf *b)
{
    struct tv_error err = {0};
    struct worker_results ra, rb;
    assert_ok(worker_results_decode(a->data, a->len, a->len, &ra, &err), &err);
    assert_ok(worker_results_decode(b->data, b->len, b->len, &rb, &err), &err);
    int same = ra.n == rb.n;
    for (size_t i = 0; same && i < ra.n; i++) {
        const struct worker_result *x = &ra.items[i], *y = &rb.items[i];
        same = x->child_id == y->child_id && !memcmp(&x->fitness, &y->fitness, sizeof x->fitness) &&
               x->solved == y->solved && x->genome_len == y->genome_len &&
               !memcmp(x->genome, y->genome, x->genome_len);
    }
    worker_results_release(&ra);
    worker_results_release(&rb);
    return same;
}

static void case_worker_process(struct trial *t, void *ctx)
{
    struct wfx *f = ctx;
    struct worker_scratch *s = worker_scratch_new();
    assert_non_null(s);
    struct tv_buf out = {0};
    ARMED(t, worker_process(&f->c.worker, s, 1, f->msg.data, f->msg.len, &out, &t->err));
    if (!t->rc)
        t->same = same_results(&out, &f->want);
    tv_buf_free(&out);
    worker_scratch_free(s);
}

static void test_worker_process_out_of_memory(void **state)
{
    sweep("worker_process", case_worker_process, *state);
}

/* ---- speciation and planning --------------------------------------------- */

/* The base genome (3 inputs, 1 output, weights 0.5) with `extra` hidden
 * neurons, each fed by input 0 and feeding the output. Genomes whose extra
 * counts differ by more than the threshold (3) are in different species. */
static struct genome *family(uint32_t extra, float jitter)
{
    struct genome *g = tu_minimal_genome(3, 1, GENOME_ACT_SIGMOID, 0.5f + jitter);
    struct tv_error err = {0};
    for (uint32_t h = 100; h < 100 + extra; h++) {
        assert_ok(genome_add_neuron(g, h, GENOME_HIDDEN, GENOME_ACT_TANH, 0.0f, 0.5f, &err), &err);
        assert_ok(genome_add_conn(g, 0, h, 1.0f, &err), &err);
        assert_ok(genome_add_conn(g, h, 3, -1.0f, &err), &err);
    }
    return g;
}

/* Members 1..n: the first n_a of family(0) with weights shifted by a_shift,
 * the rest of family(4). */
static void population(struct master_pop *p, const struct master_config *c, size_t n, size_t n_a,
                       float a_shift)
{
    struct tv_error err = {0};
    master_pop_init(p, c->compat_threshold);
    for (size_t i = 0; i < n; i++) {
        struct genome *g =
            i < n_a ? family(0, a_shift + 0.001f * (float)i) : family(4, 0.001f * (float)i);
        assert_ok(master_pop_add(p, (int64_t)i + 1, (double)(i % 7), 0, g, &err), &err);
    }
}

struct efx {
    struct master_config c;
    int selection; /* of master_plan's sweep */
};

static int evolve_setup(void **state)
{
    struct efx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    struct tv_error err = {0};
    assert_ok(
        master_config_parse(&f->c, "[run]\ntask = xor\n[population]\nsize = 24\n", "x.ini", &err),
        &err);
    *state = f;
    return 0;
}

static int evolve_teardown(void **state)
{
    free(*state);
    return 0;
}

/* From nothing: species are founded (their growth, the representatives'
 * copies, the members' lists). */
static void case_speciate_new(struct trial *t, void *ctx)
{
    struct efx *f = ctx;
    struct master_pop p;
    population(&p, &f->c, 24, 10, 0.0f);
    ARMED(t, master_speciate(&p, &f->c, 0, &t->err));
    if (!t->rc)
        assert_int_equal(p.n_species, 2);
    master_pop_release(&p);
}

/* Species A (founded first) loses every member, species B's members grew:
 * A is dropped, then B's representative is copied from a genome larger than
 * its capacity (16 connections). A and B differ by their weights (by 10, x
 * c_weight 0.4 = 4 > the threshold 3); B's new members differ from its
 * representative by 6 excess connections, x 0.1. */
static void case_speciate_drop(struct trial *t, void *ctx)
{
    struct efx *f = ctx;
    struct master_config c = f->c;
    c.distance.c_excess = c.distance.c_disjoint = 0.1;
    struct tv_error err = {0};
    struct master_pop p;
    population(&p, &c, 24, 10, 10.0f);
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    assert_int_equal(p.n_species, 2);
    for (size_t i = 0; i < p.n; i++) {
        struct genome *g = family(7, 0.001f * (float)i);
        genome_free(p.m[i].genome);
        p.m[i].genome = g;
    }
    ARMED(t, master_speciate(&p, &c, 1, &t->err));
    if (!t->rc)
        assert_int_equal(p.n_species, 1);
    master_pop_release(&p);
}

static void test_master_speciate_out_of_memory(void **state)
{
    sweep("master_speciate (new species)", case_speciate_new, *state);
    sweep("master_speciate (a species dropped)", case_speciate_drop, *state);
}

static void case_plan(struct trial *t, void *ctx)
{
    struct efx *f = ctx;
    struct tv_error err = {0};
    struct master_config c = f->c;
    c.selection = f->selection;
    struct master_pop p;
    population(&p, &c, 40, 30, 0.0f); /* a species of more than 32: a sort by keys */
    assert_ok(master_speciate(&p, &c, 0, &err), &err);
    struct tv_rng rng = tu_rng(9, 0, 0);
    int64_t *elites = NULL;
    struct master_child *children = NULL;
    size_t n_elites = 0, n_children = 0;
    ARMED(t, master_plan(&p, &c, 1, &rng, &elites, &n_elites, &children, &n_children, &t->err));
    if (!t->rc) {
        assert_int_equal(n_elites + n_children, (size_t)c.pop_size);
        /* a failure the plan absorbs must not change it */
        struct tv_rng r0 = tu_rng(9, 0, 0);
        int64_t *e0;
        struct master_child *c0;
        size_t ne0, nc0;
        assert_ok(master_plan(&p, &c, 1, &r0, &e0, &ne0, &c0, &nc0, &err), &err);
        t->same = ne0 == n_elites && nc0 == n_children && !memcmp(e0, elites, ne0 * sizeof *e0);
        for (size_t i = 0; t->same && i < nc0; i++) /* field by field: padding */
            t->same = c0[i].op == children[i].op && c0[i].parent1 == children[i].parent1 &&
                      c0[i].parent2 == children[i].parent2;
        TV_FREE_ALL(e0, c0);
    }
    TV_FREE_ALL(elites, children);
    master_pop_release(&p);
}

static void test_master_plan_out_of_memory(void **state)
{
    struct efx *f = *state;
    f->selection = MASTER_SEL_SPECIATED;
    sweep("master_plan (speciated)", case_plan, f);
    f->selection = MASTER_SEL_GENERATIONAL;
    sweep("master_plan (generational)", case_plan, f);
}

/* ---- the config ----------------------------------------------------------- */

static void case_config_dump(struct trial *t, void *ctx)
{
    struct efx *f = ctx;
    struct tv_buf out = {0};
    ARMED(t, master_config_dump(&f->c, &out, &t->err));
    if (!t->rc) {
        struct tv_error err = {0};
        struct master_config back;
        assert_ok(master_config_parse(&back, (const char *)out.data, "dump", &err), &err);
        assert_int_equal(back.pop_size, f->c.pop_size);
    }
    tv_buf_free(&out);
}

static void test_master_config_dump_out_of_memory(void **state)
{
    sweep("master_config_dump", case_config_dump, *state);
}

/* master_config_parse: inih reads the lines (a shared library, not swept);
 * ours is the task instance it opens once to learn its shape, and closes. */
static void case_config_parse(struct trial *t, void *ctx)
{
    (void)ctx;
    struct master_config c;
    ARMED(t, master_config_parse(&c, "[run]\ntask = xor\n[population]\nsize = 24\n", "x.ini",
                                 &t->err));
    t->same = 1; /* a parse that succeeds fills c from the text alone */
}

static void test_master_config_parse_out_of_memory(void **state)
{
    sweep("master_config_parse", case_config_parse, *state);
}

/* ---- data sets ------------------------------------------------------------ */

/* A CSV file of a few rows, and an IDX pair in memory: 3 images of 2 bytes. */
static const char data_csv[] = "a,b,class\n1,2,0\n# c\n3,4,1\n5,6,2\n";
static const uint8_t data_img[] = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0,
                                   1, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6};
static const uint8_t data_lab[] = {0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 1};
static char data_file[] = "/tmp/test_alloc_data_XXXXXX";

static int data_setup(void **state)
{
    (void)state;
    int fd = mkstemp(data_file);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, data_csv, sizeof data_csv - 1);
    return close(fd) || n != (ssize_t)sizeof data_csv - 1;
}

static int data_teardown(void **state)
{
    (void)state;
    return unlink(data_file);
}

/* data_load reads the file (the CSV text grows) and parses it. */
static void case_data_load_csv(struct trial *t, void *ctx)
{
    (void)ctx;
    struct data_set d;
    ARMED(t, data_load(data_file, NULL, &d, &t->err));
    if (!t->rc)
        assert_int_equal(d.n_rows, 3);
    data_free(&d);
}

static void case_data_parse_idx(struct trial *t, void *ctx)
{
    (void)ctx;
    struct data_set d;
    ARMED(t, data_parse_idx(data_img, sizeof data_img, "i", data_lab, sizeof data_lab, "l", 0, &d,
                            &t->err));
    if (!t->rc)
        assert_int_equal(d.n_classes, 2);
    data_free(&d);
}

/* The classify task's open: the data, the split, the scale's statistics. */
static void case_classify_open(struct trial *t, void *ctx)
{
    (void)ctx;
    const struct task_kind *k = task_find("classify");
    struct task_params p;
    task_params_defaults(k, &p);
    snprintf(p.v[task_key_find(k, "train")].s, TASK_STRING_MAX, "%s", data_file);
    p.v[task_key_find(k, "scale")].i = 2; /* zscore */
    struct task_instance *task;
    ARMED(t, task_open(k, &p, &task, &t->err));
    if (!t->rc)
        assert_int_equal(task->n_outputs, 3);
    task_close(task);
}

static void test_data_load_out_of_memory(void **state)
{
    sweep("data_load (CSV)", case_data_load_csv, *state);
    sweep("data_parse_idx", case_data_parse_idx, *state);
    sweep("task_open (classify)", case_classify_open, *state);
}

/* ---- the store ------------------------------------------------------------ */

/* Each trial works on a fresh copy of a database made once, at the stage
 * the call needs: so a call that succeeded (and committed) does not change
 * what the next trial starts from. */
enum stage { STAGE_EMPTY, STAGE_ADDED, STAGE_CLOSED, STAGE_SEARCHED, N_STAGES };

#define N_ROWS 6

struct sfx {
    char dir[64], path[128];
    char stage[N_STAGES][160];
    struct tv_buf genomes[N_ROWS];
    struct store_individual rows[N_ROWS];
    int64_t run;
};

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[1 << 14];
    for (size_t n; (n = fread(buf, 1, sizeof buf, in)) > 0;)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* The working database becomes a copy of stage st (closed cleanly: no WAL). */
static void restore(struct sfx *f, enum stage st)
{
    static const char *const side[] = {"-wal", "-shm"};
    for (size_t i = 0; i < 2; i++) {
        char p[200];
        snprintf(p, sizeof p, "%s%s", f->path, side[i]);
        unlink(p);
    }
    copy_file(f->stage[st], f->path);
}

static void save_stage(struct sfx *f, enum stage st)
{
    char p[sizeof f->stage[st]];
    snprintf(p, sizeof p, "%s/stage%d.db", f->dir, (int)st);
    memcpy(f->stage[st], p, sizeof p);
    copy_file(f->path, p);
}

/* Opens the working database as the run's writer. */
static struct store *writer(struct sfx *f)
{
    struct tv_error err = {0};
    struct store *s;
    int64_t run;
    struct store_options o = {.flags = STORE_NO_CHECK};
    assert_ok(store_open(f->path, &o, &s, &err), &err);
    assert_ok(store_run_resume(s, "r", &run, &err), &err);
    assert_int_equal(run, f->run);
    return s;
}

static const struct store_species one_species = {0, 4, 3.0, 1.5, 0, 0, 0};
static const int64_t population_ids[] = {0, 1, 2, 3};
static const uint8_t master_state[] = {1, 2, 3, 4, 5, 6, 7, 8};

static struct store_generation generation0(void)
{
    return (struct store_generation){.generation = 0,
                                     .best = 3,
                                     .champion = 3,
                                     .n_evals = 4,
                                     .species = &one_species,
                                     .n_species = 1,
                                     .state = master_state,
                                     .state_len = sizeof master_state,
                                     .population = population_ids,
                                     .n_population = 4};
}

static int store_setup(void **state)
{
    struct sfx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    /* thousands of trials, each a few commits: in memory when possible */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(f->dir, sizeof f->dir, "%s/trevo-alloc-XXXXXX", tmp);
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/run.db", f->dir);
    struct tv_error err = {0};
    for (int i = 0; i < N_ROWS; i++) {
        struct genome *g = family((uint32_t)i, 0.0f);
        assert_ok(genome_encode(g, &f->genomes[i], &err), &err);
        genome_free(g);
        f->rows[i] = (struct store_individual){.id = i,
                                               .generation = i < 4 ? 0 : 1,
                                               .fitness = i,
                                               .parent1 = STORE_ID_NONE,
                                               .parent2 = STORE_ID_NONE,
                                               .op = STORE_OP_INIT,
                                               .species = STORE_ID_NONE,
                                               .genome = f->genomes[i].data,
                                               .genome_len = f->genomes[i].len};
    }
    struct store *s;
    struct store_options o = {.flags = STORE_CREATE};
    assert_ok(store_open(f->path, &o, &s, &err), &err);
    assert_ok(store_run_create(s, "r", "[run]\ntask = xor\n", 1, "test", &f->run, &err), &err);
    assert_ok(store_close(s, &err), &err);
    save_stage(f, STAGE_EMPTY);
    s = writer(f);
    assert_ok(store_add_individuals(s, f->run, f->rows, 4, &err), &err);
    assert_ok(store_close(s, &err), &err);
    save_stage(f, STAGE_ADDED);
    s = writer(f);
    struct store_generation g0 = generation0();
    assert_ok(store_generation_close(s, f->run, &g0, &err), &err);
    assert_ok(store_add_individuals(s, f->run, f->rows + 4, 2, &err), &err);
    assert_ok(store_close(s, &err), &err);
    save_stage(f, STAGE_CLOSED);
    /* a search of master_search's own, to resume */
    char cfg[400];
    snprintf(cfg, sizeof cfg,
             "[run]\ntask = xor\nname = s\ngenerations = 2\n[population]\nsize = 12\n"
             "[store]\ndb = %s\n[log]\nquiet = 1\n",
             f->path);
    restore(f, STAGE_EMPTY);
    unlink(f->path);
    struct master_run_opts ro = {
        .config_text = cfg, .config_file = "s.ini", .seed = -1, .quiet = 1, .n_ranks = 1};
    assert_ok(master_search(&ro, &err), &err);
    save_stage(f, STAGE_SEARCHED);
    *state = f;
    return 0;
}

static int store_teardown(void **state)
{
    struct sfx *f = *state;
    DIR *d = opendir(f->dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
        if (e->d_name[0] != '.')
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(f->dir);
    for (int i = 0; i < N_ROWS; i++)
        tv_buf_free(&f->genomes[i]);
    free(f);
    return 0;
}

/* The rows of generation gen committed in the working database. */
static size_t committed(struct sfx *f, int64_t gen)
{
    struct tv_error err = {0};
    struct store *s;
    struct store_options o = {.flags = STORE_READONLY | STORE_NO_CHECK};
    assert_ok(store_open(f->path, &o, &s, &err), &err);
    struct store_set set = {0};
    assert_ok(store_individuals_load(s, f->run, gen, 0, &set, &err), &err);
    size_t n = set.n;
    store_set_release(&set);
    assert_ok(store_close(s, &err), &err);
    return n;
}

static void case_store_add(struct trial *t, void *ctx)
{
    struct sfx *f = ctx;
    restore(f, STAGE_EMPTY);
    struct store *s = writer(f);
    ARMED(t, store_add_individuals(s, f->run, f->rows, 4, &t->err));
    struct tv_error err = {0};
    assert_ok(store_close(s, &err), &err);
    size_t n = committed(f, 0);
    assert_int_equal(n, t->rc ? 0 : 4); /* all or nothing */
    t->same = n == 4;
}

static void test_store_add_individuals_out_of_memory(void **state)
{
    sweep("store_add_individuals", case_store_add, *state);
}

static void case_store_close_generation(struct trial *t, void *ctx)
{
    struct sfx *f = ctx;
    restore(f, STAGE_ADDED);
    struct store *s = writer(f);
    struct tv_error err = {0};
    /* a commit first starts the background copy, whose allocations the
     * store_add_individuals sweep covers */
    assert_ok(store_add_individuals(s, f->run, f->rows + 4, 2, &err), &err);
    struct store_generation g0 = generation0();
    ARMED(t, store_generation_close(s, f->run, &g0, &t->err));
    struct store_generation back;
    int rc = store_generation_get(s, f->run, 0, &back, &err);
    assert_int_equal(rc, t->rc ? TV_ENOTFOUND : 0); /* closed, or still open */
    t->same = rc == 0 && back.best == 3 && back.champion == 3;
    assert_ok(store_close(s, &err), &err);
}

static void test_store_generation_close_out_of_memory(void **state)
{
    sweep("store_generation_close", case_store_close_generation, *state);
}

static void case_store_checkpoint_load(struct trial *t, void *ctx)
{
    struct sfx *f = ctx;
    restore(f, STAGE_CLOSED);
    struct tv_error err = {0};
    struct store *s;
    assert_ok(store_open(f->path, NULL, &s, &err), &err);
    struct store_checkpoint cp;
    memset(&cp, 0, sizeof cp);
    ARMED(t, store_checkpoint_load(s, f->run, &cp, &t->err));
    t->same = !t->rc && cp.population.n == 4 && cp.pending.n == 2 &&
              cp.state_len == sizeof master_state &&
              !memcmp(cp.state, master_state, sizeof master_state);
    store_checkpoint_release(&cp);
    assert_ok(store_close(s, &err), &err);
}

static void test_store_checkpoint_load_out_of_memory(void **state)
{
    sweep("store_checkpoint_load", case_store_checkpoint_load, *state);
}

/* A writer's close after a commit (the WAL is copied and truncated): it
 * frees everything whatever happens, and what was committed stays. */
static void case_store_close(struct trial *t, void *ctx)
{
    struct sfx *f = ctx;
    restore(f, STAGE_ADDED);
    struct store *s = writer(f);
    struct tv_error err = {0};
    assert_ok(store_add_individuals(s, f->run, f->rows + 4, 2, &err), &err);
    ARMED(t, store_close(s, &t->err));
    t->same = committed(f, 0) == 4 && committed(f, 1) == 2;
    assert_true(t->same);
}

static void test_store_close_out_of_memory(void **state)
{
    sweep("store_close", case_store_close, *state);
}

/* A resume of a finished search: open, the stored config, the checkpoint
 * (load_resume), the state codec, and the close. */
static void case_search_resume(struct trial *t, void *ctx)
{
    struct sfx *f = ctx;
    restore(f, STAGE_SEARCHED);
    struct master_run_opts ro = {
        .db = f->path, .name = "s", .seed = -1, .resume = 1, .quiet = 1, .n_ranks = 1};
    ARMED(t, master_search(&ro, &t->err));
    /* absorbed failures: the run must end as it was, done after generation 1 */
    struct tv_error err = {0};
    struct store *s;
    struct store_options o = {.flags = STORE_READONLY};
    assert_ok(store_open(f->path, &o, &s, &err), &err);
    struct store_run_info info;
    assert_ok(store_run_get(s, "s", &info, &err), &err);
    t->same = info.status == STORE_DONE && info.last_generation == 1;
    store_run_info_release(&info);
    assert_ok(store_close(s, &err), &err);
}

/* SQLite's own allocations are the store sweeps' business: here only ours. */
static void test_master_search_resume_out_of_memory(void **state)
{
    failalloc_count_sqlite(0);
    sweep("master_search (resume)", case_search_resume, *state);
    failalloc_count_sqlite(1);
}

int main(void)
{
    /* before anything opens a database */
    assert_int_equal(failalloc_hook_sqlite(), 0);
    const struct CMUnitTest genome_tests[] = {
        cmocka_unit_test(test_genome_encode_out_of_memory),
        cmocka_unit_test(test_genome_decode_out_of_memory),
        cmocka_unit_test(test_genome_read_text_out_of_memory),
        cmocka_unit_test(test_genome_write_text_allocates_nothing),
        cmocka_unit_test(test_genome_mutate_out_of_memory),
        cmocka_unit_test(test_genome_crossover_out_of_memory),
        cmocka_unit_test(test_nn_plan_compile_out_of_memory),
        cmocka_unit_test(test_nn_state_new_and_step_out_of_memory),
    };
    const struct CMUnitTest worker_tests[] = {
        cmocka_unit_test(test_worker_process_out_of_memory),
    };
    const struct CMUnitTest evolve_tests[] = {
        cmocka_unit_test(test_master_speciate_out_of_memory),
        cmocka_unit_test(test_master_plan_out_of_memory),
        cmocka_unit_test(test_master_config_dump_out_of_memory),
        cmocka_unit_test(test_master_config_parse_out_of_memory),
    };
    const struct CMUnitTest store_tests[] = {
        cmocka_unit_test(test_store_add_individuals_out_of_memory),
        cmocka_unit_test(test_store_generation_close_out_of_memory),
        cmocka_unit_test(test_store_checkpoint_load_out_of_memory),
        cmocka_unit_test(test_store_close_out_of_memory),
        cmocka_unit_test(test_master_search_resume_out_of_memory),
    };
    const struct CMUnitTest data_tests[] = {
        cmocka_unit_test(test_data_load_out_of_memory),
    };
    int failed =
        cmocka_run_group_tests_name("genome and nn", genome_tests, genomes_setup, genomes_teardown);
    failed += cmocka_run_group_tests_name("data", data_tests, data_setup, data_teardown);
    failed += cmocka_run_group_tests_name("worker", worker_tests, worker_setup, worker_teardown);
    failed += cmocka_run_group_tests_name("evolve", evolve_tests, evolve_setup, evolve_teardown);
    failed += cmocka_run_group_tests_name("store", store_tests, store_setup, store_teardown);
    return failed;
}
