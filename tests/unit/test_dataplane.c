/*  Tests of datacache/dataplane: the center's decisions about where blocks live. Each test runs a
    data plane over a real store in a fresh directory below a mkdtemp base, and a SEND callback
    that keeps a copy of every envelope the data plane sends to a node's agent. */
#include "base/checksum.h"
#include "datacache/dataplane.h"
#include "tests/check_main.h"
#include "tests/scratch.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define T0 1000000ull       /* the first turn's clock, us */
#define LATER 3600000000ull /* an hour: far past any copy's timeout */
#define MAX_SENT 256

static char dir[96]; /* the running test's store directory, below base */

typedef struct {
    uint32_t node;
    Spm__Envelope *env; /* unpacked copy, freed by clear_sent */
} sent_t;

static sent_t sent[MAX_SENT]; /* what the data plane sent since clear_sent */
static size_t nsent;
static spm_store_t *store;
static spm_dataplane_t *dp;

/* The SEND callback: ENV is only valid during the call, so it is packed and unpacked. */
static int record(void *arg, uint32_t node, Spm__Envelope *env)
{
    (void)arg;
    ck_assert_uint_lt(nsent, MAX_SENT);
    size_t len = spm__envelope__get_packed_size(env);
    uint8_t *buf = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(buf);
    spm__envelope__pack(env, buf);
    Spm__Envelope *copy = spm__envelope__unpack(NULL, len, buf);
    free(buf);
    ck_assert_ptr_nonnull(copy);
    sent[nsent++] = (sent_t){node, copy};
    return 0;
}

static void clear_sent(void)
{
    for (size_t i = 0; i < nsent; i++)
        spm__envelope__free_unpacked(sent[i].env, NULL);
    nsent = 0;
}

/* Opens a store and a data plane keeping REPLICAS copies, with nodes 0..N-1 up. */
static void open_plane(uint32_t replicas, uint32_t n)
{
    clear_sent();        /* left by a test that failed, when Check does not fork */
    static unsigned seq; /* one store per test also when Check does not fork */
    snprintf(dir, sizeof dir, "%s/%d-%u", base, (int)getpid(), seq++);
    store = spm_store_open(dir);
    ck_assert_msg(store != NULL, "%s", spm_error_detail());
    dp = spm_dataplane_new(store, replicas, record, NULL);
    ck_assert_ptr_nonnull(dp);
    for (uint32_t i = 0; i < n; i++) {
        char ep[32], key[16];
        snprintf(ep, sizeof ep, "tcp://n%u:7701", i);
        snprintf(key, sizeof key, "key%u", i);
        ck_assert_int_eq(spm_dataplane_node_up(dp, i, ep, key), 0);
    }
}

static void close_plane(void)
{
    clear_sent();
    spm_dataplane_destroy(&dp);
    ck_assert_ptr_null(dp);
    spm_store_destroy(&store);
}

static spm_directory_t *dir_of(void)
{
    return spm_dataplane_directory(dp);
}

/* A committed output (ID, VERSION) of the LEN bytes fill(ID) makes, kept by the N HOLDERS (and
   by the store when FRAMED). Returns its checksum. */
static uint64_t commit_output(spm_sdb_t id, uint64_t version, size_t len, const uint32_t *holders,
                              size_t n, int framed)
{
    uint8_t buf[256];
    ck_assert_uint_le(len, sizeof buf);
    fill(buf, len, id);
    Spm__BlockMeta m = SPM__BLOCK_META__INIT;
    m.bytes = len;
    m.checksum = spm_checksum(buf, len);
    m.n_holders = n;
    m.holders = (uint32_t *)holders;
    m.framed = framed;
    spm_dataplane_output(dp, id, version, 3, &m);
    return m.checksum;
}

/* Puts (ID, VERSION) of LEN bytes fill(ID) into the store through the turn's batch. */
static void store_output(spm_sdb_t id, uint64_t version, size_t len)
{
    uint8_t buf[256];
    fill(buf, len, id);
    ck_assert_int_eq(spm_dataplane_store_put(dp, id, version, 3, buf, len), 0);
    int wrote = 0;
    ck_assert_int_eq(spm_dataplane_store_commit(dp, &wrote), 0);
    ck_assert_int_eq(wrote, 1);
}

/* How many envelopes of BODY were sent to NODE. */
static int count_sent(uint32_t node, Spm__Envelope__BodyCase body)
{
    int k = 0;
    for (size_t i = 0; i < nsent; i++)
        k += sent[i].node == node && sent[i].env->body_case == body;
    return k;
}

static int count_all(Spm__Envelope__BodyCase body)
{
    int k = 0;
    for (size_t i = 0; i < nsent; i++)
        k += sent[i].env->body_case == body;
    return k;
}

/* The first envelope of BODY sent (to NODE, or to any node when NODE is -1), or NULL. */
static const sent_t *first_sent(int64_t node, Spm__Envelope__BodyCase body)
{
    for (size_t i = 0; i < nsent; i++)
        if ((node < 0 || sent[i].node == (uint32_t)node) && sent[i].env->body_case == body)
            return &sent[i];
    return NULL;
}

