/*  =========================================================================
    log - the one logger: levels, to stderr

    Every process writes its log lines to stderr as "spm ROLE[pid]: LEVEL:
    message". Machine-readable output never goes through here.
    =========================================================================
*/
#ifndef SPM_LOG_H_INCLUDED
#define SPM_LOG_H_INCLUDED

typedef enum { SPM_LOG_ERROR = 0, SPM_LOG_WARN, SPM_LOG_INFO, SPM_LOG_DEBUG } spm_log_level_t;

/*  Sets the role shown on each line (a static string) and the level. */
void spm_log_init(const char *role, spm_log_level_t level);

/*  Parses "error", "warn", "info" or "debug". Returns 0 or SPM_EINVAL. */
int spm_log_parse_level(const char *s, spm_log_level_t *level);

void spm_log(spm_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define spm_log_error(...) spm_log(SPM_LOG_ERROR, __VA_ARGS__)
#define spm_log_warn(...) spm_log(SPM_LOG_WARN, __VA_ARGS__)
#define spm_log_info(...) spm_log(SPM_LOG_INFO, __VA_ARGS__)
#define spm_log_debug(...) spm_log(SPM_LOG_DEBUG, __VA_ARGS__)

#endif
