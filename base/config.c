/*  =========================================================================
    config - every setting of the center and the agents, from file,
    environment and flags

    The INI file is parsed by Debian's libinih. libinih as packaged does not
    hand the line number to the handler, but returns the line of the first
    line the handler refused; the handler records the key, so an error still
    names file, line and key.

    A value is checked by one function (check) wherever it comes from: a
    file, the environment or a command-line option, so that the three
    accept the same values and refuse the others in the same words. Only
    the place named before the words differs: "FILE:LINE: section.key",
    "SPM_VAR" or "--option".
    =========================================================================
*/
#include "base/config.h"
#include "base/cli.h"
#include "base/heap.h"
#include "spm/spm.h"

#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STR SPM_SETTING_STR
#define LONG SPM_SETTING_LONG
#define BOOL SPM_SETTING_BOOL
#define LEVEL SPM_SETTING_LEVEL
#define SECRET SPM_SETTING_SECRET
#define ENDPOINT SPM_SETTING_ENDPOINT
#define CENTER SPM_PROC_CENTER
#define AGENT SPM_PROC_AGENT
#define IEU SPM_PROC_IEU
#define CLIENT SPM_PROC_CLIENT

/*  Every setting, once. An option's help says what the option does and
    what 0 or empty means; spm_config_help adds the default. conf/spm.conf
    says the same at more length, and tests/integration/test_config.c holds
    it, every --help and every check to this table. */