/* Whether some DROP sent to NODE names (ID, VERSION). */
static int dropped_on(uint32_t node, spm_sdb_t id, uint64_t version)
{
    for (size_t i = 0; i < nsent; i++) {
        if (sent[i].node != node || sent[i].env->body_case != SPM__ENVELOPE__BODY_DROP)
            continue;
        const Spm__Drop *d = sent[i].env->drop;
        for (size_t j = 0; j < d->n_blocks; j++)
            if (d->blocks[j]->sdb == id && d->blocks[j]->version == version)
                return 1;
    }
    return 0;
}

/* Whether COPY C names NODE among its sources. */
static int copy_source(const Spm__Copy *c, uint32_t node)
{
    for (size_t i = 0; i < c->n_sources; i++)
        if (c->sources[i]->index == node)
            return 1;
    return 0;
}

static void publish(uint32_t node, int from_agent, spm_sdb_t id, uint64_t version, uint64_t bytes)
{
    Spm__BlockRef ref = SPM__BLOCK_REF__INIT, *p = &ref;
    ref.sdb = id;
    ref.version = version;
    ref.bytes = bytes;
    spm_dataplane_publish(dp, node, from_agent, &p, 1);
}

/* NODE reports a DROP of (ID, 1): an eviction, or with CORRUPT a bad copy on node ON. */
static void report_drop(uint32_t node, spm_sdb_t id, int corrupt, uint32_t on)
{
    Spm__BlockRef ref = SPM__BLOCK_REF__INIT, *p = &ref;
    ref.sdb = id;
    ref.version = 1;
    ref.corrupt = corrupt;
    ref.node = on;
    spm_dataplane_drop(dp, node, &p, 1);
}

static int holds(spm_sdb_t id, uint32_t node)
{
    return spm_directory_holds(dir_of(), id, 1, node);
}

static int check_ok(uint32_t type, const void *data, size_t len)
{
    (void)type, (void)data, (void)len;
    return 0;
}

static int check_refuses(uint32_t type, const void *data, size_t len)
{
    (void)type, (void)data, (void)len;
    return SPM_EFORMAT;
}

/* An agent's or a client's STORE of (ID, 1) with LEN bytes fill(SEED), claiming CHECKSUM. */
static int store_block(spm_sdb_t id, size_t len, uint64_t seed, uint64_t checksum,
                       int (*check)(uint32_t, const void *, size_t))
{
    uint8_t buf[256];
    fill(buf, len, seed);
    Spm__Store st = SPM__STORE__INIT;
    st.sdb = id;
    st.version = 1;
    st.type = 3;
    st.checksum = checksum;
    return spm_dataplane_store(dp, &st, buf, len, check);
}

static uint64_t sum_of(size_t len, uint64_t seed)
{
    uint8_t buf[256];
    fill(buf, len, seed);
    return spm_checksum(buf, len);
}

/* ------------------------------------------------------------------ tests */

START_TEST(test_nodes_listed_and_reported)
{
    open_plane(2, 0);
    ck_assert_int_eq(spm_dataplane_node_up(dp, 5, "tcp://e:5", "k5"), 0);
    ck_assert_int_eq(spm_dataplane_node_up(dp, 0, "tcp://a:0", ""), 0);
    ck_assert_int_eq(spm_dataplane_node_up(dp, 2, "tcp://c:2", "k2"), 0);
    Spm__Node nodes[4], *ptrs[4];
    ck_assert_uint_eq(spm_dataplane_node_list(dp, nodes, ptrs, 4), 3);
    ck_assert_uint_eq(ptrs[0]->index, 0);
    ck_assert_str_eq(ptrs[0]->endpoint, "tcp://a:0");
    ck_assert_str_eq(ptrs[0]->key, "");
    ck_assert_uint_eq(ptrs[1]->index, 2);
    ck_assert_str_eq(ptrs[2]->endpoint, "tcp://e:5");
    ck_assert_str_eq(ptrs[2]->key, "k5");
    ck_assert_uint_eq(spm_dataplane_node_list(dp, nodes, ptrs, 2), 2);

    spm_dataplane_node_down(dp, 2);
    ck_assert_uint_eq(spm_dataplane_node_list(dp, nodes, ptrs, 4), 2);
    ck_assert_uint_eq(ptrs[0]->index, 0);
    ck_assert_uint_eq(ptrs[1]->index, 5);

    uint32_t h[] = {5};
    commit_output(1, 1, 100, h, 1, 0);
    Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
    hb.served = 3;
    hb.served_bytes = 300;
    hb.kept_bytes = 1000;
    spm_dataplane_node_report(dp, 5, &hb);
    spm_dp_node_stats_t ns;
    ck_assert_int_eq(spm_dataplane_node_stats(dp, 5, &ns), 1);
    ck_assert_uint_eq(ns.served, 3);
    ck_assert_uint_eq(ns.served_bytes, 300);
    ck_assert_uint_eq(ns.kept_bytes, 1000); /* as the agent says */
    ck_assert_uint_eq(ns.kept_blocks, 1);   /* as the directory says */
    ck_assert_int_eq(spm_dataplane_node_stats(dp, 77, &ns), 0);
    close_plane();
}
END_TEST

