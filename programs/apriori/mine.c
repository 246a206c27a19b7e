/*  =========================================================================
    mine - `spm mine`: association rules from a transaction file

    The client cuts the file into blocks of --block whole lines and stages
    each (spm_session_put_async): as text (BlockOfText) for a remote center,
    since a cluster has no shared file system, or, for an embedded VM and a
    regular file, as where the block's lines lie in the file
    (BlockOfFileLines), which its IEUs read in place. With --names the
    client numbers the items itself and stages raw BlockOfTransaction
    blocks. The file is never held whole in memory. The apriori program
    then starts from the staged blocks (LoadDataBlock parses and normalizes
    each), and the results come back by id. Both output files are written
    through spm_outfile_t (written aside and renamed into place), so a
    failure leaves no partial output behind. A file named *.npz (or any,
    with --format npz) gets the results as columns of NumPy arrays
    (columns.h).
    =========================================================================
*/
#include "programs/apriori/cmd.h"
#include "base/checksum.h"
#include "isa/core/extsort.h"
#include "base/textio.h"
#include "isa/mining/isa.h"
#include "programs/apriori/apriori.h"
#include "programs/apriori/columns.h"
#include "programs/apriori/output.h"
#include "programs/apriori/reader.h"
#include "base/cli.h"
#include "vm/client/session.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: spm mine FILE --min-support S [options]\n"
    "\n"
    "Mines frequent itemsets and association rules X => Y from FILE, one\n"
    "transaction per line (FIMI format: non-negative integer items separated\n"
    "by spaces or tabs; CRLF accepted; a repeated item counts once; an empty\n"
    "line is an empty transaction; '-' reads stdin).\n"
    "\n"
    "  --min-support S      minimum support: a percentage of the transactions\n"
    "                       (0.6%), a fraction below 1 (0.006) or an absolute\n"
    "                       count (500); must be in (0, 100%]\n"
    "  --min-confidence C   minimum confidence, 80% or 0.8 (default 80%)\n"
    "  -o, --output FILE    rules file (default: stdout; never FILE itself, nor a\n"
    "                       link to it); a name ending in .npz gets the npz format\n"
    "  --itemsets FILE      also write the frequent itemsets to FILE (.npz: npz)\n"
    "  --itemsets-only      find the frequent itemsets alone, no rules; they go to\n"
    "                       --itemsets FILE, else stdout (-o is refused)\n"
    "  --max-length N       longest itemset, and so rule, to find (default: any)\n"
    "  --algorithm A        apriori (level by level), eclat (depth first per\n"
    "                       prefix class) or auto (default: the one that suits\n"
    "                       the data); the output is the same\n"
    "  --format F           text (default), csv, json, or npz: columns of NumPy\n"
    "                       arrays in one .npz, which numpy.load reads (itemsets:\n"
    "                       items, offsets, support; rules: antecedent,\n"
    "                       antecedent_offsets, consequent, consequent_offsets,\n"
    "                       support, confidence, lift; docs/MINING.md); npz\n"
    "                       needs a file, not stdout\n"
    "  --block N            transactions (lines) per block, the unit the IEUs\n"
    "                       parse and count in parallel (default 5000)\n"
    "  --max-consequent N   longest rule consequent (default: any length)\n"
    "  --names              items are arbitrary words, not numbers; they are\n"
    "                       printed back as read (in CSV, item fields are quoted)\n"
    "  -h, --help           this help\n"
    "\n"
    "Support of a rule is the support of X u Y; confidence is s(X u Y) / s(X);\n"
    "lift is confidence / (s(Y) / transactions). Output is sorted: itemsets by\n"
    "length, then items; rules by antecedent, then consequent. In the text\n"
    "format header lines start with '#', an itemset line is its items then\n"
    "(support), a rule line is 'X => Y (support, confidence, lift)'. With --json\n"
    "the job report goes to stdout, so the rules need -o FILE.\n"
    "\n"
    "Results past 32 MiB are sorted through temporary files in $TMPDIR (else\n"
    "/tmp). A job whose rules would not fit there (nor, with an embedded VM, in\n"
    "its store under /tmp) stops as soon as it has found that many, saying so.\n"
    "\n"
    "Run options:\n";

