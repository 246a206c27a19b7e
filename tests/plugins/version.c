/*  One program, "version", built twice with PLUGIN_VERSION 1 and 2: the
    same program, opcode and type names in both (test_plugin: run side by
    side, each job gets its own code). Its SIs each write a block of the
    plugin's type and reply with PLUGIN_VERSION; the result is
    "version N: K SIs\n". */
#include "spm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

SPM_PLUGIN;

#ifndef PLUGIN_VERSION
#define PLUGIN_VERSION 1
#endif

typedef struct {
    unsigned sis, seen, bad;
} state_t;

static int answer_exec(spm_si_ctx_t *ctx)
{
    struct timespec ts = {0, 5 * 1000 * 1000}; /* long enough for two jobs to overlap */
    nanosleep(&ts, NULL);
    unsigned char *b = malloc(1);
    if (!b)
        return SPM_ENOMEM;
    b[0] = PLUGIN_VERSION;
    int rc = spm_si_output(ctx, 0, b, 1);
    unsigned char v = PLUGIN_VERSION;
    return rc ? rc : spm_si_reply(ctx, &v, 1);
}

static int block_validate(const void *data, size_t len)
{
    return len == 1 && *(const unsigned char *)data == PLUGIN_VERSION ? 0 : SPM_EFORMAT;
}

static int version_start(spm_sf_t *sf, const void *args, size_t len)
{
    const char *argv[1];
    state_t *st = calloc(1, sizeof *st);
    if (!st)
        return SPM_ENOMEM;
    st->sis = spm_args(args, len, argv, 1) ? (unsigned)atoi(argv[0]) : 50;
    spm_sf_set_state(sf, st);
    for (unsigned i = 0; i < st->sis; i++) {
        spm_operand_t op = {spm_sdb_new(sf, "v.block"), SPM_W, 0};
        int rc = spm_sf_issue(sf, "v.answer", &op, 1, NULL, 0, i);
        if (rc)
            return rc;
    }
    spm_sf_done(sf);
    return 0;
}

static void version_commit(spm_sf_t *sf, const spm_result_t *r)
{
    state_t *st = spm_sf_state(sf);
    st->seen++;
    st->bad += r->reply_len != 1 || *(const unsigned char *)r->reply != PLUGIN_VERSION;
}

static void version_finish(spm_sf_t *sf)
{
    state_t *st = spm_sf_state(sf);
    char text[64];
    int n = snprintf(text, sizeof text, "version %d: %u SIs, %u from another version\n",
                     PLUGIN_VERSION, st->seen, st->bad);
    spm_sf_set_result(sf, text, (size_t)n);
    free(st);
}

static const spm_sf_class_t version_class = {
    .name = "v.root", .start = version_start, .commit = version_commit, .finish = version_finish};

SPM_CONSTRUCTOR(version)
{
    spm_opcode_register(&(spm_opcode_t){.name = "v.answer", .exec = answer_exec});
    spm_sdb_type_register(&(spm_sdb_type_t){.name = "v.block", .validate = block_validate});
    spm_program_register(&(spm_program_t){.name = "version", .root = &version_class});
}
