/*  =========================================================================
    targets - the fuzz targets: what hostile bytes reach, one function each

    @discuss
    Each spm_fuzz_NAME(data, size) feeds one input to one decoder the way
    bytes from the network or a user's file reach it, and aborts when an
    invariant breaks (sanitizers catch the rest). tests/fuzz/fuzz_NAME.c
    wraps it for libFuzzer (`make fuzz`, clang); tests/unit/test_fuzz.c
    replays the seed corpus and every kept crasher through the same
    functions with the ordinary compiler, so `make check` covers them.
    Header-only: each includer gets its own copy.

    Targets and their input layout:
      wire  [k][len1:2][frame1]...[lenk:2][framek][envelope...]: an
            envelope frame plus k (0-3) block frames sent through a real
            inproc DEALER -> ROUTER pair into spm_wire_recv.
      sdb   [type id:4][block...]: validate of the SDB type with that wire
            id (or, for an unknown id, the id-modulo-count-th registered
            type); a block it accepts goes through summary and merge, and
            the ISA's own decoders (matrix: decode, view; mining: each
            kind's decode; a text block is also parsed as LoadDataBlock
            parses it), and whatever those make must validate again.
      mtx   a Matrix Market file through the streaming reader; every entry
            it hands out lies inside the declared shape.
      fimi  [mode][file...]: a transaction file through the apriori reader
            (mode bit 0: named items); items are in range and named ones
            have names.
      npz   a NumPy .npy or SciPy .npz file through the binary matrix
            reader (isa/matrix/npmat.h; a file without magic is read as
            an .npz): every entry lies inside the shape and there are no
            more than declared; and every member of an archive, read
            whole through isa/core/nparray.h, gives what its header says.
      journal  [file...]: the file of job 7 in a scratch journal directory
            (vm/center/journal.h), replayed: the intact records come back, the rest
            is counted as damage and cut off, and a record appended after
            that replays after them on the next open, with no damage.
    @end
    =========================================================================
*/
#ifndef SPM_FUZZ_TARGETS_H_INCLUDED
#define SPM_FUZZ_TARGETS_H_INCLUDED

#include "isa/core/codec.h"
#include "runtime/registry.h"
#include "isa/matrix/block.h"
#include "isa/core/nparray.h"
#include "isa/core/npz.h"
#include "isa/matrix/mmio.h"
#include "isa/matrix/npmat.h"
#include "isa/matrix/raw.h"
#include "isa/mining/fimi.h"
#include "isa/mining/sdb.h"
#include "programs/apriori/reader.h"
#include "vm/center/journal.h"
#include "transport/wire.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/*  Aborts with MSG: an invariant of a decoder broke. */
static inline void spm_fuzz_broken(const char *target, const char *msg)
{
    fprintf(stderr, "fuzz %s: %s\n", target, msg);
    abort();
}

/* ------------------------------------------------------------------ wire */

static void *fuzz_ctx, *fuzz_router, *fuzz_dealer; /* kept for the whole run */

static inline void fuzz_wire_open(void)
{
    if (fuzz_ctx)
        return;
    fuzz_ctx = zmq_ctx_new();
    fuzz_router = spm_wire_socket(fuzz_ctx, ZMQ_ROUTER);
    fuzz_dealer = spm_wire_socket(fuzz_ctx, ZMQ_DEALER);
    if (!fuzz_router || !fuzz_dealer || zmq_bind(fuzz_router, "inproc://fuzz-wire") != 0 ||
        zmq_connect(fuzz_dealer, "inproc://fuzz-wire") != 0)
        spm_fuzz_broken("wire", "cannot set up the inproc socket pair");
}

/*  Checks what spm_wire_recv accepted: a versioned body, bounded frames,
    and an envelope that our own packer writes back into bytes that decode. */
static inline void fuzz_wire_check(const spm_msg_t *m)
{
    if (!m->env || m->env->version != SPM_PROTOCOL_VERSION ||
        m->env->body_case == SPM__ENVELOPE__BODY__NOT_SET)
        spm_fuzz_broken("wire", "accepted a message the protocol forbids");
    if (m->nframes > SPM_MAX_FRAMES || !m->has_id)
        spm_fuzz_broken("wire", "frame bookkeeping is wrong");
    size_t len = spm__envelope__get_packed_size(m->env);
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return;
    if (spm__envelope__pack(m->env, buf) != len)
        spm_fuzz_broken("wire", "packed size disagrees with pack");
    Spm__Envelope *again = spm__envelope__unpack(NULL, len, buf);
    if (!again || again->body_case != m->env->body_case)
        spm_fuzz_broken("wire", "a decoded envelope does not survive a round trip");
    spm__envelope__free_unpacked(again, NULL);
    free(buf);
}