typedef struct {
    const char *input, *output, *itemsets;
    double support; /* fraction of transactions, or -1 when absolute */
    uint64_t count; /* absolute support when support < 0 */
    double minconf; /* fraction */
    spm_mine_format_t format;
    int format_set; /* --format given (else a file's name decides: .npz) */
    long block, maxcons, maxlen;
    int names, itemsets_only;
    spm_apriori_algorithm_t algorithm;
} opts_t;

/*  Parses S as "P%" (percent), a fraction in (0, 1), or an integer count. */
static int parse_support(const char *s, opts_t *o)
{
    size_t n = strlen(s);
    double v;
    if (n > 1 && s[n - 1] == '%') {
        char num[64];
        if (n >= sizeof num)
            return spm_error(SPM_EINVAL, "--min-support: '%s' is not a number", s);
        memcpy(num, s, n - 1);
        num[n - 1] = '\0';
        if (spm_parse_double("--min-support", num, -1e300, 1e300, &v) != 0)
            return SPM_EINVAL;
        if (!(v > 0 && v <= 100))
            return spm_error(SPM_EINVAL, "--min-support: %s is outside (0, 100%%]", s);
        o->support = v / 100;
        return 0;
    }
    if (strspn(s, "0123456789") == n && n > 0) {
        long c;
        if (spm_parse_long("--min-support", s, 0, 0x7fffffffffffffffL, &c) != 0)
            return SPM_EINVAL;
        if (c == 0)
            return spm_error(SPM_EINVAL, "--min-support: 0 is outside (0, 100%%]");
        o->support = -1;
        o->count = (uint64_t)c;
        return 0;
    }
    if (spm_parse_double("--min-support", s, -1e300, 1e300, &v) != 0)
        return SPM_EINVAL;
    if (!(v > 0 && v <= 1))
        return spm_error(SPM_EINVAL,
                         "--min-support: %s is outside (0, 100%%] (a count must be an integer)", s);
    o->support = v;
    return 0;
}

static int parse_confidence(const char *s, double *out)
{
    size_t n = strlen(s);
    double v, scale = 1;
    char num[64];
    if (n == 0 || n >= sizeof num)
        return spm_error(SPM_EINVAL, "--min-confidence: '%s' is not a number", s);
    memcpy(num, s, n + 1);
    if (num[n - 1] == '%') {
        num[n - 1] = '\0';
        scale = 100;
    }
    if (spm_parse_double("--min-confidence", num, -1e300, 1e300, &v) != 0)
        return SPM_EINVAL;
    v /= scale;
    if (!(v >= 0 && v <= 1))
        return spm_error(SPM_EINVAL, "--min-confidence: %s is outside [0, 100%%]", s);
    *out = v;
    return 0;
}

/*  The absolute minimum support for N transactions: ceil(fraction * N),
    with a tolerance so that 0.6% of 100000 is 600, not 601; at least 1. */
static uint64_t min_count(const opts_t *o, uint64_t n)
{
    if (o->support < 0)
        return o->count;
    double c = ceil(o->support * (double)n - 1e-9 * (double)(n + 1));
    return c < 1 ? 1 : (uint64_t)c;
}

/*  A raw block being filled from the file. */
typedef struct {
    spm_mining_trans_t t;
    size_t icap;
} staging_t;

