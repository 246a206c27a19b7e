/*  =========================================================================
    security - CurveZMQ on every TCP endpoint, keys, and the allow-list
    =========================================================================
*/
#include "transport/security.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/log.h"
#include "spm/spm.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

#define Z85_KEY 40 /* characters of a Z85-encoded CurveZMQ key */

struct spm_security {
    char *dir;                               /* key directory */
    char role[16];                           /* "center", "agent", "client" */
    int insecure;                            /* plain TCP allowed */
    int loaded;                              /* keys read (or found missing) */
    int have_keys;                           /* own key pair present */
    char pub[Z85_KEY + 1], sec[Z85_KEY + 1]; /* own key pair */
    char server[Z85_KEY + 1];                /* center.pub (agents, clients) */
    char (*allowed)[Z85_KEY + 1];            /* authorized/NAME.pub */
    size_t nallowed;
    void *zap;        /* ZAP handler REP socket, or NULL */
    uint64_t refused; /* connections refused */
    int handshakes;   /* handshakes that succeeded (monitor) */
    int cut;          /* handshakes cut short since the last success */
};

spm_security_t *spm_security_new(const char *dir, const char *role, int insecure)
{
    spm_security_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->dir = strdup(dir ? dir : spm_config_str("security", "keys"));
    snprintf(self->role, sizeof self->role, "%s", role);
    self->insecure = insecure || spm_config_bool("security", "insecure");
    if (!self->dir) {
        free(self);
        return NULL;
    }
    return self;
}

void spm_security_destroy(spm_security_t **self_p)
{
    spm_security_t *self = *self_p;
    if (!self)
        return;
    if (self->zap)
        zmq_close(self->zap);
    free(self->allowed);
    free(self->dir);
    free(self);
    *self_p = NULL;
}

/*  Reads "KEY = VALUE" lines of PATH; copies the Z85 value of NAME into OUT.
    Returns 0 or SPM_ENOTFOUND / SPM_EFORMAT. */
static int read_key(const char *path, const char *name, char *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return SPM_ENOTFOUND;
    char line[256];
    int rc = SPM_EFORMAT;
    while (fgets(line, sizeof line, f)) {
        char key[64], value[128];
        if (sscanf(line, " %63[a-z-] = %127s", key, value) == 2 && strcmp(key, name) == 0 &&
            strlen(value) == Z85_KEY) {
            memcpy(out, value, Z85_KEY + 1);
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

/*  Appends the public keys of the NAME.pub files in directory PATH to
 *KEYS (*N of them). A missing directory adds none. */
static void read_keys(const char *path, char (**keys)[Z85_KEY + 1], size_t *n)
{
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".pub") != 0)
            continue;
        char file[1200];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        char key[Z85_KEY + 1];
        if (read_key(file, "public-key", key) != 0)
            continue;
        void *v = realloc(*keys, (*n + 1) * sizeof **keys);
        if (!v)
            break;
        *keys = v;
        memcpy((*keys)[(*n)++], key, Z85_KEY + 1);
    }
    if (d)
        closedir(d);
}

static void load(spm_security_t *self)
{
    if (self->loaded)
        return;
    self->loaded = 1;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.key", self->dir, self->role);
    self->have_keys = read_key(path, "public-key", self->pub) == 0 &&
                      read_key(path, "secret-key", self->sec) == 0;
    snprintf(path, sizeof path, "%s/center.pub", self->dir);
    read_key(path, "public-key", self->server);
    snprintf(path, sizeof path, "%s/authorized", self->dir);
    read_keys(path, &self->allowed, &self->nallowed);
}

int spm_security_listed(spm_security_t *self, const char *sub, const char *key)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/authorized/%s", self->dir, sub);
    char(*keys)[Z85_KEY + 1] = NULL;
    size_t n = 0;
    read_keys(path, &keys, &n);
    int found = 0;
    for (size_t i = 0; i < n && !found; i++)
        found = key && *key && strcmp(keys[i], key) == 0;
    free(keys);
    return found;
}

static int is_tcp(const char *endpoint)
{
    return strncmp(endpoint, "tcp://", 6) == 0;
}

int spm_security_on(const spm_security_t *self)
{
    return !self->insecure;
}

/*  Whether a tcp:// ENDPOINT may go on: with keys (secure) or insecure
    (with a warning). Returns 1 to secure, 0 for plain, SPM_EDENIED. */
static int tcp_mode(spm_security_t *self, const char *endpoint)
{
    if (!is_tcp(endpoint))
        return 0;
    if (self->insecure) {
        spm_log_warn("%s: plain TCP (--insecure): anyone who reaches it gets in", endpoint);
        return 0;
    }
    load(self);
    if (!self->have_keys)
        return spm_error(SPM_EDENIED,
                         "%s: no key pair %s/%s.key for this TCP endpoint (create one with "
                         "'spm keygen --keys %s --name %s', or pass --insecure)",
                         endpoint, self->dir, self->role, self->dir, self->role);
    return 1;
}