START_TEST(test_place_rotates_targets_store_last)
{
    open_plane(2, 4);
    uint32_t firsts = 0; /* bit per node that came first */
    for (spm_sdb_t id = 10; id < 14; id++) {
        Spm__PutReply r = SPM__PUT_REPLY__INIT;
        ck_assert_int_eq(spm_dataplane_place(dp, id, 3, 64, 0x77, &r), 0);
        ck_assert_uint_eq(r.replicas, 2);
        ck_assert_uint_ge(r.n_targets, 3);
        uint32_t seen = 0;
        for (size_t i = 0; i + 1 < r.n_targets; i++) {
            const Spm__Node *t = r.targets[i];
            ck_assert_uint_lt(t->index, 4);
            ck_assert_msg(!(seen & (1u << t->index)), "node %u named twice", t->index);
            seen |= 1u << t->index;
            char ep[32];
            snprintf(ep, sizeof ep, "tcp://n%u:7701", t->index);
            ck_assert_str_eq(t->endpoint, ep);
        }
        ck_assert_uint_eq(r.targets[r.n_targets - 1]->index, SPM_NODE_STORE); /* last resort */
        firsts |= 1u << r.targets[0]->index;
    }
    ck_assert_msg(firsts == 0xf, "first targets of 4 places: mask %#x", firsts);

    spm_dataplane_node_down(dp, 1);
    spm_dataplane_node_down(dp, 2);
    spm_dataplane_node_down(dp, 3);
    Spm__PutReply r = SPM__PUT_REPLY__INIT;
    ck_assert_int_eq(spm_dataplane_place(dp, 20, 3, 64, 0x77, &r), 0);
    ck_assert_uint_eq(r.n_targets, 2);
    ck_assert_uint_eq(r.targets[0]->index, 0);
    ck_assert_uint_eq(r.targets[1]->index, SPM_NODE_STORE);
    spm_dataplane_node_down(dp, 0);
    ck_assert_int_eq(spm_dataplane_place(dp, 21, 3, 64, 0x77, &r), 0);
    ck_assert_uint_eq(r.n_targets, 1);
    ck_assert_uint_eq(r.targets[0]->index, SPM_NODE_STORE);
    close_plane();
}
END_TEST

START_TEST(test_placed_holders_are_keepers)
{
    open_plane(2, 3);
    Spm__PutReply r = SPM__PUT_REPLY__INIT;
    ck_assert_int_eq(spm_dataplane_place(dp, 30, 3, 640, 0xabc, &r), 0);
    uint32_t kept[] = {r.targets[0]->index, r.targets[1]->index};
    spm_dataplane_placed(dp, 30, kept, 2);
    ck_assert_int_eq(holds(30, kept[0]), SPM_DIR_HELD_KEEPER);
    ck_assert_int_eq(holds(30, kept[1]), SPM_DIR_HELD_KEEPER);
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(dir_of(), 30, 1, &b), 0);
    ck_assert_uint_eq(b.keepers, 2);
    ck_assert_uint_eq(b.bytes, 640);
    ck_assert_uint_eq(b.checksum, 0xabc);

    Spm__GetReply g = SPM__GET_REPLY__INIT;
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_dataplane_get(dp, 30, 1, SPM_NODE_STORE, 0, &g, &data, &len), 0);
    ck_assert_ptr_null(data);
    ck_assert_uint_eq(g.n_holders, 2);
    ck_assert_uint_eq(g.checksum, 0xabc);
    ck_assert_uint_eq(g.bytes, 640);
    spm_dataplane_turn(dp, T0); /* as many as wanted: no copy */
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 0);
    close_plane();
}
END_TEST

START_TEST(test_placed_on_too_few_orders_copies)
{
    open_plane(2, 3);
    Spm__PutReply r = SPM__PUT_REPLY__INIT;
    ck_assert_int_eq(spm_dataplane_place(dp, 35, 3, 640, 0xabc, &r), 0);
    uint32_t kept = r.targets[0]->index;
    spm_dataplane_placed(dp, 35, &kept, 1); /* the other targets failed */
    spm_dataplane_turn(dp, T0);
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 1);
    const sent_t *s = first_sent(-1, SPM__ENVELOPE__BODY_COPY);
    ck_assert_uint_ne(s->node, kept);
    ck_assert_uint_eq(s->env->copy->sdb, 35);
    ck_assert_uint_eq(s->env->copy->type, 3); /* what the copy is checked against */
    ck_assert_uint_eq(s->env->copy->checksum, 0xabc);
    ck_assert_uint_eq(s->env->copy->bytes, 640);
    ck_assert_int_eq(s->env->copy->to_store, 0);
    ck_assert(copy_source(s->env->copy, kept));
    close_plane();
}
END_TEST