static const spm_setting_t table[] = {
    {"center", "listen", "SPM_CENTER_LISTEN", "--listen", "ENDPOINT", ENDPOINT,
     "tcp://0.0.0.0:7700", 0, 0, CENTER,
     "where to listen, e.g. tcp://0.0.0.0:7700 or ipc:///run/spm/c"},
    {"center", "store", "SPM_CENTER_STORE", "--store", "DIR", STR, "/var/lib/spm/store", 0, 0,
     CENTER, "LMDB store directory, created 0700"},
    {"center", "heartbeat_ms", "SPM_HEARTBEAT_MS", "--heartbeat-ms", "N", LONG, "1000", 10, 60000,
     CENTER, "heartbeat interval asked of IEUs and agents, in ms (at most a third of --dead-ms)"},
    {"center", "dead_ms", "SPM_DEAD_MS", "--dead-ms", "N", LONG, "5000", 100, 3600000, CENTER,
     "silence in ms after which an IEU is dead and its SIs re-issued"},
    {"center", "lease_s", "SPM_LEASE_S", "--lease-s", "N", LONG, "600", 0, 2592000, CENTER,
     "re-issue an SI not committed after N seconds; 0: never"},
    {"center", "sf_bound_ms", "SPM_SF_BOUND_MS", "--sf-bound-ms", "N", LONG, "2000", 10, 3600000,
     CENTER,
     "a plugin's super-functions (run outside the center, in a host process per job) must "
     "answer each turn's events within N ms: a callback that runs longer, or loops, fails its "
     "own job"},
    {"center", "sync_ms", "SPM_SYNC_MS", "--sync-ms", "N", LONG, "100", 0, 600000, CENTER,
     "flush the store to disk at most N ms after a commit. Commits are safe from a crash of any "
     "spm process at once; an operating-system crash can lose the last N ms. 0 syncs at every "
     "commit: durable, slower"},
    {"center", "journal", "SPM_JOURNAL", "--no-journal", NULL, BOOL, "true", 0, 0, CENTER,
     "do not journal the jobs' events (center.journal = false): a restarted center then forgets "
     "the jobs that ran. With the journal, the default, a center killed at any moment and started "
     "again on the same store resumes every job where it was"},
    {"center", "warm_mb", "SPM_WARM_MB", "--warm-mb", "N", LONG, "0", 0, 1048576, CENTER,
     "keep N MiB past the end of the store's data allocated on disk and in memory, prepared while "
     "no job runs, so that blocks of 2 MiB and more are written into pages that already exist; at "
     "most an eighth of the free disk and memory; 0: off"},
    {"center", "speculate", "SPM_SPECULATE", "--no-speculate", NULL, BOOL, "true", 0, 0,
     CENTER | CLIENT,
     "do not copy stragglers to idle IEUs at the end of a stage (center.speculate = false; "
     "copying is the default: an SI held by a slow or stuck IEU for over twice its kind's mean, "
     "and 10 ms, gets a copy, on the holder's own node only if the holder is silent; the first "
     "result wins)"},
    {"center", "replicas", "SPM_REPLICAS", "--replicas", "N", LONG, "2", 1, 8, CENTER,
     "copies of every block the VM keeps on distinct nodes, so that a job survives N-1 nodes "
     "dying at once; with fewer nodes, the store keeps the missing copy, and with N = 1 it "
     "keeps an output its node has no room for"},
    {"center", "http", "SPM_CENTER_HTTP", "--http", "ADDR:PORT", STR, "", 0, 0, CENTER,
     "serve a dashboard at /, the status as JSON at /api/status and Prometheus metrics at "
     "/metrics; ADDR defaults to 127.0.0.1; anyone who reaches the port sees the VM's state "
     "unless center.http_token is set; empty: off, the default"},
    {"center", "http_token", "SPM_CENTER_HTTP_TOKEN", NULL, NULL, SECRET, "", 0, 0, CENTER,
     "a bearer token every HTTP request must carry; empty: none"},
    {"center", "allow_plugins", "SPM_ALLOW_PLUGINS", "--allow-plugins", "WHO", STR, "auto", 0, 0,
     CENTER,
     "who may send plugins: no, yes, keys, or auto (yes on an ipc:// center, no on a tcp:// one)"},
    {"center", "history_jobs", "SPM_HISTORY_JOBS", "--history-jobs", "N", LONG, "1000", 0,
     1000000000, CENTER,
     "ended jobs whose records (state, times, owner, report: spm jobs, spm show, spm wait) are "
     "kept in STORE/history; older ones go once their blocks are freed"},
    {"center", "history_days", "SPM_HISTORY_DAYS", "--history-days", "N", LONG, "7", 0, 36500,
     CENTER, "days a job's record is kept after it ended, once its blocks are freed"},
    {"center", "keep_results_s", "SPM_KEEP_RESULTS_S", "--keep-results-s", "N", LONG, "86400", 0,
     315360000, CENTER,
     "seconds an ended job's blocks (its results) are kept for a client that has not fetched and "
     "discarded them; a job of spm submit has them freed as soon as spm wait delivered its "
     "report. Its record stays. 0: kept until discarded"},
    {"center", "abandon_s", "SPM_ABANDON_S", "--abandon-s", "N", LONG, "60", 0, 31536000, CENTER,
     "a running job that no client has followed for N seconds (its client is gone) is canceled "
     "and its blocks freed; jobs of spm submit are never abandoned. 0: never"},
    {"agent", "center", "SPM_CENTER", "--center", "ENDPOINT", ENDPOINT, "tcp://localhost:7700", 0,
     0, AGENT, "the center, e.g. tcp://head:7700"},
    {"agent", "ieus", "SPM_IEUS", "--ieus", "N", LONG, "0", 0, 1024, AGENT | CLIENT,
     "IEU processes on this node; 0: one per core"},
    {"agent", "slots", "SPM_SLOTS", "--slots", "N", LONG, "1", 1, 256, AGENT | IEU | CLIENT,
     "SIs each IEU executes at once, one thread each"},
    {"agent", "prefetch", "SPM_PREFETCH", "--prefetch", "N", LONG, "1", 0, 4096,
     AGENT | IEU | CLIENT,
     "SIs each IEU asks for ahead, their operands localized while others run; more while SIs are "
     "short: about 2 ms of work, 48 ms while the center has more ready, at most 48"},
    {"agent", "name", "SPM_NODE_NAME", "--name", "NAME", STR, "", 0, 0, AGENT,
     "this node's name in logs, the status and the metrics' node label; empty: the host name"},
    {"agent", "wait_center_s", "SPM_WAIT_CENTER_S", "--wait-center", "SECONDS", LONG, "0", 0,
     31536000, AGENT,
     "how long to wait for the center to answer at start, saying HELLO again with a growing "
     "pause; 0: as long as it takes (a daemon started before its center)"},
    {"agent", "http", "SPM_AGENT_HTTP", "--http", "ADDR:PORT", STR, "", 0, 0, AGENT,
     "serve this node's Prometheus metrics at /metrics (its IEUs, SIs run, cache, bytes served "
     "and fetched, CPU and memory); ADDR defaults to 127.0.0.1; anyone who reaches the port "
     "reads them unless agent.http_token is set; empty: off, the default"},
    {"agent", "http_token", "SPM_AGENT_HTTP_TOKEN", NULL, NULL, SECRET, "", 0, 0, AGENT,
     "a bearer token every HTTP request to the agent must carry; empty: none"},
    {"agent", "cache_dir", "SPM_CACHE_DIR", "--cache-dir", "DIR", STR, "", 0, 0, AGENT,
     "node cache directory, emptied at start; empty: /tmp/spm-cache-UID-PID, removed when the "
     "agent exits"},
    {"agent", "cache_mb", "SPM_CACHE_MB", "--cache-mb", "N", LONG, "0", 0, 1L << 30,
     AGENT | IEU | CLIENT,
     "node cache budget in MiB: copies fetched to read are evicted (least recently used) to stay "
     "within it, and blocks the node is asked to keep for the VM beyond it are refused and kept "
     "elsewhere; 0: no limit"},
    {"agent", "heap_mb", "SPM_HEAP_MB", "--heap-mb", "N", LONG, "0", 0, SPM_HEAP_MB_MAX,
     AGENT | IEU,
     "memory in MiB each IEU thread touches at start and keeps for its SIs' buffers, so that the "
     "first SIs do not wait for the kernel to supply it; 0: none"},
    {"agent", "data_listen", "SPM_DATA_LISTEN", "--data-listen", "EP", ENDPOINT, "", 0, 0, AGENT,
     "where this node serves its blocks to other nodes; empty: ipc://CACHE-DIR/data with an ipc "
     "center, else tcp://*:RANDOM"},
    {"agent", "data_advertise", "SPM_DATA_ADVERTISE", "--data-advertise", "EP", ENDPOINT, "", 0, 0,
     AGENT,
     "the endpoint other nodes use to reach --data-listen; empty: the bound endpoint, with this "
     "host's name"},
    {"agent", "store_reads", "SPM_STORE_READS", "--no-store-reads", NULL, BOOL, "true", 0, 0,
     AGENT | IEU | CLIENT,
     "with an ipc:// center (on this host), IEUs read blocks through it and the node caches, not "
     "straight from its store (agent.store_reads = false)"},
    {"security", "keys", "SPM_KEYS", "--keys", "DIR", STR, "/etc/spm/keys", 0, 0,
     CENTER | AGENT | IEU | CLIENT,
     "CurveZMQ key directory (spm keygen): this process's key pair, the center's public key and "
     "authorized/; every tcp:// endpoint needs them"},
    {"security", "insecure", "SPM_INSECURE", "--insecure", NULL, BOOL, "false", 0, 0,
     CENTER | AGENT | IEU | CLIENT,
     "allow plain TCP without keys (security.insecure = true): anyone who reaches the port gets "
     "in"},
    {"log", "level", "SPM_LOG_LEVEL", "--log-level", "LEVEL", LEVEL, "", 0, 0, CENTER | AGENT | IEU,
     "error, warn, info or debug (default log.level; unset: info for the center, warn for "
     "agents, their IEUs and clients)"},
};

