/*  =========================================================================
    session - a client's connection to a VM, embedded or remote
    =========================================================================
*/
#include "vm/client/session.h"

#include "datacache/blockclient.h"
#include "base/checksum.h"
#include "datacache/directory.h"
#include "datacache/storeview.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/grow.h"
#include "base/log.h"
#include "vm/client/progress.h"
#include "vm/embedded/launch.h"
#include "transport/security.h"
#include "transport/trace.h"

#include "transport/report.h"
#include "transport/wire.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PUT_WINDOW 16 /* puts in flight (spm_session_put_async) */
#define GET_WINDOW 16 /* gets in flight (spm_session_get_each) */

enum { PUT_ASKED = 1, PUT_KEEPING, PUT_STORING };

/*  One put in flight. */
typedef struct {
    uint64_t req;        /* the PUT, then the STORE to the center */
    spm_sdb_t *id;       /* where its SDB id goes */
    const char *type;    /* for the error message */
    spm_blockbuf_t *buf; /* staged on nodes: its bytes (NULL: sent to the store) */
    uint32_t type_id;    /* ... and what the nodes check them against */
    uint64_t checksum;
    int state;            /* PUT_* */
    int store_ok;         /* the center's store may keep it (too few nodes) */
    uint32_t holders[16]; /* nodes that keep it */
    size_t nholders;
    struct spm_session *s;
} put_t;

/*  One get in flight. */
typedef struct {
    uint64_t req;
    size_t index; /* in the caller's list */
    spm_sdb_t id;
    int done;
    int bytes; /* ask for the bytes, not where the store holds them */
    struct spm_session *s;
} get_t;

/*  A view of an ipc:// center's store, read in place (datacache/storeview.h),
    and a snapshot of it: counted, since blocks kept past a get_each
    (spm_session_keep) hold the snapshot, and a snapshot the view. */
typedef struct {
    spm_store_view_t *view;
    int refs;
} storeref_t;

typedef struct {
    spm_store_snap_t *snap;
    storeref_t *store;
    int refs;
} snapref_t;

static void store_unref(storeref_t *r)
{
    if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        spm_store_view_close(&r->view);
        free(r);
    }
}

static void snap_unref(snapref_t *r)
{
    if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        spm_store_snap_end(&r->snap);
        store_unref(r->store);
        free(r);
    }
}

typedef int (*got_fn)(void *arg, size_t index, const void *data, size_t len);

struct spm_session {
    spm_run_opts_t o;
    void *ctx, *dealer;
    void *monitor;            /* the dealer's handshakes: a refused key is told at once */
    spm_embedded_t *vm;       /* the embedded VM this session started, else NULL */
    char *endpoint;           /* the center's endpoint */
    spm_security_t *security; /* CurveZMQ keys for a tcp:// center */
    uint64_t next_req;
    spm_blockclient_t *bc; /* blocks to and from nodes, when staging on them */
    int stage_to_nodes;    /* the center wants blocks put on nodes (WELCOME) */
    put_t *puts[PUT_WINDOW];
    size_t nputs;
    int put_rc; /* the first failed put's code */
    get_t *gets[GET_WINDOW];
    size_t ngets;
    int get_rc; /* the first failed get's code */
    got_fn got; /* where fetched blocks go */
    void *got_arg;
    zmq_msg_t *arriving;      /* the block got() is given (spm_session_keep) */
    snapref_t *arriving_snap; /* or the snapshot it lies in, at arriving_data */
    const void *arriving_data;
    char *store_dir; /* an ipc:// center's store (WELCOME), read in place */
    uint8_t store_id[16];
    int store_tried;     /* a view of it was tried */
    storeref_t *store;   /* the view (NULL: blocks come as bytes) */
    snapref_t *snap;     /* get_each's snapshot of it (NULL: none) */
    uint64_t last_heard; /* when the center last answered a put or get */
    uint64_t last_ping;  /* when it was last asked whether it is there */
    int silent;          /* the center did not answer in time: nothing more is asked */
    int text_result;     /* the last job followed to its end set a text result (a plugin's) */
    int closing;         /* interrupted, and closing: the last requests still wait for answers */
    /* A remote VM's blocks this session put and jobs it ran, discarded at close. */
    spm_sdb_t *mine;
    size_t nmine, capmine;
    uint64_t *jobs;
    size_t njobs, capjobs;
};

const char spm_run_opts_help[] =
    "  --center ENDPOINT   run on this VM (e.g. tcp://head:7700); without it an\n"
    "                      embedded VM (center, agent, IEUs) runs on this machine\n"
    "  --ieus N            embedded VM: IEU processes; 0: one per core (default 0)\n"
    "  --slots N           embedded VM: SIs each IEU executes at once (default 1)\n"
    "  --prefetch N        embedded VM: SIs each IEU asks for ahead (default 1;\n"
    "                      more while SIs are short: about 2 ms of work, 48 ms\n"
    "                      while the center has more ready, at most 48)\n"
    "  --cache-mb N        embedded VM: node cache budget in MiB (default 0: no limit)\n"
    "  --no-speculate      embedded VM: do not copy stragglers to idle IEUs at the end\n"
    "                      of a stage (copying is the default; the first result wins)\n"
    "  --no-store-reads    embedded VM: IEUs read operands through their node cache\n"
    "                      (--cache-mb) and the center, not straight from its store, as\n"
    "                      on a node of their own\n"
    "  --priority N        job priority; larger runs first (default 0)\n"
    "  --json              print the run report as JSON on stdout\n"
    "  --quiet             no progress bar or meters, no text report\n"
    "  --trace FILE        write a Chrome trace of the job's SIs (Perfetto,\n"
    "                      chrome://tracing, spm plot)\n"
    "  --timeout MS        how long to wait for the center to answer (default 10000)\n"
    "  --keys DIR          CurveZMQ keys (client.key, center.pub) for a tcp:// center\n"
    "                      (default $SPM_KEYS, else /etc/spm/keys)\n"
    "  --insecure          connect over plain TCP without keys\n";

