/*  Unit tests of the IDU: the scoreboard's dependences, ACC merges,
    priorities, feed hooks, leases, IEU deaths and stale commits. The IDU is
    driven directly, as the center drives it, without sockets. */
#include "datacache/directory.h"
#include "idu/idu.h"
#include "runtime/registry.h"
#include "tests/check_main.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_EMITTED 256

typedef struct {
    uint32_t ieu;
    spm_idu_si_t si; /* copy; ops point into ops below */
    spm_idu_op_t ops[8];
} emitted_t;

static emitted_t emitted[MAX_EMITTED];
static size_t nemitted;
static uint64_t jobs_done[16];
static size_t njobs_done;

static void on_emit(void *arg, uint32_t ieu, const spm_idu_si_t *si)
{
    (void)arg;
    ck_assert_uint_lt(nemitted, MAX_EMITTED);
    emitted_t *e = &emitted[nemitted++];
    e->ieu = ieu;
    e->si = *si;
    ck_assert_uint_le(si->nops, 8);
    memcpy(e->ops, si->ops, si->nops * sizeof *si->ops);
    e->si.ops = e->ops;
}

static void on_done(void *arg, uint64_t job)
{
    (void)arg;
    jobs_done[njobs_done++] = job;
}

static int nop_exec(spm_si_ctx_t *ctx)
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
    (void)a;
    (void)alen;
    (void)b;
    (void)blen;
    *out = NULL;
    *outlen = 0;
    return 0;
}

/* The script the test SF runs at start: a list of (sdb, mode, flags). */
typedef struct {
    spm_sdb_t sdb;
    spm_mode_t mode;
    unsigned flags;
} step_t;

static step_t script[16];
static size_t nscript;
static int commits_seen;
static uint64_t tags_seen[64];

static int script_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)args;
    (void)len;
    for (size_t i = 0; i < nscript; i++) {
        spm_operand_t op = {script[i].sdb, script[i].mode, script[i].flags};
        int rc = spm_sf_issue(sf, "t.op", &op, 1, NULL, 0, i);
        if (rc != 0)
            return rc;
    }
    spm_sf_done(sf);
    return 0;
}

static void script_commit(spm_sf_t *sf, const spm_result_t *r)
{
    (void)sf;
    tags_seen[commits_seen++] = r->tag;
}

static const spm_sf_class_t script_class = {
    .name = "script", .start = script_start, .commit = script_commit};

/* An SF with a feed hook: issues one SI per request, three in all. */
static int fed;
static uint32_t fed_to[8];

static int feeder_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)sf;
    (void)args;
    (void)len;
    return 0;
}

static int feeder_feed(spm_sf_t *sf, const spm_ieu_t *who)
{
    if (fed == 3)
        return 0;
    fed_to[fed++] = who->ieu;
    ck_assert_int_eq(spm_sf_issue(sf, "t.op", NULL, 0, NULL, 0, (uint64_t)fed), 0);
    if (fed == 3)
        spm_sf_done(sf);
    return 1;
}

static const spm_sf_class_t feeder_class = {
    .name = "feeder", .start = feeder_start, .feed = feeder_feed};

/* An SF that makes an SDB of its own and writes it, reading PUT_READ. */
static spm_sdb_t made, put_read;

static int maker_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)args;
    (void)len;
    made = spm_sdb_new(sf, "t.blob");
    spm_operand_t ops[2] = {{put_read, SPM_R, 0}, {made, SPM_W, 0}};
    int rc = spm_sf_issue(sf, "t.op", ops, 2, NULL, 0, 0);
    spm_sf_done(sf);
    return rc;
}

static const spm_sf_class_t maker_class = {.name = "maker", .start = maker_start};

/* An SF whose commit callback takes 120 ms, twice. */
static int slow_start(spm_sf_t *sf, const void *args, size_t len)
{
    (void)args;
    (void)len;
    for (uint64_t i = 0; i < 2; i++)
        if (spm_sf_issue(sf, "t.op", NULL, 0, NULL, 0, i) != 0)
            return SPM_ENOMEM;
    spm_sf_done(sf);
    return 0;
}

