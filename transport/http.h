/*  =========================================================================
    http - a process's HTTP port: fixed pages, published texts, handlers

    @discuss
    `spm center --http ADDR:PORT` and `spm agent --http ADDR:PORT` start a
    server thread (libmicrohttpd, its own polling thread) that answers from
    what its process hands over; the process's loop never waits on HTTP.
    Three kinds of path:

    - pages: fixed bytes that live as long as the server (the dashboard);
    - published texts: a set of (path, type, text) the loop builds and hands
      over with spm_http_publish, typically once per tick. Publishing only
      tries the lock the server thread holds while it copies a text into a
      response; a busy lock keeps the old set for one more tick;
    - handlers: a function called on the server thread for every path under
      a prefix (a job's page, say). It must not touch what the loop owns;
      it may read what is safe to read from another thread (an LMDB read
      transaction, a published copy).

    A slow or hostile HTTP client costs the server thread a connection slot
    (at most 32 per address and 512 in all, each closed after 5 s of
    silence), never the process a turn. Methods other than GET and HEAD
    are 405; an unknown path is 404. With a token every request needs
    `Authorization: Bearer TOKEN` or `?token=TOKEN`, else 401.
    @end
    =========================================================================
*/
#ifndef SPM_HTTP_H_INCLUDED
#define SPM_HTTP_H_INCLUDED

#include <stddef.h>

typedef struct spm_http spm_http_t;
typedef struct spm_http_snapshot spm_http_snapshot_t;

/*  Content types the spm processes serve. */
#define SPM_HTTP_JSON "application/json"
#define SPM_HTTP_HTML "text/html; charset=utf-8"
#define SPM_HTTP_TEXT "text/plain; charset=utf-8"
#define SPM_HTTP_PROMETHEUS "text/plain; version=0.0.4; charset=utf-8"

/*  A handler's answer: CODE (200, 404, ...), TYPE (a constant string) and
    BODY (malloc'd; the server frees it), LEN bytes. */
typedef struct {
    unsigned code;
    const char *type;
    char *body;
    size_t len;
} spm_http_answer_t;

/*  Called on the server thread for a GET of a path that starts with the
    handler's prefix: PATH is the whole path; spm_http_query(CONN, NAME)
    reads a query argument. Fills *OUT and returns 0; returning nonzero
    answers 404. */
typedef int(spm_http_handler_fn)(void *arg, const char *path, void *conn, spm_http_answer_t *out);

/*  Starts serving on ADDR: "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT"
    (HOST defaults to 127.0.0.1). TOKEN (NULL or "": none) is the bearer
    token every request must carry; SETTING names where the operator set
    it ("center.http_token"), for the 401's text. Returns the server, or
    NULL with *RC set: SPM_EINVAL (a bad address; detail says why),
    SPM_EADDRINUSE (the port is taken), SPM_ESYS, SPM_ENOMEM. */
spm_http_t *spm_http_start(const char *addr, const char *token, const char *setting, int *rc);

/*  Stops the thread, closes every connection, frees what it serves and
    sets *SELF to NULL. Does nothing when *SELF is NULL. */
void spm_http_destroy(spm_http_t **self_p);

/*  Serves LEN bytes at BODY (not copied: they must outlive the server)
    as TYPE at PATH. Returns 0 or SPM_ENOMEM. */
int spm_http_page(spm_http_t *self, const char *path, const char *type, const char *body,
                  size_t len);

/*  Calls FN(ARG, ...) for every path that starts with PREFIX (and is not
    a page or a published text). Returns 0 or SPM_ENOMEM. */
int spm_http_handle(spm_http_t *self, const char *prefix, spm_http_handler_fn *fn, void *arg);

/*  The value of the query argument NAME of the request CONN a handler was
    given, or NULL. */
const char *spm_http_query(void *conn, const char *name);

/*  A new, empty set of texts to publish, or NULL (out of memory). */
spm_http_snapshot_t *spm_http_snapshot_new(void);

/*  Adds TEXT (malloc'd, NUL-terminated; the set owns it from here, also on
    failure; NULL: the path answers 503 "not ready") as TYPE at PATH.
    Returns 0 or SPM_ENOMEM. */
int spm_http_snapshot_add(spm_http_snapshot_t *snap, const char *path, const char *type,
                          char *text);

/*  Frees a set that was not published and sets *SELF_P to NULL. */
void spm_http_snapshot_destroy(spm_http_snapshot_t **self_p);

/*  Hands *SNAP_P to the server in place of the set before (the server owns
    it from here, also when it is dropped) and sets *SNAP_P to NULL. Never
    waits: returns 0 when published, 1 when the server thread was
    answering a request at that moment (the set is then freed and the
    previous one stays). */
int spm_http_publish(spm_http_t *self, spm_http_snapshot_t **snap_p);

/*  The port the server listens on (useful with port 0). */
int spm_http_port(const spm_http_t *self);

#endif
