/* fuzz_qnet.c -- libFuzzer target for nn_qnet_read, the parser of NET.q
 * files. Any bytes must give 0 or TV_EFORMAT / TV_ENOMEM with a message,
 * never a crash; whatever is accepted must write back to text that reads to
 * the same text, and must run safely through the int8 engine (batch 1 and
 * a batch of 17) for a few steps. */
#include "fuzz.h"
#include "quant.h"

/* The work of q's channels in one step (pixels of their maps, times
 * coefficients): small enough to run here. */
static int small_channels(const struct nn_qnet *q)
{
    size_t px = 0;
    for (size_t i = 0; i < q->n_chans; i++)
        px += (size_t)q->chans[i].h * q->chans[i].w;
    return px <= 65536 && q->n_coefs <= 4096;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = (char *)fuzz_copy(data, size);
    if (!text)
        return 0;
    struct tv_error err = {0};
    struct nn_qnet *q = NULL, *r = NULL;
    int rc = nn_qnet_read(text, size, "fuzz.q", &q, &err);
    CHECK(rc == 0 || ((rc == TV_EFORMAT || rc == TV_ENOMEM) && err.code == rc && err.msg[0]));
    if (rc) {
        free(text);
        return 0;
    }
    struct tv_buf a = {0}, b = {0};
    CHECK(nn_qnet_write(q, &a, &err) == 0);
    CHECK(nn_qnet_read((const char *)a.data, a.len, "again.q", &r, &err) == 0);
    CHECK(nn_qnet_write(r, &b, &err) == 0);
    CHECK(a.len == b.len && !memcmp(a.data, b.data, a.len));
    struct nn_plan *p = NULL;
    if (q->n <= 4096 && q->n_edges <= 65536 && small_channels(q) &&
        nn_qplan_compile(q, &p, &err) == 0) {
        for (size_t batch = 1; batch <= 17; batch += 16) {
            struct nn_state *s;
            if (nn_state_new(p, batch, &s, &err))
                continue;
            float *in = calloc(batch * q->n_in, sizeof *in);
            float *out = calloc(batch * q->n_out, sizeof *out);
            for (size_t t = 0; in && out && t < 3; t++) {
                for (size_t i = 0; i < batch * q->n_in; i++)
                    in[i] = (float)((int)((i * 7 + t) % 11) - 5);
                nn_step(s, in, out);
            }
            free(in);
            free(out);
            nn_state_free(s);
        }
        nn_plan_free(p);
    }
    tv_buf_free(&a);
    tv_buf_free(&b);
    nn_qnet_free(q);
    nn_qnet_free(r);
    free(text);
    return 0;
}
