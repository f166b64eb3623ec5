/* fuzz_cuba_file.c -- libFuzzer target for cli_cuba_read_stream, the file
 * experiments/cuba_brian2.py writes (`trevo net bench --cuba --brian2-file`).
 * Any input must give 0, or TV_EFORMAT with a message that starts with the
 * file's name (TV_ENOMEM only when memory runs out), never a crash and never
 * an allocation the file's own lines do not back; what is read must keep
 * the format's rules (cli/cuba_file.h). Seeds: tests/fuzz/corpus/cuba_file/. */
#include <math.h>

#include "cuba_file.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = fuzz_copy(data, size);
    FILE *f = copy ? fmemopen(copy, size ? size : 1, "r") : NULL;
    if (!f) {
        free(copy);
        return 0;
    }
    if (!size)
        fgetc(f); /* fmemopen wants at least one byte: an empty file */
    struct tv_error err = {0};
    struct cli_cuba c;
    int rc = cli_cuba_read_stream(f, "cuba.txt", &c, &err);
    fclose(f);
    free(copy);
    if (rc) {
        CHECK((rc == TV_EFORMAT || rc == TV_ENOMEM) && err.code == rc);
        CHECK(rc == TV_ENOMEM || strncmp(err.msg, "cuba.txt:", 9) == 0);
        cli_cuba_free(&c);
        return 0;
    }
    CHECK(c.n >= 1 && c.n_exc <= c.n && c.dt > 0);
    CHECK(c.unit.tau_m > 0 && c.unit.tau_exc > 0 && c.unit.tau_inh > 0);
    CHECK(isfinite(c.unit.threshold) && isfinite(c.w_exc) && isfinite(c.w_inh));
    for (size_t j = 0; j < c.n; j++)
        CHECK(isfinite(c.v0[j]));
    for (size_t k = 0; k < c.n_conns; k++) {
        CHECK(c.conns[k].from < c.n && c.conns[k].to < c.n);
        CHECK(k == 0 || c.conns[k - 1].from <= c.conns[k].from);
    }
    for (size_t k = 0; k < c.n_spikes; k++) {
        CHECK((c.spikes[k] & 0xffffffffu) < c.n && (c.spikes[k] >> 32) <= c.steps);
        CHECK(k == 0 || c.spikes[k - 1] <= c.spikes[k]);
    }
    CHECK(c.run_seconds > 0);
    cli_cuba_free(&c);
    return 0;
}
