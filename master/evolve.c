/* evolve.c -- speciation and the plan of the next generation (master.h).
 * Every loop runs in id order and every tie is broken by id, so a plan is a
 * pure function of the population, the species state and the rng. */
#include "nsga2.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int new_species(struct master_pop *p, const struct genome *rep, int64_t generation,
                       struct tv_error *err)
{
    if (tv_grow((void **)&p->sp, &p->cap_species, p->n_species + 1, sizeof *p->sp, NULL))
        return tv_error_set(err, TV_ENOMEM, "speciation: out of memory");
    struct master_species *s = &p->sp[p->n_species];
    memset(s, 0, sizeof *s);
    s->rep = genome_new();
    if (!s->rep || genome_copy(s->rep, rep, err)) {
        genome_free(s->rep);
        return tv_error_set(err, TV_ENOMEM, "speciation: out of memory");
    }
    s->id = p->next_species_id++;
    s->rep_id = -1;
    s->born = generation;
    s->best_ever = -INFINITY;
    s->last_improved = generation;
    p->n_species++;
    return 0;
}

int master_speciate(struct master_pop *p, const struct master_config *c, int64_t generation,
                    struct tv_error *err)
{
    for (size_t k = 0; k < p->n_species; k++)
        p->sp[k].n_members = 0;
    /* Sketches of the representatives (and of the species founded here):
     * a representative whose distance bound already reaches the threshold
     * is passed over without computing the distance. The margin keeps
     * rounding from ever passing over one the distance would accept, so
     * the membership is exactly that of comparing every distance. */
    size_t cap = p->n_species + 16;
    struct genome_sketch *sk = malloc(cap * sizeof *sk);
    if (!sk)
        return tv_error_set(err, TV_ENOMEM, "speciation: out of memory");
    for (size_t k = 0; k < p->n_species; k++)
        genome_sketch(p->sp[k].rep, &sk[k]);
    int rc = 0;
    for (size_t i = 0; i < p->n && !rc; i++) {
        struct genome_sketch mine;
        genome_sketch(p->m[i].genome, &mine);
        size_t k = 0;
        for (;; k++) {
            k = genome_sketch_first_below(&mine, sk, k, p->n_species, &c->distance, p->threshold);
            if (k == p->n_species ||
                genome_distance(p->m[i].genome, p->sp[k].rep, &c->distance) < p->threshold)
                break;
        }
        if (k == p->n_species) {
            if (k == cap) {
                struct genome_sketch *more = realloc(sk, 2 * cap * sizeof *sk);
                if (!more) {
                    rc = tv_error_set(err, TV_ENOMEM, "speciation: out of memory");
                    break;
                }
                sk = more;
                cap *= 2;
            }
            sk[k] = mine;
            rc = new_species(p, p->m[i].genome, generation, err);
            if (!rc)
                p->sp[k].rep_id = p->m[i].id;
        }
        if (!rc)
            rc = master_species_add_member(&p->sp[k], i, err);
    }
    free(sk);
    if (rc)
        return rc;
    /* Drop empty species; the new representative is the member closest to
     * the old one (ties: lower id, as members are in id order). */
    size_t w = 0;
    for (size_t k = 0; k < p->n_species; k++) {
        struct master_species *s = &p->sp[k];
        if (s->n_members == 0) {
            genome_free(s->rep);
            free(s->members);
            continue;
        }
        size_t best = s->members[0];
        double best_d = INFINITY;
        for (size_t i = 0; i < s->n_members; i++) {
            double d = genome_distance(p->m[s->members[i]].genome, s->rep, &c->distance);
            if (d < best_d) {
                best_d = d;
                best = s->members[i];
            }
        }
        rc = genome_copy(s->rep, p->m[best].genome, err);
        s->rep_id = rc ? -1 : p->m[best].id;
        if (rc) {
            /* keep p->sp consistent: the species dropped above are freed */
            memmove(&p->sp[w], s, (p->n_species - k) * sizeof *s);
            p->n_species = w + (p->n_species - k);
            return rc;
        }
        p->sp[w++] = *s;
    }
    p->n_species = w;
    master_species_finish(p, generation);
    if (c->target_species > 0) {
        if ((double)p->n_species < c->target_species)
            p->threshold -= c->threshold_step;
        else if ((double)p->n_species > c->target_species)
            p->threshold += c->threshold_step;
        if (p->threshold < c->threshold_min)
            p->threshold = c->threshold_min;
    }
    return 0;
}

