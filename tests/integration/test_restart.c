/*  A center killed with SIGKILL and started again on the same store: the
    jobs it ran go on from their journal (STORE/journal/JOB.log) and their
    clients finish with the results an undisturbed run gives; committed SIs
    are taken from the journal, not run again; a torn or damaged journal
    costs only its tail; the agents rejoin at once as the same node; and a
    store the center must not use (another store's or another format's
    journal, another layout, a store a running center uses) is refused in
    one line before anything in it changes. Real centers, agents, IEUs and
    clients of the spm binary on ipc endpoints, real store directories. */
#include "datacache/lmdbenv.h"
#include "datacache/store.h"
#include "tests/chaos/chaos.h"
#include "tests/check_main.h"
#include "tests/scratch.h"

#include <dirent.h>
#include <lmdb.h>
#include <sys/stat.h>

#define EV_COMMIT 3 /* idu/events.c: the first byte of a commit's journal record */

/*  The "sis" of the IEUs of a job's JSON report, added up: the SIs the
    center that sent it ran, as opposed to those taken from the journal. */
static double live_sis(const char *report)
{
    const char *p = report ? strstr(report, "\"ieus\": [") : NULL;
    const char *end = p ? strchr(p, ']') : NULL;
    double sum = 0;
    while (p && (p = strstr(p + 1, "\"sis\": ")) && p < end)
        sum += strtod(p + 7, NULL);
    return sum;
}

/*  `spm ARGS... TAIL...` with every "@NAME" of ARGS the file DIR/NAME.SUFFIX
    (see chaos_arg), into ARGV (CHAOS_MAX_ARGS) with the paths in BUF. */
static void job_argv(const chaos_job_t *job, const char *dir, const char *suffix,
                     const char *const *tail, const char **argv, char buf[][256])
{
    int n = 0;
    for (; job->args[n]; n++)
        argv[n] = chaos_arg(job->args[n], dir, suffix, buf[n], sizeof buf[n]);
    for (int i = 0; tail[i]; i++) {
        ck_assert_int_lt(n, CHAOS_MAX_ARGS - 1);
        argv[n++] = tail[i];
    }
    argv[n] = NULL;
}

/*  Runs JOB undisturbed on an embedded VM of two IEUs, its outputs into
    DIR/NAME.want. Returns the time it took in ms. */
static long long reference_run(const chaos_job_t *job, const char *dir)
{
    const char *argv[CHAOS_MAX_ARGS];
    char buf[CHAOS_MAX_ARGS][256];
    const char *tail[] = {"--ieus", "2", "--quiet", NULL};
    job_argv(job, dir, "want", tail, argv, buf);
    long long start = chaos_now_ms();
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "undisturbed %s failed (exit %d): %s", job->args[0], rc, err);
    free(out);
    free(err);
    return chaos_now_ms() - start;
}

/*  Whether every output ("@NAME") of JOB came out the same in DIR/NAME.got
    as in DIR/NAME.want. */
static int same_outputs(const chaos_job_t *job, const char *dir)
{
    for (int i = 0; job->args[i]; i++) {
        char want[256], got[256];
        if (job->args[i][0] == '@' &&
            !chaos_same_file(chaos_arg(job->args[i], dir, "want", want, sizeof want),
                             chaos_arg(job->args[i], dir, "got", got, sizeof got))) {
            fprintf(stderr, "restart: %s: %s differs from %s\n", job->args[0], got, want);
            return 0;
        }
    }
    return 1;
}

/*  Submits `spm submit synthetic --sis SIS --work fixed:2ms` to VM's center;
    returns the job id. */
static long submit_synthetic(const chaos_vm_t *vm, const char *sis)
{
    const char *argv[] = {"submit", "synthetic", "--center",  vm->ep, "--sis",
                          sis,      "--work",    "fixed:2ms", NULL};
    return spm_test_submit(argv, 30);
}

/*  Waits up to 60 s until VM's center lists the synthetic job running with
    at least COMMITTED SIs committed; returns that count (-1 when the job
    was not seen so). Copies the last status into LAST (SIZE bytes). */
static double wait_committed(const chaos_vm_t *vm, double committed, char *last, size_t size)
{
    long long end = chaos_now_ms() + 60000;
    char job[1024];
    while (chaos_now_ms() < end) {
        char *st = chaos_status(vm);
        const char *j = chaos_status_job(st, "synthetic", job, sizeof job);
        snprintf(last, size, "%s", st ? st : "(no answer)");
        free(st);
        double c = j ? spm_test_json_num(j, "committed") : -1;
        if (j && strstr(j, "\"state\": \"running\"") && c >= committed)
            return c;
        usleep(20000);
    }
    return -1;
}

