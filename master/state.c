/* state.c -- the checkpoint's master state (format in state.h). */
#include "state.h"

#include "pop.h"

#include <inttypes.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#define STATE_TAG "trevo-master"
#define STATE_VERSION 1
#define STATE_VERSION_BY_ID 2 /* representatives may be members' ids */

/* The representative of sp as the id of the member it copies (version 2),
 * or -1: as its bytes. */
static int64_t rep_member(const struct master_pop *p, const struct master_species *sp, int by_id)
{
    return by_id && sp->rep_id >= 0 && master_pop_find(p, sp->rep_id) >= 0 ? sp->rep_id : -1;
}

static int encode(const struct master_pop *p, int64_t next_id, int by_id, struct tv_buf *out,
                  struct tv_error *err)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, tv_buf_write);
    struct tv_buf rep = {0};
    int bad = msgpack_pack_array(&pk, 7);
    bad |= msgpack_pack_str_with_body(&pk, STATE_TAG, strlen(STATE_TAG));
    bad |= msgpack_pack_uint32(&pk, by_id ? STATE_VERSION_BY_ID : STATE_VERSION);
    bad |= msgpack_pack_double(&pk, p->threshold);
    bad |= msgpack_pack_int64(&pk, p->next_species_id);
    bad |= msgpack_pack_int64(&pk, next_id);
    bad |= msgpack_pack_array(&pk, p->n_species);
    for (size_t k = 0; k < p->n_species && !bad; k++) {
        const struct master_species *sp = &p->sp[k];
        int64_t member = rep_member(p, sp, by_id);
        rep.len = 0;
        int rc = member >= 0 ? 0 : genome_encode(sp->rep, &rep, err);
        if (rc) {
            tv_buf_free(&rep);
            return rc;
        }
        bad |= msgpack_pack_array(&pk, 5);
        bad |= msgpack_pack_int64(&pk, sp->id);
        bad |= msgpack_pack_int64(&pk, sp->born);
        bad |= msgpack_pack_double(&pk, sp->best_ever);
        bad |= msgpack_pack_int64(&pk, sp->last_improved);
        bad |= member >= 0 ? msgpack_pack_int64(&pk, member)
                           : msgpack_pack_bin_with_body(&pk, rep.data, rep.len);
    }
    tv_buf_free(&rep);
    /* membership and solved flags, in population (id) order */
    bad |= msgpack_pack_array(&pk, p->n);
    for (size_t i = 0; i < p->n && !bad; i++) {
        bad |= msgpack_pack_array(&pk, 3);
        bad |= msgpack_pack_int64(&pk, p->m[i].id);
        bad |= msgpack_pack_int64(&pk, p->m[i].species);
        bad |= p->m[i].solved ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
    }
    return bad ? tv_error_set(err, TV_ENOMEM, "checkpoint: out of memory") : 0;
}

int master_state_encode(const struct master_pop *p, int64_t next_id, struct tv_buf *out,
                        struct tv_error *err)
{
    return encode(p, next_id, 0, out, err);
}

int master_state_encode_by_id(const struct master_pop *p, int64_t next_id, struct tv_buf *out,
                              struct tv_error *err)
{
    return encode(p, next_id, 1, out, err);
}

static int is_float(const msgpack_object *o)
{
    return o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32;
}

static int corrupt(struct tv_error *err, const char *where, const char *what)
{
    return tv_error_set(err, TV_ECORRUPT, "%s: checkpoint state: %s", where, what);
}

/* One species, [id, born, best_ever, last_improved, representative], into
 * p's next slot; by_id (version 2): the representative may be a member's id. */
static int decode_species(struct master_pop *p, const msgpack_object *o, int by_id,
                          const struct genome_limits *limits, const char *where,
                          struct tv_error *err)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 5)
        return corrupt(err, where, "a species is not an array of 5");
    const msgpack_object *v = o->via.array.ptr;
    struct master_species sp = {0};
    int is_id = by_id && v[4].type == MSGPACK_OBJECT_POSITIVE_INTEGER;
    if (worker_msgpack_i64(&v[0], &sp.id) || worker_msgpack_i64(&v[1], &sp.born) ||
        !is_float(&v[2]) || worker_msgpack_i64(&v[3], &sp.last_improved) ||
        (v[4].type != MSGPACK_OBJECT_BIN && !is_id))
        return corrupt(err, where, "a species field has the wrong type");
    if (p->n_species == p->cap_species)
        return corrupt(err, where, "too many species");
    ptrdiff_t m =
        is_id && v[4].via.u64 <= INT64_MAX ? master_pop_find(p, (int64_t)v[4].via.u64) : -1;
    if (is_id && m < 0)
        return corrupt(err, where, "a representative names an unknown member");
    sp.best_ever = v[2].via.f64;
    sp.rep_id = is_id ? p->m[m].id : -1;
    sp.rep = genome_new();
    if (!sp.rep)
        return tv_error_set(err, TV_ENOMEM, "%s: checkpoint state: out of memory", where);
    int rc = is_id ? genome_copy(sp.rep, p->m[m].genome, err)
                   : genome_decode(sp.rep, v[4].via.bin.ptr, v[4].via.bin.size, limits, err);
    if (rc) {
        genome_free(sp.rep);
        tv_error_prefix(err, "%s: checkpoint species %" PRId64, where, sp.id);
        return rc;
    }
    p->sp[p->n_species++] = sp;
    return 0;
}

