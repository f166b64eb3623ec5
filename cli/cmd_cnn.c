/* cmd_cnn.c -- the convolutional side of `trevo net init` and `trevo net
 * train`: a sparse starting CNN from a spec (--conv, parsed by conv_spec.c), and its training on a
 * classification data set by the loop of tasks/fit_cnn.c, with the
 * sparsity policies on its coefficients (rigl, set) and on its head
 * (nn/train/sparsify.h). docs/training.md. */
#include "cmd_cnn.h"
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the model (its spec: conv_spec.c) ----------------------------------------------- */

void cli_cnn_model_release(struct cli_cnn_model *m)
{
    for (size_t i = 0; i < m->n_layers; i++) {
        free(m->coef[i]);
        free(m->bias[i]);
    }
    genome_release(&m->head);
    memset(m, 0, sizeof *m);
    genome_init(&m->head);
}

void cli_cnn_model_desc(const struct cli_cnn_model *m, struct nn_cnn_desc *d)
{
    d->n_layers = m->n_layers;
    d->layer = m->layer;
    d->head = &m->head;
}

/* The coefficients of one layer: each position present with probability
 * density, weights N(0, 2 / k), k the coefficients its output channel has
 * (He, as net init scales connections). */
static int init_layer(struct cli_cnn_model *m, size_t i, double density, struct tv_rng *rng,
                      struct tv_error *err)
{
    const struct nn_conv_shape *s = &m->layer[i].s;
    size_t per_out = s->in_ch * s->k_h * s->k_w, n = 0;
    m->coef[i] = malloc((s->out_ch * per_out + 1) * sizeof *m->coef[i]);
    m->bias[i] = calloc(s->out_ch, sizeof(float));
    if (!m->coef[i] || !m->bias[i])
        return tv_error_set(err, TV_ENOMEM, "net init: out of memory");
    for (size_t o = 0; o < s->out_ch; o++) {
        size_t first = n;
        for (size_t q = 0; q < per_out; q++) {
            if (!(tv_rng_uniform(rng) < density))
                continue;
            struct nn_conv_coef *c = &m->coef[i][n++];
            c->out = (uint32_t)o;
            c->in = (uint32_t)(q / (s->k_h * s->k_w));
            c->ky = (uint8_t)(q / s->k_w % s->k_h);
            c->kx = (uint8_t)(q % s->k_w);
            c->w = (float)tv_rng_normal(rng);
        }
        for (size_t k = first; k < n; k++)
            m->coef[i][k].w *= (float)sqrt(2.0 / (double)(n - first));
    }
    m->layer[i].coef = m->coef[i];
    m->layer[i].n_coefs = n;
    m->layer[i].bias = m->bias[i];
    return 0;
}

int cli_cnn_model_init(struct cli_cnn_model *m, const struct cli_cnn_spec *s, const double *density,
                       const struct genome *head, uint64_t seed, struct tv_error *err)
{
    memset(m, 0, sizeof *m);
    genome_init(&m->head);
    struct tv_rng rng;
    tv_rng_init(&rng, seed, 0x636e6e696e6974ULL, 0);
    m->n_layers = s->n_layers;
    int rc = 0;
    for (size_t i = 0; i < s->n_layers && !rc; i++) {
        m->layer[i].s = s->shape[i];
        m->layer[i].act = GENOME_ACT_RELU;
        m->layer[i].pool = s->pool[i];
        rc = init_layer(m, i, density[i], &rng, err);
    }
    if (!rc)
        rc = genome_copy(&m->head, head, err);
    if (rc)
        cli_cnn_model_release(m);
    return rc;
}

size_t cli_cnn_model_coefs(const struct cli_cnn_model *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_layers; i++)
        n += m->layer[i].n_coefs;
    return n;
}

size_t cli_cnn_model_dense_coefs(const struct cli_cnn_model *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n_layers; i++) {
        const struct nn_conv_shape *s = &m->layer[i].s;
        n += s->out_ch * s->in_ch * s->k_h * s->k_w;
    }
    return n;
}

/* ---- net init --conv -------------------------------------------------------------- */

