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

static const spm_command_t *commands; /* vm/cmd/commands.c's table */

void spm_commands_use(const spm_command_t *table)
{
    commands = table;
}

const spm_command_t *spm_command_in(const spm_command_t *table, const char *name)
{
    for (const spm_command_t *c = table; c && c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

const spm_command_t *spm_command_find(const char *name)
{
    return spm_command_in(commands, name);
}

const spm_command_t *spm_command_at(unsigned i)
{
    for (unsigned k = 0; commands && commands[k].name; k++)
        if (k == i)
            return &commands[k];
    return NULL;
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