static volatile sig_atomic_t interrupted; /* Ctrl-C or SIGTERM while a session is open */

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

void spm_run_opts_init(spm_run_opts_t *o)
{
    /* an embedded VM's agent: the table's defaults, not the configured ones */
    *o = (spm_run_opts_t){.ieus = (int)spm_config_ieus(spm_config_default_long("agent", "ieus")),
                          .slots = (int)spm_config_default_long("agent", "slots"),
                          .prefetch = (int)spm_config_default_long("agent", "prefetch"),
                          .cache_mb = spm_config_default_long("agent", "cache_mb"),
                          .timeout_ms = 10000};
}

int spm_run_opts_set(spm_run_opts_t *o, int opt, const char *arg)
{
    long v;
    int rc = 0;
    switch (opt) {
    case SPM_OPT_CENTER:
        o->center = arg;
        break;
    case SPM_OPT_IEUS:
        rc = spm_config_arg("agent", "ieus", arg, &v);
        o->ieus = (int)spm_config_ieus(v);
        break;
    case SPM_OPT_SLOTS:
        rc = spm_config_arg("agent", "slots", arg, &v);
        o->slots = (int)v;
        break;
    case SPM_OPT_PREFETCH:
        rc = spm_config_arg("agent", "prefetch", arg, &v);
        o->prefetch = (int)v;
        break;
    case SPM_OPT_PRIORITY:
        rc = spm_parse_long("--priority", arg, -1000000, 1000000, &v);
        o->priority = (int)v;
        break;
    case SPM_OPT_TIMEOUT:
        rc = spm_parse_long("--timeout", arg, 100, 3600000, &v);
        o->timeout_ms = v;
        break;
    case SPM_OPT_JSON:
        o->json = 1;
        break;
    case SPM_OPT_QUIET:
        o->quiet = 1;
        break;
    case SPM_OPT_TRACE:
        o->trace = arg;
        break;
    case SPM_OPT_KEYS:
        o->keys = arg;
        break;
    case SPM_OPT_INSECURE:
        o->insecure = 1;
        break;
    case SPM_OPT_DETACH:
        o->detach = 1;
        break;
    case SPM_OPT_CACHE_MB:
        rc = spm_config_arg("agent", "cache_mb", arg, &o->cache_mb);
        break;
    case SPM_OPT_SPECULATE:
        o->no_speculate = 0;
        break;
    case SPM_OPT_NO_SPECULATE:
        o->no_speculate = 1;
        break;
    case SPM_OPT_NO_STORE_READS:
        o->no_store_reads = 1;
        break;
    default:
        return spm_error(SPM_EINVAL, "not a run option");
    }
    return rc;
}

static int send_env(spm_session_t *s, Spm__Envelope *env, spm_frame_t *f, size_t n)
{
    if (spm_wire_send(s->dealer, NULL, env, f, n, NULL) != 0)
        return spm_error(SPM_EUNREACH, "%s: cannot send", s->endpoint);
    return 0;
}

/*  Checks that the embedded VM's processes are still there. */
static int vm_alive(spm_session_t *s)
{
    return s->vm ? spm_embedded_alive(s->vm) : 0;
}

/*  Whether S runs on an embedded VM whose center has not been seen to exit. */
static int embedded(const spm_session_t *s)
{
    return s->vm && spm_embedded_center_up(s->vm);
}

/*  Waits for the next message whose body is WANT (others, e.g. stray
    progress, are dropped). Returns 1 with *M set, or an SPM_E* code. */
static int hello(spm_session_t *s);

static int expect(spm_session_t *s, int want, long timeout_ms, spm_msg_t *m)
{
    uint64_t deadline = spm_now_us() + (uint64_t)timeout_ms * 1000;
    while (!interrupted || s->closing) {
        if (vm_alive(s) != 0)
            return SPM_EDEAD;
        zmq_pollitem_t items[2] = {{s->dealer, 0, ZMQ_POLLIN, 0}, {s->monitor, 0, ZMQ_POLLIN, 0}};
        zmq_poll(items, s->monitor ? 2 : 1, 100);
        int r = s->monitor ? spm_security_monitor_read(s->security, s->monitor, s->endpoint) : 0;
        if (r != 0) {
            s->silent = 1;
            return r;
        }
        while ((r = spm_wire_recv(s->dealer, 0, 1, m, NULL)) > 0) {
            if (r != 1)
                continue;
            if ((int)m->env->body_case == want)
                return 1;
            if (m->env->body_case == SPM__ENVELOPE__BODY_ERROR) {
                int code = m->env->error->status ? m->env->error->status : SPM_EPROTO;
                spm_error(code, "%s", m->env->error->message);
                spm_msg_close(m);
                if (code == SPM_ESTRANGER && want != SPM__ENVELOPE__BODY_WELCOME) {
                    /* the center restarted: join it again; the caller asks again */
                    int rc = hello(s);
                    return rc ? rc : SPM_ESTRANGER;
                }
                return code;
            }
            spm_msg_close(m);
        }
        if (spm_now_us() > deadline) {
            s->silent = 1;
            return spm_error(SPM_EUNREACH, "%s: the center did not answer within %ld ms",
                             s->endpoint, timeout_ms);
        }
    }
    return spm_error(SPM_ECANCELED, "interrupted");
}

/*  Says HELLO as a client and waits for the WELCOME: when the session
    opens, and again to a center that restarted and forgot it. */
