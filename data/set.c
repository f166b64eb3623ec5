/* set.c -- a data set's storage (data_impl.h, struct data_mem) and its rows
 * (data.h): what every format's parser fills and every reader reads. Pixels
 * are scaled here, in one place: (float)p / 255.0f. */
#include <stdlib.h>
#include <string.h>

#include "data_impl.h"

int data_mem_new(struct data_set *d, const char *file, struct tv_error *err)
{
    d->mem = calloc(1, sizeof(struct data_mem));
    return d->mem ? 0 : tv_error_set(err, TV_ENOMEM, "%s: out of memory", file);
}

void data_free(struct data_set *d)
{
    struct data_mem *m = d->mem;
    if (m) {
        TV_FREE_ALL(m->u8, m->f32, m->labels, m);
    }
    memset(d, 0, sizeof *d);
}

void data_row(const struct data_set *d, size_t r, float *out)
{
    size_t n = d->n_features;
    if (d->pixels) {
        const uint8_t *p = d->u8 + r * n;
        for (size_t j = 0; j < n; j++)
            out[j] = (float)p[j] / 255.0f;
    } else {
        memcpy(out, d->f32 + r * n, n * sizeof *out);
    }
}
