/*  Integration tests of the settings table (base/config.c), through the
    spm binary as a user meets it: conf/spm.conf documents every setting
    with the table's default and range; the --help of every process that
    takes a setting names its option and the table's default; a value is
    accepted or refused alike on the command line of each such process, in
    a configuration file (spm config check) and in its environment
    variable, at both ends of its range and one past each; and the two
    settings whose copies had drifted now mean one thing everywhere:
    agent.ieus = 0 and --ieus 0 both start one IEU per core, and [log]
    level is what the center, the agent, its IEUs and a client's embedded
    VM log at. */
#include "base/config.h"
#include "tests/check_main.h"
#include "tests/scratch.h"
#include "tests/spm_test.h"

#include <ctype.h>

static char empty_conf[128]; /* a configuration file with no setting */

/*  Every test starts from the table's defaults: no SPM_* variable of the
    table is set, and SPM_CONFIG names an empty file (not /etc/spm/spm.conf). */
static void setup(void)
{
    scratch_setup();
    snprintf(empty_conf, sizeof empty_conf, "%s/empty.conf", base);
    FILE *f = fopen(empty_conf, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    const spm_setting_t *s;
    for (size_t i = 0; (s = spm_config_at(i)) != NULL; i++)
        unsetenv(s->env);
    setenv("SPM_CONFIG", empty_conf, 1);
}

static void teardown(void)
{
    unsetenv("SPM_CONFIG");
    scratch_teardown();
}

/*  The processes of the table and the command lines that start them. */
static const struct {
    unsigned proc;
    const char *name;
    const char *argv[3]; /* the command, NULL-terminated */
} procs[] = {
    {SPM_PROC_CENTER, "spm center", {"center", NULL}},
    {SPM_PROC_AGENT, "spm agent", {"agent", NULL}},
    {SPM_PROC_IEU, "spm ieu", {"ieu", NULL}},
    {SPM_PROC_CLIENT, "spm run synthetic", {"run", "synthetic", NULL}},
};
#define NPROCS (sizeof procs / sizeof procs[0])

/*  Runs the command of procs[P] with the NULL-terminated EXTRA after it.
    Returns its exit status; *ERR (malloc'd) is its stderr. */
static int run_proc(size_t p, const char *const *extra, char **out, char **err)
{
    const char *argv[16];
    int n = 0;
    for (; procs[p].argv[n]; n++)
        argv[n] = procs[p].argv[n];
    spm_test_args(argv, n, 16, extra);
    return spm_test_run(argv, 20, out, err);
}

/*  Writes TEXT to BASE/NAME and returns the path (static buffer). */
static const char *write_conf(const char *name, const char *text)
{
    static char path[192];
    snprintf(path, sizeof path, "%s/%s", base, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/*  The paragraph of OPTION in the --help text HELP: its line "  OPTION ..."
    and the lines that go on with it (indented further), each run of blanks
    made one space. NULL when HELP has no line for OPTION. Malloc'd. */
static char *paragraph(const char *help, const char *option)
{
    size_t len = strlen(option);
    const char *line = help;
    while (line && *line) {
        if (strncmp(line, "  ", 2) == 0 && strncmp(line + 2, option, len) == 0 &&
            (line[2 + len] == ' ' || line[2 + len] == '\n' || line[2 + len] == '\0'))
            break;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (!line || !*line)
        return NULL;
    const char *end = strchr(line, '\n');
    while (end && strncmp(end + 1, "   ", 3) == 0) /* a line that goes on */
        end = strchr(end + 1, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    char *par = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int blank = isspace((unsigned char)line[i]);
        if (!blank || (k > 0 && par[k - 1] != ' '))
            par[k++] = blank ? ' ' : line[i];
    }
    par[k] = '\0';
    return par;
}

/*  Whether VALUE stands in TEXT after the word "default", as a word of its
    own (not a part of "10000" or "/etc/spm/keys.old"). */
static int default_shown(const char *text, const char *value)
{
    const char *from = strstr(text, "default");
    size_t len = strlen(value);
    for (const char *p = from; p && (p = strstr(p, value)) != NULL; p++) {
        char before = p[-1], after = p[len];
        if (!isalnum((unsigned char)before) && !strchr("./_-", before) &&
            !isalnum((unsigned char)after) && (!strchr("./_-", after) || after == '\0'))
            return 1;
    }
    return 0;
}

START_TEST(conf_documents_every_setting_with_its_default_and_range)
{
    const char *src = getenv("SPM_SOURCE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/conf/spm.conf", src ? src : ".");
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: cannot open", path);
    char line[512], section[64] = "", comment[4096] = "";
    size_t found = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#') {
            strncat(comment, line + 1, sizeof comment - strlen(comment) - 2);
            strcat(comment, " ");
            continue;
        }
        if (line[0] == '[') {
            snprintf(section, sizeof section, "%.*s", (int)strcspn(line + 1, "]"), line + 1);
        } else if (strchr(line, '=')) {
            char key[128], value[256];
            size_t klen = strcspn(line, " =");
            snprintf(key, sizeof key, "%.*s", (int)klen, line);
            const char *v = strchr(line, '=') + 1;
            while (*v == ' ')
                v++;
            snprintf(value, sizeof value, "%s", v);
            const spm_setting_t *s = spm_config_find(section, key);
            ck_assert_msg(s != NULL, "conf/spm.conf: %s.%s is not in the table", section, key);
            ck_assert_msg(strcmp(value, s->def) == 0,
                          "conf/spm.conf: %s.%s = '%s', but its default is '%s'", section, key,
                          value, s->def);
            char env[64];
            snprintf(env, sizeof env, "(%s)", s->env);
            ck_assert_msg(strstr(comment, env) != NULL,
                          "conf/spm.conf: the comment on %s.%s does not name %s", section, key,
                          s->env);
            if (s->kind == SPM_SETTING_LONG) {
                char range[64];
                snprintf(range, sizeof range, "(%ld..%ld", s->min, s->max);
                ck_assert_msg(strstr(comment, range) != NULL,
                              "conf/spm.conf: the comment on %s.%s does not say its range %s)",
                              section, key, range);
            }
            found++;
        }
        comment[0] = '\0';
    }
    fclose(f);
    size_t n = 0;
    while (spm_config_at(n))
        n++;
    ck_assert_msg(found == n, "conf/spm.conf has %zu settings, the table %zu", found, n);
}
END_TEST

START_TEST(every_process_help_names_its_options_and_their_defaults)
{
    for (size_t p = 0; p < NPROCS; p++) {
        const char *help[] = {"--help", NULL};
        char *out, *err;
        ck_assert_msg(run_proc(p, help, &out, &err) == 0, "%s --help: %s", procs[p].name, err);
        const spm_setting_t *s;
        for (size_t i = 0; (s = spm_config_at(i)) != NULL; i++) {
            if (!(s->procs & procs[p].proc) || !s->option)
                continue; /* center.http_token, center.allow_plugins: a file's only */
            char *par = paragraph(out, s->option);
            ck_assert_msg(par != NULL, "%s --help does not name %s (%s.%s)", procs[p].name,
                          s->option, s->section, s->key);
            if (s->arg && *s->def)
                ck_assert_msg(default_shown(par, s->def),
                              "%s --help: %s does not show the default of %s.%s, %s: '%s'",
                              procs[p].name, s->option, s->section, s->key, s->def, par);
            free(par);
        }
        free(out);
        free(err);
    }
}
END_TEST

/*  Whether VALUE of setting S is accepted (ACCEPT) or refused with the
    words WHY, alike in a file (spm config check), in its environment
    variable (spm config check, and every process that reads the
    configuration and takes S) and on the command line of every process
    that takes S (the option, then --help: accepted, the help is printed). */
static void same_everywhere(const spm_setting_t *s, const char *value, int accept, const char *why)
{
    char *out, *err, text[256], want[512];
    /* a file */
    snprintf(text, sizeof text, "[%s]\n%s = %s\n", s->section, s->key, value);
    const char *conf = write_conf("value.conf", text);
    const char *check[] = {"config", "check", conf, NULL};
    int rc = spm_test_run(check, 10, &out, &err);
    snprintf(want, sizeof want, "%s:2: %s.%s: %s", conf, s->section, s->key, why);
    if (accept)
        ck_assert_msg(rc == 0, "%s = %s in a file: refused: %s", s->key, value, err);
    else
        ck_assert_msg(rc == 1 && strstr(err, want) && spm_test_lines(err) == 1,
                      "%s = %s in a file: want '%s', got %d: %s", s->key, value, want, rc, err);
    free(out);
    free(err);
    /* the environment */
    setenv(s->env, value, 1);
    snprintf(want, sizeof want, "%s: %s", s->env, why);
    const char *check_env[] = {"config", "check", empty_conf, NULL};
    rc = spm_test_run(check_env, 10, &out, &err);
    if (accept)
        ck_assert_msg(rc == 0, "%s=%s: refused: %s", s->env, value, err);
    else
        ck_assert_msg(rc == 1 && strstr(err, want) && spm_test_lines(err) == 1,
                      "%s=%s: want '%s', got %d: %s", s->env, value, want, rc, err);
    free(out);
    free(err);
    for (size_t p = 0; p < NPROCS; p++) {
        if (!(s->procs & procs[p].proc) || !(procs[p].proc & (SPM_PROC_CENTER | SPM_PROC_AGENT)))
            continue; /* IEUs and clients take their settings from the command line */
        const char *help[] = {"--help", NULL};
        rc = run_proc(p, help, &out, &err);
        if (accept)
            ck_assert_msg(rc == 0, "%s=%s %s: refused: %s", s->env, value, procs[p].name, err);
        else
            ck_assert_msg(rc == 1 && strstr(err, want) && spm_test_lines(err) == 1,
                          "%s=%s %s: want '%s', got %d: %s", s->env, value, procs[p].name, want, rc,
                          err);
        free(out);
        free(err);
    }
    unsetenv(s->env);
    /* the command line */
    snprintf(want, sizeof want, "%s: %s", s->option, why);
    for (size_t p = 0; s->arg && p < NPROCS; p++) {
        if (!(s->procs & procs[p].proc))
            continue;
        const char *args[] = {s->option, value, "--help", NULL};
        rc = run_proc(p, args, &out, &err);
        if (accept)
            ck_assert_msg(rc == 0 && strstr(out, "usage:"), "%s %s %s: refused: %s", procs[p].name,
                          s->option, value, err);
        else
            ck_assert_msg(rc == 1 && strstr(err, want) && spm_test_lines(err) == 1,
                          "%s %s %s: want '%s', got %d: %s", procs[p].name, s->option, value, want,
                          rc, err);
        free(out);
        free(err);
    }
}

START_TEST(every_range_is_the_same_on_the_command_line_in_a_file_and_in_the_environment)
{
    const spm_setting_t *s;
    for (size_t i = 0; (s = spm_config_at(i)) != NULL; i++) {
        char v[32], why[128];
        switch (s->kind) {
        case SPM_SETTING_LONG: {
            long ends[4] = {s->min - 1, s->min, s->max, s->max + 1};
            for (int k = 0; k < 4; k++) {
                snprintf(v, sizeof v, "%ld", ends[k]);
                snprintf(why, sizeof why, "'%s' is not a whole number from %ld to %ld", v, s->min,
                         s->max);
                same_everywhere(s, v, k == 1 || k == 2, why);
            }
            break;
        }
        case SPM_SETTING_LEVEL:
            same_everywhere(s, "debug", 1, "");
            same_everywhere(s, "error", 1, "");
            same_everywhere(s, "loud", 0, "'loud' is not error, warn, info or debug");
            break;
        case SPM_SETTING_BOOL: /* its option is a flag: a file and the environment */
            same_everywhere(s, "false", 1, "");
            same_everywhere(s, "maybe", 0, "'maybe' is not true or false");
            break;
        default:
            break;
        }
    }
}
END_TEST

/*  Waits (up to 10 s) until the process PID has N live IEU children and
    returns them in KIDS (at most MAX); fails the test otherwise. */
static int await_ieus(pid_t pid, int n, pid_t *kids, int max)
{
    int live = 0;
    for (int tries = 0; tries < 500 && live != n; tries++) {
        usleep(20000);
        pid_t all[1024];
        int k = spm_test_children(pid, all, 1024);
        live = 0;
        for (int i = 0; i < k; i++)
            if (spm_test_is(all[i], "ieu") && spm_test_alive(all[i]) && live < max)
                kids[live++] = all[i];
    }
    ck_assert_msg(live == n, "pid %d has %d IEUs, not %d", (int)pid, live, n);
    return live;
}

START_TEST(ieus_zero_means_one_per_core_in_a_file_on_the_command_line_and_for_a_client)
{
    /* conf/spm.conf says 0 is one IEU per core, and ships ieus = 0: refusing
       0 would refuse the example file; a node with no IEU is not a thing
       spm has (its data agent serves what its IEUs keep). */
    long cores = spm_config_ieus(0);
    ck_assert_int_eq(cores, sysconf(_SC_NPROCESSORS_ONLN));
    pid_t kids[1024];
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    int a = spm_test_vm_agent(&vm, "0", NULL); /* --ieus 0 */
    await_ieus(vm.agents[a].pid, (int)cores, kids, 1024);
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache-conf", vm.dir);
    const char *conf = write_conf("ieus.conf", "[agent]\nieus = 0\n");
    /* --wait-center: an agent that had not joined when the center stopped
       is not told to stop, and would wait for it for ever */
    const char *argv[] = {"agent", "--center",    vm.ep,   "--cache-dir",   cache, "--config",
                          conf,    "--log-level", "error", "--wait-center", "10",  NULL};
    vm.agents[vm.nagents] = spm_test_start(argv); /* agent.ieus = 0 */
    await_ieus(vm.agents[vm.nagents++].pid, (int)cores, kids, 1024);
    spm_test_vm_stop(&vm);
    /* a client's embedded VM */
    char sis[32]; /* a second of SIs at any number of cores */
    snprintf(sis, sizeof sis, "%ld", 200 * cores);
    const char *run[] = {"run",    "synthetic", "--ieus",  "0",       "--sis", sis,
                         "--work", "fixed:5ms", "--sleep", "--quiet", NULL};
    spm_test_proc_t pr = spm_test_start(run);
    pid_t agent = 0;
    for (int tries = 0; tries < 250 && !agent; tries++) {
        usleep(20000);
        pid_t k[8];
        int n = spm_test_children(pr.pid, k, 8);
        for (int i = 0; i < n; i++)
            if (spm_test_is(k[i], "agent"))
                agent = k[i];
    }
    ck_assert_msg(agent != 0, "spm run started no agent");
    await_ieus(agent, (int)cores, kids, 1024);
    char *err;
    ck_assert_msg(spm_test_finish(&pr, 60, NULL, &err) == 0, "%s", err);
    free(err);
}
END_TEST

/*  Starts a center on DIR/NAME with the NULL-terminated EXTRA flags, waits
    until it listens, stops it and returns its stderr (malloc'd). */
static char *center_log(const char *name, const char *const *extra)
{
    char ep[192], store[192];
    snprintf(ep, sizeof ep, "ipc://%s/%s", base, name);
    snprintf(store, sizeof store, "%s/%s-store", base, name);
    const char *argv[16] = {"center", "--listen", ep, "--store", store};
    spm_test_args(argv, 5, 16, extra);
    spm_test_proc_t c = spm_test_start(argv);
    char sock[192];
    snprintf(sock, sizeof sock, "%s/%s", base, name);
    struct stat sb;
    for (int tries = 0; tries < 250 && stat(sock, &sb) != 0; tries++)
        usleep(20000);
    usleep(100000);
    kill(c.pid, SIGTERM);
    char *err;
    ck_assert_int_eq(spm_test_finish(&c, 20, NULL, &err), 0);
    return err;
}

/*  Starts an agent with one IEU on VM with the flags EXTRA, kills its IEU
    once it runs and waits for the agent to start another; returns the
    agent's stderr (malloc'd) after it stopped, and in IEU_ARGS the new
    IEU's command line, NUL-separated. */
static char *agent_log(spm_test_vm_t *vm, const char *const *extra, char *ieu_args, size_t size)
{
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache%d", vm->dir, vm->nagents);
    const char *argv[16] = {"agent", "--center", vm->ep, "--ieus", "1", "--cache-dir", cache};
    spm_test_args(argv, 7, 16, extra);
    spm_test_proc_t ag = spm_test_start(argv);
    pid_t first, second;
    await_ieus(ag.pid, 1, &first, 1);
    usleep(300000); /* welcomed: its IEU runs */
    kill(first, SIGKILL);
    second = first;
    for (int tries = 0; tries < 250 && second == first; tries++) {
        usleep(20000);
        pid_t k[4];
        int n = spm_test_children(ag.pid, k, 4);
        for (int i = 0; i < n; i++)
            if (k[i] != first && spm_test_is(k[i], "ieu") && spm_test_alive(k[i]))
                second = k[i];
    }
    ck_assert_msg(second != first, "the agent did not restart its IEU");
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)second);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(ieu_args, 1, size - 2, f) : 0;
    if (f)
        fclose(f);
    ieu_args[n] = ieu_args[n + 1] = '\0';
    kill(ag.pid, SIGTERM);
    char *err;
    spm_test_finish(&ag, 60, NULL, &err);
    return err;
}

