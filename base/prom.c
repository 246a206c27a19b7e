/*  =========================================================================
    prom - Prometheus' text format: metric families, labelled samples and
    histograms of durations (base/prom.h)
    =========================================================================
*/
#include "base/prom.h"

#include <stdarg.h>
#include <string.h>

/*  From half a millisecond (a short SI) to a minute, about 2.5 times
    apart: a bucket boundary near every duration an operator asks about. */
const double spm_prom_bounds[SPM_PROM_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

void spm_prom_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void spm_prom_sample(FILE *f, const char *name, const char *labels, double v)
{
    if (labels && *labels)
        fprintf(f, "%s{%s} %.17g\n", name, labels, v);
    else
        fprintf(f, "%s %.17g\n", name, v);
}

void spm_prom_one(FILE *f, const char *name, const char *type, const char *help, double v)
{
    spm_prom_family(f, name, type, help);
    spm_prom_sample(f, name, NULL, v);
}

/*  Appends KEY="VALUE" (escaped) to BUF at *LEN, with a comma before it
    unless first; returns 0, or -1 (BUF unchanged) when it does not fit. */
static int append(char *buf, size_t size, size_t *len, const char *key, const char *value)
{
    size_t n = *len;
    char tmp[8];
    const char *parts[] = {n ? "," : "", key, "=\""};
    for (size_t i = 0; i < 3; i++)
        for (const char *p = parts[i]; *p; p++) {
            if (n + 1 >= size)
                return -1;
            buf[n++] = *p;
        }
    for (const char *p = value ? value : ""; *p; p++) {
        const char *s = p[0] == '\\' ? "\\\\" : p[0] == '"' ? "\\\"" : p[0] == '\n' ? "\\n" : NULL;
        if (!s) {
            tmp[0] = *p;
            tmp[1] = '\0';
            s = tmp;
        }
        for (; *s; s++) {
            if (n + 1 >= size)
                return -1;
            buf[n++] = *s;
        }
    }
    if (n + 2 >= size)
        return -1;
    buf[n++] = '"';
    buf[n] = '\0';
    *len = n;
    return 0;
}

char *spm_prom_labels(char *buf, size_t size, ...)
{
    size_t len = 0;
    if (!size)
        return buf;
    buf[0] = '\0';
    va_list ap;
    va_start(ap, size);
    const char *key;
    while ((key = va_arg(ap, const char *)) != NULL) {
        const char *value = va_arg(ap, const char *);
        if (append(buf, size, &len, key, value) != 0)
            buf[len] = '\0';
    }
    va_end(ap);
    return buf;
}

void spm_prom_observe(spm_prom_hist_t *h, double seconds)
{
    size_t b = 0;
    while (b < SPM_PROM_BUCKETS && seconds > spm_prom_bounds[b])
        b++;
    h->bucket[b]++;
    h->sum += seconds;
    h->count++;
}

void spm_prom_hist(FILE *f, const char *name, const char *labels, const spm_prom_hist_t *h)
{
    const char *sep = labels && *labels ? "," : "";
    uint64_t cum = 0;
    for (size_t b = 0; b <= SPM_PROM_BUCKETS; b++) {
        cum += h->bucket[b];
        if (b < SPM_PROM_BUCKETS)
            fprintf(f, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels ? labels : "", sep,
                    spm_prom_bounds[b], (unsigned long long)cum);
        else
            fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels ? labels : "", sep,
                    (unsigned long long)cum);
    }
    char sum[160], count[160];
    snprintf(sum, sizeof sum, "%s_sum", name);
    snprintf(count, sizeof count, "%s_count", name);
    spm_prom_sample(f, sum, labels, h->sum);
    spm_prom_sample(f, count, labels, (double)h->count);
}
