/* test_store.c -- store/: schema creation and re-open, round trips of
 * individuals, genomes and checkpoints, refusal of foreign, newer and
 * damaged files (left byte-identical), full disk, one writer per run, a
 * writer killed with SIGKILL at random moments, and a reader beside a
 * committing writer. Every database lives in a mkdtemp directory. */
#define _GNU_SOURCE /* unshare() for the full-disk test */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store.h"
#include "testutil.h"

/* ---- fixtures ----------------------------------------------------------- */

struct fx {
    char dir[64];
    char path[128];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    const char *tmp = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/trevo-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/run.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof p, "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static struct store *open_new(const char *path)
{
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options o = {.flags = STORE_CREATE};
    assert_ok(store_open(path, &o, &s, &err), &err);
    return s;
}

static struct store *open_flags(const char *path, unsigned flags)
{
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options o = {.flags = flags};
    assert_ok(store_open(path, &o, &s, &err), &err);
    return s;
}

static int64_t new_run(struct store *s, const char *name)
{
    struct tv_error err = {0};
    int64_t run = -1;
    assert_ok(store_run_create(s, name, "[run]\npop = 4\n", 42, "trevo-test", &run, &err), &err);
    return run;
}

/* ---- deterministic individuals: everything follows from the id ---------- */

struct ind {
    struct store_individual row;
    struct tv_buf bytes; /* owned genome bytes */
};

static double fitness_of(int64_t id)
{
    return (double)(tv_mix64((uint64_t)id) >> 11) * 0x1.0p-53 * 16.0;
}

/* A small genome made from the id: a minimal net mutated a few times, so
 * that sizes, skip and recurrent counts vary. */
static void genome_of(int64_t id, struct genome *g)
{
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(7, (uint64_t)id, 0);
    assert_ok(
        genome_build_minimal(g, 2 + (uint32_t)(id % 3), 1, GENOME_ACT_SIGMOID, 1.0, &rng, &err),
        &err);
    struct genome_mutation m = tu_aggressive_mutation();
    uint32_t n = (uint32_t)(id % 5);
    for (uint32_t i = 0; i < n; i++)
        assert_ok(genome_mutate(g, &m, &rng, &err), &err);
}

static void make_ind(int64_t id, int64_t generation, int64_t id0_of_gen, struct ind *out)
{
    struct tv_error err = {0};
    struct genome *g = genome_new();
    assert_non_null(g);
    genome_of(id, g);
    memset(out, 0, sizeof *out);
    assert_ok(genome_encode(g, &out->bytes, &err), &err);
    struct genome_stats st;
    assert_ok(genome_stats(g, &st, &err), &err);
    struct store_individual *r = &out->row;
    r->id = id;
    r->generation = generation;
    r->fitness = (id % 11 == 5) ? NAN : fitness_of(id);
    r->parent1 = generation == 0 ? STORE_ID_NONE : id0_of_gen - 1 - (id % 3);
    r->parent2 = generation == 0 || id % 2 ? STORE_ID_NONE : id0_of_gen - 1 - (id % 4);
    r->op = generation == 0 ? STORE_OP_INIT : (id % 2 ? STORE_OP_MUTATE : STORE_OP_CROSSOVER);
    r->species = id % 3;
    r->n_neurons = (uint32_t)st.n_neurons;
    r->n_conns = (uint32_t)st.n_conns;
    r->n_skip = (uint32_t)st.n_skip;
    r->n_recurrent = (uint32_t)st.n_recurrent;
    r->eval_seconds = 0.001 * (double)(id % 7);
    r->rank = (int32_t)(1 + id % 4);
    r->solved = id % 13 == 0;
    /* objectives: some unknown (NaN, stored NULL) */
    r->valid_acc = id % 11 == 5 ? NAN : 0.25 + 0.125 * (double)(id % 5);
    r->flash = id % 7 == 3 ? NAN : (double)(1000 + 37 * id);
    r->ram = id % 7 == 3 ? NAN : (double)(64 + id);
    r->macs = id % 6 == 1 ? NAN : (double)(900 + 31 * id);
    r->genome = out->bytes.data;
    r->genome_len = out->bytes.len;
    genome_free(g);
}

/* rows of ids [id0, id0 + n) of one generation, as an array */
static struct store_individual *make_rows(int64_t id0, size_t n, int64_t generation,
                                          int64_t gen_id0, struct ind **keep)
{
    struct ind *inds = calloc(n, sizeof *inds);
    struct store_individual *rows = calloc(n, sizeof *rows);
    assert_true(inds && rows);
    for (size_t i = 0; i < n; i++) {
        make_ind(id0 + (int64_t)i, generation, gen_id0, &inds[i]);
        rows[i] = inds[i].row;
    }
    *keep = inds;
    return rows;
}

static void free_rows(struct store_individual *rows, struct ind *inds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tv_buf_free(&inds[i].bytes);
    TV_FREE_ALL(inds, rows);
}

/* Set while rows are read from a file of version 5 or older: they have no
 * objectives (read back as NaN). */
static int rows_of_old_file;

/* a and b are the same number, or both NaN. */
static void assert_same_or_nan(double a, double b)
{
    if (isnan(a))
        assert_true(isnan(b));
    else
        assert_true(a == b);
}

static void assert_same_row(const struct store_individual *a, const struct store_individual *b)
{
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->generation, b->generation);
    if (isnan(a->fitness))
        assert_true(isnan(b->fitness));
    else
        assert_true(a->fitness == b->fitness);
    assert_int_equal(a->parent1, b->parent1);
    assert_int_equal(a->parent2, b->parent2);
    assert_int_equal(a->op, b->op);
    assert_int_equal(a->species, b->species);
    assert_int_equal(a->n_neurons, b->n_neurons);
    assert_int_equal(a->n_conns, b->n_conns);
    assert_int_equal(a->n_skip, b->n_skip);
    assert_int_equal(a->n_recurrent, b->n_recurrent);
    assert_true(a->eval_seconds == b->eval_seconds);
    assert_int_equal(a->rank, b->rank);
    assert_int_equal(a->solved, b->solved);
    const double want[4] = {a->valid_acc, a->flash, a->ram, a->macs};
    const double got[4] = {b->valid_acc, b->flash, b->ram, b->macs};
    for (int k = 0; k < 4; k++)
        assert_same_or_nan(rows_of_old_file ? NAN : want[k], got[k]);
}

/* The row a deterministic writer made for id, compared with what was read. */
static void assert_row_is(const struct store_individual *got, int64_t id, int64_t generation,
                          int64_t gen_id0)
{
    struct ind want;
    make_ind(id, generation, gen_id0, &want);
    assert_same_row(&want.row, got);
    if (got->genome) {
        assert_int_equal(got->genome_len, want.row.genome_len);
        assert_memory_equal(got->genome, want.row.genome, want.row.genome_len);
    }
    tv_buf_free(&want.bytes);
}

/* ---- raw SQLite and file helpers ---------------------------------------- */

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
        print_error("SQL error: %s in %s\n", sqlite3_errmsg(db), sql);
        fail();
    }
    int rc = sqlite3_step(q);
    int64_t v = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -999;
    sqlite3_finalize(q);
    return v;
}

static void raw_text(sqlite3 *db, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    out[0] = '\0';
    if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
}

static void raw_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        print_error("SQL error: %s in %s\n", msg ? msg : "?", sql);
        sqlite3_free(msg);
        fail();
    }
}

static void assert_integrity_ok(const char *path)
{
    sqlite3 *db = raw_open(path);
    char res[256];
    raw_text(db, "PRAGMA integrity_check", res, sizeof res);
    sqlite3_close(db);
    if (strcmp(res, "ok") != 0) {
        print_error("integrity_check: %s\n", res);
        fail();
    }
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)n + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* fork() with a pipe from the child to the parent: 0 in the child (which
 * ends with _exit), *fd the write end; the child's pid in the parent, *fd
 * the read end. */
static pid_t fork_piped(int *fd)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    close(p[pid == 0 ? 0 : 1]);
    *fd = p[pid == 0 ? 1 : 0];
    return pid;
}

/* Opening `path` must fail with code and a message containing sub, and leave
 * the file byte-identical, with no -wal, -shm, -lock or -journal made or
 * removed beside it. */
static void assert_refused_untouched(const char *path, unsigned flags, int code, const char *sub)
{
    size_t n0, n1;
    unsigned char *before = slurp(path, &n0);
    char side[256];
    static const char *const sfx[] = {"-wal", "-shm", "-lock", "-journal"};
    int had[4];
    for (size_t i = 0; i < 4; i++) {
        snprintf(side, sizeof side, "%s%s", path, sfx[i]);
        had[i] = exists(side);
    }
    struct tv_error err = {0};
    struct store *s = (struct store *)1;
    struct store_options o = {.flags = flags};
    int rc = store_open(path, &o, &s, &err);
    assert_error(rc, &err, code, sub);
    assert_null(s);
    assert_msg_has(&err, path);
    unsigned char *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    for (size_t i = 0; i < 4; i++) {
        snprintf(side, sizeof side, "%s%s", path, sfx[i]);
        if (exists(side) != had[i]) {
            print_error("%s was created\n", side);
            fail();
        }
    }
    TV_FREE_ALL(before, after);
}

/* A closed database with one run of two closed generations. */
static void make_small_db(const char *path)
{
    struct tv_error err = {0};
    struct store *s = open_new(path);
    int64_t run = new_run(s, "xor");
    for (int64_t g = 0; g < 2; g++) {
        struct ind *inds;
        struct store_individual *rows = make_rows(g * 20, 20, g, g * 20, &inds);
        assert_ok(store_add_individuals(s, run, rows, 20, &err), &err);
        int64_t pop[20];
        for (int i = 0; i < 20; i++)
            pop[i] = g * 20 + i;
        struct store_generation gen = {.generation = g,
                                       .best = 1,
                                       .champion = g * 20,
                                       .state = "s",
                                       .state_len = 1,
                                       .population = pop,
                                       .n_population = 20};
        assert_ok(store_generation_close(s, run, &gen, &err), &err);
        free_rows(rows, inds, 20);
    }
    assert_ok(store_close(s, &err), &err);
}

/* Generation gen of run holds n individuals. */
static void assert_n_loaded(struct store *s, int64_t run, int64_t gen, size_t n)
{
    struct tv_error err = {0};
    struct store_set set;
    assert_ok(store_individuals_load(s, run, gen, 0, &set, &err), &err);
    assert_int_equal(set.n, n);
    store_set_release(&set);
}

/* ---- store_open / store_close ------------------------------------------- */

static void test_store_open_creates_schema(void **state)
{
    struct fx *f = *state;
    struct store *s = open_new(f->path);
    assert_string_equal(store_path(s), f->path);
    struct tv_error err = {0};
    assert_ok(store_close(s, &err), &err);

    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "PRAGMA page_size"), 16384);
    assert_int_equal(raw_int(db, "PRAGMA application_id"), STORE_APPLICATION_ID);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    char mode[32];
    raw_text(db, "PRAGMA journal_mode", mode, sizeof mode);
    assert_string_equal(mode, "wal");
    static const char *const names[] = {"trevo_meta",
                                        "runs",
                                        "operators",
                                        "individuals",
                                        "genomes",
                                        "generations",
                                        "species",
                                        "checkpoints",
                                        "individuals_by_generation",
                                        "v_runs",
                                        "v_individuals",
                                        "v_progress",
                                        "v_champions",
                                        "v_champion_lineage",
                                        "v_species_sizes",
                                        "v_complexity",
                                        "v_checkpoints"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char sql[200];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_schema WHERE name = '%s'", names[i]);
        if (raw_int(db, sql) != 1) {
            print_error("missing %s\n", names[i]);
            fail();
        }
    }
    char v[32], want[32];
    raw_text(db, "SELECT value FROM trevo_meta WHERE key = 'schema_version'", v, sizeof v);
    snprintf(want, sizeof want, "%d", STORE_SCHEMA_VERSION);
    assert_string_equal(v, want);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM operators"), 6);
    sqlite3_close(db);
    /* the WAL was truncated on close */
    char wal[200];
    snprintf(wal, sizeof wal, "%s-wal", f->path);
    assert_true(file_size(wal) <= 0);
}

static void test_store_open_reopens_existing(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    struct tv_error err = {0};
    for (int k = 0; k < 2; k++) { /* with and without STORE_CREATE */
        struct store *s = open_flags(f->path, k ? STORE_CREATE : 0);
        struct store_run_info info;
        assert_ok(store_run_get(s, "xor", &info, &err), &err);
        assert_int_equal(info.last_generation, 1);
        assert_int_equal(info.seed, 42);
        assert_int_equal(info.status, STORE_RUNNING);
        assert_string_equal(info.config, "[run]\npop = 4\n");
        assert_string_equal(info.program_version, "trevo-test");
        assert_int_equal(info.has_writer, 0);
        assert_true(strlen(info.created_at) >= 20);
        int64_t run = info.run_id;
        store_run_info_release(&info);
        struct store_set set;
        assert_ok(store_individuals_load(s, run, 1, 1, &set, &err), &err);
        assert_int_equal(set.n, 20);
        for (size_t i = 0; i < set.n; i++)
            assert_row_is(&set.rows[i], 20 + (int64_t)i, 1, 20);
        store_set_release(&set);
        assert_ok(store_close(s, &err), &err);
    }
    assert_integrity_ok(f->path);
}

/* Undoes version 6 (the objectives, v_front_gen; v_individuals as it was is
 * made again by the migration) and version 5 (generations.failed). */
#define DROP_OBJECTIVES                                                                            \
    "DROP VIEW v_front_gen; DROP VIEW v_individuals; CREATE VIEW v_individuals AS SELECT 1;"       \
    " ALTER TABLE individuals DROP COLUMN valid_acc; ALTER TABLE individuals DROP COLUMN flash;"   \
    " ALTER TABLE individuals DROP COLUMN ram; ALTER TABLE individuals DROP COLUMN macs;"
#define DROP_FAILED DROP_OBJECTIVES " ALTER TABLE generations DROP COLUMN failed;"

/* Makes the database at path look as schema version 1 made it. */
static void downgrade_to_v1(const char *path)
{
    sqlite3 *db = raw_open(path);
    raw_exec(db, "BEGIN; " DROP_FAILED " DROP VIEW v_front; DROP TABLE run_notes;"
                 " DROP INDEX individuals_by_generation;"
                 " CREATE INDEX individuals_by_generation ON individuals(run_id, generation,"
                 " fitness); UPDATE trevo_meta SET value = 1 WHERE key = 'schema_version';"
                 " PRAGMA user_version = 1; COMMIT;");
    sqlite3_close(db);
}

/* Makes the file at path look like schema version `version`: drop (SQL)
 * undoes what the later versions added. */
static void downgrade_to(const char *path, int version, const char *drop)
{
    char sql[600];
    snprintf(sql, sizeof sql,
             "BEGIN; %s UPDATE trevo_meta SET value = %d WHERE key = 'schema_version';"
             " PRAGMA user_version = %d; COMMIT;",
             drop, version, version);
    sqlite3 *db = raw_open(path);
    raw_exec(db, sql);
    sqlite3_close(db);
}

static void assert_index_is(const char *path, const char *columns)
{
    sqlite3 *db = raw_open(path);
    char sql[300];
    raw_text(db, "SELECT sql FROM sqlite_schema WHERE name = 'individuals_by_generation'", sql,
             sizeof sql);
    if (!strstr(sql, columns)) {
        print_error("index: %s; expected (%s)\n", sql, columns);
        fail();
    }
    sqlite3_close(db);
}

