/*  Tests of datacache/blockclient: a node's client of the other nodes'
    data agents, here asking real data agents (ZeroMQ ROUTERs over inproc,
    node caches below a mkdtemp directory removed at the end) to keep
    blocks. */
#include "base/checksum.h"
#include "datacache/blockclient.h"
#include "datacache/dataagent.h"
#include "datacache/nodecache.h"
#include "tests/check_main.h"
#include "tests/scratch.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 65536 /* bytes of each block kept */

/* Every block is well formed: the type check is not what is tested here. */
static int any_block(uint32_t type, const void *data, size_t len)
{
    (void)type, (void)data, (void)len;
    return 0;
}

/* A node's data agent on its own cache of BUDGET bytes (0: no limit). */
typedef struct {
    void *router;
    spm_nodecache_t *cache;
    spm_dataagent_t *agent;
} node_t;

static void node_start(node_t *n, void *ctx, uint32_t index, uint64_t budget)
{
    char dir[128], ep[64];
    snprintf(dir, sizeof dir, "%s/%d-%u", base, (int)getpid(), index);
    snprintf(ep, sizeof ep, "inproc://node%u", index);
    n->cache = spm_nodecache_open(dir, budget, 1);
    ck_assert_msg(n->cache != NULL, "%s", spm_error_detail());
    n->router = spm_wire_socket(ctx, ZMQ_ROUTER);
    ck_assert_ptr_nonnull(n->router);
    ck_assert_int_eq(zmq_bind(n->router, ep), 0);
    n->agent = spm_dataagent_new(n->router, n->cache, any_block);
    ck_assert_ptr_nonnull(n->agent);
}

static void node_stop(node_t *n)
{
    if (n->router)
        zmq_close(n->router);
    spm_dataagent_destroy(&n->agent);
    spm_nodecache_destroy(&n->cache);
}

/* What a keep ended with. */
typedef struct {
    int done, status;
    uint32_t holders[8];
    size_t n;
} kept_t;

static void on_kept(void *arg, const uint32_t *holders, size_t n, int status, const char *why)
{
    (void)why;
    kept_t *k = arg;
    k->done = 1;
    k->status = status;
    for (size_t i = 0; i < n && i < 8; i++)
        k->holders[i] = holders[i];
    k->n = n < 8 ? n : 8;
}

/* Node 0 (BC) has block SEED and wants one more keeper among nodes 1 and 2, passed along a
   chain as an IEU's outputs are; serves the two agents until the keep ends. */
static kept_t keep_one(spm_blockclient_t *bc, node_t *agents, uint64_t seed)
{
    uint8_t *bytes = malloc(BLOCK);
    ck_assert_ptr_nonnull(bytes);
    fill(bytes, BLOCK, seed);
    spm_blockref_t ref = {seed, 1, 9, spm_checksum(bytes, BLOCK), BLOCK};
    spm_blockbuf_t *buf = spm_blockbuf_new(bytes, BLOCK);
    const uint32_t self = 0, cand[] = {1, 2};
    kept_t k = {0};
    ck_assert_int_eq(spm_blockclient_keep(bc, &ref, buf, &self, 1, 2, cand, 2, 1, on_kept, &k), 0);
    spm_blockbuf_unref(buf);
    for (int rounds = 0; !k.done && rounds < 500; rounds++) {
        zmq_pollitem_t items[8] = {{agents[0].router, 0, ZMQ_POLLIN, 0},
                                   {agents[1].router, 0, ZMQ_POLLIN, 0}};
        int n = 2 + spm_blockclient_items(bc, items + 2, 6);
        ck_assert_int_ge(zmq_poll(items, n, 10), 0);
        spm_dataagent_serve(agents[0].agent);
        spm_dataagent_serve(agents[1].agent);
        spm_blockclient_process(bc);
    }
    ck_assert_msg(k.done, "the keep of block %llu did not end", (unsigned long long)seed);
    return k;
}

static spm_dataagent_stats_t stats_of(const node_t *n)
{
    spm_dataagent_stats_t s;
    spm_dataagent_stats(n->agent, &s);
    return s;
}

/* Node 0 (BC) and data agents 1 and 2 (AGENTS), the first with a cache of BUDGET1 bytes,
   the other with no limit. */
