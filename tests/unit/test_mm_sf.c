/*  The matmul super-function driven through the real IDU in this process:
    IEUs are simulated (SIs run with spm_si_exec_local, in a random order
    among the IEUs, one or two at a time), so every policy and update
    method is checked against the reference without starting processes. */
#include "idu/idu.h"
#include "runtime/registry.h"
#include "runtime/si.h"
#include "isa/matrix/block.h"
#include "isa/matrix/raw.h"
#include "programs/matmul/cut.h"
#include "programs/matmul/job.h"
#include "tests/check_main.h"
#include "tests/ref/matmul_ref.h"

typedef struct {
    spm_sdb_t id;
    uint64_t version;
    void *data;
    size_t len;
    uint32_t node; /* the node of the IEU that wrote it */
} obj_t;

typedef struct {
    uint32_t ieu;
    spm_idu_si_t si;
} pending_t;

typedef struct {
    spm_idu_t *idu;
    obj_t *objs;
    size_t nobjs;
    pending_t pending[4096];
    size_t npending;
    int ended;
    uint64_t multiplies;
    uint64_t per_ieu[8];
    spm_sdb_t held[2][4096]; /* distinct operands each node's multiplies read */
    size_t nheld[2];
    size_t c_moves; /* multiplies that read a version of C written on the other node */
} sim_t;

static void obj_put(sim_t *s, spm_sdb_t id, uint64_t version, void *data, size_t len, uint32_t node)
{
    s->objs = realloc(s->objs, (s->nobjs + 1) * sizeof *s->objs);
    s->objs[s->nobjs++] = (obj_t){id, version, data, len, node};
}

static obj_t *obj_get(sim_t *s, spm_sdb_t id, uint64_t version)
{
    for (size_t i = 0; i < s->nobjs; i++)
        if (s->objs[i].id == id && s->objs[i].version == version)
            return &s->objs[i];
    return NULL;
}

static void emit(void *arg, uint32_t ieu, const spm_idu_si_t *si)
{
    sim_t *s = arg;
    ck_assert_uint_lt(s->npending, 4096);
    s->pending[s->npending++] = (pending_t){ieu, *si};
}

static void ended(void *arg, uint64_t job)
{
    (void)job;
    ((sim_t *)arg)->ended = 1;
}

typedef struct {
    sim_t *s;
    spm_sdb_t *grid;
    uint64_t *entries;
    uint32_t nbj;
} put_t;

static int put_block(void *arg, uint32_t bi, uint32_t bj, void *data, size_t len, uint64_t entries)
{
    put_t *p = arg;
    p->entries[(size_t)bi * p->nbj + bj] = entries;
    spm_sdb_t id = spm_idu_sdb_put(p->s->idu, spm_name_id("mm.raw"));
    obj_put(p->s, id, 1, data, len, 0);
    p->grid[(size_t)bi * p->nbj + bj] = id;
    return 0;
}

static void cut(sim_t *s, const double *a, uint32_t m, uint32_t n, uint32_t k, spm_sdb_t *grid,
                uint64_t *entries)
{
    spm_mm_cutter_t *c = spm_mm_cutter_new(m, n, k, k);
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++)
            ck_assert_int_eq(spm_mm_cutter_add(c, i, j, a[(size_t)i * n + j]), 0);
    put_t p = {s, grid, entries, spm_mm_nblocks(n, k)};
    ck_assert_int_eq(spm_mm_cutter_flush(c, put_block, &p), 0);
    spm_mm_cutter_destroy(&c);
}

/*  Runs one pending SI (chosen at random, IEU 0 three times less often
    when SLOW) and commits it. */