/*  The jobs of center_killed_three_times_while_three_jobs_run, by the
    program names the center lists them under. */
enum { MATMUL, MINE, SYNTHETIC, NJOBS };
static const char *const programs[NJOBS] = {"matmul", "mine", "synthetic"};

START_TEST(center_killed_three_times_while_three_jobs_run)
{
    uint64_t seed = chaos_seed();
    chaos_plan_t rng = {.rng = seed};
    long long t_start = chaos_now_ms();
    chaos_vm_t vm;
    chaos_vm_start(&vm, 3, 1000);
    /* Undisturbed, the three together take about 7 s on this machine's two
       cores: a matmul of 13,824 SIs, a mine of 2,700 and 4,000 SIs of 2 ms.
       IEUs go to the jobs' ready SIs in turn; matmul's other policies hand
       out SIs only when no other job has one ready, so it would not run
       before the others are done. The update method adds each product into
       C as it commits (a chain of versions of C whose order the commits
       decide): the one a restart got wrong when SIs left the center before
       the events that made them were journaled. The inputs are fixed; the
       seed varies when the kills land. */
    chaos_job_t mm, mine;
    chaos_matmul(&mm, vm.dir, 384, 7, "update", "syn");
    chaos_mine(&mine, vm.dir, 100000, 8, "0.3%", 3, 100);
    long long ref_mm = reference_run(&mm, vm.dir), ref_mine = reference_run(&mine, vm.dir);

    const char *tail[] = {"--center", vm.ep, "--json", NULL};
    const char *argv_mm[CHAOS_MAX_ARGS], *argv_mine[CHAOS_MAX_ARGS];
    char buf_mm[CHAOS_MAX_ARGS][256], buf_mine[CHAOS_MAX_ARGS][256];
    job_argv(&mm, vm.dir, "got", tail, argv_mm, buf_mm);
    job_argv(&mine, vm.dir, "got", tail, argv_mine, buf_mine);
    long long t_jobs = chaos_now_ms();
    spm_test_proc_t p[NJOBS];
    p[MATMUL] = spm_test_start(argv_mm);
    p[MINE] = spm_test_start(argv_mine);
    const double sis = 4000;
    long job = submit_synthetic(&vm, "4000");
    char js[32];
    snprintf(js, sizeof js, "%ld", job);
    const char *wait[] = {"wait", js, "--center", vm.ep, "--json", "--quiet", NULL};
    p[SYNTHETIC] = spm_test_start(wait);

    /* Kills land by the jobs' progress, not by the clock, so that a fast
       machine cannot outrun them: the first once every job has committed
       100 SIs (more than its IEUs can hold at once: some are in the
       journal, which the center writes every turn of its loop) and a tenth
       of the synthetic ones; each next one once every job still running
       has committed more than at the kill before, and the synthetic one
       another eighth of its SIs. */
    static char status[16384];
    double at[3][NJOBS];
    int running_at[3];
    long long kill_ms[3];
    for (int k = 0; k < 3; k++) {
        long long end = chaos_now_ms() + 60000;
        for (int ready = 0; !ready;) {
            ck_assert_msg(chaos_now_ms() < end, "kill %d: the jobs made no progress: %s", k + 1,
                          status);
            usleep(20000);
            char *st = chaos_status(&vm);
            snprintf(status, sizeof status, "%s", st ? st : "(no answer)");
            free(st);
            ready = 1;
            running_at[k] = 0;
            int running[NJOBS];
            for (int i = 0; i < NJOBS; i++) {
                char entry[1024];
                const char *e = chaos_status_job(status, programs[i], entry, sizeof entry);
                running[i] = e && strstr(e, "\"state\": \"running\"");
                at[k][i] = e ? spm_test_json_num(e, "committed") : -1;
                running_at[k] += running[i];
                if (k == 0)
                    ready &= running[i] && at[k][i] >= 100;
                else if (running[i])
                    ready &= at[k][i] > at[k - 1][i];
            }
            ck_assert_msg(k == 0 || running[SYNTHETIC] || !strstr(status, "\"jobs\""),
                          "kill %d: the synthetic job no longer runs: %s", k + 1, status);
            ready &= at[k][SYNTHETIC] >= (k ? at[k - 1][SYNTHETIC] + sis / 8 : sis / 10);
        }
        usleep((useconds_t)(chaos_rand(&rng) % 50) * 1000); /* mid-turn or between turns */
        kill_ms[k] = chaos_now_ms() - t_jobs;
        chaos_kill_center(&vm);
        chaos_center_start(&vm);
    }

    char *out[NJOBS], *err[NJOBS];
    int rc[NJOBS];
    for (int i = 0; i < NJOBS; i++)
        rc[i] = spm_test_finish(&p[i], 120, &out[i], &err[i]);
    long long took = chaos_now_ms() - t_jobs;
    int same = same_outputs(&mm, vm.dir) && same_outputs(&mine, vm.dir);
    int killed = chaos_vm_stop(&vm);

    fprintf(stderr,
            "restart: seed %llu; undisturbed (embedded, 2 IEUs) matmul %.1f s, mine %.1f s; "
            "kills at %.1f, %.1f, %.1f s with %d, %d, %d jobs running; the three jobs done in "
            "%.1f s, test %.1f s\n",
            (unsigned long long)seed, ref_mm / 1e3, ref_mine / 1e3, kill_ms[0] / 1e3,
            kill_ms[1] / 1e3, kill_ms[2] / 1e3, running_at[0], running_at[1], running_at[2],
            took / 1e3, (chaos_now_ms() - t_start) / 1e3);
    for (int i = 0; i < NJOBS; i++)
        fprintf(stderr,
                "restart: %-9s committed %5.0f, %5.0f, %5.0f at the kills; wall %.1f s, "
                "committed %.0f, resumed %.0f, run by the last center %.0f, restarts %.0f, "
                "reissued %.0f\n",
                programs[i], at[0][i], at[1][i], at[2][i], spm_test_json_num(out[i], "wall_s"),
                spm_test_json_num(out[i], "committed"), spm_test_json_num(out[i], "resumed"),
                live_sis(out[i]), spm_test_json_num(out[i], "restarts"),
                spm_test_json_num(out[i], "reissued"));

    for (int i = 0; i < NJOBS; i++)
        ck_assert_msg(rc[i] == 0, "%s failed (exit %d, seed %llu): %s", programs[i], rc[i],
                      (unsigned long long)seed, err[i]);
    ck_assert_msg(same, "outputs differ from the undisturbed run's (seed %llu)",
                  (unsigned long long)seed);
    ck_assert_double_eq(spm_test_json_num(out[SYNTHETIC], "issued"), sis);
    ck_assert_double_eq(spm_test_json_num(out[SYNTHETIC], "committed"), sis);
    ck_assert_double_eq(spm_test_json_num(out[SYNTHETIC], "restarts"), 3);
    for (int i = 0; i < NJOBS; i++) {
        /* Every job ran, with 100 commits or more, at the first kill: each
           was resumed, and took commits from the journal at its last
           resumption. Committed work is not redone: the last center took
           what the journal held and ran exactly the rest (an IEU's count
           in the report is of the SIs it ran for that center). */
        double resumed = spm_test_json_num(out[i], "resumed");
        double committed = spm_test_json_num(out[i], "committed");
        ck_assert_msg(spm_test_json_num(out[i], "restarts") >= 1,
                      "%s: not resumed after a restart: %s", programs[i], out[i]);
        ck_assert_msg(resumed > 0, "%s: no commit taken from the journal: %s", programs[i], out[i]);
        ck_assert_msg(live_sis(out[i]) + resumed == committed,
                      "%s: %.0f SIs run by the last center + %.0f taken from the journal != "
                      "%.0f committed: %s",
                      programs[i], live_sis(out[i]), resumed, committed, out[i]);
    }
    /* At the last kill over a third of the synthetic SIs were committed,
       all in the journal but those of the center's last turn. */
    ck_assert_msg(spm_test_json_num(out[SYNTHETIC], "resumed") > sis / 4,
                  "the synthetic job took %.0f commits from the journal after its third restart, "
                  "%.0f were in before: %s",
                  spm_test_json_num(out[SYNTHETIC], "resumed"), at[2][SYNTHETIC], out[SYNTHETIC]);
    ck_assert_msg(killed == 0, "%d processes of the VM outlived its center", killed);
    for (int i = 0; i < NJOBS; i++) {
        free(out[i]);
        free(err[i]);
    }
}
END_TEST