int spm_security_bind(spm_security_t *self, void *ctx, void *sock, const char *endpoint)
{
    int mode = tcp_mode(self, endpoint);
    if (mode < 0)
        return mode;
    if (mode == 1) {
        if (!self->zap) {
            self->zap = zmq_socket(ctx, ZMQ_REP);
            int linger = 0;
            zmq_setsockopt(self->zap, ZMQ_LINGER, &linger, sizeof linger);
            if (!self->zap || zmq_bind(self->zap, "inproc://zeromq.zap.01") != 0)
                return spm_error(SPM_ESYS, "cannot start the ZAP handler: %s",
                                 zmq_strerror(zmq_errno()));
        }
        int one = 1;
        zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one);
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, self->sec, Z85_KEY + 1);
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "spm", 3);
    }
    if (zmq_bind(sock, endpoint) != 0) {
        int err = zmq_errno();
        return spm_error(err == EADDRINUSE ? SPM_EADDRINUSE : SPM_EINVAL, "%s: %s", endpoint,
                         err == EADDRINUSE ? "address already in use (is another center running?)"
                                           : zmq_strerror(err));
    }
    return 0;
}

int spm_security_connect(spm_security_t *self, void *sock, const char *endpoint,
                         const char *server_key)
{
    int mode = tcp_mode(self, endpoint);
    if (mode < 0)
        return mode;
    if (mode == 1) {
        const char *server = server_key && *server_key ? server_key : self->server;
        if (strlen(server) != Z85_KEY)
            return spm_error(SPM_EDENIED, "%s: no server key (%s/center.pub is missing)", endpoint,
                             self->dir);
        zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, server, Z85_KEY + 1);
        zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, self->pub, Z85_KEY + 1);
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, self->sec, Z85_KEY + 1);
    }
    if (zmq_connect(sock, endpoint) != 0)
        return spm_error(SPM_EUNREACH, "%s: %s", endpoint, zmq_strerror(zmq_errno()));
    return 0;
}

void *spm_security_monitor(void *ctx, void *sock, int events)
{
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://spm-monitor-%p", sock);
    if (zmq_socket_monitor(sock, ep, events | SPM_SECURITY_EVENTS) != 0)
        return NULL;
    void *m = zmq_socket(ctx, ZMQ_PAIR);
    if (m && zmq_connect(m, ep) != 0) {
        zmq_close(m);
        m = NULL;
    }
    return m;
}

/*  The one line for a handshake that EVENT (with VALUE) ended, or 0. */
static int handshake_failed(spm_security_t *self, const char *endpoint, uint16_t event,
                            uint32_t value)
{
    const char *d = self->dir, *r = self->role;
    if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        self->handshakes++;
        self->cut = 0;
        return 0;
    }
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        return spm_error(SPM_EDENIED,
                         "%s refused the key %s/%s.key (status %u): the center lets in only the "
                         "keys in authorized/ of its key directory (security.keys on its host); "
                         "copy %s/%s.pub there",
                         endpoint, d, r, value, d, r);
    int failed =
        event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ||
        (event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && !self->handshakes && ++self->cut >= 2);
    if (!failed)
        return 0;
    if (self->insecure) /* the center closes a plain connection as it sees it */
        return spm_error(SPM_EDENIED,
                         "%s wants CurveZMQ keys and this %s connects without (--insecure): "
                         "make a key pair with 'spm keygen --name %s' and have the center's "
                         "authorized/ hold its .pub",
                         endpoint, r, r);
    if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
        return spm_error(SPM_EDENIED,
                         "%s does not use CurveZMQ (its center runs with --insecure): connect "
                         "with --insecure too, or give that center keys",
                         endpoint);
    return spm_error(SPM_EDENIED,
                     "%s ended the CurveZMQ handshake: %s/center.pub (used with %s/%s.key) "
                     "is not that center's key; copy center.pub from the center's host",
                     endpoint, d, d, r);
}

int spm_security_monitor_read(spm_security_t *self, void *monitor, const char *endpoint)
{
    int rc = 0;
    zmq_msg_t ev, addr;
    zmq_msg_init(&ev);
    zmq_msg_init(&addr);
    while (zmq_msg_recv(&ev, monitor, ZMQ_DONTWAIT) >= 0) {
        if (zmq_msg_more(&ev))
            zmq_msg_recv(&addr, monitor, 0); /* the peer's address */
        if (zmq_msg_size(&ev) < 6 || rc != 0)
            continue;
        const uint8_t *p = zmq_msg_data(&ev);
        uint16_t event;
        uint32_t value;
        memcpy(&event, p, 2);
        memcpy(&value, p + 2, 4);
        rc = handshake_failed(self, endpoint, event, value);
    }
    zmq_msg_close(&ev);
    zmq_msg_close(&addr);
    return rc;
}

