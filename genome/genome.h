/*
 * genome.h -- the triplet chromosome.
 *
 * A genome is a set of neuron genes and a set of connection genes
 * (from, to, weight). Only connections that exist are stored. A neuron
 * carries a model (enum genome_model: the rate neuron and leaky
 * integrate-and-fire neurons) with a parameter block that one table,
 * genome_models[], describes.
 *
 * This module holds the genes, their checks, the one classification of
 * connections (local / skip / recurrent), the variation operators, the
 * starting genomes (minimal, layered, NEAT-style random graphs) and every
 * format of a genome: msgpack, text and a Graphviz drawing. msgpack and text
 * have versions; writers write the oldest version that can express the genome
 * (see "format versions" below).
 *
 * Invariants of a valid genome (genome_validate() checks all of them, and
 * every genome that enters from outside -- a message, a database row, a file --
 * goes through it):
 *   - neurons sorted by id, ids unique and != GENOME_ID_NONE;
 *   - connections sorted by (from, to), keys unique, both ends existing,
 *     no connection ends in an input neuron;
 *   - weights, biases finite; depth in [0, 1]; inputs at depth 0, outputs at 1;
 *   - a known model, its parameters within their table ranges, unused
 *     parameter slots 0;
 *   - at least one input and one output; sizes within the limits.
 *
 * Semantics (nn/ implements them): a connection with depth(from) < depth(to)
 * is feed-forward (local between adjacent layers, skip across layers);
 * depth(from) >= depth(to) is recurrent and reads from's value of the
 * previous time step (0 at t = 0). Layers are groups of equal depth. The k-th
 * input of the network is the input neuron with the k-th smallest id; the
 * same for outputs.
 *
 * Structural mutations make deterministic neuron ids: splitting (a, b) makes
 * the id genome_split_id(a, b, 0), or the next attempt if that id is taken,
 * so genomes that split the same connection line up in crossover without any
 * innovation table.
 *
 * This module knows nothing else of trevo, and must never include MPI or
 * SQLite headers. All randomness comes from a `struct tv_rng` passed in.
 */
#ifndef TREVO_GENOME_H
#define TREVO_GENOME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tv.h"

#define GENOME_ID_NONE UINT32_MAX

/* Stored and sent: explicit values, grow only at the end. */
enum genome_kind { GENOME_INPUT = 0, GENOME_OUTPUT = 1, GENOME_HIDDEN = 2 };

/* Activation ids. The functions themselves live in nn/ (one table there);
 * the names below are what the text format and configs use. */
enum genome_act {
    GENOME_ACT_IDENTITY = 0,
    GENOME_ACT_RELU = 1,
    GENOME_ACT_TANH = 2,
    GENOME_ACT_SIGMOID = 3,      /* 1 / (1 + e^-x) */
    GENOME_ACT_NEAT_SIGMOID = 4, /* 1 / (1 + e^-4.9x), NEAT's steepened sigmoid */
    GENOME_ACT_GAUSS = 5,        /* e^(-x^2) */
    GENOME_ACT_SIN = 6,
    GENOME_ACT_ABS = 7,
    GENOME_ACT_STEP = 8, /* 1 if x > 0 else 0 */
    GENOME_ACT_COUNT
};

/* Neuron models. Stored and sent: explicit values, grow only at the end.
 * Each has one row in genome_models[] (genome.c) naming its parameters; the
 * codecs, the text format, validation, mutation, crossover and the drawing
 * read that table, so a model is one row there (and its kernel in nn/). */
enum genome_model {
    GENOME_MODEL_RATE = 0, /* out = act(bias + sum w * in): no parameters */
    GENOME_MODEL_LIF = 1,  /* discrete-time leaky integrate-and-fire: read and written, not run */
    GENOME_MODEL_CUBA = 2, /* leaky integrate-and-fire, current-based synapses: nn/ runs it */
    GENOME_MODEL_COUNT
};
#define GENOME_MAX_PARAMS 8 /* parameters of the largest model */

