/*  Hostile peers against a real center while a real synthetic job runs:
    garbage and forged messages, replayed and forged commits, a peer that
    claims another node, a peer that hoards SIs and goes silent, and a
    client asking for things that do not exist. In every case the job
    commits every SI once with the checksum a quiet VM gives, and the
    center still answers afterwards. The test speaks the protocol itself
    through transport/wire.h. */
#include "base/checksum.h"
#include "isa/core/codec.h"
#include "runtime/registry.h"
#include "tests/check_main.h"
#include "tests/spm_test.h"
#include "transport/wire.h"

#define SIS "400"
#define DEAD_MS "1000"

typedef struct {
    char dir[64], ep[160];
    spm_test_proc_t center, agents[2];
    spm_test_proc_t job;
} vm_t;

/*  A center (heartbeat 200 ms, dead after DEAD_MS) and two agents of one
    IEU each, so blocks also move between nodes. Without speculation: the
    SIs a silent peer holds must come back by re-issue when it is counted
    dead, not by copies the idle IEUs would otherwise run first. */
static void vm_start(vm_t *vm)
{
    memset(vm, 0, sizeof *vm);
    snprintf(vm->dir, sizeof vm->dir, "%s", spm_test_tmpdir());
    snprintf(vm->ep, sizeof vm->ep, "ipc://%s/center", vm->dir);
    char store[128];
    snprintf(store, sizeof store, "%s/store", vm->dir);
    const char *argv[] = {"center", "--listen",  vm->ep,  "--store",     store,   "--heartbeat-ms",
                          "200",    "--dead-ms", DEAD_MS, "--log-level", "error", "--no-speculate",
                          NULL};
    vm->center = spm_test_start(argv);
    usleep(200000);
    for (int i = 0; i < 2; i++) {
        char cache[128];
        snprintf(cache, sizeof cache, "%s/cache%d", vm->dir, i);
        const char *a[] = {"agent",       "--center", vm->ep,        "--ieus", "1",
                           "--cache-dir", cache,      "--log-level", "error",  NULL};
        vm->agents[i] = spm_test_start(a);
        usleep(150000); /* node indexes in order */
    }
    usleep(300000);
}

/*  Starts the job the hostile peers run beside. */
static void vm_job(vm_t *vm)
{
    const char *text[] = {"run",       "synthetic", "--center", vm->ep,  "--sis", SIS, "--work",
                          "fixed:2ms", "--bytes",   "4096",     "--sfs", "3",     NULL};
    vm->job = spm_test_start(text);
}

/*  1 while the job runs (without reaping it: spm_test_finish does). */
static int job_running(vm_t *vm)
{
    return spm_test_running(vm->job.pid);
}

/*  The pid of the IEU agent I started (its first child). */
static pid_t ieu_pid(vm_t *vm, int i)
{
    pid_t pid = 0;
    ck_assert_int_eq(spm_test_children(vm->agents[i].pid, &pid, 1), 1);
    return pid;
}

