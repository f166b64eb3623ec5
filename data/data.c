/* data.c -- data_load's choice of format: "fashion-mnist:" names, else the
 * IDX magic in the first bytes, else CSV (csv.c, idx.c). The byte source is
 * source.c, a set's storage and rows set.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data_impl.h"

/* The whole (uncompressed) content of s, NUL-terminated, in *text. */
static int read_all(struct data_src *s, char **text, size_t *len, struct tv_error *err)
{
    char *buf = NULL;
    size_t cap = 0, n = 0;
    int rc = 0;
    for (;;) {
        if ((rc = tv_grow((void **)&buf, &cap, n + 65537, 1, err)))
            break;
        size_t got;
        if ((rc = data_src_read(s, buf + n, cap - n - 1, &got, err)) || !got)
            break;
        n += got;
    }
    if (rc) {
        free(buf);
        return rc == TV_ENOMEM ? tv_error_set(err, rc, "%s: out of memory", s->name) : rc;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return 0;
}

/* "fashion-mnist:train" -> its two files; 0 if spec is no such name, -1 if
 * it is one of an unknown part. */
static int fashion_files(const char *spec, char *img, char *lab, size_t size)
{
    static const char prefix[] = "fashion-mnist:";
    if (strncmp(spec, prefix, sizeof prefix - 1))
        return 0;
    const char *part = spec + sizeof prefix - 1;
    const char *stem = !strcmp(part, "train") ? "train" : !strcmp(part, "test") ? "t10k" : NULL;
    if (!stem)
        return -1;
    snprintf(img, size, "%s/%s-images-idx3-ubyte.gz", DATA_FASHION_MNIST_DIR, stem);
    snprintf(lab, size, "%s/%s-labels-idx1-ubyte.gz", DATA_FASHION_MNIST_DIR, stem);
    return 1;
}

/* An IDX images file and its labels file, by path. */
static int load_idx(const char *images, const char *labels, size_t n_classes, struct data_set *out,
                    struct tv_error *err)
{
    struct data_src img, lab;
    int rc = data_src_open(&img, images, err);
    if (rc)
        return rc;
    rc = data_src_open(&lab, labels, err);
    if (!rc) {
        rc = data_idx_parse(&img, &lab, n_classes, out, err);
        data_src_close(&lab);
    }
    data_src_close(&img);
    return rc;
}

int data_header_parse(const char *s, int *header)
{
    static const char *const names[] = {"auto", "yes", "no"};
    for (int k = 0; k < 3; k++)
        if (!strcmp(s, names[k]))
            return *header = k, 0;
    return -1;
}

int data_load_opts(const char *spec, const char *labels, const struct data_opts *o,
                   struct data_set *out, struct tv_error *err)
{
    static const struct data_opts defaults = {0};
    if (!o)
        o = &defaults;
    size_t n_classes = o->n_classes;
    memset(out, 0, sizeof *out);
    char img[PATH_MAX], lab[PATH_MAX];
    int fm = fashion_files(spec, img, lab, sizeof img);
    if (fm < 0)
        return tv_error_set(err, TV_EINVAL,
                            "%s: unknown data set (fashion-mnist:train or fashion-mnist:test)",
                            spec);
    if (fm) {
        if (labels)
            return tv_error_set(err, TV_EINVAL, "%s: names its labels itself (no labels file)",
                                spec);
        if (n_classes && n_classes != 10)
            return tv_error_set(err, TV_EINVAL, "%s: 10 classes, not %zu", spec, n_classes);
        if (access(img, R_OK) || access(lab, R_OK))
            return tv_error_set(err, TV_EIO,
                                "%s: %s: %s (install Debian's dataset-fashion-mnist: make deps)",
                                spec, access(img, R_OK) ? img : lab, strerror(errno));
        return load_idx(img, lab, 10, out, err);
    }
    /* IDX or CSV: the first bytes say. */
    struct data_src s;
    int rc = data_src_open(&s, spec, err);
    if (rc)
        return rc;
    uint8_t magic[3];
    size_t got;
    rc = data_src_read(&s, magic, sizeof magic, &got, err);
    data_src_close(&s);
    if (rc)
        return rc;
    if (got == 3 && magic[0] == 0 && magic[1] == 0 && magic[2] == 0x08) {
        if (!labels)
            return tv_error_set(err, TV_EINVAL, "%s: an IDX images file needs its labels file",
                                spec);
        return load_idx(spec, labels, n_classes, out, err);
    }
    if (labels)
        return tv_error_set(err, TV_EINVAL,
                            "%s: a labels file (%s) goes with IDX images, and this is no IDX file "
                            "(CSV: the label is the last column)",
                            spec, labels);
    if ((rc = data_src_open(&s, spec, err)))
        return rc;
    char *text = NULL;
    size_t len = 0;
    rc = read_all(&s, &text, &len, err);
    data_src_close(&s);
    if (rc)
        return rc;
    rc = data_parse_csv_opts(text, len, spec, o, out, err);
    free(text);
    return rc;
}

int data_load_classes(const char *spec, const char *labels, size_t n_classes, struct data_set *out,
                      struct tv_error *err)
{
    struct data_opts o = {.n_classes = n_classes};
    return data_load_opts(spec, labels, &o, out, err);
}

int data_load(const char *spec, const char *labels, struct data_set *out, struct tv_error *err)
{
    return data_load_classes(spec, labels, 0, out, err);
}

int data_parse_idx(const uint8_t *images, size_t images_len, const char *images_name,
                   const uint8_t *labels, size_t labels_len, const char *labels_name,
                   size_t n_classes, struct data_set *out, struct tv_error *err)
{
    struct data_src img = {.mem = images, .len = images_len, .name = images_name};
    struct data_src lab = {.mem = labels, .len = labels_len, .name = labels_name};
    memset(out, 0, sizeof *out);
    return data_idx_parse(&img, &lab, n_classes, out, err);
}
