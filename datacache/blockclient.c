/*  =========================================================================
    blockclient - fetches blocks from nodes' data agents and stores blocks
    on them, peer to peer
    =========================================================================
*/
#include "datacache/blockclient.h"
#include "base/checksum.h"
#include "base/grow.h"
#include "base/hmap.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE_TIMEOUT_US 2000000ull /* a data agent answers a FETCH within ms */
#define BYTES_PER_S (4ull << 20)   /* ... plus the transfer at a slow 4 MiB/s */
#define SUSPECT_US 10000000ull     /* a node that left a request unanswered is asked last */
#define QUEUED_MAX_US 60000000ull  /* however busy its node, a request waits no longer */
#define FULL_US 1000000ull         /* a node that refused a block as full is asked to keep none */
#define ROOM_SPARE 4u              /* a block goes unasked where 4 more would fit */
#define OFFER_MIN 16384u           /* smaller blocks are sent without an offer */
#define FORWARD_MAX 8              /* nodes a chained store may be passed on to */
#define WHY_LEN 600

enum { REQ_FETCH = 1, REQ_STORE = 2 };

struct spm_blockbuf {
    void *data;
    size_t len;
    atomic_int refs;
};

spm_blockbuf_t *spm_blockbuf_new(void *data, size_t len)
{
    spm_blockbuf_t *b = malloc(sizeof *b);
    if (!b) {
        free(data);
        return NULL;
    }
    b->data = data;
    b->len = len;
    atomic_init(&b->refs, 1);
    return b;
}

void *spm_blockbuf_data(const spm_blockbuf_t *b)
{
    return b->data;
}

size_t spm_blockbuf_len(const spm_blockbuf_t *b)
{
    return b->len;
}

spm_blockbuf_t *spm_blockbuf_ref(spm_blockbuf_t *b)
{
    atomic_fetch_add(&b->refs, 1);
    return b;
}

void spm_blockbuf_unref(spm_blockbuf_t *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
        free(b->data);
        free(b);
    }
}

/*  zmq_free_fn: ZeroMQ is done with a frame of blockbuf HINT. */
static void release_buf(void *data, void *hint)
{
    (void)data;
    spm_blockbuf_unref(hint);
}

spm_frame_t spm_blockbuf_frame(spm_blockbuf_t *b)
{
    return (spm_frame_t){b->data, b->len, release_buf, spm_blockbuf_ref(b)};
}

typedef struct {
    char *endpoint;         /* NULL: unknown */
    char *key;              /* CurveZMQ server key, "" for none */
    void *sock;             /* DEALER, connected on first use */
    uint32_t open;          /* requests waiting on it */
    int down;               /* being forgotten (spm_blockclient_node_down) */
    uint64_t suspect_until; /* asked after the others until then (it timed out) */
    uint64_t full_until;    /* not asked to keep a block until then (it refused one as full) */
    int answered;           /* it answered a store: LIMITED and ROOM are its word */
    int limited;            /* its cache has a budget */
    uint64_t room;          /* bytes of it free at its last answer, less what was sent since */
    uint64_t heard_us;      /* when it last answered a request */
} peer_t;

/*  Another caller's wait for a fetch already under way. */
typedef struct {
    spm_fetched_fn fn;
    void *arg;
} waiter_t;

typedef struct {
    uint64_t id;
    int kind; /* REQ_* */
    spm_blockref_t ref;
    uint32_t *holders; /* fetch: nodes to try, in order */
    size_t nholders, next;
    uint32_t node;    /* asked now */
    uint64_t sent_us; /* when it was sent to NODE */
    int status;       /* the last failure */
    spm_fetched_fn fetched;
    spm_stored_fn stored;
    void *arg;
    spm_blockbuf_t *buf;           /* store: the block, a reference of its own */
    uint32_t want;                 /* store: nodes to keep it in all */
    uint32_t forward[FORWARD_MAX]; /* store: nodes it may be passed on to */
    size_t nforward;
    int offering;      /* store: offered, the block not sent yet */
    waiter_t *waiters; /* fetch: others who asked for the same block meanwhile */
    size_t nwaiters, waiters_cap;
    char why[WHY_LEN]; /* what each holder did */
} req_t;

