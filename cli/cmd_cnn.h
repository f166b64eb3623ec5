/* cmd_cnn.h -- private to cli/: sparse convolutional networks for `trevo
 * net init --conv` and `trevo net train` (cmd_cnn.c). */
#ifndef TREVO_CLI_CMD_CNN_H
#define TREVO_CLI_CMD_CNN_H

#include <stddef.h>
#include <stdint.h>

#include "cnn.h"
#include "data.h"
#include "fit.h"
#include "sparsify.h"

#define CLI_CNN_MAX_LAYERS 8

/* --conv "CxHxW,NkK[sS][pP],poolP,...": the input, then convolutions
 * (N filters of KxK, stride S default 1, padding P default 0), each
 * optionally followed by a max pooling. */
struct cli_cnn_spec {
    size_t in_ch, in_h, in_w;
    size_t n_layers;
    struct nn_conv_shape shape[CLI_CNN_MAX_LAYERS];
    size_t pool[CLI_CNN_MAX_LAYERS]; /* 1: none */
    size_t out_size;                 /* pixels of the last pooled map: the head's inputs */
};
/* TV_EINVAL naming the item that does not parse or fit ("--conv: ..."). */
int cli_cnn_spec_parse(const char *text, struct cli_cnn_spec *s, struct tv_error *err);

/* A CNN with its own storage; nn_cnn_desc points into it. */
struct cli_cnn_model {
    size_t n_layers;
    struct nn_cnn_layer layer[CLI_CNN_MAX_LAYERS];
    struct nn_conv_coef *coef[CLI_CNN_MAX_LAYERS];
    float *bias[CLI_CNN_MAX_LAYERS];
    struct genome head; /* inputs 0 .. out_size - 1 */
};
/* A sparse start of spec s: coefficient positions present with probability
 * density[l] per layer, weights N(0, 2 / k) (k the coefficients of the
 * output channel), biases 0, relu; head copied. */
int cli_cnn_model_init(struct cli_cnn_model *m, const struct cli_cnn_spec *s, const double *density,
                       const struct genome *head, uint64_t seed, struct tv_error *err);
void cli_cnn_model_release(struct cli_cnn_model *m);
void cli_cnn_model_desc(const struct cli_cnn_model *m, struct nn_cnn_desc *d);
size_t cli_cnn_model_coefs(const struct cli_cnn_model *m);
size_t cli_cnn_model_dense_coefs(const struct cli_cnn_model *m);

/* --layers of net init --conv: the head's sizes after the convolutions. */
#define CLI_CNN_MAX_HEAD 16
/* The head of spec s: sizes[0..n) after its inputs (s->out_size), layered at
 * head_density (hidden relu, outputs identity), weights as net init scales them. */
int cli_cnn_init_head(const struct cli_cnn_spec *s, const uint32_t *sizes, size_t n_sizes,
                      double head_density, uint64_t seed, struct genome *g, struct tv_error *err);
/* m as a genome with channels (genome.h): inputs 0 .. n-1 (one input channel
 * per input plane), the head's other neurons next (hidden ones at depths in
 * (0.5, 1)), then the pixels of the hidden channels, level by level (depths
 * in (0, 0.5)); filters from the coefficients. g is reset first; validated. */
int cli_cnn_model_to_genome(const struct cli_cnn_model *m, struct genome *g, struct tv_error *err);
/* m as a network file (format text or msgpack; "-" stdout). */
int cli_cnn_model_write(const struct cli_cnn_model *m, const char *format, const char *path,
                        struct tv_error *err);
/* `trevo net train` of a genome with channels: the trainer of nn_cnn_from_genome
 * on DATA (and TEST, both read with --header's header), fit_cnn_run (fit.h) with one
 * line per epoch on stdout, the trained network written back into g. */
int cli_cnn_train_net(struct genome *g, const struct nn_train_opts *o, const struct fit_opts *f,
                      const char *data, const char *labels, const char *test,
                      const char *test_labels, int header, struct tv_error *err);
/* `trevo net init --conv ...` (net init hands over when it sees --conv). */
int cli_cmd_net_init_conv(int argc, char **argv);

#endif
