/* loss.c -- softmax cross-entropy and argmax (train.h): the one place their
 * arithmetic and their rules for ties and non-finite values are written.
 * The trainer's kernels (train_kern.c), fit's test pass, classify's fitness
 * and `trevo net test` all call these two.
 */
#include <math.h>

#include "train.h"

size_t nn_argmax(const float *v, size_t n, size_t stride)
{
    size_t best = n;
    for (size_t k = 0; k < n; k++) {
        float x = v[k * stride];
        if (!isnan(x) && (best == n || x > v[best * stride]))
            best = k;
    }
    return best;
}

double nn_softmax_xent(const float *z, size_t n, size_t stride, size_t label, float *g,
                       size_t gstride, double scale)
{
    double mx = -INFINITY, sum = 0.0;
    for (size_t k = 0; k < n; k++) {
        double o = z[k * stride];
        mx = o > mx ? o : mx;
    }
    for (size_t k = 0; k < n; k++)
        sum += exp((double)z[k * stride] - mx);
    double loss = mx + log(sum) - (double)z[label * stride];
    for (size_t k = 0; g && k < n; k++) {
        double p = exp((double)z[k * stride] - mx) / sum;
        g[k * gstride] = (float)((p - (k == label ? 1.0 : 0.0)) * scale);
    }
    return loss;
}
