/* files.c -- files as every command reads and writes them (cli.h): a whole
 * file (or stdin) into memory, an atomic write (or stdout), a network in
 * either format in and in any format out, a run of a database to read, a
 * data set for a network. */
#include "cli.h"
#include "data.h"
#include "fit.h"
#include "quant.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_read_file(const char *path, size_t max_bytes, struct tv_buf *out, struct tv_error *err)
{
    int is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return tv_error_set(err, TV_EIO, "%s: cannot open: %s", path, strerror(errno));
    out->len = 0;
    int rc = 0;
    for (;;) {
        if (tv_buf_reserve(out, 65536 + 1)) {
            rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory reading the file", path);
            break;
        }
        size_t n = fread(out->data + out->len, 1, out->cap - out->len - 1, f);
        out->len += n;
        if (out->len > max_bytes) {
            rc = tv_error_set(err, TV_ELIMIT, "%s: larger than the limit of %zu bytes", path,
                              max_bytes);
            break;
        }
        if (n == 0) {
            if (ferror(f))
                rc = tv_error_set(err, TV_EIO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    if (!rc)
        out->data[out->len] = '\0';
    if (!is_stdin)
        fclose(f);
    return rc;
}

/* The file path names: each symbolic link followed to what it names (a
 * relative link from the link's folder), at most 40 of them; path itself
 * when it is not a link or does not exist yet. */
static int follow_links(const char *path, char *out, size_t cap, struct tv_error *err)
{
    if ((size_t)snprintf(out, cap, "%s", path) >= cap)
        return tv_error_set(err, TV_EINVAL, "%s: path too long", path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(out, &st) || !S_ISLNK(st.st_mode))
            return 0;
        if (hops == 40)
            return tv_error_set(err, TV_EINVAL, "%s: too many levels of symbolic links", path);
        char link[4096];
        ssize_t n = readlink(out, link, sizeof link - 1);
        if (n < 0)
            return tv_error_set(err, TV_EIO, "%s: cannot read the link: %s", out, strerror(errno));
        link[n] = '\0';
        const char *slash = strrchr(out, '/');
        size_t dir = link[0] == '/' || !slash ? 0 : (size_t)(slash - out) + 1;
        if (dir + (size_t)n >= cap)
            return tv_error_set(err, TV_EINVAL, "%s: path too long", path);
        memcpy(out + dir, link, (size_t)n + 1);
    }
}

/* Makes the rename of a file in the folder of path durable. */
static int sync_folder(const char *path, struct tv_error *err)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n >= sizeof dir)
        return tv_error_set(err, TV_EINVAL, "%s: path too long", path);
    memcpy(dir, slash ? path : ".", slash ? n : 1);
    dir[slash ? (n ? n : 1) : 1] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    int ok = fd >= 0 && (fsync(fd) == 0 || errno == EINVAL); /* some file systems refuse */
    int saved = errno;
    if (fd >= 0)
        close(fd);
    return ok ? 0
              : tv_error_set(err, TV_EIO, "%s: cannot sync its folder: %s", path, strerror(saved));
}

/* The file path names (through its links) into target, whether it exists
 * (*old), and a new temporary file beside it, tmp, open for writing: its
 * descriptor, or -1 and *err naming path (not the temporary file). */
