/*  =========================================================================
    wire - one spm message on a ZeroMQ socket: envelope frame + block frames
    =========================================================================
*/
#include "transport/wire.h"
#include "base/grow.h"
#include "base/log.h"
#include "spm/spm.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void spm_wire_free(void *data, void *hint)
{
    (void)hint;
    free(data);
}

void *spm_wire_socket(void *ctx, int type)
{
    void *s = zmq_socket(ctx, type);
    if (!s) {
        spm_error(SPM_ESYS, "zmq_socket: %s", zmq_strerror(zmq_errno()));
        return NULL;
    }
    int linger = 0;
    int64_t max = SPM_MAX_MSG_BYTES;
    int hwm = 0; /* credits bound what is queued, not the high-water mark */
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &max, sizeof max);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    /* Retry a connect soon (a just-started center is not bound yet), backing
       off to a second for a center that is really away. */
    int ivl = 10, ivl_max = 1000;
    zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(s, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    return s;
}

void spm_msg_close(spm_msg_t *m)
{
    if (m->env)
        spm__envelope__free_unpacked(m->env, NULL);
    if (m->has_id)
        zmq_msg_close(&m->id);
    for (size_t i = 0; i < m->nframes; i++)
        zmq_msg_close(&m->frames[i]);
    free(m->frames);
    memset(m, 0, sizeof *m);
}

/*  Receives and discards the rest of a multipart message. */
static void drain(void *sock)
{
    int more = 1;
    size_t sz = sizeof more;
    zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz);
    while (more) {
        zmq_msg_t junk;
        zmq_msg_init(&junk);
        if (zmq_msg_recv(&junk, sock, 0) < 0) {
            zmq_msg_close(&junk);
            return;
        }
        more = zmq_msg_more(&junk);
        zmq_msg_close(&junk);
    }
}

static int drop(void *sock, spm_msg_t *m, spm_wire_stats_t *stats, const char *why)
{
    drain(sock);
    spm_msg_close(m);
    if (stats)
        stats->dropped++;
    spm_log_debug("dropped a message: %s", why);
    return 2;
}

/*  1 when MSG or a message inside it carries a field this build does not
    know. Every process of a VM runs the same binary, so such a field is
    garbage or forgery; protobuf-c would keep it and even accept field
    number 0 written as an overlong varint. The schema has no recursive
    message, so the depth is bounded by it. */
static int has_unknown(const ProtobufCMessage *msg)
{
    if (msg->n_unknown_fields)
        return 1;
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    const char *base = (const char *)msg;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t k = 0; k < n; k++)
                if (v[k] && has_unknown(v[k]))
                    return 1;
            continue;
        }
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(base + f->quantifier_offset) != f->id)
            continue; /* another member of the oneof is set */
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)(base + f->offset);
        if (sub && has_unknown(sub))
            return 1;
    }
    return 0;
}

/*  Whether the receiver of a message of BODY needs its sender's key: the
    center checks who owns what a client names (a job, a block). */
static int wants_user(int body)
{
    switch (body) {
    case SPM__ENVELOPE__BODY_PUT:
    case SPM__ENVELOPE__BODY_SUBMIT:
    case SPM__ENVELOPE__BODY_GET:
    case SPM__ENVELOPE__BODY_CANCEL:
    case SPM__ENVELOPE__BODY_DISCARD:
    case SPM__ENVELOPE__BODY_WATCH:
    case SPM__ENVELOPE__BODY_JOBS:
        return 1;
    default:
        return 0;
    }
}

