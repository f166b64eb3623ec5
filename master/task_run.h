/*
 * task_run.h -- private to master/: what a search checks about its task
 * beyond the config (task_run.c).
 *
 * Every rank opens the task itself (master_config_open_task). Before any
 * evaluation the workers report what they opened to rank 0 -- whether it
 * opened, its inputs and outputs, and a plugin's SHA-256 -- and rank 0
 * refuses a start where a rank failed or disagrees with it (a plugin whose
 * shape depends on the host, another file at the same path), then tells the
 * workers whether to serve. A run of a plugin task (plugin.h) keeps the
 * plugin's path and SHA-256 as run notes; a resume whose plugin hashes
 * otherwise is refused, naming both hashes, unless the user accepts the new
 * one with `--set task.plugin_sha256=HEX` (master_config_set).
 */
#ifndef TREVO_MASTER_TASK_RUN_H
#define TREVO_MASTER_TASK_RUN_H

#include "master.h"
#include "store.h"

/* The run notes of a plugin task. */
#define MASTER_NOTE_PLUGIN_PATH "task.plugin_path"
#define MASTER_NOTE_PLUGIN_SHA256 "task.plugin_sha256"

/* What one rank opened, as sent to rank 0 (the same binary on every rank:
 * sent as bytes). */
struct master_rank_task {
    int32_t code; /* 0: opened; else the TV_E* code of the failure */
    uint32_t pad; /* 0 */
    uint64_t n_inputs, n_outputs;
    char sha256[65];            /* a plugin's, "" for a built-in task */
    char msg[TV_ERROR_MSG_MAX]; /* code != 0: why */
};

/* The report of an opened instance t (code 0), or of a failure (t NULL,
 * code and message from err). */
void master_rank_task_fill(struct master_rank_task *r, const struct task_instance *t, int code,
                           const struct tv_error *err);
/* Compares the reports of ranks 1..n-1 with rank 0's (r[0]), for the task
 * named `task`: 0, or the failure of the first rank that could not open it
 * (its code, "rank 2: ...") or TV_EINVAL naming the first that disagrees
 * and both values. */
int master_rank_tasks_compare(const struct master_rank_task *r, size_t n, const char *task,
                              struct tv_error *err);

/* Rank 0, once the config is broadcast: gathers every worker's report,
 * compares (above), and tells the workers to serve (0) or to stop. */
int master_ranks_agree(const struct master_config *c, const struct task_instance *t, int n_ranks,
                       struct tv_error *err);
/* A worker, once it parsed the config and opened its task (t, or NULL and
 * code with err): reports to rank 0 and returns 1 if rank 0 says serve, 0
 * if the start is refused (rank 0 says why). */
int master_ranks_report(const struct task_instance *t, int code, const struct tv_error *err);

/* Stores c's plugin path and SHA-256 as notes of run (this connection is
 * its writer). 0 and nothing written for a built-in task. */
int master_plugin_note(struct store *st, int64_t run, const struct master_config *c,
                       struct tv_error *err);
/* Resume, before anything is written: 0 if the plugin c loaded hashes as the
 * run's note says, or as the hash the user accepted
 * (c->plugin_sha256_accept); TV_ESTATE naming both hashes and the command
 * that accepts the new one ("trevo resume DB --name RUN --set ..."); TV_EINVAL
 * when the accepted hash is not the file's. 0 for a built-in task. */
int master_plugin_resume_check(struct store *st, int64_t run, const char *db, const char *run_name,
                               const struct master_config *c, struct tv_error *err);

#endif
