/*  =========================================================================
    core_fallback - weak stand-ins for the session API and `spm gen` (temporary)

    The VM core (vm/session.c) is being built on main in parallel. Until it
    lands, these weak definitions let the binary link: every session call
    fails with a clear message. The real, strong definitions replace them
    at link time as soon as they exist; then this file is deleted.
    =========================================================================
*/
#include "vm/session.h"

#include "vm/cli.h"

#include <stdio.h>
#include <string.h>

__attribute__((weak)) const char spm_run_opts_help[] = "";

__attribute__((weak)) void spm_run_opts_init(spm_run_opts_t *o)
{
    memset(o, 0, sizeof *o);
}

__attribute__((weak)) int spm_run_opts_set(spm_run_opts_t *o, int opt, const char *arg)
{
    (void)o, (void)opt, (void)arg;
    return spm_error(SPM_EINVAL, "run options are not available in this build");
}

__attribute__((weak)) int spm_session_open(const spm_run_opts_t *o, spm_session_t **out)
{
    (void)o, (void)out;
    return spm_error(SPM_EUNREACH, "this build has no VM core yet (vm/session.c)");
}

__attribute__((weak)) int spm_session_put(spm_session_t *s, const char *type, const void *data,
                                          size_t len, spm_sdb_t *id)
{
    (void)s, (void)type, (void)data, (void)len, (void)id;
    return SPM_EUNREACH;
}

__attribute__((weak)) int spm_session_get(spm_session_t *s, spm_sdb_t id, void **data, size_t *len)
{
    (void)s, (void)id, (void)data, (void)len;
    return SPM_EUNREACH;
}

__attribute__((weak)) int spm_session_run(spm_session_t *s, const char *program, const void *args,
                                          size_t len, void **result, size_t *result_len)
{
    (void)s, (void)program, (void)args, (void)len, (void)result, (void)result_len;
    return SPM_EUNREACH;
}

__attribute__((weak)) void spm_session_close(spm_session_t **s)
{
    *s = NULL;
}

/*  `spm gen KIND` dispatch, until the core registers its own "gen". */
static int gen_main(int argc, char **argv)
{
    const spm_command_t *g = argc > 1 ? spm_generator_find(argv[1]) : NULL;
    if (!g) {
        fprintf(stderr, "usage: spm gen KIND [OPTIONS]   (KIND: matrix)\n");
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, "spm gen %s", g->name);
    argv[1] = name;
    return g->main(argc - 1, argv + 1);
}

SPM_CONSTRUCTOR(gen_fallback)
{
    if (!spm_command_find("gen"))
        spm_command_register(&(spm_command_t){
            .name = "gen", .summary = "generate inputs (spm gen matrix --help)", .main = gen_main});
}
