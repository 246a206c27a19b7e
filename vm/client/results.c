/*  =========================================================================
    results - a session's gets in flight: blocks fetched from the VM

    Up to GET_WINDOW gets wait for answers at once. A block comes from its
    holders (datacache/blockclient.h), as bytes from the center, or, from
    an ipc:// center's store, read in place from a snapshot of it
    (datacache/storeview.h). A block may be kept past the callback it is
    given to without a copy (spm_session_keep).
    =========================================================================
*/
#include "vm/client/session_int.h"

#include "base/log.h"

#include <stdlib.h>
#include <string.h>

void spm_client_store_unref(storeref_t *r)
{
    if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        spm_store_view_destroy(&r->view);
        free(r);
    }
}

void spm_client_snap_unref(snapref_t *r)
{
    if (r && __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        spm_store_snap_end(&r->snap);
        spm_client_store_unref(r->store);
        free(r);
    }
}

void spm_client_get_done(spm_session_t *s, get_t *g)
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
    spm_client_get_done(s, g);
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
    spm_client_get_done(s, g);
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
int spm_client_send_get(spm_session_t *s, const get_t *g)
{
    Spm__Get q = SPM__GET__INIT;
    q.req = g->req;
    q.sdb = g->id;
    q.in_place = s->snap && !g->bytes;
    Spm__Envelope env = SPM__ENVELOPE__INIT;
    env.body_case = SPM__ENVELOPE__BODY_GET;
    env.get = &q;
    return spm_client_send(s, &env, NULL, 0);
}

void spm_client_on_get_reply(spm_session_t *s, spm_msg_t *m)
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
        if (spm_client_send_get(s, g) != 0)
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
            spm_store_view_destroy(&v);
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
            if ((rc = spm_client_send_get(s, g)) != 0) {
                free(g);
                break;
            }
            if (!s->nputs && !s->ngets)
                s->last_heard = spm_now_us();
            s->gets[s->ngets++] = g;
        }
        if (rc == 0 && s->ngets > 0)
            rc = spm_client_progress(s);
    }
    spm_client_abandon(s);          /* after a failure: the rest is not wanted */
    spm_client_snap_unref(s->snap); /* the blocks kept hold it still */
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
        spm_client_snap_unref(k->snap);
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
