/*  =========================================================================
    scratch - a scratch directory per test, and bytes to fill files with

    For unit suites that write real files: base_setup and base_teardown
    are an unchecked fixture (they run in the runner, so the directory
    goes even when a test fails); tests make their own directories below
    `base`. fill makes LEN bytes from a seed, so that what is read back
    can be checked against what was written.
    =========================================================================
*/
#ifndef SPM_TESTS_SCRATCH_H_INCLUDED
#define SPM_TESTS_SCRATCH_H_INCLUDED

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char base[64]; /* mkdtemp directory of the test (a case of its own), removed at its end */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void base_setup(void)
{
    strcpy(base, "/tmp/spm-unit-XXXXXX");
    if (!mkdtemp(base))
        abort();
}

static void base_teardown(void)
{
    nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
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