/* "D" or "D1,D2,...": one density per convolution (one for all), in (0, 1]. */
static int parse_densities(const char *text, size_t n, double *d, struct tv_error *err)
{
    const char *p = text;
    size_t k = 0;
    for (;;) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !(v > 0 && v <= 1) || (*end && *end != ',') || k == n)
            return tv_error_set(err, TV_EINVAL,
                                "--density: expected 1 or %zu numbers in (0, 1], got '%s'", n,
                                text);
        d[k++] = v;
        if (!*end)
            break;
        p = end + 1;
    }
    if (k != 1 && k != n)
        return tv_error_set(err, TV_EINVAL,
                            "--density: expected 1 or %zu numbers in (0, 1], got '%s'", n, text);
    for (; k < n; k++)
        d[k] = d[0];
    return 0;
}

int cli_cnn_init_head(const struct cli_cnn_spec *s, const uint32_t *sizes, size_t n_sizes,
                      double head_density, uint64_t seed, struct genome *g, struct tv_error *err)
{
    uint32_t all[CLI_CNN_MAX_HEAD + 1];
    if (n_sizes < 1 || n_sizes > CLI_CNN_MAX_HEAD)
        return tv_error_set(err, TV_EINVAL,
                            "--layers: expected 1 to %d sizes after the convolutions",
                            CLI_CNN_MAX_HEAD);
    all[0] = (uint32_t)s->out_size;
    memcpy(all + 1, sizes, n_sizes * sizeof *sizes);
    struct genome_layered_spec spec = {.sizes = all,
                                       .n_layers = n_sizes + 1,
                                       .density = head_density,
                                       .hidden_act = GENOME_ACT_RELU,
                                       .out_act = GENOME_ACT_IDENTITY,
                                       .weight_sd = 1.0};
    struct tv_rng rng;
    tv_rng_init(&rng, seed, 0x6e6574696e6974ULL, 0);
    int rc = genome_build_layered(g, &spec, &rng, err);
    return rc ? rc : genome_scale_fan_in(g, err);
}

static const char init_conv_usage[] =
    "usage: trevo net init --conv SPEC --layers N1,...,NL [--density D[,D...]]\n"
    "                      [--head-density H] [--seed S] [--format text|msgpack]\n"
    "                      -o NET\n\n"
    "A sparse convolutional network: convolutions (relu, max pooling), then a\n"
    "head of plain connections from the last map's pixels through hidden layers\n"
    "(relu) to NL outputs. Each coefficient of a filter present with probability\n"
    "D (N(0, 2/k), k those its output channel has); the head as net init makes it.\n"
    "  --conv          CxHxW,NkK[sS][pP][,poolP],...: the input, then N filters of\n"
    "                  KxK, stride S (1), padding P (0), each maybe followed by a\n"
    "                  PxP max pooling. 1x28x28,32k3p1,pool2,64k3p1,pool2\n"
    "  --layers        the head's hidden sizes and outputs (10 or 128,10)\n"
    "  --density       coefficient density, one for all or one per convolution\n"
    "                  (default 1)\n"
    "  --head-density  density of the head (default 1)\n"
    "  --seed          random seed (default 1)\n"
    "  --format        of NET (default msgpack)\n";

struct init_conv_args {
    const char *conv, *layers, *density, *head_density, *seed, *format, *out;
};

/* --layers "N1,...,NL" through net init's parser (which wants the inputs first). */
static int parse_head(const char *text, uint32_t *sizes, size_t *n, struct tv_error *err)
{
    char buf[512];
    uint32_t all[64];
    size_t n_all = 0;
    if (snprintf(buf, sizeof buf, "1,%s", text) >= (int)sizeof buf)
        return tv_error_set(err, TV_EINVAL, "--layers: '%.40s...' is too long", text);
    int rc = cli_parse_layers(buf, all, &n_all, err);
    if (rc || n_all - 1 > CLI_CNN_MAX_HEAD)
        return tv_error_set(
            err, TV_EINVAL,
            "--layers: expected 1 to %d comma-separated sizes (hidden..., outputs), "
            "got '%s'",
            CLI_CNN_MAX_HEAD, text);
    *n = n_all - 1;
    memcpy(sizes, all + 1, *n * sizeof *sizes);
    return 0;
}

