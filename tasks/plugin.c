/* plugin.c -- loading task kinds from shared libraries (plugin.h): hash,
 * dlopen, find the versioned entry, check the row, keep it loaded. */
#include "plugin.h"

#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A loaded plugin; the list lives until task_plugins_unload(). */
struct plugin {
    struct plugin *next;
    char *given;                  /* the path as the config gave it (the cache's key) */
    char *abs;                    /* its absolute path when loaded */
    void *handle;                 /* dlopen's */
    const struct task_kind *kind; /* the plugin's row, or &copy */
    char sha256[TASK_SHA256_HEX];
    /* The row of a plugin of version TASK_ABI_OLDEST (2): its bytes, which
     * are the first TASK_KIND_V2_SIZE of a version-3 row, the rest zero. */
    struct task_kind copy;
};

/* The size of a version-2 row: every field before evaluate_genome (task.h). */
#define TASK_KIND_V2_SIZE offsetof(struct task_kind, evaluate_genome)
_Static_assert(TASK_ABI_VERSION == 3 && TASK_ABI_OLDEST == 2,
               "a new task ABI version: say here how the older rows are copied");

static struct plugin *loaded;

int task_is_plugin(const char *task)
{
    size_t n = strlen(task);
    return strchr(task, '/') || (n >= 3 && !strcmp(task + n - 3, ".so"));
}

static const struct plugin *plugin_of(const struct task_kind *kind)
{
    for (const struct plugin *p = loaded; p; p = p->next)
        if (p->kind == kind)
            return p;
    return NULL;
}

const char *task_plugin_path(const struct task_kind *kind)
{
    const struct plugin *p = plugin_of(kind);
    return p ? p->abs : NULL;
}

const char *task_plugin_sha256(const struct task_kind *kind)
{
    const struct plugin *p = plugin_of(kind);
    return p ? p->sha256 : NULL;
}

/* 1 if s is 1 to max characters, each a lowercase letter, a digit, '_' or
 * one of `more`. */
static int name_ok(const char *s, size_t max, const char *more)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || strchr(more, c)))
            return 0;
    }
    return 1;
}

/* Why the numbers of a key (its type, default, range, choices) are wrong,
 * or NULL. */
static const char *key_values_check(const struct task_key *key)
{
    size_t n_choices = 0;
    switch (key->type) {
    case TASK_KEY_BOOL:
        return key->def == 0 || key->def == 1 ? NULL : "a bool's default is 0 or 1";
    case TASK_KEY_STRING:
        return !key->def_text || strlen(key->def_text) < TASK_STRING_MAX
                   ? NULL
                   : "its default text is longer than TASK_STRING_MAX - 1";
    case TASK_KEY_CHOICE:
        while (key->choices && key->choices[n_choices])
            n_choices++;
        if (!n_choices)
            return "a choice key has no choices (a NULL-terminated list of names)";
        return key->def >= 0 && key->def < (double)n_choices && key->def == floor(key->def)
                   ? NULL
                   : "its default is not the index of one of its choices";
    case TASK_KEY_INT:
    case TASK_KEY_DOUBLE:
        if (!(key->min <= key->def && key->def <= key->max && isfinite(key->def)))
            return "its default is not a finite number in [min, max]";
        return key->type == TASK_KEY_INT && key->def != floor(key->def)
                   ? "an int's default is a whole number"
                   : NULL;
    default:
        return "unknown type (TASK_KEY_INT, _DOUBLE, _BOOL, _STRING or _CHOICE)";
    }
}

static int key_check(const struct task_kind *k, size_t i, struct tv_error *err)
{
    const struct task_key *key = &k->keys[i];
    const char *why = NULL;
    if (!name_ok(key->name, 63, ""))
        why = "a key's name is 1 to 63 characters a-z, 0-9, '_'";
    else if (!key->doc)
        why = "no doc (the text `trevo run --help-config` shows)";
    else
        why = key_values_check(key);
    for (size_t j = 0; j < i && !why; j++)
        if (!strcmp(k->keys[j].name, key->name))
            why = "given twice in the key table";
    if (!why)
        return 0;
    return tv_error_set(err, TV_EINVAL, "task %s: key %zu ('%s'): %s", k->name, i,
                        key->name ? key->name : "(null)", why);
}

