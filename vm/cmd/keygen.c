/*  =========================================================================
    keygen - `spm keygen`: make a CurveZMQ key pair and authorize it

    The key files' layout (NAME.key, NAME.pub, authorized/, authorized/
    plugins/) is what transport/security.c reads; this command only writes
    them.
    =========================================================================
*/
#include "base/cli.h"
#include "base/config.h"
#include "spm/spm.h"
#include "vm/cmd/commands.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#define Z85_KEY 40 /* characters of a Z85-encoded CurveZMQ key */

static int write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    chmod(path, mode);
    int bad = fputs(text, f) < 0;
    bad |= fclose(f) != 0;
    return bad ? spm_error(SPM_EIO, "%s: cannot write", path) : 0;
}

int spm_cmd_keygen(int argc, char **argv)
{
    static const struct option opts[] = {{"keys", required_argument, 0, 'k'},
                                         {"name", required_argument, 0, 'n'},
                                         {"authorize", no_argument, 0, 'a'},
                                         {"plugins", no_argument, 0, 'p'},
                                         {"operator", no_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *dir = NULL, *name = NULL;
    int authorize = 0, plugins = 0, op = 0, ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'k':
            dir = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'a':
            authorize = 1;
            break;
        case 'p':
            authorize = plugins = 1;
            break;
        case 'o':
            authorize = op = 1;
            break;
        case 'h':
            printf("usage: spm keygen --name center|agent|client [--keys DIR] [--authorize]\n"
                   "                  [--plugins] [--operator]\n\n"
                   "Writes a CurveZMQ key pair: DIR/NAME.key (secret, mode 0600) and\n"
                   "DIR/NAME.pub. --authorize also copies NAME.pub into DIR/authorized/, the\n"
                   "keys the center and the data agents let in. --plugins authorizes it and\n"
                   "copies it into DIR/authorized/plugins/ too: the clients that may send\n"
                   "plugins where center.allow_plugins = keys. DIR defaults to the\n"
                   "configured security.keys (%s).\n\n"
                   "A job belongs to the key that submitted it, a block to the key that put\n"
                   "it: a client may cancel, discard and fetch only what its own key made\n"
                   "(spm jobs names each job's key by its NAME in authorized/). --operator\n"
                   "authorizes the key and copies it into DIR/authorized/operators/ too: an\n"
                   "operator's key may cancel, discard and fetch any job's. The center reads\n"
                   "authorized/operators/ at each request. Without keys (an ipc:// center,\n"
                   "or --insecure) nothing is owned and every client may do everything.\n\n"
                   "A cluster: on the center's machine make center and authorize the\n"
                   "agents' and clients' .pub files there; give every node center.pub.\n\n"
                   "  --name NAME         the key pair's name (required): center, agent or\n"
                   "                      client, the pair each of them reads, or any plain\n"
                   "                      file name (the owner spm jobs shows)\n"
                   "  --keys DIR          where to write (default security.keys: %s)\n"
                   "  --authorize         copy NAME.pub into DIR/authorized/\n"
                   "  --plugins           authorize it, and into DIR/authorized/plugins/\n"
                   "  --operator          authorize it, and into DIR/authorized/operators/\n",
                   spm_config_str("security", "keys"), spm_config_str("security", "keys"));
            return 0;
        default:
            return spm_cli_usage("keygen", "invalid option");
        }
    }
    if (!name || !*name || strchr(name, '/'))
        return spm_cli_usage("keygen", "--name is required (a plain file name)");
    if (!dir)
        dir = spm_config_str("security", "keys");
    char pub[Z85_KEY + 1], sec[Z85_KEY + 1], path[1024], text[256];
    if (zmq_curve_keypair(pub, sec) != 0) {
        spm_error(SPM_ESYS, "this ZeroMQ has no CurveZMQ (libsodium) support");
        return spm_cli_fail("keygen", SPM_ESYS);
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        spm_error(SPM_EIO, "%s: %s", dir, strerror(errno));
        return spm_cli_fail("keygen", SPM_EIO);
    }
    int rc;
    snprintf(path, sizeof path, "%s/%s.key", dir, name);
    snprintf(text, sizeof text,
             "# spm key pair '%s': keep secret\npublic-key = %s\nsecret-key = %s\n", name, pub,
             sec);
    if ((rc = write_file(path, text, 0600)) != 0)
        return spm_cli_fail("keygen", rc);
    snprintf(path, sizeof path, "%s/%s.pub", dir, name);
    snprintf(text, sizeof text, "# spm public key '%s'\npublic-key = %s\n", name, pub);
    if ((rc = write_file(path, text, 0644)) != 0)
        return spm_cli_fail("keygen", rc);
    static const char *const lists[] = {"authorized", "authorized/plugins", "authorized/operators"};
    const int wanted[] = {authorize, plugins, op};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
        if (!wanted[i])
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, lists[i]);
        mkdir(path, 0700);
        snprintf(path, sizeof path, "%s/%s/%s.pub", dir, lists[i], name);
        if ((rc = write_file(path, text, 0644)) != 0)
            return spm_cli_fail("keygen", rc);
    }
    printf("%s/%s.key and %s.pub written%s%s\n", dir, name, name,
           plugins     ? " (authorized, plugins too)"
           : authorize ? " (authorized)"
                       : "",
           op ? " (an operator's)" : "");
    return 0;
}