static int stage_add(staging_t *b, const uint32_t *items, size_t n, long block)
{
    spm_mining_trans_t *t = &b->t;
    if (!t->off) {
        t->off = malloc(((size_t)block + 1) * 4);
        t->weight = malloc(((size_t)block + 1) * 4);
        if (!t->off || !t->weight)
            return spm_error(SPM_ENOMEM, "out of memory");
        t->off[0] = 0;
    }
    size_t used = t->off[t->n];
    if (n > SPM_MINING_MAX_ENTRIES || used + n > SPM_MINING_MAX_ENTRIES)
        return spm_error(SPM_ERANGE, "over %u items in one block; use a smaller --block",
                         SPM_MINING_MAX_ENTRIES);
    if (used + n > b->icap) {
        size_t cap = (used + n) * 2;
        uint32_t *v = realloc(t->items, cap * 4);
        if (!v)
            return spm_error(SPM_ENOMEM, "out of memory");
        t->items = v;
        b->icap = cap;
    }
    memcpy(t->items + used, items, n * 4);
    t->weight[t->n] = 1;
    t->off[t->n + 1] = (uint32_t)(used + n);
    t->n++;
    return 0;
}

/*  Puts the encoded block DATA (LEN bytes, freed here) of TYPE into the
    store and appends its id to the N of *IDS (room for CAP). */
static int stage_put(spm_session_t *s, const char *type, void *data, size_t len, spm_sdb_t **ids,
                     uint32_t *n, uint32_t *cap)
{
    int rc;
    if (*n == *cap) {
        uint32_t c = *cap ? *cap * 2 : 64;
        spm_sdb_t *v = NULL;
        /* puts in flight write into *IDS: answer them before it moves */
        if ((rc = spm_session_put_flush(s)) != 0 || !(v = realloc(*ids, c * sizeof *v))) {
            free(data);
            return rc ? rc : spm_error(SPM_ENOMEM, "out of memory");
        }
        *ids = v;
        *cap = c;
    }
    rc = spm_session_put_async(s, type, data, len, &(*ids)[*n]);
    free(data);
    if (rc == 0)
        (*n)++;
    return rc;
}

/*  Puts the staged block (if any) into the store and appends its id. */
static int stage_flush(spm_session_t *s, staging_t *b, spm_sdb_t **ids, uint32_t *n, uint32_t *cap)
{
    if (b->t.n == 0)
        return 0;
    void *data;
    size_t len;
    int rc = spm_mining_trans_encode(&b->t, &data, &len);
    if (rc != 0)
        return spm_error(rc, "out of memory");
    b->t.n = 0;
    return stage_put(s, SPM_MINING_TRANS, data, len, ids, n, cap);
}

/*  The format of output file PATH: --format's, else npz for a name ending
    in .npz, else text. */
static spm_mine_format_t file_format(const opts_t *o, const char *path)
{
    size_t n = strlen(path);
    if (o->format_set)
        return o->format;
    return n >= 4 && strcmp(path + n - 4, ".npz") == 0 ? SPM_MINE_NPZ : SPM_MINE_TEXT;
}

/*  Writes the rules (SETS: the itemsets) of OUT to F in the format its
    name asks for. */
static int write_output(spm_outfile_t *f, const char *path, spm_mine_out_t *out, const opts_t *o,
                        int sets)
{
    spm_mine_format_t format = file_format(o, path);
    int rc;
    if (format == SPM_MINE_NPZ)
        rc = sets ? spm_mine_write_itemsets_npz(f, out) : spm_mine_write_rules_npz(f, out);
    else
        rc = sets ? spm_mine_write_itemsets(spm_outfile_stream(f), out, format)
                  : spm_mine_write_rules(spm_outfile_stream(f), out, format);
    return spm_outfile_failure(f, rc); /* "rules.txt: No space left on device" */
}

