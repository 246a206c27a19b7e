/*  =========================================================================
    cachefault - a node whose cache went out of service leaves service,
    empties its cache and joins again

    A node cache found corrupt or unwritable goes out of service at its
    first failure (datacache/nodecache_fault.c): nothing it holds can be
    trusted. Two answers were reasonable: drain the node and leave it out,
    or take it out, make its cache again and take it back. We take it back:
    the cache is a cache, every block it kept has another keeper (the
    center's store at least), and a node that lost a disk's worth of
    blocks still has its cores. So the agent:

    1. says so in one line (an error), once per failure, whatever the IEUs
       and the data agent met: those say nothing more than a debug line;
    2. tells the center the node leaves service (BYE with the reason): to
       the center this is a death, so its IEUs' SIs are issued again and
       every block it kept is copied again from its other holders;
    3. kills its IEUs (they read and write that cache);
    4. lets go of the cache (the data agent's frames in flight first),
       removes its files and makes it again, empty;
    5. joins again as the same node (the caller's rejoin), whose IEUs start
       afresh on the new cache.

    A cache that breaks again within RENEW_WINDOW of the last time, three
    times in a row, is a disk that is going: the agent then exits in one
    line rather than cycle.
    =========================================================================
*/
#include "vm/agent/agent_int.h"
#include "base/log.h"
#include "base/proc.h"
#include "transport/wire.h"

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#define RENEW_WINDOW (600ull * 1000000) /* us: a failure later than this starts the count again */
#define RENEW_MAX 3                     /* failures in a row before the agent gives up */

/*  Tells the center the node leaves service for WHY. */
static void say_bye(agent_t *a, const char *why)
{
    Spm__Bye bye = SPM__BYE__INIT;
    bye.reason = (char *)why;
    Spm__Envelope e = SPM__ENVELOPE__INIT;
    e.body_case = SPM__ENVELOPE__BODY_BYE;
    e.bye = &bye;
    spm_wire_send(a->dealer, NULL, &e, NULL, 0, NULL);
}

/*  Kills every IEU of the node and reaps it; none is started again until
    the node has joined again. */
static void kill_ieus(agent_t *a)
{
    for (long i = 0; i < a->nkids; i++) {
        child_t *k = &a->kids[i];
        if (k->pid > 0) {
            kill(k->pid, SIGKILL);
            waitpid(k->pid, NULL, 0);
        }
        k->pid = 0;
        k->restart_at = 0;
        k->restarts = 0;
    }
}

int spm_agent_check_cache(agent_t *a, int *rejoin)
{
    *rejoin = 0;
    char why[512] = "";
    if (!a->cache_exit && !spm_nodecache_broken(a->cache, why, sizeof why))
        return 0;
    if (!*why && !spm_nodecache_broken(a->cache, why, sizeof why))
        snprintf(why, sizeof why, "%s: an IEU found it corrupt or unwritable", a->cache_dir);
    a->cache_exit = 0;
    uint64_t now = spm_now_us();
    a->renewals = a->renewed_at && now - a->renewed_at < RENEW_WINDOW ? a->renewals + 1 : 1;
    a->renewed_at = now;
    say_bye(a, why);
    kill_ieus(a);
    if (a->renewals > RENEW_MAX)
        return spm_error(SPM_ESTORE,
                         "node %u (%s): its cache went out of service %u times, each within "
                         "%llu s of the last: %s; the agent stops",
                         a->node, a->name, a->renewals - 1, RENEW_WINDOW / 1000000, why);
    spm_log_error("node %u (%s): its cache is out of service: %s; the node leaves service, "
                  "empties its cache and joins again",
                  a->node, a->name, why);
    /* The old cache closes once no frame points into its map; a frame
       still out after 2 s keeps it open (and its files, unlinked, take
       disk space until the agent exits). */
    if (spm_dataagent_let_go(a->served, 2000) == 0)
        spm_nodecache_destroy(&a->cache);
    else
        spm_log_warn("node %u: the old cache stays open until the agent exits (frames in flight)",
                     a->node);
    a->cache = NULL;
    if (spm_nodecache_wipe(a->cache_dir) != 0 ||
        !(a->cache = spm_nodecache_open(a->cache_dir, (uint64_t)a->cache_mb << 20, 0)))
        return spm_error(SPM_ESTORE, "node %u (%s): its cache cannot be made again: %s", a->node,
                         a->name, spm_error_detail());
    spm_dataagent_use(a->served, a->cache);
    *rejoin = 1;
    return 0;
}