int cli_cmd_net_init_conv(int argc, char **argv)
{
    struct init_conv_args a = {0};
    const struct cli_opt opts[] = {{"--conv", &a.conv},
                                   {"--layers", &a.layers},
                                   {"--density", &a.density},
                                   {"--head-density", &a.head_density},
                                   {"--seed", &a.seed},
                                   {"--format", &a.format},
                                   {"-o", &a.out}};
    const char *pos = NULL;
    int st = cli_parse_args(argc, argv, "net init", opts, sizeof opts / sizeof opts[0], &pos,
                            init_conv_usage);
    if (st >= 0)
        return st;
    struct tv_error err = {0};
    struct cli_cnn_spec spec;
    double density[CLI_CNN_MAX_LAYERS], hd = 1, seed = 1;
    uint32_t sizes[CLI_CNN_MAX_HEAD];
    size_t n_sizes = 0;
    int rc = pos ? cli_arg_error(pos, &err) : 0;
    if (!rc && (!a.conv || !a.layers || !a.out))
        rc = tv_error_set(&err, TV_EINVAL, "--conv, --layers and -o are required");
    if (!rc)
        rc = cli_cnn_spec_parse(a.conv, &spec, &err);
    if (!rc)
        rc = parse_densities(a.density ? a.density : "1", spec.n_layers, density, &err);
    if (!rc && a.head_density)
        rc = cli_parse_real("--head-density", a.head_density, 0, 1, 1, &hd, &err);
    if (!rc && a.seed)
        rc = cli_parse_whole("--seed", a.seed, 0, 9007199254740992.0, &seed, &err);
    if (!rc)
        rc = parse_head(a.layers, sizes, &n_sizes, &err);
    if (rc) {
        fprintf(stderr, "trevo net init: %s\n", err.msg);
        return cli_usage_error(init_conv_usage);
    }
    struct genome head;
    genome_init(&head);
    struct cli_cnn_model m;
    memset(&m, 0, sizeof m);
    genome_init(&m.head);
    rc = cli_cnn_init_head(&spec, sizes, n_sizes, hd, (uint64_t)seed, &head, &err);
    if (!rc)
        rc = cli_cnn_model_init(&m, &spec, density, &head, (uint64_t)seed, &err);
    if (!rc)
        rc = cli_cnn_model_write(&m, a.format ? a.format : "msgpack", a.out, &err);
    if (!rc)
        printf("%s: %zu coefficients of %zu (%.2f %%), head %zu connections\n", a.out,
               cli_cnn_model_coefs(&m), cli_cnn_model_dense_coefs(&m),
               100.0 * (double)cli_cnn_model_coefs(&m) / (double)cli_cnn_model_dense_coefs(&m),
               m.head.n_conns);
    cli_cnn_model_release(&m);
    genome_release(&head);
    return rc ? cli_fail(&err) : 0;
}

/* ---- the model as a genome with channels ------------------------------------------ */

