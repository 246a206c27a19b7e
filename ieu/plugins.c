/*  =========================================================================
    plugins - the plugins SIs name: fetched once, loaded before their SIs run

    An SI of a program loaded from a plugin names the plugin's block. The
    first such SI to arrive fetches it as its last operand, as it fetches
    any other; the SIs of the same plugin that arrive meanwhile wait for
    it here, and are localized (or failed) once it is loaded.
    =========================================================================
*/
#include "ieu/ieu_int.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"

#include <stdio.h>
#include <stdlib.h>

/*  The state of plugin SDB, made on first sight (NULL: out of memory). */
plugin_t *spm_ieu_plugin_of(ieu_t *ieu, spm_sdb_t sdb)
{
    plugin_t *pl = spm_hmap_get(ieu->plugins, sdb);
    if (!pl && (pl = calloc(1, sizeof *pl)) && spm_hmap_put(ieu->plugins, sdb, pl) != 0) {
        free(pl);
        pl = NULL;
    }
    return pl;
}

/*  The fetch or load of plugin SDB ended with RC (MSG when it failed): the
    SIs that waited for it go on, or fail with it. */
void spm_ieu_plugin_settled(ieu_t *ieu, spm_sdb_t sdb, int rc, const char *msg)
{
    plugin_t *pl = spm_hmap_get(ieu->plugins, sdb);
    if (!pl)
        return;
    pl->fetching = 0;
    pl->loaded |= rc == 0;
    task_t *t;
    while ((t = pop(&pl->waiting))) {
        if (rc != 0)
            spm_ieu_fail_task(ieu, t, rc, msg);
        else if (!(t->op = spm_opcode_by_id(t->opcode)))
            spm_ieu_fail_task(ieu, t, SPM_ENOTFOUND, "unknown opcode (not in its plugin)");
        else
            spm_ieu_localize(ieu, t);
    }
}

/*  T's plugin (its last operand) is local: loads it and takes the
    operand away. Returns 0, or fails T (and the SIs that waited for the
    plugin) and returns the SPM_E* code. */
int spm_ieu_load_plugin(ieu_t *ieu, task_t *t)
{
    size_t i = t->nops - 1;
    op_t *o = &t->ops[i];
    spm_sdb_t sdb = t->plugin;
    const void *data = NULL;
    size_t len = 0;
    spm_nodecache_reader_t *rd = NULL;
    spm_store_snap_t *snap = NULL;
    int rc = spm_ieu_operand_bytes(ieu, t, i, 1, &rd, &snap, &data, &len);
    if (rc != 0)
        rc = spm_error(SPM_ESTORE, "its plugin (SDB %llu) is no longer in the %s",
                       (unsigned long long)sdb, o->in_store ? "store" : "node cache");
    char scope[SPM_SCOPE_LEN];
    if (rc == 0)
        rc = spm_plugin_load(data, len, scope);
    spm_nodecache_reader_end(&rd);
    spm_store_snap_end(&snap);
    free(o->holders);
    if (t->own) {
        free(t->own[i]);
        t->own[i] = NULL;
    }
    t->nops--;
    t->plugin_op = 0;
    char msg[600] = "";
    if (rc != 0)
        snprintf(msg, sizeof msg, "loading its plugin: %s", spm_error_detail());
    spm_ieu_plugin_settled(ieu, sdb, rc, msg);
    if (rc == 0 && !(t->op = spm_opcode_by_id(t->opcode))) {
        rc = SPM_ENOTFOUND;
        snprintf(msg, sizeof msg, "unknown opcode (not in its plugin)");
    }
    if (rc != 0)
        spm_ieu_fail_task(ieu, t, rc, msg);
    return rc;
}