struct spm_blockclient {
    void *ctx;                /* not owned */
    spm_security_t *security; /* not owned */
    peer_t *peers;            /* by node index */
    size_t npeers;
    spm_hmap_t *reqs;     /* id -> req_t */
    spm_hmap_t *fetching; /* fetch_key of a block -> the fetch under way for it */
    uint64_t next_id;
    spm_corrupt_fn corrupt; /* told of every corrupt copy, or NULL */
    void *corrupt_arg;
    spm_blockclient_stats_t stats;
};

spm_blockclient_t *spm_blockclient_new(void *ctx, spm_security_t *security)
{
    spm_blockclient_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->ctx = ctx;
    self->security = security;
    if (!(self->reqs = spm_hmap_new()) || !(self->fetching = spm_hmap_new())) {
        spm_hmap_destroy(&self->reqs);
        free(self);
        return NULL;
    }
    return self;
}

void spm_blockclient_on_corrupt(spm_blockclient_t *self, spm_corrupt_fn fn, void *arg)
{
    self->corrupt = fn;
    self->corrupt_arg = arg;
}

static void req_free(req_t *r)
{
    spm_blockbuf_unref(r->buf);
    free(r->holders);
    free(r->waiters);
    free(r);
}

static void peer_close(peer_t *p)
{
    if (p->sock)
        zmq_close(p->sock);
    p->sock = NULL;
}

void spm_blockclient_destroy(spm_blockclient_t **self_p)
{
    spm_blockclient_t *self = *self_p;
    if (!self)
        return;
    size_t pos = 0;
    uint64_t key;
    void *value;
    while (spm_hmap_next(self->reqs, &pos, &key, &value))
        req_free(value);
    spm_hmap_destroy(&self->reqs);
    spm_hmap_destroy(&self->fetching);
    for (size_t i = 0; i < self->npeers; i++) {
        peer_close(&self->peers[i]);
        free(self->peers[i].endpoint);
        free(self->peers[i].key);
    }
    free(self->peers);
    free(self);
    *self_p = NULL;
}

static peer_t *peer_get(const spm_blockclient_t *self, uint32_t node)
{
    const peer_t *p = node < self->npeers ? &self->peers[node] : NULL;
    return p && p->endpoint && !p->down ? (peer_t *)p : NULL;
}

int spm_blockclient_node(spm_blockclient_t *self, uint32_t node, const char *endpoint,
                         const char *key)
{
    if (spm_grow_zeroed(&self->peers, &self->npeers, (size_t)node + 1, sizeof *self->peers) != 0)
        return SPM_ENOMEM;
    peer_t *p = &self->peers[node];
    key = key ? key : "";
    if (p->endpoint && strcmp(p->endpoint, endpoint) == 0 && strcmp(p->key, key) == 0)
        return 0;
    char *ep = strdup(endpoint), *k = strdup(key);
    if (!ep || !k) {
        free(ep);
        free(k);
        return SPM_ENOMEM;
    }
    peer_close(p);
    free(p->endpoint);
    free(p->key);
    p->endpoint = ep;
    p->key = k;
    return 0;
}

int spm_blockclient_knows(const spm_blockclient_t *self, uint32_t node)
{
    return peer_get(self, node) != NULL;
}

/*  The socket to NODE, connected on first use; NULL when it cannot be. */
static void *peer_socket(spm_blockclient_t *self, peer_t *p)
{
    if (p->sock)
        return p->sock;
    void *s = spm_wire_socket(self->ctx, ZMQ_DEALER);
    int never = 0; /* a full queue to a stuck peer fails the send, never blocks */
    if (!s || zmq_setsockopt(s, ZMQ_SNDTIMEO, &never, sizeof never) != 0 ||
        spm_security_connect(self->security, s, p->endpoint, *p->key ? p->key : NULL) != 0) {
        if (s)
            zmq_close(s);
        return NULL;
    }
    return p->sock = s;
}

