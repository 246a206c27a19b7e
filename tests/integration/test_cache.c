/*  Integration tests of the two-level cache with real processes (nodes
    that read as remote ones, though on the center's host): blocks move
    peer to peer between nodes (level 2), a cache budget smaller than the
    working set evicts without changing the result, a node that dies after
    committing costs no result, and a holder that answers FETCH with garbage
    or truncated blocks is survived by falling back to the store. */
#include "tests/check_main.h"
#include "tests/spm_test.h"
#include "vm/wire.h"

typedef spm_test_vm_t vm_t;

static void vm_start(vm_t *vm)
{
    spm_test_vm_start(vm, NULL);
}

/*  An agent of one IEU with a node cache of CACHE_MB MiB. Its IEUs read
    as a remote node's do (the center is on this host: without
    --no-store-reads they would read its store directly, and no level of
    the cache would be exercised). */
static void vm_agent(vm_t *vm, const char *cache_mb)
{
    const char *extra[] = {"--cache-mb", cache_mb, "--no-store-reads", NULL};
    spm_test_vm_agent(vm, "1", extra);
}

static void vm_stop(vm_t *vm)
{
    spm_test_vm_stop(vm);
}

/*  Runs a data job of synthetic on VM and returns its JSON report
    (malloc'd). Not inlined: GCC's dangling-pointer analysis misreads it. */
__attribute__((noinline)) static char *data_job(vm_t *vm, const char *sis, const char *bytes,
                                                const char *work)
{
    const char *argv[] = {"run",    "synthetic", "--center", vm->ep, "--sis",   sis,
                          "--sfs",  "4",         "--bytes",  bytes,  "--reads", "3",
                          "--work", work,        "--json",   NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), atof(sis));
    free(err);
    return out;
}

