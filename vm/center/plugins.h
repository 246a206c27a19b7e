/*  =========================================================================
    plugins - the center's side of plugins: who may send one, loading one
    from the store, and the guard against one that crashes the center

    @discuss
    Shipping code is running code on every node, so a center takes a
    plugin only where center.allow_plugins says:

        no     nobody (the default on a center with a tcp:// endpoint)
        yes    any client the center lets in (the default on an ipc://
               center: an embedded VM, whose clients are its own user)
        keys   clients whose public key is in the key directory's
               authorized/plugins/ (NAME.pub files, read at each request)

    A super-function of a plugin runs in the center's thread. If it
    crashes the center (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), the
    guard's handler appends the job's id to STORE/quarantine before the
    process dies; the next center on that store fails that job without
    running any of its code (the journal records it, so it stays failed),
    and resumes every other job.
    @end
    =========================================================================
*/
#ifndef SPM_PLUGINS_H_INCLUDED
#define SPM_PLUGINS_H_INCLUDED

#include "datacache/store.h"
#include "idu/idu.h"
#include "transport/security.h"

typedef enum { SPM_PLUGINS_NO = 0, SPM_PLUGINS_YES, SPM_PLUGINS_KEYS } spm_plugins_policy_t;

/*  Parses center.allow_plugins (VALUE "" or "auto": yes when LOCAL, the
    center listening on ipc:// only, else no). Returns 0 with *OUT set, or
    SPM_EINVAL with a detail. */
int spm_plugins_policy(const char *value, int local, spm_plugins_policy_t *out);

/*  Whether the client with public key USER (Z85; "" for none) may send a
    plugin under POLICY. Returns 0, or SPM_EDENIED with a one-line detail
    naming the setting. */
int spm_plugins_allowed(spm_plugins_policy_t policy, spm_security_t *security, const char *user);

/*  Checks the plugin whose bytes are SDB ID (version 1) in STORE without
    loading it (spm_plugin_check: the center never runs a plugin's code,
    its job's host does, vm/center/sfhost.h) and writes its scope into
    SCOPE (17 bytes). Returns 0, or SPM_ENOTFOUND (no such block, or not a
    plugin's), or spm_plugin_check's failures, with the detail set. */
int spm_plugins_verify(spm_store_t *store, spm_sdb_t id, char *scope);

/*  Arms the crash guard for a center on the store in DIR. Returns 0 or
    SPM_ESYS. */
int spm_plugins_guard(const char *dir);

/*  Hands IDU the jobs DIR/quarantine names (before the journal is read
    back). Returns how many. */
size_t spm_plugins_quarantined(const char *dir, spm_idu_t *idu);

/*  Empties DIR/quarantine (once the journal records those jobs failed). */
void spm_plugins_quarantine_done(const char *dir);

#endif