static void add_why(req_t *r, uint32_t node, const char *ep, const char *what)
{
    size_t n = strlen(r->why);
    if (n + 4 < sizeof r->why)
        snprintf(r->why + n, sizeof r->why - n, "%snode %u (%s): %s", n ? "; " : "", node,
                 ep ? ep : "?", what);
}

static uint64_t timeout_us(const req_t *r)
{
    return BASE_TIMEOUT_US + r->ref.bytes * 1000000ull / BYTES_PER_S;
}

/*  The key of block (SDB, VERSION) among the fetches under way. Two
    blocks may share one: the later fetch then goes alone. */
static uint64_t fetch_key(const spm_blockref_t *ref)
{
    uint64_t key = ref->sdb ^ (ref->version * 0x9e3779b97f4a7c15ull);
    return key ? key : 1; /* 0 is no key to the map */
}

static int same_block(const spm_blockref_t *a, const spm_blockref_t *b)
{
    return a->sdb == b->sdb && a->version == b->version && a->checksum == b->checksum;
}

/*  Ends fetch R for its waiters: each gets its own reference to BLOCK
    (ZeroMQ shares the bytes), as a callback may move the one it gets. */
static void tell_waiters(req_t *r, int status, zmq_msg_t *block)
{
    for (size_t i = 0; i < r->nwaiters; i++) {
        zmq_msg_t copy;
        zmq_msg_init(&copy);
        int ok = status == 0 && zmq_msg_copy(&copy, block) == 0;
        r->waiters[i].fn(r->waiters[i].arg,
                         ok       ? 0
                         : status ? status
                                  : SPM_ENOMEM,
                         ok ? &copy : NULL, r->node, r->why);
        zmq_msg_close(&copy);
    }
}

/*  Ends R: runs its callbacks and frees it. R must be out of the table. */
static void finish(spm_blockclient_t *self, req_t *r, int status, zmq_msg_t *block)
{
    if (r->kind == REQ_FETCH) {
        uint64_t key = fetch_key(&r->ref);
        if (spm_hmap_get(self->fetching, key) == r)
            spm_hmap_remove(self->fetching, key); /* asked again from here, it is fetched again */
        tell_waiters(r, status, block);
        r->fetched(r->arg, status, status == 0 ? block : NULL, r->node, r->why);
    } else {
        r->stored(r->arg, status, &r->node, status == 0, r->why);
    }
    req_free(r);
}

/*  Sends fetch R to its next holder; ends it with its last failure when
    none is left. R is out of the table on entry and back in it, or freed,
    on return. */
static void fetch_next(spm_blockclient_t *self, req_t *r)
{
    while (r->next < r->nholders) {
        uint32_t node = r->holders[r->next++];
        peer_t *p = peer_get(self, node);
        if (!p)
            continue;
        void *sock = peer_socket(self, p);
        Spm__Fetch f = SPM__FETCH__INIT;
        f.req = r->id;
        f.sdb = r->ref.sdb;
        f.version = r->ref.version;
        Spm__Envelope env = SPM__ENVELOPE__INIT;
        env.body_case = SPM__ENVELOPE__BODY_FETCH;
        env.fetch = &f;
        if (!sock || spm_wire_send(sock, NULL, &env, NULL, 0, NULL) != 0) {
            add_why(r, node, p->endpoint, "cannot send to it");
            r->status = SPM_EUNREACH;
            continue;
        }
        r->node = node;
        r->sent_us = spm_now_us();
        if (spm_hmap_put(self->reqs, r->id, r) == 0) {
            p->open++;
            return;
        }
        r->status = SPM_ENOMEM;
        break;
    }
    finish(self, r, r->status ? r->status : SPM_ENOTFOUND, NULL);
}

