/*  Integration tests of a programmer's own program (docs/PROGRAMMING.md):
    a plugin's command side stages a file by lines, records and bytes, a
    buffer and an array, on an embedded VM and on a center with two agents
    (copied onto the nodes, or read in place where the nodes share the
    files), and gets back the file's bytes; staged to be read in place, a
    file is not read by the command side; a file changed after staging
    fails in one line; a failing SI is named by its label or its place;
    g++ builds a plugin; examples/wordfreq prints what coreutils print;
    examples/mandel writes the image a sequential reference draws. All
    real processes; the plugins are built by `make tests` into $SPM_PLUGINS. */
#include "tests/check_main.h"
#include "tests/spm_test.h"
#include "tests/ref/examples_ref.h"

#include <regex.h>

/*  Path of plugin libNAME.so (static buffer, one of four in turn). */
static const char *plugin(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    const char *dir = getenv("SPM_PLUGINS");
    snprintf(p, 512, "%s/lib%s.so", dir && *dir ? dir : "build/plugins", name);
    ck_assert_msg(access(p, R_OK) == 0, "%s is missing: build it with make tests", p);
    return p;
}

/*  Reads the whole of PATH (malloc'd) and its length. */
static char *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    ck_assert_msg(fd >= 0, "%s", path);
    struct stat st;
    ck_assert(fstat(fd, &st) == 0);
    char *b = malloc((size_t)st.st_size + 1);
    ck_assert(b && read(fd, b, (size_t)st.st_size) == st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return b;
}

/*  Writes a text of 64,000 bytes (a multiple of 80: whole records of 10,
    whole 64-bit integers) into DIR/in.txt: lines of every length, one of
    3,000 bytes (longer than a block), bytes over 127, no final newline. */
static void make_input(const char *dir, char *path, size_t size)
{
    snprintf(path, size, "%s/in.txt", dir);
    FILE *f = fopen(path, "wb");
    ck_assert(f);
    unsigned x = 1;
    for (size_t i = 0; i < 64000; i++) {
        x = x * 1103515245u + 12345u;
        int c = (x >> 16) % 40 == 0 ? '\n' : (x >> 16) % 97 == 0 ? 0xe9 : 'a' + (int)(x >> 20) % 26;
        if (i >= 20000 && i < 23000)
            c = 'q'; /* a long line */
        if (i == 63999)
            c = 'z'; /* no final newline */
        fputc(c, f);
    }
    ck_assert(fclose(f) == 0);
}

static const char *const kinds[] = {"lines", "records", "bytes", "buffer", "array"};

/*  Runs the stage plugin for every kind with the run options EXTRA between
    the plugin and the program, and checks stdout against the file. */
static void stage_every_kind(const char *path, const char *const *extra)
{
    size_t want_len;
    char *want = slurp(path, &want_len);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const char *argv[32] = {"run", "--plugin", plugin("stage"), "--quiet"};
        int n = spm_test_args(argv, 4, 32, extra);
        argv[n++] = "stage";
        argv[n++] = kinds[k];
        argv[n++] = path;
        argv[n] = NULL;
        char *out, *err;
        int rc = spm_test_run(argv, 120, &out, &err);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", kinds[k], rc, err);
        ck_assert_msg(memcmp(out, want, want_len) == 0 && strlen(out) == want_len,
                      "%s: %zu bytes back, not the file's %zu", kinds[k], strlen(out), want_len);
        free(out);
        free(err);
    }
    free(want);
}

/*  Every kind of staging on an embedded VM (read in place) gives the file's bytes back. */
START_TEST(staging_each_kind_on_an_embedded_vm)
{
    char path[128];
    const char *dir = spm_test_tmpdir();
    make_input(dir, path, sizeof path);
    const char *two[] = {"--ieus", "2", NULL};
    stage_every_kind(path, two);
}
END_TEST

/*  The same on a center with two agents: copied onto the nodes, then read
    in place by agents that may read the client's files (--shared-files). */