static void vm_stop(vm_t *vm)
{
    kill(vm->center.pid, SIGTERM);
    spm_test_finish(&vm->center, 15, NULL, NULL);
    for (int i = 0; i < 2; i++)
        spm_test_finish(&vm->agents[i], 20, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", vm->dir);
    ck_assert_int_eq(system(cmd), 0);
}

/*  The checksum line and the SI counts of a text report. */
typedef struct {
    char checksum[96];
    unsigned long long issued, committed, reissued, stale;
} outcome_t;

static outcome_t parse_report(const char *out)
{
    outcome_t o = {0};
    const char *c = out ? strstr(out, "checksum") : NULL;
    ck_assert_msg(c != NULL, "no checksum in the report: %s", out);
    snprintf(o.checksum, sizeof o.checksum, "%.*s", (int)strcspn(c, "\n"), c);
    const char *s = strstr(out, "SIs: ");
    ck_assert_msg(s && sscanf(s, "SIs: %llu issued, %llu committed, %llu re-issued, %llu stale",
                              &o.issued, &o.committed, &o.reissued, &o.stale) == 4,
                  "no SI counts in the report: %s", out);
    return o;
}

/*  What the same job gives on a quiet embedded VM (computed once). */
static const char *reference(void)
{
    static outcome_t ref;
    if (ref.checksum[0])
        return ref.checksum;
    const char *argv[] = {"run",  "synthetic", "--sis", SIS,      "--work", "fixed:2ms", "--bytes",
                          "4096", "--sfs",     "3",     "--ieus", "2",      NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "reference run: exit %d: %s", rc, err);
    ref = parse_report(out);
    free(out);
    free(err);
    return ref.checksum;
}

/*  Waits for the job and checks it committed every SI once with the quiet
    VM's checksum. Returns its counts. */
static outcome_t job_outcome(vm_t *vm)
{
    const char *want = reference();
    char *out, *err;
    int rc = spm_test_finish(&vm->job, 120, &out, &err);
    ck_assert_msg(rc == 0, "job: exit %d: %s", rc, err);
    outcome_t o = parse_report(out);
    ck_assert_msg(o.committed == strtoull(SIS, NULL, 10), "committed %llu: %s", o.committed, out);
    ck_assert_msg(strcmp(o.checksum, want) == 0, "result differs: '%s' vs '%s'", o.checksum, want);
    free(out);
    free(err);
    return o;
}

/* ---------------------------------------------------- a hand-made peer */

typedef struct {
    void *ctx, *sock;
    unsigned long sent; /* messages (raw multipart ones count once) */
} peer_t;

/*  Connects P to EP with routing id ID (LEN bytes; NULL: ZeroMQ's own). */
static void peer_open_as(peer_t *p, const char *ep, const void *id, size_t len)
{
    p->sent = 0;
    p->ctx = zmq_ctx_new();
    p->sock = spm_wire_socket(p->ctx, ZMQ_DEALER);
    ck_assert_ptr_nonnull(p->sock);
    if (id)
        ck_assert_int_eq(zmq_setsockopt(p->sock, ZMQ_ROUTING_ID, id, len), 0);
    ck_assert_int_eq(zmq_connect(p->sock, ep), 0);
}

static void peer_open(peer_t *p, const char *ep)
{
    peer_open_as(p, ep, NULL, 0);
}

static void peer_close(peer_t *p)
{
    zmq_close(p->sock);
    zmq_ctx_term(p->ctx);
}

static void peer_send(peer_t *p, Spm__Envelope *env, spm_frame_t *f, size_t n)
{
    ck_assert_int_eq(spm_wire_send(p->sock, NULL, env, f, n, NULL), 0);
    p->sent++;
}

/*  Sends body MSG as envelope member FIELD (case CASE) with N frames F. */
#define SEND_F(p, CASE, field, msg, f, n)                                                          \
    do {                                                                                           \
        Spm__Envelope env_ = SPM__ENVELOPE__INIT;                                                  \
        env_.body_case = SPM__ENVELOPE__BODY_##CASE;                                               \
        env_.field = (msg);                                                                        \
        peer_send(p, &env_, f, n);                                                                 \
    } while (0)
#define SEND(p, CASE, field, msg) SEND_F(p, CASE, field, msg, NULL, 0)

/*  Receives the next message with body BODY within TIMEOUT_MS, skipping
    others (issues, heartbeats). Returns 1 with *M filled, else 0. */
static int peer_expect(peer_t *p, int body, int timeout_ms, spm_msg_t *m)
{
    uint64_t end = spm_now_us() + (uint64_t)timeout_ms * 1000;
    while (spm_now_us() < end) {
        zmq_pollitem_t item = {p->sock, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, 50) <= 0)
            continue;
        if (spm_wire_recv(p->sock, 0, 1, m, NULL) != 1)
            continue;
        if ((int)m->env->body_case == body)
            return 1;
        spm_msg_close(m);
    }
    return 0;
}

/*  HELLO as ROLE claiming NODE and PID; returns the index WELCOME gave. */
static uint32_t peer_hello(peer_t *p, int role, uint32_t node, uint32_t pid)
{
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = role;
    h.node = "hostile";
    h.node_index = node;
    h.slots = 4;
    h.pid = pid;
    SEND(p, HELLO, hello, &h);
    spm_msg_t m;
    ck_assert_msg(peer_expect(p, SPM__ENVELOPE__BODY_WELCOME, 3000, &m), "no WELCOME");
    uint32_t index = m.env->welcome->index;
    spm_msg_close(&m);
    return index;
}

