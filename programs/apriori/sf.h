/*  =========================================================================
    sf - the state the apriori program's super-functions share (internal)

    @header
    The root owns one spm_apriori_job_t per job; every child SF gets a
    pointer to it in its (copied) arguments. The level-wise SFs live in
    sf.c, the depth-first miner's SF in eclat.c; both fill the same levels,
    so the rules and the result are built the same way whichever found the
    itemsets. SFs run in the center's single thread: no locks.
    @end
    =========================================================================
*/
#ifndef SPM_APRIORI_SF_H_INCLUDED
#define SPM_APRIORI_SF_H_INCLUDED

#include "isa/mining/isa.h"
#include "programs/apriori/apriori.h"

#define MAX_OPS 256 /* SPM_MAX_OPERANDS */

enum {
    TAG_INITIAL = 1,
    TAG_CAND,
    TAG_FREQ,
    TAG_RULES,
    TAG_SHRINK,
    TAG_FITEMS,
    TAG_FSET,
    TAG_PRUNE,
    TAG_ECLAT,
    TAG_CLASS,
    TAG_CUT,
    TAG_LOAD
};
#define TAG(kind, n) ((uint64_t)(kind) << 32 | (uint32_t)(n))
#define TAG_KIND(t) ((uint32_t)((t) >> 32))
#define TAG_N(t) ((uint32_t)(t))

typedef struct {
    spm_sdb_t *id;                  /* BlockOfFrequentSet blocks, in order */
    spm_mining_fsets_reply_t *info; /* what each block's reply said */
    uint32_t n;                     /* blocks */
    size_t cap;                     /* entries of id and info */
    uint64_t sets;                  /* frequent sets of this length */
} spm_apriori_level_t;

typedef struct {
    spm_apriori_args_t a;
    spm_sdb_t *raw;         /* loaded transaction blocks (per staged block) */
    uint32_t *raw_node;     /* the node that loaded each, and so holds it */
    uint32_t loaded;        /* load replies so far */
    uint32_t domain;        /* one more than the largest item loaded */
    spm_sdb_t fitems;       /* the frequent items */
    uint32_t f1;            /* how many */
    spm_sdb_t *trans;       /* shrunk transaction blocks (per staged block) */
    uint32_t *trans_n;      /* their transactions, from replies */
    uint64_t ntrans_shrunk; /* all of them */
    uint32_t shrunk;        /* shrink replies so far */
    spm_sdb_t *tlist;       /* non-empty transaction blocks after merging */
    uint32_t ntlist;
    spm_apriori_level_t *lv; /* lv[k - 1]: frequent k-itemsets */
    uint32_t nlv;
    spm_sdb_t *cands; /* join blocks of the stage being generated */
    uint32_t ncands, capcands;
    spm_sdb_t *rules; /* every CheckConfidenceInBlock output */
    uint32_t *rule_n; /* its rules, from its reply (UINT32_MAX: not heard) */
    uint32_t *rule_k; /* the length of its sets X u Y */
    uint32_t nrules, caprules;
    uint64_t rule_bytes; /* encoded bytes of the rules replied so far */
    spm_sdb_t *classes;  /* depth first, itemsets only: blocks in item order */
    uint32_t nclasses;
    int stage;     /* initial or a gen_frequentSet is running */
    uint32_t live; /* children of the root not yet finished */
} spm_apriori_job_t;

typedef struct {
    spm_apriori_job_t *job;
    uint32_t k;
} spm_apriori_child_t;

/*  Issues OPCODE on the N operands OPS with PARAMS (may be NULL) and TAG;
    fails the job on error. Returns 0 or the SPM_E* of spm_sf_issue. */
int spm_apriori_issue(spm_sf_t *sf, const char *opcode, const spm_operand_t *ops, size_t n,
                      const spm_buf_t *params, uint64_t tag);

/*  The job a child SF was started for (ARGS is a spm_apriori_child_t),
    made the SF's state; *K (if not NULL) gets its level. NULL on bad args. */
spm_apriori_job_t *spm_apriori_child_job(spm_sf_t *sf, const void *args, size_t len, uint32_t *k);

/*  Fails the job when R says an SI or child failed; returns R's status. */
int spm_apriori_check(spm_sf_t *sf, const spm_result_t *r);

/*  Adds an empty level to JOB. Returns 0 or SPM_ENOMEM. */
int spm_apriori_add_level(spm_apriori_job_t *job);

/*  Fails the job: the frequent K-itemsets need more blocks than an SI
    can read (MAX_OPS - 1). */
void spm_apriori_fail_span(spm_sf_t *sf, uint32_t k);

/*  Whether SPM_APRIORI_AUTO mines JOB depth first (eclat.c says why). */
int spm_apriori_auto_eclat(const spm_apriori_job_t *job);

/*  The depth-first miner (eclat.c): started by the root after the initial
    stage, it fills levels 2.. of the job and finishes; args as a child. */
extern const spm_sf_class_t spm_apriori_eclat_class;

/*  Bytes of rules one block should hold at most (SPM_APRIORI_RULE_BYTES): find_rules
    cuts its blocks by it, and the root gathers them by it. */
static inline uint64_t spm_apriori_rule_bytes(const spm_apriori_job_t *job)
{
    return job->a.join_cap < 65536 ? (uint64_t)job->a.join_cap * 64 : SPM_APRIORI_RULE_BYTES;
}

/*  Encoded bytes of N rules made from k-sets: 24 + 4k each. */
static inline uint64_t spm_apriori_rules_size(uint64_t n, uint32_t k)
{
    return n * (24 + 4 * (uint64_t)k);
}

/*  gen_candidate (sf_candidate.c) and find_rules (sf_rules.c), spawned by
    the root with a spm_apriori_child_t: the job and the level k. */
extern const spm_sf_class_t spm_apriori_gen_candidate_class;
extern const spm_sf_class_t spm_apriori_find_rules_class;

#endif
