/*  wordfreq - word frequencies of a text of any size (docs/PROGRAMMING.md, part 2):
    `spm run --plugin ./libwordfreq.so wordfreq FILE` prints what `tr -cs 'A-Za-z' '\n' <
    FILE | tr A-Z a-z | sort | uniq -c` prints with LC_ALL=C: each word (ASCII letters,
    lowercased), in byte order, with its count; an empty word first when FILE starts with a
    non-letter (tr's empty first line). The command side stages FILE in blocks of lines; an
    SI per block counts its words into a key-count table (ACC): the VM adds them up. */
#include "spm.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
SPM_PLUGIN;

typedef struct {
    int64_t mb;
    const char *file;
} opts_t;

static const spm_argdef_t defs[] = {
    {"--block-mb", SPM_ARG_INT, offsetof(opts_t, mb), 1, 256, "8", "MiB of lines per SI"},
    {"FILE", SPM_ARG_TEXT, offsetof(opts_t, file), 0, 0, NULL, "the text"}};

/*  wf.count: operand 0 the lines (R), 1 the table (ACC); params: 1 for the file's first block. */
static int count_exec(spm_si_ctx_t *ctx)
{
    const void *d;
    size_t len, plen, w = 0;
    const unsigned char *text, *first = spm_si_params(ctx, &plen);
    char word[65536];
    if (spm_si_input(ctx, 0, &d, &len) != 0 || plen != 1)
        return spm_error(SPM_EINVAL, "wants the lines (R), the table (ACC) and one parameter");
    spm_kcount_t *t = spm_kcount_new();
    int rc = (text = d, t ? 0 : SPM_ENOMEM);
    if (rc == 0 && *first && len > 0 && !((text[0] | 32) >= 'a' && (text[0] | 32) <= 'z'))
        rc = spm_kcount_add(t, "", 0, 1); /* tr's empty first line */
    for (size_t i = 0; rc == 0 && i <= len; i++) {
        unsigned char c = i < len ? text[i] | 32 : 0;
        if (c >= 'a' && c <= 'z' && w < sizeof word)
            word[w++] = (char)c;
        else if (w > 0 && !(c >= 'a' && c <= 'z'))
            rc = spm_kcount_add(t, word, w, 1), w = 0;
    }
    return rc ? (spm_kcount_destroy(&t), spm_error(rc, "out of memory"))
              : spm_si_put_kcount(ctx, 1, &t);
}

/*  The root SF: ARGS are the ids of the staged blocks; its result is the table's id. */
static int wf_start(spm_sf_t *sf, const void *args, size_t len)
{
    spm_sdb_t table = spm_sdb_new(sf, SPM_KCOUNT);
    if (!table || len % sizeof table)
        return spm_error(SPM_EINVAL, "wants the ids of staged blocks");
    for (size_t i = 0; i < len / sizeof table; i++) {
        spm_sdb_t block;
        memcpy(&block, (const char *)args + i * sizeof block, sizeof block);
        spm_operand_t ops[2] = {{block, SPM_R, SPM_NOCACHE}, {table, SPM_ACC, 0}};
        unsigned char first = i == 0;
        spm_sf_label(sf, "block %zu", i + 1);
        if (spm_sf_issue(sf, "wf.count", ops, 2, &first, 1, i) != 0)
            return SPM_EINVAL;
    }
    spm_sf_done(sf);
    return spm_sf_set_result(sf, &table, sizeof table);
}

/*  The command side: stage FILE, run, print the table. */
static int wf_main(spm_client_t *c, int argc, char **argv)
{
    opts_t o;
    spm_sdb_t *ids, table;
    size_t n, tlen, pos = 0, klen;
    void *res = NULL, *t = NULL;
    const char *key;
    uint64_t count;
    int rc = spm_args_parse(defs, 2, argc - 1, (const char *const *)argv + 1, &o);
    if (rc == SPM_ARGS_HELP) {
        char *help = spm_args_usage(argv[0], "Counts the words of FILE.", defs, 2);
        fputs(help ? help : "", stdout);
        free(help);
        return 0;
    }
    if (rc != 0 || (rc = spm_stage_file(c, o.file, SPM_CUT_LINES, o.mb << 20, 0, &ids, &n)) != 0)
        return rc;
    if ((rc = spm_client_run(c, ids, n * sizeof *ids, &res, &tlen)) != 0)
        return rc;
    memcpy(&table, res, sizeof table);
    if (free(res), (rc = spm_client_get(c, table, &t, &tlen)) != 0)
        return rc;
    while ((rc = spm_kcount_next(t, tlen, &pos, &key, &klen, &count)) == 1)
        printf("%7llu %.*s\n", (unsigned long long)count, (int)klen, key);
    free(t);
    return rc < 0 ? spm_error(rc, "a malformed table") : 0;
}

static const spm_sf_class_t wf_root = {.name = "wordfreq", .start = wf_start};
SPM_CONSTRUCTOR(wordfreq)
{
    spm_opcode_register(&(spm_opcode_t){.name = "wf.count", .exec = count_exec});
    spm_program_register(&(spm_program_t){.name = "wordfreq", .root = &wf_root});
    spm_main_register(&(spm_main_t){.program = "wordfreq", .main = wf_main});
}
