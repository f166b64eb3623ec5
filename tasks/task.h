/*
 * task.h -- tasks/: the tasks (fitness functions) networks are evaluated on:
 * kinds of task, registered by name, and their instances. The folder holds
 * every task's C code (xor, the pole tasks, classify on data sets, the
 * spiking tasks), the training loop they and `net train` share (fit.h), and
 * plugin tasks loaded from shared libraries (plugin.h); their configs,
 * results and peer scripts are in experiments/.
 *
 * A task kind (struct task_kind) is one row of a table: its name, the keys of
 * its own `[task]` config section (struct task_key: name, type, default,
 * range, doc), and four functions. open() reads the section's values, loads
 * whatever the task needs (a data set, later) and declares the
 * instance's input and output counts; evaluate() runs a compiled plan and
 * fills a task_result (fitness, whether the network solves the task, a few
 * named figures of its own); the optional champion_test() is the master's
 * test of a generation's best; close() frees what open() loaded. The config
 * parse opens an instance to learn its shape; a search's ranks keep that
 * one (master_config_parse_task), so open() runs once per rank and a task
 * that loads data (classify) loads it once.
 *
 * A kind may instead evaluate the genome itself (evaluate_genome, ABI 3),
 * which it may change: classify trains the child and, Lamarckian, writes
 * the trained network back; the workers call task_evaluate_genome(), which
 * validates what the task left before the worker sends it to the master.
 *
 * Evaluation may use randomness only through the rng passed in, which
 * task_evaluate() seeds from the child's seed, so a fitness is a pure function
 * of (genome, seed, [task] values). task_evaluate() is the one evaluation
 * path: the workers of a search and `trevo task eval` both call it, and it
 * refuses a genome whose inputs or outputs do not match the instance before
 * anything runs the network (nn_step takes no lengths).
 *
 * The row is versioned (abi_version), so that a plugin can export the same
 * struct later; the built-in kinds are listed in registry.c. Adding a task
 * touches one place: a file defining its `struct task_kind` and one line in
 * that table.
 *
 * Tasks know nn/ and genome/ only: never MPI, SQLite or the store.
 */
#ifndef TREVO_TASK_H
#define TREVO_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "nn.h"

#define TASK_MAX_FIGURES 8
/* The version of struct task_kind and struct task_key a kind is built
 * against; task_open() refuses any other. Version 2 (issue 15): keys of text
 * (TASK_KEY_STRING) and of a fixed set of names (TASK_KEY_CHOICE), so struct
 * task_key gained choices and def_text and union task_value the text s;
 * struct task_kind gained evaluate_generation and final_test. Version 3
 * (issue 17): struct task_kind gained evaluate_genome, at its end; nothing
 * else moved, so a version-2 row is the first
 * offsetof(struct task_kind, evaluate_genome) bytes of a version-3 one and
 * plugins of version 2 still load (plugin.h: the loader copies their row
 * into a zeroed version-3 row, evaluate_genome NULL). New fields come last:
 * a row written with designated initializers compiles as it is. */
#define TASK_ABI_VERSION 3
/* The oldest version task_plugin_load() still loads. */
#define TASK_ABI_OLDEST 2
/* The longest text value of a [task] key, NUL included (a config line holds
 * at most 190 characters). */
#define TASK_STRING_MAX 192
/* Keys of a kind's [task] section, at most. 16 until classify needed more:
 * raising it moves nothing a plugin of an older header reads (its keys'
 * values keep their offsets, and struct task_instance's fields after params
 * are the plugin's own data pointer, which trevo never reads, and
 * trains_channels, which a plugin leaves 0), so no new ABI version. */
#define TASK_MAX_KEYS 24
/* The rng stream of an evaluation (tv_rng_init(&rng, seed, TASK_STREAM_EVAL,
 * 0)); breeding uses stream 1 of the same seed. */
#define TASK_STREAM_EVAL 2

struct task_result {
    double fitness;
    int solved; /* 1 if the network meets the task's success test */
    /* The task's own figures ("steps", "out_01", ...), for `trevo task eval`. */
    size_t n_figures;
    const char *figure_names[TASK_MAX_FIGURES]; /* static strings */
    double figures[TASK_MAX_FIGURES];
};