START_TEST(staging_each_kind_on_a_running_center)
{
    char path[128];
    make_input(spm_test_tmpdir(), path, sizeof path);
    setenv("SPM_ALLOW_PLUGINS", "yes", 1);
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    const char *local[] = {"--local-files", NULL};
    spm_test_vm_agent(&vm, "1", local);
    spm_test_vm_agent(&vm, "1", local);
    usleep(300000);
    const char *copied[] = {"--center", vm.ep, NULL};
    stage_every_kind(path, copied);
    const char *shared[] = {"--center", vm.ep, "--shared-files", NULL};
    stage_every_kind(path, shared);
    spm_test_vm_stop(&vm);
}
END_TEST

/*  Staged to be read in place, a file is not read by the command side:
    where a block of lines ends is found near its end (16 MB by lines in
    1 MiB blocks, a line of 1.5 MiB among them, read 16 MB whole before),
    and records and bytes need no byte at all; the SIs still get the
    file's bytes. */
START_TEST(staging_in_place_reads_only_line_ends)
{
    char path[128];
    snprintf(path, sizeof path, "%s/big.txt", spm_test_tmpdir());
    FILE *f = fopen(path, "wb");
    ck_assert(f);
    unsigned x = 7;
    for (size_t i = 0; i < 16000000; i++) { /* a multiple of 10: whole records */
        x = x * 1103515245u + 12345u;
        int c = (x >> 16) % 70 == 0 ? '\n' : 'a' + (int)(x >> 20) % 26;
        fputc(i >= 5000000 && i < 6500000 ? 'q' : c, f); /* a line longer than a block */
    }
    ck_assert(fclose(f) == 0);
    size_t want_len;
    char *want = slurp(path, &want_len);
    const char *kinds3[] = {"lines", "records", "bytes"};
    for (int k = 0; k < 3; k++) {
        const char *argv[] = {"run",   "--plugin", plugin("stage"), "--ieus",  "2",       "--quiet",
                              "stage", "--io",     "--block",       "1048576", kinds3[k], path,
                              NULL};
        char *out, *err;
        int rc = spm_test_run(argv, 120, &out, &err);
        ck_assert_msg(rc == 0, "%s: exit %d: %s", kinds3[k], rc, err);
        ck_assert_msg(strlen(out) == want_len && memcmp(out, want, want_len) == 0,
                      "%s: %zu bytes back, not the file's %zu", kinds3[k], strlen(out), want_len);
        long long got = -1;
        const char *line = strstr(err, "staging read ");
        ck_assert_msg(line && sscanf(line, "staging read %lld bytes", &got) == 1, "%s", err);
        fprintf(stderr, "  %s: staging read %lld bytes of %zu\n", kinds3[k], got, want_len);
        ck_assert_msg(got >= 0 && got < (long long)want_len / 4,
                      "%s: staging read %lld bytes of a %zu-byte file", kinds3[k], got, want_len);
        free(out);
        free(err);
    }
    free(want);
}
END_TEST

/*  A file changed after it was staged to be read in place fails the job in
    one line that names it, instead of giving other bytes. */
START_TEST(a_staged_file_that_changes_fails_in_one_line)
{
    char path[128];
    make_input(spm_test_tmpdir(), path, sizeof path);
    const char *argv[] = {"run",   "--plugin", plugin("stage"), "--ieus", "2", "--quiet",
                          "stage", "lines",    "--change",      path,     NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 1, "exit %d: %s", rc, err);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, "changed since it was staged") &&
                      strstr(err, path),
                  "%s", err);
    ck_assert_str_eq(out, "");
    fprintf(stderr, "  %s", err);
    free(out);
    free(err);
}
END_TEST

/*  A failing SI is named once by its opcode, with its label, or its place
    when it has none; never by a 64-bit id. */