/* A version 1 file is read as it is, and migrated to the current version
 * (its index rebuilt in id order) when opened for writing. */
static void test_store_open_migrates_version_1(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    downgrade_to_v1(f->path);
    size_t n0, n1;
    unsigned char *before = slurp(f->path, &n0);
    struct store *s = open_flags(f->path, STORE_READONLY);
    struct store_checkpoint c;
    int64_t run = 1;
    assert_ok(store_checkpoint_load(s, run, &c, &err), &err);
    assert_int_equal(c.population.n, 20);
    store_checkpoint_release(&c);
    struct store_set set;
    assert_ok(store_individuals_load(s, run, 1, 0, &set, &err), &err);
    assert_int_equal(set.n, 20);
    rows_of_old_file = 1;
    for (size_t i = 0; i < set.n; i++)
        assert_row_is(&set.rows[i], 20 + (int64_t)i, 1, 20);
    rows_of_old_file = 0;
    store_set_release(&set);
    assert_ok(store_close(s, &err), &err);
    unsigned char *after = slurp(f->path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0); /* read-only: not migrated */
    TV_FREE_ALL(before, after);
    assert_index_is(f->path, "(run_id, generation, fitness)");

    s = open_flags(f->path, 0);
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    assert_ok(store_checkpoint_load(s, run, &c, &err), &err);
    assert_int_equal(c.generation, 1);
    assert_int_equal(c.population.n, 20);
    store_checkpoint_release(&c);
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(raw_int(db, "SELECT value FROM trevo_meta WHERE key = 'schema_version'"),
                     STORE_SCHEMA_VERSION);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM individuals"), 40);
    sqlite3_close(db);
    assert_index_is(f->path, "(run_id, generation, id, fitness)");
    assert_integrity_ok(f->path);
}

/* A file whose index individuals_by_generation was dropped by hand still
 * opens and answers, only slower. */
static void test_store_open_without_generation_index(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "DROP INDEX individuals_by_generation");
    sqlite3_close(db);
    for (int k = 0; k < 2; k++) {
        struct store *s = open_flags(f->path, k ? STORE_READONLY : 0);
        struct store_set set;
        assert_ok(store_individuals_load(s, 1, 1, 1, &set, &err), &err);
        assert_int_equal(set.n, 20);
        for (size_t i = 0; i < set.n; i++)
            assert_row_is(&set.rows[i], 20 + (int64_t)i, 1, 20);
        store_set_release(&set);
        struct store_checkpoint c;
        assert_ok(store_checkpoint_load(s, 1, &c, &err), &err);
        assert_int_equal(c.generation, 1);
        assert_int_equal(c.population.n, 20);
        assert_int_equal(c.pending.n, 0);
        store_checkpoint_release(&c);
        assert_ok(store_close(s, &err), &err);
    }
}

static uint64_t quick_checks_of(const char *path, unsigned flags)
{
    struct tv_error err = {0};
    struct store *s = open_flags(path, flags);
    struct store_counters c;
    store_counters_get(s, &c);
    assert_ok(store_close(s, &err), &err);
    return c.quick_checks;
}

/* A small file is checked whole, in one PRAGMA quick_check, at every open
 * that does not opt out; a file being created has nothing to check. */
static void test_store_open_counts_quick_checks(void **state)
{
    struct fx *f = *state;
    assert_int_equal(quick_checks_of(f->path, STORE_CREATE), 0);
    make_small_db(f->path);
    assert_int_equal(quick_checks_of(f->path, 0), 1);
    assert_int_equal(quick_checks_of(f->path, STORE_READONLY), 1);
    assert_int_equal(quick_checks_of(f->path, STORE_CHECK_FULL), 1);
    assert_int_equal(quick_checks_of(f->path, STORE_NO_CHECK), 0);
}

static void test_store_open_missing_file_fails_without_create(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = NULL;
    assert_error(store_open(f->path, NULL, &s, &err), &err, TV_ENOTFOUND, "no such database");
    assert_msg_has(&err, f->path);
    assert_null(s);
    assert_false(exists(f->path));
}

static void test_store_open_bad_arguments_fail(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = NULL;
    assert_error(store_open("", NULL, &s, &err), &err, TV_EINVAL, "no path");
    struct store_options o = {.flags = STORE_CREATE | STORE_READONLY};
    assert_error(store_open(f->path, &o, &s, &err), &err, TV_EINVAL, "read-only");
    assert_error(store_open(f->dir, NULL, &s, &err), &err, TV_EFORMAT, "not a regular file");
}

static void test_store_open_refuses_foreign_file(void **state)
{
    struct fx *f = *state;
    unsigned char junk[5000];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(tv_mix64(i) & 0xff);
    spit(f->path, junk, sizeof junk);
    assert_refused_untouched(f->path, 0, TV_EFORMAT, "not a trevo database (not an SQLite file)");
    assert_refused_untouched(f->path, STORE_CREATE, TV_EFORMAT, "not an SQLite file");
    spit(f->path, "SQLite", 6); /* too short for a header */
    assert_refused_untouched(f->path, STORE_CREATE, TV_EFORMAT, "not an SQLite file");
    /* an empty file is only accepted to be created in */
    spit(f->path, "", 0);
    assert_refused_untouched(f->path, 0, TV_EFORMAT, "empty");
}

static void test_store_open_refuses_foreign_sqlite(void **state)
{
    struct fx *f = *state;
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "CREATE TABLE notes(x); INSERT INTO notes VALUES ('mine');");
    sqlite3_close(db);
    assert_refused_untouched(f->path, 0, TV_EFORMAT, "another program");
    assert_refused_untouched(f->path, STORE_CREATE, TV_EFORMAT, "not a trevo database");
    /* our application id but no trevo_meta */
    db = raw_open(f->path);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d", STORE_APPLICATION_ID);
    raw_exec(db, sql);
    sqlite3_close(db);
    assert_refused_untouched(f->path, 0, TV_EFORMAT, "not a trevo database (no trevo_meta table)");
}

static void test_store_open_refuses_newer_schema(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "PRAGMA user_version = 7");
    sqlite3_close(db); /* last connection: checkpoints and removes the WAL */
    assert_refused_untouched(f->path, 0, TV_EFORMAT, "schema version 7 is newer");
    assert_refused_untouched(f->path, STORE_CREATE | STORE_SYNC_FULL, TV_EFORMAT, "newer trevo");
}

static void test_store_open_refuses_corrupt_file(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    size_t n;
    unsigned char *bytes = slurp(f->path, &n);
    assert_true(n >= 6 * 16384);
    /* Overwrite one b-tree page in the middle (not page 1) with garbage. */
    size_t page = n / 16384 / 2;
    if (page < 2)
        page = 2;
    for (size_t i = 0; i < 16384; i++)
        bytes[page * 16384 + i] = (unsigned char)(0x5a ^ (i * 7));
    spit(f->path, bytes, n);
    free(bytes);
    assert_refused_untouched(f->path, 0, TV_ECORRUPT, "damaged database");
    assert_refused_untouched(f->path, STORE_READONLY, TV_ECORRUPT, "damaged");
}

/* A file cut short: not a whole number of pages, or whole pages but fewer
 * than its header counts (SQLite itself would read the missing ones as
 * zeros). */
static void test_store_open_refuses_truncated_file(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    size_t n;
    unsigned char *bytes = slurp(f->path, &n);
    assert_true(n >= 4 * 16384);
    spit(f->path, bytes, n - 1000);
    assert_refused_untouched(f->path, 0, TV_ECORRUPT, "truncated");
    spit(f->path, bytes, n - 2 * 16384);
    assert_refused_untouched(f->path, 0, TV_ECORRUPT, "truncated");
    assert_refused_untouched(f->path, STORE_READONLY, TV_ECORRUPT, "header counts");
    free(bytes);
}

static void test_store_open_refuses_damaged_schema_page(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    size_t n;
    unsigned char *bytes = slurp(f->path, &n);
    /* page 1 past the 100-byte header holds sqlite_schema */
    for (size_t i = 100; i < 16384; i++)
        bytes[i] = (unsigned char)(i * 13);
    spit(f->path, bytes, n);
    free(bytes);
    assert_refused_untouched(f->path, 0, TV_ECORRUPT, "damaged database");
}

static void test_store_open_initialises_empty_file(void **state)
{
    struct fx *f = *state;
    spit(f->path, "", 0);
    struct store *s = open_new(f->path);
    struct tv_error err = {0};
    new_run(s, "a");
    assert_ok(store_close(s, &err), &err);
    assert_integrity_ok(f->path);
}

static void test_store_open_readonly_refuses_writes(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    struct store *s = open_flags(f->path, STORE_READONLY);
    struct tv_error err = {0};
    int64_t run = -1;
    assert_error(store_run_create(s, "b", "", 1, "v", &run, &err), &err, TV_ESTATE, "read-only");
    assert_error(store_run_resume(s, "xor", &run, &err), &err, TV_ESTATE, "read-only");
    struct ind one;
    make_ind(1000, 5, 1000, &one);
    assert_error(store_add_individuals(s, 1, &one.row, 1, &err), &err, TV_ESTATE, "read-only");
    tv_buf_free(&one.bytes);
    assert_ok(store_close(s, &err), &err);
}

static void test_store_close_null_is_noop(void **state)
{
    (void)state;
    struct tv_error err = {0};
    assert_int_equal(store_close(NULL, &err), 0);
}

/* ---- runs --------------------------------------------------------------- */

static void test_store_run_create_duplicate_name_fails(void **state)
{
    struct fx *f = *state;
    struct store *s = open_new(f->path);
    struct tv_error err = {0};
    new_run(s, "xor");
    int64_t run = -1;
    assert_error(store_run_create(s, "xor", "", 1, "v", &run, &err), &err, TV_ESTATE,
                 "run 'xor' exists already");
    assert_error(store_run_create(s, "", "", 1, "v", &run, &err), &err, TV_EINVAL, "required");
    assert_error(store_run_create(s, "n", NULL, 1, "v", &run, &err), &err, TV_EINVAL, "required");
    assert_ok(store_close(s, &err), &err);
}

static void test_store_run_resume_unknown_run_fails(void **state)
{
    struct fx *f = *state;
    struct store *s = open_new(f->path);
    struct tv_error err = {0};
    int64_t run = -1;
    assert_error(store_run_resume(s, "nope", &run, &err), &err, TV_ENOTFOUND,
                 "no run named 'nope'");
    struct store_run_info info;
    assert_error(store_run_get(s, "nope", &info, &err), &err, TV_ENOTFOUND, "no run named");
    assert_ok(store_close(s, &err), &err);
}

static void test_store_run_resume_refuses_second_writer(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *a = open_new(f->path);
    int64_t run = new_run(a, "xor");
    struct store *b = open_flags(f->path, 0);
    int64_t run_b = -1;
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d", (int)getpid());
    assert_error(store_run_resume(b, "xor", &run_b, &err), &err, TV_ESTATE,
                 "run 'xor' is being written by");
    assert_msg_has(&err, pid);
    /* writes through b are refused too */
    struct ind one;
    make_ind(0, 0, 0, &one);
    assert_error(store_add_individuals(b, run, &one.row, 1, &err), &err, TV_ESTATE,
                 "not open for writing");
    struct store_run_info info;
    assert_ok(store_run_get(b, "xor", &info, &err), &err);
    assert_int_equal(info.has_writer, 1);
    store_run_info_release(&info);
    /* another run in the same file is free */
    int64_t other = new_run(b, "other");
    assert_true(other != run);
    assert_ok(store_close(a, &err), &err);
    assert_ok(store_run_get(b, "xor", &info, &err), &err);
    assert_int_equal(info.has_writer, 0);
    store_run_info_release(&info);
    assert_ok(store_run_resume(b, "xor", &run_b, &err), &err);
    assert_int_equal(run_b, run);
    assert_ok(store_add_individuals(b, run, &one.row, 1, &err), &err);
    tv_buf_free(&one.bytes);
    assert_ok(store_close(b, &err), &err);
}

/* A writer in another process, then that process killed with SIGKILL: its
 * lock goes with it, so a resume succeeds at once. */
static void test_store_run_resume_after_writer_killed(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    int ready;
    pid_t pid = fork_piped(&ready);
    if (pid == 0) {
        struct store *s = NULL;
        int64_t run;
        if (store_open(f->path, NULL, &s, &err) || store_run_resume(s, "xor", &run, &err))
            _exit(3);
        if (write(ready, "r", 1) != 1)
            _exit(4);
        for (;;)
            pause();
    }
    char c;
    assert_int_equal(read(ready, &c, 1), 1);
    struct store *s = open_flags(f->path, 0);
    int64_t run;
    assert_error(store_run_resume(s, "xor", &run, &err), &err, TV_ESTATE, "is being written by");
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "pid %d", (int)pid);
    assert_msg_has(&err, pidtext);
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    assert_ok(store_close(s, &err), &err);
    close(ready);
}

static void test_store_runs_list_returns_every_run(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    struct store_run_info *runs;
    size_t n;
    assert_ok(store_runs_list(s, &runs, &n, &err), &err);
    assert_int_equal(n, 0);
    store_runs_free(runs, n);
    new_run(s, "first");
    new_run(s, "second");
    assert_ok(store_runs_list(s, &runs, &n, &err), &err);
    assert_int_equal(n, 2);
    assert_string_equal(runs[0].name, "first");
    assert_string_equal(runs[1].name, "second");
    assert_int_equal(runs[1].last_generation, -1);
    assert_int_equal(runs[0].has_writer, 1);
    store_runs_free(runs, n);
    assert_ok(store_close(s, &err), &err);
    /* failure path: a database whose runs table is gone */
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "DROP VIEW v_runs; DROP VIEW v_individuals; DROP VIEW v_progress;"
                 " DROP VIEW v_champions; DROP VIEW v_champion_lineage; DROP VIEW v_species_sizes;"
                 " DROP VIEW v_complexity; DROP VIEW v_checkpoints; DROP TABLE runs;");
    sqlite3_close(db);
    struct store *bad = (struct store *)1;
    assert_error(store_open(f->path, NULL, &bad, &err), &err, TV_EDB, "preparing statement");
    assert_msg_has(&err, "no such table: runs");
    assert_null(bad);
}

static void assert_picks(struct store *s, const char *name, const char *want)
{
    struct tv_error err = {0};
    struct store_run_info info;
    assert_ok(store_run_pick(s, name, &info, &err), &err);
    assert_string_equal(info.name, want);
    store_run_info_release(&info);
}

static void test_store_run_pick_named_or_only_run(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store_run_info info;
    struct store *s = open_new(f->path);
    assert_error(store_run_pick(s, NULL, &info, &err), &err, TV_ENOTFOUND, "holds no runs");
    assert_error(store_run_pick(s, "x", &info, &err), &err, TV_ENOTFOUND,
                 "no run named 'x' (runs: none)");
    new_run(s, "a");
    assert_picks(s, NULL, "a");
    assert_picks(s, "a", "a");
    assert_error(store_run_pick(s, "b", &info, &err), &err, TV_ENOTFOUND,
                 "no run named 'b' (runs: 'a')");
    new_run(s, "b");
    assert_error(store_run_pick(s, NULL, &info, &err), &err, TV_EINVAL,
                 "holds 2 runs ('a', 'b'): say which with --name");
    assert_msg_has(&err, f->path);
    assert_picks(s, "b", "b");
    /* many runs: the list is cut short, not the message */
    char name[64];
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof name, "a-rather-long-run-name-%02d", i);
        new_run(s, name);
    }
    assert_error(store_run_pick(s, NULL, &info, &err), &err, TV_EINVAL,
                 "holds 32 runs ('a', 'b', 'a-rather-long-run-name-00'");
    assert_msg_has(&err, "...): say which with --name");
    assert_null(info.name);
    assert_ok(store_close(s, &err), &err);
}