/*  The records of a journal file: where each starts, its payload's length
    and its first byte (the event's type). */
typedef struct {
    uint8_t *data; /* the whole file */
    size_t size;
    size_t n;      /* records */
    size_t *off;   /* record I starts at OFF[I] */
    uint32_t *len; /* and has LEN[I] bytes of payload */
    uint8_t *type; /* the first of them */
} journal_file_t;

/*  Reads PATH (vm/center/journal.h: a 16-byte header, then records of a u64
    checksum, a u32 LE length and the payload) and finds its records; the
    file must end at a record's end, as the center writes it. */
static void journal_read(const char *path, journal_file_t *jf)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    jf->size = (size_t)ftell(f);
    rewind(f);
    jf->data = malloc(jf->size + 1);
    ck_assert(jf->data && fread(jf->data, 1, jf->size, f) == jf->size);
    fclose(f);
    ck_assert_msg(jf->size >= 16 && memcmp(jf->data, "SPMJ", 4) == 0, "%s: no journal header",
                  path);
    size_t cap = jf->size / 12 + 1, pos = 16;
    jf->off = calloc(cap, sizeof *jf->off);
    jf->len = calloc(cap, sizeof *jf->len);
    jf->type = calloc(cap, sizeof *jf->type);
    jf->n = 0;
    while (pos + 12 <= jf->size) {
        uint32_t len = (uint32_t)jf->data[pos + 8] | (uint32_t)jf->data[pos + 9] << 8 |
                       (uint32_t)jf->data[pos + 10] << 16 | (uint32_t)jf->data[pos + 11] << 24;
        if (pos + 12 + len > jf->size)
            break;
        jf->off[jf->n] = pos;
        jf->len[jf->n] = len;
        jf->type[jf->n] = len ? jf->data[pos + 12] : 0;
        jf->n++;
        pos += 12 + len;
    }
    ck_assert_msg(pos == jf->size, "%s: %zu bytes after its last whole record", path,
                  jf->size - pos);
}

