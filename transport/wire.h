/*  =========================================================================
    wire - one spm message on a ZeroMQ socket: envelope frame + block frames

    @discuss
    A message is [identity] (ROUTER side only), one protobuf Envelope frame,
    then zero or more block frames carrying raw SDB bytes (zero-copy). The
    receiver decodes strictly: a message whose envelope does not unpack,
    has the wrong protocol version, no body, or too many frames is counted
    in the stats, logged at debug level and dropped; it never reaches the
    caller. Oversized messages are refused by ZeroMQ itself
    (ZMQ_MAXMSGSIZE, set by spm_wire_socket) before anything is allocated.
    @end
    =========================================================================
*/
#ifndef SPM_WIRE_H_INCLUDED
#define SPM_WIRE_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "base/clock.h"
#include "transport/spm.pb-c.h" /* generated into build/gen */

#define SPM_PROTOCOL_VERSION 2
#define SPM_MAX_MSG_BYTES (512ll << 20) /* largest frame ZeroMQ accepts */
#define SPM_MAX_FRAMES 4096             /* block frames in one message */

typedef struct {
    uint64_t received; /* messages accepted */
    uint64_t dropped;  /* malformed, wrong version or too many frames */
    uint64_t sent;
    uint64_t bytes_in, bytes_out; /* bytes of block frames received and sent */
} spm_wire_stats_t;

typedef struct {
    Spm__Envelope *env; /* decoded envelope, owned */
    zmq_msg_t id;       /* ROUTER identity frame (valid when has_id) */
    int has_id;
    zmq_msg_t *frames; /* block frames, owned */
    size_t nframes;
    char user[48]; /* PUT, SUBMIT, GET, CANCEL, DISCARD, WATCH, JOBS: the sender's CurveZMQ public
                      key (Z85; "" for none) */
} spm_msg_t;

/*  Creates a socket of TYPE on CTX with the options every spm socket uses:
    linger 0, max message size, and for ROUTER mandatory routing off.
    Returns NULL with the detail set. */
void *spm_wire_socket(void *ctx, int type);

/*  Receives one message (non-blocking when DONTWAIT). Returns 1 with *M
    filled, 2 when a malformed message was dropped (and counted), 0 when
    nothing was waiting, or SPM_ESYS when the socket failed (context
    terminated, interrupted). Only with 1 does *M need spm_msg_close. */
int spm_wire_recv(void *sock, int router, int dontwait, spm_msg_t *m, spm_wire_stats_t *stats);

/*  Frees everything *M owns. */
void spm_msg_close(spm_msg_t *m);

/*  A block frame to send: DATA with LEN bytes, freed by FREE_FN(DATA, HINT)
    once ZeroMQ is done with it (FREE_FN NULL: DATA is copied). */
typedef struct {
    void *data;
    size_t len;
    zmq_free_fn *free_fn;
    void *hint;
} spm_frame_t;

/*  Sends ENV (the version field is set here) preceded by the identity ID
    (ROUTER; NULL for DEALER) and followed by N block frames, whose
    ownership passes to ZeroMQ in all cases. Returns 0 or SPM_ESYS (peer
    unroutable or socket closed). */
int spm_wire_send(void *sock, const zmq_msg_t *id, Spm__Envelope *env, spm_frame_t *frames,
                  size_t n, spm_wire_stats_t *stats);

/*  zmq_free_fn that calls free(DATA). */
void spm_wire_free(void *data, void *hint);

/*  For an ipc:// ENDPOINT, waits until its socket file is there, at most
    TIMEOUT_MS; other transports return at once. A process that starts
    beside its center (an embedded VM) calls it before its first connect:
    a connect that finds no socket is tried again only after ZeroMQ's
    reconnect interval, 10 ms and doubling, so an attempt made a moment
    before the center was bound cost 10-30 ms. Returns 1 when the socket
    is there (or the transport is not ipc), 0 when the time ran out. */
int spm_wire_await_ipc(const char *endpoint, long timeout_ms);

#endif
