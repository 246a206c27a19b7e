/*  Tests of datacache/directory: the center's map from block versions to the nodes that hold
    them. The directory is plain memory, so every test builds its own table and asks it. */
#include "datacache/directory.h"
#include "tests/check_main.h"

#include <stdio.h>
#include <string.h>

/* A directory wanting REPLICAS keepers with nodes 0..N-1 up (endpoint "tcp://nI:7701"). */
static spm_directory_t *dir_with_nodes(uint32_t replicas, uint32_t n)
{
    spm_directory_t *d = spm_directory_new(replicas);
    ck_assert_ptr_nonnull(d);
    for (uint32_t i = 0; i < n; i++) {
        char ep[32], key[16];
        snprintf(ep, sizeof ep, "tcp://n%u:7701", i);
        snprintf(key, sizeof key, "key%u", i);
        ck_assert_int_eq(spm_directory_node_up(d, i, ep, key), 0);
    }
    return d;
}

static void keep(spm_directory_t *d, spm_sdb_t id, uint64_t bytes, uint32_t node)
{
    ck_assert_int_eq(spm_directory_add(d, id, 1, bytes, 0x5000 + id, node, SPM_DIR_KEEPER), 0);
}

static void copy(spm_directory_t *d, spm_sdb_t id, uint64_t bytes, uint32_t node)
{
    ck_assert_int_eq(spm_directory_add(d, id, 1, bytes, 0x5000 + id, node, SPM_DIR_COPY), 0);
}

/* Takes every short block into IDS (up to MAX); returns how many. */
static size_t take_all(spm_directory_t *d, spm_sdb_t *ids, size_t max)
{
    size_t k = 0;
    spm_sdb_t id;
    uint64_t version;
    while (spm_directory_short_take(d, &id, &version)) {
        ck_assert_uint_eq(version, 1);
        ck_assert_uint_lt(k, max);
        ids[k++] = id;
    }
    return k;
}