/*  The checksum the same job gives on an embedded single-node VM. */
static char *reference_job(const char *sis, const char *bytes)
{
    const char *argv[] = {"run",    "synthetic", "--sis",  sis,       "--sfs",
                          "4",      "--bytes",   bytes,    "--reads", "3",
                          "--work", "fixed:0",   "--ieus", "1",       NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    free(err);
    char *line = strstr(out, "checksum");
    ck_assert_ptr_nonnull(line);
    char *copy = strdup(line);
    free(out);
    return copy;
}

START_TEST(blocks_move_between_nodes_at_level_two)
{
    vm_t vm;
    vm_start(&vm);
    vm_agent(&vm, "0");
    vm_agent(&vm, "0");
    usleep(300000);
    char *out = data_job(&vm, "200", "65536", "fixed:1ms");
    ck_assert_msg(spm_test_json_num(out, "l2_hits") > 0, "no level-2 hits: %s", out);
    ck_assert_msg(spm_test_json_num(out, "store_reads") == 0, "store reads: %s", out);
    ck_assert(spm_test_json_num(out, "bytes_l2") >= 65536);
    free(out);
    vm_stop(&vm);
}
END_TEST

START_TEST(nodes_on_the_centers_host_read_its_store)
{
    /* Two nodes on the center's host (an ipc:// center): their IEUs read
       every operand straight from the center's store, so no block crosses
       a socket to reach them, and the result is the same. */
    char *want = reference_job("200", "65536");
    vm_t vm;
    vm_start(&vm);
    spm_test_vm_agent(&vm, "1", NULL);
    spm_test_vm_agent(&vm, "1", NULL);
    usleep(300000);
    const char *argv[] = {"run",     "synthetic", "--center", vm.ep,       "--sis",
                          "200",     "--sfs",     "4",        "--bytes",   "65536",
                          "--reads", "3",         "--work",   "fixed:1ms", NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(out, want) != NULL, "result differs: %s vs %s", out, want);
    ck_assert_msg(strstr(out, " 0 level-2 hits") != NULL, "level-2 traffic: %s", out);
    ck_assert_msg(strstr(out, " 0 store reads") != NULL, "store reads: %s", out);
    ck_assert_msg(strstr(out, " 0 level-1 hits") == NULL, "no local reads: %s", out);
    free(out);
    free(err);
    free(want);
    vm_stop(&vm);
}
END_TEST

START_TEST(small_cache_evicts_and_result_is_identical)
{
    char *want = reference_job("160", "262144");
    vm_t vm;
    vm_start(&vm);
    vm_agent(&vm, "2"); /* 2 MiB: a stage writes 40 blocks of 256 KiB */
    usleep(300000);
    const char *argv[] = {"run",     "synthetic", "--center", vm.ep,     "--sis",
                          "160",     "--sfs",     "4",        "--bytes", "262144",
                          "--reads", "3",         "--work",   "fixed:0", NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(out, want) != NULL, "result differs: %s vs %s", out, want);
    const char *ev = strstr(out, "store reads");
    ck_assert_ptr_nonnull(ev);
    ck_assert_msg(strstr(out, " 0 evictions") == NULL, "no evictions counted: %s", out);
    free(out);
    free(err);
    free(want);
    vm_stop(&vm);
}
END_TEST

START_TEST(dead_node_costs_no_result)
{
    char *want = reference_job("120", "65536");
    vm_t vm;
    vm_start(&vm);
    vm_agent(&vm, "0");
    vm_agent(&vm, "0");
    usleep(300000);
    const char *argv[] = {"run",     "synthetic", "--center", vm.ep,        "--sis",
                          "120",     "--sfs",     "4",        "--bytes",    "65536",
                          "--reads", "3",         "--work",   "fixed:20ms", NULL};
    spm_test_proc_t run = spm_test_start(argv);
    usleep(900000); /* the second node has committed blocks of the first stages */
    kill(vm.agents[1].pid, SIGKILL);
    spm_test_finish(&vm.agents[1], 10, NULL, NULL);
    vm.agents[1].pid = 0;
    char *out, *err;
    int rc = spm_test_finish(&run, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(out, want) != NULL, "result differs: %s vs %s", out, want);
    free(out);
    free(err);
    free(want);
    vm_stop(&vm);
}
END_TEST

/*  A hostile node: registers as an agent whose data endpoint answers every
    FETCH with a garbage or truncated block, and as an IEU of that node that
    PUBLISHes every block id the job may use. */
typedef struct {
    void *ctx, *agent, *ieu, *data;
    char data_ep[160];
} liar_t;

static void send_hello(void *sock, int role, uint32_t node, const char *data_ep)
{
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = role;
    h.node = "liar";
    h.node_index = node;
    h.slots = 1;
    h.pid = 1;
    h.data_endpoint = (char *)data_ep;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    ck_assert_int_eq(spm_wire_send(sock, NULL, &env, NULL, 0, NULL), 0);
}

static uint32_t await_welcome(void *sock)
{
    zmq_pollitem_t item = {sock, 0, ZMQ_POLLIN, 0};
    for (int i = 0; i < 50; i++) {
        if (zmq_poll(&item, 1, 100) <= 0)
            continue;
        spm_msg_t m;
        if (spm_wire_recv(sock, 0, 1, &m, NULL) != 1)
            continue;
        int ok = m.env->body_case == SPM__ENVELOPE__BODY_WELCOME;
        uint32_t index = ok ? m.env->welcome->index : 0;
        spm_msg_close(&m);
        if (ok)
            return index;
    }
    ck_abort_msg("no WELCOME");
    return 0;
}

static void liar_start(liar_t *l, const char *center, const char *dir)
{
    l->ctx = zmq_ctx_new();
    l->data = spm_wire_socket(l->ctx, ZMQ_ROUTER);
    snprintf(l->data_ep, sizeof l->data_ep, "ipc://%s/liar", dir);
    ck_assert_int_eq(zmq_bind(l->data, l->data_ep), 0);
    l->agent = spm_wire_socket(l->ctx, ZMQ_DEALER);
    ck_assert_int_eq(zmq_connect(l->agent, center), 0);
    send_hello(l->agent, SPM__HELLO__ROLE__AGENT, 0, l->data_ep);
    uint32_t node = await_welcome(l->agent);
    l->ieu = spm_wire_socket(l->ctx, ZMQ_DEALER);
    ck_assert_int_eq(zmq_connect(l->ieu, center), 0);
    send_hello(l->ieu, SPM__HELLO__ROLE__IEU, node, NULL);
    await_welcome(l->ieu);
}

/*  Claims to hold version 1 of the first thousand SDB ids. The center
    believes it only of versions already committed, so the liar repeats the
    claim while the job runs. */
static void liar_publish(liar_t *l)
{
    Spm__BlockRef refs[1000], *ptrs[1000];
    for (int i = 0; i < 1000; i++) {
        spm__block_ref__init(&refs[i]);
        refs[i].sdb = (uint64_t)i + 1;
        refs[i].version = 1;
        refs[i].bytes = 65552;
        ptrs[i] = &refs[i];
    }
    Spm__Publish pub = SPM__PUBLISH__INIT;
    pub.n_blocks = 1000;
    pub.blocks = ptrs;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PUBLISH;
    env.publish = &pub;
    ck_assert_int_eq(spm_wire_send(l->ieu, NULL, &env, NULL, 0, NULL), 0);
}

/*  Serves FETCHes with bad blocks and keeps the fake IEU alive, until the
    job process RUN exits. Returns how many FETCHes it answered. */
static int liar_serve(liar_t *l, pid_t run)
{
    int served = 0, turn = 0;
    uint64_t last_beat = 0;
    while (waitpid(run, NULL, WNOHANG) == 0 || served == 0) {
        liar_publish(l);
        zmq_pollitem_t item = {l->data, 0, ZMQ_POLLIN, 0};
        zmq_poll(&item, 1, 5);
        spm_msg_t m;
        int r;
        while ((r = spm_wire_recv(l->data, 1, 1, &m, NULL)) > 0) {
            if (r != 1)
                continue;
            if (m.env->body_case == SPM__ENVELOPE__BODY_FETCH) {
                Spm__FetchReply fr = SPM__FETCH_REPLY__INIT;
                fr.req = m.env->fetch->req;
                Spm__Envelope env = SPM__ENVELOPE__INIT;
                env.body_case = SPM__ENVELOPE__BODY_FETCH_REPLY;
                env.fetch_reply = &fr;
                /* alternately: garbage bytes, a truncated header, no frame */
                static char garbage[64] = "not a block at all";
                spm_frame_t f = {garbage, turn % 3 == 0 ? sizeof garbage : 7, NULL, NULL};
                spm_wire_send(l->data, &m.id, &env, &f, turn % 3 == 2 ? 0 : 1, NULL);
                turn++;
                served++;
            }
            spm_msg_close(&m);
        }
        if (spm_now_us() - last_beat > 500000) {
            Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
            Spm__Envelope env = SPM__ENVELOPE__INIT;
            env.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
            env.heartbeat = &hb;
            spm_wire_send(l->ieu, NULL, &env, NULL, 0, NULL);
            spm_wire_send(l->agent, NULL, &env, NULL, 0, NULL);
            last_beat = spm_now_us();
        }
        if (waitpid(run, NULL, WNOHANG) != 0 && served == 0)
            break;
    }
    return served;
}

static void liar_stop(liar_t *l)
{
    zmq_close(l->data);
    zmq_close(l->agent);
    zmq_close(l->ieu);
    zmq_ctx_term(l->ctx);
}

START_TEST(lying_holder_is_survived_through_the_store)
{
    char *want = reference_job("120", "65536");
    vm_t vm;
    vm_start(&vm);
    liar_t liar;
    liar_start(&liar, vm.ep, vm.dir);
    vm_agent(&vm, "0");
    vm_agent(&vm, "0"); /* two real nodes, so blocks have to move */
    usleep(300000);
    const char *argv[] = {"run",     "synthetic", "--center", vm.ep,     "--sis",
                          "120",     "--sfs",     "4",        "--bytes", "65536",
                          "--reads", "3",         "--work",   "fixed:0", NULL};
    spm_test_proc_t run = spm_test_start(argv);
    /* The run's pid is reaped by liar_serve's waitpid; collect its output
       from the files spm_test_finish reads. */
    int served = liar_serve(&liar, run.pid);
    int fo = open(run.out_path, O_RDONLY);
    char *out = spm_test_slurp(fo);
    close(fo);
    unlink(run.out_path);
    unlink(run.err_path);
    ck_assert_msg(served > 0, "the lying holder was never asked");
    ck_assert_msg(strstr(out, want) != NULL, "result differs: %s vs %s", out, want);
    ck_assert_msg(strstr(out, " 0 store reads") == NULL, "no fallback to the store: %s", out);
    free(out);
    free(want);
    liar_stop(&liar);
    vm_stop(&vm);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("cache");
    TCase *tc = tcase_create("levels");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, blocks_move_between_nodes_at_level_two);
    tcase_add_test(tc, nodes_on_the_centers_host_read_its_store);
    tcase_add_test(tc, small_cache_evicts_and_result_is_identical);
    tcase_add_test(tc, dead_node_costs_no_result);
    tcase_add_test(tc, lying_holder_is_survived_through_the_store);
    suite_add_tcase(s, tc);
    return s;
}

SPM_TEST_MAIN(cache_suite)
