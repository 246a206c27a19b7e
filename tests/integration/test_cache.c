/*  Integration tests of where blocks live, with real processes (nodes that
    read as remote ones, though on the center's host): blocks stay on the
    nodes and move peer to peer (level 2) without passing through the
    center, node caches smaller than the job's blocks slow it without
    changing its result, a node that dies after committing costs no result,
    and a data agent that keeps replicas but serves corrupt or truncated
    copies is caught by the checksums and survived through the other
    holders. */
#include "tests/check_main.h"
#include "tests/spm_test.h"
#include "transport/wire.h"

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

/*  The checksum the same job, each SI reading READS blocks, gives on an
    embedded single-node VM (malloc'd). */
static char *reference_reads(const char *sis, const char *bytes, const char *reads)
{
    const char *argv[] = {"run",    "synthetic", "--sis",  sis,       "--sfs",
                          "4",      "--bytes",   bytes,    "--reads", reads,
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

static char *reference_job(const char *sis, const char *bytes)
{
    return reference_reads(sis, bytes, "3");
}

/*  The overflow tests' job (160 SIs writing 256 KiB each) run again on VM
    prints the result WANT (freed) of reference_job("160", "262144"). */
static void overflow_result_is(const vm_t *vm, char *want)
{
    const char *text[] = {"run",     "synthetic", "--center", vm->ep,    "--sis",
                          "160",     "--sfs",     "4",        "--bytes", "262144",
                          "--reads", "3",         "--work",   "fixed:0", NULL};
    char *out, *err;
    int rc = spm_test_run(text, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(out, want) != NULL, "result differs: %s vs %s", out, want);
    free(out);
    free(err);
    free(want);
}

START_TEST(blocks_move_between_nodes_at_level_two)
{
    /* Three nodes, two copies of every block: a third of the reads find
       their block on another node. Outputs and reads stay off the center. */
    vm_t vm;
    vm_start(&vm);
    vm_agent(&vm, "0");
    vm_agent(&vm, "0");
    vm_agent(&vm, "0");
    usleep(300000);
    char *out = data_job(&vm, "200", "65536", "fixed:1ms");
    ck_assert_msg(spm_test_json_num(out, "l2_hits") > 0, "no level-2 hits: %s", out);
    ck_assert_msg(spm_test_json_num(out, "store_reads") == 0, "store reads: %s", out);
    ck_assert(spm_test_json_num(out, "bytes_l2") >= 65536);
    /* every output was pushed to one replica: 200 blocks of 64 KiB */
    ck_assert_msg(spm_test_json_num(out, "bytes_pushed") >= 200.0 * 65536, "replicas: %s", out);
    ck_assert_msg(spm_test_json_num(out, "center_in") + spm_test_json_num(out, "center_out") == 0,
                  "block bytes through the center: %s", out);
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

START_TEST(small_caches_slow_the_job_but_keep_its_result)
{
    /* Two nodes of 2 MiB each, and a stage writes 40 blocks of 256 KiB:
       the nodes keep what fits, refuse the rest, and the center's store
       takes the overflow. The job completes with the same result. */
    char *want = reference_job("160", "262144");
    vm_t vm;
    vm_start(&vm);
    vm_agent(&vm, "2");
    vm_agent(&vm, "2");
    usleep(300000);
    const char *argv[] = {"run",    "synthetic", "--center", vm.ep,    "--sis",   "160",
                          "--sfs",  "4",         "--bytes",  "262144", "--reads", "3",
                          "--work", "fixed:0",   "--json",   NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 160);
    ck_assert_msg(spm_test_json_num(out, "center_in") > 2.0 * 1048576, "no overflow: %s", out);
    free(out);
    free(err);
    overflow_result_is(&vm, want);
    vm_stop(&vm);
}
END_TEST

START_TEST(one_replica_overflows_to_the_center_not_to_peers)
{
    /* One copy of every block, on a node of 2 MiB and one of 64 MiB, and
       a stage writes 40 blocks of 256 KiB: what the small node cannot
       keep goes to the center's store with its COMMIT, not to the other
       node, whose cache it would take for as long as it lives for no
       fewer bytes on the links. */
    char *want = reference_job("160", "262144");
    const char *one[] = {"--replicas", "1", NULL};
    vm_t vm;
    spm_test_vm_start(&vm, one);
    vm_agent(&vm, "2");
    vm_agent(&vm, "64");
    usleep(300000);
    const char *argv[] = {"run",    "synthetic", "--center", vm.ep,    "--sis",   "160",
                          "--sfs",  "4",         "--bytes",  "262144", "--reads", "3",
                          "--work", "fixed:5ms", "--json",   NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    printf("cache: replicas 1, caches of 2 and 64 MiB: %.0f bytes pushed to peers, %.0f to the "
           "center\n",
           spm_test_json_num(out, "bytes_pushed"), spm_test_json_num(out, "center_in"));
    fflush(stdout);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 160);
    ck_assert_msg(spm_test_json_num(out, "bytes_pushed") == 0, "placed on peers: %s", out);
    ck_assert_msg(spm_test_json_num(out, "center_in") > 1048576, "no overflow: %s", out);
    free(out);
    free(err);
    overflow_result_is(&vm, want);
    vm_stop(&vm);
}
END_TEST

START_TEST(one_replica_on_small_caches_loses_no_block)
{
    /* One copy of every block, on four nodes of 16 MiB whose caches
       evict what their SIs read: an SI whose operand left the cache
       before it ran is localized again, and must then find the blocks its
       own node keeps (the center names no holder on the asking node, and
       no other node has them) in its node's cache. Every job succeeds
       with the sequential result. */
    char *want = reference_reads("400", "262144", "8");
    const char *one[] = {"--replicas", "1", NULL};
    vm_t vm;
    spm_test_vm_start(&vm, one);
    for (int i = 0; i < 4; i++)
        vm_agent(&vm, "16");
    usleep(300000);
    for (int job = 0; job < 4; job++) {
        const char *argv[] = {"run",     "synthetic", "--center", vm.ep,     "--sis",
                              "400",     "--sfs",     "4",        "--bytes", "262144",
                              "--reads", "8",         "--work",   "fixed:0", NULL};
        char *out, *err;
        int rc = spm_test_run(argv, 120, &out, &err);
        ck_assert_msg(rc == 0, "job %d: exit %d: %s", job, rc, err);
        ck_assert_msg(strstr(out, want) != NULL, "job %d: result differs: %s vs %s", job, out,
                      want);
        free(out);
        free(err);
    }
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

/*  Waits until node 1 (the agent of cache1) keeps at least N blocks, as
    its status says: a job runs, and the node has something to lose. */
static void wait_kept(vm_t *vm, double n)
{
    char data_ep[192];
    snprintf(data_ep, sizeof data_ep,
             "\"endpoint\": \"ipc://%s/cache1/data\", \"kept_blocks\": ", vm->dir);
    const char *status[] = {"status", "--center", vm->ep, "--json", NULL};
    double kept = 0;
    for (int i = 0; i < 400 && kept < n; i++) {
        char *js = NULL;
        if (spm_test_run(status, 10, &js, NULL) == 0 && js && strstr(js, data_ep))
            kept = atof(strstr(js, data_ep) + strlen(data_ep));
        free(js);
        usleep(5000);
    }
    ck_assert_msg(kept >= n, "the node never kept the job's blocks");
}

/*  A whole node (its agent and IEUs, SIGKILL, its cache directory removed)
    dies while a sparse product runs across three: C.mtx is byte for byte
    the one an embedded VM writes. The blocks the node kept had a second
    copy on another node. */
START_TEST(dead_node_costs_no_matmul_result)
{
    vm_t vm;
    const char *quick[] = {"--heartbeat-ms", "200", "--dead-ms", "1000", NULL};
    spm_test_vm_start(&vm, quick); /* the death is noticed while the job runs */
    for (int i = 0; i < 3; i++)
        vm_agent(&vm, "0");
    char a[160], c[160], ref[160];
    snprintf(a, sizeof a, "%s/A.mtx", vm.dir);
    snprintf(c, sizeof c, "%s/C.mtx", vm.dir);
    snprintf(ref, sizeof ref, "%s/ref.mtx", vm.dir);
    const char *gen[] = {"gen",  "matrix", "--rows", "1500", "--cols", "1500", "--density",
                         "0.05", "--seed", "3",      "-o",   a,        NULL};
    ck_assert_int_eq(spm_test_run(gen, 60, NULL, NULL), 0);
    const char *embedded[] = {"matmul", a, a, "-o", ref, "--block", "100", "--quiet", NULL};
    ck_assert_int_eq(spm_test_run(embedded, 120, NULL, NULL), 0);
    const char *job[] = {"matmul", a,          a,     "-o",     c,   "--block",
                         "100",    "--center", vm.ep, "--json", NULL};
    spm_test_proc_t run = spm_test_start(job);
    /* once the node keeps blocks of the job: it is running, and the node
       has something to lose */
    wait_kept(&vm, 20);
    pid_t ieus[4];
    int n = spm_test_children(vm.agents[1].pid, ieus, 4);
    kill(vm.agents[1].pid, SIGKILL);
    for (int i = 0; i < n; i++)
        kill(ieus[i], SIGKILL);
    spm_test_finish(&vm.agents[1], 10, NULL, NULL);
    vm.agents[1].pid = 0;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s/cache1", vm.dir);
    ck_assert_int_eq(system(cmd), 0);
    char *out, *err;
    int rc = spm_test_finish(&run, 180, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", c, ref);
    ck_assert_msg(system(cmd) == 0, "C.mtx differs from the embedded VM's");
    /* the death hit the job: what the node kept was copied again */
    ck_assert_msg(spm_test_json_num(out, "copies") > 0, "nothing was copied again: %s", out);
    free(out);
    free(err);
    vm_stop(&vm);
}
END_TEST

/*  A hostile node: registers as an agent whose data agent takes every
    replica it is sent (answers STORE with success, keeping nothing) and
    answers every FETCH with a garbage or truncated block, or none. */
typedef struct {
    void *ctx, *agent, *data;
    char data_ep[160];
} liar_t;

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
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__AGENT;
    h.node = "liar";
    h.pid = 1;
    h.data_endpoint = l->data_ep;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    ck_assert_int_eq(spm_wire_send(l->agent, NULL, &env, NULL, 0, NULL), 0);
    await_welcome(l->agent);
}

/*  Takes every STORE and serves every FETCH with a bad block, heartbeating
    as an agent, until the job process RUN exits. Returns how many FETCHes
    it answered. */
static int liar_serve(liar_t *l, pid_t run)
{
    int served = 0, turn = 0;
    uint64_t last_beat = 0;
    while (waitpid(run, NULL, WNOHANG) == 0) {
        zmq_pollitem_t item = {l->data, 0, ZMQ_POLLIN, 0};
        zmq_poll(&item, 1, 5);
        spm_msg_t m;
        int r;
        while ((r = spm_wire_recv(l->data, 1, 1, &m, NULL)) > 0) {
            if (r != 1)
                continue;
            Spm__Envelope env = SPM__ENVELOPE__INIT;
            if (m.env->body_case == SPM__ENVELOPE__BODY_STORE) {
                Spm__StoreReply sr = SPM__STORE_REPLY__INIT;
                sr.req = m.env->store->req;
                env.body_case = SPM__ENVELOPE__BODY_STORE_REPLY;
                env.store_reply = &sr;
                spm_wire_send(l->data, &m.id, &env, NULL, 0, NULL);
            } else if (m.env->body_case == SPM__ENVELOPE__BODY_FETCH) {
                Spm__FetchReply fr = SPM__FETCH_REPLY__INIT;
                fr.req = m.env->fetch->req;
                env.body_case = SPM__ENVELOPE__BODY_FETCH_REPLY;
                env.fetch_reply = &fr;
                /* alternately: garbage bytes, a truncated header, no frame */
                static char garbage[65552] = "not a block at all";
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
            spm_wire_send(l->agent, NULL, &env, NULL, 0, NULL);
            last_beat = spm_now_us();
        }
    }
    return served;
}

static void liar_stop(liar_t *l)
{
    zmq_close(l->data);
    zmq_close(l->agent);
    zmq_ctx_term(l->ctx);
}

START_TEST(corrupt_holder_is_caught_and_survived)
{
    char *want = reference_job("120", "65536");
    vm_t vm;
    vm_start(&vm);
    liar_t liar;
    liar_start(&liar, vm.ep, vm.dir);
    vm_agent(&vm, "0");
    vm_agent(&vm, "0"); /* two real nodes: every block has a good copy */
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
    ck_assert_msg(strstr(out, "corrupt copies met") != NULL, "no corrupt copy counted: %s", out);
    free(out);
    free(want);
    liar_stop(&liar);
    vm_stop(&vm);
}
END_TEST

/*  Flips N random bytes of the file PATH, each to another value. */
static void flip_bytes(const char *path, int n, unsigned seed)
{
    int fd = open(path, O_RDWR);
    ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    srand(seed);
    for (int i = 0; i < n; i++) {
        off_t at = (off_t)(((uint64_t)rand() << 31 | (uint64_t)rand()) % (uint64_t)st.st_size);
        unsigned char b;
        ck_assert_int_eq(pread(fd, &b, 1, at), 1);
        b ^= (unsigned char)(1 + rand() % 255);
        ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
    }
    close(fd);
}

/*  Case 5 of issue 39: 300 random bytes flipped in one node's cache file
    (again every half second until the node notices) while an integer product runs on two nodes
   (replicas 2: every block the node keeps has a copy on the other). The node finds its cache
    corrupt (a block fails its checksum, or LMDB says so), says so in one
    line, leaves service, empties its cache and joins again; the job ends
    with the embedded VM's C, byte for byte; the agent's log stays a few
    lines. Before, the job failed ("mm.block: 2223 payload bytes, expected
    2048"), the node stayed up though it could not write its cache, and
    its agent logged 2 million lines in 4 minutes. */
START_TEST(corrupt_node_cache_is_taken_out_of_service)
{
    vm_t vm;
    const char *quick[] = {"--heartbeat-ms", "200",  "--dead-ms", "2000",
                           "--log-level",    "info", NULL};
    spm_test_vm_start(&vm, quick);
    const char *warn[] = {"--no-store-reads", "--log-level", "warn", NULL};
    spm_test_vm_agent(&vm, "1", warn);
    spm_test_vm_agent(&vm, "1", warn);
    char a[160], c[160], ref[160];
    snprintf(a, sizeof a, "%s/A.mtx", vm.dir);
    snprintf(c, sizeof c, "%s/C.mtx", vm.dir);
    snprintf(ref, sizeof ref, "%s/ref.mtx", vm.dir);
    const char *gen[] = {"gen",    "matrix",  "--rows",  "1600",      "--cols",
                         "1600",   "--field", "integer", "--density", "0.1",
                         "--seed", "5",       "-o",      a,           NULL};
    ck_assert_int_eq(spm_test_run(gen, 60, NULL, NULL), 0);
    const char *embedded[] = {"matmul", a, a, "-o", ref, "--block", "50", "--quiet", NULL};
    ck_assert_int_eq(spm_test_run(embedded, 120, NULL, NULL), 0);
    const char *job[] = {"matmul", a,          a,     "-o",     c,   "--block",
                         "50",     "--center", vm.ep, "--json", NULL};
    spm_test_proc_t run = spm_test_start(job);
    wait_kept(&vm, 200);
    const char *status[] = {"status", "--center", vm.ep, "--json", NULL};
    /* 300 bytes at a time, until the node finds it (a flip may land on a
       free page, or a block nobody reads again) or the job ends */
    char file[192];
    snprintf(file, sizeof file, "%s/cache1/data.mdb", vm.dir);
    for (unsigned round = 0; round < 20 && spm_test_running(run.pid); round++) {
        int fd = open(vm.agents[1].err_path, O_RDONLY);
        char *said = spm_test_slurp(fd);
        close(fd);
        int found = strstr(said, "out of service") != NULL;
        free(said);
        if (found)
            break;
        flip_bytes(file, 300, 39 + round);
        usleep(500000);
    }
    char *out, *err;
    int rc = spm_test_finish(&run, 300, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", c, ref);
    ck_assert_msg(system(cmd) == 0, "C.mtx differs from the embedded VM's");
    free(out);
    free(err);
    /* the node said it once, and is back in service with an empty cache */
    int fd = open(vm.agents[1].err_path, O_RDONLY);
    char *log = spm_test_slurp(fd);
    close(fd);
    ck_assert_msg(strstr(log, "its cache is out of service: "), "no line says so:\n%s", log);
    ck_assert_msg(strstr(log, "the node leaves service, empties its cache and joins again"), "%s",
                  log);
    ck_assert_msg(spm_test_lines(log) < 20, "%zu lines in the agent's log:\n%.4000s",
                  spm_test_lines(log), log);
    free(log);
    fd = open(vm.center.err_path, O_RDONLY);
    log = spm_test_slurp(fd);
    close(fd);
    ck_assert_msg(strstr(log, "left service: "), "the center never took it out:\n%.4000s", log);
    free(log);
    int up = 0;
    for (int i = 0; i < 80 && !up; i++) {
        char *js = NULL;
        up = spm_test_run(status, 10, &js, NULL) == 0 && js &&
             strstr(js, "{\"node\": 1, \"up\": true");
        free(js);
        if (!up)
            usleep(250000);
    }
    ck_assert_msg(up, "node 1 did not join again");
    snprintf(cmd, sizeof cmd, "%s/cache1/broken", vm.dir);
    ck_assert_msg(access(cmd, F_OK) != 0, "the marker outlived the cache");
    vm_stop(&vm);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("cache");
    const spm_test_case_t c = {.timeout_s = 180};
    SPM_TEST_ADD(s, &c, blocks_move_between_nodes_at_level_two);
    SPM_TEST_ADD(s, &c, nodes_on_the_centers_host_read_its_store);
    SPM_TEST_ADD(s, &c, small_caches_slow_the_job_but_keep_its_result);
    SPM_TEST_ADD(s, &c, one_replica_on_small_caches_loses_no_block);
    SPM_TEST_ADD(s, &c, one_replica_overflows_to_the_center_not_to_peers);
    SPM_TEST_ADD(s, &c, dead_node_costs_no_result);
    SPM_TEST_ADD(s, &c, dead_node_costs_no_matmul_result);
    SPM_TEST_ADD(s, &c, corrupt_holder_is_caught_and_survived);
    SPM_TEST_ADD(s, &c, corrupt_node_cache_is_taken_out_of_service);
    return s;
}

SPM_TEST_MAIN(cache_suite)
