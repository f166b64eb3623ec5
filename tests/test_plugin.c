/* test_plugin.c -- plugin tasks (tasks/plugin.c), SHA-256
 * (tasks/sha256.c), and what a search does with them
 * (master/task_run.c: ranks that disagree, the hash kept with the run and
 * checked on resume; master/config.c: `task = FILE`, --set
 * task.plugin_sha256).
 *
 * The plugins are built here with cc from tests/plugins/test_task.c, one per
 * case (-D says what is wrong with it), into a temporary directory: a good
 * one, one that is not a shared library, one without the entry symbol, two of
 * another ABI version (by the entry's name and by the row's field), one with
 * a bad key table, one with an unresolved symbol; the good one's shape can
 * come from the environment, as ranks that disagree would see it. Run from
 * the repository's root (make unit does). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "master.h"
#include "plugin.h"
#include "store.h"
#include "task_run.h"
#include "testutil.h"

/* ---- SHA-256 ------------------------------------------------------------ */

static void sha_hex(const void *data, size_t len, char hex[TASK_SHA256_HEX])
{
    struct task_sha256 s;
    uint8_t d[TASK_SHA256_BYTES];
    task_sha256_init(&s);
    task_sha256_update(&s, data, len);
    task_sha256_final(&s, d);
    task_sha256_hex(d, hex);
}

/* The examples of FIPS 180-4 (NIST's "SHA256.pdf", "SHA2_Additional.pdf"). */
static void test_task_sha256_fips_vectors(void **state)
{
    (void)state;
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
         "lmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char hex[TASK_SHA256_HEX];
        sha_hex(v[i].msg, strlen(v[i].msg), hex);
        assert_string_equal(hex, v[i].hex);
    }
}

/* One million 'a', fed in pieces of 1 to 97 bytes (the buffered path and the
 * whole-block path both). */
static void test_task_sha256_million_a_in_pieces(void **state)
{
    (void)state;
    static uint8_t a[1000];
    memset(a, 'a', sizeof a);
    struct task_sha256 s;
    task_sha256_init(&s);
    size_t done = 0, step = 1;
    while (done < 1000000) {
        size_t n = step < 1000000 - done ? step : 1000000 - done;
        task_sha256_update(&s, a, n);
        done += n;
        step = step % 97 + 1;
    }
    uint8_t d[TASK_SHA256_BYTES];
    char hex[TASK_SHA256_HEX];
    task_sha256_final(&s, d);
    task_sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Every length around the padding's boundaries (55, 56, 63, 64, 119, 120
 * bytes, ...): byte by byte equals at once. Values from sha256sum: the
 * lengths 55, 56 and 64 of "a". */
static void test_task_sha256_lengths_byte_by_byte(void **state)
{
    (void)state;
    uint8_t msg[200];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    for (size_t len = 0; len <= sizeof msg; len++) {
        char whole[TASK_SHA256_HEX], bytes[TASK_SHA256_HEX];
        sha_hex(msg, len, whole);
        struct task_sha256 s;
        uint8_t d[TASK_SHA256_BYTES];
        task_sha256_init(&s);
        for (size_t i = 0; i < len; i++)
            task_sha256_update(&s, msg + i, 1);
        task_sha256_final(&s, d);
        task_sha256_hex(d, bytes);
        assert_string_equal(whole, bytes);
    }
    static const struct {
        size_t n;
        const char *hex;
    } a[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
    };
    char as[64];
    memset(as, 'a', sizeof as);
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        char hex[TASK_SHA256_HEX];
        sha_hex(as, a[i].n, hex);
        assert_string_equal(hex, a[i].hex);
    }
}

/* ---- the plugins, built for the tests ------------------------------------ */

static char root[512]; /* the repository: tests/plugins/, tasks/, ... */

static int group_setup(void **state)
{
    /* __FILE__ is tests/test_plugin.c as make compiles it, from the root */
    snprintf(root, sizeof root, "%s", __FILE__);
    char *t = strstr(root, "tests/test_plugin.c");
    if (t)
        *t = '\0';
    if (!*root)
        snprintf(root, sizeof root, "./");
    return tu_tmpdir_setup(state);
}

