/* fuzz_conv_spec.c -- libFuzzer target for cli_cnn_spec_parse, the spec of
 * `trevo net init --conv`. Any input must give 0, or TV_EINVAL / TV_ELIMIT
 * with a message that starts with "--conv", never a crash; a parsed spec
 * must be within the genome's limits and chain: each layer reads the pooled
 * map of the one before, and the head's inputs are the last pooled map.
 * Seeds: tests/fuzz/corpus/conv_spec/. */
#include "cmd_cnn.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_string(data, size, 256);
    if (!text)
        return 0;
    struct tv_error err = {0};
    struct cli_cnn_spec s;
    int rc = cli_cnn_spec_parse(text, &s, &err);
    free(text);
    if (rc) {
        CHECK((rc == TV_EINVAL || rc == TV_ELIMIT) && err.code == rc);
        CHECK(strncmp(err.msg, "--conv", 6) == 0);
        return 0;
    }
    CHECK(s.n_layers >= 1 && s.n_layers <= CLI_CNN_MAX_LAYERS);
    CHECK(s.in_ch >= 1 && s.in_ch <= GENOME_MAX_CHANNELS);
    CHECK(s.in_h >= 1 && s.in_h <= GENOME_CHANNEL_MAX_SIDE);
    CHECK(s.in_w >= 1 && s.in_w <= GENOME_CHANNEL_MAX_SIDE);
    size_t ch = s.in_ch, h = s.in_h, w = s.in_w;
    for (size_t i = 0; i < s.n_layers; i++) {
        const struct nn_conv_shape *c = &s.shape[i];
        CHECK(c->in_ch == ch && c->in_h == h && c->in_w == w);
        CHECK(c->out_ch >= 1 && c->out_ch <= GENOME_MAX_CHANNELS);
        CHECK(c->k_h >= 1 && c->k_h <= GENOME_FILTER_MAX_K && c->k_w == c->k_h);
        CHECK(c->stride >= 1 && c->stride <= GENOME_FILTER_MAX_STRIDE && c->pad < c->k_h);
        CHECK(s.pool[i] >= 1 && s.pool[i] <= GENOME_POOL_MAX);
        size_t oh = nn_conv_out_h(c), ow = nn_conv_out_w(c);
        CHECK(oh >= s.pool[i] && ow >= s.pool[i]);
        ch = c->out_ch;
        h = oh / s.pool[i];
        w = ow / s.pool[i];
        CHECK(h >= 1 && w >= 1 && h <= GENOME_CHANNEL_MAX_SIDE && w <= GENOME_CHANNEL_MAX_SIDE);
    }
    CHECK(s.out_size == ch * h * w);
    return 0;
}
