/*  =========================================================================
    config - every setting of the center and the agents, from file,
    environment and flags

    The INI file is parsed by Debian's libinih. libinih as packaged does not
    hand the line number to the handler, but returns the line of the first
    line the handler refused; the handler records the key, so an error still
    names file, line and key.
    =========================================================================
*/
#include "base/config.h"
#include "base/cli.h"
#include "base/heap.h"
#include "spm/spm.h"

#include <errno.h>
#include <ini.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { KIND_STR, KIND_LONG, KIND_BOOL, KIND_LEVEL, KIND_SECRET } kind_t;

typedef struct {
    const char *section, *key; /* INI place */
    const char *env;           /* environment variable */
    const char *def;           /* default, as text */
    kind_t kind;
    long min, max; /* KIND_LONG range */
} setting_t;

static const setting_t table[] = {
    {"center", "listen", "SPM_CENTER_LISTEN", "tcp://0.0.0.0:7700", KIND_STR, 0, 0},
    {"center", "store", "SPM_CENTER_STORE", "/var/lib/spm/store", KIND_STR, 0, 0},
    {"center", "heartbeat_ms", "SPM_HEARTBEAT_MS", "1000", KIND_LONG, 10, 60000},
    {"center", "dead_ms", "SPM_DEAD_MS", "5000", KIND_LONG, 100, 3600000},
    {"center", "lease_s", "SPM_LEASE_S", "600", KIND_LONG, 0, 2592000},
    {"center", "sync_ms", "SPM_SYNC_MS", "100", KIND_LONG, 0, 600000},
    {"center", "journal", "SPM_JOURNAL", "true", KIND_BOOL, 0, 0},
    {"center", "warm_mb", "SPM_WARM_MB", "0", KIND_LONG, 0, 1048576},
    {"center", "speculate", "SPM_SPECULATE", "true", KIND_BOOL, 0, 0},
    {"center", "replicas", "SPM_REPLICAS", "2", KIND_LONG, 1, 8},
    {"center", "http", "SPM_CENTER_HTTP", "", KIND_STR, 0, 0},
    {"center", "http_token", "SPM_CENTER_HTTP_TOKEN", "", KIND_SECRET, 0, 0},
    {"center", "allow_plugins", "SPM_ALLOW_PLUGINS", "auto", KIND_STR, 0, 0},
    {"agent", "center", "SPM_CENTER", "tcp://localhost:7700", KIND_STR, 0, 0},
    {"agent", "ieus", "SPM_IEUS", "0", KIND_LONG, 0, 1024},
    {"agent", "slots", "SPM_SLOTS", "1", KIND_LONG, 1, 256},
    {"agent", "prefetch", "SPM_PREFETCH", "1", KIND_LONG, 0, 4096},
    {"agent", "cache_dir", "SPM_CACHE_DIR", "", KIND_STR, 0, 0},
    {"agent", "cache_mb", "SPM_CACHE_MB", "0", KIND_LONG, 0, 1L << 30},
    {"agent", "heap_mb", "SPM_HEAP_MB", "0", KIND_LONG, 0, SPM_HEAP_MB_MAX},
    {"agent", "data_listen", "SPM_DATA_LISTEN", "", KIND_STR, 0, 0},
    {"agent", "data_advertise", "SPM_DATA_ADVERTISE", "", KIND_STR, 0, 0},
    {"agent", "store_reads", "SPM_STORE_READS", "true", KIND_BOOL, 0, 0},
    {"security", "keys", "SPM_KEYS", "/etc/spm/keys", KIND_STR, 0, 0},
    {"security", "insecure", "SPM_INSECURE", "false", KIND_BOOL, 0, 0},
    {"log", "level", "SPM_LOG_LEVEL", "info", KIND_LEVEL, 0, 0},
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

/*  Checks VALUE for setting I. Returns 0 or SPM_EINVAL with WHY set. */
static int check(size_t i, const char *value, char *why, size_t size)
{
    const setting_t *s = &table[i];
    switch (s->kind) {
    case KIND_LONG: {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < s->min || v > s->max) {
            snprintf(why, size, "'%s' is not a whole number from %ld to %ld", value, s->min,
                     s->max);
            return SPM_EINVAL;
        }
        return 0;
    }
    case KIND_BOOL: {
        static const char *ok[] = {"true", "false", "yes", "no", "on", "off", "1", "0"};
        for (size_t k = 0; k < 8; k++)
            if (strcmp(value, ok[k]) == 0)
                return 0;
        snprintf(why, size, "'%s' is not true or false", value);
        return SPM_EINVAL;
    }
    case KIND_LEVEL:
        if (strcmp(value, "error") && strcmp(value, "warn") && strcmp(value, "info") &&
            strcmp(value, "debug")) {
            snprintf(why, size, "'%s' is not error, warn, info or debug", value);
            return SPM_EINVAL;
        }
        return 0;
    default:
        return 0;
    }
}

