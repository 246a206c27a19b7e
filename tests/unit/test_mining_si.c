/*  =========================================================================
    test_mining_si - each mining SI through spm_si_exec_local, and the whole
    apriori program on the in-process VM against the reference
    =========================================================================
*/
#include "base/checksum.h"
#include "isa/core/codec.h"
#include "vm/embedded/inproc.h"
#include "runtime/si.h"
#include "isa/mining/isa.h"
#include "programs/apriori/apriori.h"
#include "programs/apriori/output.h"
#include "programs/apriori/quest.h"
#include "tests/check_main.h"
#include "tests/ref/apriori_ref.h"

#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- block specs */

typedef struct {
    void *data; /* an encoded block, malloc'd */
    size_t len;
} blob_t;

/*  A transaction block from "1 2 3*2|4 5|" (items, optional *weight). */
static blob_t trans(int normalized, const char *spec)
{
    uint32_t off[64] = {0}, w[64], items[256], n = 0, m = 0;
    for (const char *p = spec; *p;) {
        w[n] = 1;
        while (*p && *p != '|') {
            char *end;
            if (*p == ' ') {
                p++;
                continue;
            }
            if (*p == '*') {
                w[n] = (uint32_t)strtoul(p + 1, &end, 10);
                p = end;
                continue;
            }
            items[m++] = (uint32_t)strtoul(p, &end, 10);
            p = end;
        }
        off[++n] = m;
        if (*p == '|')
            p++;
    }
    spm_mining_trans_t b = {
        .n = n, .normalized = (uint32_t)normalized, .off = off, .weight = w, .items = items};
    blob_t o;
    ck_assert_int_eq(spm_mining_trans_encode(&b, &o.data, &o.len), 0);
    return o;
}

/*  A set block of K-sets from "1 2:5|1 3:4" (items, :count). */
static blob_t sets(spm_mining_kind_t kind, uint32_t k, const char *spec)
{
    uint32_t items[512], n = 0, m = 0;
    uint64_t counts[128] = {0};
    for (const char *p = spec; *p;) {
        char *end;
        if (*p == ' ' || *p == '|') {
            p++;
            continue;
        }
        if (*p == ':') {
            counts[n - 1] = strtoull(p + 1, &end, 10);
            p = end;
            continue;
        }
        items[m++] = (uint32_t)strtoul(p, &end, 10);
        p = end;
        if (m % k == 0)
            n++;
    }
    spm_mining_sets_t b = {.kind = kind, .k = k, .n = n, .items = items, .counts = counts};
    blob_t o;
    ck_assert_int_eq(spm_mining_sets_encode(&b, &o.data, &o.len), 0);
    return o;
}

static blob_t items(uint32_t lo, uint32_t hi, const char *spec)
{
    uint32_t it[64], n = 0;
    uint64_t c[64];
    for (const char *p = spec; *p;) {
        char *end;
        if (*p == ' ') {
            p++;
            continue;
        }
        it[n] = (uint32_t)strtoul(p, &end, 10);
        c[n++] = strtoull(end + 1, &end, 10); /* item:count */
        p = end;
    }
    spm_mining_items_t b = {.lo = lo, .hi = hi, .n = n, .items = it, .counts = c};
    blob_t o;
    ck_assert_int_eq(spm_mining_items_encode(&b, &o.data, &o.len), 0);
    return o;
}

/*  Renders a transaction block back into its spec. */
static const char *trans_spec(const void *data, size_t len)
{
    static char out[1024];
    spm_mining_trans_t b;
    ck_assert_int_eq(spm_mining_trans_decode(data, len, &b), 0);
    size_t at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < b.n; i++) {
        for (uint32_t j = b.off[i]; j < b.off[i + 1]; j++)
            at += (size_t)sprintf(out + at, j > b.off[i] ? " %u" : "%u", b.items[j]);
        if (b.weight[i] != 1)
            at += (size_t)sprintf(out + at, "*%u", b.weight[i]);
        at += (size_t)sprintf(out + at, "|");
    }
    spm_mining_trans_free(&b);
    return out;
}

static const char *sets_spec(spm_mining_kind_t kind, const void *data, size_t len)
{
    static char out[2048];
    spm_mining_sets_t b;
    ck_assert_int_eq(spm_mining_sets_decode(kind, data, len, &b), 0);
    size_t at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < b.n; i++) {
        for (uint32_t j = 0; j < b.k; j++)
            at += (size_t)sprintf(out + at, j ? " %u" : "%u", b.items[(size_t)i * b.k + j]);
        if (b.counts)
            at += (size_t)sprintf(out + at, ":%llu", (unsigned long long)b.counts[i]);
        at += (size_t)sprintf(out + at, "|");
    }
    spm_mining_sets_free(&b);
    return out;
}

static const char *items_spec(const void *data, size_t len)
{
    static char out[1024];
    spm_mining_items_t b;
    ck_assert_int_eq(spm_mining_items_decode(data, len, &b), 0);
    size_t at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < b.n; i++)
        at += (size_t)sprintf(out + at, "%u:%llu ", b.items[i], (unsigned long long)b.counts[i]);
    spm_mining_items_free(&b);
    return out;
}

/* ------------------------------------------------------------ running SIs */

typedef struct {
    spm_si_operand_t ops[8];
    size_t n;
    spm_buf_t params;
    void *reply;
    size_t reply_len;
} si_t;

static void in(si_t *s, spm_mode_t mode, blob_t b)
{
    s->ops[s->n++] = (spm_si_operand_t){.mode = mode, .in = b.data, .in_len = b.len};
}

static void out(si_t *s, spm_mode_t mode)
{
    s->ops[s->n++] = (spm_si_operand_t){.mode = mode};
}

static int exec(si_t *s, const char *opcode)
{
    return spm_si_exec_local(opcode, s->ops, s->n, s->params.data, s->params.len, &s->reply,
                             &s->reply_len);
}

/*  The I-th u32 of the reply. */
static uint32_t reply(const si_t *s, size_t i)
{
    ck_assert_uint_ge(s->reply_len, 4 * (i + 1));
    return spm_le32((const unsigned char *)s->reply + 4 * i);
}

static void done(si_t *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->ops[i].mode != SPM_W && s->ops[i].mode != SPM_ACC)
            free((void *)s->ops[i].in);
        free(s->ops[i].out);
    }
    spm_buf_free(&s->params);
    free(s->reply);
    memset(s, 0, sizeof *s);
}

/* ----------------------------------------------------------- initial stage */

START_TEST(load_normalizes)
{
    si_t s = {0};
    /* in-order transactions kept in place, then moved up after a repeat */
    in(&s, SPM_R, trans(0, "2 4|3 1 3 2|4 6|| 5 5|7 8 9|"));
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 10);
    ck_assert_int_eq(exec(&s, SPM_MINING_LOAD), 0);
    ck_assert_str_eq(trans_spec(s.ops[1].out, s.ops[1].out_len), "2 4|1 2 3|4 6||5|7 8 9|");
    ck_assert_uint_eq(reply(&s, 0), 6);
    ck_assert_uint_eq(reply(&s, 2), 10); /* the item domain: one more than the largest */
    done(&s);
    /* A staged block over the block size is refused. */
    in(&s, SPM_R, trans(0, "1|2|3|"));
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 2);
    ck_assert_int_eq(exec(&s, SPM_MINING_LOAD), SPM_EFORMAT);
    done(&s);
}
END_TEST

/*  A text block of TEXT, whose first line is line FIRST of "in.dat". */
static blob_t text(const char *body, uint64_t first)
{
    uint32_t lines = 0;
    for (const char *c = body; *c; c++)
        lines += *c == '\n';
    spm_mining_text_t t = {.first = first,
                           .nlines = lines,
                           .name = "in.dat",
                           .namelen = 6,
                           .text = body,
                           .len = strlen(body)};
    blob_t o;
    ck_assert_int_eq(spm_mining_text_encode(&t, &o.data, &o.len), 0);
    return o;
}

/*  LoadDataBlock of the staged block B; returns its status and, when it
    succeeded, the transactions (as a spec) in *SPEC and the item domain it
    replied in *HI (either may be NULL). */
static int load_staged(blob_t b, const char **spec, uint32_t *hi)
{
    si_t s = {0};
    in(&s, SPM_R, b);
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 10);
    int rc = exec(&s, SPM_MINING_LOAD);
    if (rc == 0) {
        ck_assert_uint_eq(s.reply_len, 12);
        if (spec)
            *spec = trans_spec(s.ops[1].out, s.ops[1].out_len);
        if (hi)
            *hi = reply(&s, 2);
    }
    done(&s);
    return rc;
}

/*  LoadDataBlock of the text block BODY (first line FIRST). */
static int load_text(const char *body, uint64_t first, const char **spec, uint32_t *hi)
{
    return load_staged(text(body, first), spec, hi);
}

/*  A staged text block is parsed on the IEU exactly as the client's reader
    parses a file, and a bad line is named by the file's name and its line
    number in the file, not in the block. */