static void journal_free(journal_file_t *jf)
{
    free(jf->data);
    free(jf->off);
    free(jf->len);
    free(jf->type);
}

/*  Commit records among the first N of JF. */
static double commits_in(const journal_file_t *jf, size_t n)
{
    double c = 0;
    for (size_t i = 0; i < n; i++)
        c += jf->type[i] == EV_COMMIT;
    return c;
}

START_TEST(damaged_journal_keeps_its_intact_prefix)
{
    /* _i 0: the file cut in the middle of a record (a torn write); _i 1:
       4 KiB of garbage after its last record (a damaged tail). */
    int torn = _i == 0;
    chaos_vm_t vm;
    chaos_vm_start(&vm, 2, 1000);
    long job = submit_synthetic(&vm, "1500");
    static char status[16384];
    ck_assert_msg(wait_committed(&vm, 500, status, sizeof status) >= 0, "%s", status);
    chaos_kill_center(&vm);

    char path[256];
    snprintf(path, sizeof path, "%s/store/journal/%ld.log", vm.dir, job);
    journal_file_t jf;
    journal_read(path, &jf);
    ck_assert_msg(commits_in(&jf, jf.n) >= 400, "%s holds %.0f commits of the 500 seen", path,
                  commits_in(&jf, jf.n));
    double resumed;
    size_t skipped;
    if (torn) {
        size_t k = jf.n / 2, cut = jf.off[k] + (12 + jf.len[k]) / 2;
        ck_assert_int_eq(truncate(path, (off_t)cut), 0);
        resumed = commits_in(&jf, k);
        skipped = cut - jf.off[k];
    } else {
        uint8_t garbage[4096];
        chaos_plan_t rng = {.rng = chaos_seed()};
        for (size_t i = 0; i < sizeof garbage; i++)
            garbage[i] = (uint8_t)chaos_rand(&rng);
        FILE *f = fopen(path, "ab");
        ck_assert(f && fwrite(garbage, 1, sizeof garbage, f) == sizeof garbage);
        fclose(f);
        resumed = commits_in(&jf, jf.n);
        skipped = sizeof garbage;
    }
    journal_free(&jf);

    vm.center_log = "warn";
    chaos_center_start(&vm);
    char js[32];
    snprintf(js, sizeof js, "%ld", job);
    const char *wait[] = {"wait", js, "--center", vm.ep, "--json", "--quiet", NULL};
    char *out, *err;
    int rc = spm_test_run(wait, 60, &out, &err);
    ck_assert_msg(rc == 0, "spm wait after a %s journal (exit %d): %s", torn ? "torn" : "damaged",
                  rc, err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 1500);
    ck_assert_double_eq(spm_test_json_num(out, "restarts"), 1);
    /* every commit of the intact part is taken, none after it, and the
       center runs the rest: the SIs whose commits were cut off again */
    ck_assert_msg(spm_test_json_num(out, "resumed") == resumed,
                  "%.0f commits taken from the journal, %.0f in its intact part: %s",
                  spm_test_json_num(out, "resumed"), resumed, out);
    ck_assert_msg(live_sis(out) == 1500 - resumed,
                  "the restarted center ran %.0f SIs, not the %.0f the journal lacked: %s",
                  live_sis(out), 1500 - resumed, out);
    free(out);
    free(err);

    ck_assert_int_eq(chaos_center_stop(&vm, &err), 0); /* no crash */
    int lines = 0;
    char warning[1024] = "";
    for (const char *l = err; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        if (strstr(line, "journal:") && strstr(line, "damaged") && ++lines == 1)
            snprintf(warning, sizeof warning, "%s", line);
        l += n + (nl != NULL);
    }
    ck_assert_msg(lines == 1, "%d warnings of a damaged journal: %s", lines, err);
    /* "journal: 1 job file ended in a torn or damaged record; N bytes ..." */
    const char *figures = strstr(warning, "journal: ");
    char want[64];
    snprintf(want, sizeof want, "; %zu bytes", skipped);
    ck_assert_msg(figures && strtoul(figures + 9, NULL, 10) == 1 && strstr(warning, want),
                  "want 1 file and %zu bytes skipped: %s", skipped, warning);
    free(err);
    fprintf(stderr, "restart: %s journal: %.0f commits taken, %zu bytes skipped\n",
            torn ? "torn" : "damaged", resumed, skipped);
    ck_assert_int_eq(chaos_vm_stop(&vm), 0);
}
END_TEST

