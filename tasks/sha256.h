/*
 * sha256.h -- SHA-256 (FIPS 180-4, section 6.2), written for trevo: a run
 * keeps the hash of the plugin task it was started with (plugin.h), so that a
 * resume with a changed fitness function is noticed. Plain C, no allocation;
 * byte order handled explicitly, so the digest is the same on every machine.
 */
#ifndef TREVO_SHA256_H
#define TREVO_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "genome.h"

#define TASK_SHA256_BYTES 32
/* The hex form: 64 lowercase digits and the NUL. */
#define TASK_SHA256_HEX 65

/* A hash in progress: init, update any number of times, final once. */
struct task_sha256 {
    uint32_t h[8];     /* the chaining value H(i) */
    uint64_t n_bytes;  /* message bytes taken so far */
    uint8_t block[64]; /* a partial block: its first `fill` bytes */
    size_t fill;
};

void task_sha256_init(struct task_sha256 *s);
void task_sha256_update(struct task_sha256 *s, const void *data, size_t len);
/* Pads, finishes and writes the digest; s must be initialised again before
 * further use. */
void task_sha256_final(struct task_sha256 *s, uint8_t digest[TASK_SHA256_BYTES]);
/* The digest as 64 lowercase hex digits. */
void task_sha256_hex(const uint8_t digest[TASK_SHA256_BYTES], char hex[TASK_SHA256_HEX]);
/* The hex SHA-256 of the whole file at path. TV_EIO naming the path and the
 * system's reason when it cannot be opened or read. */
int task_sha256_file(const char *path, char hex[TASK_SHA256_HEX], struct tv_error *err);

#endif
