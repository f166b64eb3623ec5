/*
 * cli.h -- private to cli/: the `trevo` program's commands and the helpers
 * they share. The recipe for a new command: write `int cli_cmd_NAME(int
 * argc, char **argv)` in a cmd_*.c file (argv[0] is the command's own name;
 * it returns the process exit status: 0 ok, 1 error, 2 usage), declare it
 * below, and add its row to main.c's table. A command parses its arguments
 * with args.c, reads and writes files with files.c, and calls the library;
 * it is the only layer that prints: library calls return codes with a
 * struct tv_error, and the command prints "trevo: <message>" (cli_fail).
 * Its usage is one string, `static const char X_usage[]`, which -h or
 * --help prints on stdout (cli_help, status 0) and arguments it cannot
 * take on stderr (cli_usage_error, status 2).
 */
#ifndef TREVO_CLI_H
#define TREVO_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "genome.h"

/* the search (cmd_run.c) */
int cli_cmd_run(int argc, char **argv);
int cli_cmd_resume(int argc, char **argv);
int cli_cmd_status(int argc, char **argv);
int cli_cmd_best(int argc, char **argv); /* cmd_best.c */
/* The best solver of the run's last closed generation: the solved member of
 * its population (the checkpoint's) with the highest fitness, ties to the
 * lower id. *id is STORE_ID_NONE when no member is solved. */
struct store;
int cli_best_solver(struct store *st, int64_t run, int64_t *id, double *fitness,
                    struct tv_error *err);
/* plots (cmd_plot.c) */
int cli_cmd_plot(int argc, char **argv);
/* the accuracy-flash front (cmd_front.c) */
int cli_cmd_front(int argc, char **argv);
/* tasks (cmd_task.c) */
int cli_cmd_task_eval(int argc, char **argv);
int cli_cmd_task_list(int argc, char **argv);
/* a task plugin to start from (cmd_task_new.c) */
int cli_cmd_task_new(int argc, char **argv);
/* net: genome files (cmd_net.c) */
int cli_cmd_net_import(int argc, char **argv);
int cli_cmd_net_export(int argc, char **argv);
int cli_cmd_net_validate(int argc, char **argv);
/* net: genome files and the engine (cmd_net.c) */
int cli_cmd_net_eval(int argc, char **argv);
/* net: the engine against dense OpenBLAS (cmd_bench.c) */
int cli_cmd_net_bench(int argc, char **argv);
/* net: int8 networks (cmd_quant.c): `net quantize`; 1 if the file at path is a
 * NET.q; a plan of either kind of file; the C export of either. */
int cli_cmd_net_quantize(int argc, char **argv);
int cli_net_is_int8(const char *path);
struct nn_plan;
struct task_instance;
int cli_load_plan(const char *path, struct nn_plan **plan, struct tv_error *err);
int cli_export_c(const char *in, const char *prefix, const char *out, struct tv_error *err);
/* An int8 NET.q file; the device figures of an int8 C file (quant.h struct
 * nn_cost) as one line on f, "WHAT: flash N bytes, RAM ...";
 * estimate: a float network's, before calibration (flash at most). */
struct nn_qnet;
struct nn_cost;
int cli_load_qnet(const char *path, struct nn_qnet **q, struct tv_error *err);
void cli_print_cost(FILE *f, const char *what, const struct nn_cost *c, int estimate);
/* `net quantize` of g and `best --int8`: calibrate (DATA or task:NAME, the
 * task's [task] values from config / config_text and sets; "task:" alone,
 * the config's task), quantize, write out; lines on stderr. */
struct cli_quant_args {
    const char *calibrate, *labels, *header, *samples, *percentile, *out, *config, *config_text;
    const char *c_prefix;        /* not NULL: write the C file (net export --format c) instead */
    const struct nn_cost *limit; /* not NULL: a file over it is refused, nothing written */
    const char *const *sets;
    size_t n_sets;
};
int cli_quantize_net(const struct genome *g, const struct cli_quant_args *qa, struct tv_error *err);
/* task eval (cmd_task.c): opens task with its [task] values: the config's
 * (the file config, or config_text named config when not NULL), then each
 * KEY=VALUE of sets; task NULL takes the config's, else must be the same. */
