/*  =========================================================================
    host - the host of one plugin job's super-functions (`spm sfhost`)

    @discuss
    The center starts one per plugin job (vm/center/sfhost.c) with a
    socket and a shared page (runtime/sfproto.h). The host loads the
    plugin from the bytes the center sends first, then runs the job's
    super-functions (the root and every child it spawns) on the events
    the center sends, and answers each frame of events with the actions
    its callbacks took. The public SF API (include/spm/spm.h) goes to this
    file in this process (spm_sf_ops). Queries answer from what the center
    last sent: spm_sf_ieus and spm_sf_nodes the counts of the event being
    handled; spm_sf_bytes_to and spm_sdb_holders know nothing of where
    blocks live and answer 0 (the IDU still issues each SI where its
    operands are). A failure the center alone can see (an SI that names
    an SDB it does not know) fails the job instead of returning a code.
    @end
    =========================================================================
*/
#ifndef SPM_SFHOST_HOST_H_INCLUDED
#define SPM_SFHOST_HOST_H_INCLUDED

/*  Runs the host on socket FD and the shared page of descriptor PAGE_FD
    until the center closes the socket. Returns the exit code: 0, or 1
    when the socket or the page failed. */
int spm_sfhost_run(int fd, int page_fd);

#endif