int task_kind_check(const struct task_kind *k, struct tv_error *err)
{
    if (!name_ok(k->name, 31, "-."))
        return tv_error_set(err, TV_EINVAL,
                            "task name '%s': a task's name is 1 to 31 characters a-z, 0-9, '_', "
                            "'-', '.'",
                            k->name ? k->name : "(null)");
    if (!k->open || (!k->evaluate && !k->evaluate_generation))
        return tv_error_set(err, TV_EINVAL, "task %s: no %s function (the kind must give it)",
                            k->name, !k->open ? "open()" : "evaluate() or evaluate_generation()");
    if (k->n_keys > TASK_MAX_KEYS || (k->n_keys && !k->keys))
        return tv_error_set(err, TV_EINVAL, "task %s: %zu [task] keys %s (at most %d)", k->name,
                            k->n_keys, k->n_keys > TASK_MAX_KEYS ? "" : "but no key table",
                            TASK_MAX_KEYS);
    for (size_t i = 0; i < k->n_keys; i++) {
        int rc = key_check(k, i, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* The entry of version v in handle, or NULL. */
static task_plugin_entry_fn entry_of(void *handle, unsigned v)
{
    char name[32];
    snprintf(name, sizeof name, TASK_PLUGIN_ENTRY_PREFIX "%u", v);
    task_plugin_entry_fn entry;
    /* dlsym's object pointer to a function pointer: POSIX defines it. */
    *(void **)&entry = dlsym(handle, name);
    return entry;
}

/* The entry of a version this trevo does not load that the library
 * exports, or 0. A plugin built against other headers names its entry
 * after their version. */
static unsigned other_version(void *handle)
{
    for (unsigned v = 1; v <= TASK_ABI_VERSION + 64u; v++)
        if ((v < TASK_ABI_OLDEST || v > TASK_ABI_VERSION) && entry_of(handle, v))
            return v;
    return 0;
}

/* Finds the entry in handle (this version's, else an older one this trevo
 * still loads) and checks what it returns: p->kind, or the error (no path
 * in front: the caller adds it). */
static int entry_kind(void *handle, struct plugin *p, struct tv_error *err)
{
    dlerror();
    unsigned version = TASK_ABI_VERSION;
    task_plugin_entry_fn entry = entry_of(handle, version);
    while (!entry && version > TASK_ABI_OLDEST)
        entry = entry_of(handle, --version);
    if (!entry) {
        unsigned v = other_version(handle);
        if (v)
            return tv_error_set(
                err, TV_EFORMAT,
                "built for task ABI version %u (it exports " TASK_PLUGIN_ENTRY_PREFIX
                "%u); this trevo takes version %u (" TASK_PLUGIN_ENTRY_NAME
                "): rebuild it against this trevo's headers",
                v, v, (unsigned)TASK_ABI_VERSION);
        return tv_error_set(err, TV_EFORMAT,
                            "no symbol " TASK_PLUGIN_ENTRY_NAME
                            ": not a trevo task plugin of task ABI version %u (a plugin defines "
                            "it with TASK_PLUGIN_EXPORT(kind), plugin.h)",
                            (unsigned)TASK_ABI_VERSION);
    }
    const struct task_kind *k = entry();
    if (!k)
        return tv_error_set(err, TV_EINVAL, TASK_PLUGIN_ENTRY_NAME "() returned no task");
    /* Only the first two fields are read before the version is known: they
     * come first in every version. */
    if (k->abi_version != version)
        return tv_error_set(err, TV_EFORMAT,
                            "task %s: built for task ABI version %u; this trevo takes version %u: "
                            "rebuild it against this trevo's headers",
                            k->name ? k->name : "(no name)", (unsigned)k->abi_version, version);
    if (version < TASK_ABI_VERSION) { /* a version-2 row: copied into a zeroed version-3 one */
        memset(&p->copy, 0, sizeof p->copy);
        memcpy(&p->copy, k, TASK_KIND_V2_SIZE);
        p->copy.abi_version = TASK_ABI_VERSION;
        k = &p->copy;
    }
    int rc = task_kind_check(k, err);
    if (!rc)
        p->kind = k;
    return rc;
}

static void plugin_free(struct plugin *p)
{
    if (!p)
        return;
    if (p->handle)
        dlclose(p->handle);
    free(p->given);
    free(p->abs);
    free(p);
}

/* The plugin at path into *out (a new list node, not yet linked). */
static int plugin_open(const char *path, struct plugin **out, struct tv_error *err)
{
    *out = NULL;
    struct plugin *p = calloc(1, sizeof *p);
    /* dlopen searches the library path for a name without '/': a plugin is a
     * file, so "libx.so" means "./libx.so". */
    size_t n = strlen(path);
    char *local = malloc(n + 3);
    if (!p || !local || !(p->given = strdup(path))) {
        free(local);
        plugin_free(p);
        return tv_error_set(err, TV_ENOMEM, "%s: out of memory", path);
    }
    snprintf(local, n + 3, "%s%s", strchr(path, '/') ? "" : "./", path);
    /* A device or a pipe could be read forever: a plugin is a file. */
    struct stat st;
    int rc = stat(local, &st) == 0 && !S_ISREG(st.st_mode)
                 ? tv_error_set(err, TV_EFORMAT, "%s: not a regular file", path)
                 : task_sha256_file(local, p->sha256, err);
    if (!rc) {
        p->abs = realpath(local, NULL);
        if (!p->abs && !(p->abs = strdup(local)))
            rc = tv_error_set(err, TV_ENOMEM, "%s: out of memory", path);
    }
    if (!rc && !(p->handle = dlopen(local, RTLD_NOW | RTLD_LOCAL))) {
        const char *why = dlerror();
        rc = tv_error_set(err, TV_EFORMAT,
                          "%s: cannot load it as a shared library (a task plugin is built with "
                          "cc -shared -fPIC): %s",
                          path, why ? why : "dlopen failed");
    }
    if (!rc && (rc = entry_kind(p->handle, p, err)) != 0)
        tv_error_prefix(err, "%s", path);
    free(local);
    if (rc) {
        plugin_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int task_plugin_load(const char *path, const struct task_kind **kind, struct tv_error *err)
{
    *kind = NULL;
    for (const struct plugin *p = loaded; p; p = p->next)
        if (!strcmp(p->given, path)) {
            *kind = p->kind;
            return 0;
        }
    struct plugin *p;
    int rc = plugin_open(path, &p, err);
    if (rc)
        return rc;
    p->next = loaded;
    loaded = p;
    *kind = p->kind;
    return 0;
}

void task_plugins_unload(void)
{
    while (loaded) {
        struct plugin *p = loaded;
        loaded = p->next;
        plugin_free(p);
    }
}
