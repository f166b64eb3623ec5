/* config_keys.c -- the typed key table of the experiment config, and the
 * typed values of its fields: parsed from config text, written back to it. */
#include "config_keys.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
/* A list of numbers in [0, 1], written by the dump only when given. */
#define DLIST(s, n, f, count, doc)                                                                 \
    {                                                                                              \
        s, n, T_DLIST, FIELD(f[0], double),                                                        \
            sizeof(((struct master_config *)NULL)->f) / sizeof(double), FIELD(count, size_t), 0,   \
            1, "", NULL, K_QUIET, doc                                                              \
    }
#define ENUM(s, n, f, names, def, doc)                                                             \
    {                                                                                              \
        s, n, T_ENUM, FIELD(f, int), 0, 0, 0, 0, def, names, 0, doc                                \
    }

static const char *const selections[] = {"speciated", "generational", "nsga2", NULL};
/* in the order of enum master_obj */
static const char *const objective_names[] = {"valid_acc", "fitness",     "flash", "ram",
                                              "macs",      "connections", NULL};
static const char *const inits[] = {"minimal", "layered", "net", NULL};
static const char *const syncs[] = {"normal", "full", NULL};
/* in the order of enum store_genomes */
static const char *const keeps[] = {"all", "population", "champions", "elite", NULL};

static const char *const models[] = {"rate", "lif", "cuba", NULL}; /* enum genome_model */

/* Every key but those of [task] (the task's own table). The default text is
 * parsed like a value, so it is checked too. */