static void test_store_run_set_status_round_trip(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    assert_ok(store_run_set_status(s, run, STORE_DONE, &err), &err);
    struct store_run_info info;
    assert_ok(store_run_get(s, "xor", &info, &err), &err);
    assert_int_equal(info.status, STORE_DONE);
    assert_string_equal(store_status_name(info.status), "done");
    store_run_info_release(&info);
    assert_error(store_run_set_status(s, run, 9, &err), &err, TV_EINVAL, "unknown status 9");
    assert_error(store_run_set_status(s, run + 5, STORE_DONE, &err), &err, TV_ESTATE,
                 "not open for writing");
    assert_string_equal(store_status_name(-1), "?");
    assert_string_equal(store_status_name(STORE_FAILED), "failed");
    /* resume sets it running again */
    assert_ok(store_close(s, &err), &err);
    s = open_flags(f->path, 0);
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    assert_ok(store_run_get(s, "xor", &info, &err), &err);
    assert_int_equal(info.status, STORE_RUNNING);
    store_run_info_release(&info);
    assert_ok(store_close(s, &err), &err);
}

static void test_store_run_note_round_trip(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    int64_t other = new_run(s, "other");
    char *v = NULL;
    assert_error(store_run_note_get(s, run, "task.plugin_sha256", &v, &err), &err, TV_ENOTFOUND,
                 "run 1 has no note task.plugin_sha256");
    assert_null(v);
    assert_ok(store_run_note_set(s, run, "task.plugin_sha256", "ab12", &err), &err);
    assert_ok(store_run_note_set(s, run, "task.plugin_sha256", "cd34", &err), &err); /* replaced */
    assert_ok(store_run_note_set(s, other, "task.plugin_sha256", "ef56", &err), &err);
    assert_ok(store_run_note_get(s, run, "task.plugin_sha256", &v, &err), &err);
    assert_string_equal(v, "cd34");
    free(v);
    assert_error(store_run_note_set(s, run + 5, "k", "v", &err), &err, TV_ESTATE,
                 "not open for writing");
    assert_ok(store_close(s, &err), &err);
    /* read back by another connection, read-only */
    s = open_flags(f->path, STORE_READONLY);
    assert_ok(store_run_note_get(s, other, "task.plugin_sha256", &v, &err), &err);
    assert_string_equal(v, "ef56");
    free(v);
    assert_error(store_run_note_set(s, run, "k", "v", &err), &err, TV_ESTATE, "");
    assert_ok(store_close(s, &err), &err);
}

/* A version 2 file has no notes: read-only it answers "no note", opened for
 * writing it is migrated and takes notes. */
static void test_store_open_migrates_version_2(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    downgrade_to(f->path, 2, DROP_FAILED " DROP VIEW v_front; DROP TABLE run_notes;");
    struct store *s = open_flags(f->path, STORE_READONLY);
    char *v = NULL;
    assert_error(store_run_note_get(s, 1, "final.test_accuracy", &v, &err), &err, TV_ENOTFOUND,
                 "has no note final.test_accuracy");
    assert_ok(store_close(s, &err), &err);
    s = open_flags(f->path, 0);
    int64_t run;
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    assert_ok(store_run_note_set(s, run, "final.test_accuracy", "0.5", &err), &err);
    assert_ok(store_run_note_get(s, run, "final.test_accuracy", &v, &err), &err);
    assert_string_equal(v, "0.5");
    free(v);
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    sqlite3_close(db);
    assert_integrity_ok(f->path);
}

/* ---- individuals -------------------------------------------------------- */

static void test_store_add_individuals_round_trip(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    struct ind *inds;
    struct store_individual *rows = make_rows(100, 60, 3, 100, &inds);
    assert_ok(store_add_individuals(s, run, rows, 25, &err), &err);
    assert_ok(store_add_individuals(s, run, rows + 25, 35, &err), &err);
    assert_ok(store_add_individuals(s, run, rows, 0, &err), &err); /* nothing to do */
    assert_ok(store_close(s, &err), &err);

    s = open_flags(f->path, STORE_READONLY);
    struct store_set set, bare;
    assert_ok(store_individuals_load(s, run, 3, 1, &set, &err), &err);
    assert_ok(store_individuals_load(s, run, 3, 0, &bare, &err), &err);
    assert_int_equal(set.n, 60);
    assert_int_equal(bare.n, 60);
    struct genome *g = genome_new(), *want = genome_new();
    for (size_t i = 0; i < set.n; i++) {
        assert_same_row(&rows[i], &set.rows[i]);
        assert_same_row(&rows[i], &bare.rows[i]);
        assert_null(bare.rows[i].genome);
        assert_int_equal(set.rows[i].genome_len, rows[i].genome_len);
        assert_memory_equal(set.rows[i].genome, rows[i].genome, rows[i].genome_len);
        assert_ok(store_set_genome(&set, i, g, &err), &err);
        genome_of(rows[i].id, want);
        assert_true(genome_equal(g, want));
    }
    /* one by one */
    struct store_individual one;
    assert_ok(store_individual_get(s, run, 117, &one, &err), &err);
    assert_same_row(&rows[17], &one);
    assert_memory_equal(one.genome, rows[17].genome, rows[17].genome_len);
    assert_ok(store_genome_read(s, run, 117, g, &err), &err);
    genome_of(117, want);
    assert_true(genome_equal(g, want));
    /* another generation is empty */
    store_set_release(&bare);
    assert_ok(store_individuals_load(s, run, 4, 1, &bare, &err), &err);
    assert_int_equal(bare.n, 0);
    store_set_release(&bare);
    store_set_release(&set);
    genome_free(g);
    genome_free(want);
    assert_ok(store_close(s, &err), &err);
    free_rows(rows, inds, 60);
}

static void test_store_add_individuals_duplicate_rolls_back_batch(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    struct ind *inds;
    struct store_individual *rows = make_rows(0, 10, 0, 0, &inds);
    assert_ok(store_add_individuals(s, run, rows, 5, &err), &err);
    /* rows 5..9 are new, then row 2 again: nothing of the batch may stay */
    struct store_individual batch[6];
    memcpy(batch, rows + 5, 5 * sizeof *batch);
    batch[5] = rows[2];
    assert_error(store_add_individuals(s, run, batch, 6, &err), &err, TV_EINVAL,
                 "individual 2 exists already (row 5 of 6)");
    assert_msg_has(&err, "run 'xor'");
    assert_n_loaded(s, run, 0, 5);
    /* the store is still usable */
    assert_ok(store_add_individuals(s, run, rows + 5, 5, &err), &err);
    assert_n_loaded(s, run, 0, 10);
    assert_ok(store_close(s, &err), &err);
    free_rows(rows, inds, 10);
}

/* Batches are written many rows per statement: a conflict inside one, or
 * an id repeated within the batch, still names the row a row-by-row
 * insertion would have stopped at, and leaves nothing of the batch. */
static void test_store_add_individuals_duplicate_in_large_batch_names_row(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    struct ind *inds;
    const size_t n = 200;
    struct store_individual *rows = make_rows(0, n, 0, 0, &inds);
    assert_ok(store_add_individuals(s, run, rows, 10, &err), &err);
    struct store_individual *batch = calloc(150, sizeof *batch);
    assert_non_null(batch);
    /* ids 10..159, then row 70 takes committed id 3 */
    memcpy(batch, rows + 10, 150 * sizeof *batch);
    batch[70] = rows[3];
    assert_error(store_add_individuals(s, run, batch, 150, &err), &err, TV_EINVAL,
                 "individual 3 exists already (row 70 of 150)");
    assert_msg_has(&err, "nothing of this batch was written");
    /* row 90 repeats row 40's id (50), before row 120 takes committed id 4 */
    memcpy(batch, rows + 10, 150 * sizeof *batch);
    batch[90] = rows[50];
    batch[120] = rows[4];
    assert_error(store_add_individuals(s, run, batch, 150, &err), &err, TV_EINVAL,
                 "individual 50 exists already (row 90 of 150)");
    /* and the other way round */
    memcpy(batch, rows + 10, 150 * sizeof *batch);
    batch[40] = rows[4];
    batch[90] = rows[50];
    assert_error(store_add_individuals(s, run, batch, 150, &err), &err, TV_EINVAL,
                 "individual 4 exists already (row 40 of 150)");
    struct store_set set;
    assert_ok(store_individuals_load(s, run, 0, 1, &set, &err), &err);
    assert_int_equal(set.n, 10);
    store_set_release(&set);
    /* the store is still usable, and the rows that were refused go in whole */
    memcpy(batch, rows + 10, 150 * sizeof *batch);
    assert_ok(store_add_individuals(s, run, batch, 150, &err), &err);
    assert_ok(store_individuals_load(s, run, 0, 1, &set, &err), &err);
    assert_int_equal(set.n, 160);
    for (size_t i = 0; i < set.n; i++) {
        assert_same_row(&rows[i], &set.rows[i]);
        assert_memory_equal(set.rows[i].genome, rows[i].genome, rows[i].genome_len);
    }
    store_set_release(&set);
    assert_ok(store_close(s, &err), &err);
    free(batch);
    free_rows(rows, inds, n);
}

static void test_store_add_individuals_bad_row_fails(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    struct ind *inds;
    struct store_individual *rows = make_rows(0, 4, 0, 0, &inds);
    struct store_individual bad[4];
    memcpy(bad, rows, sizeof bad);
    bad[2].genome = NULL;
    assert_error(store_add_individuals(s, run, bad, 4, &err), &err, TV_EINVAL,
                 "row 2 (individual 2): no genome bytes");
    memcpy(bad, rows, sizeof bad);
    bad[1].id = -4;
    assert_error(store_add_individuals(s, run, bad, 4, &err), &err, TV_EINVAL, "id is negative");
    memcpy(bad, rows, sizeof bad);
    bad[3].eval_seconds = INFINITY;
    assert_error(store_add_individuals(s, run, bad, 4, &err), &err, TV_EINVAL, "eval_seconds");
    memcpy(bad, rows, sizeof bad);
    bad[0].parent1 = -7;
    assert_error(store_add_individuals(s, run, bad, 4, &err), &err, TV_EINVAL, "parent id");
    memcpy(bad, rows, sizeof bad);
    bad[0].solved = 2;
    assert_error(store_add_individuals(s, run, bad, 4, &err), &err, TV_EINVAL,
                 "solved is neither 0 nor 1");
    assert_error(store_add_individuals(s, run, NULL, 4, &err), &err, TV_EINVAL, "no array");
    assert_n_loaded(s, run, 0, 0);
    assert_ok(store_close(s, &err), &err);
    free_rows(rows, inds, 4);
}

static void test_store_add_individuals_closed_generation_fails(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    struct tv_error err = {0};
    struct store *s = open_flags(f->path, 0);
    int64_t run;
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    struct ind one;
    make_ind(500, 1, 500, &one);
    assert_error(store_add_individuals(s, run, &one.row, 1, &err), &err, TV_ESTATE,
                 "individual 500: generation 1 is closed (last closed: 1)");
    one.row.generation = 2;
    assert_ok(store_add_individuals(s, run, &one.row, 1, &err), &err);
    tv_buf_free(&one.bytes);
    assert_ok(store_close(s, &err), &err);
}

/* A quota makes SQLite answer SQLITE_FULL exactly as a full disk does. */
static void test_store_add_individuals_disk_full_keeps_committed(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options o = {.flags = STORE_CREATE, .max_bytes = 40 * 16384};
    assert_ok(store_open(f->path, &o, &s, &err), &err);
    int64_t run = new_run(s, "xor");
    struct ind *inds;
    const size_t n = 400;
    struct store_individual *rows = make_rows(0, n, 0, 0, &inds);
    /* a few small batches fit, a huge genome does not */
    assert_ok(store_add_individuals(s, run, rows, 50, &err), &err);
    size_t big_len = 2u << 20;
    uint8_t *big = malloc(big_len);
    assert_non_null(big);
    memset(big, 0x42, big_len);
    struct store_individual huge = rows[50];
    huge.genome = big;
    huge.genome_len = big_len;
    struct store_individual batch[3] = {rows[51], rows[52], huge};
    assert_error(store_add_individuals(s, run, batch, 3, &err), &err, TV_ENOSPACE, "disk full");
    assert_msg_has(&err, "nothing of this batch was written");
    assert_msg_has(&err, f->path);
    /* a generation close that does not fit either */
    int64_t pop[1] = {0};
    struct store_generation gen = {
        .generation = 0, .state = big, .state_len = big_len, .population = pop, .n_population = 1};
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_ENOSPACE, "disk full");
    assert_msg_has(&err, "closing generation 0");
    /* what was committed is intact, and small work still goes on */
    struct store_set set;
    assert_ok(store_individuals_load(s, run, 0, 1, &set, &err), &err);
    assert_int_equal(set.n, 50);
    for (size_t i = 0; i < set.n; i++)
        assert_row_is(&set.rows[i], (int64_t)i, 0, 0);
    store_set_release(&set);
    gen.state = "ok";
    gen.state_len = 2;
    assert_ok(store_generation_close(s, run, &gen, &err), &err);
    assert_ok(store_close(s, &err), &err);
    assert_integrity_ok(f->path);
    free(big);
    free_rows(rows, inds, n);
}

/* What a child on a full disk saw, sent back through a pipe. */
struct full_report {
    int skipped; /* no mount namespace here */
    int code;    /* of the failing store_add_individuals() */
    char msg[TV_ERROR_MSG_MAX];
    int64_t committed; /* rows committed before the disk filled */
    int64_t reloaded;  /* rows read back, all equal to what was written */
    int reopened;      /* store_open (with quick_check) accepted the file */
    int integrity_ok;  /* PRAGMA integrity_check said ok */
};

/* In a child: a private 1 MiB tmpfs over the test directory (a mount
 * namespace, so nobody else sees it), a database filled until the disk is
 * full, then everything committed read back. */