static int hello(spm_session_t *s)
{
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__CLIENT;
    h.pid = (uint32_t)getpid();
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    int rc = send_env(s, &env, NULL, 0);
    spm_msg_t m;
    if (rc == 0 && (rc = expect(s, SPM__ENVELOPE__BODY_WELCOME, s->o.timeout_ms, &m)) == 1) {
        Spm__Welcome *w = m.env->welcome;
        s->stage_to_nodes = w->stage_to_nodes;
        int same = s->store_dir && w->store_dir && strcmp(s->store_dir, w->store_dir) == 0 &&
                   w->store_id.len == sizeof s->store_id &&
                   memcmp(s->store_id, w->store_id.data, sizeof s->store_id) == 0;
        if (!same) { /* another store (or none): a view of the old one is stale */
            store_unref(s->store);
            s->store = NULL;
            s->store_tried = 0;
            free(s->store_dir);
            s->store_dir = NULL;
            if (w->store_dir && *w->store_dir && w->store_id.len == sizeof s->store_id &&
                !s->o.no_store_reads && (s->store_dir = strdup(w->store_dir)))
                memcpy(s->store_id, w->store_id.data, sizeof s->store_id);
        }
        spm_msg_close(&m);
        rc = 0;
    }
    return rc;
}

/*  Sends ENV and waits for the answer WANT into *M, asking once more when
    the center restarted in between (it forgot the first). A request that
    may be asked twice (AGAIN: status, cancel, discard) is asked again
    after every second without an answer, until the timeout: a center that
    died with it unanswered and came back answers the next one. Returns 1
    with *M set, or an SPM_E* code. */
static int ask(spm_session_t *s, Spm__Envelope *env, int want, int again, spm_msg_t *m)
{
    uint64_t deadline = spm_now_us() + (uint64_t)s->o.timeout_ms * 1000;
    int rc = SPM_ESTRANGER;
    for (int strangers = 0; strangers < 2;) {
        uint64_t now = spm_now_us();
        long left = now < deadline ? (long)((deadline - now) / 1000) : 0;
        rc = send_env(s, env, NULL, 0);
        if (rc == 0)
            rc = expect(s, want, again && left > 1000 ? 1000 : left, m);
        if (rc == SPM_ESTRANGER)
            strangers++;
        else if (!(again && rc == SPM_EUNREACH && spm_now_us() < deadline))
            break;
        s->silent = 0; /* asked again */
    }
    if (again && rc == SPM_EUNREACH)
        spm_error(rc, "%s: the center did not answer within %ld ms", s->endpoint, s->o.timeout_ms);
    return rc;
}

/*  Starts the embedded VM per S's options (vm/embedded/launch.h). */
static int start_embedded(spm_session_t *s)
{
    spm_embedded_opts_t vo = {.ieus = s->o.ieus,
                              .slots = s->o.slots,
                              .prefetch = s->o.prefetch,
                              .cache_mb = s->o.cache_mb,
                              .no_speculate = s->o.no_speculate,
                              .no_store_reads = s->o.no_store_reads,
                              .warm_mb = s->o.warm_mb,
                              .heap_mb = s->o.heap_mb};
    int rc = spm_embedded_new(&vo, &s->vm);
    if (rc == 0 && !(s->endpoint = strdup(spm_embedded_endpoint(s->vm))))
        rc = spm_error(SPM_ENOMEM, "out of memory");
    return rc;
}

int spm_session_open(const spm_run_opts_t *o, spm_session_t **out)
{
    *out = NULL;
    spm_session_t *s = calloc(1, sizeof *s);
    if (!s)
        return spm_error(SPM_ENOMEM, "out of memory");
    s->o = *o;
    interrupted = 0;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);
    int rc = 0;
    /* Before an embedded VM is forked: a context with no socket has no
       thread yet, and its making (OpenPGM's start, which looks up the
       protocols database) is then done once for the VM's processes too. */
    s->ctx = zmq_ctx_new();
    if (o->center) {
        s->endpoint = strdup(o->center);
        if (!s->endpoint)
            rc = spm_error(SPM_ENOMEM, "out of memory");
    } else {
        rc = start_embedded(s);
    }
    s->security = spm_security_new(o->keys, "client", o->insecure);
    if (rc == 0 && !(s->dealer = s->ctx ? spm_wire_socket(s->ctx, ZMQ_DEALER) : NULL))
        rc = SPM_ESYS;
    if (rc == 0 && !s->security)
        rc = SPM_ENOMEM;
    if (rc == 0)
        s->monitor = spm_security_monitor(s->ctx, s->dealer, 0);
    if (rc == 0 && !o->center) /* the center just started: its socket comes in a moment */
        spm_wire_await_ipc(s->endpoint, 2000);
    if (rc == 0)
        rc = spm_security_connect(s->security, s->dealer, s->endpoint, NULL);
    if (rc == 0)
        rc = hello(s);
    if (rc == 0)
        rc = (s->bc = spm_blockclient_new(s->ctx, s->security)) ? 0 : SPM_ENOMEM;
    if (rc != 0) {
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", spm_error_detail());
        spm_session_close(&s);
        return spm_error(rc, "%s", detail);
    }
    *out = s;
    return 0;
}

/* ------------------------------------------------------- blocks in flight */

static void put_done(spm_session_t *s, put_t *p)
{
    for (size_t i = 0; i < s->nputs; i++)
        if (s->puts[i] == p) {
            s->puts[i] = s->puts[--s->nputs];
            break;
        }
    spm_blockbuf_unref(p->buf);
    free(p);
}

static void put_failed(spm_session_t *s, put_t *p, int code, const char *why)
{
    if (s->put_rc == 0)
        s->put_rc = spm_error(code, "storing a %s block: %s", p->type, why);
    put_done(s, p);
}

/*  P's SDB is kept by its holders: the center hears so, and it is done. */
static void put_placed(spm_session_t *s, put_t *p)
{
    Spm__Placed pl = SPM__PLACED__INIT;
    pl.sdb = *p->id;
    pl.holders = p->holders;
    pl.n_holders = p->nholders;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PLACED;
    env.placed = &pl;
    if (send_env(s, &env, NULL, 0) != 0 && s->put_rc == 0)
        s->put_rc = SPM_EUNREACH;
    put_done(s, p);
}

