/* commit.c -- the commit queue: results wait here, their genome bytes where
 * the next population keeps them, until a batch is worth a store
 * transaction. */
#include "search.h"

#include <stdlib.h>

int master_commit_flush(struct search *s, struct tv_error *err)
{
    if (s->n_rows == 0)
        return 0;
    for (size_t i = 0; i < s->n_rows; i++)
        s->rows[i].genome = s->next.encoded.data + s->row_off[i];
    int rc = store_add_individuals(s->st, s->run, s->rows, s->n_rows, err);
    s->n_rows = 0;
    return rc;
}

int master_commit_queue(struct search *s, const struct store_individual *row, size_t enc_off,
                        size_t len, struct tv_error *err)
{
    if (s->n_rows == s->cap_rows) {
        size_t cap = s->cap_rows ? 2 * s->cap_rows : 256;
        struct store_individual *r = realloc(s->rows, cap * sizeof *r);
        size_t *o = r ? realloc(s->row_off, cap * sizeof *o) : NULL;
        if (r)
            s->rows = r;
        if (!r || !o)
            return tv_error_set(err, TV_ENOMEM, "master: out of memory");
        s->row_off = o;
        s->cap_rows = cap;
    }
    s->row_off[s->n_rows] = enc_off;
    s->rows[s->n_rows] = *row;
    s->rows[s->n_rows++].genome_len = len;
    /* Commit once commit_batch results wait, or the oldest waited a second
     * (slow evaluations: what arrived is soon safe from a crash). */
    if (s->n_rows == 1)
        s->t_first_row = tv_now();
    if (s->n_rows >= (size_t)s->cfg.commit_batch || tv_now() - s->t_first_row >= 1.0)
        return master_commit_flush(s, err);
    return 0;
}