struct master_config;
int cli_task_open_args(const char *task, const char *config, const char *config_text,
                       const char *const *sets, size_t n_sets, struct master_config *c,
                       struct task_instance **t, struct tv_error *err);

/* net: a sparse random start, training, test accuracy (cmd_train.c) */
int cli_cmd_net_init(int argc, char **argv);
int cli_cmd_net_train(int argc, char **argv);
int cli_cmd_net_test(int argc, char **argv);
/* Loads DATA as --data takes it (spec, its --labels file or NULL, --header
 * as enum data_header) for a network of n_in inputs and n_out outputs
 * (SIZE_MAX: labels unchecked): every row n_in features, every label below
 * n_out; a label past them is named with its file and line (CSV) or byte
 * offset (IDX). *d empty on error. */
struct data_set;
int cli_load_data(const char *spec, const char *labels, int header, size_t n_in, size_t n_out,
                  struct data_set *d, struct tv_error *err);

/* The largest file a command reads whole (a network, NET.q, rows): a
 * 1<<27-connection genome is ~1.6 GB of msgpack, text about three times
 * that. Files beyond are refused. */
#define CLI_FILE_MAX ((size_t)4 << 30)

/* Reads a whole file ("-" is stdin) into *out (NUL-terminated, not counted in
 * out->len). At most max_bytes; TV_ELIMIT past that. */
int cli_read_file(const char *path, size_t max_bytes, struct tv_buf *out, struct tv_error *err);
/* Writes data to path atomically (temporary file + rename, then the folder
 * synced); "-" is stdout. A symbolic link is written through (the file it
 * names is replaced, the link stays); an existing file keeps its mode. */
int cli_write_file(const char *path, const void *data, size_t len, struct tv_error *err);
/* 0 if cli_write_file(path) can create its file (a temporary file beside
 * the target is made and removed), else an error naming path: so that a
 * long command fails before its work, not after. "-" is stdout: 0. */
int cli_check_writable(const char *path, struct tv_error *err);
/* genome_write_dot() into the file at path, as cli_write_file(). */
int cli_write_dot_file(const struct genome *g, const char *title, const char *path,
                       struct tv_error *err);
/* Loads a network file in either format (msgpack or text, told apart by the
 * first byte) and validates it. */
int cli_load_net(const char *path, struct genome *g, struct tv_error *err);
/* Parses one input row: `n_vals` comma-separated finite numbers (blanks
 * around them allowed) from line[0..len), into vals. TV_EINVAL with a message
 * such as "expected 3 numbers, got 2" or "value 2 ('x1'): not a number". */
int cli_row_parse(const char *line, size_t len, float *vals, size_t n_vals, struct tv_error *err);
/* 1 if format names a network format cli_write_net writes: "text",
 * "msgpack" or "dot". */
int cli_net_format_known(const char *format);
/* Writes g to path ("-" is stdout; atomically, as cli_write_file) in
 * format: text, msgpack or dot (a Graphviz drawing titled title, which may
 * be NULL). */
int cli_write_net(const struct genome *g, const char *format, const char *title, const char *path,
                  struct tv_error *err);
/* Opens the database db read-only and reads into *info the run a command
 * means (name, or NULL for its only run: store_run_pick). On success the
 * caller releases *info and closes *st; on failure nothing is left open. */
struct store;
struct store_run_info;
int cli_open_run(const char *db, const char *name, struct store **st, struct store_run_info *info,
                 struct tv_error *err);