START_TEST(test_output_records_keepers_and_store)
{
    open_plane(2, 3);
    uint32_t h[] = {1, 2};
    uint64_t sum = commit_output(40, 1, 100, h, 2, 1);
    ck_assert_int_eq(holds(40, 1), SPM_DIR_HELD_KEEPER);
    ck_assert_int_eq(holds(40, 2), SPM_DIR_HELD_KEEPER);
    ck_assert_int_eq(holds(40, SPM_NODE_STORE), SPM_DIR_HELD_KEEPER);
    ck_assert_int_eq(holds(40, 0), 0);

    commit_output(41, 1, 50, h, 1, 0); /* not framed: the store has nothing */
    ck_assert_int_eq(holds(41, SPM_NODE_STORE), 0);
    ck_assert_int_eq(holds(41, 1), SPM_DIR_HELD_KEEPER);

    uint32_t where[8];
    uint64_t checksum = 0, bytes = 0;
    size_t n = spm_dataplane_locate(dp, 40, 1, where, 8, &checksum, &bytes);
    ck_assert_uint_eq(n, 2); /* the nodes, not the store */
    ck_assert((where[0] == 1 && where[1] == 2) || (where[0] == 2 && where[1] == 1));
    ck_assert_uint_eq(checksum, sum);
    ck_assert_uint_eq(bytes, 100);
    ck_assert_uint_eq(spm_dataplane_locate(dp, 42, 1, where, 8, &checksum, &bytes), 0);
    close_plane();
}
END_TEST

START_TEST(test_get_names_holders_but_the_requester)
{
    open_plane(2, 3);
    uint32_t h[] = {1, 2};
    uint64_t sum = commit_output(50, 1, 100, h, 2, 0);
    Spm__GetReply g = SPM__GET_REPLY__INIT;
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_dataplane_get(dp, 50, 1, 1, 0, &g, &data, &len), 0);
    ck_assert_ptr_null(data);
    ck_assert_uint_eq(g.n_holders, 1);
    ck_assert_uint_eq(g.n_holder_keys, 1);
    ck_assert_uint_eq(g.n_holder_nodes, 1);
    ck_assert_uint_eq(g.holder_nodes[0], 2);
    ck_assert_str_eq(g.holders[0], "tcp://n2:7701");
    ck_assert_str_eq(g.holder_keys[0], "key2");
    ck_assert_uint_eq(g.checksum, sum);
    ck_assert_uint_eq(g.bytes, 100);

    Spm__GetReply c = SPM__GET_REPLY__INIT;
    ck_assert_int_eq(spm_dataplane_get(dp, 50, 1, SPM_NODE_STORE, 0, &c, &data, &len), 0);
    ck_assert_uint_eq(c.n_holders, 2);
    close_plane();
}
END_TEST

START_TEST(test_get_bytes_from_the_store)
{
    open_plane(2, 2);
    store_output(60, 1, 200);
    commit_output(60, 1, 200, NULL, 0, 1);
    Spm__GetReply g = SPM__GET_REPLY__INIT;
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_dataplane_get(dp, 60, 1, 0, 0, &g, &data, &len), 0);
    ck_assert_uint_eq(g.n_holders, 0);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(len, 200);
    ck_assert_uint_eq(g.type, 3);
    uint8_t want[200];
    fill(want, 200, 60);
    ck_assert_int_eq(memcmp(data, want, 200), 0);
    free(data);

    /* STORE_ONLY: the bytes even when a node holds it */
    uint32_t h[] = {1};
    commit_output(60, 1, 200, h, 1, 1);
    Spm__GetReply s = SPM__GET_REPLY__INIT;
    ck_assert_int_eq(spm_dataplane_get(dp, 60, 1, 0, 1, &s, &data, &len), 0);
    ck_assert_uint_eq(s.n_holders, 0);
    ck_assert_uint_eq(len, 200);
    free(data);
    spm_dataplane_stats_t st;
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.store_in, 200);
    ck_assert_uint_eq(st.store_out, 400);
    close_plane();
}
END_TEST

START_TEST(test_get_says_a_block_was_lost)
{
    open_plane(2, 3);
    uint32_t h[] = {1};
    commit_output(70, 1, 100, h, 1, 0);
    spm_dataplane_node_down(dp, 1);
    Spm__GetReply g = SPM__GET_REPLY__INIT;
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_dataplane_get(dp, 70, 1, 0, 0, &g, &data, &len), SPM_ENOTFOUND);
    ck_assert_ptr_null(data);
    const char *why = spm_error_detail();
    ck_assert_msg(strstr(why, "SDB 70") && strstr(why, "lost"), "detail: %s", why);
    ck_assert_ptr_null(strchr(why, '\n'));

    ck_assert_int_eq(spm_dataplane_get(dp, 71, 1, 0, 0, &g, &data, &len), SPM_ENOTFOUND);
    why = spm_error_detail();
    ck_assert_msg(strstr(why, "SDB 71") && !strstr(why, "lost"), "detail: %s", why);
    close_plane();
}
END_TEST