/*  Whether P refused a block for want of room less than FULL_US before
    NOW. A STORE carries its block, so asking a full node again costs the
    block's bytes on both links for nothing: with small caches most of the
    bytes node to node were blocks sent to full nodes and sent back
    (bench/paper/RESULTS.md, the communication section). A node's room
    comes back as its blocks are committed and dropped, so the pause is
    short. */
static int is_full(const peer_t *p, uint64_t now)
{
    return p->full_until > now;
}

/*  Moves the nodes of V (N of them) that timed out lately behind the
    others, keeping each group's order: a node that does not answer (its
    host is down, its address wrong) costs one timeout, not one per block. */
static void healthy_first(const spm_blockclient_t *self, uint32_t *v, size_t n)
{
    uint64_t now = spm_now_us();
    for (size_t i = 0, k = 0; i < n; i++) {
        const peer_t *p = peer_get(self, v[i]);
        if (p && p->suspect_until > now)
            continue;
        uint32_t x = v[i];
        memmove(v + k + 1, v + k, (i - k) * sizeof *v);
        v[k++] = x;
    }
}

int spm_blockclient_fetch(spm_blockclient_t *self, const spm_blockref_t *ref,
                          const uint32_t *holders, size_t n, spm_fetched_fn fn, void *arg)
{
    size_t known = 0;
    for (size_t i = 0; i < n; i++)
        known += peer_get(self, holders[i]) != NULL;
    if (!known)
        return SPM_ENOTFOUND;
    uint64_t key = fetch_key(ref);
    req_t *under_way = spm_hmap_get(self->fetching, key);
    if (under_way && same_block(&under_way->ref, ref)) {
        /* SIs in flight on one node often read the same block: it
           crosses the link once for all of them. */
        if (spm_grow(&under_way->waiters, under_way->nwaiters, &under_way->waiters_cap,
                     sizeof *under_way->waiters, 4) != 0)
            return SPM_ENOMEM;
        under_way->waiters[under_way->nwaiters++] = (waiter_t){fn, arg};
        self->stats.shared++;
        return 0;
    }
    req_t *r = calloc(1, sizeof *r);
    if (!r || !(r->holders = malloc(n * sizeof *r->holders))) {
        free(r);
        return SPM_ENOMEM;
    }
    memcpy(r->holders, holders, n * sizeof *holders);
    healthy_first(self, r->holders, n);
    r->nholders = n;
    r->id = ++self->next_id;
    r->kind = REQ_FETCH;
    r->ref = *ref;
    r->fetched = fn;
    r->arg = arg;
    if (!under_way && spm_hmap_put(self->fetching, key, r) != 0) {
        req_free(r);
        return SPM_ENOMEM;
    }
    fetch_next(self, r);
    return 0;
}

const char *spm_blockclient_endpoint(const spm_blockclient_t *self, uint32_t node, const char **key)
{
    const peer_t *p = peer_get(self, node);
    if (p && key)
        *key = p->key;
    return p ? p->endpoint : NULL;
}

/*  Whether store R goes to P as an offer first. A STORE carries its
    block, so a node that refuses it as full has made the block cross two
    links for nothing: with small caches most of the bytes node to node
    were such blocks (bench/paper/RESULTS.md, the communication section).
    An offer costs a round trip, so a block goes unasked to a node whose
    cache has no budget, or whose last answer left room for this block and
    ROOM_SPARE more (other nodes send to it too), and so does a block
    small enough that an offer would save little. */
static int offer_first(const peer_t *p, const req_t *r)
{
    return r->ref.bytes >= OFFER_MIN &&
           (!p->answered || (p->limited && p->room < r->ref.bytes * (1 + ROOM_SPARE)));
}

/*  Sends store R to P on SOCK: its offer (R->offering) or its block.
    Returns 0 or SPM_EUNREACH. */
