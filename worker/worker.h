/*
 * worker.h -- what ranks >= 1 do: receive a batch of tasks, breed each child
 * (genome/: crossover, mutation), compile it (nn/), evaluate it on the
 * experiment's task instance through task_evaluate() (which refuses a genome
 * of the wrong shape), and reply with a batch of results. Run alone, the
 * master calls worker_process() itself: the same code path, no MPI peers. A
 * worker's fatal error goes to the master with its own code
 * (worker_error_encode).
 *
 * Messages are msgpack; every message is framing-checked (tv_msgpack_check)
 * against a size cap before it is decoded, and every genome in it is decoded
 * with genome_decode (which validates):
 *   tasks:   ["trevo-tasks", 1, [[child_id, generation, child_index, op, seed,
 *             parent1, parent2, bin|nil, bin|nil], ...]]
 *   results: ["trevo-results", 2, [[child_id, fitness, solved, eval_seconds,
 *             rank, bin, [valid_acc, flash, ram, macs, connections]], ...]]
 *            (the objectives: WORKER_N_OBJ floats, NaN where unknown)
 * A child's randomness is a pure function of its 64-bit seed, so a child is
 * the same whichever rank breeds it and whenever.
 *
 * worker/ knows genome/, nn/ and the tasks of tasks/; MPI only in
 * worker_serve(); never SQLite.
 */
#ifndef TREVO_WORKER_H
#define TREVO_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "genome.h"
#include "task.h"

/* Operators: the same codes as the store's (enum store_op). */
enum worker_op {
    WORKER_OP_INIT = 0,
    WORKER_OP_MUTATE = 1,
    WORKER_OP_CROSSOVER = 2,
    WORKER_OP_CROSSOVER_MUTATE = 3
};

/* Starting genomes. */
enum worker_init { WORKER_INIT_MINIMAL = 0, WORKER_INIT_LAYERED = 1, WORKER_INIT_NET = 2 };
/* The longest init_net path, NUL included. */
#define WORKER_PATH_MAX 256

#define WORKER_MAX_HIDDEN_LAYERS 8
/* skip pairs (a, b >= a + 2) of WORKER_MAX_HIDDEN_LAYERS + 2 layers */
#define WORKER_MAX_SKIP_PAIRS ((WORKER_MAX_HIDDEN_LAYERS + 1) * WORKER_MAX_HIDDEN_LAYERS / 2)

/* Everything a worker needs to breed and evaluate: one struct passed by
 * const pointer (built from the config by master/). */
struct worker_params {
    const struct task_instance *task; /* borrowed: opened by the rank's main */
    struct genome_mutation mutation;
    struct genome_limits limits;
    int init;              /* enum worker_init */
    int init_model;        /* enum genome_model of the starting genomes' non-inputs */
    double init_weight_sd; /* starting weights ~ N(0, sd^2) */
    /* WORKER_INIT_LAYERED: hidden layer sizes between inputs and outputs */
    uint32_t init_hidden[WORKER_MAX_HIDDEN_LAYERS];
    size_t n_init_hidden;
    double init_density, init_skip_rate, init_recurrent_rate;
    size_t max_message_bytes; /* cap on any message received */
    /* WORKER_INIT_LAYERED: a density per layer pair (genome_layer_pairs), in
     * place of init_density / init_skip_rate when the count is not 0 */
    double init_densities[WORKER_MAX_HIDDEN_LAYERS + 1]; /* adjacent pairs */
    size_t n_init_densities;
    double init_skip_densities[WORKER_MAX_SKIP_PAIRS]; /* (0, 2), (0, 3), ..., (1, 3), ... */
    size_t n_init_skip_densities;
    /* WORKER_INIT_NET: the network file every starting genome is a mutant of
     * (read by each rank, as a task's data files are) */
    char init_net[WORKER_PATH_MAX];
    /* Budgets of the int8 form (nn_genome_cost), 0: none. A child over one
     * is bred again (WORKER_BUDGET_TRIES in all) and, still over, scored
     * failed without being evaluated; a child training leaves over one is
     * scored failed too. A child whose figures cannot be had (spiking
     * neurons) is over every budget. */
    int64_t max_flash, max_ram, max_macs;
};

/* Breedings of a child a budget allows: the first, then again from the next
 * sub-streams of its seed. */
#define WORKER_BUDGET_TRIES 8

/* The largest init_net file read (a device or a huge file is refused, not
 * read to its end). */
#define WORKER_NET_FILE_MAX ((size_t)256 << 20)
/* The network file `path` (text or msgpack, genome_load) into g, within
 * limits; TV_EIO naming the file when it cannot be read, TV_ELIMIT when it
 * is larger than WORKER_NET_FILE_MAX. */
int worker_load_net(const char *path, const struct genome_limits *limits, struct genome *g,
                    struct tv_error *err);

struct worker_task {
    int64_t child_id;
    int64_t generation;
    uint32_t child_index;
    int32_t op; /* enum worker_op */
    uint64_t seed;
    int64_t parent1, parent2; /* -1 for none */
    const uint8_t *genome1;   /* parent genomes, genome_encode() bytes; borrowed */
    size_t genome1_len;
    const uint8_t *genome2;
    size_t genome2_len;
};

