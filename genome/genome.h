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
 *   - delays in [1, GENOME_MAX_DELAY], and 1 unless the connection goes from a
 *     non-input into a cuba neuron ("synaptic delays" below);
 *   - at least one input and one output; sizes within the limits;
 *   - channels and filters as "channels and filters" below says;
 *   - an input scaling, if any, with one finite pair per input ("input scaling").
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

/* The hyper-parameter genes in the order of every format ("hyper-parameter genes"). */
enum genome_hyper_gene { GENOME_HYPER_LR, GENOME_HYPER_STEPS, GENOME_HYPER_REGROW, GENOME_N_HYPER };
struct genome_channel; /* the convolutional genes: see "channels and filters" below */
struct genome_filter;
struct genome_coef;

struct genome {
    struct genome_neuron *neurons; /* [n_neurons], sorted by id */
    size_t n_neurons, cap_neurons;
    struct genome_conn *conns; /* [n_conns], sorted by (from, to) */
    size_t n_conns, cap_conns;
    /* Convolutional genes (none in most genomes): see "channels and filters". */
    struct genome_channel *channels; /* [n_channels], sorted by id */
    size_t n_channels, cap_channels;
    struct genome_filter *filters; /* [n_filters], sorted by (from, to) */
    size_t n_filters, cap_filters;
    struct genome_coef *coefs; /* [n_coefs], filter by filter in filter order */
    size_t n_coefs, cap_coefs;
    uint16_t *delays; /* NULL (every delay 1) or [n_conns]: delay of conns[i] ("synaptic delays") */
    size_t cap_delays;
    float *scale;   /* NULL (none) or [2 * n_scale]: the input scaling ("input scaling") */
    size_t n_scale; /* 0, or the number of inputs */
    float hyper[GENOME_N_HYPER]; /* when has_hyper: "hyper-parameter genes" */
    int has_hyper;
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

/* The cut of depths into layers (layers.c), the one rule of every module
 * that derives layers from depths: the compile's layers (nn/order.c), the
 * trainer's, quantization's (from the compile's), the CNN's channel levels
 * and genome_layers above. depth[0..n) is in the engine's dense order: the
 * n_in inputs first, then the others by non-decreasing depth. The inputs
 * are layer 0 on their own (none when n_in is 0); after them, each run of
 * equal depths (==: -0 equals 0, NaN equals nothing) is a layer.
 * genome_layer_end: the end of the layer that starts at j (j < n). */
size_t genome_layer_end(const float *depth, size_t n, size_t n_in, size_t j);
/* The layers of depth[0..n): layer l is [start[l], start[l + 1]) into
 * start[n_layers + 1], each position's layer into layer_of[n] (either may be
 * NULL); returns n_layers (0 when n is 0). O(n). */
size_t genome_layers_cut(const float *depth, size_t n, size_t n_in, uint32_t *start,
                         uint32_t *layer_of);
/* layer_of[j] for j in [start[0], start[n_layers]) from the starts of a cut. */
void genome_layers_index(const uint32_t *start, size_t n_layers, uint32_t *layer_of);
/* run_end[j] (n of them): the end of j's run of equal depth, the first k > j
 * where the depth rises (depth[k] > depth[k - 1]), else n; on the dense
 * order, the first position deeper than j, which a connection's direction
 * is told by (nn/compile.h: nn_compile_is_recurrent). */
void genome_depth_run_ends(const float *depth, size_t n, uint32_t *run_end);

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

/* A starting genome's weights scaled to their destinations' fan-in (He's
 * initialisation): every weight w (drawn N(0, 1)) becomes
 * w * sqrt(gain / fan-in of its destination), gain 2 into a relu neuron, 1
 * otherwise. 0 or TV_ENOMEM (g unchanged). */
int genome_scale_fan_in(struct genome *g, struct tv_error *err);

/* A NEAT-style random graph, for tests and benchmarks (graph.c): n_in
 * inputs, n_out outputs, the rest hidden over n_levels depths; about n_conns
 * connections, a share rec_rate recurrent, the rest feed-forward (half local,
 * half skip). Hidden neurons use hidden_act, outputs out_act; weights and
 * biases N(0, weight_sd^2). g is reset first. O(connections). */
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
    double delay_rate;           /* per connection that may have a delay (synaptic delays):
                                    delay += 1 or -1 at random, held in [1, delay_max] */
    size_t delay_max;            /* <= GENOME_MAX_DELAY; 0 or 1: delays are not mutated */
    int hidden_act;              /* activation of neurons made by a split */
    struct genome_limits limits; /* structural mutations stop at these sizes */
    /* Structural rates of the convolutional genes (genome_mutate_conv), each
     * the probability that the operator fires once per call. */
    struct genome_conv_mutation {
        double add_filter_rate;  /* a filter of one coefficient between two channels */
        double del_filter_rate;  /* a random filter */
        double add_coef_rate;    /* a coefficient in a random filter's kernel */
        double del_coef_rate;    /* a random coefficient (its filter goes when it was the last) */
        double add_channel_rate; /* a hidden channel fed by one filter from an existing one */
        double del_channel_rate; /* a hidden channel, its filters and its connections */
        /* 0: add_channel makes a level of its own (a new depth) with
         * hidden_act. 1, for children the CNN trainer (nn/conv/cnn.h) takes:
         * the new channel joins an existing level of hidden channels (its
         * depth, size, pooling and activation), fed from a channel of the
         * level before by a filter with the kernel, stride and padding of
         * the filters into that level, and add_filter gives a new filter the
         * geometry of the filters into its level (when it has any). */
        int join_levels;
    } conv;