/* The membership list, [[member id, species id, solved], ...] in id order,
 * into the species' member lists. */
static int decode_members(struct master_pop *p, const msgpack_object *list, const char *where,
                          struct tv_error *err)
{
    if (list->via.array.size != p->n)
        return corrupt(err, where, "membership does not match the population");
    int64_t prev = INT64_MIN;
    for (uint32_t i = 0; i < list->via.array.size; i++) {
        const msgpack_object *o = &list->via.array.ptr[i];
        int64_t id, sid;
        if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3 ||
            worker_msgpack_i64(&o->via.array.ptr[0], &id) ||
            worker_msgpack_i64(&o->via.array.ptr[1], &sid) ||
            o->via.array.ptr[2].type != MSGPACK_OBJECT_BOOLEAN)
            return corrupt(err, where, "a membership entry has the wrong type");
        /* in id order, so that each member is listed exactly once */
        if (id <= prev)
            return corrupt(err, where, "membership is not in id order (a member listed twice?)");
        prev = id;
        ptrdiff_t m = master_pop_find(p, id);
        size_t k = 0;
        while (k < p->n_species && p->sp[k].id != sid)
            k++;
        if (m < 0 || k == p->n_species)
            return corrupt(err, where, "membership names an unknown individual or species");
        p->m[m].solved = o->via.array.ptr[2].via.boolean;
        int rc = master_species_add_member(&p->sp[k], (size_t)m, err);
        if (rc) {
            tv_error_prefix(err, "%s: checkpoint state", where);
            return rc;
        }
    }
    return 0;
}

/* The state's fields once unpacked: everything but the lists' contents;
 * *version: 1 or 2. */
static int decode_head(struct master_pop *p, int64_t *next_id, uint64_t *version,
                       const msgpack_object *r, const char *where, struct tv_error *err)
{
    if (r->type != MSGPACK_OBJECT_ARRAY || r->via.array.size != 7)
        return corrupt(err, where, "not an array of 7");
    const msgpack_object *f = r->via.array.ptr;
    if (f[0].type != MSGPACK_OBJECT_STR || f[0].via.str.size != strlen(STATE_TAG) ||
        memcmp(f[0].via.str.ptr, STATE_TAG, strlen(STATE_TAG)))
        return corrupt(err, where, "wrong tag");
    if (f[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
        (f[1].via.u64 != STATE_VERSION && f[1].via.u64 != STATE_VERSION_BY_ID))
        return corrupt(err, where, "unknown version");
    *version = f[1].via.u64;
    if (!is_float(&f[2]) || worker_msgpack_i64(&f[3], &p->next_species_id) ||
        worker_msgpack_i64(&f[4], next_id) || f[5].type != MSGPACK_OBJECT_ARRAY ||
        f[6].type != MSGPACK_OBJECT_ARRAY)
        return corrupt(err, where, "a field has the wrong type");
    p->threshold = f[2].via.f64;
    return 0;
}

int master_state_decode(struct master_pop *p, int64_t *next_id, int64_t generation,
                        const struct genome_limits *limits, const char *where, const uint8_t *data,
                        size_t len, struct tv_error *err)
{
    int rc = tv_msgpack_check(data, len, 4, err);
    if (rc) {
        tv_error_prefix(err, "%s: checkpoint state", where);
        return rc;
    }
    /* room for every species the bytes can hold (each takes > 8 bytes) */
    p->cap_species = 1024 + len / 8;
    p->sp = calloc(p->cap_species, sizeof *p->sp);
    if (!p->sp)
        return tv_error_set(err, TV_ENOMEM, "%s: checkpoint state: out of memory", where);
    msgpack_unpacked res;
    msgpack_unpacked_init(&res);
    size_t off = 0;
    msgpack_unpack_return u = msgpack_unpack_next(&res, (const char *)data, len, &off);
    if (u == MSGPACK_UNPACK_NOMEM_ERROR)
        rc = tv_error_set(err, TV_ENOMEM, "%s: checkpoint state: out of memory", where);
    else if (u != MSGPACK_UNPACK_SUCCESS)
        rc = corrupt(err, where, "not msgpack");
    uint64_t version = 0;
    if (!rc)
        rc = decode_head(p, next_id, &version, &res.data, where, err);
    const msgpack_object *f = rc ? NULL : res.data.via.array.ptr;
    for (uint32_t k = 0; !rc && k < f[5].via.array.size; k++)
        rc = decode_species(p, &f[5].via.array.ptr[k], version == STATE_VERSION_BY_ID, limits,
                            where, err);
    if (!rc)
        rc = decode_members(p, &f[6], where, err);
    /* members were listed in id order, as speciation adds them */
    if (!rc)
        master_species_finish(p, generation);
    msgpack_unpacked_destroy(&res);
    return rc;
}