static inline int spm_fuzz_wire(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    fuzz_wire_open();
    size_t k = data[0] % 4, pos = 1;
    const uint8_t *frame[3];
    size_t flen[3];
    for (size_t i = 0; i < k; i++) {
        size_t n = pos + 2 <= size ? (size_t)data[pos] | (size_t)data[pos + 1] << 8 : 0;
        pos = pos + 2 <= size ? pos + 2 : size;
        flen[i] = n < size - pos ? n : size - pos;
        frame[i] = data + pos;
        pos += flen[i];
    }
    if (zmq_send(fuzz_dealer, data + pos, size - pos, k ? ZMQ_SNDMORE : 0) < 0)
        spm_fuzz_broken("wire", "send failed");
    for (size_t i = 0; i < k; i++)
        if (zmq_send(fuzz_dealer, frame[i], flen[i], i + 1 < k ? ZMQ_SNDMORE : 0) < 0)
            spm_fuzz_broken("wire", "send failed");
    spm_msg_t m;
    spm_wire_stats_t st = {0};
    int r = spm_wire_recv(fuzz_router, 1, 0, &m, &st);
    if (r == 1) {
        fuzz_wire_check(&m);
        if (m.nframes != k)
            spm_fuzz_broken("wire", "block frames lost or invented");
        spm_msg_close(&m);
    } else if (r != 2 || st.dropped != 1) {
        spm_fuzz_broken("wire", "a message was neither delivered nor counted as dropped");
    }
    /* Whatever happened, the socket must be in step for the next input. */
    int more = 0;
    size_t sz = sizeof more;
    zmq_getsockopt(fuzz_router, ZMQ_RCVMORE, &more, &sz);
    if (more)
        spm_fuzz_broken("wire", "left part of a message on the socket");
    return 0;
}

/* ------------------------------------------------------------------- sdb */

/*  The type an input names: its wire id, else by position. */
static inline const spm_sdb_type_t *fuzz_sdb_type(uint32_t id)
{
    const spm_sdb_type_t *t = spm_sdb_type_by_id(id);
    if (t)
        return t;
    size_t n = 0;
    while (spm_sdb_type_at(n))
        n++;
    return n ? spm_sdb_type_at(id % n) : NULL;
}

/*  Merges A into B with T's merge and checks the result validates. */
static inline void fuzz_sdb_merge(const spm_sdb_type_t *t, const void *a, size_t alen,
                                  const void *b, size_t blen)
{
    void *out = NULL;
    size_t outlen = 0;
    if (t->merge(a, alen, b, blen, &out, &outlen) == 0 && t->validate(out, outlen) != 0)
        spm_fuzz_broken("sdb", "merge made a block its own type refuses");
    free(out);
}

/*  Checks that ENCODED (LEN bytes, freed here) validates as TYPE. */
static inline void fuzz_sdb_again(const char *type, void *encoded, size_t len)
{
    const spm_sdb_type_t *t = spm_sdb_type_find(type);
    if (t && t->validate(encoded, len) != 0)
        spm_fuzz_broken("sdb", "a decoded block re-encodes into one its type refuses");
    free(encoded);
}

/*  mm.block: decode and the zero-copy view must take what validate took. */
static inline void fuzz_mm_block(const void *data, size_t len)
{
    spm_mm_block_t *b = NULL, *v = NULL;
    if (spm_mm_block_decode(data, len, &b) != 0 || spm_mm_block_view(data, len, &v) != 0)
        spm_fuzz_broken("sdb", "mm.block: validated but does not decode");
    void *out;
    size_t outlen;
    if (spm_mm_block_encode(v, &out, &outlen) == 0)
        fuzz_sdb_again(SPM_MM_BLOCK_TYPE, out, outlen);
    spm_mm_block_destroy(&b);
    spm_mm_block_destroy(&v);
}

/*  mm.raw: the best-form block built from it is a valid mm.block. */
static inline void fuzz_mm_raw(const void *data, size_t len)
{
    spm_mm_block_t *b = NULL;
    int rc = spm_mm_raw_to_block(data, len, &b);
    if (rc == SPM_EFORMAT)
        spm_fuzz_broken("sdb", "mm.raw: validated but does not convert");
    void *out;
    size_t outlen;
    if (rc == 0 && spm_mm_block_encode(b, &out, &outlen) == 0)
        fuzz_sdb_again(SPM_MM_BLOCK_TYPE, out, outlen);
    spm_mm_block_destroy(&b);
}