    /* Structural rates that scale with the genome: probabilities per gene, so
     * an operator acts on Binomial(genes, rate) genes, drawn by geometric gaps
     * (0: off, no draw). After the rates above, not on genomes with synaptic
     * delays (with channels: del_conn_per_conn, add_head_per_conn alone);
     * deletions first, then splits, then new connections (fewer where 32
     * tries find no free pair), sorted once and merged in: O(connections +
     * neurons log neurons + k log connections) for k new genes. A CNN's head
     * grows from the deepest channels' pooled pixels into deeper neurons. */
    double add_local_per_conn;     /* new local connections: Binomial(n_conns, rate) */
    double add_skip_per_conn;      /* new skip connections: Binomial(n_conns, rate) */
    double add_recurrent_per_conn; /* new recurrent connections: Binomial(n_conns, rate) */
    double del_conn_per_conn;      /* each connection removed with this probability */
    double add_head_per_conn;      /* new CNN head connections: Binomial(n_conns, rate) */
    /* Bulk splits (as add_neuron_rate, one id per split key): each connection
     * split with probability min(1, rate * n_neurons / n_conns), so rate *
     * n_neurons new neurons expected, their distinct connections drawn at once. */
    double add_neuron_per_neuron;
    double del_neuron_per_neuron; /* each hidden neuron removed, with its connections */
    /* The hyper-parameter genes, last: each, with probability hyper_rate, times
     * exp(hyper_sigma N(0, 1)), held in [hyper_min, hyper_max] (0: GENOME_HYPER_MIN,
     * _MAX); a genome without them gets them at 1 first. hyper_rate 0: no draw. */
    double hyper_rate, hyper_sigma, hyper_min, hyper_max;
    int preserve; /* 1: growth keeps the network's function where it can (genome_mutate) */
};

/* Mutates g in place; g stays valid. Only TV_ENOMEM can fail. With
 * cfg->preserve, growth keeps the function of a rate network: a split makes
 * an identity neuron (hidden_act when it passes the source's values through:
 * relu after a non-negative activation), new connections and coefficients
 * start at 0, a new channel feeds nothing. Sums may then round otherwise (a
 * new term regroups the engine's partial sums); spiking neurons made by a
 * split do not pass values through. */
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
 * least popcount(a ^ b) and the difference of the sizes), for non-negative
 * coefficients (else 0); compare it with a threshold times GENOME_BOUND_MARGIN. */
