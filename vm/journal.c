/*  =========================================================================
    journal - the center's record of which jobs started and which ended
    =========================================================================
*/
#include "vm/journal.h"
#include "vm/grow.h"
#include "vm/spm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct spm_journal {
    FILE *f; /* appended to */
    char *path;
    uint64_t max_job;        /* largest job id read or written */
    spm_journal_job_t *open; /* started and not ended, as read at open */
    size_t nopen, capopen;
};

static void note_start(spm_journal_t *self, uint64_t job, const char *program)
{
    if (spm_grow(&self->open, self->nopen, &self->capopen, sizeof *self->open, 16) != 0)
        return;
    spm_journal_job_t *j = &self->open[self->nopen++];
    j->job = job;
    snprintf(j->program, sizeof j->program, "%s", program);
}

static void note_end(spm_journal_t *self, uint64_t job)
{
    for (size_t i = 0; i < self->nopen; i++)
        if (self->open[i].job == job) {
            self->open[i] = self->open[--self->nopen];
            return;
        }
}

spm_journal_t *spm_journal_open(const char *dir)
{
    spm_journal_t *self = calloc(1, sizeof *self);
    if (!self || asprintf(&self->path, "%s/jobs.journal", dir) < 0) {
        free(self);
        spm_error(SPM_ENOMEM, "out of memory");
        return NULL;
    }
    FILE *in = fopen(self->path, "r");
    char line[256];
    while (in && fgets(line, sizeof line, in)) {
        unsigned long long job;
        char word[64];
        if (!strchr(line, '\n'))
            continue; /* torn by a crash */
        if (sscanf(line, "start %llu %63s", &job, word) == 2) {
            note_start(self, job, word);
        } else if (sscanf(line, "end %llu", &job) == 1) {
            note_end(self, job);
        } else {
            continue;
        }
        if (job > self->max_job)
            self->max_job = job;
    }
    if (in)
        fclose(in);
    self->f = fopen(self->path, "a");
    if (!self->f) {
        spm_error(SPM_EIO, "%s: %s", self->path, strerror(errno));
        spm_journal_close(&self);
        return NULL;
    }
    return self;
}

void spm_journal_close(spm_journal_t **selfp)
{
    spm_journal_t *self = *selfp;
    if (!self)
        return;
    if (self->f)
        fclose(self->f);
    free(self->open);
    free(self->path);
    free(self);
    *selfp = NULL;
}

uint64_t spm_journal_max_job(const spm_journal_t *self)
{
    return self->max_job;
}

size_t spm_journal_unfinished(const spm_journal_t *self, spm_journal_job_t *out, size_t max)
{
    for (size_t i = 0; i < self->nopen && i < max; i++)
        out[i] = self->open[i];
    return self->nopen;
}

static int append(spm_journal_t *self, const char *line)
{
    if (fputs(line, self->f) < 0 || fflush(self->f) != 0)
        return spm_error(errno == ENOSPC ? SPM_EFULL : SPM_EIO, "%s: %s", self->path,
                         strerror(errno));
    return 0;
}

int spm_journal_start(spm_journal_t *self, uint64_t job, const char *program)
{
    char line[128];
    snprintf(line, sizeof line, "start %llu %.60s\n", (unsigned long long)job, program);
    if (job > self->max_job)
        self->max_job = job;
    return append(self, line);
}

int spm_journal_end(spm_journal_t *self, uint64_t job, int status)
{
    char line[64];
    snprintf(line, sizeof line, "end %llu %d\n", (unsigned long long)job, status);
    return append(self, line);
}

int spm_journal_sync(spm_journal_t *self)
{
    if (fsync(fileno(self->f)) != 0)
        return spm_error(SPM_EIO, "%s: %s", self->path, strerror(errno));
    return 0;
}