/*  Block client callback: the nodes asked to keep P's block answered. */
static void put_kept(void *arg, const uint32_t *holders, size_t n, int status, const char *why)
{
    put_t *p = arg;
    spm_session_t *s = p->s;
    for (size_t i = 0; i < n && p->nholders < 16; i++)
        p->holders[p->nholders++] = holders[i];
    if (status == SPM_EFULL && p->store_ok) {
        /* Too few nodes with room: the center's store keeps a copy too. (A
           client that cannot reach the nodes is not helped that way: its
           results would have to come back from them.) */
        Spm__Store st = SPM__STORE__INIT;
        st.req = p->req = ++s->next_req;
        st.sdb = *p->id;
        st.version = 1;
        st.type = p->type_id;
        st.checksum = p->checksum;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_STORE;
        env.store = &st;
        spm_frame_t f = spm_blockbuf_frame(p->buf);
        p->state = PUT_STORING;
        s->last_heard = spm_now_us();
        if (spm_wire_send(s->dealer, NULL, &env, &f, 1, NULL) != 0)
            put_failed(s, p, SPM_EUNREACH, "cannot send it to the center");
        return;
    }
    if (n == 0) {
        put_failed(s, p, status == SPM_EFULL ? SPM_EFULL : SPM_EUNREACH,
                   *why ? why : "no node to keep it");
        return;
    }
    put_placed(s, p); /* a node short: the center has it copied */
}

static void on_put_reply(spm_session_t *s, Spm__PutReply *r)
{
    put_t *p = NULL;
    for (size_t i = 0; i < s->nputs && !p; i++)
        if (s->puts[i]->req == r->req && s->puts[i]->state == PUT_ASKED)
            p = s->puts[i];
    if (!p)
        return; /* an answer to nothing of ours */
    *p->id = r->sdb;
    if (r->status == 0 && r->sdb && !embedded(s) &&
        spm_grow(&s->mine, s->nmine, &s->capmine, sizeof *s->mine, 256) == 0)
        s->mine[s->nmine++] = r->sdb;
    if (r->status != 0) {
        put_failed(s, p, r->status, r->error);
        return;
    }
    if (!p->buf) { /* it went to the center's store with the PUT */
        put_done(s, p);
        return;
    }
    uint32_t cand[16];
    size_t n = 0;
    for (size_t i = 0; i < r->n_targets && n < 16; i++) {
        Spm__Node *t = r->targets[i];
        if (t->index == SPM_NODE_STORE)
            p->store_ok = 1;
        else if (spm_blockclient_node(s->bc, t->index, t->endpoint, t->key) == 0)
            cand[n++] = t->index;
    }
    spm_blockref_t ref = {r->sdb, 1, p->type_id, p->checksum, spm_blockbuf_len(p->buf)};
    p->state = PUT_KEEPING;
    /* A chain: the client's link carries the block once, the nodes pass
       it on among themselves. */
    if (spm_blockclient_keep(s->bc, &ref, p->buf, NULL, 0, r->replicas ? r->replicas : 1, cand, n,
                             1, put_kept, p) != 0)
        put_failed(s, p, SPM_ENOMEM, "out of memory");
}

static void on_store_reply(spm_session_t *s, Spm__StoreReply *r)
{
    for (size_t i = 0; i < s->nputs; i++) {
        put_t *p = s->puts[i];
        if (p->req != r->req || p->state != PUT_STORING)
            continue;
        if (r->status != 0)
            put_failed(s, p, r->status, r->error);
        else
            put_placed(s, p);
        return;
    }
}

static void get_done(spm_session_t *s, get_t *g)
{
    for (size_t i = 0; i < s->ngets; i++)
        if (s->gets[i] == g) {
            s->gets[i] = s->gets[--s->ngets];
            break;
        }
    free(g);
}

static void get_failed(spm_session_t *s, get_t *g, int code, const char *why)
{
    if (s->get_rc == 0)
        s->get_rc = spm_error(code, "fetching SDB %llu: %s", (unsigned long long)g->id, why);
    get_done(s, g);
}

static void get_arrived(spm_session_t *s, get_t *g, zmq_msg_t *block, const void *data, size_t len)
{
    s->arriving = block;
    int rc = s->got(s->got_arg, g->index, block ? zmq_msg_data(block) : data,
                    block ? zmq_msg_size(block) : len);
    if (s->arriving_snap) /* read in place and not kept: its pages are not ours */
        spm_store_view_unmap(s->store->view, data, len);
    s->arriving = NULL;
    s->arriving_snap = NULL;
    if (rc != 0 && s->get_rc == 0)
        s->get_rc = rc;
    get_done(s, g);
}

/*  Block client callback: a holder sent G's block (or none could). */
static void get_fetched(void *arg, int status, zmq_msg_t *block, uint32_t node, const char *why)
{
    (void)node;
    get_t *g = arg;
    if (status == 0)
        get_arrived(g->s, g, block, NULL, 0);
    else
        get_failed(g->s, g, status, why);
}

/*  Asks the center for G's block. */
static int send_get(spm_session_t *s, const get_t *g)
{
    Spm__Get q = SPM__GET__INIT;
    q.req = g->req;
    q.sdb = g->id;
    q.in_place = s->snap && !g->bytes;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_GET;
    env.get = &q;
    return send_env(s, &env, NULL, 0);
}

