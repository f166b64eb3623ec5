/*
 * state.h -- private to master/: the master's part of a checkpoint, the bytes
 * the store keeps beside a closed generation's population so that a resume
 * continues exactly:
 *   ["trevo-master", 1, threshold, next_species_id, next_id,
 *    [[species id, born, best_ever, last_improved, representative bin], ...],
 *    [[member id, species id, solved], ...]]            (members in id order)
 * Version 2 (master_state_encode_by_id) is the same but for a representative
 * that is a copy of a member's genome, given as that member's id (a positive
 * integer) in place of its bytes: the checkpoint of a run that keeps few
 * genomes ([store] genomes) then costs a few bytes per species, not a genome.
 * Decoding is a parser of database bytes: every field's type and every
 * reference is checked, nothing is trusted. No MPI, no SQLite: the fuzz
 * target links it alone.
 */
#ifndef TREVO_MASTER_STATE_H
#define TREVO_MASTER_STATE_H

#include "master.h"

/* Appends the state of population p (speciated) and the next child's id to
 * out. TV_ENOMEM, or genome_encode's error for a representative. */
int master_state_encode(const struct master_pop *p, int64_t next_id, struct tv_buf *out,
                        struct tv_error *err);

/* The same, version 2: a representative that copies a member's genome
 * (master_species.rep_id) is written as the member's id. */
int master_state_encode_by_id(const struct master_pop *p, int64_t next_id, struct tv_buf *out,
                              struct tv_error *err);

/* Restores threshold, species and membership into p, whose members are
 * loaded already (sorted by id) and which has no species yet; *next_id gets
 * the next child's id; generation is the checkpoint's (for the species'
 * statistics). Representatives are decoded within limits. Messages start
 * with `where` (the database's name). TV_ECORRUPT for damaged bytes,
 * TV_EFORMAT for bytes that are not msgpack, TV_ENOMEM. On an error p may
 * hold some species (master_pop_release frees them). */
int master_state_decode(struct master_pop *p, int64_t *next_id, int64_t generation,
                        const struct genome_limits *limits, const char *where, const uint8_t *data,
                        size_t len, struct tv_error *err);

#endif
