/*  outfile: what is written appears whole, under its name, only at commit
    (tens of MiB, past several writeback starts), with what a writer went
    back to fill in; a write that fails (a
    file size limit standing in for a full disk) fails the commit with the
    path named and leaves neither the file nor its temporary; /dev/full as
    a target says the disk is full; an abort leaves an older file as it
    was; the file gets the mode a plain create gives, or that of the file
    it replaces. */
#include "base/textio.h"
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "spm/spm.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[96]; /* this test's directory, below the case's scratch base */

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s/test-XXXXXX", base);
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

/*  Files in the test directory. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/*  Writes N lines "line I" to F. */
static void lines(FILE *f, int n)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "line %d\n", i);
}

START_TEST(written_whole_at_commit)
{
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    spm_outfile_t *f = spm_outfile_open(path);
    ck_assert_ptr_nonnull(f);
    const int n = 2000000; /* about 25 MiB: three writeback starts */
    lines(spm_outfile_stream(f), n);
    ck_assert_int_eq(access(path, F_OK), -1); /* nothing under the name yet */
    ck_assert_int_eq(spm_outfile_commit(&f), 0);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(entries(), 1); /* the temporary is gone */
    /* Compared without an assertion per line: each passing ck_assert
       reports its place to Check's parent process through a pipe, and
       two million of them took the test past its timeout. */
    FILE *r = fopen(path, "r");
    ck_assert_ptr_nonnull(r);
    char buf[64], want[64];
    int i = 0, first_bad = -1;
    while (fgets(buf, sizeof buf, r)) {
        snprintf(want, sizeof want, "line %d\n", i);
        if (first_bad < 0 && strcmp(buf, want) != 0)
            first_bad = i;
        i++;
    }
    fclose(r);
    ck_assert_msg(first_bad < 0, "line %d differs", first_bad);
    ck_assert_int_eq(i, n);
}
END_TEST

START_TEST(seek_back_to_fill_in)
{
    /* As Matrix Market writers do with the size line. */
    char path[128], buf[64] = {0};
    snprintf(path, sizeof path, "%s/out.mtx", dir);
    spm_outfile_t *f = spm_outfile_open(path);
    FILE *out = spm_outfile_stream(f);
    fputs("head\n          \n", out);
    long at = ftell(out);
    ck_assert_int_eq(at, 16);
    lines(out, 200000);
    ck_assert_int_eq(fseek(out, 5, SEEK_SET), 0);
    fputs("2 2 200000", out);
    ck_assert_int_eq(fseek(out, 0, SEEK_END), 0);
    fputs("end\n", out);
    ck_assert_int_eq(spm_outfile_commit(&f), 0);
    FILE *r = fopen(path, "r");
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, r));
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, r));
    ck_assert_str_eq(buf, "2 2 200000\n");
    ck_assert_int_eq(fseek(r, -4, SEEK_END), 0);
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, r));
    ck_assert_str_eq(buf, "end\n");
    fclose(r);
}
END_TEST

START_TEST(failed_write_fails_commit)
{
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {1 << 20, 1 << 20};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    spm_outfile_t *f = spm_outfile_open(path);
    ck_assert_ptr_nonnull(f);
    lines(spm_outfile_stream(f), 300000); /* 3.6 MB against a 1 MiB limit */
    ck_assert_int_eq(spm_outfile_commit(&f), SPM_EIO);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), path));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "too large"));
    ck_assert_int_eq(entries(), 0);
}
END_TEST

START_TEST(dev_full_is_a_full_disk)
{
    spm_outfile_t *f = spm_outfile_open("/dev/full");
    ck_assert_ptr_nonnull(f);
    lines(spm_outfile_stream(f), 100000);
    ck_assert_int_eq(spm_outfile_commit(&f), SPM_EFULL);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "/dev/full"));
}
END_TEST

START_TEST(abort_keeps_the_old_file)
{
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    FILE *old = fopen(path, "w");
    fputs("old\n", old);
    fclose(old);
    spm_outfile_t *f = spm_outfile_open(path);
    lines(spm_outfile_stream(f), 1000);
    spm_outfile_abort(&f);
    ck_assert_ptr_null(f);
    ck_assert_int_eq(entries(), 1);
    char buf[16] = {0};
    FILE *r = fopen(path, "r");
    ck_assert_ptr_nonnull(fgets(buf, sizeof buf, r));
    fclose(r);
    ck_assert_str_eq(buf, "old\n");
}
END_TEST

START_TEST(mode_of_a_plain_create_or_of_the_file_replaced)
{
    /* mkstemp's 0600 would hide a result from the rest of the group. */
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    mode_t old = umask(027);
    spm_outfile_t *f = spm_outfile_open(path);
    lines(spm_outfile_stream(f), 10);
    ck_assert_int_eq(spm_outfile_commit(&f), 0);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0640);
    ck_assert_int_eq(chmod(path, 0604), 0);
    f = spm_outfile_open(path);
    lines(spm_outfile_stream(f), 10);
    ck_assert_int_eq(spm_outfile_commit(&f), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0604);
    umask(old);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("outfile");
    const spm_test_case_t c = {
        .setup = setup, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, written_whole_at_commit);
    SPM_TEST_ADD(s, &c, seek_back_to_fill_in);
    SPM_TEST_ADD(s, &c, failed_write_fails_commit);
    SPM_TEST_ADD(s, &c, dev_full_is_a_full_disk);
    SPM_TEST_ADD(s, &c, abort_keeps_the_old_file);
    SPM_TEST_ADD(s, &c, mode_of_a_plain_create_or_of_the_file_replaced);
    return s;
}

SPM_TEST_MAIN(suite)
