/*  Benchmark of the example programs against what a user would write
    without spm, in the same run.

    wordfreq: examples/wordfreq on an embedded VM with 2 IEUs (the whole
    `spm run --plugin ... wordfreq FILE` command: start, staging, counting,
    the merge, printing) against bench/wordfreq_base.h (one process, one
    hash table, fread in big chunks), timed in this process, on a generated
    text of SPM_BENCH_EXAMPLES_MB MiB (1024 by default, 64 with
    SPM_BENCH_QUICK=1): deterministic words of a Zipf-like vocabulary of
    65,536, mixed case, with punctuation and lines of about 70 bytes. The
    two outputs are compared byte for byte. Medians of SPM_BENCH_REPS
    (default 3) alternating runs, after one run of each that warms the page
    cache; it prints both and the ratio base / wordfreq (issue 38's target:
    at least 1.5). */
#include <stdio.h>
#include <stdlib.h>
#include "bench/bench.h"

#include "tests/spm_test.h"

#include "bench/wordfreq_base.h"

#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/*  Writes MIB MiB of text to PATH, the same for the same MIB. */
static void gen_text(const char *path, size_t mib)
{
    enum { VOCAB = 1 << 16 };
    static char words[VOCAB][16];
    uint64_t s = 38;
    for (size_t i = 0; i < VOCAB; i++) {
        uint64_t r = mix(&s);
        size_t len = 2 + r % 11;
        for (size_t j = 0; j < len; j++)
            words[i][j] =
                (char)((r >> (8 + j) & 7) == 0 ? 'A' + (mix(&s) % 26) : 'a' + (mix(&s) % 26));
        words[i][len] = '\0';
    }
    FILE *f = fopen(path, "wb");
    SPM_TEST_ASSERT(f != NULL);
    static const char seps[] = "    ,. ;\n";
    size_t total = mib << 20, written = 0, line = 0;
    char buf[1 << 16];
    size_t n = 0;
    while (written + n < total) {
        uint64_t r = mix(&s);
        const char *w = words[(r >> 20) & ((1u << (r % 17)) - 1)]; /* short words are common */
        size_t len = strlen(w);
        if (n + len + 2 > sizeof buf) {
            SPM_TEST_ASSERT(fwrite(buf, 1, n, f) == n);
            written += n, n = 0;
        }
        memcpy(buf + n, w, len), n += len, line += len + 1;
        buf[n++] = line > 70 ? (line = 0, '\n') : seps[(r >> 8) % (sizeof seps - 2)];
    }
    n = total - written < n ? total - written : n;
    SPM_TEST_ASSERT(fwrite(buf, 1, n, f) == n);
    SPM_TEST_ASSERT(fclose(f) == 0);
}

/*  Runs wordfreq on TEXT; returns the wall time and its output in *OUT. */
static double run_wordfreq(const char *plugin, const char *text, char **out)
{
    const char *argv[] = {"run",      "--plugin",   plugin, "--ieus", "2", "--quiet",
                          "wordfreq", "--block-mb", "8",    text,     NULL};
    char *err;
    double t0 = now();
    int rc = spm_test_run(argv, 3600, out, &err);
    double t = now() - t0;
    if (rc != 0)
        SPM_TEST_FAIL("wordfreq: exit %d: %s\n", rc, err);
    free(err);
    return t;
}

/*  Runs the base on TEXT; returns the wall time and its output in *OUT. */
static double run_base(const char *text, char **out)
{
    size_t len;
    FILE *f = open_memstream(out, &len);
    SPM_TEST_ASSERT(f != NULL);
    double t0 = now();
    SPM_TEST_ASSERT(wordfreq_base(text, f) == 0);
    SPM_TEST_ASSERT(fflush(f) == 0);
    double t = now() - t0;
    fclose(f);
    return t;
}

int main(void)
{
    const char *e = getenv("SPM_BENCH_EXAMPLES_MB");
    size_t mib = e && atol(e) > 0 ? (size_t)atol(e) : bench_quick() ? 64 : 1024;
    const char *pdir = getenv("SPM_PLUGINS");
    char plugin[512], text[128], cmd[256];
    snprintf(plugin, sizeof plugin, "%s/libwordfreq.so", pdir && *pdir ? pdir : "build/plugins");
    SPM_TEST_ASSERT(access(plugin, R_OK) == 0);
    const char *dir = spm_test_tmpdir();
    snprintf(text, sizeof text, "%s/text", dir);
    double t0 = now();
    gen_text(text, mib);
    printf("wordfreq on %zu MiB of generated text (%.1f s to write it), 2 IEUs\n", mib, now() - t0);
    char *a, *b;
    run_base(text, &b); /* warm the page cache, and compare once */
    run_wordfreq(plugin, text, &a);
    if (strcmp(a, b) != 0)
        SPM_TEST_FAIL("wordfreq and the base disagree:\n%.300s\n---\n%.300s\n", a, b);
    printf("  outputs identical: %zu distinct words\n", spm_test_lines(a));
    free(a), free(b);
    int reps = bench_reps();
    double spm[64], base[64];
    reps = reps > 64 ? 64 : reps;
    for (int i = 0; i < reps; i++) {
        base[i] = run_base(text, &b);
        spm[i] = run_wordfreq(plugin, text, &a);
        printf("  run %d: base %.3f s, wordfreq %.3f s\n", i + 1, base[i], spm[i]);
        fflush(stdout);
        free(a), free(b);
    }
    double ms = bench_median(spm, reps), mb = bench_median(base, reps);
    printf("wordfreq %.3f s, one-process base %.3f s (medians of %d): wordfreq %.2fx faster "
           "(%.0f and %.0f MiB/s)\n",
           ms, mb, reps, mb / ms, (double)mib / ms, (double)mib / mb);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
