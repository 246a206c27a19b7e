/*  =========================================================================
    sfhost - the center's side of plugin jobs' super-function hosts (see
    sfhost.h)

    Nothing here blocks the loop: sockets are non-blocking, what a host
    has not read yet waits in memory, and a host that stops reading is
    killed by the bound like one that stops answering. A host's death is
    seen as the end of its socket; its status tells a crash (a signal)
    from an exit. Hosts whose job ended are killed at once (they sit in
    read) and reaped at the next tick.
    =========================================================================
*/
#include "vm/center/sfhost.h"

#include "base/grow.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/proc.h"
#include "runtime/sfproto.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    uint64_t job;
    pid_t pid;         /* 0: not started */
    int fd;            /* the socket to it (-1: none) */
    sfp_page_t *page;  /* what it runs now (shared) */
    sfp_buf_t pending; /* events of this turn, not yet framed */
    sfp_buf_t out;     /* frames not yet written */
    size_t out_pos;    /* ... from here */
    uint8_t *in;       /* bytes read, not yet a whole frame */
    size_t nin, capin;
    uint64_t sent, answered; /* frames */
    uint64_t busy_since;     /* when it could begin the oldest frame it has not answered */
    uint64_t skip;           /* actions the journal applied that it repeats */
    int ended;               /* its job ended: to be forgotten */
} host_t;

struct spm_sfhosts {
    spm_idu_t *idu;
    spm_store_t *store;
    uint64_t bound_us;
    spm_hmap_t *hosts; /* job -> host_t */
    pid_t *reap;       /* hosts killed, to reap */
    size_t nreap, capreap;
};

static void on_event(void *arg, uint64_t job, const void *ev, size_t len);

static const char *callback_name(uint32_t cb)
{
    static const char *names[] = {"", "loading", "start", "feed", "commit", "finish"};
    return cb < sizeof names / sizeof *names ? names[cb] : "?";
}

/*  Kills H's process (if any) and closes its socket; it is reaped later. */
static void stop(spm_sfhosts_t *self, host_t *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    if (h->pid > 0) {
        kill(h->pid, SIGKILL);
        int st;
        if (!spm_proc_exited(h->pid, &st) &&
            spm_grow(&self->reap, self->nreap, &self->capreap, sizeof *self->reap, 8) == 0)
            self->reap[self->nreap++] = h->pid;
    }
    h->pid = -1;
}

static void host_free(spm_sfhosts_t *self, host_t *h)
{
    stop(self, h);
    if (h->page)
        munmap(h->page, sizeof *h->page);
    sfp_buf_free(&h->pending);
    sfp_buf_free(&h->out);
    free(h->in);
    free(h);
}

spm_sfhosts_t *spm_sfhosts_new(spm_idu_t *idu, spm_store_t *store, uint64_t bound_us)
{
    spm_sfhosts_t *self = calloc(1, sizeof *self);
    if (!self || !(self->hosts = spm_hmap_new())) {
        free(self);
        return NULL;
    }
    self->idu = idu;
    self->store = store;
    self->bound_us = bound_us;
    spm_idu_set_remote(idu, on_event, self);
    return self;
}

/*  Forgets the hosts of ended jobs. */
static void sweep(spm_sfhosts_t *self)
{
    uint64_t ended[64], key;
    size_t n = 0, pos = 0;
    void *value;
    while (n < 64 && spm_hmap_next(self->hosts, &pos, &key, &value))
        if (((host_t *)value)->ended)
            ended[n++] = key;
    for (size_t i = 0; i < n; i++)
        host_free(self, spm_hmap_remove(self->hosts, ended[i]));
}

void spm_sfhosts_destroy(spm_sfhosts_t **self_p)
{
    spm_sfhosts_t *self = *self_p;
    if (!self)
        return;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->hosts, &pos, &key, &value))
        host_free(self, value);
    spm_hmap_destroy(&self->hosts);
    for (size_t i = 0; i < self->nreap; i++)
        waitpid(self->reap[i], NULL, 0); /* killed: they end at once */
    free(self->reap);
    free(self);
    *self_p = NULL;
}

/*  IDU remote: an event of JOB, for its host at the end of the turn. */
static void on_event(void *arg, uint64_t job, const void *ev, size_t len)
{
    spm_sfhosts_t *self = arg;
    host_t *h = spm_hmap_get(self->hosts, job);
    if (!h) {
        h = calloc(1, sizeof *h);
        if (!h || spm_hmap_put(self->hosts, job, h) != 0) {
            free(h);
            spm_idu_job_fail(self->idu, job, SPM_ENOMEM, "out of memory");
            return;
        }
        h->job = job;
        h->fd = -1;
    }
    if (!h->ended)
        sfp_put_raw(&h->pending, ev, len);
}

