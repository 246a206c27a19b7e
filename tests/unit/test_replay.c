/*  Unit tests of a job run again from its events (idu/events.c): a job is
    stopped after some of its commits, as a center killed there would be,
    and a fresh IDU runs it again from the recorded events; the job then
    goes on and ends with the result of a run that was never stopped, no
    SI whose commit was recorded runs again, and the SIs and SDBs have the
    same ids. The program uses every kind of event: SIs that depend on
    others, ACC merges, a child SF with a feed hook that gives out work by
    who asks, queries about the world (spm_sf_ieus, spm_sf_nodes), and
    replies that steer what it issues next. */
#include "idu/idu.h"
#include "runtime/registry.h"
#include "tests/check_main.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the world */

#define MAX_SIS 4096

typedef struct {
    uint64_t id;
    uint32_t attempt, ieu;
    uint64_t params; /* what the reply is made from */
    int done;
} held_t;

typedef struct {
    spm_idu_t *idu;
    held_t held[MAX_SIS]; /* SIs issued and not committed */
    size_t nheld;
    uint64_t ran[MAX_SIS]; /* ids of every SI that ran here */
    size_t nran;
    int ended;
} world_t;

/*  What a job recorded: its records in order. */
typedef struct {
    uint64_t job;
    void *data;
    size_t len;
} rec_t;

static rec_t recs[65536];
static size_t nrecs;

static void on_record(void *arg, uint64_t job, const void *rec, size_t len)
{
    (void)arg;
    ck_assert_uint_lt(nrecs, sizeof recs / sizeof *recs);
    recs[nrecs].job = job;
    recs[nrecs].data = malloc(len ? len : 1);
    memcpy(recs[nrecs].data, rec, len);
    recs[nrecs++].len = len;
}

static void forget_records(void)
{
    while (nrecs)
        free(recs[--nrecs].data);
}

static void on_emit(void *arg, uint32_t ieu, const spm_idu_si_t *si)
{
    world_t *wd = arg;
    ck_assert_uint_lt(wd->nheld, MAX_SIS);
    uint64_t p = 0;
    if (si->params_len == sizeof p)
        memcpy(&p, si->params, sizeof p);
    wd->held[wd->nheld++] = (held_t){si->id, si->attempt, ieu, p ^ si->id, 0};
}

static void on_done(void *arg, uint64_t job)
{
    (void)job;
    ((world_t *)arg)->ended = 1;
}

static void world_new(world_t *wd, int record)
{
    memset(wd, 0, sizeof *wd);
    wd->idu = spm_idu_new(on_emit, on_done, wd);
    ck_assert_ptr_nonnull(wd->idu);
    if (record)
        spm_idu_set_recorder(wd->idu, on_record, NULL);
    /* two nodes of two IEUs */
    for (uint32_t i = 0; i < 4; i++)
        spm_idu_ieu_join(wd->idu, i / 2, 1);
}

/*  Runs up to MAX commits (0: to the end), IEUs taking work in turn and
    committing the SI they hold longest ago first. Returns the commits. */
static size_t world_run(world_t *wd, size_t max)
{
    size_t commits = 0;
    for (uint32_t turn = 0; !wd->ended && (!max || commits < max); turn++) {
        spm_idu_ieu_pull(wd->idu, turn % 4, 1);
        spm_idu_pump(wd->idu);
        size_t k = 0;
        while (k < wd->nheld && wd->held[k].done)
            k++;
        if (k == wd->nheld) {
            ck_assert_msg(turn < 100000, "the job went nowhere");
            continue;
        }
        held_t *h = &wd->held[k];
        h->done = 1;
        wd->ran[wd->nran++] = h->id;
        uint64_t reply = h->params * 0x9e3779b97f4a7c15ull;
        spm_idu_commit_t c = {.reply = &reply, .reply_len = sizeof reply, .exec_us = 10};
        if (spm_idu_lookup(wd->idu, h->ieu, h->id, h->attempt))
            spm_idu_commit(wd->idu, h->ieu, h->id, &c);
        commits++;
    }
    return commits;
}

/* ------------------------------------------------------------ the program */

typedef struct {
    spm_sdb_t blocks[8], acc;
    uint64_t sum; /* of every reply, in commit order */
    uint32_t stage, pending;
} chain_t;