START_TEST(test_garbage_drops_on_each_holder)
{
    open_plane(2, 4);
    uint32_t h01[] = {0, 1}, h1[] = {1}, h2[] = {2};
    commit_output(80, 1, 100, h01, 2, 0);
    commit_output(80, 2, 100, h1, 1, 0);
    store_output(81, 1, 50);
    commit_output(81, 1, 50, h2, 1, 1);
    commit_output(82, 1, 10, h2, 1, 0); /* live */

    spm_dataplane_garbage(dp, 80, 1);
    spm_dataplane_garbage(dp, 80, 2);
    spm_dataplane_garbage(dp, 81, 1);
    ck_assert_uint_eq(nsent, 0); /* with the turn's drops */
    spm_dataplane_turn(dp, T0);

    ck_assert_int_eq(count_sent(0, SPM__ENVELOPE__BODY_DROP), 1);
    ck_assert_int_eq(count_sent(1, SPM__ENVELOPE__BODY_DROP), 1);
    ck_assert_int_eq(count_sent(2, SPM__ENVELOPE__BODY_DROP), 1);
    ck_assert_int_eq(count_sent(3, SPM__ENVELOPE__BODY_DROP), 0);
    ck_assert_uint_eq(first_sent(0, SPM__ENVELOPE__BODY_DROP)->env->drop->n_blocks, 1);
    ck_assert(dropped_on(0, 80, 1));
    ck_assert_uint_eq(first_sent(1, SPM__ENVELOPE__BODY_DROP)->env->drop->n_blocks, 2);
    ck_assert(dropped_on(1, 80, 1));
    ck_assert(dropped_on(1, 80, 2));
    ck_assert_uint_eq(first_sent(2, SPM__ENVELOPE__BODY_DROP)->env->drop->n_blocks, 1);
    ck_assert(dropped_on(2, 81, 1));
    ck_assert_uint_eq(nsent, 3);

    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_store_get(store, 81, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(dir_of(), 80, 1, &b), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_directory_block(dir_of(), 82, 1, &b), 0);

    clear_sent();
    spm_dataplane_turn(dp, T0 + 1000);
    ck_assert_uint_eq(nsent, 0); /* sent once */
    close_plane();
}
END_TEST

START_TEST(test_discard_drops_on_every_node)
{
    open_plane(2, 4);
    uint32_t h0[] = {0}, h1[] = {1};
    commit_output(90, 1, 100, h0, 1, 0);
    store_output(90, 2, 60);
    commit_output(90, 2, 60, h1, 1, 1);
    spm_dataplane_node_down(dp, 3);

    spm_dataplane_garbage(dp, 90, 0);
    spm_dataplane_turn(dp, T0);
    for (uint32_t n = 0; n < 3; n++)
        ck_assert_msg(dropped_on(n, 90, 0), "node %u was not told to drop every version", n);
    ck_assert_int_eq(count_sent(3, SPM__ENVELOPE__BODY_DROP), 0); /* down */
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_store_get(store, 90, 2, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(dir_of(), 90, 1, &b), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_directory_block(dir_of(), 90, 2, &b), SPM_ENOTFOUND);
    close_plane();
}
END_TEST

START_TEST(test_death_orders_a_copy_from_live_holders)
{
    open_plane(2, 3);
    uint32_t h[] = {0, 1};
    uint64_t sum = commit_output(100, 1, 120, h, 2, 0);
    spm_dataplane_node_down(dp, 0);
    ck_assert_uint_eq(nsent, 0); /* from the next turn on */
    spm_dataplane_turn(dp, T0);

    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 1);
    const sent_t *s = first_sent(2, SPM__ENVELOPE__BODY_COPY); /* the one node without it */
    ck_assert_ptr_nonnull(s);
    const Spm__Copy *c = s->env->copy;
    ck_assert_uint_eq(c->sdb, 100);
    ck_assert_uint_eq(c->version, 1);
    ck_assert_uint_eq(c->type, 3); /* what the copy is checked against */
    ck_assert_uint_eq(c->checksum, sum);
    ck_assert_uint_eq(c->bytes, 120);
    ck_assert_int_eq(c->to_store, 0);
    ck_assert_uint_eq(c->n_sources, 1);
    ck_assert_uint_eq(c->sources[0]->index, 1);
    ck_assert_str_eq(c->sources[0]->endpoint, "tcp://n1:7701");
    ck_assert_str_eq(c->sources[0]->key, "key1");

    clear_sent();
    spm_dataplane_turn(dp, T0 + 1000); /* in flight: not ordered twice */
    ck_assert_uint_eq(nsent, 0);

    publish(2, 1, 100, 1, 120);
    ck_assert_int_eq(holds(100, 2), SPM_DIR_HELD_KEEPER);
    spm_dataplane_stats_t st;
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.copies, 1);
    ck_assert_uint_eq(st.copies_done, 1);
    ck_assert_uint_eq(st.dir.short_blocks, 0);
    spm_dataplane_turn(dp, LATER);
    ck_assert_uint_eq(nsent, 0);
    close_plane();
}
END_TEST

/* Three nodes keep (ID, 1) of 80 bytes fill(ID) for a VM that wants three copies; node 2 dies and
   a turn orders the one copy that the remaining nodes, which all hold it, cannot take. Returns
   the block's checksum. */
static uint64_t order_to_store(spm_sdb_t id)
{
    open_plane(3, 3);
    uint32_t h[] = {0, 1, 2};
    uint64_t sum = commit_output(id, 1, 80, h, 3, 0);
    spm_dataplane_node_down(dp, 2);
    spm_dataplane_turn(dp, T0);
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 1);
    return sum;
}