/* ---- planning ---------------------------------------------------------- */

struct plan_out {
    int64_t *elites;
    size_t n_elites;
    struct master_child *children;
    size_t n_children;
};

static void add_child(struct plan_out *o, const struct master_pop *p, const struct master_config *c,
                      struct tv_rng *rng, size_t a, size_t b, int two)
{
    o->children[o->n_children++] = master_child_of(p, c, rng, a, b, two);
}

/* Offspring per species: explicit fitness sharing (a species' share is its
 * mean fitness above the population's lowest, failed members aside), rounded by largest remainder
 * (ties: lower species id). Stagnant species get none. */
static int allot_offspring(struct master_pop *p, const struct master_config *c, int64_t generation,
                           size_t total, struct tv_error *err)
{
    /* Protected from stagnation: the species_elitism best by best_ever. */
    size_t n = p->n_species;
    int *alive = calloc(n ? n : 1, sizeof *alive);
    double *share = calloc(n ? n : 1, sizeof *share);
    if (!alive || !share) {
        free(alive);
        free(share);
        return tv_error_set(err, TV_ENOMEM,
                            "plan: out of memory sharing offspring among %zu species", n);
    }
    size_t n_alive = 0;
    for (size_t k = 0; k < n; k++) {
        size_t better = 0;
        for (size_t j = 0; j < n; j++)
            better += p->sp[j].best_ever > p->sp[k].best_ever ||
                      (p->sp[j].best_ever == p->sp[k].best_ever && p->sp[j].id < p->sp[k].id);
        int stagnant = generation - p->sp[k].last_improved >= c->stagnation;
        alive[k] = !stagnant || better < (size_t)c->species_elitism;
        n_alive += (size_t)alive[k];
    }
    if (n_alive == 0)
        for (size_t k = 0; k < n; k++)
            alive[k] = 1, n_alive++;
    double low = INFINITY; /* of the members not failed (fitness -inf) */
    for (size_t i = 0; i < p->n; i++)
        if (p->m[i].fitness < low && p->m[i].fitness > -INFINITY)
            low = p->m[i].fitness;
    double sum = 0;
    for (size_t k = 0; k < n; k++) {
        share[k] = alive[k] && isfinite(p->sp[k].mean) ? p->sp[k].mean - low : 0;
        if (!isfinite(share[k]) || share[k] < 0)
            share[k] = 0;
        sum += share[k];
    }
    if (sum <= 0) /* every species equal: even shares among the living */
        for (size_t k = 0; k < n; k++)
            share[k] = alive[k], sum += alive[k];
    size_t given = 0;
    for (size_t k = 0; k < n; k++) {
        share[k] = (double)total * share[k] / sum;
        p->sp[k].offspring = (size_t)floor(share[k]);
        share[k] -= floor(share[k]);
        given += p->sp[k].offspring;
    }
    while (given < total) {
        size_t best = 0;
        for (size_t k = 1; k < n; k++)
            if (alive[k] && (!alive[best] || share[k] > share[best]))
                best = k;
        p->sp[best].offspring++;
        share[best] = -1;
        given++;
    }
    free(alive);
    free(share);
    return 0;
}

static int plan_speciated(struct master_pop *p, const struct master_config *c, int64_t generation,
                          struct tv_rng *rng, struct plan_out *o, struct tv_error *err)
{
    int rc = allot_offspring(p, c, generation, (size_t)c->pop_size, err);
    if (rc)
        return rc;
    /* The population's champion is never lost (with elitism): its species
     * gets at least one offspring, taken from the species with the most, and
     * keeps it as an elite whatever its size. */
    size_t champ = SIZE_MAX;
    for (size_t k = 0; k < p->n_species; k++)
        if (p->sp[k].n_members &&
            (champ == SIZE_MAX || master_member_ranks_before(&p->m[p->sp[k].members[0]],
                                                             &p->m[p->sp[champ].members[0]])))
            champ = k;
    if (c->elitism > 0 && champ != SIZE_MAX && p->sp[champ].offspring == 0) {
        size_t most = 0;
        for (size_t k = 1; k < p->n_species; k++)
            if (p->sp[k].offspring > p->sp[most].offspring)
                most = k;
        if (p->sp[most].offspring > 0) {
            p->sp[most].offspring--;
            p->sp[champ].offspring++;
        }
    }
    for (size_t k = 0; k < p->n_species; k++) {
        struct master_species *s = &p->sp[k];
        size_t spawn = s->offspring;
        if (spawn == 0)
            continue;
        size_t n_elite = 0;
        if (s->n_members >= (size_t)c->elitism_min_size || k == champ)
            n_elite = (size_t)c->elitism;
        if (n_elite > spawn)
            n_elite = spawn;
        if (n_elite > s->n_members)
            n_elite = s->n_members;
        for (size_t i = 0; i < n_elite; i++)
            o->elites[o->n_elites++] = p->m[s->members[i]].id;
        size_t survivors = (size_t)ceil(c->survival_threshold * (double)s->n_members);
        if (survivors < 2)
            survivors = 2;
        if (survivors > s->n_members)
            survivors = s->n_members;
        for (size_t i = n_elite; i < spawn; i++) {
            size_t a = s->members[tv_rng_below(rng, (uint32_t)survivors)];
            size_t b = s->members[tv_rng_below(rng, (uint32_t)survivors)];
            add_child(o, p, c, rng, a, b, survivors >= 2);
        }
    }
    return 0;
}

