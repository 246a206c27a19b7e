/*  =========================================================================
    config - every setting of the center and the agents, from file,
    environment and flags

    @discuss
    One table (base/config.c) names every setting once: its INI section and
    key, its environment variable, its command-line option, its kind, its
    default, its range, the processes whose command line takes it, and the
    line their --help prints for it. The value a process uses is the first
    of: the command-line flag, the environment variable (SPM_*), the
    configuration file, the default. The file is the one given with
    --config, else $SPM_CONFIG, else /etc/spm/spm.conf when it exists.

    A command checks an option's value with spm_config_arg (the table's
    range, the same words as a file's error) and prints the help lines of
    the settings it takes with spm_config_help. conf/spm.conf documents
    every setting with the table's default and range, and
    tests/integration/test_config.c fails when the file, a process's
    --help or its checks disagree with the table. `spm config check FILE`
    validates a file and prints the effective settings with where each
    came from.
    @end
    =========================================================================
*/
#ifndef SPM_CONFIG_H_INCLUDED
#define SPM_CONFIG_H_INCLUDED

#include "base/log.h"

#include <stddef.h>
#include <stdio.h>

typedef enum {
    SPM_SETTING_STR,      /* any text */
    SPM_SETTING_LONG,     /* a whole number in [min, max] */
    SPM_SETTING_BOOL,     /* true/false, yes/no, on/off, 1/0 */
    SPM_SETTING_LEVEL,    /* error, warn, info or debug (empty: unset) */
    SPM_SETTING_SECRET,   /* text that spm config check does not show */
    SPM_SETTING_ENDPOINT, /* tcp://HOST:PORT (PORT a number or a star) or ipc://PATH; empty: unset
                           */
} spm_setting_kind_t;

/*  The processes whose command line takes a setting's option. */
enum {
    SPM_PROC_CENTER = 1 << 0, /* spm center */
    SPM_PROC_AGENT = 1 << 1,  /* spm agent */
    SPM_PROC_IEU = 1 << 2,    /* spm ieu, given it by its agent */
    SPM_PROC_CLIENT = 1 << 3, /* a command that runs a job, for its embedded VM */
};

typedef struct {
    const char *section, *key; /* INI place: [section] key = value */
    const char *env;           /* its environment variable */
    const char *option;        /* its command-line option, "--prefetch" (NULL: none) */
    const char *arg;           /* the option's argument in --help, "N" (NULL: a flag) */
    spm_setting_kind_t kind;
    const char *def;  /* default, as text ("": unset) */
    long min, max;    /* SPM_SETTING_LONG: the range */
    unsigned procs;   /* SPM_PROC_* that take it: by the option, where it has one */
    const char *help; /* the option's --help text, without its default */
} spm_setting_t;

/*  The I-th setting of the table, or NULL past its end. The table is
    static: the pointer stays valid. */
const spm_setting_t *spm_config_at(size_t i);

/*  The setting SECTION.KEY, or NULL when the table has none. */
const spm_setting_t *spm_config_find(const char *section, const char *key);

/*  Loads PATH (NULL: $SPM_CONFIG, else /etc/spm/spm.conf if it exists, else
    nothing). Every key is checked against the table and its range, and so
    is every SPM_* variable set. Returns 0, or SPM_EIO (unreadable) /
    SPM_EINVAL with the detail "FILE:LINE: KEY: what is wrong" (or "VAR:
    what is wrong"), the first of the problems found: every key and
    variable is checked, and spm_config_problem lists them all. May be
    called again to load another file. */
int spm_config_load(const char *path);

/*  The I-th problem the last spm_config_load found, one line as in its
    detail ("FILE:LINE: KEY: what is wrong"), or NULL past the last (at
    most 32 are kept). */
const char *spm_config_problem(size_t i);

/*  1 when EP is an endpoint spm can bind or connect: tcp://HOST:PORT
    (PORT 0..65535 or *) or ipc://PATH. */
int spm_config_endpoint_ok(const char *ep);

/*  Loads the file named by --config FILE (or --config=FILE) in ARGV, else
    as spm_config_load(NULL). Commands call it before parsing their flags,
    so the configured values become the flags' defaults. */
int spm_config_load_args(int argc, char **argv);

/*  The value of SECTION.KEY after environment, file and default (never
    NULL for a key in the table; NULL for an unknown key). The string stays
    valid until the next spm_config_load. */
const char *spm_config_str(const char *section, const char *key);

/*  The value of SECTION.KEY as a number (the table guarantees it parses). */
long spm_config_long(const char *section, const char *key);

/*  1 for true/yes/on/1, else 0. */
int spm_config_bool(const char *section, const char *key);

/*  The table's default of SECTION.KEY as a number, whatever the file or
    the environment say: for a process that takes the setting only from
    its command line (an IEU, a client's embedded VM). 0 for an unknown key. */
long spm_config_default_long(const char *section, const char *key);

/*  Checks ARG, given to the command-line option of SECTION.KEY, as the
    file and the environment are checked: a number must be whole and in
    the table's range. Returns 0 with *OUT set (a number; for a log level
    its spm_log_level_t, for a boolean 1 or 0; else 0), or SPM_EINVAL with
    the one-line detail "OPTION: 'ARG' is not a whole number from MIN to
    MAX" (or what else is wrong). */
int spm_config_arg(const char *section, const char *key, const char *arg, long *out);

/*  spm_config_arg for --log-level: 0 with *LEVEL set, or SPM_EINVAL with
    the detail "--log-level: 'ARG' is not error, warn, info or debug". */
int spm_config_arg_level(const char *arg, spm_log_level_t *level);

/*  The log level of a process whose own default is FALLBACK ("info" for
    the center, "warn" for the others): log.level from the environment or
    the loaded file when either sets it, else FALLBACK. A static string. */
const char *spm_config_log_level(const char *fallback);

/*  agent.ieus as a number of IEUs: N, or for 0 one per core (at least 1). */
long spm_config_ieus(long n);

/*  Prints the --help lines of the options process PROC (one SPM_PROC_*)
    takes, in the table's order: "  --OPTION ARG  HELP (default DEF)",
    wrapped at 80 columns. */
void spm_config_help(FILE *out, unsigned proc);

/*  Prints every setting as "section.key = value   (from file|env VAR|default)". */
void spm_config_print(FILE *out);

#endif
