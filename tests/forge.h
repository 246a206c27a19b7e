/*  =========================================================================
    forge - a small client of its own that sends the center whatever it is
    told to: a hostile peer with an authorized key

    Built straight on libzmq, CurveZMQ and the protobuf-c code generated
    from transport/spm.proto, not on spm's client (vm/client): it is what
    anyone with a key and the .proto could write, and sends messages no
    spm command would (a Discard or a Cancel of another client's job).

        forge_t f;
        forge_open(&f, "tcp://127.0.0.1:7700", "/keys/mallory");  // its client.key, center.pub
        Spm__Cancel c = SPM__CANCEL__INIT;
        c.job = 7;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_CANCEL;
        env.cancel = &c;
        Spm__Envelope *reply = forge_ask(&f, &env, SPM__ENVELOPE__BODY_ACK, 5000);
        ... reply->ack->status ...
        spm__envelope__free_unpacked(reply, NULL);
        forge_close(&f);

    Header-only, for the integration tests.
    =========================================================================
*/
#ifndef SPM_FORGE_H_INCLUDED
#define SPM_FORGE_H_INCLUDED

#include "tests/spm_test.h"
#include "transport/spm.pb-c.h" /* generated into build/gen */

#include <stdio.h>
#include <string.h>
#include <zmq.h>

#define FORGE_PROTOCOL 2 /* transport/wire.h SPM_PROTOCOL_VERSION */

typedef struct {
    void *ctx, *sock;
} forge_t;

static inline long long forge_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*  Reads the Z85 value of "NAME = VALUE" in the key file PATH into OUT
    (41 bytes). Returns 0 or -1. */
static inline int forge_key(const char *path, const char *name, char *out)
{
    FILE *f = fopen(path, "r");
    char line[256], key[64], value[128];
    int rc = -1;
    while (f && rc && fgets(line, sizeof line, f))
        if (sscanf(line, " %63[a-z-] = %127s", key, value) == 2 && !strcmp(key, name) &&
            strlen(value) == 40) {
            memcpy(out, value, 41);
            rc = 0;
        }
    if (f)
        fclose(f);
    return rc;
}

/*  Connects F to ENDPOINT as a CurveZMQ client with the key pair
    KEYS/client.key, expecting the server key of KEYS/center.pub, and says
    HELLO as a client. Fails the test when it cannot. */
static inline void forge_open(forge_t *f, const char *endpoint, const char *keys);

/*  Sends ENV (its version set here). Returns 0 or -1. */
static inline int forge_send(forge_t *f, Spm__Envelope *env)
{
    env->version = FORGE_PROTOCOL;
    size_t len = spm__envelope__get_packed_size(env);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return -1;
    spm__envelope__pack(env, buf);
    int rc = zmq_send(f->sock, buf, len, 0) == (int)len ? 0 : -1;
    free(buf);
    return rc;
}

/*  Waits up to TIMEOUT_MS for a message whose body is WANT (others are
    dropped). Returns it (spm__envelope__free_unpacked), or NULL. */
static inline Spm__Envelope *forge_recv(forge_t *f, int want, int timeout_ms)
{
    long long end = forge_now_ms() + timeout_ms;
    while (forge_now_ms() < end) {
        zmq_pollitem_t item = {f->sock, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 100) <= 0)
            continue;
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, f->sock, 0) < 0) {
            zmq_msg_close(&m);
            continue;
        }
        int more = zmq_msg_more(&m);
        Spm__Envelope *env = spm__envelope__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
        zmq_msg_close(&m);
        while (more) { /* block frames: not wanted here */
            zmq_msg_init(&m);
            zmq_msg_recv(&m, f->sock, 0);
            more = zmq_msg_more(&m);
            zmq_msg_close(&m);
        }
        if (env && (int)env->body_case == want)
            return env;
        if (env)
            spm__envelope__free_unpacked(env, NULL);
    }
    return NULL;
}

/*  Sends ENV and waits for the answer WANT (forge_recv). */
static inline Spm__Envelope *forge_ask(forge_t *f, Spm__Envelope *env, int want, int timeout_ms)
{
    return forge_send(f, env) == 0 ? forge_recv(f, want, timeout_ms) : NULL;
}

static inline void forge_open(forge_t *f, const char *endpoint, const char *keys)
{
    char path[512], pub[41], sec[41], server[41];
    snprintf(path, sizeof path, "%s/client.key", keys);
    SPM_TEST_ASSERT(forge_key(path, "public-key", pub) == 0);
    SPM_TEST_ASSERT(forge_key(path, "secret-key", sec) == 0);
    snprintf(path, sizeof path, "%s/center.pub", keys);
    SPM_TEST_ASSERT(forge_key(path, "public-key", server) == 0);
    f->ctx = zmq_ctx_new();
    f->sock = zmq_socket(f->ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(f->sock, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(f->sock, ZMQ_CURVE_SERVERKEY, server, 40);
    zmq_setsockopt(f->sock, ZMQ_CURVE_PUBLICKEY, pub, 40);
    zmq_setsockopt(f->sock, ZMQ_CURVE_SECRETKEY, sec, 40);
    SPM_TEST_ASSERT(zmq_connect(f->sock, endpoint) == 0);
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__CLIENT;
    h.pid = (uint32_t)getpid();
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    Spm__Envelope *w = forge_ask(f, &env, SPM__ENVELOPE__BODY_WELCOME, 10000);
    SPM_TEST_ASSERT(w != NULL);
    spm__envelope__free_unpacked(w, NULL);
}

static inline void forge_close(forge_t *f)
{
    zmq_close(f->sock);
    zmq_ctx_term(f->ctx);
}

#endif