/*  IEUs of node NODE that STATUS lists as joined (idle or busy). */
static int ieus_up(const char *status, int node)
{
    const char *p = status ? strstr(status, "\"ieus\": [") : NULL;
    const char *end = p ? strchr(p, ']') : NULL;
    int n = 0;
    while (p && (p = strstr(p + 1, "{\"ieu\": ")) && p < end) {
        char e[256];
        const char *close = strchr(p, '}');
        snprintf(e, sizeof e, "%.*s", close ? (int)(close - p) : 0, p);
        n += spm_test_json_num(e, "node") == node &&
             (strstr(e, "\"state\": \"idle\"") || strstr(e, "\"state\": \"busy\""));
    }
    return n;
}

/*  Asks VM's center for its status every POLL_MS, for up to 10 s, until it
    lists node NODE up and two IEUs of it joined. Returns 1 when it did. */
static int node_joined(const chaos_vm_t *vm, int node, int poll_ms)
{
    char up[64];
    snprintf(up, sizeof up, "{\"node\": %d, \"up\": true", node);
    for (long long end = chaos_now_ms() + 10000; chaos_now_ms() < end; usleep(poll_ms * 1000)) {
        char *st = chaos_status(vm);
        int ok = st && ieus_up(st, node) == 2 && strstr(st, up);
        free(st);
        if (ok)
            return 1;
    }
    return 0;
}

START_TEST(agents_rejoin_within_a_second)
{
    /* A first agent comes and goes (node 0): the agent measured is node 1,
       an index a restarted center that numbered its agents afresh would
       not give it. */
    chaos_vm_t vm;
    chaos_vm_start(&vm, 1, 1000);
    const char *st[] = {"status", "--center", vm.ep, "--json", NULL};
    char *out = NULL;
    for (int tries = 0; tries < 100 && !(out && ieus_up(out, 0) == 1); tries++) {
        free(out);
        out = NULL;
        spm_test_run(st, 10, &out, NULL);
        usleep(50000);
    }
    ck_assert_msg(ieus_up(out, 0) == 1, "the first agent's IEU did not join: %s", out);
    free(out);
    kill(vm.agent.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&vm.agent, 20, NULL, NULL), 0);
    vm.ieus = 2;
    chaos_agent_start(&vm);
    ck_assert_msg(node_joined(&vm, 1, 50), "the second agent did not join as node 1");

    long job = submit_synthetic(&vm, "2000");
    static char status[16384];
    ck_assert_msg(wait_committed(&vm, 100, status, sizeof status) >= 0, "%s", status);
    chaos_kill_center(&vm);
    long long t0 = chaos_now_ms();
    chaos_center_start(&vm);
    int joined = node_joined(&vm, 1, 20);
    long long took = chaos_now_ms() - t0;
    fprintf(stderr, "restart: node 1 and its 2 IEUs joined %lld ms after the center started\n",
            took);
    ck_assert_msg(joined, "node 1 did not rejoin with its 2 IEUs within 10 s");
    /* well within a second on a quiet machine; 1.5 s leaves room for a busy one */
    ck_assert_msg(took < 1500, "node 1 rejoined %lld ms after the center started", took);

    char js[32];
    snprintf(js, sizeof js, "%ld", job);
    const char *wait[] = {"wait", js, "--center", vm.ep, "--json", "--quiet", NULL};
    char *err;
    ck_assert_msg(spm_test_run(wait, 60, &out, &err) == 0, "%s", err);
    ck_assert_double_eq(spm_test_json_num(out, "committed"), 2000);
    free(out);
    free(err);
    ck_assert_int_eq(chaos_vm_stop(&vm), 0);
}
END_TEST