/*  The mining kinds: decode then encode gives a block of the same type. */
static inline void fuzz_mining(const char *type, const void *data, size_t len)
{
    void *out = NULL;
    size_t outlen = 0;
    int rc;
    if (strcmp(type, SPM_MINING_ITEMS) == 0) {
        spm_mining_items_t b;
        if ((rc = spm_mining_items_decode(data, len, &b)) == 0)
            rc = spm_mining_items_encode(&b, &out, &outlen);
        spm_mining_items_free(&b);
    } else if (strcmp(type, SPM_MINING_TRANS) == 0) {
        spm_mining_trans_t b;
        if ((rc = spm_mining_trans_decode(data, len, &b)) == 0)
            rc = spm_mining_trans_encode(&b, &out, &outlen);
        spm_mining_trans_free(&b);
    } else if (strcmp(type, SPM_MINING_TEXT) == 0) {
        /* LoadDataBlock's parse: a line a transaction, items in range */
        spm_mining_text_t b;
        spm_mining_trans_t t;
        if ((rc = spm_mining_text_view(data, len, &b)) == 0 && spm_mining_fimi_parse(&b, &t) == 0) {
            if (t.n != b.nlines)
                spm_fuzz_broken("sdb", "a text block parsed into other than its lines");
            for (uint32_t j = 0; t.n && j < t.off[t.n]; j++)
                if (t.items[j] > SPM_MINING_FIMI_MAX_ITEM)
                    spm_fuzz_broken("sdb", "a text block parsed into an item out of range");
            spm_mining_trans_free(&t);
        }
        if (rc == 0)
            rc = spm_mining_text_encode(&b, &out, &outlen);
    } else if (strcmp(type, SPM_MINING_FILE) == 0) {
        /* no file is read here: the block names one on some machine */
        spm_mining_file_t b;
        if ((rc = spm_mining_file_view(data, len, &b)) == 0)
            rc = spm_mining_file_encode(&b, &out, &outlen);
    } else if (strcmp(type, SPM_MINING_ITEMSETS) == 0) {
        spm_mining_itemsets_t b;
        if ((rc = spm_mining_itemsets_decode(data, len, &b)) == 0)
            rc = spm_mining_itemsets_encode(&b, &out, &outlen);
        spm_mining_itemsets_free(&b);
    } else if (strcmp(type, SPM_MINING_RULES) == 0) {
        spm_mining_rules_t b;
        if ((rc = spm_mining_rules_decode(data, len, &b)) == 0)
            rc = spm_mining_rules_encode(&b, &out, &outlen);
        spm_mining_rules_free(&b);
    } else {
        spm_mining_kind_t kind = strcmp(type, SPM_MINING_JOIN) == 0    ? SPM_MINING_KIND_JOIN
                                 : strcmp(type, SPM_MINING_CANDS) == 0 ? SPM_MINING_KIND_CANDS
                                                                       : SPM_MINING_KIND_FSETS;
        spm_mining_sets_t b;
        if ((rc = spm_mining_sets_decode(kind, data, len, &b)) == 0)
            rc = spm_mining_sets_encode(&b, &out, &outlen);
        spm_mining_sets_free(&b);
    }
    if (rc == SPM_EFORMAT)
        spm_fuzz_broken("sdb", "a mining block validated but does not decode");
    if (rc == 0)
        fuzz_sdb_again(type, out, outlen);
}

/*  The ISA's own decoders of a block type T accepted. */
static inline void fuzz_sdb_decoders(const spm_sdb_type_t *t, const void *data, size_t len)
{
    if (strcmp(t->name, SPM_MM_BLOCK_TYPE) == 0)
        fuzz_mm_block(data, len);
    else if (strcmp(t->name, SPM_MM_RAW_TYPE) == 0)
        fuzz_mm_raw(data, len);
    else if (strncmp(t->name, "mining.", 7) == 0)
        fuzz_mining(t->name, data, len);
}

