/* config.c -- experiment configs: INI text (parsed by inih) into a
 * struct master_config. One table lists every key with its type, range,
 * default and meaning; parsing, defaults and `--help-config` all read it. */
#include "master.h"

#include <errno.h>
#include <stdbool.h>
#include <ini.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum type { T_INT, T_U64, T_DOUBLE, T_BOOL, T_STR, T_ENUM, T_ACT, T_ACTS, T_LIST };

struct key {
    const char *section, *name;
    enum type type;
    size_t offset;              /* into struct master_config */
    size_t size;                /* T_STR: buffer size */
    double min, max;            /* numbers; T_LIST: each element */
    const char *def;            /* default, as text ("" for none) */
    const char *const *choices; /* T_ENUM: names of values 0, 1, ... */
    int resumable;              /* may change with `trevo resume --set` */
    const char *doc;
};

/* The longest line accepted (inih's own limit is 200 bytes, newline included). */
#define LINE_MAX_CHARS 190

#define OFF(f) offsetof(struct master_config, f)
#define SZ(f) sizeof(((struct master_config *)0)->f)

static const char *const selections[] = {"speciated", "generational", NULL};
static const char *const inits[] = {"minimal", "layered", NULL};
static const char *const syncs[] = {"normal", "full", NULL};

/* Every key. The default text is parsed like a value, so it is checked too. */
static const struct key keys[] = {
    {"run", "task", T_STR, OFF(task), SZ(task), 0, 0, NULL, NULL, 0,
     "the task networks are evaluated on (required): xor, null, spin, ..."},
    {"run", "name", T_STR, OFF(name), SZ(name), 0, 0, "", NULL, 0,
     "name of the run in the database (default: the task's name)"},
    {"run", "seed", T_U64, OFF(seed), 0, 0, 0, "1", NULL, 0, "seed of every random choice"},
    {"run", "generations", T_INT, OFF(generations), 0, 1, 1e9, "100", NULL, 1,
     "generations to run at most, generation 0 included"},
    {"run", "fitness_target", T_DOUBLE, OFF(fitness_target), 0, -INFINITY, INFINITY, "nan", NULL, 1,
     "stop once a fitness reaches this (nan: never)"},
    {"run", "stop_on_solve", T_BOOL, OFF(stop_on_solve), 0, 0, 1, "true", NULL, 1,
     "stop after the first generation in which the task's success test passes"},
    {"population", "size", T_INT, OFF(pop_size), 0, 2, 1e7, "150", NULL, 0, "individuals"},
    {"population", "selection", T_ENUM, OFF(selection), 0, 0, 0, "speciated", selections, 0,
     "speciated (NEAT) or generational (a plain GA with tournaments)"},
    {"population", "elitism", T_INT, OFF(elitism), 0, 0, 1e6, "1", NULL, 0,
     "best individuals of each species (of the population, generational) kept unchanged"},
    {"population", "survival_threshold", T_DOUBLE, OFF(survival_threshold), 0, 0.01, 1, "0.2", NULL,
     0, "share of each species allowed to breed"},
    {"population", "crossover_rate", T_DOUBLE, OFF(crossover_rate), 0, 0, 1, "0.75", NULL, 0,
     "share of children made by crossover (the rest by mutation of one parent)"},
    {"population", "crossover_mutate_rate", T_DOUBLE, OFF(crossover_mutate_rate), 0, 0, 1, "1.0",
     NULL, 0, "share of crossover children that are mutated too"},
    {"population", "tournament_size", T_INT, OFF(tournament_size), 0, 1, 1e6, "3", NULL, 0,
     "generational selection: tournament size"},
    {"speciation", "compat_threshold", T_DOUBLE, OFF(compat_threshold), 0, 0, 1e9, "3.0", NULL, 0,
     "starting compatibility threshold"},
    {"speciation", "target_species", T_DOUBLE, OFF(target_species), 0, 0, 1e6, "10", NULL, 0,
     "the threshold moves toward this many species (0: fixed threshold)"},
    {"speciation", "threshold_step", T_DOUBLE, OFF(threshold_step), 0, 0, 1e9, "0.3", NULL, 0,
     "how far the threshold moves per generation"},
    {"speciation", "threshold_min", T_DOUBLE, OFF(threshold_min), 0, 0, 1e9, "0.3", NULL, 0,
     "lowest threshold"},
    {"speciation", "c_excess", T_DOUBLE, OFF(distance.c_excess), 0, 0, 1e9, "1.0", NULL, 0,
     "distance coefficient of excess genes"},
    {"speciation", "c_disjoint", T_DOUBLE, OFF(distance.c_disjoint), 0, 0, 1e9, "1.0", NULL, 0,
     "distance coefficient of disjoint genes"},
    {"speciation", "c_weight", T_DOUBLE, OFF(distance.c_weight), 0, 0, 1e9, "0.4", NULL, 0,
     "distance coefficient of the mean weight difference"},
    {"speciation", "small_genome", T_INT, OFF(distance.small_genome), 0, 0, 1e9, "20", NULL, 0,
     "genomes with fewer connections are not size-normalised (NEAT: 20)"},
    {"speciation", "stagnation", T_INT, OFF(stagnation), 0, 1, 1e9, "15", NULL, 0,
     "generations without improvement before a species is dropped"},
    {"speciation", "species_elitism", T_INT, OFF(species_elitism), 0, 0, 1e6, "2", NULL, 0,
     "this many best species are never dropped for stagnation"},
    {"speciation", "elitism_min_size", T_INT, OFF(elitism_min_size), 0, 0, 1e9, "5", NULL, 0,
     "species smaller than this keep no elite"},
    {"genome", "init", T_ENUM, OFF(worker.init), 0, 0, 0, "minimal", inits, 0,
     "starting genomes: minimal (inputs joined to outputs) or layered"},
    {"genome", "init_weight_sd", T_DOUBLE, OFF(worker.init_weight_sd), 0, 0, 1e6, "1.0", NULL, 0,
     "starting weights ~ N(0, sd^2)"},
    {"genome", "init_hidden", T_LIST, OFF(worker.init_hidden), 0, 1, 1e7, "", NULL, 0,
     "layered: hidden layer sizes, comma-separated"},
    {"genome", "init_density", T_DOUBLE, OFF(worker.init_density), 0, 0, 1, "1.0", NULL, 0,
     "layered: density between adjacent layers"},
    {"genome", "init_skip_rate", T_DOUBLE, OFF(worker.init_skip_rate), 0, 0, 1, "0", NULL, 0,
     "layered: density of skip connections"},
    {"genome", "init_recurrent_rate", T_DOUBLE, OFF(worker.init_recurrent_rate), 0, 0, 1, "0", NULL,
     0, "layered: density of recurrent connections"},
    {"genome", "hidden_act", T_ACT, OFF(worker.mutation.hidden_act), 0, 0, 0, "neat_sigmoid", NULL,
     0, "activation of new hidden neurons"},
    {"genome", "act_choices", T_ACTS, OFF(worker.mutation.act_choices), 0, 0, 0, "", NULL, 0,
     "activations a mutation may switch to, comma-separated (empty: none)"},
    {"genome", "act_change_rate", T_DOUBLE, OFF(worker.mutation.act_change_rate), 0, 0, 1, "0",
     NULL, 0, "per hidden neuron"},
    {"genome", "weight_perturb_rate", T_DOUBLE, OFF(worker.mutation.weight_perturb_rate), 0, 0, 1,
     "0.8", NULL, 0, "per connection: w += N(0, weight_perturb_sd^2)"},
    {"genome", "weight_perturb_sd", T_DOUBLE, OFF(worker.mutation.weight_perturb_sd), 0, 0, 1e6,
     "0.5", NULL, 0, "size of a perturbation"},
    {"genome", "weight_replace_rate", T_DOUBLE, OFF(worker.mutation.weight_replace_rate), 0, 0, 1,
     "0.1", NULL, 0, "per connection: a new weight ~ N(0, weight_init_sd^2)"},
    {"genome", "weight_init_sd", T_DOUBLE, OFF(worker.mutation.weight_init_sd), 0, 0, 1e6, "1.0",
     NULL, 0, "weights of new connections"},
    {"genome", "weight_max", T_DOUBLE, OFF(worker.mutation.weight_max), 0, 0, 1e30, "30", NULL, 0,
     "weights and biases are clamped to [-max, max] (0: no clamp)"},
    {"genome", "bias_perturb_rate", T_DOUBLE, OFF(worker.mutation.bias_perturb_rate), 0, 0, 1,
     "0.7", NULL, 0, "per neuron"},
    {"genome", "bias_perturb_sd", T_DOUBLE, OFF(worker.mutation.bias_perturb_sd), 0, 0, 1e6, "0.5",
     NULL, 0, "size of a bias perturbation"},
    {"genome", "bias_replace_rate", T_DOUBLE, OFF(worker.mutation.bias_replace_rate), 0, 0, 1,
     "0.1", NULL, 0, "per neuron"},
    {"genome", "bias_init_sd", T_DOUBLE, OFF(worker.mutation.bias_init_sd), 0, 0, 1e6, "1.0", NULL,
     0, "replaced biases ~ N(0, sd^2)"},
    {"genome", "add_local_rate", T_DOUBLE, OFF(worker.mutation.add_local_rate), 0, 0, 1, "0.3",
     NULL, 0, "add a connection to the next layer"},
    {"genome", "add_skip_rate", T_DOUBLE, OFF(worker.mutation.add_skip_rate), 0, 0, 1, "0.1", NULL,
     0, "add a connection across layers"},
    {"genome", "add_recurrent_rate", T_DOUBLE, OFF(worker.mutation.add_recurrent_rate), 0, 0, 1,
     "0", NULL, 0, "add a recurrent connection"},
    {"genome", "del_conn_rate", T_DOUBLE, OFF(worker.mutation.del_conn_rate), 0, 0, 1, "0.05", NULL,
     0, "delete a connection"},
    {"genome", "add_neuron_rate", T_DOUBLE, OFF(worker.mutation.add_neuron_rate), 0, 0, 1, "0.03",
     NULL, 0, "split a connection"},
    {"genome", "del_neuron_rate", T_DOUBLE, OFF(worker.mutation.del_neuron_rate), 0, 0, 1, "0.01",
     NULL, 0, "delete a hidden neuron"},
    {"genome", "max_neurons", T_INT, OFF(worker.limits.max_neurons), 0, 1, 16777216, "100000", NULL,
     0, "limit on neurons per genome (structural mutations stop there)"},
    {"genome", "max_conns", T_INT, OFF(worker.limits.max_conns), 0, 1, 134217728, "1000000", NULL,
     0, "limit on connections per genome"},
    {"store", "db", T_STR, OFF(db), SZ(db), 0, 0, "trevo.db", NULL, 0,
     "SQLite database file, on a local disk"},
    {"store", "sync", T_ENUM, OFF(sync_full), 0, 0, 0, "normal", syncs, 0,
     "normal (fast; may lose the last commits on power loss) or full"},
    {"store", "commit_batch", T_INT, OFF(commit_batch), 0, 1, 1e7, "1024", NULL, 0,
     "results per store transaction (at most, and at most a second's worth)"},
    {"farm", "batch", T_INT, OFF(batch), 0, 0, 1e6, "0", NULL, 0,
     "children per message (0: automatic)"},
    {"farm", "inflight", T_INT, OFF(inflight), 0, 1, 64, "2", NULL, 0,
     "messages in flight per worker"},
    {"farm", "max_message_mb", T_INT, OFF(worker.max_message_bytes), 0, 1, 2047, "256", NULL, 0,
     "largest message accepted, in MiB"},
    {"log", "quiet", T_BOOL, OFF(quiet), 0, 0, 1, "false", NULL, 1,
     "no progress line per generation"},
};
#define N_KEYS (sizeof keys / sizeof keys[0])

