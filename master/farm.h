/* farm.h -- private to master/: hands task batches to workers and gives
 * back result batches, over MPI or in-process through the same
 * worker_process(). */
#ifndef TREVO_MASTER_FARM_H
#define TREVO_MASTER_FARM_H

#include "master.h"

struct farm;

/* n_ranks: MPI_COMM_WORLD's size (1: no MPI, the master works alone). */
int farm_new(const struct worker_params *wp, int n_ranks, int64_t batch, int64_t inflight,
             struct farm **out, struct tv_error *err);
/* Sends STOP to every worker (MPI), frees. */
void farm_free(struct farm *f);

/* Called with each result batch as it arrives. */
typedef int (*farm_sink)(void *ctx, const struct worker_results *r, struct tv_error *err);

/* Evaluates tasks[0..n): batches go to whichever worker is free, at most
 * `inflight` per worker. Returns TV_ESTOP if a stop was requested (what was
 * sent has been received and passed to the sink). */
int farm_run(struct farm *f, const struct worker_task *tasks, size_t n, farm_sink sink, void *ctx,
             struct tv_error *err);

/* CPU seconds the master spent so far waiting for workers (MPI) and doing
 * the workers' job itself (alone): what is not its own cost. */
void farm_cpu(const struct farm *f, double *wait_cpu, double *work_cpu);
/* 1 once master_request_stop() was called. */
int farm_stop_requested(void);

#endif