static spm_blockclient_t *nodes_start(void *ctx, node_t *agents, uint64_t budget1)
{
    node_start(&agents[0], ctx, 1, budget1);
    node_start(&agents[1], ctx, 2, 0);
    spm_blockclient_t *bc = spm_blockclient_new(ctx, NULL);
    ck_assert_ptr_nonnull(bc);
    ck_assert_int_eq(spm_blockclient_node(bc, 1, "inproc://node1", ""), 0);
    ck_assert_int_eq(spm_blockclient_node(bc, 2, "inproc://node2", ""), 0);
    return bc;
}

/* Ends what nodes_start began: BC, both agents, and CTX. */
static void nodes_stop(void *ctx, spm_blockclient_t **bc, node_t *agents)
{
    spm_blockclient_destroy(bc);
    node_stop(&agents[0]);
    node_stop(&agents[1]);
    zmq_ctx_term(ctx);
}

START_TEST(a_full_node_is_sent_no_block_bytes)
{
    /* Node 1's cache has room for no block. Asked to keep one, it says so
       before the block crosses the link: it refuses no STORE (a refused
       STORE is a block that came for nothing), and node 2 keeps it. */
    void *ctx = zmq_ctx_new();
    node_t agents[2];
    spm_blockclient_t *bc = nodes_start(ctx, agents, 4096);
    kept_t k = keep_one(bc, agents, 1);
    ck_assert_int_eq(k.status, 0);
    ck_assert_uint_eq(k.n, 2);
    ck_assert_uint_eq(k.holders[1], 2);
    ck_assert_uint_eq(stats_of(&agents[0]).stored, 0);
    ck_assert_uint_eq(stats_of(&agents[0]).refused, 0);
    ck_assert_uint_eq(stats_of(&agents[1]).stored, 1);
    nodes_stop(ctx, &bc, agents);
}
END_TEST

/* What a store ended with. */
typedef struct {
    int done, status;
} stored_t;

static void on_stored(void *arg, int status, const uint32_t *holders, size_t n, const char *why)
{
    (void)holders, (void)n, (void)why;
    stored_t *st = arg;
    st->done = 1;
    st->status = status;
}

/* Serves both agents (the first unless SKIP1) and BC until *A and *B are done. */
static void pump(spm_blockclient_t *bc, node_t *agents, const int *a, const int *b, int skip1)
{
    for (int rounds = 0; !(*a && *b) && rounds < 500; rounds++) {
        zmq_pollitem_t items[8] = {{agents[1].router, 0, ZMQ_POLLIN, 0},
                                   {agents[0].router, 0, ZMQ_POLLIN, 0}};
        int n = skip1 ? 1 : 2;
        n += spm_blockclient_items(bc, items + n, 6);
        ck_assert_int_ge(zmq_poll(items, n, 10), 0);
        if (!skip1)
            spm_dataagent_serve(agents[0].agent);
        spm_dataagent_serve(agents[1].agent);
        spm_blockclient_process(bc);
    }
    ck_assert_msg(*a && *b, "the requests did not end");
}

START_TEST(room_said_yes_to_is_held_for_its_block)
{
    /* Node 1 has room for one block and a half. Two blocks are offered to
       it at once: it says yes to the first and holds the room, so it says
       no to the second, which does not cross the link; the first block
       then comes and is kept. */
    void *ctx = zmq_ctx_new();
    node_t agents[2];
    spm_blockclient_t *bc = nodes_start(ctx, agents, BLOCK + BLOCK / 2);
    uint8_t *b1 = malloc(BLOCK), *b2 = malloc(BLOCK);
    ck_assert(b1 && b2);
    fill(b1, BLOCK, 1);
    fill(b2, BLOCK, 2);
    spm_blockref_t r1 = {1, 1, 9, spm_checksum(b1, BLOCK), BLOCK};
    spm_blockref_t r2 = {2, 1, 9, spm_checksum(b2, BLOCK), BLOCK};
    spm_blockbuf_t *buf1 = spm_blockbuf_new(b1, BLOCK), *buf2 = spm_blockbuf_new(b2, BLOCK);
    stored_t s1 = {0}, s2 = {0};
    ck_assert_int_eq(spm_blockclient_store(bc, 1, &r1, buf1, 1, NULL, 0, on_stored, &s1), 0);
    ck_assert_int_eq(spm_blockclient_store(bc, 1, &r2, buf2, 1, NULL, 0, on_stored, &s2), 0);
    spm_blockbuf_unref(buf1);
    spm_blockbuf_unref(buf2);
    pump(bc, agents, &s1.done, &s2.done, 0);
    ck_assert_int_eq(s1.status, 0);
    ck_assert_int_eq(s2.status, SPM_EFULL);
    spm_dataagent_stats_t st = stats_of(&agents[0]);
    ck_assert_uint_eq(st.offers, 2);
    ck_assert_uint_eq(st.offers_refused, 1);
    ck_assert_uint_eq(st.stored, 1);
    ck_assert_uint_eq(st.refused, 0);
    ck_assert_uint_eq(st.refused_bytes, 0);
    spm_blockclient_stats_t cs;
    spm_blockclient_stats(bc, &cs);
    ck_assert_uint_eq(cs.offers, 2);
    ck_assert_uint_eq(cs.offers_refused, 1);
    nodes_stop(ctx, &bc, agents);
}
END_TEST

