/*  =========================================================================
    host - the host of one plugin job's super-functions (see host.h)

    One thread, blocking reads: a frame of events comes, each event runs
    its callbacks to the end, and one frame of the actions they took goes
    back. What the callbacks do must depend only on the events, never on
    how the center framed them: the center compares a new host's actions
    with the journal's one by one after a restart, so every action,
    whether the job feeds included, is decided after one event.

    The SFs form the same tree as in the IDU (idu/idu.c): an SF finishes
    when it called done, has no SI outstanding and no live child; its
    parent's commit hears of it; the root's end is SFA_DONE.
    =========================================================================
*/
#include "vm/sfhost/host.h"

#include "base/grow.h"
#include "base/hmap.h"
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "runtime/sfproto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct hsf {
    const spm_sf_class_t *cls;
    struct hsf *parent; /* NULL for the root */
    uint64_t tag;       /* its tag in the parent */
    int priority;
    void *state;
    int done, finished;
    uint32_t outstanding; /* SIs issued and not committed */
    uint32_t children;    /* live children */
    int feeder;           /* in the feeders */
} hsf_t;

typedef struct {
    hsf_t *sf;    /* the SF that issued it */
    uint64_t tag; /* its own tag */
} hsi_t;

static struct {
    int fd;
    sfp_page_t *page;
    sfp_buf_t out; /* the actions of the frame being run */
    char scope[SPM_SCOPE_LEN];
    int loaded, failed;
    uint64_t job, seed;
    uint32_t ieus, nodes;
    uint64_t next_si;  /* the tags the center gives back in commits */
    uint32_t next_sdb; /* SDBs made */
    uint64_t issued;   /* SIs issued (a feed call that issued one is answered) */
    spm_hmap_t *sis;   /* tag -> hsi_t */
    hsf_t **feeders;   /* SFs with a feed hook, not done */
    size_t nfeeders, capfeeders, feed_next;
    int feeding;     /* the last SFA_FEEDING sent */
    uint32_t *named; /* opcodes whose names were sent */
    size_t nnamed, capnamed;
    spm_sf_t *label_sf; /* spm_sf_label's SF and label, for its next issue */
    char label[64];
} H;

/* ------------------------------------------------------------- helpers */

static hsf_t *of(const spm_sf_t *sf)
{
    return (hsf_t *)sf;
}

/*  Which callback of which SF runs: in the shared page, for the center. */
typedef struct {
    uint32_t callback;
    char sf[sizeof H.page->sf];
} where_t;

static where_t enter(uint32_t callback, const char *name)
{
    where_t w = {H.page->callback, ""};
    memcpy(w.sf, H.page->sf, sizeof w.sf);
    snprintf(H.page->sf, sizeof H.page->sf, "%s", name ? name : "?");
    H.page->callback = callback;
    return w;
}

static void leave(const where_t *w)
{
    H.page->callback = w->callback;
    memcpy(H.page->sf, w->sf, sizeof w->sf);
}

static void fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(int code, const char *fmt, ...)
{
    if (H.failed)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    H.failed = 1;
    sfp_put_u8(&H.out, SFA_FAIL);
    sfp_put_sv(&H.out, code < 0 ? code : SPM_EEXEC);
    sfp_put_bytes(&H.out, msg, strlen(msg));
}

static void feeder_remove(hsf_t *sf)
{
    for (size_t i = 0; sf->feeder && i < H.nfeeders; i++)
        if (H.feeders[i] == sf) {
            H.feeders[i] = H.feeders[--H.nfeeders];
            break;
        }
    sf->feeder = 0;
}

/*  Whether the job feeds is decided after every event (not per frame). */
static void note_feeding(void)
{
    int now = H.nfeeders > 0 && !H.failed;
    if (now == H.feeding)
        return;
    H.feeding = now;
    sfp_put_u8(&H.out, SFA_FEEDING);
    sfp_put_uv(&H.out, (uint64_t)now);
}

static void maybe_finish(hsf_t *sf)
{
    while (sf && !H.failed && !sf->finished && sf->done && !sf->outstanding && !sf->children) {
        sf->finished = 1;
        feeder_remove(sf);
        if (sf->cls->finish) {
            where_t w = enter(SFP_IN_FINISH, sf->cls->name);
            sf->cls->finish((spm_sf_t *)sf);
            leave(&w);
        }
        hsf_t *parent = sf->parent;
        if (!parent) {
            sfp_put_u8(&H.out, SFA_DONE);
            return;
        }
        parent->children--;
        if (parent->cls->commit && !H.failed) {
            spm_result_t r = {.kind = SPM_RESULT_CHILD, .tag = sf->tag};
            where_t w = enter(SFP_IN_COMMIT, parent->cls->name);
            parent->cls->commit((spm_sf_t *)parent, &r);
            leave(&w);
        }
        sf = parent;
    }
}

