/*  =========================================================================
    scratch - a scratch directory per test, and bytes to fill files with

    The one fixture of every suite that writes real files: `base` is the
    running test's own mkdtemp directory, removed at its end. It is made
    and removed either by the unchecked fixture base_setup/base_teardown
    (it runs in the runner, so the directory goes even when a test fails
    or crashes; once per case, so a loop test's iterations share it) or by
    the checked fixture scratch_setup/scratch_teardown (it runs in the
    test's process around every iteration of a loop test, and the test
    fails when the directory cannot be removed). Tests make their own
    files and directories below `base`; `path` names one. fill
    makes LEN bytes from a seed, so that what is read back can be checked
    against what was written.
    =========================================================================
*/
#ifndef SPM_TESTS_SCRATCH_H_INCLUDED
#define SPM_TESTS_SCRATCH_H_INCLUDED

#include <check.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char base[64]; /* mkdtemp directory of the running test, removed at its end */

static inline int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/*  Unchecked fixture: makes `base`, or aborts the runner (no directory,
    no test). */
static inline void base_setup(void)
{
    strcpy(base, "/tmp/spm-unit-XXXXXX");
    if (!mkdtemp(base))
        abort();
}

/*  Unchecked fixture: removes `base` and all below it. */
static inline void base_teardown(void)
{
    nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*  Checked fixture: makes `base` or fails the test. */
static inline void scratch_setup(void)
{
    strcpy(base, "/tmp/spm-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(base));
}

/*  Checked fixture: removes `base` and all below it, or fails the test. */
static inline void scratch_teardown(void)
{
    ck_assert_int_eq(nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/*  BASE/NAME, in one of eight static buffers taken in turn, so that one
    call may name several files. */
static inline const char *path(const char *name)
{
    static char buf[8][192];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", base, name);
    return p;
}

/*  Fills BUF with LEN bytes derived from SEED. */
static inline void fill(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
}

#endif
