/* fuzz_checkpoint_state.c -- libFuzzer target for master_state_decode, the
 * parser of the master's checkpoint bytes a resume reads from the database.
 * The bytes are decoded onto a fixed population (ids 0..9, minimal XOR
 * genomes), as a resume decodes them onto the checkpoint's population. Any
 * input must give 0 or an error with a message, never a crash or a leak;
 * whatever decodes must hold members only of species it lists, and encode
 * and decode again to the same bytes.
 * Seeds: tests/fuzz/corpus/checkpoint_state/ (written by this file compiled
 * with -DWRITE_SEED and a main: the state of the population speciated). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "state.h"

#define N_MEMBERS 10

static const struct genome_limits small = {64, 256};

/* The population the bytes are decoded onto. */
static void population(struct master_pop *p)
{
    struct tv_error err = {0};
    master_pop_init(p, 3.0);
    for (int64_t id = 0; id < N_MEMBERS; id++) {
        struct tv_rng rng;
        tv_rng_init(&rng, 1, 0, (uint64_t)id);
        struct genome *g = genome_new();
        CHECK(g && !genome_build_minimal(g, 3, 1, GENOME_ACT_NEAT_SIGMOID, 1.0, &rng, &err));
        CHECK(!master_pop_add(p, id, (double)id, 0, g, &err));
    }
    master_pop_sort(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tv_error err = {0};
    struct master_pop p, q;
    uint8_t *bytes = fuzz_copy(data, size);
    if (!bytes)
        return 0;
    population(&p);
    int64_t next_id = 0;
    int rc = master_state_decode(&p, &next_id, 3, &small, "fuzz.db", bytes, size, &err);
    if (rc) {
        CHECK((rc == TV_EFORMAT || rc == TV_ECORRUPT || rc == TV_ENOMEM || rc == TV_ELIMIT ||
               rc == TV_EINVAL) &&
              err.code == rc && !strncmp(err.msg, "fuzz.db: checkpoint ", 20));
    } else {
        size_t listed = 0;
        for (size_t k = 0; k < p.n_species; k++) {
            listed += p.sp[k].n_members;
            for (size_t i = 0; i < p.sp[k].n_members; i++)
                CHECK(p.sp[k].members[i] < p.n && p.m[p.sp[k].members[i]].species == p.sp[k].id);
        }
        CHECK(listed == p.n);
        for (size_t i = 0; i < p.n; i++)
            CHECK(p.m[i].species >= 0);
        struct tv_buf a = {0}, b = {0};
        CHECK(!master_state_encode(&p, next_id, &a, &err));
        population(&q);
        int64_t next2 = 0;
        CHECK(!master_state_decode(&q, &next2, 3, &small, "fuzz.db", a.data, a.len, &err));
        CHECK(next2 == next_id && !master_state_encode(&q, next2, &b, &err));
        CHECK(a.len == b.len && !memcmp(a.data, b.data, a.len));
        master_pop_release(&q);
        tv_buf_free(&a);
        tv_buf_free(&b);
    }
    master_pop_release(&p);
    free(bytes);
    return 0;
}

#ifdef WRITE_SEED
int main(void)
{
    struct tv_error err = {0};
    struct master_config c;
    struct master_pop p;
    struct tv_buf out = {0};
    master_config_defaults(&c);
    population(&p);
    p.m[2].solved = 1;
    CHECK(!master_speciate(&p, &c, 3, &err));
    CHECK(!master_state_encode(&p, N_MEMBERS, &out, &err));
    fwrite(out.data, 1, out.len, stdout);
    master_pop_release(&p);
    tv_buf_free(&out);
    return 0;
}
#endif
