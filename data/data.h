/*
 * data.h -- data sets for classification: loaded once, kept compact.
 *
 * A data set is n_rows samples of n_features features and a class label in
 * [0, n_classes). Formats:
 *   - CSV: one sample per line, features then the label (0..K-1) in the last
 *     column; an optional header line (a first line that does not parse as
 *     numbers); blank lines and lines starting with '#' are skipped;
 *     n_classes is the largest label + 1;
 *   - IDX (LeCun's format, gzipped or not): an images file (ubyte, 3 or more
 *     dimensions: rows, then features) and a labels file (ubyte, 1
 *     dimension); pixels are kept as bytes and read as byte / 255;
 *   - "fashion-mnist:train", "fashion-mnist:test": the files of Debian's
 *     dataset-fashion-mnist package (10 classes, 784 pixels).
 * Pixels cost one byte each (Fashion-MNIST's 47 MB of training pixels stay
 * 47 MB); CSV features four.
 *
 * Every error names the file and the line (CSV) or byte offset (IDX): wrong
 * magic, truncated file, ragged row, unparsable number, label out of range,
 * image and label counts that disagree.
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

/* Loads spec into *out (zeroed first): a CSV path, an IDX images path with
 * its labels file in `labels` (NULL: required for IDX, TV_EINVAL), or a
 * "fashion-mnist:" name. 0, or TV_EIO / TV_EINVAL / TV_ENOMEM with err naming
 * the file and where. *out is empty on error. */
int data_load(const char *spec, const char *labels, struct data_set *out, struct tv_error *err);
void data_free(struct data_set *d); /* an empty or zeroed set is a no-op */

/* Row r's features as floats (pixels divided by 255), unscaled. */
void data_row(const struct data_set *d, size_t r, float *out);

#endif
