/*  =========================================================================
    log - the one logger: levels, to stderr, each line stamped with the time

    Every process writes its log lines to stderr as
    "2024-05-01T12:34:56.789Z spm ROLE[pid]: LEVEL: message": the time in
    UTC, ISO 8601 with milliseconds, left out when journald reads stderr
    (JOURNAL_STREAM names it), since the journal stamps each line itself,
    and on a client's lines (role "spm"), which are a command's words to
    its user rather than a daemon's log.
    Machine-readable output never goes through here.

    @discuss
    A string a peer supplied (a node's name, a program's name, an IEU's
    error text, a key's name) may hold anything: a newline would forge a
    second line, terminal escapes would act on whoever reads the log. So
    spm_log passes every message through spm_log_escape, whatever its
    caller formatted into it: a log line is always one line of printable
    text. Other texts shown to people (the status's failure lines) use the
    same helper.
    @end
    =========================================================================
*/
#ifndef SPM_LOG_H_INCLUDED
#define SPM_LOG_H_INCLUDED

#include <stddef.h>

typedef enum { SPM_LOG_ERROR = 0, SPM_LOG_WARN, SPM_LOG_INFO, SPM_LOG_DEBUG } spm_log_level_t;

/*  Sets the role shown on each line (a static string) and the level, and
    whether lines carry a time stamp (not when journald reads stderr). */
void spm_log_init(const char *role, spm_log_level_t level);

/*  Parses "error", "warn", "info" or "debug". Returns 0 or SPM_EINVAL. */
int spm_log_parse_level(const char *s, spm_log_level_t *level);

void spm_log(spm_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*  Whether lines of LEVEL are logged. */
int spm_log_enabled(spm_log_level_t level);

/*  Writes S (NULL: "") into BUF (SIZE bytes, at least 8) as one line can
    hold it: printable ASCII and valid UTF-8 as they are, a backslash as
    "\\", newline, carriage return and tab as "\n", "\r", "\t", and every
    other byte (controls, ESC, DEL, C1 controls, bytes that are not UTF-8)
    as "\xHH". Cut with "..." when BUF is too small. Returns BUF. */
char *spm_log_escape(const char *s, char *buf, size_t size);

#define spm_log_error(...) spm_log(SPM_LOG_ERROR, __VA_ARGS__)
#define spm_log_warn(...) spm_log(SPM_LOG_WARN, __VA_ARGS__)
#define spm_log_info(...) spm_log(SPM_LOG_INFO, __VA_ARGS__)
#define spm_log_debug(...) spm_log(SPM_LOG_DEBUG, __VA_ARGS__)

#endif