#define NSETTINGS (sizeof table / sizeof table[0])

static char *from_file[NSETTINGS]; /* values read from the file (malloc'd) */
static char file_path[512];        /* the file they came from */

static int find(const char *section, const char *key)
{
    for (size_t i = 0; i < NSETTINGS; i++)
        if (strcmp(table[i].section, section) == 0 && strcmp(table[i].key, key) == 0)
            return (int)i;
    return -1;
}

const spm_setting_t *spm_config_at(size_t i)
{
    return i < NSETTINGS ? &table[i] : NULL;
}

const spm_setting_t *spm_config_find(const char *section, const char *key)
{
    int i = find(section, key);
    return i < 0 ? NULL : &table[i];
}

int spm_config_endpoint_ok(const char *ep)
{
    if (strncmp(ep, "ipc://", 6) == 0)
        return ep[6] != '\0';
    if (strncmp(ep, "tcp://", 6) != 0)
        return 0;
    const char *host = ep + 6, *colon = strrchr(host, ':');
    if (!colon || colon == host)
        return 0;
    if (strcmp(colon + 1, "*") == 0)
        return 1;
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    return !errno && end != colon + 1 && !*end && port >= 0 && port <= 65535;
}

/*  Checks VALUE for setting S and sets *OUT (may be NULL) to what it means:
    the number, the log level, 1 or 0 for a boolean. Returns 0 or SPM_EINVAL
    with WHY set. An empty log level is "unset" in a file or the
    environment; the command line, where a flag not given is unset, refuses
    it (spm_config_arg). */
