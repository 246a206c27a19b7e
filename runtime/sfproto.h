/*  =========================================================================
    sfproto - what the center and a plugin job's super-function host say
    to each other, and the table the host's SF API goes through

    @discuss
    A plugin's super-functions run in a host process of their job
    (`spm sfhost`, vm/sfhost/host.c), never in the center: the center
    keeps one proxy SF per such job in its IDU (idu/remote.c) and sends
    the host the job's events; the host runs the callbacks and answers
    with what they did. Both sides go through this file's encoding.

    On the socket: frames, each a 4-byte little-endian length and that
    many bytes. A frame holds messages, each a type byte and its fields
    as unsigned LEB128 varints (signed ones zigzagged) or varint-prefixed
    bytes. The center sends frames of events (SFP_INIT first, alone);
    the host answers every frame, once it has run all of its events, with
    one frame of the actions they made (possibly none): an answer is how
    the center knows the host is not stuck (the bound on a host's turn).
    The journal's records (idu/events.c) use the same varints.

    The host also keeps, in a page it shares with the center, which
    callback of which SF runs now, so that the center names them when it
    kills a host that overran its bound, or sees one crash.
    @end
    =========================================================================
*/
#ifndef SPM_SFPROTO_H_INCLUDED
#define SPM_SFPROTO_H_INCLUDED

#include "spm/spm.h"

#include <stddef.h>
#include <stdint.h>

/* events, center to host */
enum {
    SFP_INIT = 1,   /* the plugin's bytes (alone in the first frame) */
    SFP_START = 2,  /* program, scope, seed, priority, job, args: the root starts */
    SFP_COUNTS = 3, /* IEUs, nodes: what spm_sf_ieus and spm_sf_nodes answer from now */
    SFP_COMMIT = 4, /* tag, who (ieu, node, slots), reply: an SI committed */
    SFP_FEED = 5,   /* who: an IEU asks for work and the job has nothing ready */
};

/* actions, host to center */
enum {
    SFA_ISSUE = 1,   /* opcode id, opcode name (first use only), tag, ops, params, label */
    SFA_SDB = 2,     /* type id, SDB id: spm_sdb_new */
    SFA_DONE = 3,    /* the root SF finished: the job is done once its merges are */
    SFA_FAIL = 4,    /* code, message */
    SFA_RESULT = 5,  /* bytes */
    SFA_EXPECT = 6,  /* n */
    SFA_FEEDING = 7, /* 1: some SF of the job has a feed hook and is not done; 0: none */
    SFA_FED = 8,     /* the answer to an SFP_FEED (its SIs, if any, came before) */
};

/*  The callback a host runs now (sfp_page_t.callback). */
enum { SFP_IDLE = 0, SFP_IN_LOAD, SFP_IN_START, SFP_IN_FEED, SFP_IN_COMMIT, SFP_IN_FINISH };

/*  The page a host shares with the center. */
typedef struct {
    volatile uint32_t callback; /* SFP_IN_* */
    char sf[120];               /* the SF's class name while in a callback */
} sfp_page_t;

/*  The low 32 bits of the SDB ids a host makes have this bit set, so that
    they never meet the ids the IDU makes for the job (ACC partials). */
#define SFP_HOST_SDB 0x80000000u

/*  A growable buffer messages are written into. */
typedef struct {
    uint8_t *p;
    size_t n, cap;
    int full; /* out of memory: what was written since is lost */
} sfp_buf_t;

void sfp_put_u8(sfp_buf_t *b, uint8_t v);
void sfp_put_uv(sfp_buf_t *b, uint64_t v);
void sfp_put_sv(sfp_buf_t *b, int64_t v);
void sfp_put_bytes(sfp_buf_t *b, const void *d, size_t n);
void sfp_put_raw(sfp_buf_t *b, const void *d, size_t n);
/*  Starts a frame: 4 bytes of length to be filled by sfp_frame_end. Returns
    where the frame starts. */
size_t sfp_frame_begin(sfp_buf_t *b);
void sfp_frame_end(sfp_buf_t *b, size_t at);
void sfp_buf_free(sfp_buf_t *b);

/*  A reader of LEN bytes at P; bad is set by any read past the end. */
typedef struct {
    const uint8_t *p;
    size_t n, pos;
    int bad;
} sfp_rd_t;

uint8_t sfp_get_u8(sfp_rd_t *r);
uint64_t sfp_get_uv(sfp_rd_t *r);
int64_t sfp_get_sv(sfp_rd_t *r);
/*  Points *D at the next length-prefixed bytes (into the reader's bytes)
    and returns their length. */
size_t sfp_get_bytes(sfp_rd_t *r, const void **d);

/*  The length of the first whole frame in the LEN bytes at P (its payload
    in *PAYLOAD, *PLEN), or 0 when it has not all come yet. */
size_t sfp_frame_next(const uint8_t *p, size_t len, const uint8_t **payload, size_t *plen);

/* ------------------------------------------------- the SF API's table */

/*  What the public SF API (include/spm/spm.h) does in a process that sets
    spm_sf_ops: the host of a plugin's super-functions. NULL (the
    default, the center's case): the IDU's own implementation. */
typedef struct spm_sf_ops {
    void *(*state)(spm_sf_t *sf);
    void (*set_state)(spm_sf_t *sf, void *state);
    int (*priority)(const spm_sf_t *sf);
    spm_sdb_t (*sdb_new)(spm_sf_t *sf, const char *type);
    int (*issue)(spm_sf_t *sf, const char *opcode, const spm_operand_t *ops, size_t n,
                 const void *params, size_t params_len, uint64_t tag);
    int (*spawn)(spm_sf_t *sf, const spm_sf_class_t *cls, const void *args, size_t len,
                 int priority, uint64_t tag);
    void (*done)(spm_sf_t *sf);
    void (*fail)(spm_sf_t *sf, int code, const char *msg);
    void (*expect)(spm_sf_t *sf, uint64_t n);
    int (*set_result)(spm_sf_t *sf, const void *data, size_t len);
    uint64_t (*seed)(const spm_sf_t *sf);
    uint32_t (*ieus)(const spm_sf_t *sf);
    uint32_t (*nodes)(const spm_sf_t *sf);
    uint64_t (*bytes_to)(spm_sf_t *sf, const spm_operand_t *ops, size_t n, const spm_ieu_t *who);
    size_t (*holders)(spm_sf_t *sf, spm_sdb_t sdb, uint32_t *nodes, size_t max);
    void (*label)(spm_sf_t *sf, const char *label);
} spm_sf_ops_t;

extern const spm_sf_ops_t *spm_sf_ops;

#endif
