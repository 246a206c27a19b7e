/*  =========================================================================
    launch - an embedded VM: a center and an agent as this process's children

    A client with no center named starts its own VM and stops it at the
    end; this file is that launcher, apart from the client's protocol
    (vm/client/session.c), which only connects to the endpoint it is
    given and tells the center when to stop. Both children are forked
    copies of the client (spm_proc_fork): no exec, so no second loading of
    libzmq's libraries.
    =========================================================================
*/
#include "vm/embedded/launch.h"

#include "base/clock.h"
#include "base/config.h"
#include "base/proc.h"
#include "spm/spm.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct spm_embedded {
    char *rundir;        /* private runtime directory (0700) */
    char *endpoint;      /* the center's endpoint */
    pid_t center, agent; /* the processes, 0 once seen to exit (or not started) */
    int released;        /* the center was told to stop (spm_embedded_release) */
    int stopped;         /* spm_embedded_stop ran: both processes are gone */
};

/*  A unix socket bound to PATH and listening, inherited by the center
    (spm center --listen-fd): the client and the agent connect to it at
    once, their greetings wait in it, and the center takes them when its
    loop starts. Before, each waited for the center's socket to appear
    and then for the handshake, the center's I/O thread just started: an
    spm mine on a two-line file took 72.4 ms against 69.0 ms now (medians
    of 30 alternating runs, load average 2.5). Returns the descriptor (not
    closed on exec: the center may be started by one) or -1. */
static int listener(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return -1;
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 100) != 0)) {
        close(fd);
        unlink(path);
        fd = -1;
    }
    return fd;
}

static int start_embedded(spm_embedded_t *self, const spm_embedded_opts_t *o)
{
    char tmpl[] = "/tmp/spm-run-XXXXXX";
    if (!mkdtemp(tmpl))
        return spm_error(SPM_ESYS, "cannot create a runtime directory in /tmp: %s",
                         strerror(errno));
    self->rundir = strdup(tmpl);
    char store[sizeof tmpl + 16], cache[sizeof tmpl + 16], ieus[16], slots[16], pre[16];
    char cache_mb[24], warm_mb[24], heap_mb[24], sock[sizeof tmpl + 16], listen_fd[16];
    snprintf(store, sizeof store, "%s/store", tmpl);
    snprintf(cache, sizeof cache, "%s/cache", tmpl);
    snprintf(ieus, sizeof ieus, "%d", o->ieus);
    snprintf(slots, sizeof slots, "%d", o->slots);
    snprintf(pre, sizeof pre, "%d", o->prefetch);
    snprintf(cache_mb, sizeof cache_mb, "%ld", o->cache_mb);
    snprintf(warm_mb, sizeof warm_mb, "%ld", o->warm_mb);
    snprintf(heap_mb, sizeof heap_mb, "%ld", o->heap_mb);
    if (!self->rundir || asprintf(&self->endpoint, "ipc://%s/center", tmpl) < 0)
        return spm_error(SPM_ENOMEM, "out of memory");
    /* The store is removed with the directory at the end: flushing it to
       disk would only cost I/O, and removing a flushed file costs far more
       than one whose pages never left memory (15 ms against 2 for 40 MB). */
    /* Its lines go to the user's terminal, before the report: errors only,
       unless SPM_LOG_LEVEL says. Its warnings are for the operator of a
       shared VM (an IEU died and was restarted, SIs were re-issued); the
       user of one command learns the same from the report (re-issues,
       dead IEUs) and its one error line. A plugin whose SI crashed its
       IEUs printed 8 warning lines before the report. */
    char *level = (char *)spm_config_log_level("error");
    char *center[20] = {"spm", "center",    "--listen",    self->endpoint, "--store",
                        store, "--no-sync", "--log-level", level};
    int n = 9;
    if (o->warm_mb > 0) {
        center[n++] = "--warm-mb";
        center[n++] = warm_mb;
    }
    if (o->no_speculate)
        center[n++] = "--no-speculate";
    /* Nothing could resume an embedded center (it dies with its client):
       no journal, unless SPM_JOURNAL asks for one (bench_journal does). */
    if (!getenv("SPM_JOURNAL"))
        center[n++] = "--no-journal";
    /* A daemon's center.http and agent.http (the configuration file) are
       the daemon's ports, not this VM's. */
    center[n++] = "--no-http";
    snprintf(sock, sizeof sock, "%s/center", tmpl);
    int fd = listener(sock); /* without one, the center binds its endpoint itself */
    if (fd >= 0) {
        snprintf(listen_fd, sizeof listen_fd, "%d", fd);
        center[n++] = "--listen-fd";
        center[n++] = listen_fd;
    }
    self->center = spm_proc_fork(center);
    if (fd >= 0)
        close(fd); /* the center's now; the agent is not to hold it */
    if (self->center < 0) {
        self->center = 0;
        return SPM_ESYS;
    }
    /* The IEUs share this machine and user: they may read the client's
       input file where it lies (spm_session_local_files). */
    /* Its cache directory goes with the run's: the node's identity there
       is not synced to disk (that fsync was the longest wait of the start). */
    char *agent[24] = {"spm",         "agent",   "--center",   self->endpoint, "--ieus",
                       ieus,          "--slots", slots,        "--prefetch",   pre,
                       "--cache-dir", cache,     "--cache-mb", cache_mb,       "--local-files",
                       "--log-level", level,     "--no-http",  "--no-sync"};
    n = 19;
    if (o->no_store_reads)
        agent[n++] = "--no-store-reads";
    if (o->heap_mb > 0) {
        agent[n++] = "--heap-mb";
        agent[n++] = heap_mb;
    }
    self->agent = spm_proc_fork(agent);
    if (self->agent < 0) {
        self->agent = 0;
        return SPM_ESYS;
    }
    return 0;
}

