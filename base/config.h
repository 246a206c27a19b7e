/*  =========================================================================
    config - every setting of the center and the agents, from file,
    environment and flags

    @discuss
    One table (base/config.c) names every setting: its INI section and key,
    its environment variable, its default and its range. The value a process
    uses is the first of: the command-line flag, the environment variable
    (SPM_*), the configuration file, the default. The file is the one given
    with --config, else $SPM_CONFIG, else /etc/spm/spm.conf when it exists.
    conf/spm.conf documents every setting; `spm config check FILE` validates
    a file and prints the effective settings with where each came from.
    @end
    =========================================================================
*/
#ifndef SPM_CONFIG_H_INCLUDED
#define SPM_CONFIG_H_INCLUDED

#include <stdio.h>

/*  Loads PATH (NULL: $SPM_CONFIG, else /etc/spm/spm.conf if it exists, else
    nothing). Every key is checked against the table and its range. Returns
    0, or SPM_EIO (unreadable) / SPM_EINVAL with the detail "FILE:LINE: KEY:
    what is wrong". May be called again to load another file. */
int spm_config_load(const char *path);

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

/*  Prints every setting as "section.key = value   (from file|env VAR|default)". */
void spm_config_print(FILE *out);

#endif