static int contains(const spm_sdb_t *ids, size_t n, spm_sdb_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

START_TEST(test_nodes_up_and_down)
{
    spm_directory_t *d = dir_with_nodes(2, 0);
    ck_assert_uint_eq(spm_directory_replicas(d), 2);
    ck_assert_int_eq(spm_directory_node_up(d, 5, "tcp://a:1", "ka"), 0);
    ck_assert_int_eq(spm_directory_node_up(d, 2, "tcp://b:2", ""), 0);
    ck_assert_int_eq(spm_directory_node_up(d, SPM_NODE_STORE, "tcp://c:3", ""), SPM_EINVAL);

    uint32_t nodes[4];
    ck_assert_uint_eq(spm_directory_nodes(d, nodes, 4), 2);
    ck_assert_uint_eq(nodes[0], 2); /* index order */
    ck_assert_uint_eq(nodes[1], 5);
    ck_assert_uint_eq(spm_directory_nodes(d, nodes, 1), 2); /* how many are up, past MAX */

    const char *ep = NULL, *key = NULL;
    ck_assert_int_eq(spm_directory_node(d, 5, &ep, &key), 1);
    ck_assert_str_eq(ep, "tcp://a:1");
    ck_assert_str_eq(key, "ka");
    ck_assert_int_eq(spm_directory_node(d, 3, &ep, &key), 0);

    spm_directory_node_down(d, 5);
    ck_assert_int_eq(spm_directory_node(d, 5, NULL, NULL), 0);
    ck_assert_uint_eq(spm_directory_nodes(d, nodes, 4), 1);
    ck_assert_uint_eq(nodes[0], 2);
    spm_directory_destroy(&d);
    ck_assert_ptr_null(d);
}
END_TEST

START_TEST(test_copy_never_demotes_a_keeper)
{
    spm_directory_t *d = dir_with_nodes(2, 2);
    copy(d, 10, 100, 1);
    ck_assert_int_eq(spm_directory_holds(d, 10, 1, 1), SPM_DIR_HELD_COPY);
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(d, 10, 1, &b), 0);
    ck_assert_uint_eq(b.keepers, 0);
    ck_assert_uint_eq(b.holders, 1);

    keep(d, 10, 100, 1); /* the copy becomes a keeper */
    ck_assert_int_eq(spm_directory_holds(d, 10, 1, 1), SPM_DIR_HELD_KEEPER);
    copy(d, 10, 100, 1); /* a later PUBLISH of the same node's cache */
    ck_assert_int_eq(spm_directory_holds(d, 10, 1, 1), SPM_DIR_HELD_KEEPER);
    ck_assert_int_eq(spm_directory_block(d, 10, 1, &b), 0);
    ck_assert_uint_eq(b.keepers, 1);
    ck_assert_uint_eq(b.holders, 1);
    ck_assert_uint_eq(b.bytes, 100);
    ck_assert_uint_eq(b.checksum, 0x5000 + 10);

    keep(d, 10, 100, 0);
    ck_assert_int_eq(spm_directory_block(d, 10, 1, &b), 0);
    ck_assert_uint_eq(b.keepers, 2);
    ck_assert_int_eq(spm_directory_holds(d, 10, 1, 7), 0);
    ck_assert_int_eq(spm_directory_holds(d, 10, 2, 0), 0); /* another version */
    ck_assert_int_eq(spm_directory_block(d, 11, 1, &b), SPM_ENOTFOUND);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_holders_keepers_first_and_rotated)
{
    spm_directory_t *d = dir_with_nodes(3, 5);
    copy(d, 20, 10, 3);
    keep(d, 20, 10, 0);
    copy(d, 20, 10, 4);
    keep(d, 20, 10, 1);
    keep(d, 20, 10, 2);

    int first[3] = {0};
    for (int call = 0; call < 10; call++) {
        uint32_t h[8];
        ck_assert_uint_eq(spm_directory_holders(d, 20, 1, h, 8), 5);
        for (int i = 0; i < 3; i++)
            ck_assert_msg(h[i] <= 2, "call %d: holder %d is %u, a copy before a keeper", call, i,
                          h[i]);
        ck_assert_msg(h[0] != h[1] && h[1] != h[2] && h[0] != h[2], "a keeper named twice");
        ck_assert((h[3] == 3 && h[4] == 4) || (h[3] == 4 && h[4] == 3));
        first[h[0]]++;
    }
    for (int i = 0; i < 3; i++)
        ck_assert_msg(first[i] > 0, "keeper %d never came first in 10 calls", i);

    uint32_t one[1] = {99};
    ck_assert_uint_eq(spm_directory_holders(d, 20, 1, one, 1), 5); /* count past MAX */
    ck_assert_uint_le(one[0], 2);
    ck_assert_uint_eq(spm_directory_holders(d, 21, 1, one, 1), 0);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_cost_is_zero_on_a_holder)
{
    spm_directory_t *d = dir_with_nodes(2, 3);
    keep(d, 30, 4096, 0);
    copy(d, 30, 4096, 1);
    ck_assert_uint_eq(spm_directory_cost(d, 30, 1, 0), 0);
    ck_assert_uint_eq(spm_directory_cost(d, 30, 1, 1), 0);
    ck_assert_uint_eq(spm_directory_cost(d, 30, 1, 2), 4096);
    ck_assert_uint_eq(spm_directory_cost(d, 31, 1, 2), 0); /* unknown: size unknown */
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_node_down_queues_short_and_counts_lost)
{
    spm_directory_t *d = dir_with_nodes(2, 4);
    keep(d, 1, 10, 1), keep(d, 1, 10, 2);                    /* 1: falls to one keeper */
    keep(d, 2, 10, 1), keep(d, 2, 10, 2), keep(d, 2, 10, 3); /* 2: still two */
    keep(d, 3, 10, 2), copy(d, 3, 10, 1);                    /* 3: only a copy died */
    keep(d, 4, 10, 1);                                       /* 4: lost */
    keep(d, 5, 10, 1), copy(d, 5, 10, 2);                    /* 5: a copy is left, no keeper */
    copy(d, 6, 10, 1);                                       /* 6: lost (its last holder) */
    keep(d, 7, 10, 2), keep(d, 7, 10, 3);                    /* 7: not on node 1 */
    ck_assert_int_eq(spm_directory_add(d, 8, 1, 10, 1, SPM_NODE_STORE, SPM_DIR_KEEPER), 0);
    keep(d, 8, 10, 1); /* 8: the store keeps it */

    ck_assert_uint_eq(spm_directory_node_down(d, 1), 2);
    spm_sdb_t ids[16];
    size_t n = take_all(d, ids, 16);
    ck_assert_uint_eq(n, 2);
    ck_assert(contains(ids, n, 1));
    ck_assert(contains(ids, n, 5));
    ck_assert_uint_eq(take_all(d, ids, 16), 0); /* each only once */

    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(d, 4, 1, &b), 0);
    ck_assert_int_eq(b.lost, 1);
    ck_assert_uint_eq(b.holders, 0);
    ck_assert_int_eq(spm_directory_block(d, 6, 1, &b), 0);
    ck_assert_int_eq(b.lost, 1);
    ck_assert_int_eq(spm_directory_block(d, 1, 1, &b), 0);
    ck_assert_int_eq(b.lost, 0);
    ck_assert_uint_eq(b.keepers, 1);
    ck_assert_uint_eq(b.holders, 1);
    for (spm_sdb_t id = 1; id <= 8; id++)
        ck_assert_msg(spm_directory_holds(d, id, 1, 1) == 0, "the dead node still holds %llu",
                      (unsigned long long)id);
    uint32_t h[8];
    ck_assert_uint_eq(spm_directory_holders(d, 2, 1, h, 8), 2);
    ck_assert(h[0] != 1 && h[1] != 1);

    spm_dir_stats_t st;
    spm_directory_stats(d, &st);
    ck_assert_uint_eq(st.lost, 2);

    ck_assert_uint_eq(spm_directory_node_down(d, 1), 0); /* again: nothing more */
    ck_assert_uint_eq(take_all(d, ids, 16), 0);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_short_queued_once_until_taken)
{
    spm_directory_t *d = dir_with_nodes(3, 4);
    keep(d, 40, 10, 0), keep(d, 40, 10, 1), keep(d, 40, 10, 2);
    ck_assert_uint_eq(spm_directory_node_down(d, 0), 0);
    ck_assert_uint_eq(spm_directory_node_down(d, 1), 0); /* short twice over, queued once */
    spm_sdb_t ids[4];
    ck_assert_uint_eq(take_all(d, ids, 4), 1);
    ck_assert_uint_eq(ids[0], 40);

    spm_directory_short_again(d, 40, 1); /* its copy failed */
    ck_assert_uint_eq(take_all(d, ids, 4), 1);
    ck_assert_uint_eq(ids[0], 40);

    keep(d, 40, 10, 3);
    spm_directory_drop(d, 40, 1, 3); /* a keeper dropped leaves it short, as a death does */
    ck_assert_uint_eq(take_all(d, ids, 4), 1);
    ck_assert_uint_eq(ids[0], 40);

    ck_assert_int_eq(spm_directory_node_up(d, 0, "tcp://n0:7701", ""), 0); /* back */
    keep(d, 41, 10, 2), keep(d, 41, 10, 3), keep(d, 41, 10, 0);
    spm_directory_short_again(d, 41, 1); /* not short: a no-op */
    spm_directory_short_again(d, 42, 1); /* unknown */
    ck_assert_uint_eq(take_all(d, ids, 4), 0);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_store_is_never_short)
{
    spm_directory_t *d = dir_with_nodes(3, 2);
    ck_assert_int_eq(spm_directory_add(d, 50, 1, 10, 7, SPM_NODE_STORE, SPM_DIR_KEEPER), 0);
    keep(d, 50, 10, 0);
    ck_assert_int_eq(spm_directory_holds(d, 50, 1, SPM_NODE_STORE), SPM_DIR_HELD_KEEPER);
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(d, 50, 1, &b), 0);
    ck_assert_uint_eq(b.keepers, 2); /* the store included */

    spm_dir_stats_t st;
    spm_directory_stats(d, &st);
    ck_assert_uint_eq(st.short_blocks, 0);

    ck_assert_uint_eq(spm_directory_node_down(d, 0), 0);
    spm_directory_short_again(d, 50, 1);
    spm_sdb_t id;
    uint64_t version;
    ck_assert_int_eq(spm_directory_short_take(d, &id, &version), 0);
    spm_directory_stats(d, &st);
    ck_assert_uint_eq(st.short_blocks, 0);
    ck_assert_uint_eq(st.lost, 0);
    ck_assert_int_eq(spm_directory_block(d, 50, 1, &b), 0);
    ck_assert_int_eq(b.lost, 0);
    ck_assert_uint_eq(b.keepers, 1);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_short_take_skips_forgotten_and_satisfied)
{
    spm_directory_t *d = dir_with_nodes(2, 4);
    keep(d, 60, 10, 0), keep(d, 60, 10, 1); /* forgotten before it is taken */
    keep(d, 61, 10, 0), keep(d, 61, 10, 2); /* given a keeper again before it is taken */
    keep(d, 62, 10, 0), keep(d, 62, 10, 3); /* still short */
    ck_assert_uint_eq(spm_directory_node_down(d, 0), 0);
    spm_directory_forget(d, 60, 1, NULL, NULL);
    keep(d, 61, 10, 3);
    spm_sdb_t ids[4];
    ck_assert_uint_eq(take_all(d, ids, 4), 1);
    ck_assert_uint_eq(ids[0], 62);
    spm_directory_destroy(&d);
}
END_TEST

