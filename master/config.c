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

/* The C type of a key's field, which the parser writes and the dump reads. */
enum type {
    T_I64,    /* int64_t */
    T_SIZE,   /* size_t */
    T_MIB,    /* size_t bytes, given in MiB */
    T_U64,    /* uint64_t */
    T_DOUBLE, /* double */
    T_BOOL,   /* int, 0 or 1 */
    T_STR,    /* char[size] */
    T_ENUM,   /* int, an index into choices */
    T_ACT,    /* int, enum genome_act */
    T_ACTS,   /* uint32_t, a bit mask of activations */
    T_LIST    /* uint32_t[size], with its size_t count at offset aux */
};

/* Flags of a key. */
enum {
    K_RESUMABLE = 1, /* may change with `trevo resume --set` */
    K_NAN = 2,       /* T_DOUBLE: nan is a value */
    K_RUN_NAME = 4   /* T_STR: a run name (master_run_name_check), or empty */
};

struct key {
    const char *section, *name;
    enum type type;
    size_t offset;              /* of its field in struct master_config */
    size_t size;                /* T_STR: buffer size; T_LIST: elements */
    size_t aux;                 /* T_LIST: offset of the element count */
    double min, max;            /* numbers; T_LIST: each element */
    const char *def;            /* default, as text (NULL: required) */
    const char *const *choices; /* T_ENUM: names of values 0, 1, ..., NULL */
    unsigned flags;             /* K_* */
    const char *doc;
};

/* The longest line accepted (inih's own limit is 200 bytes, newline included). */
#define LINE_MAX_CHARS 190

/* The offset of field f of struct master_config, which must have C type t
 * (the assignment in sizeof is not evaluated: it only fails to compile when
 * the types differ). */
#define FIELD(f, t)                                                                                \
    (offsetof(struct master_config, f) +                                                           \
     0 * sizeof(*(t **)NULL = &((struct master_config *)NULL)->f))

/* One row per type: section, name, field, then the type's own columns. */
#define I64(s, n, f, lo, hi, def, fl, doc)                                                         \
    {                                                                                              \
        s, n, T_I64, FIELD(f, int64_t), 0, 0, lo, hi, def, NULL, fl, doc                           \
    }
#define SIZE(s, n, f, lo, hi, def, doc)                                                            \
    {                                                                                              \
        s, n, T_SIZE, FIELD(f, size_t), 0, 0, lo, hi, def, NULL, 0, doc                            \
    }
#define DBL(s, n, f, lo, hi, def, fl, doc)                                                         \
    {                                                                                              \
        s, n, T_DOUBLE, FIELD(f, double), 0, 0, lo, hi, def, NULL, fl, doc                         \
    }
#define BOOL(s, n, f, def, fl, doc)                                                                \
    {                                                                                              \
        s, n, T_BOOL, FIELD(f, int), 0, 0, 0, 1, def, NULL, fl, doc                                \
    }
#define STR(s, n, f, def, fl, doc)                                                                 \
    {                                                                                              \
        s, n, T_STR, FIELD(f[0], char), sizeof(((struct master_config *)NULL)->f), 0, 0, 0, def,   \
            NULL, fl, doc                                                                          \
    }
#define ENUM(s, n, f, names, def, doc)                                                             \
    {                                                                                              \
        s, n, T_ENUM, FIELD(f, int), 0, 0, 0, 0, def, names, 0, doc                                \
    }

static const char *const selections[] = {"speciated", "generational", NULL};
static const char *const inits[] = {"minimal", "layered", NULL};
static const char *const syncs[] = {"normal", "full", NULL};

/* Every key but those of [task] (the task's own table). The default text is
 * parsed like a value, so it is checked too. */