/*  Joins as an IEU of node 0 and asks TIMES times for CREDITS SIs. */
static void peer_pull(peer_t *p, uint32_t credits, int times)
{
    peer_hello(p, SPM__HELLO__ROLE__IEU, 0, 1);
    Spm__Pull pull = SPM__PULL__INIT;
    pull.credits = credits;
    for (int i = 0; i < times; i++)
        SEND(p, PULL, pull, &pull);
}

/*  The center answers a new client's status request. */
static void center_answers(vm_t *vm)
{
    peer_t p;
    peer_open(&p, vm->ep);
    peer_hello(&p, SPM__HELLO__ROLE__CLIENT, 0, 1);
    Spm__StatusRequest s = SPM__STATUS_REQUEST__INIT;
    SEND(&p, STATUS, status, &s);
    spm_msg_t m;
    ck_assert_msg(peer_expect(&p, SPM__ENVELOPE__BODY_STATUS_REPLY, 3000, &m),
                  "the center no longer answers");
    ck_assert_ptr_nonnull(strstr(m.env->status_reply->json, "ieus"));
    spm_msg_close(&m);
    peer_close(&p);
}

/*  A well-formed syn.block whose payload is wrong: it passes the type's
    validate, so only the lease check keeps it out. */
static spm_frame_t forged_block(void)
{
    unsigned char *b = malloc(16 + 4096);
    ck_assert_ptr_nonnull(b);
    spm_put_le64(b, 0xbad);
    spm_put_le64(b + 8, 4096);
    memset(b + 16, 0x5a, 4096);
    return (spm_frame_t){b, 16 + 4096, spm_wire_free, NULL};
}

/*  COMMIT of SI at ATTEMPT with status STATUS; a successful one carries a
    forged block and a forged reply. */
static void forge_commit(peer_t *p, uint64_t si, uint32_t attempt, int status)
{
    Spm__Result r = SPM__RESULT__INIT;
    r.si = si;
    r.attempt = attempt;
    r.status = status;
    r.error = status ? "forged failure" : "";
    unsigned char reply[8];
    spm_put_le64(reply, 0xdeadbeef);
    r.reply.data = reply;
    r.reply.len = sizeof reply;
    r.outputs = status == 0;
    Spm__Result *rs[1] = {&r};
    Spm__Commit c = SPM__COMMIT__INIT;
    c.n_results = 1;
    c.results = rs;
    spm_frame_t f = forged_block();
    SEND_F(p, COMMIT, commit, &c, &f, status == 0);
    if (status != 0)
        free(f.data);
}

/*  Sends raw frames: N frames of the given bytes. */
static void send_raw(peer_t *p, const void *data, size_t len, int more)
{
    ck_assert_int_ge(zmq_send(p->sock, data, len, more ? ZMQ_SNDMORE : 0), 0);
    p->sent += !more;
}

/* ------------------------------------------------------------ the tests */

/*  Starts the VM and the job, and connects the hostile peer P. */
static void begin(vm_t *vm, peer_t *p)
{
    vm_start(vm);
    vm_job(vm);
    peer_open(p, vm->ep);
}

/*  Disconnects P, checks the job's outcome and that the center still
    answers, and stops the VM. Returns the job's counts. */
static outcome_t end(vm_t *vm, peer_t *p)
{
    peer_close(p);
    outcome_t o = job_outcome(vm);
    fprintf(stderr,
            "hostile: %lu messages from the peer; job: %llu SIs committed, %llu re-issued\n",
            p->sent, o.committed, o.reissued);
    center_answers(vm);
    vm_stop(vm);
    return o;
}

