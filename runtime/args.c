/*  =========================================================================
    args - a program's options as a typed table (spm_args_parse)

    @discuss
    A plugin's root SF gets its words through spm_args and its command side
    gets argv; both parse them with one table of spm_argdef_t (name, type,
    range, default, help), which also prints the --help text, so that a
    program carries no parsing code of its own. The messages name the word
    the user typed and what it should have been, in one line.
    @end
    =========================================================================
*/
#include "spm/spm.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_option(const spm_argdef_t *d)
{
    return d->name[0] == '-';
}

/*  Stores the value of D given as WORD (NULL: a FLAG given) into OUT. */
static int store(const spm_argdef_t *d, const char *word, void *out)
{
    char *field = (char *)out + d->offset, *end;
    switch (d->type) {
    case SPM_ARG_FLAG:
        *(int *)field = word != NULL;
        return 0;
    case SPM_ARG_TEXT:
        *(const char **)field = word;
        return 0;
    case SPM_ARG_INT: {
        errno = 0;
        long long v = word ? strtoll(word, &end, 10) : 0;
        if (!word || !*word || *end || errno || (double)v < d->min || (double)v > d->max)
            return spm_error(SPM_EINVAL, "%s: '%s' is not a whole number from %.15g to %.15g",
                             d->name, word ? word : "", d->min, d->max);
        *(int64_t *)field = (int64_t)v;
        return 0;
    }
    case SPM_ARG_REAL: {
        errno = 0;
        double v = word ? strtod(word, &end) : 0;
        if (!word || !*word || *end || errno || !isfinite(v) || v < d->min || v > d->max)
            return spm_error(SPM_EINVAL, "%s: '%s' is not a number from %g to %g", d->name,
                             word ? word : "", d->min, d->max);
        *(double *)field = v;
        return 0;
    }
    }
    return spm_error(SPM_EINVAL, "%s: unknown type %d in the option table", d->name, (int)d->type);
}

int spm_args_parse(const spm_argdef_t *defs, size_t n, int argc, const char *const *argv, void *out)
{
    int rc;
    for (size_t i = 0; i < n; i++) { /* defaults first: every field is set */
        const spm_argdef_t *d = &defs[i];
        if (d->def && d->type != SPM_ARG_FLAG) {
            if ((rc = store(d, d->def, out)) != 0)
                return rc; /* a table whose default is out of its own range */
        } else {
            char *field = (char *)out + d->offset;
            memset(field, 0,
                   d->type == SPM_ARG_TEXT   ? sizeof(const char *)
                   : d->type == SPM_ARG_FLAG ? sizeof(int)
                                             : 8);
        }
    }
    size_t next_word = 0; /* the next positional definition to fill */
    int given[n ? n : 1];
    memset(given, 0, sizeof given);
    for (int a = 0; a < argc; a++) {
        const char *w = argv[a];
        if (!strcmp(w, "--help") || !strcmp(w, "-h"))
            return SPM_ARGS_HELP;
        size_t i = n;
        if (w[0] == '-' && w[1]) {
            const char *eq = strchr(w, '=');
            size_t len = eq ? (size_t)(eq - w) : strlen(w);
            for (i = 0; i < n; i++)
                if (is_option(&defs[i]) && strlen(defs[i].name) == len &&
                    !strncmp(defs[i].name, w, len))
                    break;
            if (i == n)
                return spm_error(SPM_EINVAL, "unknown option %.*s (--help lists them)", (int)len,
                                 w);
            const char *value = eq ? eq + 1 : NULL;
            if (defs[i].type == SPM_ARG_FLAG) {
                if (value)
                    return spm_error(SPM_EINVAL, "%s takes no value", defs[i].name);
                value = "";
            } else if (!value) {
                if (a + 1 >= argc)
                    return spm_error(SPM_EINVAL, "%s needs a value", defs[i].name);
                value = argv[++a];
            }
            if ((rc = store(&defs[i], value, out)) != 0)
                return rc;
            given[i] = 1;
            continue;
        }
        while (next_word < n && is_option(&defs[next_word]))
            next_word++;
        if (next_word == n)
            return spm_error(SPM_EINVAL, "unexpected word '%s' (--help says what is taken)", w);
        if ((rc = store(&defs[next_word], w, out)) != 0)
            return rc;
        given[next_word++] = 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!is_option(&defs[i]) && !given[i] && !defs[i].def)
            return spm_error(SPM_EINVAL, "%s is missing (--help says what is taken)", defs[i].name);
    return 0;
}

/*  Appends to *BUF (of *LEN bytes used, *CAP allocated) or marks *FAILED. */
static void append(char **buf, size_t *len, size_t *cap, int *failed, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void append(char **buf, size_t *len, size_t *cap, int *failed, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (*failed || w < 0)
        return;
    if (*len + (size_t)w + 1 > *cap) {
        size_t c = (*len + (size_t)w + 1) * 2;
        char *b = realloc(*buf, c);
        if (!b) {
            *failed = 1;
            return;
        }
        *buf = b;
        *cap = c;
    }
    va_start(ap, fmt);
    vsnprintf(*buf + *len, *cap - *len, fmt, ap);
    va_end(ap);
    *len += (size_t)w;
}

char *spm_args_usage(const char *program, const char *about, const spm_argdef_t *defs, size_t n)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int failed = 0;
    append(&buf, &len, &cap, &failed, "usage: %s [OPTIONS]", program);
    for (size_t i = 0; i < n; i++)
        if (!is_option(&defs[i]))
            append(&buf, &len, &cap, &failed, defs[i].def ? " [%s]" : " %s", defs[i].name);
    append(&buf, &len, &cap, &failed, "\n\n");
    if (about)
        append(&buf, &len, &cap, &failed, "%s\n\n", about);
    static const char *const what[] = {"", "N", "X", "TEXT", ""};
    for (size_t i = 0; i < n; i++) {
        const spm_argdef_t *d = &defs[i];
        char head[64];
        snprintf(head, sizeof head, "%s %s", d->name,
                 is_option(d) && d->type <= SPM_ARG_FLAG ? what[d->type] : "");
        append(&buf, &len, &cap, &failed, "  %-22s %s", head, d->help ? d->help : "");
        if (d->type == SPM_ARG_INT || d->type == SPM_ARG_REAL)
            append(&buf, &len, &cap, &failed, " (%.15g to %.15g", d->min, d->max);
        else if (d->def && d->type == SPM_ARG_TEXT)
            append(&buf, &len, &cap, &failed, " (");
        if (d->def && d->type != SPM_ARG_FLAG)
            append(&buf, &len, &cap, &failed, "%sdefault %s", d->type == SPM_ARG_TEXT ? "" : "; ",
                   d->def);
        if (d->type == SPM_ARG_INT || d->type == SPM_ARG_REAL ||
            (d->def && d->type == SPM_ARG_TEXT))
            append(&buf, &len, &cap, &failed, ")");
        append(&buf, &len, &cap, &failed, "\n");
    }
    append(&buf, &len, &cap, &failed, "  %-22s %s\n", "--help", "print this and run nothing");
    if (failed) {
        free(buf);
        return NULL;
    }
    return buf;
}
