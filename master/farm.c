/* farm.c -- dynamic load balancing over MPI: whoever is free gets the next
 * batch, `inflight` batches are outstanding per worker so that no worker
 * waits for the master (docs/facts.md: two in flight mattered more than batch
 * size). Tasks go out with MPI_Isend (a blocking send of a large batch could
 * deadlock against a worker blocked sending its results); results are
 * discovered with MPI_Iprobe + MPI_Get_count, refused past the size cap
 * before anything is allocated, and decoded and validated by the caller. */
#include "farm.h"

#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop_flag;

void master_request_stop(void)
{
    stop_flag = 1;
}

int farm_stop_requested(void)
{
    return stop_flag != 0;
}

struct slot {
    struct tv_buf buf;
    MPI_Request req;
    int busy;
};

struct farm {
    const struct worker_params *wp;
    int n_ranks;
    int64_t batch, inflight;
    struct worker_scratch *local; /* in-process */
    struct slot *slots;           /* [n_ranks * inflight]: rank r's at (r-1)*inflight */
    int *outstanding;             /* [n_ranks] */
    size_t *head;                 /* [n_ranks] oldest slot of each worker, FIFO */
    struct tv_buf in, out, msg;
    double wait_cpu, work_cpu; /* see farm_cpu() */
};

void farm_cpu(const struct farm *f, double *wait_cpu, double *work_cpu)
{
    *wait_cpu = f->wait_cpu;
    *work_cpu = f->work_cpu;
}

int farm_new(const struct worker_params *wp, int n_ranks, int64_t batch, int64_t inflight,
             struct farm **out, struct tv_error *err)
{
    struct farm *f = calloc(1, sizeof *f);
    *out = NULL;
    if (!f)
        return tv_error_set(err, TV_ENOMEM, "farm: out of memory");
    f->wp = wp;
    f->n_ranks = n_ranks;
    f->batch = batch;
    f->inflight = inflight;
    f->local = worker_scratch_new();
    size_t n_slots = (size_t)(n_ranks > 1 ? n_ranks - 1 : 1) * (size_t)inflight;
    f->slots = calloc(n_slots, sizeof *f->slots);
    f->outstanding = calloc((size_t)n_ranks, sizeof *f->outstanding);
    f->head = calloc((size_t)n_ranks, sizeof *f->head);
    if (!f->local || !f->slots || !f->outstanding || !f->head) {
        farm_free(f);
        return tv_error_set(err, TV_ENOMEM, "farm: out of memory");
    }
    *out = f;
    return 0;
}

void farm_free(struct farm *f)
{
    if (!f)
        return;
    if (f->n_ranks > 1 && f->slots) {
        for (int r = 1; r < f->n_ranks; r++)
            MPI_Send(NULL, 0, MPI_BYTE, r, WORKER_TAG_STOP, MPI_COMM_WORLD);
        size_t n_slots = (size_t)(f->n_ranks - 1) * (size_t)f->inflight;
        for (size_t i = 0; i < n_slots; i++) {
            /* A send still in flight (the master failed mid-generation)
             * owns its buffer until it completes, which may be never: the
             * job is about to be aborted, so leave the buffer to MPI rather
             * than free memory a worker may still be reading. */
            if (f->slots[i].busy) {
                MPI_Cancel(&f->slots[i].req);
                MPI_Request_free(&f->slots[i].req);
                continue;
            }
            tv_buf_free(&f->slots[i].buf);
        }
    }
    worker_scratch_free(f->local);
    free(f->slots);
    free(f->outstanding);
    free(f->head);
    tv_buf_free(&f->in);
    tv_buf_free(&f->out);
    tv_buf_free(&f->msg);
    free(f);
}

static size_t batch_size(const struct farm *f, size_t n)
{
    if (f->batch > 0)
        return (size_t)f->batch;
    /* Guided self-scheduling: a batch is a share of what remains (about one
     * eighth of it per in-flight slot of every worker), so batches are large
     * while much remains and shrink to single children at the end of a
     * generation, where a large batch would leave the other workers idle. At
     * most 64 children, so one message stays small. */
    size_t workers = f->n_ranks > 1 ? (size_t)f->n_ranks - 1 : 1;
    size_t b = n / (workers * (size_t)f->inflight * 8);
    return b < 1 ? 1 : b > 64 ? 64 : b;
}

static int run_local(struct farm *f, const struct worker_task *tasks, size_t n, farm_sink sink,
                     void *ctx, struct tv_error *err)
{
    size_t b = batch_size(f, n);
    for (size_t i = 0; i < n; i += b) {
        if (stop_flag)
            return TV_ESTOP;
        size_t k = n - i < b ? n - i : b;
        f->in.len = f->out.len = 0;
        struct worker_results res;
        int rc = worker_tasks_encode(tasks + i, k, &f->in, err);
        double t0 = tv_cpu_now();
        if (!rc)
            rc = worker_process(f->wp, f->local, 0, f->in.data, f->in.len, &f->out, err);
        f->work_cpu += tv_cpu_now() - t0;
        if (!rc)
            rc =
                worker_results_decode(f->out.data, f->out.len, f->wp->max_message_bytes, &res, err);
        if (rc)
            return rc;
        rc = sink(ctx, &res, err);
        worker_results_release(&res);
        if (rc)
            return rc;
    }
    return 0;
}

static int mpi_error(int m, const char *what, struct tv_error *err)
{
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(m, text, &n);
    return tv_error_set(err, TV_EMPI, "master: %s: %s", what, text);
}