static void on_get_reply(spm_session_t *s, spm_msg_t *m)
{
    Spm__GetReply *r = m->env->get_reply;
    get_t *g = NULL;
    for (size_t i = 0; i < s->ngets && !g; i++)
        if (s->gets[i]->req == r->req && !s->gets[i]->done)
            g = s->gets[i];
    if (!g)
        return;
    g->done = 1; /* the center answered */
    if (r->status != 0) {
        get_failed(s, g, r->status, r->error && *r->error ? r->error : spm_strerror(r->status));
        return;
    }
    if (m->nframes == 1) {
        get_arrived(s, g, &m->frames[0], NULL, 0);
        return;
    }
    if (r->in_store) { /* read where it lies */
        const void *data;
        size_t len;
        if (s->snap &&
            spm_store_snap_get(s->snap->snap, g->id, r->version, NULL, &data, &len) == 0) {
            s->arriving_snap = s->snap;
            s->arriving_data = data;
            get_arrived(s, g, NULL, data, len);
            return;
        }
        /* Not in the snapshot (committed after it began): the bytes, then. */
        g->done = 0;
        g->bytes = 1;
        g->req = ++s->next_req;
        if (send_get(s, g) != 0)
            get_failed(s, g, SPM_EUNREACH, spm_error_detail());
        return;
    }
    uint32_t nodes[16];
    size_t n = 0;
    for (size_t k = 0; k < r->n_holders && k < r->n_holder_nodes && n < 16; k++)
        if (spm_blockclient_node(s->bc, r->holder_nodes[k], r->holders[k],
                                 k < r->n_holder_keys ? r->holder_keys[k] : "") == 0)
            nodes[n++] = r->holder_nodes[k];
    spm_blockref_t ref = {r->sdb, r->version, r->type, r->checksum, r->bytes};
    if (!n || spm_blockclient_fetch(s->bc, &ref, nodes, n, get_fetched, g) != 0)
        get_failed(s, g, SPM_EPROTO, "the center named no holder");
}

/*  Whether a put or get waits for the center's answer. */
static int waits_for_center(const spm_session_t *s)
{
    for (size_t i = 0; i < s->nputs; i++)
        if (s->puts[i]->state != PUT_KEEPING)
            return 1;
    for (size_t i = 0; i < s->ngets; i++)
        if (!s->gets[i]->done)
            return 1;
    return 0;
}

/*  The center restarted and forgot this session: joins it again and asks
    again for the blocks it had not answered for. Puts it had not answered
    for fail (their ids are lost with the request): staging is redone by
    running the command again. */
static int rejoin(spm_session_t *s)
{
    int rc = hello(s);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < s->nputs;) {
        if (s->puts[i]->state != PUT_KEEPING)
            put_failed(s, s->puts[i], SPM_EUNREACH,
                       "the center restarted while this block was staged; run the command again");
        else
            i++;
    }
    for (size_t i = 0; i < s->ngets; i++) {
        if (!s->gets[i]->done && (rc = send_get(s, s->gets[i])) != 0)
            return rc;
    }
    s->last_heard = spm_now_us();
    return 0;
}

/*  Moves the puts and gets in flight on: waits up to 100 ms for answers
    from the center or from nodes and handles them. Returns 0, or the
    failure that ends them all (the center silent for the timeout, dead,
    or Ctrl-C). */
static int progress(spm_session_t *s)
{
    if (spm_session_interrupted() && !s->closing)
        return spm_error(SPM_ECANCELED, "interrupted");
    int rc = vm_alive(s);
    if (rc != 0)
        return rc;
    zmq_pollitem_t items[1 + 64] = {{s->dealer, 0, ZMQ_POLLIN, 0}};
    int n = 1 + spm_blockclient_items(s->bc, items + 1, 64);
    zmq_poll(items, n, 100);
    spm_blockclient_process(s->bc);
    spm_blockclient_expire(s->bc, spm_now_us());
    spm_msg_t m;
    int r, restarted = 0;
    while ((r = spm_wire_recv(s->dealer, 0, 1, &m, NULL)) > 0) {
        if (r != 1)
            continue;
        s->last_heard = spm_now_us();
        switch (m.env->body_case) {
        case SPM__ENVELOPE__BODY_ERROR:
            restarted |= m.env->error->status == SPM_ESTRANGER;
            break;
        case SPM__ENVELOPE__BODY_PUT_REPLY:
            on_put_reply(s, m.env->put_reply);
            break;
        case SPM__ENVELOPE__BODY_STORE_REPLY:
            on_store_reply(s, m.env->store_reply);
            break;
        case SPM__ENVELOPE__BODY_GET_REPLY:
            on_get_reply(s, &m);
            break;
        default: /* stray progress and the like */
            break;
        }
        spm_msg_close(&m);
    }
    if (restarted && (rc = rejoin(s)) != 0)
        return rc;
    uint64_t now = spm_now_us();
    if (waits_for_center(s) && now - s->last_heard > 1000000 && now - s->last_ping > 1000000) {
        /* Quiet for a second: a live center answers this at once, and a
           restarted one says it does not know us. */
        Spm__Heartbeat hb = SPM__HEARTBEAT__INIT;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_HEARTBEAT;
        env.heartbeat = &hb;
        send_env(s, &env, NULL, 0);
        s->last_ping = now;
    }
    if (waits_for_center(s) && spm_now_us() - s->last_heard > (uint64_t)s->o.timeout_ms * 1000) {
        s->silent = 1;
        return spm_error(SPM_EUNREACH, "%s: the center did not answer within %ld ms", s->endpoint,
                         s->o.timeout_ms);
    }
    return 0;
}

/*  Forgets every put and get in flight (no answer will come). */
static void abandon(spm_session_t *s)
{
    while (s->nputs)
        put_done(s, s->puts[0]);
    while (s->ngets)
        get_done(s, s->gets[0]);
}

