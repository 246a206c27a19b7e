/*  =========================================================================
    warmer - prepares the store's file ahead of its data, in idle time

    One chunk at a time (8 MiB), so that a stop or a job's start waits for
    little and the limits are read again before every chunk. fallocate with
    mode 0 only ever extends the file, so the IEUs of this host, which write
    into the same file through their own LMDB environments, can never lose
    a page to the warmer, whatever the order of their writes and its calls.
    =========================================================================
*/
#include "datacache/warmer.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define CHUNK ((uint64_t)8 << 20) /* bytes prepared per step */
#define IDLE_MS 50                /* the longest pause between two looks */

struct spm_warmer {
    char dir[PATH_MAX]; /* its directory, for the free space */
    int fd;
    uint64_t ahead;    /* bytes to keep prepared past the data's end */
    uint64_t end;      /* the file is allocated and cached up to here (the thread's) */
    uint64_t data;     /* where the store's data ends, as last told (under lock) */
    int quiet;         /* no job runs: work (under lock) */
    uint64_t prepared; /* bytes prepared so far (under lock) */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stopped;
};

/*  How far the file may be prepared now: AHEAD past the data's end DATA,
    less where the disk's free space or a file-size limit says so. */
static uint64_t target(const spm_warmer_t *w, uint64_t data)
{
    uint64_t t = data + w->ahead;
    struct statvfs vfs;
    if (statvfs(w->dir, &vfs) != 0)
        return 0;
    uint64_t room = (uint64_t)vfs.f_bavail * vfs.f_frsize / 8;
    if (t > w->end + room)
        t = w->end + room;
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        t > (uint64_t)lim.rlim_cur / 4 * 3)
        t = (uint64_t)lim.rlim_cur / 4 * 3;
    return t;
}

/*  Prepares the next chunk past DATA (0: nothing to do) when one is due.
    Returns 1 when it did (more may follow at once), 0 when there is
    nothing to do now, -1 when the file system refused: the warmer stops
    for good. */
static int step(spm_warmer_t *w, uint64_t data)
{
    if (data == 0)
        return 0;
    if (w->end < data)
        w->end = data; /* the data outran the warmer */
    if (target(w, data) < w->end + CHUNK)
        return 0;
    if (fallocate(w->fd, 0, (off_t)w->end, (off_t)CHUNK) != 0) {
        spm_log_debug("store %s: no longer prepared ahead (%s)", w->dir, strerror(errno));
        return -1;
    }
    /* Reading unwritten extents fills the page cache with zeros and does no
       disk I/O; readahead asks for it without copying the pages out. */
    if (readahead(w->fd, (off_t)w->end, CHUNK) != 0)
        spm_log_debug("store %s: readahead: %s", w->dir, strerror(errno));
    w->end += CHUNK;
    pthread_mutex_lock(&w->lock);
    w->prepared += CHUNK;
    pthread_mutex_unlock(&w->lock);
    return 1;
}

static void *run(void *arg)
{
    spm_warmer_t *w = arg;
    struct sched_param idle = {0};
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle) != 0)
        spm_log_debug("warmer: the idle scheduling class is refused; running anyway");
    pthread_mutex_lock(&w->lock);
    while (!w->stopped) {
        uint64_t data = w->quiet ? w->data : 0;
        pthread_mutex_unlock(&w->lock);
        int r = step(w, data);
        pthread_mutex_lock(&w->lock);
        if (r < 0)
            break;
        if (r == 0 && !w->stopped) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += IDLE_MS * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&w->wake, &w->lock, &until);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

spm_warmer_t *spm_warmer_start(const char *dir, uint64_t ahead)
{
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && ahead > (uint64_t)pages * (uint64_t)page / 8)
        ahead = (uint64_t)pages * (uint64_t)page / 8; /* an eighth of the free memory */
    if (ahead < CHUNK)
        return NULL;
    spm_warmer_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->ahead = ahead;
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if ((w->fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
        spm_log_debug("warmer: %s: %s", path, strerror(errno));
        free(w);
        return NULL;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (pthread_create(&w->thread, NULL, run, w) != 0) {
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->wake);
        close(w->fd);
        free(w);
        return NULL;
    }
    return w;
}

void spm_warmer_note(spm_warmer_t *self, uint64_t data_end, int quiet)
{
    if (!self)
        return;
    pthread_mutex_lock(&self->lock);
    int wake = quiet && (!self->quiet || data_end != self->data);
    self->data = data_end;
    self->quiet = quiet;
    if (wake)
        pthread_cond_signal(&self->wake);
    pthread_mutex_unlock(&self->lock);
}

uint64_t spm_warmer_prepared(spm_warmer_t *self)
{
    pthread_mutex_lock(&self->lock);
    uint64_t n = self->prepared;
    pthread_mutex_unlock(&self->lock);
    return n;
}

void spm_warmer_destroy(spm_warmer_t **self_p)
{
    spm_warmer_t *w = *self_p;
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopped = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    close(w->fd);
    free(w);
    *self_p = NULL;
}