/*  Makes an SF of CLS under PARENT and runs its start. Returns 0 or the
    start's failure (the job fails). */
static int sf_start(hsf_t *parent, const spm_sf_class_t *cls, const void *args, size_t len,
                    int priority, uint64_t tag)
{
    hsf_t *sf = calloc(1, sizeof *sf);
    if (!sf) {
        fail(SPM_ENOMEM, "out of memory");
        return SPM_ENOMEM;
    }
    *sf = (hsf_t){.cls = cls, .parent = parent, .tag = tag, .priority = priority};
    if (parent)
        parent->children++;
    if (cls->feed) {
        if (spm_grow(&H.feeders, H.nfeeders, &H.capfeeders, sizeof *H.feeders, 4) != 0) {
            fail(SPM_ENOMEM, "out of memory");
            return SPM_ENOMEM;
        }
        H.feeders[H.nfeeders++] = sf;
        sf->feeder = 1;
    }
    spm_error(0, "%s", "");
    where_t w = enter(SFP_IN_START, cls->name);
    int rc = cls->start ? cls->start((spm_sf_t *)sf, args, len) : 0;
    leave(&w);
    if (rc != 0) {
        const char *d = spm_error_detail();
        fail(rc, "%s: %s", cls->name, *d ? d : spm_strerror(rc));
        return rc;
    }
    maybe_finish(sf);
    return 0;
}

/* ------------------------------------------------ the SF API, in a host */

static void *h_state(spm_sf_t *sf)
{
    return of(sf)->state;
}

static void h_set_state(spm_sf_t *sf, void *state)
{
    of(sf)->state = state;
}

static int h_priority(const spm_sf_t *sf)
{
    return of(sf)->priority;
}

static spm_sdb_t h_sdb_new(spm_sf_t *sf, const char *type)
{
    (void)sf;
    uint32_t id = spm_sdb_type_id_in(H.scope, type);
    if (!id || H.next_sdb + 1 >= SFP_HOST_SDB)
        return 0;
    spm_sdb_t sdb = H.job << 32 | (SFP_HOST_SDB | ++H.next_sdb);
    sfp_put_u8(&H.out, SFA_SDB);
    sfp_put_uv(&H.out, id);
    sfp_put_uv(&H.out, sdb);
    return sdb;
}

static int named(uint32_t id)
{
    for (size_t i = 0; i < H.nnamed; i++)
        if (H.named[i] == id)
            return 1;
    if (spm_grow(&H.named, H.nnamed, &H.capnamed, sizeof *H.named, 16) == 0)
        H.named[H.nnamed++] = id;
    return 0;
}

static int h_issue(spm_sf_t *sf, const char *opcode, const spm_operand_t *ops, size_t n,
                   const void *params, size_t params_len, uint64_t tag)
{
    if (H.failed)
        return SPM_ECANCELED;
    uint32_t id = spm_opcode_id_in(H.scope, opcode);
    if (!id)
        return spm_error(SPM_ENOTFOUND, "no opcode '%s'", opcode);
    if (n > SPM_MAX_OPERANDS)
        return spm_error(SPM_EINVAL, "%s: %zu operands (at most %d)", opcode, n, SPM_MAX_OPERANDS);
    hsi_t *si = malloc(sizeof *si);
    if (!si || spm_hmap_put(H.sis, H.next_si + 1, si) != 0) {
        free(si);
        return spm_error(SPM_ENOMEM, "out of memory");
    }
    *si = (hsi_t){of(sf), tag};
    of(sf)->outstanding++;
    H.issued++;
    sfp_put_u8(&H.out, SFA_ISSUE);
    sfp_put_uv(&H.out, id);
    const char *name = named(id) ? "" : opcode;
    sfp_put_bytes(&H.out, name, strlen(name));
    sfp_put_uv(&H.out, ++H.next_si);
    sfp_put_uv(&H.out, n);
    for (size_t i = 0; i < n; i++) {
        sfp_put_uv(&H.out, ops[i].sdb);
        sfp_put_uv(&H.out, (uint64_t)ops[i].mode);
        sfp_put_uv(&H.out, ops[i].flags);
    }
    sfp_put_bytes(&H.out, params, params_len);
    /* the label goes with the SI it names: the center's messages use it */
    const char *label = H.label_sf == sf ? H.label : "";
    sfp_put_bytes(&H.out, label, strlen(label));
    H.label_sf = NULL;
    return 0;
}