static void slow_commit(spm_sf_t *sf, const spm_result_t *r)
{
    (void)sf;
    (void)r;
    usleep(120000);
}

static const spm_sf_class_t slow_class = {
    .name = "slowpoke", .start = slow_start, .commit = slow_commit};

SPM_CONSTRUCTOR(test_idu)
{
    spm_program_register(&(spm_program_t){.name = "slowpoke", .root = &slow_class});
    spm_opcode_register(&(spm_opcode_t){.name = "t.op", .exec = nop_exec});
    spm_sdb_type_register(
        &(spm_sdb_type_t){.name = "t.blob", .validate = blob_validate, .merge = blob_merge});
    spm_program_register(&(spm_program_t){.name = "script", .root = &script_class});
    spm_program_register(&(spm_program_t){.name = "feeder", .root = &feeder_class});
    spm_program_register(&(spm_program_t){.name = "maker", .root = &maker_class});
}

static spm_idu_t *idu;

static void setup(void)
{
    nemitted = njobs_done = nscript = 0;
    commits_seen = fed = 0;
    idu = spm_idu_new(on_emit, on_done, NULL);
    ck_assert_ptr_nonnull(idu);
}

static void teardown(void)
{
    spm_idu_destroy(&idu);
}

static void commit_ok(uint32_t ieu, const spm_idu_si_t *si)
{
    ck_assert_ptr_nonnull(spm_idu_lookup(idu, ieu, si->id, si->attempt));
    spm_idu_commit_t c = {0};
    spm_idu_commit(idu, ieu, si->id, &c);
}

/*  Submits PROGRAM as *JOB with one IEU joined and 10 credits, and runs
    the pool once. Returns the IEU. */
static uint32_t start_job(const char *program, uint64_t *job)
{
    ck_assert_int_eq(spm_idu_submit(idu, program, NULL, 0, 0, job), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, ieu, 10);
    spm_idu_pump(idu);
    return ieu;
}

START_TEST(raw_waits_for_the_version_it_reads)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_W, 0};
    script[nscript++] = (step_t){x, SPM_R, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, ieu, 10);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 1); /* the reader waits for the writer */
    ck_assert_int_eq(emitted[0].ops[0].mode, SPM_W);
    ck_assert_uint_eq(emitted[0].ops[0].version, 2);
    commit_ok(ieu, &emitted[0].si);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 2);
    ck_assert_int_eq(emitted[1].ops[0].mode, SPM_R);
    ck_assert_uint_eq(emitted[1].ops[0].version, 2);
    commit_ok(ieu, &emitted[1].si);
    ck_assert_uint_eq(njobs_done, 1);
    ck_assert_int_eq(commits_seen, 2);
}
END_TEST

START_TEST(war_and_waw_do_not_stall)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_R, 0};
    script[nscript++] = (step_t){x, SPM_W, 0};
    script[nscript++] = (step_t){x, SPM_W, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, ieu, 10);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 3); /* all at once: versions rename */
    ck_assert_uint_eq(emitted[0].ops[0].version, 1);
    ck_assert_uint_eq(emitted[1].ops[0].version, 2);
    ck_assert_uint_eq(emitted[2].ops[0].version, 3);
    /* commit out of order: the job still completes */
    commit_ok(ieu, &emitted[2].si);
    commit_ok(ieu, &emitted[0].si);
    commit_ok(ieu, &emitted[1].si);
    ck_assert_uint_eq(njobs_done, 1);
    uint32_t type;
    ck_assert_uint_eq(spm_idu_sdb_version(idu, x, &type), 3);
}
END_TEST