static void full_disk_child(const char *dir, int fd)
{
    struct full_report rep = {0};
    struct tv_error err = {0};
    if (unshare(CLONE_NEWNS) != 0 && unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        rep.skipped = 1;
    else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
             mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0)
        rep.skipped = 1;
    if (rep.skipped) {
        if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
            _exit(4);
        _exit(0);
    }
    char path[200];
    snprintf(path, sizeof path, "%s/full.db", dir);
    struct store *s = NULL;
    struct store_options o = {.flags = STORE_CREATE};
    int64_t run = -1;
    if (store_open(path, &o, &s, &err) || store_run_create(s, "xor", "", 1, "v", &run, &err))
        _exit(3);
    int rc = 0;
    for (int64_t b = 0; b < 1000 && rc == 0; b++) {
        struct ind *inds;
        struct store_individual *rows = make_rows(b * 50, 50, 0, 0, &inds);
        rc = store_add_individuals(s, run, rows, 50, &err);
        if (rc == 0)
            rep.committed += 50;
        free_rows(rows, inds, 50);
    }
    rep.code = rc;
    memcpy(rep.msg, err.msg, sizeof rep.msg);
    struct store_set set;
    if (store_individuals_load(s, run, 0, 1, &set, &err) == 0) {
        for (size_t i = 0; i < set.n; i++) {
            struct ind want;
            make_ind((int64_t)i, 0, 0, &want);
            if (set.rows[i].id == (int64_t)i && set.rows[i].genome_len == want.row.genome_len &&
                memcmp(set.rows[i].genome, want.row.genome, want.row.genome_len) == 0)
                rep.reloaded++;
            tv_buf_free(&want.bytes);
        }
        store_set_release(&set);
    }
    store_close(s, NULL);
    if (store_open(path, NULL, &s, &err) == 0) {
        rep.reopened = 1;
        store_close(s, NULL);
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            rep.integrity_ok = strcmp((const char *)sqlite3_column_text(q, 0), "ok") == 0;
        sqlite3_finalize(q);
    }
    sqlite3_close(db);
    if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
        _exit(4);
    _exit(0);
}

static void test_store_add_individuals_full_disk_keeps_committed(void **state)
{
    struct fx *f = *state;
    int fd;
    pid_t pid = fork_piped(&fd);
    if (pid == 0)
        full_disk_child(f->dir, fd);
    struct full_report rep;
    assert_int_equal(read(fd, &rep, sizeof rep), (ssize_t)sizeof rep);
    close(fd);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (rep.skipped)
        skip(); /* no mount namespace: the quota test above covers the path */
    if (rep.code != TV_ENOSPACE || !strstr(rep.msg, "disk full")) {
        print_error("child: code %d: %s\n", rep.code, rep.msg);
        fail();
    }
    assert_non_null(strstr(rep.msg, "nothing of this batch was written"));
    assert_true(rep.committed >= 100);
    assert_int_equal(rep.reloaded, rep.committed);
    assert_int_equal(rep.reopened, 1);
    assert_int_equal(rep.integrity_ok, 1);
}

/* How many threads of this process but the main one block signal sig; -1
 * if one of them does not. */
static int other_threads_block(int sig)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || atol(e->d_name) == (long)getpid())
            continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *fp = fopen(path, "r");
        if (!fp)
            continue; /* ended meanwhile */
        unsigned long long mask = 0;
        while (fgets(line, sizeof line, fp))
            if (sscanf(line, "SigBlk: %llx", &mask) == 1)
                break;
        fclose(fp);
        if (!(mask >> (sig - 1) & 1)) {
            n = -1;
            break;
        }
        n++;
    }
    closedir(d);
    return n;
}

/* As the WAL grows, a background thread copies it into the database while
 * the writer goes on; what it copies and what the writer adds meanwhile all
 * come back. */
static void test_store_wal_copied_in_background(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = NULL;
    /* a background pass every 1 MiB of WAL; no truncation without a close */
    struct store_options o = {.flags = STORE_CREATE, .checkpoint_wal_bytes = INT64_C(4) << 20};
    assert_ok(store_open(f->path, &o, &s, &err), &err);
    int64_t run = new_run(s, "big");
    const size_t n = 120, len = 48 << 10; /* about 6 MB of genome bytes */
    struct ind *inds;
    struct store_individual *rows = make_rows(0, n, 0, 0, &inds);
    uint8_t *blob = malloc(n * len);
    assert_non_null(blob);
    for (size_t i = 0; i < n; i++) {
        memset(blob + i * len, (int)(i * 7 + 1), len);
        rows[i].genome = blob + i * len;
        rows[i].genome_len = len;
    }
    long db0 = file_size(f->path), wal_max = 0;
    char wal[200];
    snprintf(wal, sizeof wal, "%s-wal", f->path);
    struct store_counters c0, c1;
    store_counters_get(s, &c0);
    for (size_t i = 0; i < n; i += 10) {
        assert_ok(store_add_individuals(s, run, rows + i, 10, &err), &err);
        store_counters_get(s, &c1); /* waits for the copy asked for */
        long w = file_size(wal);
        wal_max = w > wal_max ? w : wal_max;
    }
    /* a copy every MiB or so of WAL, each run to its end, beside the
     * writer: no truncation, yet the WAL is reused from its start once
     * copied, so it stays far below the 6 MB written */
    uint64_t asked = c1.wal_copies_asked - c0.wal_copies_asked;
    assert_true(asked >= 5);                                /* 6 MB in steps of 1 MiB */
    assert_int_equal(c1.wal_copies - c0.wal_copies, asked); /* waited for: none merged */
    assert_int_equal(c1.wal_truncations, 0);
    assert_true(wal_max > 0 && wal_max < (3L << 20)); /* without the copies: all 6 MB */
    assert_true(file_size(f->path) >= db0 + (4L << 20));
    /* the copying thread leaves the program's signals to the program */
    assert_true(other_threads_block(SIGUSR1) >= 1);
    assert_true(other_threads_block(SIGTERM) >= 1);
    assert_ok(store_close(s, &err), &err);
    assert_true(file_size(wal) <= 0);
    assert_integrity_ok(f->path);
    s = open_flags(f->path, STORE_READONLY);
    struct store_set set;
    assert_ok(store_individuals_load(s, run, 0, 1, &set, &err), &err);
    assert_int_equal(set.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(set.rows[i].genome_len, len);
        assert_memory_equal(set.rows[i].genome, blob + i * len, len);
    }
    store_set_release(&set);
    assert_ok(store_close(s, &err), &err);
    /* a checkpoint of them, loaded (its genome buffer, over 4 MiB, is mapped
     * in by another thread meanwhile), in the population's order */
    s = open_flags(f->path, 0);
    assert_ok(store_run_resume(s, "big", &run, &err), &err);
    int64_t *pop = malloc(n * sizeof *pop);
    assert_non_null(pop);
    for (size_t i = 0; i < n; i++)
        pop[i] = (int64_t)((i * 7) % n); /* 7 and 120 are coprime */
    struct store_generation gen = {.generation = 0, .population = pop, .n_population = n};
    assert_ok(store_generation_close(s, run, &gen, &err), &err);
    struct store_checkpoint c;
    assert_ok(store_checkpoint_load(s, run, &c, &err), &err);
    assert_int_equal(c.population.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(c.population.rows[i].id, pop[i]);
        assert_int_equal(c.population.rows[i].genome_len, len);
        assert_memory_equal(c.population.rows[i].genome, blob + (size_t)pop[i] * len, len);
    }
    store_checkpoint_release(&c);
    assert_ok(store_close(s, &err), &err);
    TV_FREE_ALL(pop, blob);
    free_rows(rows, inds, n);
}

static void test_store_individual_get_missing_fails(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    struct tv_error err = {0};
    struct store *s = open_flags(f->path, STORE_READONLY);
    struct store_individual r;
    assert_error(store_individual_get(s, 1, 9999, &r, &err), &err, TV_ENOTFOUND,
                 "run 'xor': no individual 9999");
    struct genome *g = genome_new();
    assert_error(store_genome_read(s, 1, 9999, g, &err), &err, TV_ENOTFOUND,
                 "no genome for individual 9999");
    genome_free(g);
    assert_ok(store_close(s, &err), &err);
}

static void test_store_genome_read_damaged_row_fails(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "UPDATE genomes SET data = x'93a474726576' WHERE id = 7;"
                 "UPDATE genomes SET data = 'text' WHERE id = 8;"
                 "UPDATE individuals SET n_conns = -3 WHERE id = 9;"
                 "DELETE FROM genomes WHERE id = 10;");
    sqlite3_close(db);
    struct tv_error err = {0};
    struct store *s = open_flags(f->path, STORE_READONLY);
    struct genome *g = genome_new();
    assert_error(store_genome_read(s, 1, 7, g, &err), &err, TV_ECORRUPT,
                 "run 'xor': individual 7: damaged genome");
    assert_error(store_genome_read(s, 1, 8, g, &err), &err, TV_ECORRUPT, "not a BLOB");
    assert_ok(store_genome_read(s, 1, 6, g, &err), &err);
    struct store_set set;
    assert_ok(store_individuals_load(s, 1, 1, 0, &set, &err), &err);
    assert_int_equal(set.n, 20);
    assert_error(store_set_genome(&set, 3, g, &err), &err, TV_EINVAL, "loaded without its genome");
    assert_error(store_set_genome(&set, 20, g, &err), &err, TV_EINVAL, "out of range");
    store_set_release(&set);
    struct store_individual r;
    assert_error(store_individual_get(s, 1, 9, &r, &err), &err, TV_ECORRUPT,
                 "individual 9: damaged row: n_conns = -3");
    assert_error(store_individual_get(s, 1, 10, &r, &err), &err, TV_ECORRUPT,
                 "individual 10: no genome row");
    assert_error(store_individuals_load(s, 1, 0, 0, &set, &err), &err, TV_ECORRUPT,
                 "run 'xor': individual 9: damaged row");
    assert_int_equal(set.n, 0);
    assert_error(store_individuals_load(s, 1, 0, 1, &set, &err), &err, TV_ECORRUPT,
                 "run 'xor': individual 8");
    assert_int_equal(set.n, 0);
    /* the damaged bytes of 7 load (they are bytes) but do not decode */
    assert_ok(store_individual_get(s, 1, 7, &r, &err), &err);
    assert_int_equal(r.genome_len, 6);
    genome_free(g);
    assert_ok(store_close(s, &err), &err);
}

/* ---- out of memory: the code that arrives is TV_ENOMEM ------------------ */

/* SQLite's allocator, failing every allocation from the k-th on. */
static sqlite3_mem_methods real_mem;
static long oom_left = -1; /* allocations before the failures start; -1: none */
static long oom_failed;    /* allocations refused */

static int oom_now(void)
{
    if (oom_left < 0)
        return 0;
    if (oom_left == 0) {
        oom_failed++;
        return 1;
    }
    oom_left--;
    return 0;
}

static void *oom_malloc(int n)
{
    return oom_now() ? NULL : real_mem.xMalloc(n);
}

static void *oom_realloc(void *p, int n)
{
    return oom_now() ? NULL : real_mem.xRealloc(p, n);
}

/* Installs (on) or removes (off) the failing allocator; no connection may
 * be open. */
static void oom_install(int on)
{
    assert_int_equal(sqlite3_shutdown(), SQLITE_OK);
    if (on) {
        assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &real_mem), SQLITE_OK);
        sqlite3_mem_methods m = real_mem;
        m.xMalloc = oom_malloc;
        m.xRealloc = oom_realloc;
        assert_int_equal(sqlite3_config(SQLITE_CONFIG_MALLOC, &m), SQLITE_OK);
    } else {
        assert_int_equal(sqlite3_config(SQLITE_CONFIG_MALLOC, &real_mem), SQLITE_OK);
    }
    assert_int_equal(sqlite3_initialize(), SQLITE_OK);
}

/* A call under the failing allocator: it succeeded, or failed with
 * TV_ENOMEM saying so (never "corrupt", "not found", "database error"). */
static int oom_step(int rc, const struct tv_error *err, const char *call, long k)
{
    if (rc && (rc != TV_ENOMEM || !strstr(err->msg, "out of memory"))) {
        print_error("allocation %ld failed: %s gave %d (%s): %s\n", k, call, rc, tv_code_name(rc),
                    err->msg);
        fail();
    }
    return rc;
}

/* The reads of one open database, each under the failing allocator: each
 * call succeeds with the right values or fails with TV_ENOMEM. */
static void oom_reads(struct store *s, long k)
{
    struct tv_error err = {0};
    struct store_run_info info;
    if (!oom_step(store_run_get(s, "xor", &info, &err), &err, "store_run_get", k)) {
        assert_string_equal(info.name, "xor");
        assert_string_equal(info.config, "[run]\npop = 4\n");
        assert_string_equal(store_status_name(info.status), "running");
        assert_int_equal(strlen(info.created_at), 24);
        assert_int_equal(info.last_generation, 1);
        store_run_info_release(&info);
    }
    struct store_set set;
    if (!oom_step(store_individuals_load(s, 1, 1, 1, &set, &err), &err, "store_individuals_load",
                  k)) {
        assert_int_equal(set.n, 20);
        assert_true(set.rows[19].genome_len > 0);
        store_set_release(&set);
    }
    struct store_checkpoint c;
    if (!oom_step(store_checkpoint_load(s, 1, &c, &err), &err, "store_checkpoint_load", k)) {
        assert_int_equal(c.population.n, 20);
        assert_int_equal(c.state_len, 1);
        store_checkpoint_release(&c);
    }
    struct genome *g = genome_new();
    assert_non_null(g);
    oom_step(store_genome_read(s, 1, 7, g, &err), &err, "store_genome_read", k);
    genome_free(g);
    struct store_generation gen;
    if (!oom_step(store_generation_get(s, 1, -1, &gen, &err), &err, "store_generation_get", k))
        assert_int_equal(gen.generation, 1);
    struct store_device_point *pts = NULL;
    size_t n_pts = 99;
    if (!oom_step(store_device_points_load(s, 1, 1, 1, &pts, &n_pts, &err), &err,
                  "store_device_points_load", k))
        assert_true(n_pts > 0 && pts[0].flash >= 0); /* make_rows gives figures */
    free(pts);
}

/* Opening a database and reading it with SQLite's k-th allocation and all
 * after it failing, until a k where none fails: every call succeeds with the
 * right values or fails with TV_ENOMEM. (Every k of the reads; of the
 * opening, whose thousands of allocations are much alike, a growing step.) */
static void test_store_reads_out_of_memory_are_enomem(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    oom_install(1);
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options o = {.flags = STORE_READONLY};
    long k = 0, n_open = 0, n_reads = 0;
    for (;; k += 1 + k / 32, n_open++) {
        oom_failed = 0;
        oom_left = k;
        int rc = oom_step(store_open(f->path, &o, &s, &err), &err, "store_open", k);
        oom_left = -1;
        assert_int_equal(store_close(s, &err), 0);
        if (oom_failed == 0) {
            assert_int_equal(rc, 0);
            break;
        }
    }
    assert_ok(store_open(f->path, &o, &s, &err), &err);
    for (k = 0;; k++, n_reads++) {
        oom_failed = 0;
        oom_left = k;
        oom_reads(s, k);
        oom_left = -1;
        if (oom_failed == 0)
            break;
    }
    assert_ok(store_close(s, &err), &err);
    oom_install(0);
    /* the sweeps reached past the first steps */
    assert_true(n_open > 20);
    assert_true(n_reads > 20);
}

/* Run as "test_store --decode-oom DB" by the test below, in a process of its
 * own (whose heap has no large free chunks to reuse): with the address
 * space capped a few MB above what is mapped, decoding the stored genome
 * needs more. Exit status 0 when both calls give TV_ENOMEM. */
