/* source.c -- the byte source every parser reads (data_impl.h): a file
 * through zlib's gzread, which reads gzipped and plain files alike, or a
 * buffer in memory (the fuzz targets). A plain regular file's size is known
 * (fstat), so a header that claims more is refused before allocating. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data_impl.h"

int data_src_open(struct data_src *s, const char *path, struct tv_error *err)
{
    memset(s, 0, sizeof *s);
    s->name = path;
    s->size = SIZE_MAX;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return tv_error_set(err, TV_EIO, "%s: %s", path, strerror(e));
    }
    s->gz = gzdopen(fd, "rb");
    if (!s->gz) {
        close(fd);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", path);
    }
    gzbuffer(s->gz, 1 << 17);
    /* gzdirect looks at the first bytes: 1 for a file that is not gzipped,
     * whose bytes are then read as they are. */
    if (S_ISREG(st.st_mode) && st.st_size >= 0 && (uintmax_t)st.st_size < SIZE_MAX &&
        gzdirect(s->gz))
        s->size = (size_t)st.st_size;
    return 0;
}

void data_src_close(struct data_src *s)
{
    if (s->gz)
        gzclose(s->gz);
    s->gz = NULL;
}

/* 1 if the gzipped stream ended before its end (zlib's Z_BUF_ERROR,
 * "unexpected end of file", which gzread leaves for the caller to see: a
 * truncated download). */
static int gz_truncated(gzFile gz)
{
    int zerr;
    gzerror(gz, &zerr);
    return zerr == Z_BUF_ERROR;
}

/* The error of a gzread that failed after got more bytes of this read: an
 * I/O error at the uncompressed offset, or damaged gzip data at the byte of
 * the gzipped file where zlib stopped. */
static int gz_fail(const struct data_src *s, size_t got, struct tv_error *err)
{
    int zerr;
    const char *why = gzerror(s->gz, &zerr);
    if (zerr == Z_ERRNO)
        return tv_error_set(err, TV_EIO, "%s: byte offset %zu: %s", s->name, s->pos + got,
                            strerror(errno));
    /* zlib's text starts with the file's name as gzdopen knows it, "<fd:3>: " */
    const char *colon = strstr(why, ">: ");
    if (why[0] == '<' && colon)
        why = colon + 3;
    long long at = (long long)gzoffset(s->gz);
    return tv_error_set(err, TV_EIO, "%s: corrupt gzip data at byte %lld (%s)", s->name,
                        at < 0 ? 0 : at, why);
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
        if (r <= 0 && (r < 0 || gz_truncated(s->gz)))
            return gz_fail(s, *got, err);
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    s->pos += *got;
    return 0;
}

size_t data_src_left(const struct data_src *s)
{
    if (!s->gz)
        return s->len - s->pos;
    if (s->size == SIZE_MAX)
        return SIZE_MAX;
    return s->size > s->pos ? s->size - s->pos : 0;
}