static int open_beside(const char *path, char *target, char *tmp, size_t cap, struct stat *old,
                       int *exists, struct tv_error *err)
{
    if (follow_links(path, target, cap, err))
        return -1;
    *exists = stat(target, old) == 0;
    if (*exists && !S_ISREG(old->st_mode)) {
        tv_error_set(err, TV_EINVAL, "%s: not a regular file", path);
        return -1;
    }
    if ((size_t)snprintf(tmp, cap + 32, "%s.tmp.%ld", target, (long)getpid()) >= cap + 32) {
        tv_error_set(err, TV_EINVAL, "%s: path too long", path);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
        tv_error_set(err, TV_EIO, "%s: cannot write there: %s", path, strerror(errno));
    return fd;
}

int cli_check_writable(const char *path, struct tv_error *err)
{
    if (!strcmp(path, "-"))
        return 0;
    char target[4096], tmp[4096 + 32];
    struct stat old;
    int exists, fd = open_beside(path, target, tmp, sizeof target, &old, &exists, err);
    if (fd < 0)
        return err->code;
    close(fd);
    remove(tmp);
    return 0;
}

int cli_write_file(const char *path, const void *data, size_t len, struct tv_error *err)
{
    if (!strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout))
            return tv_error_set(err, TV_EIO, "stdout: write error: %s", strerror(errno));
        return 0;
    }
    /* the file a link names is replaced, not the link; an existing file
     * keeps its permissions */
    char target[4096], tmp[4096 + 32];
    struct stat old;
    int keep_mode, fd = open_beside(path, target, tmp, sizeof target, &old, &keep_mode, err);
    if (fd < 0)
        return err->code;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int saved = errno;
        close(fd);
        remove(tmp);
        return tv_error_set(err, TV_EIO, "%s: cannot write there: %s", path, strerror(saved));
    }
    int ok = !keep_mode || fchmod(fd, old.st_mode & 07777) == 0;
    ok = fwrite(data, 1, len, f) == len && ok;
    ok = (fflush(f) == 0) && ok;
    ok = (fsync(fd) == 0) && ok;
    int saved = errno;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        remove(tmp);
        return tv_error_set(err, saved == ENOSPC ? TV_ENOSPACE : TV_EIO, "%s: write error: %s",
                            path, strerror(saved));
    }
    if (rename(tmp, target)) {
        saved = errno;
        remove(tmp);
        return tv_error_set(err, TV_EIO, "%s: cannot rename into place: %s", path, strerror(saved));
    }
    return sync_folder(target, err);
}

int cli_load_net(const char *path, struct genome *g, struct tv_error *err)
{
    struct tv_buf buf = {0};
    int rc = cli_read_file(path, CLI_FILE_MAX, &buf, err);
    if (!rc && nn_qnet_sniff(buf.data, buf.len))
        rc = tv_error_set(err, TV_EINVAL,
                          "%s: an int8 NET.q (trevo net quantize); this command takes a float "
                          "network (text or msgpack)",
                          path);
    if (!rc)
        rc = genome_load(g, buf.data, buf.len, path, NULL, err);
    tv_buf_free(&buf);
    return rc;
}

int cli_write_dot_file(const struct genome *g, const char *title, const char *path,
                       struct tv_error *err)
{
    struct tv_buf buf = {0};
    int rc = genome_write_dot(g, title, &buf, err);
    if (!rc)
        rc = cli_write_file(path, buf.data, buf.len, err);
    tv_buf_free(&buf);
    return rc;
}

int cli_net_format_known(const char *format)
{
    return !strcmp(format, "text") || !strcmp(format, "msgpack") || !strcmp(format, "dot");
}

int cli_write_net(const struct genome *g, const char *format, const char *title, const char *path,
                  struct tv_error *err)
{
    if (!strcmp(format, "dot"))
        return cli_write_dot_file(g, title, path, err);
    if (!strcmp(format, "msgpack")) {
        struct tv_buf buf = {0};
        int rc = genome_encode(g, &buf, err);
        if (!rc)
            rc = cli_write_file(path, buf.data, buf.len, err);
        tv_buf_free(&buf);
        return rc;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return tv_error_set(err, TV_ENOMEM, "out of memory");
    int rc = genome_write_text(g, mem, err);
    if (fclose(mem) && !rc)
        rc = tv_error_set(err, TV_ENOMEM, "out of memory");
    if (!rc)
        rc = cli_write_file(path, text, len, err);
    free(text);
    return rc;
}

int cli_net_is_int8(const char *path)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : NULL;
    if (!f)
        return 0;
    char head[16];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return nn_qnet_sniff(head, n);
}

