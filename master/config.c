/* config.c -- experiment configs: INI text (parsed by inih) into a
 * struct master_config, through the typed key table of config_keys.c (and a
 * task's own table for [task]); parsing, defaults, the dump, `--set` and
 * `--help-config` all read it. */
#include "config_keys.h"
#include "plugin.h"

#include <ini.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- [task]: the keys of the task's own table (struct task_key) -------- */

/* Key i of kind k as a row of ours: its value lives in a union task_value
 * (a T_BOOL or T_ENUM in an int beside it: task_value_set, task_value_format;
 * a T_STR in .s, at offset 0). */
static struct config_key task_row(const struct task_kind *k, size_t i)
{
    const struct task_key *t = &k->keys[i];
    enum key_type type = t->type == TASK_KEY_DOUBLE   ? T_DOUBLE
                         : t->type == TASK_KEY_BOOL   ? T_BOOL
                         : t->type == TASK_KEY_STRING ? T_STR
                         : t->type == TASK_KEY_CHOICE ? T_ENUM
                                                      : T_I64;
    return (struct config_key){"task", t->name, type,       0, TASK_STRING_MAX, 0, t->min,
                               t->max, NULL,    t->choices, 0, t->doc};
}

/* 1 if key row keeps its value in an int (not in the union). */
static int in_int(const struct config_key *row)
{
    return row->type == T_BOOL || row->type == T_ENUM;
}

static int task_value_set(struct task_params *p, const struct task_kind *k, size_t i,
                          const char *value, char *why, size_t why_len)
{
    struct config_key row = task_row(k, i);
    union task_value v = p->v[i];
    if (row.type == T_STR) /* no bytes of an older text after the new one's end */
        memset(&v, 0, sizeof v);
    int b = 0;
    if (master_config_key_set(in_int(&row) ? (void *)&b : (void *)&v, &row, value, why, why_len))
        return -1;
    if (in_int(&row))
        v.i = b;
    p->v[i] = v;
    return 0;
}

static void task_value_format(FILE *f, const struct task_params *p, const struct task_kind *k,
                              size_t i)
{
    struct config_key row = task_row(k, i);
    int b = (int)p->v[i].i;
    master_config_key_format(f, in_int(&row) ? (const void *)&b : (const void *)&p->v[i], &row);
}

void master_config_defaults(struct master_config *c)
{
    memset(c, 0, sizeof *c);
    char why[256];
    for (size_t i = 0; i < MASTER_CONFIG_N_KEYS; i++)
        if (master_config_keys[i].def)
            master_config_key_set(c, &master_config_keys[i], master_config_keys[i].def, why,
                                  sizeof why);
}

/* A [task] key as given: checked once the task is known (the section may
 * come before [run]). */
struct given_task_key {
    char name[64];
    char value[LINE_MAX_CHARS + 1];
    int line;
};

struct parse_ctx {
    struct master_config *c;
    struct given_task_key task_keys[TASK_MAX_KEYS];
    size_t n_task_keys;
    const char *next;                /* the text inih has not read yet */
    const char *cur;                 /* the line inih is parsing */
    int line;                        /* its number, 1-based */
    int lines[MASTER_CONFIG_N_KEYS]; /* where each key was given; 0: not given */
    int fail_line;                   /* the line of the first error the handler found */
    char key[96];                    /* its key ("" when the line has no key name) */
    char why[256];                   /* what is wrong with it */
    int failed;
};

/* inih's reader over the text: one line per call (precheck makes every line
 * fit), counted, so that the handler knows the line it is called for. */
static char *read_line(char *str, int num, void *stream)
{
    struct parse_ctx *x = stream;
    if (!*x->next || num < 2)
        return NULL;
    const char *nl = strchr(x->next, '\n');
    size_t n = nl ? (size_t)(nl - x->next) + 1 : strlen(x->next);
    if (n > (size_t)num - 1)
        n = (size_t)num - 1;
    memcpy(str, x->next, n);
    str[n] = '\0';
    x->cur = x->next;
    x->next += n;
    x->line++;
    return str;
}

