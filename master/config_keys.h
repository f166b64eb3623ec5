/* config_keys.h -- private to master/: the typed key table of the
 * experiment config (config_keys.c). Each key names its section, the C type
 * of its field in struct master_config (checked when the table compiles),
 * its range, default, flags and documentation; config.c parses, dumps, lists
 * and sets keys through it and never decides a type by a key's name. */
#ifndef TREVO_MASTER_CONFIG_KEYS_H
#define TREVO_MASTER_CONFIG_KEYS_H

#include <stdio.h>

#include "master.h"

/* The longest line accepted (inih's own limit is 200 bytes, newline included). */
#define LINE_MAX_CHARS 190

/* The C type of a key's field, which the parser writes and the dump reads. */
enum key_type {
    T_I64,    /* int64_t */
    T_SIZE,   /* size_t */
    T_MIB,    /* size_t bytes, given in MiB */
    T_U64,    /* uint64_t */
    T_DOUBLE, /* double */
    T_BOOL,   /* int, 0 or 1 */
    T_STR,    /* char[size] */
    T_ENUM,   /* int, an index into choices */
    T_ACT,    /* int, enum genome_act */
    T_ACTS,   /* uint32_t, a bit mask of activations */
    T_LIST,   /* uint32_t[size], with its size_t count at offset aux */
    T_DLIST,  /* double[size], with its size_t count at offset aux */
    T_OBJS    /* uint32_t, a bit mask of choices (a set of names, written in their order) */
};

/* Flags of a key. */
enum {
    K_RESUMABLE = 1, /* may change with `trevo resume --set` */
    K_NAN = 2,       /* T_DOUBLE: nan is a value */
    K_RUN_NAME = 4,  /* T_STR: a run name (master_run_name_check), or empty */
    K_QUIET = 8      /* left out of the dump at its default: a key added after runs were
                        stored, so that their configs keep their bytes */
};

struct config_key {
    const char *section, *name;
    enum key_type type;
    size_t offset;              /* of its field in struct master_config */
    size_t size;                /* T_STR: buffer size; T_LIST: elements */
    size_t aux;                 /* T_LIST: offset of the element count */
    double min, max;            /* numbers; T_LIST: each element */
    const char *def;            /* default, as text (NULL: required) */
    const char *const *choices; /* T_ENUM: names of values 0, 1, ..., NULL */
    unsigned flags;             /* K_* */
    const char *doc;
};

/* Every key but those of [task] (the task's own table), by section. */
#define MASTER_CONFIG_N_KEYS 87
extern const struct config_key *const master_config_keys;

/* Parses value into key k's field of the struct at base (a struct
 * master_config, or a stand-in for a [task] key). 0, or -1 and why. */
int master_config_key_set(void *base, const struct config_key *k, const char *value, char *why,
                          size_t why_len);
/* Writes key k's value from the struct at base, as master_config_key_set
 * reads it. */
void master_config_key_format(FILE *f, const void *base, const struct config_key *k);

#endif