static int op_exec(spm_si_ctx_t *ctx)
{
    (void)ctx;
    return 0;
}

static int blob_validate(const void *d, size_t n)
{
    (void)d;
    (void)n;
    return 0;
}

static int blob_merge(const void *a, size_t alen, const void *b, size_t blen, void **out,
                      size_t *outlen)
{
    (void)a, (void)alen, (void)b, (void)blen;
    *out = NULL;
    *outlen = 0;
    return 0;
}

static int issue(spm_sf_t *sf, const spm_operand_t *ops, size_t n, uint64_t params)
{
    return spm_sf_issue(sf, "r.op", ops, n, &params, sizeof params, params);
}

/* The child: gives each asking IEU work of its own node, 12 SIs in all. */
typedef struct {
    uint32_t given;
    uint64_t sum;
} feeder_t;

static int child_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)args, (void)len;
    feeder_t *f = calloc(1, sizeof *f);
    spm_sf_set_state(sf, f);
    return f ? 0 : SPM_ENOMEM;
}

static int child_feed(spm_sf_t *sf, const spm_ieu_t *who)
{
    feeder_t *f = spm_sf_state(sf);
    if (f->given == 12)
        return 0;
    f->given++;
    /* depends on who asked: replayed only if WHO is the recorded one */
    issue(sf, NULL, 0, 1000 + who->node * 100 + f->given);
    if (f->given == 12)
        spm_sf_done(sf);
    return 1;
}

static void child_commit(spm_sf_t *sf, const spm_result_t *r)
{
    feeder_t *f = spm_sf_state(sf);
    uint64_t v;
    memcpy(&v, r->reply, sizeof v);
    f->sum = f->sum * 31 + v + r->ieu->node;
}

static void child_finish(spm_sf_t *sf)
{
    free(spm_sf_state(sf));
}

static const spm_sf_class_t child_class = {.name = "r.child",
                                           .start = child_start,
                                           .feed = child_feed,
                                           .commit = child_commit,
                                           .finish = child_finish};

/*  Stage s: 8 SIs writing the blocks (reading the previous stage's), the
    ones whose reply is odd also adding into ACC; 4 stages, then one SI
    reading ACC. */
static int chain_stage(spm_sf_t *sf, chain_t *c)
{
    for (uint32_t i = 0; i < 8; i++) {
        spm_operand_t ops[3] = {{c->blocks[i], c->stage ? SPM_RW : SPM_W, 0},
                                {c->blocks[(i + 1) % 8], SPM_R, 0},
                                {c->acc, SPM_ACC, 0}};
        size_t n = c->stage ? 3 : 1;
        if (issue(sf, ops, n, (uint64_t)c->stage * 100 + i + (c->sum & 0xff)) != 0)
            return SPM_ENOMEM;
    }
    c->pending = 8;
    return 0;
}

static int chain_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)args, (void)len;
    chain_t *c = calloc(1, sizeof *c);
    if (!c)
        return SPM_ENOMEM;
    spm_sf_set_state(sf, c);
    for (int i = 0; i < 8; i++)
        c->blocks[i] = spm_sdb_new(sf, "r.blob");
    c->acc = spm_sdb_new(sf, "r.blob");
    c->sum = spm_sf_ieus(sf) * 7 + spm_sf_nodes(sf); /* from the world */
    if (spm_sf_spawn(sf, &child_class, NULL, 0, 0, 99) != 0)
        return SPM_ENOMEM;
    return chain_stage(sf, c);
}

static void chain_commit(spm_sf_t *sf, const spm_result_t *r)
{
    chain_t *c = spm_sf_state(sf);
    if (r->kind == SPM_RESULT_CHILD) {
        c->sum = c->sum * 17 + 5;
        return;
    }
    uint64_t v;
    memcpy(&v, r->reply, sizeof v);
    c->sum = c->sum * 31 + v;
    if (r->tag >= 10000) { /* the last SI */
        spm_sf_set_result(sf, &c->sum, sizeof c->sum);
        spm_sf_done(sf);
        return;
    }
    if (--c->pending > 0)
        return;
    if (++c->stage < 4) {
        chain_stage(sf, c);
        return;
    }
    spm_operand_t op = {c->acc, SPM_R, 0};
    spm_sf_issue(sf, "r.op", &op, 1, &c->sum, sizeof c->sum, 10000 + spm_sf_ieus(sf));
}

