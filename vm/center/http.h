/*  =========================================================================
    http - the center's HTTP port: the dashboard, /api/status, /metrics

    @discuss
    `spm center --http ADDR:PORT` (center.http) starts a server thread
    (libmicrohttpd, its own polling thread) that answers from a snapshot:
    texts the center's loop builds and hands over with spm_http_publish,
    once per tick. The loop never waits on HTTP: publishing only tries the
    lock that the server thread holds while it copies a text into a
    response, and a busy lock keeps the old snapshot for one more tick. A
    slow or hostile HTTP client therefore costs the server thread a
    connection slot (at most 256, each closed after 10 s of silence), never
    the center a turn.

    Paths: `/` (the dashboard page, vm/center/dashboard.c), `/api/status` (what
    `spm status --json` prints), `/api/history` (the utilisation curve and
    totals, vm/center/metrics.c), `/metrics` (Prometheus text format). Anything
    else is 404; methods other than GET and HEAD are 405. Whoever reaches
    the port sees the VM's state; with a token (center.http_token) every
    request needs `Authorization: Bearer TOKEN` or `?token=TOKEN`, else 401.
    @end
    =========================================================================
*/
#ifndef SPM_HTTP_H_INCLUDED
#define SPM_HTTP_H_INCLUDED

#include <stddef.h>

typedef struct spm_http spm_http_t;

/*  What the server answers with, all NUL-terminated and malloc'd. */
typedef struct {
    char *status;  /* /api/status: JSON */
    char *metrics; /* /metrics: Prometheus text */
    char *history; /* /api/history: JSON */
} spm_http_snapshot_t;

/*  Starts serving on ADDR: "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT"
    (HOST defaults to 127.0.0.1). TOKEN (NULL or "": none) is the bearer
    token every request must carry. Returns the server, or NULL with *RC
    set: SPM_EINVAL (a bad address; detail says why), SPM_EADDRINUSE (the
    port is taken), SPM_ESYS, SPM_ENOMEM. */
spm_http_t *spm_http_start(const char *addr, const char *token, int *rc);

/*  Stops the thread, closes every connection, frees the snapshot and
    sets *SELF to NULL. Does nothing when *SELF is NULL. */
void spm_http_destroy(spm_http_t **self);

/*  Hands SNAP's texts to the server (it owns them from here, also on
    failure). Never waits: returns 0 when published, 1 when the server
    thread was answering a request at that moment (SNAP is then freed and
    the previous snapshot stays). */
int spm_http_publish(spm_http_t *self, spm_http_snapshot_t *snap);

/*  The port the server listens on (useful with port 0). */
int spm_http_port(const spm_http_t *self);

#endif
