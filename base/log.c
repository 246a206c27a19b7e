/*  =========================================================================
    log - the one logger: levels, to stderr, each line stamped with the time
    =========================================================================
*/
#include "base/log.h"
#include "spm/spm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *log_role = "spm";             /* shown after "spm " */
static spm_log_level_t log_level = SPM_LOG_WARN; /* lines above it are dropped */
static int log_stamp = 1;                        /* lines start with the UTC time */

/*  Whether stderr is the stream systemd connected to the journal: then
    JOURNAL_STREAM holds its "device:inode" (systemd.exec(5)). A variable
    inherited by a process whose stderr went elsewhere does not count. */
static int journald_reads_stderr(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) != 0)
        return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void spm_log_init(const char *role, spm_log_level_t level)
{
    log_role = role;
    log_level = level;
    /* A client's lines are a command's words to the person who ran it,
       not a daemon's log: no time. */
    log_stamp = strcmp(role, "spm") != 0 && !journald_reads_stderr();
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

/*  The length of the valid UTF-8 sequence at S that is not a C1 control
    (U+0080-U+009F, which terminals take as escapes), or 0. */
static size_t utf8_ok(const unsigned char *s)
{
    size_t n = s[0] > 0xf4 ? 0 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

char *spm_log_escape(const char *s, char *buf, size_t size)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t o = 0;
    while (*p) {
        char esc[8];
        size_t n = 0, take = 1;
        if (*p == '\\')
            n = (size_t)snprintf(esc, sizeof esc, "\\\\");
        else if (*p == '\n')
            n = (size_t)snprintf(esc, sizeof esc, "\\n");
        else if (*p == '\r')
            n = (size_t)snprintf(esc, sizeof esc, "\\r");
        else if (*p == '\t')
            n = (size_t)snprintf(esc, sizeof esc, "\\t");
        else if (*p >= 0x20 && *p < 0x7f)
            esc[n++] = (char)*p;
        else if (*p >= 0x80 && (take = utf8_ok(p)) != 0)
            memcpy(esc, p, n = take);
        else
            n = (size_t)snprintf(esc, sizeof esc, "\\x%02x", *p), take = 1;
        if (o + n + 4 > size) { /* room for "..." and the NUL */
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(buf + o, esc, n);
        o += n;
        p += take;
    }
    buf[o] = '\0';
    return buf;
}

int spm_log_enabled(spm_log_level_t level)
{
    return level <= log_level;
}

void spm_log(spm_log_level_t level, const char *fmt, ...)
{
    static const char *tags[] = {"error", "warning", "info", "debug"};
    if (level > log_level)
        return;
    char line[2048];
    int n = 0;
    if (log_stamp) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
        n += snprintf(line + n, sizeof line - (size_t)n, ".%03ldZ ", ts.tv_nsec / 1000000);
    }
    n += snprintf(line + n, sizeof line - (size_t)n, "spm %s[%d]: %s: ", log_role, (int)getpid(),
                  tags[level]);
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    spm_log_escape(msg, line + n, sizeof line - (size_t)n);
    fprintf(stderr, "%s\n", line);
}
