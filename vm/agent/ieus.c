/*  =========================================================================
    ieus - the agent's IEU processes: started, reaped, reported, restarted
    with a growing delay, drained

    The first IEUs are forked copies of the agent, started before the
    center has welcomed the node: they read their node index from a pipe
    (`spm ieu --node-fd`). Later ones (restarts) start the binary afresh
    with --node. A death is told to the center at once (IeuDied), so that
    the IEU's SIs are issued again without waiting for heartbeats, and the
    IEU is started again 0.1 s later, the delay doubling with every death
    in a row within a second of starting, up to a cap (a crash loop).
    =========================================================================
*/
#include "vm/agent/agent_int.h"
#include "base/log.h"
#include "base/proc.h"
#include "transport/wire.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RESTARTS 10
/* An IEU that ran this long before it died was not crash-looping: its
   restart count (and delay) starts again from zero. */
#define HEALTHY_US 1000000

static pid_t start_ieu(agent_t *a)
{
    char node[16], slots[16], prefetch[16], cache_mb[24], heap_mb[24];
    snprintf(cache_mb, sizeof cache_mb, "%ld", a->cache_mb);
    snprintf(heap_mb, sizeof heap_mb, "%ld", a->heap_mb);
    if (a->node_fd >= 0)
        snprintf(node, sizeof node, "%d", a->node_fd);
    else
        snprintf(node, sizeof node, "%u", a->node);
    snprintf(slots, sizeof slots, "%ld", a->slots);
    snprintf(prefetch, sizeof prefetch, "%ld", a->prefetch);
    char *node_opt = a->node_fd >= 0 ? "--node-fd" : "--node";
    char *argv[] = {"spm",         "ieu",
                    "--center",    (char *)a->center,
                    node_opt,      node,
                    "--cache-dir", (char *)a->cache_dir,
                    "--slots",     slots,
                    "--prefetch",  prefetch,
                    "--log-level", (char *)a->log_level,
                    "--cache-mb",  cache_mb,
                    "--heap-mb",   heap_mb,
                    NULL,          NULL,
                    NULL,          NULL,
                    NULL,          NULL};
    size_t n = 18;
    if (a->insecure)
        argv[n++] = "--insecure";
    if (!a->store_reads)
        argv[n++] = "--no-store-reads";
    if (a->local_files)
        argv[n++] = "--local-files";
    if (a->keys) {
        argv[n++] = "--keys";
        argv[n++] = (char *)a->keys;
    }
    /* The first IEUs, started before the agent has a thread, are forked
       copies of it; later ones (restarts) start the binary afresh. */
    return a->node_fd >= 0 ? spm_proc_fork(argv) : spm_proc_spawn(argv);
}

static void report_death(void *dealer, pid_t pid, int status)
{
    Spm__IeuDied d = SPM__IEU_DIED__INIT;
    d.pid = (uint32_t)pid;
    d.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    d.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_IEU_DIED;
    env.ieu_died = &d;
    spm_wire_send(dealer, NULL, &env, NULL, 0, NULL);
}

/*  Reaps dead IEUs, reports them, schedules restarts; starts due ones. */
void spm_ieus_supervise(agent_t *a, void *dealer)
{
    int status;
    pid_t pid;
    uint64_t now = spm_now_us();
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (long i = 0; i < a->nkids; i++) {
            child_t *k = &a->kids[i];
            if (k->pid != pid)
                continue;
            k->pid = 0;
            report_death(dealer, pid, status);
            if (WIFEXITED(status) && WEXITSTATUS(status) == SPM_NODECACHE_EXIT) {
                a->cache_exit = 1; /* spm_agent_check_cache says it and starts them again */
                break;
            }
            if (now - k->started_at >= HEALTHY_US)
                k->restarts = 0;
            if (k->restarts >= MAX_RESTARTS) {
                spm_log_error("IEU %ld died %u times in a row within %.1f s of starting; not "
                              "restarting it",
                              i, k->restarts, HEALTHY_US / 1e6);
                break;
            }
            uint64_t delay = 100000ull << (k->restarts < 8 ? k->restarts : 8);
            k->restart_at = now + delay;
            spm_log_warn("IEU pid %d %s %d; restarting in %.1f s", (int)pid,
                         WIFSIGNALED(status) ? "killed by signal" : "exited with",
                         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), delay / 1e6);
        }
    }
    for (long i = 0; i < a->nkids; i++) {
        child_t *k = &a->kids[i];
        if (!k->pid && k->restart_at && now >= k->restart_at) {
            k->restart_at = 0;
            k->restarts++;
            a->ieu_restarts++;
            k->started_at = now;
            k->pid = start_ieu(a);
            if (k->pid < 0)
                k->pid = 0;
        }
    }
}