/* ------------------------------------------------------- refused stores */

/*  A center on store BASE/NAME listening on ipc://BASE/NAME.ipc into *P,
    once it answers. */
static void center_up(const char *name, spm_test_proc_t *p, char *ep, size_t size)
{
    char store[128];
    snprintf(store, sizeof store, "%s/%s", base, name);
    snprintf(ep, size, "ipc://%s/%s.ipc", base, name);
    const char *argv[] = {"center", "--listen", ep, "--store", store, "--log-level", "error", NULL};
    *p = spm_test_start(argv);
    const char *st[] = {"status", "--center", ep, "--timeout", "10000", NULL};
    char *out, *err;
    ck_assert_msg(spm_test_run(st, 20, &out, &err) == 0, "center on %s: %s", store, err);
    free(out);
    free(err);
}

/*  A store BASE/NAME a center made and was stopped on. */
static void make_store(const char *name)
{
    spm_test_proc_t p;
    char ep[160];
    center_up(name, &p, ep, sizeof ep);
    kill(p.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&p, 15, NULL, NULL), 0);
}

/*  FNV-1a of PATH's bytes. */
static uint64_t file_hash(const char *path)
{
    uint64_t h = 1469598103934665603ull;
    FILE *f = fopen(path, "rb");
    int c;
    while (f && (c = getc(f)) != EOF)
        h = (h ^ (uint64_t)c) * 1099511628211ull;
    if (f)
        fclose(f);
    return h;
}

/*  Appends to LIST (SIZE bytes) a line per entry under PATH, recursively in
    name order: its name, size, mtime in ns and, for a file, a hash of its
    bytes. With AGE, first sets every mtime an hour back (then any write
    shows, however coarse the clock of the file system). LMDB's lock.mdb is
    listed by name only: it holds a slot each reader of the store writes. */
static void listing(const char *path, char *list, size_t size, int age)
{
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    ck_assert_msg(n >= 0, "%s: %s", path, strerror(errno));
    for (int i = 0; i < n; i++) {
        const char *name = names[i]->d_name;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", path, name);
        struct stat st;
        int lock = !strcmp(name, "lock.mdb");
        if (lock) {
            size_t len = strlen(list);
            snprintf(list + len, size - len, "%s\n", p);
        } else if (strcmp(name, ".") && strcmp(name, "..") && lstat(p, &st) == 0) {
            if (age) {
                struct timespec t[2] = {{st.st_mtim.tv_sec - 3600, 0},
                                        {st.st_mtim.tv_sec - 3600, 0}};
                ck_assert_int_eq(utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW), 0);
                lstat(p, &st);
            }
            size_t len = strlen(list);
            snprintf(list + len, size - len, "%s %lld %lld.%09ld %016llx\n", p,
                     (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                     S_ISREG(st.st_mode) ? (unsigned long long)file_hash(p) : 0ull);
            if (S_ISDIR(st.st_mode))
                listing(p, list, size, age);
        }
        free(names[i]);
    }
    free(names);
}

/*  Starts a center on store BASE/NAME, which it must refuse: exit status
    1, one line on stderr that holds WANT, and nothing under BASE/NAME
    changed. */
static void refused(const char *name, const char *want)
{
    char store[128], ep[160];
    snprintf(store, sizeof store, "%s/%s", base, name);
    snprintf(ep, sizeof ep, "ipc://%s/refused.ipc", base);
    static char before[1 << 16], after[1 << 16];
    before[0] = after[0] = '\0';
    listing(store, before, sizeof before, 1);
    const char *argv[] = {"center", "--listen", ep, "--store", store, NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 20, &out, &err);
    listing(store, after, sizeof after, 0);
    ck_assert_msg(rc == 1, "a center on %s: exit %d, want 1: %s", name, rc, err);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, want),
                  "a center on %s: want one line with \"%s\", got: %s", name, want, err);
    ck_assert_msg(strcmp(before, after) == 0, "a refused center changed %s:\nbefore:\n%safter:\n%s",
                  store, before, after);
    fprintf(stderr, "restart: refused: %s", err);
    free(out);
    free(err);
}