static void step(sim_t *s, uint64_t *rng, int slow)
{
    size_t at = ref_next(rng) % s->npending;
    if (slow && s->pending[at].ieu == 0 && ref_next(rng) % 3 != 0)
        at = ref_next(rng) % s->npending;
    pending_t p = s->pending[at];
    s->pending[at] = s->pending[--s->npending];
    const spm_opcode_t *op = spm_opcode_by_id(p.si.opcode);
    ck_assert_ptr_nonnull(op);
    spm_si_operand_t ops[SPM_MAX_OPERANDS];
    memset(ops, 0, p.si.nops * sizeof *ops);
    for (size_t i = 0; i < p.si.nops; i++) {
        const spm_idu_op_t *o = &p.si.ops[i];
        ops[i].mode = o->mode;
        if (o->mode == SPM_R || o->mode == SPM_RW) {
            obj_t *in = obj_get(s, o->sdb, o->mode == SPM_RW ? o->in_version : o->version);
            ck_assert_msg(in != NULL, "%s: operand %zu (sdb %llu) not there", op->name, i,
                          (unsigned long long)o->sdb);
            ops[i].in = in->data;
            ops[i].in_len = in->len;
        }
    }
    void *reply = NULL;
    size_t rlen = 0;
    int rc =
        spm_si_exec_local(op->name, ops, p.si.nops, p.si.params, p.si.params_len, &reply, &rlen);
    ck_assert_msg(rc == 0, "%s failed: %s", op->name, spm_error_detail());
    for (size_t i = 0; i < p.si.nops; i++)
        if (ops[i].mode != SPM_R)
            obj_put(s, p.si.ops[i].sdb, p.si.ops[i].version, ops[i].out, ops[i].out_len, p.ieu % 2);
    if (strcmp(op->name, "mm.multiply") == 0) {
        s->multiplies += (p.si.nops - 1) / 2; /* products */
        s->per_ieu[p.ieu] += (p.si.nops - 1) / 2;
        uint32_t node = p.ieu % 2;
        const spm_idu_op_t *c = &p.si.ops[p.si.nops - 1];
        if (c->mode == SPM_RW && obj_get(s, c->sdb, c->in_version)->node != node)
            s->c_moves++;
        for (size_t i = 0; i + 1 < p.si.nops; i++) {
            size_t h = 0;
            while (h < s->nheld[node] && s->held[node][h] != p.si.ops[i].sdb)
                h++;
            if (h == s->nheld[node] && h < 4096)
                s->held[node][s->nheld[node]++] = p.si.ops[i].sdb;
        }
    }
    ck_assert_ptr_nonnull(spm_idu_lookup(s->idu, p.ieu, p.si.id, p.si.attempt));
    spm_idu_commit_t c = {.reply = reply, .reply_len = rlen};
    spm_idu_commit(s->idu, p.ieu, p.si.id, &c);
    free(reply);
    spm_idu_ieu_pull(s->idu, p.ieu, 1);
    spm_idu_pump(s->idu);
}

/*  Products per multiply SI for the next run (0: the SF chooses). */
static uint32_t per_si;

/*  Operand blocks the nodes had to fetch in the last run (distinct blocks
    read by each node's multiplies, summed over the nodes). */
static size_t fetched;

/*  SIs each IEU holds at once in the next run: running, and asked for ahead. */
static uint32_t in_hand = 2;

/*  Multiplies of the last run that read a version of C from the other node. */
static size_t c_moves;

/*  C = A x B through the SF with NIEUS IEUs on two nodes; returns the
    relative error against the reference and the multiplies run. */