START_TEST(acc_runs_concurrently_and_merges_before_the_reader)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    for (int i = 0; i < 3; i++)
        script[nscript++] = (step_t){x, SPM_ACC, 0};
    script[nscript++] = (step_t){x, SPM_R, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 4);
    spm_idu_ieu_pull(idu, ieu, 10);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 3); /* three ACC SIs at once; merge and reader wait */
    spm_sdb_t partials[3];
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(emitted[i].ops[0].mode, SPM_ACC);
        partials[i] = emitted[i].ops[0].sdb;
        ck_assert_uint_ne(partials[i], x);
        commit_ok(ieu, &emitted[i].si);
        spm_idu_pump(idu);
    }
    ck_assert_uint_eq(nemitted, 4);
    const spm_idu_si_t *m = &emitted[3].si;
    ck_assert_uint_eq(m->opcode, spm_name_id("spm.merge"));
    ck_assert_uint_eq(m->nops, 5); /* base + 3 partials + the new version */
    ck_assert_uint_eq(m->ops[0].sdb, x);
    ck_assert_uint_eq(m->ops[0].version, 1);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(m->ops[1 + i].sdb, partials[i]);
    ck_assert_int_eq(m->ops[4].mode, SPM_W);
    ck_assert_uint_eq(m->ops[4].version, 2);
    commit_ok(ieu, m);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 5);
    ck_assert_int_eq(emitted[4].ops[0].mode, SPM_R);
    ck_assert_uint_eq(emitted[4].ops[0].version, 2); /* reads the merged version */
    commit_ok(ieu, &emitted[4].si);
    ck_assert_uint_eq(njobs_done, 1);
}
END_TEST

START_TEST(open_acc_group_is_merged_at_job_end)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_ACC, 0};
    script[nscript++] = (step_t){x, SPM_ACC, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, ieu, 10);
    spm_idu_pump(idu);
    commit_ok(ieu, &emitted[0].si);
    commit_ok(ieu, &emitted[1].si);
    ck_assert_uint_eq(njobs_done, 0); /* not before the merge */
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 3);
    ck_assert_uint_eq(emitted[2].si.opcode, spm_name_id("spm.merge"));
    commit_ok(ieu, &emitted[2].si);
    ck_assert_uint_eq(njobs_done, 1);
    ck_assert_uint_eq(spm_idu_sdb_version(idu, x, NULL), 2);
}
END_TEST

START_TEST(higher_priority_job_goes_first)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    for (int i = 0; i < 3; i++)
        script[nscript++] = (step_t){x, SPM_R, 0};
    uint64_t low, high;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &low), 0);
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 5, &high), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, ieu, 4);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 4);
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(emitted[i].si.job, high);
    ck_assert_uint_eq(emitted[3].si.job, low);
}
END_TEST

START_TEST(equal_priority_jobs_share_round_robin)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    for (int i = 0; i < 4; i++)
        script[nscript++] = (step_t){x, SPM_R, 0};
    uint64_t a, b;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &a), 0);
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &b), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, ieu, 4);
    spm_idu_pump(idu);
    int na = 0, nb = 0;
    for (size_t i = 0; i < nemitted; i++)
        emitted[i].si.job == a ? na++ : nb++;
    ck_assert_int_eq(na, 2);
    ck_assert_int_eq(nb, 2);
}
END_TEST

/*  The last SIs of a stage are spread by what each IEU still holds: none
    is handed more than its share of the work in hand (the ready SIs and
    those issued, over the IEUs alive) beyond one SI per slot and one
    ahead, whatever its credits; the credits not served stay for later. An
    IEU that asked first for all of them left the other idle while it ran
    them one by one. */
START_TEST(last_sis_are_spread_by_what_each_ieu_holds)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    for (int i = 0; i < 12; i++)
        script[nscript++] = (step_t){x, SPM_R, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t a = spm_idu_ieu_join(idu, 0, 1), b = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, a, 10);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 6); /* 12 in hand, 2 IEUs */
    spm_idu_ieu_info_t info;
    ck_assert_int_eq(spm_idu_ieu_info(idu, a, &info), 0);
    ck_assert_uint_eq(info.held, 6);
    ck_assert_uint_eq(info.credits, 4);
    spm_idu_ieu_pull(idu, b, 10);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 12);
    for (size_t i = 0; i < 12; i++)
        ck_assert_uint_eq(emitted[i].ieu, i < 6 ? a : b);
}
END_TEST