START_TEST(load_parses_text)
{
    const char *spec;
    uint32_t hi = 0;
    ck_assert_int_eq(load_text("3 1 3 2\r\n\n 5\t5 \n12345678 0\n", 1, &spec, &hi), 0);
    ck_assert_str_eq(spec, "1 2 3||5|0 12345678|");
    ck_assert_uint_eq(hi, 12345679);
    ck_assert_int_eq(load_text("1 2\n3 x4 5\n", 41, &spec, &hi), SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "in.dat:42: item 'x4' is not"));
    ck_assert_int_eq(load_text("1\n2\n-3\n", 7, &spec, &hi), SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "in.dat:9: negative item '-3'"));
    ck_assert_int_eq(load_text("1\n4294967295\n", 1, &spec, &hi), SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "in.dat:2: item '4294967295' is over"));
    /* A block whose line count is forged, and a NUL byte. */
    blob_t b = text("1 2\n3\n", 5);
    ((unsigned char *)b.data)[4] = 3; /* three lines, of two */
    ck_assert_int_eq(load_staged(b, NULL, NULL), SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "3 lines promised, 2 found"));
    spm_mining_text_t t = {
        .first = 1, .nlines = 2, .name = "in.dat", .namelen = 6, .text = "1\n2 \0 3\n", .len = 8};
    ck_assert_int_eq(spm_mining_text_encode(&t, &b.data, &b.len), 0);
    ck_assert_int_eq(load_staged(b, NULL, NULL), SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "in.dat:2: NUL byte in a text line"));
}
END_TEST

/*  The block of the lines of FILE from byte OFFSET (LEN bytes, NLINES
    lines, the first line FIRST), stamped and summed as the client cuts
    it: the file as it is now, and the checksum of the bytes there. */
static spm_mining_file_t cut_file(const char *file, uint64_t offset, uint64_t len, uint32_t nlines,
                                  uint64_t first)
{
    spm_mining_file_t f = {.first = first,
                           .nlines = nlines,
                           .offset = offset,
                           .len = len,
                           .path = file,
                           .pathlen = (uint32_t)strlen(file),
                           .name = "in.dat",
                           .namelen = 6};
    int fd = open(file, O_RDONLY);
    char *bytes = calloc(1, len + 1);
    if (fd >= 0) {
        spm_file_stamp(fd, &f.stamp);
        ssize_t got = pread(fd, bytes, len, (off_t)offset);
        f.sum = spm_checksum(bytes, got > 0 ? (size_t)got : 0);
        close(fd);
    }
    free(bytes);
    return f;
}

/*  LoadDataBlock of block F: its status, and the transactions in *SPEC. */
static int load_block(const spm_mining_file_t *f, const char **spec)
{
    blob_t b;
    ck_assert_int_eq(spm_mining_file_encode(f, &b.data, &b.len), 0);
    return load_staged(b, spec, NULL);
}

/*  LoadDataBlock of the lines of FILE as cut_file cuts them now. */
static int load_file(const char *file, uint64_t offset, uint64_t len, uint32_t nlines,
                     uint64_t first, const char **spec)
{
    spm_mining_file_t f = cut_file(file, offset, len, nlines, first);
    return load_block(&f, spec);
}

/*  Writes BODY over FILE in place from its start (same inode). */
static void rewrite(const char *file, const char *body)
{
    int fd = open(file, O_WRONLY);
    ck_assert_int_eq(pwrite(fd, body, strlen(body), 0), (ssize_t)strlen(body));
    close(fd);
}

/*  A file changed after the client cut it (issue 39): rewritten in place at
    the same size, rewritten with its modification time put back (which
    only the checksum of the block's bytes tells), or replaced by another
    file moved under its name (`cp other tmp && mv tmp FILE`). The IEU
    fails the block in one line instead of reading lines the client never
    saw; before, it read whatever the file held then. */
START_TEST(load_refuses_a_file_changed_since_it_was_cut)
{
    char file[] = "/tmp/spm_load_changed.XXXXXX", other[] = "/tmp/spm_load_other.XXXXXX";
    int fd = mkstemp(file), fo = mkstemp(other);
    const char *body = "1 2\n3 4\n5 6\n", *changed = "1 2\n7 8\n5 6\n";
    ck_assert_int_eq(write(fd, body, strlen(body)), (ssize_t)strlen(body));
    ck_assert_int_eq(write(fo, changed, strlen(changed)), (ssize_t)strlen(changed));
    close(fd);
    close(fo);
    spm_si_set_local_files(1);
    const char *spec;
    spm_mining_file_t f = cut_file(file, 4, 4, 1, 2);
    ck_assert_int_eq(load_block(&f, &spec), 0);
    ck_assert_str_eq(spec, "3 4|");
    usleep(20000); /* past the file system's timestamp granularity */
    rewrite(file, changed);
    ck_assert_int_eq(load_block(&f, &spec), SPM_EIO);
    ck_assert_str_eq(spm_error_detail(), "in.dat: the file changed while it was read");
    /* the same bytes, then other ones with the time put back: the sum */
    rewrite(file, body);
    f = cut_file(file, 4, 4, 1, 2);
    rewrite(file, changed);
    struct timespec times[2] = {{.tv_nsec = UTIME_OMIT},
                                {.tv_sec = (time_t)(f.stamp.mtime_ns / 1000000000u),
                                 .tv_nsec = (long)(f.stamp.mtime_ns % 1000000000u)}};
    fd = open(file, O_RDONLY);
    ck_assert_int_eq(futimens(fd, times), 0);
    close(fd);
    ck_assert_int_eq(load_block(&f, &spec), SPM_EIO);
    ck_assert_str_eq(spm_error_detail(), "in.dat: the file changed while it was read");
    /* another file moved under the name */
    rewrite(file, body);
    f = cut_file(file, 4, 4, 1, 2);
    ck_assert_int_eq(rename(other, file), 0);
    ck_assert_int_eq(load_block(&f, &spec), SPM_EIO);
    ck_assert_str_eq(spm_error_detail(), "in.dat: the file changed while it was read");
    unlink(file);
    spm_si_set_local_files(0);
}
END_TEST

/*  An embedded VM's IEU reads a block's lines from the client's file where
    they lie, as it would parse them staged; any other IEU refuses to read
    a file a client names. */
START_TEST(load_reads_file_lines)
{
    char file[] = "/tmp/spm_load_file.XXXXXX";
    int fd = mkstemp(file);
    const char *body = "9 8\n3 1 3 2\r\n\n5 5\n7 x 1\n";
    ck_assert_int_eq(write(fd, body, strlen(body)), (ssize_t)strlen(body));
    close(fd);
    const char *spec;
    ck_assert_int_eq(load_file(file, 4, 14, 3, 2, &spec), SPM_EDENIED);
    spm_si_set_local_files(1);
    ck_assert_int_eq(load_file(file, 4, 14, 3, 2, &spec), 0); /* lines 2-4 */
    ck_assert_str_eq(spec, "1 2 3||5|");
    ck_assert_int_eq(load_file(file, 18, 6, 1, 5, &spec), SPM_EFORMAT);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "in.dat:5: item 'x' is not"));
    /* The file no longer holds the lines: it changed or got shorter. */
    ck_assert_int_eq(load_file(file, 4, 13, 3, 2, &spec), SPM_EIO);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "in.dat: the file changed"));
    ck_assert_int_eq(load_file(file, 18, 80, 1, 5, &spec), SPM_EIO);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "in.dat: the file got shorter"));
    unlink(file);
    ck_assert_int_eq(load_file(file, 4, 14, 3, 2, &spec), SPM_EIO);
    ck_assert_ptr_nonnull(strstr(spm_error_detail(), "in.dat: No such file"));
    spm_si_set_local_files(0);
}
END_TEST

START_TEST(count_shrink_and_collect_items)
{
    si_t s = {0};
    in(&s, SPM_R, trans(1, "1 2 5|2 5*3|7|"));
    out(&s, SPM_ACC);
    out(&s, SPM_ACC);
    spm_buf_put_u32(&s.params, 2);
    spm_buf_put_u32(&s.params, 4); /* partitions [0, 4) and [4, 8) */
    ck_assert_int_eq(exec(&s, SPM_MINING_COUNT_ITEMS), 0);
    ck_assert_str_eq(items_spec(s.ops[1].out, s.ops[1].out_len), "1:1 2:4 ");
    ck_assert_str_eq(items_spec(s.ops[2].out, s.ops[2].out_len), "5:4 7:1 ");
    done(&s);
    /* An item beyond the partitions fails the SI. */
    in(&s, SPM_R, trans(1, "9|"));
    out(&s, SPM_ACC);
    spm_buf_put_u32(&s.params, 1);
    spm_buf_put_u32(&s.params, 4);
    ck_assert_int_eq(exec(&s, SPM_MINING_COUNT_ITEMS), SPM_ERANGE);
    done(&s);

    in(&s, SPM_RW, items(0, 4, "1:1 2:4 3:2"));
    spm_buf_put_u64(&s.params, 2);
    ck_assert_int_eq(exec(&s, SPM_MINING_SHRINK_ITEMS), 0);
    ck_assert_str_eq(items_spec(s.ops[0].out, s.ops[0].out_len), "2:4 3:2 ");
    ck_assert_uint_eq(reply(&s, 0), 2);
    done(&s);

    in(&s, SPM_R, items(0, 4, "2:4 3:2"));
    in(&s, SPM_R, items(4, 8, "5:4"));
    out(&s, SPM_W);
    out(&s, SPM_W);
    ck_assert_int_eq(exec(&s, SPM_MINING_FREQ_ITEMS), 0);
    ck_assert_str_eq(items_spec(s.ops[2].out, s.ops[2].out_len), "2:4 3:2 5:4 ");
    /* Ranks go by ascending support: 3 (2) is rank 0, then 2 and 5 (4). */
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_FSETS, s.ops[3].out, s.ops[3].out_len),
                     "0:2|1:4|2:4|");
    ck_assert_uint_eq(reply(&s, 0), 3);
    done(&s);
}
END_TEST