static const struct config_key table[] = {
    STR("run", "task", task, NULL, 0,
        "the task networks are evaluated on (required): xor, null, spin, ... (trevo task list), "
        "or a plugin task's file, ./libNAME.so (docs/plugins.md)"),
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
         "speciated (NEAT), generational (a plain GA with tournaments) or nsga2 (non-dominated "
         "sorting and crowding distance on [evolution] objectives); also read from [evolution]"),
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
    {"evolution", "objectives", T_OBJS, FIELD(objectives, uint32_t), 0, 0, 0, 0, "valid_acc,flash",
     objective_names, K_QUIET,
     "selection = nsga2: the objectives, comma-separated, of valid_acc, fitness (maximised), "
     "flash, ram, macs, connections (minimised)"},
    I64("evolution", "max_age", max_age, 0, 1e9, "0", K_QUIET,
        "generational or nsga2: members born more than this many generations ago leave the "
        "population before selection (regularized evolution; 0: never)"),
    I64("evolution", "max_flash", worker.max_flash, 0, 1e15, "0", K_QUIET,
        "budget: bytes of constants of the int8 C (as `trevo net validate` estimates them); a "
        "child over it is bred again, then scored failed before any training (0: none)"),
    I64("evolution", "max_ram", worker.max_ram, 0, 1e15, "0", K_QUIET,
        "budget: bytes of mutable arrays of the int8 C (0: none)"),
    I64("evolution", "max_macs", worker.max_macs, 0, 1e15, "0", K_QUIET,
        "budget: multiply-accumulates per inference of the int8 C (0: none)"),
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
         "starting genomes: minimal (inputs joined to outputs), layered, or net (mutants of "
         "init_net)"),
    STR("genome", "init_net", worker.init_net, "", K_QUIET,
        "init = net: a network file (text or msgpack, as trevo net writes them); each "
        "starting genome is it, mutated once"),
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
    DLIST("genome", "init_densities", worker.init_densities, worker.n_init_densities,
          "layered: a density per adjacent layer pair, in order (inputs-first hidden, ..., "
          "last hidden-outputs), in place of init_density (empty: init_density)"),
    DLIST("genome", "init_skip_densities", worker.init_skip_densities, worker.n_init_skip_densities,
          "layered: a density per skip pair (a, b >= a + 2) in the order (0,2), (0,3), ..., (1,3), "
          "..., in place of init_skip_rate (empty: init_skip_rate)"),
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
    {"genome", "init_model", T_ENUM, FIELD(worker.init_model, int), 0, 0, 0, 0, "rate", models,
     K_QUIET,
     "model of the starting genomes' neurons: rate, or cuba (spiking, for spike_xor and "
     "spike_pole1; its parameters marked to mutate move with the bias rates)"},
    DBL("genome", "delay_rate", worker.mutation.delay_rate, 0, 1, "0", K_QUIET,
        "per connection into a cuba neuron: its synaptic delay moves one step"),
    {"genome", "delay_max", T_SIZE, FIELD(worker.mutation.delay_max, size_t), 0, 0, 1,
     GENOME_MAX_DELAY, "1", NULL, K_QUIET, "longest synaptic delay in steps (1: no delays)"},
    DBL("genome", "add_filter_rate", worker.mutation.conv.add_filter_rate, 0, 1, "0", K_QUIET,
        "a filter of one coefficient between two channels (convolutional genomes)"),
    DBL("genome", "del_filter_rate", worker.mutation.conv.del_filter_rate, 0, 1, "0", K_QUIET,
        "delete a filter (convolutional genomes)"),
    DBL("genome", "add_coef_rate", worker.mutation.conv.add_coef_rate, 0, 1, "0", K_QUIET,
        "a coefficient in a filter's kernel (convolutional genomes)"),
    DBL("genome", "del_coef_rate", worker.mutation.conv.del_coef_rate, 0, 1, "0", K_QUIET,
        "delete a filter coefficient (convolutional genomes)"),
    DBL("genome", "add_channel_rate", worker.mutation.conv.add_channel_rate, 0, 1, "0", K_QUIET,
        "a hidden channel fed from an existing one (convolutional genomes)"),
    DBL("genome", "del_channel_rate", worker.mutation.conv.del_channel_rate, 0, 1, "0", K_QUIET,
        "delete a hidden channel (convolutional genomes)"),

    DBL("genome", "add_local_per_conn", worker.mutation.add_local_per_conn, 0, 1, "0", K_QUIET,
        "per connection: the number of new local connections is Binomial(connections, rate)"),
    DBL("genome", "add_skip_per_conn", worker.mutation.add_skip_per_conn, 0, 1, "0", K_QUIET,
        "per connection: the number of new skip connections is Binomial(connections, rate)"),
    DBL("genome", "add_recurrent_per_conn", worker.mutation.add_recurrent_per_conn, 0, 1, "0",
        K_QUIET,
        "per connection: the number of new recurrent connections is Binomial(connections, rate)"),
    DBL("genome", "del_conn_per_conn", worker.mutation.del_conn_per_conn, 0, 1, "0", K_QUIET,
        "per connection: each is deleted with this probability"),
    DBL("genome", "add_head_per_conn", worker.mutation.add_head_per_conn, 0, 1, "0", K_QUIET,
        "per connection, genomes with channels: the number of new connections from the deepest "
        "channels' pooled pixels into the head is Binomial(connections, rate)"),
    DBL("genome", "add_neuron_per_neuron", worker.mutation.add_neuron_per_neuron, 0, 1, "0",
        K_QUIET,
        "per neuron: about rate x neurons new neurons in one child, each splitting a distinct "
        "connection"),
    DBL("genome", "del_neuron_per_neuron", worker.mutation.del_neuron_per_neuron, 0, 1, "0",
        K_QUIET, "per hidden neuron: each is deleted, with its connections, with this probability"),
    DBL("genome", "hyper_rate", worker.mutation.hyper_rate, 0, 1, "0", K_QUIET,
        "per hyper-parameter gene (the scales of the learning rate, the training steps and the "
        "regrowth fraction a trained child uses): the chance it moves (0: genomes carry none)"),
    DBL("genome", "hyper_sigma", worker.mutation.hyper_sigma, 0, 10, "0.2", K_QUIET,
        "a hyper-parameter gene that moves is multiplied by exp(sigma N(0, 1))"),
    DBL("genome", "hyper_min", worker.mutation.hyper_min, 0.001, 1000, "0.1", K_QUIET,
        "the smallest a hyper-parameter gene becomes"),
    DBL("genome", "hyper_max", worker.mutation.hyper_max, 0.001, 1000, "10", K_QUIET,
        "the largest a hyper-parameter gene becomes"),
    BOOL("genome", "preserve", worker.mutation.preserve, "false", K_QUIET,
         "function-preserving growth: a split passes its input through, new connections, "
         "coefficients start at 0"),
    SIZE("genome", "max_neurons", worker.limits.max_neurons, 1, 16777216, "100000",
         "limit on neurons per genome (structural mutations stop there)"),
    SIZE("genome", "max_conns", worker.limits.max_conns, 1, 134217728, "1000000",
         "limit on connections per genome"),
    STR("store", "db", db, "trevo.db", 0, "SQLite database file, on a local disk"),
    ENUM("store", "sync", sync_full, syncs, "normal",
         "normal (fast; may lose the last commits on power loss) or full"),
    I64("store", "commit_batch", commit_batch, 1, 1e7, "1024", 0,
        "results per store transaction (at most, and at most a second's worth)"),
    {"store", "genomes", T_ENUM, FIELD(keep_genomes, int), 0, 0, 0, 0, "elite", keeps,
     K_RESUMABLE | K_QUIET,
     "genome bytes kept: elite (the checkpoint's, each champion and every elite), all, "
     "population (the checkpoint's) or champions (the checkpoint's and each champion)"},
    I64("farm", "batch", batch, 0, 1e6, "0", 0, "children per message (0: automatic)"),
    I64("farm", "inflight", inflight, 1, 64, "2", 0, "messages in flight per worker"),
    {"farm", "max_message_mb", T_MIB, FIELD(worker.max_message_bytes, size_t), 0, 0, 1, 2047, "256",
     NULL, 0, "largest message accepted, in MiB"},
    BOOL("log", "quiet", quiet, "false", K_RESUMABLE,
         "no progress line per generation (the closing summary stays)"),
};
_Static_assert(sizeof table / sizeof table[0] == MASTER_CONFIG_N_KEYS,
               "a key added or removed: update MASTER_CONFIG_N_KEYS");
