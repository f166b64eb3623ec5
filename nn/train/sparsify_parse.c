/* sparsify_parse.c -- the sparsity policies' specs (sparsify.h): their
 * table of kinds, the parser (nn_sparsity_parse), the range check and the
 * spec written back (nn_sparsity_format). Apart from the sparsifier that
 * runs the policies (sparsifier.c): text in, struct nn_sparsity out, and
 * nothing here calls the rules.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparsify_impl.h"

/* The kinds (sparsify_impl.h). */
const struct nn_sparsity_info nn_sparsity_kinds[NN_SPARSE_COUNT] = {
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
int nn_sparsity_check_args(const char *spec, int kind, const double *v, size_t n,
                           struct tv_error *err)
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
        if (strlen(nn_sparsity_kinds[k].name) == name_len &&
            memcmp(nn_sparsity_kinds[k].name, spec, name_len) == 0)
            kind = k;
    if (kind < 0)
        return tv_error_set(err, TV_EINVAL,
                            "%s: unknown policy '%.*s' (known: l1, lp, threshold, round, zero, "
                            "zero_prop, neuron, set, rigl, lock)",
                            spec, (int)name_len, spec);
    const struct nn_sparsity_info *ki = &nn_sparsity_kinds[kind];
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
    int rc = nn_sparsity_check_args(spec, kind, v, n, err);
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
    const char *name = nn_sparsity_kinds[p->kind].name;
    if ((p->kind == NN_SPARSE_NEURON && p->a == 0) ||
        0 == nn_sparsity_kinds[p->kind].max_args) /* no parameter */
        return snprintf(buf, size, "%s", name);
    if (p->kind == NN_SPARSE_LP || (p->kind == NN_SPARSE_SET && p->b >= 0))
        return snprintf(buf, size, "%s:%s,%s", name, num(p->a, a, sizeof a),
                        num(p->b, b, sizeof b));
    return snprintf(buf, size, "%s:%s", name, num(p->a, a, sizeof a));
}