START_TEST(test_copy_to_store_when_every_node_holds)
{
    uint64_t sum = order_to_store(110);
    const sent_t *s = first_sent(-1, SPM__ENVELOPE__BODY_COPY);
    ck_assert(s->node == 0 || s->node == 1);
    const Spm__Copy *c = s->env->copy;
    ck_assert_int_eq(c->to_store, 1);
    ck_assert_uint_eq(c->sdb, 110);
    ck_assert_uint_eq(c->checksum, sum);
    ck_assert_uint_ge(c->n_sources, 1);
    ck_assert(!copy_source(c, 2));
    ck_assert(copy_source(c, s->node));

    /* the agent sends the copy it keeps */
    ck_assert_int_eq(store_block(110, 80, 110, sum, check_ok), 0);
    ck_assert_int_eq(holds(110, SPM_NODE_STORE), SPM_DIR_HELD_KEEPER);
    spm_dataplane_stats_t st;
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.dir.short_blocks, 0);
    clear_sent();
    spm_dataplane_turn(dp, LATER); /* durable now: nothing ordered again */
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 0);
    close_plane();
}
END_TEST

START_TEST(test_copy_to_store_counts_as_done)
{
    uint64_t sum = order_to_store(115);
    ck_assert_int_eq(store_block(115, 80, 115, sum, check_ok), 0);
    spm_dataplane_stats_t st;
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.copies, 1);
    ck_assert_msg(st.copies_done == 1, "the TO_STORE copy arrived, copies_done is %llu",
                  (unsigned long long)st.copies_done);
    close_plane();
}
END_TEST

/* A VM of N nodes that wants two copies; nodes 0 and 1 keep (ID, 1) of 100 bytes fill(ID), node 0
   dies and a turn orders one copy. Returns the node the COPY went to. */
static uint32_t order_after_death(spm_sdb_t id, uint32_t n)
{
    open_plane(2, n);
    uint32_t h[] = {0, 1};
    commit_output(id, 1, 100, h, 2, 0);
    spm_dataplane_node_down(dp, 0);
    spm_dataplane_turn(dp, T0);
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 1);
    return first_sent(-1, SPM__ENVELOPE__BODY_COPY)->node;
}

START_TEST(test_unordered_publish_makes_no_keeper)
{
    uint32_t target = order_after_death(120, 4), other = target == 2 ? 3 : 2;
    ck_assert(target == 2 || target == 3);

    publish(other, 1, 120, 1, 100); /* not ordered */
    ck_assert_int_eq(holds(120, other), 0);
    publish(3, 1, 121, 1, 100); /* a block nobody ordered or knows */
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(dir_of(), 121, 1, &b), SPM_ENOTFOUND);
    spm_dataplane_stats_t st;
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.copies_done, 0);

    publish(target, 0, 120, 1, 100); /* an IEU's read copy on the target is only a copy */
    ck_assert_int_eq(holds(120, target), SPM_DIR_HELD_COPY);
    publish(target, 1, 120, 1, 100);
    ck_assert_int_eq(holds(120, target), SPM_DIR_HELD_KEEPER);
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.copies_done, 1);
    publish(target, 1, 120, 1, 100); /* said twice: done once */
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.copies_done, 1);
    close_plane();
}
END_TEST

START_TEST(test_corrupt_report_spares_the_last_keeper)
{
    open_plane(2, 3);
    uint32_t h[] = {0, 1};
    commit_output(130, 1, 100, h, 2, 0);
    publish(2, 0, 130, 1, 100); /* an IEU on node 2 read it */
    ck_assert_int_eq(holds(130, 2), SPM_DIR_HELD_COPY);

    report_drop(2, 130, 1, 0); /* node 0's copy failed its checksum */
    ck_assert_int_eq(holds(130, 0), 0);
    report_drop(2, 130, 1, 1); /* node 1 is the last keeper: kept */
    ck_assert_int_eq(holds(130, 1), SPM_DIR_HELD_KEEPER);
    report_drop(1, 130, 1, 2); /* a bad read copy goes */
    ck_assert_int_eq(holds(130, 2), 0);
    spm_dataplane_stats_t st;
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.corrupt, 2);

    spm_dataplane_turn(dp, T0);
    ck_assert(dropped_on(0, 130, 1));
    ck_assert(dropped_on(2, 130, 1));
    ck_assert_int_eq(count_sent(1, SPM__ENVELOPE__BODY_DROP), 0);
    Spm__GetReply g = SPM__GET_REPLY__INIT;
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_dataplane_get(dp, 130, 1, SPM_NODE_STORE, 0, &g, &data, &len), 0);
    ck_assert_uint_eq(g.n_holders, 1);
    ck_assert_uint_eq(g.holder_nodes[0], 1);
    close_plane();
}
END_TEST

START_TEST(test_eviction_never_drops_a_keeper)
{
    open_plane(2, 2);
    uint32_t h[] = {0};
    commit_output(140, 1, 100, h, 1, 0);
    publish(1, 0, 140, 1, 100);
    report_drop(0, 140, 0, 0); /* node 0's IEU evicted what its node keeps */
    ck_assert_int_eq(holds(140, 0), SPM_DIR_HELD_KEEPER);
    report_drop(1, 140, 0, 0); /* names node 0 but is not a corrupt report: node 1's own */
    ck_assert_int_eq(holds(140, 0), SPM_DIR_HELD_KEEPER);
    ck_assert_int_eq(holds(140, 1), 0);
    close_plane();
}
END_TEST

