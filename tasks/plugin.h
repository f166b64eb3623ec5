/*
 * plugin.h -- task kinds from shared libraries: a user's own fitness function,
 * built apart from trevo and named in a config by its file (`task =
 * ./libmytask.so`). docs/plugins.md is the guide; `trevo task new NAME` writes
 * a complete one.
 *
 * The plugin's side: a C file that defines a `struct task_kind` (task.h) and
 * exports it with TASK_PLUGIN_EXPORT(kind), built with
 * `cc -shared -fPIC $(pkg-config --cflags trevo)`. The export defines the one
 * entry symbol, trevo_task_v<N> with N = TASK_ABI_VERSION, a function that
 * returns the kind; the kind's abi_version is TASK_ABI_VERSION too. A plugin
 * of version 2 (entry trevo_task_v2, a row of version 2) still loads: its
 * row is copied into a zeroed row of this version (evaluate_genome NULL),
 * which is the kind task_plugin_load() gives. The nn_*,
 * genome_*, tv_* and task_* functions a plugin calls are those of the trevo
 * executable that loads it (it exports them), so the plugin links against
 * nothing. Every other function of the plugin should be static: a global one
 * named like one of trevo's would be trevo's.
 *
 * trevo's side: task_plugin_load() hashes the file (SHA-256, sha256.h),
 * dlopens it (every symbol resolved at once: RTLD_NOW), finds the entry,
 * checks the version and the kind's row (its name, functions and [task] key
 * table) and keeps it loaded until task_plugins_unload() or the end of the
 * process; a path loads once per process. Every refusal names the file and
 * says what to do: not a shared library (with the loader's own words), no
 * entry symbol, another ABI version (naming both; versions TASK_ABI_OLDEST
 * to TASK_ABI_VERSION load), a bad row.
 *
 * Like the rest of experiments/: nn/ and genome/ only, no MPI, no SQLite.
 */
#ifndef TREVO_PLUGIN_H
#define TREVO_PLUGIN_H

#include "sha256.h"
#include "task.h"

/* The entry symbol of ABI version TASK_ABI_VERSION: trevo_task_v<N>. */
#define TASK_PLUGIN_CAT_(a, b) a##b
#define TASK_PLUGIN_CAT(a, b) TASK_PLUGIN_CAT_(a, b)
#define TASK_PLUGIN_STR_(x) #x
#define TASK_PLUGIN_STR(x) TASK_PLUGIN_STR_(x)
#define TASK_PLUGIN_ENTRY TASK_PLUGIN_CAT(trevo_task_v, TASK_ABI_VERSION)
#define TASK_PLUGIN_ENTRY_NAME "trevo_task_v" TASK_PLUGIN_STR(TASK_ABI_VERSION)
#define TASK_PLUGIN_ENTRY_PREFIX "trevo_task_v"

/* In a plugin, at file scope: exports `kind` (a struct task_kind defined in
 * the same file) as the plugin's task. */
#define TASK_PLUGIN_EXPORT(kind)                                                                   \
    const struct task_kind *TASK_PLUGIN_ENTRY(void);                                               \
    const struct task_kind *TASK_PLUGIN_ENTRY(void)                                                \
    {                                                                                              \
        return &(kind);                                                                            \
    }

/* The type of the entry symbol. */
typedef const struct task_kind *(*task_plugin_entry_fn)(void);

/* 1 if a config's `task` value names a plugin file: it contains a '/' or
 * ends in ".so" (a name without '/' is a file in the current directory). */
int task_is_plugin(const char *task);

/* Loads the plugin at path (once per process: the same path again gives the
 * same kind) and sets *kind, borrowed until task_plugins_unload(). TV_EIO
 * (the file cannot be read), TV_EFORMAT (not a shared library, no entry
 * symbol, another ABI version), TV_EINVAL (a bad row: its name, functions or
 * keys), TV_ENOMEM; the message starts with the path. */
int task_plugin_load(const char *path, const struct task_kind **kind, struct tv_error *err);

/* For a kind task_plugin_load() gave: the file's absolute path when it was
 * loaded and its SHA-256 (64 hex digits), borrowed like the kind. NULL for
 * any other kind (the built-in ones). */
const char *task_plugin_path(const struct task_kind *kind);
const char *task_plugin_sha256(const struct task_kind *kind);

/* Checks a kind's row as task_plugin_load() does once the version matched:
 * a name of 1 to 31 letters, digits, '_', '-' or '.', open() and evaluate()
 * given, at most TASK_MAX_KEYS keys, each with a name of 1 to 63 characters
 * [a-z0-9_] given once, a known type, a doc, and a default in its range.
 * TV_EINVAL with "task NAME: key 2 ('bits'): ..." (no path: the caller adds
 * it). */
int task_kind_check(const struct task_kind *k, struct tv_error *err);

/* Closes every loaded plugin: the kinds they gave are gone. For tests and
 * leak checkers; a process may just end. */
void task_plugins_unload(void);

#endif
