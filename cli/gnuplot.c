/* gnuplot.c -- what `trevo plot` and `trevo front` share to draw with
 * gnuplot (gnuplot.h): a private temporary directory for the data, the
 * script and the PNG, quoting, and gnuplot started without a shell. */
#include "gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* A double for gnuplot's data file: "?" (missing) when not finite. */
void cli_plot_value(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, " %.17g", v);
    else
        fputs(" ?", f);
}

/* Writes s as a single-quoted gnuplot string: inside one, only '' is special
 * (a quote); control characters become spaces. */
void cli_plot_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'')
            fputs("''", f);
        else
            fputc(c < 0x20 || c == 0x7f ? ' ' : c, f);
    }
    fputc('\'', f);
}

int cli_plot_create(const char *path, FILE **f, struct tv_error *err)
{
    *f = fopen(path, "w");
    return *f ? 0 : tv_error_set(err, TV_EIO, "%s: cannot create: %s", path, strerror(errno));
}

int cli_plot_close(FILE *f, const char *path, int rc, struct tv_error *err)
{
    int saved = errno, bad = ferror(f);
    bad |= fclose(f);
    if (bad && !rc)
        rc = tv_error_set(err, TV_EIO, "%s: write error: %s", path, strerror(saved));
    return rc;
}

int cli_plot_script_open(const struct cli_plot_tmp *t, FILE **fp, struct tv_error *err)
{
    int rc = cli_plot_create(t->script, fp, err);
    if (rc)
        return rc;
    FILE *f = *fp;
    /* pngcairo (antialiased) where this gnuplot has it, else the libgd png. */
    fputs("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
          "    set terminal pngcairo size 1000,800 font 'sans,10' noenhanced\n"
          "} else {\n"
          "    set terminal png size 1000,800 noenhanced\n"
          "}\n"
          "set output ",
          f);
    cli_plot_quoted(f, t->png);
    fputs("\ndata = ", f);
    cli_plot_quoted(f, t->data);
    fputs("\nset datafile missing '?'\n", f);
    return 0;
}

static void log_tail(const char *path, char *msg, size_t size)
{
    struct tv_buf b = {0};
    msg[0] = '\0';
    if (cli_read_file(path, 1 << 20, &b, NULL) || !b.len) {
        tv_buf_free(&b);
        snprintf(msg, size, "(no output)");
        return;
    }
    size_t len = b.len;
    while (len && (b.data[len - 1] == '\n' || b.data[len - 1] == ' '))
        len--;
    size_t start = len > size - 1 ? len - (size - 1) : 0;
    size_t k = 0;
    for (size_t i = start; i < len && k + 1 < size; i++)
        msg[k++] = b.data[i] == '\n' ? '|' : (char)b.data[i];
    msg[k] = '\0';
    tv_buf_free(&b);
}

/* Runs `gnuplot SCRIPT` with stdin from /dev/null and its output in the log. */
int cli_plot_run_gnuplot(const struct cli_plot_tmp *t, struct tv_error *err)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa))
        return tv_error_set(err, TV_ENOMEM, "plot: out of memory");
    int rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc)
        rc = posix_spawn_file_actions_addopen(&fa, 1, t->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    char prog[] = "gnuplot";
    char script[sizeof t->script];
    snprintf(script, sizeof script, "%s", t->script);
    char *args[] = {prog, script, NULL};
    pid_t pid = -1;
    if (!rc)
        rc = posix_spawnp(&pid, prog, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc == ENOENT)
        return tv_error_set(err, TV_ENOTFOUND,
                            "plot: gnuplot not found in PATH: install it "
                            "(Debian: apt-get install gnuplot-nox)");
    if (rc)
        return tv_error_set(err, TV_EIO, "plot: cannot start gnuplot: %s", strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return tv_error_set(err, TV_EIO, "plot: waiting for gnuplot: %s", strerror(errno));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    char tail[320];
    log_tail(t->log, tail, sizeof tail);
    if (WIFSIGNALED(status))
        return tv_error_set(err, TV_EIO, "plot: gnuplot killed by signal %d: %s", WTERMSIG(status),
                            tail);
    return tv_error_set(err, TV_EIO, "plot: gnuplot failed (exit status %d): %s",
                        WEXITSTATUS(status), tail);
}

/* Makes the private temporary directory: $TMPDIR if it is a plain path, else /tmp. */
int cli_plot_tmp_make(struct cli_plot_tmp *t, struct tv_error *err)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base || strlen(base) > 256)
        base = "/tmp";
    for (const char *p = base; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            base = "/tmp";
    snprintf(t->dir, sizeof t->dir, "%s/trevo-plot-XXXXXX", base);
    if (!mkdtemp(t->dir))
        return tv_error_set(err, TV_EIO, "%s: cannot create a temporary directory: %s", t->dir,
                            strerror(errno));
    snprintf(t->data, sizeof t->data, "%s/data.txt", t->dir);
    snprintf(t->script, sizeof t->script, "%s/plot.gp", t->dir);
    snprintf(t->png, sizeof t->png, "%s/plot.png", t->dir);
    snprintf(t->log, sizeof t->log, "%s/gnuplot.log", t->dir);
    return 0;
}

void cli_plot_tmp_remove(const struct cli_plot_tmp *t)
{
    if (!t->dir[0])
        return;
    const char *const files[] = {t->data, t->script, t->png, t->log};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    rmdir(t->dir);
}

int cli_plot_finish(const struct cli_plot_tmp *t, const char *out, struct tv_error *err)
{
    struct tv_buf png = {0};
    int rc = cli_plot_run_gnuplot(t, err);
    if (!rc)
        rc = cli_read_file(t->png, CLI_PLOT_PNG_MAX, &png, err);
    if (!rc)
        rc = cli_write_file(out, png.data, png.len, err);
    tv_buf_free(&png);
    return rc;
}