START_TEST(garbage_and_forged_messages)
{
    vm_t vm;
    peer_t p;
    begin(&vm, &p);
    /* before HELLO: a commit, then pure garbage and a truncated protobuf */
    forge_commit(&p, 1, 0, 0);
    unsigned char junk[512];
    uint64_t x = 88172645463325252ull;
    Spm__Get g = SPM__GET__INIT;
    g.req = 77;
    g.sdb = 1;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.version = SPM_PROTOCOL_VERSION;
    env.body_case = SPM__ENVELOPE__BODY_GET;
    env.get = &g;
    uint8_t packed[64];
    size_t plen = spm__envelope__pack(&env, packed);
    int round = 0;
    while (job_running(&vm) || round < 3) {
        for (size_t i = 0; i < sizeof junk; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            junk[i] = (unsigned char)x;
        }
        send_raw(&p, junk, 1 + x % sizeof junk, 0);
        send_raw(&p, junk, 7, 1); /* garbage with block frames */
        send_raw(&p, junk + 7, 100, 0);
        send_raw(&p, packed, plen - 1 - x % (plen - 1), 0); /* truncated */
        packed[x % plen] ^= (uint8_t)(1u << (x % 8));       /* bit flips */
        send_raw(&p, packed, plen, 0);
        packed[x % plen] ^= (uint8_t)(1u << (x % 8));
        if (round == 1) {
            /* too many block frames */
            for (int i = 0; i < SPM_MAX_FRAMES + 10; i++)
                send_raw(&p, i ? "" : (const char *)packed, i ? 0 : plen, 1);
            send_raw(&p, "", 0, 0);
            /* from now on a known IEU: forged bodies with wrong frames */
            peer_hello(&p, SPM__HELLO__ROLE__IEU, 0, 1);
        }
        if (round > 1) {
            Spm__Result r = SPM__RESULT__INIT;
            r.si = 1 + x % 400;
            r.outputs = 1000000; /* more frames than sent */
            Spm__Result *rs[2] = {&r, &r};
            Spm__Commit c = SPM__COMMIT__INIT;
            c.n_results = 2; /* the same result twice */
            c.results = rs;
            SEND(&p, COMMIT, commit, &c);
            Spm__IeuDied d = SPM__IEU_DIED__INIT; /* an IEU only agents send */
            d.pid = 1;
            SEND(&p, IEU_DIED, ieu_died, &d);
            Spm__Welcome w = SPM__WELCOME__INIT; /* a body the center never gets */
            SEND(&p, WELCOME, welcome, &w);
        }
        round++;
        usleep(20000);
    }
    end(&vm, &p);
}
END_TEST

/*  A peer takes SIs, goes silent until the center counts it dead, then
    commits them with forged blocks for the old attempt, and commits SIs it
    never held. */
START_TEST(stale_and_never_held_commits_are_discarded)
{
    vm_t vm;
    peer_t p;
    begin(&vm, &p);
    peer_pull(&p, 4, 1);
    uint64_t held[64];
    uint32_t attempts[64];
    size_t nheld = 0;
    spm_msg_t m;
    while (nheld < 4 && peer_expect(&p, SPM__ENVELOPE__BODY_ISSUE, 3000, &m)) {
        for (size_t i = 0; i < m.env->issue->n_sis && nheld < 64; i++) {
            held[nheld] = m.env->issue->sis[i]->id;
            attempts[nheld++] = m.env->issue->sis[i]->attempt;
        }
        spm_msg_close(&m);
    }
    ck_assert_msg(nheld > 0, "the hostile IEU was issued nothing");
    usleep(1500 * 1000); /* silent past --dead-ms: its SIs are re-issued */
    for (size_t i = 0; i < nheld; i++) {
        forge_commit(&p, held[i], attempts[i], 0);
        forge_commit(&p, held[i], attempts[i] + 1, 0); /* the live attempt, not its lease */
    }
    for (uint64_t si = 1; si <= 1200; si++)
        forge_commit(&p, si, (uint32_t)(si % 3), si % 5 == 0 ? SPM_EEXEC : 0);
    outcome_t o = end(&vm, &p);
    ck_assert_msg(o.reissued >= nheld, "%llu re-issued, %zu held", o.reissued, nheld);
}
END_TEST

/*  A peer says it is an IEU of another node with a real IEU's pid, claims
    that node caches every block (PUBLISH) or lost them (DROP), and commits
    SIs it was never issued, some as failures. */
