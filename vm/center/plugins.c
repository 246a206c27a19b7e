/*  =========================================================================
    plugins - the center's side of plugins (see plugins.h)

    The crash handler uses only async-signal-safe calls: it formats the
    job id by hand, appends one line to the quarantine file (opened at
    start), syncs it, then lets the signal kill the process as it would
    have (default action, raised again on return).
    =========================================================================
*/
#include "vm/center/plugins.h"

#include "base/checksum.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int spm_plugins_policy(const char *value, int local, spm_plugins_policy_t *out)
{
    if (!value || !*value || !strcmp(value, "auto"))
        *out = local ? SPM_PLUGINS_YES : SPM_PLUGINS_NO;
    else if (!strcmp(value, "no") || !strcmp(value, "false"))
        *out = SPM_PLUGINS_NO;
    else if (!strcmp(value, "yes") || !strcmp(value, "true"))
        *out = SPM_PLUGINS_YES;
    else if (!strcmp(value, "keys"))
        *out = SPM_PLUGINS_KEYS;
    else
        return spm_error(SPM_EINVAL, "center.allow_plugins is '%s'; use no, yes or keys", value);
    return 0;
}

int spm_plugins_allowed(spm_plugins_policy_t policy, spm_security_t *security, const char *user)
{
    if (policy == SPM_PLUGINS_YES)
        return 0;
    if (policy == SPM_PLUGINS_NO)
        return spm_error(SPM_EDENIED, "this center takes no plugins (center.allow_plugins is "
                                      "no, the default on a tcp:// center); its operator may "
                                      "set it to yes, or keys");
    if (!user || !*user)
        return spm_error(SPM_EDENIED, "this center takes plugins only from keys in "
                                      "authorized/plugins/ (center.allow_plugins = keys), and "
                                      "this client has no key");
    if (!spm_security_listed(security, "plugins", user))
        return spm_error(SPM_EDENIED, "this client's key is not in authorized/plugins/ of the "
                                      "center's key directory (center.allow_plugins = keys)");
    return 0;
}

int spm_plugins_verify(spm_store_t *store, spm_sdb_t id, char *scope)
{
    void *data = NULL;
    size_t len = 0;
    uint32_t type = 0;
    int rc = spm_store_get(store, id, 1, NULL, &type, &data, &len);
    if (rc == 0 && type != spm_name_id(SPM_PLUGIN_TYPE))
        rc = spm_error(SPM_ENOTFOUND, "SDB %llu is not a plugin", (unsigned long long)id);
    else if (rc != 0)
        rc = spm_error(SPM_ENOTFOUND, "the plugin (SDB %llu) is not in the center's store",
                       (unsigned long long)id);
    else if ((rc = spm_plugin_check(data, len)) == 0)
        spm_plugin_scope(spm_checksum(data, len), scope);
    free(data);
    return rc;
}

/* ------------------------------------------------------------ the guard */

static int guard_fd = -1;

static void on_crash(int sig)
{
    uint64_t job = spm_idu_running_job;
    if (job && guard_fd >= 0) {
        char line[48], *p = line + sizeof line;
        *--p = '\n';
        *--p = (char)('0' + (sig % 10));
        if (sig >= 10)
            *--p = (char)('0' + (sig / 10 % 10));
        *--p = ' ';
        do
            *--p = (char)('0' + job % 10);
        while ((job /= 10) != 0);
        ssize_t w = write(guard_fd, p, (size_t)(line + sizeof line - p));
        (void)w;
        fsync(guard_fd);
        static const char msg[] = "spm center: a super-function crashed the center; its job "
                                  "is failed when the center starts again\n";
        w = write(2, msg, sizeof msg - 1);
    }
    signal(sig, SIG_DFL);
    raise(sig); /* delivered, fatal now, once the handler returns */
}

int spm_plugins_guard(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/quarantine", dir);
    guard_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (guard_fd < 0)
        return spm_error(SPM_ESYS, "%s: %s", path, strerror(errno));
    static char stack[64 * 1024]; /* the handler runs after a stack overflow, too */
    stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack};
    sigaltstack(&ss, NULL);
    struct sigaction sa = {.sa_handler = on_crash, .sa_flags = SA_ONSTACK | SA_RESETHAND};
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaction(sigs[i], &sa, NULL);
    return 0;
}

size_t spm_plugins_quarantined(const char *dir, spm_idu_t *idu)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/quarantine", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = 0;
    unsigned long long job;
    int sig;
    while (fscanf(f, "%llu %d", &job, &sig) == 2) {
        const char *abbrev = sigabbrev_np(sig);
        char name[32], why[256];
        snprintf(name, sizeof name, "SIG%s", abbrev ? abbrev : "?");
        snprintf(why, sizeof why,
                 "its code crashed the center (%s); the center was started again and the job "
                 "was failed without running any of its code",
                 name);
        spm_log_warn("job %llu crashed the center (%s) before its restart: it is failed, not "
                     "resumed",
                     job, name);
        if (spm_idu_quarantine(idu, job, why) == 0)
            n++;
    }
    fclose(f);
    return n;
}

void spm_plugins_quarantine_done(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/quarantine", dir);
    if (truncate(path, 0) != 0 && errno != ENOENT)
        spm_log_warn("%s: %s", path, strerror(errno));
}
