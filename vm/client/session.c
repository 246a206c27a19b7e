/*  =========================================================================
    session - a client's connection to a VM, embedded or remote

    Opening (the embedded VM started when no center is named,
    vm/embedded/launch.h; HELLO and WELCOME), the requests that have one
    answer (status, cancel, discard, release), and closing. Staging, results
    and following a job have files of their own (session_int.h).
    =========================================================================
*/
#include "vm/client/session_int.h"

#include "base/backoff.h"
#include "base/log.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted; /* Ctrl-C or SIGTERM while a session is open */

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

int spm_client_send(spm_session_t *s, Spm__Envelope *env, spm_frame_t *f, size_t n)
{
    if (spm_wire_send(s->dealer, NULL, env, f, n, NULL) != 0)
        return spm_error(SPM_EUNREACH, "%s: cannot send", s->endpoint);
    return 0;
}

/*  Checks that the embedded VM's processes are still there. */
int spm_client_alive(spm_session_t *s)
{
    return s->vm ? spm_embedded_alive(s->vm) : 0;
}

/*  Whether S runs on an embedded VM whose center has not been seen to exit. */
int spm_client_embedded(const spm_session_t *s)
{
    return s->vm && spm_embedded_center_up(s->vm);
}

/*  Waits for the next message whose body is WANT (others, e.g. stray
    progress, are dropped). Returns 1 with *M set, or an SPM_E* code. */
