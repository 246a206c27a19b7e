/*  =========================================================================
    dashboard - the page `spm center --http` serves at /

    @discuss
    One self-contained HTML page (vm/center/dashboard.html, its script inline,
    nothing fetched from elsewhere) built into the binary. Its script asks
    /api/status and /api/history every second and draws a table of nodes
    (name, state, IEUs busy and idle, CPU and memory of its spm processes,
    cache, bytes served, fetched and taken, last heard), the running jobs
    with progress, rate and ETA, the utilisation of the last minutes on
    time axes, cache hits per level, bytes moved, refused connections and
    recent failures; /api/jobs for the job history; and on a job's page
    (#job/N) /api/job/N (vm/center/jobapi.h). A token given in the page's address (?token=...) is
   passed on to those requests.
    @end
    =========================================================================
*/
#ifndef SPM_DASHBOARD_H_INCLUDED
#define SPM_DASHBOARD_H_INCLUDED

#include <stddef.h>

/*  The page's bytes (static, not NUL-terminated); *LEN gets their number. */
const char *spm_dashboard_page(size_t *len);

#endif
