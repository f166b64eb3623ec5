/*
 * gnuplot.h -- private to cli/ (cmd_plot.c, cmd_front.c): drawing with
 * gnuplot. A command makes a private temporary directory
 * (cli_plot_tmp_make), writes its data and a script that starts with
 * cli_plot_script_head into it, and cli_plot_finish runs gnuplot (no shell:
 * neither a path nor a run name reaches a command line; in the script they
 * are quoted text) and moves the PNG into place atomically
 * (cli_write_file); cli_plot_tmp_remove cleans up.
 */
#ifndef TREVO_CLI_GNUPLOT_H
#define TREVO_CLI_GNUPLOT_H

#include <stdio.h>

#include "cli.h"

/* The largest PNG read back from gnuplot. */
#define CLI_PLOT_PNG_MAX ((size_t)256 << 20)

/* The files of one plot, in a private temporary directory. */
struct cli_plot_tmp {
    char dir[512];
    char data[600], script[600], png[600], log[600];
};

/* A double for gnuplot's data file: " VALUE", or " ?" (missing) when not finite. */
void cli_plot_value(FILE *f, double v);
/* s as a single-quoted gnuplot string. */
void cli_plot_quoted(FILE *f, const char *s);
/* *f: path opened for writing. 0, or TV_EIO naming it (*f NULL). */
int cli_plot_create(const char *path, FILE **f, struct tv_error *err);
/* Closes f, written to path: rc when it is not 0, else 0 or an error naming
 * a write error. */
int cli_plot_close(FILE *f, const char *path, int rc, struct tv_error *err);
/* *f: t->script opened, its start written (the terminal, 1000 x 800, the
 * output and data file names). 0, or TV_EIO naming it (*f NULL). */
int cli_plot_script_open(const struct cli_plot_tmp *t, FILE **f, struct tv_error *err);
/* Runs `gnuplot SCRIPT`; its output is in t->log, whose tail an error quotes. */
int cli_plot_run_gnuplot(const struct cli_plot_tmp *t, struct tv_error *err);
/* The private temporary directory ($TMPDIR if a plain path, else /tmp) and its file names. */
int cli_plot_tmp_make(struct cli_plot_tmp *t, struct tv_error *err);
void cli_plot_tmp_remove(const struct cli_plot_tmp *t);
/* Runs gnuplot and writes its PNG to out. */
int cli_plot_finish(const struct cli_plot_tmp *t, const char *out, struct tv_error *err);

#endif
