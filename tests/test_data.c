/* test_data.c -- data/: CSV and IDX (plain and gzipped) loaded from files
 * written here, every refusal with its file and line or byte offset, and
 * Fashion-MNIST's test set when Debian's package is installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include "data.h"
#include "failalloc.h"
#include "testutil.h"

/* The test directory's file name, written into buf. */
static const char *path_of(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", tu_tmpdir(), name);
    return buf;
}

/* Writes bytes to the test directory's file name, gzipped if gz; returns its path, in buf. */
static const char *write_file(const char *name, const void *bytes, size_t n, int gz, char *buf,
                              size_t size)
{
    path_of(name, buf, size);
    if (gz) {
        gzFile f = gzopen(buf, "wb");
        assert_non_null(f);
        assert_int_equal(gzwrite(f, bytes, (unsigned)n), (int)n);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(buf, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, n, f), n);
        assert_int_equal(fclose(f), 0);
    }
    return buf;
}

static const char *write_text(const char *name, const char *text, char *buf, size_t size)
{
    return write_file(name, text, strlen(text), 0, buf, size);
}

/* An IDX images file of n images of r x c bytes (pixel i of image k: k * 7 +
 * i) and its labels (k % classes), in img and lab. */
static size_t make_idx(uint8_t *img, uint8_t *lab, uint32_t n, uint32_t r, uint32_t c,
                       unsigned classes, size_t *lab_len)
{
    const uint8_t hi[] = {0, 0, 8, 3,          0, 0, 0, (uint8_t)n,
                          0, 0, 0, (uint8_t)r, 0, 0, 0, (uint8_t)c};
    const uint8_t hl[] = {0, 0, 8, 1, 0, 0, 0, (uint8_t)n};
    memcpy(img, hi, sizeof hi);
    memcpy(lab, hl, sizeof hl);
    for (uint32_t k = 0; k < n; k++) {
        for (uint32_t i = 0; i < r * c; i++)
            img[16 + k * r * c + i] = (uint8_t)(k * 7 + i);
        lab[8 + k] = (uint8_t)(k % classes);
    }
    *lab_len = 8 + n;
    return 16 + (size_t)n * r * c;
}

/* data_load of p (and labels pl) into d: accepted, rows x features, with
 * that many classes, pixels or not. */
static void load_ok(const char *p, const char *pl, struct data_set *d, size_t rows, size_t features,
                    size_t classes, int pixels)
{
    struct tv_error err = {0};
    assert_ok(data_load(p, pl, d, &err), &err);
    assert_int_equal(d->n_rows, rows);
    assert_int_equal(d->n_features, features);
    assert_int_equal(d->n_classes, classes);
    assert_int_equal(d->pixels, pixels);
}

/* ---- CSV ----------------------------------------------------------------- */

static void test_data_load_csv_header_comments_blank_lines(void **state)
{
    (void)state;
    char p[256];
    write_text("a.csv", "x,y,class\r\n# a comment\n\n1.5, -2 ,0\r\n  \n3,4e1,2\n#x\n-0.25,7,1\n", p,
               sizeof p);
    struct data_set d;
    load_ok(p, NULL, &d, 3, 2, 3, 0);
    float row[2];
    data_row(&d, 1, row);
    assert_true(row[0] == 3.0f && row[1] == 40.0f);
    data_row(&d, 2, row);
    assert_true(row[0] == -0.25f && row[1] == 7.0f);
    assert_int_equal(d.labels[0], 0);
    assert_int_equal(d.labels[1], 2);
    assert_int_equal(d.labels[2], 1);
    data_free(&d);
    assert_null(d.mem);
    data_free(&d); /* a zeroed set: a no-op */
}

static void test_data_load_csv_gzipped(void **state)
{
    (void)state;
    char p[256];
    const char text[] = "1,2,1\n3,4,0\n";
    write_file("g.csv.gz", text, sizeof text - 1, 1, p, sizeof p);
    struct data_set d;
    struct tv_error err = {0};
    assert_ok(data_load(p, NULL, &d, &err), &err);
    assert_int_equal(d.n_rows, 2);
    assert_int_equal(d.n_classes, 2);
    assert_true(d.f32[3] == 4.0f);
    data_free(&d);
}

/* text[0..len) must be refused by the CSV parser with TV_EINVAL and a
 * message holding sub; the set stays empty. */