static int expect(spm_session_t *s, int want, long timeout_ms, spm_msg_t *m)
{
    uint64_t deadline = spm_now_us() + (uint64_t)timeout_ms * 1000;
    while (!interrupted || s->closing) {
        if (spm_client_alive(s) != 0)
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
                    int rc = spm_client_hello(s);
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

/*  Says HELLO as a client. Returns 0 or SPM_EUNREACH. */
static int send_hello(spm_session_t *s)
{
    Spm__Hello h = SPM__HELLO__INIT;
    h.role = SPM__HELLO__ROLE__CLIENT;
    h.pid = (uint32_t)getpid();
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_HELLO;
    env.hello = &h;
    return spm_client_send(s, &env, NULL, 0);
}

/*  Waits up to TIMEOUT_MS for the center's WELCOME and takes what it
    says. Returns 0, or SPM_EUNREACH when none came, or another SPM_E*
    code (a refused handshake, Ctrl-C). */
static int await_welcome(spm_session_t *s, long timeout_ms)
{
    spm_msg_t m;
    int rc = expect(s, SPM__ENVELOPE__BODY_WELCOME, timeout_ms, &m);
    if (rc != 1)
        return rc;
    Spm__Welcome *w = m.env->welcome;
    s->stage_to_nodes = w->stage_to_nodes;
    int same = s->store_dir && w->store_dir && strcmp(s->store_dir, w->store_dir) == 0 &&
               w->store_id.len == sizeof s->store_id &&
               memcmp(s->store_id, w->store_id.data, sizeof s->store_id) == 0;
    if (!same) { /* another store (or none): a view of the old one is stale */
        spm_client_store_unref(s->store);
        s->store = NULL;
        s->store_tried = 0;
        free(s->store_dir);
        s->store_dir = NULL;
        if (w->store_dir && *w->store_dir && w->store_id.len == sizeof s->store_id &&
            !s->o.no_store_reads && (s->store_dir = strdup(w->store_dir)))
            memcpy(s->store_id, w->store_id.data, sizeof s->store_id);
    }
    spm_msg_close(&m);
    return 0;
}

/*  Says HELLO as a client and waits for the WELCOME: when the session
    opens, and again to a center that restarted and forgot it. */
int spm_client_hello(spm_session_t *s)
{
    int rc = send_hello(s);
    return rc ? rc : await_welcome(s, s->o.timeout_ms);
}

/*  The session's first HELLO to a center named: with --wait-center, as
    long as that says, asking again with backoff and saying once that it
    waits, as an agent does (base/backoff.h); else for --timeout, as
    every later request. A center that is not up yet is no failure of its
    own: ZeroMQ connects when it comes, and the HELLO queued meanwhile
    reaches it then; the asks again are for one that died in between. */
static int join(spm_session_t *s)
{
    if (!s->o.center || s->o.wait_center_s < 0)
        return spm_client_hello(s);
    spm_backoff_t b;
    spm_backoff_start(&b, s->o.wait_center_s);
    int rc = send_hello(s);
    while (rc == 0 || rc == SPM_EUNREACH) {
        if ((rc = await_welcome(s, spm_backoff_poll_ms(&b))) != SPM_EUNREACH)
            break;
        s->silent = 0; /* not yet: waited for */
        if (spm_backoff_over(&b)) {
            s->silent = 1;
            return spm_backoff_fail(&b, s->endpoint);
        }
        spm_backoff_say(&b, s->endpoint);
        if (spm_backoff_due(&b) && (rc = send_hello(s)) != 0)
            break;
    }
    return rc;
}

/*  Sends ENV and waits for the answer WANT into *M, asking once more when
    the center restarted in between (it forgot the first). A request that
    may be asked twice (AGAIN: status, cancel, discard) is asked again
    after every second without an answer, until the timeout: a center that
    died with it unanswered and came back answers the next one. Returns 1
    with *M set, or an SPM_E* code. */
uint64_t spm_client_patience_us(const spm_session_t *s)
{
    uint64_t timeout = (uint64_t)s->o.timeout_ms * 1000;
    if (!s->o.center || s->o.wait_center_s < 0)
        return timeout;
    uint64_t wait = (uint64_t)s->o.wait_center_s * 1000000;
    return !wait ? 0 : wait > timeout ? wait : timeout;
}

int spm_client_ask(spm_session_t *s, Spm__Envelope *env, int want, int again, spm_msg_t *m)
{
    uint64_t patience = again ? spm_client_patience_us(s) : (uint64_t)s->o.timeout_ms * 1000;
    uint64_t deadline = patience ? spm_now_us() + patience : UINT64_MAX;
    int rc = SPM_ESTRANGER;
    for (int strangers = 0; strangers < 2;) {
        uint64_t now = spm_now_us(), left = now < deadline ? deadline - now : 0;
        rc = spm_client_send(s, env, NULL, 0);
        if (rc == 0) /* a request asked again: a second at a time */
            rc = expect(s, want, again && left > 1000000 ? 1000 : (long)(left / 1000), m);
        if (rc == SPM_ESTRANGER)
            strangers++;
        else if (!(again && rc == SPM_EUNREACH && spm_now_us() < deadline))
            break;
        s->silent = 0; /* asked again */
    }
    if (again && rc == SPM_EUNREACH && patience == (uint64_t)s->o.timeout_ms * 1000)
        spm_error(rc, "%s: the center did not answer within %ld ms", s->endpoint, s->o.timeout_ms);
    else if (again && rc == SPM_EUNREACH)
        spm_error(rc, "%s: the center did not answer within %ld s (--wait-center)", s->endpoint,
                  s->o.wait_center_s);
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
    /* A detached job (spm submit) on an embedded VM would go with it when
       the command returns: it goes to the center spm status and spm wait
       ask, $SPM_CENTER, else the default one. */
    if (o->detach && !o->center) {
        const char *env = getenv("SPM_CENTER");
        s->o.center = env && *env ? env : "tcp://localhost:7700";
    }
    if (s->o.center) {
        s->endpoint = strdup(s->o.center);
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
    if (rc == 0 && !s->o.center) /* the center just started: its socket comes in a moment */
        spm_wire_await_ipc(s->endpoint, 2000);
    if (rc == 0)
        rc = spm_security_connect(s->security, s->dealer, s->endpoint, NULL);
    if (rc == 0)
        rc = join(s);
    if (rc == 0)
        rc = (s->bc = spm_blockclient_new(s->ctx, s->security)) ? 0 : SPM_ENOMEM;
    if (rc != 0) {
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", spm_error_detail());
        spm_session_destroy(&s);
        return spm_error(rc, "%s", detail);
    }
    *out = s;
    return 0;
}

int spm_session_status(spm_session_t *s, char **json, char **text)
{
    Spm__StatusRequest q = SPM__STATUS_REQUEST__INIT;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_STATUS;
    env.status = &q;
    spm_msg_t m;
    int rc = spm_client_ask(s, &env, SPM__ENVELOPE__BODY_STATUS_REPLY, 1, &m);
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
    int rc = spm_client_ask(s, env, SPM__ENVELOPE__BODY_ACK, 1, &m);
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
    if (!s || !spm_client_embedded(s) || !s->dealer || spm_embedded_released(s->vm))
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

void spm_session_destroy(spm_session_t **self_p)
{
    spm_session_t *s = *self_p;
    if (!s)
        return;
    if (!spm_client_embedded(s) && s->dealer && !s->silent && interrupted && s->njobs) {
        /* Ctrl-C: nobody will fetch what this session's jobs make. */
        s->closing = 1;
        s->o.timeout_ms = s->o.timeout_ms < 3000 ? s->o.timeout_ms : 3000;
        for (size_t i = 0; i < s->njobs; i++)
            spm_session_cancel(s, s->jobs[i]); /* one that ended says so: fine */
    }
    if (!spm_client_embedded(s) && s->dealer && spm_session_discard(s) != 0)
        spm_log_warn("%s", spm_error_detail());
    spm_session_release(s);
    /* This side's sockets close while the embedded VM's processes stop,
       not after (about 3 ms of an spm mine on a two-line file): the
       SHUTDOWN asked for above still goes out first (linger). */
    if (s->vm && s->dealer && spm_embedded_released(s->vm)) {
        int linger = 1000;
        zmq_setsockopt(s->dealer, ZMQ_LINGER, &linger, sizeof linger);
    }
    spm_client_abandon(s);
    spm_blockclient_destroy(&s->bc);
    if (s->monitor)
        zmq_close(s->monitor);
    if (s->dealer)
        zmq_close(s->dealer);
    spm_security_destroy(&s->security);
    if (s->ctx)
        zmq_ctx_term(s->ctx);
    /* its processes, then its directory */
    spm_embedded_destroy(&s->vm);
    spm_client_snap_unref(s->snap); /* blocks kept in place hold them still */
    s->snap = NULL;
    spm_client_store_unref(s->store);
    free(s->store_dir);
    free(s->endpoint);
    free(s->mine);
    free(s->jobs);
    free(s);
    *self_p = NULL;
}