static int send_batch(struct farm *f, int rank, const struct worker_task *tasks, size_t k,
                      struct tv_error *err)
{
    size_t base = (size_t)(rank - 1) * (size_t)f->inflight;
    size_t s = (f->head[rank] + (size_t)f->outstanding[rank]) % (size_t)f->inflight;
    struct slot *sl = &f->slots[base + s];
    sl->buf.len = 0;
    int rc = worker_tasks_encode(tasks, k, &sl->buf, err);
    if (rc)
        return rc;
    if (sl->buf.len > f->wp->max_message_bytes)
        return tv_error_set(err, TV_ELIMIT,
                            "a task batch of %zu bytes is over the message cap of %zu bytes "
                            "(raise [farm] max_message_mb or lower [farm] batch)",
                            sl->buf.len, f->wp->max_message_bytes);
    int m = MPI_Isend(sl->buf.data, (int)sl->buf.len, MPI_BYTE, rank, WORKER_TAG_TASKS,
                      MPI_COMM_WORLD, &sl->req);
    if (m != MPI_SUCCESS)
        return mpi_error(m, "sending tasks", err);
    sl->busy = 1;
    f->outstanding[rank]++;
    return 0;
}

/* Waits for the next message from any worker without burning a core: spin
 * briefly, then sleep in short steps (blocking MPI calls busy-poll). */
/* A worker's fatal error (WORKER_TAG_ERROR from src, count bytes): its own
 * code and text. */
static int worker_error_receive(int src, int count, struct tv_error *err)
{
    uint8_t data[4 + TV_ERROR_MSG_MAX + 1]; /* the code, a full message and its NUL */
    MPI_Status st;
    int m = MPI_Recv(data, (int)sizeof data, MPI_BYTE, src, WORKER_TAG_ERROR, MPI_COMM_WORLD, &st);
    if (m != MPI_SUCCESS)
        return mpi_error(m, "receiving a worker's error", err);
    int got = 0, code;
    MPI_Get_count(&st, MPI_BYTE, &got);
    char text[TV_ERROR_MSG_MAX];
    int rc = worker_error_decode(data, got < 0 ? 0 : (size_t)got, &code, text, sizeof text, err);
    if (rc) {
        tv_error_prefix(err, "worker %d (%d bytes)", src, count);
        return rc;
    }
    return tv_error_set(err, code, "worker %d: %s", src, text);
}

static int wait_message(MPI_Status *st, struct tv_error *err)
{
    for (long spins = 0;; spins++) {
        int flag = 0;
        int m = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, st);
        if (m != MPI_SUCCESS)
            return mpi_error(m, "waiting for results", err);
        if (flag)
            return 0;
        if (spins > 2000) {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

static int run_mpi(struct farm *f, const struct worker_task *tasks, size_t n, farm_sink sink,
                   void *ctx, struct tv_error *err)
{
    size_t next = 0;
    int total_out = 0, rc = 0;
    for (int r = 1; r < f->n_ranks && !rc; r++)
        while (f->outstanding[r] < f->inflight && next < n && !rc) {
            size_t b = batch_size(f, n - next), k = n - next < b ? n - next : b;
            rc = send_batch(f, r, tasks + next, k, err);
            next += k;
            total_out++;
        }
    while (total_out > 0 && !rc) {
        MPI_Status st;
        double t0 = tv_cpu_now();
        rc = wait_message(&st, err);
        f->wait_cpu += tv_cpu_now() - t0;
        if (rc)
            break;
        int count = 0, src = st.MPI_SOURCE;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (st.MPI_TAG == WORKER_TAG_ERROR)
            return worker_error_receive(src, count, err);
        if (st.MPI_TAG != WORKER_TAG_RESULTS || count < 0 ||
            (size_t)count > f->wp->max_message_bytes)
            return tv_error_set(err, TV_EFORMAT,
                                "refused a message of %d bytes with tag %d from rank %d", count,
                                st.MPI_TAG, src);
        f->msg.len = 0;
        if (tv_buf_reserve(&f->msg, (size_t)count + 1))
            return tv_error_set(err, TV_ENOMEM, "out of memory for a %d-byte message", count);
        int m = MPI_Recv(f->msg.data, count, MPI_BYTE, src, WORKER_TAG_RESULTS, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        if (m != MPI_SUCCESS)
            return mpi_error(m, "receiving results", err);
        /* The worker answers in order: its oldest batch is done. */
        struct slot *sl = &f->slots[(size_t)(src - 1) * (size_t)f->inflight + f->head[src]];
        MPI_Wait(&sl->req, MPI_STATUS_IGNORE);
        sl->busy = 0;
        f->head[src] = (f->head[src] + 1) % (size_t)f->inflight;
        f->outstanding[src]--;
        total_out--;
        struct worker_results res;
        rc = worker_results_decode(f->msg.data, (size_t)count, f->wp->max_message_bytes, &res, err);
        if (rc) {
            tv_error_prefix(err, "results from rank %d", src);
            break;
        }
        /* Refill the worker first, so it computes while the results are
         * committed. */
        if (next < n && !stop_flag) {
            size_t b = batch_size(f, n - next), k = n - next < b ? n - next : b;
            rc = send_batch(f, src, tasks + next, k, err);
            next += k;
            total_out++;
        }
        if (!rc)
            rc = sink(ctx, &res, err);
        worker_results_release(&res);
    }
    if (!rc && stop_flag && next < n)
        return TV_ESTOP;
    return rc;
}

int farm_run(struct farm *f, const struct worker_task *tasks, size_t n, farm_sink sink, void *ctx,
             struct tv_error *err)
{
    if (f->n_ranks <= 1)
        return run_local(f, tasks, n, sink, ctx, err);
    return run_mpi(f, tasks, n, sink, ctx, err);
}