static void csv_refused(const char *text, size_t len, size_t n_classes, const char *sub)
{
    struct data_set d;
    struct tv_error err = {0};
    int rc = data_parse_csv(text, len, "b.csv", n_classes, &d, &err);
    assert_error(rc, &err, TV_EINVAL, sub);
    assert_null(d.mem);
    assert_int_equal(d.n_rows, 0);
}

/* The CSV parser's refusals, each for the test named by its tag: the text
 * (as "b.csv"), the classes asked for (0: as many as the labels), what the
 * message must hold. */
static const struct csv_refusal {
    const char *tag, *text;
    size_t n_classes;
    const char *sub;
} csv_refusals[] = {
    {"ragged", "a,b,c\n1,2,0\n\n1,0\n", 0, "b.csv:4: 2 columns, expected 3 (as on line 2)"},
    {"ragged", "1,2,0\n1,2,3,0\n", 0, "b.csv:2: 4 columns, expected 3 (as on line 1)"},
    {"number", "1,2,0\n1,x2,0\n", 0, "b.csv:2: column 2: 'x2' is not a number"},
    {"number", "1,2,0\n1,,0\n", 0, "b.csv:2: column 2: '' is not a number"},
    {"number", "1,2,0\n1,nan,0\n", 0, "b.csv:2: column 2: 'nan' is not a number"},
    {"number", "1,2,0\n1,1e99,0\n", 0, "b.csv:2: column 2: '1e99' is not a number"},
    /* a first line of numbers and empty cells or nan is no header (auto) */
    {"number", "1,,0\n1,2,0\n", 0, "b.csv:1: column 2: '' is not a number"},
    {"number", "nan,2,0\n1,2,0\n", 0, "b.csv:1: column 1: 'nan' is not a number"},
    {"label", "1,2,0\n1,2,-1\n", 0, "b.csv:2: label -1 out of range (a class number 0..65535)"},
    {"label", "1,2,0\n1,2,1.5\n", 0,
     "b.csv:2: label 1.5 is not a whole number (the last column is the class, 0..K-1)"},
    {"label", "1,2,0\n1,2,70000\n", 0, "b.csv:2: label 70000 out of range"},
    {"label", "1,2,0\n# c\n1,2,3\n", 3, "b.csv:3: label 3 out of range (a class number 0..2)"},
    {"no rows", "", 0, "b.csv: no data rows"},
    {"no rows", "a,b,c\n# only a header\n", 0, "b.csv: no data rows"},
    {"no rows", "# x\n3\n", 0, "b.csv:2: 1 column: a row needs features and a label"},
};

/* Every refusal of csv_refusals tagged tag (there is one at least). */
static void csv_refused_tagged(const char *tag)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof csv_refusals / sizeof csv_refusals[0]; i++) {
        const struct csv_refusal *c = &csv_refusals[i];
        if (strcmp(c->tag, tag) == 0) {
            csv_refused(c->text, strlen(c->text), c->n_classes, c->sub);
            n++;
        }
    }
    assert_true(n > 0);
}

static void test_data_parse_csv_ragged_row(void **state)
{
    (void)state;
    csv_refused_tagged("ragged");
}

static void test_data_parse_csv_unparsable_number(void **state)
{
    (void)state;
    static const char nul[] = "1,2,0\n1,2\0x,0\n";
    csv_refused(nul, sizeof nul - 1, 0, "b.csv:2: column 2:");
    csv_refused_tagged("number");
}

static void test_data_parse_csv_label_out_of_range(void **state)
{
    (void)state;
    csv_refused_tagged("label");
}

static void test_data_parse_csv_no_rows_or_one_column(void **state)
{
    (void)state;
    csv_refused_tagged("no rows");
}

/* header = auto takes a first line with a word for a header (scikit-learn's
 * "569,30,malignant,benign"), whatever its columns; yes always skips the
 * first line; no never. */
