/* nsga2.c -- selection = nsga2: non-dominated sorting, crowding distance
 * and the plan they make (nsga2.h). */
#include "nsga2.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double worst_if_nan(double x)
{
    return isnan(x) ? -INFINITY : x;
}

/* 1 if row a dominates row b: no worse on every objective, better on one. */
static int dominates(const double *a, const double *b, size_t m)
{
    int better = 0;
    for (size_t k = 0; k < m; k++) {
        double x = worst_if_nan(a[k]), y = worst_if_nan(b[k]);
        if (x < y)
            return 0;
        better |= x > y;
    }
    return better;
}

/* For sorting a front on one objective: its value, then the id. */
struct crowd_key {
    double v;
    int64_t id;
    size_t row;
};

static int cmp_crowd_key(const void *a, const void *b)
{
    const struct crowd_key *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Crowding distances of the rows front[0..n) (Deb et al. 2002, section
 * III-B), summed over the objectives in order. */
static void crowding(const double *values, size_t m, const int64_t *ids, const size_t *front,
                     size_t n, struct crowd_key *keys, double *crowd)
{
    for (size_t i = 0; i < n; i++)
        crowd[front[i]] = 0;
    for (size_t k = 0; k < m; k++) {
        for (size_t i = 0; i < n; i++)
            keys[i] =
                (struct crowd_key){worst_if_nan(values[front[i] * m + k]), ids[front[i]], front[i]};
        qsort(keys, n, sizeof *keys, cmp_crowd_key);
        crowd[keys[0].row] = INFINITY;
        crowd[keys[n - 1].row] = INFINITY;
        double range = keys[n - 1].v - keys[0].v;
        if (!isfinite(range) || range <= 0)
            continue;
        for (size_t i = 1; i + 1 < n; i++)
            crowd[keys[i].row] += (keys[i + 1].v - keys[i - 1].v) / range;
    }
}

int master_nsga2_sort(const double *values, size_t n, size_t m, const int64_t *ids, uint32_t *rank,
                      double *crowd, struct tv_error *err)
{
    if (n == 0)
        return 0;
    /* Deb's fast sort: how many rows dominate each row, and the rows each
     * row dominates (as one array, cut at start[i]). */
    size_t *count = calloc(n, sizeof *count);
    size_t *start = calloc(n + 1, sizeof *start);
    size_t *front = malloc(n * sizeof *front);
    struct crowd_key *keys = malloc(n * sizeof *keys);
    size_t n_pairs = 0;
    for (size_t i = 0; count && start && i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (j != i && dominates(&values[i * m], &values[j * m], m)) {
                start[i + 1]++;
                count[j]++;
                n_pairs++;
            }
    uint32_t *dominated = malloc((n_pairs ? n_pairs : 1) * sizeof *dominated);
    size_t *fill = malloc(n * sizeof *fill);
    int rc = 0;
    if (!count || !start || !front || !keys || !dominated || !fill) {
        rc = tv_error_set(err, TV_ENOMEM, "nsga2: out of memory sorting %zu members", n);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        start[i + 1] += start[i];
        fill[i] = start[i];
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (j != i && dominates(&values[i * m], &values[j * m], m))
                dominated[fill[i]++] = (uint32_t)j;
    /* peel the fronts: front[lo..hi) is the current one */
    size_t hi = 0;
    for (size_t i = 0; i < n; i++)
        if (count[i] == 0)
            front[hi++] = i;
    size_t lo = 0;
    for (uint32_t r = 0; lo < hi; r++) {
        size_t end = hi;
        for (size_t f = lo; f < end; f++) {
            size_t i = front[f];
            rank[i] = r;
            for (size_t d = start[i]; d < start[i + 1]; d++)
                if (--count[dominated[d]] == 0)
                    front[hi++] = dominated[d];
        }
        crowding(values, m, ids, &front[lo], end - lo, keys, crowd);
        lo = end;
    }
out:
    free(count);
    free(start);
    free(front);
    free(keys);
    free(dominated);
    free(fill);
    return rc;
}

int master_nsga2_before(const uint32_t *rank, const double *crowd, const int64_t *ids, size_t a,
                        size_t b)
{
    if (rank[a] != rank[b])
        return rank[a] < rank[b];
    if (crowd[a] != crowd[b])
        return crowd[a] > crowd[b];
    return ids[a] < ids[b];
}

double master_member_objective(const struct master_member *m, int obj)
{
    if (m->fitness == -INFINITY) /* failed: the worst on every count */
        return NAN;
    switch (obj) {
    case MASTER_OBJ_VALID_ACC:
        return m->valid_acc;
    case MASTER_OBJ_FITNESS:
        return m->fitness;
    case MASTER_OBJ_FLASH:
        return -m->flash;
    case MASTER_OBJ_RAM:
        return -m->ram;
    case MASTER_OBJ_MACS:
        return -m->macs;
    default:
        return -(double)m->n_conns;
    }
}

void master_pop_eligible(const struct master_pop *p, const struct master_config *c,
                         int64_t generation, size_t *idx, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < p->n; i++)
        if (c->max_age <= 0 || p->m[i].born < 0 || generation - 1 - p->m[i].born <= c->max_age)
            idx[(*n)++] = i;
    if (*n == 0) /* nobody young enough: aging leaves the population as it is */
        for (size_t i = 0; i < p->n; i++)
            idx[(*n)++] = i;
}

/* The members idx[0..n) and their sort: values, ids, rank and crowding,
 * one allocation. */
struct sorted {
    double *values, *crowd;
    int64_t *ids;
    uint32_t *rank;
};

static int sort_members(const struct master_pop *p, const struct master_config *c,
                        const size_t *idx, size_t n, struct sorted *s, struct tv_error *err)
{
    int objs[MASTER_N_OBJ]; /* in the order of enum master_obj */
    size_t m = 0;
    for (int k = 0; k < MASTER_N_OBJ; k++)
        if (c->objectives >> k & 1)
            objs[m++] = k;
    s->values = malloc((n * m + n) * sizeof(double));
    s->ids = malloc(n * sizeof *s->ids);
    s->rank = malloc(n * sizeof *s->rank);
    if (!s->values || !s->ids || !s->rank)
        return tv_error_set(err, TV_ENOMEM, "nsga2: out of memory sorting %zu members", n);
    s->crowd = s->values + n * m;
    for (size_t i = 0; i < n; i++) {
        const struct master_member *mm = &p->m[idx[i]];
        s->ids[i] = mm->id;
        for (size_t k = 0; k < m; k++)
            s->values[i * m + k] = master_member_objective(mm, objs[k]);
    }
    return master_nsga2_sort(s->values, n, m, s->ids, s->rank, s->crowd, err);
}

/* A row to sort in the crowded order. */
struct order_key {
    uint32_t rank;
    double crowd;
    int64_t id;
    size_t row;
};

static int cmp_order_key(const void *a, const void *b)
{
    const struct order_key *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->crowd != y->crowd)
        return x->crowd > y->crowd ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* order[0..n): the rows of s in the crowded order (a total order: ids are
 * distinct, so any sort gives the same list). */
static int crowded_sort(const struct sorted *s, size_t *order, size_t n, struct tv_error *err)
{
    struct order_key *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return tv_error_set(err, TV_ENOMEM, "nsga2: out of memory");
    for (size_t i = 0; i < n; i++)
        keys[i] = (struct order_key){s->rank[i], s->crowd[i], s->ids[i], i};
    qsort(keys, n, sizeof *keys, cmp_order_key);
    for (size_t i = 0; i < n; i++)
        order[i] = keys[i].row;
    free(keys);
    return 0;
}

/* Binary crowded tournament among the survivors order[0..n_surv): the
 * better of two drawn uniformly (the same one twice when it is drawn
 * twice). Returns a row of s. */
static size_t crowded_tournament(const struct sorted *s, const size_t *order, size_t n_surv,
                                 struct tv_rng *rng)
{
    size_t a = order[tv_rng_below(rng, (uint32_t)n_surv)];
    size_t b = order[tv_rng_below(rng, (uint32_t)n_surv)];
    return master_nsga2_before(s->rank, s->crowd, s->ids, b, a) ? b : a;
}

int master_plan_nsga2(const struct master_pop *p, const struct master_config *c, int64_t generation,
                      struct tv_rng *rng, int64_t *elites, size_t *n_elites,
                      struct master_child *children, size_t *n_children, struct tv_error *err)
{
    size_t *idx = malloc((p->n ? p->n : 1) * sizeof *idx);
    size_t *order = malloc((p->n ? p->n : 1) * sizeof *order);
    struct sorted s = {0};
    size_t n = 0;
    int rc = 0;
    if (!idx || !order)
        rc = tv_error_set(err, TV_ENOMEM, "nsga2: out of memory");
    if (!rc) {
        master_pop_eligible(p, c, generation, idx, &n);
        rc = sort_members(p, c, idx, n, &s, err);
    }
    if (!rc)
        rc = crowded_sort(&s, order, n, err);
    if (!rc) {
        size_t n_surv = n < (size_t)c->pop_size ? n : (size_t)c->pop_size;
        for (size_t i = 0; i < n_surv; i++)
            elites[(*n_elites)++] = s.ids[order[i]];
        for (size_t i = 0; i < (size_t)c->pop_size; i++) {
            size_t a = crowded_tournament(&s, order, n_surv, rng);
            size_t b = crowded_tournament(&s, order, n_surv, rng);
            children[(*n_children)++] = master_child_of(p, c, rng, idx[a], idx[b], n_surv >= 2);
        }
    }
    free(idx);
    free(order);
    free(s.values);
    free(s.ids);
    free(s.rank);
    return rc;
}