static int parse_args(int argc, char **argv, opts_t *o, spm_run_opts_t *ro, int *exit_code)
{
    static const struct option longopts[] = {{"min-support", required_argument, 0, 's'},
                                             {"min-confidence", required_argument, 0, 'c'},
                                             {"output", required_argument, 0, 'o'},
                                             {"itemsets", required_argument, 0, 'i'},
                                             {"format", required_argument, 0, 'f'},
                                             {"block", required_argument, 0, 'b'},
                                             {"max-consequent", required_argument, 0, 'm'},
                                             {"names", no_argument, 0, 'n'},
                                             {"itemsets-only", no_argument, 0, 'I'},
                                             {"max-length", required_argument, 0, 'L'},
                                             {"algorithm", required_argument, 0, 'A'},
                                             {"help", no_argument, 0, 'h'},
                                             SPM_RUN_LONGOPTS,
                                             {0, 0, 0, 0}};
    int c, have_support = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 's':
            rc = parse_support(optarg, o);
            have_support = 1;
            break;
        case 'c':
            rc = parse_confidence(optarg, &o->minconf);
            break;
        case 'o':
            o->output = optarg;
            break;
        case 'i':
            o->itemsets = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "text") == 0)
                o->format = SPM_MINE_TEXT;
            else if (strcmp(optarg, "csv") == 0)
                o->format = SPM_MINE_CSV;
            else if (strcmp(optarg, "json") == 0)
                o->format = SPM_MINE_JSON;
            else if (strcmp(optarg, "npz") == 0)
                o->format = SPM_MINE_NPZ;
            else
                rc = spm_error(SPM_EINVAL, "--format: '%s' is not text, csv, json or npz", optarg);
            o->format_set = 1;
            break;
        case 'b':
            rc = spm_parse_long("--block", optarg, 1, SPM_MINING_MAX_ENTRIES, &o->block);
            break;
        case 'm':
            rc = spm_parse_long("--max-consequent", optarg, 1, SPM_MINING_MAX_K, &o->maxcons);
            break;
        case 'n':
            o->names = 1;
            break;
        case 'I':
            o->itemsets_only = 1;
            break;
        case 'L':
            rc = spm_parse_long("--max-length", optarg, 1, SPM_MINING_MAX_K, &o->maxlen);
            break;
        case 'A':
            if (strcmp(optarg, "auto") == 0)
                o->algorithm = SPM_APRIORI_AUTO;
            else if (strcmp(optarg, "apriori") == 0)
                o->algorithm = SPM_APRIORI_LEVELWISE;
            else if (strcmp(optarg, "eclat") == 0)
                o->algorithm = SPM_APRIORI_ECLAT;
            else
                rc = spm_error(SPM_EINVAL, "--algorithm: '%s' is not apriori, eclat or auto",
                               optarg);
            break;
        case 'h':
            fputs(usage, stdout);
            fputs(spm_run_opts_help, stdout);
            *exit_code = 0;
            return 1;
        case '?':
            *exit_code = spm_cli_usage("mine", "bad option");
            return 1;
        default:
            rc = spm_run_opts_set(ro, c, optarg);
        }
        if (rc != 0) { /* a bad value is a usage error: exit 2, as a bad option */
            *exit_code = spm_cli_usage("mine", "%s", spm_error_detail());
            return 1;
        }
    }
    if (optind + 1 != argc) {
        *exit_code = spm_cli_usage("mine", optind >= argc ? "no transaction file given"
                                                          : "more than one transaction file");
        return 1;
    }
    if (!have_support) {
        *exit_code = spm_cli_usage("mine", "--min-support is required");
        return 1;
    }
    if (o->itemsets_only && o->output) {
        *exit_code = spm_cli_usage(
            "mine",
            "--itemsets-only writes no rules: give the itemsets with --itemsets FILE, not -o");
        return 1;
    }
    if (ro->json && o->itemsets_only && (!o->itemsets || strcmp(o->itemsets, "-") == 0)) {
        *exit_code =
            spm_cli_usage("mine", "--json prints the report on stdout: give --itemsets FILE");
        return 1;
    }
    if (ro->json && !o->itemsets_only && (!o->output || strcmp(o->output, "-") == 0)) {
        *exit_code = spm_cli_usage("mine", "--json prints the report on stdout: give -o FILE");
        return 1;
    }
    const char *sets = o->itemsets ? o->itemsets : o->itemsets_only ? "-" : NULL;
    const char *rules = o->itemsets_only ? NULL : o->output ? o->output : "-";
    if ((rules && strcmp(rules, "-") == 0 && file_format(o, rules) == SPM_MINE_NPZ) ||
        (sets && strcmp(sets, "-") == 0 && file_format(o, sets) == SPM_MINE_NPZ)) {
        *exit_code = spm_cli_usage("mine", "npz is written to files, not stdout: give %s FILE",
                                   rules && strcmp(rules, "-") == 0 ? "-o" : "--itemsets");
        return 1;
    }
    o->input = argv[optind];
    return 0;
}