static void h_label(spm_sf_t *sf, const char *label)
{
    H.label_sf = sf;
    snprintf(H.label, sizeof H.label, "%s", label);
}

static int h_spawn(spm_sf_t *sf, const spm_sf_class_t *cls, const void *args, size_t len,
                   int priority, uint64_t tag)
{
    if (H.failed)
        return SPM_ECANCELED;
    return sf_start(of(sf), cls, args, len, priority, tag);
}

static void h_done(spm_sf_t *sf)
{
    of(sf)->done = 1;
    feeder_remove(of(sf));
}

static void h_fail(spm_sf_t *sf, int code, const char *msg)
{
    (void)sf;
    fail(code, "%s", msg);
}

static void h_expect(spm_sf_t *sf, uint64_t n)
{
    (void)sf;
    sfp_put_u8(&H.out, SFA_EXPECT);
    sfp_put_uv(&H.out, n);
}

static int h_set_result(spm_sf_t *sf, const void *data, size_t len)
{
    (void)sf;
    sfp_put_u8(&H.out, SFA_RESULT);
    sfp_put_bytes(&H.out, data, len);
    return H.out.full ? SPM_ENOMEM : 0;
}

static uint64_t h_seed(const spm_sf_t *sf)
{
    (void)sf;
    return H.seed;
}

static uint32_t h_ieus(const spm_sf_t *sf)
{
    (void)sf;
    return H.ieus;
}

static uint32_t h_nodes(const spm_sf_t *sf)
{
    (void)sf;
    return H.nodes;
}

static uint64_t h_bytes_to(spm_sf_t *sf, const spm_operand_t *ops, size_t n, const spm_ieu_t *who)
{
    (void)sf, (void)ops, (void)n, (void)who;
    return 0; /* a host does not know where blocks live */
}

static size_t h_holders(spm_sf_t *sf, spm_sdb_t sdb, uint32_t *nodes, size_t max)
{
    (void)sf, (void)sdb, (void)nodes, (void)max;
    return 0;
}

static const spm_sf_ops_t host_ops = {
    .state = h_state,
    .set_state = h_set_state,
    .priority = h_priority,
    .sdb_new = h_sdb_new,
    .issue = h_issue,
    .spawn = h_spawn,
    .done = h_done,
    .fail = h_fail,
    .expect = h_expect,
    .set_result = h_set_result,
    .seed = h_seed,
    .ieus = h_ieus,
    .nodes = h_nodes,
    .bytes_to = h_bytes_to,
    .holders = h_holders,
    .label = h_label,
};

/* -------------------------------------------------------------- events */

static void get_who(sfp_rd_t *r, spm_ieu_t *who)
{
    who->ieu = (uint32_t)sfp_get_uv(r);
    who->node = (uint32_t)sfp_get_uv(r);
    who->slots = (uint32_t)sfp_get_uv(r);
}

static void on_init(sfp_rd_t *r)
{
    const void *bytes;
    size_t len = sfp_get_bytes(r, &bytes);
    if (r->bad)
        return;
    where_t w = enter(SFP_IN_LOAD, "its plugin");
    int rc = spm_plugin_load(bytes, len, H.scope);
    leave(&w);
    if (rc != 0)
        fail(rc, "%s", spm_error_detail());
    else
        H.loaded = 1;
}

static void on_start(sfp_rd_t *r)
{
    const void *prog, *scope, *args;
    size_t plen = sfp_get_bytes(r, &prog), slen = sfp_get_bytes(r, &scope);
    H.seed = sfp_get_uv(r);
    int priority = (int)sfp_get_sv(r);
    H.job = sfp_get_uv(r);
    size_t alen = sfp_get_bytes(r, &args);
    if (r->bad || H.failed)
        return;
    char program[256];
    snprintf(program, sizeof program, "%.*s", (int)(plen < 255 ? plen : 255), (const char *)prog);
    if (!H.loaded || slen != strlen(H.scope) || memcmp(scope, H.scope, slen) != 0) {
        fail(SPM_EFORMAT, "its plugin's bytes are not those it was submitted with");
        return;
    }
    const spm_program_t *p = spm_program_find_in(H.scope, program);
    if (!p) {
        char names[200];
        size_t n = spm_program_names_in(H.scope, names, sizeof names);
        fail(SPM_ENOTFOUND, "the plugin has no program '%s' (%s%s)", program,
             n ? "it has: " : "it registers none", names);
        return;
    }
    sf_start(NULL, p->root, args, alen, priority, 0);
}