int spm_embedded_new(const spm_embedded_opts_t *o, spm_embedded_t **out)
{
    assert(o);
    assert(out);
    *out = NULL;
    spm_embedded_t *self = calloc(1, sizeof *self);
    if (!self)
        return spm_error(SPM_ENOMEM, "out of memory");
    int rc = start_embedded(self, o);
    if (rc != 0) {
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", spm_error_detail());
        spm_embedded_destroy(&self);
        return spm_error(rc, "%s", detail);
    }
    *out = self;
    return 0;
}

/*  Waits for the embedded VM's processes to exit. Told to stop (released),
    the center tells the agent, which stops its IEUs, and exits. An agent
    still connecting at that moment never hears it: once the center is
    gone, the agent gets AGENT_GRACE_MS to exit by itself and is then
    stopped with a signal (it stops its IEUs the same way), instead of
    waiting out its heartbeats. A VM the session could not connect to is
    stopped with signals at once. */
#define AGENT_GRACE_MS 100
void spm_embedded_stop(spm_embedded_t *self)
{
    assert(self);
    if (self->stopped)
        return;
    self->stopped = 1;
    int center_gone = !self->center, agent_gone = !self->agent;
    uint64_t deadline = spm_now_us() + 3000000, grace = 0;
    while (self->released && !agent_gone && spm_now_us() < deadline &&
           (!grace || spm_now_us() < grace)) {
        center_gone = center_gone || spm_proc_exited(self->center, NULL);
        agent_gone = spm_proc_exited(self->agent, NULL);
        if (center_gone && !grace)
            grace = spm_now_us() + AGENT_GRACE_MS * 1000;
        if (!agent_gone)
            usleep(1000);
    }
    if (!agent_gone)
        spm_proc_stop(self->agent, 3000);
    for (int i = 0; i < 3000 && self->released && !center_gone; i++)
        if (!(center_gone = spm_proc_exited(self->center, NULL)))
            usleep(1000);
    if (!center_gone)
        spm_proc_stop(self->center, 3000);
}

void spm_embedded_destroy(spm_embedded_t **self_p)
{
    assert(self_p);
    spm_embedded_t *self = *self_p;
    if (!self)
        return;
    spm_embedded_stop(self);
    if (self->rundir)
        spm_rmtree(self->rundir);
    free(self->rundir);
    free(self->endpoint);
    free(self);
    *self_p = NULL;
}

const char *spm_embedded_endpoint(const spm_embedded_t *self)
{
    assert(self);
    return self->endpoint;
}

const char *spm_embedded_rundir(const spm_embedded_t *self)
{
    assert(self);
    return self->rundir;
}

/*  Checks that the embedded VM's processes are still there. */
int spm_embedded_alive(spm_embedded_t *self)
{
    assert(self);
    int st;
    if (self->center && spm_proc_exited(self->center, &st)) {
        self->center = 0;
        return spm_error(SPM_EDEAD, "the embedded center exited unexpectedly");
    }
    /* without its agent no IEU would ever come, and the job would wait */
    if (self->agent && !self->released && spm_proc_exited(self->agent, &st)) {
        self->agent = 0;
        return spm_error(SPM_EDEAD, "the embedded agent exited unexpectedly");
    }
    return 0;
}

int spm_embedded_center_up(const spm_embedded_t *self)
{
    assert(self);
    return self->center != 0;
}

void spm_embedded_release(spm_embedded_t *self)
{
    assert(self);
    self->released = 1;
}

int spm_embedded_released(const spm_embedded_t *self)
{
    assert(self);
    return self->released;
}
