/* test_nsga2.c -- master/nsga2.c: non-dominated sorting and crowding
 * distance against a plain reference on random vectors (ties and NaN
 * included), the plan of selection = nsga2 (survivors, crowded tournaments,
 * determinism), aging, and the [evolution] keys of the config. */
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
#include "nsga2.h"
#include "testutil.h"

/* ---- the reference: the definitions, written plainly ------------------- */

static double ref_value(double x)
{
    return isnan(x) ? -INFINITY : x;
}

static int ref_dominates(const double *a, const double *b, size_t m)
{
    int all = 1, one = 0;
    for (size_t k = 0; k < m; k++) {
        all &= ref_value(a[k]) >= ref_value(b[k]);
        one |= ref_value(a[k]) > ref_value(b[k]);
    }
    return all && one;
}

/* Fronts by peeling: rank r is every row not yet ranked that no row not yet
 * ranked dominates. */
static void ref_ranks(const double *v, size_t n, size_t m, uint32_t *rank)
{
    for (size_t i = 0; i < n; i++)
        rank[i] = UINT32_MAX;
    for (uint32_t r = 0;; r++) {
        int any = 0;
        for (size_t i = 0; i < n; i++) {
            if (rank[i] != UINT32_MAX)
                continue;
            int free_ = 1;
            for (size_t j = 0; j < n && free_; j++)
                if ((rank[j] == UINT32_MAX || rank[j] == r + 1000000) && j != i &&
                    ref_dominates(&v[j * m], &v[i * m], m))
                    free_ = 0;
            if (free_)
                rank[i] = r + 1000000; /* marked: this front, set below */
            any |= free_;
        }
        if (!any)
            return;
        for (size_t i = 0; i < n; i++)
            if (rank[i] == r + 1000000)
                rank[i] = r;
    }
}

/* Crowding distance of row i in its front: per objective, the front sorted
 * by (value, id) with a selection sort, the neighbours' gap over the range. */
static double ref_crowd(const double *v, size_t n, size_t m, const int64_t *ids,
                        const uint32_t *rank, size_t i)
{
    double d = 0;
    size_t *f = malloc(n * sizeof *f);
    assert_non_null(f);
    for (size_t k = 0; k < m; k++) {
        size_t nf = 0;
        for (size_t j = 0; j < n; j++)
            if (rank[j] == rank[i])
                f[nf++] = j;
        for (size_t a = 0; a < nf; a++) /* selection sort by (value, id) */
            for (size_t b = a + 1; b < nf; b++) {
                double x = ref_value(v[f[a] * m + k]), y = ref_value(v[f[b] * m + k]);
                if (y < x || (y == x && ids[f[b]] < ids[f[a]])) {
                    size_t t = f[a];
                    f[a] = f[b];
                    f[b] = t;
                }
            }
        size_t at = 0;
        while (f[at] != i)
            at++;
        double lo = ref_value(v[f[0] * m + k]), hi = ref_value(v[f[nf - 1] * m + k]);
        if (at == 0 || at == nf - 1)
            d = INFINITY;
        else if (isfinite(hi - lo) && hi - lo > 0)
            d += (ref_value(v[f[at + 1] * m + k]) - ref_value(v[f[at - 1] * m + k])) / (hi - lo);
    }
    free(f);
    return d;
}

/* n random rows of m objectives: values from a few levels (ties), some NaN. */
static void random_rows(struct tv_rng *rng, double *v, size_t n, size_t m, int64_t *ids)
{
    for (size_t i = 0; i < n; i++) {
        ids[i] = (int64_t)(1000 - 7 * i); /* not in row order */
        for (size_t k = 0; k < m; k++) {
            uint32_t r = tv_rng_below(rng, 12);
            v[i * m + k] = r == 0 ? NAN : 0.25 * (double)tv_rng_below(rng, 6);
        }
    }
}

