/*  =========================================================================
    http - the center's HTTP port: the dashboard, /api/status, /metrics

    The center's loop must never wait on a browser or a scraper, so the
    server lives in libmicrohttpd's own polling thread and sees the VM only
    through the snapshot the loop publishes (vm/center/http.h). The listening
    socket is bound here, not by libmicrohttpd, so that a used port or a
    bad address is refused at start in one line that says which.
    libmicrohttpd is opened when the server starts, not linked: loading it
    and the TLS libraries it needs took 1.3 ms of the start of every spm
    process, and only a center with --http uses it.
    =========================================================================
*/
#include "vm/center/http.h"
#include "vm/center/dashboard.h"
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
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNECTIONS 256 /* open HTTP connections at most */

/*  libmicrohttpd's path, from the build; the soname is tried after it. */
#ifndef SPM_MICROHTTPD
#define SPM_MICROHTTPD "libmicrohttpd.so.12"
#endif
#define IDLE_TIMEOUT_S 10 /* a connection silent this long is closed */

struct spm_http {
    struct MHD_Daemon *daemon; /* libmicrohttpd's server and thread */
    int fd;                    /* the listening socket (closed by us) */
    int port;                  /* the port bound */
    char *token;               /* bearer token, or NULL */
    pthread_mutex_t lock;      /* guards snap; the loop only tries it */
    spm_http_snapshot_t snap;  /* the texts served */
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

static void snapshot_free(spm_http_snapshot_t *s)
{
    free(s->status);
    free(s->metrics);
    free(s->history);
    memset(s, 0, sizeof *s);
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

/*  Answers from the snapshot, under the lock (the copy is a memcpy). */
static enum MHD_Result reply_snapshot(spm_http_t *self, struct MHD_Connection *conn,
                                      const char *type, size_t field)
{
    pthread_mutex_lock(&self->lock);
    const char *text = *(char **)((char *)&self->snap + field);
    enum MHD_Result ret = text ? reply(conn, MHD_HTTP_OK, type, text, strlen(text))
                               : reply(conn, 503, "text/plain", "not ready\n", 10);
    pthread_mutex_unlock(&self->lock);
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
    static const char text_type[] = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, text_type, "GET only\n", 9);
    if (!authorized(self, conn))
        return reply(conn, MHD_HTTP_UNAUTHORIZED, text_type,
                     "a bearer token is needed (center.http_token)\n", 45);
    if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0) {
        size_t len;
        const char *page = spm_dashboard_page(&len);
        return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", page, len);
    }
    if (strcmp(url, "/api/status") == 0)
        return reply_snapshot(self, conn, "application/json",
                              offsetof(spm_http_snapshot_t, status));
    if (strcmp(url, "/api/history") == 0)
        return reply_snapshot(self, conn, "application/json",
                              offsetof(spm_http_snapshot_t, history));
    if (strcmp(url, "/metrics") == 0)
        return reply_snapshot(self, conn, "text/plain; version=0.0.4; charset=utf-8",
                              offsetof(spm_http_snapshot_t, metrics));
    return reply(conn, MHD_HTTP_NOT_FOUND, text_type, "not found\n", 10);
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

spm_http_t *spm_http_start(const char *addr, const char *token, int *rc)
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
    if (token && *token && !(self->token = strdup(token))) {
        *rc = SPM_ENOMEM;
        goto err;
    }
    if ((self->fd = listen_on(addr, &self->port)) < 0) {
        *rc = self->fd;
        goto err;
    }
    self->daemon = mhd.start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                    on_request, self, MHD_OPTION_LISTEN_SOCKET, self->fd,
                                    MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
                                    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
                                    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_END);
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

void spm_http_destroy(spm_http_t **selfp)
{
    spm_http_t *self = *selfp;
    if (!self)
        return;
    if (self->daemon)
        mhd.stop_daemon(self->daemon);
    if (self->fd >= 0)
        close(self->fd);
    snapshot_free(&self->snap);
    pthread_mutex_destroy(&self->lock);
    free(self->token);
    free(self);
    *selfp = NULL;
}

int spm_http_publish(spm_http_t *self, spm_http_snapshot_t *snap)
{
    assert(self);
    if (pthread_mutex_trylock(&self->lock) != 0) {
        snapshot_free(snap);
        return 1;
    }
    spm_http_snapshot_t old = self->snap;
    self->snap = *snap;
    pthread_mutex_unlock(&self->lock);
    snapshot_free(&old);
    memset(snap, 0, sizeof *snap);
    return 0;
}

int spm_http_port(const spm_http_t *self)
{
    assert(self);
    return self->port;
}
