/*  Tests of datacache/dataagent: a node's blocks served to other nodes and
    taken from them, over a real ZeroMQ ROUTER (inproc) and a real node cache
    below a mkdtemp directory that is removed at the end. */
#include "base/checksum.h"
#include "datacache/dataagent.h"
#include "datacache/nodecache.h"
#include "tests/check_main.h"
#include "tests/scratch.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every block is well formed: the type check is not what is tested here. */
static int any_block(uint32_t type, const void *data, size_t len)
{
    (void)type, (void)data, (void)len;
    return 0;
}

/* A data agent on its node cache, and a peer's DEALER connected to it. */
typedef struct {
    void *ctx, *router, *peer;
    spm_nodecache_t *cache;
    spm_dataagent_t *agent;
} node_t;

static void node_start(node_t *n)
{
    char dir[96];
    snprintf(dir, sizeof dir, "%s/%d", base, (int)getpid());
    n->cache = spm_nodecache_open(dir, 0, 1);
    ck_assert_msg(n->cache != NULL, "%s", spm_error_detail());
    n->ctx = zmq_ctx_new();
    n->router = spm_wire_socket(n->ctx, ZMQ_ROUTER);
    n->peer = spm_wire_socket(n->ctx, ZMQ_DEALER);
    ck_assert(n->router && n->peer);
    ck_assert_int_eq(zmq_bind(n->router, "inproc://agent"), 0);
    ck_assert_int_eq(zmq_connect(n->peer, "inproc://agent"), 0);
    n->agent = spm_dataagent_new(n->router, n->cache, any_block);
    ck_assert_ptr_nonnull(n->agent);
}

static void node_stop(node_t *n)
{
    zmq_close(n->peer);
    zmq_close(n->router);
    zmq_ctx_term(n->ctx); /* the frames lent from the cache are released first */
    spm_dataagent_destroy(&n->agent);
    spm_nodecache_destroy(&n->cache);
}

static void send_fetch(node_t *n, uint64_t req, spm_sdb_t id)
{
    Spm__Fetch f = SPM__FETCH__INIT;
    f.req = req;
    f.sdb = id;
    f.version = 1;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_FETCH;
    env.fetch = &f;
    ck_assert_int_eq(spm_wire_send(n->peer, NULL, &env, NULL, 0, NULL), 0);
}

static void send_store(node_t *n, uint64_t req, spm_sdb_t id, const uint8_t *b, size_t len)
{
    Spm__Store st = SPM__STORE__INIT;
    st.req = req;
    st.sdb = id;
    st.version = 1;
    st.type = 9;
    st.checksum = spm_checksum(b, len);
    st.want = 1;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_STORE;
    env.store = &st;
    spm_frame_t f = {(void *)b, len, NULL, NULL}; /* copied */
    ck_assert_int_eq(spm_wire_send(n->peer, NULL, &env, &f, 1, NULL), 0);
}

/* Waits for the next answer on the peer's socket, into *M. */
static void answer(node_t *n, spm_msg_t *m)
{
    zmq_pollitem_t it = {n->peer, 0, ZMQ_POLLIN, 0};
    ck_assert_int_eq(zmq_poll(&it, 1, 5000), 1);
    ck_assert_int_eq(spm_wire_recv(n->peer, 0, 1, m, NULL), 1);
}

START_TEST(block_kept_after_the_snapshot_is_served)
{
    /* One batch: a FETCH takes the batch's read snapshot, a STORE keeps
       block 2 after it, and a FETCH of block 2 follows. The node is its
       only keeper (one replica), so "not found" would leave the peer
       nowhere to fetch it from: the agent copies it out of the cache as
       it is now. */
    node_t n;
    node_start(&n);
    uint8_t a[5000], b[70000];
    fill(a, sizeof a, 1);
    fill(b, sizeof b, 2);
    ck_assert_int_eq(
        spm_nodecache_keep(n.cache, 1, 1, 9, spm_checksum(a, sizeof a), a, sizeof a, 0), 0);
    send_fetch(&n, 10, 1);
    send_store(&n, 11, 2, b, sizeof b);
    send_fetch(&n, 12, 2);
    usleep(100000); /* all three wait on the socket: one batch serves them */
    spm_dataagent_serve(n.agent);

    spm_msg_t m;
    answer(&n, &m);
    ck_assert_int_eq(m.env->body_case, SPM__ENVELOPE__BODY_FETCH_REPLY);
    ck_assert_int_eq(m.env->fetch_reply->status, 0);
    ck_assert_uint_eq(m.nframes, 1);
    ck_assert_uint_eq(zmq_msg_size(&m.frames[0]), sizeof a);
    spm_msg_close(&m);
    answer(&n, &m);
    ck_assert_int_eq(m.env->body_case, SPM__ENVELOPE__BODY_STORE_REPLY);
    ck_assert_int_eq(m.env->store_reply->status, 0);
    spm_msg_close(&m);
    answer(&n, &m);
    ck_assert_int_eq(m.env->body_case, SPM__ENVELOPE__BODY_FETCH_REPLY);
    ck_assert_uint_eq(m.env->fetch_reply->req, 12);
    ck_assert_msg(m.env->fetch_reply->status == 0, "block 2 answered %s",
                  spm_strerror(m.env->fetch_reply->status));
    ck_assert_uint_eq(m.nframes, 1);
    ck_assert_uint_eq(zmq_msg_size(&m.frames[0]), sizeof b);
    ck_assert(memcmp(zmq_msg_data(&m.frames[0]), b, sizeof b) == 0);
    spm_msg_close(&m);

    /* a block nobody kept is still not found */
    send_fetch(&n, 13, 3);
    usleep(20000);
    spm_dataagent_serve(n.agent);
    answer(&n, &m);
    ck_assert_int_eq(m.env->fetch_reply->status, SPM_ENOTFOUND);
    ck_assert_uint_eq(m.nframes, 0);
    spm_msg_close(&m);
    spm_dataagent_stats_t st;
    spm_dataagent_stats(n.agent, &st);
    ck_assert_uint_eq(st.served, 2);
    ck_assert_uint_eq(st.served_bytes, sizeof a + sizeof b);
    node_stop(&n);
}
END_TEST

