/*  =========================================================================
    blockclient - fetches blocks from nodes' data agents and stores blocks
    on them, peer to peer

    @header
    What an IEU, an agent and a client do to move a block between nodes
    without the center: FETCH a version from one of its holders (trying the
    next one when a holder is silent, has no copy or sends bytes that fail
    the checksum), and STORE a block on a node (a replica of an output, a
    staged input, a copy the center ordered). One DEALER per data agent,
    connected on first use with its CurveZMQ key; requests are matched to
    replies by number, and a late reply to a request given up on is
    ignored. The owner polls the sockets (spm_blockclient_items) in its
    own loop and calls spm_blockclient_process when one is readable and
    spm_blockclient_expire now and then; callbacks run inside those calls.
    @discuss
        spm_blockclient_t *bc = spm_blockclient_new(ctx, security);
        spm_blockclient_node(bc, 3, "tcp://n3:7701", key);
        spm_blockclient_fetch(bc, &ref, holders, n, on_fetched, task);
        spm_blockclient_store(bc, 3, &ref, buf, 1, NULL, 0, on_stored, task);
        spm_blockclient_keep(bc, &ref, buf, &self_node, 1, 2, peers, n, 0, on_kept, task);
        ... zmq_poll over spm_blockclient_items(), then:
        spm_blockclient_process(bc);
        spm_blockclient_expire(bc, spm_now_us());
    Not thread-safe: one thread owns it.
    @end
    =========================================================================
*/
#ifndef SPM_BLOCKCLIENT_H_INCLUDED
#define SPM_BLOCKCLIENT_H_INCLUDED

#include "transport/security.h"
#include "spm/spm.h"
#include "transport/wire.h"

#include <stddef.h>
#include <stdint.h>

typedef struct spm_blockclient spm_blockclient_t;

/*  Block bytes shared by the sender and ZeroMQ (which may still be
    sending them to several nodes after the sender is done): counted
    references, released from any thread. */
typedef struct spm_blockbuf spm_blockbuf_t;

/*  Wraps the LEN malloc'd bytes at DATA (ownership passes) with one
    reference, the caller's. NULL when out of memory (DATA is then freed). */
spm_blockbuf_t *spm_blockbuf_new(void *data, size_t len);

/*  The bytes, and their length. */
void *spm_blockbuf_data(const spm_blockbuf_t *b);
size_t spm_blockbuf_len(const spm_blockbuf_t *b);

/*  One more reference to B (returned). */
spm_blockbuf_t *spm_blockbuf_ref(spm_blockbuf_t *b);

/*  Drops a reference; the last one frees the bytes. Any thread; NULL is a
    no-op. */
void spm_blockbuf_unref(spm_blockbuf_t *b);

/*  A block frame that sends B's bytes without a copy and holds a
    reference until ZeroMQ is done (spm_wire_send). */
spm_frame_t spm_blockbuf_frame(spm_blockbuf_t *b);

/*  One block version as the directory knows it. */
typedef struct {
    spm_sdb_t sdb;
    uint64_t version;
    uint32_t type;
    uint64_t checksum; /* spm_checksum of its bytes */
    uint64_t bytes;    /* its size (0: unknown); longer transfers get longer timeouts */
} spm_blockref_t;

/*  A fetch ended. STATUS 0: BLOCK holds the bytes, whose checksum matched,
    served by NODE; the callback may take them with zmq_msg_move (else they
    are freed after it returns). Otherwise every holder failed (SPM_ETIMEOUT,
    SPM_ENOTFOUND, SPM_EFORMAT for a corrupt copy, SPM_EUNREACH) and WHY
    says what each one did, naming its endpoint; BLOCK is NULL. */
typedef void (*spm_fetched_fn)(void *arg, int status, zmq_msg_t *block, uint32_t node,
                               const char *why);

/*  A store ended: STATUS 0 when HOLDERS[0..N) keep the block (the node
    asked, and those it passed the block on to), else the failure, WHY
    naming the endpoint. */
typedef void (*spm_stored_fn)(void *arg, int status, const uint32_t *holders, size_t n,
                              const char *why);

/*  Returns a client that makes its sockets on CTX and secures tcp://
    endpoints with SECURITY (neither owned; both must outlive it), or NULL
    when out of memory. */
spm_blockclient_t *spm_blockclient_new(void *ctx, spm_security_t *security);

/*  Called whenever NODE sends a copy of REF that fails its checksum (the
    fetch then moves on to the next holder), so that the owner can have
    the center stop naming that node. */
typedef void (*spm_corrupt_fn)(void *arg, uint32_t node, const spm_blockref_t *ref);

/*  Sets the corrupt callback FN with ARG (NULL: none). */
void spm_blockclient_on_corrupt(spm_blockclient_t *self, spm_corrupt_fn fn, void *arg);

/*  Closes every socket (requests still open are dropped without callbacks)
    and frees the client; sets *SELF to NULL. */
void spm_blockclient_destroy(spm_blockclient_t **self_p);

/*  Node NODE's data agent is at ENDPOINT with server KEY ("" or NULL for
    none). A node already known at another endpoint is reconnected.
    Returns 0 or SPM_ENOMEM. */
int spm_blockclient_node(spm_blockclient_t *self, uint32_t node, const char *endpoint,
                         const char *key);

