/*  =========================================================================
    http - a process's HTTP port: fixed pages, published texts, handlers

    A process's loop must never wait on a browser or a scraper, so the
    server lives in libmicrohttpd's own polling thread and sees the process
    only through what it was handed (transport/http.h). The listening
    socket is bound here, not by libmicrohttpd, so that a used port or a
    bad address is refused at start in one line that says which.
    libmicrohttpd is opened when the server starts, not linked: loading it
    and the TLS libraries it needs took 1.3 ms of the start of every spm
    process, and only a process with --http uses it.
    =========================================================================
*/
#include "transport/http.h"
#include "base/log.h"
#include "spm/spm.h"

#include <arpa/inet.h>
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/*  Slots for HTTP connections. Whoever reaches the port can open
    connections and say nothing, and every slot they hold is one the token
    holder lacks: an address gets at most PER_ADDRESS_CONNECTIONS (a
    browser opens six, Prometheus one; those past it are closed at once),
    all together at most MAX_CONNECTIONS, and a connection silent for
    IDLE_TIMEOUT_S is closed. 300 half-open connections from one address
    used to take every slot for 10 s at a time. */
#define MAX_CONNECTIONS 512
#define PER_ADDRESS_CONNECTIONS 32

/*  libmicrohttpd's path, from the build; the soname is tried after it. */
#ifndef SPM_MICROHTTPD
#define SPM_MICROHTTPD "libmicrohttpd.so.12"
#endif
#define IDLE_TIMEOUT_S 5 /* a connection silent this long is closed */

/*  One path served: a page (owned 0) or a published text (owned 1). */
typedef struct {
    char *path;
    const char *type;
    char *body;
    size_t len;
    int owned;
} entry_t;

struct spm_http_snapshot {
    entry_t *e;
    size_t n, cap;
};

typedef struct {
    char *prefix;
    spm_http_handler_fn *fn;
    void *arg;
} handler_t;

struct spm_http {
    struct MHD_Daemon *daemon;  /* libmicrohttpd's server and thread */
    int fd;                     /* the listening socket (closed by us) */
    int port;                   /* the port bound */
    char *token;                /* bearer token, or NULL */
    char *setting;              /* where the token is set, for the 401 */
    pthread_mutex_t lock;       /* guards what follows; the loop only tries it */
    spm_http_snapshot_t pages;  /* fixed pages */
    spm_http_snapshot_t *texts; /* the set published last, or NULL */
    handler_t *handlers;
    size_t nhandlers;
};

/*  The functions of libmicrohttpd this uses, opened once (mhd_open). */
static struct {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
} mhd;
static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;
static char mhd_error[256];

static void mhd_open(void)
{
    static const char *const name[] = {"MHD_start_daemon",
                                       "MHD_stop_daemon",
                                       "MHD_lookup_connection_value",
                                       "MHD_create_response_from_buffer",
                                       "MHD_add_response_header",
                                       "MHD_queue_response",
                                       "MHD_destroy_response"};
    void **fn[] = {(void **)&mhd.start_daemon,
                   (void **)&mhd.stop_daemon,
                   (void **)&mhd.lookup_connection_value,
                   (void **)&mhd.create_response_from_buffer,
                   (void **)&mhd.add_response_header,
                   (void **)&mhd.queue_response,
                   (void **)&mhd.destroy_response};
    void *h = dlopen(SPM_MICROHTTPD, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; h && i < sizeof fn / sizeof *fn; i++)
        if (!(*fn[i] = dlsym(h, name[i])))
            h = NULL;
    if (!h) {
        const char *why = dlerror();
        snprintf(mhd_error, sizeof mhd_error, "%s", why ? why : "a function is missing");
        mhd.start_daemon = NULL;
    }
}

static void entries_free(spm_http_snapshot_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->e[i].path);
        if (s->e[i].owned)
            free(s->e[i].body);
    }
    free(s->e);
    memset(s, 0, sizeof *s);
}

/*  Appends an entry; on failure frees BODY when OWNED. */
static int entries_add(spm_http_snapshot_t *s, const char *path, const char *type, char *body,
                       size_t len, int owned)
{
    char *p = strdup(path);
    if (p && s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        entry_t *e = realloc(s->e, cap * sizeof *e);
        if (e) {
            s->e = e;
            s->cap = cap;
        }
    }
    if (!p || s->n == s->cap) {
        free(p);
        if (owned)
            free(body);
        return SPM_ENOMEM;
    }
    s->e[s->n++] = (entry_t){p, type, body, len, owned};
    return 0;
}

static const entry_t *entries_find(const spm_http_snapshot_t *s, const char *path)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (strcmp(s->e[i].path, path) == 0)
            return &s->e[i];
    return NULL;
}

spm_http_snapshot_t *spm_http_snapshot_new(void)
{
    return calloc(1, sizeof(spm_http_snapshot_t));
}

