/*
 * data.h -- data sets for classification: loaded once, kept compact.
 *
 * A data set is n_rows samples of n_features features and a class label in
 * [0, n_classes). Formats:
 *   - CSV: one sample per line, features then the label (0..K-1) in the last
 *     column; an optional header line (struct data_opts: header auto takes a
 *     first line with a cell that is not a number for one, yes always skips
 *     the first line, no never); blank lines and lines starting with '#' are
 *     skipped; n_classes is the largest label + 1;
 *   - IDX (LeCun's format, gzipped or not): an images file (ubyte, 3 or more
 *     dimensions: rows, then features) and a labels file (ubyte, 1
 *     dimension); pixels are kept as bytes and read as byte / 255;
 *   - "fashion-mnist:train", "fashion-mnist:test": the files of Debian's
 *     dataset-fashion-mnist package (10 classes, 784 pixels).
 * Pixels cost one byte each (Fashion-MNIST's 47 MB of training pixels stay
 * 47 MB); CSV features four.
 *
 * Every error names the file and the line (CSV) or byte offset (IDX): wrong
 * magic, truncated file, ragged row, unparsable number, a label that is not
 * a whole number or out of range, image and label counts that disagree, a
 * damaged gzip stream ("corrupt gzip data at byte N" of the gzipped file).
 *
 * This module knows files and zlib, never MPI, SQLite or the store.
 */
#ifndef TREVO_DATA_H
#define TREVO_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "tv.h"

struct data_set {
    size_t n_rows, n_features, n_classes;
    int pixels;             /* 1: features are u8 (value = byte / 255); 0: f32 */
    const uint8_t *u8;      /* [n_rows][n_features] when pixels */
    const float *f32;       /* [n_rows][n_features] otherwise */
    const uint16_t *labels; /* [n_rows] in [0, n_classes) */
    void *mem;              /* owned storage, freed by data_free */
};

/* How a CSV file's first line is taken (struct data_opts header). */
enum data_header {
    DATA_HEADER_AUTO = 0, /* a header when one of its cells is not a number */
    DATA_HEADER_YES = 1,  /* always a header (skipped) */
    DATA_HEADER_NO = 2    /* always data */
};

/* What a load is told beyond the file's name; zeroed: the defaults. */
struct data_opts {
    size_t n_classes;         /* 0: the largest label + 1; else every label below it, and the
                               * set has n_classes classes */
    const char *classes_from; /* NULL, or what set n_classes, named when a label is out of
                               * range ("the network's 3 outputs") */
    int header;               /* enum data_header (CSV only: IDX has no header line) */
};

/* "auto", "yes" or "no" into *header (enum data_header); -1 for anything
 * else, *header untouched. */
int data_header_parse(const char *s, int *header);

/* Loads spec into *out (zeroed first): a CSV path, an IDX images path with
 * its labels file in `labels` (NULL: required for IDX, TV_EINVAL), or a
 * "fashion-mnist:" name. 0, or TV_EIO / TV_EINVAL / TV_ENOMEM with err naming
 * the file and where. *out is empty on error. */
int data_load(const char *spec, const char *labels, struct data_set *out, struct tv_error *err);
/* The same with the number of classes known (a test set loaded for a
 * training set's classes): every label must be below n_classes, and the set
 * has n_classes classes; 0 is data_load. A label out of range is named with
 * its file and line or byte offset. */
int data_load_classes(const char *spec, const char *labels, size_t n_classes, struct data_set *out,
                      struct tv_error *err);
/* The same with every option (o NULL: the defaults, data_load). */
int data_load_opts(const char *spec, const char *labels, const struct data_opts *o,
                   struct data_set *out, struct tv_error *err);
/* The parsers on bytes in memory, named in messages as given: a CSV text
 * (with n_classes known as in data_load_classes; _opts: every option, o
 * NULL the defaults), or an IDX images file and its labels file (not
 * gzipped). */
int data_parse_csv(const char *text, size_t len, const char *name, size_t n_classes,
                   struct data_set *out, struct tv_error *err);
int data_parse_csv_opts(const char *text, size_t len, const char *name, const struct data_opts *o,
                        struct data_set *out, struct tv_error *err);
int data_parse_idx(const uint8_t *images, size_t images_len, const char *images_name,
                   const uint8_t *labels, size_t labels_len, const char *labels_name,
                   size_t n_classes, struct data_set *out, struct tv_error *err);
void data_free(struct data_set *d); /* an empty or zeroed set is a no-op */

/* The files of "fashion-mnist:train" or ":test" (Debian's package). */
#define DATA_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Row r's features as floats (pixels divided by 255), unscaled. */
void data_row(const struct data_set *d, size_t r, float *out);

#endif
