/*
 * sparsify.c -- the sparsity policies of sparsify.h: their parser, the rules
 * as pure functions over weight arrays, the lock set, rigl's top-k
 * selection, and the sparsifier that runs them on a trainer through
 * nn/train/train.h only.
 */
#include "sparsify.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ------------------------------------------------------------- */

/* One row per kind: its name, the form shown in messages, its parameters. */
struct kind_info {
    const char *name;
    const char *form;
    size_t min_args, max_args;
};
static const struct kind_info kinds[NN_SPARSE_COUNT] = {
    [NN_SPARSE_L1] = {"l1", "l1:D", 1, 1},
    [NN_SPARSE_LP] = {"lp", "lp:D,P", 2, 2},
    [NN_SPARSE_THRESHOLD] = {"threshold", "threshold:T", 1, 1},
    [NN_SPARSE_ROUND] = {"round", "round:K", 1, 1},
    [NN_SPARSE_ZERO] = {"zero", "zero:P", 1, 1},
    [NN_SPARSE_ZERO_PROP] = {"zero_prop", "zero_prop:P", 1, 1},
    [NN_SPARSE_NEURON] = {"neuron", "neuron or neuron:N", 0, 1},
    [NN_SPARSE_SET] = {"set", "set:F or set:F,S", 1, 2},
    [NN_SPARSE_RIGL] = {"rigl", "rigl:F", 1, 1},
    [NN_SPARSE_LOCK] = {"lock", "lock:N", 1, 1},
};

/* Reads the number text[0..len) into *v: the whole text, finite. */
static int parse_number(const char *spec, const char *text, size_t len, double *v,
                        struct tv_error *err)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return tv_error_set(err, TV_EINVAL, "%s: '%.*s' is not a number", spec, (int)len, text);
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    *v = strtod(buf, &end);
    if (*end != '\0' || end == buf || buf[0] == ' ' || buf[0] == '\t' || buf[0] == '\n')
        return tv_error_set(err, TV_EINVAL, "%s: '%s' is not a number", spec, buf);
    if (!isfinite(*v) || errno == ERANGE)
        return tv_error_set(err, TV_EINVAL, "%s: '%s' is not a finite number", spec, buf);
    return 0;
}

static int is_whole(double v, double lo, double hi)
{
    return v >= lo && v <= hi && v == floor(v);
}

/* The ranges of sparsify.h, one check per parameter. */
static int check_args(const char *spec, int kind, const double *v, size_t n, struct tv_error *err)
{
    const char *bad = NULL;
    switch (kind) {
    case NN_SPARSE_L1:
        bad = v[0] > 0 ? NULL : "D must be > 0";
        break;
    case NN_SPARSE_LP:
        bad = !(v[0] > 0) ? "D must be > 0" : !(v[1] > 0) ? "P must be > 0" : NULL;
        break;
    case NN_SPARSE_THRESHOLD:
        bad = v[0] > 0 ? NULL : "T must be > 0";
        break;
    case NN_SPARSE_ROUND:
        bad = is_whole(v[0], 0, 9) ? NULL : "K must be a whole number in 0..9";
        break;
    case NN_SPARSE_ZERO:
    case NN_SPARSE_ZERO_PROP:
        bad = v[0] >= 0 && v[0] <= 1 ? NULL : "P must be in [0, 1]";
        break;
    case NN_SPARSE_NEURON:
        bad = n == 0 || is_whole(v[0], 1, 1e15) ? NULL : "N must be a whole number >= 1";
        break;
    case NN_SPARSE_SET:
    case NN_SPARSE_RIGL:
        bad = !(v[0] > 0 && v[0] < 1) ? "F must be in (0, 1)"
              : n > 1 && !(v[1] >= 0) ? "S must be >= 0"
                                      : NULL;
        break;
    case NN_SPARSE_LOCK:
        bad = is_whole(v[0], 1, 1e15) ? NULL : "N must be a whole number >= 1";
        break;
    }
    return bad ? tv_error_set(err, TV_EINVAL, "%s: %s", spec, bad) : 0;
}

