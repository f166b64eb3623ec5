/* serve.c -- the MPI loop of ranks >= 1. The only MPI code of worker/. */
#include "worker.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int mpi_fail(int mpi_rc, const char *what, struct tv_error *err)
{
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(mpi_rc, text, &n);
    return tv_error_set(err, TV_EMPI, "worker: %s: %s", what, text);
}

int worker_serve(const struct worker_params *p, struct tv_error *err)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct worker_scratch *s = worker_scratch_new();
    struct tv_buf in = {0}, out = {0};
    int rc = s ? 0 : tv_error_set(err, TV_ENOMEM, "worker: out of memory");
    while (!rc) {
        MPI_Status st;
        int m = MPI_Probe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (m != MPI_SUCCESS) {
            rc = mpi_fail(m, "waiting for work", err);
            break;
        }
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (st.MPI_TAG == WORKER_TAG_STOP) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, WORKER_TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        }
        /* Too large or of an unknown tag: refuse before allocating for it. */
        if (st.MPI_TAG != WORKER_TAG_TASKS || count < 0 || (size_t)count > p->max_message_bytes) {
            rc = tv_error_set(err, TV_EFORMAT,
                              "worker %d: refused a message of %d bytes with tag %d", rank, count,
                              st.MPI_TAG);
            break;
        }
        in.len = 0;
        if (tv_buf_reserve(&in, (size_t)count + 1)) {
            rc = tv_error_set(err, TV_ENOMEM, "worker: out of memory for a %d-byte message", count);
            break;
        }
        m = MPI_Recv(in.data, count, MPI_BYTE, 0, WORKER_TAG_TASKS, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (m != MPI_SUCCESS) {
            rc = mpi_fail(m, "receiving tasks", err);
            break;
        }
        out.len = 0;
        rc = worker_process(p, s, rank, in.data, (size_t)count, &out, err);
        if (rc)
            break;
        m = MPI_Send(out.data, (int)out.len, MPI_BYTE, 0, WORKER_TAG_RESULTS, MPI_COMM_WORLD);
        if (m != MPI_SUCCESS)
            rc = mpi_fail(m, "sending results", err);
    }
    if (rc && rc != TV_EMPI) {
        /* The master reports the code that happened, with its text. */
        out.len = 0;
        if (!worker_error_encode(rc, err ? err->msg : "", &out, NULL))
            MPI_Send(out.data, (int)out.len, MPI_BYTE, 0, WORKER_TAG_ERROR, MPI_COMM_WORLD);
    }
    tv_buf_free(&in);
    tv_buf_free(&out);
    worker_scratch_free(s);
    return rc;
}
