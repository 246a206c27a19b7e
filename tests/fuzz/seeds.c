/*  Writes the seed corpus of the fuzz targets (tests/fuzz/targets.h) into
    DIR/NAME/: one well-formed input per message body and per SDB type, so
    the fuzzers start from what peers really send. `make fuzz-seeds` runs it
    into tests/fuzz/corpus; the files are kept in the tree. */
#include "isa/core/codec.h"
#include "isa/core/npz.h"
#include "runtime/registry.h"
#include "isa/matrix/block.h"
#include "isa/matrix/raw.h"
#include "isa/mining/sdb.h"
#include "vm/center/journal.h"
#include "transport/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *root; /* DIR */

static void write_seed(const char *target, const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, target);
    mkdir(path, 0755); /* a new target's directory */
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "seeds: cannot write %s\n", path);
        exit(1);
    }
}

/*  A wire input: ENV packed, preceded by the block frames F (K of them). */
static void wire_seed(const char *name, Spm__Envelope *env, const char *const *f, size_t k)
{
    env->version = SPM_PROTOCOL_VERSION;
    uint8_t buf[4096];
    size_t n = 0;
    buf[n++] = (uint8_t)k;
    for (size_t i = 0; i < k; i++) {
        size_t len = strlen(f[i]);
        buf[n++] = (uint8_t)len;
        buf[n++] = (uint8_t)(len >> 8);
        memcpy(buf + n, f[i], len);
        n += len;
    }
    n += spm__envelope__pack(env, buf + n);
    write_seed("wire", name, buf, n);
}

/*  A message of protobuf-c type T (lower-case name L) with the fields given;
    the others are zero (proto3 writes no zero field). */
#define PB(T, L, ...) ((T){.base = PROTOBUF_C_MESSAGE_INIT(&spm__##L##__descriptor), __VA_ARGS__})

/*  ENV with body B set to MSG, as a seed NAME with frames F. */
#define SEED(name, B, b, msg, f, k)                                                                \
    do {                                                                                           \
        Spm__Envelope env = SPM__ENVELOPE__INIT;                                                   \
        env.body_case = SPM__ENVELOPE__BODY_##B;                                                   \
        env.b = msg;                                                                               \
        wire_seed(name, &env, f, k);                                                               \
    } while (0)