int nn_sparsity_parse(const char *spec, struct nn_sparsity *out, struct tv_error *err)
{
    memset(out, 0, sizeof *out);
    if (!spec || !*spec)
        return tv_error_set(err, TV_EINVAL, "empty sparsity policy");
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    int kind = -1;
    for (int k = 0; k < NN_SPARSE_COUNT; k++)
        if (strlen(kinds[k].name) == name_len && memcmp(kinds[k].name, spec, name_len) == 0)
            kind = k;
    if (kind < 0)
        return tv_error_set(err, TV_EINVAL,
                            "%s: unknown policy '%.*s' (known: l1, lp, threshold, round, zero, "
                            "zero_prop, neuron, set, rigl, lock)",
                            spec, (int)name_len, spec);
    const struct kind_info *ki = &kinds[kind];
    double v[2] = {0, 0};
    size_t n = 0;
    if (colon) {
        const char *p = colon + 1;
        for (;;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (n == ki->max_args)
                return tv_error_set(err, TV_EINVAL, "%s: expected %s", spec, ki->form);
            int rc = parse_number(spec, p, len, &v[n++], err);
            if (rc)
                return rc;
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    if (n < ki->min_args)
        return tv_error_set(err, TV_EINVAL, "%s: expected %s", spec, ki->form);
    int rc = check_args(spec, kind, v, n, err);
    if (rc)
        return rc;
    out->kind = kind;
    out->a = v[0];
    out->b = kind == NN_SPARSE_SET && n < 2 ? -1 : v[1];
    return 0;
}

/* The shortest of %.15g, %.16g, %.17g that reads back as v. */
static const char *num(double v, char *buf, size_t size)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

int nn_sparsity_format(const struct nn_sparsity *p, char *buf, size_t size)
{
    char a[32], b[32];
    if (p->kind < 0 || p->kind >= NN_SPARSE_COUNT)
        return snprintf(buf, size, "?");
    const char *name = kinds[p->kind].name;
    if ((p->kind == NN_SPARSE_NEURON && p->a == 0) ||
        0 == kinds[p->kind].max_args) /* no parameter */
        return snprintf(buf, size, "%s", name);
    if (p->kind == NN_SPARSE_LP || (p->kind == NN_SPARSE_SET && p->b >= 0))
        return snprintf(buf, size, "%s:%s,%s", name, num(p->a, a, sizeof a),
                        num(p->b, b, sizeof b));
    return snprintf(buf, size, "%s:%s", name, num(p->a, a, sizeof a));
}

/* ---- the rules ----------------------------------------------------------- */

/* Marks k in remove when out (0 or 1); 1 if it was not marked before.
 * Branch-free, so that the loops over the weights vectorize. */
static size_t mark(uint8_t *remove, size_t k, int out)
{
    size_t fresh = (size_t)(out & (remove[k] == 0));
    remove[k] |= (uint8_t)out;
    return fresh;
}

/* The removal rule of l1 and lp: x became y. */
static int decayed_out(float x, float y)
{
    return (x == 0) | (y == 0) | ((x > 0) != (y > 0));
}

size_t nn_sparsify_l1(float *w, size_t n, float d, uint8_t *remove)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++) {
        float x = w[k];
        float y = x > 0 ? x - d : x + d;
        int out = decayed_out(x, y);
        c += mark(remove, k, out);
        w[k] = out ? 0 : y;
    }
    return c;
}

size_t nn_sparsify_lp(float *w, size_t n, double d, double p, uint8_t *remove)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++) {
        float x = w[k];
        float y = 0;
        if (x != 0) {
            double a = fabs((double)x), e = p - 1;
            /* |w|^(P-1), without pow() for the usual whole P */
            double f = e == 0 ? 1 : e == 1 ? a : e == 2 ? a * a : pow(a, e);
            y = (float)(x > 0 ? x - d * f : x + d * f);
        }
        int out = decayed_out(x, y);
        c += mark(remove, k, out);
        w[k] = out ? 0 : y;
    }
    return c;
}

size_t nn_sparsify_threshold(const float *w, size_t n, float t, uint8_t *remove)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++)
        c += mark(remove, k, fabsf(w[k]) < t);
    return c;
}

size_t nn_sparsify_round(float *w, size_t n, int k10, uint8_t *remove)
{
    static const double p10[10] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    double s = p10[k10 < 0 ? 0 : k10 > 9 ? 9 : k10];
    size_t c = 0;
    for (size_t k = 0; k < n; k++) {
        float y = (float)(round((double)w[k] * s) / s);
        c += mark(remove, k, y == 0);
        w[k] = y;
    }
    return c;
}

size_t nn_sparsify_zero(size_t n, double p, struct tv_rng *rng, uint8_t *remove)
{
    size_t c = 0;
    for (size_t k = 0; k < n; k++)
        c += mark(remove, k, tv_rng_uniform(rng) < p);
    return c;
}