START_TEST(a_failing_si_is_named_by_its_label)
{
    char path[128];
    make_input(spm_test_tmpdir(), path, sizeof path);
    const char *labeled[] = {
        "run", "--plugin", plugin("stage"), "--quiet", "stage", "bytes", "--fail", "3", path, NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(labeled, 120, &out, &err), 1);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, "st.forget (block 3) failed on IEU ") &&
                      strstr(err, ": operand 1 has no output") &&
                      !strstr(strstr(err, "st.forget") + 1, "st.forget"), /* once */
                  "%s", err);
    fprintf(stderr, "  %s", err);
    free(out);
    free(err);
    const char *plain[] = {
        "run", "--plugin", plugin("stage"), "--quiet", "stage", "bytes", "--fail", "0", path, NULL};
    ck_assert_int_eq(spm_test_run(plain, 120, &out, &err), 1);
    regex_t re;
    ck_assert(regcomp(&re,
                      "the [0-9]+(st|nd|rd|th) SI of st\\.forget failed on IEU [0-9]+: "
                      "operand 1 has no output",
                      REG_EXTENDED) == 0);
    ck_assert_msg(spm_test_lines(err) == 1 && regexec(&re, err, 0, NULL, 0) == 0, "%s", err);
    regfree(&re);
    ck_assert(regcomp(&re, "[0-9]{10}", REG_EXTENDED) == 0);
    ck_assert_msg(regexec(&re, err, 0, NULL, 0) != 0, "an internal id: %s", err);
    regfree(&re);
    fprintf(stderr, "  %s", err);
    free(out);
    free(err);
}
END_TEST

/*  spm.h compiles as C++: a plugin built with g++ runs. */
START_TEST(gxx_builds_a_plugin)
{
    const char *src = getenv("SPM_SOURCE_DIR");
    if (!src || !*src || system("command -v g++ >/dev/null 2>&1") != 0) {
        fprintf(stderr, "  skipped: needs g++ and SPM_SOURCE_DIR (make check sets it)\n");
        return;
    }
    const char *dir = spm_test_tmpdir();
    char path[128], cmd[1024];
    snprintf(path, sizeof path, "%s/cxx.cc", dir);
    FILE *f = fopen(path, "w");
    ck_assert(f);
    fputs("#include \"spm.h\"\n#include \"spm_codec.h\"\n#include \"spm_rng.h\"\n"
          "#include <string>\n#include <vector>\nSPM_PLUGIN;\n"
          "static int sq(spm_si_ctx_t *ctx) {\n"
          "    std::vector<int64_t> v(4);\n"
          "    for (size_t i = 0; i < v.size(); i++) v[i] = (int64_t)(i * i);\n"
          "    return spm_si_put_i64(ctx, 0, v.data(), v.size());\n}\n"
          "static int rep(spm_si_ctx_t *ctx) {\n"
          "    const int64_t *v; size_t n;\n"
          "    if (spm_si_i64(ctx, 0, &v, &n) != 0) return SPM_EINVAL;\n"
          "    std::string s = \"sum\";\n"
          "    int64_t t = 0; for (size_t i = 0; i < n; i++) t += v[i];\n"
          "    s += \" \" + std::to_string(t) + \"\\n\";\n"
          "    return spm_si_reply(ctx, s.data(), s.size());\n}\n"
          "static int start(spm_sf_t *sf, const void *, size_t) {\n"
          "    spm_sdb_t h = spm_sdb_new(sf, SPM_I64);\n"
          "    spm_operand_t acc = {h, SPM_ACC, 0}, rd = {h, SPM_R, 0};\n"
          "    for (int i = 0; i < 3; i++) spm_sf_issue(sf, \"cxx.sq\", &acc, 1, nullptr, 0, 0);\n"
          "    spm_sf_issue(sf, \"cxx.rep\", &rd, 1, nullptr, 0, 1);\n"
          "    spm_sf_done(sf); return 0;\n}\n"
          "static void commit(spm_sf_t *sf, const spm_result_t *r) {\n"
          "    if (r->tag == 1) spm_sf_set_result(sf, r->reply, r->reply_len);\n}\n"
          "static spm_sf_class_t root = {\"cxx\", start, nullptr, commit, nullptr};\n"
          "SPM_CONSTRUCTOR(cxx) {\n"
          "    static spm_opcode_t a = {\"cxx.sq\", sq}, b = {\"cxx.rep\", rep};\n"
          "    spm_opcode_register(&a); spm_opcode_register(&b);\n"
          "    static spm_program_t p = {\"cxx\", &root};\n"
          "    spm_program_register(&p);\n}\n",
          f);
    ck_assert(fclose(f) == 0);
    snprintf(cmd, sizeof cmd,
             "g++ -std=c++11 -Wall -Wextra -Werror -O2 -fPIC -shared -I%s/include/spm -o "
             "%s/libcxx.so %s",
             src, dir, path);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    snprintf(path, sizeof path, "%s/libcxx.so", dir);
    const char *argv[] = {"run", "--plugin", path, "--ieus", "2", "--quiet", "cxx", NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(argv, 60, &out, &err), 0);
    ck_assert_str_eq(out, "sum 42\n"); /* (0 + 1 + 4 + 9) * 3, merged by the VM */
    free(out);
    free(err);
}
END_TEST

