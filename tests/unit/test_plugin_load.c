/*  Unit tests of isa/core/plugin: the object check on every truncation
    and on forged headers, loading two versions of one program into their
    own scopes, and loading one object once. The plugins are the ones
    `make tests` builds into $SPM_PLUGINS (tests/plugins/version.c twice). */
#include "runtime/plugin.h"
#include "runtime/registry.h"
#include "tests/check_main.h"

#include <check.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(const char *name, size_t *len)
{
    char path[512];
    const char *dir = getenv("SPM_PLUGINS");
    snprintf(path, sizeof path, "%s/lib%s.so", dir && *dir ? dir : "build/plugins", name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s is missing: build it with make tests", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    ck_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

START_TEST(every_truncation_is_refused)
{
    size_t len;
    unsigned char *b = slurp("version", &len);
    ck_assert_int_eq(spm_plugin_check(b, len), 0);
    /* The section table sits at the end of the file: every shorter prefix
       misses some of it, and must be refused, never read past. */
    for (size_t n = 0; n < len; n++) {
        unsigned char *cut = malloc(n ? n : 1); /* exact size: ASan sees an over-read */
        memcpy(cut, b, n);
        ck_assert_msg(spm_plugin_check(cut, n) == SPM_EFORMAT, "%zu of %zu bytes passed", n, len);
        free(cut);
    }
    free(b);
}
END_TEST

START_TEST(forged_headers_are_refused)
{
    size_t len;
    unsigned char *b = slurp("version", &len);
    Elf64_Ehdr eh;
    memcpy(&eh, b, sizeof eh);
    struct {
        size_t off, size;
        uint64_t value;
        const char *want;
    } forgeries[] = {
        {offsetof(Elf64_Ehdr, e_type), 2, ET_EXEC, "not a shared object"},
        {offsetof(Elf64_Ehdr, e_machine), 2, EM_SPARC, "another machine"},
        {offsetof(Elf64_Ehdr, e_shoff), 8, (uint64_t)len - 8, "truncated or damaged"},
        {offsetof(Elf64_Ehdr, e_shoff), 8, UINT64_MAX - 100, "truncated or damaged"},
        {offsetof(Elf64_Ehdr, e_shnum), 2, 65535, "truncated or damaged"},
        {offsetof(Elf64_Ehdr, e_shstrndx), 2, 65535, "truncated or damaged"},
        {offsetof(Elf64_Ehdr, e_shentsize), 2, 12, "truncated or damaged"},
    };
    for (size_t i = 0; i < sizeof forgeries / sizeof *forgeries; i++) {
        unsigned char *f = malloc(len);
        memcpy(f, b, len);
        memcpy(f + forgeries[i].off, &forgeries[i].value, forgeries[i].size);
        ck_assert_int_eq(spm_plugin_check(f, len), SPM_EFORMAT);
        ck_assert_msg(strstr(spm_error_detail(), forgeries[i].want), "forgery %zu: %s", i,
                      spm_error_detail());
        free(f);
    }
    /* a section that claims bytes past the end */
    Elf64_Shdr sh;
    unsigned char *f = malloc(len);
    memcpy(f, b, len);
    memcpy(&sh, f + eh.e_shoff + sizeof sh, sizeof sh);
    sh.sh_offset = len - 4;
    sh.sh_size = 64;
    sh.sh_type = SHT_PROGBITS;
    memcpy(f + eh.e_shoff + sizeof sh, &sh, sizeof sh);
    ck_assert_int_eq(spm_plugin_check(f, len), SPM_EFORMAT);
    free(f);
    free(b);
}
END_TEST

START_TEST(two_versions_load_into_their_own_scopes)
{
    size_t l1, l2;
    unsigned char *v1 = slurp("version", &l1), *v2 = slurp("version2", &l2);
    char s1[SPM_SCOPE_LEN], s2[SPM_SCOPE_LEN], again[SPM_SCOPE_LEN];
    ck_assert_int_eq(spm_plugin_load(v1, l1, s1), 0);
    ck_assert_int_eq(spm_plugin_load(v2, l2, s2), 0);
    ck_assert_str_ne(s1, s2);
    ck_assert(spm_plugin_loaded(s1) && spm_plugin_loaded(s2));
    /* the same bytes again: the same scope, not loaded twice */
    ck_assert_int_eq(spm_plugin_load(v1, l1, again), 0);
    ck_assert_str_eq(again, s1);
    /* each scope sees its own program and opcode; the names stay out of
       the built-in tables */
    const spm_program_t *p1 = spm_program_find_in(s1, "version");
    const spm_program_t *p2 = spm_program_find_in(s2, "version");
    ck_assert(p1 && p2 && p1->root != p2->root);
    ck_assert_ptr_null(spm_program_find("version"));
    ck_assert_ptr_null(spm_opcode_find("v.answer"));
    uint32_t o1 = spm_opcode_id_in(s1, "v.answer"), o2 = spm_opcode_id_in(s2, "v.answer");
    ck_assert(o1 && o2 && o1 != o2);
    ck_assert(spm_opcode_by_id(o1)->exec != spm_opcode_by_id(o2)->exec);
    /* built-in names are found from a scope too */
    ck_assert_uint_eq(spm_opcode_id_in(s1, "spm.merge"), spm_name_id("spm.merge"));
    ck_assert_uint_eq(spm_sdb_type_id_in(s2, "v.block"), spm_scoped_id(s2, "v.block"));
    /* a block of version 1's type is not one of version 2's */
    unsigned char one = 1;
    ck_assert_int_eq(spm_sdb_check(spm_sdb_type_id_in(s1, "v.block"), &one, 1), 0);
    ck_assert_int_eq(spm_sdb_check(spm_sdb_type_id_in(s2, "v.block"), &one, 1), SPM_EFORMAT);
    free(v1);
    free(v2);
}
END_TEST

START_TEST(a_missing_symbol_loads_nothing)
{
    size_t len;
    unsigned char *b = slurp("missing_symbol", &len);
    char scope[SPM_SCOPE_LEN];
    ck_assert_int_eq(spm_plugin_check(b, len), 0);
    ck_assert_int_eq(spm_plugin_load(b, len, scope), SPM_EFORMAT);
    ck_assert_msg(strstr(spm_error_detail(), "undefined symbol: spm_no_such_function"), "%s",
                  spm_error_detail());
    ck_assert(!spm_plugin_loaded(scope));
    free(b);
}
END_TEST

START_TEST(args_split)
{
    const char args[] = "--samples\0"
                        "100\0"
                        "\0"; /* three: the last one empty */
    const char *argv[4];
    ck_assert_uint_eq(spm_args(args, sizeof args - 1, argv, 4), 3);
    ck_assert_str_eq(argv[0], "--samples");
    ck_assert_str_eq(argv[1], "100");
    ck_assert_str_eq(argv[2], "");
    ck_assert_uint_eq(spm_args(args, sizeof args - 1, argv, 1), 3); /* counts past MAX */
    ck_assert_uint_eq(spm_args("abc", 3, argv, 4), 0);              /* unterminated: none */
    ck_assert_uint_eq(spm_args(NULL, 0, argv, 4), 0);
}
END_TEST

static Suite *plugin_load_suite(void)
{
    Suite *s = suite_create("plugin_load");
    const spm_test_case_t c = {.timeout_s = 60};
    SPM_TEST_ADD(s, &c, every_truncation_is_refused);
    SPM_TEST_ADD(s, &c, forged_headers_are_refused);
    SPM_TEST_ADD(s, &c, two_versions_load_into_their_own_scopes);
    SPM_TEST_ADD(s, &c, a_missing_symbol_loads_nothing);
    SPM_TEST_ADD(s, &c, args_split);
    return s;
}

SPM_TEST_MAIN(plugin_load_suite)