/* A tournament among the members elig[0..n) (indices, in id order). */
static size_t tournament(const struct master_pop *p, const struct master_config *c,
                         const size_t *elig, size_t n, struct tv_rng *rng)
{
    size_t best = elig[tv_rng_below(rng, (uint32_t)n)];
    for (int64_t i = 1; i < c->tournament_size; i++) {
        size_t x = elig[tv_rng_below(rng, (uint32_t)n)];
        if (master_member_ranks_before(&p->m[x], &p->m[best]))
            best = x;
    }
    return best;
}

/* Elites and tournaments among the members aging leaves (all of them
 * without max_age: the same draws as before aging existed). */
static int plan_generational(struct master_pop *p, const struct master_config *c,
                             int64_t generation, struct tv_rng *rng, struct plan_out *o,
                             struct tv_error *err)
{
    size_t *elig = malloc((p->n ? p->n : 1) * sizeof *elig);
    size_t *idx = malloc((p->n ? p->n : 1) * sizeof *idx);
    if (!elig || !idx) {
        free(elig);
        free(idx);
        return tv_error_set(err, TV_ENOMEM, "plan: out of memory");
    }
    size_t n = 0;
    master_pop_eligible(p, c, generation, elig, &n);
    size_t n_elite = (size_t)c->elitism < n ? (size_t)c->elitism : n;
    if (n_elite > (size_t)c->pop_size)
        n_elite = (size_t)c->pop_size;
    memcpy(idx, elig, n * sizeof *idx);
    master_pop_sort_by_rank(p, idx, n);
    for (size_t i = 0; i < n_elite; i++)
        o->elites[o->n_elites++] = p->m[idx[i]].id;
    free(idx);
    for (size_t i = n_elite; i < (size_t)c->pop_size; i++) {
        size_t a = tournament(p, c, elig, n, rng);
        size_t b = tournament(p, c, elig, n, rng);
        add_child(o, p, c, rng, a, b, n >= 2);
    }
    free(elig);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int master_plan(struct master_pop *p, const struct master_config *c, int64_t generation,
                struct tv_rng *rng, int64_t **elites, size_t *n_elites,
                struct master_child **children, size_t *n_children, struct tv_error *err)
{
    struct plan_out o = {0};
    size_t total = (size_t)c->pop_size;
    o.elites = malloc(total * sizeof *o.elites);
    o.children = malloc(total * sizeof *o.children);
    int rc = 0;
    if (!o.elites || !o.children)
        rc = tv_error_set(err, TV_ENOMEM, "plan: out of memory");
    else if (p->n == 0)
        rc = tv_error_set(err, TV_ESTATE, "plan: the population is empty");
    else if (c->selection == MASTER_SEL_NSGA2)
        rc = master_plan_nsga2(p, c, generation, rng, o.elites, &o.n_elites, o.children,
                               &o.n_children, err);
    else if (c->selection == MASTER_SEL_GENERATIONAL)
        rc = plan_generational(p, c, generation, rng, &o, err);
    else
        rc = plan_speciated(p, c, generation, rng, &o, err);
    if (rc) {
        free(o.elites);
        free(o.children);
        return rc;
    }
    qsort(o.elites, o.n_elites, sizeof *o.elites, cmp_i64);
    *elites = o.elites;
    *n_elites = o.n_elites;
    *children = o.children;
    *n_children = o.n_children;
    return 0;
}