static double run(uint32_t m, uint32_t p, uint32_t n, uint32_t k, double density, int symmetric,
                  spm_mm_policy_t policy, spm_mm_update_t update, uint32_t nieus, int slow,
                  uint64_t *multiplies, uint64_t *per_ieu)
{
    sim_t s = {0};
    s.idu = spm_idu_new(emit, ended, &s);
    double *a = ref_random(m, p, density, 1000 + m, REF_REAL);
    double *b = ref_random(p, n, density, 2000 + n, REF_REAL);
    if (symmetric) {
        ref_symmetrize(m, a, REF_SYMMETRIC);
        ref_symmetrize(p, b, REF_SKEW);
    }
    spm_mm_job_t j = {.m = m,
                      .p = p,
                      .n = n,
                      .bm = k,
                      .bp = k,
                      .bn = k,
                      .policy = policy,
                      .update = update,
                      .per_si = per_si,
                      .seed = 9};
    ck_assert_int_eq(spm_mm_job_alloc(&j), 0);
    cut(&s, a, m, p, k, j.a, j.annz);
    cut(&s, b, p, n, k, j.b, j.bnnz);
    /* the products the SF must issue: only pairs of non-zero blocks */
    uint32_t ni = spm_mm_nblocks(m, k), nk = spm_mm_nblocks(p, k), nj = spm_mm_nblocks(n, k);
    uint64_t want = 0;
    for (uint32_t i = 0; i < ni; i++)
        for (uint32_t jj = 0; jj < nj; jj++)
            for (uint32_t kk = 0; kk < nk; kk++)
                want += j.a[(size_t)i * nk + kk] && j.b[(size_t)kk * nj + jj];
    void *args;
    size_t len;
    ck_assert_int_eq(spm_mm_job_encode(&j, &args, &len), 0);
    for (uint32_t w = 0; w < nieus; w++)
        spm_idu_ieu_join(s.idu, w % 2, 1);
    uint64_t job;
    ck_assert_int_eq(spm_idu_submit(s.idu, "matmul", args, len, 0, &job), 0);
    for (uint32_t w = 0; w < nieus; w++)
        spm_idu_ieu_pull(s.idu, w, in_hand);
    spm_idu_pump(s.idu);
    uint64_t rng = 77;
    while (!s.ended && s.npending)
        step(&s, &rng, slow);
    spm_idu_job_info_t info;
    ck_assert_int_eq(spm_idu_job_info(s.idu, job, &info), 0);
    ck_assert_msg(info.state == 1, "job not done (state %d, %s, %zu pending)", info.state,
                  info.error ? info.error : "", s.npending);
    spm_sdb_t *ids = calloc((size_t)ni * nj, sizeof *ids);
    ck_assert_int_eq(spm_mm_result_decode(info.result, info.result_len, ni, nj, ids), 0);
    double *c = calloc((size_t)m * n, sizeof(double));
    for (uint32_t i = 0; i < ni; i++)
        for (uint32_t jj = 0; jj < nj; jj++) {
            spm_sdb_t id = ids[(size_t)i * nj + jj];
            if (!id)
                continue;
            uint32_t type;
            obj_t *o = obj_get(&s, id, spm_idu_sdb_version(s.idu, id, &type));
            ck_assert_ptr_nonnull(o);
            spm_mm_block_t *blk = NULL;
            ck_assert_int_eq(spm_mm_block_decode(o->data, o->len, &blk), 0);
            for (uint32_t r = 0; r < blk->m.rows; r++)
                for (uint32_t q = 0; q < blk->m.cols; q++) {
                    double v = 0;
                    if (blk->m.kind == SPM_MM_DENSE)
                        v = blk->val[(size_t)r * blk->m.cols + q];
                    c[((size_t)i * k + r) * n + (size_t)jj * k + q] = v;
                }
            if (blk->m.kind == SPM_MM_CSR)
                for (uint32_t r = 0; r < blk->m.rows; r++)
                    for (uint32_t q = blk->rowptr[r]; q < blk->rowptr[r + 1]; q++)
                        c[((size_t)i * k + r) * n + (size_t)jj * k + blk->colidx[q]] = blk->val[q];
            spm_mm_block_destroy(&blk);
        }
    double *r = ref_matmul(m, p, n, a, b);
    double err = ref_rel_err(m, n, c, r);
    ck_assert_uint_eq(s.multiplies, want);
    if (multiplies)
        *multiplies = s.multiplies;
    if (per_ieu)
        memcpy(per_ieu, s.per_ieu, sizeof s.per_ieu);
    fetched = s.nheld[0] + s.nheld[1];
    c_moves = s.c_moves;
    free(r);
    free(c);
    free(ids);
    free(args);
    spm_mm_job_free(&j);
    free(a);
    free(b);
    for (size_t i = 0; i < s.nobjs; i++)
        free(s.objs[i].data);
    free(s.objs);
    spm_idu_destroy(&s.idu);
    return err;
}

/*  What a cutter handed over, each block as the typed block it stands for
    (a raw one decoded), in the order they came. */
typedef struct {
    uint32_t bi[16], bj[16];
    uint64_t entries[16];
    int raw[16];
    void *data[16];
    size_t len[16], n;
} handed_t;