/*  Bytes of text a staged block holds, at most (and one line more). */
#define TEXT_BYTES ((size_t)16 << 20)

/*  Cuts the FIMI file of IN into text blocks of o->block lines and stages
    them: LoadDataBlock parses them on the IEUs, in parallel, where the
    client alone once parsed the whole file (T25I10D100K: about 30 of the
    command's 130 ms, with both IEUs idle). */
static int stage_text(spm_session_t *s, spm_lines_t *in, const opts_t *o, spm_apriori_args_t *a)
{
    const char *name = spm_lines_path(in); /* "stdin" for "-" */
    size_t namelen = strlen(name), lines;
    spm_mining_text_t t = {.first = 1,
                           .name = name,
                           .namelen =
                               namelen < SPM_MINING_NAME_MAX ? namelen : SPM_MINING_NAME_MAX};
    /* An embedded VM's IEUs read a regular file where it lies: only where
       its blocks' lines are is staged, not the lines (T25I10D100K at 0.6%,
       whole command, medians of 15: 119.6 -> 112.6 ms). */
    struct stat st;
    char *path = spm_session_local_files(s) && strcmp(o->input, "-") != 0 &&
                         stat(o->input, &st) == 0 && S_ISREG(st.st_mode)
                     ? realpath(o->input, NULL)
                     : NULL;
    if (path && strlen(path) > SPM_MINING_NAME_MAX) {
        free(path); /* staged as text */
        path = NULL;
    }
    /* the file as opened: an IEU that finds it otherwise fails the job */
    const spm_file_stamp_t *opened = spm_lines_stamp(in);
    spm_file_stamp_t stamp = opened ? *opened : (spm_file_stamp_t){0};
    if (path && !opened) {
        free(path); /* no regular file after all: staged as text */
        path = NULL;
    }
    uint64_t offset = 0;
    uint32_t cap = 0;
    int rc;
    while ((rc = spm_lines_chunk(in, (size_t)o->block, TEXT_BYTES, &t.text, &t.len, &lines)) == 1) {
        void *data;
        size_t len;
        t.nlines = (uint32_t)lines;
        spm_mining_file_t f = {.first = t.first,
                               .nlines = t.nlines,
                               .offset = offset,
                               .len = t.len,
                               .pathlen = path ? (uint32_t)strlen(path) : 0,
                               .path = path,
                               .namelen = t.namelen,
                               .name = t.name,
                               .stamp = stamp,
                               .sum = path ? spm_checksum(t.text, t.len) : 0};
        if ((rc = path ? spm_mining_file_encode(&f, &data, &len)
                       : spm_mining_text_encode(&t, &data, &len)) != 0 ||
            (rc = stage_put(s, path ? SPM_MINING_FILE : SPM_MINING_TEXT, data, len, &a->staged,
                            &a->nstaged, &cap)) != 0)
            break;
        t.first += lines;
        offset += t.len;
        a->ntrans += lines;
    }
    free(path);
    int done = spm_session_put_flush(s);
    /* lines cut from a file that changed meanwhile may belong to two files */
    if (rc == 0 && done == 0)
        rc = spm_lines_unchanged(in);
    return rc ? rc : done;
}