int cli_load_qnet(const char *path, struct nn_qnet **q, struct tv_error *err)
{
    struct tv_buf buf = {0};
    int rc = cli_read_file(path, CLI_FILE_MAX, &buf, err);
    if (!rc)
        rc = nn_qnet_read((const char *)buf.data, buf.len, path, q, err);
    tv_buf_free(&buf);
    return rc;
}

int cli_load_plan(const char *path, struct nn_plan **plan, struct tv_error *err)
{
    *plan = NULL;
    if (cli_net_is_int8(path)) {
        struct nn_qnet *q;
        int rc = cli_load_qnet(path, &q, err);
        if (!rc)
            rc = nn_qplan_compile(q, plan, err);
        nn_qnet_free(q);
        return rc;
    }
    struct genome g;
    genome_init(&g);
    int rc = cli_load_net(path, &g, err);
    if (!rc)
        rc = nn_plan_compile(&g, NULL, plan, err);
    genome_release(&g);
    return rc;
}

int cli_export_c(const char *in, const char *prefix, const char *out, struct tv_error *err)
{
    struct tv_buf buf = {0};
    struct nn_cost c;
    int rc, int8 = cli_net_is_int8(in);
    if (int8) {
        struct nn_qnet *q;
        rc = cli_load_qnet(in, &q, err);
        if (!rc)
            rc = nn_qnet_export_c(q, prefix, &buf, err);
        if (!rc)
            rc = nn_qnet_cost(q, &c, err);
        nn_qnet_free(q);
    } else {
        struct genome g;
        genome_init(&g);
        rc = cli_load_net(in, &g, err);
        if (!rc && (rc = nn_net_export_c(&g, prefix, &buf, err)))
            tv_error_prefix(err, "%s", in);
        genome_release(&g);
    }
    if (!rc)
        rc = cli_write_file(out, buf.data, buf.len, err);
    if (!rc && int8)
        cli_print_cost(stderr, strcmp(out, "-") ? out : in, &c, 0);
    tv_buf_free(&buf);
    return rc;
}

void cli_print_cost(FILE *f, const char *what, const struct nn_cost *c, int estimate)
{
    fprintf(f, "%s: flash %s%llu bytes, RAM %llu bytes, %llu MACs (int8 C on a device%s)\n", what,
            estimate ? "<= " : "", (unsigned long long)c->flash, (unsigned long long)c->ram,
            (unsigned long long)c->macs, estimate ? ", before calibration" : "");
}

int cli_open_run(const char *db, const char *name, struct store **st, struct store_run_info *info,
                 struct tv_error *err)
{
    struct store_options so = {.flags = STORE_READONLY};
    memset(info, 0, sizeof *info);
    int rc = store_open(db, &so, st, err);
    if (!rc && (rc = store_run_pick(*st, name, info, err))) {
        store_run_info_release(info);
        store_close(*st, NULL);
        *st = NULL;
    }
    return rc;
}

/* cli_load_data (cli.h): data.h's loader, its classes checked against the
 * network's outputs and its features against its inputs (fit.h). */
int cli_load_data(const char *spec, const char *labels, int header, size_t n_in, size_t n_out,
                  struct data_set *d, struct tv_error *err)
{
    struct data_opts o = {.header = header};
    int rc = data_load_opts(spec, labels, &o, d, err);
    if (!rc && n_out != SIZE_MAX && d->n_classes > n_out && strncmp(spec, "fashion-mnist:", 14)) {
        /* more classes than outputs: loaded again with every label below
         * n_out, so that the first one past names its file and line */
        char why[64];
        snprintf(why, sizeof why, "the network has %zu outputs", n_out);
        o.n_classes = n_out;
        o.classes_from = why;
        data_free(d);
        rc = data_load_opts(spec, labels, &o, d, err);
        if (!rc) /* the file changed in between: the count is all we can name */
            rc = tv_error_set(err, TV_EINVAL, "%s: more classes than the network's %zu outputs",
                              spec, n_out);
    }
    if (!rc && (rc = fit_check_data(d, n_in, n_out == SIZE_MAX ? d->n_classes : n_out, err)))
        tv_error_prefix(err, "%s", spec);
    if (rc)
        data_free(d);
    return rc;
}