static int keep_block(void *arg, uint32_t bi, uint32_t bj, void *data, size_t len, uint64_t entries)
{
    handed_t *h = arg;
    ck_assert_uint_lt(h->n, 16);
    spm_mm_block_t *b = NULL;
    h->raw[h->n] = spm_mm_raw_is(data, len);
    ck_assert_int_eq(
        h->raw[h->n] ? spm_mm_raw_to_block(data, len, &b) : spm_mm_block_decode(data, len, &b), 0);
    ck_assert_int_eq(spm_mm_block_encode(b, &h->data[h->n], &h->len[h->n]), 0);
    spm_mm_block_destroy(&b);
    free(data);
    h->bi[h->n] = bi;
    h->bj[h->n] = bj;
    h->entries[h->n++] = entries;
    return 0;
}

/*  An array file's tiles are filled in place (spm_mm_cutter_dense): the
    VM gets the same blocks, typed or raw alike, as from entries cut one
    by one. A 12 x 12 matrix in tiles of 6: the first full, the last with
    two entries (raw), the others empty; entries come column by column,
    as an array file has them, zeros included. */
START_TEST(dense_cutter_hands_over_what_entries_make)
{
    double a[144] = {0};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            a[i * 12 + j] = 1.5 + i - 2.25 * j;
    a[8 * 12 + 11] = 7;
    a[11 * 12 + 6] = -1e-300;
    handed_t h[2] = {{.n = 0}, {.n = 0}};
    for (int d = 0; d < 2; d++) {
        spm_mm_cutter_t *c = spm_mm_cutter_new(12, 12, 6, 6);
        if (d)
            ck_assert_int_eq(spm_mm_cutter_dense(c), 0);
        for (uint32_t j = 0; j < 12; j++)
            for (uint32_t i = 0; i < 12; i++)
                ck_assert_int_eq(spm_mm_cutter_add(c, i, j, a[i * 12 + j]), 0);
        ck_assert_uint_eq(spm_mm_cutter_entries(c), 37);
        ck_assert_int_eq(spm_mm_cutter_flush(c, keep_block, &h[d]), 0);
        spm_mm_cutter_destroy(&c);
    }
    ck_assert_uint_eq(h[0].n, 2);
    ck_assert_uint_eq(h[1].n, 2);
    for (size_t k = 0; k < 2; k++) {
        ck_assert_uint_eq(h[0].bi[k], h[1].bi[k]);
        ck_assert_uint_eq(h[0].bj[k], h[1].bj[k]);
        ck_assert_uint_eq(h[0].entries[k], h[1].entries[k]);
        ck_assert_int_eq(h[0].raw[k], h[1].raw[k]);
        ck_assert_uint_eq(h[0].len[k], h[1].len[k]);
        ck_assert_mem_eq(h[0].data[k], h[1].data[k], h[0].len[k]);
        free(h[0].data[k]);
        free(h[1].data[k]);
    }
    ck_assert_int_eq(h[0].raw[0], 0); /* the full tile typed */
    ck_assert_int_eq(h[0].raw[1], 1); /* two entries of 36: raw */
}
END_TEST

START_TEST(every_policy_and_update)
{
    static const uint32_t per[] = {1, 3, 0};
    for (int pol = SPM_MM_SYN; pol <= SPM_MM_SS; pol++)
        for (int up = SPM_MM_WRITE; up <= SPM_MM_MIXTURE; up++)
            for (size_t x = 0; x < 3; x++) {
                per_si = per[x];
                double err = run(70, 50, 45, 16, 0.3, 0, (spm_mm_policy_t)pol, (spm_mm_update_t)up,
                                 3, 0, NULL, NULL);
                ck_assert_msg(err < 1e-12, "%s/%s/%u: error %g", spm_mm_policy_name(pol),
                              spm_mm_update_name(up), per_si, err);
            }
}
END_TEST

START_TEST(sparse_symmetric_shapes)
{
    per_si = 0;
    /* sparse enough that whole blocks are empty */
    ck_assert(run(90, 90, 90, 10, 0.004, 1, SPM_MM_SS, SPM_MM_WRITE, 2, 0, NULL, NULL) < 1e-12);
    ck_assert(run(90, 90, 90, 10, 0.004, 1, SPM_MM_R, SPM_MM_DISTRIBUTED, 2, 0, NULL, NULL) <
              1e-12);
    /* tall times wide, and a single block */
    ck_assert(run(100, 3, 80, 32, 0.5, 0, SPM_MM_SR, SPM_MM_MIXTURE, 4, 0, NULL, NULL) < 1e-12);
    ck_assert(run(5, 6, 7, 64, 1.0, 0, SPM_MM_S, SPM_MM_UPDATE, 1, 0, NULL, NULL) < 1e-12);
    /* nothing to multiply: C is all zero */
    ck_assert(run(20, 20, 20, 8, 0.0, 0, SPM_MM_SS, SPM_MM_WRITE, 2, 0, NULL, NULL) == 0.0);
}
END_TEST

