/*  =========================================================================
    session_int - a session's state and the calls its files share

    A session (vm/client/session.h) is one connection to a center and the
    requests in flight on it. Its files: session.c (opening, the requests
    with one answer, closing), options.c (the run options), stage.c (puts
    in flight), results.c (gets in flight and the blocks kept), flight.c
    (the loop that moves both on) and job.c (following a job to its end).
    Nothing outside vm/client/ includes this file.
    =========================================================================
*/
#ifndef SPM_SESSION_INT_H_INCLUDED
#define SPM_SESSION_INT_H_INCLUDED

#include "vm/client/session.h"

#include "datacache/blockclient.h"
#include "datacache/storeview.h"
#include "transport/security.h"
#include "transport/wire.h"
#include "vm/embedded/launch.h"

#define PUT_WINDOW 16 /* puts in flight (spm_session_put_async) */
#define GET_WINDOW 16 /* gets in flight (spm_session_get_each) */

enum { PUT_ASKED = 1, PUT_KEEPING, PUT_STORING };

/*  One put in flight. */
typedef struct {
    uint64_t req;        /* the PUT, then the STORE to the center */
    spm_sdb_t *id;       /* where its SDB id goes */
    const char *type;    /* for the error message */
    spm_blockbuf_t *buf; /* staged on nodes: its bytes (NULL: sent to the store) */
    uint32_t type_id;    /* ... and what the nodes check them against */
    uint64_t checksum;
    int state;            /* PUT_* */
    int store_ok;         /* the center's store may keep it (too few nodes) */
    uint32_t holders[16]; /* nodes that keep it */
    size_t nholders;
    struct spm_session *s;
} put_t;

/*  One get in flight. */
typedef struct {
    uint64_t req;
    size_t index; /* in the caller's list */
    spm_sdb_t id;
    int done;
    int bytes; /* ask for the bytes, not where the store holds them */
    struct spm_session *s;
} get_t;

/*  A view of an ipc:// center's store, read in place (datacache/storeview.h),
    and a snapshot of it: counted, since blocks kept past a get_each
    (spm_session_keep) hold the snapshot, and a snapshot the view. */
typedef struct {
    spm_store_view_t *view;
    int refs;
} storeref_t;

typedef struct {
    spm_store_snap_t *snap;
    storeref_t *store;
    int refs;
} snapref_t;

typedef int (*got_fn)(void *arg, size_t index, const void *data, size_t len);

struct spm_session {
    spm_run_opts_t o;
    void *ctx, *dealer;
    void *monitor;            /* the dealer's handshakes: a refused key is told at once */
    spm_embedded_t *vm;       /* the embedded VM this session started, else NULL */
    char *endpoint;           /* the center's endpoint */
    spm_security_t *security; /* CurveZMQ keys for a tcp:// center */
    uint64_t next_req;
    spm_blockclient_t *bc; /* blocks to and from nodes, when staging on them */
    int stage_to_nodes;    /* the center wants blocks put on nodes (WELCOME) */
    put_t *puts[PUT_WINDOW];
    size_t nputs;
    int put_rc; /* the first failed put's code */
    get_t *gets[GET_WINDOW];
    size_t ngets;
    int get_rc; /* the first failed get's code */
    got_fn got; /* where fetched blocks go */
    void *got_arg;
    zmq_msg_t *arriving;      /* the block got() is given (spm_session_keep) */
    snapref_t *arriving_snap; /* or the snapshot it lies in, at arriving_data */
    const void *arriving_data;
    char *store_dir; /* an ipc:// center's store (WELCOME), read in place */
    uint8_t store_id[16];
    int store_tried;     /* a view of it was tried */
    storeref_t *store;   /* the view (NULL: blocks come as bytes) */
    snapref_t *snap;     /* get_each's snapshot of it (NULL: none) */
    uint64_t last_heard; /* when the center last answered a put or get */
    uint64_t last_ping;  /* when it was last asked whether it is there */
    int silent;          /* the center did not answer in time: nothing more is asked */
    int text_result;     /* the last job followed to its end set a text result (a plugin's) */
    int closing;         /* interrupted, and closing: the last requests still wait for answers */
    /* A remote VM's blocks this session put and jobs it ran, discarded at close. */
    spm_sdb_t *mine;
    size_t nmine, capmine;
    uint64_t *jobs;
    size_t njobs, capjobs;
};

/* ------------------------------------------------------------ session.c */

/*  Sends ENV (with its N frames F) to the center. Returns 0 or SPM_EUNREACH. */
int spm_client_send(spm_session_t *s, Spm__Envelope *env, spm_frame_t *f, size_t n);

/*  0, or SPM_EDEAD when the embedded VM's center or agent exited. */
int spm_client_alive(spm_session_t *s);

/*  Whether S runs on an embedded VM whose center has not been seen to exit. */
int spm_client_embedded(const spm_session_t *s);

/*  Says HELLO and waits for the WELCOME. Returns 0 or an SPM_E* code. */
int spm_client_hello(spm_session_t *s);

/*  How long S bears a center that stopped answering a request it may ask
    again, or while it follows a job, in microseconds (0: as long as it
    takes): --timeout, or --wait-center when that is longer. */
uint64_t spm_client_patience_us(const spm_session_t *s);

/*  Sends ENV and waits for the answer WANT, asking again after a restart
    (and, when AGAIN, after each silent second, for as long as
    spm_client_patience_us says). Returns 1 with *M set, or
    an SPM_E* code. */
int spm_client_ask(spm_session_t *s, Spm__Envelope *env, int want, int again, spm_msg_t *m);

/* -------------------------------------------------------------- stage.c */

/*  Forgets put P (and frees it). */
void spm_client_put_done(spm_session_t *s, put_t *p);

/*  Put P failed with CODE: the session's first failure is kept (WHY in
    its detail), and P is forgotten. */
void spm_client_put_failed(spm_session_t *s, put_t *p, int code, const char *why);

/*  The center's answers to a PUT and to a STORE. */
void spm_client_on_put_reply(spm_session_t *s, Spm__PutReply *r);
void spm_client_on_store_reply(spm_session_t *s, Spm__StoreReply *r);

/* ------------------------------------------------------------ results.c */

/*  Drops one reference to a view of the store, or to a snapshot of it
    (NULL is a no-op); the last one closes or ends it. */
void spm_client_store_unref(storeref_t *r);
void spm_client_snap_unref(snapref_t *r);

/*  Forgets get G (and frees it). */
void spm_client_get_done(spm_session_t *s, get_t *g);

/*  Asks the center for G's block. Returns 0 or SPM_EUNREACH. */
int spm_client_send_get(spm_session_t *s, const get_t *g);

/*  The center's answer to a GET. */
void spm_client_on_get_reply(spm_session_t *s, spm_msg_t *m);

/* ------------------------------------------------------------- flight.c */

/*  Moves the puts and gets in flight on, for up to 100 ms. Returns 0 or
    the failure that ends them all. */
int spm_client_progress(spm_session_t *s);

/*  Forgets every put and get in flight. */
void spm_client_abandon(spm_session_t *s);

#endif