/* Types of a [task] key; the values are stored, and sent, by these codes. */
enum task_key_type {
    TASK_KEY_INT = 0,
    TASK_KEY_DOUBLE = 1,
    TASK_KEY_BOOL = 2,
    TASK_KEY_STRING = 3, /* text (a file name): .s */
    TASK_KEY_CHOICE = 4  /* one of the names in choices: .i, its index */
};

/* One key of a kind's [task] section. The config parser reads and writes
 * its values (master/config.c), so that `--help-config` lists them and a
 * typo is refused with its FILE:LINE. */
struct task_key {
    const char *name;
    int type;        /* enum task_key_type */
    double def;      /* default (BOOL: 0 or 1) */
    double min, max; /* numbers: the accepted range */
    const char *doc;
    /* CHOICE: the names of values 0, 1, ..., then NULL; def is an index */
    const char *const *choices;
    /* STRING: the default text (NULL: empty) */
    const char *def_text;
};

/* The values of a [task] section, by the kind's key index: .i for INT,
 * BOOL (0 or 1) and CHOICE (an index), .d for DOUBLE, .s for STRING. A plain
 * value (no pointers): copied freely, compared with memcmp. */
union task_value {
    int64_t i;
    double d;
    char s[TASK_STRING_MAX];
};
struct task_params {
    union task_value v[TASK_MAX_KEYS];
};

struct task_kind;

/* An opened task. open() fills every field but kind (task_open() sets it). */
struct task_instance {
    const struct task_kind *kind;
    size_t n_inputs, n_outputs;
    int out_act;               /* enum genome_act for outputs of starting genomes */
    double max_fitness;        /* the best fitness possible, for reports */
    struct task_params params; /* the [task] values it was opened with */
    void *data;                /* the kind's own, freed by close() */
    /* 1 when evaluate_genome trains a genome with channels with the CNN
     * trainer (nn/conv/cnn.h; classify with train_steps > 0): a search then
     * mutates channels into the levels that trainer takes (genome.h,
     * join_levels). 0 (the default; a plugin leaves it so). */
    int trains_channels;
};

struct task_kind {
    /* These two come first in every version, so that a row of another
     * version can be named when it is refused. */
    uint32_t abi_version; /* TASK_ABI_VERSION */
    const char *name;
    const char *summary;
    const struct task_key *keys; /* its [task] section */
    size_t n_keys;
    /* Fills t (everything but t->kind) from t->params, already checked
     * against the key table. 0, or a TV_E* code with err set (the [task]
     * key at fault named). */
    int (*open)(struct task_instance *t, struct tv_error *err);
    /* Runs plan on the task. 0, or a TV_E* code with err set. */
    int (*evaluate)(const struct task_instance *t, const struct nn_plan *plan, struct tv_rng *rng,
                    struct task_result *out, struct tv_error *err);
    /* Optional (NULL: none). The champion's test, run by the master on the
     * best individual of every generation once all of it is evaluated (DPNV:
     * the 100,000-step run, then the 625-start generalization test). It uses
     * no randomness, so it gives the same verdict on resume. out->solved says
     * whether the run is solved; out->fitness carries the test's score (DPNV:
     * starts generalized, 0 if the long run failed), which the store keeps
     * with the generation. Champion tests are not counted as evaluations. */
    int (*champion_test)(const struct task_instance *t, const struct nn_plan *plan,
                         struct task_result *out, struct tv_error *err);
    /* Optional (NULL: nothing to free): frees what open() loaded. */
    void (*close)(struct task_instance *t);
    /* ---- since ABI version 2 ---- */
    /* Optional: evaluate() told the generation the child belongs to (0
     * outside a search), for a task whose cases change from one generation
     * to the next and are the same for every child of one (classify's
     * samples). When set it is called instead of evaluate, which may be NULL. */
    int (*evaluate_generation)(const struct task_instance *t, const struct nn_plan *plan,
                               int64_t generation, struct tv_rng *rng, struct task_result *out,
                               struct tv_error *err);
    /* Optional: the final test of the run's champion, run once by the master
     * when a search ends (classify: accuracy on the test set, which nothing
     * else sees). Never used for selection; out->fitness is the score stored
     * with the run (note "final_test"). No randomness. */
    int (*final_test)(const struct task_instance *t, const struct nn_plan *plan,
                      struct task_result *out, struct tv_error *err);
    /* ---- since ABI version 3 ---- */
    /* Optional: the evaluation of the genome itself, which it may change
     * (classify trains the child and, when lamarckian, writes the trained
     * network back: what the worker returns, the master stores and breeds
     * from). When set it is called instead of evaluate_generation and
     * evaluate, with g shape-checked but not compiled, and the generation
     * and rng they would get. What it leaves in g must keep g's inputs and
     * outputs and pass genome_validate(): task_evaluate_genome() checks both
     * and refuses the result otherwise. */
    int (*evaluate_genome)(const struct task_instance *t, struct genome *g, int64_t generation,
                           struct tv_rng *rng, struct task_result *out, struct tv_error *err);
};

