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
#include "vm/client/pluginrun.h"
#include "runtime/registry.h"
#include "vm/client/program.h"
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
    "reach its root super-function as strings (spm_args), or its command side\n"
    "(spm_main_register) when it has one: that runs here, stages its input and\n"
    "writes its results. The result text a program without a command side sets\n"
    "is printed on stdout; the run report goes to stderr (or --report FILE), so\n"
    "stdout holds results only. A center takes plugins only where\n"
    "center.allow_plugins lets it (spm center --allow-plugins; an embedded VM\n"
    "always does).\n\n"
    "  --plugin LIB        the shared object\n"
    "  --report FILE       write the run report to FILE instead of stderr\n"
    "  --shared-files      every node sees this machine's files at the same paths\n"
    "                      (a shared file system, agents with --local-files): files\n"
    "                      the program stages are read there, not copied; an\n"
    "                      embedded VM always does so\n";

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
                                         {"report", required_argument, 0, 'r'},
                                         {"shared-files", no_argument, 0, 'f'},
                                         {"help", no_argument, 0, 'h'},
                                         SPM_RUN_LONGOPTS,
                                         {0, 0, 0, 0}};
    spm_run_opts_t o;
    spm_run_opts_init(&o);
    o.detach = detach;
    const char *lib = NULL, *report = NULL;
    int ch, rc, shared_files = 0;
    optind = 0;
    while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        rc = 0;
        switch (ch) {
        case 'p':
            lib = optarg;
            break;
        case 'r':
            report = optarg;
            break;
        case 'f':
            shared_files = 1;
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
    FILE *rf = report ? fopen(report, "w") : stderr;
    if (!rf) {
        spm_error(SPM_EIO, "--report %s: %s", report, strerror(errno));
        free(args);
        free(data);
        return spm_cli_fail(cmd, SPM_EIO);
    }
    o.report = rf;
    /* Loaded here too, to find the program's command side: its main runs
       in this process. (An embedded VM forked later has it loaded.) */
    char scope[SPM_SCOPE_LEN];
    const spm_main_t *m = NULL;
    if ((rc = spm_plugin_load(data, len, scope)) == 0)
        m = spm_main_find_in(scope, program);
    if (rc != 0 || m) {
        if (rc != 0) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s: %s", lib, spm_error_detail());
            spm_error(rc, "%s", msg);
        } else {
            argv[optind - 1] = (char *)program;
            rc = spm_client_main_run(m, &o, shared_files, data, len, argc - optind + 1,
                                     argv + optind - 1);
        }
        free(args);
        free(data);
        int status = rc == 0 ? 0 : spm_cli_fail(cmd, rc);
        if (report)
            fclose(rf);
        return status;
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
    if (report)
        fclose(rf);
    return status;
}
