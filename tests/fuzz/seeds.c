/*  Writes the seed corpus of the fuzz targets (tests/fuzz/targets.h) into
    DIR/NAME/: one well-formed input per message body and per SDB type, so
    the fuzzers start from what peers really send. `make fuzz-seeds` runs it
    into tests/fuzz/corpus; the files are kept in the tree. */
#include "isa/core/codec.h"
#include "isa/core/registry.h"
#include "vm/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *root; /* DIR */

static void write_seed(const char *target, const char *name, const void *data, size_t len)
{
    char path[512];
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
    Spm__Operand o1 = PB(Spm__Operand, operand, .sdb = 7, .version = 2, .mode = 1, .type = syn);
    Spm__Operand o2 = PB(Spm__Operand, operand, .sdb = 8, .version = 3, .mode = 2, .type = syn);
    Spm__Operand *ops[2] = {&o1, &o2};
    Spm__Si si =
        PB(Spm__Si, si, .id = 12, .attempt = 1, .opcode = spm_name_id("syn.work"), .n_ops = 2,
           .ops = ops, .job = 1, .params = {25, (uint8_t *)"0123456789012345678901234"});
    Spm__Si *sis[1] = {&si};
    SEED("issue", ISSUE, issue, &PB(Spm__Issue, issue, .n_sis = 1, .sis = sis), NULL, 0);
    Spm__Result r = PB(Spm__Result, result, .si = 12, .attempt = 1, .outputs = 1, .exec_us = 2000,
                       .reply = {8, (uint8_t *)"\x01\0\0\0\0\0\0\0"});
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
}

/*  A syn.block of LEN payload bytes. */
static void sdb_syn_seed(const char *name, size_t len)
{
    unsigned char buf[4 + 16 + 64];
    spm_put_le32(buf, spm_name_id("syn.block"));
    spm_put_le64(buf + 4, 99);
    spm_put_le64(buf + 12, len);
    for (size_t j = 0; j < len; j++)
        buf[20 + j] = (unsigned char)(j * 7);
    write_seed("sdb", name, buf, 20 + len);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: seeds DIR\n");
        return 2;
    }
    root = argv[1];
    wire_seeds();
    sdb_syn_seed("syn.block-empty", 0);
    sdb_syn_seed("syn.block-64", 64);
    return 0;
}
