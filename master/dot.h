/*
 * dot.h -- private to master/: a network drawn as a Graphviz `dot` graph, for
 * `trevo best --format dot` and `trevo net export --format dot`.
 *
 * The drawing follows the network's semantics (genome.h): inputs share the
 * first rank, outputs the last, hidden neurons sit between, neurons of equal
 * depth share a rank. Connections are told apart as genome_stats() counts
 * them: local (between adjacent layers) solid, skip (across layers) dashed,
 * recurrent (depth(from) >= depth(to), read at the previous step) in another
 * colour with constraint=false so that they do not bend the layering. Each
 * edge is labelled with its weight and drawn with a pen width that grows with
 * |weight|; each neuron is labelled with its id, activation and (if not 0)
 * bias. Every connection is exactly one line "    nFROM -> nTO [...];", so
 * the edges can be counted with grep.
 */
#ifndef TREVO_MASTER_DOT_H
#define TREVO_MASTER_DOT_H

#include "genome.h"

/* Appends the dot text of g to out. title (may be NULL) is printed above the
 * drawing, escaped. g is validated first: TV_EINVAL naming the bad gene if it
 * is not valid, TV_ENOMEM; on error out may hold a partial text (its length
 * is restored, so out is as it was). */
int master_write_dot(const struct genome *g, const char *title, struct tv_buf *out,
                     struct tv_error *err);

/* master_write_dot() into the file at path ("-" is stdout; atomically, as
 * master_write_file()). */
int master_write_dot_file(const struct genome *g, const char *title, const char *path,
                          struct tv_error *err);

#endif