int spm_http_snapshot_add(spm_http_snapshot_t *snap, const char *path, const char *type, char *text)
{
    return entries_add(snap, path, type, text, text ? strlen(text) : 0, 1);
}

void spm_http_snapshot_destroy(spm_http_snapshot_t **self_p)
{
    if (!*self_p)
        return;
    entries_free(*self_p);
    free(*self_p);
    *self_p = NULL;
}

/*  Splits ADDR into HOST (into a buffer of SIZE) and PORT. Returns 0 or
    SPM_EINVAL with the detail set. */
static int split_addr(const char *addr, char *host, size_t size, long *port)
{
    const char *colon = strrchr(addr, ':');
    const char *p = colon ? colon + 1 : addr;
    size_t hlen = colon ? (size_t)(colon - addr) : 0;
    if (hlen >= 2 && addr[0] == '[' && addr[hlen - 1] == ']') { /* [v6]:port */
        addr++;
        hlen -= 2;
    }
    char *end;
    errno = 0;
    *port = strtol(p, &end, 10);
    if (!*p || *end || errno || *port < 0 || *port > 65535 || hlen >= size)
        return spm_error(SPM_EINVAL, "--http %s: expected ADDR:PORT (a port from 0 to 65535)",
                         addr);
    memcpy(host, addr, hlen);
    host[hlen] = '\0';
    if (!hlen)
        snprintf(host, size, "127.0.0.1");
    return 0;
}

/*  Binds and listens on ADDR; returns the socket or a negative SPM_E*. */
static int listen_on(const char *addr, int *port_out)
{
    char host[256], service[16];
    long port;
    int rc = split_addr(addr, host, sizeof host, &port);
    if (rc != 0)
        return rc;
    snprintf(service, sizeof service, "%ld", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int gai = getaddrinfo(host, service, &hints, &ai);
    if (gai != 0)
        return spm_error(SPM_EINVAL, "--http %s: %s", addr, gai_strerror(gai));
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        int err = errno;
        freeaddrinfo(ai);
        if (fd >= 0)
            close(fd);
        return spm_error(err == EADDRINUSE ? SPM_EADDRINUSE : SPM_EINVAL, "--http %s: %s", addr,
                         err == EADDRINUSE ? "address already in use" : strerror(err));
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/*  Compares without an early exit, so the time taken says nothing of
    where a guess went wrong. */
static int same_secret(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned char diff = na != nb;
    for (size_t i = 0; i < na; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
    return diff == 0;
}

static int authorized(spm_http_t *self, struct MHD_Connection *conn)
{
    if (!self->token)
        return 1;
    const char *h = mhd.lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (h && strncmp(h, "Bearer ", 7) == 0 && same_secret(h + 7, self->token))
        return 1;
    const char *q = mhd.lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
    return q && same_secret(q, self->token);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *type,
                             const char *body, size_t len)
{
    struct MHD_Response *r =
        mhd.create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    mhd.add_response_header(r, "Content-Type", type);
    mhd.add_response_header(r, "Cache-Control", "no-store");
    if (code == MHD_HTTP_UNAUTHORIZED)
        mhd.add_response_header(r, "WWW-Authenticate", "Bearer realm=\"spm\"");
    enum MHD_Result ret = mhd.queue_response(conn, code, r);
    mhd.destroy_response(r);
    return ret;
}

const char *spm_http_query(void *conn, const char *name)
{
    return mhd.lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
}

/*  Answers from a page or the published texts, under the lock (the copy
    is a memcpy); returns -1 when PATH is neither. */
static int reply_entry(spm_http_t *self, struct MHD_Connection *conn, const char *path)
{
    pthread_mutex_lock(&self->lock);
    const entry_t *e = entries_find(&self->pages, path);
    if (!e)
        e = entries_find(self->texts, path);
    int ret = -1;
    if (e && e->body)
        ret = reply(conn, MHD_HTTP_OK, e->type, e->body, e->len);
    else if (e)
        ret = reply(conn, 503, SPM_HTTP_TEXT, "not ready\n", 10);
    pthread_mutex_unlock(&self->lock);
    return ret;
}

/*  Answers from the first handler whose prefix PATH starts with, or 404.
    The handler runs outside the lock: it may take its time. */
static enum MHD_Result reply_handler(spm_http_t *self, struct MHD_Connection *conn,
                                     const char *path)
{
    const handler_t *h = NULL;
    pthread_mutex_lock(&self->lock);
    for (size_t i = 0; !h && i < self->nhandlers; i++)
        if (strncmp(path, self->handlers[i].prefix, strlen(self->handlers[i].prefix)) == 0)
            h = &self->handlers[i];
    spm_http_handler_fn *fn = h ? h->fn : NULL;
    void *arg = h ? h->arg : NULL;
    pthread_mutex_unlock(&self->lock);
    spm_http_answer_t a = {0};
    if (!fn || fn(arg, path, conn, &a) != 0 || !a.type) {
        free(a.body);
        return reply(conn, MHD_HTTP_NOT_FOUND, SPM_HTTP_TEXT, "not found\n", 10);
    }
    enum MHD_Result ret = reply(conn, a.code ? a.code : MHD_HTTP_OK, a.type, a.body ? a.body : "",
                                a.body ? a.len : 0);
    free(a.body);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **req)
{
    (void)version;
    (void)upload_data;
    (void)req;
    spm_http_t *self = cls;
    if (*upload_size) { /* a body we do not want: drop it */
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, SPM_HTTP_TEXT, "GET only\n", 9);
    if (!authorized(self, conn)) {
        char why[160];
        int n = snprintf(why, sizeof why, "a bearer token is needed (%s)\n", self->setting);
        return reply(conn, MHD_HTTP_UNAUTHORIZED, SPM_HTTP_TEXT, why,
                     n < (int)sizeof why ? (size_t)n : sizeof why - 1);
    }
    int ret = reply_entry(self, conn, url);
    return ret >= 0 ? (enum MHD_Result)ret : reply_handler(self, conn, url);
}

/*  libmicrohttpd's own complaints go to our log, once per line. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[256];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    spm_log_debug("http: %s", line);
}

spm_http_t *spm_http_start(const char *addr, const char *token, const char *setting, int *rc)
{
    spm_http_t *self = calloc(1, sizeof *self);
    if (!self) {
        *rc = SPM_ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&self->lock, NULL);
    self->fd = -1;
    pthread_once(&mhd_once, mhd_open);
    if (!mhd.start_daemon) {
        *rc = spm_error(SPM_ESYS, "--http %s: libmicrohttpd cannot be loaded: %s", addr, mhd_error);
        goto err;
    }
    if ((token && *token && !(self->token = strdup(token))) ||
        !(self->setting = strdup(setting ? setting : "http_token"))) {
        *rc = SPM_ENOMEM;
        goto err;
    }
    /* Room for the HTTP connections beside the center's own descriptors
       (its peers' sockets, the store): the soft limit is often 1024. */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 4096 &&
        nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max < 4096 ? nofile.rlim_max : 4096;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    if ((self->fd = listen_on(addr, &self->port)) < 0) {
        *rc = self->fd;
        goto err;
    }
    self->daemon = mhd.start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, self,
        MHD_OPTION_LISTEN_SOCKET, self->fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)PER_ADDRESS_CONNECTIONS, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_END);
    if (!self->daemon) {
        *rc = spm_error(SPM_ESYS, "--http %s: the HTTP server did not start", addr);
        goto err;
    }
    self->fd = -1; /* the daemon's now: it closes it when it stops */
    return self;
err:
    spm_http_destroy(&self);
    return NULL;
}

