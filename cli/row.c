/* row.c -- cli_row_parse: one line of comma-separated numbers (the input
 * rows of `trevo net eval`). Any bytes give 0 or an error, never a read
 * outside line[0..len). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define ROW_NUMBER_MAX 63 /* longest number we read ("-1.5e-3" style) */

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Prints at most 24 bytes of s[0..n) into buf, non-printable as '?'. */
static const char *shown(const char *s, size_t n, char *buf)
{
    size_t k = n > 24 ? 24 : n;
    for (size_t i = 0; i < k; i++)
        buf[i] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
    strcpy(buf + k, n > 24 ? "..." : "");
    return buf;
}

int cli_row_parse(const char *line, size_t len, float *vals, size_t n_vals, struct tv_error *err)
{
    size_t got = 0, pos = 0;
    char show[32];
    for (;;) {
        size_t a = pos;
        while (a < len && line[a] != ',')
            a++;
        /* field [pos, a), trimmed */
        size_t b = pos, e = a;
        while (b < e && is_blank(line[b]))
            b++;
        while (e > b && is_blank(line[e - 1]))
            e--;
        if (b == e) {
            if (a == len && got == 0 && pos == 0)
                break; /* an empty line: no values */
            return tv_error_set(err, TV_EINVAL, "value %zu: empty", got + 1);
        }
        if (got >= n_vals) {
            size_t total = got;
            for (size_t q = pos; q <= len; q++) /* count the remaining fields */
                if (q == len || line[q] == ',')
                    total++;
            return tv_error_set(err, TV_EINVAL, "expected %zu numbers, got %zu", n_vals, total);
        }
        char num[ROW_NUMBER_MAX + 1];
        if (e - b > ROW_NUMBER_MAX)
            return tv_error_set(err, TV_EINVAL, "value %zu ('%s'): not a number (too long)",
                                got + 1, shown(line + b, e - b, show));
        memcpy(num, line + b, e - b);
        num[e - b] = '\0';
        char *end;
        errno = 0;
        float v = strtof(num, &end);
        if (end == num || *end != '\0')
            return tv_error_set(err, TV_EINVAL, "value %zu ('%s'): not a number", got + 1,
                                shown(line + b, e - b, show));
        if (!isfinite(v))
            return tv_error_set(err, TV_EINVAL, "value %zu ('%s'): not a finite float", got + 1,
                                shown(line + b, e - b, show));
        vals[got++] = v;
        if (a == len)
            break;
        pos = a + 1;
    }
    if (got != n_vals)
        return tv_error_set(err, TV_EINVAL, "expected %zu numbers, got %zu", n_vals, got);
    return 0;
}