/*  With one IEU slowed 3:1, a dynamic policy gives the fast IEUs more
    products; the static one gives everyone the same share. */
START_TEST(dynamic_balances)
{
    uint64_t dyn[8], stat[8], total;
    per_si = 0; /* one SI per group: the static plan is exact */
    ck_assert(run(64, 64, 64, 8, 1.0, 0, SPM_MM_S, SPM_MM_WRITE, 2, 1, &total, stat) < 1e-12);
    ck_assert_uint_eq(stat[0], stat[1]);
    per_si = 1;
    ck_assert(run(64, 64, 64, 8, 1.0, 0, SPM_MM_SS, SPM_MM_WRITE, 2, 1, &total, dyn) < 1e-12);
    ck_assert(run(64, 64, 64, 8, 1.0, 0, SPM_MM_S, SPM_MM_WRITE, 2, 1, &total, stat) < 1e-12);
    ck_assert_uint_eq(stat[0], stat[1]);
    ck_assert_uint_lt(dyn[0] * 3, dyn[1] * 2);
}
END_TEST

/*  The smart policies pick task groups whose blocks the node already
    holds, so the nodes fetch fewer blocks than under the random policy. */
START_TEST(smart_policies_reuse_blocks)
{
    per_si = 1;
    size_t f[5];
    for (int pol = SPM_MM_S; pol <= SPM_MM_SS; pol++) {
        ck_assert(run(192, 192, 192, 16, 1.0, 0, (spm_mm_policy_t)pol, SPM_MM_WRITE, 4, 0, NULL,
                      NULL) < 1e-12);
        f[pol] = fetched;
    }
    fprintf(stderr, "blocks fetched: s %zu r %zu sr %zu ss %zu\n", f[SPM_MM_S], f[SPM_MM_R],
            f[SPM_MM_SR], f[SPM_MM_SS]);
    ck_assert_uint_lt(f[SPM_MM_SS], f[SPM_MM_R]);
    ck_assert_uint_lt(f[SPM_MM_SR], f[SPM_MM_R]);
}
END_TEST

/*  A version of C is ten times an operand block on the wire. An IEU that
    holds SIs ahead asks for work while its own chains of products run;
    taking the next product of another IEU's chain then moved C to it and
    back with every product the two took in turn. Now an IEU takes over a
    begun chain only when it has none of its own left, and keeps it. */
START_TEST(chains_of_products_stay_on_their_node)
{
    per_si = 1;
    in_hand = 8; /* as a real IEU of short SIs holds */
    for (int pol = SPM_MM_R; pol <= SPM_MM_SS; pol++) {
        uint64_t total;
        ck_assert(run(192, 192, 192, 16, 1.0, 0, (spm_mm_policy_t)pol, SPM_MM_WRITE, 4, 0, &total,
                      NULL) < 1e-12);
        fprintf(stderr, "policy %d: %zu of %llu products read C from the other node\n", pol,
                c_moves, (unsigned long long)total);
        ck_assert_uint_le(c_moves * 50, total);
    }
    in_hand = 2;
}
END_TEST

static Suite *mm_sf_suite(void)
{
    Suite *s = suite_create("mm_sf");
    const spm_test_case_t c = {.timeout_s = 60};
    SPM_TEST_ADD(s, &c, every_policy_and_update);
    SPM_TEST_ADD(s, &c, sparse_symmetric_shapes);
    SPM_TEST_ADD(s, &c, dynamic_balances);
    SPM_TEST_ADD(s, &c, smart_policies_reuse_blocks);
    SPM_TEST_ADD(s, &c, chains_of_products_stay_on_their_node);
    SPM_TEST_ADD(s, &c, dense_cutter_hands_over_what_entries_make);
    return s;
}

SPM_TEST_MAIN(mm_sf_suite)