/*  examples/wordfreq prints what tr, sort and uniq print, byte for byte,
    on a file with a 3 MiB line, no final newline, bytes over 127 and a
    non-letter first; across several blocks of lines. */
START_TEST(wordfreq_matches_coreutils)
{
    const char *dir = spm_test_tmpdir();
    char path[128], cmd[1024];
    snprintf(path, sizeof path, "%s/text", dir);
    FILE *f = fopen(path, "wb");
    ck_assert(f);
    static const char *const words[] = {"The",         "quick",    "brown", "FOX",
                                        "caf\xc3\xa9", "na\xefve", "don't", "x",
                                        "jumps",       "OVER",     "lazy",  "dogs"};
    unsigned x = 7;
    fputs("-- ", f);
    for (int i = 0; i < 900000; i++) {
        x = x * 1103515245u + 12345u;
        fputs(words[(x >> 16) % 12], f);
        fputc(i > 100000 && i < 500000 ? ' ' : "  ,.\n\t!"[(x >> 8) % 8], f); /* a long line */
    }
    fputs("end", f);
    ck_assert(fclose(f) == 0);
    const char *argv[] = {"run", "--plugin", plugin("wordfreq"), "--ieus",
                          "2",   "wordfreq", "--block-mb",       "1",
                          path,  NULL};
    char *out, *err;
    int rc = spm_test_run(argv, 120, &out, &err);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
    ck_assert_msg(strstr(err, "wf.count"), "the report goes to stderr: %s", err);
    snprintf(cmd, sizeof cmd,
             "LC_ALL=C tr -cs 'A-Za-z' '\\n' < %s | LC_ALL=C tr A-Z a-z | LC_ALL=C sort | "
             "LC_ALL=C uniq -c > %s/want",
             path, dir);
    ck_assert(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "%s/want", dir);
    size_t len;
    char *want = slurp(cmd, &len);
    want[len] = '\0';
    ck_assert_msg(strcmp(out, want) == 0, "wordfreq:\n%.400s\ncoreutils:\n%.400s", out, want);
    ck_assert(len > 100 && !strncmp(want, "      1 \n", 9)); /* the empty first word */
    free(want);
    free(out);
    free(err);
}
END_TEST

/*  examples/mandel's three stages (tiles, a histogram merged by the VM,
    shading) write, tile by tile in order, the bytes a sequential reference
    draws; the last tile is shorter than the others, and with --quiet
    nothing but the image is written. */