/* The spiking neuron, "cuba" (the first "lif" row stays as it was so that
 * files written with it still read; it is a different, discrete-time model
 * that nothing runs). Time is counted in steps of the simulation (tau_m 200
 * is 20 ms at 0.1 ms a step); potentials and currents have no unit. Between
 * spikes
 *   tau_m   dv/dt     = (rest + bias + x) - v + I_exc + I_inh
 *   tau_exc dI_exc/dt = -I_exc,   tau_inh dI_inh/dt = -I_inh
 * solved exactly over each step (the equations are linear: the same solution
 * Brian2's `exact` method finds), x the input current of the step (held
 * constant over it). A spike arriving over a connection of weight w adds w to
 * I_exc when w > 0, to I_inh when w < 0. After the update, a neuron whose v
 * is above threshold (strictly) spikes and v becomes reset; v then stays at
 * reset and the neuron cannot spike until `refractory` steps after its spike
 * (the currents go on decaying). These are the parameter slots: */
enum genome_cuba_param {
    GENOME_CUBA_TAU_M = 0,
    GENOME_CUBA_TAU_EXC = 1,
    GENOME_CUBA_TAU_INH = 2,
    GENOME_CUBA_THRESHOLD = 3,
    GENOME_CUBA_RESET = 4,
    GENOME_CUBA_REST = 5,
    GENOME_CUBA_REFRACTORY = 6,
    GENOME_CUBA_N_PARAMS = 7
};

struct genome_neuron {
    uint32_t id;
    uint8_t kind; /* enum genome_kind */
    uint8_t act;  /* enum genome_act */
    float bias;
    float depth;   /* [0, 1]: inputs 0, outputs 1 */
    uint8_t model; /* enum genome_model: 0, a rate neuron, when zeroed */
    /* param[k] is parameter k of the model (genome_models[model].params[k]);
     * slots past the model's n_params are 0. */
    float param[GENOME_MAX_PARAMS];
};

/* One parameter of a model: the table row the formats, validation and the
 * variation operators read. */
struct genome_param_info {
    const char *name; /* in the text format ("threshold=1") and messages */
    int integer;      /* 1: the value must be a whole number (stored as a float) */
    int mutate;       /* 1: perturbed and replaced with the bias rates, sds and clamp
                         (a replacement draws around def), then held in [min, max] */
    float def, min, max;
};
struct genome_model_info {
    const char *name; /* in the text format: "rate", "lif" */
    size_t n_params;  /* <= GENOME_MAX_PARAMS */
    const struct genome_param_info *params;
};
/* Indexed by enum genome_model. */
extern const struct genome_model_info genome_models[GENOME_MODEL_COUNT];
/* The model named `name` (length len), or -1. */
int genome_model_parse(const char *name, size_t len);
/* Sets n->model and every parameter of it to its default (other slots 0). */
void genome_neuron_set_model(struct genome_neuron *n, int model);
/* Checks value v for parameter k of model: finite, within [min, max], whole
 * if it must be. 0, or TV_EINVAL with a message such as "lif threshold 500
 * is outside [0.01, 100]" (the caller puts where in front). */
int genome_param_check(int model, size_t k, float v, struct tv_error *err);

struct genome_conn {
    uint32_t from;
    uint32_t to;
    float weight;
};

struct genome {
    struct genome_neuron *neurons; /* [n_neurons], sorted by id */
    size_t n_neurons, cap_neurons;
    struct genome_conn *conns; /* [n_conns], sorted by (from, to) */
    size_t n_conns, cap_conns;
};

/* Size limits, enforced before allocation when decoding and parsing. */
struct genome_limits {
    size_t max_neurons;
    size_t max_conns;
};
#define GENOME_DEFAULT_MAX_NEURONS ((size_t)1 << 24)
#define GENOME_DEFAULT_MAX_CONNS ((size_t)1 << 27)
/* The defaults above; pass NULL wherever limits are taken to use them. */
extern const struct genome_limits genome_default_limits;

