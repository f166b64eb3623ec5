/* pop.c -- a population and its species' member lists (master.h, pop.h):
 * no speciation, no planning (only the child two members make, which
 * evolve.c's and nsga2.c's plans share), so that the checkpoint codec
 * (state.c) links with it alone. */
#include "pop.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void master_pop_init(struct master_pop *p, double threshold)
{
    memset(p, 0, sizeof *p);
    p->threshold = threshold;
}

void master_pop_release(struct master_pop *p)
{
    for (size_t i = 0; i < p->n; i++)
        genome_free(p->m[i].genome);
    for (size_t i = 0; i < p->n_species; i++) {
        genome_free(p->sp[i].rep);
        free(p->sp[i].members);
    }
    free(p->m);
    free(p->sp);
    tv_buf_free(&p->encoded);
    memset(p, 0, sizeof *p);
}

int master_pop_keep_encoding(struct master_pop *p, const uint8_t *bytes, size_t len,
                             struct tv_error *err)
{
    struct master_member *m = &p->m[p->n - 1];
    m->enc_off = p->encoded.len;
    m->enc_len = 0;
    if (tv_buf_append(&p->encoded, bytes, len))
        return tv_error_set(err, TV_ENOMEM, "population: out of memory");
    m->enc_len = len;
    return 0;
}

int master_pop_add(struct master_pop *p, int64_t id, double fitness, int solved,
                   struct genome *genome, struct tv_error *err)
{
    if (tv_grow((void **)&p->m, &p->cap, p->n + 1, sizeof *p->m, NULL))
        return tv_error_set(err, TV_ENOMEM, "population: out of memory");
    struct genome_stats st;
    int rc = genome_stats(genome, &st, err);
    if (rc)
        return rc;
    p->m[p->n++] = (struct master_member){id,
                                          isnan(fitness) ? -INFINITY : fitness,
                                          solved,
                                          genome,
                                          -1,
                                          (uint32_t)st.n_neurons,
                                          (uint32_t)st.n_conns,
                                          (uint32_t)st.n_skip,
                                          (uint32_t)st.n_recurrent,
                                          0,
                                          0,
                                          NAN,
                                          NAN,
                                          NAN,
                                          NAN,
                                          -1};
    return 0;
}

void master_pop_set_measures(struct master_pop *p, double valid_acc, double flash, double ram,
                             double macs, int64_t born)
{
    struct master_member *m = &p->m[p->n - 1];
    m->valid_acc = valid_acc;
    m->flash = flash;
    m->ram = ram;
    m->macs = macs;
    m->born = born;
}

static int cmp_member_id(const void *a, const void *b)
{
    int64_t x = ((const struct master_member *)a)->id, y = ((const struct master_member *)b)->id;
    return (x > y) - (x < y);
}

void master_pop_sort(struct master_pop *p)
{
    qsort(p->m, p->n, sizeof *p->m, cmp_member_id);
}

ptrdiff_t master_pop_find(const struct master_pop *p, int64_t id)
{
    const struct master_member key = {.id = id};
    /* (ids are distinct; bsearch wants a real array even when it is empty) */
    const struct master_member *m =
        p->n ? bsearch(&key, p->m, p->n, sizeof *p->m, cmp_member_id) : NULL;
    return m ? m - p->m : -1;
}

int master_member_ranks_before(const struct master_member *a, const struct master_member *b)
{
    if (a->fitness != b->fitness)
        return a->fitness > b->fitness;
    return a->id < b->id;
}

/* A member to sort by rank, and where it came from. */
struct rank_key {
    const struct master_member *m;
    size_t idx;
};

static int cmp_rank_key(const void *a, const void *b)
{
    const struct rank_key *x = a, *y = b;
    return master_member_ranks_before(y->m, x->m) - master_member_ranks_before(x->m, y->m);
}

/* Insertion sort for short lists; qsort on keys for long ones. */
void master_pop_sort_by_rank(const struct master_pop *p, size_t *idx, size_t n)
{
    struct rank_key *keys = n > 32 ? malloc(n * sizeof *keys) : NULL;
    if (keys) {
        for (size_t i = 0; i < n; i++)
            keys[i] = (struct rank_key){&p->m[idx[i]], idx[i]};
        qsort(keys, n, sizeof *keys, cmp_rank_key);
        for (size_t i = 0; i < n; i++)
            idx[i] = keys[i].idx;
        free(keys);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && master_member_ranks_before(&p->m[v], &p->m[idx[j - 1]])) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

int master_species_add_member(struct master_species *s, size_t member, struct tv_error *err)
{
    if (tv_grow((void **)&s->members, &s->cap_members, s->n_members + 1, sizeof *s->members, NULL))
        return tv_error_set(err, TV_ENOMEM, "speciation: out of memory");
    s->members[s->n_members++] = member;
    return 0;
}

void master_species_finish(struct master_pop *p, int64_t generation)
{
    for (size_t k = 0; k < p->n_species; k++) {
        struct master_species *s = &p->sp[k];
        master_pop_sort_by_rank(p, s->members, s->n_members);
        double sum = 0;
        size_t n = 0; /* members not failed (fitness -inf) */
        for (size_t i = 0; i < s->n_members; i++) {
            double f = p->m[s->members[i]].fitness;
            sum += f > -INFINITY ? f : 0;
            n += f > -INFINITY;
            p->m[s->members[i]].species = s->id;
        }
        s->best = s->n_members ? p->m[s->members[0]].fitness : -INFINITY;
        s->mean = n ? sum / (double)n : -INFINITY;
        if (s->best > s->best_ever) {
            s->best_ever = s->best;
            s->last_improved = generation;
        }
    }
}

struct master_child master_child_of(const struct master_pop *p, const struct master_config *c,
                                    struct tv_rng *rng, size_t a, size_t b, int two)
{
    struct master_child ch;
    if (two && a != b && tv_rng_chance(rng, c->crossover_rate)) {
        if (master_member_ranks_before(&p->m[b], &p->m[a])) {
            size_t t = a;
            a = b;
            b = t;
        }
        ch.op = tv_rng_chance(rng, c->crossover_mutate_rate) ? WORKER_OP_CROSSOVER_MUTATE
                                                             : WORKER_OP_CROSSOVER;
        ch.parent1 = p->m[a].id;
        ch.parent2 = p->m[b].id;
    } else {
        ch.op = WORKER_OP_MUTATE;
        ch.parent1 = p->m[a].id;
        ch.parent2 = -1;
    }
    return ch;
}