static void chain_finish(spm_sf_t *sf)
{
    free(spm_sf_state(sf));
}

static const spm_sf_class_t chain_class = {
    .name = "r.chain", .start = chain_start, .commit = chain_commit, .finish = chain_finish};

SPM_CONSTRUCTOR(test_replay)
{
    spm_opcode_register(&(spm_opcode_t){.name = "r.op", .exec = op_exec});
    spm_sdb_type_register(
        &(spm_sdb_type_t){.name = "r.blob", .validate = blob_validate, .merge = blob_merge});
    spm_program_register(&(spm_program_t){.name = "r.chain", .root = &chain_class});
}

/* ------------------------------------------------------------------ tests */

static world_t worlds[2];

static void setup(void)
{
    nrecs = 0;
}

static void teardown(void)
{
    forget_records();
    for (int i = 0; i < 2; i++)
        spm_idu_destroy(&worlds[i].idu);
}

/*  The result of JOB in WD's IDU. */
static uint64_t result_of(world_t *wd, uint64_t job)
{
    spm_idu_job_info_t info;
    ck_assert_int_eq(spm_idu_job_info(wd->idu, job, &info), 0);
    ck_assert_msg(info.state == 1, "job ended with %d: %s", info.state, info.error);
    ck_assert_uint_eq(info.result_len, sizeof(uint64_t));
    uint64_t v;
    memcpy(&v, info.result, sizeof v);
    return v;
}

/*  The records of JOB, in order. */
static size_t records_of(uint64_t job, spm_idu_record_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < nrecs && n < max; i++)
        if (recs[i].job == job)
            out[n++] = (spm_idu_record_t){recs[i].data, recs[i].len};
    return n;
}

/*  Runs the program to its end without a stop: the reference. */
static uint64_t uninterrupted(void)
{
    world_t *wd = &worlds[0];
    world_new(wd, 0);
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(wd->idu, "r.chain", NULL, 0, 0, &job), 0);
    world_run(wd, 0);
    uint64_t r = result_of(wd, job);
    spm_idu_destroy(&wd->idu);
    return r;
}

/*  Stops the job after CUT commits and runs it again from its records in
    a fresh IDU, then to its end. */
static void stop_and_resume(size_t cut, uint64_t want)
{
    forget_records();
    world_t *a = &worlds[0], *b = &worlds[1];
    world_new(a, 1);
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(a->idu, "r.chain", NULL, 0, 0, &job), 0);
    size_t done = world_run(a, cut);
    /* the center dies here; a new one reads the records back */
    world_new(b, 1);
    static spm_idu_record_t mine[65536];
    size_t n = records_of(job, mine, 65536);
    size_t before = nrecs;
    ck_assert_int_eq(spm_idu_replay(b->idu, job, mine, n, NULL, NULL), 0);
    ck_assert_uint_eq(nrecs, before + 1); /* running again records only that it did */
    spm_idu_job_info_t info;
    ck_assert_int_eq(spm_idu_job_info(b->idu, job, &info), 0);
    ck_assert_uint_eq(info.committed, done);
    world_run(b, 0);
    ck_assert_uint_eq(result_of(b, job), want);
    /* no SI that committed before the stop ran again */
    for (size_t i = 0; i < b->nran; i++)
        for (size_t k = 0; k < a->nran; k++)
            if (a->ran[k] == b->ran[i]) {
                int committed = 0; /* ran in A: committed there, or still held at the stop */
                for (size_t h = 0; h < a->nheld; h++)
                    committed |= a->held[h].id == a->ran[k] && a->held[h].done;
                ck_assert_msg(!committed, "SI %llx ran again after the restart",
                              (unsigned long long)b->ran[i]);
            }
    spm_idu_destroy(&a->idu);
    spm_idu_destroy(&b->idu);
}

START_TEST(resumed_job_ends_as_if_never_stopped)
{
    uint64_t want = uninterrupted();
    for (size_t cut = 0; cut < 60; cut += 3)
        stop_and_resume(cut, want);
}
END_TEST

START_TEST(ended_job_ends_again)
{
    uint64_t want = uninterrupted();
    stop_and_resume(100000, want);
}
END_TEST