static int group_teardown(void **state)
{
    task_plugins_unload();
    return tu_tmpdir_teardown(state);
}

/* Builds tests/plugins/test_task.c with `flags` into tu_tmpdir()/file (once per
 * file) and returns its path (a static buffer of 8). */
static const char *build(const char *file, const char *flags)
{
    static char paths[8][512];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, sizeof paths[0], "%s/%s", tu_tmpdir(), file);
    if (access(path, F_OK) == 0)
        return path;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cc -std=c11 -Wall -Werror -I%stasks -I%snn -I%sgenome -I%stv %s "
             "%stests/plugins/test_task.c -o '%s'",
             root, root, root, root, flags, root, path);
    tu_run(cmd, "build a test plugin");
    return path;
}

/* Builds a case and loads it: task_plugin_load's code. */
static int load_case(const char *file, const char *flags, struct tv_error *err)
{
    const struct task_kind *k;
    return task_plugin_load(build(file, flags), &k, err);
}

static const char *good(void)
{
    return build("libgood.so", "-shared -fPIC");
}

static void test_task_is_plugin_names(void **state)
{
    (void)state;
    assert_true(task_is_plugin("./libx.so"));
    assert_true(task_is_plugin("libx.so"));
    assert_true(task_is_plugin("/opt/tasks/x"));
    assert_true(task_is_plugin("dir/x.so.1"));
    assert_false(task_is_plugin("xor"));
    assert_false(task_is_plugin("so"));
    assert_false(task_is_plugin("x.sox"));
}

static void test_task_plugin_load_good_plugin(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const struct task_kind *k, *again;
    const char *path = good();
    assert_ok(task_plugin_load(path, &k, &err), &err);
    assert_string_equal(k->name, "plugtest");
    assert_int_equal(k->n_keys, 3);
    assert_int_equal(task_key_find(k, "scale"), 1);
    /* once per process */
    assert_ok(task_plugin_load(path, &again, &err), &err);
    assert_ptr_equal(k, again);
    /* the file's absolute path and hash */
    char hex[TASK_SHA256_HEX];
    assert_ok(task_sha256_file(path, hex, &err), &err);
    assert_string_equal(task_plugin_sha256(k), hex);
    assert_string_equal(task_plugin_path(k), path); /* tu_tmpdir() is absolute */
    assert_null(task_plugin_sha256(task_find("xor")));
    assert_null(task_plugin_path(task_find("xor")));
    /* an instance, evaluated through the one path */
    struct task_params p;
    task_params_defaults(k, &p);
    p.v[0].i = 3;
    p.v[1].d = 2.5;
    struct task_instance *t;
    assert_ok(task_open(k, &p, &t, &err), &err);
    assert_int_equal(t->n_inputs, 3);
    struct genome *g = genome_new();
    assert_ok(genome_build_minimal(g, 3, 1, GENOME_ACT_SIGMOID, 0, NULL, &err), &err);
    struct task_result r;
    assert_ok(task_evaluate(t, g, 1, &r, &err), &err);
    assert_true(r.fitness == 2.5);
    genome_free(g);
    task_close(t);
}

/* A relative name without '/' is a file of the current directory, not a
 * library searched for on the library path. */
static void test_task_plugin_load_name_without_slash(void **state)
{
    (void)state;
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    good();
    assert_int_equal(chdir(tu_tmpdir()), 0);
    struct tv_error err = {0};
    const struct task_kind *k;
    int rc = task_plugin_load("libgood.so", &k, &err);
    assert_int_equal(chdir(cwd), 0);
    assert_ok(rc, &err);
    assert_string_equal(k->name, "plugtest");
}