size_t nn_sparsify_zero_prop(const float *w, size_t n, double p, struct tv_rng *rng,
                             uint8_t *remove)
{
    double m = 0, sum = 0;
    for (size_t k = 0; k < n; k++)
        m = fmax(m, fabs((double)w[k]));
    for (size_t k = 0; k < n; k++)
        sum += m > 0 ? 1 - fabs((double)w[k]) / m : 1;
    size_t c = 0;
    for (size_t k = 0; k < n; k++) {
        double r = m > 0 ? 1 - fabs((double)w[k]) / m : 1;
        double pk = sum > 0 ? fmin(1, p * (double)n * r / sum) : p;
        c += mark(remove, k, tv_rng_uniform(rng) < pk);
    }
    return c;
}

/* ---- the lock set (also the plain set of existing connections) ---------- */

static uint64_t lock_key(uint32_t from, uint32_t to)
{
    return ((uint64_t)from << 32 | to) + 1; /* ids are never GENOME_ID_NONE: no wrap */
}

/* The slot of key, or of the empty slot where it would go. cap > 0. */
static size_t lock_slot(const struct nn_sparsify_lock *l, uint64_t key)
{
    size_t mask = l->cap - 1, i = (size_t)tv_mix64(key) & mask;
    while (l->key[i] != 0 && l->key[i] != key)
        i = (i + 1) & mask;
    return i;
}

/* An entry recorded at step s still locks at `now` (always in a plain set). */
static int lock_live(const struct nn_sparsify_lock *l, uint64_t s, uint64_t now)
{
    return l->n_steps == 0 || now < s || now - s < l->n_steps;
}

void nn_sparsify_lock_init(struct nn_sparsify_lock *l, uint64_t n_steps)
{
    memset(l, 0, sizeof *l);
    l->n_steps = n_steps;
}

void nn_sparsify_lock_release(struct nn_sparsify_lock *l)
{
    free(l->key);
    free(l->step);
    nn_sparsify_lock_init(l, l->n_steps);
}

/* Rebuilds l with its live entries at `now` (none unless keep) and room for
 * `room` more at load <= 1/2. */
static int lock_rebuild(struct nn_sparsify_lock *l, uint64_t now, size_t room, int keep,
                        struct tv_error *err)
{
    size_t live = 0;
    for (size_t i = 0; keep && i < l->cap; i++)
        live += l->key[i] != 0 && lock_live(l, l->step[i], now);
    size_t cap = 16;
    while (cap < 2 * (live + room)) {
        if (cap > SIZE_MAX / 4 / sizeof(uint64_t))
            return tv_error_set(err, TV_ENOMEM, "lock set: out of memory for %zu entries", live);
        cap *= 2;
    }
    struct nn_sparsify_lock nl = {calloc(cap, sizeof(uint64_t)), malloc(cap * sizeof(uint64_t)), 0,
                                  cap, l->n_steps};
    if (!nl.key || !nl.step) {
        free(nl.key);
        free(nl.step);
        return tv_error_set(err, TV_ENOMEM, "lock set: out of memory for %zu entries", cap);
    }
    for (size_t i = 0; keep && i < l->cap; i++)
        if (l->key[i] != 0 && lock_live(l, l->step[i], now)) {
            size_t j = lock_slot(&nl, l->key[i]);
            nl.key[j] = l->key[i];
            nl.step[j] = l->step[i];
            nl.n++;
        }
    nn_sparsify_lock_release(l);
    *l = nl;
    return 0;
}

int nn_sparsify_lock_add(struct nn_sparsify_lock *l, uint32_t from, uint32_t to, uint64_t step,
                         struct tv_error *err)
{
    uint64_t key = lock_key(from, to);
    if (l->cap && l->key[lock_slot(l, key)] == key) {
        l->step[lock_slot(l, key)] = step;
        return 0;
    }
    if (2 * (l->n + 1) > l->cap) {
        int rc = lock_rebuild(l, step, 1, 1, err);
        if (rc)
            return rc;
    }
    size_t i = lock_slot(l, key);
    l->key[i] = key;
    l->step[i] = step;
    l->n++;
    return 0;
}

/* Empties l, keeping room for `need` entries (its memory when it has enough). */
static int lock_reset(struct nn_sparsify_lock *l, size_t need, struct tv_error *err)
{
    if (l->cap < 2 * (need + 1))
        return lock_rebuild(l, 0, need + 1, 0, err);
    memset(l->key, 0, l->cap * sizeof *l->key);
    l->n = 0;
    return 0;
}

int nn_sparsify_lock_allows(const struct nn_sparsify_lock *l, uint32_t from, uint32_t to,
                            uint64_t step)
{
    if (l->cap == 0)
        return 1;
    size_t i = lock_slot(l, lock_key(from, to));
    return l->key[i] == 0 || !lock_live(l, l->step[i], step);
}

/* ---- rigl's top-k -------------------------------------------------------- */