/* ---- life cycle -------------------------------------------------------- */

/* An empty genome. NULL when out of memory. */
struct genome *genome_new(void);
void genome_free(struct genome *g); /* NULL is a no-op */
/* For a genome embedded in another struct: init zeroes, release frees. */
void genome_init(struct genome *g);
void genome_release(struct genome *g);
/* Empties the genome, keeping its memory for reuse. */
void genome_reset(struct genome *g);
int genome_reserve(struct genome *g, size_t n_neurons, size_t n_conns, struct tv_error *err);
/* dst becomes a copy of src. On error dst is left empty. */
int genome_copy(struct genome *dst, const struct genome *src, struct tv_error *err);
/* 1 when both hold exactly the same genes (bitwise on floats), else 0. */
int genome_equal(const struct genome *a, const struct genome *b);

/* ---- genes ------------------------------------------------------------- */

/* Inserts a neuron in id order. TV_EINVAL if the id exists or is NONE. */
int genome_add_neuron(struct genome *g, uint32_t id, int kind, int act, float bias, float depth,
                      struct tv_error *err);
/* Inserts a connection in key order. TV_EINVAL if the key exists or an end
 * is missing. (Validity of the rest -- e.g. no edge into an input -- is
 * genome_validate()'s job.) */
int genome_add_conn(struct genome *g, uint32_t from, uint32_t to, float weight,
                    struct tv_error *err);
/* Appends without keeping order, for bulk construction; follow with
 * genome_canonicalize(). */
int genome_push_neuron(struct genome *g, const struct genome_neuron *n, struct tv_error *err);
int genome_push_conn(struct genome *g, const struct genome_conn *c, struct tv_error *err);
/* Sorts neurons by id and connections by key; TV_EINVAL naming the first
 * duplicate id or key. */
int genome_canonicalize(struct genome *g, struct tv_error *err);
/* Removes the connection at index i (order kept). */
void genome_remove_conn_at(struct genome *g, size_t i);

/* Index of the neuron / connection, or -1. Binary search: O(log n). */
ptrdiff_t genome_find_neuron(const struct genome *g, uint32_t id);
ptrdiff_t genome_find_conn(const struct genome *g, uint32_t from, uint32_t to);

/* The canonical order of connections: by from, then to. -1, 0 or 1. Takes
 * `const void *` so that it serves qsort and bsearch as well as direct calls;
 * it reads only the first two fields, so it also orders any struct that
 * starts with a struct genome_conn. Inline: merge loops call it per gene. */
static inline int genome_conn_cmp(const void *a, const void *b)
{
    const struct genome_conn *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

/* The canonical order of neurons: by id. For qsort and bsearch over neurons
 * or any struct that starts with a struct genome_neuron. */
static inline int genome_neuron_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct genome_neuron *)a)->id, y = ((const struct genome_neuron *)b)->id;
    return (x > y) - (x < y);
}

/* An open-addressing map from neuron id to index in g->neurons, for O(1)
 * lookups over large genomes (ids from splits are sparse 32-bit hashes).
 * It holds indices: rebuild it after the neuron list changes. */
struct genome_idmap {
    uint32_t *ids; /* [mask + 1], GENOME_ID_NONE marks an empty slot */
    uint32_t *idx; /* [mask + 1] */
    size_t mask;
};
/* 0 or TV_ENOMEM (m then holds nothing to free). Later duplicates of an id
 * are ignored. */
int genome_idmap_build(struct genome_idmap *m, const struct genome *g);
/* The index of neuron `id` in the genome the map was built from, or -1. */
ptrdiff_t genome_idmap_find(const struct genome_idmap *m, uint32_t id);
void genome_idmap_free(struct genome_idmap *m);

