/*  =========================================================================
    nodecache_fault - a node cache found corrupt or unwritable goes out of
    service, and the node's other processes hear of it

    The cache is not durable and lives on a node's local disk, which may
    go bad: flipped bytes in data.mdb, a file system turned read-only, an
    I/O error. LMDB notices some of it (MDB_CORRUPTED, MDB_PAGE_NOTFOUND,
    MDB_INCOMPATIBLE ...); the rest shows only as a block whose bytes no
    longer match the checksum stored beside them (nodecache_read.c checks
    every block it hands out). Either way nothing the cache says can be
    trusted any more, and trying again only repeats the failure: the issue
    that asked for this saw 2 million log lines in 4 minutes from a node
    whose every write failed. So the first such failure takes the handle
    out of service for good (every later call fails at once with the
    reason), and leaves a marker file, DIR/broken, holding the reason in
    one line, for the node's other processes: the agent checks it
    (spm_nodecache_broken) and takes the node out of service, empties the
    cache and joins again (vm/agent/agent.c). A full disk is not a fault of
    the cache: a refused keep hands the block on to another node.
    =========================================================================
*/
#include "datacache/nodecache_int.h"
#include "base/busguard.h"
#include "base/log.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MARKER "broken"

/*  Whether the LMDB or errno code RC says the cache cannot be trusted or
    written (not: full, not there, out of memory, too many readers). */
static int is_fault(int rc)
{
    switch (rc) {
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INCOMPATIBLE:
    case MDB_PANIC:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
    case MDB_BAD_TXN:
    case MDB_BAD_DBI:
    case EIO:
    case EROFS:
    case EACCES:
    case EPERM:
        return 1;
    default:
        return 0;
    }
}

/*  Writes the marker with WHY, unless one is there (the first reason
    stays). A marker that cannot be written (the directory is what broke)
    is no loss: this process's own failures still say it. */
static void mark(const spm_nodecache_t *self, const char *why)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/" MARKER, self->dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    size_t n = strlen(why);
    if (write(fd, why, n) != (ssize_t)n || write(fd, "\n", 1) != 1)
        (void)unlink(path);
    close(fd);
}

/*  Takes the handle out of service with WHY, once. */
static void out_of_service(spm_nodecache_t *self, const char *why)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&self->broken, &expected, 2))
        return;
    snprintf(self->why, sizeof self->why, "%s", why);
    atomic_store(&self->broken, 1);
    mark(self, why);
}

int spm_nodecache_fault(spm_nodecache_t *self, int rc, const char *what)
{
    if (rc == 0)
        return 0;
    int lmdb = spm_nodecache_is_lmdb(rc);
    int code = lmdb ? spm_store_lmdb_error(rc, self->dir, what) : rc;
    if (lmdb && is_fault(rc))
        out_of_service(self, spm_error_detail());
    return code;
}

int spm_nodecache_corrupt(spm_nodecache_t *self, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    out_of_service(self, why);
    return spm_error(SPM_ESTORE, "%s", why);
}

/* What LMDB's last assertion in this thread said, until a guarded call reports it. */
static _Thread_local char assertion[400];

void spm_nodecache_on_assert(MDB_env *env, const char *msg)
{
    (void)env;
    snprintf(assertion, sizeof assertion, "%s", msg);
    spm_busguard_escape(); /* outside a guarded call LMDB aborts, as it did before */
}

int spm_nodecache_bus(spm_nodecache_t *self, int sig, const char *what)
{
    if (sig == SIGABRT && assertion[0]) {
        int rc = spm_nodecache_corrupt(self, "%s: %s found its pages inconsistent (LMDB: %s)",
                                       self->dir, what, assertion);
        assertion[0] = '\0';
        return rc;
    }
    if (sig == SIGSEGV)
        return spm_nodecache_corrupt(self,
                                     "%s: %s raised SIGSEGV: a corrupted page of data.mdb sent "
                                     "LMDB outside the memory it may use",
                                     self->dir, what);
    return spm_nodecache_corrupt(self,
                                 "%s: %s raised SIGBUS: part of data.mdb is gone or unreadable "
                                 "(the file was cut short, a corrupted page points past its end, "
                                 "or the disk failed)",
                                 self->dir, what);
}

void spm_nodecache_write_fault(spm_nodecache_t *self, int sig, const char *what)
{
    spm_nodecache_bus(self, sig, what);
    /* One line at debug, as an IEU that ends for its cache: the node's
       agent says it to the operator, once, from the marker. */
    spm_log_debug("%s; LMDB may have written past its pages before the fault: this process ends",
                  spm_error_detail());
    _exit(SPM_NODECACHE_EXIT);
}

int spm_nodecache_refuse(spm_nodecache_t *self)
{
    if (atomic_load(&self->broken) != 1)
        return 0;
    return spm_error(SPM_ESTORE, "%s: the cache is out of service (%s)", self->dir, self->why);
}

int spm_nodecache_broken(spm_nodecache_t *self, char *why, size_t size)
{
    if (atomic_load(&self->broken) == 1) {
        if (why && size)
            snprintf(why, size, "%s", self->why);
        return 1;
    }
    char path[1024], line[512] = "";
    snprintf(path, sizeof path, "%s/" MARKER, self->dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0; /* no marker: in service (an unreadable directory fails its next call) */
    if (!fgets(line, sizeof line, f))
        snprintf(line, sizeof line, "%s: another process of the node found the cache broken",
                 self->dir);
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    if (why && size)
        snprintf(why, size, "%s", line);
    return 1;
}

int spm_nodecache_wipe(const char *dir)
{
    static const char *const files[] = {"data.mdb", "lock.mdb", MARKER};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (unlink(path) != 0 && errno != ENOENT)
            return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    }
    return 0;
}