START_TEST(feed_hook_issues_for_the_requester)
{
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "feeder", NULL, 0, 0, &job), 0);
    uint32_t i0 = spm_idu_ieu_join(idu, 0, 1);
    uint32_t i1 = spm_idu_ieu_join(idu, 1, 1);
    spm_idu_pump(idu);
    ck_assert_int_eq(fed, 0); /* nobody asked: nothing issued */
    spm_idu_ieu_pull(idu, i1, 1);
    spm_idu_pump(idu);
    ck_assert_int_eq(fed, 1);
    ck_assert_uint_eq(fed_to[0], i1);
    ck_assert_uint_eq(emitted[0].ieu, i1);
    spm_idu_ieu_pull(idu, i0, 2);
    spm_idu_pump(idu);
    ck_assert_int_eq(fed, 3);
    ck_assert_uint_eq(emitted[1].ieu, i0);
    for (size_t i = 0; i < nemitted; i++)
        commit_ok(emitted[i].ieu, &emitted[i].si);
    ck_assert_uint_eq(njobs_done, 1);
}
END_TEST

/*  The center's thread must not vanish into a program unnoticed: a
    callback over SPM_IDU_SLOW_US is named in the log (stderr), once per SF. */
START_TEST(slow_callback_is_named_once)
{
    char path[] = "/tmp/spm-test-idu-log-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    uint64_t job;
    uint32_t ieu = start_job("slowpoke", &job);
    ck_assert_uint_eq(nemitted, 2);
    commit_ok(ieu, &emitted[0].si);
    commit_ok(ieu, &emitted[1].si);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[4096] = {0};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    ck_assert_int_gt(n, 0);
    const char *hit = strstr(buf, "super-function slowpoke spent");
    ck_assert_msg(hit && strstr(hit, "in its commit call"), "log: %s", buf);
    ck_assert_msg(!strstr(hit + 1, "super-function slowpoke spent"), "logged twice: %s", buf);
    ck_assert_uint_eq(njobs_done, 1);
}
END_TEST

START_TEST(dead_ieu_work_is_reissued_and_stale_commit_discarded)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_R, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t i0 = spm_idu_ieu_join(idu, 0, 1);
    uint32_t i1 = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, i0, 1);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 1);
    spm_idu_si_t first = emitted[0].si;
    ck_assert_uint_eq(spm_idu_ieu_dead(idu, i0), 1);
    spm_idu_ieu_pull(idu, i1, 1);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 2);
    ck_assert_uint_eq(emitted[1].si.id, first.id);
    ck_assert_uint_eq(emitted[1].si.attempt, first.attempt + 1);
    /* the dead IEU's late commit is stale */
    ck_assert_ptr_null(spm_idu_lookup(idu, i0, first.id, first.attempt));
    commit_ok(i1, &emitted[1].si);
    /* a second commit of the same SI is stale too: applied exactly once */
    ck_assert_ptr_null(spm_idu_lookup(idu, i1, first.id, emitted[1].si.attempt));
    ck_assert_int_eq(commits_seen, 1);
    spm_idu_job_info_t info;
    ck_assert_int_eq(spm_idu_job_info(idu, job, &info), 0);
    ck_assert_uint_eq(info.reissued, 1);
    ck_assert_uint_eq(info.stale, 1); /* the dead IEU's; the repeat names no live SI */
    ck_assert_uint_eq(info.committed, 1);
    ck_assert_int_eq(info.state, 1);
}
END_TEST

START_TEST(si_whose_holders_keep_dying_fails_the_job)
{
    /* A crashing SI body kills every IEU it is given to: after a few
       deaths the job fails with one line instead of waiting for ever. */
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_R, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    spm_idu_job_info_t info;
    for (uint32_t death = 1; death <= 4; death++) {
        ck_assert_int_eq(spm_idu_job_info(idu, job, &info), 0);
        ck_assert_int_eq(info.state, 0); /* three deaths are bad luck */
        uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
        spm_idu_ieu_pull(idu, ieu, 1);
        spm_idu_pump(idu);
        ck_assert_uint_eq(nemitted, death);
        ck_assert_uint_eq(emitted[death - 1].si.attempt, death - 1);
        ck_assert_uint_eq(spm_idu_ieu_dead(idu, ieu), 1);
    }
    ck_assert_int_eq(spm_idu_job_info(idu, job, &info), 0);
    ck_assert_int_eq(info.state, 2);
    ck_assert_int_eq(info.status, SPM_EDEAD);
    ck_assert_msg(strstr(info.error, "4 IEUs that died") != NULL, "%s", info.error);
}
END_TEST