static size_t key_index(const char *section, const char *name)
{
    for (size_t i = 0; i < MASTER_CONFIG_N_KEYS; i++)
        if (!strcmp(master_config_keys[i].section, section) &&
            !strcmp(master_config_keys[i].name, name))
            return i;
    return MASTER_CONFIG_N_KEYS;
}

/* Keeps a [task] key for check_task_keys. 1, or 0 with x->why set. */
static int task_key_given(struct parse_ctx *x, const char *name, const char *value)
{
    for (size_t i = 0; i < x->n_task_keys; i++)
        if (!strcmp(x->task_keys[i].name, name)) {
            snprintf(x->why, sizeof x->why, "given twice in [task] (first on line %d)",
                     x->task_keys[i].line);
            return 0;
        }
    if (x->n_task_keys == TASK_MAX_KEYS || strlen(name) >= sizeof x->task_keys[0].name) {
        snprintf(x->why, sizeof x->why, "unknown key in [task] (a task has at most %d keys)",
                 TASK_MAX_KEYS);
        return 0;
    }
    struct given_task_key *k = &x->task_keys[x->n_task_keys++];
    snprintf(k->name, sizeof k->name, "%s", name);
    snprintf(k->value, sizeof k->value, "%s", value);
    k->line = x->line;
    x->failed = 0;
    return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    struct parse_ctx *x = user;
    if (x->failed)
        return 1; /* only the first error is reported */
    x->failed = 1;
    x->fail_line = x->line;
    snprintf(x->key, sizeof x->key, "%s", name);
    if (!*name) { /* "= 3" */
        const char *sep = x->cur + strspn(x->cur, " \t");
        snprintf(x->why, sizeof x->why, "missing key name before '%c'", *sep == ':' ? ':' : '=');
        return 0;
    }
    if (!strcmp(section, "task"))
        return task_key_given(x, name, value);
    /* selection's home is [population]; [evolution] names it too */
    int alias = !strcmp(section, "evolution") && !strcmp(name, "selection");
    size_t i = key_index(alias ? "population" : section, name);
    if (i < MASTER_CONFIG_N_KEYS) {
        if (x->lines[i]) {
            if (i == key_index("population", "selection"))
                snprintf(x->why, sizeof x->why,
                         "given twice (in [population] or [evolution], one key; first on line "
                         "%d)",
                         x->lines[i]);
            else
                snprintf(x->why, sizeof x->why, "given twice in [%s] (first on line %d)", section,
                         x->lines[i]);
            return 0;
        }
        x->lines[i] = x->line;
        if (master_config_key_set(x->c, &master_config_keys[i], value, x->why, sizeof x->why))
            return 0;
        x->failed = 0;
        return 1;
    }
    int known_section = 0;
    for (size_t j = 0; j < MASTER_CONFIG_N_KEYS; j++)
        known_section |= !strcmp(master_config_keys[j].section, section);
    if (!*section)
        snprintf(x->why, sizeof x->why, "outside any [section]");
    else if (!known_section)
        snprintf(x->why, sizeof x->why,
                 "unknown section [%.40s] (sections: run, population, evolution, speciation, "
                 "genome, store, farm, log, task)",
                 section);
    else
        snprintf(x->why, sizeof x->why, "unknown key in [%.40s]", section);
    return 0;
}

/* inih reads lines of at most INI_MAX_LINE bytes and stops at a NUL: check
 * both first, so that no line is silently cut or skipped. */
static int precheck(const char *text, const char *file, struct tv_error *err)
{
    size_t line = 1, col = 0;
    for (const char *p = text; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '\n') {
            line++;
            col = 0;
            continue;
        }
        if (++col > LINE_MAX_CHARS)
            return tv_error_set(err, TV_EINVAL, "%s:%zu: line longer than %d characters", file,
                                line, LINE_MAX_CHARS);
        if (ch < 0x20 && ch != '\t' && ch != '\r')
            return tv_error_set(err, TV_EINVAL,
                                "%s:%zu: control character 0x%02x (not a text config file)", file,
                                line, ch);
    }
    return 0;
}

/* An error about a key found valid alone but not with the others:
 * "FILE:LINE: key: reason", the line where the key was given. */
