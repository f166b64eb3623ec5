/* sparsifier.c -- the sparsifier of sparsify.h: a list of policies run on
 * a trainer through nn/train/train.h only, after each step (the rules of
 * sparsify_rules.c, lock, neuron) and at the end of each epoch (set and
 * rigl: removal per layer pair, then growth at random or by rigl's
 * selection, sparsify_rigl.c). Apart from the parser, the rules, the lock
 * set and rigl's selection, which it calls and which never call it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparsify_impl.h"

struct nn_sparsifier {
    struct nn_sparsity *p; /* [n] */
    size_t n;
    uint64_t seed;
    int locking;                   /* a lock:N policy is given */
    struct nn_sparsify_lock lock;  /* its set */
    struct nn_sparsify_lock exist; /* set and rigl: the connections (kept for its memory) */
    int neuron;                    /* a neuron policy is given, N in neuron_every (0: epoch) */
    uint64_t neuron_every;
    uint64_t neuron_checked; /* nn_trainer_steps() at the last check */
    uint8_t *mask;           /* [cap_mask] scratch: connections to remove */
    size_t cap_mask;
    uint8_t *dead; /* [cap_dead] scratch: neurons to remove */
    size_t cap_dead;
    struct nn_sparsifier_stats st;
    int per_step; /* some policy runs after each step */
};

int nn_sparsifier_new(const struct nn_sparsity *p, size_t n, uint64_t seed,
                      struct nn_sparsifier **out, struct tv_error *err)
{
    *out = NULL;
    struct nn_sparsifier *s = calloc(1, sizeof *s);
    if (!s || (n && !(s->p = malloc(n * sizeof *p)))) {
        free(s);
        return tv_error_set(err, TV_ENOMEM, "sparsifier: out of memory for %zu policies", n);
    }
    s->n = n;
    s->seed = seed;
    nn_sparsify_lock_init(&s->lock, 1);
    nn_sparsify_lock_init(&s->exist, 0);
    for (size_t i = 0; i < n; i++) {
        char spec[96];
        nn_sparsity_format(&p[i], spec, sizeof spec);
        int kind = p[i].kind;
        double v[2] = {p[i].a, p[i].b};
        int rc = kind < 0 || kind >= NN_SPARSE_COUNT
                     ? tv_error_set(err, TV_EINVAL, "policy %zu: unknown kind %d", i, kind)
                     : nn_sparsity_check_args(spec, kind, v,
                                              (kind == NN_SPARSE_NEURON && v[0] == 0) ||
                                                      (kind == NN_SPARSE_SET && v[1] < 0)
                                                  ? nn_sparsity_kinds[kind].max_args - 1
                                                  : nn_sparsity_kinds[kind].max_args,
                                              err);
        if (!rc &&
            ((kind == NN_SPARSE_LOCK && s->locking) || (kind == NN_SPARSE_NEURON && s->neuron)))
            rc = tv_error_set(err, TV_EINVAL, "%s: %s given twice", spec,
                              nn_sparsity_kinds[kind].name);
        if (rc) {
            nn_sparsifier_free(s);
            return rc;
        }
        s->p[i] = p[i];
        s->per_step |= kind <= NN_SPARSE_ZERO_PROP || (kind == NN_SPARSE_NEURON && p[i].a > 0);
        if (kind == NN_SPARSE_LOCK) {
            s->locking = 1;
            s->lock.n_steps = (uint64_t)p[i].a;
        } else if (kind == NN_SPARSE_NEURON) {
            s->neuron = 1;
            s->neuron_every = (uint64_t)p[i].a;
        }
    }
    *out = s;
    return 0;
}

void nn_sparsifier_free(struct nn_sparsifier *s)
{
    if (!s)
        return;
    nn_sparsify_lock_release(&s->lock);
    nn_sparsify_lock_release(&s->exist);
    TV_FREE_ALL(s->p, s->mask, s->dead, s);
}