/* No file, or something that is not a file (which could be read forever). */
static void test_task_plugin_load_missing_file_or_not_a_file(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const struct task_kind *k;
    int rc = task_plugin_load("./no/such/libtask.so", &k, &err);
    assert_error(rc, &err, TV_EIO, "./no/such/libtask.so: cannot open: No such file or directory");
    assert_null(k);
    rc = task_plugin_load("/dev/zero", &k, &err);
    assert_error(rc, &err, TV_EFORMAT, "/dev/zero: not a regular file");
}

/* An object file, not linked -shared: the loader's own words follow ours. */
static void test_task_plugin_load_not_a_shared_library(void **state)
{
    (void)state;
    const char *path = build("libobject.so", "-c -fPIC");
    struct tv_error err = {0};
    const struct task_kind *k;
    int rc = task_plugin_load(path, &k, &err);
    assert_error(rc, &err, TV_EFORMAT, "cannot load it as a shared library");
    assert_msg_has(&err, path);
    assert_msg_has(&err, "only ET_DYN and ET_EXEC can be loaded"); /* dlerror's */
    /* a text file */
    char text[600];
    snprintf(text, sizeof text, "%s/libtext.so", tu_tmpdir());
    FILE *f = fopen(text, "w");
    assert_non_null(f);
    fputs("not a library at all, but long enough to have an ELF header's size\n", f);
    fclose(f);
    rc = task_plugin_load(text, &k, &err);
    assert_error(rc, &err, TV_EFORMAT, "libtext.so: cannot load it as a shared library");
    assert_msg_has(&err, "invalid ELF header");
}

static void test_task_plugin_load_missing_symbol(void **state)
{
    (void)state;
    struct tv_error err = {0};
    int rc = load_case("libnoentry.so", "-shared -fPIC -DNO_ENTRY", &err);
    char want[160];
    snprintf(want, sizeof want, "libnoentry.so: no symbol %s: not a trevo task plugin",
             TASK_PLUGIN_ENTRY_NAME);
    assert_error(rc, &err, TV_EFORMAT, want);
    assert_msg_has(&err, "TASK_PLUGIN_EXPORT");
}

/* A plugin built against the headers of another version names its entry
 * after that version: both versions are named. */
static void test_task_plugin_load_other_abi_version_by_entry(void **state)
{
    (void)state;
    char flags[128], want[200];
    snprintf(flags, sizeof flags, "-shared -fPIC -DENTRY=trevo_task_v%d", TASK_ABI_VERSION + 1);
    struct tv_error err = {0};
    int rc = load_case("libnextentry.so", flags, &err);
    snprintf(want, sizeof want,
             "libnextentry.so: built for task ABI version %d (it exports trevo_task_v%d); this "
             "trevo takes version %d (%s)",
             TASK_ABI_VERSION + 1, TASK_ABI_VERSION + 1, TASK_ABI_VERSION, TASK_PLUGIN_ENTRY_NAME);
    assert_error(rc, &err, TV_EFORMAT, want);
}

/* The entry's name right, the row's abi_version not. */
static void test_task_plugin_load_other_abi_version_in_row(void **state)
{
    (void)state;
    struct tv_error err = {0};
    int rc = load_case("libnextrow.so", "-shared -fPIC -DABI_DELTA=1", &err);
    char want[200];
    snprintf(want, sizeof want,
             "libnextrow.so: task plugtest: built for task ABI version %d; this trevo takes "
             "version %d",
             TASK_ABI_VERSION + 1, TASK_ABI_VERSION);
    assert_error(rc, &err, TV_EFORMAT, want);
}

/* A plugin of version 2 (entry trevo_task_v2, a row of version 2) loads:
 * its row is copied into a zeroed row of this version, so what lies past a
 * version-2 row in its library (here an evaluate_genome that scores 99) is
 * never read, and it evaluates through its evaluate(). */
