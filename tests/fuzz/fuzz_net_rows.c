/* fuzz_net_rows.c -- libFuzzer target for cli_row_parse, the parser of
 * `trevo net eval` input rows. The first byte picks how many values the row
 * must hold (1..16); the rest is the row. Any bytes must give 0 or TV_EINVAL
 * with a message, never a crash or a read outside the row. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t n_vals = 1 + data[0] % 16;
    /* a copy of exactly the row's bytes, so ASan sees any over-read */
    size_t len = size - 1;
    char *line = malloc(len ? len : 1);
    if (!line)
        return 0;
    memcpy(line, data + 1, len);
    float vals[16];
    struct tv_error err = {0};
    int rc = cli_row_parse(line, len, vals, n_vals, &err);
    if (rc != 0 && (rc != TV_EINVAL || err.code != TV_EINVAL || err.msg[0] == '\0'))
        abort();
    if (rc == 0)
        for (size_t i = 0; i < n_vals; i++)
            if (vals[i] != vals[i]) /* finite numbers only */
                abort();
    free(line);
    return 0;
}
