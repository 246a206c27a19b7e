/*  =========================================================================
    targets - the fuzz targets: what hostile bytes reach, one function each

    @discuss
    Each spm_fuzz_NAME(data, size) feeds one input to one decoder the way
    bytes from the network or a user's file reach it, and aborts when an
    invariant breaks (sanitizers catch the rest). tests/fuzz/fuzz_NAME.c
    wraps it for libFuzzer (`make fuzz`, clang); tests/unit/test_fuzz.c
    replays the seed corpus and every kept crasher through the same
    functions with the ordinary compiler, so `make check` covers them.
    Header-only: each includer gets its own copy.

    Targets and their input layout:
      wire  [k][len1:2][frame1]...[lenk:2][framek][envelope...]: an
            envelope frame plus k (0-3) block frames sent through a real
            inproc DEALER -> ROUTER pair into spm_wire_recv.
      sdb   [type id:4][block...]: validate of the SDB type with that wire
            id (or, for an unknown id, the id-modulo-count-th registered
            type); a block it accepts goes through summary and merge, and
            a merge result must validate.
    @end
    =========================================================================
*/
#ifndef SPM_FUZZ_TARGETS_H_INCLUDED
#define SPM_FUZZ_TARGETS_H_INCLUDED

#include "isa/core/codec.h"
#include "isa/core/registry.h"
#include "vm/wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*  Aborts with MSG: an invariant of a decoder broke. */
static inline void spm_fuzz_broken(const char *target, const char *msg)
{
    fprintf(stderr, "fuzz %s: %s\n", target, msg);
    abort();
}

/* ------------------------------------------------------------------ wire */

static void *fuzz_ctx, *fuzz_router, *fuzz_dealer; /* kept for the whole run */

static inline void fuzz_wire_open(void)
{
    if (fuzz_ctx)
        return;
    fuzz_ctx = zmq_ctx_new();
    fuzz_router = spm_wire_socket(fuzz_ctx, ZMQ_ROUTER);
    fuzz_dealer = spm_wire_socket(fuzz_ctx, ZMQ_DEALER);
    if (!fuzz_router || !fuzz_dealer || zmq_bind(fuzz_router, "inproc://fuzz-wire") != 0 ||
        zmq_connect(fuzz_dealer, "inproc://fuzz-wire") != 0)
        spm_fuzz_broken("wire", "cannot set up the inproc socket pair");
}

/*  Checks what spm_wire_recv accepted: a versioned body, bounded frames,
    and an envelope that our own packer writes back into bytes that decode. */
static inline void fuzz_wire_check(const spm_msg_t *m)
{
    if (!m->env || m->env->version != SPM_PROTOCOL_VERSION ||
        m->env->body_case == SPM__ENVELOPE__BODY__NOT_SET)
        spm_fuzz_broken("wire", "accepted a message the protocol forbids");
    if (m->nframes > SPM_MAX_FRAMES || !m->has_id)
        spm_fuzz_broken("wire", "frame bookkeeping is wrong");
    size_t len = spm__envelope__get_packed_size(m->env);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return;
    if (spm__envelope__pack(m->env, buf) != len)
        spm_fuzz_broken("wire", "packed size disagrees with pack");
    Spm__Envelope *again = spm__envelope__unpack(NULL, len, buf);
    if (!again || again->body_case != m->env->body_case)
        spm_fuzz_broken("wire", "a decoded envelope does not survive a round trip");
    spm__envelope__free_unpacked(again, NULL);
    free(buf);
}

static inline int spm_fuzz_wire(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fuzz_wire_open();
    size_t k = data[0] % 4, pos = 1;
    const uint8_t *frame[3];
    size_t flen[3];
    for (size_t i = 0; i < k; i++) {
        size_t n = pos + 2 <= size ? (size_t)data[pos] | (size_t)data[pos + 1] << 8 : 0;
        pos = pos + 2 <= size ? pos + 2 : size;
        flen[i] = n < size - pos ? n : size - pos;
        frame[i] = data + pos;
        pos += flen[i];
    }
    if (zmq_send(fuzz_dealer, data + pos, size - pos, k ? ZMQ_SNDMORE : 0) < 0)
        spm_fuzz_broken("wire", "send failed");
    for (size_t i = 0; i < k; i++)
        if (zmq_send(fuzz_dealer, frame[i], flen[i], i + 1 < k ? ZMQ_SNDMORE : 0) < 0)
            spm_fuzz_broken("wire", "send failed");
    spm_msg_t m;
    spm_wire_stats_t st = {0};
    int r = spm_wire_recv(fuzz_router, 1, 0, &m, &st);
    if (r == 1) {
        fuzz_wire_check(&m);
        if (m.nframes != k)
            spm_fuzz_broken("wire", "block frames lost or invented");
        spm_msg_close(&m);
    } else if (r != 2 || st.dropped != 1) {
        spm_fuzz_broken("wire", "a message was neither delivered nor counted as dropped");
    }
    /* Whatever happened, the socket must be in step for the next input. */
    int more = 0;
    size_t sz = sizeof more;
    zmq_getsockopt(fuzz_router, ZMQ_RCVMORE, &more, &sz);
    if (more)
        spm_fuzz_broken("wire", "left part of a message on the socket");
    return 0;
}

/* ------------------------------------------------------------------- sdb */

/*  The type an input names: its wire id, else by position. */
static inline const spm_sdb_type_t *fuzz_sdb_type(uint32_t id)
{
    const spm_sdb_type_t *t = spm_sdb_type_by_id(id);
    if (t)
        return t;
    size_t n = 0;
    while (spm_sdb_type_at(n))
        n++;
    return n ? spm_sdb_type_at(id % n) : NULL;
}

/*  Merges A into B with T's merge and checks the result validates. */
static inline void fuzz_sdb_merge(const spm_sdb_type_t *t, const void *a, size_t alen,
                                  const void *b, size_t blen)
{
    void *out = NULL;
    size_t outlen = 0;
    if (t->merge(a, alen, b, blen, &out, &outlen) == 0 && t->validate(out, outlen) != 0)
        spm_fuzz_broken("sdb", "merge made a block its own type refuses");
    free(out);
}

static inline int spm_fuzz_sdb(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    const spm_sdb_type_t *t = fuzz_sdb_type(spm_le32(data));
    if (!t)
        return 0;
    /* A block arrives in its own allocation (a ZeroMQ frame or a cache
       value), so give the decoder exactly that: any read past the end is
       a sanitizer report. */
    size_t len = size - 4;
    void *block = malloc(len ? len : 1);
    if (!block)
        return 0;
    memcpy(block, data + 4, len);
    if (t->validate(block, len) == 0) {
        char line[256];
        if (t->summary)
            t->summary(block, len, line, sizeof line);
        if (t->merge) {
            fuzz_sdb_merge(t, NULL, 0, block, len);
            fuzz_sdb_merge(t, block, len, block, len);
        }
    }
    free(block);
    return 0;
}

/* ------------------------------------------------------------ the table */

typedef struct {
    const char *name;                             /* tests/fuzz/corpus/NAME */
    int (*run)(const uint8_t *data, size_t size); /* one input */
} spm_fuzz_target_t;

static const spm_fuzz_target_t spm_fuzz_targets[] = {{"wire", spm_fuzz_wire},
                                                     {"sdb", spm_fuzz_sdb}};

#endif