START_TEST(test_store_checks_the_directory_checksum)
{
    open_plane(2, 2);
    uint64_t good = sum_of(32, 1), other = sum_of(32, 2);
    ck_assert_uint_ne(good, other);
    Spm__PutReply r = SPM__PUT_REPLY__INIT;
    ck_assert_int_eq(spm_dataplane_place(dp, 150, 3, 32, good, &r), 0);

    ck_assert_int_eq(store_block(150, 32, 2, other, check_ok), SPM_EFORMAT); /* other bytes */
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "150"));
    ck_assert_int_eq(store_block(150, 32, 1, other, check_ok), SPM_EFORMAT); /* wrong claim */
    ck_assert_int_eq(store_block(150, 32, 1, good, check_refuses), SPM_EFORMAT);
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_store_get(store, 150, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    ck_assert_int_eq(holds(150, SPM_NODE_STORE), 0);

    ck_assert_int_eq(store_block(150, 32, 1, good, check_ok), 0);
    ck_assert_int_eq(spm_store_get(store, 150, 1, NULL, NULL, &data, &len), 0);
    ck_assert_uint_eq(len, 32);
    ck_assert_uint_eq(spm_checksum(data, len), good);
    free(data);
    ck_assert_int_eq(holds(150, SPM_NODE_STORE), SPM_DIR_HELD_KEEPER);
    spm_dataplane_stats_t st;
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.store_in, 32);
    close_plane();
}
END_TEST

START_TEST(test_late_copies_are_ordered_again)
{
    order_after_death(160, 4);

    clear_sent();
    spm_dataplane_turn(dp, T0 + 1000000); /* a second later: still waiting */
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 0);
    spm_dataplane_turn(dp, T0 + LATER); /* not reported in time */
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 1);
    uint32_t target = first_sent(-1, SPM__ENVELOPE__BODY_COPY)->node;
    ck_assert(target == 2 || target == 3);

    clear_sent();
    spm_dataplane_node_down(dp, target); /* its target died: ordered elsewhere at once */
    spm_dataplane_turn(dp, T0 + LATER + 1000);
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 1);
    uint32_t next = first_sent(-1, SPM__ENVELOPE__BODY_COPY)->node;
    ck_assert_uint_ne(next, target);
    ck_assert(next == 2 || next == 3);
    ck_assert(!copy_source(first_sent(-1, SPM__ENVELOPE__BODY_COPY)->env->copy, 0));

    publish(next, 1, 160, 1, 100);
    spm_dataplane_stats_t st;
    spm_dataplane_stats(dp, &st);
    ck_assert_uint_eq(st.copies, 3);
    ck_assert_uint_eq(st.copies_done, 1);
    clear_sent();
    spm_dataplane_turn(dp, 2 * LATER);
    ck_assert_int_eq(count_all(SPM__ENVELOPE__BODY_COPY), 0);
    close_plane();
}
END_TEST

START_TEST(test_commit_says_when_the_store_changed)
{
    open_plane(2, 1);
    int wrote = -1;
    ck_assert_int_eq(spm_dataplane_store_commit(dp, &wrote), 0);
    ck_assert_int_eq(wrote, 0);

    /* a block nobody announced is not wanted: nothing is written */
    ck_assert_int_eq(store_block(170, 16, 170, sum_of(16, 170), check_ok), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_dataplane_store_commit(dp, &wrote), 0);
    ck_assert_int_eq(wrote, 0);
    ck_assert_int_eq(spm_directory_expect(spm_dataplane_directory(dp), 170, 1, 16, sum_of(16, 170)),
                     0);
    ck_assert_int_eq(store_block(170, 16, 170, sum_of(16, 170), check_ok), 0);
    ck_assert_int_eq(spm_dataplane_store_commit(dp, &wrote), 0);
    ck_assert_int_eq(wrote, 1);
    ck_assert_int_eq(spm_dataplane_store_commit(dp, &wrote), 0);
    ck_assert_int_eq(wrote, 0);

    spm_dataplane_garbage(dp, 170, 1);
    spm_dataplane_turn(dp, T0);
    ck_assert_int_eq(spm_dataplane_store_commit(dp, &wrote), 0);
    ck_assert_int_eq(wrote, 1);
    void *data = NULL;
    size_t len = 0;
    ck_assert_int_eq(spm_store_get(store, 170, 1, NULL, NULL, &data, &len), SPM_ENOTFOUND);
    close_plane();
}
END_TEST

