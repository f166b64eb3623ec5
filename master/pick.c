/* pick.c -- master_pick_run (pick.h): one message for every command. */
#include "pick.h"

#include <stdio.h>
#include <string.h>

/* "a, b, c" (the runs of the database), cut short to fit. */
static void runs_text(const struct store_run_info *runs, size_t n, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(out + len, size - len, "%s'%s'", i ? ", " : "", runs[i].name);
        if (k < 0 || (size_t)k >= size - len) {
            memcpy(out + size - 4, "...", 4); /* size >= 4: cut what did not fit */
            return;
        }
        len += (size_t)k;
    }
}

int master_pick_run(struct store *st, const char *db, const char *name, struct store_run_info *info,
                    struct tv_error *err)
{
    struct store_run_info *runs = NULL;
    size_t n = 0;
    char list[256];
    int rc = store_runs_list(st, &runs, &n, err);
    if (rc)
        return rc;
    runs_text(runs, n, list, sizeof list);
    if (!name && n == 0)
        rc = tv_error_set(err, TV_ENOTFOUND, "%s holds no runs", db);
    else if (!name && n > 1)
        rc = tv_error_set(err, TV_EINVAL, "%s holds %zu runs (%s): say which with --name", db, n,
                          list);
    else
        rc = store_run_get(st, name ? name : runs[0].name, info, err);
    if (rc == TV_ENOTFOUND && name)
        tv_error_set(err, rc, "%s: no run named '%s' (runs: %s)", db, name, list);
    store_runs_free(runs, n);
    return rc;
}