/*  Streams the named items of R into staged transaction blocks. */
static int stage_input(spm_session_t *s, spm_reader_t *r, const opts_t *o, spm_apriori_args_t *a)
{
    staging_t b = {0};
    uint32_t cap = 0;
    const uint32_t *items;
    size_t n;
    int rc;
    while ((rc = spm_reader_next(r, &items, &n)) == 1) {
        if ((rc = stage_add(&b, items, n, o->block)) != 0)
            break;
        if (b.t.n == (uint32_t)o->block &&
            (rc = stage_flush(s, &b, &a->staged, &a->nstaged, &cap)) != 0)
            break;
    }
    if (rc == 0)
        rc = stage_flush(s, &b, &a->staged, &a->nstaged, &cap);
    int done = spm_session_put_flush(s);
    rc = rc ? rc : done;
    if (rc == 0) /* names read from a file that changed meanwhile may be of two files */
        rc = spm_reader_unchanged(r);
    spm_mining_trans_free(&b.t);
    return rc;
}

static int session_get(void *s, const spm_sdb_t *ids, size_t n,
                       int (*fn)(void *arg, size_t i, const void *data, size_t len), void *arg)
{
    return spm_session_get_each(s, ids, n, fn, arg);
}

static void *session_keep(void *s, const void **data, int *mapped)
{
    spm_kept_t *k = spm_session_keep(s, data);
    *mapped = k && spm_kept_in_place(k);
    return k;
}

/*  Transactions per block by default. Every block costs an SI of each
    initial step and an operand of every class SI; 5,000 against 1,000,
    whole command, 2 IEUs, medians of 5: T25I10D100K at 0.6% 0.14 -> 0.13 s,
    at 0.25% 0.26 -> 0.25 s (level-wise: 0.48 -> 0.40 s), T10I4D100K at
    0.05% 0.14 -> 0.13 s, the retail-like set at 0.02% 0.24 -> 0.20 s;
    chess and the dense set the same or faster. A class SI reads at most
    255 blocks: depth first then reaches 1.27M transactions by default. */
#define DEFAULT_BLOCK 5000

/*  Bytes of rule records the job of session S may find, so that a request
    for billions of rules fails as soon as it has found more, in one line,
    instead of filling a disk first: what the sorts hold in memory (BUDGET)
    and half the space free where they spill (the rules may be sorted twice,
    and the output may share the disk); with an embedded VM, whose store
    holds them twice more (the blocks found, then gathered) and is in its
    run directory, a quarter of the space free there or in $TMPDIR,
    whichever is less. SPM_MINE_ROOM (bytes) stands in for the free space
    of both: a test hook (docs/MINING.md). */
static uint64_t rule_room(const spm_session_t *s, size_t budget)
{
    const char *room = getenv("SPM_MINE_ROOM"), *vm = spm_session_rundir(s);
    uint64_t spare = room ? strtoull(room, NULL, 10) : spm_extsort_room(NULL);
    if (!vm)
        return budget + spare / 2;
    uint64_t kept = room ? spare : spm_extsort_room(vm);
    return budget + (kept < spare ? kept : spare) / 4;
}

