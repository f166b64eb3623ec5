/* msg.c -- the task and result batches between master and workers (format
 * in worker.h). Decoding checks the framing and the size cap before msgpack-c
 * allocates anything, then every field's type. */
#include "worker.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TASKS_TAG "trevo-tasks"
#define RESULTS_TAG "trevo-results"
#define TASKS_VERSION 1
#define RESULTS_VERSION 2 /* 2: the objectives (a 7th field) */

/* ---- the items of the two kinds of batch ------------------------------- */

static void pack_bin_or_nil(msgpack_packer *pk, const uint8_t *p, size_t n, int *bad)
{
    if (!p) {
        *bad |= msgpack_pack_nil(pk);
        return;
    }
    *bad |= msgpack_pack_bin_with_body(pk, p, n);
}

int worker_msgpack_i64(const msgpack_object *o, int64_t *out)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
        *out = (int64_t)o->via.u64;
    else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *out = o->via.i64;
    else
        return -1;
    return 0;
}

static int get_u64(const msgpack_object *o, uint64_t *out)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return -1;
    *out = o->via.u64;
    return 0;
}

static int get_f64(const msgpack_object *o, double *out)
{
    if (o->type != MSGPACK_OBJECT_FLOAT64 && o->type != MSGPACK_OBJECT_FLOAT32)
        return -1;
    *out = o->via.f64;
    return 0;
}

static int get_bin(const msgpack_object *o, const uint8_t **p, size_t *n)
{
    if (o->type == MSGPACK_OBJECT_NIL) {
        *p = NULL;
        *n = 0;
        return 0;
    }
    if (o->type != MSGPACK_OBJECT_BIN)
        return -1;
    *p = (const uint8_t *)o->via.bin.ptr;
    *n = o->via.bin.size;
    return 0;
}

static void pack_task(msgpack_packer *pk, const void *item, int *bad)
{
    const struct worker_task *t = item;
    *bad |= msgpack_pack_int64(pk, t->child_id);
    *bad |= msgpack_pack_int64(pk, t->generation);
    *bad |= msgpack_pack_uint32(pk, t->child_index);
    *bad |= msgpack_pack_int32(pk, t->op);
    *bad |= msgpack_pack_uint64(pk, t->seed);
    *bad |= msgpack_pack_int64(pk, t->parent1);
    *bad |= msgpack_pack_int64(pk, t->parent2);
    pack_bin_or_nil(pk, t->genome1, t->genome1_len, bad);
    pack_bin_or_nil(pk, t->genome2, t->genome2_len, bad);
}

static int unpack_task(const msgpack_object *v, void *item)
{
    struct worker_task *t = item;
    int64_t gen, idx, op;
    if (worker_msgpack_i64(&v[0], &t->child_id) || worker_msgpack_i64(&v[1], &gen) ||
        worker_msgpack_i64(&v[2], &idx) || worker_msgpack_i64(&v[3], &op) ||
        get_u64(&v[4], &t->seed) || worker_msgpack_i64(&v[5], &t->parent1) ||
        worker_msgpack_i64(&v[6], &t->parent2) || get_bin(&v[7], &t->genome1, &t->genome1_len) ||
        get_bin(&v[8], &t->genome2, &t->genome2_len) || gen < 0 || idx < 0 || idx > UINT32_MAX ||
        op < WORKER_OP_INIT || op > WORKER_OP_CROSSOVER_MUTATE)
        return -1;
    t->generation = gen;
    t->child_index = (uint32_t)idx;
    t->op = (int32_t)op;
    return 0;
}

static void pack_result(msgpack_packer *pk, const void *item, int *bad)
{
    const struct worker_result *r = item;
    *bad |= msgpack_pack_int64(pk, r->child_id);
    *bad |= msgpack_pack_double(pk, r->fitness);
    *bad |= r->solved ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    *bad |= msgpack_pack_double(pk, r->eval_seconds);
    *bad |= msgpack_pack_int32(pk, r->rank);
    pack_bin_or_nil(pk, r->genome, r->genome_len, bad);
    *bad |= msgpack_pack_array(pk, WORKER_N_OBJ);
    for (int k = 0; k < WORKER_N_OBJ; k++)
        *bad |= msgpack_pack_double(pk, r->obj[k]);
}

/* The objectives: an array of exactly WORKER_N_OBJ floats. */
static int get_objectives(const msgpack_object *o, double *obj)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != WORKER_N_OBJ)
        return -1;
    for (int k = 0; k < WORKER_N_OBJ; k++)
        if (get_f64(&o->via.array.ptr[k], &obj[k]))
            return -1;
    return 0;
}

