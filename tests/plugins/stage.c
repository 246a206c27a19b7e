/*  A plugin with a command side that stages its input every way spm.h
    offers and writes it back (test_programs): `stage KIND FILE` stages FILE
    (lines, records of 10 bytes, bytes: blocks of 1000 bytes; buffer: read
    into memory; array: as 64-bit integers, 100 a block), an SI copies each
    block, and the copies are written to stdout in order: the file's bytes.
    `--change` rewrites FILE after staging it; `--fail N` has the Nth copy
    made by an SI that forgets its output, labeled "block N" (0: every
    copy, none labeled); `--block N` stages a file in blocks of N bytes;
    `--io` prints on stderr how many bytes this process read while it
    staged FILE ("staging read N bytes", from /proc/self/io). */
#include "spm.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SPM_PLUGIN;

typedef struct {
    const char *kind, *file;
    int change, io;
    int64_t fail, block;
} opts_t;

static const spm_argdef_t defs[] = {
    {"--change", SPM_ARG_FLAG, offsetof(opts_t, change), 0, 0, NULL, "rewrite FILE once staged"},
    {"--fail", SPM_ARG_INT, offsetof(opts_t, fail), -1, 1e6, "-1", "forget the outputs"},
    {"--block", SPM_ARG_INT, offsetof(opts_t, block), 1, 1 << 29, "1000", "bytes a block"},
    {"--io", SPM_ARG_FLAG, offsetof(opts_t, io), 0, 0, NULL, "print the bytes staging read"},
    {"KIND", SPM_ARG_TEXT, offsetof(opts_t, kind), 0, 0, NULL, "lines, records, bytes, ..."},
    {"FILE", SPM_ARG_TEXT, offsetof(opts_t, file), 0, 0, NULL, "the input"}};

static int copy_exec(spm_si_ctx_t *ctx)
{
    const void *d;
    size_t len;
    if (spm_si_input(ctx, 0, &d, &len) != 0)
        return spm_error(SPM_EINVAL, "no input");
    void *c = malloc(len ? len : 1);
    if (!c)
        return SPM_ENOMEM;
    memcpy(c, d, len);
    return spm_si_output(ctx, 1, c, len);
}

static int forget_exec(spm_si_ctx_t *ctx)
{
    (void)ctx;
    return 0; /* no output: the SI fails */
}

/*  ARGS: int64 fail, then the staged ids; result: the ids of the copies. */
static int st_start(spm_sf_t *sf, const void *args, size_t len)
{
    int64_t fail;
    size_t n = len / 8 - 1;
    memcpy(&fail, args, 8);
    spm_sdb_t *out = calloc(n ? n : 1, sizeof *out);
    if (!out)
        return SPM_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        spm_sdb_t in;
        memcpy(&in, (const char *)args + 8 * (i + 1), 8);
        out[i] = spm_sdb_new(sf, SPM_BYTES);
        spm_operand_t ops[2] = {{in, SPM_R, 0}, {out[i], SPM_W, 0}};
        if (fail > 0 && (int64_t)i + 1 == fail)
            spm_sf_label(sf, "block %zu", i + 1);
        int forget = fail == 0 || (int64_t)i + 1 == fail;
        if (spm_sf_issue(sf, forget ? "st.forget" : "st.copy", ops, 2, NULL, 0, i) != 0)
            break;
    }
    spm_sf_done(sf);
    int rc = spm_sf_set_result(sf, out, n * sizeof *out);
    free(out);
    return rc;
}

/*  The bytes this process has read (rchar of /proc/self/io), or -1. */
static long long read_chars(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    long long n = -1;
    if (f) {
        if (fscanf(f, "rchar: %lld", &n) != 1)
            n = -1;
        fclose(f);
    }
    return n;
}

static int st_main(spm_client_t *c, int argc, char **argv)
{
    opts_t o;
    spm_sdb_t *ids = NULL;
    size_t n = 0, len = 0;
    void *res = NULL, *buf = NULL;
    int rc = spm_args_parse(defs, sizeof defs / sizeof defs[0], argc - 1,
                            (const char *const *)argv + 1, &o);
    if (rc != 0)
        return rc;
    if (!strcmp(o.kind, "buffer") || !strcmp(o.kind, "array")) {
        FILE *f = fopen(o.file, "rb");
        if (!f || !(buf = malloc(1 << 24)))
            return spm_error(SPM_EIO, "%s: cannot read", o.file);
        len = fread(buf, 1, 1 << 24, f);
        fclose(f);
        rc = !strcmp(o.kind, "buffer") ? spm_stage_buffer(c, buf, len, 1000, &ids, &n)
                                       : spm_stage_array(c, SPM_I64, buf, len / 8, 100, &ids, &n);
        free(buf);
    } else {
        spm_cut_t cut = !strcmp(o.kind, "lines")     ? SPM_CUT_LINES
                        : !strcmp(o.kind, "records") ? SPM_CUT_RECORDS
                                                     : SPM_CUT_BYTES;
        long long before = read_chars();
        rc = spm_stage_file(c, o.file, cut, (size_t)o.block, 10, &ids, &n);
        if (o.io)
            fprintf(stderr, "staging read %lld bytes\n", read_chars() - before);
    }
    if (rc != 0)
        return rc;
    if (o.change) { /* the same size, other bytes, a later time */
        FILE *f = fopen(o.file, "r+b");
        if (!f || fputc('#', f) == EOF || fclose(f) != 0)
            return spm_error(SPM_EIO, "%s: cannot change it", o.file);
    }
    size_t alen = (n + 1) * 8, rlen;
    unsigned char *args = malloc(alen);
    if (!args)
        return SPM_ENOMEM;
    memcpy(args, &o.fail, 8);
    memcpy(args + 8, ids, n * 8);
    rc = spm_client_run(c, args, alen, &res, &rlen);
    free(args);
    if (rc == 0)
        rc = spm_client_write(c, res, rlen / 8, stdout);
    free(res);
    return rc;
}

static const spm_sf_class_t st_root = {.name = "stage", .start = st_start};

SPM_CONSTRUCTOR(stage)
{
    spm_opcode_register(&(spm_opcode_t){.name = "st.copy", .exec = copy_exec});
    spm_opcode_register(&(spm_opcode_t){.name = "st.forget", .exec = forget_exec});
    spm_program_register(&(spm_program_t){.name = "stage", .root = &st_root});
    spm_main_register(&(spm_main_t){.program = "stage", .main = st_main});
}