int spm_security_key_name(spm_security_t *self, const char *key, char *name, size_t size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/authorized", self->dir);
    DIR *d = key && *key ? opendir(path) : NULL;
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".pub") != 0)
            continue;
        char file[1200], k[Z85_KEY + 1];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        if (read_key(file, "public-key", k) == 0 && strcmp(k, key) == 0) {
            snprintf(name, size, "%.*s", (int)(len - 4), e->d_name);
            found = 1;
        }
    }
    if (d)
        closedir(d);
    return found;
}

const char *spm_security_public(spm_security_t *self)
{
    load(self);
    return !self->insecure && self->have_keys ? self->pub : "";
}

void *spm_security_zap(spm_security_t *self)
{
    return self->zap;
}

uint64_t spm_security_refused(const spm_security_t *self)
{
    return self->refused;
}

static void zap_send(void *sock, const char *s, int more)
{
    zmq_send(sock, s, strlen(s), more ? ZMQ_SNDMORE : 0);
}

/*  " (NAME.pub)" when a file NAME.pub of the key directory DIR holds
    KEY, so that a refusal names whose key it was (an operator who made a
    key with `spm keygen` but did not authorize it); "" otherwise. Uses
    BUF (SIZE bytes). */
static const char *key_name(const char *dir, const char *key, char *buf, size_t size)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    *buf = '\0';
    while (d && !*buf && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        char file[1200], found[Z85_KEY + 1];
        if (len < 5 || strcmp(e->d_name + len - 4, ".pub") != 0)
            continue;
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        if (read_key(file, "public-key", found) == 0 && strcmp(found, key) == 0)
            snprintf(buf, size, " (%.*s)", (int)(size - 4), e->d_name);
    }
    if (d)
        closedir(d);
    return buf;
}

/*  One ZAP request: version, request id, domain, address, identity,
    mechanism, credentials. Only CURVE with an authorized key passes. */
static void zap_one(spm_security_t *self)
{
    char frames[7][256];
    size_t sizes[7] = {0};
    int n = 0, more = 1;
    while (more && n < 7) {
        int len = zmq_recv(self->zap, frames[n], sizeof frames[n] - 1, ZMQ_DONTWAIT);
        if (len < 0)
            return;
        sizes[n] = (size_t)len < sizeof frames[n] ? (size_t)len : sizeof frames[n] - 1;
        frames[n][sizes[n]] = '\0';
        n++;
        size_t sz = sizeof more;
        zmq_getsockopt(self->zap, ZMQ_RCVMORE, &more, &sz);
    }
    while (more) { /* drain anything unexpected */
        char junk[256];
        zmq_recv(self->zap, junk, sizeof junk, 0);
        size_t sz = sizeof more;
        zmq_getsockopt(self->zap, ZMQ_RCVMORE, &more, &sz);
    }
    int ok = 0;
    char key[Z85_KEY + 1] = "";
    if (n == 7 && strcmp(frames[5], "CURVE") == 0 && sizes[6] == 32) {
        zmq_z85_encode(key, (const uint8_t *)frames[6], 32);
        for (size_t i = 0; i < self->nallowed && !ok; i++)
            ok = strcmp(self->allowed[i], key) == 0;
    }
    if (!ok) {
        self->refused++;
        char name[256];
        if (!key[0])
            spm_log_warn("refused a connection from %s: no CurveZMQ key", n > 3 ? frames[3] : "?");
        else
            spm_log_warn("refused a connection from %s: its key %s%s is not in %s/authorized/",
                         n > 3 ? frames[3] : "?", key, key_name(self->dir, key, name, sizeof name),
                         self->dir);
    }
    zap_send(self->zap, "1.0", 1);
    zmq_send(self->zap, frames[1], sizes[1], ZMQ_SNDMORE);
    zap_send(self->zap, ok ? "200" : "400", 1);
    zap_send(self->zap, ok ? "OK" : "not authorized", 1);
    zap_send(self->zap, ok ? key : "", 1);
    zap_send(self->zap, "", 0);
}

void spm_security_zap_handle(spm_security_t *self)
{
    if (!self->zap)
        return;
    load(self);
    for (int k = 0; k < 64; k++) {
        zmq_pollitem_t item = {self->zap, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 0) <= 0)
            return;
        zap_one(self);
    }
}
