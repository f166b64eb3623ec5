/* blas.c -- OpenBLAS for `trevo net bench`'s dense baseline (blas.h).
 *
 * Debian's OpenBLAS picks its kernels when the library is loaded, from
 * OPENBLAS_CORETYPE if set, else from its own CPU detection, which gets some
 * CPUs wrong (docs: BENCHMARKS.md) and then runs 2-4x slower: every ratio
 * would flatter us. So when OPENBLAS_CORETYPE is not set, the core type is
 * chosen from the CPU's flags before the library is loaded.
 *
 * OpenBLAS is loaded with dlopen() here only: linked into trevo, it would
 * start a thread pool of one thread per core in every MPI rank at start-up
 * (64 ranks on a 64-core node: 4,096 idle threads) for no use. */
#include "blas.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* The OpenBLAS core type for this CPU's flags, or NULL to leave OpenBLAS's
 * own detection. The AVX-512 kernels need F, BW, VL and DQ. */
static const char *coretype_from_flags(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    if (__builtin_cpu_supports("avx"))
        return "Sandybridge";
#endif
    return NULL;
}

/* Sets OPENBLAS_CORETYPE from the CPU's flags (unless the user set it) and
 * one thread, before the library is loaded. */
void cli_blas_coretype_choose(void)
{
    if (!getenv("OPENBLAS_NUM_THREADS"))
        setenv("OPENBLAS_NUM_THREADS", "1", 1);
    if (getenv("OPENBLAS_CORETYPE"))
        return;
    const char *core = coretype_from_flags();
    if (!core)
        return;
    setenv("OPENBLAS_CORETYPE", core, 1);
    setenv("TREVO_CORETYPE_FROM", "CPU flags", 1);
}

struct cli_blas cli_blas;

int cli_blas_load(struct tv_error *err)
{
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return tv_error_set(err, TV_ENOTFOUND,
                            "cannot load OpenBLAS (%s): the dense baseline needs it "
                            "(Debian: apt-get install libopenblas0)",
                            dlerror());
    *(void **)&cli_blas.sgemv = dlsym(h, "cblas_sgemv");
    *(void **)&cli_blas.sgemm = dlsym(h, "cblas_sgemm");
    *(void **)&cli_blas.set_num_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&cli_blas.get_num_threads = dlsym(h, "openblas_get_num_threads");
    *(void **)&cli_blas.get_corename = dlsym(h, "openblas_get_corename");
    if (!cli_blas.sgemv || !cli_blas.sgemm || !cli_blas.set_num_threads ||
        !cli_blas.get_num_threads || !cli_blas.get_corename)
        return tv_error_set(err, TV_ENOTFOUND,
                            "the OpenBLAS found lacks cblas_sgemv, "
                            "cblas_sgemm or the openblas_* functions");
    return 0;
}

int cli_blas_open(struct tv_error *err)
{
    cli_blas_coretype_choose();
    if (cli_blas_load(err))
        return err->code;
    cli_blas.set_num_threads(1);
    const char *asked = getenv("OPENBLAS_CORETYPE");
    const char *used = cli_blas.get_corename();
    const char *from = getenv("TREVO_CORETYPE_FROM");
    printf("openblas: core %s (OPENBLAS_CORETYPE=%s, %s), %d thread\n", used ? used : "?",
           asked ? asked : "unset",
           asked ? (from ? "set from the CPU flags" : "set by the user")
                 : "OpenBLAS's own detection",
           cli_blas.get_num_threads());
    if (asked && used && strcasecmp(asked, used))
        printf("warning: OpenBLAS uses core %s, not the %s asked for\n", used, asked);
    return 0;
}