static int send_store(spm_blockclient_t *self, req_t *r, void *sock)
{
    Spm__Store s = SPM__STORE__INIT;
    s.req = r->id;
    s.sdb = r->ref.sdb;
    s.version = r->ref.version;
    s.type = r->ref.type;
    s.checksum = r->ref.checksum;
    s.want = r->want;
    s.offer = r->offering;
    s.bytes = r->ref.bytes;
    Spm__Node fw[FORWARD_MAX], *pfw[FORWARD_MAX];
    uint64_t now = spm_now_us();
    for (size_t i = 0; r->want > 1 && i < r->nforward; i++) {
        const peer_t *q = peer_get(self, r->forward[i]);
        if (!q || r->forward[i] == r->node || is_full(q, now))
            continue;
        spm__node__init(&fw[s.n_forward]);
        fw[s.n_forward].index = r->forward[i];
        fw[s.n_forward].endpoint = q->endpoint;
        fw[s.n_forward].key = q->key;
        pfw[s.n_forward] = &fw[s.n_forward];
        s.n_forward++;
    }
    s.forward = pfw;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_STORE;
    env.store = &s;
    spm_frame_t f = {0};
    if (!r->offering)
        f = spm_blockbuf_frame(r->buf); /* ZeroMQ's reference, passed on with it */
    if (spm_wire_send(sock, NULL, &env, &f, r->offering ? 0 : 1, NULL) != 0)
        return SPM_EUNREACH;
    r->sent_us = now;
    if (r->offering)
        self->stats.offers++;
    return 0;
}

int spm_blockclient_store(spm_blockclient_t *self, uint32_t node, const spm_blockref_t *ref,
                          spm_blockbuf_t *buf, uint32_t want, const uint32_t *forward,
                          size_t nforward, spm_stored_fn fn, void *arg)
{
    peer_t *p = peer_get(self, node);
    req_t *r = p ? calloc(1, sizeof *r) : NULL;
    void *sock = r ? peer_socket(self, p) : NULL;
    if (!sock) {
        free(r);
        return spm_error(!p   ? SPM_ENOTFOUND
                         : !r ? SPM_ENOMEM
                              : SPM_EUNREACH,
                         "node %u: %s", node,
                         !p   ? "unknown"
                         : !r ? "out of memory"
                              : "cannot reach its data agent");
    }
    r->id = ++self->next_id;
    r->kind = REQ_STORE;
    r->ref = *ref;
    r->node = node;
    r->stored = fn;
    r->arg = arg;
    r->buf = spm_blockbuf_ref(buf);
    r->want = want;
    for (size_t i = 0; i < nforward && r->nforward < FORWARD_MAX; i++)
        if (forward[i] != node && peer_get(self, forward[i]))
            r->forward[r->nforward++] = forward[i];
    r->offering = offer_first(p, r);
    if (!r->offering)
        p->room = p->room > r->ref.bytes ? p->room - r->ref.bytes : 0;
    if (send_store(self, r, sock) != 0) {
        req_free(r);
        return spm_error(SPM_EUNREACH, "node %u (%s): cannot send to it", node, p->endpoint);
    }
    if (spm_hmap_put(self->reqs, r->id, r) != 0) {
        req_free(r);
        return SPM_ENOMEM;
    }
    p->open++;
    return 0;
}

/* ------------------------------------------------------------------ keeps */

#define KEEP_MAX 16 /* holders one keep may gather */

typedef struct {
    spm_blockclient_t *self;
    spm_blockref_t ref;
    spm_blockbuf_t *buf; /* a reference of the keep's own */
    uint32_t holders[KEEP_MAX];
    size_t n;
    uint32_t want;
    uint32_t *cand; /* candidates not asked yet start at next */
    size_t ncand, next;
    uint32_t asking; /* stores in flight */
    int chain;       /* one candidate at a time, passing it on */
    int full;        /* a candidate refused it for want of room */
    int failed;      /* the last other failure of a candidate */
    spm_kept_fn fn;
    void *arg;
    char why[WHY_LEN];
} keep_t;

