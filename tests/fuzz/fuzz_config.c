/* fuzz_config.c -- libFuzzer target for master_config_parse (the INI
 * experiment config, on libinih) and master_config_set (the `--set KEY=VALUE`
 * of a resume). Any text must give 0 or TV_EINVAL with a message that starts
 * with the file name and, when it names a line, a line of the text; never a
 * crash. A round trip: whatever parses, dumped (master_config_dump) and parsed
 * again, must give the same dump -- the dump is what a run stores and a
 * resume reads back. The same for whatever an assignment sets. A config
 * that parses opens its task with its [task] values (what every rank does).
 * Seeds: tests/fuzz/corpus/config/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "master.h"

/* The dump of c must parse, and dump again to the same text. */
static void check_round_trip(const struct master_config *c)
{
    struct tv_error err = {0};
    struct tv_buf d1 = {0}, d2 = {0};
    struct master_config again;
    CHECK(master_config_dump(c, &d1, &err) == 0);
    CHECK(master_config_parse(&again, (const char *)d1.data, "dump", &err) == 0);
    CHECK(master_config_dump(&again, &d2, &err) == 0);
    if (d1.len != d2.len || memcmp(d1.data, d2.data, d1.len)) {
        fprintf(stderr, "first dump:\n%s\nsecond dump:\n%s\n", (char *)d1.data, (char *)d2.data);
        CHECK(!"the dump changed on a round trip");
    }
    tv_buf_free(&d1);
    tv_buf_free(&d2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tv_error err = {0};
    /* The parser takes NUL-terminated text: a copy, cut at the first NUL. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    if (size)
        memcpy(text, data, size);
    text[size] = '\0';
    size_t n_lines = 1;
    for (const char *p = text; *p; p++)
        n_lines += *p == '\n';

    struct master_config c;
    int rc = master_config_parse(&c, text, "fuzz.ini", &err);
    if (rc) {
        CHECK(rc == TV_EINVAL && err.code == rc && !strncmp(err.msg, "fuzz.ini:", 9));
        const char *p = err.msg + 9;
        if (*p >= '0' && *p <= '9') {
            char *end;
            unsigned long line = strtoul(p, &end, 10);
            CHECK(line >= 1 && line <= n_lines && end[0] == ':' && end[1] == ' ' && end[2]);
        } else {
            CHECK(p[0] == ' ' && p[1]);
        }
    } else {
        check_round_trip(&c);
        struct task_instance *t;
        CHECK(master_config_open_task(&c, &t, &err) == 0);
        CHECK(c.worker.task == t && t->kind == c.task_kind && t->n_inputs && t->n_outputs);
        task_close(t);
    }

    /* The same text as a resume assignment, on a valid config. */
    CHECK(master_config_parse(&c, "[run]\ntask = xor\n", "base", &err) == 0);
    rc = master_config_set(&c, text, &err);
    if (rc)
        CHECK(rc == TV_EINVAL && err.code == rc && !strncmp(err.msg, "--set ", 6));
    else
        check_round_trip(&c);
    free(text);
    return 0;
}
