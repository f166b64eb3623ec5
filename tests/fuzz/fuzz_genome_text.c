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
    struct genome g;
    genome_init(&g);
    int rc = genome_read_text(&g, text, size, "fuzz", lim, &err);
    fuzz_check_parsed(rc, &err, "fuzz", &g, lim);
    genome_release(&g);
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