int nn_sparsifier_needs_values(const struct nn_sparsifier *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->p[i].kind == NN_SPARSE_RIGL)
            return 1;
    return 0;
}

void nn_sparsifier_stats(const struct nn_sparsifier *s, struct nn_sparsifier_stats *st)
{
    *st = s->st;
}

/* Puts `what` in front of err's message; returns rc (err may be NULL). */
static int fail(int rc, struct tv_error *err, const char *what)
{
    tv_error_prefix(err, "%s", what);
    return rc;
}

/* s->mask zeroed for n connections. */
static int mask_reset(struct nn_sparsifier *s, size_t n, struct tv_error *err)
{
    int rc = tv_grow((void **)&s->mask, &s->cap_mask, n, 1, err);
    if (rc)
        return fail(rc, err, "sparsifier");
    if (n)
        memset(s->mask, 0, n);
    return 0;
}

/* Locks the c marked connections of v (when locking) and removes them. */
static int remove_marked(struct nn_sparsifier *s, struct nn_trainer *t,
                         const struct nn_train_view *v, size_t c, uint64_t now,
                         struct tv_error *err)
{
    if (c == 0)
        return 0;
    for (size_t k = 0; s->locking && k < v->n_conns; k++)
        if (s->mask[k]) {
            int rc = nn_sparsify_lock_add(&s->lock, v->from[k], v->to[k], now, err);
            if (rc)
                return fail(rc, err, "sparsifier");
        }
    int rc = nn_trainer_remove(t, s->mask, err);
    if (rc)
        return fail(rc, err, "sparsifier");
    s->st.removed += c;
    return 0;
}

/* neuron: removes the hidden neurons dead since the last check (none when
 * no step was taken since: the trainer would count every neuron dead). */
static int remove_dead(struct nn_sparsifier *s, struct nn_trainer *t, struct tv_error *err)
{
    uint64_t now = nn_trainer_steps(t);
    if (now == s->neuron_checked)
        return 0;
    s->neuron_checked = now;
    struct nn_train_view v;
    nn_trainer_view(t, &v);
    int rc = tv_grow((void **)&s->dead, &s->cap_dead, v.n_neurons, 1, err);
    if (rc)
        return fail(rc, err, "sparsifier: neuron");
    nn_trainer_zero_neurons(t, s->dead);
    size_t c = 0;
    for (size_t j = 0; j < v.n_neurons; j++)
        c += s->dead[j] != 0;
    if (c == 0)
        return 0;
    rc = nn_trainer_remove_neurons(t, s->dead, err);
    if (rc)
        return fail(rc, err, "sparsifier: neuron");
    s->st.neurons += c;
    return 0;
}

int nn_sparsifier_step(struct nn_sparsifier *s, struct nn_trainer *t, struct tv_error *err)
{
    if (!s->per_step)
        return 0;
    struct nn_train_view v;
    nn_trainer_view(t, &v);
    uint64_t now = nn_trainer_steps(t);
    int rc = mask_reset(s, v.n_conns, err);
    if (rc)
        return rc;
    size_t c = 0, n = v.n_conns;
    for (size_t i = 0; i < s->n; i++) {
        const struct nn_sparsity *p = &s->p[i];
        struct tv_rng rng;
        tv_rng_init(&rng, s->seed, i, now);
        switch (p->kind) {
        case NN_SPARSE_L1:
            c += nn_sparsify_l1(v.w, n, (float)p->a, s->mask);
            break;
        case NN_SPARSE_LP:
            c += nn_sparsify_lp(v.w, n, p->a, p->b, s->mask);
            break;
        case NN_SPARSE_THRESHOLD:
            c += nn_sparsify_threshold(v.w, n, (float)p->a, s->mask);
            break;
        case NN_SPARSE_ROUND:
            c += nn_sparsify_round(v.w, n, (int)p->a, s->mask);
            break;
        case NN_SPARSE_ZERO:
            c += nn_sparsify_zero(n, p->a, &rng, s->mask);
            break;
        case NN_SPARSE_ZERO_PROP:
            c += nn_sparsify_zero_prop(v.w, n, p->a, &rng, s->mask);
            break;
        default: /* the epoch's, lock */
            break;
        }
    }
    rc = remove_marked(s, t, &v, c, now, err);
    if (!rc && s->neuron && s->neuron_every && now % s->neuron_every == 0)
        rc = remove_dead(s, t, err);
    return rc;
}

