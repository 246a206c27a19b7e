/*  The manual as an operator reads it: every command of `spm --help` has
    a page of its own, spm-COMMAND(1) in docs/man (what `make install` and
    the Debian package install), listed by spm(1); and each page's OPTIONS
    are exactly the options the command's --help prints, each with the
    same argument, so that the two cannot drift apart. The real spm
    binary's --help against the real pages. */
#include "tests/check_main.h"
#include "tests/spm_test.h"

#define MAX_OPTS 128

/*  A set of options, each "--name ARG" or "--name" (sorted by add_opt). */
typedef struct {
    char opt[MAX_OPTS][64];
    int n;
} opts_t;

static void add_opt(opts_t *o, const char *name, const char *arg)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s%s", name, *arg ? " " : "", arg);
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->opt[i], key) == 0)
            return;
    ck_assert_int_lt(o->n, MAX_OPTS);
    int i = o->n++;
    while (i > 0 && strcmp(o->opt[i - 1], key) > 0) {
        strcpy(o->opt[i], o->opt[i - 1]);
        i--;
    }
    strcpy(o->opt[i], key);
}

/*  Reads an option entry at P, as --help and the pages' tags spell it:
    "-o, --output FILE", "--json", "--block MxPxN" (the argument one space
    after the name, starting with a capital; the description two spaces
    or more after). Adds it to O unless it is --help. */
static void parse_entry(const char *p, opts_t *o)
{
    if (p[0] == '-' && p[1] != '-' && p[2] == ',' && p[3] == ' ')
        p += 4; /* "-o, ": the long name says it */
    char name[48] = "", arg[48] = "";
    size_t n = strcspn(p, " \n");
    snprintf(name, sizeof name, "%.*s", (int)n, p);
    p += n;
    if (p[0] == ' ' && p[1] >= 'A' && p[1] <= 'Z')
        snprintf(arg, sizeof arg, "%.*s", (int)strcspn(p + 1, " \n"), p + 1);
    if (strcmp(name, "--help") != 0 && strcmp(name, "-h") != 0)
        add_opt(o, name, arg);
}

/*  The options `spm ARGV... --help` prints: lines indented 2 to 6 spaces
    that start with a dash. */
static void help_opts(const char *const *argv, opts_t *o)
{
    const char *args[8];
    int n = 0;
    while (argv[n] && n < 6) {
        args[n] = argv[n];
        n++;
    }
    args[n++] = "--help";
    args[n] = NULL;
    char *out;
    ck_assert_msg(spm_test_run(args, 30, &out, NULL) == 0, "spm %s --help failed", argv[0]);
    for (const char *line = out; line && *line;) {
        size_t indent = strspn(line, " ");
        if (indent >= 2 && indent <= 6 && line[indent] == '-')
            parse_entry(line + indent, o);
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    free(out);
}

/*  The page docs/man/NAME.1 (malloc'd), or NULL when there is none. */
static char *read_page(const char *name)
{
    const char *src = getenv("SPM_SOURCE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/docs/man/%s.1", src && *src ? src : ".", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    char *text = spm_test_slurp(fd);
    close(fd);
    return text;
}

/*  Writes troff line LINE without its font escapes (\fB \fI \fR \fP) and
    with \- as -, into BUF. */
static void plain(const char *line, char *buf, size_t size)
{
    size_t o = 0;
    for (const char *p = line; *p && *p != '\n' && o + 1 < size; p++) {
        if (p[0] == '\\' && p[1] == 'f' && p[2]) {
            p += 2;
            continue;
        }
        if (p[0] == '\\' && (p[1] == '-' || p[1] == ' ')) {
            buf[o++] = p[1];
            p++;
            continue;
        }
        buf[o++] = *p;
    }
    buf[o] = '\0';
}

/*  The options of PAGE's OPTIONS section: the tag line after each .TP. */
static void page_opts(const char *page, opts_t *o)
{
    const char *sec = strstr(page, "\n.SH OPTIONS\n");
    if (!sec)
        return;
    const char *end = strstr(sec + 1, "\n.SH ");
    for (const char *tp = strstr(sec, "\n.TP\n"); tp && (!end || tp < end);
         tp = strstr(tp + 1, "\n.TP\n")) {
        char tag[256];
        plain(tp + 5, tag, sizeof tag);
        if (tag[0] == '-')
            parse_entry(tag, o);
    }
}

/*  The commands `spm --help` lists (up to MAX), into NAMES. */
static int commands(char names[][32], int max)
{
    const char *argv[] = {"--help", NULL};
    char *out;
    ck_assert_int_eq(spm_test_run(argv, 30, &out, NULL), 0);
    const char *p = strstr(out, "commands:\n");
    ck_assert_ptr_nonnull(p);
    int n = 0;
    for (p = strchr(p, '\n') + 1; *p == ' ' && n < max; p = strchr(p, '\n') + 1) {
        p += strspn(p, " ");
        snprintf(names[n++], 32, "%.*s", (int)strcspn(p, " \n"), p);
    }
    free(out);
    return n;
}

/*  The --help invocations whose options a command's page tells: the
    programs of run, the kinds of gen, else the command itself. */
static int forms(const char *cmd, const char *argv[][3])
{
    if (strcmp(cmd, "run") == 0) {
        argv[0][0] = "run", argv[0][1] = "synthetic", argv[0][2] = NULL;
        argv[1][0] = "run", argv[1][1] = "--plugin", argv[1][2] = NULL;
        return 2;
    }
    if (strcmp(cmd, "gen") == 0) {
        argv[0][0] = "gen", argv[0][1] = "matrix", argv[0][2] = NULL;
        argv[1][0] = "gen", argv[1][1] = "transactions", argv[1][2] = NULL;
        return 2;
    }
    argv[0][0] = cmd, argv[0][1] = NULL;
    return 1;
}

/*  Every command (but sfhost, which only the center starts) has its page,
    named spm-COMMAND, with a SYNOPSIS and a DESCRIPTION, and spm(1) lists
    it. */
START_TEST(every_command_has_its_page)
{
    char names[32][32];
    int n = commands(names, 32);
    ck_assert_int_ge(n, 15);
    char *overview = read_page("spm");
    ck_assert_msg(overview, "docs/man/spm.1 is missing");
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], "sfhost") == 0)
            continue;
        char page_name[64], ref[64];
        snprintf(page_name, sizeof page_name, "spm-%.31s", names[i]);
        char *page = read_page(page_name);
        ck_assert_msg(page, "docs/man/%s.1 is missing", page_name);
        ck_assert_msg(strstr(page, ".SH SYNOPSIS\n") && strstr(page, ".SH DESCRIPTION\n"),
                      "%s.1 lacks a SYNOPSIS or a DESCRIPTION", page_name);
        snprintf(ref, sizeof ref, ".BR spm\\-%.31s (1)", names[i]);
        ck_assert_msg(strstr(overview, ref), "spm.1 does not list %s(1)", page_name);
        free(page);
    }
    free(overview);
}
END_TEST