int cli_cnn_model_to_genome(const struct cli_cnn_model *m, struct genome *g, struct tv_error *err)
{
    genome_reset(g);
    const struct nn_conv_shape *s0 = &m->layer[0].s;
    size_t n_in = s0->in_ch * s0->in_h * s0->in_w,
           f = nn_cnn_layer_out_size(&m->layer[m->n_layers - 1]);
    const struct genome *h = &m->head;
    size_t n_head = 0; /* the head's neurons that are not inputs */
    int rc = 0;
    for (size_t i = 0; i < n_in && !rc; i++)
        rc = genome_add_neuron(g, (uint32_t)i, GENOME_INPUT, GENOME_ACT_IDENTITY, 0, 0, err);
    /* head ids f.. become n_in..; hidden depths move into (0.5, 1) */
    for (size_t i = 0; i < h->n_neurons && !rc; i++) {
        struct genome_neuron nn = h->neurons[i];
        if (nn.kind == GENOME_INPUT)
            continue;
        nn.id = (uint32_t)(n_in + nn.id - f);
        if (nn.kind == GENOME_HIDDEN)
            nn.depth = 0.5f + 0.5f * nn.depth;
        n_head++;
        rc = genome_push_neuron(g, &nn, err);
    }
    uint32_t cid = 0, first = (uint32_t)(n_in + n_head), last_first = 0;
    for (size_t c = 0; c < s0->in_ch && !rc; c++) {
        struct genome_channel ch = {0};
        ch.id = cid++;
        ch.kind = GENOME_CHANNEL_INPUT;
        ch.act = GENOME_ACT_IDENTITY;
        ch.pool = 1;
        ch.h = (uint16_t)s0->in_h;
        ch.w = (uint16_t)s0->in_w;
        ch.first = (uint32_t)(c * s0->in_h * s0->in_w);
        rc = genome_add_channel(g, &ch, err);
    }
    for (size_t l = 0; l < m->n_layers && !rc; l++) {
        const struct nn_cnn_layer *d = &m->layer[l];
        size_t oh = nn_conv_out_h(&d->s), ow = nn_conv_out_w(&d->s);
        size_t px = (oh / d->pool) * (ow / d->pool);
        last_first = first;
        for (size_t c = 0; c < d->s.out_ch && !rc; c++) {
            struct genome_channel ch = {0};
            ch.id = cid++;
            ch.kind = GENOME_CHANNEL_HIDDEN;
            ch.act = (uint8_t)d->act;
            ch.pool = (uint8_t)d->pool;
            ch.h = (uint16_t)oh;
            ch.w = (uint16_t)ow;
            ch.bias = d->bias[c];
            ch.depth = 0.5f * (float)(l + 1) / (float)(m->n_layers + 1);
            ch.first = first;
            first += (uint32_t)px;
            rc = genome_add_channel(g, &ch, err);
        }
        /* the filters: the coefficients are sorted by (out, in, ky, kx) */
        uint32_t in0 = cid - (uint32_t)d->s.out_ch - (uint32_t)d->s.in_ch;
        for (size_t a = 0; a < d->n_coefs && !rc;) {
            size_t b = a;
            struct genome_coef gc[NN_CONV_MAX_K * NN_CONV_MAX_K];
            while (b < d->n_coefs && d->coef[b].out == d->coef[a].out &&
                   d->coef[b].in == d->coef[a].in) {
                gc[b - a] = (struct genome_coef){d->coef[b].ky, d->coef[b].kx, d->coef[b].w};
                b++;
            }
            struct genome_filter fl = {0};
            fl.from = in0 + d->coef[a].in;
            fl.to = in0 + (uint32_t)d->s.in_ch + d->coef[a].out;
            fl.kh = (uint8_t)d->s.k_h;
            fl.kw = (uint8_t)d->s.k_w;
            fl.stride = (uint8_t)d->s.stride;
            fl.pad = (uint8_t)d->s.pad;
            rc = genome_add_filter(g, &fl, gc, b - a, err);
            a = b;
        }
    }
    for (size_t k = 0; k < h->n_conns && !rc; k++) {
        struct genome_conn c = h->conns[k];
        c.from = c.from < f ? last_first + c.from : (uint32_t)(n_in + c.from - f);
        c.to = (uint32_t)(n_in + c.to - f);
        rc = genome_push_conn(g, &c, err);
    }
    if (!rc)
        rc = genome_canonicalize(g, err);
    if (!rc)
        rc = genome_validate(g, NULL, err);
    return rc;
}

int cli_cnn_model_write(const struct cli_cnn_model *m, const char *format, const char *path,
                        struct tv_error *err)
{
    struct genome g;
    genome_init(&g);
    int rc = cli_cnn_model_to_genome(m, &g, err);
    if (!rc)
        rc = cli_write_net(&g, format, NULL, path, err);
    genome_release(&g);
    return rc;
}

/* ---- net train of a convolutional network ---------------------------------------- */

static int cnn_report_line(void *ctx, const struct fit_cnn_report *r)
{
    (void)ctx;
    printf("epoch %zu/%zu: loss %.6f", r->epoch, r->epochs, r->loss);
    if (isnan(r->test_acc))
        printf(" test_acc -");
    else
        printf(" test_acc %.4f", r->test_acc);
    printf(" coefficients %zu connections %zu seconds %.3f\n", r->coefs, r->conns, r->seconds);
    fflush(stdout);
    return 0;
}

static int cnn_load(const char *spec, const char *labels, int header, const struct nn_cnn *c,
                    struct data_set *d, struct tv_error *err)
{
    return cli_load_data(spec, labels, header, nn_cnn_n_inputs(c), nn_cnn_n_outputs(c), d, err);
}

int cli_cnn_train_net(struct genome *g, const struct nn_train_opts *o, const struct fit_opts *f,
                      const char *data, const char *labels, const char *test,
                      const char *test_labels, int header, struct tv_error *err)
{
    struct nn_cnn *c = NULL;
    struct data_set tr = {0}, te = {0};
    int rc = nn_cnn_from_genome(g, o, &c, err);
    if (!rc)
        rc = cnn_load(data, labels, header, c, &tr, err);
    if (!rc && test)
        rc = cnn_load(test, test_labels, header, c, &te, err);
    if (!rc)
        rc = fit_cnn_run(c, &tr, test ? &te : NULL, f, cnn_report_line, NULL, err);
    if (!rc)
        rc = nn_cnn_write_genome(c, g, err);
    nn_cnn_free(c);
    data_free(&tr);
    data_free(&te);
    return rc;
}