typedef struct {
    uint32_t node[16];
    spm_sdb_t id[16];
    uint64_t version[16];
    size_t n;
} told_t;

static void tell(void *arg, uint32_t node, spm_sdb_t id, uint64_t version)
{
    told_t *t = arg;
    ck_assert_uint_lt(t->n, 16);
    t->node[t->n] = node;
    t->id[t->n] = id;
    t->version[t->n++] = version;
}

/* How often TOLD names (NODE, ID, VERSION). */
static int told_count(const told_t *t, uint32_t node, spm_sdb_t id, uint64_t version)
{
    int k = 0;
    for (size_t i = 0; i < t->n; i++)
        k += t->node[i] == node && t->id[i] == id && t->version[i] == version;
    return k;
}

START_TEST(test_forget_tells_each_holder_once)
{
    spm_directory_t *d = dir_with_nodes(2, 3);
    keep(d, 70, 10, 0);
    copy(d, 70, 10, 1);
    ck_assert_int_eq(spm_directory_add(d, 70, 1, 10, 1, SPM_NODE_STORE, SPM_DIR_KEEPER), 0);
    ck_assert_int_eq(spm_directory_add(d, 70, 2, 20, 2, 2, SPM_DIR_KEEPER), 0);

    told_t t = {0};
    spm_directory_forget(d, 70, 1, tell, &t);
    ck_assert_uint_eq(t.n, 3);
    ck_assert_int_eq(told_count(&t, 0, 70, 1), 1);
    ck_assert_int_eq(told_count(&t, 1, 70, 1), 1);
    ck_assert_int_eq(told_count(&t, SPM_NODE_STORE, 70, 1), 1);
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(d, 70, 1, &b), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_directory_block(d, 70, 2, &b), 0); /* the other version stays */
    ck_assert_int_eq(spm_directory_holds(d, 70, 2, 2), SPM_DIR_HELD_KEEPER);
    uint32_t h[4];
    ck_assert_uint_eq(spm_directory_holders(d, 70, 1, h, 4), 0);

    t.n = 0;
    spm_directory_forget(d, 70, 1, tell, &t); /* forgotten already */
    ck_assert_uint_eq(t.n, 0);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_forget_version_zero_forgets_every_version)
{
    spm_directory_t *d = dir_with_nodes(2, 3);
    for (uint64_t v = 1; v <= 3; v++)
        ck_assert_int_eq(spm_directory_add(d, 80, v, 10, v, (uint32_t)(v - 1), SPM_DIR_KEEPER), 0);
    ck_assert_int_eq(spm_directory_add(d, 80, 3, 10, 3, 0, SPM_DIR_COPY), 0);
    keep(d, 81, 10, 0); /* another SDB */

    told_t t = {0};
    spm_directory_forget(d, 80, 0, tell, &t);
    ck_assert_uint_eq(t.n, 4);
    ck_assert_int_eq(told_count(&t, 0, 80, 1), 1);
    ck_assert_int_eq(told_count(&t, 1, 80, 2), 1);
    ck_assert_int_eq(told_count(&t, 2, 80, 3), 1);
    ck_assert_int_eq(told_count(&t, 0, 80, 3), 1);
    spm_dir_block_t b;
    for (uint64_t v = 1; v <= 3; v++)
        ck_assert_int_eq(spm_directory_block(d, 80, v, &b), SPM_ENOTFOUND);
    ck_assert_int_eq(spm_directory_block(d, 81, 1, &b), 0);
    spm_dir_stats_t st;
    spm_directory_stats(d, &st);
    ck_assert_uint_eq(st.blocks, 1);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_node_bytes_follow_the_table)
{
    spm_directory_t *d = dir_with_nodes(2, 3);
    uint64_t blocks = 99;
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 0);
    ck_assert_uint_eq(blocks, 0);

    keep(d, 90, 100, 1);
    keep(d, 91, 250, 1);
    copy(d, 92, 1000, 1); /* a copy is not kept */
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 350);
    ck_assert_uint_eq(blocks, 2);
    keep(d, 91, 250, 1); /* said twice: counted once */
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 350);
    ck_assert_uint_eq(blocks, 2);

    keep(d, 92, 1000, 1); /* the copy becomes a keeper */
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 1350);
    ck_assert_uint_eq(blocks, 3);

    keep(d, 90, 100, 2); /* so that the drop below leaves a keeper */
    spm_directory_drop(d, 90, 1, 1);
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 1250);
    ck_assert_uint_eq(blocks, 2);

    spm_directory_forget(d, 91, 1, NULL, NULL);
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 1000);
    ck_assert_uint_eq(blocks, 1);
    ck_assert_uint_eq(spm_directory_node_bytes(d, 2, &blocks), 100);
    ck_assert_uint_eq(blocks, 1);

    spm_directory_node_down(d, 1);
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 0);
    ck_assert_uint_eq(blocks, 0);
    ck_assert_uint_eq(spm_directory_node_bytes(d, 2, &blocks), 100);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_stats_count_the_table)
{
    spm_directory_t *d = dir_with_nodes(2, 3);
    keep(d, 100, 100, 0), keep(d, 100, 100, 1); /* enough keepers */
    keep(d, 101, 50, 0);                        /* short */
    ck_assert_int_eq(spm_directory_add(d, 100, 2, 7, 1, 2, SPM_DIR_KEEPER), 0);
    copy(d, 102, 3, 2);
    spm_dir_stats_t st;
    spm_directory_stats(d, &st);
    ck_assert_uint_eq(st.blocks, 4);
    ck_assert_uint_eq(st.bytes, 160);
    ck_assert_uint_eq(st.short_blocks, 3); /* 101, 100 v2, 102 */
    ck_assert_uint_eq(st.lost, 0);

    spm_directory_node_down(d, 2); /* 100 v2 and 102 lost */
    spm_directory_stats(d, &st);
    ck_assert_uint_eq(st.blocks, 4);
    ck_assert_uint_eq(st.short_blocks, 1);
    ck_assert_uint_eq(st.lost, 2);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_adds_for_a_node_down_are_ignored)
{
    spm_directory_t *d = dir_with_nodes(2, 2);
    ck_assert_int_eq(spm_directory_add(d, 110, 1, 10, 1, 7, SPM_DIR_KEEPER), 0); /* never up */
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(d, 110, 1, &b), SPM_ENOTFOUND);

    keep(d, 111, 10, 0);
    keep(d, 111, 10, 1);
    spm_directory_node_down(d, 1);
    keep(d, 111, 10, 1); /* died while its message was on its way */
    keep(d, 112, 10, 1);
    ck_assert_int_eq(spm_directory_holds(d, 111, 1, 1), 0);
    ck_assert_int_eq(spm_directory_block(d, 111, 1, &b), 0);
    ck_assert_uint_eq(b.holders, 1);
    ck_assert_int_eq(spm_directory_block(d, 112, 1, &b), SPM_ENOTFOUND);
    uint64_t blocks;
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 0);
    ck_assert_uint_eq(blocks, 0);

    ck_assert_int_eq(spm_directory_node_up(d, 1, "tcp://n1:7702", ""), 0); /* back, empty */
    ck_assert_int_eq(spm_directory_holds(d, 111, 1, 1), 0);
    keep(d, 111, 10, 1);
    ck_assert_int_eq(spm_directory_holds(d, 111, 1, 1), SPM_DIR_HELD_KEEPER);
    spm_directory_destroy(&d);
}
END_TEST