/* ---- set and rigl -------------------------------------------------------- */

/* A connection of an eligible layer pair. */
struct entry {
    uint32_t lf, lt; /* layers of from and to */
    float a;         /* |w| */
    uint32_t from, to, k;
};

/* By layer pair, then |w|, then (from, to). */
static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->lf != y->lf)
        return x->lf < y->lf ? -1 : 1;
    if (x->lt != y->lt)
        return x->lt < y->lt ? -1 : 1;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

/* A genome id and its dense index, sorted by id. */
struct id_dense {
    uint32_t id, j;
};
static int id_dense_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct id_dense *)a)->id, y = ((const struct id_dense *)b)->id;
    return (x > y) - (x < y);
}

/* One call's working memory. */
struct regrow {
    const struct nn_train_view *v;
    struct id_dense *ids; /* [n_neurons] sorted by id */
    struct entry *ent;    /* [n_ent] */
    size_t n_ent;
    uint32_t *from_list;     /* [n_neurons] dense indices by layer */
    size_t *from_start;      /* [n_layers + 1] */
    uint32_t *to_list;       /* [n_neurons] non-input dense indices by layer */
    size_t *to_start;        /* [n_layers + 1] */
    struct genome_conn *add; /* [n_add] */
    size_t n_add;
    struct nn_sparsify_lock *exist;      /* the surviving and grown connections */
    const struct nn_sparsify_lock *lock; /* NULL when not locking */
    uint64_t now;
};

static void regrow_release(struct regrow *r)
{
    TV_FREE_ALL(r->ids, r->ent, r->from_list, r->from_start, r->to_list, r->to_start, r->add);
}

/* Dense indices by layer into list, layer l at [start[l], start[l+1]). */
static void layer_lists(const struct nn_train_view *v, int skip_inputs, uint32_t *list,
                        size_t *start)
{
    memset(start, 0, (v->n_layers + 1) * sizeof *start);
    for (size_t j = 0; j < v->n_neurons; j++)
        if (!(skip_inputs && v->kind[j] == GENOME_INPUT))
            start[v->layer[j] + 1]++;
    for (size_t l = 0; l < v->n_layers; l++)
        start[l + 1] += start[l];
    for (size_t j = 0; j < v->n_neurons; j++)
        if (!(skip_inputs && v->kind[j] == GENOME_INPUT))
            list[start[v->layer[j]]++] = (uint32_t)j;
    for (size_t l = v->n_layers; l > 0; l--)
        start[l] = start[l - 1];
    start[0] = 0;
}

static uint32_t layer_of(const struct regrow *r, uint32_t id)
{
    struct id_dense key = {id, 0};
    const struct id_dense *f = bsearch(&key, r->ids, r->v->n_neurons, sizeof key, id_dense_cmp);
    return f ? r->v->layer[f->j] : 0; /* a connection's ends always exist */
}

/* Whether (from, to) may be grown: absent and not locked. */
static int regrow_absent(void *ctx, uint32_t from, uint32_t to)
{
    const struct regrow *r = ctx;
    return nn_sparsify_lock_allows(r->exist, from, to, 0) &&
           (!r->lock || nn_sparsify_lock_allows(r->lock, from, to, r->now));
}

