/* dot.c -- a network as a Graphviz graph (dot.h). */
#include "dot.h"
#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define DOT_COLOR_FORWARD "#333333"
#define DOT_COLOR_RECURRENT "#c0392b"

/* Appends the formatted text to b. 0 or TV_ENOMEM (b's text unchanged). */
static int buf_printf(struct tv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int buf_printf(struct tv_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    int rc = n < 0 ? TV_ENOMEM : tv_buf_reserve(b, (size_t)n + 1);
    if (!rc) {
        vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
    return rc;
}

/* Appends s as the inside of a dot string: quotes and backslashes escaped,
 * control characters (a newline in a run name, say) as spaces. */
static int buf_escaped(struct tv_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int rc = c == '"' || c == '\\' ? tv_buf_append(b, "\\", 1) : 0;
        if (!rc)
            rc = tv_buf_append(b, c < 0x20 || c == 0x7f ? " " : s, 1);
        if (rc)
            return rc;
    }
    return 0;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Hidden neurons in (depth, id) order: the ranks between inputs and outputs. */
struct hidden {
    float depth;
    uint32_t id;
    const struct genome_neuron *n;
};
static int cmp_hidden(const void *a, const void *b)
{
    const struct hidden *x = a, *y = b;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Index of depth in the sorted distinct depths (it is always there). */
static size_t layer_of(const float *layers, size_t n, float depth)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (layers[mid] < depth)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int write_neuron(struct tv_buf *b, const struct genome_neuron *n)
{
    static const char *const style[] = {
        [GENOME_INPUT] = "shape=box, style=filled, fillcolor=\"#dbe9f6\"",
        [GENOME_OUTPUT] = "shape=doublecircle, style=filled, fillcolor=\"#d5efd5\"",
        [GENOME_HIDDEN] = "shape=ellipse",
    };
    int rc = buf_printf(b, "    n%u [label=\"%u\\n%s", n->id, n->id, genome_act_name(n->act));
    if (!rc && n->bias != 0.0f)
        rc = buf_printf(b, "\\nb=%.3g", (double)n->bias);
    if (!rc)
        rc = buf_printf(b, "\", %s];\n", style[n->kind]);
    return rc;
}

/* The graph itself; g is valid, layers its sorted distinct depths. */
static int write_graph(const struct genome *g, const char *title, const float *layers,
                       size_t n_layers, const struct hidden *hidden, size_t n_hidden,
                       struct tv_buf *b)
{
    int rc = buf_printf(b, "digraph trevo {\n"
                           "    graph [rankdir=LR, ranksep=1.0, nodesep=0.3, labelloc=t, "
                           "fontname=\"Helvetica\", fontsize=12, label=\"");
    if (!rc && title && *title) {
        rc = buf_escaped(b, title);
        if (!rc)
            rc = buf_printf(b, "\\n");
    }
    if (!rc)
        rc = buf_printf(b, "solid: local   dashed: skip   red: recurrent (previous step)   "
                           "pen width: |weight|\"];\n"
                           "    node [fontname=\"Helvetica\", fontsize=10, margin=0.05];\n"
                           "    edge [fontname=\"Helvetica\", fontsize=8, arrowsize=0.6];\n");
    /* Inputs first, outputs last: rank=source / rank=sink are rank=same that
     * also keep every other neuron off those ranks. */
    static const struct {
        int kind;
        const char *rank;
    } ends[] = {{GENOME_INPUT, "source"}, {GENOME_OUTPUT, "sink"}};
    for (size_t e = 0; e < 2 && !rc; e++) {
        rc = buf_printf(b, "    { rank=%s;\n", ends[e].rank);
        for (size_t i = 0; i < g->n_neurons && !rc; i++)
            if (g->neurons[i].kind == ends[e].kind)
                rc = write_neuron(b, &g->neurons[i]);
        if (!rc)
            rc = buf_printf(b, "    }\n");
    }
    /* Hidden neurons: one rank=same group per depth, in depth order. */
    for (size_t i = 0; i < n_hidden && !rc; i++) {
        const struct genome_neuron *n = hidden[i].n;
        if (i == 0 || hidden[i - 1].depth != n->depth)
            rc = buf_printf(b, "    { rank=same; /* depth %.9g */\n", (double)n->depth);
        if (!rc)
            rc = write_neuron(b, n);
        if (!rc && (i + 1 == n_hidden || hidden[i + 1].depth != n->depth))
            rc = buf_printf(b, "    }\n");
    }
    double w_max = 0;
    for (size_t i = 0; i < g->n_conns; i++)
        w_max = fmax(w_max, fabs((double)g->conns[i].weight));
    for (size_t i = 0; i < g->n_conns && !rc; i++) {
        const struct genome_conn *c = &g->conns[i];
        float df = g->neurons[genome_find_neuron(g, c->from)].depth;
        float dt = g->neurons[genome_find_neuron(g, c->to)].depth;
        double pen = 0.6 + (w_max > 0 ? 2.4 * fabs((double)c->weight) / w_max : 0);
        const char *kind;
        if (df >= dt)
            kind = ", color=\"" DOT_COLOR_RECURRENT "\", fontcolor=\"" DOT_COLOR_RECURRENT
                   "\", constraint=false";
        else if (layer_of(layers, n_layers, dt) == layer_of(layers, n_layers, df) + 1)
            kind = ", color=\"" DOT_COLOR_FORWARD "\"";
        else
            kind = ", color=\"" DOT_COLOR_FORWARD "\", style=dashed";
        rc = buf_printf(b, "    n%u -> n%u [label=\"%.3g\", penwidth=%.2f%s];\n", c->from, c->to,
                        (double)c->weight, pen, kind);
    }
    if (!rc)
        rc = buf_printf(b, "}\n");
    return rc;
}

int master_write_dot(const struct genome *g, const char *title, struct tv_buf *out,
                     struct tv_error *err)
{
    int rc = genome_validate(g, NULL, err);
    if (rc) {
        tv_error_prefix(err, "dot");
        return rc;
    }
    size_t n = g->n_neurons, n_layers = 0, n_hidden = 0;
    float *layers = malloc(n * sizeof *layers);
    struct hidden *hidden = malloc(n * sizeof *hidden);
    if (!layers || !hidden) {
        free(layers);
        free(hidden);
        return tv_error_set(err, TV_ENOMEM, "dot: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        layers[i] = g->neurons[i].depth;
        if (g->neurons[i].kind == GENOME_HIDDEN)
            hidden[n_hidden++] =
                (struct hidden){g->neurons[i].depth, g->neurons[i].id, &g->neurons[i]};
    }
    qsort(layers, n, sizeof *layers, cmp_float);
    for (size_t i = 0; i < n; i++)
        if (n_layers == 0 || layers[i] != layers[n_layers - 1])
            layers[n_layers++] = layers[i];
    if (n_hidden > 1)
        qsort(hidden, n_hidden, sizeof *hidden, cmp_hidden);
    size_t start = out->len;
    rc = write_graph(g, title, layers, n_layers, hidden, n_hidden, out);
    free(layers);
    free(hidden);
    if (rc) {
        out->len = start;
        return tv_error_set(err, TV_ENOMEM, "dot: out of memory");
    }
    return 0;
}

int master_write_dot_file(const struct genome *g, const char *title, const char *path,
                          struct tv_error *err)
{
    struct tv_buf buf = {0};
    int rc = master_write_dot(g, title, &buf, err);
    if (!rc)
        rc = master_write_file(path, buf.data, buf.len, err);
    tv_buf_free(&buf);
    return rc;
}