static void test_data_parse_csv_header_auto_yes_no(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int header;
        size_t rows; /* 0: refused with msg */
        const char *msg;
    } cases[] = {
        {"569,30,malignant,benign\n1,2,0\n3,4,1\n", DATA_HEADER_AUTO, 2, NULL},
        {"f1,2,class\n1,2,0\n", DATA_HEADER_AUTO, 1, NULL},
        {"# c\n\n  x , 2 ,y\n1,2,0\n", DATA_HEADER_AUTO, 1, NULL},
        {"1,2,0\n3,4,1\n", DATA_HEADER_AUTO, 2, NULL},
        {"1,2,0\n3,4,1\n", DATA_HEADER_YES, 1, NULL},
        {"# c\n7,8\n3,4,1\n", DATA_HEADER_YES, 1, NULL},
        {"f1,2,class\n1,2,0\n", DATA_HEADER_NO, 0, "b.csv:1: column 1: 'f1' is not a number"},
        {"1,2,0\n", DATA_HEADER_YES, 0, "b.csv: no data rows"},
        {"x,y,c\n", DATA_HEADER_AUTO, 0, "b.csv: no data rows"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct data_opts o = {.header = cases[i].header};
        struct data_set d;
        struct tv_error err = {0};
        int rc = data_parse_csv_opts(cases[i].text, strlen(cases[i].text), "b.csv", &o, &d, &err);
        if (cases[i].rows) {
            assert_ok(rc, &err);
            assert_int_equal(d.n_rows, cases[i].rows);
            assert_int_equal(d.n_features, 2);
        } else {
            assert_error(rc, &err, TV_EINVAL, cases[i].msg);
        }
        data_free(&d);
    }
    int h = -7;
    assert_int_equal(data_header_parse("yes", &h), 0);
    assert_int_equal(h, DATA_HEADER_YES);
    assert_int_equal(data_header_parse("auto", &h), 0);
    assert_int_equal(h, DATA_HEADER_AUTO);
    assert_int_equal(data_header_parse("no", &h), 0);
    assert_int_equal(h, DATA_HEADER_NO);
    assert_int_equal(data_header_parse("Yes", &h), -1);
    assert_int_equal(h, DATA_HEADER_NO);
}

/* A label past the classes names what set them. */
static void test_data_parse_csv_label_past_classes_named(void **state)
{
    (void)state;
    struct data_opts o = {.n_classes = 3, .classes_from = "the network has 3 outputs"};
    struct data_set d;
    struct tv_error err = {0};
    assert_error(data_parse_csv_opts("1,0\n2,3\n", 8, "b.csv", &o, &d, &err), &err, TV_EINVAL,
                 "b.csv:2: label 3 out of range (a class number 0..2: the network has 3 outputs)");
    assert_null(d.mem);
}

/* A gzipped file that ends inside its stream (a truncated download) or
 * whose compressed bytes are damaged: "corrupt gzip data at byte N", never
 * the rows that came before it or "no data rows". */
static void test_data_load_csv_corrupt_gzip(void **state)
{
    (void)state;
    char text[8192] = "", p[256], q[256];
    for (int i = 0; i < 400; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d,%d\n", i, i * 7 % 13,
                 i % 2);
    write_file("z.csv.gz", text, strlen(text), 1, p, sizeof p);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    uint8_t gz[8192];
    size_t n = fread(gz, 1, sizeof gz, f);
    fclose(f);
    assert_true(n > 40 && n < sizeof gz);
    struct data_set d;
    struct tv_error err = {0};
    char want[512];
    size_t cuts[] = {5, 12, n / 2, n - 4};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        write_file("cut.csv.gz", gz, cuts[k], 0, q, sizeof q);
        snprintf(want, sizeof want, "%s: corrupt gzip data at byte %zu (unexpected end of file)", q,
                 cuts[k]);
        assert_error(data_load(q, NULL, &d, &err), &err, TV_EIO, want);
        assert_null(d.mem);
    }
    for (size_t i = 20; i < 40; i++)
        gz[i] ^= 0x5a;
    write_file("bad.csv.gz", gz, n, 0, q, sizeof q);
    snprintf(want, sizeof want, "%s: corrupt gzip data at byte ", q);
    assert_error(data_load(q, NULL, &d, &err), &err, TV_EIO, want);
    assert_null(d.mem);
}

static void test_data_parse_csv_classes_given(void **state)
{
    (void)state;
    struct data_set d;
    struct tv_error err = {0};
    assert_ok(data_parse_csv("1,0\n2,1\n", 8, "c.csv", 5, &d, &err), &err);
    assert_int_equal(d.n_classes, 5);
    data_free(&d);
}

/* ---- IDX ----------------------------------------------------------------- */

static void test_data_load_idx_plain_and_gzipped(void **state)
{
    (void)state;
    uint8_t img[16 + 5 * 6], lab[8 + 5];
    size_t nl, ni = make_idx(img, lab, 5, 2, 3, 3, &nl);
    for (int gz = 0; gz < 2; gz++) {
        char pi[256], pl[256];
        write_file(gz ? "i.gz" : "i", img, ni, gz, pi, sizeof pi);
        write_file(gz ? "l.gz" : "l", lab, nl, gz, pl, sizeof pl);
        struct data_set d;
        load_ok(pi, pl, &d, 5, 6, 3, 1);
        assert_int_equal(d.u8[4 * 6 + 5], 4 * 7 + 5);
        assert_int_equal(d.labels[4], 1);
        float row[6];
        data_row(&d, 3, row);
        assert_true(row[2] == (float)(3 * 7 + 2) / 255.0f);
        data_free(&d);
    }
}