START_TEST(impostor_of_another_node)
{
    vm_t vm;
    peer_t p;
    begin(&vm, &p);
    uint32_t index = peer_hello(&p, SPM__HELLO__ROLE__IEU, 1, (uint32_t)ieu_pid(&vm, 1));
    ck_assert_uint_ge(index, 2); /* a fresh index: indexes cannot be claimed */
    Spm__BlockRef refs[64], *prefs[64];
    for (int round = 0; job_running(&vm) || round < 3; round++) {
        for (int i = 0; i < 64; i++) {
            spm__block_ref__init(&refs[i]);
            refs[i].sdb = 1 + (uint64_t)(round * 64 + i) % 1200;
            refs[i].version = 1 + (uint64_t)i % 3;
            refs[i].bytes = 4112;
            prefs[i] = &refs[i];
        }
        Spm__Publish pb = SPM__PUBLISH__INIT;
        pb.n_blocks = 64;
        pb.blocks = prefs;
        Spm__Drop dr = SPM__DROP__INIT;
        dr.n_blocks = 64;
        dr.blocks = prefs;
        if (round % 2)
            SEND(&p, DROP, drop, &dr);
        else
            SEND(&p, PUBLISH, publish, &pb);
        for (uint64_t si = 1; si <= 40; si++)
            forge_commit(&p, (uint64_t)round * 40 + si, (uint32_t)(si % 2),
                         si % 4 == 0 ? SPM_EEXEC : 0);
        Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
        SEND(&p, HEARTBEAT, heartbeat, &hb);
        usleep(20000);
    }
    end(&vm, &p);
}
END_TEST

/*  A peer asks for every SI it can get, then never commits and goes
    silent: the center re-issues them when it counts the peer dead. */
START_TEST(credit_hoarder_that_goes_silent)
{
    vm_t vm;
    peer_t p;
    begin(&vm, &p);
    peer_pull(&p, UINT32_MAX / 2, 1000); /* the sum wraps a 32-bit counter */
    size_t got = 0;
    spm_msg_t m;
    while (peer_expect(&p, SPM__ENVELOPE__BODY_ISSUE, 500, &m)) {
        got += m.env->issue->n_sis;
        spm_msg_close(&m);
    }
    ck_assert_msg(got > 0, "the hoarder was issued nothing");
    outcome_t o = end(&vm, &p);
    ck_assert_msg(o.reissued >= got, "%llu re-issued, %zu hoarded", o.reissued, got);
}
END_TEST

/*  A client submits programs that do not exist and asks for SDBs, versions
    and jobs that do not exist, and puts blocks of unknown or malformed
    types. Each gets its error answer. */
START_TEST(client_asks_for_what_does_not_exist)
{
    vm_t vm;
    peer_t p;
    begin(&vm, &p);
    peer_hello(&p, SPM__HELLO__ROLE__CLIENT, 0, 1);
    spm_msg_t m;
    for (int round = 0; job_running(&vm) || round < 3; round++) {
        Spm__Submit s = SPM__SUBMIT__INIT;
        s.program = round % 2 ? "no-such-program" : "";
        s.args.data = (uint8_t *)"\xff\xff";
        s.args.len = 2;
        SEND(&p, SUBMIT, submit, &s);
        ck_assert(peer_expect(&p, SPM__ENVELOPE__BODY_SUBMITTED, 3000, &m));
        ck_assert_int_eq(m.env->submitted->status, SPM_ENOTFOUND);
        ck_assert_uint_eq(m.env->submitted->job, 0);
        spm_msg_close(&m);

        Spm__Get g = SPM__GET__INIT;
        g.req = (uint64_t)round;
        g.sdb = round % 3 ? UINT64_MAX - (uint64_t)round : 1000000 + (uint64_t)round;
        g.version = (uint64_t)round % 2;
        SEND(&p, GET, get, &g);
        ck_assert(peer_expect(&p, SPM__ENVELOPE__BODY_GET_REPLY, 3000, &m));
        ck_assert_uint_eq(m.env->get_reply->req, (uint64_t)round);
        ck_assert_int_eq(m.env->get_reply->status, SPM_ENOTFOUND);
        ck_assert_uint_eq(m.nframes, 0);
        spm_msg_close(&m);

        Spm__Watch w = SPM__WATCH__INIT;
        w.job = 999999;
        SEND(&p, WATCH, watch, &w);
        ck_assert(peer_expect(&p, SPM__ENVELOPE__BODY_ERROR, 3000, &m));
        ck_assert_int_eq(m.env->error->status, SPM_ENOTFOUND);
        spm_msg_close(&m);

        Spm__Put pu = SPM__PUT__INIT;
        pu.req = (uint64_t)round;
        pu.type = round % 2 ? "no.such.type" : "syn.block";
        spm_frame_t f = {"too short", 9, NULL, NULL};
        SEND_F(&p, PUT, put, &pu, &f, 1);
        ck_assert(peer_expect(&p, SPM__ENVELOPE__BODY_PUT_REPLY, 3000, &m));
        ck_assert_int_eq(m.env->put_reply->status, round % 2 ? SPM_ENOTFOUND : SPM_EFORMAT);
        spm_msg_close(&m);
        usleep(20000);
    }
    end(&vm, &p);
}
END_TEST