/*  The child of test_failed_store_deletions_are_tried_again: returns 0 or what went wrong. */
static int fill_then_collect(void)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {4 << 20, 4 << 20};
    spm_store_t *st = spm_store_open_map(dir, 1 << 20);
    if (!st || setrlimit(RLIMIT_FSIZE, &lim) != 0)
        return 100;
    spm_dataplane_t *plane = spm_dataplane_new(st, 2, record, NULL);
    uint8_t buf[1500];
    int i, rc = 0;
    for (i = 1; i <= 4000 && rc == 0; i++) {
        fill(buf, sizeof buf, (uint64_t)i);
        rc = spm_store_put(st, (spm_sdb_t)i, 1, 7, buf, sizeof buf);
    }
    int stored = i - 2;
    if (!plane || rc != SPM_EFULL)
        return 101;
    for (i = 1; i <= stored; i++) /* a discarded job: every version of each of its SDBs */
        spm_dataplane_garbage(plane, (spm_sdb_t)i, 0);
    spm_dataplane_turn(plane, T0); /* one transaction for all: too big for a full store */
    spm_dataplane_stats_t ds;
    spm_dataplane_stats(plane, &ds);
    uint64_t blocks = 0, bytes = 0;
    if (spm_store_usage(st, &blocks, &bytes) != 0 || blocks != (uint64_t)stored ||
        ds.store_pending != (uint64_t)stored) {
        fprintf(stderr, "after the first turn: %llu of %d blocks stored, %llu pending\n",
                (unsigned long long)blocks, stored, (unsigned long long)ds.store_pending);
        return 102;
    }
    spm_dataplane_turn(plane, T0 + 1000); /* not tried again at once */
    if (spm_store_usage(st, &blocks, &bytes) != 0 || blocks != (uint64_t)stored)
        return 103;
    for (int t = 1; t <= 10 && blocks; t++) { /* then in small transactions until all are gone */
        spm_dataplane_turn(plane, T0 + (uint64_t)t * 1000000);
        if (spm_store_usage(st, &blocks, &bytes) != 0)
            return 104;
    }
    spm_dataplane_stats(plane, &ds);
    if (blocks || ds.store_pending) {
        fprintf(stderr, "%llu of %d blocks left, %llu pending\n", (unsigned long long)blocks,
                stored, (unsigned long long)ds.store_pending);
        return 105;
    }
    spm_dataplane_destroy(&plane);
    spm_store_destroy(&st);
    return 0;
}

/*  A store filled until a put failed (a file size limit stands in for a
    full disk), and a discarded job's blocks to delete: the one deletion
    of the turn fails, the blocks are kept (status says how many wait)
    and deleted by the turns after, in small transactions. */
START_TEST(test_failed_store_deletions_are_tried_again)
{
    static unsigned seq;
    snprintf(dir, sizeof dir, "%s/%d-full%u", base, (int)getpid(), seq++);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(fill_then_collect());
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

START_TEST(test_garbage_stays_gone_after_a_late_copy)
{
    ck_assert_uint_eq(order_after_death(180, 3), 2);

    spm_dataplane_garbage(dp, 180, 1); /* garbage while node 2 copies it */
    spm_dataplane_turn(dp, T0 + 1000);
    publish(2, 1, 180, 1, 100); /* the copy it was ordered to make is done */
    spm_dir_block_t b;
    ck_assert_msg(spm_directory_block(dir_of(), 180, 1, &b) == SPM_ENOTFOUND,
                  "garbage SDB 180 v1 is back in the directory, kept by %u nodes", b.keepers);
    close_plane();
}
END_TEST

static Suite *dataplane_suite(void)
{
    Suite *s = suite_create("dataplane");
    const spm_test_case_t c = {.unchecked_setup = base_setup, .unchecked_teardown = base_teardown};
    /* a thousand or so synced puts: under a second alone, more on a busy disk */
    const spm_test_case_t synced = {
        .unchecked_setup = base_setup, .unchecked_teardown = base_teardown, .timeout_s = 30};
    SPM_TEST_ADD(s, &c, test_nodes_listed_and_reported);
    SPM_TEST_ADD(s, &c, test_place_rotates_targets_store_last);
    SPM_TEST_ADD(s, &c, test_placed_holders_are_keepers);
    SPM_TEST_ADD(s, &c, test_placed_on_too_few_orders_copies);
    SPM_TEST_ADD(s, &c, test_output_records_keepers_and_store);
    SPM_TEST_ADD(s, &c, test_get_names_holders_but_the_requester);
    SPM_TEST_ADD(s, &c, test_get_bytes_from_the_store);
    SPM_TEST_ADD(s, &c, test_get_says_a_block_was_lost);
    SPM_TEST_ADD(s, &c, test_garbage_drops_on_each_holder);
    SPM_TEST_ADD(s, &c, test_discard_drops_on_every_node);
    SPM_TEST_ADD(s, &c, test_death_orders_a_copy_from_live_holders);
    SPM_TEST_ADD(s, &c, test_copy_to_store_when_every_node_holds);
    SPM_TEST_ADD(s, &c, test_copy_to_store_counts_as_done);
    SPM_TEST_ADD(s, &c, test_unordered_publish_makes_no_keeper);
    SPM_TEST_ADD(s, &c, test_corrupt_report_spares_the_last_keeper);
    SPM_TEST_ADD(s, &c, test_eviction_never_drops_a_keeper);
    SPM_TEST_ADD(s, &c, test_store_checks_the_directory_checksum);
    SPM_TEST_ADD(s, &c, test_late_copies_are_ordered_again);
    SPM_TEST_ADD(s, &c, test_commit_says_when_the_store_changed);
    SPM_TEST_ADD(s, &synced, test_failed_store_deletions_are_tried_again);
    SPM_TEST_ADD(s, &c, test_garbage_stays_gone_after_a_late_copy);
    return s;
}

SPM_TEST_MAIN(dataplane_suite)