static int key_error(const struct parse_ctx *x, const char *file, const char *section,
                     const char *name, const char *why, struct tv_error *err)
{
    size_t i = key_index(section, name);
    if (i < MASTER_CONFIG_N_KEYS && x->lines[i])
        return tv_error_set(err, TV_EINVAL, "%s:%d: %s: %s", file, x->lines[i], name, why);
    return tv_error_set(err, TV_EINVAL, "%s: %s: %s", file, name, why);
}

/* The first of the [genome] keys names[0..n) the text gave, else names[0]. */
static const char *given_key(const struct parse_ctx *x, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = key_index("genome", names[i]);
        if (k < MASTER_CONFIG_N_KEYS && x->lines[k])
            return names[i];
    }
    return names[0];
}

/* A start with channels trained by the CNN trainer (the task's
 * trains_channels): the trainer takes no connection from an input pixel
 * into the head, which is what new local and skip connections mostly are. */
static int check_cnn_conns(const struct parse_ctx *x, const char *file,
                           const struct genome_mutation *m, struct tv_error *err)
{
    static const char *const names[] = {"add_local_rate", "add_skip_rate", "add_local_per_conn",
                                        "add_skip_per_conn"};
    const double rates[] = {m->add_local_rate, m->add_skip_rate, m->add_local_per_conn,
                            m->add_skip_per_conn};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++)
        if (rates[i] > 0) {
            char why[320];
            snprintf(why, sizeof why,
                     "is %g; it must be 0 when the task trains the channels of init_net "
                     "(classify: [task] train_steps > 0): the CNN trainer takes no connection "
                     "from an input pixel (set add_local_rate, add_skip_rate, "
                     "add_local_per_conn and add_skip_per_conn to 0)",
                     rates[i]);
            return key_error(x, file, "genome", names[i], why, err);
        }
    return 0;
}

/* init = net: the file reads, within the limits, and fits the task. */
static int check_start_net(const struct parse_ctx *x, const char *file,
                           const struct master_config *c, const struct task_instance *t,
                           struct tv_error *err)
{
    struct genome g;
    genome_init(&g);
    struct tv_error e = {0};
    int rc = worker_load_net(c->worker.init_net, &c->worker.limits, &g, &e);
    if (!rc)
        rc = task_check_shape(t, &g, &e);
    size_t n_channels = g.n_channels;
    genome_release(&g);
    if (rc == TV_ENOMEM)
        return tv_error_set(err, rc, "%s: init_net: %s", file, e.msg);
    if (rc)
        return key_error(x, file, "genome", "init_net", e.msg, err);
    return n_channels && t->trains_channels ? check_cnn_conns(x, file, &c->worker.mutation, err)
                                            : 0;
}

/* The worker builds the starting genome before any limit applies: it must
 * fit the genome limits. Its neurons are known exactly; of its connections,
 * the mean number between adjacent layers (a lower bound of the mean count:
 * skip and recurrent ones come on top). */
static int check_start_size(const struct parse_ctx *x, const char *file,
                            const struct master_config *c, const struct task_instance *t,
                            struct tv_error *err)
{
    static const char *const neuron_keys[] = {"init_hidden", "max_neurons"};
    static const char *const conn_keys[] = {"init_hidden", "init_density", "init_densities",
                                            "max_conns"};
    const struct worker_params *w = &c->worker;
    int layered = w->init == WORKER_INIT_LAYERED;
    double in = (double)t->n_inputs, out = (double)t->n_outputs;
    double neurons = in + out, conns = in * out;
    if (layered) {
        double prev = in;
        conns = 0;
        for (size_t i = 0; i <= w->n_init_hidden; i++) {
            double next = i < w->n_init_hidden ? w->init_hidden[i] : out;
            neurons += i < w->n_init_hidden ? next : 0;
            conns += (w->n_init_densities ? w->init_densities[i] : w->init_density) * prev * next;
            prev = next;
        }
    }
    char why[160];
    if (neurons > (double)w->limits.max_neurons) {
        snprintf(why, sizeof why, "a starting genome of %.0f neurons is over max_neurons = %zu",
                 neurons, w->limits.max_neurons);
        return key_error(x, file, "genome", given_key(x, neuron_keys + !layered, 2 - !layered), why,
                         err);
    }
    if (conns > (double)w->limits.max_conns) {
        snprintf(why, sizeof why, "a starting genome of %s%.0f connections is over max_conns = %zu",
                 layered ? "about " : "", conns, w->limits.max_conns);
        return key_error(x, file, "genome",
                         given_key(x, conn_keys + 3 * !layered, 4 - 3 * (size_t)!layered), why,
                         err);
    }
    return 0;
}