static void wire_seeds(void)
{
    const char *blk[1] = {"0123456789abcdef-payload"};
    uint32_t syn = spm_name_id("syn.block");
    SEED("hello", HELLO, hello,
         &PB(Spm__Hello, hello, .role = SPM__HELLO__ROLE__IEU, .node = "node-a", .node_index = 1,
             .slots = 4, .pid = 4242, .data_endpoint = "ipc:///tmp/spm-data"),
         NULL, 0);
    SEED("pull", PULL, pull, &PB(Spm__Pull, pull, .credits = 8), NULL, 0);
    uint32_t where[2] = {1, 2};
    Spm__Operand o1 = PB(Spm__Operand, operand, .sdb = 7, .version = 2, .mode = 1, .type = syn,
                         .n_holders = 2, .holders = where, .checksum = 0x1234, .bytes = 24);
    Spm__Operand o2 = PB(Spm__Operand, operand, .sdb = 8, .version = 3, .mode = 2, .type = syn);
    Spm__Operand *ops[2] = {&o1, &o2};
    Spm__Si si =
        PB(Spm__Si, si, .id = 12, .attempt = 1, .opcode = spm_name_id("syn.work"), .n_ops = 2,
           .ops = ops, .job = 1, .params = {25, (uint8_t *)"0123456789012345678901234"});
    Spm__Si *sis[1] = {&si};
    SEED("issue", ISSUE, issue, &PB(Spm__Issue, issue, .n_sis = 1, .sis = sis), NULL, 0);
    Spm__BlockMeta meta = PB(Spm__BlockMeta, block_meta, .bytes = 24, .checksum = 0x1234,
                             .n_holders = 2, .holders = where, .framed = 1);
    Spm__BlockMeta *metas[1] = {&meta};
    Spm__Result r = PB(Spm__Result, result, .si = 12, .attempt = 1, .outputs = 1, .exec_us = 2000,
                       .reply = {8, (uint8_t *)"\x01\0\0\0\0\0\0\0"}, .n_blocks = 1,
                       .blocks = metas, .bytes_pushed = 24);
    Spm__Result *rs[1] = {&r};
    SEED("commit", COMMIT, commit,
         &PB(Spm__Commit, commit, .n_results = 1, .results = rs, .credits = 1), blk, 1);
    SEED("heartbeat", HEARTBEAT, heartbeat, &PB(Spm__Heartbeat, heartbeat, ), NULL, 0);
    SEED("ieu_died", IEU_DIED, ieu_died, &PB(Spm__IeuDied, ieu_died, .pid = 4242, .signal = 9),
         NULL, 0);
    SEED("submit", SUBMIT, submit,
         &PB(Spm__Submit, submit, .program = "synthetic", .args = {4, (uint8_t *)"args"},
             .priority = 2),
         NULL, 0);
    SEED("get", GET, get, &PB(Spm__Get, get, .req = 3, .sdb = 7, .version = 2), NULL, 0);
    char *holders[2] = {"ipc:///a", "tcp://10.0.0.2:7701"};
    SEED("get_reply", GET_REPLY, get_reply,
         &PB(Spm__GetReply, get_reply, .req = 3, .sdb = 7, .version = 2, .type = syn,
             .n_holders = 2, .holders = holders),
         blk, 1);
    SEED("put", PUT, put, &PB(Spm__Put, put, .req = 4, .type = "syn.block"), blk, 1);
    Spm__BlockRef b = PB(Spm__BlockRef, block_ref, .sdb = 7, .version = 2, .bytes = 4096);
    Spm__BlockRef *bs[1] = {&b};
    SEED("publish", PUBLISH, publish, &PB(Spm__Publish, publish, .n_blocks = 1, .blocks = bs), NULL,
         0);
    Spm__IeuReport ir = PB(Spm__IeuReport, ieu_report, .ieu = 1, .sis = 10);
    Spm__IeuReport *irs[1] = {&ir};
    SEED("report", REPORT, report,
         &PB(Spm__Report, report, .job = 1, .program = "synthetic", .n_ieus = 1, .ieus = irs,
             .result = {6, (uint8_t *)"result"}),
         NULL, 0);
    SEED("status_reply", STATUS_REPLY, status_reply,
         &PB(Spm__StatusReply, status_reply, .json = "{\"ieus\": 2}"), NULL, 0);
    Spm__Node n1 = PB(Spm__Node, node, .index = 1, .endpoint = "tcp://10.0.0.2:7701", .key = ""),
              n2 = PB(Spm__Node, node, .index = 2, .endpoint = "ipc:///tmp/spm-data", .key = "");
    Spm__Node *ns[2] = {&n1, &n2};
    SEED("nodes", NODES, nodes, &PB(Spm__Nodes, nodes, .n_nodes = 2, .nodes = ns), NULL, 0);
    SEED("store", STORE, store,
         &PB(Spm__Store, store, .req = 5, .sdb = 7, .version = 2, .type = syn, .checksum = 0x1234,
             .want = 2, .n_forward = 1, .forward = ns),
         blk, 1);
    SEED("store_reply", STORE_REPLY, store_reply,
         &PB(Spm__StoreReply, store_reply, .req = 5, .n_holders = 2, .holders = where), NULL, 0);
    SEED("placed", PLACED, placed,
         &PB(Spm__Placed, placed, .sdb = 7, .n_holders = 2, .holders = where), NULL, 0);
    SEED("copy", COPY, copy,
         &PB(Spm__Copy, copy, .sdb = 7, .version = 2, .type = syn, .checksum = 0x1234, .bytes = 24,
             .n_sources = 2, .sources = ns),
         NULL, 0);
    SEED("put_place", PUT, put,
         &PB(Spm__Put, put, .req = 6, .type = "syn.block", .place = 1, .bytes = 24,
             .checksum = 0x1234),
         NULL, 0);
}

/*  An sdb input: TYPE's wire id, then LEN bytes at DATA (freed here). */
static void sdb_seed(const char *name, const char *type, void *data, size_t len)
{
    unsigned char *buf = malloc(4 + len);
    if (!buf || !data)
        exit(1);
    spm_put_le32(buf, spm_name_id(type));
    memcpy(buf + 4, data, len);
    write_seed("sdb", name, buf, 4 + len);
    free(buf);
    free(data);
}