double genome_distance_bound(const struct genome_sketch *a, const struct genome_sketch *b,
                             const struct genome_distance_cfg *cfg);
#define GENOME_BOUND_MARGIN (1 - 1e-9)
/* The first k in [from, n) whose bound with reps[k], times the margin, is
 * below threshold, else n: those passed over are certainly at it or beyond. */
size_t genome_sketch_first_below(const struct genome_sketch *mine, const struct genome_sketch *reps,
                                 size_t from, size_t n, const struct genome_distance_cfg *cfg,
                                 double threshold);

/* ---- channels and filters (convolutional genomes) ------------------------
 * A channel is a grid of h x w neurons that act as one unit: one bias, one
 * activation, one depth, and the same filters into every pixel. A filter gene
 * (from channel, to channel) is a kernel of kh x kw of which only the
 * non-zero coefficients (ky, kx, w) are stored; a filter without any is
 * simply absent. Channel `to` computes, at every pixel (y, x) of its h x w
 * map,
 *   z = bias + sum over filters f into it, over f's coefficients (ky, kx, w),
 *       of w * in_f(y * stride + ky - pad, x * stride + kx - pad)
 * where in_f is f's from-channel's *pooled* map (0 outside it); then
 * act(z), then max pooling over pool x pool windows with stride pool (pool 1:
 * none), which gives the pooled map of (h / pool) x (w / pool) pixels (rows
 * and columns that do not fill a window are dropped).
 *
 * Pixels are neuron ids: pixel (y, x) of a channel's pooled map, pw pixels
 * wide, is the id first + y * pw + x.
 *   - An input channel (kind GENOME_CHANNEL_INPUT) is a view of input
 *     neurons: its pixels are the input neurons first .. first + h*w - 1,
 *     which must exist; pool 1, depth 0, bias 0, activation identity.
 *   - A hidden channel's pixels are virtual neurons at the channel's depth:
 *     no neuron genes; their ids belong to the channel and to nothing else
 *     (no neuron, no other channel has one). 0 < depth < 1.
 * Ordinary connection genes may start at a pixel of any channel (so that a
 * classifier head is plain triplets) and must then be feed-forward (the
 * target deeper than the channel); they never end in a hidden channel's
 * pixel. A filter's geometry must make exactly its to-channel's map from its
 * from-channel's pooled map (ph, pw): h = (ph + 2 pad - kh) / stride + 1, the
 * same for w; pad < kh and pad < kw; depth(from) < depth(to), so filters are
 * feed-forward; the target is a hidden channel. Coefficients lie inside the
 * kernel, are finite, and are sorted by (ky, kx) without repeats; filter i's
 * are coefs[coef0, coef0 + n_coefs), filters packed in filter order (coef0
 * is the sum of the counts before it).
 *
 * A genome without channels is exactly what it was before channels existed:
 * the same bytes in every format, the same mutation and crossover draws. */
enum genome_channel_kind { GENOME_CHANNEL_INPUT = 0, GENOME_CHANNEL_HIDDEN = 1 };
#define GENOME_CHANNEL_MAX_SIDE 4096 /* h, w */
#define GENOME_FILTER_MAX_K 16       /* kh, kw (nn/conv/conv.h's NN_CONV_MAX_K) */
#define GENOME_FILTER_MAX_STRIDE 16
#define GENOME_POOL_MAX 16
#define GENOME_MAX_CHANNELS 65536
#define GENOME_MAX_FILTERS ((size_t)1 << 22)

struct genome_channel {
    uint32_t id;    /* channels have ids of their own: filters name them */
    uint8_t kind;   /* enum genome_channel_kind */
    uint8_t act;    /* enum genome_act */
    uint8_t pool;   /* 1: none; p: p x p max pooling, stride p */
    uint16_t h, w;  /* the map before pooling */
    float bias;     /* added at every pixel */
    float depth;    /* input 0; hidden in (0, 1) */
    uint32_t first; /* the id of pixel (0, 0) of the pooled map */
};