/* The kind registered under name, or NULL. */
const struct task_kind *task_find(const char *name);
/* Every registered kind, for listings: task_all(&n). */
const struct task_kind *const *task_all(size_t *n);
/* The index of key name in k's table, or -1. */
int task_key_find(const struct task_kind *k, const char *name);
/* The default values of k's keys. */
void task_params_defaults(const struct task_kind *k, struct task_params *p);

/* Opens kind k with the [task] values p: *out is the instance, owned by the
 * caller until task_close(). TV_EINVAL for a kind of another ABI version or
 * values open() refuses; TV_ENOMEM. */
int task_open(const struct task_kind *k, const struct task_params *p, struct task_instance **out,
              struct tv_error *err);
/* Closes an instance; NULL is a no-op. */
void task_close(struct task_instance *t);

/* 0 if g has t's input and output counts, else TV_EINVAL: "the network has 5
 * inputs and 2 outputs; task xor takes 3 inputs and 1 output" (the caller
 * prefixes the individual or the file). */
int task_check_shape(const struct task_instance *t, const struct genome *g, struct tv_error *err);
/* The one evaluation of a genome: checks its shape (task_check_shape),
 * compiles it, seeds the rng with (seed, TASK_STREAM_EVAL) and runs the
 * task's evaluate(). *out is zeroed first. 0, or the code of what failed. */
int task_evaluate(const struct task_instance *t, const struct genome *g, uint64_t seed,
                  struct task_result *out, struct tv_error *err);
/* The same for a child of generation `generation` (task_evaluate is
 * generation 0). g is never changed: a kind with evaluate_genome gets a copy
 * (`trevo task eval` of a trained classify child trains a copy again). */
int task_evaluate_generation(const struct task_instance *t, const struct genome *g, uint64_t seed,
                             int64_t generation, struct task_result *out, struct tv_error *err);
/* What the workers of a search call: task_evaluate_generation on g itself,
 * which a kind's evaluate_genome may change (the result is then g as it
 * left it). After the hook g is checked: the task's inputs and outputs,
 * genome_validate() with `limits` (NULL: the defaults); TV_EINVAL "task
 * NAME left an invalid genome: ..." otherwise. Kinds without the hook leave
 * g as it was. */
int task_evaluate_genome(const struct task_instance *t, struct genome *g, uint64_t seed,
                         int64_t generation, const struct genome_limits *limits,
                         struct task_result *out, struct tv_error *err);
/* The task's champion test on g (shape-checked and compiled here); 0 with
 * *out zeroed if the kind has none. */
int task_champion_test(const struct task_instance *t, const struct genome *g,
                       struct task_result *out, struct tv_error *err);
/* The task's final test on g; 0 with *out zeroed if the kind has none. */
int task_final_test(const struct task_instance *t, const struct genome *g, struct task_result *out,
                    struct tv_error *err);

/* Adds a named figure to a result (ignored past TASK_MAX_FIGURES). */
void task_result_figure(struct task_result *r, const char *name, double value);

#endif