static void keep_more(keep_t *k);

static void keep_stored(void *arg, int status, const uint32_t *holders, size_t n, const char *why)
{
    keep_t *k = arg;
    k->asking--;
    for (size_t i = 0; status == 0 && i < n && k->n < KEEP_MAX; i++) {
        int dup = 0;
        for (size_t j = 0; j < k->n; j++)
            dup |= k->holders[j] == holders[i];
        if (!dup)
            k->holders[k->n++] = holders[i];
    }
    if (status != 0) {
        size_t used = strlen(k->why);
        snprintf(k->why + used, sizeof k->why - used, "%s%s", used ? "; " : "", why);
        if (status == SPM_EFULL)
            k->full = 1;
        else
            k->failed = status;
    }
    keep_more(k);
}

/*  Asks candidates until WANT holders are in sight; ends the keep when
    nothing is in flight. */
static void keep_more(keep_t *k)
{
    while (k->n + k->asking < k->want && k->next < k->ncand && !(k->chain && k->asking)) {
        uint32_t node = k->cand[k->next++];
        int dup = 0;
        for (size_t i = 0; i < k->n; i++)
            dup |= k->holders[i] == node;
        if (dup)
            continue;
        const peer_t *p = peer_get(k->self, node);
        if (p && is_full(p, spm_now_us())) {
            k->full = 1;
            k->self->stats.skipped_full++;
            continue;
        }
        /* A chain asks this one for all that is missing, to be passed on
           among the candidates after it. */
        uint32_t want = k->chain ? k->want - (uint32_t)k->n : 1;
        if (spm_blockclient_store(k->self, node, &k->ref, k->buf, want, k->cand + k->next,
                                  k->ncand - k->next, keep_stored, k) == 0) {
            k->asking++;
        } else {
            size_t used = strlen(k->why);
            snprintf(k->why + used, sizeof k->why - used, "%s%s", used ? "; " : "",
                     spm_error_detail());
            k->failed = SPM_EUNREACH;
        }
    }
    if (k->asking)
        return;
    int status = k->n >= k->want ? 0 : k->full || !k->failed ? SPM_EFULL : k->failed;
    k->fn(k->arg, k->holders, k->n, status, k->why);
    spm_blockbuf_unref(k->buf);
    free(k->cand);
    free(k);
}

int spm_blockclient_keep(spm_blockclient_t *self, const spm_blockref_t *ref, spm_blockbuf_t *buf,
                         const uint32_t *have, size_t nhave, uint32_t want,
                         const uint32_t *candidates, size_t ncand, int chain, spm_kept_fn fn,
                         void *arg)
{
    keep_t *k = calloc(1, sizeof *k);
    if (!k || (ncand && !(k->cand = malloc(ncand * sizeof *k->cand)))) {
        free(k);
        return SPM_ENOMEM;
    }
    k->self = self;
    k->ref = *ref;
    k->buf = spm_blockbuf_ref(buf);
    for (size_t i = 0; i < nhave && k->n < KEEP_MAX; i++)
        k->holders[k->n++] = have[i];
    k->want = want < KEEP_MAX ? want : KEEP_MAX;
    k->chain = chain;
    if (ncand)
        memcpy(k->cand, candidates, ncand * sizeof *candidates);
    healthy_first(self, k->cand, ncand);
    k->ncand = ncand;
    k->fn = fn;
    k->arg = arg;
    keep_more(k);
    return 0;
}

int spm_blockclient_items(spm_blockclient_t *self, zmq_pollitem_t *items, int max)
{
    int k = 0;
    for (size_t i = 0; i < self->npeers && k < max; i++)
        if (self->peers[i].sock && self->peers[i].open)
            items[k++] = (zmq_pollitem_t){self->peers[i].sock, 0, ZMQ_POLLIN, 0};
    return k;
}