int spm_wire_recv(void *sock, int router, int dontwait, spm_msg_t *m, spm_wire_stats_t *stats)
{
    memset(m, 0, sizeof *m);
    int flags = dontwait ? ZMQ_DONTWAIT : 0;
    zmq_msg_t first;
    zmq_msg_init(&first);
    if (zmq_msg_recv(&first, sock, flags) < 0) {
        int err = zmq_errno();
        zmq_msg_close(&first);
        if (err == EAGAIN)
            return 0;
        return spm_error(SPM_ESYS, "receive: %s", zmq_strerror(err));
    }
    if (router) {
        m->id = first;
        m->has_id = 1;
        if (!zmq_msg_more(&m->id))
            return drop(sock, m, stats, "identity without body");
        zmq_msg_init(&first);
        if (zmq_msg_recv(&first, sock, 0) < 0) {
            zmq_msg_close(&first);
            return drop(sock, m, stats, "truncated");
        }
    }
    int more = zmq_msg_more(&first);
    m->env = spm__envelope__unpack(NULL, zmq_msg_size(&first), zmq_msg_data(&first));
    if (m->env && wants_user(m->env->body_case)) {
        const char *user = zmq_msg_gets(&first, "User-Id");
        snprintf(m->user, sizeof m->user, "%s", user ? user : "");
    }
    zmq_msg_close(&first);
    if (!m->env) {
        if (more)
            drain(sock);
        return drop(sock, m, stats, "envelope does not decode");
    }
    if (m->env->version != SPM_PROTOCOL_VERSION)
        return drop(sock, m, stats, "unknown protocol version");
    if (m->env->body_case == SPM__ENVELOPE__BODY__NOT_SET)
        return drop(sock, m, stats, "no body");
    if (has_unknown(&m->env->base))
        return drop(sock, m, stats, "unknown field");
    size_t cap = 0;
    while (more) {
        if (m->nframes == SPM_MAX_FRAMES)
            return drop(sock, m, stats, "too many frames");
        if (spm_grow(&m->frames, m->nframes, &cap, sizeof *m->frames, 8) != 0)
            return drop(sock, m, stats, "out of memory");
        zmq_msg_init(&m->frames[m->nframes]);
        if (zmq_msg_recv(&m->frames[m->nframes], sock, 0) < 0) {
            zmq_msg_close(&m->frames[m->nframes]);
            return drop(sock, m, stats, "truncated");
        }
        more = zmq_msg_more(&m->frames[m->nframes]);
        m->nframes++;
    }
    if (stats) {
        stats->received++;
        for (size_t i = 0; i < m->nframes; i++)
            stats->bytes_in += zmq_msg_size(&m->frames[i]);
    }
    return 1;
}

static void free_frames(spm_frame_t *frames, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++)
        if (frames[i].free_fn)
            frames[i].free_fn(frames[i].data, frames[i].hint);
}

int spm_wire_send(void *sock, const zmq_msg_t *id, Spm__Envelope *env, spm_frame_t *frames,
                  size_t n, spm_wire_stats_t *stats)
{
    env->version = SPM_PROTOCOL_VERSION;
    size_t len = spm__envelope__get_packed_size(env);
    zmq_msg_t msg;
    if (zmq_msg_init_size(&msg, len) != 0) {
        free_frames(frames, 0, n);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    spm__envelope__pack(env, zmq_msg_data(&msg));
    if (id) {
        zmq_msg_t copy;
        zmq_msg_init(&copy);
        zmq_msg_copy(&copy, (zmq_msg_t *)id);
        if (zmq_msg_send(&copy, sock, ZMQ_SNDMORE) < 0) {
            zmq_msg_close(&copy);
            zmq_msg_close(&msg);
            free_frames(frames, 0, n);
            return spm_error(SPM_ESYS, "send: %s", zmq_strerror(zmq_errno()));
        }
    }
    if (zmq_msg_send(&msg, sock, n ? ZMQ_SNDMORE : 0) < 0) {
        zmq_msg_close(&msg);
        free_frames(frames, 0, n);
        return spm_error(SPM_ESYS, "send: %s", zmq_strerror(zmq_errno()));
    }
    for (size_t i = 0; i < n; i++) {
        zmq_msg_t f;
        int rc = frames[i].free_fn ? zmq_msg_init_data(&f, frames[i].data, frames[i].len,
                                                       frames[i].free_fn, frames[i].hint)
                                   : zmq_msg_init_size(&f, frames[i].len);
        if (rc != 0) {
            free_frames(frames, i, n);
            return spm_error(SPM_ENOMEM, "out of memory");
        }
        if (!frames[i].free_fn && frames[i].len)
            memcpy(zmq_msg_data(&f), frames[i].data, frames[i].len);
        if (zmq_msg_send(&f, sock, i + 1 < n ? ZMQ_SNDMORE : 0) < 0) {
            zmq_msg_close(&f);
            free_frames(frames, i + 1, n);
            return spm_error(SPM_ESYS, "send: %s", zmq_strerror(zmq_errno()));
        }
    }
    if (stats) {
        stats->sent++;
        for (size_t i = 0; i < n; i++)
            stats->bytes_out += frames[i].len;
    }
    return 0;
}

int spm_wire_await_ipc(const char *endpoint, long timeout_ms)
{
    if (strncmp(endpoint, "ipc://", 6) != 0)
        return 1;
    uint64_t deadline = spm_now_us() + (uint64_t)timeout_ms * 1000;
    struct stat st;
    while (stat(endpoint + 6, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        if (spm_now_us() >= deadline)
            return 0;
        usleep(200);
    }
    return 1;
}