/*  Fails H's job with the message FMT makes and stops H. */
static void host_fail(spm_sfhosts_t *self, host_t *h, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void host_fail(spm_sfhosts_t *self, host_t *h, const char *fmt, ...)
{
    char msg[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    spm_log_warn("job %llu: %s", (unsigned long long)h->job, msg);
    stop(self, h);
    h->ended = 1;
    spm_idu_job_fail(self->idu, h->job, SPM_EEXEC, msg);
}

/*  The name of H's job's program (valid until the job is forgotten). */
static const char *program_of(spm_sfhosts_t *self, const host_t *h)
{
    spm_idu_job_info_t info;
    return spm_idu_job_info(self->idu, h->job, &info) == 0 ? info.program : "?";
}

/*  What runs in H, from its page, into BUF: "super-function S of program
    P", or the plugin (loading) or the host (between callbacks). */
static const char *who_runs(spm_sfhosts_t *self, const host_t *h, char *buf, size_t size)
{
    uint32_t cb = h->page ? h->page->callback : SFP_IDLE;
    char sf[sizeof h->page->sf + 1] = "";
    if (h->page)
        memcpy(sf, h->page->sf, sizeof h->page->sf);
    sf[sizeof sf - 1] = '\0';
    const char *program = program_of(self, h);
    if (cb == SFP_IDLE)
        snprintf(buf, size, "the super-function host of program %s", program);
    else if (cb == SFP_IN_LOAD)
        snprintf(buf, size, "the plugin of program %s", program);
    else
        snprintf(buf, size, "super-function %s of program %s", sf, program);
    return buf;
}

/*  H's socket ended: its process died (or closed it). */
static void host_died(spm_sfhosts_t *self, host_t *h)
{
    int st = 0, exited = 0;
    for (int i = 0; i < 200 && !(exited = spm_proc_exited(h->pid, &st)); i++)
        usleep(1000); /* it closes its socket as it exits: a moment */
    if (!exited) {
        kill(h->pid, SIGKILL);
        waitpid(h->pid, &st, 0);
    }
    h->pid = -1;
    char who[300];
    who_runs(self, h, who, sizeof who);
    uint32_t cb = h->page ? h->page->callback : SFP_IDLE;
    int named = cb != SFP_IDLE && cb != SFP_IN_LOAD;
    if (WIFSIGNALED(st)) {
        const char *abbrev = sigabbrev_np(WTERMSIG(st));
        host_fail(self, h, "%s crashed%s%s (SIG%s)", who, named ? " in " : "",
                  named ? callback_name(cb) : "", abbrev ? abbrev : "?");
    } else {
        host_fail(self, h, "%s exited with status %d%s%s", who,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, named ? " in " : "",
                  named ? callback_name(cb) : "");
    }
}

/*  Writes what H has waiting, as far as its socket takes it. */
static void flush_out(host_t *h)
{
    while (h->fd >= 0 && h->out_pos < h->out.n) {
        ssize_t k = send(h->fd, h->out.p + h->out_pos, h->out.n - h->out_pos, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break; /* full (EAGAIN), or gone: the read side sees it */
        h->out_pos += (size_t)k;
    }
    if (h->out_pos == h->out.n)
        h->out.n = h->out_pos = 0;
}

/*  Starts H's process: the plugin's bytes go first, alone. */
static void host_start(spm_sfhosts_t *self, host_t *h, uint64_t now)
{
    spm_sdb_t plugin;
    if (spm_idu_remote_info(self->idu, h->job, &plugin, &h->skip) != 0) {
        h->ended = 1;
        return;
    }
    void *data = NULL;
    size_t len = 0;
    uint32_t type = 0;
    if (spm_store_get(self->store, plugin, 1, NULL, &type, &data, &len) != 0) {
        host_fail(self, h, "the plugin of program %s is not in the center's store",
                  program_of(self, h));
        return;
    }
    int sv[2] = {-1, -1}, mfd = memfd_create("spm-sfhost", MFD_CLOEXEC);
    void *page = MAP_FAILED;
    if (mfd >= 0 && ftruncate(mfd, sizeof *h->page) == 0)
        page = mmap(NULL, sizeof *h->page, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (page == MAP_FAILED || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
        fcntl(sv[1], F_SETFD, 0) != 0 || fcntl(mfd, F_SETFD, 0) != 0) {
        int err = errno;
        free(data);
        if (page != MAP_FAILED)
            munmap(page, sizeof *h->page);
        for (int i = 0; i < 2; i++)
            if (sv[i] >= 0)
                close(sv[i]);
        if (mfd >= 0)
            close(mfd);
        host_fail(self, h, "program %s: cannot start its super-function host: %s",
                  program_of(self, h), strerror(err));
        return;
    }
    h->page = page;
    char fd[16], pfd[16];
    snprintf(fd, sizeof fd, "%d", sv[1]);
    snprintf(pfd, sizeof pfd, "%d", mfd);
    char *argv[] = {"spm", "sfhost", "--fd", fd, "--page-fd", pfd, NULL};
    h->pid = spm_proc_spawn(argv); /* the only thread that forks: no other child gets these */
    close(sv[1]);
    close(mfd);
    h->fd = sv[0];
    if (h->pid < 0) {
        free(data);
        host_fail(self, h, "program %s: cannot start its super-function host: %s",
                  program_of(self, h), spm_error_detail());
        return;
    }
    fcntl(h->fd, F_SETFL, fcntl(h->fd, F_GETFL) | O_NONBLOCK);
    size_t at = sfp_frame_begin(&h->out);
    sfp_put_u8(&h->out, SFP_INIT);
    sfp_put_bytes(&h->out, data, len);
    sfp_frame_end(&h->out, at);
    free(data);
    h->sent++;
    h->busy_since = now;
}

void spm_sfhosts_send(spm_sfhosts_t *self, uint64_t now)
{
    if (!spm_hmap_size(self->hosts)) /* no plugin job: the loop pays nothing */
        return;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->hosts, &pos, &key, &value)) {
        host_t *h = value;
        if (h->ended)
            continue;
        if (!h->pid)
            host_start(self, h, now);
        if (h->ended || !h->pending.n)
            continue;
        if (h->pending.full || h->out.full) {
            host_fail(self, h, "program %s: out of memory for its host's events",
                      program_of(self, h));
            continue;
        }
        size_t at = sfp_frame_begin(&h->out);
        sfp_put_raw(&h->out, h->pending.p, h->pending.n);
        sfp_frame_end(&h->out, at);
        h->pending.n = 0;
        if (h->sent++ == h->answered)
            h->busy_since = now; /* it was idle: it begins this one now */
        flush_out(h);
    }
    sweep(self);
}

/*  Takes what H has sent and applies each whole frame. */
static void host_read(spm_sfhosts_t *self, host_t *h, uint64_t now)
{
    for (;;) {
        if (h->capin - h->nin < 65536 &&
            spm_grow(&h->in, h->capin, &h->capin, 1, h->nin + 65536) != 0) {
            host_fail(self, h, "program %s: out of memory for its host's answer",
                      program_of(self, h));
            return;
        }
        ssize_t k = recv(h->fd, h->in + h->nin, h->capin - h->nin, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (k <= 0) {
            host_died(self, h);
            return;
        }
        h->nin += (size_t)k;
    }
    size_t used = 0;
    const uint8_t *payload;
    size_t plen, flen;
    while (!h->ended && (flen = sfp_frame_next(h->in + used, h->nin - used, &payload, &plen))) {
        used += flen;
        if (h->answered < h->sent)
            h->answered++;
        h->busy_since = now; /* it begins the next frame, if it has one */
        spm_idu_remote_apply(self->idu, h->job, payload, plen, &h->skip);
    }
    if (h->ended)
        return;
    memmove(h->in, h->in + used, h->nin - used);
    h->nin -= used;
}

void spm_sfhosts_turn(spm_sfhosts_t *self, uint64_t now)
{
    if (!spm_hmap_size(self->hosts)) /* no plugin job: the loop pays nothing */
        return;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->hosts, &pos, &key, &value)) {
        host_t *h = value;
        if (h->ended || h->fd < 0)
            continue;
        flush_out(h);
        host_read(self, h, now);
    }
    sweep(self);
}

size_t spm_sfhosts_poll_items(spm_sfhosts_t *self, zmq_pollitem_t *items, size_t max)
{
    if (!spm_hmap_size(self->hosts)) /* no plugin job: the loop pays nothing */
        return 0;
    size_t n = 0, pos = 0;
    uint64_t key;
    void *value;
    while (n < max && spm_hmap_next(self->hosts, &pos, &key, &value)) {
        host_t *h = value;
        if (h->ended || h->fd < 0)
            continue;
        items[n++] =
            (zmq_pollitem_t){.fd = h->fd, .events = ZMQ_POLLIN | (h->out.n ? ZMQ_POLLOUT : 0)};
    }
    return n;
}

void spm_sfhosts_tick(spm_sfhosts_t *self, uint64_t now)
{
    size_t k = 0;
    for (size_t i = 0; i < self->nreap; i++) {
        int st;
        if (!spm_proc_exited(self->reap[i], &st))
            self->reap[k++] = self->reap[i];
    }
    self->nreap = k;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->hosts, &pos, &key, &value)) {
        host_t *h = value;
        if (h->ended || h->fd < 0 || h->answered >= h->sent ||
            now - h->busy_since <= self->bound_us)
            continue;
        char who[300];
        who_runs(self, h, who, sizeof who);
        uint32_t cb = h->page ? h->page->callback : SFP_IDLE;
        double s = (double)self->bound_us / 1e6;
        if (cb == SFP_IN_LOAD)
            host_fail(self, h, "%s spent more than %g s loading (its constructors)", who, s);
        else if (cb == SFP_IDLE)
            host_fail(self, h, "%s did not answer within %g s", who, s);
        else
            host_fail(self, h, "%s spent more than %g s in %s", who, s, callback_name(cb));
    }
    sweep(self);
}

void spm_sfhosts_ended(spm_sfhosts_t *self, uint64_t job)
{
    host_t *h = spm_hmap_get(self->hosts, job);
    if (!h)
        return;
    stop(self, h);
    h->ended = 1;
}

size_t spm_sfhosts_running(const spm_sfhosts_t *self)
{
    size_t n = 0, pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->hosts, &pos, &key, &value))
        n += ((host_t *)value)->pid > 0;
    return n;
}