struct genome_filter {
    uint32_t from, to; /* channel ids */
    uint8_t kh, kw, stride, pad;
    uint32_t coef0;   /* its first coefficient in g->coefs */
    uint32_t n_coefs; /* its non-zero coefficients */
};

struct genome_coef {
    uint8_t ky, kx; /* < kh, < kw */
    float w;
};

/* The pooled map of a channel: *ph x *pw pixels; returns their count. */
static inline size_t genome_channel_pooled(const struct genome_channel *c, size_t *ph, size_t *pw)
{
    size_t p = c->pool ? c->pool : 1;
    *ph = c->h / p;
    *pw = c->w / p;
    return *ph * *pw;
}
/* The side a filter makes from a side `in` (0 when it makes none). */
size_t genome_filter_out(size_t in, size_t k, size_t stride, size_t pad);

/* Index of the channel / filter, or -1 (binary search). */
ptrdiff_t genome_find_channel(const struct genome *g, uint32_t id);
ptrdiff_t genome_find_filter(const struct genome *g, uint32_t from, uint32_t to);
/* Index of the channel whose pooled pixels hold neuron id `id`, or -1. */
ptrdiff_t genome_pixel_channel(const struct genome *g, uint32_t id);
/* The depth of a connection's source: its neuron's, or its channel's if it
 * is a pixel. 0, or -1 when it is neither. */
int genome_source_depth(const struct genome *g, uint32_t id, float *depth);

/* Room for this many channels, filters and coefficients. 0 or TV_ENOMEM. */
int genome_reserve_conv(struct genome *g, size_t n_channels, size_t n_filters, size_t n_coefs,
                        struct tv_error *err);
/* Inserts a channel in id order. TV_EINVAL if its id exists. (Its pixels and
 * the rest are genome_validate()'s to check.) */
int genome_add_channel(struct genome *g, const struct genome_channel *c, struct tv_error *err);
/* Inserts the filter (from, to) in key order with a copy of its n
 * coefficients (in any order: they are sorted). TV_EINVAL if the key exists
 * or a coefficient is repeated; f->coef0 and f->n_coefs are ignored. */
int genome_add_filter(struct genome *g, const struct genome_filter *f,
                      const struct genome_coef *coefs, size_t n, struct tv_error *err);
/* Removes filter i and its coefficients. */
void genome_remove_filter_at(struct genome *g, size_t i);
/* Removes channel i, every filter into or out of it, and, for a hidden
 * channel, every connection from its pixels (an input channel's pixels are
 * input neurons, which stay). */
void genome_remove_channel_at(struct genome *g, size_t i);
/* The part of genome_validate() that checks channels, filters and the
 * connections that touch pixels (genome_validate() calls it). */
int genome_validate_conv(const struct genome *g, const struct genome_limits *limits,
                         struct tv_error *err);

/* Variation of the convolutional genes, called by genome_mutate() and
 * genome_crossover() and doing nothing (no draw) for a genome without
 * channels. Mutation: coefficients perturbed and replaced with the weight
 * rates, channel biases with the bias rates; then, each with its rate in
 * cfg->conv, add or remove a filter, a coefficient, a hidden channel. */
int genome_mutate_conv(struct genome *g, const struct genome_mutation *cfg, struct tv_rng *rng,
                       struct tv_error *err);
/* Crossover of channels and filters: fitter's genes; a channel in both takes
 * its bias from either; a filter in both (the same (from, to) and geometry)
 * takes each coefficient present in both from either, aligned by (ky, kx).
 * child's channels and filters are replaced. */
int genome_crossover_conv(struct genome *child, const struct genome *fitter,
                          const struct genome *other, struct tv_rng *rng, struct tv_error *err);