/* The objectives a worker measures on a child, in this fixed order (the
 * message carries them so): the task's "accuracy" figure (classify: the
 * accuracy it scored, on the validation rows when it trains), the flash and
 * RAM bytes and the
 * multiply-accumulates of its int8 form (estimated from the genome), and its
 * connections. NaN where unknown. Explicit values: they are sent. */
enum worker_obj {
    WORKER_OBJ_VALID_ACC = 0,
    WORKER_OBJ_FLASH = 1,
    WORKER_OBJ_RAM = 2,
    WORKER_OBJ_MACS = 3,
    WORKER_OBJ_CONNECTIONS = 4,
    WORKER_N_OBJ = 5
};

struct worker_result {
    int64_t child_id;
    double fitness;
    int32_t solved;
    double eval_seconds;
    int32_t rank;
    const uint8_t *genome; /* the child, genome_encode() bytes; borrowed */
    size_t genome_len;
    double obj[WORKER_N_OBJ]; /* enum worker_obj; NaN where unknown */
};

/* Shared by the msgpack codecs of worker/ and master/ (whose packers write
 * with tv_buf_write): an integer field that fits int64_t (-1 if o is not
 * one). */
struct msgpack_object;
int worker_msgpack_i64(const struct msgpack_object *o, int64_t *out);

/* A decoded message: items point into the message bytes and into memory the
 * holder owns; valid until the release (and while the bytes live). */
struct worker_tasks {
    struct worker_task *items;
    size_t n;
    void *holder;
};
struct worker_results {
    struct worker_result *items;
    size_t n;
    void *holder;
};
void worker_tasks_release(struct worker_tasks *t);
void worker_results_release(struct worker_results *r);

/* Appends the encoded batch to out. */
int worker_tasks_encode(const struct worker_task *items, size_t n, struct tv_buf *out,
                        struct tv_error *err);
int worker_results_encode(const struct worker_result *items, size_t n, struct tv_buf *out,
                          struct tv_error *err);
/* Decodes a batch. TV_ELIMIT past max_bytes, TV_EFORMAT for anything that is
 * not a well-formed batch (the message says what and where). Genome bytes
 * are not decoded here (the receiver decodes and validates them). */
int worker_tasks_decode(const void *data, size_t len, size_t max_bytes, struct worker_tasks *out,
                        struct tv_error *err);
int worker_results_decode(const void *data, size_t len, size_t max_bytes,
                          struct worker_results *out, struct tv_error *err);

/* Reusable memory for breeding and evaluating, one per worker. */
struct worker_scratch;
struct worker_scratch *worker_scratch_new(void);
void worker_scratch_free(struct worker_scratch *s);

/* Breeds one child into *child, a pure function of (params, task). A parent
 * whose inputs or outputs do not match the task is refused ("parent ID: the
 * network has ..."). */
int worker_breed(const struct worker_params *p, const struct worker_task *t,
                 struct worker_scratch *s, struct genome *child, struct tv_error *err);
/* worker_breed's try number `attempt` (0: worker_breed itself): the same
 * operator on sub-stream `attempt` of the child's breeding stream. What
 * worker_process breeds again with when a child is over budget. */
int worker_breed_attempt(const struct worker_params *p, const struct worker_task *t,
                         uint32_t attempt, struct worker_scratch *s, struct genome *child,
                         struct tv_error *err);
/* Evaluates child, of generation `generation`, on the task:
 * task_evaluate_genome() (shape check, compile, the evaluation stream of
 * seed), the path `trevo task eval` takes too (as generation 0, on a copy).
 * A task may change the child (classify's lamarckian training): what the
 * worker then encodes and returns is the child as the task left it,
 * validated against p->limits. TV_EGENOME (the task or its trainer does not
 * take this genome): worker_process returns the child with fitness NaN, a
 * failed child the master counts (generations.failed), and goes on; any
 * other error ends the batch and the run. */
int worker_evaluate(const struct worker_params *p, struct genome *child, uint64_t seed,
                    int64_t generation, struct worker_scratch *s, struct task_result *res,
                    struct tv_error *err);

/* The whole job of a worker on one message: decode a task batch, breed and
 * evaluate every child, append the encoded result batch to out. */
int worker_process(const struct worker_params *p, struct worker_scratch *s, int32_t rank,
                   const void *in, size_t in_len, struct tv_buf *out, struct tv_error *err);

/* MPI tags of the protocol between master and workers. */
enum worker_tag {
    WORKER_TAG_TASKS = 1,   /* master -> worker: a task batch */
    WORKER_TAG_RESULTS = 2, /* worker -> master: a result batch */
    WORKER_TAG_STOP = 3,    /* master -> worker: no more work (empty) */
    WORKER_TAG_ERROR = 4    /* worker -> master: a fatal error (worker_error_encode) */
};

/* A fatal error as WORKER_TAG_ERROR carries it: its code (a TV_E* value) and
 * its message. Decoding refuses (TV_EFORMAT) anything else; msg gets the
 * message, cut to msg_size. */
int worker_error_encode(int code, const char *msg, struct tv_buf *out, struct tv_error *err);
int worker_error_decode(const void *data, size_t len, int *code, char *msg, size_t msg_size,
                        struct tv_error *err);

/* The loop of a rank >= 1 under MPI (MPI_Init done by the caller): serve
 * task batches from rank 0 until STOP. On an error it sends the code and
 * the text with WORKER_TAG_ERROR to rank 0 and returns the code. */
int worker_serve(const struct worker_params *p, struct tv_error *err);

#endif