int master_run_name_check(const char *name, char *why, size_t why_len)
{
    size_t n = strlen(name), max = sizeof((struct master_config *)0)->name - 1;
    int bad = n == 0 || n > max || name[0] == ';' || name[0] == '#' || name[0] == ' ' ||
              name[n - 1] == ' ';
    for (size_t i = 0; i < n; i++)
        bad |= (unsigned char)name[i] < 0x20 || name[i] == 0x7f;
    if (bad)
        snprintf(why, why_len,
                 "a run name is 1 to %zu printable characters, not starting with ';', '#' or a "
                 "space nor ending with one",
                 max);
    return bad ? -1 : 0;
}

static int set_value(struct master_config *c, const struct key *k, const char *value, char *why,
                     size_t why_len)
{
    char *base = (char *)c + k->offset;
    char *end;
    errno = 0;
    switch (k->type) {
    case T_INT: {
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || errno) {
            snprintf(why, why_len, "expected an integer, got '%s'", value);
            return -1;
        }
        if ((double)v < k->min || (double)v > k->max) {
            snprintf(why, why_len, "%lld is out of range [%.0f, %.0f]", v, k->min, k->max);
            return -1;
        }
        if (!strcmp(k->name, "max_message_mb"))
            *(size_t *)base = (size_t)v << 20;
        else if (k->offset == OFF(worker.limits.max_neurons) ||
                 k->offset == OFF(worker.limits.max_conns) ||
                 k->offset == OFF(distance.small_genome))
            *(size_t *)base = (size_t)v;
        else
            *(int64_t *)base = v;
        return 0;
    }
    case T_U64: {
        unsigned long long v = strtoull(value, &end, 10);
        if (!*value || *end || errno || value[0] == '-') {
            snprintf(why, why_len, "expected a non-negative integer, got '%s'", value);
            return -1;
        }
        *(uint64_t *)base = v;
        return 0;
    }
    case T_DOUBLE: {
        double v = strtod(value, &end);
        /* ERANGE with a subnormal result is a value (the dump writes it so);
         * with 0 or an infinity it is not. */
        if (!*value || *end ||
            (errno && !isnan(v) && !(errno == ERANGE && v != 0 && isfinite(v)))) {
            snprintf(why, why_len, "expected a number, got '%s'", value);
            return -1;
        }
        if (!isnan(v) && (v < k->min || v > k->max)) {
            snprintf(why, why_len, "%g is out of range [%g, %g]", v, k->min, k->max);
            return -1;
        }
        if (isnan(v) && k->offset != OFF(fitness_target)) {
            snprintf(why, why_len, "expected a number, got '%s'", value);
            return -1;
        }
        *(double *)base = v;
        return 0;
    }
    case T_BOOL:
        if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1"))
            *(int *)base = 1;
        else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0"))
            *(int *)base = 0;
        else {
            snprintf(why, why_len, "expected true or false, got '%s'", value);
            return -1;
        }
        return 0;
    case T_STR: {
        /* The dump writes "name = value" on one line: it must fit too. */
        size_t max = k->size - 1, fit = LINE_MAX_CHARS - strlen(k->name) - 3;
        if (max > fit)
            max = fit;
        if (strlen(value) > max) {
            snprintf(why, why_len, "longer than %zu characters", max);
            return -1;
        }
        /* "name =;x" reads as ";x", but the dump's "name = ;x" as a comment. */
        if (value[0] == ';') {
            snprintf(why, why_len, "must not start with ';' (it would read as a comment)");
            return -1;
        }
        /* empty: the task's name */
        if (k->offset == OFF(name) && *value && master_run_name_check(value, why, why_len))
            return -1;
        strcpy(base, value);
        return 0;
    }
    case T_ENUM:
        for (int i = 0; k->choices[i]; i++)
            if (!strcmp(value, k->choices[i])) {
                *(int *)base = i;
                return 0;
            }
        snprintf(why, why_len, "expected one of %s, %s, got '%s'", k->choices[0], k->choices[1],
                 value);
        return -1;
    case T_ACT: {
        int a = genome_act_parse(value, strlen(value));
        if (a < 0) {
            snprintf(why, why_len, "unknown activation '%s'", value);
            return -1;
        }
        *(int *)base = a;
        return 0;
    }
    case T_ACTS:
    case T_LIST: {
        uint32_t mask = 0;
        size_t n = 0;
        uint32_t *list = k->type == T_LIST ? (uint32_t *)base : NULL;
        const char *p = value;
        while (*p) {
            while (*p == ' ' || *p == ',')
                p++;
            if (!*p)
                break;
            size_t len = strcspn(p, " ,");
            char item[64];
            snprintf(item, sizeof item, "%.*s", (int)(len < 63 ? len : 63), p);
            if (k->type == T_ACTS) {
                int a = genome_act_parse(p, len);
                if (a < 0) {
                    snprintf(why, why_len, "unknown activation '%s'", item);
                    return -1;
                }
                mask |= 1u << a;
            } else {
                long long v = strtoll(item, &end, 10);
                if (*end || v < k->min || v > k->max) {
                    snprintf(why, why_len, "'%s' is not a layer size in [%.0f, %.0f]", item, k->min,
                             k->max);
                    return -1;
                }
                if (n == WORKER_MAX_HIDDEN_LAYERS) {
                    snprintf(why, why_len, "more than %d hidden layers", WORKER_MAX_HIDDEN_LAYERS);
                    return -1;
                }
                list[n++] = (uint32_t)v;
            }
            p += len;
        }
        if (k->type == T_ACTS)
            *(uint32_t *)base = mask;
        else
            c->worker.n_init_hidden = n;
        return 0;
    }
    }
    return -1;
}