START_TEST(shrink_and_merge_transactions)
{
    si_t s = {0};
    in(&s, SPM_R, trans(1, "1 2 5|2 5*3|7|2 4 5|5 9|"));
    in(&s, SPM_R, items(0, 10, "2:9 5:8 9:7"));
    out(&s, SPM_W);
    ck_assert_int_eq(exec(&s, SPM_MINING_SHRINK_TRANS), 0);
    /* ranks by support: 9 -> 0, 5 -> 1, 2 -> 2; {7} and {5} dropped; {2 5} x 5 merged */
    ck_assert_str_eq(trans_spec(s.ops[2].out, s.ops[2].out_len), "0 1|1 2*5|");
    ck_assert_uint_eq(reply(&s, 0), 2);
    done(&s);

    in(&s, SPM_RW, trans(1, "0 1*5|1 2|"));
    in(&s, SPM_R, trans(1, "1 2*2|0 2|"));
    ck_assert_int_eq(exec(&s, SPM_MINING_MERGE_TRANS), 0);
    ck_assert_str_eq(trans_spec(s.ops[0].out, s.ops[0].out_len), "0 1*5|0 2|1 2*3|");
    done(&s);
}
END_TEST

/* ------------------------------------------------------- candidate stages */

START_TEST(join_families_across_blocks)
{
    si_t s = {0};
    /* Family {1 *} spans both blocks: 1 2, 1 3 | 1 4, 2 3. */
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 2:1|1 3:1"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 4:1|2 3:1"));
    out(&s, SPM_W);
    uint32_t p[] = {0, 2, 0, UINT32_MAX};
    for (int i = 0; i < 4; i++)
        spm_buf_put_u32(&s.params, p[i]);
    ck_assert_int_eq(exec(&s, SPM_MINING_GEN_SMALL), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_JOIN, s.ops[2].out, s.ops[2].out_len),
                     "1 2 3|1 2 4|1 3 4|");
    ck_assert_uint_eq(reply(&s, 0), 3);
    done(&s);
    /* Large: set 0 only, its partners 1.. only. */
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 2:1|1 3:1"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 4:1|2 3:1"));
    out(&s, SPM_W);
    uint32_t q[] = {0, 1, 1, 2};
    for (int i = 0; i < 4; i++)
        spm_buf_put_u32(&s.params, q[i]);
    ck_assert_int_eq(exec(&s, SPM_MINING_GEN_LARGE), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_JOIN, s.ops[2].out, s.ops[2].out_len), "1 2 4|");
    done(&s);
}
END_TEST

START_TEST(filter_drops_infrequent_subsets)
{
    si_t s = {0};
    in(&s, SPM_RW, sets(SPM_MINING_KIND_JOIN, 3, "1 2 3|1 2 4|1 3 4"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "1 2:1|1 3:1|1 4:1"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "2 3:1|3 4:1"));
    spm_buf_put_u32(&s.params, 2);
    for (int b = 0; b < 2; b++) {
        spm_buf_put_u32(&s.params, 0);
        spm_buf_put_u32(&s.params, 0);
        spm_buf_put_u32(&s.params, 0);
    }
    ck_assert_int_eq(exec(&s, SPM_MINING_FILTER), 0);
    /* {2 4} is not frequent: 1 2 4 goes. */
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_JOIN, s.ops[0].out, s.ops[0].out_len),
                     "1 2 3|1 3 4|");
    ck_assert_uint_eq(reply(&s, 0), 2);
    done(&s);
}
END_TEST

START_TEST(count_prune_and_gather)
{
    si_t s = {0};
    in(&s, SPM_R, sets(SPM_MINING_KIND_JOIN, 2, "0 1|0 2|1 2"));
    in(&s, SPM_R, trans(1, "0 1 2|0 1*4|"));
    in(&s, SPM_R, trans(1, "1 2*2|"));
    out(&s, SPM_ACC);
    spm_buf_put_u32(&s.params, 3);
    ck_assert_int_eq(exec(&s, SPM_MINING_COUNT_CANDS), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_CANDS, s.ops[3].out, s.ops[3].out_len),
                     "0 1:5|0 2:1|1 2:3|");
    done(&s);

    in(&s, SPM_RW, sets(SPM_MINING_KIND_CANDS, 2, "0 1:5|0 2:1|1 2:3"));
    spm_buf_put_u64(&s.params, 3);
    ck_assert_int_eq(exec(&s, SPM_MINING_PRUNE), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_CANDS, s.ops[0].out, s.ops[0].out_len),
                     "0 1:5|1 2:3|");
    done(&s);

    in(&s, SPM_R, sets(SPM_MINING_KIND_CANDS, 2, "0 1:5|0 3:4"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_CANDS, 2, "1 2:3|1 3:3|2 3:7"));
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 1); /* skip */
    spm_buf_put_u32(&s.params, 3); /* take */
    ck_assert_int_eq(exec(&s, SPM_MINING_FREQ_SETS), 0);
    ck_assert_str_eq(sets_spec(SPM_MINING_KIND_FSETS, s.ops[2].out, s.ops[2].out_len),
                     "0 3:4|1 2:3|1 3:3|");
    spm_mining_fsets_reply_t r;
    ck_assert_int_eq(spm_mining_fsets_reply_decode(s.reply, s.reply_len, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_uint_eq(r.nfam, 2); /* {0 *}: 1 set, {1 *}: 2 sets */
    ck_assert_uint_eq(r.fam[0], 1);
    ck_assert_uint_eq(r.fam[1], 2);
    ck_assert_uint_eq(r.last[1], 3);
    spm_mining_fsets_reply_free(&r);
    done(&s);
}
END_TEST

/* ------------------------------------------------------------------ rules */

START_TEST(confidence_and_store)
{
    si_t s = {0};
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 1, "0:10|1:8|2:4"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "0 1:8|1 2:4"));
    out(&s, SPM_W);
    spm_buf_put_f64(&s.params, 0.8);
    spm_buf_put_u32(&s.params, 0);
    ck_assert_int_eq(exec(&s, SPM_MINING_CONFIDENCE), 0);
    /* 0 => 1 (8/10), 1 => 0 (8/8), 2 => 1 (4/4); 1 => 2 is 4/8. */
    spm_mining_rules_t r;
    ck_assert_int_eq(spm_mining_rules_decode(s.ops[2].out, s.ops[2].out_len, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_uint_eq(reply(&s, 0), 3);
    blob_t rules = {s.ops[2].out, s.ops[2].out_len};
    s.ops[2].out = NULL;
    spm_mining_rules_free(&r);
    done(&s);

    /* StoreResult gathers the rules of its operands as they come, with
       their supports (the client sorts them in item order). */
    spm_mining_rules_t first;
    ck_assert_int_eq(spm_mining_rules_decode(rules.data, rules.len, &first), 0);
    blob_t copy = {malloc(rules.len), rules.len};
    memcpy(copy.data, rules.data, rules.len);
    in(&s, SPM_R, rules);
    in(&s, SPM_R, copy);
    out(&s, SPM_W);
    ck_assert_int_eq(exec(&s, SPM_MINING_STORE), 0);
    ck_assert_int_eq(spm_mining_rules_decode(s.ops[2].out, s.ops[2].out_len, &r), 0);
    ck_assert_uint_eq(r.n, 6);
    ck_assert_uint_eq(reply(&s, 0), 6);
    for (uint32_t i = 0; i < 6; i++) {
        uint32_t f = i % 3;
        ck_assert_uint_eq(r.xlen[i], first.xlen[f]);
        ck_assert_uint_eq(r.ylen[i], first.ylen[f]);
        ck_assert_uint_eq(r.supz[i], first.supz[f]);
        ck_assert_uint_eq(r.supx[i], first.supx[f]);
        ck_assert_uint_eq(r.items[r.off[i]], first.items[first.off[f]]);
        ck_assert_uint_eq(r.items[r.off[i] + 1], first.items[first.off[f] + 1]);
    }
    spm_mining_rules_free(&first);
    spm_mining_rules_free(&r);
    done(&s);

    /* A range of post's sets: only {1 2} (sets 1..1), so only 2 => 1. */
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 1, "0:10|1:8|2:4"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "0 1:8|1 2:4"));
    out(&s, SPM_W);
    spm_buf_put_f64(&s.params, 0.8);
    spm_buf_put_u32(&s.params, 0);
    spm_buf_put_u32(&s.params, 1);
    spm_buf_put_u32(&s.params, 2);
    ck_assert_int_eq(exec(&s, SPM_MINING_CONFIDENCE), 0);
    ck_assert_int_eq(spm_mining_rules_decode(s.ops[2].out, s.ops[2].out_len, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.items[0], 2);
    ck_assert_uint_eq(r.items[1], 1);
    spm_mining_rules_free(&r);
    done(&s);

    /* A range that ends before it starts is refused. */
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 1, "0:10|1:8|2:4"));
    in(&s, SPM_R, sets(SPM_MINING_KIND_FSETS, 2, "0 1:8|1 2:4"));
    out(&s, SPM_W);
    spm_buf_put_f64(&s.params, 0.8);
    spm_buf_put_u32(&s.params, 0);
    spm_buf_put_u32(&s.params, 2);
    spm_buf_put_u32(&s.params, 1);
    ck_assert_int_eq(exec(&s, SPM_MINING_CONFIDENCE), SPM_EINVAL);
    done(&s);
}
END_TEST