static void on_commit(sfp_rd_t *r)
{
    uint64_t tag = sfp_get_uv(r);
    spm_ieu_t who;
    get_who(r, &who);
    const void *reply;
    size_t rlen = sfp_get_bytes(r, &reply);
    hsi_t *si = r->bad ? NULL : spm_hmap_remove(H.sis, tag);
    if (!si) {
        fail(SPM_EPROTO, "its host was told of a commit of an SI it did not issue");
        return;
    }
    hsf_t *sf = si->sf;
    sf->outstanding--;
    if (sf->cls->commit && !H.failed) {
        spm_result_t res = {.kind = SPM_RESULT_SI,
                            .tag = si->tag,
                            .reply = rlen ? reply : NULL,
                            .reply_len = rlen,
                            .ieu = &who};
        where_t w = enter(SFP_IN_COMMIT, sf->cls->name);
        sf->cls->commit((spm_sf_t *)sf, &res);
        leave(&w);
    }
    free(si);
    maybe_finish(sf);
}

/*  An IEU asks for work: the feed hooks in turn until one issues. */
static void on_feed(sfp_rd_t *r)
{
    spm_ieu_t who;
    get_who(r, &who);
    if (r->bad)
        return;
    for (size_t k = 0; k < H.nfeeders && !H.failed; k++) {
        size_t i = (H.feed_next + k) % H.nfeeders;
        hsf_t *sf = H.feeders[i];
        uint64_t before = H.issued;
        where_t w = enter(SFP_IN_FEED, sf->cls->name);
        sf->cls->feed((spm_sf_t *)sf, &who);
        leave(&w);
        maybe_finish(sf); /* feed may have called done */
        if (H.issued != before) {
            H.feed_next = (i + 1) % (H.nfeeders ? H.nfeeders : 1);
            break;
        }
    }
    sfp_put_u8(&H.out, SFA_FED);
}

/*  Runs the events of one frame. */
static void run_frame(const uint8_t *p, size_t len)
{
    sfp_rd_t r = {p, len, 0, 0};
    while (r.pos < r.n && !r.bad) {
        uint8_t t = sfp_get_u8(&r);
        switch (t) {
        case SFP_INIT:
            on_init(&r);
            break;
        case SFP_START:
            on_start(&r);
            break;
        case SFP_COUNTS:
            H.ieus = (uint32_t)sfp_get_uv(&r);
            H.nodes = (uint32_t)sfp_get_uv(&r);
            break;
        case SFP_COMMIT:
            on_commit(&r);
            break;
        case SFP_FEED:
            on_feed(&r);
            break;
        default:
            r.bad = 1;
        }
        note_feeding();
    }
    if (r.bad)
        fail(SPM_EPROTO, "its host was sent a malformed event");
}

/* ------------------------------------------------------------------- I/O */

static int read_full(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k == 0)
            return 0;
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        got += (size_t)k;
    }
    return 1;
}

static int write_full(int fd, const void *buf, size_t n)
{
    for (size_t put = 0; put < n;) {
        ssize_t k = write(fd, (const char *)buf + put, n - put);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        put += (size_t)k;
    }
    return 0;
}

int spm_sfhost_run(int fd, int page_fd)
{
    H.fd = fd;
    H.page = mmap(NULL, sizeof *H.page, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
    H.sis = spm_hmap_new();
    if (H.page == MAP_FAILED || !H.sis) {
        fprintf(stderr, "spm sfhost: cannot map its page or allocate\n");
        return 1;
    }
    close(page_fd);
    spm_sf_ops = &host_ops;
    uint8_t *payload = NULL;
    size_t cap = 0;
    for (;;) {
        uint8_t hdr[4];
        int rc = read_full(fd, hdr, 4);
        if (rc <= 0)
            return rc < 0;
        size_t len =
            (size_t)hdr[0] | (size_t)hdr[1] << 8 | (size_t)hdr[2] << 16 | (size_t)hdr[3] << 24;
        if (len > cap) {
            free(payload);
            cap = len;
            if (!(payload = malloc(cap))) {
                fprintf(stderr, "spm sfhost: out of memory\n");
                return 1;
            }
        }
        if (read_full(fd, payload, len) <= 0)
            return 1;
        H.out.n = 0;
        size_t at = sfp_frame_begin(&H.out);
        run_frame(payload, len);
        sfp_frame_end(&H.out, at);
        if (H.out.full) { /* the actions are lost: the job cannot go on */
            H.out.full = 0;
            H.out.n = 0;
            at = sfp_frame_begin(&H.out);
            H.failed = 0;
            fail(SPM_ENOMEM, "its super-function host ran out of memory");
            sfp_frame_end(&H.out, at);
        }
        if (write_full(fd, H.out.p, H.out.n) != 0)
            return 1;
    }
}