START_TEST(mandel_matches_a_sequential_reference)
{
    const char *dir = spm_test_tmpdir();
    char cmd[1024], path[256];
    snprintf(cmd, sizeof cmd,
             "%s run --plugin %s --ieus 2 --quiet mandel --width 301 --height 203 --rows 16 "
             "--iter 300 --x=-0.75 --y 0.1 --span 2.5 > %s/m.pgm 2> %s/err",
             spm_test_bin(), plugin("mandel"), dir, dir);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    size_t len, want_len, err_len;
    snprintf(path, sizeof path, "%s/err", dir);
    char *err = slurp(path, &err_len);
    ck_assert_msg(err_len == 0, "stderr: %.*s", (int)err_len, err);
    snprintf(path, sizeof path, "%s/m.pgm", dir);
    char *got = slurp(path, &len);
    unsigned char *want = ref_mandel(301, 203, 300, -0.75, 0.1, 2.5, &want_len);
    ck_assert(want);
    size_t at = 0;
    while (at < len && at < want_len && (unsigned char)got[at] == want[at])
        at++;
    ck_assert_msg(len == want_len && at == len,
                  "%zu bytes, the reference %zu; first difference at %zu", len, want_len, at);
    size_t black = 0, white = 0;
    for (size_t i = 15; i < want_len; i++)
        black += want[i] == 0, white += want[i] == 255;
    ck_assert(black > 1000 && white > 0 && black + white < want_len - 1000); /* a real picture */
    free(want);
    free(got);
    free(err);
}
END_TEST

/*  A plugin job whose SI crashes every IEU it runs on fails in one line on
    an embedded VM: alone with --quiet; after the report without it, and
    no warning of the VM's (IEUs died, restarted, re-issues) comes first. */
START_TEST(a_failing_plugin_job_says_so_in_one_line)
{
    spm_test_crash_quietly();
    const char *quiet[] = {"run", "--plugin", plugin("crash_si"), "--ieus",
                           "2",   "--quiet",  "crash_si",         NULL};
    char *out, *err;
    ck_assert_int_eq(spm_test_run(quiet, 120, &out, &err), 1);
    ck_assert_msg(spm_test_lines(err) == 1 && strstr(err, "spm: run: job 1 failed: ") &&
                      strstr(err, "crash.si"),
                  "%s", err);
    free(out);
    free(err);
    const char *loud[] = {"run", "--plugin", plugin("crash_si"), "--ieus", "2", "crash_si", NULL};
    ck_assert_int_eq(spm_test_run(loud, 120, &out, &err), 1);
    ck_assert_msg(!strstr(err, "warning") && !strstr(err, "restarting"), "%s", err);
    const char *last = strstr(err, "spm: run: job 1 failed: ");
    ck_assert_msg(last && strchr(last, '\n') == err + strlen(err) - 1 &&
                      strstr(err, "job 1 (crash_si) FAILED"),
                  "the report, then one error line: %s", err);
    ck_assert_str_eq(out, "");
    free(out);
    free(err);
}
END_TEST

static Suite *programs_suite(void)
{
    Suite *s = suite_create("programs");
    static const spm_test_case_t run = {.timeout_s = 300};
    SPM_TEST_ADD(s, &run, staging_each_kind_on_an_embedded_vm);
    SPM_TEST_ADD(s, &run, staging_each_kind_on_a_running_center);
    SPM_TEST_ADD(s, &run, staging_in_place_reads_only_line_ends);
    SPM_TEST_ADD(s, &run, a_staged_file_that_changes_fails_in_one_line);
    SPM_TEST_ADD(s, &run, a_failing_si_is_named_by_its_label);
    SPM_TEST_ADD(s, &run, gxx_builds_a_plugin);
    SPM_TEST_ADD(s, &run, wordfreq_matches_coreutils);
    SPM_TEST_ADD(s, &run, mandel_matches_a_sequential_reference);
    SPM_TEST_ADD(s, &run, a_failing_plugin_job_says_so_in_one_line);
    return s;
}

SPM_TEST_MAIN(programs_suite)