/* Allocates r's arrays and fills the entries of the eligible pairs. */
static int regrow_prepare(struct regrow *r, int ff_only, struct tv_error *err)
{
    const struct nn_train_view *v = r->v;
    size_t nn = v->n_neurons ? v->n_neurons : 1, nl = v->n_layers + 1;
    r->ids = malloc(nn * sizeof *r->ids);
    r->ent = malloc((v->n_conns ? v->n_conns : 1) * sizeof *r->ent);
    r->from_list = malloc(nn * sizeof *r->from_list);
    r->to_list = malloc(nn * sizeof *r->to_list);
    r->from_start = malloc(nl * sizeof *r->from_start);
    r->to_start = malloc(nl * sizeof *r->to_start);
    if (!r->ids || !r->ent || !r->from_list || !r->to_list || !r->from_start || !r->to_start)
        return tv_error_set(err, TV_ENOMEM, "out of memory for %zu connections", v->n_conns);
    for (size_t j = 0; j < v->n_neurons; j++)
        r->ids[j] = (struct id_dense){v->id[j], (uint32_t)j};
    qsort(r->ids, v->n_neurons, sizeof *r->ids, id_dense_cmp);
    layer_lists(v, 0, r->from_list, r->from_start);
    layer_lists(v, 1, r->to_list, r->to_start);
    for (size_t k = 0; k < v->n_conns; k++) {
        struct entry e = {layer_of(r, v->from[k]),
                          layer_of(r, v->to[k]),
                          fabsf(v->w[k]),
                          v->from[k],
                          v->to[k],
                          (uint32_t)k};
        if (!ff_only || e.lf < e.lt)
            r->ent[r->n_ent++] = e;
    }
    qsort(r->ent, r->n_ent, sizeof *r->ent, entry_cmp);
    return 0;
}

/* Marks the floor(f*m) smallest of each pair; returns how many in all. */
static size_t regrow_mark(const struct regrow *r, double f, uint8_t *mask)
{
    size_t c = 0;
    for (size_t g0 = 0, g1; g0 < r->n_ent; g0 = g1) {
        for (g1 = g0;
             g1 < r->n_ent && r->ent[g1].lf == r->ent[g0].lf && r->ent[g1].lt == r->ent[g0].lt;
             g1++)
            ;
        size_t q = (size_t)(f * (double)(g1 - g0));
        for (size_t i = g0; i < g0 + q; i++)
            mask[r->ent[i].k] = 1;
        c += q;
    }
    return c;
}

/* set's growth in pair (lf, lt): q connections drawn at random. */
static int grow_set(struct regrow *r, uint32_t lf, uint32_t lt, size_t q, double sigma,
                    struct tv_rng *rng, struct tv_error *err)
{
    size_t nf = r->from_start[lf + 1] - r->from_start[lf];
    size_t nt = r->to_start[lt + 1] - r->to_start[lt];
    for (size_t i = 0; i < q && nf && nt; i++)
        for (int tries = 0; tries < 100; tries++) {
            uint32_t from =
                r->v->id[r->from_list[r->from_start[lf] + tv_rng_below(rng, (uint32_t)nf)]];
            uint32_t to = r->v->id[r->to_list[r->to_start[lt] + tv_rng_below(rng, (uint32_t)nt)]];
            if (!regrow_absent(r, from, to))
                continue;
            int rc = nn_sparsify_lock_add(r->exist, from, to, 0, err);
            if (rc)
                return rc;
            r->add[r->n_add++] =
                (struct genome_conn){from, to, (float)(sigma * tv_rng_normal(rng))};
            break;
        }
    return 0;
}

