/*  =========================================================================
    progress - a one-line meter for a client's long phases on a terminal
    =========================================================================
*/
#include "vm/client/progress.h"
#include "transport/wire.h"

#include <stdio.h>

#define REDRAW_US 200000 /* 5 times a second */

void spm_progress_bar(char *bar, double frac)
{
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    int fill = (int)(frac * SPM_PROGRESS_BAR);
    for (int i = 0; i < SPM_PROGRESS_BAR; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[SPM_PROGRESS_BAR] = '\0';
}

void spm_progress_begin(spm_progress_t *p, int on, const char *label, uint64_t total)
{
    spm_progress_begin_to(p, stdout, on, label, total);
}

void spm_progress_begin_to(spm_progress_t *p, FILE *out, int on, const char *label, uint64_t total)
{
    uint64_t now = spm_now_us();
    *p = (spm_progress_t){
        .on = on, .label = label, .total = total, .t0_us = now, .next_us = now, .out = out};
}

void spm_progress_set(spm_progress_t *p, uint64_t done)
{
    if (!p->on)
        return;
    uint64_t now = spm_now_us();
    if (now < p->next_us)
        return;
    p->next_us = now + REDRAW_US;
    char bar[SPM_PROGRESS_BAR + 1];
    double el = (double)(now - p->t0_us) / 1e6;
    if (p->total) {
        double frac = done >= p->total ? 1.0 : (double)done / (double)p->total;
        spm_progress_bar(bar, frac);
        fprintf(p->out, "\r[%s] %s  %3.0f%%  %.1f s ", bar, p->label, 100.0 * frac, el);
    } else {
        fprintf(p->out, "\r%s  %llu  %.1f s ", p->label, (unsigned long long)done, el);
    }
    fflush(p->out);
    p->drawn = 1;
}

void spm_progress_end(spm_progress_t *p)
{
    if (p->drawn) {
        fprintf(p->out, "\r\033[K");
        fflush(p->out);
    }
    p->drawn = 0;
    p->on = 0;
}