static int unpack_result(const msgpack_object *v, void *item)
{
    struct worker_result *r = item;
    int64_t rank;
    if (worker_msgpack_i64(&v[0], &r->child_id) || get_f64(&v[1], &r->fitness) ||
        v[2].type != MSGPACK_OBJECT_BOOLEAN || get_f64(&v[3], &r->eval_seconds) ||
        worker_msgpack_i64(&v[4], &rank) || rank < 0 || rank > INT32_MAX ||
        get_bin(&v[5], &r->genome, &r->genome_len) || !r->genome || get_objectives(&v[6], r->obj))
        return -1;
    r->solved = v[2].via.boolean;
    r->rank = (int32_t)rank;
    return 0;
}

/* A kind of batch: its tag, its name in messages, and its items, each an
 * array of `fields` values packed and unpacked by the kind's own functions
 * from and into a struct of `size` bytes. The framing around the items is
 * the same for every kind: encode_batch and decode_batch. */
struct batch_kind {
    const char *tag;
    const char *what;
    uint32_t version;
    uint32_t fields;
    size_t size;
    void (*pack)(msgpack_packer *pk, const void *item, int *bad);
    int (*unpack)(const msgpack_object *v, void *item); /* 0, or -1 for a bad field */
};

static const struct batch_kind task_batch = {
    TASKS_TAG, "task batch", TASKS_VERSION, 9, sizeof(struct worker_task), pack_task, unpack_task};
static const struct batch_kind result_batch = {
    RESULTS_TAG, "result batch", RESULTS_VERSION, 7, sizeof(struct worker_result),
    pack_result, unpack_result};

/* ---- the framing, the same for both ------------------------------------ */

static void pack_head(msgpack_packer *pk, const char *tag, uint32_t version, size_t n, int *bad)
{
    *bad |= msgpack_pack_array(pk, 3);
    *bad |= msgpack_pack_str_with_body(pk, tag, strlen(tag));
    *bad |= msgpack_pack_uint32(pk, version);
    *bad |= msgpack_pack_array(pk, n);
}

static int encode_batch(const struct batch_kind *k, const void *items, size_t n, struct tv_buf *out,
                        struct tv_error *err)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, tv_buf_write);
    int bad = 0;
    pack_head(&pk, k->tag, k->version, n, &bad);
    for (size_t i = 0; i < n && !bad; i++) {
        bad |= msgpack_pack_array(&pk, k->fields);
        k->pack(&pk, (const char *)items + i * k->size, &bad);
    }
    return bad ? tv_error_set(err, TV_ENOMEM, "%s: out of memory encoding", k->what) : 0;
}

struct holder {
    msgpack_unpacked res;
};

/* Checks and unpacks a batch with the given tag; *items is its item array. */
static int open_batch(const void *data, size_t len, size_t max_bytes, const char *tag,
                      uint32_t want, struct holder **h, const msgpack_object **items, size_t *n,
                      struct tv_error *err)
{
    *h = NULL;
    if (len > max_bytes)
        return tv_error_set(err, TV_ELIMIT, "%s message of %zu bytes is over the cap of %zu", tag,
                            len, max_bytes);
    int rc = tv_msgpack_check(data, len, 4, err);
    if (rc) {
        tv_error_prefix(err, "%s message", tag);
        return rc;
    }
    struct holder *hh = malloc(sizeof *hh);
    if (!hh)
        return tv_error_set(err, TV_ENOMEM, "%s message: out of memory", tag);
    msgpack_unpacked_init(&hh->res);
    size_t off = 0;
    if (msgpack_unpack_next(&hh->res, data, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len) {
        rc = tv_error_set(err, TV_EFORMAT, "%s message: msgpack decoding failed", tag);
    } else {
        const msgpack_object *root = &hh->res.data;
        const msgpack_object *f = root->via.array.ptr;
        uint64_t version;
        if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size != 3 ||
            f[0].type != MSGPACK_OBJECT_STR || f[0].via.str.size != strlen(tag) ||
            memcmp(f[0].via.str.ptr, tag, strlen(tag)))
            rc = tv_error_set(err, TV_EFORMAT, "not a %s message", tag);
        else if (get_u64(&f[1], &version) || version != want)
            rc =
                tv_error_set(err, TV_EFORMAT, "%s message: version is not %u", tag, (unsigned)want);
        else if (f[2].type != MSGPACK_OBJECT_ARRAY)
            rc = tv_error_set(err, TV_EFORMAT, "%s message: items are not an array", tag);
        else {
            *items = f[2].via.array.ptr;
            *n = f[2].via.array.size;
        }
    }
    if (rc) {
        msgpack_unpacked_destroy(&hh->res);
        free(hh);
        return rc;
    }
    *h = hh;
    return 0;
}