/* init_densities and init_skip_densities, when given, have one value per
 * pair of the layers init_hidden makes. */
static int check_pair_densities(const struct parse_ctx *x, const char *file,
                                const struct worker_params *w, struct tv_error *err)
{
    size_t h = w->n_init_hidden;
    const size_t given[2] = {w->n_init_densities, w->n_init_skip_densities};
    const size_t want[2] = {h + 1, h * (h + 1) / 2}; /* adjacent, skip pairs of h + 2 layers */
    static const char *const names[2] = {"init_densities", "init_skip_densities"};
    for (int t = 0; t < 2; t++)
        if (given[t] && given[t] != want[t]) {
            char why[160];
            snprintf(why, sizeof why, "%zu values for the %zu %s layer pairs of %zu hidden layers",
                     given[t], want[t], t ? "skip" : "adjacent", h);
            return key_error(x, file, "genome", names[t], why, err);
        }
    return 0;
}

/* The [task] keys given, against the table of the task [run] names. */
/* "has: a, b" or "has no keys": k's [task] keys, for an unknown key's error
 * (classify's 16 take about 160 characters). */
#define TASK_KEY_NAMES_MAX 384
static const char *task_key_names(const struct task_kind *k, char names[TASK_KEY_NAMES_MAX])
{
    snprintf(names, TASK_KEY_NAMES_MAX, "%s", k->n_keys ? "has: " : "has no keys");
    for (size_t n = 0; n < k->n_keys; n++)
        snprintf(names + strlen(names), TASK_KEY_NAMES_MAX - strlen(names), "%s%s", n ? ", " : "",
                 k->keys[n].name);
    return names;
}

static int check_task_keys(const struct parse_ctx *x, const char *file, struct master_config *c,
                           struct tv_error *err)
{
    const struct task_kind *k = c->task_kind;
    task_params_defaults(k, &c->task_params);
    for (size_t j = 0; j < x->n_task_keys; j++) {
        const struct given_task_key *g = &x->task_keys[j];
        int i = task_key_find(k, g->name);
        char why[256];
        if (i < 0) {
            char names[TASK_KEY_NAMES_MAX];
            return tv_error_set(err, TV_EINVAL, "%s:%d: %s: unknown key in [task] (task %s %s)",
                                file, g->line, g->name, k->name, task_key_names(k, names));
        }
        if (task_value_set(&c->task_params, k, (size_t)i, g->value, why, sizeof why))
            return tv_error_set(err, TV_EINVAL, "%s:%d: %s: %s", file, g->line, g->name, why);
    }
    return 0;
}

/* The parse; the task instance opened for its shape is handed to *keep
 * (keep not NULL), else closed. */
