/*  =========================================================================
    identity - a node's identity, kept in its cache directory
    =========================================================================
*/
#include "vm/agent/identity.h"
#include "spm/spm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/*  Parses 32 hex digits at S into ID. Returns 0 or -1. */
static int parse_hex(const char *s, uint8_t id[16])
{
    for (int i = 0; i < 16; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1 || !strchr("0123456789abcdef", s[2 * i]) ||
            !strchr("0123456789abcdef", s[2 * i + 1]))
            return -1;
        id[i] = (uint8_t)v;
    }
    return 0;
}

int spm_agent_identity(const char *dir, uint8_t id[16], int sync)
{
    char path[4096], tmp[4200], text[64];
    snprintf(path, sizeof path, "%s/node.id", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = '\0';
        if (n < 32 || parse_hex(text, id) != 0)
            return spm_error(SPM_EIO,
                             "%s: not a node identity (32 hex digits); remove it to "
                             "make this node a new one",
                             path);
        return 0;
    }
    if (errno != ENOENT)
        return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    if (getrandom(id, 16, 0) != 16)
        return spm_error(SPM_EIO, "making a node identity: %s", strerror(errno));
    for (int i = 0; i < 16; i++)
        snprintf(text + 2 * i, 3, "%02x", id[i]);
    text[32] = '\n';
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, text, 33) != 33 || (sync && fsync(fd) != 0) || close(fd) != 0 ||
        rename(tmp, path) != 0) {
        int e = errno;
        if (fd >= 0)
            unlink(tmp);
        return spm_error(SPM_EIO, "%s: %s", path, strerror(e));
    }
    return 0;
}