/* A candidate: |g| with g kept in c.weight. */
struct cand {
    float a;
    struct genome_conn c;
};

/* 1 when x ranks before y: larger |g|, then smaller (from, to). */
static int cand_before(const struct cand *x, const struct cand *y)
{
    if (x->a != y->a)
        return x->a > y->a;
    return genome_conn_cmp(&x->c, &y->c) < 0;
}

static int cand_order(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    return cand_before(x, y) ? -1 : cand_before(y, x) ? 1 : 0;
}

/* Restores the heap (root: the candidate that ranks last) below slot i. */
static void heap_down(struct cand *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && cand_before(&h[w], &h[l]))
            w = l;
        if (r < n && cand_before(&h[w], &h[r]))
            w = r;
        if (w == i)
            return;
        struct cand t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void heap_up(struct cand *h, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_before(&h[p], &h[i]))
            return;
        struct cand t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

/* sum of a[b] * b_[b] over b < n in float: 8 interleaved partial sums (a
 * form the compiler vectorizes without reassociating), then added in a fixed
 * order, so every machine gives the same bits. */
static float dot8(const float *a, const float *b, size_t n)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (size_t l = 0; l < 8; l++)
            acc[l] += a[k + l] * b[k + l];
    for (; k < n; k++)
        acc[k % 8] += a[k] * b[k];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* 1 if row[0..n) holds a non-zero. */
static int any_nonzero(const float *row, size_t n)
{
    for (size_t b = 0; b < n; b++)
        if (row[b] != 0)
            return 1;
    return 0;
}

int nn_sparsify_rigl_top(const float *value, const float *delta, size_t batch, const uint32_t *id,
                         const uint32_t *from_idx, size_t n_from, const uint32_t *to_idx,
                         size_t n_to, size_t k,
                         int (*absent)(void *ctx, uint32_t from, uint32_t to), void *ctx,
                         struct genome_conn *out, size_t *n_out, struct tv_error *err)
{
    *n_out = 0;
    if (k == 0)
        return 0;
    struct cand *h = k <= SIZE_MAX / sizeof *h ? malloc(k * sizeof *h) : NULL;
    uint8_t *live = malloc(n_from ? n_from : 1); /* value row ii not all 0 */
    if (!h || !live) {
        free(h);
        free(live);
        return tv_error_set(err, TV_ENOMEM, "rigl: out of memory for %zu candidates", k);
    }
    for (size_t ii = 0; ii < n_from; ii++)
        live[ii] = (uint8_t)any_nonzero(value + (size_t)from_idx[ii] * batch, batch);
    size_t n = 0;
    for (size_t jj = 0; jj < n_to; jj++) {
        const float *dj = delta + (size_t)to_idx[jj] * batch;
        uint32_t to = id[to_idx[jj]];
        int live_j = any_nonzero(dj, batch);
        for (size_t ii = 0; ii < n_from; ii++) {
            float g =
                live_j && live[ii] ? dot8(value + (size_t)from_idx[ii] * batch, dj, batch) : 0;
            struct cand c = {fabsf(g), {id[from_idx[ii]], to, g}};
            /* the hash lookup only for a candidate that would enter */
            if ((n == k && !cand_before(&c, &h[0])) || !absent(ctx, c.c.from, to))
                continue;
            if (n < k) {
                h[n] = c;
                heap_up(h, n++);
            } else {
                h[0] = c;
                heap_down(h, n, 0);
            }
        }
    }
    qsort(h, n, sizeof *h, cand_order);
    for (size_t i = 0; i < n; i++)
        out[i] = h[i].c;
    *n_out = n;
    free(h);
    free(live);
    return 0;
}

/* ---- the sparsifier ------------------------------------------------------ */

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
                     : check_args(spec, kind, v,
                                  (kind == NN_SPARSE_NEURON && v[0] == 0) ||
                                          (kind == NN_SPARSE_SET && v[1] < 0)
                                      ? kinds[kind].max_args - 1
                                      : kinds[kind].max_args,
                                  err);
        if (!rc &&
            ((kind == NN_SPARSE_LOCK && s->locking) || (kind == NN_SPARSE_NEURON && s->neuron)))
            rc = tv_error_set(err, TV_EINVAL, "%s: %s given twice", spec, kinds[kind].name);
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
    free(s->p);
    free(s->mask);
    free(s->dead);
    free(s);
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
    free(r->ids);
    free(r->ent);
    free(r->from_list);
    free(r->from_start);
    free(r->to_list);
    free(r->to_start);
    free(r->add);
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
    rc = lock_reset(r->exist, v->n_conns, err);
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