START_TEST(a_changed_program_cannot_be_resumed)
{
    world_t *a = &worlds[0], *b = &worlds[1];
    world_new(a, 1);
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(a->idu, "r.chain", NULL, 0, 0, &job), 0);
    world_run(a, 20);
    static spm_idu_record_t mine[65536];
    size_t n = records_of(job, mine, 65536);
    ck_assert_uint_gt(n, 4);
    /* the last commit again: its SI is not ready where it stands */
    size_t last = n;
    while (last > 0 && ((const uint8_t *)mine[last - 1].data)[0] != 3 /* a commit */)
        last--;
    ck_assert_uint_gt(last, 0);
    size_t flen = mine[last - 1].len;
    uint8_t *forged = malloc(flen);
    memcpy(forged, mine[last - 1].data, flen);
    mine[n] = (spm_idu_record_t){forged, flen};
    n++;
    world_new(b, 0);
    ck_assert_int_eq(spm_idu_replay(b->idu, job, mine, n, NULL, NULL), SPM_EFORMAT);
    spm_idu_job_info_t info;
    ck_assert_int_eq(spm_idu_job_info(b->idu, job, &info), 0);
    ck_assert_int_eq(info.state, 2);
    ck_assert_ptr_nonnull(strstr(info.error, "cannot be resumed"));
    free(forged);
    /* and a submit of a program this binary lacks */
    static uint8_t bogus[64];
    size_t len = mine[0].len < sizeof bogus ? mine[0].len : sizeof bogus;
    memcpy(bogus, mine[0].data, len);
    uint8_t *p = memmem(bogus, len, "r.chain", 7);
    ck_assert_ptr_nonnull(p);
    p[0] = 'x';
    spm_idu_record_t one = {bogus, len};
    spm_idu_destroy(&b->idu);
    world_new(b, 0);
    ck_assert_int_eq(spm_idu_replay(b->idu, job, &one, 1, NULL, NULL), SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "no program 'x.chain'"));
    ck_assert_int_eq(spm_idu_job_info(b->idu, job, &info), 0);
    ck_assert_int_eq(info.state, 2); /* its watcher learns why */
    /* and a submit record of another job id, or a damaged one */
    ck_assert_int_eq(spm_idu_replay(b->idu, job + 1, &mine[0], 1, NULL, NULL), SPM_EFORMAT);
    spm_idu_record_t cut = {mine[0].data, mine[0].len / 2};
    ck_assert_int_eq(spm_idu_replay(b->idu, job + 2, &cut, 1, NULL, NULL), SPM_EFORMAT);
}
END_TEST

START_TEST(puts_come_back_and_ids_go_on)
{
    world_t *a = &worlds[0], *b = &worlds[1];
    world_new(a, 1);
    spm_sdb_t p1 = spm_idu_sdb_put(a->idu, spm_name_id("r.blob"));
    spm_sdb_t p2 = spm_idu_sdb_put(a->idu, spm_name_id("r.blob"));
    size_t gone;
    ck_assert_int_eq(spm_idu_discard(a->idu, NULL, 0, &p1, 1, &gone), 0);
    ck_assert_uint_eq(gone, 1);
    world_new(b, 1);
    static spm_idu_record_t mine[16];
    size_t n = records_of(0, mine, 16);
    ck_assert_uint_eq(n, 3); /* two puts, one discard */
    ck_assert_int_eq(spm_idu_replay(b->idu, 0, mine, n, NULL, NULL), 0);
    uint32_t type;
    ck_assert_uint_eq(spm_idu_sdb_version(b->idu, p1, &type), 0);
    ck_assert_uint_eq(spm_idu_sdb_version(b->idu, p2, &type), 1);
    ck_assert_uint_eq(type, spm_name_id("r.blob"));
    ck_assert_uint_gt(spm_idu_sdb_put(b->idu, type), p2); /* ids go on */
}
END_TEST

static Suite *replay_suite(void)
{
    Suite *s = suite_create("replay");
    const spm_test_case_t c = {.setup = setup, .teardown = teardown};
    SPM_TEST_ADD(s, &c, resumed_job_ends_as_if_never_stopped);
    SPM_TEST_ADD(s, &c, ended_job_ends_again);
    SPM_TEST_ADD(s, &c, a_changed_program_cannot_be_resumed);
    SPM_TEST_ADD(s, &c, puts_come_back_and_ids_go_on);
    return s;
}

SPM_TEST_MAIN(replay_suite)
