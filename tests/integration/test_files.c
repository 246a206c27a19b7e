/*  Hostile files and outputs against the packaged programs (issue 39):
    an output that names an input, numbers that are not finite, a header
    that claims more than its file holds, item names of any bytes in JSON,
    a full device under every output, an input changed while it is read.
    Each runs the real binary ($SPM_BIN) on an embedded VM, on real files
    in their real formats, and asserts what a user gets: one line on
    stderr, a non-zero exit, and no file lost or corrupted. */
#include "isa/core/npz.h"
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "tests/spm_test.h"

#include <math.h>
#include <sys/resource.h>

static void write_file(const char *p, const void *data, size_t len)
{
    FILE *f = fopen(p, "wb");
    ck_assert(f != NULL);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

static void write_text(const char *p, const char *text)
{
    write_file(p, text, strlen(text));
}

/*  The whole of file P (caller frees), its length into *LEN (may be NULL). */
static char *read_file(const char *p, size_t *len)
{
    int fd = open(p, O_RDONLY);
    ck_assert_msg(fd >= 0, "%s: %s", p, strerror(errno));
    char *s = spm_test_slurp(fd);
    close(fd);
    if (len)
        *len = strlen(s);
    return s;
}

/*  1 when the text S is exactly one line. */
static int one_line(const char *s)
{
    const char *nl = strchr(s, '\n');
    return nl && nl[1] == '\0';
}

/*  Runs spm ARGV; asserts it failed with exactly the line WANT on stderr
    (or, with WANT NULL, one line) and nothing on stdout. */
static void fails_with(const char *const *argv, const char *want)
{
    char *out = NULL, *err = NULL;
    int rc = spm_test_run(argv, 60, &out, &err);
    ck_assert_msg(rc == 1, "spm %s %s: exit %d, stderr:\n%s", argv[0], argv[1], rc, err);
    ck_assert_msg(one_line(err), "spm %s: not one line on stderr:\n%s", argv[0], err);
    if (want)
        ck_assert_msg(strcmp(err, want) == 0, "stderr:\n%s\nwanted:\n%s", err, want);
    ck_assert_msg(*out == '\0', "stdout:\n%s", out);
    free(out);
    free(err);
}

static const char transactions[] = "1 2 3\n1 2\n2 3\n1 3\n1 2 3\n";
static const char identity[] =
    "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 2 1\n";

/* ------------------------------------------------ an output over an input */

/*  `spm mine same.dat -o same.dat`, through a hard and a symbolic link,
    and --itemsets: refused before anything is written, the input intact. */
START_TEST(output_that_names_the_input_is_refused)
{
    write_text(path("same.dat"), transactions);
    ck_assert_int_eq(link(path("same.dat"), path("hard.dat")), 0);
    ck_assert_int_eq(symlink(path("same.dat"), path("sym.dat")), 0);
    char want[512];
    snprintf(want, sizeof want,
             "spm: mine: %s is the input %s: writing it would replace the input; give another "
             "output file\n",
             path("same.dat"), path("same.dat"));
    fails_with((const char *[]){"mine", path("same.dat"), "--min-support", "2", "-o",
                                path("same.dat"), NULL},
               want);
    fails_with((const char *[]){"mine", path("same.dat"), "--min-support", "2", "-o",
                                path("hard.dat"), NULL},
               NULL);
    fails_with((const char *[]){"mine", path("sym.dat"), "--min-support", "2", "--itemsets",
                                path("same.dat"), "-o", path("rules.txt"), NULL},
               NULL);
    fails_with((const char *[]){"mine", path("same.dat"), "--min-support", "2", "--itemsets-only",
                                "--itemsets", path("sym.dat"), NULL},
               NULL);
    char *now = read_file(path("same.dat"), NULL);
    ck_assert_str_eq(now, transactions);
    free(now);
    ck_assert_int_eq(access(path("rules.txt"), F_OK), -1); /* nothing was written */

    write_text(path("A.mtx"), identity);
    write_text(path("B.mtx"), identity);
    ck_assert_int_eq(symlink(path("B.mtx"), path("C.npz")), 0);
    fails_with((const char *[]){"matmul", path("A.mtx"), path("B.mtx"), "-o", path("A.mtx"), NULL},
               NULL);
    fails_with((const char *[]){"matmul", path("A.mtx"), path("B.mtx"), "-o", path("C.npz"), NULL},
               NULL);
    for (const char *const *m = (const char *[]){"A.mtx", "B.mtx", NULL}; *m; m++) {
        char *s = read_file(path(*m), NULL);
        ck_assert_str_eq(s, identity);
        free(s);
    }
    /* gen's -o is no input: it still replaces what is there */
    const char *gen[] = {"gen", "transactions", "--transactions", "10", "-o", path("same.dat"),
                         NULL};
    ck_assert_int_eq(spm_test_run(gen, 60, NULL, NULL), 0);
}
END_TEST

/* ------------------------------------------------------ nan and inf refused */

/*  Writes the float64 .npy of the 2 x 2 matrix A (C order). */
static void write_npy(const char *p, const double *a)
{
    spm_npy_t h;
    ck_assert_int_eq(spm_npy_set(&h, "<f8", 2, (uint64_t[]){2, 2}), 0);
    char buf[SPM_NPY_WRITTEN_MAX + 32];
    size_t len = spm_npy_header(&h, 0, buf);
    memcpy(buf + len, a, 32); /* little-endian host */
    write_file(p, buf, len + 32);
}

/*  Writes a 2 x 2 COO .npz as scipy.sparse.save_npz does, with the one
    entry (1, 1) = V. */
static void write_coo(const char *p, double v)
{
    spm_outfile_t *out = spm_outfile_open(p);
    ck_assert(out != NULL);
    spm_npz_writer_t *w = spm_npz_writer_new(out);
    spm_npy_t row, col, fmt, shape, data;
    int64_t one = 1, dims[2] = {2, 2};
    ck_assert_int_eq(spm_npy_set(&row, "<i8", 1, (uint64_t[]){1}), 0);
    col = row;
    ck_assert_int_eq(spm_npy_set(&fmt, "|S3", 0, NULL), 0);
    ck_assert_int_eq(spm_npy_set(&shape, "<i8", 1, (uint64_t[]){2}), 0);
    ck_assert_int_eq(spm_npy_set(&data, "<f8", 1, (uint64_t[]){1}), 0);
    ck_assert_int_eq(spm_npz_writer_array(w, "row", &row, &one), 0);
    ck_assert_int_eq(spm_npz_writer_array(w, "col", &col, &one), 0);
    ck_assert_int_eq(spm_npz_writer_array(w, "format", &fmt, "coo"), 0);
    ck_assert_int_eq(spm_npz_writer_array(w, "shape", &shape, dims), 0);
    ck_assert_int_eq(spm_npz_writer_array(w, "data", &data, &v), 0);
    ck_assert_int_eq(spm_npz_writer_close(&w), 0);
    ck_assert_int_eq(spm_outfile_commit(&out), 0);
}

/*  nan, inf and -inf in a coordinate file, an array file, a .npy and a
    .npz are refused in one line that names the file and the line (the
    entry, in a binary file), and C is not written. Before, they were
    multiplied, and the result depended on --block. */
START_TEST(nan_and_inf_entries_are_refused)
{
    char want[512];
    write_text(path("I.mtx"), identity);
    write_text(path("nan.mtx"),
               "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 1 nan\n");
    write_text(path("inf.mtx"), "%%MatrixMarket matrix array real general\n2 2\n1\n0\n-inf\n4\n");
    write_text(path("Inf.mtx"),
               "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n% c\n2 1 INF\n");
    snprintf(want, sizeof want, "spm: matmul: %s:4: 'nan' is not a finite number\n",
             path("nan.mtx"));
    fails_with(
        (const char *[]){"matmul", path("nan.mtx"), path("I.mtx"), "-o", path("C.mtx"), NULL},
        want);
    snprintf(want, sizeof want, "spm: matmul: %s:5: '-inf' is not a finite number\n",
             path("inf.mtx"));
    fails_with((const char *[]){"matmul", path("I.mtx"), path("inf.mtx"), "-o", path("C.mtx"),
                                "--block", "1", NULL},
               want);
    snprintf(want, sizeof want, "spm: matmul: %s:4: 'INF' is not a finite number\n",
             path("Inf.mtx"));
    fails_with(
        (const char *[]){"matmul", path("Inf.mtx"), path("I.mtx"), "-o", path("C.npy"), NULL},
        want);
    write_npy(path("nan.npy"), (double[]){1, NAN, 0, 2});
    snprintf(want, sizeof want,
             "spm: matmul: %s: the entry at row 0, column 1 (0-based) is nan, not a finite "
             "number\n",
             path("nan.npy"));
    fails_with(
        (const char *[]){"matmul", path("nan.npy"), path("I.mtx"), "-o", path("C.mtx"), NULL},
        want);
    write_coo(path("inf.npz"), INFINITY);
    snprintf(want, sizeof want,
             "spm: matmul: %s: the entry at row 1, column 1 (0-based) is inf, not a finite "
             "number\n",
             path("inf.npz"));
    fails_with(
        (const char *[]){"matmul", path("I.mtx"), path("inf.npz"), "-o", path("C.mtx"), NULL},
        want);
    ck_assert_int_eq(access(path("C.mtx"), F_OK), -1);
    ck_assert_int_eq(access(path("C.npy"), F_OK), -1);
    /* the same files with finite numbers are read */
    write_coo(path("two.npz"), 2.0);
    const char *ok[] = {"matmul",      path("two.npz"), path("I.mtx"), "-o",
                        path("C.mtx"), "--quiet",       NULL};
    ck_assert_int_eq(spm_test_run(ok, 60, NULL, NULL), 0);
}
END_TEST

/* ------------------------------------------------------ a full device */

/*  Every output of mine, matmul and gen on /dev/full fails in the one
    line "spm: CMD: /dev/full: No space left on device". Before, matmul's
    Matrix Market and .npy writers and gen matrix named no file (and gen
    matrix told of a count instead: "157 entries written, 90000 declared"). */
START_TEST(write_failure_names_the_file_and_the_reason)
{
    write_text(path("t.dat"), transactions);
    write_text(path("I.mtx"), identity);
    const char *mine = "spm: mine: /dev/full: No space left on device\n",
               *matmul = "spm: matmul: /dev/full: No space left on device\n";
    const char *t = path("t.dat"), *i = path("I.mtx");
    fails_with(
        (const char *[]){"mine", t, "--min-support", "2", "-o", "/dev/full", "--quiet", NULL},
        mine);
    fails_with((const char *[]){"mine", t, "--min-support", "2", "-o", "/dev/full", "--format",
                                "json", "--quiet", NULL},
               mine);
    fails_with((const char *[]){"mine", t, "--min-support", "2", "--itemsets", "/dev/full", "-o",
                                path("r.txt"), "--quiet", NULL},
               mine);
    fails_with((const char *[]){"mine", t, "--min-support", "2", "--itemsets-only", "--itemsets",
                                "/dev/full", "--format", "npz", "--quiet", NULL},
               mine);
    ck_assert_int_eq(access(path("r.txt"), F_OK), -1);
    for (const char *const *f = (const char *[]){"mtx", "npz", "npy", NULL}; *f; f++)
        fails_with(
            (const char *[]){"matmul", i, i, "-o", "/dev/full", "--format", *f, "--quiet", NULL},
            matmul);
    fails_with((const char *[]){"gen", "matrix", "--rows", "300", "--cols", "300", "-o",
                                "/dev/full", NULL},
               "spm: gen matrix: /dev/full: No space left on device\n");
    fails_with(
        (const char *[]){"gen", "transactions", "--transactions", "1000", "-o", "/dev/full", NULL},
        "spm: gen transactions: /dev/full: No space left on device\n");
}
END_TEST

/* ------------------------------------------------- JSON of any item names */

/*  1 when python3 can be run. */
static int have_python(void)
{
    return system("python3 -c pass >/dev/null 2>&1") == 0;
}

/*  `spm mine --names --format json` on item names with bytes that are no
    UTF-8 (0xff 0xfe, a lone continuation byte, an overlong '/', a UTF-16
    surrogate), control characters, quotes and backslashes: the rules, the
    itemsets and the --json report load in python3's json module, valid
    UTF-8 reads back as it was and every other byte as U+00XX. Before, the
    bytes were copied as they were and no JSON reader loaded the file. */
START_TEST(json_output_is_valid_for_any_item_names)
{
    if (!have_python()) {
        fprintf(stderr, "json_output_is_valid_for_any_item_names: skipped, no python3\n");
        return;
    }
    write_text(path("names.dat"),
               "a\xff\xfe b\"q c\\d e\x01\x1f\n"
               "\xff\xfe b\"q\n"
               "c\\d e\x01\x1f \xc3\xa9t\xc3\xa9\n"
               "\xff\xfe c\\d \xc3\xa9t\xc3\xa9 \xed\xa0\x80 \xc0\xaf \x80x\x7f\n");
    const char *argv[] = {"mine",         "names.dat", "--names", "--min-support", "1",
                          "--format",     "json",      "-o",      path("r.json"),  "--itemsets",
                          path("s.json"), "--json",    NULL};
    argv[1] = path("names.dat");
    char *out = NULL, *err = NULL;
    ck_assert_msg(spm_test_run(argv, 60, &out, &err) == 0, "%s", err);
    write_text(path("report.json"), out);
    free(out);
    free(err);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json, sys\n"
             "d = sys.argv[1]\n"
             "s = json.load(open(d + \"/s.json\", \"rb\"))\n"
             "r = json.load(open(d + \"/r.json\", \"rb\"))\n"
             "json.load(open(d + \"/report.json\", \"rb\"))\n"
             "names = {i for x in s[\"itemsets\"] for i in x[\"items\"]}\n"
             "want = {\"a\\u00ff\\u00fe\", \"b\\\"q\", \"c\\\\d\", \"e\\u0001\\u001f\",\n"
             "        \"\\u00ff\\u00fe\", \"\\u00e9t\\u00e9\", \"\\u00ed\\u00a0\\u0080\",\n"
             "        \"\\u00c0\\u00af\", \"\\u0080x\\u007f\"}\n"
             "sys.exit(0 if names == want and r[\"rules\"] else \"names: %%r\" %% names)' %s",
             base);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ------------------------------------------- a header that claims too much */

/*  Peak resident MiB of the children this process has reaped. */
static long children_peak_mib(void)
{
    struct rusage ru;
    ck_assert_int_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    return ru.ru_maxrss / 1024;
}

/*  A 67-byte Matrix Market file whose size line claims 2147483648 x 2:
    its grid of 256 x 256 blocks would be 8 million blocks, which the
    client and the center held whatever the file held (the client's peak
    reached 480 MiB to 1 GiB). It is refused in one line that names the
    file and the way out, with a peak of a few MiB; a file of the same
    kind claiming 1048576 x 2 (4,096 blocks) is multiplied. */
START_TEST(header_claiming_a_huge_matrix_is_refused_in_little_memory)
{
    write_text(path("I.mtx"), identity);
    write_text(path("big.mtx"),
               "%%MatrixMarket matrix coordinate real general\n2147483648 2 1\n1 1 1\n");
    char *err = NULL;
    const char *argv[] = {"matmul", path("big.mtx"), path("I.mtx"), "-o", path("C.mtx"), NULL};
    int rc = spm_test_run(argv, 120, NULL, &err);
    long peak = children_peak_mib();
    ck_assert_msg(rc == 1 && one_line(err), "exit %d:\n%s", rc, err);
    ck_assert_msg(strstr(err, path("big.mtx")) && strstr(err, "8388608 blocks") &&
                      strstr(err, "give a larger --block"),
                  "%s", err);
    ck_assert_msg(peak < 64, "peak %ld MiB", peak); /* generous: it is about 6 */
    ck_assert_int_eq(access(path("C.mtx"), F_OK), -1);
    free(err);
    write_text(path("tall.mtx"),
               "%%MatrixMarket matrix coordinate real general\n1048576 2 1\n1 1 1\n");
    const char *ok[] = {"matmul",      path("tall.mtx"), path("I.mtx"), "-o",
                        path("C.mtx"), "--quiet",        NULL};
    ck_assert_int_eq(spm_test_run(ok, 120, NULL, NULL), 0);
    char *c = read_file(path("C.mtx"), NULL);
    ck_assert_msg(strstr(c, "\n1 1 1\n") != NULL, "%s", c);
    free(c);
}
END_TEST

/* --------------------------------------- an input changed while it is read */

/*  Stops (SIG SIGSTOP) or continues (SIGCONT) the IEUs of the embedded VM
    of the client PID once they run (up to 10 s). Returns how many. */
static int signal_ieus(pid_t pid, int sig)
{
    for (int tries = 0; tries < 10000; tries++) {
        pid_t kids[8], ieus[8];
        int n = spm_test_children(pid, kids, 8), m = 0;
        for (int k = 0; k < n; k++)
            if (spm_test_is(kids[k], "agent"))
                for (int i = 0, c = spm_test_children(kids[k], ieus, 8); i < c; i++)
                    if (spm_test_is(ieus[i], "ieu"))
                        m++;
        if (m == 2) {
            for (int k = 0; k < n; k++)
                if (spm_test_is(kids[k], "agent"))
                    for (int i = 0, c = spm_test_children(kids[k], ieus, 8); i < c; i++)
                        kill(ieus[i], sig);
            return m;
        }
        usleep(1000);
    }
    return 0;
}

static const char work[] = "1 2\n1 2\n3 4\n1 3\n", other[] = "5 6\n5 6\n7 8\n5 7\n";

/*  One `spm mine work.dat --itemsets-only` on an embedded VM whose IEUs,
    which read the file where it lies, are stopped until the client has
    cut and staged it; the file is then changed (REPLACE: `cp other tmp &&
    mv tmp work.dat`; else rewritten in place at the same size). Returns
    1 when the job failed in the one line, 0 when it gave the original
    file's itemsets (the IEUs had read it before they were stopped), and
    fails the test on anything else. */
static int mine_while_changed(int replace, const char *reference)
{
    write_text(path("work.dat"), work);
    const char *argv[] = {"mine",       path("work.dat"), "--min-support", "2", "--itemsets-only",
                          "--itemsets", path("sets.txt"), "--ieus",        "2", "--quiet",
                          NULL};
    spm_test_proc_t p = spm_test_start(argv);
    int stopped = signal_ieus(p.pid, SIGSTOP);
    usleep(1500000); /* the client cuts 4 lines, stages them and submits */
    if (replace) {
        write_text(path("work.tmp"), other);
        ck_assert_int_eq(rename(path("work.tmp"), path("work.dat")), 0);
    } else {
        usleep(20000); /* past the file system's timestamp granularity */
        int fd = open(path("work.dat"), O_WRONLY);
        ck_assert_int_eq(pwrite(fd, other, strlen(other), 0), (ssize_t)strlen(other));
        close(fd);
    }
    if (stopped)
        signal_ieus(p.pid, SIGCONT);
    char *err = NULL;
    int rc = spm_test_finish(&p, 60, NULL, &err);
    int failed = rc == 1;
    if (failed) {
        char want[256];
        snprintf(want, sizeof want, "%s: the file changed while it was read\n", path("work.dat"));
        ck_assert_msg(one_line(err) && strlen(err) > strlen(want) &&
                          strcmp(err + strlen(err) - strlen(want), want) == 0,
                      "%s", err);
        ck_assert_int_eq(access(path("sets.txt"), F_OK), -1);
    } else {
        ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
        char *sets = read_file(path("sets.txt"), NULL);
        ck_assert_msg(strcmp(sets, reference) == 0, "itemsets of neither file:\n%s", sets);
        free(sets);
        unlink(path("sets.txt"));
    }
    free(err);
    return failed;
}

/*  The input of `spm mine --itemsets-only`, which an embedded VM's IEUs
    read where it lies, replaced by another file or rewritten in place at
    the same size after the client cut it: the job fails in one line
    ("NAME: the file changed while it was read", as docs/MINING.md
    promises), or, where the IEUs had read it first, gives the original
    file's itemsets; never those of a changed file. Before, exit 0 with
    the other file's itemsets: only a shorter file was caught. */
START_TEST(input_changed_while_read_fails_the_job)
{
    setenv("SPM_DEAD_MS", "120000", 1); /* stopped IEUs are not dead ones */
    write_text(path("ref.dat"), work);
    const char *ref[] = {"mine",       path("ref.dat"), "--min-support", "2", "--itemsets-only",
                         "--itemsets", path("ref.txt"), "--quiet",       NULL};
    ck_assert_int_eq(spm_test_run(ref, 60, NULL, NULL), 0);
    char *reference = read_file(path("ref.txt"), NULL);
    for (int replace = 0; replace < 2; replace++) {
        int failures = 0;
        for (int k = 0; k < 3; k++)
            failures += mine_while_changed(replace, reference);
        ck_assert_msg(failures > 0, "%s: the change was never caught",
                      replace ? "replaced" : "rewritten");
    }
    free(reference);
}
END_TEST

static Suite *files_suite(void)
{
    Suite *s = suite_create("files");
    static const spm_test_case_t c = {
        .timeout_s = 120, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, output_that_names_the_input_is_refused);
    SPM_TEST_ADD(s, &c, nan_and_inf_entries_are_refused);
    SPM_TEST_ADD(s, &c, write_failure_names_the_file_and_the_reason);
    SPM_TEST_ADD(s, &c, json_output_is_valid_for_any_item_names);
    SPM_TEST_ADD(s, &c, header_claiming_a_huge_matrix_is_refused_in_little_memory);
    SPM_TEST_ADD(s, &c, input_changed_while_read_fails_the_job);
    return s;
}

SPM_TEST_MAIN(files_suite)