/* The IDX files most refusal tests edit: 4 images of 2 x 2, classes 0 and 1,
 * each array of its exact size. */
struct idx4 {
    uint8_t img[16 + 4 * 4], lab[8 + 4];
    size_t ni, nl; /* their lengths */
};

static struct idx4 idx4_make(void)
{
    struct idx4 x;
    x.ni = make_idx(x.img, x.lab, 4, 2, 2, 2, &x.nl);
    return x;
}

/* The IDX parser on img/lab (edited by the caller) must refuse with sub. */
static void idx_refused(const uint8_t *img, size_t ni, const uint8_t *lab, size_t nl,
                        size_t n_classes, const char *sub)
{
    struct data_set d;
    struct tv_error err = {0};
    int rc = data_parse_idx(img, ni, "img.idx", lab, nl, "lab.idx", n_classes, &d, &err);
    assert_error(rc, &err, TV_EINVAL, sub);
    assert_null(d.mem);
}

static void test_data_parse_idx_wrong_magic(void **state)
{
    (void)state;
    struct idx4 x = idx4_make();
    x.img[3] = 1;
    idx_refused(x.img, x.ni, x.lab, x.nl, 0,
                "img.idx: byte offset 0: wrong magic 0x00000801, expected 0x00000803 (IDX images");
    x.img[3] = 3;
    x.lab[2] = 0x0d; /* floats */
    idx_refused(x.img, x.ni, x.lab, x.nl, 0,
                "lab.idx: byte offset 0: wrong magic 0x00000d01, expected 0x00000801 (IDX labels");
}

static void test_data_parse_idx_truncated(void **state)
{
    (void)state;
    struct idx4 x = idx4_make();
    idx_refused(x.img, 2, x.lab, x.nl, 0,
                "img.idx: truncated at byte offset 2: the magic number needs 4 bytes, 2 left");
    idx_refused(x.img, 10, x.lab, x.nl, 0,
                "img.idx: truncated at byte offset 10: the header's dimensions needs 4 bytes");
    idx_refused(x.img, x.ni - 1, x.lab, x.nl, 0,
                "img.idx: truncated at byte offset 31: the header claims 32 bytes");
    idx_refused(x.img, x.ni, x.lab, x.nl - 1, 0,
                "lab.idx: truncated at byte offset 11: the header claims 12 bytes");
}

static void test_data_load_idx_truncated_gzip_file(void **state)
{
    (void)state;
    struct idx4 x = idx4_make();
    char pi[256], pl[256];
    write_file("t.gz", x.img, x.ni - 3, 1, pi, sizeof pi);
    write_file("tl", x.lab, x.nl, 0, pl, sizeof pl);
    struct data_set d;
    struct tv_error err = {0};
    char want[512];
    snprintf(want, sizeof want, "%s: truncated at byte offset 29: the header claims 32 bytes", pi);
    assert_error(data_load(pi, pl, &d, &err), &err, TV_EINVAL, want);
    assert_null(d.mem);
}

static void test_data_parse_idx_count_mismatch(void **state)
{
    (void)state;
    struct idx4 x = idx4_make();
    x.lab[7] = 3;
    idx_refused(x.img, x.ni, x.lab, x.nl - 1, 0,
                "img.idx has 4 images, lab.idx 3 labels: counts disagree");
}

static void test_data_parse_idx_label_out_of_range(void **state)
{
    (void)state;
    struct idx4 x = idx4_make();
    x.lab[10] = 9;
    idx_refused(x.img, x.ni, x.lab, x.nl, 5, "lab.idx: byte offset 10: label 9 out of range 0..4");
}

static void test_data_parse_idx_trailing_bytes_or_empty(void **state)
{
    (void)state;
    uint8_t img[16 + 4 * 4 + 1], lab[8 + 4];
    size_t nl, ni = make_idx(img, lab, 4, 2, 2, 2, &nl);
    img[ni] = 0;
    idx_refused(img, ni + 1, lab, nl, 0, "img.idx: byte offset 32: data after the last image");
    img[7] = 0;
    lab[7] = 0;
    idx_refused(img, 16, lab, 8, 0, "img.idx: byte offset 4: no images");
}