/*  An operator fixing a file sees every problem at once, each with its
    line, and an endpoint without a port is refused where it is written,
    not when the center first binds it. */
START_TEST(config_check_names_every_problem_with_its_line)
{
    const char *conf = write_conf("bad.conf", "[center]\n"
                                              "listen = tcp://x\n"
                                              "heartbeat_ms = 5\n"
                                              "bogus = 1\n"
                                              "[agent]\n"
                                              "center = tcp://head:7700\n"
                                              "data_listen = ipc://\n");
    const char *check[] = {"config", "check", conf, NULL};
    char *out, *err, want[512];
    ck_assert_int_eq(spm_test_run(check, 10, &out, &err), 1);
    const char *lines[] = {
        "2: center.listen: 'tcp://x' is not an endpoint",
        "3: center.heartbeat_ms: '5' is not a whole number from 10 to 60000",
        "4: center.bogus: unknown setting",
        "7: agent.data_listen: 'ipc://' is not an endpoint",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        snprintf(want, sizeof want, "%s:%s", conf, lines[i]);
        ck_assert_msg(strstr(err, want), "want '%s' in: %s", want, err);
    }
    ck_assert_int_eq(spm_test_lines(err), 4);
    free(out);
    free(err);
    /* the same endpoint on the command line, in the same words */
    const char *listen[] = {"--listen", "tcp://x", NULL};
    ck_assert_int_ne(run_proc(0, listen, &out, &err), 0);
    ck_assert_msg(strstr(err, "--listen: 'tcp://x' is not an endpoint"), "%s", err);
    free(out);
    free(err);
}
END_TEST