static inline int spm_fuzz_sdb(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    const spm_sdb_type_t *t = fuzz_sdb_type(spm_le32(data));
    if (!t)
        return 0;
    /* A block arrives in its own allocation (a ZeroMQ frame or a cache
       value), so give the decoder exactly that: any read past the end is
       a sanitizer report. */
    size_t len = size - 4;
    void *block = malloc(len ? len : 1);
    if (!block)
        return 0;
    memcpy(block, data + 4, len);
    if (t->validate(block, len) == 0) {
        char line[256];
        if (t->summary)
            t->summary(block, len, line, sizeof line);
        if (t->merge) {
            fuzz_sdb_merge(t, NULL, 0, block, len);
            fuzz_sdb_merge(t, block, len, block, len);
        }
        fuzz_sdb_decoders(t, block, len);
    }
    free(block);
    return 0;
}

/* ------------------------------------------------------- input files */

/*  A file holding DATA, as a path the readers can open: an in-memory file
    (memfd) rewritten for every input. Returns the path (static). */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("spm-fuzz", 0);
        if (fd < 0)
            spm_fuzz_broken("file", "memfd_create failed");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        spm_fuzz_broken("file", "cannot write the input file");
    return path;
}

static inline int spm_fuzz_mtx(const uint8_t *data, size_t size)
{
    spm_mmio_t *r = spm_mmio_open(fuzz_file(data, size));
    if (!r)
        return 0;
    const spm_mmio_header_t *h = spm_mmio_header(r);
    uint64_t row, col;
    double v;
    for (int n = 0; n < 1000000 && spm_mmio_next(r, &row, &col, &v) == 1; n++)
        if (row >= h->rows || col >= h->cols)
            spm_fuzz_broken("mtx", "an entry outside the declared shape");
    spm_mmio_destroy(&r);
    return 0;
}

static inline int spm_fuzz_fimi(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int names = data[0] & 1;
    spm_reader_t *r = spm_reader_open(fuzz_file(data + 1, size - 1), names);
    if (!r)
        return 0;
    const uint32_t *items;
    size_t n;
    while (spm_reader_next(r, &items, &n) == 1)
        for (size_t i = 0; i < n; i++) {
            if (items[i] > SPM_READER_MAX_ITEM || items[i] >= spm_reader_domain(r))
                spm_fuzz_broken("fimi", "an item out of range");
            if (names && !spm_reader_name(r, items[i]))
                spm_fuzz_broken("fimi", "a named item without a name");
        }
    spm_reader_destroy(&r);
    return 0;
}

/*  Reads every member of the archive at PATH through nparray, in
    batches, up to a bound: each gives what its header says or an error. */
static inline void fuzz_npz_members(const char *path)
{
    spm_npz_t *z = spm_npz_open(path);
    if (!z)
        return;
    static unsigned char buf[1 << 16];
    for (size_t i = 0; i < spm_npz_count(z); i++) {
        spm_nparray_t *a = spm_nparray_member(z, spm_npz_name(z, i));
        if (!a)
            continue;
        const spm_npy_t *h = spm_nparray_header(a);
        uint64_t left = spm_nparray_count(a), count, bytes;
        if (h->itemsize == 0 || h->itemsize > sizeof buf || spm_npy_size(h, &count, &bytes) != 0 ||
            count != left)
            spm_fuzz_broken("npz", "an array accepted with a size it cannot have");
        for (int rounds = 0; left > 0 && rounds < 64; rounds++) {
            size_t n = sizeof buf / h->itemsize;
            n = left < n ? (size_t)left : n;
            if (spm_nparray_read(a, buf, n) != 0)
                break;
            left -= n;
        }
        spm_nparray_destroy(&a);
    }
    spm_npz_destroy(&z);
}

static inline int spm_fuzz_npz(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    spm_npmat_kind_t kind = spm_npmat_kind(path);
    spm_mmio_header_t h;
    spm_mmio_order_t order;
    spm_npmat_t *m = spm_npmat_open(path, kind == SPM_NPMAT_NPY ? kind : SPM_NPMAT_NPZ, &h, &order);
    if (m) {
        uint64_t row, col, n = 0;
        double v;
        while (n < 1000000 && spm_npmat_next(m, &row, &col, &v) == 1) {
            if (row >= h.rows || col >= h.cols)
                spm_fuzz_broken("npz", "an entry outside the declared shape");
            if (++n > h.entries)
                spm_fuzz_broken("npz", "more entries than declared");
        }
        spm_npmat_destroy(&m);
    }
    if (kind != SPM_NPMAT_NPY)
        fuzz_npz_members(path);
    return 0;
}

/* --------------------------------------------------------------- journal */

static char fuzz_journal_dir[64]; /* the scratch store directory, made once per process */