/*  NODE is gone: its socket is closed, and its requests move on to the
    next holder (fetches) or fail (stores) within this call. */
void spm_blockclient_node_down(spm_blockclient_t *self, uint32_t node);

/*  Whether NODE's endpoint is known. */
int spm_blockclient_knows(const spm_blockclient_t *self, uint32_t node);

/*  Fetches REF from the first of the N HOLDERS that has it (unknown nodes
    are skipped), calling FN with ARG once at the end. Returns 0 (FN will
    be called from process, expire or node_down), or SPM_ENOTFOUND when no
    holder is known (FN is not called), or SPM_ENOMEM. */
int spm_blockclient_fetch(spm_blockclient_t *self, const spm_blockref_t *ref,
                          const uint32_t *holders, size_t n, spm_fetched_fn fn, void *arg);

/*  Asks NODE to keep REF, whose bytes are BUF (a reference is taken for
    as long as the request or ZeroMQ needs them), calling FN with ARG once
    at the end. A block of 16 KiB or more goes to a node that has not
    taken one in the last second as an offer first (no block frame): the
    block follows only when the node says it has room, and a node that
    says it is full ends the request with SPM_EFULL without the block
    having crossed a link.
    With WANT > 1, NODE also passes it on so that WANT nodes keep it in
    all, chosen among the NFORWARD nodes FORWARD in order (known to this
    client: their endpoints go with the request). Returns 0, or
    SPM_ENOTFOUND (NODE unknown), SPM_EUNREACH (cannot send to it) or
    SPM_ENOMEM, with FN not called. */
int spm_blockclient_store(spm_blockclient_t *self, uint32_t node, const spm_blockref_t *ref,
                          spm_blockbuf_t *buf, uint32_t want, const uint32_t *forward,
                          size_t nforward, spm_stored_fn fn, void *arg);

/*  A keep ended: HOLDERS[0..N) keep the block now (those it started with
    included). STATUS 0: as many as wanted. SPM_EFULL: fewer, for want of
    nodes with room (too few candidates, or candidates refused it as
    full): the center's store is the place for another copy. Otherwise the
    failure of the last candidate that did not answer or could not be
    reached (SPM_ETIMEOUT, SPM_EUNREACH, ...). WHY says what each candidate
    that failed did, naming its endpoint. */
typedef void (*spm_kept_fn)(void *arg, const uint32_t *holders, size_t n, int status,
                            const char *why);

/*  Makes WANT nodes keep REF (bytes in BUF): the NHAVE nodes in HAVE keep
    it already (the caller's own node, say), and the rest are asked among
    the NCAND CANDIDATES in order, the next one standing in for one that
    fails. A candidate that refused a block as full less than a second ago
    is not asked (nor passed on to), and counts as full. Without CHAIN
    several are asked at once; with CHAIN one is asked at a time and passes
    the block on to the candidates after it (so the caller's link carries
    it once: what a client staging over a slow link wants). FN is called with ARG once at the end
   (from this call when nothing needs asking). Returns 0 or SPM_ENOMEM (FN not called). */
int spm_blockclient_keep(spm_blockclient_t *self, const spm_blockref_t *ref, spm_blockbuf_t *buf,
                         const uint32_t *have, size_t nhave, uint32_t want,
                         const uint32_t *candidates, size_t ncand, int chain, spm_kept_fn fn,
                         void *arg);

/*  A node's endpoint and key as the client knows them, for passing them
    on (NULL when NODE is unknown). */
const char *spm_blockclient_endpoint(const spm_blockclient_t *self, uint32_t node,
                                     const char **key);

/*  Fills up to MAX poll items, one per socket with requests open, and
    returns how many. */
int spm_blockclient_items(spm_blockclient_t *self, zmq_pollitem_t *items, int max);

/*  Reads every reply waiting on the client's sockets and runs the
    callbacks of the requests they end. */
void spm_blockclient_process(spm_blockclient_t *self);

/*  Gives up on requests unanswered too long at NOW_US (2 s, plus 1 s per
    4 MiB of the block, counted from the sending or from the node's last
    answer, whichever is later, so that requests queued behind others at a
    busy node wait for them; never more than 60 s from the sending):
    fetches move to the next holder, stores fail. */
void spm_blockclient_expire(spm_blockclient_t *self, uint64_t now_us);

/*  Requests open. */
size_t spm_blockclient_pending(const spm_blockclient_t *self);

/*  Counters since the client was made. */
typedef struct {
    uint64_t fetched, fetched_bytes; /* blocks fetched and verified */
    uint64_t stored, stored_bytes;   /* blocks a node took */
    uint64_t corrupt;                /* copies that failed their checksum */
    uint64_t timeouts;               /* requests a node left unanswered */
    uint64_t refused;                /* answers that were errors */
    uint64_t skipped_full;           /* keeps that did not ask a node that refused one as full
                                        less than a second before */
    uint64_t offers, offers_refused; /* stores offered before their block was sent, and
                                        those refused (their block was not sent) */
    uint64_t shared;                 /* fetches that waited for one of the same block
                                        already under way instead of asking again */
} spm_blockclient_stats_t;

void spm_blockclient_stats(const spm_blockclient_t *self, spm_blockclient_stats_t *out);

#endif