/* Checks every invariant listed at the top. On failure returns TV_EINVAL or
 * TV_ELIMIT with a message naming the offending gene, e.g.
 * "connection 12 (3 -> 7): weight is not finite". limits may be NULL. */
int genome_validate(const struct genome *g, const struct genome_limits *limits,
                    struct tv_error *err);

size_t genome_count_kind(const struct genome *g, int kind);

/* ---- layers and classes of connections ---------------------------------
 * The one definition of the semantics above, for everything that counts,
 * draws or mutates connections by kind: the layers of a genome are its
 * distinct depths in increasing order; a connection from layer f to layer t
 * is recurrent when t <= f (depth(from) >= depth(to)), local when t = f + 1,
 * skip when t > f + 1. */
enum genome_conn_class { GENOME_CONN_LOCAL = 0, GENOME_CONN_SKIP = 1, GENOME_CONN_RECURRENT = 2 };
#define GENOME_CONN_CLASSES 3

/* The distinct depths of g in increasing order into *depths (malloc'd, the
 * caller frees; n_neurons floats at most) and their count into *n_layers.
 * 0 or TV_ENOMEM ("out of memory", prefix your context). */
int genome_layers(const struct genome *g, float **depths, size_t *n_layers, struct tv_error *err);
/* The layer of `depth`: its index in depths[n_layers] (sorted, distinct),
 * found by binary search; for a depth between layers, the next one up. */
size_t genome_layer_of(const float *depths, size_t n_layers, float depth);
/* enum genome_conn_class of a connection from layer from_layer to to_layer. */
int genome_conn_class(size_t from_layer, size_t to_layer);
/* The same from the depths of the two ends: a recurrent connection needs no
 * layer lookup, a feed-forward one two binary searches in depths[n_layers]. */
int genome_conn_class_of(const float *depths, size_t n_layers, float from_depth, float to_depth);
/* The other way round: the target layers [*lo, *hi) that a connection of
 * class cls from from_layer reaches, in a genome of n_layers (empty when
 * *lo >= *hi). genome_conn_class(from_layer, t) == cls exactly for these t. */
void genome_conn_class_targets(int cls, size_t from_layer, size_t n_layers, size_t *lo, size_t *hi);

/* Sizes by class of connection. */
struct genome_stats {
    size_t n_neurons, n_inputs, n_outputs, n_hidden;
    size_t n_conns, n_local, n_skip, n_recurrent;
    size_t n_layers; /* distinct depths */
};
int genome_stats(const struct genome *g, struct genome_stats *out, struct tv_error *err);

const char *genome_act_name(int act);
/* The activation named `name` (length len), or -1. */
int genome_act_parse(const char *name, size_t len);
const char *genome_kind_name(int kind); /* "in", "out", "hid" */

/* The id that splitting (from, to) makes on the given attempt (0, 1, ...).
 * Never GENOME_ID_NONE. */
uint32_t genome_split_id(uint32_t from, uint32_t to, uint32_t attempt);

/* ---- starting genomes -------------------------------------------------- */

/* Inputs get ids 0..n_in-1, outputs n_in..n_in+n_out-1; every input joined
 * to every output with a weight drawn from N(0, weight_sd^2) (0 if sd is 0).
 * Outputs have activation out_act and bias 0. */
int genome_build_minimal(struct genome *g, uint32_t n_in, uint32_t n_out, int out_act,
                         double weight_sd, struct tv_rng *rng, struct tv_error *err);

struct genome_layered_spec {
    const uint32_t *sizes; /* [n_layers]: inputs, hidden..., outputs */
    size_t n_layers;       /* >= 2 */
    double density;        /* Erdos-Renyi probability per adjacent layer pair */
    double skip_rate;      /* probability per (layer i, layer j >= i+2) pair */
    double recurrent_rate; /* probability per (later or same layer -> earlier, non-input) pair */
    int hidden_act, out_act;
    double weight_sd;
};
/* A layered sparse genome: each adjacent layer pair connected at `density`,
 * plus skip and recurrent connections at their rates. Hidden layer l of L-2
 * sits at depth l/(L-1). Ids: inputs first, then outputs, then hidden in layer
 * order. Sampling is O(connections made), not O(pairs), so very sparse large
 * layers are cheap. */
