/* task_run.c -- the start of a run on every rank: the workers' side
 * (master_worker_main: the config from rank 0, the task opened, then
 * worker_serve), every rank opened the same task; a plugin task's path and
 * hash stored with its run and checked on resume (task_run.h). */
#include "task_run.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

void master_rank_task_fill(struct master_rank_task *r, const struct task_instance *t, int code,
                           const struct tv_error *err)
{
    memset(r, 0, sizeof *r);
    r->code = t ? 0 : (code ? code : TV_EINVAL);
    if (!t) {
        snprintf(r->msg, sizeof r->msg, "%s", err && err->msg[0] ? err->msg : "no task opened");
        return;
    }
    r->n_inputs = t->n_inputs;
    r->n_outputs = t->n_outputs;
    const char *sha = task_plugin_sha256(t->kind);
    snprintf(r->sha256, sizeof r->sha256, "%s", sha ? sha : "");
}

int master_rank_tasks_compare(const struct master_rank_task *r, size_t n, const char *task,
                              struct tv_error *err)
{
    for (size_t i = 1; i < n; i++) {
        const struct master_rank_task *w = &r[i];
        /* a report that is not NUL-terminated is not ours */
        if (!memchr(w->sha256, 0, sizeof w->sha256) || !memchr(w->msg, 0, sizeof w->msg))
            return tv_error_set(err, TV_EFORMAT, "rank %zu: a malformed task report", i);
        if (w->code)
            return tv_error_set(err, w->code, "rank %zu: %s", i, w->msg);
        if (w->n_inputs != r[0].n_inputs || w->n_outputs != r[0].n_outputs)
            return tv_error_set(
                err, TV_EINVAL,
                "rank %zu opened task %s with %llu inputs and %llu outputs, rank 0 (the master) "
                "with %llu inputs and %llu outputs: every rank must open the same task",
                i, task, (unsigned long long)w->n_inputs, (unsigned long long)w->n_outputs,
                (unsigned long long)r[0].n_inputs, (unsigned long long)r[0].n_outputs);
        if (strcmp(w->sha256, r[0].sha256))
            return tv_error_set(err, TV_EINVAL,
                                "rank %zu loaded task %s with SHA-256 %s, rank 0 (the master) "
                                "with %s: every rank must load the same file",
                                i, task, w->sha256, r[0].sha256);
    }
    return 0;
}

int master_ranks_agree(const struct master_config *c, const struct task_instance *t, int n_ranks,
                       struct tv_error *err)
{
    struct master_rank_task *r = calloc((size_t)n_ranks, sizeof *r);
    struct master_rank_task mine;
    master_rank_task_fill(&mine, t, 0, NULL);
    /* the gather happens whether or not the memory came: the workers wait */
    int m = MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, r, r ? (int)sizeof mine : 0, MPI_BYTE, 0,
                       MPI_COMM_WORLD);
    int rc = m != MPI_SUCCESS ? TV_EMPI
             : !r             ? tv_error_set(err, TV_ENOMEM, "master: out of memory")
                              : master_rank_tasks_compare(r, (size_t)n_ranks, c->task, err);
    free(r);
    int serve = rc == 0;
    if (m == MPI_SUCCESS)
        m = MPI_Bcast(&serve, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (m != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(m, text, &n);
        rc = tv_error_set(err, TV_EMPI, "master: the workers' tasks: %s", text);
    }
    return rc;
}

int master_ranks_report(const struct task_instance *t, int code, const struct tv_error *err)
{
    struct master_rank_task mine;
    master_rank_task_fill(&mine, t, code, err);
    int serve = 0;
    if (MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, NULL, 0, MPI_BYTE, 0, MPI_COMM_WORLD) !=
            MPI_SUCCESS ||
        MPI_Bcast(&serve, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        return 0;
    return serve;
}

int master_plugin_note(struct store *st, int64_t run, const struct master_config *c,
                       struct tv_error *err)
{
    const char *path = task_plugin_path(c->task_kind), *sha = task_plugin_sha256(c->task_kind);
    if (!path)
        return 0;
    int rc = store_run_note_set(st, run, MASTER_NOTE_PLUGIN_PATH, path, err);
    return rc ? rc : store_run_note_set(st, run, MASTER_NOTE_PLUGIN_SHA256, sha, err);
}

int master_plugin_resume_check(struct store *st, int64_t run, const char *db, const char *run_name,
                               const struct master_config *c, struct tv_error *err)
{
    const char *now = task_plugin_sha256(c->task_kind);
    if (!now)
        return 0;
    const char *accept = c->plugin_sha256_accept;
    if (*accept && strcmp(accept, now))
        return tv_error_set(err, TV_EINVAL,
                            "--set task.plugin_sha256=%s: the plugin %s hashes %s: accept the "
                            "file that is there",
                            accept, c->task, now);
    char *then = NULL;
    int rc = store_run_note_get(st, run, MASTER_NOTE_PLUGIN_SHA256, &then, err);
    if (rc == TV_ENOTFOUND) {
        tv_error_clear(err);
        rc = 0;
    }
    /* Short, most important first: a message holds TV_ERROR_MSG_MAX bytes. */
    if (!rc && (!then || strcmp(then, now)) && !*accept)
        rc = tv_error_set(err, TV_ESTATE,
                          "run '%s': plugin %s changed since the run started (SHA-256 %s then, %s "
                          "now): a changed fitness function breaks exact resume; to accept it: "
                          "trevo resume %s --name %s --set task.plugin_sha256=%s",
                          run_name, c->task, then ? then : "(none stored)", now, db, run_name, now);
    free(then);
    return rc;
}

/* The master could not start, or refused what the ranks opened, and says
 * why itself: this rank ends quietly with a failure. */
static int not_started(struct tv_error *err)
{
    err->code = TV_ESTATE;
    err->msg[0] = '\0';
    return TV_ESTATE;
}

int master_worker_main(struct tv_error *err)
{
    int len = 0;
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (len <= 0)
        return not_started(err);
    char *text = malloc((size_t)len);
    if (!text)
        return tv_error_set(err, TV_ENOMEM, "worker: out of memory");
    MPI_Bcast(text, len, MPI_CHAR, 0, MPI_COMM_WORLD);
    text[len - 1] = '\0';
    struct master_config cfg;
    struct task_instance *task;
    int rc = master_config_parse_task(&cfg, text, "config from rank 0", &task, err);
    free(text);
    /* Rank 0 compares what every rank opened (and reports a failure here)
     * before any evaluation. */
    if (!master_ranks_report(task, rc, err))
        rc = not_started(err);
    else
        rc = worker_serve(&cfg.worker, err);
    task_close(task);
    return rc;
}
