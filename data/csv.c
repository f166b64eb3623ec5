/* csv.c -- one sample per line: features, then the class label (0..K-1) in
 * the last column, separated by commas (spaces and tabs around a value are
 * ignored). Blank lines and lines whose first character is '#' are skipped;
 * the first other line is a header (skipped, whatever its columns) as
 * struct data_opts header says: auto when one of its cells is a word (not
 * empty and not a number: "569,30,malignant,benign"), yes always, no never.
 * Every row must have as many columns as the first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

#define CSV_MAX_FIELD 63
#define CSV_MAX_LABEL 65535

struct csv_ctx {
    const char *file;
    size_t line;       /* 1-based */
    size_t n_cols;     /* 0 until the first row */
    size_t first_line; /* of the first row */
    float *f32;
    uint16_t *labels;
    size_t cap_f, cap_l, n_rows;
    size_t max_label;
};

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Field text [b, e) as a finite number: 1, or 0 if it is none. */
static int parse_number(const char *b, const char *e, double *v)
{
    while (b < e && is_blank(*b))
        b++;
    while (e > b && is_blank(e[-1]))
        e--;
    char buf[CSV_MAX_FIELD + 1];
    size_t n = (size_t)(e - b);
    if (!n || n > CSV_MAX_FIELD)
        return 0;
    memcpy(buf, b, n);
    buf[n] = '\0';
    char *end;
    *v = strtod(buf, &end);
    return end == buf + n && isfinite(*v) && fabs(*v) <= 3.0e38;
}

/* The end of the field starting at b on the line [b, eol). */
static const char *field_end(const char *b, const char *eol)
{
    const char *c = memchr(b, ',', (size_t)(eol - b));
    return c ? c : eol;
}

static size_t count_fields(const char *b, const char *eol)
{
    size_t n = 1;
    for (const char *p = b; p < eol; p++)
        n += *p == ',';
    return n;
}

/* 1 if the field [b, e) is a word: not empty, and not what strtod reads
 * whole (nan and inf, which no row takes, are numbers here: such a row is
 * refused, not skipped; so is a number too long to read). */
static int is_word(const char *b, const char *e)
{
    while (b < e && is_blank(*b))
        b++;
    while (e > b && is_blank(e[-1]))
        e--;
    size_t n = (size_t)(e - b);
    if (!n)
        return 0;
    if (n > CSV_MAX_FIELD) {
        for (const char *p = b; p < e; p++)
            if (!memchr("0123456789+-.eE", *p, 15))
                return 1;
        return 0;
    }
    char buf[CSV_MAX_FIELD + 1], *end;
    memcpy(buf, b, n);
    buf[n] = '\0';
    (void)strtod(buf, &end);
    return end != buf + n;
}

/* 1 if the first line [b, eol) is a header under the rule header. */
static int is_header(const char *b, const char *eol, int header)
{
    if (header != DATA_HEADER_AUTO)
        return header == DATA_HEADER_YES;
    for (const char *p = b;; p++) {
        const char *e = field_end(p, eol);
        if (is_word(p, e))
            return 1;
        if (e == eol)
            return 0;
        p = e;
    }
}

/* The label v of the row on line x->line: a whole number below the limit. */
static int check_label(const struct csv_ctx *x, double v, const struct data_opts *o,
                       struct tv_error *err)
{
    size_t limit = o->n_classes ? o->n_classes - 1 : CSV_MAX_LABEL;
    if (v != floor(v))
        return tv_error_set(err, TV_EINVAL,
                            "%s:%zu: label %g is not a whole number (the last column is the "
                            "class, 0..K-1)",
                            x->file, x->line, v);
    if (v < 0 || v > (double)limit)
        return tv_error_set(
            err, TV_EINVAL, "%s:%zu: label %g out of range (a class number 0..%zu%s%s)", x->file,
            x->line, v, limit, o->classes_from ? ": " : "", o->classes_from ? o->classes_from : "");
    return 0;
}

/* One row [b, eol): its features appended to ctx->f32, its label to
 * ctx->labels. */
static int parse_row(struct csv_ctx *x, const char *b, const char *eol, const struct data_opts *o,
                     struct tv_error *err)
{
    size_t n = count_fields(b, eol);
    if (!x->n_cols) {
        if (n < 2)
            return tv_error_set(err, TV_EINVAL,
                                "%s:%zu: 1 column: a row needs features and a label (the last "
                                "column)",
                                x->file, x->line);
        x->n_cols = n;
        x->first_line = x->line;
    } else if (n != x->n_cols) {
        return tv_error_set(err, TV_EINVAL, "%s:%zu: %zu columns, expected %zu (as on line %zu)",
                            x->file, x->line, n, x->n_cols, x->first_line);
    }
    size_t nf = n - 1;
    if (tv_grow((void **)&x->f32, &x->cap_f, (x->n_rows + 1) * nf, sizeof *x->f32, err) ||
        tv_grow((void **)&x->labels, &x->cap_l, x->n_rows + 1, sizeof *x->labels, err))
        return tv_error_set(err, TV_ENOMEM, "%s:%zu: out of memory", x->file, x->line);
    float *row = x->f32 + x->n_rows * nf;
    const char *p = b;
    for (size_t c = 0; c < n; c++) {
        const char *e = field_end(p, eol);
        double v;
        if (!parse_number(p, e, &v)) {
            int len = (int)(e - p) > 40 ? 40 : (int)(e - p);
            return tv_error_set(err, TV_EINVAL, "%s:%zu: column %zu: '%.*s' is not a number",
                                x->file, x->line, c + 1, len, p);
        }
        if (c < nf) {
            row[c] = (float)v;
        } else {
            if (check_label(x, v, o, err))
                return err->code;
            x->labels[x->n_rows] = (uint16_t)v;
            if ((size_t)v > x->max_label)
                x->max_label = (size_t)v;
        }
        p = e + 1;
    }
    x->n_rows++;
    return 0;
}

int data_parse_csv(const char *text, size_t len, const char *name, size_t n_classes,
                   struct data_set *out, struct tv_error *err)
{
    struct data_opts o = {.n_classes = n_classes};
    return data_parse_csv_opts(text, len, name, &o, out, err);
}

int data_parse_csv_opts(const char *text, size_t len, const char *name, const struct data_opts *o,
                        struct data_set *out, struct tv_error *err)
{
    static const struct data_opts defaults = {0};
    if (!o)
        o = &defaults;
    memset(out, 0, sizeof *out);
    struct csv_ctx x = {.file = name};
    int rc = 0, seen_line = 0;
    for (const char *p = text, *end = text + len; p < end && !rc;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        x.line++;
        const char *s = p;
        while (s < eol && is_blank(*s))
            s++;
        if (s < eol && *s != '#') {
            if (!seen_line++ && is_header(s, eol, o->header)) {
                /* a header: skipped */
            } else {
                rc = parse_row(&x, s, eol, o, err);
            }
        }
        p = eol + 1;
    }
    if (!rc && !x.n_rows)
        rc = tv_error_set(err, TV_EINVAL, "%s: no data rows", name);
    if (!rc)
        rc = data_mem_new(out, name, err);
    if (rc) {
        free(x.f32);
        free(x.labels);
        return rc;
    }
    struct data_mem *m = out->mem;
    m->f32 = x.f32;
    m->labels = x.labels;
    out->n_rows = x.n_rows;
    out->n_features = x.n_cols - 1;
    out->n_classes = o->n_classes ? o->n_classes : x.max_label + 1;
    out->f32 = x.f32;
    out->labels = x.labels;
    return 0;
}