static void holder_free(void *p)
{
    struct holder *h = p;
    if (h) {
        msgpack_unpacked_destroy(&h->res);
        free(h);
    }
}

/* Decodes a batch of kind k: *items, a zeroed array of its *n items;
 * *holder, what their genome bytes point into. On failure nothing is left
 * allocated and the message names the item at fault. */
static int decode_batch(const struct batch_kind *k, const void *data, size_t len, size_t max_bytes,
                        void **items, size_t *n, void **holder, struct tv_error *err)
{
    struct holder *h;
    const msgpack_object *list = NULL;
    size_t count = 0;
    int rc = open_batch(data, len, max_bytes, k->tag, k->version, &h, &list, &count, err);
    if (rc)
        return rc;
    char *arr = calloc(count ? count : 1, k->size);
    if (!arr)
        rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory", k->what);
    for (size_t i = 0; i < count && !rc; i++) {
        const msgpack_object *o = &list[i];
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != k->fields)
            rc = tv_error_set(err, TV_EFORMAT, "%s: item %zu is not an array of %u", k->what, i,
                              (unsigned)k->fields);
        else if (k->unpack(o->via.array.ptr, arr + i * k->size))
            rc = tv_error_set(err, TV_EFORMAT, "%s: item %zu has a bad field", k->what, i);
    }
    if (rc) {
        free(arr);
        holder_free(h);
        return rc;
    }
    *items = arr;
    *n = count;
    *holder = h;
    return 0;
}

/* ---- the batches ------------------------------------------------------- */

int worker_tasks_encode(const struct worker_task *items, size_t n, struct tv_buf *out,
                        struct tv_error *err)
{
    return encode_batch(&task_batch, items, n, out, err);
}

int worker_results_encode(const struct worker_result *items, size_t n, struct tv_buf *out,
                          struct tv_error *err)
{
    /* Checked before anything is appended: the decoder refuses a result
     * without a genome, so it is never sent. */
    for (size_t i = 0; i < n; i++)
        if (!items[i].genome)
            return tv_error_set(err, TV_EINVAL, "result batch: item %zu (child %lld) has no genome",
                                i, (long long)items[i].child_id);
    return encode_batch(&result_batch, items, n, out, err);
}

void worker_tasks_release(struct worker_tasks *t)
{
    free(t->items);
    holder_free(t->holder);
    memset(t, 0, sizeof *t);
}

void worker_results_release(struct worker_results *r)
{
    free(r->items);
    holder_free(r->holder);
    memset(r, 0, sizeof *r);
}

int worker_tasks_decode(const void *data, size_t len, size_t max_bytes, struct worker_tasks *out,
                        struct tv_error *err)
{
    void *items = NULL;
    memset(out, 0, sizeof *out);
    int rc = decode_batch(&task_batch, data, len, max_bytes, &items, &out->n, &out->holder, err);
    out->items = items;
    return rc;
}

int worker_results_decode(const void *data, size_t len, size_t max_bytes,
                          struct worker_results *out, struct tv_error *err)
{
    void *items = NULL;
    memset(out, 0, sizeof *out);
    int rc = decode_batch(&result_batch, data, len, max_bytes, &items, &out->n, &out->holder, err);
    out->items = items;
    return rc;
}

/* ---- a worker's fatal error ------------------------------------------- */

/* The payload: the code as 4 bytes, little-endian two's complement, then
 * the message and its NUL. */
int worker_error_encode(int code, const char *msg, struct tv_buf *out, struct tv_error *err)
{
    uint32_t u = (uint32_t)(int32_t)code;
    uint8_t head[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    if (tv_buf_append(out, head, sizeof head) || tv_buf_append(out, msg, strlen(msg) + 1))
        return tv_error_set(err, TV_ENOMEM, "error message: out of memory");
    return 0;
}

int worker_error_decode(const void *data, size_t len, int *code, char *msg, size_t msg_size,
                        struct tv_error *err)
{
    const uint8_t *b = data;
    if (len < 5 || b[len - 1] != '\0' || memchr(b + 4, '\0', len - 4) != b + len - 1)
        return tv_error_set(err, TV_EFORMAT,
                            "error message of %zu bytes: not a code and a NUL-terminated text",
                            len);
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    int32_t c = (int32_t)u;
    if (c >= 0 || c < TV_EGENOME)
        return tv_error_set(err, TV_EFORMAT, "error message: %ld is not an error code", (long)c);
    *code = c;
    if (msg_size)
        snprintf(msg, msg_size, "%s", (const char *)b + 4);
    return 0;
}