/*  Takes request ID, answered by NODE, out of the table. NULL when it is
    not open or another node was asked (a late or forged answer). */
static req_t *take(spm_blockclient_t *self, uint64_t id, uint32_t node)
{
    req_t *r = spm_hmap_get(self->reqs, id);
    if (!r || r->node != node)
        return NULL;
    spm_hmap_remove(self->reqs, id);
    peer_t *p = peer_get(self, node);
    if (p && p->open)
        p->open--;
    if (p)
        p->heard_us = spm_now_us();
    return r;
}

static void on_fetch_reply(spm_blockclient_t *self, uint32_t node, spm_msg_t *m)
{
    req_t *r = take(self, m->env->fetch_reply->req, node);
    if (!r)
        return;
    self->peers[node].suspect_until = 0; /* it answers */
    const char *ep = self->peers[node].endpoint;
    if (m->env->fetch_reply->status != 0 || m->nframes != 1) {
        add_why(r, node, ep, "has no copy");
        r->status = SPM_ENOTFOUND;
        self->stats.refused++;
        fetch_next(self, r);
        return;
    }
    zmq_msg_t *f = &m->frames[0];
    size_t len = zmq_msg_size(f);
    if ((r->ref.bytes && len != r->ref.bytes) ||
        spm_checksum(zmq_msg_data(f), len) != r->ref.checksum) {
        add_why(r, node, ep, "sent a corrupt copy (checksum mismatch)");
        r->status = SPM_EFORMAT;
        self->stats.corrupt++;
        if (self->corrupt)
            self->corrupt(self->corrupt_arg, node, &r->ref);
        fetch_next(self, r);
        return;
    }
    self->stats.fetched++;
    self->stats.fetched_bytes += len;
    finish(self, r, 0, f);
}

/*  Store R, offered to NODE, has its room there: sends the block. */
static void offer_taken(spm_blockclient_t *self, uint32_t node, req_t *r)
{
    peer_t *p = &self->peers[node];
    void *sock = peer_socket(self, p);
    r->offering = 0;
    if (!sock || send_store(self, r, sock) != 0) {
        add_why(r, node, p->endpoint, "cannot send to it");
        finish(self, r, SPM_EUNREACH, NULL);
        return;
    }
    if (spm_hmap_put(self->reqs, r->id, r) != 0) {
        finish(self, r, SPM_ENOMEM, NULL);
        return;
    }
    p->open++;
}

static void on_store_reply(spm_blockclient_t *self, uint32_t node, spm_msg_t *m)
{
    Spm__StoreReply *sr = m->env->store_reply;
    req_t *r = take(self, sr->req, node);
    if (!r)
        return;
    uint64_t now = spm_now_us();
    self->peers[node].suspect_until = 0; /* it answers */
    peer_t *p = &self->peers[node];
    p->full_until = sr->status == SPM_EFULL ? now + FULL_US : 0;
    p->answered = 1;
    p->limited = sr->limited;
    p->room = sr->room;
    if (sr->status != 0) {
        add_why(r, node, self->peers[node].endpoint,
                sr->error && *sr->error ? sr->error : spm_strerror(sr->status));
        self->stats.refused++;
        if (r->offering)
            self->stats.offers_refused++;
        finish(self, r, sr->status, NULL);
        return;
    }
    if (r->offering) {
        offer_taken(self, node, r);
        return;
    }
    self->stats.stored++;
    self->stats.stored_bytes += r->ref.bytes;
    if (sr->n_holders == 0) { /* it keeps it, and passed it on to nobody */
        finish(self, r, 0, NULL);
        return;
    }
    r->stored(r->arg, 0, sr->holders, sr->n_holders, r->why);
    req_free(r);
}