START_TEST(test_expect_knows_size_without_holder)
{
    spm_directory_t *d = dir_with_nodes(2, 2);
    ck_assert_int_eq(spm_directory_expect(d, 120, 1, 500, 0x1234), 0);
    spm_dir_block_t b;
    ck_assert_int_eq(spm_directory_block(d, 120, 1, &b), 0);
    ck_assert_uint_eq(b.bytes, 500);
    ck_assert_uint_eq(b.checksum, 0x1234);
    ck_assert_uint_eq(b.keepers, 0);
    ck_assert_uint_eq(b.holders, 0);
    ck_assert_int_eq(b.lost, 0);
    uint32_t h[2];
    ck_assert_uint_eq(spm_directory_holders(d, 120, 1, h, 2), 0);
    ck_assert_uint_eq(spm_directory_cost(d, 120, 1, 0), 500);
    spm_sdb_t id;
    uint64_t version;
    ck_assert_int_eq(spm_directory_short_take(d, &id, &version), 0);

    /* PLACED says only who keeps it: size and checksum stay the expected ones */
    ck_assert_int_eq(spm_directory_add(d, 120, 1, 0, 0, 1, SPM_DIR_KEEPER), 0);
    ck_assert_int_eq(spm_directory_block(d, 120, 1, &b), 0);
    ck_assert_uint_eq(b.bytes, 500);
    ck_assert_uint_eq(b.checksum, 0x1234);
    ck_assert_uint_eq(b.keepers, 1);
    uint64_t blocks;
    ck_assert_uint_eq(spm_directory_node_bytes(d, 1, &blocks), 500);
    ck_assert_uint_eq(blocks, 1);
    spm_directory_destroy(&d);
}
END_TEST

