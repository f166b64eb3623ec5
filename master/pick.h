/*
 * pick.h -- private to master/: which run of a database a command means.
 */
#ifndef TREVO_MASTER_PICK_H
#define TREVO_MASTER_PICK_H

#include "store.h"

/* The run named `name`, or the only run of the database when name is NULL,
 * into *info (release it with store_run_info_release). db names the file in
 * messages. TV_ENOTFOUND for no run of that name (the message lists the
 * runs) or an empty database; TV_EINVAL when name is NULL and the database
 * holds several runs (listed). */
int master_pick_run(struct store *st, const char *db, const char *name, struct store_run_info *info,
                    struct tv_error *err);

#endif