/*  The value after "--log-level" in the NUL-separated ARGS, or "". */
static const char *level_in(const char *args)
{
    for (const char *a = args; *a; a += strlen(a) + 1)
        if (strcmp(a, "--log-level") == 0)
            return a + strlen(a) + 1;
    return "";
}

START_TEST(log_level_is_what_every_process_logs_at)
{
    /* the center: info unless told; the file and the environment tell it */
    char *err = center_log("c1", NULL);
    ck_assert_msg(strstr(err, "info: listening on") != NULL, "%s", err);
    free(err);
    const char *warn_conf = write_conf("warn.conf", "[log]\nlevel = warn\n");
    const char *with_file[] = {"--config", warn_conf, NULL};
    err = center_log("c2", with_file);
    ck_assert_msg(strstr(err, "info:") == NULL, "[log] level = warn, and: %s", err);
    free(err);
    setenv("SPM_LOG_LEVEL", "error", 1);
    err = center_log("c3", NULL);
    unsetenv("SPM_LOG_LEVEL");
    ck_assert_msg(strstr(err, "info:") == NULL, "SPM_LOG_LEVEL=error, and: %s", err);
    free(err);

    /* the agent: warn unless told (an IEU's death is a warning), and its
       IEUs at the agent's level */
    spm_test_vm_t vm;
    spm_test_vm_start(&vm, NULL);
    char args[4096];
    err = agent_log(&vm, NULL, args, sizeof args);
    ck_assert_msg(strstr(err, "restarting") && !strstr(err, "info:"), "%s", err);
    ck_assert_str_eq(level_in(args), "warn");
    free(err);
    const char *info_conf = write_conf("info.conf", "[log]\nlevel = info\n");
    const char *info[] = {"--config", info_conf, NULL};
    err = agent_log(&vm, info, args, sizeof args);
    ck_assert_msg(strstr(err, "info: node ") && strstr(err, ": 1 IEUs started"),
                  "[log] level = info, and: %s", err);
    ck_assert_str_eq(level_in(args), "info");
    free(err);
    setenv("SPM_LOG_LEVEL", "error", 1);
    err = agent_log(&vm, NULL, args, sizeof args);
    unsetenv("SPM_LOG_LEVEL");
    ck_assert_msg(!strstr(err, "restarting"), "SPM_LOG_LEVEL=error, and: %s", err);
    ck_assert_str_eq(level_in(args), "error");
    free(err);
    spm_test_vm_stop(&vm);

    /* a client: its embedded VM at warn, or at SPM_LOG_LEVEL; a client
       reads no configuration file */
    const char *run[] = {"run", "synthetic", "--sis", "10", "--ieus", "1", "--quiet", NULL};
    setenv("SPM_LOG_LEVEL", "info", 1);
    ck_assert_int_eq(spm_test_run(run, 60, NULL, &err), 0);
    unsetenv("SPM_LOG_LEVEL");
    ck_assert_msg(strstr(err, "info: listening on") && strstr(err, "info: node 0: 1 IEUs started"),
                  "SPM_LOG_LEVEL=info spm run, and: %s", err);
    free(err);
    setenv("SPM_CONFIG", info_conf, 1);
    ck_assert_int_eq(spm_test_run(run, 60, NULL, &err), 0);
    ck_assert_msg(strstr(err, "info:") == NULL, "spm run, and: %s", err);
    free(err);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    const spm_test_case_t c = {.timeout_s = 180, .setup = setup, .teardown = teardown};
    SPM_TEST_ADD(s, &c, conf_documents_every_setting_with_its_default_and_range);
    SPM_TEST_ADD(s, &c, every_process_help_names_its_options_and_their_defaults);
    SPM_TEST_ADD(s, &c,
                 every_range_is_the_same_on_the_command_line_in_a_file_and_in_the_environment);
    SPM_TEST_ADD(s, &c,
                 ieus_zero_means_one_per_core_in_a_file_on_the_command_line_and_for_a_client);
    SPM_TEST_ADD(s, &c, log_level_is_what_every_process_logs_at);
    SPM_TEST_ADD(s, &c, config_check_names_every_problem_with_its_line);
    return s;
}

SPM_TEST_MAIN(config_suite)