/*  A peer talks to a node's data agent instead of the center: garbage,
    FETCHes of blocks that do not exist, bodies a data agent never gets.
    The agent answers what it can, refuses the rest and keeps serving. */
START_TEST(data_agent_survives_garbage_and_unknown_fetches)
{
    vm_t vm;
    peer_t p;
    vm_start(&vm);
    vm_job(&vm);
    char ep[192];
    snprintf(ep, sizeof ep, "ipc://%s/cache0/data", vm.dir);
    peer_open(&p, ep);
    unsigned char junk[64];
    for (int round = 0; job_running(&vm) || round < 3; round++) {
        memset(junk, round, sizeof junk);
        send_raw(&p, junk, 1 + (size_t)round % sizeof junk, 0);
        Spm__Fetch f = SPM__FETCH__INIT;
        f.req = (uint64_t)round + 1;
        f.sdb = 1000000 + (uint64_t)round;
        f.version = (uint64_t)round % 3;
        spm_frame_t extra = {"unasked-for frame", 17, NULL, NULL};
        SEND_F(&p, FETCH, fetch, &f, &extra, (size_t)round % 2);
        spm_msg_t m;
        ck_assert_msg(peer_expect(&p, SPM__ENVELOPE__BODY_FETCH_REPLY, 3000, &m),
                      "the data agent no longer answers");
        ck_assert_uint_eq(m.env->fetch_reply->req, f.req);
        ck_assert_int_ne(m.env->fetch_reply->status, 0);
        ck_assert_uint_eq(m.nframes, 0);
        spm_msg_close(&m);
        Spm__Commit c = SPM__COMMIT__INIT; /* a body a data agent never gets */
        SEND(&p, COMMIT, commit, &c);
        usleep(10000);
    }
    ck_assert_msg(spm_test_running(vm.agents[0].pid), "the agent died");
    end(&vm, &p);
}
END_TEST

/*  Sends STORE ST with N frames F to the data agent P and returns the
    status of its answer (it must answer within 15 s: a forward to a node
    that never answers waits its timeout first). */
static int store_status(peer_t *p, Spm__Store *st, spm_frame_t *f, size_t n)
{
    SEND_F(p, STORE, store, st, f, n);
    spm_msg_t m;
    ck_assert_msg(peer_expect(p, SPM__ENVELOPE__BODY_STORE_REPLY, 15000, &m),
                  "the data agent no longer answers");
    ck_assert_uint_eq(m.env->store_reply->req, st->req);
    int status = m.env->store_reply->status;
    if (status != 0)
        ck_assert_msg(m.env->store_reply->error && *m.env->store_reply->error,
                      "a refusal without a reason");
    spm_msg_close(&m);
    return status;
}

/*  A peer stores forged blocks on a data agent while a job runs: no frame,
    a malformed block, a block of an unknown type without its checksum
    (with it, it is kept: it may be a plugin's), bytes that are not what
    the checksum says, an SDB 0, other bytes for a block the node keeps, a
    chain to nodes that do not exist and back to the agent itself. Each is
    refused with a reason (the chain is kept here, passed on to nobody);
    what the node keeps does not change, and the job's result is the quiet
    one. */