int genome_build_layered(struct genome *g, const struct genome_layered_spec *spec,
                         struct tv_rng *rng, struct tv_error *err);

/* A density per layer pair, in place of a spec's single rates (a NULL table
 * keeps its rate). A struct of its own, not fields of the spec, so that the
 * spec's positional initializers stay complete. Entries in [0, 1]. */
struct genome_layer_pairs {
    const double *adjacent; /* [n_layers - 1]: pair (l, l + 1), in place of density */
    /* [(n_layers - 1) * (n_layers - 2) / 2]: the skip pairs (a, b >= a + 2) in
     * the order (0, 2), (0, 3), ..., (1, 3), ..., in place of skip_rate */
    const double *skip;
};
/* genome_build_layered() with densities per pair (pairs NULL: the same
 * genome as genome_build_layered(), draw for draw). TV_EINVAL names a bad
 * entry: "layered genome: skip density 1 (pair 0 -> 3) must be in [0, 1], got 2". */
int genome_build_layered_pairs(struct genome *g, const struct genome_layered_spec *spec,
                               const struct genome_layer_pairs *pairs, struct tv_rng *rng,
                               struct tv_error *err);

/* A NEAT-style random graph, for tests and benchmarks: n_in inputs, n_out
 * outputs and the rest hidden, the hidden neurons spread over n_levels
 * depths; about n_conns distinct connections, of which a share rec_rate is
 * recurrent (half within the source's own level, self loops included, half to
 * any shallower neuron) and the rest feed-forward (half local, to the next
 * level, half skip). Hidden neurons use hidden_act, outputs out_act; weights
 * and biases N(0, weight_sd^2). g is reset first. Made source by source with
 * sorted targets, so it comes out canonical without a sort: O(connections). */
struct genome_graph_spec {
    size_t n_neurons, n_in, n_out, n_conns, n_levels;
    double rec_rate, weight_sd;
    int hidden_act, out_act;
};
int genome_build_graph(struct genome *g, const struct genome_graph_spec *spec, struct tv_rng *rng,
                       struct tv_error *err);

/* ---- variation --------------------------------------------------------- */

/* Rates of the mutation operators. Per-gene rates apply to every gene;
 * structural rates are the probability that the operator fires once per
 * genome_mutate() call. */
