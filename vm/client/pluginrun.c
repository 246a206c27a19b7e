/*  =========================================================================
    pluginrun - `spm run --plugin LIB PROGRAM ARG...` and `spm submit
    --plugin ...`: a program built out of tree, sent to the VM and run

    The object is checked here first (runtime/plugin.h), so a wrong one
    costs no VM; the center checks it again, since a client may be anyone.
    Options before PROGRAM are spm's, everything after it the program's.
    =========================================================================
*/
#include "runtime/plugin.h"
#include "base/cli.h"
#include "vm/client/session.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char plugin_help[] =
    "usage: spm run --plugin LIB [OPTIONS] PROGRAM [ARG...]\n"
    "       spm submit --plugin LIB --center ENDPOINT [OPTIONS] PROGRAM [ARG...]\n\n"
    "Runs PROGRAM of the plugin LIB, a shared object built out of tree against\n"
    "spm.h (docs/PROGRAMMING.md):\n\n"
    "  cc -O2 -o libmine.so mine.c $(pkg-config --cflags --libs spm)\n\n"
    "LIB is sent to the VM; the center runs its super-functions and every IEU\n"
    "loads it to run its SIs. The ARGs after PROGRAM are the program's; they\n"
    "reach its root super-function as strings (spm_args). The result it sets is\n"
    "printed on stdout after the report. A center takes plugins only where\n"
    "center.allow_plugins lets it (an embedded VM always does).\n\n"
    "  --plugin LIB        the shared object\n";

/*  Reads the whole of PATH (at most SPM_PLUGIN_BYTES) into *DATA. */
static int read_object(const char *path, void **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            if (cap >= SPM_PLUGIN_BYTES) {
                free(buf);
                fclose(f);
                return spm_error(SPM_EINVAL, "%s: over %u MiB; not a plugin", path,
                                 SPM_PLUGIN_BYTES >> 20);
            }
            unsigned char *b = realloc(buf, cap * 2);
            if (!b)
                break;
            buf = b;
            cap *= 2;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        return buf ? spm_error(SPM_EIO, "%s: read failed", path) : spm_error(SPM_ENOMEM, "%s", "");
    }
    *data = buf;
    *len = n;
    return 0;
}

int spm_plugin_run_main(int argc, char **argv, const char *cmd, int detach)
{
    static const struct option opts[] = {{"plugin", required_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'},
                                         SPM_RUN_LONGOPTS,
                                         {0, 0, 0, 0}};
    spm_run_opts_t o;
    spm_run_opts_init(&o);
    o.detach = detach;
    const char *lib = NULL;
    int ch, rc;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        rc = 0;
        switch (ch) {
        case 'p':
            lib = optarg;
            break;
        case 'h':
            printf("%s%s", plugin_help, spm_run_opts_help);
            return 0;
        case '?':
            return spm_cli_usage(cmd, "invalid option");
        default:
            rc = spm_run_opts_set(&o, ch, optarg);
            break;
        }
        if (rc != 0)
            return spm_cli_fail(cmd, rc);
    }
    if (lib && (!strcmp(lib, "--help") || !strcmp(lib, "-h"))) {
        printf("%s%s", plugin_help, spm_run_opts_help);
        return 0;
    }
    if (!lib)
        return spm_cli_usage(cmd, "--plugin LIB is needed");
    if (optind >= argc)
        return spm_cli_usage(cmd, "no PROGRAM named after --plugin %s", lib);
    if (detach && !o.center)
        return spm_cli_usage(cmd, "--center ENDPOINT is needed");
    const char *program = argv[optind++];
    size_t alen = 0;
    for (int i = optind; i < argc; i++)
        alen += strlen(argv[i]) + 1;
    char *args = malloc(alen ? alen : 1), *at = args;
    for (int i = optind; args && i < argc; i++)
        at = stpcpy(at, argv[i]) + 1;
    void *data = NULL;
    size_t len = 0;
    if (!args)
        return spm_cli_fail(cmd, SPM_ENOMEM);
    if ((rc = read_object(lib, &data, &len)) != 0 || (rc = spm_plugin_check(data, len)) != 0) {
        if (rc == SPM_EFORMAT) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s: %s", lib, spm_error_detail());
            spm_error(rc, "%s", msg);
        }
        free(args);
        free(data);
        return spm_cli_fail(cmd, rc);
    }
    spm_session_t *s = NULL;
    spm_sdb_t id = 0;
    void *result = NULL;
    size_t rlen = 0;
    if ((rc = spm_session_open(&o, &s)) == 0 &&
        (rc = spm_session_put(s, SPM_PLUGIN_TYPE, data, len, &id)) == 0)
        rc = spm_session_run_plugin(s, id, program, args, alen, &result, &rlen);
    free(args);
    free(data);
    if (rc == 0 && result && rlen && !o.json) {
        fwrite(result, 1, rlen, stdout);
        fflush(stdout);
    }
    free(result);
    int status = rc == 0 ? 0 : spm_cli_fail(cmd, rc);
    spm_session_destroy(&s);
    return status;
}
