/*  =========================================================================
    stage - a session's puts in flight: inputs staged into the VM

    Up to PUT_WINDOW puts wait for answers at once. A put goes to the
    center's store with its bytes, or, when the center wants blocks on the
    nodes (WELCOME), to the nodes it names, from here (datacache/
    blockclient.h); the center then hears where it is kept.
    =========================================================================
*/
#include "vm/client/session_int.h"

#include "base/checksum.h"
#include "base/grow.h"
#include "datacache/directory.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"

#include <stdlib.h>
#include <string.h>

void spm_client_put_done(spm_session_t *s, put_t *p)
{
    for (size_t i = 0; i < s->nputs; i++)
        if (s->puts[i] == p) {
            s->puts[i] = s->puts[--s->nputs];
            break;
        }
    spm_blockbuf_unref(p->buf);
    free(p);
}

void spm_client_put_failed(spm_session_t *s, put_t *p, int code, const char *why)
{
    if (s->put_rc == 0)
        s->put_rc = spm_error(code, "storing a %s block: %s", p->type, why);
    spm_client_put_done(s, p);
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
    if (spm_client_send(s, &env, NULL, 0) != 0 && s->put_rc == 0)
        s->put_rc = SPM_EUNREACH;
    spm_client_put_done(s, p);
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
            spm_client_put_failed(s, p, SPM_EUNREACH, "cannot send it to the center");
        return;
    }
    if (n == 0) {
        spm_client_put_failed(s, p, status == SPM_EFULL ? SPM_EFULL : SPM_EUNREACH,
                              *why ? why : "no node to keep it");
        return;
    }
    put_placed(s, p); /* a node short: the center has it copied */
}

void spm_client_on_put_reply(spm_session_t *s, Spm__PutReply *r)
{
    put_t *p = NULL;
    for (size_t i = 0; i < s->nputs && !p; i++)
        if (s->puts[i]->req == r->req && s->puts[i]->state == PUT_ASKED)
            p = s->puts[i];
    if (!p)
        return; /* an answer to nothing of ours */
    *p->id = r->sdb;
    if (r->status == 0 && r->sdb && !spm_client_embedded(s) &&
        spm_grow(&s->mine, s->nmine, &s->capmine, sizeof *s->mine, 256) == 0)
        s->mine[s->nmine++] = r->sdb;
    if (r->status != 0) {
        spm_client_put_failed(s, p, r->status, r->error);
        return;
    }
    if (!p->buf) { /* it went to the center's store with the PUT */
        spm_client_put_done(s, p);
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
        spm_client_put_failed(s, p, SPM_ENOMEM, "out of memory");
}

void spm_client_on_store_reply(spm_session_t *s, Spm__StoreReply *r)
{
    for (size_t i = 0; i < s->nputs; i++) {
        put_t *p = s->puts[i];
        if (p->req != r->req || p->state != PUT_STORING)
            continue;
        if (r->status != 0)
            spm_client_put_failed(s, p, r->status, r->error);
        else
            put_placed(s, p);
        return;
    }
}

/*  A put of the LEN bytes at DATA, which it takes (frees when done) when
    OWN is set, else copies. */
static int put(spm_session_t *s, const char *type, const void *data, size_t len, int own,
               spm_sdb_t *id)
{
    int rc = 0;
    while (rc == 0 && s->put_rc == 0 && s->nputs == PUT_WINDOW)
        rc = spm_client_progress(s);
    if (rc != 0)
        spm_client_abandon(s);
    if (rc != 0 || s->put_rc != 0) {
        if (own)
            free((void *)data);
        return rc ? rc : s->put_rc;
    }
    put_t *p = calloc(1, sizeof *p);
    /* A plugin goes to the center's store: the center loads it from there. */
    int place = s->stage_to_nodes && strcmp(type, SPM_PLUGIN_TYPE) != 0;
    void *copy = !place ? NULL : own ? (void *)data : malloc(len ? len : 1);
    if (!p || (place && !copy)) {
        free(p);
        free(own ? (void *)data : copy);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    Spm__Put pu = SPM__PUT__INIT;
    pu.req = p->req = ++s->next_req;
    pu.type = (char *)type;
    p->id = id;
    p->type = type;
    p->s = s;
    p->state = PUT_ASKED;
    /* A frame without a free function is copied by ZeroMQ: DATA is the
       caller's. Taken, it goes as it is: staging a dense 4096² product
       copied its 268 MB of blocks here once more. */
    spm_frame_t f = {(void *)data, len, own && !place ? spm_wire_free : NULL, NULL};
    if (place) {
        /* The nodes keep it; the center only names them. */
        if (len && !own)
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
    if ((rc = spm_client_send(s, &env, &f, p->buf ? 0 : 1)) != 0) {
        spm_blockbuf_unref(p->buf);
        free(p);
        return rc;
    }
    if (!s->nputs && !s->ngets)
        s->last_heard = spm_now_us();
    s->puts[s->nputs++] = p;
    return 0;
}

int spm_session_put_async(spm_session_t *s, const char *type, const void *data, size_t len,
                          spm_sdb_t *id)
{
    return put(s, type, data, len, 0, id);
}

int spm_session_put_take(spm_session_t *s, const char *type, void *data, size_t len, spm_sdb_t *id)
{
    return put(s, type, data, len, 1, id);
}

int spm_session_put_flush(spm_session_t *s)
{
    int rc = 0;
    while (rc == 0 && s->nputs > 0)
        rc = spm_client_progress(s);
    if (rc != 0)
        spm_client_abandon(s);
    return rc ? rc : s->put_rc;
}

int spm_session_put(spm_session_t *s, const char *type, const void *data, size_t len, spm_sdb_t *id)
{
    int rc = spm_session_put_async(s, type, data, len, id);
    int done = spm_session_put_flush(s);
    return rc ? rc : done;
}