int spm_cmd_mine(int argc, char **argv)
{
    opts_t o = {.minconf = 0.8, .block = DEFAULT_BLOCK};
    spm_run_opts_t ro;
    int code = 1, rc;
    spm_run_opts_init(&ro);
    if (parse_args(argc, argv, &o, &ro, &code) != 0)
        return code;
    /* an output over the input would replace it when it is committed */
    const char *input[] = {o.input};
    if ((rc = spm_outfile_apart(o.itemsets_only ? "-"
                                : o.output      ? o.output
                                                : "-",
                                input, 1)) != 0 ||
        (o.itemsets && (rc = spm_outfile_apart(o.itemsets, input, 1)) != 0))
        return spm_cli_fail("mine", rc);
    /* named items are numbered here; numbers are staged as text */
    spm_reader_t *r = o.names ? spm_reader_open(o.input, 1) : NULL;
    spm_lines_t *in = o.names ? NULL : spm_lines_open(o.input);
    if (!r && !in)
        return spm_cli_fail("mine", SPM_EIO);
    spm_outfile_t *rules = NULL, *sets = NULL;
    spm_session_t *s = NULL;
    spm_apriori_args_t a = {.minconf = o.minconf,
                            .maxcons = (uint32_t)o.maxcons,
                            .maxlen = (uint32_t)o.maxlen,
                            .flags = o.itemsets_only ? SPM_APRIORI_ITEMSETS_ONLY : 0,
                            .algorithm = o.algorithm,
                            .block = (uint32_t)o.block,
                            .join_cap = 65536};
    spm_apriori_result_t res = {0};
    spm_mine_out_t out = {.minconf = o.minconf};
    void *bytes = NULL;
    size_t len;
    if (o.itemsets_only && !o.itemsets)
        o.itemsets = "-";
    const char *rules_path = o.output ? o.output : "-";
    if ((!o.itemsets_only && !(rules = spm_outfile_open(rules_path))) ||
        (o.itemsets && !(sets = spm_outfile_open(o.itemsets)))) {
        rc = SPM_EIO;
        goto out;
    }
    if (rules)
        spm_outfile_set_sync(rules, ro.sync); /* --sync, a run option */
    if (sets)
        spm_outfile_set_sync(sets, ro.sync);
    if ((rc = spm_session_open(&ro, &s)) != 0 ||
        (rc = r ? stage_input(s, r, &o, &a) : stage_text(s, in, &o, &a)) != 0)
        goto out;
    if (r)
        a.ntrans = spm_reader_count(r);
    a.minsup = min_count(&o, a.ntrans);
    const char *budget = getenv("SPM_MINE_SORT_BUDGET"); /* bytes, all sorts (docs/MINING.md) */
    out.budget = budget ? (size_t)strtoull(budget, NULL, 10) : 0;
    a.rule_room =
        o.itemsets_only ? 0 : rule_room(s, out.budget ? out.budget : SPM_MINE_SORT_BUDGET);
    if ((rc = spm_apriori_args_encode(&a, &bytes, &len)) != 0)
        goto out;
    void *result = NULL;
    size_t rlen = 0;
    rc = spm_session_run(s, SPM_APRIORI_PROGRAM, bytes, len, &result, &rlen);
    if (rc == 0) {
        rc = spm_apriori_result_decode(result, rlen, &res);
        free(result);
    }
    out.ntrans = a.ntrans;
    out.minsup = a.minsup;
    out.names = o.names ? r : NULL;
    out.keep = session_keep;
    out.kept_free = spm_kept_free;
    if (rc != 0 || (rc = spm_mine_fetch(session_get, s, &res, &out)) != 0)
        goto out;
    spm_session_release(s); /* an embedded VM stops while the output is written */
    if ((rules && (rc = write_output(rules, rules_path, &out, &o, 0)) != 0) ||
        (o.itemsets && (rc = write_output(sets, o.itemsets, &out, &o, 1)) != 0))
        goto out;
    if ((o.itemsets && (rc = spm_outfile_commit(&sets)) != 0) ||
        (rules && (rc = spm_outfile_commit(&rules)) != 0))
        goto out;
    if (!ro.quiet && !ro.json && o.itemsets_only)
        fprintf(stderr, "spm mine: %llu transactions, %llu frequent itemsets\n",
                (unsigned long long)a.ntrans, (unsigned long long)spm_mine_nitemsets(&out));
    else if (!ro.quiet && !ro.json)
        fprintf(stderr, "spm mine: %llu transactions, %llu frequent itemsets, %llu rules\n",
                (unsigned long long)a.ntrans, (unsigned long long)spm_mine_nitemsets(&out),
                (unsigned long long)spm_mine_nrules(&out));
    code = 0;
out:
    if (rc != 0)
        code = spm_cli_fail("mine", rc);
    spm_outfile_abort(&rules);
    spm_outfile_abort(&sets);
    spm_session_destroy(&s);
    spm_mine_out_free(&out);
    spm_apriori_result_free(&res);
    spm_apriori_args_free(&a);
    spm_reader_destroy(&r);
    spm_lines_destroy(&in);
    free(bytes);
    return code;
}
