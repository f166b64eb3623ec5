/* data_impl.h -- private to data/: the byte source the parsers read (a file
 * through zlib, gzipped or not, or a buffer in memory for the fuzz targets),
 * the storage a set owns, and the two parsers. */
#ifndef TREVO_DATA_IMPL_H
#define TREVO_DATA_IMPL_H

#include <zlib.h>

#include "data.h"

/* Where bytes come from: gz (a file opened with gzdopen, which reads plain
 * files as they are) or mem[0..len). pos counts the bytes read so far, the
 * byte offset errors name (of the uncompressed stream). size is a plain
 * regular file's size (fstat), SIZE_MAX for a gzipped file or a pipe. */
struct data_src {
    gzFile gz;
    const uint8_t *mem;
    size_t len, pos, size;
    const char *name; /* the file, in messages */
};

/* Opens path for reading into *s. 0, or TV_EIO naming the file. */
int data_src_open(struct data_src *s, const char *path, struct tv_error *err);
void data_src_close(struct data_src *s);
/* Reads up to n bytes into buf: *got is less than n only at the end. 0, or
 * TV_EIO (a damaged gzip stream) naming the file and the byte offset. */
int data_src_read(struct data_src *s, void *buf, size_t n, size_t *got, struct tv_error *err);
/* Bytes left at most (SIZE_MAX when unknown: a gzipped file or a pipe), so
 * that a header that claims more than a buffer or a plain file holds is
 * refused before anything is allocated. */
size_t data_src_left(const struct data_src *s);

/* What a set owns (d->mem): freed by data_free. */
struct data_mem {
    uint8_t *u8;
    float *f32;
    uint16_t *labels;
};
/* Points d at a new, empty struct data_mem. 0 or TV_ENOMEM. */
int data_mem_new(struct data_set *d, const char *file, struct tv_error *err);

/* IDX images from img and labels from lab (each already open). */
int data_idx_parse(struct data_src *img, struct data_src *lab, size_t n_classes,
                   struct data_set *out, struct tv_error *err);

#endif