static void test_task_plugin_load_abi_2_row_copied(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const struct task_kind *k;
    const char *path =
        build("libv2.so", "-shared -fPIC -DENTRY=trevo_task_v2 -DABI_DELTA=-1 -DTAIL");
    assert_ok(task_plugin_load(path, &k, &err), &err);
    assert_int_equal(k->abi_version, TASK_ABI_VERSION);
    assert_string_equal(k->name, "plugtest");
    assert_null(k->evaluate_genome);
    assert_non_null(task_plugin_sha256(k));
    struct task_params p;
    task_params_defaults(k, &p);
    struct task_instance *t;
    assert_ok(task_open(k, &p, &t, &err), &err);
    struct genome *g = genome_new();
    assert_ok(genome_build_minimal(g, 2, 1, GENOME_ACT_SIGMOID, 0, NULL, &err), &err);
    struct task_result r;
    assert_ok(task_evaluate_genome(t, g, 1, 0, NULL, &r, &err), &err);
    assert_true(r.fitness == 1.0);
    genome_free(g);
    task_close(t);
    /* this version's entry with the tail: evaluate_genome is used */
    path = build("libv3tail.so", "-shared -fPIC -DTAIL");
    assert_ok(task_plugin_load(path, &k, &err), &err);
    assert_non_null(k->evaluate_genome);
}

static void test_task_plugin_load_bad_key_table(void **state)
{
    (void)state;
    struct tv_error err = {0};
    int rc = load_case("libbadkey.so", "-shared -fPIC -DBAD_KEY", &err);
    assert_error(rc, &err, TV_EINVAL,
                 "libbadkey.so: task plugtest: key 1 ('scale'): its default is not a finite "
                 "number in [min, max]");
}

/* What a plugin that calls a function the executable does not export gets:
 * refused at load (RTLD_NOW), in the loader's words. */
static void test_task_plugin_load_unresolved_symbol(void **state)
{
    (void)state;
    struct tv_error err = {0};
    int rc = load_case("libundefined.so", "-shared -fPIC -DUNDEFINED", &err);
    assert_error(rc, &err, TV_EFORMAT, "cannot load it as a shared library");
    assert_msg_has(&err, "undefined symbol: trevo_no_such_function");
}

/* The checks of a row, on rows made here: and every built-in kind passes. */
static void test_task_kind_check_rows(void **state)
{
    (void)state;
    size_t n;
    const struct task_kind *const *all = task_all(&n);
    struct tv_error err = {0};
    for (size_t i = 0; i < n; i++)
        assert_ok(task_kind_check(all[i], &err), &err);
    struct task_kind k = *task_find("xor");
    k.name = "Bad Name";
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL, "task name 'Bad Name'");
    k.name = "ok";
    k.evaluate = NULL;
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL,
                 "task ok: no evaluate() or evaluate_generation() function");
    k = *task_find("xor");
    struct task_key keys[2] = {
        {.name = "a", .type = TASK_KEY_INT, .def = 1, .min = 0, .max = 2, .doc = "a"},
        {.name = "a", .type = TASK_KEY_INT, .def = 1, .min = 0, .max = 2, .doc = "again"},
    };
    k.keys = keys;
    k.n_keys = 2;
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL,
                 "task xor: key 1 ('a'): given twice in the key table");
    keys[1].name = "b";
    keys[1].def = 1.5;
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL,
                 "key 1 ('b'): an int's default is a whole number");
    keys[1].type = 7;
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL, "key 1 ('b'): unknown type");
    static const char *const none[] = {NULL}, *const two[] = {"x", "y", NULL};
    keys[1].type = TASK_KEY_CHOICE;
    keys[1].choices = none;
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL, "key 1 ('b'): a choice key has no");
    keys[1].choices = two;
    keys[1].def = 2;
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL,
                 "key 1 ('b'): its default is not the index of one of its choices");
    keys[1].def = 1;
    assert_ok(task_kind_check(&k, &err), &err);
    char long_text[TASK_STRING_MAX + 1];
    memset(long_text, 'x', TASK_STRING_MAX);
    long_text[TASK_STRING_MAX] = '\0';
    keys[1].type = TASK_KEY_STRING;
    keys[1].def_text = long_text;
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL, "its default text is longer");
    keys[1].def_text = NULL;
    assert_ok(task_kind_check(&k, &err), &err);
    keys[1].type = TASK_KEY_BOOL;
    keys[1].def = 1;
    assert_ok(task_kind_check(&k, &err), &err);
    k.n_keys = TASK_MAX_KEYS + 1;
    char want[64];
    snprintf(want, sizeof want, "%d [task] keys", TASK_MAX_KEYS + 1);
    assert_error(task_kind_check(&k, &err), &err, TV_EINVAL, want);
}

