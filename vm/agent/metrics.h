/*  =========================================================================
    metrics - the node's own /metrics: what `spm agent --http` serves

    @discuss
    Prometheus scrapes every node as it scrapes a node exporter: the
    agent serves its node's figures under the names the center uses for
    the same figures (spm_node_*, with a `node` label: the node's name),
    plus the standard process_* of the agent process itself. What the
    agent measures itself: its IEU processes (running, waiting to be
    started again, given up) and their restarts, the data agent's blocks
    served and taken, the node cache's use, budget and evictions, and the
    CPU time and memory of its spm processes (base/procstat.h). What the
    IEUs did (SIs run, bytes fetched and pushed, corrupt copies found) is
    counted by the center from their commits and told to the agent in the
    answer to every heartbeat (Heartbeat.sis ...); the agent keeps those
    counts growing across a restart of the center, whose own start again
    from 0. They lag the center's by at most a heartbeat.

    Everything runs on the agent's thread: spm_agent_metrics_publish builds
    the text and hands it to the HTTP thread (transport/http.h) without
    waiting.
    @end
    =========================================================================
*/
#ifndef SPM_AGENT_METRICS_H_INCLUDED
#define SPM_AGENT_METRICS_H_INCLUDED

#include "vm/agent/agent_int.h"
#include "transport/spm.pb-c.h"

/*  The center's answer HB to a heartbeat: its counts of this node's
    commits join A's (a count lower than the last one heard is a center
    that started again: what was heard before is kept under it). */
void spm_agent_metrics_heard(agent_t *a, const Spm__Heartbeat *hb);

/*  Builds A's Prometheus text (CENTER_UP: whether the center answers)
    and publishes it at /metrics; does nothing without --http. Out of
    memory, the text of the last publish stays. */
void spm_agent_metrics_publish(agent_t *a, int center_up);

#endif
