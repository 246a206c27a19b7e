/*  =========================================================================
    log - the one logger: levels, to stderr
    =========================================================================
*/
#include "base/log.h"
#include "spm/spm.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *log_role = "spm";             /* shown after "spm " */
static spm_log_level_t log_level = SPM_LOG_WARN; /* lines above it are dropped */

void spm_log_init(const char *role, spm_log_level_t level)
{
    log_role = role;
    log_level = level;
}

int spm_log_parse_level(const char *s, spm_log_level_t *level)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *level = (spm_log_level_t)i;
            return 0;
        }
    return spm_error(SPM_EINVAL, "unknown log level '%s' (error, warn, info, debug)", s);
}

void spm_log(spm_log_level_t level, const char *fmt, ...)
{
    static const char *tags[] = {"error", "warning", "info", "debug"};
    if (level > log_level)
        return;
    char line[2048];
    int n = snprintf(line, sizeof line, "spm %s[%d]: %s: ", log_role, (int)getpid(), tags[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