/* ---- the config: task = FILE ---------------------------------------------- */

/* Parses "[run] task = the good plugin" and then `more`; must succeed. */
static void parse_good(struct master_config *c, const char *more)
{
    char text[1024];
    snprintf(text, sizeof text, "[run]\ntask = %s\n%s", good(), more);
    struct tv_error err = {0};
    assert_ok(master_config_parse(c, text, "p.ini", &err), &err);
}

static void test_master_config_parse_plugin_and_its_keys(void **state)
{
    (void)state;
    struct master_config c;
    struct tv_error err = {0};
    parse_good(&c, "[task]\ninputs = 4\nflip = true\n");
    assert_string_equal(c.task_kind->name, "plugtest");
    assert_string_equal(c.name, "plugtest"); /* the run is named after the task */
    assert_int_equal(c.task_params.v[0].i, 4);
    assert_true(c.task_params.v[1].d == 1.0);
    assert_int_equal(c.task_params.v[2].i, 1);
    /* the dump parses back to the same values */
    struct tv_buf dump = {0};
    assert_ok(master_config_dump(&c, &dump, &err), &err);
    struct master_config c2;
    assert_ok(master_config_parse(&c2, (const char *)dump.data, "dump", &err), &err);
    assert_ptr_equal(c2.task_kind, c.task_kind);
    assert_memory_equal(&c2.task_params, &c.task_params, sizeof c.task_params);
    tv_buf_free(&dump);
}

static void test_master_config_parse_plugin_keys_checked(void **state)
{
    (void)state;
    char text[1024];
    struct master_config c;
    struct tv_error err = {0};
    snprintf(text, sizeof text, "[run]\ntask = %s\n[task]\ninputs = 4\nwidth = 3\n", good());
    assert_error(master_config_parse(&c, text, "p.ini", &err), &err, TV_EINVAL,
                 "p.ini:5: width: unknown key in [task] (task plugtest has: inputs, scale, flip)");
    snprintf(text, sizeof text, "[task]\ninputs = 9\n[run]\ntask = %s\n", good());
    assert_error(master_config_parse(&c, text, "p.ini", &err), &err, TV_EINVAL,
                 "p.ini:2: inputs: 9 is out of range [1, 8]");
}

static void test_master_config_parse_plugin_error_has_the_line(void **state)
{
    (void)state;
    char text[1024];
    const char *path = build("libnoentry.so", "-shared -fPIC -DNO_ENTRY");
    snprintf(text, sizeof text, "[run]\nseed = 3\ntask = %s\n", path);
    struct master_config c;
    struct tv_error err = {0};
    char want[700];
    snprintf(want, sizeof want, "p.ini:3: task: %s: no symbol %s", path, TASK_PLUGIN_ENTRY_NAME);
    assert_error(master_config_parse(&c, text, "p.ini", &err), &err, TV_EINVAL, want);
}

static void test_master_config_set_plugin_sha256(void **state)
{
    (void)state;
    struct master_config c;
    struct tv_error err = {0};
    parse_good(&c, "");
    const char *hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    char set[128];
    snprintf(set, sizeof set, "task.plugin_sha256=%s", hex);
    assert_ok(master_config_set(&c, set, &err), &err);
    assert_string_equal(c.plugin_sha256_accept, hex);
    assert_error(master_config_set(&c, "task.plugin_sha256=00ff", &err), &err, TV_EINVAL,
                 "--set task.plugin_sha256=00ff: expected a SHA-256 of 64 lowercase hex digits");
    /* the plugin's own keys stay fixed */
    assert_error(master_config_set(&c, "task.inputs=3", &err), &err, TV_EINVAL,
                 "inputs cannot change on resume");
    assert_ok(master_config_parse(&c, "[run]\ntask = xor\n", "x.ini", &err), &err);
    assert_error(master_config_set(&c, set, &err), &err, TV_EINVAL,
                 "the run's task xor is not a plugin");
}

