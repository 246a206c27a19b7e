/*  =========================================================================
    plugin - programs built out of tree, loaded from their bytes

    @discuss
    A plugin is a shared object built against include/spm/spm.h with SPM_PLUGIN in
    it. The client sends it to the VM as a block of type "spm.plugin" (in
    the center's store); the center loads it to run its super-functions,
    and each IEU that is issued an SI of its job fetches the block through
    its node's cache and loads it to run its SI bodies.

    Loading checks the object before any of it runs: an ELF shared object
    for this machine, whole (every section inside the file), marked by
    SPM_PLUGIN with this spm's ABI version. It is then written to a memory
    file and opened with dlopen (RTLD_NOW: an undefined symbol fails the
    load before a constructor runs); its constructors register into the
    scope named by the object's checksum, so two plugins, or two versions
    of one, never meet. A process loads each plugin once and keeps it
    until it exits (code cannot be unloaded safely while a thread may
    still be inside it); at most SPM_PLUGIN_MAX distinct plugins.
    @end
    =========================================================================
*/
#ifndef SPM_PLUGIN_H_INCLUDED
#define SPM_PLUGIN_H_INCLUDED

#include "spm/spm.h"

#define SPM_PLUGIN_TYPE "spm.plugin" /* the SDB type of a plugin's bytes */
#define SPM_PLUGIN_MAX 256           /* distinct plugins one process loads */
#define SPM_PLUGIN_BYTES (64u << 20) /* the largest object accepted */
#define SPM_SCOPE_LEN 17             /* a scope: 16 hex digits and NUL */

/*  Checks that LEN bytes at DATA are a plugin this spm can load (see
    above), without running any of it. Returns 0, or SPM_EFORMAT with a
    one-line detail (not an ELF shared object, truncated, another machine,
    no SPM_PLUGIN mark, another ABI version). */
int spm_plugin_check(const void *data, size_t len);

/*  The scope of the plugin whose bytes have checksum SUM, into SCOPE. */
void spm_plugin_scope(uint64_t sum, char scope[SPM_SCOPE_LEN]);

/*  Loads the plugin of LEN bytes at DATA (once per process: a plugin with
    these bytes already loaded is not loaded again) and copies its scope to
    SCOPE. Returns 0, or SPM_EFORMAT (spm_plugin_check's failures, or
    dlopen's: an undefined symbol, ...), SPM_EFULL (SPM_PLUGIN_MAX plugins
    loaded), SPM_ESYS, with the detail set. */
int spm_plugin_load(const void *data, size_t len, char scope[SPM_SCOPE_LEN]);

/*  Whether the plugin with scope SCOPE is loaded in this process. */
int spm_plugin_loaded(const char *scope);

#endif
