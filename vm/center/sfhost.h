/*  =========================================================================
    sfhost - the center's side of plugin jobs' super-function hosts

    @discuss
    A plugin's code never runs in the center. Each plugin job gets a host
    process (`spm sfhost`, vm/sfhost/host.h), started by the center on the
    first turn the job runs (at its submit, or after a restart once its
    journal has been run again), which loads the plugin and runs all of
    the job's super-functions. The IDU's proxy of the job (idu/remote.c)
    hands its events here; they go to the host once per turn of the
    center's loop, one frame, and the host's answer (the actions of its
    callbacks) is applied as it comes. The center never waits for a host.

    The bound: a host that has not answered a frame SPM_SF_BOUND_MS (the
    setting center.sf_bound_ms) after it could begin it is killed, and its
    job fails in one line naming the program, the super-function and the
    callback it was in ("... spent more than 2 s in start"); a host that
    dies (a crash, exit) fails its job the same way ("... crashed in commit
    (SIGSEGV)"). The failure is journaled like any other: after a restart
    the job is reported failed and its code is not run again.
    @end
    =========================================================================
*/
#ifndef SPM_CENTER_SFHOST_H_INCLUDED
#define SPM_CENTER_SFHOST_H_INCLUDED

#include "datacache/store.h"
#include "idu/idu.h"

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

typedef struct spm_sfhosts spm_sfhosts_t;

/*  The hosts of IDU's plugin jobs, whose plugins' bytes are in STORE
    (neither owned; both must outlive it); a host that does not answer a
    frame within BOUND_US is killed. Sets itself as IDU's remote (every
    plugin job's SFs run in a host from then on). NULL: out of memory. */
spm_sfhosts_t *spm_sfhosts_new(spm_idu_t *idu, spm_store_t *store, uint64_t bound_us);

/*  Kills every host, frees them all and sets *SELF_P to NULL. */
void spm_sfhosts_destroy(spm_sfhosts_t **self_p);

/*  Fills up to MAX poll items with the hosts' sockets (readable; writable
    while something waits to be sent). Returns how many. */
size_t spm_sfhosts_poll_items(spm_sfhosts_t *self, zmq_pollitem_t *items, size_t max);

/*  Reads what the hosts answered and applies it to their jobs; a host
    that died fails its job. */
void spm_sfhosts_turn(spm_sfhosts_t *self, uint64_t now);

/*  Starts the hosts of jobs that have none yet and sends each host the
    events of this turn as one frame. At the end of a turn. */
void spm_sfhosts_send(spm_sfhosts_t *self, uint64_t now);

/*  A host over its bound is killed and its job failed. Once a tick. */
void spm_sfhosts_tick(spm_sfhosts_t *self, uint64_t now);

/*  JOB ended: its host, if it has one, is stopped. */
void spm_sfhosts_ended(spm_sfhosts_t *self, uint64_t job);

/*  Hosts running now. */
size_t spm_sfhosts_running(const spm_sfhosts_t *self);

#endif