/* ---- ranks that disagree ---------------------------------------------------- */

/* The good plugin opened as two ranks would, the second with another shape
 * in its environment. */
static void test_master_rank_tasks_compare_shape_from_environment(void **state)
{
    (void)state;
    struct tv_error err = {0};
    const struct task_kind *k;
    assert_ok(task_plugin_load(good(), &k, &err), &err);
    struct task_params p;
    task_params_defaults(k, &p);
    struct task_instance *t0, *t1, *t2;
    assert_ok(task_open(k, &p, &t0, &err), &err);
    assert_ok(task_open(k, &p, &t1, &err), &err);
    setenv("TREVO_TEST_INPUTS", "5", 1);
    int rc = task_open(k, &p, &t2, &err);
    unsetenv("TREVO_TEST_INPUTS");
    assert_ok(rc, &err);
    struct master_rank_task r[3];
    master_rank_task_fill(&r[0], t0, 0, NULL);
    master_rank_task_fill(&r[1], t1, 0, NULL);
    master_rank_task_fill(&r[2], t2, 0, NULL);
    assert_ok(master_rank_tasks_compare(r, 2, "./libgood.so", &err), &err);
    assert_error(master_rank_tasks_compare(r, 3, "./libgood.so", &err), &err, TV_EINVAL,
                 "rank 2 opened task ./libgood.so with 5 inputs and 1 outputs, rank 0 (the "
                 "master) with 2 inputs and 1 outputs: every rank must open the same task");
    task_close(t0);
    task_close(t1);
    task_close(t2);
}

static void test_master_rank_tasks_compare_failures_and_hashes(void **state)
{
    (void)state;
    struct tv_error err = {0}, why = {0};
    struct master_rank_task r[3];
    memset(r, 0, sizeof r);
    snprintf(r[0].sha256, sizeof r[0].sha256, "%s", "aaaa");
    snprintf(r[1].sha256, sizeof r[1].sha256, "%s", "aaaa");
    snprintf(r[2].sha256, sizeof r[2].sha256, "%s", "bbbb");
    assert_error(master_rank_tasks_compare(r, 3, "./libt.so", &err), &err, TV_EINVAL,
                 "rank 2 loaded task ./libt.so with SHA-256 bbbb, rank 0 (the master) with aaaa");
    /* a rank that could not open it: its own code and words */
    tv_error_set(&why, TV_EIO, "./libt.so: cannot open: No such file or directory");
    master_rank_task_fill(&r[1], NULL, TV_EIO, &why);
    assert_error(master_rank_tasks_compare(r, 3, "./libt.so", &err), &err, TV_EIO,
                 "rank 1: ./libt.so: cannot open: No such file or directory");
    memset(r[1].msg, 'x', sizeof r[1].msg);
    assert_error(master_rank_tasks_compare(r, 3, "./libt.so", &err), &err, TV_EFORMAT,
                 "rank 1: a malformed task report");
}

/* ---- the hash kept with the run ------------------------------------------- */

