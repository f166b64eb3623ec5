/* conv_spec.c -- the spec of `trevo net init --conv` (cmd_cnn.h):
 * "CxHxW,NkK[sS][pP],poolP,..." into the shapes of its layers. Every
 * number is checked against the genome's own limits (genome.h), so a spec
 * that parses makes a valid genome; a spec that does not names the item,
 * the limit and what it got. */
#include "cmd_cnn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A whole number at *p, advancing *p: 0; 1 when there is none (a syntax
 * error the caller names); TV_EINVAL naming `what`, its limits and the
 * item when it is outside lo..hi. The limits are the genome's own
 * (genome.h): a spec that parses makes a valid genome. */
static int spec_number(const char **p, const char *what, size_t lo, size_t hi, const char *item,
                       size_t *out, struct tv_error *err)
{
    char *end;
    errno = 0;
    if (**p < '0' || **p > '9')
        return 1;
    unsigned long long v = strtoull(*p, &end, 10);
    if (errno || v < lo || v > hi)
        return tv_error_set(err, TV_EINVAL, "--conv: '%.*s': %s must be in %zu..%zu, got %.*s",
                            (int)strcspn(item, ","), item, what, lo, hi, (int)(end - *p), *p);
    *p = end;
    *out = (size_t)v;
    return 0;
}

/* One item of the spec after the input: "Nk3[s1][p1]" or "poolP". */
static int spec_item(const char *item, struct cli_cnn_spec *s, struct tv_error *err)
{
    const char *p = item;
    size_t v;
    int rc;
    if (!strncmp(p, "pool", 4)) {
        p += 4;
        if (!s->n_layers || s->pool[s->n_layers - 1] != 1)
            return tv_error_set(err, TV_EINVAL, "--conv: '%.*s': poolP follows a convolution, once",
                                (int)strcspn(item, ","), item);
        if ((rc = spec_number(&p, "the pooling P", 1, GENOME_POOL_MAX, item, &v, err)) < 0)
            return rc;
        if (rc || (*p && *p != ','))
            goto bad;
        s->pool[s->n_layers - 1] = v;
        return (int)(p - item);
    }
    if (s->n_layers == CLI_CNN_MAX_LAYERS)
        return tv_error_set(err, TV_ELIMIT, "--conv: at most %d convolutions", CLI_CNN_MAX_LAYERS);
    struct nn_conv_shape *c = &s->shape[s->n_layers];
    c->stride = 1;
    c->pad = 0;
    if ((rc = spec_number(&p, "the filters N", 1, GENOME_MAX_CHANNELS, item, &c->out_ch, err)))
        goto fail;
    if (*p++ != 'k')
        goto bad;
    if ((rc = spec_number(&p, "the kernel K", 1, GENOME_FILTER_MAX_K, item, &c->k_h, err)))
        goto fail;
    c->k_w = c->k_h;
    while (*p == 's' || *p == 'p') {
        char what = *p++;
        rc = what == 's' ? spec_number(&p, "the stride S", 1, GENOME_FILTER_MAX_STRIDE, item,
                                       &c->stride, err)
                         : spec_number(&p, "the padding P", 0, c->k_h - 1, item, &c->pad, err);
        if (rc)
            goto fail;
    }
    if (*p && *p != ',')
        goto bad;
    s->pool[s->n_layers++] = 1;
    return (int)(p - item);
fail:
    if (rc < 0)
        return rc;
bad:
    return tv_error_set(err, TV_EINVAL,
                        "--conv: '%.*s': expected NkK[sS][pP] (N filters of KxK, stride S, "
                        "padding P) or poolP",
                        (int)strcspn(item, ","), item);
}

int cli_cnn_spec_parse(const char *text, struct cli_cnn_spec *s, struct tv_error *err)
{
    memset(s, 0, sizeof *s);
    const char *p = text;
    int rc = spec_number(&p, "the input channels C", 1, GENOME_MAX_CHANNELS, text, &s->in_ch, err);
    if (!rc && *p++ != 'x')
        rc = 1;
    if (!rc)
        rc = spec_number(&p, "the input side H", 1, GENOME_CHANNEL_MAX_SIDE, text, &s->in_h, err);
    if (!rc && *p++ != 'x')
        rc = 1;
    if (!rc)
        rc = spec_number(&p, "the input side W", 1, GENOME_CHANNEL_MAX_SIDE, text, &s->in_w, err);
    if (rc == 1 || (!rc && *p && *p != ','))
        return tv_error_set(err, TV_EINVAL,
                            "--conv: '%s': expected the input CxHxW first (1x28x28,32k3p1,pool2)",
                            text);
    if (rc < 0)
        return rc;
    while (*p == ',') {
        p++;
        int n = spec_item(p, s, err);
        if (n < 0)
            return n;
        p += n;
    }
    if (*p || !s->n_layers)
        return tv_error_set(err, TV_EINVAL, "--conv: '%s': expected at least one convolution",
                            text);
    /* the shapes chain: each layer reads the pooled map of the one before */
    size_t ch = s->in_ch, h = s->in_h, w = s->in_w;
    for (size_t i = 0; i < s->n_layers; i++) {
        struct nn_conv_shape *c = &s->shape[i];
        c->in_ch = ch;
        c->in_h = h;
        c->in_w = w;
        size_t oh = nn_conv_out_h(c), ow = nn_conv_out_w(c);
        if (c->pad >= c->k_h || !oh || !ow || s->pool[i] > oh || s->pool[i] > ow)
            return tv_error_set(err, TV_EINVAL,
                                "--conv: convolution %zu (%zuk%zus%zup%zu, pool %zu) does not fit "
                                "its %zux%zu input",
                                i + 1, c->out_ch, c->k_h, c->stride, c->pad, s->pool[i], h, w);
        ch = c->out_ch;
        h = oh / s->pool[i];
        w = ow / s->pool[i];
    }
    s->out_size = ch * h * w;
    return 0;
}
