/*  =========================================================================
    prom - Prometheus' text format: metric families, labelled samples and
    histograms of durations

    @discuss
    The center and every agent serve /metrics in the text format version
    0.0.4 that Prometheus scrapes and `promtool check metrics` lints. Both
    write it through these helpers, so that a family's HELP and TYPE lines,
    the escaping of label values (a node's name comes from its operator)
    and a histogram's cumulative buckets are right in one place:

        spm_prom_family(f, "spm_node_sis_total", "counter", "SIs run.");
        char l[256];
        spm_prom_labels(l, sizeof l, "node", name, NULL);
        spm_prom_sample(f, "spm_node_sis_total", l, (double)sis);

    Names follow Prometheus' conventions: base units in the name (seconds,
    bytes), `_total` on counters.
    @end
    =========================================================================
*/
#ifndef SPM_PROM_H_INCLUDED
#define SPM_PROM_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*  Upper bounds, in seconds, of a duration histogram's buckets (+Inf comes
    after): fit for work of under a millisecond to a minute. */
#define SPM_PROM_BUCKETS 16
extern const double spm_prom_bounds[SPM_PROM_BUCKETS];

/*  A histogram of durations: counts per bucket (not cumulative; the last
    is +Inf), their sum and number. Zero it to start. */
typedef struct {
    uint64_t bucket[SPM_PROM_BUCKETS + 1];
    double sum;     /* seconds */
    uint64_t count; /* observations */
} spm_prom_hist_t;

/*  Writes the HELP and TYPE lines of family NAME (TYPE: "counter",
    "gauge", "histogram"). HELP must be one line. */
void spm_prom_family(FILE *f, const char *name, const char *type, const char *help);

/*  Writes one sample of NAME with LABELS (the text between the braces, as
    spm_prom_labels makes it; NULL or "": none) and value V. */
void spm_prom_sample(FILE *f, const char *name, const char *labels, double v);

/*  A family of one sample without labels: spm_prom_family, then
    spm_prom_sample. */
void spm_prom_one(FILE *f, const char *name, const char *type, const char *help, double v);

/*  Writes `KEY="VALUE",...` into BUF (SIZE bytes, always NUL-terminated)
    from the pairs of strings that follow, ended by NULL; values are
    escaped as the format wants (backslash, quote, newline). Returns BUF.
    A label that does not fit is left out whole. */
char *spm_prom_labels(char *buf, size_t size, ...) __attribute__((sentinel));

/*  Counts one duration of SECONDS in H. */
void spm_prom_observe(spm_prom_hist_t *h, double seconds);

/*  Writes H's samples as histogram NAME (its family lines are the
    caller's): NAME_bucket with LABELS and `le` for every bound and +Inf,
    cumulative, then NAME_sum and NAME_count with LABELS. */
void spm_prom_hist(FILE *f, const char *name, const char *labels, const spm_prom_hist_t *h);

#endif
