/* ops.c -- the op table, and the op list of a compiled plan.
 *
 * A step runs its plan's ops in order (state.c). The list follows the
 * layers in depth order: before the first layer of each chunk of a tiled
 * plan, the tiles into that chunk; then the neurons of a run of layers from
 * their rows; after each SCATTER layer, its scatter (which ends the run, as
 * the next layer reads what it pushed). A plain network of gather layers is
 * one op.
 */
#include "nn_impl.h"

const struct nn_op_kind nn_ops[NN_OP_COUNT] = {
    [NN_OP_ROWS] = {"rows", nn_rows1, nn_rowsb, NULL},
    [NN_OP_ROWS_LOCAL] = {"rows_local", nn_rows1_local, nn_rowsb_local, NULL},
    [NN_OP_SCATTER] = {"scatter", nn_scatter1, nn_scatterb, NULL},
    [NN_OP_TILES] = {"tiles", nn_tiles1, nn_tilesb, NULL},
    [NN_OP_INT8] = {"int8", nn_int8_1, nn_int8_b, NULL},
    [NN_OP_OBSERVE] = {"observe", nn_observe, nn_observe, NULL},

    [NN_OP_SPIKE] = {"spike", nn_spike_op, nn_spike_op, NULL},
    [NN_OP_CONV] = {"conv", nn_conv_op, nn_conv_op, NULL},
};

static void put_op(struct nn_op *ops, size_t k, uint32_t kind, size_t l0, size_t l1, size_t chunk)
{
    if (ops)
        ops[k] = (struct nn_op){kind, (uint32_t)l0, (uint32_t)l1, (uint32_t)chunk};
}

size_t nn_plan_ops(const struct nn_plan *p, struct nn_op *ops)
{
    size_t k = 0, chunk = 0, l0 = 0;
    uint32_t rows = p->n_chunks ? NN_OP_ROWS_LOCAL : NN_OP_ROWS;
    for (size_t l = 0; l <= p->n_layers; l++) {
        int chunk_starts = chunk < p->n_chunks && l == p->c_layer[chunk];
        /* the run of layers [l0, l) ends here: a layer 0 that scatters has
         * nothing to compute or count */
        int conv = l > 0 && nn_conv_net_has_layer(p->conv, l - 1); /* its channels, after */
        if (l > l0 &&
            (l == p->n_layers || chunk_starts || p->layer_way[l - 1] == NN_WAY_SCATTER || conv)) {
            if (!(l == 1 && p->layer_way[0] == NN_WAY_SCATTER))
                put_op(ops, k++, rows, l0, l, chunk ? chunk - 1 : 0);
            if (conv)
                put_op(ops, k++, NN_OP_CONV, l - 1, l, 0);
            if (p->layer_way[l - 1] == NN_WAY_SCATTER)
                put_op(ops, k++, NN_OP_SCATTER, l - 1, l, 0);
            l0 = l;
        }
        if (chunk_starts)
            put_op(ops, k++, NN_OP_TILES, l, l, chunk++);
    }
    return k;
}
