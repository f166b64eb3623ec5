/* fuzz_csv.c -- libFuzzer target for data_parse_csv_opts (a data set's CSV text).
 * Any bytes must give a set whose sizes agree with what it holds (every label
 * below n_classes, every feature finite), or TV_EINVAL with a message that
 * starts with the file's name; never a crash. Seeds: tests/fuzz/corpus/csv/. */
#include <math.h>

#include "data.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tv_error err = {0};
    char *text = (char *)fuzz_copy(data, size);
    if (!text)
        return 0;
    /* the first byte, when even, asks for 3 classes known in advance; its
     * bits 1 and 2 choose how the first line is taken (auto, yes, no) */
    size_t n_classes = size && !(data[0] & 1) ? 3 : 0;
    struct data_opts o = {.n_classes = n_classes, .header = size ? (data[0] >> 1 & 3) % 3 : 0};
    if (size && data[0] & 8)
        o.classes_from = "the fuzzer's 3";
    struct data_set d;
    int rc = data_parse_csv_opts(text, size, "f.csv", &o, &d, &err);
    CHECK(rc == 0 || (rc == TV_EINVAL && err.code == rc && !strncmp(err.msg, "f.csv", 5)));
    if (!rc) {
        CHECK(d.n_rows > 0 && d.n_features > 0 && d.n_classes > 0 && !d.pixels);
        CHECK(!n_classes || d.n_classes == n_classes);
        for (size_t r = 0; r < d.n_rows; r++) {
            CHECK(d.labels[r] < d.n_classes);
            for (size_t j = 0; j < d.n_features; j++)
                CHECK(isfinite(d.f32[r * d.n_features + j]));
        }
    } else {
        CHECK(d.mem == NULL && d.n_rows == 0);
    }
    data_free(&d);
    free(text);
    return 0;
}