/*  After a rejoin: every IEU is stopped and started again at once under the
    node's index; the restart does not count against the cap. A center of
    another store knows nothing of the blocks the node kept (and may give
    their ids to new blocks): unless SAME_STORE, CACHE is emptied in
    between. */
void spm_ieus_restart_all(agent_t *a, spm_nodecache_t *cache, int same_store)
{
    for (long i = 0; i < a->nkids; i++)
        if (a->kids[i].pid > 0)
            spm_proc_stop(a->kids[i].pid, 3000);
    if (!same_store && spm_nodecache_clear(cache) != 0)
        spm_log_warn("emptying the node cache: %s", spm_error_detail());
    for (long i = 0; i < a->nkids; i++) {
        child_t *k = &a->kids[i];
        k->pid = start_ieu(a);
        if (k->pid < 0)
            k->pid = 0;
        k->started_at = spm_now_us();
        k->restart_at = 0;
    }
}

/*  Starts every IEU (the first time). */
void spm_ieus_start_all(agent_t *a)
{
    for (long i = 0; i < a->nkids; i++) {
        a->kids[i].pid = start_ieu(a);
        if (a->kids[i].pid < 0)
            a->kids[i].pid = 0;
        a->kids[i].started_at = spm_now_us();
    }
}

/*  SIGTERM to every IEU: each finishes its running SIs, commits them and
    exits. Whoever is still there after DRAIN_S seconds is killed. */
void spm_ieus_stop_all(agent_t *a)
{
    for (long i = 0; i < a->nkids; i++)
        if (a->kids[i].pid > 0)
            kill(a->kids[i].pid, SIGTERM);
    uint64_t deadline = spm_now_us() + (uint64_t)a->drain_s * 1000000u;
    for (;;) {
        int alive = 0;
        for (long i = 0; i < a->nkids; i++) {
            if (a->kids[i].pid <= 0)
                continue;
            if (waitpid(a->kids[i].pid, NULL, WNOHANG) == a->kids[i].pid)
                a->kids[i].pid = 0;
            else
                alive = 1;
        }
        if (!alive)
            return;
        if (spm_now_us() > deadline)
            break;
        usleep(1000); /* an IEU exits within ms of its last commit */
    }
    for (long i = 0; i < a->nkids; i++)
        if (a->kids[i].pid > 0) {
            kill(a->kids[i].pid, SIGKILL);
            waitpid(a->kids[i].pid, NULL, 0);
        }
}

void spm_ieus_signal_all(agent_t *a, int sig)
{
    for (long i = 0; i < a->nkids; i++)
        if (a->kids[i].pid > 0)
            kill(a->kids[i].pid, sig);
}

long spm_ieus_reap(agent_t *a)
{
    long alive = 0;
    for (long i = 0; i < a->nkids; i++) {
        child_t *k = &a->kids[i];
        if (k->pid > 0 && waitpid(k->pid, NULL, WNOHANG) == k->pid)
            k->pid = 0;
        k->restart_at = 0; /* a drain starts nothing again */
        alive += k->pid > 0;
    }
    return alive;
}