static const struct key keys[] = {
    STR("run", "task", task, NULL, 0,
        "the task networks are evaluated on (required): xor, null, spin, ..."),
    STR("run", "name", name, "", K_RUN_NAME,
        "name of the run in the database (default: the task's name)"),
    {"run", "seed", T_U64, FIELD(seed, uint64_t), 0, 0, 0, 0, "1", NULL, 0,
     "seed of every random choice"},
    I64("run", "generations", generations, 1, 1e9, "100", K_RESUMABLE,
        "generations to run at most, generation 0 included"),
    DBL("run", "fitness_target", fitness_target, -INFINITY, INFINITY, "nan", K_RESUMABLE | K_NAN,
        "stop once a fitness reaches this (nan: never)"),
    BOOL("run", "stop_on_solve", stop_on_solve, "true", K_RESUMABLE,
         "stop after the first generation in which the task's success test passes"),
    I64("population", "size", pop_size, 2, 1e7, "150", 0, "individuals"),
    ENUM("population", "selection", selection, selections, "speciated",
         "speciated (NEAT) or generational (a plain GA with tournaments)"),
    I64("population", "elitism", elitism, 0, 1e6, "1", 0,
        "best individuals of each species (of the population, generational) kept unchanged"),
    DBL("population", "survival_threshold", survival_threshold, 0.01, 1, "0.2", 0,
        "share of each species allowed to breed"),
    DBL("population", "crossover_rate", crossover_rate, 0, 1, "0.75", 0,
        "share of children made by crossover (the rest by mutation of one parent)"),
    DBL("population", "crossover_mutate_rate", crossover_mutate_rate, 0, 1, "1.0", 0,
        "share of crossover children that are mutated too"),
    I64("population", "tournament_size", tournament_size, 1, 1e6, "3", 0,
        "generational selection: tournament size"),
    DBL("speciation", "compat_threshold", compat_threshold, 0, 1e9, "3.0", 0,
        "starting compatibility threshold"),
    DBL("speciation", "target_species", target_species, 0, 1e6, "10", 0,
        "the threshold moves toward this many species (0: fixed threshold)"),
    DBL("speciation", "threshold_step", threshold_step, 0, 1e9, "0.3", 0,
        "how far the threshold moves per generation"),
    DBL("speciation", "threshold_min", threshold_min, 0, 1e9, "0.3", 0, "lowest threshold"),
    DBL("speciation", "c_excess", distance.c_excess, 0, 1e9, "1.0", 0,
        "distance coefficient of excess genes"),
    DBL("speciation", "c_disjoint", distance.c_disjoint, 0, 1e9, "1.0", 0,
        "distance coefficient of disjoint genes"),
    DBL("speciation", "c_weight", distance.c_weight, 0, 1e9, "0.4", 0,
        "distance coefficient of the mean weight difference"),
    SIZE("speciation", "small_genome", distance.small_genome, 0, 1e9, "20",
         "genomes with fewer connections are not size-normalised (NEAT: 20)"),
    I64("speciation", "stagnation", stagnation, 1, 1e9, "15", 0,
        "generations without improvement before a species is dropped"),
    I64("speciation", "species_elitism", species_elitism, 0, 1e6, "2", 0,
        "this many best species are never dropped for stagnation"),
    I64("speciation", "elitism_min_size", elitism_min_size, 0, 1e9, "5", 0,
        "species smaller than this keep no elite"),
    ENUM("genome", "init", worker.init, inits, "minimal",
         "starting genomes: minimal (inputs joined to outputs) or layered"),
    DBL("genome", "init_weight_sd", worker.init_weight_sd, 0, 1e6, "1.0", 0,
        "starting weights ~ N(0, sd^2)"),
    {"genome", "init_hidden", T_LIST, FIELD(worker.init_hidden[0], uint32_t),
     WORKER_MAX_HIDDEN_LAYERS, FIELD(worker.n_init_hidden, size_t), 1, 1e7, "", NULL, 0,
     "layered: hidden layer sizes, comma-separated"},
    DBL("genome", "init_density", worker.init_density, 0, 1, "1.0", 0,
        "layered: density between adjacent layers"),
    DBL("genome", "init_skip_rate", worker.init_skip_rate, 0, 1, "0", 0,
        "layered: density of skip connections"),
    DBL("genome", "init_recurrent_rate", worker.init_recurrent_rate, 0, 1, "0", 0,
        "layered: density of recurrent connections"),
    {"genome", "hidden_act", T_ACT, FIELD(worker.mutation.hidden_act, int), 0, 0, 0, 0,
     "neat_sigmoid", NULL, 0, "activation of new hidden neurons"},
    {"genome", "act_choices", T_ACTS, FIELD(worker.mutation.act_choices, uint32_t), 0, 0, 0, 0, "",
     NULL, 0, "activations a mutation may switch to, comma-separated (empty: none)"},
    DBL("genome", "act_change_rate", worker.mutation.act_change_rate, 0, 1, "0", 0,
        "per hidden neuron"),
    DBL("genome", "weight_perturb_rate", worker.mutation.weight_perturb_rate, 0, 1, "0.8", 0,
        "per connection: w += N(0, weight_perturb_sd^2)"),
    DBL("genome", "weight_perturb_sd", worker.mutation.weight_perturb_sd, 0, 1e6, "0.5", 0,
        "size of a perturbation"),
    DBL("genome", "weight_replace_rate", worker.mutation.weight_replace_rate, 0, 1, "0.1", 0,
        "per connection: a new weight ~ N(0, weight_init_sd^2)"),
    DBL("genome", "weight_init_sd", worker.mutation.weight_init_sd, 0, 1e6, "1.0", 0,
        "weights of new connections"),
    DBL("genome", "weight_max", worker.mutation.weight_max, 0, 1e30, "30", 0,
        "weights and biases are clamped to [-max, max] (0: no clamp)"),
    DBL("genome", "bias_perturb_rate", worker.mutation.bias_perturb_rate, 0, 1, "0.7", 0,
        "per neuron"),
    DBL("genome", "bias_perturb_sd", worker.mutation.bias_perturb_sd, 0, 1e6, "0.5", 0,
        "size of a bias perturbation"),
    DBL("genome", "bias_replace_rate", worker.mutation.bias_replace_rate, 0, 1, "0.1", 0,
        "per neuron"),
    DBL("genome", "bias_init_sd", worker.mutation.bias_init_sd, 0, 1e6, "1.0", 0,
        "replaced biases ~ N(0, sd^2)"),
    DBL("genome", "add_local_rate", worker.mutation.add_local_rate, 0, 1, "0.3", 0,
        "add a connection to the next layer"),
    DBL("genome", "add_skip_rate", worker.mutation.add_skip_rate, 0, 1, "0.1", 0,
        "add a connection across layers"),
    DBL("genome", "add_recurrent_rate", worker.mutation.add_recurrent_rate, 0, 1, "0", 0,
        "add a recurrent connection"),
    DBL("genome", "del_conn_rate", worker.mutation.del_conn_rate, 0, 1, "0.05", 0,
        "delete a connection"),
    DBL("genome", "add_neuron_rate", worker.mutation.add_neuron_rate, 0, 1, "0.03", 0,
        "split a connection"),
    DBL("genome", "del_neuron_rate", worker.mutation.del_neuron_rate, 0, 1, "0.01", 0,
        "delete a hidden neuron"),
    SIZE("genome", "max_neurons", worker.limits.max_neurons, 1, 16777216, "100000",
         "limit on neurons per genome (structural mutations stop there)"),
    SIZE("genome", "max_conns", worker.limits.max_conns, 1, 134217728, "1000000",
         "limit on connections per genome"),
    STR("store", "db", db, "trevo.db", 0, "SQLite database file, on a local disk"),
    ENUM("store", "sync", sync_full, syncs, "normal",
         "normal (fast; may lose the last commits on power loss) or full"),
    I64("store", "commit_batch", commit_batch, 1, 1e7, "1024", 0,
        "results per store transaction (at most, and at most a second's worth)"),
    I64("farm", "batch", batch, 0, 1e6, "0", 0, "children per message (0: automatic)"),
    I64("farm", "inflight", inflight, 1, 64, "2", 0, "messages in flight per worker"),
    {"farm", "max_message_mb", T_MIB, FIELD(worker.max_message_bytes, size_t), 0, 0, 1, 2047, "256",
     NULL, 0, "largest message accepted, in MiB"},
    BOOL("log", "quiet", quiet, "false", K_RESUMABLE, "no progress line per generation"),
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

/* Parses one list item of T_ACTS (an activation: its bit in *mask) or T_LIST
 * (a layer size: appended to list[*n]). */
static int set_item(const struct key *k, const char *p, size_t len, uint32_t *mask, uint32_t *list,
                    size_t *n, char *why, size_t why_len)
{
    char item[64], *end;
    snprintf(item, sizeof item, "%.*s", (int)(len < 63 ? len : 63), p);
    if (k->type == T_ACTS) {
        int a = genome_act_parse(p, len);
        if (a < 0) {
            snprintf(why, why_len, "unknown activation '%s'", item);
            return -1;
        }
        *mask |= 1u << a;
        return 0;
    }
    long long v = strtoll(item, &end, 10);
    if (*end || v < k->min || v > k->max) {
        snprintf(why, why_len, "'%s' is not a layer size in [%.0f, %.0f]", item, k->min, k->max);
        return -1;
    }
    if (*n == k->size) {
        snprintf(why, why_len, "more than %zu hidden layers", k->size);
        return -1;
    }
    list[(*n)++] = (uint32_t)v;
    return 0;
}

/* T_ACTS and T_LIST: comma- or space-separated items. */
static int set_list(char *base, const struct key *k, const char *value, char *why, size_t why_len)
{
    uint32_t mask = 0, list[WORKER_MAX_HIDDEN_LAYERS];
    size_t n = 0;
    for (const char *p = value; *p;) {
        p += strspn(p, " ,");
        size_t len = strcspn(p, " ,");
        if (len && set_item(k, p, len, &mask, list, &n, why, why_len))
            return -1;
        p += len;
    }
    if (k->type == T_ACTS) {
        *(uint32_t *)(base + k->offset) = mask;
    } else {
        memcpy(base + k->offset, list, n * sizeof *list);
        *(size_t *)(base + k->aux) = n;
    }
    return 0;
}

static int set_integer(char *base, const struct key *k, const char *value, char *why,
                       size_t why_len)
{
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (!*value || *end || errno) {
        snprintf(why, why_len, "expected an integer, got '%s'", value);
        return -1;
    }
    if ((double)v < k->min || (double)v > k->max) {
        snprintf(why, why_len, "%lld is out of range [%.0f, %.0f]", v, k->min, k->max);
        return -1;
    }
    if (k->type == T_I64)
        *(int64_t *)(base + k->offset) = v;
    else
        *(size_t *)(base + k->offset) = (size_t)v << (k->type == T_MIB ? 20 : 0);
    return 0;
}

static int set_double(char *base, const struct key *k, const char *value, char *why, size_t why_len)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    /* ERANGE with a subnormal result is a value (the dump writes it so);
     * with 0 or an infinity it is not. nan only where the key allows it. */
    if (!*value || *end || (errno && !isnan(v) && !(errno == ERANGE && v != 0 && isfinite(v))) ||
        (isnan(v) && !(k->flags & K_NAN))) {
        snprintf(why, why_len, "expected a number, got '%s'", value);
        return -1;
    }
    if (!isnan(v) && (v < k->min || v > k->max)) {
        snprintf(why, why_len, "%g is out of range [%g, %g]", v, k->min, k->max);
        return -1;
    }
    *(double *)(base + k->offset) = v;
    return 0;
}