/*  A syn.block of LEN payload bytes. */
static void syn_seed(const char *name, size_t len)
{
    unsigned char *b = malloc(16 + len);
    if (!b)
        exit(1);
    spm_put_le64(b, 99);
    spm_put_le64(b + 8, len);
    for (size_t j = 0; j < len; j++)
        b[16 + j] = (unsigned char)(j * 7);
    sdb_seed(name, "syn.block", b, 16 + len);
}

/*  An mm.block of KIND, 3 x 3, with two entries. */
static void mm_seed(const char *name, spm_mm_kind_t kind)
{
    spm_mm_block_t *b = spm_mm_block_new(kind, 3, 3, 2);
    if (!b)
        exit(1);
    if (kind == SPM_MM_DENSE) {
        b->val[0] = 1.5;
        b->val[8] = -2;
    } else if (kind == SPM_MM_CSR) {
        uint32_t rowptr[4] = {0, 1, 1, 2}, colidx[2] = {0, 2};
        memcpy(b->rowptr, rowptr, sizeof rowptr);
        memcpy(b->colidx, colidx, sizeof colidx);
        b->val[0] = 1.5;
        b->val[1] = -2;
    }
    void *data;
    size_t len;
    if (spm_mm_block_encode(b, &data, &len) != 0)
        exit(1);
    spm_mm_block_destroy(&b);
    sdb_seed(name, SPM_MM_BLOCK_TYPE, data, len);
}

static void matrix_seeds(void)
{
    mm_seed("mm.block-zero", SPM_MM_ZERO);
    mm_seed("mm.block-dense", SPM_MM_DENSE);
    mm_seed("mm.block-csr", SPM_MM_CSR);
    spm_buf_t raw = {0};
    if (spm_mm_raw_init(&raw, 4, 4) != 0)
        exit(1);
    spm_mm_raw_add(&raw, 0, 3, 2.5);
    spm_mm_raw_add(&raw, 0, 3, 1); /* duplicates are summed */
    spm_mm_raw_add(&raw, 2, 1, -1);
    void *data;
    size_t len;
    if (spm_mm_raw_finish(&raw) != 0 || spm_buf_take(&raw, &data, &len) != 0)
        exit(1);
    sdb_seed("mm.raw", SPM_MM_RAW_TYPE, data, len);
}

static void mining_seeds(void)
{
    void *data;
    size_t len;
    uint32_t items[5] = {1, 3, 2, 4, 6};
    uint64_t counts[3] = {5, 3, 2};
    spm_mining_items_t it = {
        .lo = 0, .hi = 10, .n = 3, .items = (uint32_t[]){1, 4, 7}, .counts = counts};
    if (spm_mining_items_encode(&it, &data, &len) != 0)
        exit(1);
    sdb_seed("mining.items", SPM_MINING_ITEMS, data, len);
    spm_mining_trans_t tr = {.n = 2,
                             .normalized = 1,
                             .off = (uint32_t[]){0, 2, 5},
                             .weight = (uint32_t[]){1, 2},
                             .items = items};
    if (spm_mining_trans_encode(&tr, &data, &len) != 0)
        exit(1);
    sdb_seed("mining.transactions", SPM_MINING_TRANS, data, len);
    spm_mining_text_t tx = {.first = 41,
                            .nlines = 3,
                            .name = "t.dat",
                            .namelen = 5,
                            .text = "3 1 2\r\n\n12 7\n",
                            .len = 13};
    if (spm_mining_text_encode(&tx, &data, &len) != 0)
        exit(1);
    sdb_seed("mining.text", SPM_MINING_TEXT, data, len);
    spm_mining_file_t fl = {.first = 41,
                            .nlines = 3,
                            .offset = 100,
                            .len = 13,
                            .path = "/data/t.dat",
                            .pathlen = 11,
                            .name = "t.dat",
                            .namelen = 5};
    if (spm_mining_file_encode(&fl, &data, &len) != 0)
        exit(1);
    sdb_seed("mining.filelines", SPM_MINING_FILE, data, len);
    const char *kinds[3] = {SPM_MINING_JOIN, SPM_MINING_CANDS, SPM_MINING_FSETS};
    for (int k = 0; k < 3; k++) {
        spm_mining_sets_t st = {.kind = (spm_mining_kind_t)k,
                                .k = 2,
                                .n = 2,
                                .items = (uint32_t[]){1, 2, 1, 3},
                                .counts = k ? counts : NULL};
        if (spm_mining_sets_encode(&st, &data, &len) != 0)
            exit(1);
        sdb_seed(kinds[k], kinds[k], data, len);
    }
    spm_mining_rules_t ru = {.n = 1,
                             .xlen = (uint32_t[]){1},
                             .ylen = (uint32_t[]){1},
                             .supz = (uint64_t[]){3},
                             .supx = (uint64_t[]){5},
                             .off = (uint32_t[]){0, 2},
                             .items = (uint32_t[]){1, 2}};
    if (spm_mining_rules_encode(&ru, &data, &len) != 0)
        exit(1);
    sdb_seed("mining.rules", SPM_MINING_RULES, data, len);
    spm_mining_sets_t gs[2] = {{.kind = SPM_MINING_KIND_FSETS,
                                .k = 2,
                                .n = 2,
                                .items = (uint32_t[]){1, 2, 1, 3},
                                .counts = counts},
                               {.kind = SPM_MINING_KIND_FSETS,
                                .k = 3,
                                .n = 1,
                                .items = (uint32_t[]){1, 2, 3},
                                .counts = counts + 2}};
    spm_mining_itemsets_t is = {.nlen = 2, .lv = gs};
    if (spm_mining_itemsets_encode(&is, &data, &len) != 0)
        exit(1);
    sdb_seed("mining.itemsets", SPM_MINING_ITEMSETS, data, len);
}