/*  Each page's OPTIONS are its command's --help options, the same names
    with the same arguments, none more and none less. */
START_TEST(each_pages_options_are_its_commands)
{
    char names[32][32];
    int n = commands(names, 32);
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], "sfhost") == 0)
            continue;
        opts_t help = {0}, man = {0};
        const char *argv[4][3];
        int k = forms(names[i], argv);
        for (int j = 0; j < k; j++)
            help_opts(argv[j], &help);
        char page_name[64];
        snprintf(page_name, sizeof page_name, "spm-%.31s", names[i]);
        char *page = read_page(page_name);
        ck_assert_msg(page, "docs/man/%s.1 is missing", page_name);
        page_opts(page, &man);
        free(page);
        char diff[2048] = "";
        for (int a = 0; a < help.n; a++) {
            int found = 0;
            for (int b = 0; b < man.n && !found; b++)
                found = strcmp(help.opt[a], man.opt[b]) == 0;
            if (!found)
                snprintf(diff + strlen(diff), sizeof diff - strlen(diff),
                         "\n  --help has '%s', the page has not", help.opt[a]);
        }
        for (int b = 0; b < man.n; b++) {
            int found = 0;
            for (int a = 0; a < help.n && !found; a++)
                found = strcmp(help.opt[a], man.opt[b]) == 0;
            if (!found)
                snprintf(diff + strlen(diff), sizeof diff - strlen(diff),
                         "\n  the page has '%s', --help has not", man.opt[b]);
        }
        ck_assert_msg(!diff[0], "spm %s: %s.1 and --help differ:%s", names[i], page_name, diff);
    }
}
END_TEST

/*  The pages of the processes name the files they keep: the center its
    store with its journal and history, the agent its cache with node.id
    and agent.pid, both their keys and the configuration. */
START_TEST(process_pages_name_their_files)
{
    static const char *const center[] = {
        "/var/lib/spm/store", "journal/",      "history",
        "center.lock",        "/etc/spm/keys", "/etc/spm/spm.conf"};
    static const char *const agent[] = {"/var/cache/spm", "node.id", "agent.pid", "/etc/spm/keys",
                                        "/etc/spm/spm.conf"};
    char *c = read_page("spm-center"), *a = read_page("spm-agent");
    ck_assert(c && a);
    const char *cf = strstr(c, "\n.SH FILES\n"), *af = strstr(a, "\n.SH FILES\n");
    ck_assert(cf && af);
    for (size_t i = 0; i < sizeof center / sizeof *center; i++)
        ck_assert_msg(strstr(cf, center[i]), "spm-center.1's FILES lacks %s", center[i]);
    for (size_t i = 0; i < sizeof agent / sizeof *agent; i++)
        ck_assert_msg(strstr(af, agent[i]), "spm-agent.1's FILES lacks %s", agent[i]);
    free(c);
    free(a);
}
END_TEST

static Suite *man_suite(void)
{
    Suite *s = suite_create("man");
    static const spm_test_case_t c = {.timeout_s = 120};
    SPM_TEST_ADD(s, &c, every_command_has_its_page);
    SPM_TEST_ADD(s, &c, each_pages_options_are_its_commands);
    SPM_TEST_ADD(s, &c, process_pages_name_their_files);
    return s;
}

SPM_TEST_MAIN(man_suite)
