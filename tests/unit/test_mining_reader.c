/*  =========================================================================
    test_mining_reader - the streaming FIMI and named-item readers
    =========================================================================
*/
#include "programs/apriori/reader.h"
#include "tests/check_main.h"
#include "spm/spm.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char file[64];

/*  Writes TEXT to a fresh temporary file and opens a reader on it. */
static spm_reader_t *open_text(const char *text, int names)
{
    strcpy(file, "/tmp/spm_reader.XXXXXX");
    int fd = mkstemp(file);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    spm_reader_t *r = spm_reader_open(file, names);
    ck_assert_ptr_nonnull(r);
    return r;
}

static void done(spm_reader_t **r)
{
    spm_reader_destroy(r);
    unlink(file);
}

/*  Reads the next transaction and compares it with the N items in WANT.
    A passing check asserts nothing: each passing Check assertion reports
    its place to Check's parent through a pipe, and the long case's
    hundreds of thousands of lines took it past its timeout under
    AddressSanitizer. */
static void expect(spm_reader_t *r, const uint32_t *want, size_t n)
{
    const uint32_t *items;
    size_t got;
    int rc = spm_reader_next(r, &items, &got);
    if (rc != 1 || got != n || (n && memcmp(items, want, n * sizeof *want) != 0))
        ck_abort_msg("line %llu: not the items wanted (read gave %d, %zu items; want %zu)",
                     (unsigned long long)spm_reader_count(r), rc, got, n);
}

START_TEST(fimi_lines)
{
    spm_reader_t *r = open_text("1 2 3\r\n\n7\t8  9 \n  \n4 4 2\n", 0);
    expect(r, (uint32_t[]){1, 2, 3}, 3); /* CRLF */
    expect(r, NULL, 0);                  /* empty line: empty transaction */
    expect(r, (uint32_t[]){7, 8, 9}, 3); /* tabs, repeated blanks */
    expect(r, NULL, 0);                  /* blanks only */
    expect(r, (uint32_t[]){4, 4, 2}, 3); /* as read: repeats dropped later */
    const uint32_t *items;
    size_t n;
    ck_assert_int_eq(spm_reader_next(r, &items, &n), 0);
    ck_assert_uint_eq(spm_reader_count(r), 5);
    ck_assert_uint_eq(spm_reader_domain(r), 10);
    done(&r);
}
END_TEST

/*  Numbers of every length (read 8 bytes at a time up to 7 digits, digit
    by digit beyond), leading zeros, and lines that cross the reader's
    1 MiB chunks or are longer than one. */
START_TEST(numbers_of_every_length_and_long_files)
{
    size_t nlines = 200000, long_items = 400000, size = nlines * 64 + long_items * 8 + 256;
    char *text = malloc(size), *p = text;
    ck_assert_ptr_nonnull(text);
    p += sprintf(p, "7 42 123 4567 89012 345678 9012345 67890123 456789012 4294967294\n");
    p += sprintf(p, "0007\t00000000012 0 00\n");
    for (size_t i = 0; i < nlines; i++)
        p += sprintf(p, "%zu %zu %zu\n", i, i * 7 % 1000003, i % 10);
    for (size_t i = 0; i < long_items; i++)
        p += sprintf(p, "%zu ", i % 1000);
    p += sprintf(p, "\n");
    spm_reader_t *r = open_text(text, 0);
    free(text);
    expect(r,
           (uint32_t[]){7, 42, 123, 4567, 89012, 345678, 9012345, 67890123, 456789012, 4294967294u},
           10);
    expect(r, (uint32_t[]){7, 12, 0, 0}, 4);
    for (size_t i = 0; i < nlines; i++)
        expect(r, (uint32_t[]){(uint32_t)i, (uint32_t)(i * 7 % 1000003), (uint32_t)(i % 10)}, 3);
    const uint32_t *items;
    size_t n;
    ck_assert_int_eq(spm_reader_next(r, &items, &n), 1);
    ck_assert_uint_eq(n, long_items);
    size_t bad = long_items;
    for (size_t i = 0; i < long_items && bad == long_items; i++)
        if (items[i] != i % 1000)
            bad = i;
    ck_assert_msg(bad == long_items, "item %zu of the long line differs", bad);
    ck_assert_int_eq(spm_reader_next(r, &items, &n), 0);
    ck_assert_uint_eq(spm_reader_count(r), nlines + 3);
    ck_assert_uint_eq(spm_reader_domain(r), 4294967295u);
    done(&r);
}
END_TEST

START_TEST(names_map_both_ways)
{
    spm_reader_t *r = open_text("bread milk\nmilk, eggs bread\n", 1);
    expect(r, (uint32_t[]){0, 1}, 2);
    expect(r, (uint32_t[]){2, 3, 0}, 3);
    ck_assert_str_eq(spm_reader_name(r, 0), "bread");
    ck_assert_str_eq(spm_reader_name(r, 2), "milk,");
    ck_assert_ptr_null(spm_reader_name(r, 4));
    done(&r);
}
END_TEST

START_TEST(many_names)
{
    /* Enough names to grow the table several times. */
    char *text = malloc(5000 * 12);
    size_t at = 0;
    for (int i = 0; i < 5000; i++)
        at += (size_t)sprintf(text + at, "w%d w%d\n", i, i / 2);
    spm_reader_t *r = open_text(text, 1);
    free(text);
    const uint32_t *items;
    size_t n;
    while (spm_reader_next(r, &items, &n) == 1)
        ;
    ck_assert_uint_eq(spm_reader_domain(r), 5000);
    ck_assert_str_eq(spm_reader_name(r, 4999), "w4999");
    done(&r);
}
END_TEST

/*  Reading TEXT fails with SPM_EFORMAT and a detail ending in WANT. */
static void expect_error(const char *text, const char *want)
{
    spm_reader_t *r = open_text(text, 0);
    const uint32_t *items;
    size_t n;
    int rc;
    while ((rc = spm_reader_next(r, &items, &n)) == 1)
        ;
    ck_assert_int_eq(rc, SPM_EFORMAT);
    char where[128];
    snprintf(where, sizeof where, "%s:%s", file, want);
    ck_assert_msg(strstr(spm_error_detail(), where) != NULL, "detail '%s' lacks '%s'",
                  spm_error_detail(), where);
    done(&r);
}

START_TEST(bad_items)
{
    expect_error("1 2\n3 a 4\n", "2: item 'a' is not a non-negative integer");
    expect_error("1 2\n\n-5\n", "3: negative item '-5'");
    expect_error("4294967295\n", "1: item '4294967295' is over");
    expect_error("1 2\n3", "2: last line has no line end");
    expect_error("1 2.5\n", "1: item '2.5'");
    expect_error("5 12345678901\n", "1: item '12345678901' is over");
    expect_error("1 23x4 5\n", "1: item '23x4' is not a non-negative integer");
}
END_TEST

START_TEST(missing_file)
{
    ck_assert_ptr_null(spm_reader_open("/nonexistent/x.dat", 0));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "/nonexistent/x.dat: No such file"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mining_reader");
    SPM_TEST_ADD(s, NULL, fimi_lines);
    SPM_TEST_ADD(s, NULL, numbers_of_every_length_and_long_files);
    SPM_TEST_ADD(s, NULL, names_map_both_ways);
    SPM_TEST_ADD(s, NULL, many_names);
    SPM_TEST_ADD(s, NULL, bad_items);
    SPM_TEST_ADD(s, NULL, missing_file);
    return s;
}

SPM_TEST_MAIN(suite)