/* ---- synaptic delays --------------------------------------------------
 * A connection of a spiking network may carry a delay: the steps a spike
 * takes over it, 1..GENOME_MAX_DELAY (nn.h says when it arrives). The delays
 * live beside the connections, g->delays[i] for g->conns[i], so that a
 * connection stays 12 bytes and genomes without delays pay nothing: NULL
 * means every delay is 1, and genome_reset() returns to NULL. A delay other
 * than 1 is valid only on a connection from a non-input neuron into a cuba
 * neuron: a rate network's only delay is the one step of its recurrent
 * connections (depth decides it), and an input's value is a current of the
 * step it is given. The functions of this header keep delays in step with
 * the connections (add, push, remove, canonicalize, copy, equal, crossover
 * carries a matching gene's delay with its weight, mutate); code that writes
 * g->conns itself must see delays == NULL or keep them too. */
#define GENOME_MAX_DELAY 1024
/* The delay of connection i (1 when g has no delays). */
static inline unsigned genome_conn_delay(const struct genome *g, size_t i)
{
    return g->delays ? g->delays[i] : 1u;
}
/* Sets the delay of connection i (< n_conns), making the delay array if g
 * has none; the range is genome_validate()'s to check. 0 or TV_ENOMEM. */
int genome_set_delay(struct genome *g, size_t i, unsigned delay, struct tv_error *err);
/* 1 when some connection's delay is not 1. */
int genome_has_delays(const struct genome *g);

/* ---- input scaling ------------------------------------------------------
 * A genome may carry the scaling its inputs were trained with, so that the
 * network takes raw data: input k (the k-th input by id) enters the network
 * as (x - shift[k]) * mul[k], computed in float (this expression, no fused
 * multiply-add) by every engine (nn/: float, int8 and the exported C). A
 * genome without one (scale NULL, the default) takes its inputs as given.
 * g->scale holds shift[0..n) then mul[0..n), n = n_scale = the inputs. The
 * genome functions carry it (copy, equal, reset, crossover: fitter's). */
/* Sets the scaling of g's n inputs (n must be the number of inputs; the
 * values are genome_validate()'s to check); n 0 drops it. 0 or TV_ENOMEM. */
int genome_set_scale(struct genome *g, const float *shift, const float *mul, size_t n,
                     struct tv_error *err);
/* shift[n_scale] and mul[n_scale] of g, or NULL when it has no scaling. */
static inline const float *genome_scale_shift(const struct genome *g)
{
    return g->n_scale ? g->scale : NULL;
}
static inline const float *genome_scale_mul(const struct genome *g)
{
    return g->n_scale ? g->scale + g->n_scale : NULL;
}

/* ---- hyper-parameter genes -----------------------------------------------
 * How a genome is to be trained (PBT's idea), when has_hyper: three scales
 * the trainer (tasks/classify.c) multiplies into its learning rate, its
 * optimizer steps and the regrowth fraction of its set and rigl policies.
 * Each within [GENOME_HYPER_MIN, GENOME_HYPER_MAX]. has_hyper 0 (the
 * default): trained as told. Copy, equal, reset and the formats carry them;
 * crossover takes a parent's; genome_mutation's hyper_rate varies them.
 * genome_set_hyper: g's genes become v[GENOME_N_HYPER] (NULL: none). */
#define GENOME_HYPER_MIN 1e-3f
#define GENOME_HYPER_MAX 1e3f
extern const char *const genome_hyper_names[GENOME_N_HYPER]; /* "lr_scale", ... */
void genome_set_hyper(struct genome *g, const float *v);

/* ---- format versions --------------------------------------------------
 * Writers write the OLDEST version that can express the genome, so that
 * databases, champions and messages of older genomes keep their bytes;
 * readers take every version up to theirs and refuse newer ones by version:
 *   1  rate neurons only (every neuron a rate neuron);
 *   2  each neuron's model and parameters;
 *   3  the connections' delays (written when a delay is not 1);
 *   4  channels and filters (a genome with channels; delays as in 3);
 *   5  the input scaling (a genome with one; the rest as in 4);
 *   6  the hyper-parameter genes (a genome with them; the rest as in 5). */
#define GENOME_FORMAT_VERSION 6 /* the newest this program reads and writes */
/* The version genome_encode() and genome_write_text() use for g: 1 to 6. */
int genome_format_version(const struct genome *g);