struct genome_mutation {
    double weight_perturb_rate; /* per connection: w += N(0, weight_perturb_sd^2) */
    double weight_perturb_sd;
    double weight_replace_rate; /* per connection: w = N(0, weight_init_sd^2) */
    double weight_init_sd;      /* also for new connections */
    double weight_max;          /* |w| and |bias| clamped to this (0: no clamp) */
    double bias_perturb_rate;   /* also for model parameters marked `mutate` */
    double bias_perturb_sd;
    double bias_replace_rate;
    double bias_init_sd;
    double add_local_rate;     /* add a feed-forward connection to the next layer */
    double add_skip_rate;      /* add a feed-forward connection across layers */
    double add_recurrent_rate; /* add a recurrent connection (incl. self loops) */
    double del_conn_rate;
    double add_neuron_rate;      /* split a random connection */
    double del_neuron_rate;      /* remove a random hidden neuron and its connections */
    double act_change_rate;      /* per hidden neuron */
    uint32_t act_choices;        /* bit mask of activations act_change may pick */
    int hidden_act;              /* activation of neurons made by a split */
    struct genome_limits limits; /* structural mutations stop at these sizes */
    /* Structural rates that scale with the genome, for large genomes: one call
     * may add or remove many genes. Each is a probability per gene, so the
     * number of genes an operator acts on is Binomial(genes, rate), drawn with
     * geometric gaps (O(count) draws, not one per gene). 0 turns an operator
     * off without any draw: configs without these give the same children. They
     * run after the rates above, deletions first: connections, hidden neurons,
     * then splits, then new connections (fewer than drawn where 32 tries find
     * no free pair of neurons). The new genes are sorted once and merged in:
     * a call costs O(connections + neurons log neurons + k log connections)
     * for k genes made, and a fixed number of allocations. */
    double add_local_per_conn;     /* new local connections: Binomial(n_conns, rate) */
    double add_skip_per_conn;      /* new skip connections: Binomial(n_conns, rate) */
    double add_recurrent_per_conn; /* new recurrent connections: Binomial(n_conns, rate) */
    double del_conn_per_conn;      /* each connection removed with this probability */
    /* Bulk neuron insertion by splitting (as add_neuron_rate does, one id per
     * split key): each connection is split with probability
     * min(1, rate * n_neurons / n_conns), so rate * n_neurons new neurons are
     * expected, the distinct connections they split drawn at once. */
    double add_neuron_per_neuron;
    double del_neuron_per_neuron; /* each hidden neuron removed, with its connections */
};

/* Mutates g in place; g stays valid. Only TV_ENOMEM can fail. */
int genome_mutate(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                  struct tv_error *err);

/* NEAT crossover by connection key in one merge pass: a matching gene takes
 * its weight from either parent at random; disjoint and excess genes come
 * from `fitter` only. Neurons are fitter's, a neuron present in both takes
 * bias and activation from either at random, and each model parameter from
 * either when both parents give it the same model (else fitter's model and
 * parameters). child must be neither parent. */
int genome_crossover(struct genome *child, const struct genome *fitter, const struct genome *other,
                     struct tv_rng *rng, struct tv_error *err);

struct genome_distance_cfg {
    double c_excess, c_disjoint, c_weight;
    size_t small_genome; /* below this many connections N = 1 (NEAT: 20) */
};
/* NEAT's compatibility distance c1*E/N + c2*D/N + c3*W over connection keys,
 * N the larger connection count. Symmetric; 0 for equal genomes. */
double genome_distance(const struct genome *a, const struct genome *b,
                       const struct genome_distance_cfg *cfg);

/* A sketch of a genome's connection keys, to skip distance computations
 * that cannot fall below a threshold: each key sets one of 256 bits by hash,
 * so a bit set in one sketch and not the other has its own key that is in
 * one genome and not the other, and popcount(a ^ b) <= E + D. */
struct genome_sketch {
    uint64_t bits[4];
    size_t n_conns;
};
void genome_sketch(const struct genome *g, struct genome_sketch *s);
/* A lower bound of genome_distance(a, b, cfg) from two sketches (E + D is at
 * least popcount(a ^ b) and at least the difference of the sizes), valid for
 * non-negative coefficients (else 0). Both are rounded: a comparison of the
 * bound with a threshold leaves the relative margin GENOME_BOUND_MARGIN. */
double genome_distance_bound(const struct genome_sketch *a, const struct genome_sketch *b,
                             const struct genome_distance_cfg *cfg);
#define GENOME_BOUND_MARGIN (1 - 1e-9)
/* The first k in [from, n) whose bound with reps[k], times the margin, is
 * below threshold (so genome_distance may be below it), else n: every
 * representative it passes over is certainly at threshold or beyond. */
size_t genome_sketch_first_below(const struct genome_sketch *mine, const struct genome_sketch *reps,
                                 size_t from, size_t n, const struct genome_distance_cfg *cfg,
                                 double threshold);