static int parse(struct master_config *c, const char *text, const char *file,
                 struct task_instance **keep, struct tv_error *err)
{
    master_config_defaults(c);
    int rc = precheck(text, file, err);
    if (rc)
        return rc;
    struct parse_ctx x = {.c = c, .next = text, .cur = text};
    /* An indented line is a key of its own, not the continuation of the
     * previous value (inih's default). */
    ini_allow_multiline = false;
    int line = ini_parse_stream(read_line, &x, handler, &x);
    if (line < 0)
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", file);
    if (line != 0 || x.failed) {
        /* inih reports the line of the first error, syntax errors included,
         * which never reach the handler. */
        if (!x.failed || x.fail_line != line)
            return tv_error_set(err, TV_EINVAL,
                                "%s:%d: syntax error (expected [section] or key = value)", file,
                                line);
        if (!x.key[0])
            return tv_error_set(err, TV_EINVAL, "%s:%d: %s", file, line, x.why);
        return tv_error_set(err, TV_EINVAL, "%s:%d: %s: %s", file, line, x.key, x.why);
    }
    for (size_t i = 0; i < MASTER_CONFIG_N_KEYS; i++)
        if (!master_config_keys[i].def && !x.lines[i])
            return tv_error_set(err, TV_EINVAL, "%s: %s: required key missing from [%s]", file,
                                master_config_keys[i].name, master_config_keys[i].section);
    /* One limit for everything: decoding, and growth by mutation. */
    c->worker.mutation.limits = c->worker.limits;
    if (task_is_plugin(c->task)) {
        /* a plugin task: its file (plugin.h), refused here with the line,
         * as a bad value of the config (TV_EINVAL, as every other) */
        rc = task_plugin_load(c->task, &c->task_kind, err);
        size_t i = key_index("run", "task");
        if (rc) {
            tv_error_prefix(err, "%s:%d: task", file, x.lines[i]);
            rc = rc == TV_ENOMEM ? rc : TV_EINVAL;
            if (err)
                err->code = rc;
            return rc;
        }
    } else {
        c->task_kind = task_find(c->task);
    }
    if (!c->task_kind) {
        char why[256];
        snprintf(why, sizeof why, "no task named '%.200s'", c->task);
        return key_error(&x, file, "run", "task", why, err);
    }
    rc = check_task_keys(&x, file, c, err);
    if (rc)
        return rc;
    if (!c->name[0]) /* a plugin's run is named after its task, not its file */
        snprintf(c->name, sizeof c->name, "%s", c->task_kind->name);
    if (x.lines[key_index("evolution", "objectives")] && c->selection != MASTER_SEL_NSGA2)
        return key_error(&x, file, "evolution", "objectives", "is read only with selection = nsga2",
                         err);
    if (c->max_age > 0 && c->selection == MASTER_SEL_SPECIATED)
        return key_error(&x, file, "evolution", "max_age",
                         "needs selection = generational or nsga2 (speciated selection keeps "
                         "its species)",
                         err);
    if (c->worker.mutation.act_change_rate > 0 && !c->worker.mutation.act_choices)
        return key_error(&x, file, "genome", "act_change_rate", "needs act_choices", err);
    if (c->worker.mutation.hyper_min > c->worker.mutation.hyper_max) {
        char why[96];
        snprintf(why, sizeof why, "%g is above hyper_max %g", c->worker.mutation.hyper_min,
                 c->worker.mutation.hyper_max);
        return key_error(&x, file, "genome", "hyper_min", why, err);
    }
    if (c->worker.init_model == GENOME_MODEL_LIF)
        return key_error(&x, file, "genome", "init_model",
                         "lif neurons are read and written, not run (use cuba)", err);
    rc = check_pair_densities(&x, file, &c->worker, err);
    if (rc)
        return rc;
    if ((c->worker.init == WORKER_INIT_NET) != !!c->worker.init_net[0])
        return key_error(&x, file, "genome", c->worker.init_net[0] ? "init_net" : "init",
                         c->worker.init_net[0] ? "is read only with init = net"
                                               : "init = net needs init_net, a network file",
                         err);
    if (c->worker.init == WORKER_INIT_LAYERED && c->worker.n_init_hidden == 0 &&
        (c->worker.n_init_densities ? c->worker.init_densities[0] : c->worker.init_density) <= 0)
        return key_error(&x, file, "genome",
                         c->worker.n_init_densities ? "init_densities" : "init_density",
                         "a layered start needs density > 0", err);
    /* The task declares its inputs and outputs once open. */
    struct task_instance *t;
    rc = task_open(c->task_kind, &c->task_params, &t, err);
    if (rc)
        return tv_error_prefix(err, "%s", file);
    c->worker.mutation.conv.join_levels = t->trains_channels;
    rc = c->worker.init == WORKER_INIT_NET ? check_start_net(&x, file, c, t, err)
                                           : check_start_size(&x, file, c, t, err);
    if (rc || !keep) {
        task_close(t);
        return rc;
    }
    *keep = t;
    c->worker.task = t;
    return 0;
}

int master_config_parse(struct master_config *c, const char *text, const char *file,
                        struct tv_error *err)
{
    return parse(c, text, file, NULL, err);
}