static int set_string(char *base, const struct key *k, const char *value, char *why, size_t why_len)
{
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
    if ((k->flags & K_RUN_NAME) && *value && master_run_name_check(value, why, why_len))
        return -1;
    strcpy(base + k->offset, value);
    return 0;
}

/* Parses value into key k's field of the struct at base (a struct
 * master_config, or a stand-in for a [task] key). 0, or -1 and why. */
static int set_value(void *base_, const struct key *k, const char *value, char *why, size_t why_len)
{
    char *base = base_, *end;
    int *as_int = (int *)(base + k->offset);
    errno = 0;
    switch (k->type) {
    case T_I64:
    case T_SIZE:
    case T_MIB:
        return set_integer(base, k, value, why, why_len);
    case T_U64: {
        unsigned long long v = strtoull(value, &end, 10);
        if (!*value || *end || errno || value[0] == '-') {
            snprintf(why, why_len, "expected a non-negative integer, got '%s'", value);
            return -1;
        }
        *(uint64_t *)(base + k->offset) = v;
        return 0;
    }
    case T_DOUBLE:
        return set_double(base, k, value, why, why_len);
    case T_BOOL:
        if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1"))
            *as_int = 1;
        else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0"))
            *as_int = 0;
        else {
            snprintf(why, why_len, "expected true or false, got '%s'", value);
            return -1;
        }
        return 0;
    case T_STR:
        return set_string(base, k, value, why, why_len);
    case T_ENUM:
        for (int i = 0; k->choices[i]; i++)
            if (!strcmp(value, k->choices[i])) {
                *as_int = i;
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
        *as_int = a;
        return 0;
    }
    case T_ACTS:
    case T_LIST:
        return set_list(base, k, value, why, why_len);
    }
    return -1;
}

