/*  Replays every fuzz input kept in the tree through its target
    (tests/fuzz/targets.h) with the ordinary compiler: the seed corpus
    (tests/fuzz/corpus/NAME) and every crasher the fuzzers found
    (tests/fuzz/regress/NAME), so each fixed crash stays fixed without
    clang. Files are found under $SPM_SOURCE_DIR (set by `make check`),
    else under the current directory. */
#include "tests/check_main.h"
#include "tests/fuzz/targets.h"

#include <dirent.h>

/*  Runs every file under DIR (relative to $SPM_SOURCE_DIR, else the
    current directory) through RUN; returns how many. */
static size_t each_file(const char *rel, int (*run)(const uint8_t *data, size_t size))
{
    const char *src = getenv("SPM_SOURCE_DIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", src && *src ? src : ".", rel);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        ck_assert_msg(f != NULL, "cannot open %s", path);
        uint8_t *buf = malloc(1 << 20);
        ck_assert_ptr_nonnull(buf);
        size_t len = fread(buf, 1, 1 << 20, f);
        fclose(f);
        /* an exact-size copy, as libFuzzer hands it over */
        uint8_t *input = malloc(len ? len : 1);
        ck_assert_ptr_nonnull(input);
        memcpy(input, buf, len);
        free(buf);
        run(input, len);
        free(input);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(corpus_and_crashers_replay)
{
    const spm_fuzz_target_t *t = &spm_fuzz_targets[_i];
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", t->name);
    size_t seeds = each_file(dir, t->run);
    ck_assert_msg(seeds > 0, "no seed corpus in %s (run from the top of the tree)", dir);
    snprintf(dir, sizeof dir, "tests/fuzz/regress/%s", t->name);
    each_file(dir, t->run);
}
END_TEST

/*  The seeds reach past the decoders' first checks: every sdb seed is a
    block its type accepts, every mtx seed a file the reader opens. */
static int sdb_seed_valid(const uint8_t *data, size_t size)
{
    ck_assert_uint_ge(size, 4);
    const spm_sdb_type_t *t = spm_sdb_type_by_id(spm_le32(data));
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(t->validate(data + 4, size - 4) == 0, "%s seed: %s", t->name, spm_error_detail());
    return 0;
}

static int mtx_seed_valid(const uint8_t *data, size_t size)
{
    spm_mmio_t *r = spm_mmio_open(fuzz_file(data, size));
    ck_assert_msg(r != NULL, "mtx seed: %s", spm_error_detail());
    uint64_t i, j;
    double v;
    int rc;
    while ((rc = spm_mmio_next(r, &i, &j, &v)) == 1)
        ;
    ck_assert_msg(rc == 0, "mtx seed: %s", spm_error_detail());
    spm_mmio_destroy(&r);
    return 0;
}

/*  The journal seed "records" is a file the journal reads whole: four
    records, no damage (else a format change left the fuzzer only garbage). */
static int journal_count(void *arg, uint64_t job, const void *rec, size_t len)
{
    (void)job, (void)rec, (void)len;
    (*(int *)arg)++;
    return 0;
}

static void journal_seed_intact(void)
{
    const char *src = getenv("SPM_SOURCE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/journal/records", src && *src ? src : ".");
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    uint8_t buf[4096];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    spm_fuzz_journal(buf, 0); /* makes the scratch directory */
    snprintf(path, sizeof path, "%s/journal/7.log", fuzz_journal_dir);
    f = fopen(path, "wb");
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
    spm_journal_t *jr = fuzz_journal_open();
    int n = 0;
    spm_journal_report_t rep;
    ck_assert_int_eq(spm_journal_replay(jr, journal_count, &n, &rep), 0);
    ck_assert_int_eq(n, 4);
    ck_assert_uint_eq(rep.damaged_files, 0);
    spm_journal_destroy(&jr);
}

START_TEST(seeds_are_well_formed)
{
    ck_assert_uint_ge(each_file("tests/fuzz/corpus/sdb", sdb_seed_valid), 12);
    ck_assert_uint_ge(each_file("tests/fuzz/corpus/mtx", mtx_seed_valid), 5);
    journal_seed_intact();
}
END_TEST

/*  The wire target must tell garbage from a message: it would pass
    everything if its socket pair were broken. */
START_TEST(wire_target_delivers_and_drops)
{
    Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.version = SPM_PROTOCOL_VERSION;
    env.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    uint8_t buf[64] = {0}; /* k = 0: no block frames */
    size_t n = 1 + spm__envelope__pack(&env, buf + 1);
    ck_assert_int_eq(spm_fuzz_wire(buf, n), 0);
    ck_assert_int_eq(spm_fuzz_wire((const uint8_t *)"\x02\x03\x00"
                                                    "abc\xff\xff",
                                   8),
                     0);
}
END_TEST

static Suite *fuzz_suite(void)
{
    Suite *s = suite_create("fuzz");
    const spm_test_case_t c = {.timeout_s = 60};
    size_t n = sizeof spm_fuzz_targets / sizeof spm_fuzz_targets[0];
    SPM_TEST_ADD_LOOP(s, &c, corpus_and_crashers_replay, 0, (int)n);
    SPM_TEST_ADD(s, &c, wire_target_delivers_and_drops);
    SPM_TEST_ADD(s, &c, seeds_are_well_formed);
    return s;
}

SPM_TEST_MAIN(fuzz_suite)