static int decode_oom_child(const char *path)
{
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options o = {.flags = STORE_READONLY};
    struct store_set set;
    struct genome *g = genome_new();
    if (!g || store_open(path, &o, &s, &err) || store_individuals_load(s, 1, 0, 1, &set, &err))
        return 10;
    long pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (!statm || fscanf(statm, "%ld", &pages) != 1)
        return 11;
    fclose(statm);
    struct rlimit rl = {.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (2 << 20),
                        .rlim_max = RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        return 12;
    int rc = store_set_genome(&set, 0, g, &err);
    if (rc != TV_ENOMEM || !strstr(err.msg, "run 'big': individual 0: decoding its genome")) {
        fprintf(stderr, "store_set_genome: %d %s\n", rc, err.msg);
        return 13;
    }
    rc = store_genome_read(s, 1, 0, g, &err);
    if (rc != TV_ENOMEM || !strstr(err.msg, "out of memory")) {
        fprintf(stderr, "store_genome_read: %d %s\n", rc, err.msg);
        return 14;
    }
    return 0;
}

/* Decoding a stored genome that needs more memory than there is: TV_ENOMEM,
 * not TV_ECORRUPT, from store_set_genome and store_genome_read.
 * (Sanitizers reserve too much address space for the cap.) */
static void test_store_genome_decode_out_of_memory_is_enomem(void **state)
{
#if defined(__SANITIZE_ADDRESS__)
    skip();
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    skip();
#endif
#endif
    struct fx *f = *state;
    struct tv_error err = {0};
    struct tv_rng rng = tu_rng(5, 0, 0);
    const uint32_t sizes[] = {1000, 1000};
    struct genome_layered_spec spec = {.sizes = sizes,
                                       .n_layers = 2,
                                       .density = 0.5,
                                       .hidden_act = GENOME_ACT_SIGMOID,
                                       .out_act = GENOME_ACT_SIGMOID,
                                       .weight_sd = 1.0};
    struct genome *big = genome_new();
    assert_non_null(big);
    assert_ok(genome_build_layered(big, &spec, &rng, &err), &err);
    struct ind one;
    make_ind(0, 0, 0, &one);
    tv_buf_free(&one.bytes);
    assert_ok(genome_encode(big, &one.bytes, &err), &err);
    one.row.genome = one.bytes.data;
    one.row.genome_len = one.bytes.len; /* about 6 MB, as much again decoded */
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "big");
    assert_int_equal(run, 1);
    assert_ok(store_add_individuals(s, run, &one.row, 1, &err), &err);
    assert_ok(store_close(s, &err), &err);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_store", "--decode-oom", f->path, (char *)NULL);
        _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* with the memory there, the same bytes decode */
    s = open_flags(f->path, STORE_READONLY);
    struct genome *g = genome_new();
    assert_non_null(g);
    assert_ok(store_genome_read(s, run, 0, g, &err), &err);
    assert_true(genome_equal(g, big));
    genome_free(g);
    genome_free(big);
    tv_buf_free(&one.bytes);
    assert_ok(store_close(s, &err), &err);
}

/* Network file systems are told apart by their statfs magic; local ones
 * (and this test's own directory) pass. */
static void test_store_network_fs_refused(void **state)
{
    struct fx *f = *state;
    assert_string_equal(store_network_fs_name(0x6969UL), "NFS");
    assert_string_equal(store_network_fs_name(0xFF534D42UL), "CIFS");
    assert_null(store_network_fs_name(0xEF53UL));     /* ext4 */
    assert_null(store_network_fs_name(0x01021994UL)); /* tmpfs */
    assert_null(store_network_fs_name(0x794C7630UL)); /* overlayfs */
    struct store *s = open_new(f->path);
    struct tv_error err = {0};
    assert_ok(store_close(s, &err), &err);
}
/* ---- generations and checkpoints ---------------------------------------- */

/* A champion test's verdict: kept with the generation, and a passing
 * champion is marked solved, in the same transaction. */
static void test_store_generation_champion_test(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "dpnv");
    struct ind *inds;
    struct store_individual *rows = make_rows(0, 10, 0, 0, &inds);
    assert_ok(store_add_individuals(s, run, rows, 10, &err), &err);
    int64_t pop[10];
    for (int i = 0; i < 10; i++)
        pop[i] = i;
    struct store_generation gen = {.generation = 0,
                                   .champion = 3,
                                   .n_evals = 10,
                                   .champion_tested = 1,
                                   .champion_score = 150,
                                   .population = pop,
                                   .n_population = 10};
    assert_ok(store_generation_close(s, run, &gen, &err), &err);
    struct ind *inds1;
    struct store_individual *rows1 = make_rows(10, 10, 1, 10, &inds1);
    assert_ok(store_add_individuals(s, run, rows1, 10, &err), &err);
    for (int i = 0; i < 10; i++)
        pop[i] = 10 + i;
    gen = (struct store_generation){.generation = 1,
                                    .champion = 14,
                                    .n_evals = 10,
                                    .champion_tested = 1,
                                    .champion_solved = 1,
                                    .champion_score = 230,
                                    .population = pop,
                                    .n_population = 10};
    assert_ok(store_generation_close(s, run, &gen, &err), &err);
    struct store_generation back;
    assert_ok(store_generation_get(s, run, 0, &back, &err), &err);
    assert_true(back.champion_tested && back.champion_score == 150 && !back.solved);
    /* (the generation's own solved flag is the caller's: .solved was 0) */
    assert_ok(store_generation_get(s, run, 1, &back, &err), &err);
    assert_true(back.champion_tested && back.champion_score == 230 && back.solved);
    assert_ok(store_close(s, &err), &err);

    sqlite3 *db = raw_open(f->path);
    /* make_ind marks ids divisible by 13 solved; the champion test adds 14 */
    assert_int_equal(raw_int(db, "SELECT group_concat(id) = '0,13,14' FROM individuals"
                                 " WHERE solved ORDER BY id"),
                     1);
    assert_int_equal(raw_int(db, "SELECT champion_test FROM v_progress WHERE generation = 1"), 230);
    sqlite3_close(db);
    free_rows(rows, inds, 10);
    free_rows(rows1, inds1, 10);
}

static void test_store_generation_close_round_trip(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options every = {.flags = STORE_CREATE, .checkpoint_wal_bytes = -1};
    assert_ok(store_open(f->path, &every, &s, &err), &err);
    int64_t run = new_run(s, "xor");
    struct ind *inds;
    struct store_individual *rows = make_rows(0, 30, 0, 0, &inds);
    assert_ok(store_add_individuals(s, run, rows, 30, &err), &err);
    struct store_species sp[2] = {{.id = 0,
                                   .size = 18,
                                   .best_fitness = 3.5,
                                   .mean_fitness = 1.25,
                                   .representative = 4,
                                   .born = 0,
                                   .stagnant = 0},
                                  {.id = 1,
                                   .size = 12,
                                   .best_fitness = NAN,
                                   .mean_fitness = 0.5,
                                   .representative = STORE_ID_NONE,
                                   .born = 0,
                                   .stagnant = 2}};
    int64_t pop[30];
    for (int i = 0; i < 30; i++)
        pop[i] = 29 - i; /* any order, kept */
    uint8_t st[300];
    for (int i = 0; i < 300; i++)
        st[i] = (uint8_t)(i * 31);
    struct store_generation gen = {.generation = 0,
                                   .best = 15.5,
                                   .mean = 7.25,
                                   .median = 7.0,
                                   .champion = 12,
                                   .species = sp,
                                   .n_species = 2,
                                   .n_evals = 30,
                                   .wall_seconds = 1.5,
                                   .state = st,
                                   .state_len = sizeof st,
                                   .population = pop,
                                   .n_population = 30};
    assert_ok(store_generation_close(s, run, &gen, &err), &err);
    char wal[200];
    snprintf(wal, sizeof wal, "%s-wal", f->path);
    assert_int_equal(file_size(wal), 0); /* truncated at the boundary */

    /* pending: part of generation 1 */
    struct ind *inds1;
    struct store_individual *rows1 = make_rows(30, 7, 1, 30, &inds1);
    assert_ok(store_add_individuals(s, run, rows1, 7, &err), &err);
    assert_ok(store_close(s, &err), &err);

    s = open_flags(f->path, 0);
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    struct store_generation back;
    assert_ok(store_generation_get(s, run, 0, &back, &err), &err);
    assert_int_equal(back.generation, 0);
    assert_true(back.best == 15.5 && back.mean == 7.25 && back.median == 7.0);
    assert_int_equal(back.champion, 12);
    assert_int_equal(back.n_evals, 30);
    assert_int_equal(back.n_species, 2);
    assert_true(back.wall_seconds == 1.5);
    assert_ok(store_generation_get(s, run, -1, &back, &err), &err);
    assert_int_equal(back.generation, 0);

    struct store_checkpoint c;
    assert_ok(store_checkpoint_load(s, run, &c, &err), &err);
    assert_int_equal(c.generation, 0);
    assert_int_equal(c.state_len, sizeof st);
    assert_memory_equal(c.state, st, sizeof st);
    assert_int_equal(c.population.n, 30);
    for (size_t i = 0; i < 30; i++)
        assert_row_is(&c.population.rows[i], pop[i], 0, 0);
    assert_int_equal(c.pending.n, 7);
    for (size_t i = 0; i < 7; i++)
        assert_row_is(&c.pending.rows[i], 30 + (int64_t)i, 1, 30);
    struct genome *g = genome_new(), *want = genome_new();
    assert_ok(store_set_genome(&c.population, 3, g, &err), &err);
    genome_of(pop[3], want);
    assert_true(genome_equal(g, want));
    genome_free(g);
    genome_free(want);
    store_checkpoint_release(&c);

    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM species WHERE generation = 0"), 2);
    assert_int_equal(raw_int(db, "SELECT stagnant FROM species WHERE species = 1"), 2);
    assert_int_equal(raw_int(db, "SELECT representative IS NULL FROM species WHERE species = 1"),
                     1);
    sqlite3_close(db);

    /* the next generation closes, and the checkpoint moves */
    struct store_individual rest[23];
    struct ind *inds2;
    struct store_individual *rows2 = make_rows(37, 23, 1, 30, &inds2);
    memcpy(rest, rows2, sizeof rest);
    assert_ok(store_add_individuals(s, run, rest, 23, &err), &err);
    int64_t pop1[30];
    for (int i = 0; i < 30; i++)
        pop1[i] = 30 + i;
    gen.generation = 1;
    gen.population = pop1;
    gen.n_species = 0;
    gen.species = NULL;
    gen.state = NULL;
    gen.state_len = 0;
    assert_ok(store_generation_close(s, run, &gen, &err), &err);
    assert_ok(store_checkpoint_load(s, run, &c, &err), &err);
    assert_int_equal(c.generation, 1);
    assert_int_equal(c.state_len, 0);
    assert_int_equal(c.pending.n, 0);
    assert_int_equal(c.population.rows[29].id, 59);
    store_checkpoint_release(&c);
    assert_ok(store_close(s, &err), &err);
    free_rows(rows, inds, 30);
    free_rows(rows1, inds1, 7);
    free_rows(rows2, inds2, 23);
}

static void test_store_generation_close_out_of_order_fails(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    struct tv_error err = {0};
    struct store *s = open_flags(f->path, 0);
    int64_t run;
    int64_t pop[1] = {0};
    struct store_generation gen = {.generation = 2, .population = pop, .n_population = 1};
    assert_error(store_generation_close(s, 1, &gen, &err), &err, TV_ESTATE, "not open for writing");
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    gen.generation = 1;
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_ESTATE,
                 "cannot close generation 1: the next to close is 2");
    gen.generation = 3;
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_ESTATE, "next to close is 2");
    gen.generation = 2;
    gen.n_population = 0;
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_EINVAL, "no population");
    gen.n_population = 1;
    gen.n_species = 2;
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_EINVAL,
                 "missing species array");
    gen.n_species = 0;
    gen.state_len = 5;
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_EINVAL,
                 "missing state array");
    assert_ok(store_close(s, &err), &err);
}

static void test_store_generation_close_unknown_member_fails(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    struct tv_error err = {0};
    struct store *s = open_flags(f->path, 0);
    int64_t run;
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    struct ind *inds;
    struct store_individual *rows = make_rows(40, 5, 2, 40, &inds);
    assert_ok(store_add_individuals(s, run, rows, 5, &err), &err);
    struct store_species sp = {.id = 1, .size = 3};
    /* unsorted, repeated, in runs of nearby ids: the first missing one in
     * the population's order is named (46, inside the run 40..46) */
    int64_t mixed[8] = {44, 41, 3, 46, 40, 90, 41, 3};
    struct store_generation gen = {
        .generation = 2, .species = &sp, .n_species = 1, .population = mixed, .n_population = 8};
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_EINVAL,
                 "population member 3 (individual 46) was never added");
    mixed[3] = 42;
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_EINVAL,
                 "population member 5 (individual 90) was never added");
    int64_t pop[3] = {40, 41, 77};
    gen.population = pop;
    gen.n_population = 3;
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_EINVAL,
                 "population member 2 (individual 77) was never added");
    assert_msg_has(&err, "run 'xor': closing generation 2");
    struct store_generation back;
    assert_error(store_generation_get(s, run, 2, &back, &err), &err, TV_ENOTFOUND,
                 "generation 2 is not closed");
    /* the same species twice */
    struct store_species two[2] = {{.id = 1, .size = 1}, {.id = 1, .size = 2}};
    pop[2] = 42;
    gen.species = two;
    gen.n_species = 2;
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_EINVAL,
                 "species 1 appears twice");
    gen.n_species = 1;
    assert_ok(store_generation_close(s, run, &gen, &err), &err);
    assert_ok(store_close(s, &err), &err);
    free_rows(rows, inds, 5);
}

static void test_store_generation_get_missing_fails(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    struct store_generation back;
    assert_error(store_generation_get(s, run, -1, &back, &err), &err, TV_ENOTFOUND,
                 "run 'xor': no generation closed yet");
    assert_error(store_generation_get(s, run, 4, &back, &err), &err, TV_ENOTFOUND,
                 "generation 4 is not closed");
    assert_ok(store_close(s, &err), &err);
}

/* Pending individuals of several generations come back by id, each with its
 * own genome, whatever order their generations give them. */
static void test_store_checkpoint_load_pending_sorted_by_id(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path); /* generations 0 and 1 closed, ids 0..39 */
    struct store *s = open_flags(f->path, 0);
    int64_t run;
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    struct ind *a, *b;
    struct store_individual *gen3 = make_rows(40, 5, 3, 40, &a); /* lower ids, later generation */
    struct store_individual *gen2 = make_rows(60, 5, 2, 60, &b);
    assert_ok(store_add_individuals(s, run, gen2, 5, &err), &err);
    assert_ok(store_add_individuals(s, run, gen3, 5, &err), &err);
    struct store_checkpoint c;
    assert_ok(store_checkpoint_load(s, run, &c, &err), &err);
    assert_int_equal(c.generation, 1);
    assert_int_equal(c.pending.n, 10);
    struct genome *g = genome_new(), *want = genome_new();
    for (size_t i = 0; i < 10; i++) {
        const struct store_individual *r = &c.pending.rows[i];
        if (i < 5)
            assert_row_is(r, 40 + (int64_t)i, 3, 40);
        else
            assert_row_is(r, 60 + (int64_t)i - 5, 2, 60);
        assert_ok(store_set_genome(&c.pending, i, g, &err), &err);
        genome_of(r->id, want);
        assert_true(genome_equal(g, want));
    }
    genome_free(g);
    genome_free(want);
    store_checkpoint_release(&c);
    assert_ok(store_close(s, &err), &err);
    free_rows(gen3, a, 5);
    free_rows(gen2, b, 5);
}

static void test_store_checkpoint_load_without_checkpoint_fails(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    struct store_checkpoint c;
    assert_error(store_checkpoint_load(s, run, &c, &err), &err, TV_ENOTFOUND,
                 "run 'xor': no checkpoint");
    assert_null(c.state);
    assert_int_equal(c.population.n, 0);
    assert_ok(store_close(s, &err), &err);
}