/*  Text inputs: Matrix Market files and transaction files (the fimi
    target's first byte picks numbers or named items). */
static void text_seeds(void)
{
    static const char *const mtx[][2] = {
        {"coordinate-real", "%%MatrixMarket matrix coordinate real general\n% a comment\n"
                            "3 3 3\n1 1 1.5\n2 3 -2e3\n3 1 0.25\n"},
        {"symmetric-pattern", "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n"
                              "1 1\n3 1\n4 2\n"},
        {"skew-integer", "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n"
                         "2 1 7\n3 2 -4\n"},
        {"array-real", "%%MatrixMarket matrix array real general\n2 2\n1\n0\n-3.5\n4\n"},
        {"array-symmetric", "%%MatrixMarket matrix array integer symmetric\r\n2 2\r\n1\r\n"
                            "2\r\n3\r\n"}};
    for (size_t i = 0; i < sizeof mtx / sizeof mtx[0]; i++)
        write_seed("mtx", mtx[i][0], mtx[i][1], strlen(mtx[i][1]));
    static const char *const fimi[][2] = {{"numbers", "\0"
                                                      "1 2 3\n2 4\n\n7 7 1\r\n4294967294\n"},
                                          {"named",
                                           "\1"
                                           "bread milk\nbeer bread diapers\teggs\nmilk\n"}};
    for (size_t i = 0; i < sizeof fimi / sizeof fimi[0]; i++)
        write_seed("fimi", fimi[i][0], fimi[i][1], 1 + strlen(fimi[i][1] + 1));
}

/*  Journal inputs: the file of job 7 as the journal writes it (records of
    0, 16, 64 and 300 bytes), then torn, with garbage after it, and with a
    byte flipped in its second record. */
