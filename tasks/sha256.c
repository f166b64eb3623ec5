/* sha256.c -- SHA-256 after FIPS 180-4: the constants of section 4.2.2, the
 * initial value of section 5.3.3, the padding of section 5.1.1 and the
 * compression of section 6.2.2, one 64-byte block at a time. */
#include "sha256.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The first 32 bits of the fractional parts of the cube roots of the first
 * 64 primes (section 4.2.2). */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* Section 6.2.2: the message schedule W, then 64 rounds over a..h. */
static void compress(uint32_t h[8], const uint8_t block[64])
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)block[4 * t] << 24 | (uint32_t)block[4 * t + 1] << 16 |
               (uint32_t)block[4 * t + 2] << 8 | (uint32_t)block[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t v[8];
    memcpy(v, h, sizeof v);
    for (int t = 0; t < 64; t++) {
        uint32_t e = v[4], a = v[0];
        uint32_t ch = (e & v[5]) ^ (~e & v[6]);
        uint32_t maj = (a & v[1]) ^ (a & v[2]) ^ (v[1] & v[2]);
        uint32_t t1 = v[7] + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ch + K[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + maj;
        memmove(v + 1, v, 7 * sizeof v[0]); /* h = g, g = f, ..., b = a */
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        h[i] += v[i];
}

void task_sha256_init(struct task_sha256 *s)
{
    /* Section 5.3.3: the fractional parts of the square roots of the first
     * eight primes. */
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->n_bytes = 0;
    s->fill = 0;
}

void task_sha256_update(struct task_sha256 *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->n_bytes += len;
    while (len > 0) {
        size_t take = 64 - s->fill < len ? 64 - s->fill : len;
        if (s->fill == 0 && len >= 64) { /* a whole block where it lies */
            compress(s->h, p);
            take = 64;
        } else {
            memcpy(s->block + s->fill, p, take);
            s->fill += take;
            if (s->fill == 64) {
                compress(s->h, s->block);
                s->fill = 0;
            }
        }
        p += take;
        len -= take;
    }
}

void task_sha256_final(struct task_sha256 *s, uint8_t digest[TASK_SHA256_BYTES])
{
    /* Section 5.1.1: a 1 bit, zeros up to 56 bytes mod 64, the length in
     * bits as a big-endian 64-bit number. */
    uint64_t bits = s->n_bytes * 8;
    uint8_t pad[72] = {0x80};
    size_t n_pad = (s->fill < 56 ? 56 : 120) - s->fill;
    for (int i = 0; i < 8; i++)
        pad[n_pad + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    task_sha256_update(s, pad, n_pad + 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            digest[4 * i + j] = (uint8_t)(s->h[i] >> (24 - 8 * j));
}

void task_sha256_hex(const uint8_t digest[TASK_SHA256_BYTES], char hex[TASK_SHA256_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < TASK_SHA256_BYTES; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[2 * TASK_SHA256_BYTES] = '\0';
}

int task_sha256_file(const char *path, char hex[TASK_SHA256_HEX], struct tv_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tv_error_set(err, TV_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct task_sha256 s;
    task_sha256_init(&s);
    uint8_t buf[16384];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        task_sha256_update(&s, buf, n);
    int bad = ferror(f), saved = errno;
    fclose(f);
    if (bad)
        return tv_error_set(err, TV_EIO, "%s: read error: %s", path, strerror(saved));
    uint8_t digest[TASK_SHA256_BYTES];
    task_sha256_final(&s, digest);
    task_sha256_hex(digest, hex);
    return 0;
}