START_TEST(expired_lease_is_reissued)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_R, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t i0 = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, i0, 2);
    spm_idu_pump(idu);
    ck_assert_uint_eq(spm_idu_expire(idu, UINT64_MAX / 2, 1000000), 1);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 2);
    ck_assert_uint_eq(emitted[1].si.attempt, 1);
    ck_assert_ptr_null(spm_idu_lookup(idu, i0, emitted[0].si.id, 0));
    commit_ok(i0, &emitted[1].si);
    ck_assert_uint_eq(njobs_done, 1);
}
END_TEST

START_TEST(reading_an_unwritten_sdb_fails_the_job)
{
    script[nscript++] = (step_t){12345, SPM_R, 0};
    uint64_t job;
    ck_assert_int_lt(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    spm_idu_job_info_t info;
    ck_assert_int_eq(spm_idu_job_info(idu, job, &info), 0);
    ck_assert_int_eq(info.state, 2);
    ck_assert_ptr_nonnull(strstr(info.error, "12345"));
}
END_TEST

/*  The NOCACHE hint an SF gives an operand goes out with the SI, on that
    operand only; a flag the VM does not know fails the job. */
START_TEST(nocache_hint_goes_out_with_its_operand)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_R, SPM_NOCACHE};
    script[nscript++] = (step_t){x, SPM_W, 0};
    script[nscript++] = (step_t){x, SPM_RW, SPM_NOCACHE};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, ieu, 10);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 2); /* the RW waits for the W */
    ck_assert_uint_eq(emitted[0].ops[0].flags, SPM_NOCACHE);
    ck_assert_uint_eq(emitted[1].ops[0].flags, 0);
    commit_ok(ieu, &emitted[1].si);
    commit_ok(ieu, &emitted[0].si);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 3);
    ck_assert_int_eq(emitted[2].ops[0].mode, SPM_RW);
    ck_assert_uint_eq(emitted[2].ops[0].flags, SPM_NOCACHE);

    nscript = 0;
    script[nscript++] = (step_t){x, SPM_R, 0x80};
    ck_assert_int_lt(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    spm_idu_job_info_t info;
    ck_assert_int_eq(spm_idu_job_info(idu, job, &info), 0);
    ck_assert_int_eq(info.state, 2);
    ck_assert_ptr_nonnull(strstr(info.error, "unknown flags"));
}
END_TEST

START_TEST(unknown_program_is_refused)
{
    uint64_t job = 0;
    ck_assert_int_eq(spm_idu_submit(idu, "no-such-program", NULL, 0, 0, &job), SPM_ENOTFOUND);
}
END_TEST

START_TEST(unreadable_versions_are_garbage)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_R, 0}; /* reads v1 */
    script[nscript++] = (step_t){x, SPM_W, 0}; /* writes v2 */
    script[nscript++] = (step_t){x, SPM_W, 0}; /* writes v3 */
    uint64_t job;
    uint32_t ieu = start_job("script", &job);
    ck_assert_uint_eq(nemitted, 3);
    spm_sdb_t id;
    uint64_t v;
    commit_ok(ieu, &emitted[2].si); /* v3 committed, v1 still read, v2 pending */
    ck_assert_int_eq(spm_idu_gc_take(idu, &id, &v), 0);
    commit_ok(ieu, &emitted[0].si); /* v1 read: but v2 still being written */
    ck_assert_int_eq(spm_idu_gc_take(idu, &id, &v), 1);
    ck_assert_uint_eq(id, x);
    ck_assert_uint_eq(v, 1);
    ck_assert_int_eq(spm_idu_gc_take(idu, &id, &v), 0);
    commit_ok(ieu, &emitted[1].si); /* v2 written, never read, older than v3 */
    ck_assert_int_eq(spm_idu_gc_take(idu, &id, &v), 1);
    ck_assert_uint_eq(v, 2);
    ck_assert_int_eq(spm_idu_gc_take(idu, &id, &v), 0); /* the newest stays */
}
END_TEST