/* ----------------------------------------------------- the depth-first miner */

/*  A random database over ranks 0 .. f1-1 (f1 <= 16): transactions as bit
    masks with weights, at most MDB_MAX. */
#define MDB_MAX 2000
typedef struct {
    uint32_t n, f1;
    uint32_t mask[MDB_MAX], w[MDB_MAX];
} mdb_t;

static uint64_t mdb_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/*  N transactions, each rank present with probability P percent; weights
    1..MAXW. */
static void mdb_fill(mdb_t *db, uint32_t f1, uint32_t n, uint32_t p, uint32_t maxw, uint64_t seed)
{
    db->n = n;
    db->f1 = f1;
    for (uint32_t t = 0; t < n; t++) {
        db->mask[t] = 0;
        for (uint32_t i = 0; i < f1; i++)
            if (mdb_rand(&seed) % 100 < p)
                db->mask[t] |= 1u << i;
        db->w[t] = 1 + (uint32_t)(mdb_rand(&seed) % maxw);
    }
}

/*  Transactions FROM..TO as a normalized block. */
static blob_t mdb_block(const mdb_t *db, uint32_t from, uint32_t to)
{
    static uint32_t off[MDB_MAX + 1], w[MDB_MAX], items[MDB_MAX * 16];
    spm_mining_trans_t b = {.normalized = 1, .off = off, .weight = w, .items = items};
    off[0] = 0;
    for (uint32_t t = from; t < to; t++) {
        uint32_t m = off[b.n];
        for (uint32_t i = 0; i < db->f1; i++)
            if (db->mask[t] >> i & 1)
                items[m++] = i;
        w[b.n] = db->w[t];
        off[++b.n] = m;
    }
    blob_t o;
    ck_assert_int_eq(spm_mining_trans_encode(&b, &o.data, &o.len), 0);
    return o;
}

/*  Every frequent set of length 2 .. MAXLEN (0: any) by brute force, in the
    output order: by length, then items. Returns how many; SETS[i] masks. */
static uint32_t mdb_brute(const mdb_t *db, uint64_t minsup, uint32_t maxlen, uint32_t *sets,
                          uint64_t *sup)
{
    static uint64_t all[1 << 16];
    uint32_t n = 0;
    for (uint32_t m = 0; m < 1u << db->f1; m++) {
        all[m] = 0;
        for (uint32_t t = 0; t < db->n; t++)
            all[m] += (db->mask[t] & m) == m ? db->w[t] : 0;
    }
    for (uint32_t k = 2; k <= db->f1 && (!maxlen || k <= maxlen); k++) {
        uint32_t from = n;
        for (uint32_t m = 0; m < 1u << db->f1; m++) {
            uint64_t s = all[m];
            if ((uint32_t)__builtin_popcount(m) != k)
                continue;
            if (s >= minsup) {
                sets[n] = m;
                sup[n++] = s;
            }
        }
        /* Lexicographic order of the item lists: compare the lowest bits
           where the masks differ. */
        for (uint32_t i = from + 1; i < n; i++)
            for (uint32_t j = i; j > from; j--) {
                uint32_t a = sets[j - 1], b = sets[j], d = a ^ b;
                /* the set holding the lowest differing item comes first,
                   unless that item is the shorter's end: equal k, so no */
                if (!(b & d & -d))
                    break;
                sets[j - 1] = b;
                sets[j] = a;
                uint64_t x = sup[j - 1];
                sup[j - 1] = sup[j];
                sup[j] = x;
            }
    }
    return n;
}

/*  Runs MineClassBlock over DB (in three blocks) for one class; returns the
    reply's status (0 whole, 1 too big, 2 partial: resume at *RA, *RB) and
    leaves the output block in *RES. */
static uint32_t mine_class_soft(const mdb_t *db, uint64_t minsup, uint32_t maxlen, uint32_t lo,
                                uint32_t hi, uint32_t slo, uint32_t shi, uint32_t cap,
                                uint32_t soft, blob_t *res, uint32_t *ra, uint32_t *rb)
{
    si_t s = {0};
    in(&s, SPM_R, mdb_block(db, 0, db->n / 3));
    in(&s, SPM_R, mdb_block(db, db->n / 3, db->n / 2));
    in(&s, SPM_R, mdb_block(db, db->n / 2, db->n));
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, db->f1);
    spm_buf_put_u64(&s.params, minsup);
    spm_buf_put_u32(&s.params, maxlen);
    spm_buf_put_u32(&s.params, lo);
    spm_buf_put_u32(&s.params, hi);
    spm_buf_put_u32(&s.params, slo);
    spm_buf_put_u32(&s.params, shi);
    spm_buf_put_u32(&s.params, cap);
    spm_buf_put_u32(&s.params, soft);
    ck_assert_msg(exec(&s, SPM_MINING_MINE_CLASS) == 0, "%s", spm_error_detail());
    uint32_t status = reply(&s, 0), nlen = reply(&s, 1);
    spm_mining_itemsets_t b;
    ck_assert_int_eq(spm_mining_itemsets_decode(s.ops[3].out, s.ops[3].out_len, &b), 0);
    ck_assert_uint_eq(b.nlen, nlen);
    for (uint32_t g = 0; g < nlen; g++) {
        ck_assert_uint_eq(reply(&s, 2 + 2 * g), b.lv[g].k);
        ck_assert_uint_eq(reply(&s, 3 + 2 * g), b.lv[g].n);
    }
    *ra = reply(&s, 2 + 2 * nlen);
    *rb = reply(&s, 3 + 2 * nlen);
    ck_assert_uint_le(status, 2);
    if (status == 1)
        ck_assert_uint_eq(nlen, 0);
    spm_mining_itemsets_free(&b);
    res->data = s.ops[3].out;
    res->len = s.ops[3].out_len;
    s.ops[3].out = NULL;
    done(&s);
    return status;
}

static uint32_t mine_class(const mdb_t *db, uint64_t minsup, uint32_t maxlen, uint32_t lo,
                           uint32_t hi, uint32_t slo, uint32_t shi, uint32_t cap, blob_t *res)
{
    uint32_t ra, rb;
    return mine_class_soft(db, minsup, maxlen, lo, hi, slo, shi, cap, cap, res, &ra, &rb);
}

typedef struct {
    uint32_t lo, hi, slo, shi;
} class_t;

/*  The blocks OUT[0..NOUT), read length by length and block by block,
    hold the sets WANT (bitmasks) with supports WSUP in order, and nothing
    else; frees the blocks. */
static void blocks_hold_in_order(const mdb_t *db, blob_t *out, uint32_t nout, const uint32_t *want,
                                 const uint64_t *wsup, uint32_t nwant)
{
    uint32_t at = 0;
    for (uint32_t k = 2; k <= db->f1; k++)
        for (uint32_t i = 0; i < nout; i++) {
            spm_mining_sets_t g;
            ck_assert_int_eq(spm_mining_itemsets_decode_length(out[i].data, out[i].len, k, &g), 0);
            for (uint32_t j = 0; j < g.n; j++, at++) {
                uint32_t m = 0;
                for (uint32_t x = 0; x < k; x++)
                    m |= 1u << g.items[(size_t)j * k + x];
                ck_assert_uint_lt(at, nwant);
                ck_assert_msg(want[at] == m && wsup[at] == g.counts[j],
                              "set %u: got mask %x support %llu, want %x %llu", at, m,
                              (unsigned long long)g.counts[j], want[at],
                              (unsigned long long)wsup[at]);
            }
            spm_mining_sets_free(&g);
        }
    ck_assert_uint_eq(at, nwant);
    for (uint32_t i = 0; i < nout; i++)
        free(out[i].data);
}