const struct config_key *const master_config_keys = table;

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

/* v in the fewest significant digits that read back to the same double. */
static void format_short(char buf[32], double v)
{
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, 32, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* Parses one list item of T_OBJS (a choice: its bit in *mask), T_ACTS (an
 * activation: its bit in *mask), T_LIST
 * (a layer size: appended to list[*n]) or T_DLIST (a number: to dlist[*n]). */
static int set_item(const struct config_key *k, const char *p, size_t len, uint32_t *mask,
                    uint32_t *list, double *dlist, size_t *n, char *why, size_t why_len)
{
    char item[64], *end;
    snprintf(item, sizeof item, "%.*s", (int)(len < 63 ? len : 63), p);
    if (k->type == T_DLIST) {
        errno = 0;
        double v = strtod(item, &end);
        if (*end || errno || len > 63 || !(v >= k->min && v <= k->max)) {
            snprintf(why, why_len, "'%s' is not a number in [%g, %g]", item, k->min, k->max);
            return -1;
        }
        if (*n == k->size) {
            snprintf(why, why_len, "more than %zu values", k->size);
            return -1;
        }
        dlist[(*n)++] = v;
        return 0;
    }
    if (k->type == T_OBJS) {
        for (uint32_t i = 0; k->choices[i]; i++)
            if (strlen(k->choices[i]) == len && !strncmp(k->choices[i], p, len)) {
                if (*mask >> i & 1) {
                    snprintf(why, why_len, "'%s' given twice", item);
                    return -1;
                }
                *mask |= 1u << i;
                return 0;
            }
        int at = snprintf(why, why_len, "unknown objective '%s' (one of", item);
        for (int i = 0; k->choices[i] && at >= 0 && (size_t)at < why_len; i++)
            at += snprintf(why + at, why_len - (size_t)at, "%s %s", i ? "," : "", k->choices[i]);
        if (at >= 0 && (size_t)at < why_len)
            snprintf(why + at, why_len - (size_t)at, ")");
        return -1;
    }
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

/* T_OBJS, T_ACTS, T_LIST and T_DLIST: comma- or space-separated items. */
static int set_list(char *base, const struct config_key *k, const char *value, char *why,
                    size_t why_len)
{
    uint32_t mask = 0, list[WORKER_MAX_HIDDEN_LAYERS];
    double dlist[WORKER_MAX_SKIP_PAIRS];
    size_t n = 0;
    for (const char *p = value; *p;) {
        p += strspn(p, " ,");
        size_t len = strcspn(p, " ,");
        if (len && set_item(k, p, len, &mask, list, dlist, &n, why, why_len))
            return -1;
        p += len;
    }
    if (k->type == T_OBJS && !mask) {
        snprintf(why, why_len, "expected at least one objective");
        return -1;
    }
    if (k->type == T_ACTS || k->type == T_OBJS) {
        *(uint32_t *)(base + k->offset) = mask;
    } else if (k->type == T_DLIST) {
        /* the dump writes "name = v1,v2,..." on one line: it must fit too */
        size_t line = strlen(k->name) + 3;
        for (size_t j = 0; j < n; j++) {
            char buf[32];
            format_short(buf, dlist[j]);
            line += strlen(buf) + (j > 0);
        }
        if (line > LINE_MAX_CHARS) {
            snprintf(why, why_len, "%zu values do not fit on one line of the stored config", n);
            return -1;
        }
        memcpy(base + k->offset, dlist, n * sizeof *dlist);
        *(size_t *)(base + k->aux) = n;
    } else {
        memcpy(base + k->offset, list, n * sizeof *list);
        *(size_t *)(base + k->aux) = n;
    }
    return 0;
}

static int set_integer(char *base, const struct config_key *k, const char *value, char *why,
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

static int set_double(char *base, const struct config_key *k, const char *value, char *why,
                      size_t why_len)
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

static int set_string(char *base, const struct config_key *k, const char *value, char *why,
                      size_t why_len)
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

int master_config_key_set(void *base_, const struct config_key *k, const char *value, char *why,
                          size_t why_len)
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
        /* "expected one of a, b, c, got 'x'" */
        int len = snprintf(why, why_len, "expected one of");
        for (int i = 0; k->choices[i] && len >= 0 && (size_t)len < why_len; i++)
            len += snprintf(why + len, why_len - (size_t)len, " %s,", k->choices[i]);
        if (len >= 0 && (size_t)len < why_len)
            snprintf(why + len, why_len - (size_t)len, " got '%s'", value);
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
    case T_OBJS:
    case T_LIST:
    case T_DLIST:
        return set_list(base, k, value, why, why_len);
    }
    return -1;
}

/* The shortest decimal that reads back as v (0.1, not 0.10000000000000001):
 * as exact as %.17g, and what a user wrote. */
static void format_double(FILE *f, double v)
{
    char buf[40];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

void master_config_key_format(FILE *f, const void *base_, const struct config_key *k)
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
        format_double(f, *(const double *)base);
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
    case T_OBJS:
        for (int i = 0, first = 1; k->choices[i]; i++)
            if (*(const uint32_t *)base >> i & 1) {
                fprintf(f, "%s%s", first ? "" : ",", k->choices[i]);
                first = 0;
            }
        break;
    case T_LIST:
    case T_DLIST: {
        size_t n = *(const size_t *)((const char *)base_ + k->aux);
        for (size_t j = 0; j < n; j++)
            if (k->type == T_LIST) {
                fprintf(f, "%s%u", j ? "," : "", ((const uint32_t *)base)[j]);
            } else {
                char buf[32];
                format_short(buf, ((const double *)base)[j]);
                fprintf(f, "%s%s", j ? "," : "", buf);
            }
        break;
    }
    }
}
