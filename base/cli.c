/*  =========================================================================
    cli - subcommands of the spm binary, and the helpers they share
    =========================================================================
*/
#include "base/cli.h"
#include "spm/spm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COMMANDS 64

static spm_command_t commands[MAX_COMMANDS]; /* registered subcommands */
static unsigned ncommands;
static spm_command_t generators[MAX_COMMANDS]; /* registered `spm gen` kinds */
static unsigned ngenerators;
static spm_command_t runners[MAX_COMMANDS]; /* registered `spm run` programs */
static unsigned nrunners;

static int add(spm_command_t *tab, unsigned *n, const spm_command_t *cmd)
{
    if (*n >= MAX_COMMANDS || !cmd->name || !cmd->main)
        return SPM_EINVAL;
    for (unsigned i = 0; i < *n; i++)
        if (strcmp(tab[i].name, cmd->name) == 0)
            return SPM_EINVAL;
    tab[(*n)++] = *cmd;
    return 0;
}

static const spm_command_t *find(const spm_command_t *tab, unsigned n, const char *name)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(tab[i].name, name) == 0)
            return &tab[i];
    return NULL;
}

int spm_command_register(const spm_command_t *cmd)
{
    return add(commands, &ncommands, cmd);
}

const spm_command_t *spm_command_find(const char *name)
{
    return find(commands, ncommands, name);
}

const spm_command_t *spm_command_at(unsigned i)
{
    return i < ncommands ? &commands[i] : NULL;
}

int spm_generator_register(const spm_command_t *gen)
{
    return add(generators, &ngenerators, gen);
}

const spm_command_t *spm_generator_find(const char *name)
{
    return find(generators, ngenerators, name);
}

const spm_command_t *spm_generator_at(unsigned i)
{
    return i < ngenerators ? &generators[i] : NULL;
}

int spm_runner_register(const spm_command_t *runner)
{
    return add(runners, &nrunners, runner);
}

const spm_command_t *spm_runner_find(const char *name)
{
    return find(runners, nrunners, name);
}

const spm_command_t *spm_runner_at(unsigned i)
{
    return i < nrunners ? &runners[i] : NULL;
}

int spm_cli_fail(const char *what, int code)
{
    const char *detail = spm_error_detail();
    fprintf(stderr, "spm: %s: %s\n", what, *detail ? detail : spm_strerror(code));
    return 1;
}

int spm_cli_usage(const char *cmd, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "spm: %s (see 'spm %s --help')\n", msg, cmd);
    return 2;
}

int spm_parse_long(const char *option, const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return spm_error(SPM_EINVAL, "%s: '%s' is not a whole number from %ld to %ld", option, s,
                         min, max);
    *out = v;
    return 0;
}

int spm_parse_double(const char *option, const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < min || v > max)
        return spm_error(SPM_EINVAL, "%s: '%s' is not a number from %g to %g", option, s, min, max);
    *out = v;
    return 0;
}
