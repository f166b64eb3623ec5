/* fuzz_sparsity.c -- libFuzzer target for nn_sparsity_parse. Any input must
 * give 0 or TV_EINVAL with a message that starts with the spec, never a
 * crash; a parsed policy must make a sparsifier, and format back into a spec
 * that parses to the same policy. Seeds: tests/fuzz/corpus/sparsity/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sparsify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec = fuzz_string(data, size, 256);
    if (!spec)
        return 0;
    struct tv_error err = {0};
    struct nn_sparsity p, q;
    int rc = nn_sparsity_parse(spec, &p, &err);
    if (rc) {
        size_t n = strlen(spec);
        CHECK(rc == TV_EINVAL && err.code == rc);
        CHECK(n == 0 ? strstr(err.msg, "empty") != NULL : strncmp(err.msg, spec, n) == 0);
        free(spec);
        return 0;
    }
    free(spec);
    CHECK(p.kind >= 0 && p.kind < NN_SPARSE_COUNT);
    struct nn_sparsifier *s = NULL;
    CHECK(nn_sparsifier_new(&p, 1, 1, &s, &err) == 0);
    nn_sparsifier_free(s);
    char buf[96];
    CHECK(nn_sparsity_format(&p, buf, sizeof buf) < (int)sizeof buf);
    CHECK(nn_sparsity_parse(buf, &q, &err) == 0);
    CHECK(q.kind == p.kind && q.a == p.a && q.b == p.b);
    return 0;
}