START_TEST(a_node_that_dies_after_saying_yes_is_replaced)
{
    /* Node 1 says yes to an offer, then dies before the block is taken:
       the keep does not hang on it but moves on to node 2. */
    void *ctx = zmq_ctx_new();
    node_t agents[2];
    spm_blockclient_t *bc = nodes_start(ctx, agents, 0);
    uint8_t *bytes = malloc(BLOCK);
    ck_assert_ptr_nonnull(bytes);
    fill(bytes, BLOCK, 7);
    spm_blockref_t ref = {7, 1, 9, spm_checksum(bytes, BLOCK), BLOCK};
    spm_blockbuf_t *buf = spm_blockbuf_new(bytes, BLOCK);
    const uint32_t self = 0, cand[] = {1, 2};
    kept_t k = {0};
    ck_assert_int_eq(spm_blockclient_keep(bc, &ref, buf, &self, 1, 2, cand, 2, 1, on_kept, &k), 0);
    spm_blockbuf_unref(buf);
    /* node 1 answers the offer, and the client sends the block on */
    for (int rounds = 0; stats_of(&agents[0]).offers == 0 && rounds < 500; rounds++) {
        zmq_pollitem_t it = {agents[0].router, 0, ZMQ_POLLIN, 0};
        ck_assert_int_ge(zmq_poll(&it, 1, 10), 0);
        spm_dataagent_serve(agents[0].agent);
    }
    ck_assert_uint_eq(stats_of(&agents[0]).offers, 1);
    ck_assert_uint_eq(stats_of(&agents[0]).offers_refused, 0);
    int sent = 0; /* the block waits at node 1, unread */
    for (int rounds = 0; !sent && rounds < 500; rounds++) {
        zmq_pollitem_t items[4] = {{agents[0].router, 0, ZMQ_POLLIN, 0}};
        int n = 1 + spm_blockclient_items(bc, items + 1, 3);
        ck_assert_int_ge(zmq_poll(items, n, 10), 0);
        sent = items[0].revents & ZMQ_POLLIN;
        spm_blockclient_process(bc);
    }
    ck_assert(sent);
    spm_blockclient_stats_t cs;
    spm_blockclient_stats(bc, &cs);
    ck_assert_uint_eq(cs.offers, 1);
    ck_assert(!k.done);
    zmq_close(agents[0].router); /* node 1 dies with the block unread */
    agents[0].router = NULL;
    spm_blockclient_node_down(bc, 1);
    int never = 1;
    pump(bc, agents, &k.done, &never, 1);
    ck_assert_int_eq(k.status, 0);
    ck_assert_uint_eq(k.n, 2);
    ck_assert_uint_eq(k.holders[1], 2);
    ck_assert_uint_eq(stats_of(&agents[1]).stored, 1);
    ck_assert_uint_eq(stats_of(&agents[0]).stored, 0);
    nodes_stop(ctx, &bc, agents);
}
END_TEST