static void test_store_checkpoint_load_damaged_checkpoint_fails(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "UPDATE checkpoints SET population = x'0102' WHERE generation = 1");
    sqlite3_close(db);
    struct tv_error err = {0};
    struct store *s = open_flags(f->path, 0);
    struct store_checkpoint c;
    assert_error(store_checkpoint_load(s, 1, &c, &err), &err, TV_ECORRUPT,
                 "checkpoint of generation 1 is damaged");
    assert_ok(store_close(s, &err), &err);
    db = raw_open(f->path);
    /* ids 20..39 little-endian, but 25's row is gone */
    raw_exec(db, "UPDATE checkpoints SET population = (SELECT population FROM checkpoints"
                 " WHERE generation = 0) WHERE generation = 1;"
                 "DELETE FROM individuals WHERE id = 5;");
    sqlite3_close(db);
    s = open_flags(f->path, 0);
    assert_error(store_checkpoint_load(s, 1, &c, &err), &err, TV_ECORRUPT,
                 "names individual 5, which is missing");
    assert_ok(store_close(s, &err), &err);
}

/* ---- views -------------------------------------------------------------- */

static void test_store_views_answer_questions(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    /* three generations of 4; each child's parents are ids of the previous one */
    for (int64_t g = 0; g < 3; g++) {
        struct store_individual rows[4];
        struct ind inds[4];
        for (int i = 0; i < 4; i++) {
            make_ind(g * 4 + i, g, g * 4, &inds[i]);
            rows[i] = inds[i].row;
            rows[i].fitness = (double)(g * 10 + i);
            rows[i].species = i % 2;
        }
        if (g > 0) {
            rows[3].parent1 = g * 4 - 1; /* champion line: 3 <- 7 <- 11 */
            rows[3].parent2 = g * 4 - 2;
            rows[3].op = STORE_OP_CROSSOVER;
        }
        assert_ok(store_add_individuals(s, run, rows, 4, &err), &err);
        int64_t pop[4] = {g * 4, g * 4 + 1, g * 4 + 2, g * 4 + 3};
        struct store_species sp[2] = {{.id = 0, .size = 2, .best_fitness = (double)(g * 10 + 2)},
                                      {.id = 1, .size = 2, .best_fitness = (double)(g * 10 + 3)}};
        struct store_generation gen = {.generation = g,
                                       .best = (double)(g * 10 + 3),
                                       .mean = (double)(g * 10) + 1.5,
                                       .median = (double)(g * 10) + 1.5,
                                       .champion = g * 4 + 3,
                                       .n_evals = 4,
                                       .wall_seconds = 0.5,
                                       .species = sp,
                                       .n_species = 2,
                                       .state = "x",
                                       .state_len = 1,
                                       .population = pop,
                                       .n_population = 4};
        assert_ok(store_generation_close(s, run, &gen, &err), &err);
        for (int i = 0; i < 4; i++)
            tv_buf_free(&inds[i].bytes);
    }
    assert_ok(store_close(s, &err), &err);

    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM v_progress WHERE run = 'xor'"), 3);
    assert_int_equal(raw_int(db, "SELECT total_evals FROM v_progress WHERE generation = 2"), 12);
    assert_int_equal(raw_int(db, "SELECT best_so_far FROM v_progress WHERE generation = 1"), 13);
    assert_int_equal(raw_int(db, "SELECT id FROM v_champions WHERE generation = 2"), 11);
    char op[32];
    raw_text(db, "SELECT operator FROM v_champions WHERE generation = 2", op, sizeof op);
    assert_string_equal(op, "crossover");
    /* lineage of the last champion (11): 11, 10, 7, 6, 3, 2 and the parents of
     * 10, 6 and 2 made by make_ind (ids of the generation before) */
    assert_int_equal(raw_int(db, "SELECT count(*) FROM v_champion_lineage WHERE ancestor IN"
                                 " (11, 7, 3)"),
                     3);
    assert_int_equal(raw_int(db, "SELECT depth FROM v_champion_lineage WHERE ancestor = 3"), 2);
    assert_int_equal(raw_int(db, "SELECT max(depth) FROM v_champion_lineage"), 2);
    assert_int_equal(raw_int(db, "SELECT count(DISTINCT ancestor) = count(*)"
                                 " FROM v_champion_lineage"),
                     1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM v_species_sizes"), 6);
    assert_int_equal(raw_int(db, "SELECT sum(size) FROM v_species_sizes WHERE generation = 1"), 4);
    assert_int_equal(raw_int(db, "SELECT individuals FROM v_complexity WHERE generation = 2"), 4);
    assert_int_equal(raw_int(db, "SELECT max_conns >= 2 FROM v_complexity WHERE generation = 0"),
                     1);
    assert_int_equal(raw_int(db, "SELECT last_generation FROM v_runs"), 2);
    assert_int_equal(raw_int(db, "SELECT evaluations FROM v_runs"), 12);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM v_individuals WHERE operator = 'init'"), 4);
    assert_int_equal(raw_int(db, "SELECT n_population FROM v_checkpoints WHERE generation = 2"), 4);

    /* README's lineage CTE for an arbitrary individual (here 7) */
    const char *sql = "WITH RECURSIVE lin(id) AS (\n"
                      "  SELECT 7\n"
                      "  UNION\n"
                      "  SELECT CASE k.slot WHEN 1 THEN i.parent1 ELSE i.parent2 END\n"
                      "  FROM lin JOIN individuals i ON i.id = lin.id\n"
                      "   AND i.run_id = (SELECT run_id FROM runs WHERE name = 'xor')\n"
                      "  JOIN (SELECT 1 AS slot UNION ALL SELECT 2) k\n"
                      "  WHERE CASE k.slot WHEN 1 THEN i.parent1 ELSE i.parent2 END"
                      " IS NOT NULL\n"
                      ")\n"
                      "SELECT count(*) FROM lin";
    int64_t n_anc = raw_int(db, sql);
    assert_true(n_anc >= 3); /* 7, 3, 2 at least */
    sqlite3_close(db);
}

/* ---- a writer killed with SIGKILL at random moments --------------------- */

#define KPOP 40   /* individuals per generation */
#define KBATCH 10 /* per transaction */
#define KSPECIES 3

static void k_state(int64_t g, char *buf, size_t cap)
{
    snprintf(buf, cap, "state of generation %lld", (long long)g);
}

/* The writer: resume (or create) run "k", skip what is committed, carry on
 * until generation `until`, writing one byte to progress_fd (if >= 0) after
 * each generation it closes. Exit status 0 when done, >= 10 on an error.
 * wal_bytes: store_options.checkpoint_wal_bytes (0: the default; 4 MiB
 * makes the background copy run every 1 MiB of WAL, within a kill's reach). */
static void k_writer(const char *path, int64_t until, int64_t wal_bytes, int progress_fd)
{
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options o = {.flags = STORE_CREATE, .checkpoint_wal_bytes = wal_bytes};
    if (store_open(path, &o, &s, &err)) {
        fprintf(stderr, "writer: %s\n", err.msg);
        _exit(10);
    }
    int64_t run;
    if (store_run_resume(s, "k", &run, &err)) {
        if (err.code != TV_ENOTFOUND ||
            store_run_create(s, "k", "pop = 40", 1, "test", &run, &err)) {
            fprintf(stderr, "writer: %s\n", err.msg);
            _exit(11);
        }
    }
    struct store_checkpoint c;
    int64_t g0 = 0;
    static unsigned char have[1 << 16];
    memset(have, 0, sizeof have);
    int rc = store_checkpoint_load(s, run, &c, &err);
    if (rc == 0) {
        g0 = c.generation + 1;
        for (size_t i = 0; i < c.pending.n; i++)
            have[c.pending.rows[i].id] = 1;
        store_checkpoint_release(&c);
    } else if (rc == TV_ENOTFOUND) {
        struct store_set set;
        if (store_individuals_load(s, run, 0, 0, &set, &err))
            _exit(12);
        for (size_t i = 0; i < set.n; i++)
            have[set.rows[i].id] = 1;
        store_set_release(&set);
    } else {
        fprintf(stderr, "writer: %s\n", err.msg);
        _exit(13);
    }
    for (int64_t g = g0; g <= until; g++) {
        int64_t id0 = g * KPOP;
        for (int64_t b = 0; b < KPOP; b += KBATCH) {
            struct store_individual rows[KBATCH];
            struct ind inds[KBATCH];
            size_t n = 0;
            for (int64_t i = 0; i < KBATCH; i++) {
                int64_t id = id0 + b + i;
                if (have[id])
                    continue;
                make_ind(id, g, id0, &inds[n]);
                rows[n] = inds[n].row;
                n++;
            }
            rc = store_add_individuals(s, run, rows, n, &err);
            for (size_t i = 0; i < n; i++)
                tv_buf_free(&inds[i].bytes);
            if (rc) {
                fprintf(stderr, "writer: %s\n", err.msg);
                _exit(14);
            }
        }
        int64_t pop[KPOP];
        for (int i = 0; i < KPOP; i++)
            pop[i] = id0 + i;
        struct store_species sp[KSPECIES];
        for (int i = 0; i < KSPECIES; i++)
            sp[i] = (struct store_species){.id = i, .size = 10 + (uint32_t)i, .born = 0};
        char st[64];
        k_state(g, st, sizeof st);
        struct store_generation gen = {.generation = g,
                                       .best = (double)g,
                                       .champion = id0,
                                       .n_evals = KPOP,
                                       .species = sp,
                                       .n_species = KSPECIES,
                                       .state = st,
                                       .state_len = strlen(st),
                                       .population = pop,
                                       .n_population = KPOP};
        if (store_generation_close(s, run, &gen, &err)) {
            fprintf(stderr, "writer: %s\n", err.msg);
            _exit(15);
        }
        if (progress_fd >= 0 && write(progress_fd, "g", 1) != 1)
            _exit(17);
    }
    if (store_close(s, &err))
        _exit(16);
    _exit(0);
}

/* The database after a kill: intact, every closed generation complete, the
 * checkpoint's population and the pending rows exactly what the writer made.
 * Returns the last closed generation (-1 if none). */
static int64_t k_verify(const char *path)
{
    if (!exists(path))
        return -1;
    assert_integrity_ok(path);
    struct tv_error err = {0};
    struct store *s = NULL;
    int rc = store_open(path, NULL, &s, &err);
    if (rc == TV_EFORMAT && strstr(err.msg, "empty"))
        return -1; /* killed before the schema committed */
    assert_ok(rc, &err);
    struct store_run_info info;
    rc = store_run_get(s, "k", &info, &err);
    if (rc == TV_ENOTFOUND) {
        assert_ok(store_close(s, &err), &err);
        return -1;
    }
    assert_ok(rc, &err);
    int64_t run = info.run_id, last = info.last_generation;
    assert_int_equal(info.has_writer, 0); /* the dead writer holds no lock */
    store_run_info_release(&info);
    struct store_checkpoint c;
    rc = store_checkpoint_load(s, run, &c, &err);
    if (last < 0) {
        assert_error(rc, &err, TV_ENOTFOUND, "no checkpoint");
    } else {
        assert_ok(rc, &err);
        assert_int_equal(c.generation, last);
        char st[64];
        k_state(last, st, sizeof st);
        assert_int_equal(c.state_len, strlen(st));
        assert_memory_equal(c.state, st, c.state_len);
        assert_int_equal(c.population.n, KPOP);
        for (size_t i = 0; i < KPOP; i++)
            assert_row_is(&c.population.rows[i], last * KPOP + (int64_t)i, last, last * KPOP);
        assert_true(c.pending.n <= KPOP);
        assert_int_equal(c.pending.n % KBATCH, 0); /* whole batches */
        for (size_t i = 0; i < c.pending.n; i++)
            assert_row_is(&c.pending.rows[i], (last + 1) * KPOP + (int64_t)i, last + 1,
                          (last + 1) * KPOP);
        store_checkpoint_release(&c);
    }
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(path);
    char sql[600];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM generations g WHERE g.run_id = %lld AND"
             " (SELECT count(*) FROM individuals i WHERE i.run_id = g.run_id"
             "   AND i.generation = g.generation) = %d AND"
             " (SELECT count(*) FROM species p WHERE p.run_id = g.run_id"
             "   AND p.generation = g.generation) = %d AND"
             " (SELECT count(*) FROM checkpoints c WHERE c.run_id = g.run_id"
             "   AND c.generation = g.generation) = 1",
             (long long)run, KPOP, KSPECIES);
    assert_int_equal(raw_int(db, sql), last + 1);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM individuals i LEFT JOIN genomes g USING (run_id, id)"
             " WHERE g.data IS NULL OR i.generation > %lld",
             (long long)last + 1);
    assert_int_equal(raw_int(db, sql), 0);
    sqlite3_close(db);
    return last;
}