/* ---- msgpack codec ----------------------------------------------------- */

/* Appends the encoding of g to out:
 *   ["trevo-genome", 1, [[id, kind, act, bias, depth], ...], bin]
 * where bin holds n_conns records of 12 bytes (from u32, to u32, weight f32,
 * little-endian). About 12 bytes per connection. In version 2 each neuron is
 *   [id, kind, act, bias, depth, model, param_0, ..., param_{n-1}]
 * with exactly the model's n_params parameters (float32). Version 3 is
 * version 2 with a fifth element, a bin of n_conns little-endian uint16
 * delays: ["trevo-genome", 3, neurons, bin, delays]. Version 4 (a genome
 * with channels) is an array of 7:
 *   ["trevo-genome", 4, neurons, bin, delays or nil (every delay 1),
 *    [[id, kind, h, w, pool, act, bias, depth, first], ...],     channels
 *    [[from, to, kh, kw, stride, pad, bin], ...]]               filters
 * a filter's bin holding its coefficients, 6 bytes each (ky u8, kx u8, w f32
 * little-endian) in (ky, kx) order. Version 5 (a genome with an input
 * scaling) is an array of 7 too, so that older readers refuse it by version:
 *   ["trevo-genome", 5, neurons, bin, delays or nil,
 *    [channels, filters] or nil (no channels), scaling]
 * the scaling a bin of n_inputs (shift, mul) pairs of little-endian f32.
 * Version 6 (hyper-parameter genes) is an array of 7 whose last element is
 * [scaling or nil, [lr, steps, regrow]] (float32). */
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
 * defaults for those left out); a line without a model is a rate neuron.
 * Version 3 ("trevo-net 3") lets a connection line end with its delay,
 *   conn FROM TO WEIGHT delay=D
 * (the writer gives it when D is not 1; left out, the delay is 1). Version 4
 * ("trevo-net 4", written for a genome with channels) adds
 *   channel ID in|hid H W POOL DEPTH ACT BIAS FIRST
 *   filter FROM TO KH KW STRIDE PAD KY,KX,W ...
 * a filter line giving every non-zero coefficient (at most KH x KW of them,
 * in any order on reading, in (ky, kx) order on writing). Version 5
 * ("trevo-net 5", written for a genome with an input scaling) adds a line
 * per input neuron,
 *   scale ID SHIFT MUL
 * (an input without one, on reading, has shift 0 and mul 1). Version 6
 * adds "hyper lr_scale=X steps_scale=Y regrow_scale=Z" (a name left out: 1). */
int genome_write_text(const struct genome *g, FILE *f, struct tv_error *err);
/* Parses text[0..len); `name` is used in messages ("net.txt:7: ..."). Lines
 * after the header may come in any order; '#' starts a comment. The result is
 * validated. */
int genome_read_text(struct genome *g, const char *text, size_t len, const char *name,
                     const struct genome_limits *limits, struct tv_error *err);

/* A network file's bytes, either form: msgpack (its first byte is the
 * fixarray of the header, 0x94, 0x95 or 0x97; text never starts so, being
 * printable) through genome_decode, else text through genome_read_text;
 * `name` prefixes the messages. */
int genome_load(struct genome *g, const void *data, size_t len, const char *name,
                const struct genome_limits *limits, struct tv_error *err);

/* ---- Graphviz drawing -------------------------------------------------- */

/* Appends g drawn as a Graphviz `dot` graph to out (`trevo best --format
 * dot`, `trevo net export --format dot`): a rank per depth, edges told apart
 * by genome_conn_class(), every connection one line "    nFROM -> nTO [...];"
 * (dot.c says the rest). title (may be NULL) is printed above, escaped. g is
 * validated first: TV_EINVAL naming the bad gene, TV_ENOMEM; on error out is
 * as it was. */
int genome_write_dot(const struct genome *g, const char *title, struct tv_buf *out,
                     struct tv_error *err);

#endif
