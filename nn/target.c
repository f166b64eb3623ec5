/* target.c -- the SIMD targets (nn.h, enum nn_target): which ones this CPU
 * runs, the best of them, and the check every set_target call makes. The
 * kernels themselves are built once per target where they live (kernel.h,
 * conv_impl.h); this file is below all of them. */
#include "nn_impl.h"

/* 1 if this CPU runs code built for target t (enum nn_target). */
int nn_target_supported(int t)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (t == NN_TARGET_AVX512F)
        return __builtin_cpu_supports("avx512f");
    if (t == NN_TARGET_AVX2)
        return __builtin_cpu_supports("avx2");
#endif
    return t == NN_TARGET_DEFAULT;
}

static const char *const nn_target_names[NN_TARGET_COUNT] = {"default", "avx2", "avx512f"};

int nn_target_check(int target, const char *fn, struct tv_error *err)
{
    if (target < 0 || target >= NN_TARGET_COUNT)
        return tv_error_set(err, TV_EINVAL, "%s: unknown target %d", fn, target);
    if (!nn_target_supported(target))
        return tv_error_set(err, TV_EINVAL, "%s: this CPU cannot run %s code", fn,
                            nn_target_names[target]);
    return 0;
}

int nn_target_best(void)
{
    int t = NN_TARGET_COUNT - 1;
    while (!nn_target_supported(t))
        t--;
    return t;
}