/* Writes key k's value from the struct at base, as set_value reads it. */
static void format_value(FILE *f, const void *base_, const struct key *k)
{
    const char *base = (const char *)base_ + k->offset;
    switch (k->type) {
    case T_I64:
        fprintf(f, "%lld", (long long)*(const int64_t *)base);
        break;
    case T_SIZE:
    case T_MIB:
        fprintf(f, "%zu", *(const size_t *)base >> (k->type == T_MIB ? 20 : 0));
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
    case T_LIST: {
        size_t n = *(const size_t *)((const char *)base_ + k->aux);
        for (size_t j = 0; j < n; j++)
            fprintf(f, "%s%u", j ? "," : "", ((const uint32_t *)base)[j]);
        break;
    }
    }
}

/* ---- [task]: the keys of the task's own table (struct task_key) -------- */

/* Key i of kind k as a row of ours: its value lives in a union task_value
 * (a T_BOOL in an int beside it: task_value_set, task_value_format). */
static struct key task_row(const struct task_kind *k, size_t i)
{
    const struct task_key *t = &k->keys[i];
    enum type type = t->type == TASK_KEY_DOUBLE ? T_DOUBLE
                     : t->type == TASK_KEY_BOOL ? T_BOOL
                                                : T_I64;
    return (struct key){"task", t->name, type, 0, 0, 0, t->min, t->max, NULL, NULL, 0, t->doc};
}