START_TEST(merged_partials_are_garbage)
{
    spm_sdb_t x = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    script[nscript++] = (step_t){x, SPM_ACC, 0};
    script[nscript++] = (step_t){x, SPM_ACC, 0};
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t ieu = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, ieu, 10);
    spm_idu_pump(idu);
    spm_sdb_t p0 = emitted[0].ops[0].sdb, p1 = emitted[1].ops[0].sdb;
    commit_ok(ieu, &emitted[0].si);
    commit_ok(ieu, &emitted[1].si);
    spm_idu_pump(idu);
    commit_ok(ieu, &emitted[2].si); /* the merge */
    spm_sdb_t got[4];
    uint64_t v;
    int n = 0;
    while (n < 4 && spm_idu_gc_take(idu, &got[n], &v))
        n++;
    ck_assert_int_eq(n, 3); /* both partials and x's version 1 */
    int seen0 = 0, seen1 = 0, seenx = 0;
    for (int i = 0; i < n; i++) {
        seen0 |= got[i] == p0;
        seen1 |= got[i] == p1;
        seenx |= got[i] == x;
    }
    ck_assert(seen0 && seen1 && seenx);
}
END_TEST

/*  A directory of nodes 0 and 1, the IDU's; the test destroys it after
    the IDU. */
static spm_directory_t *two_node_directory(void)
{
    spm_directory_t *dir = spm_directory_new(2);
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(spm_directory_node_up(dir, 0, "ipc://n0", ""), 0);
    ck_assert_int_eq(spm_directory_node_up(dir, 1, "ipc://n1", ""), 0);
    spm_idu_set_directory(idu, dir);
    return dir;
}

/*  Submits the script and has one IEU on node 0 ask for one SI: exactly
    one is issued. */
static void issue_one_to_node0(void)
{
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(idu, "script", NULL, 0, 0, &job), 0);
    uint32_t on0 = spm_idu_ieu_join(idu, 0, 1);
    spm_idu_ieu_pull(idu, on0, 1);
    spm_idu_pump(idu);
    ck_assert_uint_eq(nemitted, 1);
}

START_TEST(issue_prefers_sis_whose_operands_are_local)
{
    spm_sdb_t far = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    spm_sdb_t near = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    spm_directory_t *dir = two_node_directory();
    spm_directory_add(dir, far, 1, 1 << 20, 7, 1, SPM_DIR_KEEPER);
    spm_directory_add(dir, near, 1, 1 << 20, 7, 0, SPM_DIR_KEEPER);
    script[nscript++] = (step_t){far, SPM_R, 0};
    script[nscript++] = (step_t){near, SPM_R, 0};
    issue_one_to_node0();
    ck_assert_uint_eq(emitted[0].ops[0].sdb, near); /* issued second, local to node 0 */
    spm_idu_destroy(&idu);                          /* before the directory it uses */
    spm_directory_destroy(&dir);
}
END_TEST

/*  A node whose blocks are ready is given one of them, not another
    node's, even when they are further back than the first eight ready
    SIs: an IEU that asks for many short SIs ahead soon has only other
    nodes' at the front (mining on 2 nodes swapped half its raw blocks). */
START_TEST(issue_finds_a_local_si_past_the_first_eight)
{
    spm_directory_t *dir = two_node_directory();
    spm_sdb_t near = 0;
    for (int i = 0; i < 12; i++) {
        spm_sdb_t b = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
        spm_directory_add(dir, b, 1, 1 << 20, 7, i < 11 ? 1 : 0, SPM_DIR_KEEPER);
        near = b;
        script[nscript++] = (step_t){b, SPM_R, 0};
    }
    issue_one_to_node0();
    ck_assert_uint_eq(emitted[0].ops[0].sdb, near); /* the twelfth, the one on node 0 */
    spm_idu_destroy(&idu);                          /* before the directory it uses */
    spm_directory_destroy(&dir);
}
END_TEST

