/*  =========================================================================
    metrics - the center's figures over its life: Prometheus text, the
    utilisation curve, and totals that outlive the jobs

    @discuss
    The IDU knows a job's counters only until its report is delivered; a
    scraper wants counters that only grow. The center hands every job's
    final figures to spm_metrics_job_end just before the IDU forgets it,
    and the totals are those plus the jobs still known. Ended jobs are
    counted by end state from the job history as the center starts (so
    the counts survive a restart, as far as the history's retention keeps
    the records) plus every end after. Every successful commit is handed
    to spm_metrics_commit: the per-node counts and the histogram of SI
    durations per opcode are the center's own, since it started. spm_metrics_sample,
    called every tick, keeps one utilisation sample a second for the last
    ten minutes (the dashboard's curve). Everything runs on the center's
    thread; the texts built here are what transport/http.c serves.
    @end
    =========================================================================
*/
#ifndef SPM_METRICS_H_INCLUDED
#define SPM_METRICS_H_INCLUDED

#include <stdint.h>

#include "datacache/dataplane.h"
#include "transport/spm.pb-c.h"
#include "idu/idu.h"
#include "vm/center/history.h"
#include "vm/center/status.h"

typedef struct spm_metrics spm_metrics_t;

/*  Returns a new set of totals whose ended-job counts start from the
    ended records of HISTORY (NULL: none; not kept), or NULL when out of
    memory. */
spm_metrics_t *spm_metrics_new(spm_history_t *history);
void spm_metrics_destroy(spm_metrics_t **self_p);

/*  INFO's job is about to be forgotten by the IDU: its figures join the
    totals, and it is listed among the recently finished jobs. */
void spm_metrics_job_end(spm_metrics_t *self, const spm_idu_job_info_t *info);

/*  The IEU of node NODE committed an SI of OPCODE successfully, with the
    figures C (its exec_us, bytes fetched and pushed): it counts for the
    node and in the opcode's histogram of durations. */
void spm_metrics_commit(spm_metrics_t *self, uint32_t node, uint32_t opcode,
                        const spm_idu_commit_t *c);

/*  Fills the counts of NODE's commits into HB, the center's answer to
    its agent's heartbeat (fields sis .. corrupt; left 0 for a node without
    a commit yet). */
void spm_metrics_node_answer(spm_metrics_t *self, uint32_t node, Spm__Heartbeat *hb);

/*  Takes a utilisation sample from IDU when a second passed since the last
    (NOW_US: monotonic). */
void spm_metrics_sample(spm_metrics_t *self, spm_idu_t *idu, uint64_t now_us);

/*  Builds the Prometheus text (malloc'd into *TEXT, caller frees) from IDU,
    DP, S and the center's CPU time CPU_US. Returns 0 or SPM_ENOMEM. */
int spm_metrics_text(spm_metrics_t *self, spm_idu_t *idu, spm_dataplane_t *dp,
                     const spm_status_t *s, uint64_t cpu_us, char **text);

/*  Builds the dashboard's history (malloc'd JSON into *JSON): the
    utilisation samples, the totals and the recently finished jobs.
    Returns 0 or SPM_ENOMEM. */
int spm_metrics_history(spm_metrics_t *self, spm_idu_t *idu, char **json);

#endif