/*  Removes the scratch directory (at exit). */
static inline void fuzz_journal_remove(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/journal", fuzz_journal_dir);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            char f[400];
            snprintf(f, sizeof f, "%s/%s", path, e->d_name);
            unlink(f);
        }
    if (d)
        closedir(d);
    rmdir(path);
    rmdir(fuzz_journal_dir);
}

static const uint8_t fuzz_journal_id[16] = {'f', 'u', 'z', 'z'};

static inline spm_journal_t *fuzz_journal_open(void)
{
    spm_journal_t *jr = spm_journal_open(fuzz_journal_dir, fuzz_journal_id);
    if (!jr)
        spm_fuzz_broken("journal", spm_error_detail());
    return jr;
}

typedef struct {
    uint64_t records; /* handed over */
    uint64_t bytes;   /* their framed size */
    size_t last_len;  /* the last one's length and first bytes */
    uint8_t last[8];
} fuzz_journal_seen_t;

static inline int fuzz_journal_record(void *arg, uint64_t job, const void *rec, size_t len)
{
    fuzz_journal_seen_t *s = arg;
    if (job != 7)
        spm_fuzz_broken("journal", "a record of a job that has no file");
    s->records++;
    s->bytes += 12 + len;
    s->last_len = len;
    memcpy(s->last, rec, len < 8 ? len : 8);
    return 0;
}

static inline int spm_fuzz_journal(const uint8_t *data, size_t size)
{
    if (!fuzz_journal_dir[0]) {
        snprintf(fuzz_journal_dir, sizeof fuzz_journal_dir, "/tmp/spm-fuzz-journal-XXXXXX");
        if (!mkdtemp(fuzz_journal_dir))
            spm_fuzz_broken("journal", "cannot make a scratch directory");
        atexit(fuzz_journal_remove);
        spm_journal_t *jr = fuzz_journal_open(); /* writes journal.id */
        spm_journal_destroy(&jr);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/journal/7.log", fuzz_journal_dir);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        spm_fuzz_broken("journal", "cannot write the job file");

    spm_journal_t *jr = fuzz_journal_open();
    fuzz_journal_seen_t seen = {0};
    spm_journal_report_t rep;
    if (spm_journal_replay(jr, fuzz_journal_record, &seen, &rep) != 0)
        spm_fuzz_broken("journal", spm_error_detail());
    uint64_t intact = size - rep.bytes_skipped;
    struct stat st;
    if (rep.jobs != 1 || rep.records != seen.records || rep.bytes_skipped > size ||
        rep.damaged_files != (rep.bytes_skipped > 0))
        spm_fuzz_broken("journal", "the report disagrees with what was read");
    if (seen.records ? intact != 16 + seen.bytes : intact != 0 && intact != 16)
        spm_fuzz_broken("journal", "records and damage do not add up to the file");
    if (stat(path, &st) != 0 || (uint64_t)st.st_size != intact)
        spm_fuzz_broken("journal", "the file was not cut to its intact prefix");

    /* a record appended now comes back after the intact ones, undamaged */
    if (spm_journal_append(jr, 7, "appended", 8) != 0 || spm_journal_flush(jr) != 0)
        spm_fuzz_broken("journal", spm_error_detail());
    spm_journal_destroy(&jr);
    jr = fuzz_journal_open();
    uint64_t before = seen.records;
    memset(&seen, 0, sizeof seen);
    if (spm_journal_replay(jr, fuzz_journal_record, &seen, &rep) != 0)
        spm_fuzz_broken("journal", spm_error_detail());
    if (rep.damaged_files || seen.records != before + 1 || seen.last_len != 8 ||
        memcmp(seen.last, "appended", 8) != 0)
        spm_fuzz_broken("journal", "a record appended after replay did not come back last");
    if (spm_journal_drop(jr, 7) != 0)
        spm_fuzz_broken("journal", spm_error_detail());
    spm_journal_destroy(&jr);
    return 0;
}

/* ------------------------------------------------------------ the table */

typedef struct {
    const char *name;                             /* tests/fuzz/corpus/NAME */
    int (*run)(const uint8_t *data, size_t size); /* one input */
} spm_fuzz_target_t;

static const spm_fuzz_target_t spm_fuzz_targets[] = {
    {"wire", spm_fuzz_wire}, {"sdb", spm_fuzz_sdb}, {"mtx", spm_fuzz_mtx},
    {"fimi", spm_fuzz_fimi}, {"npz", spm_fuzz_npz}, {"journal", spm_fuzz_journal}};

#endif
