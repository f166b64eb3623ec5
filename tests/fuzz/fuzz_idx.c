/* fuzz_idx.c -- libFuzzer target for data_parse_idx (an IDX images file and
 * its labels file). The input's first byte b is the labels file's length
 * (its last b bytes); the bytes between are the images file. Any
 * bytes must give a set whose sizes agree with the input (n_rows *
 * n_features pixels inside the images, labels below n_classes) or TV_EINVAL
 * with a message naming one of the two files; never a crash. Seeds:
 * tests/fuzz/corpus/idx/. */
#include "data.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tv_error err = {0};
    if (size < 1)
        return 0;
    size_t n_lab = data[0] < size - 1 ? data[0] : size - 1;
    size_t n_img = size - 1 - n_lab;
    uint8_t *img = fuzz_copy(data + 1, n_img);
    uint8_t *lab = fuzz_copy(data + 1 + n_img, n_lab);
    if (img && lab) {
        size_t n_classes = n_lab & 1 ? 5 : 0;
        struct data_set d;
        int rc = data_parse_idx(img, n_img, "i.idx", lab, n_lab, "l.idx", n_classes, &d, &err);
        CHECK(rc == 0 || (rc == TV_EINVAL && err.code == rc &&
                          (!strncmp(err.msg, "i.idx", 5) || !strncmp(err.msg, "l.idx", 5))));
        if (!rc) {
            CHECK(d.pixels && d.n_rows > 0 && d.n_features > 0);
            CHECK(d.n_rows * d.n_features <= n_img && d.n_rows <= n_lab);
            for (size_t r = 0; r < d.n_rows; r++)
                CHECK(d.labels[r] < d.n_classes);
        }
        data_free(&d);
    }
    free(img);
    free(lab);
    return 0;
}