START_TEST(a_full_node_is_not_sent_blocks_for_a_while)
{
    /* Node 1's cache has room for no block, node 2's for all. Once node 1
       refused one (an offer: no block crossed), the next keeps go straight
       to node 2 for a second, not even offered to it, then node 1 is asked
       again. */
    void *ctx = zmq_ctx_new();
    node_t agents[2]; /* node 1's and node 2's */
    node_start(&agents[0], ctx, 1, 4096);
    node_start(&agents[1], ctx, 2, 0);
    spm_blockclient_t *bc = spm_blockclient_new(ctx, NULL);
    ck_assert_ptr_nonnull(bc);
    ck_assert_int_eq(spm_blockclient_node(bc, 1, "inproc://node1", ""), 0);
    ck_assert_int_eq(spm_blockclient_node(bc, 2, "inproc://node2", ""), 0);

    kept_t k = keep_one(bc, agents, 1);
    ck_assert_int_eq(k.status, 0);
    ck_assert_uint_eq(k.n, 2);
    ck_assert_uint_eq(k.holders[1], 2);
    ck_assert_uint_eq(stats_of(&agents[0]).offers_refused, 1);

    for (uint64_t seed = 2; seed <= 5; seed++) {
        k = keep_one(bc, agents, seed);
        ck_assert_int_eq(k.status, 0);
        ck_assert_uint_eq(k.holders[1], 2);
    }
    ck_assert_uint_eq(stats_of(&agents[0]).offers_refused, 1); /* not asked again */
    ck_assert_uint_eq(stats_of(&agents[1]).stored, 5);
    spm_blockclient_stats_t s;
    spm_blockclient_stats(bc, &s);
    ck_assert_uint_eq(s.skipped_full, 4);
    /* node 1 refused the one offer it had; node 2, whose cache has no
       budget, was offered the first block and sent the others unasked */
    ck_assert_uint_eq(s.offers, 2);
    ck_assert_uint_eq(s.offers_refused, 1);

    usleep(1100000); /* its room may have come back: it is asked again */
    k = keep_one(bc, agents, 6);
    ck_assert_int_eq(k.status, 0);
    ck_assert_uint_eq(stats_of(&agents[0]).offers_refused, 2);
    ck_assert_uint_eq(stats_of(&agents[0]).refused, 0);
    ck_assert_uint_eq(stats_of(&agents[1]).stored, 6);
    spm_blockclient_stats(bc, &s);
    ck_assert_uint_eq(s.offers, 3);

    nodes_stop(ctx, &bc, agents);
}
END_TEST

/* What fetches ended with. */
typedef struct {
    int done, ok, timed_out;
} fetches_t;

static void on_fetched(void *arg, int status, zmq_msg_t *block, uint32_t node, const char *why)
{
    (void)block, (void)node, (void)why;
    fetches_t *f = arg;
    f->done++;
    f->ok += status == 0;
    f->timed_out += status == SPM_ETIMEOUT;
}

/* Asks node 1 (BC's only holder) for blocks FIRST..FIRST+N, as put there by the caller. */
static void fetch_each(spm_blockclient_t *bc, uint64_t first, int n, fetches_t *f)
{
    const uint32_t holder = 1;
    for (int i = 0; i < n; i++) {
        uint8_t bytes[4096];
        fill(bytes, sizeof bytes, first + i);
        spm_blockref_t ref = {first + i, 1, 9, spm_checksum(bytes, sizeof bytes), sizeof bytes};
        ck_assert_int_eq(spm_blockclient_fetch(bc, &ref, &holder, 1, on_fetched, f), 0);
    }
}

START_TEST(fetches_queued_behind_others_wait_for_them)
{
    /* An IEU asks one node for 768 blocks at once. The node answers 256
       each 1.2 s: the last third is answered 2.4 s after it was sent, past
       the 2 s a fetch waits, but the node answered something within each
       2 s. None is given up on. A node that answers nothing still costs a
       fetch its 2 s and no more. */
    enum { N = 768 };
    void *ctx = zmq_ctx_new();
    node_t agents[2];
    spm_blockclient_t *bc = nodes_start(ctx, agents, 0);
    for (int i = 0; i < N; i++) {
        uint8_t bytes[4096];
        fill(bytes, sizeof bytes, 100 + i);
        ck_assert_int_eq(spm_nodecache_put(agents[0].cache, 100 + i, 1, 9, bytes, sizeof bytes), 0);
    }
    fetches_t f = {0};
    fetch_each(bc, 100, N, &f);
    for (int rounds = 0; f.done < N && rounds < 8; rounds++) {
        spm_blockclient_expire(bc, spm_now_us());
        zmq_pollitem_t it = {agents[0].router, 0, ZMQ_POLLIN, 0};
        ck_assert_int_ge(zmq_poll(&it, 1, 100), 0);
        spm_dataagent_serve(agents[0].agent); /* 256 answers */
        usleep(20000);                        /* the answers cross */
        spm_blockclient_process(bc);
        if (f.done < N)
            usleep(1200000);
    }
    ck_assert_int_eq(f.done, N);
    ck_assert_int_eq(f.timed_out, 0);
    ck_assert_int_eq(f.ok, N);

    fetches_t lost = {0};
    fetch_each(bc, 100, 1, &lost); /* node 1 is not served from here */
    uint64_t t0 = spm_now_us();
    while (!lost.done && spm_now_us() - t0 < 10000000) {
        usleep(50000);
        spm_blockclient_process(bc);
        spm_blockclient_expire(bc, spm_now_us());
    }
    ck_assert_int_eq(lost.timed_out, 1);
    ck_assert_uint_lt(spm_now_us() - t0, 3000000);

    nodes_stop(ctx, &bc, agents);
}
END_TEST