typedef struct {
    char key[128]; /* the first refused key, "section.key" */
    char why[256]; /* and why */
} parse_t;

static int on_pair(void *user, const char *section, const char *key, const char *value)
{
    parse_t *p = user;
    int i = find(section, key);
    char why[256] = "";
    if (i < 0)
        snprintf(why, sizeof why, "unknown setting");
    else if (check((size_t)i, value, why, sizeof why) == 0) {
        free(from_file[i]);
        from_file[i] = strdup(value);
        return 1;
    }
    if (!p->key[0]) {
        snprintf(p->key, sizeof p->key, "%s.%s", section, key);
        snprintf(p->why, sizeof p->why, "%s", why);
    }
    return 0;
}

int spm_config_load(const char *path)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        free(from_file[i]);
        from_file[i] = NULL;
    }
    file_path[0] = '\0';
    if (!path)
        path = getenv("SPM_CONFIG");
    if (!path) {
        if (access("/etc/spm/spm.conf", R_OK) != 0)
            return 0;
        path = "/etc/spm/spm.conf";
    }
    snprintf(file_path, sizeof file_path, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f)
        return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    parse_t p = {"", ""};
    int line = ini_parse_file(f, on_pair, &p);
    fclose(f);
    if (line > 0 && p.key[0])
        return spm_error(SPM_EINVAL, "%s:%d: %s: %s", path, line, p.key, p.why);
    if (line != 0)
        return spm_error(SPM_EINVAL, "%s:%d: not a 'key = value' line or [section]", path,
                         line > 0 ? line : 0);
    /* Environment values are checked as strictly as the file's. */
    for (size_t i = 0; i < NSETTINGS; i++) {
        const char *v = getenv(table[i].env);
        char why[256];
        if (v && check(i, v, why, sizeof why) != 0)
            return spm_error(SPM_EINVAL, "%s: %s", table[i].env, why);
    }
    return 0;
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
    if (v && check(i, v, why, sizeof why) == 0) {
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

void spm_config_print(FILE *out)
{
    for (size_t i = 0; i < NSETTINGS; i++) {
        const char *source;
        const char *v = value_of(i, &source);
        char name[64];
        snprintf(name, sizeof name, "%s.%s", table[i].section, table[i].key);
        if (table[i].kind == KIND_SECRET && *v)
            v = "(set, not shown)";
        fprintf(out, "%-24s = %-28s (%s)\n", name, v, source);
    }
}

static int config_main(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: spm config check FILE\n\n"
               "Checks a configuration file (see conf/spm.conf) and prints every\n"
               "setting's effective value and where it comes from: the environment\n"
               "(SPM_*), the file, or the default. Flags given to a command override all.\n");
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "check") != 0)
        return spm_cli_usage("config", "expected 'check FILE'");
    int rc = spm_config_load(argv[2]);
    if (rc != 0)
        return spm_cli_fail("config", rc);
    spm_config_print(stdout);
    return 0;
}

SPM_CONSTRUCTOR(config_cmd)
{
    spm_command_register(&(spm_command_t){
        .name = "config", .summary = "check a configuration file", .main = config_main});
}
