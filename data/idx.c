/* idx.c -- LeCun's IDX format: a big-endian header (magic 0x000008NN, NN the
 * number of dimensions, then each dimension as a u32) and the bytes. Images:
 * 0x00000803 (or any 2 or more dimensions: rows, then the features); labels:
 * 0x00000801. The pixels are read straight into the set's one buffer of
 * n_rows * n_features bytes. */
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

#define IDX_MAX_DIMS 8

struct idx_header {
    size_t n_dims;
    size_t dims[IDX_MAX_DIMS];
    size_t per_row; /* the product of the dimensions after the first */
};

/* Reads exactly n bytes, or says where the file ends: "truncated at byte
 * offset N: <what> needs M bytes". */
static int read_exact(struct data_src *s, void *buf, size_t n, const char *what,
                      struct tv_error *err)
{
    size_t start = s->pos, got;
    int rc = data_src_read(s, buf, n, &got, err);
    if (rc)
        return rc;
    if (got < n)
        return tv_error_set(err, TV_EINVAL,
                            "%s: truncated at byte offset %zu: %s needs %zu bytes, %zu left",
                            s->name, start + got, what, n, got);
    return 0;
}

static size_t be32(const uint8_t *p)
{
    return (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | (size_t)p[3];
}

/* The header of s, whose magic must be 0x00000800 + n_dims (labels: n_dims
 * 1; images: min_dims or more). */
static int read_header(struct data_src *s, size_t min_dims, size_t max_dims, const char *kind,
                       struct idx_header *h, struct tv_error *err)
{
    uint8_t b[4];
    int rc = read_exact(s, b, 4, "the magic number", err);
    if (rc)
        return rc;
    size_t magic = be32(b);
    if (b[0] || b[1] || b[2] != 0x08 || b[3] < min_dims || b[3] > max_dims)
        return tv_error_set(err, TV_EINVAL,
                            "%s: byte offset 0: wrong magic 0x%08zx, expected 0x%08zx (IDX %s of "
                            "unsigned bytes)",
                            s->name, magic, (size_t)0x800 + min_dims, kind);
    h->n_dims = b[3];
    h->per_row = 1;
    for (size_t i = 0; i < h->n_dims; i++) {
        if ((rc = read_exact(s, b, 4, "the header's dimensions", err)))
            return rc;
        h->dims[i] = be32(b);
        if (i && h->dims[i] && h->per_row > SIZE_MAX / 2 / h->dims[i])
            return tv_error_set(err, TV_EINVAL, "%s: byte offset %zu: dimensions too large",
                                s->name, s->pos - 4);
        if (i)
            h->per_row *= h->dims[i];
    }
    return 0;
}

/* Nothing may follow the last row. */
static int check_end(struct data_src *s, const char *what, struct tv_error *err)
{
    uint8_t extra;
    size_t got;
    int rc = data_src_read(s, &extra, 1, &got, err);
    if (rc)
        return rc;
    if (got)
        return tv_error_set(err, TV_EINVAL, "%s: byte offset %zu: data after the last %s", s->name,
                            s->pos - 1, what);
    return 0;
}

/* The labels: n bytes, each below n_classes when given. */
static int read_labels(struct data_src *s, size_t n_rows, size_t n_classes, uint16_t *labels,
                       size_t *max_label, struct tv_error *err)
{
    uint8_t buf[4096];
    size_t base = s->pos;
    *max_label = 0;
    for (size_t r = 0; r < n_rows;) {
        size_t n = n_rows - r < sizeof buf ? n_rows - r : sizeof buf;
        int rc = read_exact(s, buf, n, "the labels", err);
        if (rc)
            return rc;
        for (size_t i = 0; i < n; i++, r++) {
            if (n_classes && buf[i] >= n_classes)
                return tv_error_set(err, TV_EINVAL,
                                    "%s: byte offset %zu: label %u out of range 0..%zu", s->name,
                                    base + r, buf[i], n_classes - 1);
            labels[r] = buf[i];
            if (buf[i] > *max_label)
                *max_label = buf[i];
        }
    }
    return 0;
}

int data_idx_parse(struct data_src *img, struct data_src *lab, size_t n_classes,
                   struct data_set *out, struct tv_error *err)
{
    struct idx_header hi, hl;
    int rc = read_header(img, 3, IDX_MAX_DIMS, "images", &hi, err);
    if (rc)
        return rc;
    if ((rc = read_header(lab, 1, 1, "labels", &hl, err)))
        return rc;
    size_t n_rows = hi.dims[0];
    if (hl.dims[0] != n_rows)
        return tv_error_set(err, TV_EINVAL, "%s has %zu images, %s %zu labels: counts disagree",
                            img->name, n_rows, lab->name, hl.dims[0]);
    if (!n_rows || !hi.per_row)
        return tv_error_set(err, TV_EINVAL, "%s: byte offset 4: no %s", img->name,
                            n_rows ? "pixels" : "images");
    if (hi.per_row > SIZE_MAX / n_rows || n_rows > UINT32_MAX)
        return tv_error_set(err, TV_EINVAL, "%s: byte offset 4: dimensions too large", img->name);
    size_t bytes = n_rows * hi.per_row;
    /* A buffer cannot hold what its header claims: truncated, before any
     * allocation. */
    if (bytes > data_src_left(img))
        return tv_error_set(err, TV_EINVAL,
                            "%s: truncated at byte offset %zu: %zu images of %zu bytes need %zu "
                            "bytes, %zu left",
                            img->name, img->pos + data_src_left(img), n_rows, hi.per_row, bytes,
                            data_src_left(img));
    if (n_rows > data_src_left(lab))
        return tv_error_set(
            err, TV_EINVAL, "%s: truncated at byte offset %zu: %zu labels need %zu bytes, %zu left",
            lab->name, lab->pos + data_src_left(lab), n_rows, n_rows, data_src_left(lab));
    if ((rc = data_mem_new(out, img->name, err)))
        return rc;
    struct data_mem *m = out->mem;
    m->u8 = malloc(bytes);
    m->labels = malloc(n_rows * sizeof *m->labels);
    size_t max_label = 0;
    if (!m->u8 || !m->labels)
        rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory (%zu images of %zu bytes)", img->name,
                          n_rows, hi.per_row);
    if (!rc)
        rc = read_exact(img, m->u8, bytes, "the pixels", err);
    if (!rc)
        rc = check_end(img, "image", err);
    if (!rc)
        rc = read_labels(lab, n_rows, n_classes, m->labels, &max_label, err);
    if (!rc)
        rc = check_end(lab, "label", err);
    if (rc) {
        data_free(out);
        return rc;
    }
    out->n_rows = n_rows;
    out->n_features = hi.per_row;
    out->n_classes = n_classes ? n_classes : max_label + 1;
    out->pixels = 1;
    out->u8 = m->u8;
    out->labels = m->labels;
    return 0;
}