/* ---- format versions --------------------------------------------------
 * Version 1 (both forms) holds rate neurons only; version 2 adds each
 * neuron's model and parameters. Readers take both. Writers write the OLDEST
 * version that can express the genome: version 1 when every neuron is a rate
 * neuron with its parameters (none today) at their defaults, byte for byte
 * as before version 2 existed, so that databases, champions and messages of
 * such genomes do not change; version 2 otherwise. */
#define GENOME_FORMAT_VERSION 2 /* the newest this program reads and writes */
/* The version genome_encode() and genome_write_text() use for g: 1 or 2. */
int genome_format_version(const struct genome *g);

/* ---- msgpack codec ----------------------------------------------------- */

/* Appends the encoding of g to out:
 *   ["trevo-genome", 1, [[id, kind, act, bias, depth], ...], bin]
 * where bin holds n_conns records of 12 bytes (from u32, to u32, weight f32,
 * little-endian). About 12 bytes per connection. In version 2 each neuron is
 *   [id, kind, act, bias, depth, model, param_0, ..., param_{n-1}]
 * with exactly the model's n_params parameters (float32). */
int genome_encode(const struct genome *g, struct tv_buf *out, struct tv_error *err);
/* Decodes data[0..len) into g (reset first) and validates it. Sizes are
 * checked against limits (NULL: defaults) before anything is allocated; every
 * byte must be consumed. Any input gives either 0 or an error, never a crash. */
int genome_decode(struct genome *g, const void *data, size_t len,
                  const struct genome_limits *limits, struct tv_error *err);
/* genome_decode() reads the encodings genome_encode() writes directly and
 * everything else through msgpack-c; with general_only, everything goes
 * through msgpack-c (what the tests and the fuzzer compare the fast path
 * with). Same results either way. */
int genome_decode_general(struct genome *g, const void *data, size_t len,
                          const struct genome_limits *limits, int general_only,
                          struct tv_error *err);

/* ---- text format ------------------------------------------------------- */

/* Writes
 *   trevo-net 1 / inputs N / outputs M / neuron ID in|out|hid DEPTH ACT BIAS /
 *   conn FROM TO WEIGHT
 * with floats printed so that they read back to the same bits. Version 2
 * ("trevo-net 2") lets a neuron line go on with its model and parameters,
 *   neuron ID KIND DEPTH ACT BIAS MODEL NAME=VALUE...
 * (the writer gives every parameter; the reader takes them in any order,
 * defaults for those left out); a line without a model is a rate neuron. */
int genome_write_text(const struct genome *g, FILE *f, struct tv_error *err);
/* Parses text[0..len); `name` is used in messages ("net.txt:7: ..."). Lines
 * after the header may come in any order; '#' starts a comment. The result is
 * validated. */
int genome_read_text(struct genome *g, const char *text, size_t len, const char *name,
                     const struct genome_limits *limits, struct tv_error *err);

/* ---- Graphviz drawing -------------------------------------------------- */

/* Appends g drawn as a Graphviz `dot` graph to out (for `trevo best --format
 * dot` and `trevo net export --format dot`). The drawing follows the
 * semantics above: inputs share the first rank, outputs the last, hidden
 * neurons sit between, neurons of equal depth share a rank. Connections are
 * told apart by genome_conn_class(): local solid, skip dashed, recurrent in
 * another colour with constraint=false so that they do not bend the layering.
 * Each edge is labelled with its weight and drawn with a pen width that grows
 * with |weight|; each neuron is labelled with its id, activation, (if not
 * 0) bias and, unless it is a rate neuron, its model and every parameter
 * ("threshold=1"). Every connection is exactly one line "    nFROM -> nTO [...];", so
 * the edges can be counted with grep. title (may be NULL) is printed above the
 * drawing, escaped. g is validated first: TV_EINVAL naming the bad gene if it
 * is not valid, TV_ENOMEM; on error out is as it was. */
int genome_write_dot(const struct genome *g, const char *title, struct tv_buf *out,
                     struct tv_error *err);

#endif