static void test_store_generation_close_survives_sigkill(void **state)
{
    struct fx *f = *state;
    struct tv_rng rng = tu_rng((uint64_t)time(NULL), 99, 0);
    int64_t last = -1, kills = 0;
    const int64_t n_kills = 24;
    for (int64_t k = 0; k < n_kills; k++) {
        int progress;
        pid_t pid = fork_piped(&progress);
        if (pid == 0)
            k_writer(f->path, INT64_C(1000000), k % 2 ? INT64_C(4) << 20 : 0, progress);
        /* every other writer closes a generation before it is killed */
        char b;
        if (k % 2)
            assert_int_equal(read(progress, &b, 1), 1);
        /* then 1..60 ms: opening, loading, mid-batch, mid-close,
         * mid-checkpoint, mid-copy in the background */
        struct timespec ts = {0, (long)(1 + tv_rng_below(&rng, 60)) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        close(progress); /* open till now: no SIGPIPE for the writer */
        if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
            print_error("writer ended by itself: status %d\n", st);
            fail();
        }
        kills++;
        int64_t now = k_verify(f->path);
        assert_true(now >= last); /* nothing committed is lost */
        last = now;
    }
    assert_int_equal(kills, n_kills);
    /* a last writer finishes: the run is complete and exactly as planned */
    int64_t until = last + 3;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        k_writer(f->path, until, 0, -1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(k_verify(f->path), until);
    assert_true(last >= n_kills / 2 - 1); /* a generation closed in every other life */
}

/* ---- a reader beside a committing writer -------------------------------- */

#define RPOP 200
#define RGENS 40
#define RBUSY_MS 1000

static void r_writer(const char *path, int report_fd)
{
    struct tv_error err = {0};
    struct store *s = NULL;
    struct store_options o = {
        .flags = STORE_CREATE, .busy_timeout_ms = RBUSY_MS, .checkpoint_wait_ms = 50};
    if (store_open(path, &o, &s, &err)) {
        fprintf(stderr, "writer: %s\n", err.msg);
        _exit(10);
    }
    int64_t run;
    if (store_run_create(s, "r", "", 1, "test", &run, &err))
        _exit(11);
    if (write(report_fd, &run, sizeof run) != (ssize_t)sizeof run) /* the run exists */
        _exit(16);
    for (int64_t g = 0; g < RGENS; g++) {
        int64_t id0 = g * RPOP;
        for (int64_t b = 0; b < RPOP; b += 50) {
            struct store_individual rows[50];
            struct ind inds[50];
            for (int i = 0; i < 50; i++) {
                make_ind(id0 + b + i, g, id0, &inds[i]);
                rows[i] = inds[i].row;
            }
            int rc = store_add_individuals(s, run, rows, 50, &err);
            for (int i = 0; i < 50; i++)
                tv_buf_free(&inds[i].bytes);
            if (rc) {
                fprintf(stderr, "writer: %s\n", err.msg);
                _exit(12);
            }
        }
        int64_t pop[RPOP];
        for (int i = 0; i < RPOP; i++)
            pop[i] = id0 + i;
        struct store_species sp = {.id = 0, .size = RPOP};
        struct store_generation gen = {.generation = g,
                                       .champion = id0,
                                       .n_evals = RPOP,
                                       .species = &sp,
                                       .n_species = 1,
                                       .state = "s",
                                       .state_len = 1,
                                       .population = pop,
                                       .n_population = RPOP};
        if (store_generation_close(s, run, &gen, &err)) {
            fprintf(stderr, "writer: %s\n", err.msg);
            _exit(13);
        }
        if (write(report_fd, &g, sizeof g) != (ssize_t)sizeof g) /* closed: check it */
            _exit(14);
    }
    if (store_close(s, &err))
        _exit(15);
    _exit(0);
}

static void test_store_reader_sees_consistent_generations(void **state)
{
    struct fx *f = *state;
    int fd;
    pid_t pid = fork_piped(&fd);
    if (pid == 0)
        r_writer(f->path, fd);
    struct tv_error err = {0};
    int64_t run = -1;
    assert_int_equal(read(fd, &run, sizeof run), (ssize_t)sizeof run);
    assert_true(run >= 0); /* created: it can be read */
    struct store *s = open_flags(f->path, STORE_READONLY);
    sqlite3 *db = raw_open(f->path);
    /* One check each time the writer says it closed a generation, while it
     * goes on writing the next. */
    int64_t checks = 0, last_seen = -1, closed;
    while (read(fd, &closed, sizeof closed) == (ssize_t)sizeof closed) {
        /* the store's own snapshot: checkpoint + population + pending */
        struct store_checkpoint c;
        assert_ok(store_checkpoint_load(s, run, &c, &err), &err);
        assert_int_equal(c.population.n, RPOP);
        for (size_t i = 0; i < RPOP; i += 37)
            assert_int_equal(c.population.rows[i].generation, c.generation);
        assert_true(c.pending.n % 50 == 0 && c.pending.n <= RPOP);
        assert_true(c.generation >= closed && c.generation >= last_seen);
        last_seen = c.generation;
        store_checkpoint_release(&c);
        /* a raw read transaction held a while, as a user's sqlite3 would */
        raw_exec(db, "BEGIN");
        int64_t g = raw_int(db, "SELECT coalesce(max(generation), -1) FROM generations");
        assert_true(g >= closed);
        char sql[200];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM individuals WHERE run_id = %lld AND generation = %lld",
                 (long long)run, (long long)g);
        assert_int_equal(raw_int(db, sql), RPOP);
        snprintf(sql, sizeof sql,
                 "SELECT n_population FROM checkpoints WHERE run_id = %lld"
                 " AND generation = %lld",
                 (long long)run, (long long)g);
        assert_int_equal(raw_int(db, sql), RPOP);
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM individuals WHERE run_id = %lld AND generation > %lld",
                 (long long)run, (long long)g);
        int64_t pend = raw_int(db, sql);
        assert_true(pend % 50 == 0 && pend <= RPOP);
        assert_int_equal(raw_int(db, "SELECT count(*) FROM v_progress"), g + 1);
        struct timespec ts = {0, 3000000};
        nanosleep(&ts, NULL);
        raw_exec(db, "COMMIT");
        assert_int_equal(closed, checks); /* in order, none skipped */
        checks++;
    }
    sqlite3_close(db);
    close(fd);
    /* The writer exited 0: none of its calls failed with SQLITE_BUSY, which
     * is what being blocked past its busy timeout by the readers gives. */
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(checks, RGENS);
    assert_int_equal(last_seen, RGENS - 1);
    struct store_generation back;
    assert_ok(store_generation_get(s, run, -1, &back, &err), &err);
    assert_int_equal(back.generation, RGENS - 1);
    assert_ok(store_close(s, &err), &err);
    assert_integrity_ok(f->path);
}

/* ---- genome retention, size, the front ------------------------------------ */

/* Adds generation g's n children (ids g*n .. g*n+n-1) and closes it with
 * the population: the children and the given elites (sorted ids before
 * them), champion the first child. */
static void add_and_close(struct store *s, int64_t run, int64_t g, size_t n, const int64_t *elites,
                          size_t n_elites, int keep)
{
    struct tv_error err = {0};
    struct ind *inds;
    struct store_individual *rows = make_rows(g * (int64_t)n, n, g, g * (int64_t)n, &inds);
    assert_ok(store_add_individuals(s, run, rows, n, &err), &err);
    free_rows(rows, inds, n);
    int64_t pop[64];
    assert_true(n + n_elites <= 64);
    for (size_t i = 0; i < n_elites; i++)
        pop[i] = elites[i];
    for (size_t i = 0; i < n; i++)
        pop[n_elites + i] = g * (int64_t)n + (int64_t)i;
    struct store_generation gen = {.generation = g,
                                   .best = 1,
                                   .champion = g * (int64_t)n,
                                   .state = "s",
                                   .state_len = 1,
                                   .population = pop,
                                   .n_population = n + n_elites,
                                   .keep = keep};
    assert_ok(store_generation_close(s, run, &gen, &err), &err);
}

/* 1 if individual id of run still has its genome (its row always exists). */
static int has_genome(struct store *s, int64_t run, int64_t id)
{
    struct tv_error err = {0};
    struct store_individual r;
    assert_ok(store_individual_row(s, run, id, &r, &err), &err);
    assert_int_equal(r.id, id);
    assert_null(r.genome);
    struct genome *g = genome_new();
    int rc = store_genome_read(s, run, id, g, &err);
    genome_free(g);
    if (rc == 0)
        return 1;
    assert_error(rc, &err, TV_ENOTFOUND, "its genome was not kept");
    return 0;
}

/* population: after generation 2 closes, the genomes of its population (its
 * children, the elites 1 and 12) and of generation 3's pending children
 * stay; every other genome, and every checkpoint but 2's, is gone; the
 * checkpoint loads whole. */
static void test_store_generation_close_keeps_population_genomes(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    add_and_close(s, run, 0, 10, NULL, 0, STORE_GENOMES_POPULATION);
    const int64_t e1[] = {1};
    add_and_close(s, run, 1, 10, e1, 1, STORE_GENOMES_POPULATION);
    struct ind *inds;
    struct store_individual *rows = make_rows(30, 4, 3, 30, &inds); /* pending, generation 3 */
    assert_ok(store_add_individuals(s, run, rows, 4, &err), &err);
    free_rows(rows, inds, 4);
    const int64_t e2[] = {1, 12};
    add_and_close(s, run, 2, 10, e2, 2, STORE_GENOMES_POPULATION);
    for (int64_t id = 0; id < 34; id++) {
        int kept = id == 1 || id == 12 || id >= 20;
        if (has_genome(s, run, id) != kept) {
            print_error("individual %lld: genome %s\n", (long long)id, kept ? "dropped" : "kept");
            fail();
        }
    }
    struct store_usage u;
    assert_ok(store_usage_get(s, run, &u, &err), &err);
    assert_int_equal(u.individuals, 34);
    assert_int_equal(u.genomes, 16);
    assert_int_equal(u.generations, 3);
    assert_true(u.bytes > 0 && u.bytes % 16384 == 0 && u.free_bytes < u.bytes);
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM checkpoints"), 1);
    assert_int_equal(raw_int(db, "SELECT generation FROM checkpoints"), 2);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM individuals"), 34);
    sqlite3_close(db);
    s = open_flags(f->path, STORE_READONLY);
    struct store_checkpoint c;
    assert_ok(store_checkpoint_load(s, run, &c, &err), &err);
    assert_int_equal(c.generation, 2);
    assert_int_equal(c.population.n, 12);
    assert_int_equal(c.pending.n, 4);
    struct genome *g = genome_new(), *want = genome_new();
    for (size_t i = 0; i < c.population.n; i++) {
        assert_ok(store_set_genome(&c.population, i, g, &err), &err);
        genome_of(c.population.rows[i].id, want);
        assert_true(genome_equal(g, want));
    }
    genome_free(g);
    genome_free(want);
    store_checkpoint_release(&c);
    assert_ok(store_close(s, &err), &err);
    assert_integrity_ok(f->path);
}

/* champions: also each generation's champion (0, 10, 20), out of the
 * population or not; all: nothing is dropped. */
static void test_store_generation_close_keeps_champions_genomes(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor"), other = new_run(s, "all");
    for (int64_t g = 0; g < 3; g++)
        add_and_close(s, run, g, 10, NULL, 0, STORE_GENOMES_CHAMPIONS);
    for (int64_t g = 0; g < 3; g++)
        add_and_close(s, other, g, 10, NULL, 0, STORE_GENOMES_ALL);
    for (int64_t id = 0; id < 30; id++) {
        assert_int_equal(has_genome(s, run, id), id >= 20 || id % 10 == 0);
        assert_int_equal(has_genome(s, other, id), 1);
    }
    struct store_usage u;
    assert_ok(store_usage_get(s, -1, &u, &err), &err);
    assert_int_equal(u.individuals, 60);
    assert_int_equal(u.genomes, 12 + 30);
    assert_int_equal(u.generations, 6);
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM checkpoints WHERE run_id = 1"), 1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM checkpoints WHERE run_id = 2"), 3);
    sqlite3_close(db);
}

/* elite: as champions (0, 10, 20, 30), and every elite for good: 1, carried
 * into generations 1 and 2 but not 3, keeps its genome; 12 and 23, the
 * elites of generation 3, and generation 3's children too (the checkpoint's
 * population). Every other genome, and every checkpoint but 3's, is gone. */
static void test_store_generation_close_keeps_elite_genomes(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    add_and_close(s, run, 0, 10, NULL, 0, STORE_GENOMES_ELITE);
    const int64_t e1[] = {1}, e2[] = {1, 12}, e3[] = {12, 23};
    add_and_close(s, run, 1, 10, e1, 1, STORE_GENOMES_ELITE);
    add_and_close(s, run, 2, 10, e2, 2, STORE_GENOMES_ELITE);
    add_and_close(s, run, 3, 10, e3, 2, STORE_GENOMES_ELITE);
    for (int64_t id = 0; id < 40; id++) {
        int kept = id % 10 == 0 || id == 1 || id == 12 || id == 23 || id >= 30;
        if (has_genome(s, run, id) != kept) {
            print_error("individual %lld: genome %s\n", (long long)id, kept ? "dropped" : "kept");
            fail();
        }
    }
    struct store_usage u;
    assert_ok(store_usage_get(s, run, &u, &err), &err);
    assert_int_equal(u.individuals, 40);
    assert_int_equal(u.genomes, 3 + 3 + 10);
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM checkpoints"), 1);
    assert_int_equal(raw_int(db, "SELECT generation FROM checkpoints"), 3);
    sqlite3_close(db);
    assert_integrity_ok(f->path);
}

static void test_store_generation_close_unknown_retention_fails(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    struct store *s = open_new(f->path);
    int64_t run = new_run(s, "xor");
    int64_t pop[1] = {0};
    struct ind in;
    make_ind(0, 0, 0, &in);
    assert_ok(store_add_individuals(s, run, &in.row, 1, &err), &err);
    tv_buf_free(&in.bytes);
    struct store_generation gen = {
        .generation = 0, .champion = 0, .population = pop, .n_population = 1, .keep = 4};
    assert_error(store_generation_close(s, run, &gen, &err), &err, TV_EINVAL,
                 "generation 0: unknown genome retention 4");
    struct store_individual r;
    assert_error(store_individual_row(s, run, 5, &r, &err), &err, TV_ENOTFOUND, "no individual 5");
    assert_ok(store_close(s, &err), &err);
}

/* The front by its definition: no individual with at most as many
 * connections is at least as fit (fewer, or as many with a lower id, for a
 * tie of both). NaN fitness is never on it. */
static int on_front_naive(const int64_t *conns, const double *fit, size_t n, size_t i)
{
    if (isnan(fit[i]))
        return 0;
    for (size_t j = 0; j < n; j++) {
        if (j == i || isnan(fit[j]))
            continue;
        if (conns[j] < conns[i] && fit[j] >= fit[i])
            return 0;
        if (conns[j] == conns[i] && (fit[j] > fit[i] || (fit[j] == fit[i] && j < i)))
            return 0;
    }
    return 1;
}

/* v_front and store_front_load on a hand-made history of 40 individuals
 * (sizes 3..11, equal sizes of unequal fitness, a NULL) against the definition, and
 * "the smallest with fitness >= X" from the README against a search. */
static void test_store_front_matches_definition(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    enum { N = 40 };
    int64_t conns[N];
    double fit[N];
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "BEGIN");
    for (int i = 0; i < N; i++) {
        conns[i] = 3 + (i * 5) % 7 + (i % 3);
        fit[i] = i == 17 ? NAN : 0.05 * (double)conns[i] + 0.1 * (double)((i * 13) % 4);
        char sql[200], value[40] = "NULL";
        if (!isnan(fit[i]))
            snprintf(value, sizeof value, "%.17g", fit[i]);
        snprintf(sql, sizeof sql,
                 "UPDATE individuals SET n_conns = %lld, fitness = %s WHERE id = %d",
                 (long long)conns[i], value, i);
        raw_exec(db, sql);
    }
    raw_exec(db, "UPDATE generations SET champion_test = 0.25 WHERE generation = 1;"
                 "COMMIT");
    size_t n_expect = 0;
    for (size_t i = 0; i < N; i++)
        n_expect += (size_t)on_front_naive(conns, fit, N, i);
    assert_true(n_expect >= 3);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM v_front"), (int64_t)n_expect);
    for (double x = 0.05; x < 1; x += 0.1) {
        int64_t best = -1;
        for (int i = 0; i < N; i++)
            if (!isnan(fit[i]) && fit[i] >= x &&
                (best < 0 || conns[i] < conns[best] ||
                 (conns[i] == conns[best] && fit[i] > fit[best])))
                best = i;
        char sql[200];
        snprintf(sql, sizeof sql,
                 "SELECT id FROM v_front WHERE run = 'xor' AND fitness >= %g"
                 " ORDER BY n_conns LIMIT 1",
                 x);
        assert_int_equal(raw_int(db, sql), best >= 0 ? best : -999); /* -999: no row */
    }
    sqlite3_close(db);
    struct store *s = open_flags(f->path, STORE_READONLY);
    struct store_front_point *front;
    size_t n;
    assert_ok(store_front_load(s, 1, &front, &n, &err), &err);
    assert_int_equal(n, n_expect);
    for (size_t k = 0; k < n; k++) {
        size_t i = (size_t)front[k].id;
        assert_true(on_front_naive(conns, fit, N, i));
        assert_int_equal(front[k].n_conns, conns[i]);
        assert_true(front[k].fitness == fit[i]);
        if (k)
            assert_true(front[k].n_conns > front[k - 1].n_conns &&
                        front[k].fitness > front[k - 1].fitness);
        /* generation 1's champion is 20 */
        assert_true(i == 20 ? front[k].champion_test == 0.25 : isnan(front[k].champion_test));
    }
    free(front);
    assert_ok(store_close(s, &err), &err);
}