/*  Writes TEXT into PATH. */
static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/*  Replaces the identity record of the store in BASE/NAME by "spmstorL"
    and 16 bytes, as a spm of store layout L would have written it. */
static void set_layout(const char *name, char layout)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", base, name);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    ck_assert_int_eq(mdb_env_create(&env), 0);
    ck_assert_int_eq(mdb_env_set_mapsize(env, 1 << 30), 0);
    ck_assert_int_eq(mdb_env_open(env, path, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
    uint8_t k[SPM_STORE_KEY_LEN], rec[24] = "spmstor?";
    rec[7] = (uint8_t)layout;
    spm_store_key(k, 0, 0);
    MDB_val key = {sizeof k, k}, v = {sizeof rec, rec};
    ck_assert_int_eq(mdb_put(txn, dbi, &key, &v, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

START_TEST(refused_stores)
{
    char path[256], other[256], text[256];
    /* (a) the journal of another store */
    make_store("a");
    make_store("other");
    snprintf(other, sizeof other, "%s/other/journal/journal.id", base);
    FILE *f = fopen(other, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *hex = strstr(text, "store ");
    ck_assert_ptr_nonnull(hex);
    char want[128];
    snprintf(want, sizeof want, "belongs to another store (store %.32s", hex + 6);
    snprintf(path, sizeof path, "%s/a/journal/journal.id", base);
    write_file(path, text);
    refused("a", want);

    /* (b) a journal of another format */
    make_store("b");
    snprintf(path, sizeof path, "%s/b/journal/journal.id", base);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *format = strstr(text, "format 1\n");
    ck_assert_ptr_nonnull(format);
    format[7] = '9';
    write_file(path, text);
    refused("b", "written by journal format 9; this spm reads format 1");

    /* (c) a store a running center uses */
    spm_test_proc_t running;
    char ep[160];
    center_up("c", &running, ep, sizeof ep);
    snprintf(want, sizeof want, "in use by another center (process %d)", (int)running.pid);
    refused("c", want);
    kill(running.pid, SIGTERM);
    ck_assert_int_eq(spm_test_finish(&running, 15, NULL, NULL), 0);

    /* (d) a store of an older layout, and of a newer one */
    make_store("d");
    set_layout("d", '1');
    refused("d", "a store of layout 1, written by an older spm; this spm reads layout 2");
    set_layout("d", '3');
    refused("d", "a store of layout 3, written by a newer spm; this spm reads layout 2");
}
END_TEST

START_TEST(client_waiting_with_status_watch_survives)
{
    /* `spm status --watch` on a center killed and started again goes on
       printing, the new center's status (its uptime starts again). */
    chaos_vm_t vm;
    chaos_vm_start(&vm, 1, 1000);
    const char *argv[] = {"status", "--center", vm.ep, "--watch", "--json", NULL};
    spm_test_proc_t watch = spm_test_start(argv);
    long long end = chaos_now_ms() + 10000;
    char *seen = NULL;
    /* three lines: the center has been up two seconds */
    for (; chaos_now_ms() < end; usleep(100000)) {
        int fd = open(watch.out_path, O_RDONLY);
        free(seen);
        seen = spm_test_slurp(fd);
        close(fd);
        if (spm_test_lines(seen) >= 3)
            break;
    }
    ck_assert_msg(spm_test_lines(seen) >= 3, "status --watch printed: %s", seen);
    size_t before = spm_test_lines(seen);
    const char *last = seen;
    for (size_t i = 0; i + 1 < before; i++)
        last = strchr(last, '\n') + 1;
    double old_uptime = spm_test_json_num(last, "uptime_s");
    chaos_kill_center(&vm);
    chaos_center_start(&vm);
    double uptime = 1e9;
    size_t lines = before;
    for (end = chaos_now_ms() + 10000; chaos_now_ms() < end && spm_test_running(watch.pid);
         usleep(100000)) {
        int fd = open(watch.out_path, O_RDONLY);
        free(seen);
        seen = spm_test_slurp(fd);
        close(fd);
        lines = spm_test_lines(seen);
        last = seen;
        for (size_t i = 0; i + 1 < lines; i++)
            last = strchr(last, '\n') + 1;
        uptime = lines > before ? spm_test_json_num(last, "uptime_s") : 1e9;
        if (uptime >= 0 && uptime < old_uptime)
            break;
    }
    ck_assert_msg(spm_test_running(watch.pid), "status --watch ended at the restart: %s", seen);
    ck_assert_msg(uptime >= 0 && uptime < old_uptime,
                  "status --watch printed nothing of the new center (up %.1f s before): %s",
                  old_uptime, seen);
    fprintf(
        stderr,
        "restart: status --watch printed the old center up %.1f s, then the new one up %.1f s\n",
        old_uptime, uptime);
    free(seen);
    kill(watch.pid, SIGINT);
    char *err;
    int rc = spm_test_finish(&watch, 10, NULL, &err);
    ck_assert_msg(rc == 0, "status --watch interrupted: exit %d: %s", rc, err);
    free(err);
    ck_assert_int_eq(chaos_vm_stop(&vm), 0);
}
END_TEST

/*  A matmul alone whose SIs are made on demand, in its feed hook, when an
    IEU asks for work (policy r), adding each product into C as it commits
    (update): the center is killed twice while it runs. An SI made in a
    feed call leaves the center in the same turn; were it to leave before
    the feed call is in the journal, the restarted center would give its
    ids to another product while a node still kept what the first wrote,
    and C would come out wrong. */
START_TEST(matmul_fed_on_demand_survives_restarts)
{
    chaos_vm_t vm;
    chaos_vm_start(&vm, 3, 1000);
    chaos_job_t mm;
    chaos_matmul(&mm, vm.dir, 768, 11, "update", "r"); /* 218,880 SIs */
    long long ref = reference_run(&mm, vm.dir);
    const char *tail[] = {"--center", vm.ep, "--json", NULL};
    const char *argv[CHAOS_MAX_ARGS];
    char buf[CHAOS_MAX_ARGS][256];
    job_argv(&mm, vm.dir, "got", tail, argv, buf);
    spm_test_proc_t p = spm_test_start(argv);
    const double total = 218880;
    double at[2] = {0, 0};
    for (int k = 0; k < 2; k++) { /* at a fifth, then at half of the SIs */
        double want = total * (k ? 0.5 : 0.2);
        long long end = chaos_now_ms() + 60000;
        while (at[k] < want) {
            ck_assert_msg(chaos_now_ms() < end, "kill %d: the matmul made no progress", k + 1);
            usleep(20000);
            char *st = chaos_status(&vm);
            char entry[1024];
            const char *e = chaos_status_job(st, "matmul", entry, sizeof entry);
            at[k] = e ? spm_test_json_num(e, "committed") : 0;
            free(st);
        }
        chaos_kill_center(&vm);
        chaos_center_start(&vm);
    }
    char *out, *err;
    int rc = spm_test_finish(&p, 120, &out, &err);
    int same = same_outputs(&mm, vm.dir);
    int killed = chaos_vm_stop(&vm);
    fprintf(stderr,
            "restart: matmul fed on demand: undisturbed %.1f s; killed at %.0f and %.0f "
            "commits; committed %.0f, resumed %.0f, restarts %.0f\n",
            ref / 1e3, at[0], at[1], spm_test_json_num(out, "committed"),
            spm_test_json_num(out, "resumed"), spm_test_json_num(out, "restarts"));
    ck_assert_msg(rc == 0, "matmul failed (exit %d): %s", rc, err);
    ck_assert_msg(same, "C differs from the undisturbed run's");
    ck_assert_double_eq(spm_test_json_num(out, "committed"), total);
    ck_assert_double_eq(spm_test_json_num(out, "restarts"), 2);
    ck_assert_int_eq(killed, 0);
    free(out);
    free(err);
}
END_TEST

static Suite *restart_suite(void)
{
    Suite *s = suite_create("restart");
    const spm_test_case_t slow = {.timeout_s = 120};
    const spm_test_case_t c = {.timeout_s = 60};
    const spm_test_case_t refuse = {
        .timeout_s = 60, .setup = scratch_setup, .teardown = scratch_teardown};
    SPM_TEST_ADD(s, &slow, center_killed_three_times_while_three_jobs_run);
    SPM_TEST_ADD(s, &slow, matmul_fed_on_demand_survives_restarts);
    SPM_TEST_ADD_LOOP(s, &c, damaged_journal_keeps_its_intact_prefix, 0, 2);
    SPM_TEST_ADD(s, &c, agents_rejoin_within_a_second);
    SPM_TEST_ADD(s, &c, client_waiting_with_status_watch_survives);
    SPM_TEST_ADD(s, &refuse, refused_stores);
    return s;
}

SPM_TEST_MAIN(restart_suite)
