/* train_edit.c -- the physical removal and addition of connections and
 * neurons of a trainer (train.h): the rows compacted in place, or laid out
 * again with the new connections (nn_tr_layout of train.c), the layers and
 * the index map rebuilt.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train_impl.h"

/* Compacts the rows in place: drops connection k when remove[k] (if remove)
 * or when an end is a dead hidden neuron (if dead); O(n + m). */
static void compact(struct nn_trainer *t, const uint8_t *remove, const uint8_t *dead)
{
    uint32_t q = 0;
    for (size_t j = 0; j < t->n; j++) {
        /* row[j + 1] is still the old start of the next row */
        uint32_t k0 = t->row[j], kr = t->rec[j], k1 = t->row[j + 1], qr = q;
        int dead_j = dead && dead[j] && t->kind[j] == GENOME_HIDDEN;
        t->row[j] = q;
        for (uint32_t k = k0; k < k1; k++) {
            uint32_t i = t->src[k];
            if (k == kr)
                qr = q;
            if ((remove && remove[k]) || dead_j || (dead && dead[i] && t->kind[i] == GENOME_HIDDEN))
                continue;
            t->src[q] = i;
            t->dst[q] = t->dst[k];
            t->w[q] = t->w[k];
            t->grad[q] = t->grad[k];
            t->om[q] = t->om[k];
            t->ov[q] = t->ov[k];
            q++;
        }
        t->rec[j] = kr == k1 ? q : qr;
    }
    t->row[t->n] = q;
    t->m = q;
}

int nn_trainer_remove(struct nn_trainer *t, const uint8_t *remove, struct tv_error *err)
{
    if (!remove)
        return tv_error_set(err, TV_EINVAL, "nn_trainer_remove: no flags (remove is NULL)");
    compact(t, remove, NULL);
    nn_tr_index_map(t);
    return 0;
}

/* The dense index of neuron `id`, or -1. */
static int64_t find_id(const struct nn_trainer *t, uint32_t id)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->id[t->by_id[mid]] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && t->id[t->by_id[lo]] == id ? (int64_t)t->by_id[lo] : -1;
}

/* 1 if the trainer has a connection from dense i to dense j. */
static int has_conn(const struct nn_trainer *t, uint32_t i, uint32_t j)
{
    uint32_t lo = nn_tr_is_rec(t, i, j) ? t->rec[j] : t->row[j];
    uint32_t hi = nn_tr_is_rec(t, i, j) ? t->row[j + 1] : t->rec[j];
    size_t k = tv_lower_u32(t->src, sizeof *t->src, 0, lo, hi, i);
    return k < hi && t->src[k] == i;
}

static int cmp_key_index(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

int nn_trainer_add(struct nn_trainer *t, const struct genome_conn *c, size_t n,
                   struct tv_error *err)
{
    if (n == 0)
        return 0;
    if (!c)
        return tv_error_set(err, TV_EINVAL, "nn_trainer_add: no connections (c is NULL)");
    uint32_t *src = malloc(n * sizeof *src), *dst = malloc(n * sizeof *dst);
    float *w = malloc(n * sizeof *w);
    uint64_t *key = malloc(n * 2 * sizeof *key);
    int rc = 0;
    if (!src || !dst || !w || !key) {
        rc = tv_error_set(err, TV_ENOMEM, "nn_trainer_add: out of memory for %zu connections", n);
        goto done;
    }
    size_t bad = n; /* the first connection that cannot be added */
    const char *why = "";
    uint32_t missing = 0;
    for (size_t k = 0; k < n && bad == n; k++) {
        int64_t i = find_id(t, c[k].from), j = find_id(t, c[k].to);
        if (i < 0 || j < 0) {
            bad = k;
            why = "no neuron";
            missing = i < 0 ? c[k].from : c[k].to;
        } else if (t->kind[j] == GENOME_INPUT) {
            bad = k;
            why = "ends in an input";
        } else if (!isfinite(c[k].weight)) {
            bad = k;
            why = "weight is not finite";
        } else if (has_conn(t, (uint32_t)i, (uint32_t)j)) {
            bad = k;
            why = "exists already";
        }
        src[k] = (uint32_t)i;
        dst[k] = (uint32_t)j;
        w[k] = c[k].weight;
        key[2 * k] = (uint64_t)i * ((uint64_t)1 << 32) + (uint64_t)j;
        key[2 * k + 1] = k;
    }
    if (bad == n) { /* a connection given twice: the later one exists already */
        qsort(key, n, 2 * sizeof *key, cmp_key_index);
        for (size_t q = 1; q < n; q++)
            if (key[2 * q] == key[2 * q - 2] && key[2 * q + 1] < bad) {
                bad = key[2 * q + 1] > key[2 * q - 1] ? key[2 * q + 1] : key[2 * q - 1];
                why = "exists already";
            }
    }
    if (bad < n) {
        if (missing)
            rc = tv_error_set(err, TV_EINVAL, "nn_trainer_add: connection %zu (%u -> %u): %s %u",
                              bad, c[bad].from, c[bad].to, why, missing);
        else
            rc = tv_error_set(err, TV_EINVAL, "nn_trainer_add: connection %zu (%u -> %u): %s", bad,
                              c[bad].from, c[bad].to, why);
        goto done;
    }
    struct tr_extra x = {n, src, dst, w};
    rc = nn_tr_layout(t, t->m, &x, "nn_trainer_add", err);
done:
    free(src);
    free(dst);
    free(w);
    free(key);
    return rc;
}

void nn_trainer_zero_neurons(struct nn_trainer *t, uint8_t *dead)
{
    for (size_t j = 0; j < t->n; j++)
        dead[j] = t->kind[j] == GENOME_HIDDEN && !t->seen[j];
    memset(t->seen, 0, t->n);
}

int nn_trainer_remove_neurons(struct nn_trainer *t, const uint8_t *dead, struct tv_error *err)
{
    if (!dead)
        return tv_error_set(err, TV_EINVAL, "nn_trainer_remove_neurons: no flags (dead is NULL)");
    compact(t, NULL, dead);
    /* renumber: t_cur[j] is j's new index, NN_NONE if it goes */
    size_t n = t->n, q = 0;
    uint32_t *nw = t->t_cur;
    for (size_t j = 0; j < n; j++)
        nw[j] = dead[j] && t->kind[j] == GENOME_HIDDEN ? NN_NONE : (uint32_t)q++;
    size_t kept = 0;
    for (size_t r = 0; r < n; r++)
        if (nw[t->by_id[r]] != NN_NONE)
            t->by_id[kept++] = nw[t->by_id[r]];
    for (size_t j = 0; j < n; j++) {
        if ((q = nw[j]) == NN_NONE)
            continue;
        t->id[q] = t->id[j];
        t->kind[q] = t->kind[j];
        t->act[q] = t->act[j];
        t->depth[q] = t->depth[j];
        t->bias[q] = t->bias[j];
        t->bias_grad[q] = t->bias_grad[j];
        t->bias_m[q] = t->bias_m[j];
        t->bias_v[q] = t->bias_v[j];
        t->seen[q] = t->seen[j];
        t->row[q] = t->row[j];
        t->rec[q] = t->rec[j];
    }
    q = kept;
    t->row[q] = (uint32_t)t->m;
    for (size_t k = 0; k < t->m; k++) {
        t->src[k] = nw[t->src[k]];
        t->dst[k] = nw[t->dst[k]];
    }
    t->n = q;
    t->v_batch = 0; /* the view's rows were numbered the old way */
    nn_tr_neuron_layers(t);
    nn_tr_index_map(t);
    return 0;
}