/*  Mines DB class by class (in order) and checks the concatenation, length
    by length, against brute force. */
static void classes_vs_brute(const mdb_t *db, uint64_t minsup, uint32_t maxlen, const class_t *c,
                             uint32_t nc)
{
    static uint32_t want[1 << 16];
    static uint64_t wsup[1 << 16];
    uint32_t nwant = mdb_brute(db, minsup, maxlen, want, wsup);
    blob_t out[32];
    ck_assert_uint_le(nc, 32);
    uint32_t n2 = 0; /* sets of two items or more: a shape with none tests nothing */
    for (uint32_t i = 0; i < nwant; i++)
        n2 += __builtin_popcount(want[i]) >= 2;
    ck_assert_msg(n2 >= 10, "only %u sets of two items or more", n2);
    for (uint32_t i = 0; i < nc; i++)
        ck_assert_uint_eq(
            mine_class(db, minsup, maxlen, c[i].lo, c[i].hi, c[i].slo, c[i].shi, 0, &out[i]), 0);
    blocks_hold_in_order(db, out, nc, want, wsup, nwant);
}

/*  Eclat against brute force, whole and in classes, on sparse and dense
    data and heavy weights: small ones, up to 2^20 (20 bit planes), and
    weights up to 1,000 on one transaction in five (words of heavy
    transactions first, then light ones); every length, and at most 3
    items. */
static void eclat_shapes_vs_brute_force(void)
{
    static mdb_t db;
    const class_t whole[] = {{0, 16, 0, UINT32_MAX}};
    const class_t parts[] = {{0, 1, 0, 3},           {0, 1, 3, UINT32_MAX}, {1, 2, 0, UINT32_MAX},
                             {2, 5, 0, UINT32_MAX},  {5, 6, 0, 9},          {5, 6, 9, 10},
                             {5, 6, 10, UINT32_MAX}, {6, 16, 0, UINT32_MAX}};
    struct {
        uint32_t f1, n, p, maxw, every;
        uint64_t minsup;
    } shapes[] = {{12, 500, 20, 1, 1, 8},
                  {12, 300, 75, 1, 1, 150},
                  {10, 400, 50, 4, 1, 120},
                  {16, 600, 40, 2, 1, 90},
                  {16, 600, 40, 1u << 20, 1, 30000000},
                  {16, 1500, 40, 1000, 5, 7000}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        mdb_fill(&db, shapes[i].f1, shapes[i].n, shapes[i].p, shapes[i].maxw, 77 + i);
        for (uint32_t t = 0; t < db.n; t++)
            if (t % shapes[i].every != 0)
                db.w[t] = 1;
        class_t w = whole[0], pp[8];
        w.hi = db.f1;
        memcpy(pp, parts, sizeof pp);
        pp[7].hi = db.f1;
        for (uint32_t maxlen = 0; maxlen <= 3; maxlen += 3) {
            classes_vs_brute(&db, shapes[i].minsup, maxlen, &w, 1);
            classes_vs_brute(&db, shapes[i].minsup, maxlen, pp, 8);
        }
    }
}

START_TEST(eclat_classes_vs_brute_force)
{
    eclat_shapes_vs_brute_force();
}
END_TEST

/*  The same without the AVX-512 loops (which this CPU may not have run
    above): SPM_NO_AVX512 is read at the first class SI of a process, and
    each test runs in a process of its own. */
START_TEST(eclat_classes_vs_brute_force_plain)
{
    ck_assert_int_eq(setenv("SPM_NO_AVX512", "1", 1), 0);
    eclat_shapes_vs_brute_force();
}
END_TEST

/*  With a small soft bound a class stops after complete 2-item prefixes and
    says where to resume; following the resume points (the rest of the
    first item, then the later first items) gives every set in order. */
START_TEST(eclat_partial_blocks_resume)
{
    static mdb_t db;
    static uint32_t want[1 << 16];
    static uint64_t wsup[1 << 16];
    struct {
        uint32_t f1, n, p, maxw;
        uint64_t minsup;
    } shapes[] = {{12, 300, 75, 1, 150}, {14, 500, 45, 3, 100}};
    for (size_t sh = 0; sh < 2; sh++) {
        mdb_fill(&db, shapes[sh].f1, shapes[sh].n, shapes[sh].p, shapes[sh].maxw, 31 + sh);
        uint32_t nwant = mdb_brute(&db, shapes[sh].minsup, 0, want, wsup);
        class_t stack[64] = {{0, db.f1, 0, UINT32_MAX}};
        uint32_t top = 1, nout = 0, partial = 0;
        blob_t out[256];
        while (top > 0) {
            class_t c = stack[--top];
            uint32_t ra, rb;
            ck_assert_uint_lt(nout, 256);
            uint32_t st = mine_class_soft(&db, shapes[sh].minsup, 0, c.lo, c.hi, c.slo, c.shi, 0,
                                          120, &out[nout++], &ra, &rb);
            ck_assert_uint_ne(st, 1);
            if (st == 0)
                continue;
            partial++;
            ck_assert_uint_ge(ra, c.lo);
            ck_assert_uint_lt(ra, c.hi);
            ck_assert_uint_lt(top + 2, 64);
            if (ra + (rb > 0) < c.hi) /* later first items, after */
                stack[top++] = (class_t){ra + (rb > 0), c.hi, 0, UINT32_MAX};
            if (rb > 0) /* the rest of first item ra, first */
                stack[top++] = (class_t){ra, ra + 1, rb, c.shi};
        }
        ck_assert_uint_gt(partial, 2);
        blocks_hold_in_order(&db, out, nout, want, wsup, nwant);
    }
}
END_TEST

/*  A piece of a class as the SF keeps it: first items [lo, hi), next items
    [slo, shi), a prefix of depth items (0: none) and whether its
    (depth + 1)-sets were emitted by the class it resumes. */
typedef struct {
    uint32_t lo, hi, slo, shi, depth, pre[SPM_MINING_MAX_DEPTH];
    int quiet;
} piece_t;

/*  Runs MineClassBlock with SPM_MINING_CLASS_DEEP for piece C of DB (in
    three blocks) with soft bound SOFT; returns the status, the resume
    point in *RA, *RB, *RN and the block in *RES. */
static uint32_t mine_piece(const mdb_t *db, uint64_t minsup, const piece_t *c, uint32_t soft,
                           blob_t *res, uint32_t *ra, uint32_t *rb, uint32_t *rn)
{
    si_t s = {0};
    in(&s, SPM_R, mdb_block(db, 0, db->n / 3));
    in(&s, SPM_R, mdb_block(db, db->n / 3, db->n / 2));
    in(&s, SPM_R, mdb_block(db, db->n / 2, db->n));
    out(&s, SPM_W);
    uint32_t head[] = {c->lo, c->hi, c->slo, c->shi, 0, soft, 0, 0, c->depth};
    spm_buf_put_u32(&s.params, db->f1);
    spm_buf_put_u64(&s.params, minsup);
    spm_buf_put_u32(&s.params, 0);
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        spm_buf_put_u32(&s.params, head[i]);
    for (uint32_t k = 0; k < c->depth; k++)
        spm_buf_put_u32(&s.params, c->pre[k]);
    spm_buf_put_u32(&s.params, 0); /* own: none */
    spm_buf_put_u32(&s.params, SPM_MINING_CLASS_DEEP | (c->quiet ? SPM_MINING_CLASS_QUIET : 0));
    ck_assert_msg(exec(&s, SPM_MINING_MINE_CLASS) == 0, "%s", spm_error_detail());
    uint32_t status = reply(&s, 0), nlen = reply(&s, 1);
    ck_assert_uint_eq(s.reply_len, 4 * (5 + 2 * (size_t)nlen));
    *ra = reply(&s, 2 + 2 * nlen);
    *rb = reply(&s, 3 + 2 * nlen);
    *rn = reply(&s, 4 + 2 * nlen);
    res->data = s.ops[3].out;
    res->len = s.ops[3].out_len;
    s.ops[3].out = NULL;
    done(&s);
    return status;
}

/*  With SPM_MINING_CLASS_DEEP and a small soft bound a class also stops
    inside one of its top prefixes (status 3), so that no prefix holding a
    large share of the sets runs as one SI; following every resume point
    (the longer prefix's class, quiet, then the rest of the class) gives
    every set once, each length in order, and with the pieces in that order
    the same sets as brute force. */
