/*  Tests of vm/journal: each job's records in its own file, buffered, flushed, synced,
    dropped, reset, and read back with tolerance for torn and damaged files. Every test works
    on real files in a fresh mkdtemp directory that is removed at the end. */
#include "vm/center/journal.h"
#include "spm/spm.h"
#include "tests/check_main.h"
#include "tests/scratch.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[96]; /* the running test's store directory, below base */

static const uint8_t ID_A[16] = {0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t ID_B[16] = {0xb1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void make_dir(void)
{
    static int n;
    snprintf(dir, sizeof dir, "%s/%d-%d", base, (int)getpid(), n++);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
}

/* The seed of record I of JOB. */
static uint64_t seed_of(uint64_t job, uint64_t i)
{
    return job << 32 | i;
}

static int append_filled(spm_journal_t *jr, uint64_t job, size_t len, uint64_t seed)
{
    uint8_t *buf = malloc(len ? len : 1);
    fill(buf, len, seed);
    int rc = spm_journal_append(jr, job, buf, len);
    free(buf);
    return rc;
}

/* DIR/journal/NAME, in a static buffer. */
static const char *jpath(const char *name)
{
    static char p[256];
    snprintf(p, sizeof p, "%s/journal/%s", dir, name);
    return p;
}

/* Size of DIR/journal/NAME, or -1 when it does not exist. */
static long file_size(const char *name)
{
    struct stat st;
    return stat(jpath(name), &st) == 0 ? (long)st.st_size : -1;
}

/* The bytes of PATH (malloc'd, with a NUL after them; *LEN set). */
static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *buf = malloc(*len + 1);
    ck_assert_uint_eq(fread(buf, 1, *len, f), *len);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static void write_all(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "%s", path);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* How many descriptors this process has open. */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* How many descriptors of this process are open on DIR/journal/NAME, or on any job file of
   DIR/journal (a name ending in ".log", not deleted) when NAME is NULL. */
static int journal_fds(const char *name)
{
    char want[PATH_MAX], target[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(jpath(""), want));
    size_t n = strlen(want);
    DIR *d = opendir("/proc/self/fd");
    ck_assert_ptr_nonnull(d);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        ssize_t len = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (strncmp(target, want, n) != 0 || target[n] != '/')
            continue;
        const char *file = target + n + 1;
        if (name ? strcmp(file, name) == 0 : len > 4 && strcmp(target + len - 4, ".log") == 0)
            count++;
    }
    closedir(d);
    return count;
}

static spm_journal_t *open_a(void)
{
    spm_journal_t *jr = spm_journal_open(dir, ID_A);
    ck_assert_msg(jr != NULL, "%s", spm_error_detail());
    return jr;
}

/* ------------------------------------------------------------ replay */

typedef struct {
    uint64_t job;
    size_t len;
    uint8_t *data;
} got_t;

typedef struct {
    got_t *v;
    size_t n, cap;
} got_list_t;

static int collect(void *arg, uint64_t job, const void *rec, size_t len)
{
    got_list_t *g = arg;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
        ck_assert_ptr_nonnull(g->v);
    }
    got_t *r = &g->v[g->n++];
    r->job = job;
    r->len = len;
    r->data = malloc(len ? len : 1);
    memcpy(r->data, rec, len);
    return 0;
}

static void got_free(got_list_t *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->v[i].data);
    free(g->v);
    memset(g, 0, sizeof *g);
}

/* Replays JR into G; returns the report. */
static spm_journal_report_t replay(spm_journal_t *jr, got_list_t *g)
{
    spm_journal_report_t rep;
    memset(g, 0, sizeof *g);
    int rc = spm_journal_replay(jr, collect, g, &rep);
    ck_assert_msg(rc == 0, "replay: %s", spm_error_detail());
    ck_assert_uint_eq(rep.records, g->n);
    return rep;
}

/* Asserts that record K of G is JOB's, LEN bytes of fill(SEED). */
static void expect_rec(const got_list_t *g, size_t k, uint64_t job, size_t len, uint64_t seed)
{
    ck_assert_uint_lt(k, g->n);
    ck_assert_uint_eq(g->v[k].job, job);
    ck_assert_uint_eq(g->v[k].len, len);
    uint8_t *want = malloc(len ? len : 1);
    fill(want, len, seed);
    ck_assert_msg(memcmp(g->v[k].data, want, len) == 0, "record %zu of job %llu has other bytes", k,
                  (unsigned long long)job);
    free(want);
}

/* The length of record I of JOB in the big test: 0, small, 64, larger, and one of 3 MiB. */
static size_t len_of(uint64_t job, uint64_t i)
{
    if (job == 7 && i == 2)
        return (3 << 20) + 5;
    static const size_t lens[] = {0, 1, 64, 13, 1000, 64, 200};
    return lens[(job + i) % 7];
}