/* ---- a command's ends (args.c) ---- */
/* 1 if argv[i] is -h or --help. */
int cli_wants_help(int argc, char **argv);
/* The same, usage printed on stdout: a command then returns 0. */
int cli_help(int argc, char **argv, const char *usage);
/* Arguments a command cannot take: prints usage on stderr and returns 2. */
int cli_usage_error(const char *usage);
/* The one wording of an argument a command does not take, into err
 * (TV_EINVAL): "unexpected argument 'ARG'" (a second name, a word the
 * command has no place for) or, for ARG starting with '-', "unknown option
 * 'ARG', or its value is missing". Returns the error code. */
int cli_arg_error(const char *arg, struct tv_error *err);
/* The same printed as "trevo CMD: MESSAGE" with usage on stderr; returns 2.
 * Every command refuses its first argument too many this way. */
int cli_refuse_arg(const char *cmd, const char *arg, const char *usage);
/* Prints "trevo: MESSAGE" to stderr and returns 1. */
int cli_fail(const struct tv_error *err);
/* The front of a command that parses its arguments into a struct: -h or
 * --help prints usage on stdout and returns 0; arguments that
 * parse(argc, argv, args, err) refuses print "trevo CMD: MESSAGE" (cmd such
 * as "net train") and usage on stderr and return 2; -1 when they parsed. */
int cli_front(int argc, char **argv, const char *cmd, const char *usage,
              int (*parse)(int, char **, void *, struct tv_error *), void *args);

/* ---- options and their values (args.c) ---- */
/* An option that takes a value: `name VALUE` sets *value. */
struct cli_opt {
    const char *name;
    const char **value;
};
/* Parses argv[1..argc) of command cmd in order: -h or --help prints usage
 * on stdout and returns 0; an option of opts[0..n_opts) with its value sets
 * it; the first argument not starting with '-' sets *positional; the first
 * argument that is none of these is refused (cli_refuse_arg: 2). Returns -1
 * when every argument was taken. */
int cli_parse_args(int argc, char **argv, const char *cmd, const struct cli_opt *opts,
                   size_t n_opts, const char **positional, const char *usage);
/* An option without a value (--csv): takes every argv[1..*argc) equal to
 * flag out of argv (its NULL end moves with it) and returns 1 if there was
 * one; cli_parse_args then parses the rest. */
int cli_take_flag(int *argc, char **argv, const char *flag);
/* The number parsers of every option (args.c); each refuses with
 * "OPT: expected ..., got 'S'" (TV_EINVAL).
 * A whole number in [lo, hi] (the range exact in a double: hi <= 2^53). */
int cli_parse_whole(const char *opt, const char *s, double lo, double hi, double *out,
                    struct tv_error *err);
/* cli_parse_whole into a size_t. */
int cli_parse_size(const char *opt, const char *s, size_t lo, size_t hi, size_t *out,
                   struct tv_error *err);
/* Exactly n comma-separated whole numbers in [lo, hi] into out[0..n) (form
 * names them in the message: "IN,OUT,K,H,W"); a field that is not names
 * itself ("OPT field K: ..."). */
int cli_parse_size_list(const char *opt, const char *form, const char *s, size_t n, size_t lo,
                        size_t hi, size_t *out, struct tv_error *err);
/* A finite number in (lo, hi] (lo_open) or [lo, hi]. */
int cli_parse_real(const char *opt, const char *s, double lo, int lo_open, double hi, double *out,
                   struct tv_error *err);
/* A whole number in [0, max] as 64 bits (seeds; the message is the
 * config's: "expected a non-negative integer"). */
int cli_parse_u64(const char *opt, const char *v, uint64_t max, uint64_t *out,
                  struct tv_error *err);
/* --header's value (auto, yes or no) into *header (enum data_header):
 * "OPT: expected auto, yes or no, got 'S'". s NULL: auto. */
int cli_parse_header(const char *opt, const char *s, int *header, struct tv_error *err);
/* "784,1000,10" into sizes[0..*n): 2 to CLI_MAX_LAYERS sizes. */
#define CLI_MAX_LAYERS 64
int cli_parse_layers(const char *s, uint32_t *sizes, size_t *n, struct tv_error *err);

#endif
