/* source.c -- the byte source every parser reads (data_impl.h): a file
 * through zlib's gzread, which reads gzipped and plain files alike, or a
 * buffer in memory (the fuzz targets). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "data_impl.h"

int data_src_open(struct data_src *s, const char *path, struct tv_error *err)
{
    memset(s, 0, sizeof *s);
    s->name = path;
    errno = 0;
    s->gz = gzopen(path, "rb");
    if (!s->gz)
        return tv_error_set(err, errno ? TV_EIO : TV_ENOMEM, "%s: %s", path,
                            errno ? strerror(errno) : "out of memory");
    gzbuffer(s->gz, 1 << 17);
    return 0;
}

void data_src_close(struct data_src *s)
{
    if (s->gz)
        gzclose(s->gz);
    s->gz = NULL;
}

int data_src_read(struct data_src *s, void *buf, size_t n, size_t *got, struct tv_error *err)
{
    *got = 0;
    if (!s->gz) {
        size_t k = n < s->len - s->pos ? n : s->len - s->pos;
        if (k)
            memcpy(buf, s->mem + s->pos, k);
        s->pos += k;
        *got = k;
        return 0;
    }
    while (*got < n) {
        size_t chunk = n - *got < (1u << 30) ? n - *got : (1u << 30);
        int r = gzread(s->gz, (uint8_t *)buf + *got, (unsigned)chunk);
        if (r < 0) {
            int zerr;
            const char *why = gzerror(s->gz, &zerr);
            return tv_error_set(err, TV_EIO, "%s: byte offset %zu: %s", s->name, s->pos + *got,
                                zerr == Z_ERRNO ? strerror(errno) : why);
        }
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    s->pos += *got;
    return 0;
}

size_t data_src_left(const struct data_src *s)
{
    return s->gz ? SIZE_MAX : s->len - s->pos;
}