/* What a fetch ended with; MOVE: it takes the block, as a client keeping it does. */
typedef struct {
    int done, status, move;
    uint64_t checksum;
    zmq_msg_t kept;
} got_t;

static void on_got(void *arg, int status, zmq_msg_t *block, uint32_t node, const char *why)
{
    (void)node, (void)why;
    got_t *g = arg;
    g->done = 1;
    g->status = status;
    if (status != 0)
        return;
    g->checksum = spm_checksum(zmq_msg_data(block), zmq_msg_size(block));
    if (g->move) {
        zmq_msg_init(&g->kept);
        ck_assert_int_eq(zmq_msg_move(&g->kept, block), 0);
    }
}

START_TEST(a_block_asked_for_twice_at_once_crosses_once)
{
    /* Three SIs in flight on one node read the same block of node 1: one
       FETCH goes out, all three get the bytes, even when one of them takes
       the message it was given. Asked again once that fetch is over, the
       block is fetched again. */
    void *ctx = zmq_ctx_new();
    node_t agents[2];
    spm_blockclient_t *bc = nodes_start(ctx, agents, 0);
    uint8_t bytes[BLOCK];
    fill(bytes, sizeof bytes, 5);
    ck_assert_int_eq(spm_nodecache_put(agents[0].cache, 5, 1, 9, bytes, sizeof bytes), 0);
    spm_blockref_t ref = {5, 1, 9, spm_checksum(bytes, sizeof bytes), sizeof bytes};
    const uint32_t holder = 1;
    got_t g[3] = {{.move = 1}, {0}, {.move = 1}};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(spm_blockclient_fetch(bc, &ref, &holder, 1, on_got, &g[i]), 0);
    int never = 1;
    pump(bc, agents, &g[2].done, &never, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(g[i].done, 1);
        ck_assert_int_eq(g[i].status, 0);
        ck_assert_uint_eq(g[i].checksum, ref.checksum);
    }
    ck_assert_uint_eq(stats_of(&agents[0]).served, 1);
    spm_blockclient_stats_t s;
    spm_blockclient_stats(bc, &s);
    ck_assert_uint_eq(s.shared, 2);
    ck_assert_uint_eq(s.fetched_bytes, BLOCK);
    ck_assert_uint_eq(spm_checksum(zmq_msg_data(&g[0].kept), zmq_msg_size(&g[0].kept)),
                      ref.checksum);
    zmq_msg_close(&g[0].kept);
    zmq_msg_close(&g[2].kept);

    got_t again = {0};
    ck_assert_int_eq(spm_blockclient_fetch(bc, &ref, &holder, 1, on_got, &again), 0);
    pump(bc, agents, &again.done, &never, 0);
    ck_assert_int_eq(again.status, 0);
    ck_assert_uint_eq(stats_of(&agents[0]).served, 2);

    nodes_stop(ctx, &bc, agents);
}
END_TEST

static Suite *blockclient_suite(void)
{
    Suite *s = suite_create("blockclient");
    const spm_test_case_t c = {
        .timeout_s = 60, .unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    SPM_TEST_ADD(s, &c, a_full_node_is_not_sent_blocks_for_a_while);
    SPM_TEST_ADD(s, &c, a_full_node_is_sent_no_block_bytes);
    SPM_TEST_ADD(s, &c, room_said_yes_to_is_held_for_its_block);
    SPM_TEST_ADD(s, &c, a_node_that_dies_after_saying_yes_is_replaced);
    SPM_TEST_ADD(s, &c, fetches_queued_behind_others_wait_for_them);
    SPM_TEST_ADD(s, &c, a_block_asked_for_twice_at_once_crosses_once);
    return s;
}

SPM_TEST_MAIN(blockclient_suite)