void master_config_defaults(struct master_config *c)
{
    memset(c, 0, sizeof *c);
    char why[256];
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].def)
            set_value(c, &keys[i], keys[i].def, why, sizeof why);
}

struct parse_ctx {
    struct master_config *c;
    const char *next;  /* the text inih has not read yet */
    const char *cur;   /* the line inih is parsing */
    int line;          /* its number, 1-based */
    int lines[N_KEYS]; /* where each key was given; 0: not given */
    int fail_line;     /* the line of the first error the handler found */
    char key[96];      /* its key ("" when the line has no key name) */
    char why[256];     /* what is wrong with it */
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
    for (size_t i = 0; i < N_KEYS; i++)
        if (!strcmp(keys[i].section, section) && !strcmp(keys[i].name, name))
            return i;
    return N_KEYS;
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
    size_t i = key_index(section, name);
    if (i < N_KEYS) {
        if (x->lines[i]) {
            snprintf(x->why, sizeof x->why, "given twice in [%s] (first on line %d)", section,
                     x->lines[i]);
            return 0;
        }
        x->lines[i] = x->line;
        if (set_value(x->c, &keys[i], value, x->why, sizeof x->why))
            return 0;
        x->failed = 0;
        return 1;
    }
    int known_section = 0;
    for (size_t j = 0; j < N_KEYS; j++)
        known_section |= !strcmp(keys[j].section, section);
    if (!*section)
        snprintf(x->why, sizeof x->why, "outside any [section]");
    else if (!known_section)
        snprintf(x->why, sizeof x->why,
                 "unknown section [%.40s] (sections: run, population, speciation, genome, store, "
                 "farm, log)",
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
    if (i < N_KEYS && x->lines[i])
        return tv_error_set(err, TV_EINVAL, "%s:%d: %s: %s", file, x->lines[i], name, why);
    return tv_error_set(err, TV_EINVAL, "%s: %s: %s", file, name, why);
}

/* The first of the [genome] keys names[0..n) the text gave, else names[0]. */
static const char *given_key(const struct parse_ctx *x, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = key_index("genome", names[i]);
        if (k < N_KEYS && x->lines[k])
            return names[i];
    }
    return names[0];
}