START_TEST(data_agent_refuses_forged_stores)
{
    vm_t vm;
    peer_t p;
    vm_start(&vm);
    vm_job(&vm);
    char ep[192];
    snprintf(ep, sizeof ep, "ipc://%s/cache0/data", vm.dir);
    peer_open(&p, ep);
    uint32_t syn = spm_name_id("syn.block");
    unsigned char good[16 + 64], bad[40] = "not a syn.block at all";
    spm_put_le64(good, 5);
    spm_put_le64(good + 8, 64);
    for (int j = 0; j < 64; j++)
        good[16 + j] = (unsigned char)(j * 3);
    uint64_t sum = spm_checksum(good, sizeof good);
    spm_frame_t fg = {good, sizeof good, NULL, NULL}, fb = {bad, sizeof bad, NULL, NULL};
    Spm__Store st = SPM__STORE__INIT;
    st.sdb = 900001;
    st.version = 1;
    st.type = syn;
    st.checksum = sum;
    st.req = 1;
    ck_assert_int_eq(store_status(&p, &st, NULL, 0), SPM_EPROTO); /* no frame */
    st.req = 2;
    st.checksum = spm_checksum(bad, sizeof bad);
    ck_assert_int_eq(store_status(&p, &st, &fb, 1), SPM_EFORMAT); /* malformed */
    /* A type the node does not know may be a plugin's, which only the IEUs
       that run its SIs load (and check before an SI body reads it): kept
       on its checksum, refused without it. */
    st.req = 3;
    st.type = 12345;
    st.sdb = 900002;
    st.checksum = spm_checksum(bad, sizeof bad) + 1;
    ck_assert_int_eq(store_status(&p, &st, &fb, 1), SPM_EFORMAT);
    st.req = 31;
    st.checksum = spm_checksum(bad, sizeof bad);
    ck_assert_int_eq(store_status(&p, &st, &fb, 1), 0);
    st.req = 4;
    st.sdb = 900001;
    st.type = syn;
    st.checksum = sum + 1;
    ck_assert_int_eq(store_status(&p, &st, &fg, 1), SPM_EFORMAT); /* not its checksum */
    st.req = 5;
    st.checksum = sum;
    st.sdb = 0;
    ck_assert_int_ne(store_status(&p, &st, &fg, 1), 0); /* SDB 0 */
    /* a well-formed block is kept, and passed on to nodes that do not
       exist and to the node itself: it answers, holding it alone */
    Spm__Node n1 = SPM__NODE__INIT, n2 = SPM__NODE__INIT, *fw[2] = {&n1, &n2};
    n1.index = 77;
    n1.endpoint = "ipc:///nonexistent/spm-data";
    n2.index = 0;
    n2.endpoint = ep;
    st.req = 6;
    st.sdb = 900001;
    st.want = 3;
    st.n_forward = 2;
    st.forward = fw;
    spm_msg_t m;
    SEND_F(&p, STORE, store, &st, &fg, 1);
    ck_assert_msg(peer_expect(&p, SPM__ENVELOPE__BODY_STORE_REPLY, 15000, &m), "no answer");
    ck_assert_int_eq(m.env->store_reply->status, 0);
    ck_assert_uint_eq(m.env->store_reply->n_holders, 1);
    spm_msg_close(&m);
    /* other bytes for the block it keeps now: refused, the kept ones stay */
    good[20] ^= 1;
    st.req = 7;
    st.want = 1;
    st.n_forward = 0;
    st.checksum = spm_checksum(good, sizeof good);
    ck_assert_int_eq(store_status(&p, &st, &fg, 1), SPM_EINVAL);
    good[20] ^= 1;
    Spm__Fetch f = SPM__FETCH__INIT;
    f.req = 8;
    f.sdb = 900001;
    f.version = 1;
    SEND(&p, FETCH, fetch, &f);
    ck_assert_msg(peer_expect(&p, SPM__ENVELOPE__BODY_FETCH_REPLY, 3000, &m), "no answer");
    ck_assert_int_eq(m.env->fetch_reply->status, 0);
    ck_assert_uint_eq(m.nframes, 1);
    ck_assert_uint_eq(spm_checksum(zmq_msg_data(&m.frames[0]), zmq_msg_size(&m.frames[0])), sum);
    spm_msg_close(&m);
    ck_assert_msg(spm_test_running(vm.agents[0].pid), "the agent died");
    end(&vm, &p);
}
END_TEST

/*  Two routing ids whose 64-bit FNV-1a hashes are equal (found with
    Brent's cycle search): the center keyed peers by that hash. A peer that
    picks the other id must not be taken for the first. */
static const char collide_a[] = "\x80\x8b\x2e\xc1\xe1\x4b\x37\xde\x54",
                  collide_b[] = "\x80\xc7\x71\xdf\x0d\x9e\x9f\xe2\x7e";