START_TEST(eclat_stops_inside_top_prefixes)
{
    static mdb_t db;
    static uint32_t want[1 << 16];
    static uint64_t wsup[1 << 16];
    struct {
        uint32_t f1, n, p, maxw;
        uint64_t minsup;
    } shapes[] = {{12, 300, 85, 1, 90}, {14, 400, 80, 2, 200}, {16, 400, 80, 1, 140}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        mdb_fill(&db, shapes[sh].f1, shapes[sh].n, shapes[sh].p, shapes[sh].maxw, 51 + sh);
        uint32_t nwant = mdb_brute(&db, shapes[sh].minsup, 0, want, wsup);
        static piece_t stack[512];
        stack[0] = (piece_t){0, db.f1, 0, UINT32_MAX, 0, {0}, 0};
        uint32_t top = 1, nout = 0, deep = 0;
        static blob_t out[4096];
        while (top > 0) {
            piece_t c = stack[--top];
            uint32_t ra, rb, rn;
            ck_assert_uint_lt(nout, 4096);
            uint32_t st = mine_piece(&db, shapes[sh].minsup, &c, 60, &out[nout++], &ra, &rb, &rn);
            ck_assert_uint_ne(st, 1);
            if (st == 0)
                continue;
            ck_assert_uint_lt(top + 3, 512);
            /* pushed in reverse: the longer prefix first, then the rest
               of the top prefixes, then the later first items */
            uint32_t next = rb; /* the rest of the class's top prefixes, from next */
            if (st == 3) {
                deep++;
                ck_assert_uint_gt(rn, rb);
                next = rb + 1;
            }
            if (c.depth == 0) {
                uint32_t later = next == 0 ? ra : ra + 1; /* later first items */
                if (later < c.hi)
                    stack[top++] = (piece_t){later, c.hi, 0, UINT32_MAX, 0, {0}, 0};
                if (next > 0 && next < db.f1)
                    stack[top++] = (piece_t){ra, ra + 1, next, c.shi, 0, {0}, 0};
            } else if (next < db.f1) {
                piece_t r = c;
                r.slo = next;
                stack[top++] = r;
            }
            if (st == 3) {
                piece_t d = c;
                if (d.depth == 0)
                    d.pre[d.depth++] = ra;
                d.pre[d.depth++] = rb;
                d.lo = ra;
                d.hi = ra + 1;
                d.slo = rn;
                d.shi = UINT32_MAX;
                d.quiet = 1;
                stack[top++] = d;
            }
        }
        ck_assert_uint_gt(deep, 2);
        blocks_hold_in_order(&db, out, nout, want, wsup, nwant);
    }
}
END_TEST

/*  A class over the cap replies too big and writes nothing; its halves fit. */
START_TEST(eclat_class_too_big)
{
    static mdb_t db;
    mdb_fill(&db, 12, 300, 75, 1, 5);
    blob_t o;
    ck_assert_uint_eq(mine_class(&db, 150, 0, 0, 12, 0, UINT32_MAX, 0, &o), 0);
    size_t whole = o.len;
    free(o.data);
    ck_assert_uint_eq(mine_class(&db, 150, 0, 0, 12, 0, UINT32_MAX, (uint32_t)whole / 2, &o), 1);
    spm_mining_itemsets_t b;
    ck_assert_int_eq(spm_mining_itemsets_decode(o.data, o.len, &b), 0);
    ck_assert_uint_eq(b.nlen, 0);
    spm_mining_itemsets_free(&b);
    free(o.data);
    /* A 2-item prefix class is small enough. */
    ck_assert_uint_eq(mine_class(&db, 150, 0, 0, 1, 5, 6, (uint32_t)whole / 2, &o), 0);
    free(o.data);
    /* Items outside the rank domain are refused. */
    si_t s = {0};
    in(&s, SPM_R, trans(1, "0 3 12|"));
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 12);
    spm_buf_put_u64(&s.params, 1);
    for (int i = 0; i < 7; i++)
        spm_buf_put_u32(&s.params, i == 2 ? 12 : i == 4 ? UINT32_MAX : 0);
    ck_assert_int_eq(exec(&s, SPM_MINING_MINE_CLASS), SPM_EFORMAT);
    done(&s);
}
END_TEST

/*  Runs MineClassBlock over DB (one block) for first items [LO, HI), in
    rank order, or (FITEMS not NULL) in item order with that block of
    frequent items; the output into *RES. */
static uint32_t mine_class_bits(const mdb_t *db, uint32_t f1, uint32_t lo, uint32_t hi,
                                const blob_t *fitems, uint32_t bits_kb, blob_t *res)
{
    si_t s = {0};
    in(&s, SPM_R, mdb_block(db, 0, db->n));
    if (fitems) {
        blob_t c = {malloc(fitems->len), fitems->len};
        memcpy(c.data, fitems->data, c.len);
        in(&s, SPM_R, c);
    }
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, f1);
    spm_buf_put_u64(&s.params, 60);
    spm_buf_put_u32(&s.params, 0);
    spm_buf_put_u32(&s.params, lo);
    spm_buf_put_u32(&s.params, hi);
    spm_buf_put_u32(&s.params, 0);
    spm_buf_put_u32(&s.params, UINT32_MAX);
    spm_buf_put_u32(&s.params, 0);
    spm_buf_put_u32(&s.params, 0);
    spm_buf_put_u32(&s.params, fitems ? 1 : 0);
    spm_buf_put_u32(&s.params, bits_kb);
    ck_assert_msg(exec(&s, SPM_MINING_MINE_CLASS) == 0, "%s", spm_error_detail());
    uint32_t status = reply(&s, 0);
    *res = (blob_t){s.ops[s.n - 1].out, s.ops[s.n - 1].out_len};
    s.ops[s.n - 1].out = NULL;
    done(&s);
    return status;
}

static void mine_class_order(const mdb_t *db, uint32_t f1, uint32_t lo, uint32_t hi,
                             const blob_t *fitems, blob_t *res)
{
    ck_assert_uint_eq(mine_class_bits(db, f1, lo, hi, fitems, 0, res), 0);
}

/*  Past its bitset bound a class of several first items replies "too big"
    with an empty block, so that it is split; a class of one first item
    mines all the same, and finds what it finds without the bound. */
START_TEST(eclat_class_bits_bound)
{
    static mdb_t db;
    mdb_fill(&db, 12, 1500, 55, 1, 33); /* 24 words a bitset: 2.3 KiB for 12 */
    blob_t whole, one, b;
    spm_mining_itemsets_t is;
    ck_assert_uint_eq(mine_class_bits(&db, 12, 0, 6, NULL, 1, &b), 1);
    ck_assert_int_eq(spm_mining_itemsets_decode(b.data, b.len, &is), 0);
    ck_assert_uint_eq(is.nlen, 0);
    spm_mining_itemsets_free(&is);
    free(b.data);
    ck_assert_uint_eq(mine_class_bits(&db, 12, 0, 6, NULL, 64, &whole), 0);
    ck_assert_uint_eq(mine_class_bits(&db, 12, 0, 1, NULL, 1, &one), 0);
    ck_assert_uint_eq(mine_class_bits(&db, 12, 0, 1, NULL, 0, &b), 0);
    ck_assert_uint_eq(one.len, b.len);
    ck_assert_int_eq(memcmp(one.data, b.data, b.len), 0);
    ck_assert_uint_gt(whole.len, one.len);
    free(whole.data);
    free(one.data);
    free(b.data);
}
END_TEST

static int cmp_set3(const void *a, const void *b, void *k)
{
    return spm_mining_set_cmp(a, b, *(const uint32_t *)k);
}

/*  In item order, with at most 128 frequent items, classes go by the
    items' positions (by item number), not by rank: the class [lo, hi)
    holds the sets whose first item is at a position in it. Over classes
    that cover every position, each length's sets, read block after block
    in class order, are the rank-order classes' sets mapped to their items
    (rank r is the item of the r-th lowest count) and sorted: the client
    reads them so, with no merge. With more items, classes go by rank: each
    block holds its rank-order class's sets mapped and sorted. With F1
    items, only the first 12 ranks in the transactions. */