/* ---- IDX headers that claim more than the file holds --------------------- */

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* An images file of the header n x r x c and `body` bytes after it (at most
 * 64), with a labels file of n labels (whole up to 10000, else its header
 * only), written plain or gzipped: data_load must refuse it with "<images
 * path>: " then want, in under a second, with no allocation of 100 MB or
 * more and under 100 MB resident. */
static void idx_file_refused(uint32_t n, uint32_t r, uint32_t c, size_t body, int gz,
                             const char *want)
{
    static uint8_t lab[8 + 10000] = {0, 0, 8, 1};
    uint8_t img[16 + 64] = {0, 0, 8, 3};
    put_be32(img + 4, n);
    put_be32(img + 8, r);
    put_be32(img + 12, c);
    put_be32(lab + 4, n);
    char pi[256], pl[256], msg[600];
    write_file(gz ? "claim.gz" : "claim", img, 16 + body, gz, pi, sizeof pi);
    write_file(gz ? "claim_l.gz" : "claim_l", lab, 8 + (n <= 10000 ? n : 0), gz, pl, sizeof pl);
    snprintf(msg, sizeof msg, "%s: %s", pi, want);
    struct data_set d;
    struct tv_error err = {0};
    double t0 = tv_now();
    failalloc_largest(1);
    assert_error(data_load(pi, pl, &d, &err), &err, TV_EINVAL, msg);
    assert_null(d.mem);
    assert_true(tv_now() - t0 < 1.0);
    assert_true(failalloc_largest(0) < 100u << 20); /* no buffer of the claim's size */
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    assert_true(ru.ru_maxrss < 100 * 1024); /* KiB */
}

/* 16 bytes whose dimensions ask for about 2^64 bytes: a truncation, not "out
 * of memory", and nothing of that size allocated (plain: the file's size;
 * gzipped: the buffer grows only as bytes arrive). */
static void test_data_load_idx_16_bytes_claiming_2_64(void **state)
{
    (void)state;
    for (int gz = 0; gz < 2; gz++)
        idx_file_refused(0xffffffffu, 0xffffffffu, 1, 0, gz,
                         "truncated at byte offset 16: the header claims 18446744065119617041 "
                         "bytes");
}

/* A header that claims 10 GB over a body of 40 bytes. */
static void test_data_load_idx_claiming_10_gb(void **state)
{
    (void)state;
    for (int gz = 0; gz < 2; gz++)
        idx_file_refused(10000, 1000, 1000, 40, gz,
                         "truncated at byte offset 56: the header claims 10000000016 bytes");
}

/* One byte short, of the images (plain and gzipped) or of the labels. */
static void test_data_load_idx_one_byte_short(void **state)
{
    (void)state;
    struct idx4 x = idx4_make();
    char pi[256], pl[256], want[600];
    struct data_set d;
    struct tv_error err = {0};
    for (int gz = 0; gz < 2; gz++) {
        write_file(gz ? "s.gz" : "s", x.img, x.ni - 1, gz, pi, sizeof pi);
        write_file("sl", x.lab, x.nl, 0, pl, sizeof pl);
        snprintf(want, sizeof want, "%s: truncated at byte offset 31: the header claims 32 bytes",
                 pi);
        assert_error(data_load(pi, pl, &d, &err), &err, TV_EINVAL, want);
        write_file("s", x.img, x.ni, 0, pi, sizeof pi);
        write_file(gz ? "sl.gz" : "sl", x.lab, x.nl - 1, gz, pl, sizeof pl);
        snprintf(want, sizeof want, "%s: truncated at byte offset 11: the header claims 12 bytes",
                 pl);
        assert_error(data_load(pi, pl, &d, &err), &err, TV_EINVAL, want);
        assert_null(d.mem);
    }
}

/* Dimensions whose product passes what a size_t counts are refused, named. */
static void test_data_parse_idx_dims_overflow(void **state)
{
    (void)state;
    uint8_t img[16] = {0, 0, 8, 3}, lab[8] = {0, 0, 8, 1, 0xff, 0xff, 0xff, 0xff};
    memset(img + 4, 0xff, 12);
    char want[200];
    snprintf(want, sizeof want,
             "img.idx: byte offset 4: the header's dimensions 4294967295 x 4294967295 x "
             "4294967295 overflow: the file would pass %zu bytes",
             SIZE_MAX);
    idx_refused(img, sizeof img, lab, sizeof lab, 0, want);
    /* the same through a file: refused before any allocation */
    char pi[256], pl[256];
    write_file("o", img, sizeof img, 0, pi, sizeof pi);
    write_file("ol", lab, sizeof lab, 0, pl, sizeof pl);
    struct data_set d;
    struct tv_error err = {0};
    assert_error(data_load(pi, pl, &d, &err), &err, TV_EINVAL,
                 "the header's dimensions 4294967295 x 4294967295 x 4294967295 overflow");
}