START_TEST(colliding_routing_id_is_not_taken_for_another_peer)
{
    vm_t vm;
    peer_t p, q;
    vm_start(&vm);
    vm_job(&vm);
    peer_open_as(&p, vm.ep, collide_a, sizeof collide_a - 1);
    peer_hello(&p, SPM__HELLO__ROLE__CLIENT, 0, 1);
    peer_open_as(&q, vm.ep, collide_b, sizeof collide_b - 1);
    Spm__StatusRequest sr = SPM__STATUS_REQUEST__INIT;
    spm_msg_t m;
    SEND(&q, STATUS, status, &sr); /* no HELLO of its own */
    ck_assert_msg(!peer_expect(&q, SPM__ENVELOPE__BODY_STATUS_REPLY, 1000, &m),
                  "a peer without HELLO was answered as the one its id collides with");
    SEND(&p, STATUS, status, &sr);
    ck_assert_msg(peer_expect(&p, SPM__ENVELOPE__BODY_STATUS_REPLY, 3000, &m), "no answer");
    spm_msg_close(&m);
    Spm__Shutdown sd = SPM__SHUTDOWN__INIT; /* would stop the center as the client */
    SEND(&q, SHUTDOWN, shutdown, &sd);
    peer_close(&q);
    end(&vm, &p);
}
END_TEST

/*  Resident memory of process PID in KiB. */
static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/*  A peer PUBLISHes half a million blocks that were never committed: the
    center's directory of cached blocks must not grow with them. */
START_TEST(forged_publish_flood_does_not_grow_the_center)
{
#ifdef __SANITIZE_ADDRESS__
    /* AddressSanitizer keeps freed memory in quarantine, which would read
       as growth: let the center reuse it, as without the sanitizer. */
    char opts[512];
    const char *old = getenv("ASAN_OPTIONS");
    snprintf(opts, sizeof opts, "%s%squarantine_size_mb=0", old ? old : "", old ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
#endif
    vm_t vm;
    peer_t p;
    begin(&vm, &p);
    long before = rss_kib(vm.center.pid);
    peer_hello(&p, SPM__HELLO__ROLE__IEU, 0, 1);
    enum { PER = 5000 };
    Spm__BlockRef *refs = calloc(PER, sizeof *refs), **prefs = calloc(PER, sizeof *prefs);
    ck_assert(refs && prefs);
    for (uint64_t round = 0; round < 100; round++) {
        for (size_t i = 0; i < PER; i++) {
            spm__block_ref__init(&refs[i]);
            refs[i].sdb = 1 + (round * PER + i) / 2;
            refs[i].version = 1 + i % 2 + (round % 2) * 1000;
            refs[i].bytes = UINT64_MAX;
            prefs[i] = &refs[i];
        }
        Spm__Publish pb = SPM__PUBLISH__INIT;
        pb.n_blocks = PER;
        pb.blocks = prefs;
        SEND(&p, PUBLISH, publish, &pb);
    }
    free(refs);
    free(prefs);
    center_answers(&vm); /* after the flood: it has been read */
    long after = rss_kib(vm.center.pid);
    end(&vm, &p);
    ck_assert_msg(after - before < 16 * 1024, "the center grew from %ld to %ld KiB", before, after);
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    const spm_test_case_t c = {.timeout_s = 240};
    SPM_TEST_ADD(s, &c, garbage_and_forged_messages);
    SPM_TEST_ADD(s, &c, stale_and_never_held_commits_are_discarded);
    SPM_TEST_ADD(s, &c, impostor_of_another_node);
    SPM_TEST_ADD(s, &c, credit_hoarder_that_goes_silent);
    SPM_TEST_ADD(s, &c, forged_publish_flood_does_not_grow_the_center);
    SPM_TEST_ADD(s, &c, data_agent_survives_garbage_and_unknown_fetches);
    SPM_TEST_ADD(s, &c, data_agent_refuses_forged_stores);
    SPM_TEST_ADD(s, &c, client_asks_for_what_does_not_exist);
    SPM_TEST_ADD(s, &c, colliding_routing_id_is_not_taken_for_another_peer);
    return s;
}

SPM_TEST_MAIN(hostile_suite)