static int task_value_set(struct task_params *p, const struct task_kind *k, size_t i,
                          const char *value, char *why, size_t why_len)
{
    struct key row = task_row(k, i);
    union task_value v = p->v[i];
    int b = 0;
    if (set_value(row.type == T_BOOL ? (void *)&b : (void *)&v, &row, value, why, why_len))
        return -1;
    if (row.type == T_BOOL)
        v.i = b;
    p->v[i] = v;
    return 0;
}

static void task_value_format(FILE *f, const struct task_params *p, const struct task_kind *k,
                              size_t i)
{
    struct key row = task_row(k, i);
    int b = (int)p->v[i].i;
    format_value(f, row.type == T_BOOL ? (const void *)&b : (const void *)&p->v[i], &row);
}

void master_config_defaults(struct master_config *c)
{
    memset(c, 0, sizeof *c);
    char why[256];
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].def)
            set_value(c, &keys[i], keys[i].def, why, sizeof why);
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
                 "farm, log, task)",
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
                            const struct master_config *c, const struct task_instance *t,
                            struct tv_error *err)
{
    static const char *const neuron_keys[] = {"init_hidden", "max_neurons"};
    static const char *const conn_keys[] = {"init_hidden", "init_density", "max_conns"};
    const struct worker_params *w = &c->worker;
    int layered = w->init == WORKER_INIT_LAYERED;
    double in = (double)t->n_inputs, out = (double)t->n_outputs;
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

/* The [task] keys given, against the table of the task [run] names. */
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
            char names[128] = "";
            for (size_t n = 0; n < k->n_keys; n++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", n ? ", " : "",
                         k->keys[n].name);
            return tv_error_set(err, TV_EINVAL, "%s:%d: %s: unknown key in [task] (task %s %s%s)",
                                file, g->line, g->name, k->name,
                                k->n_keys ? "has: " : "has no keys", names);
        }
        if (task_value_set(&c->task_params, k, (size_t)i, g->value, why, sizeof why))
            return tv_error_set(err, TV_EINVAL, "%s:%d: %s: %s", file, g->line, g->name, why);
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
    c->task_kind = task_find(c->task);
    if (!c->task_kind) {
        char why[64];
        snprintf(why, sizeof why, "no task named '%s'", c->task);
        return key_error(&x, file, "run", "task", why, err);
    }
    rc = check_task_keys(&x, file, c, err);
    if (rc)
        return rc;
    if (!c->name[0])
        snprintf(c->name, sizeof c->name, "%s", c->task);
    if (c->worker.mutation.act_change_rate > 0 && !c->worker.mutation.act_choices)
        return key_error(&x, file, "genome", "act_change_rate", "needs act_choices", err);
    if (c->worker.init == WORKER_INIT_LAYERED && c->worker.n_init_hidden == 0 &&
        c->worker.init_density <= 0)
        return key_error(&x, file, "genome", "init_density", "a layered start needs density > 0",
                         err);
    /* The task declares its inputs and outputs once open. */
    struct task_instance *t;
    rc = task_open(c->task_kind, &c->task_params, &t, err);
    if (rc)
        return tv_error_prefix(err, "%s", file);
    rc = check_start_size(&x, file, c, t, err);
    task_close(t);
    return rc;
}

int master_config_open_task(struct master_config *c, struct task_instance **out,
                            struct tv_error *err)
{
    int rc = task_open(c->task_kind, &c->task_params, out, err);
    c->worker.task = rc ? NULL : *out;
    return rc;
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
        if (!(k->flags & K_RESUMABLE))
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
        if (strcmp(section, k->section)) {
            fprintf(f, "%s[%s]\n", *section ? "\n" : "", k->section);
            section = k->section;
        }
        fprintf(f, "%s = ", k->name);
        format_value(f, c, k);
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