static void test_master_nsga2_sort_matches_reference(void **state)
{
    (void)state;
    struct tv_error err = {0};
    enum { NMAX = 60 };
    double v[NMAX * 3], crowd[NMAX];
    int64_t ids[NMAX];
    uint32_t rank[NMAX], want[NMAX];
    int fronts_seen = 0, nan_rows = 0;
    for (uint64_t seed = 0; seed < 200; seed++) {
        struct tv_rng rng = tu_rng(seed, 7, 0);
        size_t n = 1 + tv_rng_below(&rng, NMAX);
        size_t m = 1 + tv_rng_below(&rng, 3);
        random_rows(&rng, v, n, m, ids);
        assert_ok(master_nsga2_sort(v, n, m, ids, rank, crowd, &err), &err);
        ref_ranks(v, n, m, want);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(rank[i], want[i]);
            double d = ref_crowd(v, n, m, ids, want, i);
            assert_memory_equal(&crowd[i], &d, sizeof d); /* bit for bit */
            fronts_seen = rank[i] > 2 ? 1 : fronts_seen;
            for (size_t k = 0; k < m; k++)
                nan_rows += isnan(v[i * m + k]);
        }
    }
    assert_true(fronts_seen && nan_rows > 0);
    assert_ok(master_nsga2_sort(NULL, 0, 2, NULL, NULL, NULL, &err), &err); /* nothing */
}

/* Equal rows are not dominated by each other: they share a front; a row with
 * a NaN is beaten by the same row with a number there. */
static void test_master_nsga2_sort_ties_and_nan(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const double v[] = {1, 2, 1, 2, NAN, 2, 0, 2, 2, NAN};
    const int64_t ids[] = {5, 3, 9, 1, 2};
    uint32_t rank[5];
    double crowd[5];
    assert_ok(master_nsga2_sort(v, 5, 2, ids, rank, crowd, &err), &err);
    assert_int_equal(rank[0], 0);
    assert_int_equal(rank[1], 0);
    assert_int_equal(rank[4], 0); /* (2, NaN): best on the first objective */
    assert_int_equal(rank[3], 1); /* (0, 2) is beaten by (1, 2) */
    assert_int_equal(rank[2], 2); /* (NaN, 2) by (0, 2) too */
    /* the front {ids 5, 3, 2}: ends infinite on each objective; id 3 ties id 5
     * on both and sorts first (lower id) by value then id */
    for (size_t i = 0; i < 5; i++)
        assert_true(crowd[i] == INFINITY || crowd[i] >= 0);
    /* crowded order: rank, then crowding, then id */
    assert_true(master_nsga2_before(rank, crowd, ids, 0, 2));
    assert_true(!master_nsga2_before(rank, crowd, ids, 2, 0));
}

/* ---- the plan ---------------------------------------------------------- */

/* A config for planning: xor's, selection nsga2 on the given objectives. */
static void nsga2_config(struct master_config *c, const char *objectives, int64_t pop_size)
{
    char text[256];
    snprintf(text, sizeof text,
             "[run]\ntask = xor\n[population]\nsize = %lld\nselection = nsga2\n"
             "[evolution]\nobjectives = %s\n",
             (long long)pop_size, objectives);
    struct tv_error err = {0};
    assert_ok(master_config_parse(c, text, "x.ini", &err), &err);
}

/* n members with ids 10, 11, ...: valid_acc and flash from the rng (a few
 * levels: ties), member 3 failed, member 5 without a flash figure; born in
 * generation i % 4. */
static void nsga2_pop(struct master_pop *p, size_t n, uint64_t seed)
{
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(seed, 3, 0);
    master_pop_init(p, 1);
    for (size_t i = 0; i < n; i++) {
        struct genome *g = genome_new();
        assert_non_null(g);
        assert_ok(genome_build_minimal(g, 2, 1, GENOME_ACT_NEAT_SIGMOID, 1.0, &rng, &err), &err);
        double acc = 0.1 * (double)tv_rng_below(&rng, 8);
        double flash = 100.0 * (double)(1 + tv_rng_below(&rng, 8));
        assert_ok(master_pop_add(p, 10 + (int64_t)i, i == 3 ? NAN : acc, 0, g, &err), &err);
        master_pop_set_measures(p, acc, i == 5 ? NAN : flash, NAN, NAN, (int64_t)(i % 4));
    }
}