static void class_in_item_order(uint32_t f1)
{
    static mdb_t db;
    static uint32_t items[5000];
    static uint64_t counts[5000];
    mdb_fill(&db, 12, 500, 55, 3, 21);
    /* Items 5, 12, 19, ... with counts that put ranks in another order. */
    for (uint32_t p = 0; p < f1; p++) {
        items[p] = 5 + 7 * p;
        counts[p] = 1000 + (p * 5) % f1;
    }
    spm_mining_items_t f = {.n = f1, .lo = 0, .hi = 5 + 7 * f1, .items = items, .counts = counts};
    blob_t fb, rb[3], ib[3];
    ck_assert_int_eq(spm_mining_items_encode(&f, &fb.data, &fb.len), 0);
    uint32_t *order;
    ck_assert_int_eq(spm_mining_rank_order(&f, &order), 0);
    uint32_t classes[][2] = {{0, 3}, {3, 4}, {4, f1}};
    for (int c = 0; c < 3; c++) {
        mine_class_order(&db, f1, classes[c][0], classes[c][1], NULL, &rb[c]);
        mine_class_order(&db, f1, classes[c][0], classes[c][1], &fb, &ib[c]);
    }
    uint32_t found = 0;
    for (uint32_t k = 2; k <= 12; k++) {
        spm_mining_sets_t r[3], i[3];
        uint32_t nr = 0, ni = 0;
        for (int c = 0; c < 3; c++) {
            ck_assert_int_eq(spm_mining_itemsets_decode_length(rb[c].data, rb[c].len, k, &r[c]), 0);
            ck_assert_int_eq(spm_mining_itemsets_decode_length(ib[c].data, ib[c].len, k, &i[c]), 0);
            nr += r[c].n;
            ni += i[c].n;
        }
        ck_assert_uint_eq(nr, ni);
        /* rank sets to items, with counts after the items, then sorted */
        uint32_t w = k + 2, *want = malloc(((size_t)nr + 1) * w * 4), s = 0;
        for (int c = 0; c < 3; c++)
            for (uint32_t q = 0; q < r[c].n; q++, s++) {
                uint32_t *x = want + (size_t)s * w;
                for (uint32_t j = 0; j < k; j++)
                    x[j] = items[order[r[c].items[(size_t)q * k + j]]];
                for (uint32_t j = 1; j < k; j++)
                    for (uint32_t m = j; m > 0 && x[m - 1] > x[m]; m--) {
                        uint32_t t = x[m];
                        x[m] = x[m - 1];
                        x[m - 1] = t;
                    }
                memcpy(x + k, &r[c].counts[q], 8);
            }
        if (f1 <= 128) {
            qsort_r(want, nr, (size_t)w * 4, cmp_set3, &k);
        } else {
            for (int c = 0, at = 0; c < 3; at += (int)r[c++].n)
                qsort_r(want + (size_t)at * w, r[c].n, (size_t)w * 4, cmp_set3, &k);
        }
        s = 0;
        for (int c = 0; c < 3; c++)
            for (uint32_t q = 0; q < i[c].n; q++, s++) {
                const uint32_t *y = i[c].items + (size_t)q * k;
                ck_assert_int_eq(memcmp(want + (size_t)s * w, y, 4 * k), 0);
                ck_assert_int_eq(memcmp(want + (size_t)s * w + k, &i[c].counts[q], 8), 0);
                uint32_t first = (y[0] - 5) / 7; /* its position */
                ck_assert(f1 > 128 || (first >= classes[c][0] && first < classes[c][1]));
            }
        found += nr;
        free(want);
        for (int c = 0; c < 3; c++) {
            spm_mining_sets_free(&r[c]);
            spm_mining_sets_free(&i[c]);
        }
    }
    ck_assert_uint_gt(found, 10);
    for (int c = 0; c < 3; c++) {
        free(rb[c].data);
        free(ib[c].data);
    }
    free(order);
    free(fb.data);
}

/*  ... and a block of the wrong number of items is refused. */
START_TEST(eclat_class_in_item_order)
{
    class_in_item_order(12);
    class_in_item_order(100);  /* positions beyond the transactions' ranks */
    class_in_item_order(200);  /* by rank, sorted through a bit mask */
    class_in_item_order(5000); /* by rank, sorted within each set */
    static mdb_t db;
    mdb_fill(&db, 12, 500, 55, 3, 21);
    uint32_t items[11];
    uint64_t counts[11];
    for (uint32_t p = 0; p < 11; p++) {
        items[p] = p;
        counts[p] = 1000;
    }
    spm_mining_items_t f = {.n = 11, .lo = 0, .hi = 100, .items = items, .counts = counts};
    blob_t fb;
    ck_assert_int_eq(spm_mining_items_encode(&f, &fb.data, &fb.len), 0);
    si_t s = {0};
    in(&s, SPM_R, mdb_block(&db, 0, db.n));
    in(&s, SPM_R, fb);
    out(&s, SPM_W);
    spm_buf_put_u32(&s.params, 12);
    spm_buf_put_u64(&s.params, 60);
    uint32_t p[] = {0, 0, 3, 0, UINT32_MAX, 0, 0, 1}; /* maxlen .. soft, order */
    for (int j = 0; j < 8; j++)
        spm_buf_put_u32(&s.params, p[j]);
    ck_assert_int_eq(exec(&s, SPM_MINING_MINE_CLASS), SPM_EFORMAT);
    done(&s);
}
END_TEST

/*  CutFrequentSetBlock cuts the 2-sets of class blocks across their
    boundaries and replies as GetFrequentSetBlock does. */
START_TEST(eclat_cut_sets)
{
    static mdb_t db;
    static uint32_t want[1 << 12];
    static uint64_t wsup[1 << 12];
    mdb_fill(&db, 10, 300, 60, 2, 9);
    uint32_t n = mdb_brute(&db, 100, 2, want, wsup);
    ck_assert_uint_gt(n, 12);
    si_t s = {0};
    blob_t b[3];
    mine_class(&db, 100, 0, 0, 1, 0, UINT32_MAX, 0, &b[0]);
    mine_class(&db, 100, 0, 1, 4, 0, UINT32_MAX, 0, &b[1]);
    mine_class(&db, 100, 0, 4, 10, 0, UINT32_MAX, 0, &b[2]);
    for (int i = 0; i < 3; i++)
        in(&s, SPM_R, b[i]);
    out(&s, SPM_W);
    uint32_t skip = 3, take = n - 5;
    spm_buf_put_u32(&s.params, 2);
    spm_buf_put_u32(&s.params, skip);
    spm_buf_put_u32(&s.params, take);
    ck_assert_msg(exec(&s, SPM_MINING_CUT_SETS) == 0, "%s", spm_error_detail());
    spm_mining_sets_t f;
    ck_assert_int_eq(
        spm_mining_sets_decode(SPM_MINING_KIND_FSETS, s.ops[3].out, s.ops[3].out_len, &f), 0);
    ck_assert_uint_eq(f.n, take);
    for (uint32_t i = 0; i < take; i++) {
        ck_assert_uint_eq(1u << f.items[2 * i] | 1u << f.items[2 * i + 1], want[skip + i]);
        ck_assert_uint_eq(f.counts[i], wsup[skip + i]);
    }
    spm_mining_fsets_reply_t r;
    ck_assert_int_eq(spm_mining_fsets_reply_decode(s.reply, s.reply_len, &r), 0);
    ck_assert_uint_eq(r.n, take);
    ck_assert_uint_eq(r.k, 2);
    spm_mining_fsets_reply_free(&r);
    spm_mining_sets_free(&f);
    /* Past the end, or out of order, is refused. */
    free(s.ops[3].out);
    s.ops[3].out = NULL;
    spm_buf_free(&s.params);
    spm_buf_put_u32(&s.params, 2);
    spm_buf_put_u32(&s.params, skip);
    spm_buf_put_u32(&s.params, n);
    ck_assert_int_eq(exec(&s, SPM_MINING_CUT_SETS), SPM_ERANGE);
    blob_t x = b[0];
    s.ops[0].in = b[1].data;
    s.ops[0].in_len = b[1].len;
    s.ops[1].in = x.data;
    s.ops[1].in_len = x.len;
    spm_buf_free(&s.params);
    spm_buf_put_u32(&s.params, 2);
    spm_buf_put_u32(&s.params, 0);
    spm_buf_put_u32(&s.params, n);
    free(s.reply);
    s.reply = NULL;
    ck_assert_int_eq(exec(&s, SPM_MINING_CUT_SETS), SPM_EFORMAT);
    done(&s);
}
END_TEST

/* ------------------------------------------------------- the whole program */

static int inproc_get(void *vm, const spm_sdb_t *ids, size_t n,
                      int (*fn)(void *arg, size_t i, const void *data, size_t len), void *arg)
{
    int rc = 0;
    for (size_t i = n; i-- > 0 && rc == 0;) { /* last first: any order is allowed */
        void *data;
        size_t len;
        if ((rc = spm_inproc_get(vm, ids[i], &data, &len)) == 0) {
            rc = fn(arg, i, data, len);
            free(data);
        }
    }
    return rc;
}

/*  Mines a Quest database on the in-process VM with tiny blocks and join
    capacity (every join variant and many blocks per level) and compares
    with the reference. */