/* Sends an offer of block (ID, 1) of BYTES bytes, with NFRAMES frames of FRAME after it. */
static void send_offer(node_t *n, uint64_t req, spm_sdb_t id, uint64_t bytes, const uint8_t *frame,
                       int nframes)
{
    Spm__Store st = SPM__STORE__INIT;
    st.req = req;
    st.sdb = id;
    st.version = 1;
    st.type = 9;
    st.want = 1;
    st.offer = 1;
    st.bytes = bytes;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_STORE;
    env.store = &st;
    spm_frame_t f = {(void *)frame, 16, NULL, NULL}; /* copied */
    ck_assert_int_eq(spm_wire_send(n->peer, NULL, &env, &f, nframes, NULL), 0);
}

/* Serves N and returns the status of the STORE_REPLY it sends to request REQ. */
static int store_status(node_t *n, uint64_t req)
{
    usleep(20000);
    spm_dataagent_serve(n->agent);
    spm_msg_t m;
    answer(n, &m);
    ck_assert_int_eq(m.env->body_case, SPM__ENVELOPE__BODY_STORE_REPLY);
    ck_assert_uint_eq(m.env->store_reply->req, req);
    int status = m.env->store_reply->status;
    spm_msg_close(&m);
    return status;
}

START_TEST(a_malformed_offer_is_refused)
{
    /* An offer is a STORE with OFFER and no block. One with a frame, one
       of SDB 0, and one cut short on the wire are errors, answered or
       dropped, never kept and never a crash; the agent goes on answering. */
    node_t n;
    node_start(&n);
    uint8_t b[16];
    fill(b, sizeof b, 3);
    send_offer(&n, 1, 5, sizeof b, b, 1);
    ck_assert_int_eq(store_status(&n, 1), SPM_EPROTO);
    send_offer(&n, 2, 0, sizeof b, b, 0);
    ck_assert_int_eq(store_status(&n, 2), SPM_EINVAL);

    /* an envelope of an offer cut short */
    Spm__Store st = SPM__STORE__INIT;
    st.req = 3;
    st.sdb = 5;
    st.version = 1;
    st.offer = 1;
    st.bytes = 1u << 20;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_STORE;
    env.store = &st;
    uint8_t wire[128];
    size_t len = spm__envelope__pack(&env, wire);
    ck_assert_uint_gt(len, 4);
    ck_assert_int_eq(zmq_send(n.peer, wire, len - 3, 0), (int)len - 3);
    send_offer(&n, 4, 6, sizeof b, b, 0); /* a good one after it is answered */
    ck_assert_int_eq(store_status(&n, 4), 0);

    spm_dataagent_stats_t s;
    spm_dataagent_stats(n.agent, &s);
    ck_assert_uint_eq(s.offers, 3);
    ck_assert_uint_eq(s.offers_refused, 2);
    ck_assert_uint_eq(s.stored, 0);
    ck_assert_int_eq(spm_nodecache_has(n.cache, 5, 1), 0);
    node_stop(&n);
}
END_TEST

static Suite *dataagent_suite(void)
{
    Suite *s = suite_create("dataagent");
    const spm_test_case_t c = {
        .timeout_s = 30, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, block_kept_after_the_snapshot_is_served);
    SPM_TEST_ADD(s, &c, a_malformed_offer_is_refused);
    return s;
}

SPM_TEST_MAIN(dataagent_suite)