int spm_session_put_async(spm_session_t *s, const char *type, const void *data, size_t len,
                          spm_sdb_t *id)
{
    int rc = 0;
    while (rc == 0 && s->put_rc == 0 && s->nputs == PUT_WINDOW)
        rc = progress(s);
    if (rc != 0)
        abandon(s);
    if (rc != 0 || s->put_rc != 0)
        return rc ? rc : s->put_rc;
    put_t *p = calloc(1, sizeof *p);
    /* A plugin goes to the center's store: the center loads it from there. */
    int place = s->stage_to_nodes && strcmp(type, SPM_PLUGIN_TYPE) != 0;
    void *copy = place ? malloc(len ? len : 1) : NULL;
    if (!p || (place && !copy)) {
        free(p);
        free(copy);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    Spm__Put pu = SPM__PUT__INIT;
    pu.req = p->req = ++s->next_req;
    pu.type = (char *)type;
    p->id = id;
    p->type = type;
    p->s = s;
    p->state = PUT_ASKED;
    spm_frame_t f = {(void *)data, len, NULL, NULL}; /* copied: DATA is the caller's */
    if (place) {
        /* The nodes keep it; the center only names them. */
        if (len)
            memcpy(copy, data, len);
        if (!(p->buf = spm_blockbuf_new(copy, len))) {
            free(p);
            return spm_error(SPM_ENOMEM, "out of memory");
        }
        p->type_id = spm_name_id(type);
        p->checksum = pu.checksum = spm_checksum(data, len);
        pu.place = 1;
        pu.bytes = len;
    }
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_PUT;
    env.put = &pu;
    if ((rc = send_env(s, &env, &f, p->buf ? 0 : 1)) != 0) {
        spm_blockbuf_unref(p->buf);
        free(p);
        return rc;
    }
    if (!s->nputs && !s->ngets)
        s->last_heard = spm_now_us();
    s->puts[s->nputs++] = p;
    return 0;
}

int spm_session_put_flush(spm_session_t *s)
{
    int rc = 0;
    while (rc == 0 && s->nputs > 0)
        rc = progress(s);
    if (rc != 0)
        abandon(s);
    return rc ? rc : s->put_rc;
}

int spm_session_put(spm_session_t *s, const char *type, const void *data, size_t len, spm_sdb_t *id)
{
    int rc = spm_session_put_async(s, type, data, len, id);
    int done = spm_session_put_flush(s);
    return rc ? rc : done;
}

/*  get_each's snapshot of the center's store, when it can be read in
    place: a view opened at the first call (an ipc:// center named its
    store), a snapshot begun for each call. Nothing when it cannot be;
    the blocks then come as bytes. */
static void begin_snap(spm_session_t *s)
{
    if (s->store_dir && !s->store_tried) {
        s->store_tried = 1;
        spm_store_view_t *v = spm_store_view_open(s->store_dir, s->store_id);
        if (v && (s->store = calloc(1, sizeof *s->store))) {
            s->store->view = v;
            s->store->refs = 1; /* the session's */
        } else {
            spm_log_info("results come through the center: %s",
                         v ? "out of memory" : spm_error_detail());
            spm_store_view_close(&v);
        }
    }
    spm_store_snap_t *snap = s->store ? spm_store_view_snap(s->store->view) : NULL;
    if (snap && (s->snap = calloc(1, sizeof *s->snap))) {
        *s->snap = (snapref_t){.snap = snap, .store = s->store, .refs = 1};
        __atomic_add_fetch(&s->store->refs, 1, __ATOMIC_RELAXED);
    } else {
        spm_store_snap_end(&snap);
    }
}

int spm_session_get_each(spm_session_t *s, const spm_sdb_t *ids, size_t n,
                         int (*fn)(void *arg, size_t index, const void *data, size_t len),
                         void *arg)
{
    s->got = fn;
    s->got_arg = arg;
    s->get_rc = 0;
    begin_snap(s);
    int rc = 0;
    size_t next = 0;
    while (rc == 0 && s->get_rc == 0 && (next < n || s->ngets > 0)) {
        while (next < n && s->ngets < GET_WINDOW && s->get_rc == 0) {
            get_t *g = calloc(1, sizeof *g);
            if (!g) {
                rc = spm_error(SPM_ENOMEM, "out of memory");
                break;
            }
            g->req = ++s->next_req;
            g->index = next;
            g->id = ids[next++];
            g->s = s;
            if ((rc = send_get(s, g)) != 0) {
                free(g);
                break;
            }
            if (!s->nputs && !s->ngets)
                s->last_heard = spm_now_us();
            s->gets[s->ngets++] = g;
        }
        if (rc == 0 && s->ngets > 0)
            rc = progress(s);
    }
    abandon(s);          /* after a failure: the rest is not wanted */
    snap_unref(s->snap); /* the blocks kept hold it still */
    s->snap = NULL;
    return rc ? rc : s->get_rc;
}

struct spm_kept {
    zmq_msg_t msg;
    snapref_t *snap; /* the bytes lie in this snapshot of the store (else: msg) */
};

spm_kept_t *spm_session_keep(spm_session_t *s, const void **data)
{
    spm_kept_t *k = s->arriving || s->arriving_snap ? calloc(1, sizeof *k) : NULL;
    if (!k)
        return NULL;
    if (s->arriving_snap) {
        k->snap = s->arriving_snap;
        __atomic_add_fetch(&k->snap->refs, 1, __ATOMIC_RELAXED);
        s->arriving_snap = NULL; /* kept once */
        *data = s->arriving_data;
        return k;
    }
    zmq_msg_init(&k->msg);
    if (zmq_msg_move(&k->msg, s->arriving) != 0) {
        zmq_msg_close(&k->msg);
        free(k);
        return NULL;
    }
    s->arriving = NULL; /* kept once */
    *data = zmq_msg_data(&k->msg);
    return k;
}

int spm_kept_in_place(const spm_kept_t *k)
{
    return k->snap != NULL;
}

void spm_kept_free(void *kept)
{
    spm_kept_t *k = kept;
    if (k && k->snap)
        snap_unref(k->snap);
    else if (k)
        zmq_msg_close(&k->msg);
    free(k);
}

/*  spm_session_get's callback: keeps a copy of the one block. */
typedef struct {
    void *data;
    size_t len;
} one_t;

static int got_one(void *arg, size_t index, const void *data, size_t len)
{
    (void)index;
    one_t *o = arg;
    if (!(o->data = malloc(len ? len : 1)))
        return spm_error(SPM_ENOMEM, "out of memory");
    memcpy(o->data, data, len);
    o->len = len;
    return 0;
}

int spm_session_get(spm_session_t *s, spm_sdb_t id, void **data, size_t *len)
{
    one_t o = {0};
    int rc = spm_session_get_each(s, &id, 1, got_one, &o);
    if (rc != 0) {
        free(o.data);
        return rc;
    }
    *data = o.data;
    *len = o.len;
    return 0;
}

static void draw_progress(const Spm__Progress *p)
{
    double el = p->elapsed_us / 1e6;
    double rate = el > 0 ? p->committed / el : 0;
    char bar[SPM_PROGRESS_BAR + 1];
    spm_progress_bar(bar, p->known ? (double)p->committed / (double)p->known : 0);
    fprintf(stdout, "\r[%s] %llu/%llu SIs  %.0f SI/s  %.1f s  %u IEUs ", bar,
            (unsigned long long)p->committed, (unsigned long long)p->known, rate, el, p->ieus);
    fflush(stdout);
}

int spm_run_opts_bar(const spm_run_opts_t *o)
{
    return !o->quiet && !o->json && isatty(STDOUT_FILENO);
}

int spm_session_run(spm_session_t *s, const char *program, const void *args, size_t len,
                    void **result, size_t *result_len)
{
    return spm_session_run_plugin(s, 0, program, args, len, result, result_len);
}

int spm_session_run_plugin(spm_session_t *s, spm_sdb_t plugin, const char *program,
                           const void *args, size_t len, void **result, size_t *result_len)
{
    if (result)
        *result = NULL;
    Spm__Submit sub = SPM__SUBMIT__INIT;
    sub.plugin = plugin;
    sub.program = (char *)program;
    sub.args.data = (uint8_t *)args;
    sub.args.len = len;
    sub.priority = s->o.priority;
    sub.trace = s->o.trace != NULL && !s->o.detach;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_SUBMIT;
    env.submit = &sub;
    spm_msg_t m;
    int rc = ask(s, &env, SPM__ENVELOPE__BODY_SUBMITTED, 0, &m);
    if (rc != 1)
        return rc;
    uint64_t job = m.env->submitted->job;
    if (!job) {
        rc = m.env->submitted->status ? m.env->submitted->status : SPM_EPROTO;
        spm_error(rc, "%s", m.env->submitted->error);
        spm_msg_close(&m);
        return rc;
    }
    spm_msg_close(&m);
    if (!s->o.detach && !embedded(s) &&
        spm_grow(&s->jobs, s->njobs, &s->capjobs, sizeof *s->jobs, 4) == 0)
        s->jobs[s->njobs++] = job;
    if (s->o.detach) {
        s->nmine = 0; /* what it put is the job's now: closing must not discard it */
        if (s->o.json)
            printf("{\"job\": %llu}\n", (unsigned long long)job);
        else
            printf("%llu\n", (unsigned long long)job);
        return 0;
    }
    return spm_session_wait(s, job, result, result_len);
}

int spm_session_text_result(const spm_session_t *s)
{
    return s->text_result;
}

int spm_session_wait(spm_session_t *s, uint64_t job, void **result, size_t *result_len)
{
    if (result)
        *result = NULL;
    Spm__Watch w = SPM__WATCH__INIT;
    w.job = job;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_WATCH;
    env.watch = &w;
    int rc = send_env(s, &env, NULL, 0);
    if (rc != 0)
        return rc;
    int bar = spm_run_opts_bar(&s->o);
    int drawn = 0;
    uint64_t last_heard = spm_now_us(), last_watch = last_heard;
    spm_msg_t m;
    spm_trace_t *trace = s->o.trace ? spm_trace_new() : NULL;
    while (!interrupted) {
        if ((rc = vm_alive(s)) != 0)
            return rc;
        zmq_pollitem_t item = {s->dealer, 0, ZMQ_POLLIN, 0};
        zmq_poll(&item, 1, 200);
        int r;
        while ((r = spm_wire_recv(s->dealer, 0, 1, &m, NULL)) > 0) {
            if (r != 1)
                continue;
            last_heard = spm_now_us();
            int body = m.env->body_case;
            if (body == SPM__ENVELOPE__BODY_ERROR && m.env->error->status == SPM_ESTRANGER) {
                /* the center restarted and resumed the job: follow it there */
                spm_msg_close(&m);
                if ((rc = hello(s)) != 0 || (rc = send_env(s, &env, NULL, 0)) != 0)
                    return rc;
                last_watch = last_heard = spm_now_us();
                continue;
            }
            if (body == SPM__ENVELOPE__BODY_ERROR) {
                rc = m.env->error->status ? m.env->error->status : SPM_EPROTO;
                spm_error(rc, "job %llu: %s", (unsigned long long)job, m.env->error->message);
                spm_msg_close(&m);
                return rc;
            }
            if (body == SPM__ENVELOPE__BODY_TRACE && trace) {
                spm_trace_unpack(trace, m.env->trace);
            } else if (body == SPM__ENVELOPE__BODY_PROGRESS && bar) {
                draw_progress(m.env->progress);
                drawn = 1;
            } else if (body == SPM__ENVELOPE__BODY_REPORT) {
                Spm__Report *rep = m.env->report;
                if (drawn)
                    fprintf(stdout, "\r\033[K");
                if (s->o.json)
                    spm_report_print(rep, 1, stdout);
                else if (!s->o.quiet)
                    spm_report_print(rep, 0, stdout);
                fflush(stdout);
                rc = rep->status;
                if (trace) {
                    int wrc = spm_trace_write(trace, s->o.trace, rep->program);
                    spm_trace_destroy(&trace);
                    if (wrc != 0 && rc == 0) {
                        spm_msg_close(&m);
                        return wrc;
                    }
                }
                if (rc != 0)
                    spm_error(rc, "job %llu failed: %s", (unsigned long long)job, rep->error);
                s->text_result = rep->text_result;
                if (rc == 0 && result && rep->result.len) {
                    *result = malloc(rep->result.len);
                    if (*result) {
                        memcpy(*result, rep->result.data, rep->result.len);
                        *result_len = rep->result.len;
                    }
                }
                spm_msg_close(&m);
                return rc;
            }
            spm_msg_close(&m);
        }
        uint64_t now = spm_now_us();
        if (now - last_heard > (uint64_t)s->o.timeout_ms * 1000) {
            s->silent = 1;
            return spm_error(SPM_EUNREACH, "%s: the center stopped answering", s->endpoint);
        }
        if (now - last_heard > 1000000 && now - last_watch > 1000000) {
            /* Silent for a second (progress comes 5 times a second): ask
               again, so that a restarted center tells us it forgot us. */
            if ((rc = send_env(s, &env, NULL, 0)) != 0)
                return rc;
            last_watch = now;
        }
    }
    if (drawn)
        fprintf(stdout, "\n");
    spm_trace_destroy(&trace);
    return spm_error(SPM_ECANCELED, "interrupted");
}

int spm_session_status(spm_session_t *s, char **json, char **text)
{
    Spm__StatusRequest q = SPM__STATUS_REQUEST__INIT;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_STATUS;
    env.status = &q;
    spm_msg_t m;
    int rc = ask(s, &env, SPM__ENVELOPE__BODY_STATUS_REPLY, 1, &m);
    if (rc != 1)
        return rc;
    *json = strdup(m.env->status_reply->json);
    *text = strdup(m.env->status_reply->text);
    spm_msg_close(&m);
    if (!*json || !*text) {
        free(*json);
        free(*text);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    return 0;
}

/*  Sends ENV and waits for its ACK. Returns the ACK's status (its error
    after WHAT in the detail) or the failure to get one. */
static int ask_ack(spm_session_t *s, Spm__Envelope *env, const char *what)
{
    spm_msg_t m;
    int rc = ask(s, env, SPM__ENVELOPE__BODY_ACK, 1, &m);
    if (rc != 1)
        return rc;
    rc = m.env->ack->status;
    if (rc != 0)
        spm_error(rc, "%s: %s", what, m.env->ack->error);
    spm_msg_close(&m);
    return rc;
}

int spm_session_cancel(spm_session_t *s, uint64_t job)
{
    Spm__Cancel c = SPM__CANCEL__INIT;
    c.job = job;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_CANCEL;
    env.cancel = &c;
    char what[32];
    snprintf(what, sizeof what, "job %llu", (unsigned long long)job);
    return ask_ack(s, &env, what);
}

const char *spm_session_rundir(const spm_session_t *s)
{
    return s->vm ? spm_embedded_rundir(s->vm) : NULL;
}

int spm_session_local_files(const spm_session_t *s)
{
    return s->vm != NULL;
}

int spm_session_interrupted(void)
{
    return interrupted != 0;
}

void spm_session_release(spm_session_t *s)
{
    if (!s || !embedded(s) || !s->dealer || spm_embedded_released(s->vm))
        return;
    /* Ask the embedded center to stop; it tells the agent and IEUs. */
    Spm__Shutdown sh = SPM__SHUTDOWN__INIT;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_SHUTDOWN;
    env.shutdown = &sh;
    spm_wire_send(s->dealer, NULL, &env, NULL, 0, NULL);
    spm_embedded_release(s->vm);
}

int spm_session_discard(spm_session_t *s)
{
    if (s->silent || (!s->nmine && !s->njobs))
        return 0;
    Spm__Discard d = SPM__DISCARD__INIT;
    d.jobs = s->jobs;
    d.n_jobs = s->njobs;
    d.sdbs = s->mine;
    d.n_sdbs = s->nmine;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_DISCARD;
    env.discard = &d;
    int rc = ask_ack(s, &env, "the center keeps this run's blocks");
    if (rc == 0)
        s->nmine = s->njobs = 0;
    return rc;
}

void spm_session_close(spm_session_t **sp)
{
    spm_session_t *s = *sp;
    if (!s)
        return;
    if (!embedded(s) && s->dealer && !s->silent && interrupted && s->njobs) {
        /* Ctrl-C: nobody will fetch what this session's jobs make. */
        s->closing = 1;
        s->o.timeout_ms = s->o.timeout_ms < 3000 ? s->o.timeout_ms : 3000;
        for (size_t i = 0; i < s->njobs; i++)
            spm_session_cancel(s, s->jobs[i]); /* one that ended says so: fine */
    }
    if (!embedded(s) && s->dealer && spm_session_discard(s) != 0)
        spm_log_warn("%s", spm_error_detail());
    spm_session_release(s);
    spm_embedded_destroy(&s->vm); /* its processes and its directory */
    abandon(s);
    spm_blockclient_destroy(&s->bc);
    if (s->monitor)
        zmq_close(s->monitor);
    if (s->dealer)
        zmq_close(s->dealer);
    spm_security_destroy(&s->security);
    if (s->ctx)
        zmq_ctx_term(s->ctx);
    snap_unref(s->snap); /* blocks kept in place hold them still */
    s->snap = NULL;
    store_unref(s->store);
    free(s->store_dir);
    free(s->endpoint);
    free(s->mine);
    free(s->jobs);
    free(s);
    *sp = NULL;
}