/* The survivors are the first pop_size of the crowded order of the whole
 * population, computed here from master_nsga2_sort; every parent is a
 * survivor; the same rng gives the same plan. */
static void test_master_plan_nsga2_survivors_and_parents(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct master_config c;
    nsga2_config(&c, "valid_acc,flash", 8);
    struct master_pop p;
    nsga2_pop(&p, 20, 1);
    size_t n = p.n;
    double v[40], crowd[20];
    int64_t ids[20];
    uint32_t rank[20];
    for (size_t i = 0; i < n; i++) {
        ids[i] = p.m[i].id;
        v[2 * i] = master_member_objective(&p.m[i], MASTER_OBJ_VALID_ACC);
        v[2 * i + 1] = master_member_objective(&p.m[i], MASTER_OBJ_FLASH);
    }
    assert_ok(master_nsga2_sort(v, n, 2, ids, rank, crowd, &err), &err);
    /* the failed member and the one without flash are last on their counts */
    assert_true(rank[3] > 0);
    int in_surv[20] = {0};
    for (size_t s = 0; s < 8; s++) { /* pick the s-th best by selection */
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
            if (!in_surv[i] && (best == SIZE_MAX || master_nsga2_before(rank, crowd, ids, i, best)))
                best = i;
        in_surv[best] = 1;
    }
    int64_t *e[2];
    struct master_child *ch[2];
    size_t ne[2], nc[2];
    for (int k = 0; k < 2; k++) {
        struct tv_rng rng = tu_rng(42, 5, 0);
        assert_ok(master_plan(&p, &c, 4, &rng, &e[k], &ne[k], &ch[k], &nc[k], &err), &err);
    }
    assert_int_equal(ne[0], 8);
    assert_int_equal(nc[0], 8);
    for (size_t i = 0; i < ne[0]; i++) {
        ptrdiff_t at = master_pop_find(&p, e[0][i]);
        assert_true(at >= 0 && in_surv[at]);
        if (i)
            assert_true(e[0][i - 1] < e[0][i]);
    }
    size_t n_cross = 0;
    for (size_t i = 0; i < nc[0]; i++) {
        ptrdiff_t a = master_pop_find(&p, ch[0][i].parent1);
        assert_true(a >= 0 && in_surv[a]);
        if (ch[0][i].parent2 >= 0) {
            ptrdiff_t b = master_pop_find(&p, ch[0][i].parent2);
            assert_true(b >= 0 && in_surv[b] && a != b);
            n_cross++;
        }
    }
    assert_true(n_cross > 0);
    /* determinism: the same plan twice */
    assert_int_equal(ne[1], ne[0]);
    assert_int_equal(nc[1], nc[0]);
    assert_memory_equal(e[0], e[1], ne[0] * sizeof *e[0]);
    assert_memory_equal(ch[0], ch[1], nc[0] * sizeof *ch[0]);
    TV_FREE_ALL(e[0], e[1], ch[0], ch[1]);
    master_pop_release(&p);
}

/* A binary crowded tournament prefers the better: over many plans, a
 * survivor of the first front is a parent more often than one of a later
 * front. */
static void test_master_plan_nsga2_tournament_prefers_better(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct master_config c;
    nsga2_config(&c, "valid_acc", 10);
    struct master_pop p;
    nsga2_pop(&p, 10, 2); /* 10 members, all survive; one objective: fronts by accuracy */
    size_t count[10] = {0};
    for (uint64_t seed = 0; seed < 50; seed++) {
        struct tv_rng rng = tu_rng(seed, 9, 0);
        int64_t *e;
        struct master_child *ch;
        size_t ne, nc;
        assert_ok(master_plan(&p, &c, 1, &rng, &e, &ne, &ch, &nc, &err), &err);
        assert_int_equal(ne, 10);
        for (size_t i = 0; i < nc; i++)
            count[master_pop_find(&p, ch[i].parent1)]++;
        TV_FREE_ALL(e, ch);
    }
    size_t best = 0, worst = 0;
    for (size_t i = 0; i < 10; i++) {
        double a = master_member_objective(&p.m[i], MASTER_OBJ_VALID_ACC);
        if (isnan(a))
            continue;
        if (a > master_member_objective(&p.m[best], MASTER_OBJ_VALID_ACC))
            best = i;
        if (a < master_member_objective(&p.m[worst], MASTER_OBJ_VALID_ACC))
            worst = i;
    }
    assert_true(count[best] > count[worst]);
    master_pop_release(&p);
}