static size_t program_run(uint32_t block, uint32_t join_cap, uint64_t minsup, uint32_t maxcons,
                          uint32_t algorithm, uint32_t maxlen, uint32_t flags)
{
    spm_quest_params_t p;
    spm_quest_defaults(&p);
    p.transactions = 1200;
    p.items = 60;
    p.patterns = 25;
    p.avg_pattern = 5;
    char file[] = "/tmp/spm_si_prog.XXXXXX";
    int fd = mkstemp(file);
    FILE *f = fdopen(fd, "w");
    spm_quest_t *q = spm_quest_new(&p);
    spm_inproc_t *vm = spm_inproc_new();
    spm_apriori_args_t a = {.ntrans = p.transactions,
                            .minsup = minsup,
                            .minconf = 0.6,
                            .maxcons = maxcons,
                            .maxlen = maxlen,
                            .flags = flags,
                            .algorithm = algorithm,
                            .block = block,
                            .join_cap = join_cap};
    spm_sdb_t ids[4096];
    a.staged = ids;
    uint32_t off[4097] = {0}, w[4096], it[4096 * 64];
    const uint32_t *t;
    size_t n;
    spm_mining_trans_t b = {.off = off, .weight = w, .items = it};
    for (int more = 1; more;) {
        more = spm_quest_next(q, &t, &n) == 1;
        if (more) {
            for (size_t i = 0; i < n; i++)
                fprintf(f, i ? " %u" : "%u", t[i]);
            fputc('\n', f);
            memcpy(it + off[b.n], t, n * 4);
            w[b.n] = 1;
            off[b.n + 1] = off[b.n] + (uint32_t)n;
            b.n++;
        }
        if (b.n == block || (!more && b.n)) {
            void *d;
            size_t l;
            ck_assert_int_eq(spm_mining_trans_encode(&b, &d, &l), 0);
            ck_assert_int_eq(spm_inproc_put(vm, SPM_MINING_TRANS, d, l, &ids[a.nstaged++]), 0);
            free(d);
            b.n = 0;
        }
    }
    fclose(f);
    spm_quest_destroy(&q);
    void *args, *res;
    size_t alen, rlen;
    ck_assert_int_eq(spm_apriori_args_encode(&a, &args, &alen), 0);
    int rc = spm_inproc_run(vm, SPM_APRIORI_PROGRAM, args, alen, &res, &rlen);
    ck_assert_msg(rc == 0, "apriori failed: %s", spm_error_detail());
    free(args);
    spm_apriori_result_t r;
    ck_assert_int_eq(spm_apriori_result_decode(res, rlen, &r), 0);
    free(res);
    spm_mine_out_t o = {.ntrans = p.transactions, .minsup = minsup, .minconf = 0.6};
    ck_assert_int_eq(spm_mine_fetch(inproc_get, vm, &r, &o), 0);

    ref_db_t db;
    ref_result_t want;
    ck_assert_int_eq(ref_db_load(file, &db), 0);
    unlink(file);
    ref_mine(&db, minsup, 0.6, maxcons, &want);
    /* The reference knows no longest set: drop what is longer. */
    size_t nsets = 0, nrules = 0;
    for (size_t i = 0; i < want.nsets; i++)
        nsets += !maxlen || want.sets[i].k <= maxlen;
    ck_assert_uint_eq(spm_mine_nitemsets(&o), nsets);
    int same = 1;
    uint32_t k;
    const uint32_t *items;
    uint64_t count;
    for (size_t at = 0; at < nsets; at++) {
        ck_assert_int_eq(spm_mine_next_itemset(&o, &k, &items, &count), 1);
        same &= want.sets[at].k == k && want.sets[at].sup == count &&
                memcmp(want.sets[at].items, items, (size_t)k * 4) == 0;
    }
    ck_assert_int_eq(spm_mine_next_itemset(&o, &k, &items, &count), 0);
    ck_assert_msg(same, "itemsets differ from the reference");
    spm_mine_rule_t g;
    for (size_t i = 0; i < want.nrules && !(flags & SPM_APRIORI_ITEMSETS_ONLY); i++) {
        const ref_rule_t *w = &want.rules[i];
        if (maxlen && w->xlen + w->ylen > maxlen)
            continue;
        nrules++;
        ck_assert_int_eq(spm_mine_next_rule(&o, &g), 1);
        same &= g.supz == w->supz && g.supx == w->supx && g.xlen == w->xlen && g.ylen == w->ylen &&
                memcmp(g.x, w->x, w->xlen * 4) == 0 && memcmp(g.y, w->y, w->ylen * 4) == 0;
    }
    ck_assert_int_eq(spm_mine_next_rule(&o, &g), 0);
    ck_assert_uint_eq(spm_mine_nrules(&o), nrules);
    ck_assert_msg(same, "rules differ from the reference");
    /* the work went through SIs: loads, counts and shrinks, then levels
       (or, depth first, four classes per IEU and their cuts) */
    size_t sis = spm_inproc_sis(vm);
    ck_assert_uint_gt(sis, maxlen == 1 || algorithm == SPM_APRIORI_ECLAT ? 10 : 20);
    spm_mine_out_free(&o);
    spm_apriori_result_free(&r);
    ref_result_free(&want);
    ref_db_free(&db);
    spm_inproc_destroy(&vm);
    return sis;
}

static void program_vs_ref(uint32_t block, uint32_t join_cap, uint64_t minsup, uint32_t maxcons)
{
    program_run(block, join_cap, minsup, maxcons, SPM_APRIORI_LEVELWISE, 0, 0);
}

START_TEST(program_small_blocks)
{
    program_vs_ref(50, 16, 60, 0);
}
END_TEST

START_TEST(program_one_block)
{
    program_vs_ref(2000, 65536, 40, 1);
}
END_TEST

START_TEST(program_tiny_joins)
{
    program_vs_ref(7, 3, 90, 0);
}
END_TEST

/*  The depth-first miner. Class blocks of 32 KiB (join_cap 64) are too
    small for some classes: they are split and issued again (more SIs). */
START_TEST(program_eclat)
{
    size_t whole = program_run(50, 65536, 60, 0, SPM_APRIORI_ECLAT, 0, 0);
    size_t split = program_run(50, 64, 60, 0, SPM_APRIORI_ECLAT, 0, 0);
    ck_assert_uint_gt(split, whole);
    program_run(2000, 65536, 40, 1, SPM_APRIORI_ECLAT, 0, 0);
    program_run(100, 65536, 50, 0, SPM_APRIORI_AUTO, 0, 0);
}
END_TEST

START_TEST(program_eclat_maxlen_and_itemsets_only)
{
    program_run(50, 64, 40, 0, SPM_APRIORI_ECLAT, 3, 0);
    program_run(300, 65536, 40, 0, SPM_APRIORI_ECLAT, 2, SPM_APRIORI_ITEMSETS_ONLY);
    /* class blocks in item order, many of them split or stopped early */
    program_run(50, 64, 40, 0, SPM_APRIORI_ECLAT, 0, SPM_APRIORI_ITEMSETS_ONLY);
    program_run(300, 65536, 40, 0, SPM_APRIORI_ECLAT, 1, 0);
    program_run(300, 64, 30, 0, SPM_APRIORI_LEVELWISE, 3, SPM_APRIORI_ITEMSETS_ONLY);
}
END_TEST

/*  Class blocks of 512 bytes (join_cap 1): a 2-item prefix alone passes
    them, and its class is mined a level deeper, and deeper again, each
    prefix class emitting the prefix it stands for; the result is still the
    reference's, in item order (by position) and with rules (by rank). */
START_TEST(program_eclat_deep_prefixes)
{
    size_t split = program_run(50, 64, 30, 0, SPM_APRIORI_ECLAT, 0, SPM_APRIORI_ITEMSETS_ONLY);
    size_t deep = program_run(50, 1, 30, 0, SPM_APRIORI_ECLAT, 0, SPM_APRIORI_ITEMSETS_ONLY);
    ck_assert_uint_gt(deep, split);
    program_run(50, 8, 60, 0, SPM_APRIORI_ECLAT, 0, 0);
    program_run(50, 1, 30, 0, SPM_APRIORI_ECLAT, 4, SPM_APRIORI_ITEMSETS_ONLY);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mining_si");
    SPM_TEST_ADD(s, NULL, load_normalizes);
    SPM_TEST_ADD(s, NULL, load_parses_text);
    SPM_TEST_ADD(s, NULL, load_reads_file_lines);
    SPM_TEST_ADD(s, NULL, load_refuses_a_file_changed_since_it_was_cut);
    SPM_TEST_ADD(s, NULL, count_shrink_and_collect_items);
    SPM_TEST_ADD(s, NULL, shrink_and_merge_transactions);
    SPM_TEST_ADD(s, NULL, join_families_across_blocks);
    SPM_TEST_ADD(s, NULL, filter_drops_infrequent_subsets);
    SPM_TEST_ADD(s, NULL, count_prune_and_gather);
    SPM_TEST_ADD(s, NULL, confidence_and_store);
    SPM_TEST_ADD(s, NULL, eclat_classes_vs_brute_force);
    SPM_TEST_ADD(s, NULL, eclat_classes_vs_brute_force_plain);
    SPM_TEST_ADD(s, NULL, eclat_class_too_big);
    SPM_TEST_ADD(s, NULL, eclat_partial_blocks_resume);
    SPM_TEST_ADD(s, NULL, eclat_stops_inside_top_prefixes);
    SPM_TEST_ADD(s, NULL, eclat_cut_sets);
    SPM_TEST_ADD(s, NULL, eclat_class_in_item_order);
    SPM_TEST_ADD(s, NULL, eclat_class_bits_bound);
    const spm_test_case_t program = {.timeout_s = 60};
    SPM_TEST_ADD(s, &program, program_small_blocks);
    SPM_TEST_ADD(s, &program, program_one_block);
    SPM_TEST_ADD(s, &program, program_tiny_joins);
    SPM_TEST_ADD(s, &program, program_eclat);
    SPM_TEST_ADD(s, &program, program_eclat_maxlen_and_itemsets_only);
    SPM_TEST_ADD(s, &program, program_eclat_deep_prefixes);
    return s;
}

SPM_TEST_MAIN(suite)
