/*  =========================================================================
    test_lines - textio's line input cut into blocks of whole lines

    spm_lines_chunk gives a client the blocks it stages for the VM to
    parse: every byte of the file exactly once, in order, each block whole
    lines (line ends included), at most the lines asked for and stopping
    once past the bytes asked for; a line longer than the read buffer comes
    whole; a last line without its line end is an error naming its line.
    =========================================================================
*/
#include "base/textio.h"
#include "tests/check_main.h"
#include "spm/spm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char file[64];

/*  Writes LEN bytes of TEXT to a fresh temporary file and opens it. */
static spm_lines_t *open_text(const char *text, size_t len)
{
    strcpy(file, "/tmp/spm_lines.XXXXXX");
    int fd = mkstemp(file);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
    spm_lines_t *r = spm_lines_open(file);
    ck_assert_ptr_nonnull(r);
    return r;
}

/*  Lines of varying length (empty ones, CRLF ones, and one of 3 MiB, past
    the 1 MiB reads) cut with MAXLINES and MAXBYTES: the blocks put back
    together are the file, and each keeps both bounds. */
static void cut(size_t maxlines, size_t maxbytes)
{
    size_t nlines = 100000, size = nlines * 24 + (3u << 20) + 64, at = 0;
    char *text = malloc(size);
    ck_assert_ptr_nonnull(text);
    for (size_t i = 0; i < nlines; i++) {
        if (i == 5000) { /* the long line */
            memset(text + at, '7', 3u << 20);
            at += 3u << 20;
        }
        at += (size_t)sprintf(text + at,
                              i % 7 == 0 ? "\n"
                              : i % 5    ? "%zu %zu\n"
                                         : "%zu\r\n",
                              i, i * 31 % 1000);
    }
    spm_lines_t *r = open_text(text, at);
    const char *data;
    size_t len, lines, got = 0, total = 0;
    int rc;
    while ((rc = spm_lines_chunk(r, maxlines, maxbytes, &data, &len, &lines)) == 1) {
        ck_assert_uint_ge(lines, 1);
        ck_assert_uint_le(lines, maxlines);
        ck_assert_msg(data[len - 1] == '\n', "a block ends inside a line");
        ck_assert_msg(got + len <= at && memcmp(data, text + got, len) == 0,
                      "bytes %zu.. differ from the file's", got);
        size_t ends = 0;
        for (size_t j = 0; j < len; j++)
            ends += data[j] == '\n';
        ck_assert_uint_eq(ends, lines);
        /* past maxbytes only by its last line */
        const char *last = len >= 2 ? memrchr(data, '\n', len - 1) : NULL;
        ck_assert_msg(lines == 1 || !last || (size_t)(last - data) + 1 < maxbytes,
                      "a block goes on past %zu bytes", maxbytes);
        /* and stops only at a bound or at the end of the file */
        ck_assert_msg(lines == maxlines || len >= maxbytes || got + len == at,
                      "a block of %zu lines, %zu bytes stops early", lines, len);
        got += len;
        total += lines;
        ck_assert_uint_eq(spm_lines_lineno(r), total);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(got, at);
    ck_assert_uint_eq(total, nlines);
    spm_lines_destroy(&r);
    unlink(file);
    free(text);
}

START_TEST(blocks_of_whole_lines)
{
    cut(5000, (size_t)16 << 20);
    cut(1, (size_t)16 << 20);
    cut(1000000, 100000);
    cut(3, 10);
    /* bounds near the 64 bytes searched at a time */
    cut(64, (size_t)1 << 20);
    cut(63, 64);
    cut(1000, 65);
}
END_TEST

START_TEST(last_line_without_its_end)
{
    spm_lines_t *r = open_text("1 2\n3 4\n5", 9);
    const char *data;
    size_t len, lines;
    ck_assert_int_eq(spm_lines_chunk(r, 100, 1000, &data, &len, &lines), 1);
    ck_assert_uint_eq(lines, 2);
    ck_assert_uint_eq(len, 8);
    ck_assert_int_eq(spm_lines_chunk(r, 100, 1000, &data, &len, &lines), SPM_EFORMAT);
    char want[128];
    snprintf(want, sizeof want, "%s:3: last line has no line end", file);
    ck_assert_msg(strstr(spm_error_detail(), want), "detail '%s'", spm_error_detail());
    spm_lines_destroy(&r);
    unlink(file);
    r = open_text("", 0);
    ck_assert_int_eq(spm_lines_chunk(r, 100, 1000, &data, &len, &lines), 0);
    spm_lines_destroy(&r);
    unlink(file);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lines");
    const spm_test_case_t c = {.timeout_s = 60};
    SPM_TEST_ADD(s, &c, blocks_of_whole_lines);
    SPM_TEST_ADD(s, &c, last_line_without_its_end);
    return s;
}

SPM_TEST_MAIN(suite)