/* The worker builds the starting genome before any limit applies: it must
 * fit the genome limits. Its neurons are known exactly; of its connections,
 * the mean number between adjacent layers (a lower bound of the mean count:
 * skip and recurrent ones come on top). */
static int check_start_size(const struct parse_ctx *x, const char *file,
                            const struct master_config *c, struct tv_error *err)
{
    static const char *const neuron_keys[] = {"init_hidden", "max_neurons"};
    static const char *const conn_keys[] = {"init_hidden", "init_density", "max_conns"};
    const struct worker_params *w = &c->worker;
    int layered = w->init == WORKER_INIT_LAYERED;
    double in = (double)w->task->n_inputs, out = (double)w->task->n_outputs;
    double neurons = in + out, conns = in * out;
    if (layered) {
        double prev = in, pairs = 0;
        for (size_t i = 0; i < w->n_init_hidden; i++) {
            neurons += w->init_hidden[i];
            pairs += prev * w->init_hidden[i];
            prev = w->init_hidden[i];
        }
        conns = w->init_density * (pairs + prev * out);
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
                         given_key(x, conn_keys + 2 * !layered, 3 - 2 * (size_t)!layered), why,
                         err);
    }
    return 0;
}

int master_config_parse(struct master_config *c, const char *text, const char *file,
                        struct tv_error *err)
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
    for (size_t i = 0; i < N_KEYS; i++)
        if (!keys[i].def && !x.lines[i])
            return tv_error_set(err, TV_EINVAL, "%s: %s: required key missing from [%s]", file,
                                keys[i].name, keys[i].section);
    /* One limit for everything: decoding, and growth by mutation. */
    c->worker.mutation.limits = c->worker.limits;
    c->worker.task = task_find(c->task);
    if (!c->worker.task) {
        char why[64];
        snprintf(why, sizeof why, "no task named '%s'", c->task);
        return key_error(&x, file, "run", "task", why, err);
    }
    if (!c->name[0])
        snprintf(c->name, sizeof c->name, "%s", c->task);
    if (c->worker.mutation.act_change_rate > 0 && !c->worker.mutation.act_choices)
        return key_error(&x, file, "genome", "act_change_rate", "needs act_choices", err);
    if (c->worker.init == WORKER_INIT_LAYERED && c->worker.n_init_hidden == 0 &&
        c->worker.init_density <= 0)
        return key_error(&x, file, "genome", "init_density", "a layered start needs density > 0",
                         err);
    return check_start_size(&x, file, c, err);
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
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct key *k = &keys[i];
        if (strcmp(k->name, key) || (dot && (strlen(k->section) != (size_t)(dot - name) ||
                                             strncmp(k->section, name, (size_t)(dot - name)))))
            continue;
        if (!k->resumable)
            return tv_error_set(err, TV_EINVAL,
                                "--set %s: %s cannot change on resume (these can: "
                                "run.generations, run.fitness_target, run.stop_on_solve, "
                                "log.quiet)",
                                assignment, key);
        char why[256];
        if (set_value(c, k, eq + 1, why, sizeof why))
            return tv_error_set(err, TV_EINVAL, "--set %s: %s", assignment, why);
        return 0;
    }
    return tv_error_set(err, TV_EINVAL, "--set %s: unknown key '%s'", assignment, name);
}