START_TEST(test_records_come_back_in_order)
{
    make_dir();
    spm_journal_t *jr = open_a();
    ck_assert_uint_eq(spm_journal_max_job(jr), 0);
    enum { JOBS = 300, PER = 6 };
    uint64_t count[JOBS] = {0};
    /* interleaved: job ids in a scrambled order, each getting its records in turn */
    for (uint64_t round = 0; round < PER; round++) {
        for (uint64_t k = 0; k < JOBS; k++) {
            uint64_t job = (k * 7919) % JOBS; /* 0 among them */
            if (job % 5 == 3 && round >= 2)
                continue; /* some jobs have fewer records */
            uint64_t i = count[job]++;
            ck_assert_int_eq(append_filled(jr, job, len_of(job, i), seed_of(job, i)), 0);
        }
        if (round == 2)
            ck_assert_int_eq(spm_journal_flush(jr), 0);
    }
    ck_assert_uint_eq(spm_journal_max_job(jr), JOBS - 1);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(spm_journal_sync(jr), 0);
    spm_journal_destroy(&jr);
    ck_assert_ptr_null(jr);

    int fds = open_fds();
    jr = open_a();
    ck_assert_uint_eq(spm_journal_max_job(jr), JOBS - 1);
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_int_le(open_fds(), fds + 2); /* replay keeps no file open */
    ck_assert_uint_eq(rep.jobs, JOBS);
    ck_assert_uint_eq(rep.damaged_files, 0);
    ck_assert_uint_eq(rep.bytes_skipped, 0);
    ck_assert_uint_eq(rep.max_job, JOBS - 1);
    size_t k = 0;
    for (uint64_t job = 0; job < JOBS; job++) /* job 0 first, then ascending */
        for (uint64_t i = 0; i < count[job]; i++)
            expect_rec(&g, k++, job, len_of(job, i), seed_of(job, i));
    ck_assert_uint_eq(k, g.n);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* Appends after a replay land after what was replayed; a second replay of the same open
   journal reads the same files again. */
START_TEST(test_append_after_replay)
{
    make_dir();
    spm_journal_t *jr = open_a();
    ck_assert_int_eq(append_filled(jr, 2, 10, 1), 0);
    spm_journal_destroy(&jr); /* close flushes */
    jr = open_a();
    got_list_t g;
    replay(jr, &g);
    ck_assert_uint_eq(g.n, 1);
    got_free(&g);
    ck_assert_int_eq(append_filled(jr, 2, 20, 2), 0);
    ck_assert_int_eq(append_filled(jr, 9, 30, 3), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    spm_journal_destroy(&jr);
    jr = open_a();
    replay(jr, &g);
    ck_assert_uint_eq(g.n, 3);
    expect_rec(&g, 0, 2, 10, 1);
    expect_rec(&g, 1, 2, 20, 2);
    expect_rec(&g, 2, 9, 30, 3);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

START_TEST(test_buffered_until_flush)
{
    make_dir();
    spm_journal_t *jr = open_a();
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(append_filled(jr, 4, 64, (uint64_t)i), 0);
    ck_assert_int_eq(file_size("4.log"), -1);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    long one = 16 + 3 * (12 + 64);
    ck_assert_int_eq(file_size("4.log"), one);
    ck_assert_int_eq(append_filled(jr, 4, 100, 3), 0);
    ck_assert_int_eq(file_size("4.log"), one);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(file_size("4.log"), one + 12 + 100);
    ck_assert_int_eq(spm_journal_flush(jr), 0); /* nothing new: nothing written */
    ck_assert_int_eq(file_size("4.log"), one + 12 + 100);
    /* empty records are records */
    ck_assert_int_eq(spm_journal_append(jr, 0, NULL, 0), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(file_size("0.log"), 16 + 12);
    /* too large: refused, nothing buffered */
    ck_assert_int_eq(spm_journal_append(jr, 5, "x", (size_t)SPM_JOURNAL_MAX_RECORD + 1),
                     SPM_EINVAL);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(file_size("5.log"), -1);
    spm_journal_destroy(&jr);
}
END_TEST

START_TEST(test_drop_deletes_file_and_buffer)
{
    make_dir();
    spm_journal_t *jr = open_a();
    ck_assert_int_eq(append_filled(jr, 5, 10, 50), 0);
    ck_assert_int_eq(append_filled(jr, 6, 10, 60), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(append_filled(jr, 5, 10, 51), 0); /* buffered */
    ck_assert_int_eq(spm_journal_drop(jr, 5), 0);
    ck_assert_int_eq(file_size("5.log"), -1);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(file_size("5.log"), -1); /* the buffered record went too */
    ck_assert_int_eq(spm_journal_sync(jr), 0);
    ck_assert_int_eq(spm_journal_drop(jr, 77), 0); /* nothing to drop */
    spm_journal_destroy(&jr);

    jr = open_a();
    got_list_t g;
    replay(jr, &g);
    ck_assert_uint_eq(g.n, 1);
    expect_rec(&g, 0, 6, 10, 60);
    got_free(&g);
    /* a job whose journal was dropped starts afresh when appended to again */
    ck_assert_int_eq(append_filled(jr, 6, 7, 61), 0);
    ck_assert_int_eq(spm_journal_drop(jr, 6), 0);
    ck_assert_int_eq(append_filled(jr, 6, 8, 62), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    spm_journal_destroy(&jr);
    jr = open_a();
    replay(jr, &g);
    ck_assert_uint_eq(g.n, 1);
    expect_rec(&g, 0, 6, 8, 62);
    got_free(&g);
    /* with every file gone, job ids still do not go back */
    ck_assert_int_eq(spm_journal_drop(jr, 6), 0);
    spm_journal_destroy(&jr);
    jr = open_a();
    replay(jr, &g);
    ck_assert_uint_eq(g.n, 0);
    ck_assert_uint_eq(spm_journal_max_job(jr), 6);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

START_TEST(test_reset_empties)
{
    make_dir();
    spm_journal_t *jr = open_a();
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(append_filled(jr, 0, 40, (uint64_t)i), 0);
    ck_assert_int_eq(append_filled(jr, 3, 40, 30), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(append_filled(jr, 0, 40, 9), 0); /* buffered: dropped by the reset */
    ck_assert_int_eq(spm_journal_reset(jr, 0), 0);
    ck_assert_int_eq(append_filled(jr, 0, 20, 100), 0);
    ck_assert_int_eq(append_filled(jr, 0, 0, 101), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(file_size("0.log"), 16 + 12 + 20 + 12);
    ck_assert_int_eq(append_filled(jr, 0, 5, 102), 0); /* appends go on after the rewrite */
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(spm_journal_sync(jr), 0);
    spm_journal_destroy(&jr);
    jr = open_a();
    got_list_t g;
    replay(jr, &g);
    ck_assert_uint_eq(g.n, 4);
    expect_rec(&g, 0, 0, 20, 100);
    expect_rec(&g, 1, 0, 0, 101);
    expect_rec(&g, 2, 0, 5, 102);
    expect_rec(&g, 3, 3, 40, 30); /* other jobs untouched */
    got_free(&g);
    /* a reset with nothing appended after it leaves an empty journal */
    ck_assert_int_eq(spm_journal_reset(jr, 3), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(file_size("3.log"), 16);
    spm_journal_destroy(&jr);
    jr = open_a();
    replay(jr, &g);
    ck_assert_uint_eq(g.n, 3);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* A crash between a reset and the flush that rewrites the file loses nothing: the old file
   is replaced only once the new one is complete. */
START_TEST(test_reset_survives_crash_before_flush)
{
    make_dir();
    spm_journal_t *jr = open_a();
    ck_assert_int_eq(append_filled(jr, 0, 40, 1), 0);
    ck_assert_int_eq(append_filled(jr, 0, 40, 2), 0);
    spm_journal_destroy(&jr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        jr = spm_journal_open(dir, ID_A);
        if (!jr || spm_journal_reset(jr, 0) != 0 || append_filled(jr, 0, 10, 3) != 0)
            _exit(1);
        kill(getpid(), SIGKILL); /* crash: no flush */
        _exit(2);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status));
    jr = open_a();
    got_list_t g;
    replay(jr, &g);
    ck_assert_uint_eq(g.n, 2);
    expect_rec(&g, 0, 0, 40, 1);
    expect_rec(&g, 1, 0, 40, 2);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* ----------------------------------------------------- damaged files */

/* The small file of the damage tests: job 3, records of 0, 5 and 40 bytes. */
static const size_t small_lens[] = {0, 5, 40};
#define SMALL_N 3

/* Writes the small file and returns its bytes (malloc'd) and where each record ends. */
static uint8_t *small_file(size_t *len, size_t ends[SMALL_N])
{
    spm_journal_t *jr = open_a();
    size_t at = 16;
    for (size_t i = 0; i < SMALL_N; i++) {
        ck_assert_int_eq(append_filled(jr, 3, small_lens[i], seed_of(3, i)), 0);
        ends[i] = at += 12 + small_lens[i];
    }
    spm_journal_destroy(&jr);
    uint8_t *bytes = read_all(jpath("3.log"), len);
    ck_assert_uint_eq(*len, at);
    return bytes;
}

/* With DIR/journal/3.log holding DATA (LEN bytes), replays and asserts that the first KEEP
   records of the small file come back, with the bytes from INTACT on counted as damage;
   then that a record appended lands after them, and a reopened journal replays them all. */
static void expect_damage(const uint8_t *data, size_t len, size_t keep, size_t intact)
{
    write_all(jpath("3.log"), data, len);
    spm_journal_t *jr = open_a();
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_uint_eq(g.n, keep);
    for (size_t i = 0; i < keep; i++)
        expect_rec(&g, i, 3, small_lens[i], seed_of(3, i));
    ck_assert_uint_eq(rep.jobs, 1);
    ck_assert_uint_eq(rep.damaged_files, intact < len);
    ck_assert_uint_eq(rep.bytes_skipped, len - intact);
    ck_assert_int_eq(file_size("3.log"), (long)intact); /* cut to the intact prefix */
    got_free(&g);
    ck_assert_int_eq(append_filled(jr, 3, 9, 999), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    spm_journal_destroy(&jr);
    jr = open_a();
    rep = replay(jr, &g);
    ck_assert_uint_eq(rep.damaged_files, 0);
    ck_assert_uint_eq(g.n, keep + 1);
    for (size_t i = 0; i < keep; i++)
        expect_rec(&g, i, 3, small_lens[i], seed_of(3, i));
    expect_rec(&g, keep, 3, 9, 999);
    got_free(&g);
    spm_journal_destroy(&jr);
}

START_TEST(test_torn_at_every_cut)
{
    make_dir();
    size_t len, ends[SMALL_N];
    uint8_t *bytes = small_file(&len, ends);
    for (size_t cut = 0; cut < len; cut++) {
        size_t keep = 0, intact = cut < 16 ? 0 : 16;
        while (keep < SMALL_N && ends[keep] <= cut)
            intact = ends[keep++];
        expect_damage(bytes, cut, keep, intact);
    }
    free(bytes);
}
END_TEST

START_TEST(test_garbage_after_the_last_record)
{
    make_dir();
    size_t len, ends[SMALL_N];
    uint8_t *bytes = small_file(&len, ends);
    uint8_t *more = calloc(1, len + 4096);
    memcpy(more, bytes, len);
    fill(more + len, 37, 5); /* noise */
    expect_damage(more, len + 37, SMALL_N, len);
    memset(more + len, 0, 4096); /* the zeros an operating-system crash can leave */
    expect_damage(more, len + 4096, SMALL_N, len);
    free(more);
    free(bytes);
}
END_TEST

START_TEST(test_flipped_byte)
{
    make_dir();
    size_t len, ends[SMALL_N];
    uint8_t *bytes = small_file(&len, ends);
    uint8_t *bad = malloc(len);
    for (size_t at = 0; at < len; at++) {
        memcpy(bad, bytes, len);
        bad[at] ^= (uint8_t)(1u << (at % 8));
        size_t keep = 0, intact = at < 16 ? 0 : 16; /* the records before the damaged one */
        while (keep < SMALL_N && ends[keep] <= at)
            intact = ends[keep++];
        expect_damage(bad, len, keep, intact);
    }
    free(bad);
    free(bytes);
}
END_TEST

/* FN stops one job: its other records are not handed over and stay in the file. */
static int stop_job_2(void *arg, uint64_t job, const void *rec, size_t len)
{
    collect(arg, job, rec, len);
    return job == 2;
}

START_TEST(test_callback_stops_one_job)
{
    make_dir();
    spm_journal_t *jr = open_a();
    for (uint64_t job = 1; job <= 3; job++)
        for (uint64_t i = 0; i < 3; i++)
            ck_assert_int_eq(append_filled(jr, job, 10, seed_of(job, i)), 0);
    spm_journal_destroy(&jr);
    jr = open_a();
    got_list_t g = {0};
    spm_journal_report_t rep;
    ck_assert_int_eq(spm_journal_replay(jr, stop_job_2, &g, &rep), 0);
    ck_assert_uint_eq(g.n, 3 + 1 + 3);
    expect_rec(&g, 3, 2, 10, seed_of(2, 0));
    expect_rec(&g, 4, 3, 10, seed_of(3, 0));
    ck_assert_uint_eq(rep.records, 7);
    ck_assert_int_eq(file_size("2.log"), 16 + 3 * 22);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* ------------------------------------------------------------ identity */

/* A listing of DIR's tree: names, sizes and the checksum-free sum of the bytes. */
static char listing[8192];
static size_t listing_len;

static int list_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    unsigned long sum = 0;
    if (flag == FTW_F) {
        size_t n;
        uint8_t *b = read_all(path, &n);
        for (size_t i = 0; i < n; i++)
            sum = sum * 31 + b[i];
        free(b);
    }
    listing_len +=
        (size_t)snprintf(listing + listing_len, sizeof listing - listing_len, "%s %ld %lu %o\n",
                         path, (long)st->st_size, sum, (unsigned)st->st_mode);
    return 0;
}

static char *snapshot(void)
{
    listing_len = 0;
    listing[0] = '\0';
    ck_assert_int_eq(nftw(dir, list_entry, 16, FTW_PHYS), 0);
    return strdup(listing);
}

START_TEST(test_other_store_or_format_refused)
{
    make_dir();
    spm_journal_t *jr = open_a();
    ck_assert_int_eq(append_filled(jr, 1, 10, 1), 0);
    spm_journal_destroy(&jr);
    /* things open would change if it went on: a torn tail, an old text journal */
    FILE *f = fopen(jpath("1.log"), "ab");
    fputs("torn", f);
    fclose(f);
    char old[256];
    snprintf(old, sizeof old, "%s/jobs.journal", dir);
    write_all(old, "start 40 synthetic\n", 19);
    char *before = snapshot();

    ck_assert_ptr_null(spm_journal_open(dir, ID_B));
    const char *d = spm_error_detail();
    ck_assert_msg(strstr(d, "belongs to another store") && strstr(d, dir) && !strchr(d, '\n'), "%s",
                  d);
    ck_assert_ptr_nonnull(strstr(d, "b1020304")); /* names both identities */
    ck_assert_ptr_nonnull(strstr(d, "a1020304"));
    char *after = snapshot();
    ck_assert_str_eq(before, after);
    free(after);
    free(before);

    size_t n;
    char *id = (char *)read_all(jpath("journal.id"), &n);
    ck_assert_ptr_nonnull(strstr(id, "format 1\n"));
    char *other = strdup(id);
    other[strstr(id, "format 1\n") - id + 7] = '7';
    write_all(jpath("journal.id"), other, n);
    before = snapshot();
    ck_assert_ptr_null(spm_journal_open(dir, ID_A));
    d = spm_error_detail();
    ck_assert_msg(strstr(d, "written by journal format 7; this spm reads format 1") &&
                      strstr(d, dir) && !strchr(d, '\n'),
                  "%s", d);
    after = snapshot();
    ck_assert_str_eq(before, after);
    free(after);
    free(before);

    write_all(jpath("journal.id"), "hello\n", 6);
    ck_assert_ptr_null(spm_journal_open(dir, ID_A));
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "not a journal identity file"));

    write_all(jpath("journal.id"), id, n); /* back: the journal opens again */
    jr = open_a();
    ck_assert_uint_eq(spm_journal_max_job(jr), 40);
    spm_journal_destroy(&jr);
    free(other);
    free(id);
}
END_TEST

START_TEST(test_unwritable_place)
{
    make_dir();
    char file[160];
    snprintf(file, sizeof file, "%s/plain", dir);
    write_all(file, "x", 1);
    ck_assert_ptr_null(spm_journal_open(file, ID_A)); /* DIR is a file */
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), file));
    ck_assert(!strchr(spm_error_detail(), '\n'));
}
END_TEST

START_TEST(test_old_text_journal_taken)
{
    make_dir();
    char old[256];
    snprintf(old, sizeof old, "%s/jobs.journal", dir);
    const char *text = "start 4 synthetic\nstart 12 x\nend 4 0\nend 12 0\nstart 9 y\nstart 99 to";
    write_all(old, text, strlen(text)); /* the last line was torn: not taken */
    spm_journal_t *jr = open_a();
    ck_assert_uint_eq(spm_journal_max_job(jr), 12);
    ck_assert_int_eq(access(old, F_OK), -1);
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_uint_eq(rep.max_job, 12);
    ck_assert_uint_eq(g.n, 0);
    got_free(&g);
    spm_journal_destroy(&jr);
    jr = open_a(); /* kept after the text file went */
    ck_assert_uint_eq(spm_journal_max_job(jr), 12);
    spm_journal_destroy(&jr);
}
END_TEST

/* ------------------------------------------------------------- threads */

typedef struct {
    spm_journal_t *jr;
    atomic_int stop;
    int syncs, failures;
} syncer_t;

static void *sync_loop(void *arg)
{
    syncer_t *s = arg;
    while (!s->stop) {
        if (spm_journal_sync(s->jr) != 0)
            s->failures++;
        s->syncs++;
    }
    return NULL;
}

START_TEST(test_sync_from_another_thread)
{
    make_dir();
    enum { JOBS = 40, MAX = 150000 };
    spm_journal_t *jr = open_a();
    syncer_t s = {.jr = jr};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, sync_loop, &s), 0);
    /* the model: each job's records are seeds first[job] .. next[job] - 1 */
    uint64_t first[JOBS] = {0}, next[JOBS] = {0};
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t n = 0, drops = 0, resets = 0;
    for (;; n++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (n >= MAX || (now.tv_sec - t0.tv_sec) * 1000000000L + now.tv_nsec - t0.tv_nsec > 1e9)
            break;
        uint64_t job = (n * 13) % JOBS;
        uint64_t i = next[job]++;
        ck_assert_int_eq(append_filled(jr, job, (size_t)(seed_of(job, i) % 97), seed_of(job, i)),
                         0);
        if (n % 16 == 0)
            ck_assert_int_eq(spm_journal_flush(jr), 0);
        if (n % 997 == 0) { /* a job ends */
            uint64_t gone = 1 + n % (JOBS - 1);
            ck_assert_int_eq(spm_journal_drop(jr, gone), 0);
            first[gone] = next[gone];
            drops++;
        }
        if (n % 3001 == 0) { /* job 0 rewritten */
            ck_assert_int_eq(spm_journal_reset(jr, 0), 0);
            first[0] = next[0];
            resets++;
        }
    }
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    s.stop = 1;
    pthread_join(t, NULL);
    ck_assert_int_eq(s.failures, 0);
    ck_assert_int_gt(s.syncs, 1);
    ck_assert_int_gt(drops, 1);
    ck_assert_int_gt(resets, 1);
    spm_journal_destroy(&jr);

    jr = open_a();
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_uint_eq(rep.damaged_files, 0);
    size_t k = 0;
    for (uint64_t job = 0; job < JOBS; job++)
        for (uint64_t i = first[job]; i < next[job]; i++)
            expect_rec(&g, k++, job, (size_t)(seed_of(job, i) % 97), seed_of(job, i));
    ck_assert_uint_eq(k, g.n);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* ---------------------------------------------------- open files bounded */

/* The length of record I of JOB in the bound tests. */
static size_t small_len(uint64_t job, uint64_t i)
{
    return (size_t)(seed_of(job, i) % 97);
}

/* 200 jobs written in turns, a few per flush, with the bound at 4 and a sync running all the
   time: the process never holds more than the bound (twice it while a sync that is to sync
   closed files runs) and the journal's directory, and every record comes back in order. */
START_TEST(test_open_files_bounded_while_syncing)
{
    make_dir();
    enum { JOBS = 200, BOUND = 4, FLUSHES = 700 };
    int before = open_fds();
    spm_journal_t *jr = open_a();
    spm_journal_set_max_open(jr, BOUND);
    syncer_t s = {.jr = jr};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, sync_loop, &s), 0);
    uint64_t first[JOBS] = {0}, next[JOBS] = {0}; /* job J's records: first[J] .. next[J] - 1 */
    int most = 0, drops = 0, resets = 0;
    for (uint64_t f = 0; f < FLUSHES; f++) {
        /* a turn: 1 to 7 jobs get records; over 200 turns every job does */
        for (uint64_t k = 0, n = 1 + f % 7; k < n; k++) {
            uint64_t job = (f * 7 + k * 31) % JOBS;
            for (uint64_t r = 0; r < 1 + (k == 0); r++) {
                uint64_t i = next[job]++;
                ck_assert_int_eq(append_filled(jr, job, small_len(job, i), seed_of(job, i)), 0);
            }
        }
        if (f % 97 == 50) { /* a job ends */
            uint64_t gone = (f * 3) % JOBS;
            ck_assert_int_eq(spm_journal_drop(jr, gone), 0);
            first[gone] = next[gone];
            drops++;
        }
        if (f % 53 == 20) { /* a job's records rewritten, here as one new record */
            uint64_t job = (f * 11) % JOBS;
            ck_assert_int_eq(spm_journal_reset(jr, job), 0);
            first[job] = next[job];
            uint64_t i = next[job]++;
            ck_assert_int_eq(append_filled(jr, job, small_len(job, i), seed_of(job, i)), 0);
            resets++;
        }
        ck_assert_int_eq(spm_journal_flush(jr), 0);
        int fds = open_fds() - before;
        if (fds > most)
            most = fds;
        ck_assert_msg(fds <= 1 + 2 * BOUND, "after flush %d: %d descriptors open (bound %d)",
                      (int)f, fds, BOUND);
    }
    s.stop = 1;
    pthread_join(t, NULL);
    ck_assert_int_eq(s.failures, 0);
    ck_assert_int_gt(s.syncs, 1);
    ck_assert_int_gt(drops, 1);
    ck_assert_int_gt(resets, 1);
    ck_assert_int_ge(most, 2);                  /* the directory and a file at least */
    ck_assert_int_le(journal_fds(NULL), BOUND); /* no sync runs now */
    ck_assert_int_eq(spm_journal_sync(jr), 0);
    spm_journal_destroy(&jr);
    ck_assert_int_eq(open_fds(), before);

    jr = open_a();
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_uint_eq(rep.damaged_files, 0);
    size_t k = 0;
    for (uint64_t job = 0; job < JOBS; job++) {
        ck_assert_uint_gt(next[job], 2); /* every job was written in several turns */
        for (uint64_t i = first[job]; i < next[job]; i++)
            expect_rec(&g, k++, job, small_len(job, i), seed_of(job, i));
    }
    ck_assert_uint_eq(k, g.n);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* Files closed to keep within the bound right after they were written (in an earlier flush,
   and in the same one) are still covered by the next sync; written again, they are opened
   again, listed for the following sync, and closed again. */
START_TEST(test_sync_covers_closed_files)
{
    make_dir();
    spm_journal_t *jr = open_a();
    spm_journal_set_max_open(jr, 2);
    ck_assert_int_eq(append_filled(jr, 1, 30, seed_of(1, 0)), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0); /* 1.log listed for the next sync */
    for (uint64_t job = 2; job <= 6; job++)     /* one flush: 1.log closed, then 2, 3 and 4 */
        ck_assert_int_eq(append_filled(jr, job, 30, seed_of(job, 0)), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(journal_fds(NULL), 2);
    ck_assert_int_eq(journal_fds("1.log"), 0);
    ck_assert_int_eq(journal_fds("4.log"), 0);
    ck_assert_int_eq(journal_fds("6.log"), 1);
    ck_assert_int_eq(spm_journal_sync(jr), 0);
    ck_assert_int_eq(append_filled(jr, 1, 40, seed_of(1, 1)), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(journal_fds("1.log"), 1);
    ck_assert_int_eq(append_filled(jr, 7, 30, seed_of(7, 0)), 0);
    ck_assert_int_eq(append_filled(jr, 8, 30, seed_of(8, 0)), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(journal_fds("1.log"), 0);
    ck_assert_int_eq(spm_journal_sync(jr), 0);
    ck_assert_int_eq(spm_journal_sync(jr), 0); /* nothing left to sync */
    spm_journal_destroy(&jr);

    jr = open_a();
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_uint_eq(rep.damaged_files, 0);
    ck_assert_uint_eq(g.n, 9);
    expect_rec(&g, 0, 1, 30, seed_of(1, 0));
    expect_rec(&g, 1, 1, 40, seed_of(1, 1));
    for (uint64_t job = 2; job <= 8; job++)
        expect_rec(&g, (size_t)job, job, 30, seed_of(job, 0));
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* A closed job file is written again at the end the journal knows, not at the end the file
   has, and is not read again: a record added behind the journal's back (a copy of the
   file's own first record, intact) is written over. */
START_TEST(test_closed_file_reopened_at_known_end)
{
    make_dir();
    spm_journal_t *jr = open_a();
    spm_journal_set_max_open(jr, 1);
    ck_assert_int_eq(append_filled(jr, 3, 10, 1), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(append_filled(jr, 4, 10, 2), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(journal_fds("3.log"), 0);
    size_t len;
    uint8_t *bytes = read_all(jpath("3.log"), &len);
    ck_assert_uint_eq(len, 16 + 12 + 10);
    FILE *f = fopen(jpath("3.log"), "ab");
    ck_assert_uint_eq(fwrite(bytes + 16, 1, 12 + 10, f), 12 + 10);
    ck_assert_int_eq(fclose(f), 0);
    free(bytes);
    ck_assert_int_eq(append_filled(jr, 3, 20, 3), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(journal_fds("3.log"), 1);
    ck_assert_int_eq(file_size("3.log"), 16 + 12 + 10 + 12 + 20);
    spm_journal_destroy(&jr);

    jr = open_a();
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_uint_eq(rep.damaged_files, 0);
    ck_assert_uint_eq(g.n, 3);
    expect_rec(&g, 0, 3, 10, 1);
    expect_rec(&g, 1, 3, 20, 3);
    expect_rec(&g, 2, 4, 10, 2);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* The common case of the center: an ended job's file is rewritten once (reset, its list of
   blocks, flush) and then sits there; its descriptor goes once others are written. */
START_TEST(test_rewritten_file_closed_by_bound)
{
    make_dir();
    enum { BOUND = 4 };
    spm_journal_t *jr = open_a();
    spm_journal_set_max_open(jr, BOUND);
    ck_assert_int_eq(append_filled(jr, 5, 50, seed_of(5, 0)), 0);
    ck_assert_int_eq(append_filled(jr, 5, 50, seed_of(5, 1)), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(spm_journal_reset(jr, 5), 0);
    ck_assert_int_eq(append_filled(jr, 5, 8, seed_of(5, 2)), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(file_size("5.log"), 16 + 12 + 8);
    ck_assert_int_eq(journal_fds("5.log"), 1);
    for (uint64_t job = 10; job < 10 + BOUND; job++) { /* later turns write other jobs */
        ck_assert_int_eq(append_filled(jr, job, 9, seed_of(job, 0)), 0);
        ck_assert_int_eq(spm_journal_flush(jr), 0);
    }
    ck_assert_int_eq(journal_fds("5.log"), 0);
    ck_assert_int_eq(journal_fds(NULL), BOUND);
    ck_assert_int_eq(spm_journal_sync(jr), 0);
    ck_assert_int_eq(append_filled(jr, 5, 7, seed_of(5, 3)), 0); /* after the rewritten one */
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    spm_journal_destroy(&jr);

    jr = open_a();
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_uint_eq(rep.damaged_files, 0);
    ck_assert_uint_eq(g.n, 2 + BOUND);
    expect_rec(&g, 0, 5, 8, seed_of(5, 2));
    expect_rec(&g, 1, 5, 7, seed_of(5, 3));
    for (uint64_t job = 10; job < 10 + BOUND; job++)
        expect_rec(&g, (size_t)(job - 8), job, 9, seed_of(job, 0));
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* Without a call, SPM_JOURNAL_MAX_OPEN files are open at most, the last written ones; a lower
   bound set later closes the others at once. Replay opens one file at a time. */
START_TEST(test_default_bound_and_set_lower)
{
    make_dir();
    enum { JOBS = 3 * SPM_JOURNAL_MAX_OPEN };
    int before = open_fds();
    spm_journal_t *jr = open_a();
    for (uint64_t job = 1; job <= JOBS; job++)
        ck_assert_int_eq(append_filled(jr, job, 5, seed_of(job, 0)), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    ck_assert_int_eq(journal_fds(NULL), SPM_JOURNAL_MAX_OPEN);
    ck_assert_int_le(open_fds() - before, 1 + SPM_JOURNAL_MAX_OPEN);
    ck_assert_int_eq(journal_fds("1.log"), 0);
    spm_journal_set_max_open(jr, 3);
    ck_assert_int_eq(journal_fds(NULL), 3);
    char name[32];
    snprintf(name, sizeof name, "%d.log", (int)JOBS);
    ck_assert_int_eq(journal_fds(name), 1);
    spm_journal_set_max_open(jr, 0); /* counts as 1 */
    ck_assert_int_eq(journal_fds(NULL), 1);
    ck_assert_int_eq(spm_journal_sync(jr), 0);
    spm_journal_destroy(&jr);

    jr = open_a();
    spm_journal_set_max_open(jr, 2);
    ck_assert_int_eq(append_filled(jr, 1, 6, seed_of(1, 1)), 0); /* buffered while replaying */
    got_list_t g;
    replay(jr, &g);
    ck_assert_int_le(journal_fds(NULL), 2);
    ck_assert_uint_eq(g.n, JOBS);
    for (uint64_t job = 1; job <= JOBS; job++)
        expect_rec(&g, (size_t)(job - 1), job, 5, seed_of(job, 0));
    got_free(&g);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    spm_journal_destroy(&jr);
    jr = open_a();
    replay(jr, &g);
    ck_assert_uint_eq(g.n, JOBS + 1);
    expect_rec(&g, 1, 1, 6, seed_of(1, 1));
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

/* ------------------------------------------------------------ full disk */

START_TEST(test_full_disk_cuts_back_and_retries)
{
    make_dir();
    /* A file size limit stands in for a full disk: writes past it fail with EFBIG. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit was, lim;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
    spm_journal_t *jr = open_a(); /* journal.id is written before the limit */
    lim = was;
    lim.rlim_cur = 64 << 10;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    for (uint64_t i = 0; i < 3; i++)
        ck_assert_int_eq(append_filled(jr, 1, 10000, i), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    long three = file_size("1.log");
    for (uint64_t i = 3; i < 8; i++)
        ck_assert_int_eq(append_filled(jr, 1, 10000, i), 0);
    ck_assert_int_eq(append_filled(jr, 2, 10, 20), 0); /* another job is still written */
    ck_assert_int_eq(spm_journal_flush(jr), SPM_EFULL);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "1.log"));
    ck_assert_int_eq(file_size("1.log"), three); /* no half record left behind */
    ck_assert_int_eq(file_size("2.log"), 16 + 22);
    ck_assert_int_eq(spm_journal_flush(jr), SPM_EFULL); /* still full: still kept */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
    ck_assert_int_eq(spm_journal_flush(jr), 0);
    spm_journal_destroy(&jr);
    jr = open_a();
    got_list_t g;
    spm_journal_report_t rep = replay(jr, &g);
    ck_assert_uint_eq(rep.damaged_files, 0);
    ck_assert_uint_eq(g.n, 9);
    for (uint64_t i = 0; i < 8; i++)
        expect_rec(&g, i, 1, 10000, i);
    expect_rec(&g, 8, 2, 10, 20);
    got_free(&g);
    spm_journal_destroy(&jr);
}
END_TEST

static Suite *journal_suite(void)
{
    Suite *s = suite_create("journal");
    const spm_test_case_t c = {
        .timeout_s = 120, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, test_records_come_back_in_order);
    SPM_TEST_ADD(s, &c, test_append_after_replay);
    SPM_TEST_ADD(s, &c, test_buffered_until_flush);
    SPM_TEST_ADD(s, &c, test_drop_deletes_file_and_buffer);
    SPM_TEST_ADD(s, &c, test_reset_empties);
    SPM_TEST_ADD(s, &c, test_reset_survives_crash_before_flush);
    SPM_TEST_ADD(s, &c, test_torn_at_every_cut);
    SPM_TEST_ADD(s, &c, test_garbage_after_the_last_record);
    SPM_TEST_ADD(s, &c, test_flipped_byte);
    SPM_TEST_ADD(s, &c, test_callback_stops_one_job);
    SPM_TEST_ADD(s, &c, test_other_store_or_format_refused);
    SPM_TEST_ADD(s, &c, test_unwritable_place);
    SPM_TEST_ADD(s, &c, test_old_text_journal_taken);
    SPM_TEST_ADD(s, &c, test_sync_from_another_thread);
    SPM_TEST_ADD(s, &c, test_full_disk_cuts_back_and_retries);
    SPM_TEST_ADD(s, &c, test_open_files_bounded_while_syncing);
    SPM_TEST_ADD(s, &c, test_sync_covers_closed_files);
    SPM_TEST_ADD(s, &c, test_closed_file_reopened_at_known_end);
    SPM_TEST_ADD(s, &c, test_rewritten_file_closed_by_bound);
    SPM_TEST_ADD(s, &c, test_default_bound_and_set_lower);
    return s;
}

SPM_TEST_MAIN(journal_suite)