static int check(const spm_setting_t *s, const char *value, long *out, char *why, size_t size)
{
    long v = 0;
    switch (s->kind) {
    case SPM_SETTING_LONG: {
        char *end;
        errno = 0;
        v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < s->min || v > s->max) {
            snprintf(why, size, "'%s' is not a whole number from %ld to %ld", value, s->min,
                     s->max);
            return SPM_EINVAL;
        }
        break;
    }
    case SPM_SETTING_BOOL: {
        static const char *ok[] = {"true", "false", "yes", "no", "on", "off", "1", "0"};
        size_t k = 0;
        while (k < 8 && strcmp(value, ok[k]) != 0)
            k++;
        if (k == 8) {
            snprintf(why, size, "'%s' is not true or false", value);
            return SPM_EINVAL;
        }
        v = k % 2 == 0;
        break;
    }
    case SPM_SETTING_LEVEL: {
        spm_log_level_t level = SPM_LOG_WARN;
        if (*value && spm_log_parse_level(value, &level) != 0) {
            snprintf(why, size, "'%s' is not error, warn, info or debug", value);
            return SPM_EINVAL;
        }
        v = (long)level;
        break;
    }
    case SPM_SETTING_ENDPOINT:
        if (*value && !spm_config_endpoint_ok(value)) {
            snprintf(why, size,
                     "'%s' is not an endpoint (tcp://HOST:PORT, tcp://*:PORT or ipc://PATH)",
                     value);
            return SPM_EINVAL;
        }
        break;
    default:
        break;
    }
    if (out)
        *out = v;
    return 0;
}

#define MAX_PROBLEMS 32

static char problems[MAX_PROBLEMS][400]; /* what the last load refused, one line each */
static size_t nproblems;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
    if (nproblems == MAX_PROBLEMS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problems[nproblems++], sizeof problems[0], fmt, ap);
    va_end(ap);
}

/*  The file being read: the reader counts its lines, so that the handler
    can name the line of each refused key (libinih as packaged does not
    pass it), and a refused key does not stop the others being checked. */
typedef struct {
    FILE *f;
    const char *path;
    int line;
} parse_t;

static char *read_line(char *str, int num, void *stream)
{
    parse_t *p = stream;
    char *r = fgets(str, num, p->f);
    if (r)
        p->line++;
    return r;
}

static int on_pair(void *user, const char *section, const char *key, const char *value)
{
    parse_t *p = user;
    int i = find(section, key);
    char why[256] = "";
    if (i < 0)
        snprintf(why, sizeof why, "unknown setting");
    else if (check(&table[i], value, NULL, why, sizeof why) == 0) {
        free(from_file[i]);
        from_file[i] = strdup(value);
        return 1;
    }
    problem("%s:%d: %s.%s: %s", p->path, p->line, section, key, why);
    return 0;
}

int spm_config_load(const char *path)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        free(from_file[i]);
        from_file[i] = NULL;
    }
    file_path[0] = '\0';
    nproblems = 0;
    if (!path)
        path = getenv("SPM_CONFIG");
    if (!path) {
        if (access("/etc/spm/spm.conf", R_OK) != 0)
            path = NULL;
        else
            path = "/etc/spm/spm.conf";
    }
    if (path) {
        snprintf(file_path, sizeof file_path, "%s", path);
        parse_t p = {fopen(path, "r"), path, 0};
        if (!p.f)
            return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        size_t before = nproblems;
        int line = ini_parse_stream(read_line, &p, on_pair, &p);
        fclose(p.f);
        /* A line the handler did not refuse: not INI at all. */
        if (line != 0 && nproblems == before)
            problem("%s:%d: not a 'key = value' line or [section]", path, line > 0 ? line : 0);
    }
    /* Environment values are checked as strictly as the file's, with or
       without a file. */
    for (size_t i = 0; i < NSETTINGS; i++) {
        const char *v = getenv(table[i].env);
        char why[256];
        if (v && check(&table[i], v, NULL, why, sizeof why) != 0)
            problem("%s: %s", table[i].env, why);
    }
    return nproblems ? spm_error(SPM_EINVAL, "%s", problems[0]) : 0;
}

const char *spm_config_problem(size_t i)
{
    return i < nproblems ? problems[i] : NULL;
}

