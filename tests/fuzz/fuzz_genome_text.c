/* fuzz_genome_text.c -- libFuzzer target for genome_read_text. Any input
 * must give 0 or an error naming where it failed, never a crash; whatever
 * parses must be valid, write out and read back to the same genome, and
 * survive the msgpack form too. Both the default limits and small ones are
 * tried. Seeds: tests/fuzz/corpus/genome_text/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "genome.h"

static void round_trip(const char *text, size_t size, const struct genome_limits *lim)
{
    struct tv_error err = {0};
    struct genome g, h;
    genome_init(&g);
    genome_init(&h);
    int rc = genome_read_text(&g, text, size, "fuzz", lim, &err);
    if (rc) {
        CHECK(err.code == rc && strncmp(err.msg, "fuzz", 4) == 0);
        CHECK(g.n_neurons == 0 && g.n_conns == 0);
        genome_release(&g);
        return;
    }
    CHECK(genome_validate(&g, lim, &err) == 0);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    CHECK(f != NULL);
    CHECK(genome_write_text(&g, f, &err) == 0);
    CHECK(fclose(f) == 0);
    CHECK(genome_read_text(&h, out, len, "fuzz2", lim, &err) == 0);
    CHECK(genome_equal(&g, &h));
    free(out);
    /* The msgpack form holds the same genome. */
    struct tv_buf buf = {0};
    CHECK(genome_encode(&g, &buf, &err) == 0);
    CHECK(genome_decode(&h, buf.data, buf.len, lim, &err) == 0);
    CHECK(genome_equal(&g, &h));
    tv_buf_free(&buf);
    genome_release(&g);
    genome_release(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct genome_limits small = {6, 10};
    /* An exact-size copy: the parser gets a length, never a NUL terminator. */
    char *text = (char *)fuzz_copy(data, size);
    if (!text)
        return 0;
    round_trip(text, size, NULL);
    round_trip(text, size, &small);
    free(text);
    return 0;
}