static void test_master_plugin_resume_check_hashes(void **state)
{
    (void)state;
    char db[600];
    snprintf(db, sizeof db, "%s/notes.db", tu_tmpdir());
    struct master_config c;
    struct tv_error err = {0};
    parse_good(&c, "");
    struct store *st;
    struct store_options o = {.flags = STORE_CREATE};
    assert_ok(store_open(db, &o, &st, &err), &err);
    int64_t run;
    assert_ok(store_run_create(st, "r", "[run]\n", 1, "test", &run, &err), &err);
    /* nothing stored yet: refused too (the hash the run started with is unknown) */
    assert_error(master_plugin_resume_check(st, run, db, "r", &c, &err), &err, TV_ESTATE,
                 "SHA-256 (none stored) then");
    assert_ok(master_plugin_note(st, run, &c, &err), &err);
    char *v = NULL;
    assert_ok(store_run_note_get(st, run, MASTER_NOTE_PLUGIN_PATH, &v, &err), &err);
    assert_string_equal(v, task_plugin_path(c.task_kind));
    free(v);
    assert_ok(master_plugin_resume_check(st, run, db, "r", &c, &err), &err);
    /* the run started with another plugin */
    const char *old = "1111111111111111111111111111111111111111111111111111111111111111";
    assert_ok(store_run_note_set(st, run, MASTER_NOTE_PLUGIN_SHA256, old, &err), &err);
    const char *now = task_plugin_sha256(c.task_kind);
    char want[1400];
    snprintf(want, sizeof want,
             "run 'r': plugin %s changed since the run started (SHA-256 %s then, %s now): a "
             "changed fitness function breaks exact resume; to accept it: trevo resume %s --name "
             "r --set task.plugin_sha256=%s",
             c.task, old, now, db, now);
    assert_error(master_plugin_resume_check(st, run, db, "r", &c, &err), &err, TV_ESTATE, want);
    /* accepted: the file's hash */
    char set[128];
    snprintf(set, sizeof set, "task.plugin_sha256=%s", now);
    assert_ok(master_config_set(&c, set, &err), &err);
    assert_ok(master_plugin_resume_check(st, run, db, "r", &c, &err), &err);
    /* another hash than the file's is no acceptance */
    snprintf(set, sizeof set, "task.plugin_sha256=%s", old);
    assert_ok(master_config_set(&c, set, &err), &err);
    assert_error(master_plugin_resume_check(st, run, db, "r", &c, &err), &err, TV_EINVAL, "hashes");
    /* a built-in task has nothing to check or store */
    struct master_config x;
    assert_ok(master_config_parse(&x, "[run]\ntask = xor\n", "x.ini", &err), &err);
    assert_ok(master_plugin_resume_check(st, run, db, "r", &x, &err), &err);
    assert_ok(store_close(st, &err), &err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_sha256_fips_vectors),
        cmocka_unit_test(test_task_sha256_million_a_in_pieces),
        cmocka_unit_test(test_task_sha256_lengths_byte_by_byte),
        cmocka_unit_test(test_task_is_plugin_names),
        cmocka_unit_test(test_task_plugin_load_good_plugin),
        cmocka_unit_test(test_task_plugin_load_name_without_slash),
        cmocka_unit_test(test_task_plugin_load_missing_file_or_not_a_file),
        cmocka_unit_test(test_task_plugin_load_not_a_shared_library),
        cmocka_unit_test(test_task_plugin_load_missing_symbol),
        cmocka_unit_test(test_task_plugin_load_other_abi_version_by_entry),
        cmocka_unit_test(test_task_plugin_load_other_abi_version_in_row),
        cmocka_unit_test(test_task_plugin_load_abi_2_row_copied),
        cmocka_unit_test(test_task_plugin_load_bad_key_table),
        cmocka_unit_test(test_task_plugin_load_unresolved_symbol),
        cmocka_unit_test(test_task_kind_check_rows),
        cmocka_unit_test(test_master_config_parse_plugin_and_its_keys),
        cmocka_unit_test(test_master_config_parse_plugin_keys_checked),
        cmocka_unit_test(test_master_config_parse_plugin_error_has_the_line),
        cmocka_unit_test(test_master_config_set_plugin_sha256),
        cmocka_unit_test(test_master_rank_tasks_compare_shape_from_environment),
        cmocka_unit_test(test_master_rank_tasks_compare_failures_and_hashes),
        cmocka_unit_test(test_master_plugin_resume_check_hashes),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