/* ---- data_load's choices ------------------------------------------------- */

static void test_data_load_refuses_wrong_combinations(void **state)
{
    (void)state;
    struct idx4 x = idx4_make();
    char pi[256], pl[256], pc[256], want[600];
    write_file("c.idx", x.img, x.ni, 0, pi, sizeof pi);
    write_file("c.lab", x.lab, x.nl, 0, pl, sizeof pl);
    write_text("c.csv", "1,0\n", pc, sizeof pc);
    struct data_set d;
    struct tv_error err = {0};
    snprintf(want, sizeof want, "%s: an IDX images file needs its labels file", pi);
    assert_error(data_load(pi, NULL, &d, &err), &err, TV_EINVAL, want);
    snprintf(want, sizeof want, "%s: a labels file (%s) goes with IDX images", pc, pl);
    assert_error(data_load(pc, pl, &d, &err), &err, TV_EINVAL, want);
    snprintf(want, sizeof want, "%s/none.csv: No such file", tu_tmpdir());
    assert_error(data_load(path_of("none.csv", pc, sizeof pc), NULL, &d, &err), &err, TV_EIO, want);
    assert_error(data_load("fashion-mnist:valid", NULL, &d, &err), &err, TV_EINVAL,
                 "fashion-mnist:valid: unknown data set (fashion-mnist:train or "
                 "fashion-mnist:test)");
    assert_error(data_load("fashion-mnist:test", pl, &d, &err), &err, TV_EINVAL,
                 "fashion-mnist:test: names its labels itself");
    assert_null(d.mem);
}

static void test_data_load_fashion_mnist_test(void **state)
{
    (void)state;
    if (access(DATA_FASHION_MNIST_DIR "/t10k-images-idx3-ubyte.gz", R_OK))
        skip(); /* Debian's dataset-fashion-mnist is not installed */
    struct data_set d;
    load_ok("fashion-mnist:test", NULL, &d, 10000, 784, 10, 1);
    /* the first test image is an ankle boot (class 9), the second a pullover */
    assert_int_equal(d.labels[0], 9);
    assert_int_equal(d.labels[1], 2);
    data_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_load_csv_header_comments_blank_lines),
        cmocka_unit_test(test_data_load_csv_gzipped),
        cmocka_unit_test(test_data_parse_csv_ragged_row),
        cmocka_unit_test(test_data_parse_csv_unparsable_number),
        cmocka_unit_test(test_data_parse_csv_label_out_of_range),
        cmocka_unit_test(test_data_parse_csv_no_rows_or_one_column),
        cmocka_unit_test(test_data_parse_csv_classes_given),
        cmocka_unit_test(test_data_parse_csv_header_auto_yes_no),
        cmocka_unit_test(test_data_parse_csv_label_past_classes_named),
        cmocka_unit_test(test_data_load_csv_corrupt_gzip),
        cmocka_unit_test(test_data_load_idx_plain_and_gzipped),
        cmocka_unit_test(test_data_parse_idx_wrong_magic),
        cmocka_unit_test(test_data_parse_idx_truncated),
        cmocka_unit_test(test_data_load_idx_truncated_gzip_file),
        cmocka_unit_test(test_data_parse_idx_count_mismatch),
        cmocka_unit_test(test_data_parse_idx_label_out_of_range),
        cmocka_unit_test(test_data_parse_idx_trailing_bytes_or_empty),
        cmocka_unit_test(test_data_load_idx_16_bytes_claiming_2_64),
        cmocka_unit_test(test_data_load_idx_claiming_10_gb),
        cmocka_unit_test(test_data_load_idx_one_byte_short),
        cmocka_unit_test(test_data_parse_idx_dims_overflow),
        cmocka_unit_test(test_data_load_refuses_wrong_combinations),
        cmocka_unit_test(test_data_load_fashion_mnist_test),
    };
    return cmocka_run_group_tests(tests, tu_tmpdir_setup, tu_tmpdir_teardown);
}