static Suite *directory_suite(void)
{
    Suite *s = suite_create("directory");
    SPM_TEST_ADD(s, NULL, test_nodes_up_and_down);
    SPM_TEST_ADD(s, NULL, test_copy_never_demotes_a_keeper);
    SPM_TEST_ADD(s, NULL, test_holders_keepers_first_and_rotated);
    SPM_TEST_ADD(s, NULL, test_cost_is_zero_on_a_holder);
    SPM_TEST_ADD(s, NULL, test_node_down_queues_short_and_counts_lost);
    SPM_TEST_ADD(s, NULL, test_short_queued_once_until_taken);
    SPM_TEST_ADD(s, NULL, test_store_is_never_short);
    SPM_TEST_ADD(s, NULL, test_short_take_skips_forgotten_and_satisfied);
    SPM_TEST_ADD(s, NULL, test_forget_tells_each_holder_once);
    SPM_TEST_ADD(s, NULL, test_forget_version_zero_forgets_every_version);
    SPM_TEST_ADD(s, NULL, test_node_bytes_follow_the_table);
    SPM_TEST_ADD(s, NULL, test_stats_count_the_table);
    SPM_TEST_ADD(s, NULL, test_adds_for_a_node_down_are_ignored);
    SPM_TEST_ADD(s, NULL, test_expect_knows_size_without_holder);
    return s;
}

SPM_TEST_MAIN(directory_suite)