/* A version 3 file (no v_front) answers store_front_load read-only, and is
 * migrated to the current version, which has the view, when opened for
 * writing. */
static void test_store_open_migrates_version_3(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    downgrade_to(f->path, 3, DROP_FAILED " DROP VIEW v_front;");
    struct store *s = open_flags(f->path, STORE_READONLY);
    struct store_front_point *front;
    size_t n;
    assert_ok(store_front_load(s, 1, &front, &n, &err), &err);
    assert_true(n >= 1);
    free(front);
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 3);
    sqlite3_close(db);
    s = open_flags(f->path, 0);
    assert_ok(store_close(s, &err), &err);
    db = raw_open(f->path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM v_front"), (int64_t)n);
    sqlite3_close(db);
    assert_integrity_ok(f->path);
}

/* A version 4 file (no generations.failed) reads its generations
 * read-only as it is, and is migrated to version 5 when opened for
 * writing: the column, 0 in the rows it had; a new generation writes it. */
static void test_store_open_migrates_version_4(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    downgrade_to(f->path, 4, DROP_FAILED);
    struct store *s = open_flags(f->path, STORE_READONLY);
    struct store_generation g;
    assert_ok(store_generation_get(s, 1, -1, &g, &err), &err);
    assert_int_equal(g.generation, 1);
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 4);
    sqlite3_close(db);
    s = open_flags(f->path, 0);
    assert_ok(store_close(s, &err), &err);
    db = raw_open(f->path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM generations WHERE failed = 0"), 2);
    sqlite3_close(db);
    assert_integrity_ok(f->path);
}

/* A version 5 file (no objectives, no v_front_gen) reads its individuals
 * read-only as it is (objectives NaN) and unchanged, and is migrated to
 * version 6 when opened for writing: the columns (NULL in the rows it had,
 * the same layout as a new file's), v_individuals with them, v_front_gen;
 * a new row writes and reads back its objectives. */
static void test_store_open_migrates_version_5(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    downgrade_to(f->path, 5, DROP_OBJECTIVES);
    size_t n0, n1;
    unsigned char *before = slurp(f->path, &n0);
    struct store *s = open_flags(f->path, STORE_READONLY);
    struct store_set set;
    assert_ok(store_individuals_load(s, 1, 1, 1, &set, &err), &err);
    assert_int_equal(set.n, 20);
    rows_of_old_file = 1;
    for (size_t i = 0; i < set.n; i++)
        assert_row_is(&set.rows[i], 20 + (int64_t)i, 1, 20);
    rows_of_old_file = 0;
    store_set_release(&set);
    struct store_individual one;
    assert_ok(store_individual_row(s, 1, 3, &one, &err), &err);
    assert_true(isnan(one.valid_acc) && isnan(one.flash));
    assert_ok(store_close(s, &err), &err);
    unsigned char *after = slurp(f->path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0); /* read-only: not migrated */
    TV_FREE_ALL(before, after);

    s = open_flags(f->path, 0);
    int64_t run;
    assert_ok(store_run_resume(s, "xor", &run, &err), &err);
    struct ind *inds;
    struct store_individual *rows = make_rows(40, 6, 2, 40, &inds);
    assert_ok(store_add_individuals(s, run, rows, 6, &err), &err);
    free_rows(rows, inds, 6);
    assert_ok(store_individuals_load(s, run, 2, 0, &set, &err), &err);
    assert_int_equal(set.n, 6);
    for (size_t i = 0; i < set.n; i++)
        assert_row_is(&set.rows[i], 40 + (int64_t)i, 2, 40);
    store_set_release(&set);
    assert_ok(store_close(s, &err), &err);
    sqlite3 *db = raw_open(f->path);
    assert_int_equal(raw_int(db, "PRAGMA user_version"), 6);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM individuals WHERE valid_acc IS NULL"
                                 " AND flash IS NULL AND ram IS NULL AND macs IS NULL"),
                     40);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM v_individuals WHERE flash IS NOT NULL"), 5);
    assert_true(raw_int(db, "SELECT count(*) FROM v_front_gen WHERE generation = 2") >= 1);
    sqlite3_close(db);
    assert_integrity_ok(f->path);
    /* the same columns in the same order as a new file's */
    char fresh[300];
    snprintf(fresh, sizeof fresh, "%s.new", f->path);
    make_small_db(fresh);
    db = raw_open(f->path);
    sqlite3 *db2 = raw_open(fresh);
    const char *cols = "SELECT group_concat(name || ' ' || type, ',') FROM"
                       " pragma_table_info('individuals')";
    char a[1024], b[1024];
    raw_text(db, cols, a, sizeof a);
    raw_text(db2, cols, b, sizeof b);
    assert_string_equal(a, b);
    sqlite3_close(db);
    sqlite3_close(db2);
    remove(fresh);
}

/* v_front_gen against the definition: per generation, the individuals with
 * both figures that no other of the generation beats (valid_acc higher or
 * equal with less or equal flash, one of them strictly; of equal pairs the
 * lower id), on a hand-made history with ties and NULLs. */
static void test_store_front_gen_matches_definition(void **state)
{
    struct fx *f = *state;
    make_small_db(f->path);
    enum { N = 40 };
    double acc[N], flash[N];
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "BEGIN");
    for (int i = 0; i < N; i++) {
        acc[i] = i % 9 == 4 ? NAN : 0.125 * (double)((i * 7) % 5);
        flash[i] = i % 13 == 6 ? NAN : (double)(100 * ((i * 3) % 7));
        char sql[200], va[40] = "NULL", vf[40] = "NULL";
        if (!isnan(acc[i]))
            snprintf(va, sizeof va, "%.17g", acc[i]);
        if (!isnan(flash[i]))
            snprintf(vf, sizeof vf, "%.0f", flash[i]);
        snprintf(sql, sizeof sql, "UPDATE individuals SET valid_acc = %s, flash = %s WHERE id = %d",
                 va, vf, i);
        raw_exec(db, sql);
    }
    raw_exec(db, "COMMIT");
    size_t n_front = 0;
    for (int i = 0; i < N; i++) {
        int on = !isnan(acc[i]) && !isnan(flash[i]);
        for (int j = 0; j < N && on; j++) {
            if (j == i || j / 20 != i / 20 || isnan(acc[j]) || isnan(flash[j]))
                continue;
            int dominates = acc[j] >= acc[i] && flash[j] <= flash[i] &&
                            (acc[j] > acc[i] || flash[j] < flash[i]);
            int equal_before = acc[j] == acc[i] && flash[j] == flash[i] && j < i;
            on = !dominates && !equal_before;
        }
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM v_front_gen WHERE run = 'xor' AND id = %d",
                 i);
        if (raw_int(db, sql) != on) {
            print_error("individual %d: on the front %d, in v_front_gen %lld\n", i, on,
                        (long long)raw_int(db, sql));
            fail();
        }
        if (on) {
            snprintf(sql, sizeof sql, "SELECT generation FROM v_front_gen WHERE id = %d", i);
            assert_int_equal(raw_int(db, sql), i / 20);
        }
        n_front += (size_t)on;
    }
    assert_true(n_front >= 4);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM v_front_gen"), (int64_t)n_front);
    sqlite3_close(db);
}

/* store_device_points_load and store_best_within against their
 * definitions on a hand-made history (two generations of 20, ties, NULL
 * figures, some genomes not kept): the front up to generation G is every
 * individual born by G with both figures that no other born by G beats
 * (valid_acc higher or equal with less or equal flash, one strictly; of
 * equal pairs the lower id), by flash; the best within a budget the most
 * accurate kept one that fits (then less flash, then the lower id). */
static void test_store_device_points_match_definition(void **state)
{
    struct fx *f = *state;
    struct tv_error err = {0};
    make_small_db(f->path);
    enum { N = 40 };
    double acc[N];
    int64_t flash[N], ram[N];
    int kept[N];
    sqlite3 *db = raw_open(f->path);
    raw_exec(db, "BEGIN");
    for (int i = 0; i < N; i++) {
        flash[i] = i % 13 == 6 ? -1 : 100 * ((i * 3) % 7) + 10 * (i % 4);
        acc[i] = i % 9 == 4 ? NAN
                            : 0.0005 * (double)(flash[i] < 0 ? 0 : flash[i]) +
                                  0.0625 * (double)((i * 7) % 5);
        ram[i] = 10 + i % 4;
        kept[i] = i % 5 != 2; /* 2, 7, 12, 17, 37: some of the front */
        char sql[240], va[40] = "NULL", vf[40] = "NULL";
        if (!isnan(acc[i]))
            snprintf(va, sizeof va, "%.17g", acc[i]);
        if (flash[i] >= 0)
            snprintf(vf, sizeof vf, "%lld", (long long)flash[i]);
        snprintf(sql, sizeof sql,
                 "UPDATE individuals SET valid_acc = %s, flash = %s, ram = %lld, macs = %d"
                 " WHERE id = %d",
                 va, vf, (long long)ram[i], 2 * i, i);
        raw_exec(db, sql);
        if (!kept[i]) {
            snprintf(sql, sizeof sql, "DELETE FROM genomes WHERE id = %d", i);
            raw_exec(db, sql);
        }
    }
    raw_exec(db, "COMMIT");
    sqlite3_close(db);
    struct store *s = open_flags(f->path, STORE_READONLY);
    for (int64_t last = 0; last <= 1; last++) {
        int on[N], n_on = 0, n_both = 0;
        for (int i = 0; i < N; i++) {
            on[i] = i / 20 <= last && !isnan(acc[i]) && flash[i] >= 0;
            n_both += on[i];
            for (int j = 0; j < N && on[i]; j++) {
                if (j == i || j / 20 > last || isnan(acc[j]) || flash[j] < 0)
                    continue;
                int dominates = acc[j] >= acc[i] && flash[j] <= flash[i] &&
                                (acc[j] > acc[i] || flash[j] < flash[i]);
                on[i] = !dominates && !(acc[j] == acc[i] && flash[j] == flash[i] && j < i);
            }
            n_on += on[i];
        }
        assert_true(n_on >= 3);
        struct store_device_point *p;
        size_t n;
        assert_ok(store_device_points_load(s, 1, last, 1, &p, &n, &err), &err);
        assert_int_equal(n, n_on);
        for (size_t k = 0; k < n; k++) {
            int i = (int)p[k].id;
            assert_true(on[i]);
            assert_true(p[k].valid_acc == acc[i]);
            assert_int_equal(p[k].flash, flash[i]);
            assert_int_equal(p[k].ram, ram[i]);
            assert_int_equal(p[k].macs, 2 * i);
            assert_int_equal(p[k].generation, i / 20);
            assert_int_equal(p[k].has_genome, kept[i]);
            if (k) /* by flash, each more accurate than the smaller ones */
                assert_true(p[k].flash > p[k - 1].flash && p[k].valid_acc > p[k - 1].valid_acc);
        }
        free(p);
        assert_ok(store_device_points_load(s, 1, last, 0, &p, &n, &err), &err);
        assert_int_equal(n, n_both);
        free(p);
    }
    for (int64_t budget = -1; budget <= 700; budget += 50) {
        for (int64_t max_ram = -1; max_ram <= 12; max_ram += 13) {
            int best = -1;
            for (int i = 0; i < N; i++) {
                if (!kept[i] || isnan(acc[i]) || flash[i] < 0 ||
                    (budget >= 0 && flash[i] > budget) || (max_ram >= 0 && ram[i] > max_ram))
                    continue;
                if (best < 0 || acc[i] > acc[best] ||
                    (acc[i] == acc[best] && flash[i] < flash[best]))
                    best = i;
            }
            struct store_budget b = {budget, max_ram, -1};
            struct store_device_point p;
            int rc = store_best_within(s, 1, &b, &p, &err);
            if (best < 0) {
                assert_error(rc, &err, TV_ENOTFOUND, "no network of the run within the budget");
            } else {
                assert_ok(rc, &err);
                assert_int_equal(p.id, best);
            }
        }
    }
    struct store_budget none = {-1, -1, 1}; /* macs <= 1: id 0 only, whose genome is kept */
    struct store_device_point p;
    assert_ok(store_best_within(s, 1, &none, &p, &err), &err);
    assert_int_equal(p.id, 0);
    assert_ok(store_close(s, &err), &err);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--decode-oom") == 0)
        return decode_oom_child(argv[2]);
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_store_open_creates_schema),
        T(test_store_open_reopens_existing),
        T(test_store_open_migrates_version_1),
        T(test_store_open_migrates_version_2),
        T(test_store_run_note_round_trip),
        T(test_store_open_without_generation_index),
        T(test_store_open_counts_quick_checks),
        T(test_store_open_missing_file_fails_without_create),
        T(test_store_open_bad_arguments_fail),
        T(test_store_open_refuses_foreign_file),
        T(test_store_open_refuses_foreign_sqlite),
        T(test_store_open_refuses_newer_schema),
        T(test_store_open_refuses_corrupt_file),
        T(test_store_open_refuses_damaged_schema_page),
        T(test_store_open_refuses_truncated_file),
        T(test_store_open_initialises_empty_file),
        T(test_store_open_readonly_refuses_writes),
        T(test_store_close_null_is_noop),
        T(test_store_run_create_duplicate_name_fails),
        T(test_store_run_resume_unknown_run_fails),
        T(test_store_run_resume_refuses_second_writer),
        T(test_store_run_resume_after_writer_killed),
        T(test_store_runs_list_returns_every_run),
        T(test_store_generation_champion_test),
        T(test_store_network_fs_refused),
        T(test_store_run_pick_named_or_only_run),
        T(test_store_run_set_status_round_trip),
        T(test_store_add_individuals_round_trip),
        T(test_store_add_individuals_duplicate_rolls_back_batch),
        T(test_store_add_individuals_duplicate_in_large_batch_names_row),
        T(test_store_add_individuals_bad_row_fails),
        T(test_store_add_individuals_closed_generation_fails),
        T(test_store_add_individuals_disk_full_keeps_committed),
        T(test_store_add_individuals_full_disk_keeps_committed),
        T(test_store_wal_copied_in_background),
        T(test_store_individual_get_missing_fails),
        T(test_store_genome_read_damaged_row_fails),
        T(test_store_reads_out_of_memory_are_enomem),
        T(test_store_genome_decode_out_of_memory_is_enomem),
        T(test_store_generation_close_round_trip),
        T(test_store_generation_close_out_of_order_fails),
        T(test_store_generation_close_unknown_member_fails),
        T(test_store_generation_get_missing_fails),
        T(test_store_checkpoint_load_pending_sorted_by_id),
        T(test_store_checkpoint_load_without_checkpoint_fails),
        T(test_store_checkpoint_load_damaged_checkpoint_fails),
        T(test_store_views_answer_questions),
        T(test_store_generation_close_survives_sigkill),
        T(test_store_reader_sees_consistent_generations),
        T(test_store_generation_close_keeps_population_genomes),
        T(test_store_generation_close_keeps_champions_genomes),
        T(test_store_generation_close_keeps_elite_genomes),
        T(test_store_generation_close_unknown_retention_fails),
        T(test_store_front_matches_definition),
        T(test_store_open_migrates_version_3),
        T(test_store_open_migrates_version_4),
        T(test_store_open_migrates_version_5),
        T(test_store_front_gen_matches_definition),
        T(test_store_device_points_match_definition),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