void spm_blockclient_process(spm_blockclient_t *self)
{
    for (size_t i = 0; i < self->npeers; i++) {
        for (int k = 0; self->peers[i].sock && k < 256; k++) {
            spm_msg_t m;
            int r = spm_wire_recv(self->peers[i].sock, 0, 1, &m, NULL);
            if (r == 2)
                continue;
            if (r != 1)
                break;
            if (m.env->body_case == SPM__ENVELOPE__BODY_FETCH_REPLY)
                on_fetch_reply(self, (uint32_t)i, &m);
            else if (m.env->body_case == SPM__ENVELOPE__BODY_STORE_REPLY)
                on_store_reply(self, (uint32_t)i, &m);
            spm_msg_close(&m);
        }
    }
}

/*  Moves request R (out of the table), whose node failed with STATUS and
    WHAT, on: a fetch to its next holder, a store to its end. */
static void give_up(spm_blockclient_t *self, req_t *r, int status, const char *what)
{
    peer_t *p = peer_get(self, r->node);
    add_why(r, r->node, p ? p->endpoint : NULL, what);
    r->status = status;
    if (r->kind == REQ_FETCH)
        fetch_next(self, r);
    else
        finish(self, r, status, NULL);
}

/*  Takes the requests that PICK selects out of the table (at most 256 per
    call, the rest on the next) and gives up on each. */
static size_t give_up_where(spm_blockclient_t *self,
                            int (*pick)(const spm_blockclient_t *, const req_t *, uint64_t),
                            uint64_t arg, int status, const char *what)
{
    req_t *batch[256];
    size_t n = 0, pos = 0;
    uint64_t key;
    void *value;
    while (n < 256 && spm_hmap_next(self->reqs, &pos, &key, &value))
        if (pick(self, value, arg))
            batch[n++] = value;
    for (size_t i = 0; i < n; i++) {
        req_t *r = take(self, batch[i]->id, batch[i]->node);
        if (r) {
            peer_t *p = peer_get(self, r->node);
            if (status == SPM_ETIMEOUT && p)
                p->suspect_until = spm_now_us() + SUSPECT_US;
            if (status == SPM_ETIMEOUT)
                self->stats.timeouts++;
            give_up(self, r, status, what);
        }
    }
    return n;
}

/*  Whether R, still unanswered at NOW, is given up on. A data agent
    answers its requests in the order they came: a fetch queued behind
    hundreds of others (an IEU that asks for a job's blocks at once) waits
    for them, so its time counts from its node's last answer when that is
    later than its sending. Counted from the sending alone, fetches queued
    at a busy node timed out while it was answering those before them, and
    were asked again of other nodes (test_blockclient's
    fetches_queued_behind_others_wait_for_them). */
static int late(const spm_blockclient_t *self, const req_t *r, uint64_t now)
{
    const peer_t *p = peer_get(self, r->node);
    uint64_t from = r->sent_us;
    if (p && p->heard_us > from)
        from = p->heard_us;
    return now > from + timeout_us(r) || now > r->sent_us + QUEUED_MAX_US;
}

static int on_node(const spm_blockclient_t *self, const req_t *r, uint64_t node)
{
    (void)self;
    return r->node == node;
}

void spm_blockclient_expire(spm_blockclient_t *self, uint64_t now_us)
{
    give_up_where(self, late, now_us, SPM_ETIMEOUT, "no answer in time");
}

void spm_blockclient_node_down(spm_blockclient_t *self, uint32_t node)
{
    peer_t *p = peer_get(self, node);
    if (!p)
        return;
    p->down = 1; /* unknown from here: fetches move on to other holders */
    while (give_up_where(self, on_node, node, SPM_EDEAD, "died") > 0)
        ;
    peer_close(p);
    free(p->endpoint);
    free(p->key);
    *p = (peer_t){0};
}

size_t spm_blockclient_pending(const spm_blockclient_t *self)
{
    return spm_hmap_size(self->reqs);
}

void spm_blockclient_stats(const spm_blockclient_t *self, spm_blockclient_stats_t *out)
{
    *out = self->stats;
}
