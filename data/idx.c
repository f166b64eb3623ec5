/* idx.c -- LeCun's IDX format: a big-endian header (magic 0x000008NN, NN the
 * number of dimensions, then each dimension as a u32) and the bytes. Images:
 * 0x00000803 (or any 2 or more dimensions: rows, then the features); labels:
 * 0x00000801. The pixels are read into the set's one buffer of n_rows *
 * n_features bytes. The header's claim (its own bytes and the product of the
 * dimensions) is checked against a plain file's size before anything is
 * allocated; a gzipped file's size is known only at its end, so its buffer
 * grows as the bytes arrive and never holds more than came. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

#define IDX_MAX_DIMS 8
#define IDX_ELEM_SIZE 1             /* magic 0x08: unsigned bytes, the one type read */
#define IDX_CHUNK ((size_t)1 << 20) /* a gzipped file's first buffer, doubled as it fills */

struct idx_header {
    size_t n_dims;
    size_t dims[IDX_MAX_DIMS];
    size_t per_row; /* the product of the dimensions after the first */
    size_t claim;   /* the file's size the header claims: itself and the data */
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

/* The file ends at byte offset end, before the size its header claims. */
static int truncated(const struct data_src *s, size_t end, size_t claim, struct tv_error *err)
{
    return tv_error_set(err, TV_EINVAL,
                        "%s: truncated at byte offset %zu: the header claims %zu bytes", s->name,
                        end, claim);
}

static size_t be32(const uint8_t *p)
{
    return (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | (size_t)p[3];
}

/* h->claim from h->dims: the header (4 bytes of magic, 4 per dimension), then
 * the product of the dimensions, IDX_ELEM_SIZE bytes each. A product past
 * what a size_t counts is refused, naming the dimensions; a zero dimension
 * makes it 0 (refused later: no images, no pixels). */
static int header_claim(const struct data_src *s, struct idx_header *h, struct tv_error *err)
{
    size_t n = IDX_ELEM_SIZE, head = 4 + 4 * h->n_dims;
    int over = 0, zero = 0;
    for (size_t i = 0; i < h->n_dims; i++) {
        zero |= !h->dims[i];
        if (h->dims[i] && n > SIZE_MAX / h->dims[i])
            over = 1;
        else
            n *= h->dims[i];
    }
    if (zero) {
        h->claim = head;
        return 0;
    }
    if (over || n > SIZE_MAX - head) {
        char dims[IDX_MAX_DIMS * 14] = "";
        for (size_t i = 0, k = 0; i < h->n_dims; i++)
            k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%zu", i ? " x " : "", h->dims[i]);
        return tv_error_set(err, TV_EINVAL,
                            "%s: byte offset 4: the header's dimensions %s overflow: the file "
                            "would pass %zu bytes",
                            s->name, dims, SIZE_MAX);
    }
    h->claim = head + n;
    return 0;
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
    for (size_t i = 0; i < h->n_dims; i++) {
        if ((rc = read_exact(s, b, 4, "the header's dimensions", err)))
            return rc;
        h->dims[i] = be32(b);
    }
    if ((rc = header_claim(s, h, err)))
        return rc;
    h->per_row = 1;
    for (size_t i = 1; i < h->n_dims; i++)
        h->per_row *= h->dims[i]; /* no overflow: the whole product fits */
    return 0;
}

/* A file whose size is known (a plain file, a buffer) and is below its
 * header's claim is refused before anything is allocated. */
static int check_size(const struct data_src *s, const struct idx_header *h, struct tv_error *err)
{
    size_t left = data_src_left(s);
    if (left != SIZE_MAX && left < h->claim - s->pos)
        return truncated(s, s->pos + left, h->claim, err);
    return 0;
}

/* The pixels after the header h of s, in a new buffer *out: all at once when
 * the size is known (check_size passed), else grown geometrically as the
 * bytes arrive, so a short gzipped file costs what it holds. */
static int read_pixels(struct data_src *s, const struct idx_header *h, uint8_t **out,
                       struct tv_error *err)
{
    size_t bytes = h->claim - s->pos, n = 0, cap = 0;
    size_t first = data_src_left(s) != SIZE_MAX || bytes < IDX_CHUNK ? bytes : IDX_CHUNK;
    uint8_t *buf = NULL;
    int rc = 0;
    while (!rc && n < bytes) {
        size_t next = !cap ? first : cap > bytes / 2 ? bytes : 2 * cap;
        uint8_t *q = realloc(buf, next);
        if (!q) {
            rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory (%zu images of %zu bytes)",
                              s->name, h->dims[0], h->per_row);
            break;
        }
        buf = q;
        cap = next;
        size_t got;
        rc = data_src_read(s, buf + n, cap - n, &got, err);
        n += got;
        if (!rc && n < cap)
            rc = truncated(s, s->pos, h->claim, err);
    }
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
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

/* The labels: n bytes (the header h claims them), each below n_classes when
 * given. */
static int read_labels(struct data_src *s, const struct idx_header *h, size_t n_classes,
                       uint16_t *labels, size_t *max_label, struct tv_error *err)
{
    uint8_t buf[4096];
    size_t base = s->pos, n_rows = h->dims[0];
    *max_label = 0;
    for (size_t r = 0; r < n_rows;) {
        size_t n = n_rows - r < sizeof buf ? n_rows - r : sizeof buf, got;
        int rc = data_src_read(s, buf, n, &got, err);
        if (rc)
            return rc;
        if (got < n)
            return truncated(s, s->pos, h->claim, err);
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
    if ((rc = check_size(img, &hi, err)) || (rc = check_size(lab, &hl, err)))
        return rc;
    if ((rc = data_mem_new(out, img->name, err)))
        return rc;
    struct data_mem *m = out->mem;
    size_t max_label = 0;
    rc = read_pixels(img, &hi, &m->u8, err);
    if (!rc)
        rc = check_end(img, "image", err);
    /* n_rows labels cost 2 bytes each: at most twice the pixels just read. */
    if (!rc && !(m->labels = malloc(n_rows * sizeof *m->labels)))
        rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory (%zu labels)", lab->name, n_rows);
    if (!rc)
        rc = read_labels(lab, &hl, n_classes, m->labels, &max_label, err);
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