START_TEST(discard_takes_an_ended_jobs_sdbs_and_unread_puts)
{
    put_read = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    spm_sdb_t spare = spm_idu_sdb_put(idu, spm_name_id("t.blob"));
    uint64_t job;
    uint32_t ieu = start_job("maker", &job);
    ck_assert_uint_eq(nemitted, 1);

    /* while the job runs: refused whole; a put an SI reads is kept */
    size_t n = 99;
    spm_sdb_t puts[2] = {put_read, spare};
    ck_assert_int_eq(spm_idu_discard(idu, &job, 1, puts, 2, &n), SPM_EINVAL);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(spm_idu_discard(idu, NULL, 0, puts, 1, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(spm_idu_sdb_version(idu, put_read, NULL), 1);
    spm_sdb_t id;
    uint64_t version;
    ck_assert_int_eq(spm_idu_gc_take(idu, &id, &version), 0);

    commit_ok(ieu, &emitted[0].si);
    ck_assert_uint_eq(njobs_done, 1);
    ck_assert_uint_eq(spm_idu_sdb_version(idu, made, NULL), 1);
    ck_assert_int_eq(spm_idu_discard(idu, &job, 1, puts, 2, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(spm_idu_sdb_version(idu, made, NULL), 0);
    ck_assert_uint_eq(spm_idu_sdb_version(idu, put_read, NULL), 0);
    ck_assert_uint_eq(spm_idu_sdb_version(idu, spare, NULL), 0);
    /* each goes to the garbage as version 0: every version */
    int seen = 0;
    while (spm_idu_gc_take(idu, &id, &version)) {
        ck_assert_uint_eq(version, 0);
        seen |= (id == made) | (id == put_read) << 1 | (id == spare) << 2;
    }
    ck_assert_int_eq(seen, 7);
    ck_assert_int_eq(spm_idu_discard(idu, &job, 1, puts, 2, &n), 0); /* twice: nothing left */
    ck_assert_uint_eq(n, 0);
}
END_TEST

static Suite *idu_suite(void)
{
    Suite *s = suite_create("idu");
    const spm_test_case_t c = {.setup = setup, .teardown = teardown};
    SPM_TEST_ADD(s, &c, raw_waits_for_the_version_it_reads);
    SPM_TEST_ADD(s, &c, war_and_waw_do_not_stall);
    SPM_TEST_ADD(s, &c, acc_runs_concurrently_and_merges_before_the_reader);
    SPM_TEST_ADD(s, &c, open_acc_group_is_merged_at_job_end);
    SPM_TEST_ADD(s, &c, higher_priority_job_goes_first);
    SPM_TEST_ADD(s, &c, equal_priority_jobs_share_round_robin);
    SPM_TEST_ADD(s, &c, last_sis_are_spread_by_what_each_ieu_holds);
    SPM_TEST_ADD(s, &c, feed_hook_issues_for_the_requester);
    SPM_TEST_ADD(s, &c, slow_callback_is_named_once);
    SPM_TEST_ADD(s, &c, dead_ieu_work_is_reissued_and_stale_commit_discarded);
    SPM_TEST_ADD(s, &c, si_whose_holders_keep_dying_fails_the_job);
    SPM_TEST_ADD(s, &c, expired_lease_is_reissued);
    SPM_TEST_ADD(s, &c, reading_an_unwritten_sdb_fails_the_job);
    SPM_TEST_ADD(s, &c, nocache_hint_goes_out_with_its_operand);
    SPM_TEST_ADD(s, &c, unknown_program_is_refused);
    SPM_TEST_ADD(s, &c, unreadable_versions_are_garbage);
    SPM_TEST_ADD(s, &c, merged_partials_are_garbage);
    SPM_TEST_ADD(s, &c, issue_prefers_sis_whose_operands_are_local);
    SPM_TEST_ADD(s, &c, issue_finds_a_local_si_past_the_first_eight);
    SPM_TEST_ADD(s, &c, discard_takes_an_ended_jobs_sdbs_and_unread_puts);
    return s;
}

SPM_TEST_MAIN(idu_suite)