int spm_config_load_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            return spm_config_load(argv[i + 1]);
        if (strncmp(argv[i], "--config=", 9) == 0)
            return spm_config_load(argv[i] + 9);
    }
    return spm_config_load(NULL);
}

static const char *value_of(size_t i, const char **source)
{
    const char *v = getenv(table[i].env);
    char why[256];
    if (v && check(&table[i], v, NULL, why, sizeof why) == 0) {
        if (source)
            *source = table[i].env;
        return v;
    }
    if (from_file[i]) {
        if (source)
            *source = file_path;
        return from_file[i];
    }
    if (source)
        *source = "default";
    return table[i].def;
}

const char *spm_config_str(const char *section, const char *key)
{
    int i = find(section, key);
    return i < 0 ? NULL : value_of((size_t)i, NULL);
}

long spm_config_long(const char *section, const char *key)
{
    const char *v = spm_config_str(section, key);
    return v ? strtol(v, NULL, 10) : 0;
}

int spm_config_bool(const char *section, const char *key)
{
    const char *v = spm_config_str(section, key);
    return v && (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"));
}

long spm_config_default_long(const char *section, const char *key)
{
    int i = find(section, key);
    return i < 0 ? 0 : strtol(table[i].def, NULL, 10);
}

int spm_config_arg(const char *section, const char *key, const char *arg, long *out)
{
    const spm_setting_t *s = spm_config_find(section, key);
    if (!s)
        return spm_error(SPM_EINVAL, "%s.%s: unknown setting", section, key);
    char why[256];
    if (s->kind == SPM_SETTING_LEVEL && !*arg)
        snprintf(why, sizeof why, "'' is not error, warn, info or debug");
    else if (check(s, arg, out, why, sizeof why) == 0)
        return 0;
    return spm_error(SPM_EINVAL, "%s: %s", s->option ? s->option : s->env, why);
}

int spm_config_arg_level(const char *arg, spm_log_level_t *level)
{
    long v;
    int rc = spm_config_arg("log", "level", arg, &v);
    if (rc == 0)
        *level = (spm_log_level_t)v;
    return rc;
}

const char *spm_config_log_level(const char *fallback)
{
    const char *v = spm_config_str("log", "level");
    return v && *v ? v : fallback;
}

long spm_config_ieus(long n)
{
    if (n > 0)
        return n;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? cores : 1;
}

#define NBSP '\x01' /* a space wrap does not break a line at */

/*  Prints TEXT from column COL of a line that has LEN characters so far,
    wrapping it at 80 columns with every further line indented to COL. */
static void wrap(FILE *out, const char *text, int len, int col)
{
    for (int first = 1; *text; first = 0) {
        while (*text == ' ')
            text++;
        size_t word = strcspn(text, " ");
        if (!first && len + 1 + (int)word > 80) {
            fprintf(out, "\n%*s", col, "");
            len = col;
        } else if (!first) { /* a one-letter first word must not eat the space */
            fputc(' ', out);
            len++;
        }
        for (size_t k = 0; k < word; k++)
            fputc(text[k] == NBSP ? ' ' : text[k], out);
        len += (int)word;
        text += word;
    }
    fputc('\n', out);
}

void spm_config_help(FILE *out, unsigned proc)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        const spm_setting_t *s = &table[i];
        if (!s->option || !(s->procs & proc))
            continue;
        char name[64], text[1024];
        snprintf(name, sizeof name, "%s%s%s", s->option, s->arg ? " " : "", s->arg ? s->arg : "");
        if (s->arg && *s->def)
            snprintf(text, sizeof text, "%s (default%c%s)", s->help, NBSP, s->def);
        else
            snprintf(text, sizeof text, "%s", s->help);
        int len = fprintf(out, "  %-19s", name);
        if (len > 21) { /* a long option: its text starts on the next line */
            fprintf(out, "\n%22s", "");
            len = 22;
        } else {
            fputc(' ', out);
            len++;
        }
        wrap(out, text, len - 1, 22);
    }
}

void spm_config_print(FILE *out)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        const char *source;
        const char *v = value_of(i, &source);
        char name[64];
        snprintf(name, sizeof name, "%s.%s", table[i].section, table[i].key);
        if (table[i].kind == SPM_SETTING_SECRET && *v)
            v = "(set, not shown)";
        fprintf(out, "%-24s = %-28s (%s)\n", name, v, source);
    }
}