void spm_http_destroy(spm_http_t **self_p)
{
    spm_http_t *self = *self_p;
    if (!self)
        return;
    if (self->daemon)
        mhd.stop_daemon(self->daemon);
    if (self->fd >= 0)
        close(self->fd);
    entries_free(&self->pages);
    spm_http_snapshot_destroy(&self->texts);
    for (size_t i = 0; i < self->nhandlers; i++)
        free(self->handlers[i].prefix);
    free(self->handlers);
    pthread_mutex_destroy(&self->lock);
    free(self->token);
    free(self->setting);
    free(self);
    *self_p = NULL;
}

int spm_http_page(spm_http_t *self, const char *path, const char *type, const char *body,
                  size_t len)
{
    assert(self);
    pthread_mutex_lock(&self->lock);
    int rc = entries_add(&self->pages, path, type, (char *)body, len, 0);
    pthread_mutex_unlock(&self->lock);
    return rc;
}

int spm_http_handle(spm_http_t *self, const char *prefix, spm_http_handler_fn *fn, void *arg)
{
    assert(self && fn);
    char *p = strdup(prefix);
    pthread_mutex_lock(&self->lock);
    handler_t *h = p ? realloc(self->handlers, (self->nhandlers + 1) * sizeof *h) : NULL;
    if (h) {
        self->handlers = h;
        h[self->nhandlers++] = (handler_t){p, fn, arg};
    }
    pthread_mutex_unlock(&self->lock);
    if (!h)
        free(p);
    return h ? 0 : SPM_ENOMEM;
}

int spm_http_publish(spm_http_t *self, spm_http_snapshot_t **snap_p)
{
    assert(self);
    if (pthread_mutex_trylock(&self->lock) != 0) {
        spm_http_snapshot_destroy(snap_p);
        return 1;
    }
    spm_http_snapshot_t *old = self->texts;
    self->texts = *snap_p;
    *snap_p = NULL;
    pthread_mutex_unlock(&self->lock);
    spm_http_snapshot_destroy(&old);
    return 0;
}

int spm_http_port(const spm_http_t *self)
{
    assert(self);
    return self->port;
}
