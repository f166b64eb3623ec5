/* int8_op.c -- the op NN_OP_INT8 as nn/ops.c sees it: its kernels per
 * target (nn_int8_1, nn_int8_b), and the reads of an int8 plan's state (the
 * dequantized outputs at batches, the int8 outputs). Apart from the
 * kernels (int8_step.c, int8_avx512.c), which it points to and calls,
 * never the other way.
 */
#include <string.h>

#include "int8_impl.h"

int nn_plan_is_int8(const struct nn_plan *p)
{
    return p->n_ops == 1 && p->ops[0].kind == NN_OP_INT8;
}

int nn_int8_uses_vnni(int target)
{
    return target == NN_TARGET_AVX512F && nn_int8_has_vnni();
}

nn_op_fn *const nn_int8_1[NN_TARGET_COUNT] = {nn_int8_one, nn_int8_one, nn_int8_one_avx512f};
nn_op_fn *const nn_int8_b[NN_TARGET_COUNT] = {nn_int8_batch, nn_int8_batch, nn_int8_batch_avx512f};

void nn_int8_read(const struct nn_state *s, float *out)
{
    const struct nn_qflat *f = &((const struct nn_qplan *)s->plan)->f;
    const uint8_t *u = values(s);
    size_t st = s->stride, n_out = f->n_out;
    if (s->steps == 0) { /* new or reset: 0, as nn.h promises (and batch 1 gives) */
        memset(out, 0, s->batch * n_out * sizeof *out);
        return;
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (s->target == NN_TARGET_AVX512F && nn_int8_has_vnni()) {
        nn_int8_dcols_avx512(u, f->out_map, n_out, s->batch, st, out, f->out_scale, f->out_zp);
        return;
    }
#endif
    for (size_t b0 = 0; b0 < s->batch; b0 += 16) /* tiles, as qcols */
        for (size_t k0 = 0; k0 < n_out; k0 += 16)
            for (size_t b = b0; b < b0 + 16 && b < s->batch; b++)
                for (size_t k = k0; k < k0 + 16 && k < n_out; k++)
                    out[b * n_out + k] =
                        (float)((int32_t)u[(size_t)f->out_map[k] * st + b] - 128 - f->out_zp) *
                        f->out_scale;
}

void nn_qstate_read_int8(const struct nn_state *s, int8_t *out)
{
    const struct nn_plan *p = s->plan;
    const uint8_t *cur = values(s);
    for (size_t b = 0; b < s->batch; b++)
        for (size_t k = 0; k < p->n_out; k++)
            out[b * p->n_out + k] =
                (int8_t)((int32_t)cur[(size_t)p->out_map[k] * s->stride + b] - 128);
}