void master_config_help(FILE *f)
{
    const char *section = "";
    fprintf(f, "; Every key of a trevo experiment config, with its default.\n");
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct key *k = &keys[i];
        if (strcmp(section, k->section)) {
            fprintf(f, "\n[%s]\n", k->section);
            section = k->section;
        }
        fprintf(f, "; %s%s\n%s%s = %s\n", k->doc, k->resumable ? " (may change on resume)" : "",
                k->def ? "" : "; required: ", k->name, k->def ? k->def : "");
    }
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
    for (size_t i = 0; i < N_KEYS; i++) {
        const struct key *k = &keys[i];
        const char *base = (const char *)c + k->offset;
        if (strcmp(section, k->section)) {
            fprintf(f, "%s[%s]\n", *section ? "\n" : "", k->section);
            section = k->section;
        }
        fprintf(f, "%s = ", k->name);
        switch (k->type) {
        case T_INT:
            if (!strcmp(k->name, "max_message_mb"))
                fprintf(f, "%zu", *(const size_t *)base >> 20);
            else
                fprintf(f, "%lld", (long long)*(const int64_t *)base);
            break;
        case T_U64:
            fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)base);
            break;
        case T_DOUBLE:
            fprintf(f, "%.17g", *(const double *)base);
            break;
        case T_BOOL:
            fprintf(f, "%s", *(const int *)base ? "true" : "false");
            break;
        case T_STR:
            fprintf(f, "%s", base);
            break;
        case T_ENUM:
            fprintf(f, "%s", k->choices[*(const int *)base]);
            break;
        case T_ACT:
            fprintf(f, "%s", genome_act_name(*(const int *)base));
            break;
        case T_ACTS:
            for (int a = 0, first = 1; a < GENOME_ACT_COUNT; a++)
                if (*(const uint32_t *)base >> a & 1) {
                    fprintf(f, "%s%s", first ? "" : ",", genome_act_name(a));
                    first = 0;
                }
            break;
        case T_LIST:
            for (size_t j = 0; j < c->worker.n_init_hidden; j++)
                fprintf(f, "%s%u", j ? "," : "", c->worker.init_hidden[j]);
            break;
        }
        fprintf(f, "\n");
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