/* max_age: members born more than max_age generations before the last
 * closed one neither survive nor breed; 0 keeps everyone; when every member
 * is too old, all of them take part. */
static void test_master_plan_nsga2_aging(void **state)
{
    (void)state;
    struct tv_error err = {0};
    struct master_config c;
    nsga2_config(&c, "valid_acc,flash", 20);
    struct master_pop p;
    nsga2_pop(&p, 20, 3); /* born 0, 1, 2, 3, 0, 1, ... */
    size_t idx[20], n;
    master_pop_eligible(&p, &c, 4, idx, &n);
    assert_int_equal(n, 20);
    c.max_age = 1; /* planning generation 4: the last closed is 3, born 2 or 3 stay */
    master_pop_eligible(&p, &c, 4, idx, &n);
    assert_int_equal(n, 10);
    for (size_t i = 0; i < n; i++)
        assert_true(p.m[idx[i]].born >= 2);
    struct tv_rng rng = tu_rng(1, 1, 0);
    int64_t *e;
    struct master_child *ch;
    size_t ne, nc;
    assert_ok(master_plan(&p, &c, 4, &rng, &e, &ne, &ch, &nc, &err), &err);
    assert_int_equal(ne, 10);
    for (size_t i = 0; i < ne; i++)
        assert_true(p.m[master_pop_find(&p, e[i])].born >= 2);
    for (size_t i = 0; i < nc; i++) {
        assert_true(p.m[master_pop_find(&p, ch[i].parent1)].born >= 2);
        if (ch[i].parent2 >= 0)
            assert_true(p.m[master_pop_find(&p, ch[i].parent2)].born >= 2);
    }
    TV_FREE_ALL(e, ch);
    /* too old, all of them: aging leaves the population as it is */
    master_pop_eligible(&p, &c, 100, idx, &n);
    assert_int_equal(n, 20);
    /* generational selection ages too */
    c.selection = MASTER_SEL_GENERATIONAL;
    c.elitism = 2;
    assert_ok(master_plan(&p, &c, 4, &rng, &e, &ne, &ch, &nc, &err), &err);
    for (size_t i = 0; i < ne; i++)
        assert_true(p.m[master_pop_find(&p, e[i])].born >= 2);
    for (size_t i = 0; i < nc; i++)
        assert_true(p.m[master_pop_find(&p, ch[i].parent1)].born >= 2);
    TV_FREE_ALL(e, ch);
    master_pop_release(&p);
}

/* ---- the config -------------------------------------------------------- */

static void parse_fails(const char *text, const char *want)
{
    struct master_config c;
    struct tv_error err = {0};
    assert_error(master_config_parse(&c, text, "x.ini", &err), &err, TV_EINVAL, want);
}