/* set or rigl (policy i): removes per pair, then grows into r->add. */
static int regrow_plan(struct nn_sparsifier *s, struct regrow *r, size_t i, size_t *n_removed,
                       struct tv_error *err)
{
    const struct nn_sparsity *p = &s->p[i];
    const struct nn_train_view *v = r->v;
    int rigl = p->kind == NN_SPARSE_RIGL;
    if (rigl && (v->batch == 0 || !v->value || !v->delta))
        return tv_error_set(
            err, TV_ESTATE,
            "no gradient yet: the view has no value and delta (no grad or step call "
            "yet, or nn_trainer_keep_values is off)");
    int rc = regrow_prepare(r, rigl, err);
    if (rc)
        return rc;
    rc = nn_sparsify_lock_reset(r->exist, v->n_conns, err);
    if (rc)
        return rc;
    *n_removed = regrow_mark(r, p->a, s->mask);
    r->add = malloc((*n_removed ? *n_removed : 1) * sizeof *r->add);
    if (!r->add)
        return tv_error_set(err, TV_ENOMEM, "out of memory for %zu new connections", *n_removed);
    for (size_t k = 0; k < v->n_conns; k++) {
        if (!s->mask[k])
            rc = nn_sparsify_lock_add(r->exist, v->from[k], v->to[k], 0, err);
        else if (s->locking)
            rc = nn_sparsify_lock_add(&s->lock, v->from[k], v->to[k], r->now, err);
        if (rc)
            return rc;
    }
    struct tv_rng rng;
    tv_rng_init(&rng, s->seed, i, r->now);
    for (size_t g0 = 0, g1; g0 < r->n_ent; g0 = g1) {
        const struct entry *e = &r->ent[g0];
        double sum2 = 0;
        for (g1 = g0; g1 < r->n_ent && r->ent[g1].lf == e->lf && r->ent[g1].lt == e->lt; g1++)
            sum2 += (double)r->ent[g1].a * r->ent[g1].a;
        size_t q = (size_t)(p->a * (double)(g1 - g0)), got = 0;
        if (rigl) {
            rc = nn_sparsify_rigl_top(
                v->value, v->delta, v->batch, v->id, r->from_list + r->from_start[e->lf],
                r->from_start[e->lf + 1] - r->from_start[e->lf], r->to_list + r->to_start[e->lt],
                r->to_start[e->lt + 1] - r->to_start[e->lt], q, regrow_absent, r, r->add + r->n_add,
                &got, err);
            for (size_t k = 0; k < got; k++)
                r->add[r->n_add + k].weight = 0;
            r->n_add += got;
        } else {
            double sigma = p->b >= 0 ? p->b : sqrt(sum2 / (double)(g1 - g0));
            rc = grow_set(r, e->lf, e->lt, q, sigma, &rng, err);
        }
        if (rc)
            return rc;
    }
    qsort(r->add, r->n_add, sizeof *r->add, genome_conn_cmp);
    return 0;
}

static int regrow(struct nn_sparsifier *s, struct nn_trainer *t, size_t i, struct tv_error *err)
{
    struct nn_train_view v;
    nn_trainer_view(t, &v);
    struct regrow r = {.v = &v,
                       .exist = &s->exist,
                       .lock = s->locking ? &s->lock : NULL,
                       .now = nn_trainer_steps(t)};
    size_t removed = 0;
    int rc = mask_reset(s, v.n_conns, err);
    if (!rc)
        rc = regrow_plan(s, &r, i, &removed, err);
    if (!rc && removed)
        rc = nn_trainer_remove(t, s->mask, err);
    if (!rc && r.n_add)
        rc = nn_trainer_add(t, r.add, r.n_add, err);
    if (!rc) {
        s->st.removed += removed;
        s->st.grown += r.n_add;
    }
    regrow_release(&r);
    if (rc) {
        char spec[96];
        nn_sparsity_format(&s->p[i], spec, sizeof spec);
        tv_error_prefix(err, "sparsifier: %s", spec);
        return rc;
    }
    return 0;
}

int nn_sparsifier_epoch(struct nn_sparsifier *s, struct nn_trainer *t, struct tv_error *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < s->n; i++)
        if (s->p[i].kind == NN_SPARSE_SET || s->p[i].kind == NN_SPARSE_RIGL)
            rc = regrow(s, t, i, err);
    if (!rc && s->neuron && s->neuron_every == 0)
        rc = remove_dead(s, t, err);
    return rc;
}
