/*  Tests of base/prom: the Prometheus text a scraper reads. A node's name
    (an operator's free text) cannot break the format, a histogram's
    buckets are cumulative with a duration on a bound counted in that
    bucket, and a label that does not fit is left out whole. */
#include "base/prom.h"
#include "tests/check_main.h"

#include <stdlib.h>
#include <string.h>

/*  What WRITE printed, as a malloc'd string. */
__attribute__((noinline)) static char *text_of(void (*write)(FILE *f))
{
    char *buf = NULL;
    size_t len;
    FILE *f = open_memstream(&buf, &len);
    write(f);
    fclose(f);
    return buf;
}

START_TEST(label_values_are_escaped)
{
    char l[128];
    spm_prom_labels(l, sizeof l, "node", "rack \"7\"\\b\nx", "state", "busy", NULL);
    ck_assert_str_eq(l, "node=\"rack \\\"7\\\"\\\\b\\nx\",state=\"busy\"");
    /* one that does not fit goes whole; the rest stays well-formed */
    spm_prom_labels(l, 24, "node", "alpha", "program", "a-long-program-name", NULL);
    ck_assert_str_eq(l, "node=\"alpha\"");
}
END_TEST

static void one_histogram(FILE *f)
{
    spm_prom_hist_t h = {0};
    spm_prom_observe(&h, 0.0002); /* below the first bound */
    spm_prom_observe(&h, 0.001);  /* on a bound: in its bucket */
    spm_prom_observe(&h, 0.003);
    spm_prom_observe(&h, 120); /* past the last bound: +Inf */
    spm_prom_family(f, "d_seconds", "histogram", "Durations.");
    char l[64];
    spm_prom_hist(f, "d_seconds", spm_prom_labels(l, sizeof l, "opcode", "mm.multiply", NULL), &h);
}

START_TEST(histogram_buckets_are_cumulative)
{
    char *t = text_of(one_histogram);
    ck_assert_ptr_nonnull(strstr(t, "# TYPE d_seconds histogram\n"));
    ck_assert_ptr_nonnull(strstr(t, "d_seconds_bucket{opcode=\"mm.multiply\",le=\"0.0005\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(t, "d_seconds_bucket{opcode=\"mm.multiply\",le=\"0.001\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "d_seconds_bucket{opcode=\"mm.multiply\",le=\"0.0025\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(t, "d_seconds_bucket{opcode=\"mm.multiply\",le=\"0.005\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(t, "d_seconds_bucket{opcode=\"mm.multiply\",le=\"60\"} 3\n"));
    ck_assert_ptr_nonnull(strstr(t, "d_seconds_bucket{opcode=\"mm.multiply\",le=\"+Inf\"} 4\n"));
    ck_assert_ptr_nonnull(strstr(t, "d_seconds_count{opcode=\"mm.multiply\"} 4\n"));
    const char *sum = strstr(t, "d_seconds_sum{opcode=\"mm.multiply\"} ");
    ck_assert_ptr_nonnull(sum);
    ck_assert_double_eq_tol(strtod(sum + strlen("d_seconds_sum{opcode=\"mm.multiply\"} "), NULL),
                            120.0042, 1e-9);
    free(t);
}
END_TEST

static Suite *prom_suite(void)
{
    Suite *s = suite_create("prom");
    const spm_test_case_t c = {.timeout_s = 10};
    SPM_TEST_ADD(s, &c, label_values_are_escaped);
    SPM_TEST_ADD(s, &c, histogram_buckets_are_cumulative);
    return s;
}

SPM_TEST_MAIN(prom_suite)