static void test_master_config_evolution_keys(void **state)
{
    (void)state;
    struct master_config c;
    struct tv_error err = {0};
    /* selection from [evolution], objectives as a set, max_age */
    assert_ok(master_config_parse(&c,
                                  "[run]\ntask = xor\n[evolution]\nselection = nsga2\n"
                                  "objectives = macs, valid_acc,connections\nmax_age = 5\n",
                                  "x.ini", &err),
              &err);
    assert_int_equal(c.selection, MASTER_SEL_NSGA2);
    assert_int_equal(c.objectives, 1u << MASTER_OBJ_VALID_ACC | 1u << MASTER_OBJ_MACS |
                                       1u << MASTER_OBJ_CONNECTIONS);
    assert_int_equal(c.max_age, 5);
    /* the dump writes selection in [population], the set in enum order,
     * and parses back to the same */
    struct tv_buf dump = {0};
    assert_ok(master_config_dump(&c, &dump, &err), &err);
    assert_non_null(strstr((char *)dump.data, "[population]\nsize = 150\nselection = nsga2\n"));
    assert_non_null(strstr((char *)dump.data,
                           "[evolution]\nobjectives = valid_acc,macs,connections\nmax_age = 5\n"));
    struct master_config d;
    assert_ok(master_config_parse(&d, (char *)dump.data, "dump", &err), &err);
    assert_int_equal(d.objectives, c.objectives);
    tv_buf_free(&dump);
    /* defaults: not in the dump (configs stored before keep their bytes) */
    assert_ok(master_config_parse(&c, "[run]\ntask = xor\n", "x.ini", &err), &err);
    assert_int_equal(c.objectives, 1u << MASTER_OBJ_VALID_ACC | 1u << MASTER_OBJ_FLASH);
    assert_ok(master_config_dump(&c, &dump, &err), &err);
    assert_null(strstr((char *)dump.data, "[evolution]"));
    tv_buf_free(&dump);
    /* refusals name the file, the line and the key */
    parse_fails("[run]\ntask = xor\n[population]\nselection = nsga2\n[evolution]\n"
                "objectives = valid_acc,size\n",
                "x.ini:6: objectives: unknown objective 'size' (one of valid_acc, fitness, flash, "
                "ram, macs, connections)");
    parse_fails("[run]\ntask = xor\n[evolution]\nselection = nsga2\nobjectives = flash,flash\n",
                "x.ini:5: objectives: 'flash' given twice");
    parse_fails("[run]\ntask = xor\n[evolution]\nselection = nsga2\nobjectives = ,\n",
                "x.ini:5: objectives: expected at least one objective");
    parse_fails("[run]\ntask = xor\n[evolution]\nobjectives = flash\n",
                "x.ini:4: objectives: is read only with selection = nsga2");
    parse_fails("[run]\ntask = xor\n[evolution]\nmax_age = 3\n",
                "x.ini:4: max_age: needs selection = generational or nsga2");
    parse_fails("[run]\ntask = xor\n[population]\nselection = nsga2\n[evolution]\n"
                "selection = nsga2\n",
                "x.ini:6: selection: given twice (in [population] or [evolution], one key; "
                "first on line 4)");
    parse_fails("[run]\ntask = xor\n[evolution]\nselection = pareto\n",
                "x.ini:4: selection: expected one of speciated, generational, nsga2,");
    parse_fails("[run]\ntask = xor\n[evolution]\nmax_age = -1\n", "x.ini:4: max_age:");
    /* budgets: any selection; travel to the workers in their params */
    assert_ok(master_config_parse(&c,
                                  "[run]\ntask = xor\n[evolution]\nmax_flash = 32768\n"
                                  "max_ram = 2048\nmax_macs = 100000\n",
                                  "x.ini", &err),
              &err);
    assert_int_equal(c.worker.max_flash, 32768);
    assert_int_equal(c.worker.max_ram, 2048);
    assert_int_equal(c.worker.max_macs, 100000);
    assert_ok(master_config_dump(&c, &dump, &err), &err);
    assert_non_null(strstr((char *)dump.data,
                           "[evolution]\nmax_flash = 32768\nmax_ram = 2048\nmax_macs = 100000\n"));
    tv_buf_free(&dump);
    parse_fails("[run]\ntask = xor\n[evolution]\nmax_flash = -5\n", "x.ini:4: max_flash:");
    parse_fails("[run]\ntask = xor\n[evolution]\n\nmax_ram = 2k\n",
                "x.ini:5: max_ram: expected an integer, got '2k'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_master_nsga2_sort_matches_reference),
        cmocka_unit_test(test_master_nsga2_sort_ties_and_nan),
        cmocka_unit_test(test_master_plan_nsga2_survivors_and_parents),
        cmocka_unit_test(test_master_plan_nsga2_tournament_prefers_better),
        cmocka_unit_test(test_master_plan_nsga2_aging),
        cmocka_unit_test(test_master_config_evolution_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
