/*
 * search.h -- private to master/: one search on rank 0 (or alone), shared by
 * the files that run it:
 *   run.c        opening or resuming the run, the loop over generations, the end;
 *   generation.c one generation: plan, evaluate, take the results, close it;
 *   commit.c     the commit queue: results into the store in batches;
 *   state.c      the checkpoint's master state (state.h).
 */
#ifndef TREVO_MASTER_SEARCH_H
#define TREVO_MASTER_SEARCH_H

#include "master.h"
#include "store.h"

struct farm;

struct search {
    struct master_config cfg;
    const char *db;
    struct store *st;
    int64_t run;
    int n_ranks;
    struct farm *farm;
    struct master_pop pop; /* the population of the last closed generation */
    int64_t gen;           /* last closed generation, -1 before generation 0 */
    int64_t next_id;       /* id of the next child */
    /* the generation being evaluated */
    struct master_pop next;
    int64_t base_id; /* child i has id base_id + i */
    const struct master_child *plan;
    size_t n_plan;
    size_t n_failed; /* children of it without a score (fitness NaN: their genome refused) */
    struct store_individual *rows; /* results not yet committed */
    size_t *row_off;               /* their genome bytes' offsets in next.encoded */
    size_t n_rows, cap_rows;
    /* the encodings' buffer of a replaced population, reused for the next
     * one's (its pages stay mapped: no page faults per child) */
    struct tv_buf spare_encoded;
    int solved;
    double t_start, t_gen, t_first_row;
    double cpu_start;      /* the process's CPU time when the search loop began */
    char resume_name[256]; /* resume: the run to take once its checkpoint loaded */
    int resuming;          /* resume: the run is held for writing */
    uint64_t evals_total;
    int64_t db_bytes_start, gen_start; /* the database's size and s->gen when the loop began */
    /* genomes of a replaced population, reused for the next children's
     * (their arrays keep their capacity: no allocation per child) */
    struct genome **spare;
    size_t n_spare, cap_spare;
    master_progress_fn progress; /* NULL when quiet */
    void *progress_ctx;
    struct task_result final; /* the task's final test, when it ran (final.n_figures > 0) */
};

/* Sends ev, with the run's names filled in, to the progress callback (which
 * must be set). */
static inline void master_search_report(const struct search *s, struct master_progress *ev)
{
    ev->run = s->cfg.name;
    ev->db = s->db;
    ev->task = s->cfg.task;
    ev->pop_size = s->cfg.pop_size;
    ev->n_ranks = s->n_ranks;
    s->progress(s->progress_ctx, ev);
}

/* Runs generation s->gen + 1 and closes it (statistics and checkpoint in one
 * transaction). pending: the run's committed individuals of later
 * generations (a resume), or NULL. */
int master_generation_run(struct search *s, const struct store_set *pending, struct tv_error *err);

/* Queues a result row whose genome bytes are s->next.encoded[enc_off ..
 * enc_off + len) (not copied: the queue is flushed before s->next is
 * replaced) and commits the queue once commit_batch rows wait or the oldest
 * waited a second. */
int master_commit_queue(struct search *s, const struct store_individual *row, size_t enc_off,
                        size_t len, struct tv_error *err);
/* Commits the queued rows in one transaction (nothing queued: 0). */
int master_commit_flush(struct search *s, struct tv_error *err);

#endif
