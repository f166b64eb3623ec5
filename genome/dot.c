/* dot.c -- a network as a Graphviz graph (genome_write_dot in genome.h).
 *
 * The drawing follows genome.h's semantics: inputs share the first rank,
 * outputs the last, hidden neurons sit between, neurons of equal depth share
 * a rank. Connections are told apart by genome_conn_class(): local solid,
 * skip dashed, recurrent in another colour with constraint=false so that
 * they do not bend the layering. Each edge is labelled with its weight and
 * drawn with a pen width that grows with |weight|; each neuron is labelled
 * with its id, activation, (if not 0) bias and, unless it is a rate neuron,
 * its model and every parameter ("threshold=1"). Every connection is exactly
 * one line "    nFROM -> nTO [...];", so the edges can be counted with grep.
 * A channel is one node "cID" (a box with its map, pooling and activation),
 * a filter one edge "cFROM -> cTO" labelled with its coefficient count and
 * kernel, and the connections from a hidden channel's pixels to a neuron one
 * dotted edge "cID -> nTO" labelled with their count (so the "nFROM -> nTO"
 * lines are the other connections). */
#include "genome.h"

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
    const struct genome_model_info *m = &genome_models[n->model];
    if (!rc && n->model != GENOME_MODEL_RATE)
        rc = buf_printf(b, "\\n%s", m->name);
    for (size_t k = 0; k < m->n_params && !rc; k++)
        rc = buf_printf(b, "\\n%s=%.3g", m->params[k].name, (double)n->param[k]);
    if (!rc)
        rc = buf_printf(b, "\", %s];\n", style[n->kind]);
    return rc;
}

/* Channels as one node each ("cID"), a filter as one edge labelled with its
 * coefficients, the connections from a hidden channel's pixels to a neuron
 * as one dotted edge labelled with their count. */
static int write_channels(const struct genome *g, struct tv_buf *b)
{
    int rc = 0;
    size_t *count = calloc(g->n_neurons + 1, sizeof *count);
    if (!count)
        return TV_ENOMEM;
    for (size_t i = 0; i < g->n_channels && !rc; i++) {
        const struct genome_channel *c = &g->channels[i];
        size_t ph, pw, n_px = genome_channel_pooled(c, &ph, &pw);
        rc = buf_printf(b, "    c%u [label=\"channel %u\\n%ux%u%s\\n%s", c->id, c->id, c->h, c->w,
                        c->kind == GENOME_CHANNEL_INPUT ? " in" : "", genome_act_name(c->act));
        if (!rc && c->pool > 1)
            rc = buf_printf(b, "\\npool %u: %zux%zu", c->pool, ph, pw);
        if (!rc && c->bias != 0.0f)
            rc = buf_printf(b, "\\nb=%.3g", (double)c->bias);
        if (!rc)
            rc = buf_printf(b, "\", shape=box3d];\n");
        if (c->kind == GENOME_CHANNEL_INPUT)
            continue; /* its pixels are input neurons, drawn as such */
        for (size_t k = 0; k < g->n_conns; k++)
            if (g->conns[k].from >= c->first && g->conns[k].from - c->first < n_px)
                count[genome_find_neuron(g, g->conns[k].to)]++;
        for (size_t j = 0; j < g->n_neurons && !rc; j++) {
            if (count[j])
                rc = buf_printf(b, "    c%u -> n%u [label=\"%zu\", style=dotted];\n", c->id,
                                g->neurons[j].id, count[j]);
            count[j] = 0;
        }
    }
    free(count);
    for (size_t i = 0; i < g->n_filters && !rc; i++) {
        const struct genome_filter *f = &g->filters[i];
        rc = buf_printf(b, "    c%u -> c%u [label=\"%u of %ux%u\", penwidth=2];\n", f->from, f->to,
                        f->n_coefs, f->kh, f->kw);
    }
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
        if (genome_find_neuron(g, c->from) < 0)
            continue; /* from a pixel: drawn with the channels */
        float df = g->neurons[genome_find_neuron(g, c->from)].depth;
        float dt = g->neurons[genome_find_neuron(g, c->to)].depth;
        int cls = genome_conn_class_of(layers, n_layers, df, dt);
        double pen = 0.6 + (w_max > 0 ? 2.4 * fabs((double)c->weight) / w_max : 0);
        const char *kind;
        if (cls == GENOME_CONN_RECURRENT)
            kind = ", color=\"" DOT_COLOR_RECURRENT "\", fontcolor=\"" DOT_COLOR_RECURRENT
                   "\", constraint=false";
        else if (cls == GENOME_CONN_LOCAL)
            kind = ", color=\"" DOT_COLOR_FORWARD "\"";
        else
            kind = ", color=\"" DOT_COLOR_FORWARD "\", style=dashed";
        rc = buf_printf(b, "    n%u -> n%u [label=\"%.3g\", penwidth=%.2f%s];\n", c->from, c->to,
                        (double)c->weight, pen, kind);
    }
    if (!rc && g->n_channels)
        rc = write_channels(g, b);
    if (!rc)
        rc = buf_printf(b, "}\n");
    return rc;
}

int genome_write_dot(const struct genome *g, const char *title, struct tv_buf *out,
                     struct tv_error *err)
{
    int rc = genome_validate(g, NULL, err);
    if (rc) {
        tv_error_prefix(err, "dot");
        return rc;
    }
    size_t n = g->n_neurons, n_layers = 0, n_hidden = 0;
    float *layers = NULL;
    struct hidden *hidden = malloc(n * sizeof *hidden);
    if (!hidden || genome_layers(g, &layers, &n_layers, NULL)) {
        free(hidden);
        return tv_error_set(err, TV_ENOMEM, "dot: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        if (g->neurons[i].kind == GENOME_HIDDEN)
            hidden[n_hidden++] =
                (struct hidden){g->neurons[i].depth, g->neurons[i].id, &g->neurons[i]};
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