int master_config_parse_task(struct master_config *c, const char *text, const char *file,
                             struct task_instance **task, struct tv_error *err)
{
    *task = NULL;
    return parse(c, text, file, task, err);
}

int master_config_open_task(struct master_config *c, struct task_instance **out,
                            struct tv_error *err)
{
    int rc = task_open(c->task_kind, &c->task_params, out, err);
    c->worker.task = rc ? NULL : *out;
    return rc;
}

/* The refusal of a key that cannot change on resume, naming those that can
 * (the table's K_RESUMABLE keys). */
static int fixed_on_resume(const char *assignment, const char *key, struct tv_error *err)
{
    char can[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < MASTER_CONFIG_N_KEYS && len < sizeof can; i++) {
        const struct config_key *k = &master_config_keys[i];
        if (k->flags & K_RESUMABLE)
            len += (size_t)snprintf(can + len, sizeof can - len, "%s%s.%s", len ? ", " : "",
                                    k->section, k->name);
    }
    return tv_error_set(err, TV_EINVAL, "--set %s: %s cannot change on resume (these can: %s)",
                        assignment, key, can);
}

/* --set task.plugin_sha256=HEX: the plugin's hash the user accepts in place
 * of the one the run started with (checked against the file's on resume). */
static int accept_plugin(struct master_config *c, const char *assignment, const char *hex,
                         struct tv_error *err)
{
    if (!c->task_kind || !task_plugin_sha256(c->task_kind))
        return tv_error_set(err, TV_EINVAL, "--set %s: the run's task %s is not a plugin",
                            assignment, c->task);
    int ok = strlen(hex) == 64;
    for (size_t i = 0; ok && i < 64; i++)
        ok = (hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f');
    if (!ok)
        return tv_error_set(err, TV_EINVAL,
                            "--set %s: expected a SHA-256 of 64 lowercase hex digits "
                            "(sha256sum's)",
                            assignment);
    snprintf(c->plugin_sha256_accept, sizeof c->plugin_sha256_accept, "%s", hex);
    return 0;
}

int master_config_set(struct master_config *c, const char *assignment, struct tv_error *err)
{
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return tv_error_set(err, TV_EINVAL, "--set %s: expected key=value", assignment);
    char name[96];
    snprintf(name, sizeof name, "%.*s", (int)(eq - assignment), assignment);
    const char *dot = strchr(name, '.');
    const char *key = dot ? dot + 1 : name;
    for (size_t i = 0; i < MASTER_CONFIG_N_KEYS; i++) {
        const struct config_key *k = &master_config_keys[i];
        if (strcmp(k->name, key) || (dot && (strlen(k->section) != (size_t)(dot - name) ||
                                             strncmp(k->section, name, (size_t)(dot - name)))))
            continue;
        if (!(k->flags & K_RESUMABLE))
            return fixed_on_resume(assignment, key, err);
        char why[256];
        if (master_config_key_set(c, k, eq + 1, why, sizeof why))
            return tv_error_set(err, TV_EINVAL, "--set %s: %s", assignment, why);
        return 0;
    }
    if (!strcmp(name, "task.plugin_sha256"))
        return accept_plugin(c, assignment, eq + 1, err);
    /* a task's own keys shape the fitness function: fixed for the run */
    if (c->task_kind && !strncmp(name, "task.", 5) && task_key_find(c->task_kind, name + 5) >= 0)
        return fixed_on_resume(assignment, name + 5, err);
    return tv_error_set(err, TV_EINVAL, "--set %s: unknown key '%s'", assignment, name);
}

int master_config_task_set(const struct task_kind *k, struct task_params *p, const char *assignment,
                           struct tv_error *err)
{
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return tv_error_set(err, TV_EINVAL, "--set %s: expected key=value", assignment);
    char name[96];
    snprintf(name, sizeof name, "%.*s", (int)(eq - assignment), assignment);
    const char *key = strncmp(name, "task.", 5) ? name : name + 5;
    int i = strchr(key, '.') ? -1 : task_key_find(k, key);
    char names[TASK_KEY_NAMES_MAX];
    if (i < 0)
        return tv_error_set(err, TV_EINVAL, "--set %s: unknown key '%s' (task %s %s)", assignment,
                            name, k->name, task_key_names(k, names));
    char why[256];
    if (task_value_set(p, k, (size_t)i, eq + 1, why, sizeof why))
        return tv_error_set(err, TV_EINVAL, "--set %s: %s", assignment, why);
    return 0;
}

void master_config_help(FILE *f)
{
    const char *section = "";
    fprintf(f, "; Every key of a trevo experiment config, with its default.\n");
    for (size_t i = 0; i < MASTER_CONFIG_N_KEYS; i++) {
        const struct config_key *k = &master_config_keys[i];
        if (strcmp(section, k->section)) {
            fprintf(f, "\n[%s]\n", k->section);
            section = k->section;
        }
        fprintf(f, "; %s%s\n%s%s = %s\n", k->doc,
                (k->flags & K_RESUMABLE) ? " (may change on resume)" : "",
                k->def ? "" : "; required: ", k->name, k->def ? k->def : "");
    }
    fprintf(f,
            "\n[task]\n; the keys of the task [run] task names, each task's own (listed commented "
            "out)\n");
    size_t n;
    const struct task_kind *const *all = task_all(&n);
    for (size_t j = 0; j < n; j++) {
        struct task_params p;
        task_params_defaults(all[j], &p);
        for (size_t i = 0; i < all[j]->n_keys; i++) {
            fprintf(f, "; task %s: %s\n;%s = ", all[j]->name, all[j]->keys[i].doc,
                    all[j]->keys[i].name);
            task_value_format(f, &p, all[j], i);
            fprintf(f, "\n");
        }
    }
}

/* 1 when key k of c holds its default (the same bits; keys of text and
 * layer-size lists never count as at their default; a list of densities is
 * at its default, empty, when it has no element). No allocation. */
static int key_at_default(const struct master_config *c, const struct config_key *k)
{
    if (k->type == T_DLIST)
        return *(const size_t *)(const void *)((const char *)c + k->aux) == 0;
    size_t size = k->type == T_BOOL || k->type == T_ENUM || k->type == T_ACT || k->type == T_ACTS ||
                          k->type == T_OBJS
                      ? sizeof(int)
                  : k->type == T_STR || k->type == T_LIST ? 0
                                                          : sizeof(double);
    struct master_config d = *c;
    char why[256];
    return size && !master_config_key_set(&d, k, k->def, why, sizeof why) &&
           !memcmp((const char *)&d + k->offset, (const char *)c + k->offset, size);
}

int master_config_dump(const struct master_config *c, struct tv_buf *out, struct tv_error *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return tv_error_set(err, TV_ENOMEM, "config: out of memory");
    const char *section = "";
    fprintf(f, "; the effective config of this run: every key and its value\n");
    for (size_t i = 0; i < MASTER_CONFIG_N_KEYS; i++) {
        const struct config_key *k = &master_config_keys[i];
        if ((k->flags & K_QUIET) && key_at_default(c, k))
            continue;
        if (strcmp(section, k->section)) {
            fprintf(f, "%s[%s]\n", *section ? "\n" : "", k->section);
            section = k->section;
        }
        fprintf(f, "%s = ", k->name);
        master_config_key_format(f, c, k);
        fprintf(f, "\n");
    }
    /* [task] only when a value is not its default: the configs written
     * before [task] existed keep their bytes. */
    struct task_params def;
    if (c->task_kind)
        task_params_defaults(c->task_kind, &def);
    if (c->task_kind && memcmp(&def, &c->task_params, sizeof def)) {
        fprintf(f, "\n[task]\n");
        for (size_t i = 0; i < c->task_kind->n_keys; i++) {
            fprintf(f, "%s = ", c->task_kind->keys[i].name);
            task_value_format(f, &c->task_params, c->task_kind, i);
            fprintf(f, "\n");
        }
    }
    int bad = ferror(f);
    fclose(f);
    int rc = bad ? tv_error_set(err, TV_ENOMEM, "config: out of memory")
             : tv_buf_append(out, text, len + 1)
                 ? tv_error_set(err, TV_ENOMEM, "config: out of memory")
                 : 0;
    free(text);
    return rc;
}