static void journal_seeds(void)
{
    char dir[] = "/tmp/spm-seeds-XXXXXX", path[128];
    static const uint8_t id[16] = {'s', 'e', 'e', 'd'};
    spm_journal_t *jr = mkdtemp(dir) ? spm_journal_open(dir, id) : NULL;
    if (!jr)
        exit(1);
    uint8_t rec[300];
    for (size_t i = 0; i < sizeof rec; i++)
        rec[i] = (uint8_t)(i * 13);
    if (spm_journal_append(jr, 7, NULL, 0) != 0 ||
        spm_journal_append(jr, 7, "submit synthetic", 16) != 0 ||
        spm_journal_append(jr, 7, rec, 64) != 0 || spm_journal_append(jr, 7, rec, 300) != 0)
        exit(1);
    spm_journal_destroy(&jr);
    snprintf(path, sizeof path, "%s/journal/7.log", dir);
    uint8_t file[1024];
    FILE *f = fopen(path, "rb");
    size_t len = f ? fread(file, 1, sizeof file - 16, f) : 0;
    if (!f || len != 16 + 4 * 12 + 16 + 64 + 300)
        exit(1);
    fclose(f);
    unlink(path);
    snprintf(path, sizeof path, "%s/journal/journal.id", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/journal", dir);
    rmdir(path);
    rmdir(dir);
    write_seed("journal", "records", file, len);
    write_seed("journal", "header-only", file, 16);
    write_seed("journal", "torn", file, len - 100);
    memcpy(file + len, "garbage\0\0\0\0\0\0\0\0\0", 16);
    write_seed("journal", "garbage-after", file, len + 16);
    file[16 + 12 + 12 + 3] ^= 0x20;
    write_seed("journal", "flipped", file, len);
}

/*  A .npy of ROWS x COLS doubles 1, 2, ... (FORTRAN: column-major). */
static void npy_seed(const char *name, uint64_t rows, uint64_t cols, int fortran)
{
    spm_npy_t a;
    char buf[SPM_NPY_WRITTEN_MAX + 256];
    if (spm_npy_set(&a, "<f8", 2, (uint64_t[]){rows, cols}) != 0 || rows * cols > 32)
        exit(1);
    a.fortran = fortran;
    size_t n = spm_npy_header(&a, 0, buf);
    for (uint64_t i = 0; i < rows * cols; i++) {
        double v = (double)(i + 1);
        memcpy(buf + n + 8 * i, &v, 8);
    }
    write_seed("npz", name, buf, n + 8 * rows * cols);
}

/*  An .npz of a sparse 3 x 4 matrix in FORMAT (csr or coo) with indices
    of dtype INDEX, as scipy.sparse.save_npz(compressed=False) writes it. */
static void npz_seed(const char *name, const char *format, const char *index)
{
    char path[512];
    snprintf(path, sizeof path, "%s/npz", root);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/npz/%s", root, name);
    spm_outfile_t *out = spm_outfile_open(path);
    spm_npz_writer_t *w = out ? spm_npz_writer_new(out) : NULL;
    int wide = strcmp(index, "<i8") == 0, coo = strcmp(format, "coo") == 0;
    /* entries (0,1)=1.5 (1,3)=-2 (2,0)=4 (2,2)=0.25 */
    uint32_t r32[4] = {0, 1, 2, 2}, c32[4] = {1, 3, 0, 2}, p32[4] = {0, 1, 2, 4};
    uint64_t r64[4] = {0, 1, 2, 2}, c64[4] = {1, 3, 0, 2}, p64[4] = {0, 1, 2, 4};
    double v[4] = {1.5, -2, 4, 0.25};
    uint64_t two = 2, four = 4, shape[2] = {3, 4};
    spm_npy_t fmt, dims, idx, ptr, val;
    if (!w || spm_npy_set(&fmt, "|S3", 0, NULL) != 0 || spm_npy_set(&dims, "<i8", 1, &two) != 0 ||
        spm_npy_set(&idx, index, 1, &four) != 0 || spm_npy_set(&ptr, index, 1, &four) != 0 ||
        spm_npy_set(&val, "<f8", 1, &four) != 0 ||
        spm_npz_writer_array(w, coo ? "row" : "indices", &idx,
                             coo ? (wide ? (void *)r64 : r32) : (wide ? (void *)c64 : c32)) ||
        spm_npz_writer_array(w, coo ? "col" : "indptr", &ptr,
                             coo ? (wide ? (void *)c64 : c32) : (wide ? (void *)p64 : p32)) ||
        spm_npz_writer_array(w, "format", &fmt, format) ||
        spm_npz_writer_array(w, "shape", &dims, shape) ||
        spm_npz_writer_array(w, "data", &val, v) || spm_npz_writer_close(&w) != 0 ||
        spm_outfile_commit(&out) != 0) {
        fprintf(stderr, "seeds: cannot write %s\n", path);
        exit(1);
    }
}

/*  NumPy and SciPy files (the npz target). Two more seeds were written by
    SciPy itself and are kept as they are: scipy-csc-deflated
    (scipy.sparse.save_npz, deflated members) and numpy-savez-zip64 (a
    ZIP64 local header, as numpy.savez writes every member). */
static void npz_seeds(void)
{
    npy_seed("npy-dense", 3, 4, 0);
    npy_seed("npy-fortran", 2, 3, 1);
    npz_seed("npz-csr-int32", "csr", "<i4");
    npz_seed("npz-coo-int64", "coo", "<i8");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: seeds DIR\n");
        return 2;
    }
    root = argv[1];
    wire_seeds();
    syn_seed("syn.block-empty", 0);
    syn_seed("syn.block-64", 64);
    matrix_seeds();
    mining_seeds();
    text_seeds();
    npz_seeds();
    journal_seeds();
    return 0;
}
