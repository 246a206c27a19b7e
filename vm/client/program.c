/*  =========================================================================
    program - a plugin program's command side: its client and its results

    Staging is in stagefile.c; here the client itself, the run of the root
    SF and the results fetched back, in order.
    =========================================================================
*/
#include "vm/client/program.h"

#include "runtime/plugin.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct spm_client {
    spm_session_t *s;    /* opened at the first need (NULL before) */
    spm_run_opts_t o;    /* how to open it */
    int shared_files;    /* the nodes read files by this machine's paths */
    const void *object;  /* the plugin's bytes, not owned */
    size_t object_len;   /* their length */
    spm_sdb_t plugin;    /* their SDB once put (0: not yet) */
    const char *program; /* what spm_client_run runs */
    spm_sdb_t **owned;   /* id lists given to the main, freed after it */
    size_t nowned, capowned;
};

int spm_client_session(spm_client_t *c, spm_session_t **s)
{
    int rc = 0;
    if (!c->s && (rc = spm_session_open(&c->o, &c->s)) == 0)
        rc = spm_session_put(c->s, SPM_PLUGIN_TYPE, c->object, c->object_len, &c->plugin);
    *s = c->s;
    return rc;
}

int spm_client_files_in_place(spm_client_t *c)
{
    return c->shared_files || (c->s && spm_session_local_files(c->s));
}

int spm_client_meter(const spm_client_t *c)
{
    return !c->o.quiet && isatty(STDERR_FILENO);
}

int spm_client_own(spm_client_t *c, spm_sdb_t *ids)
{
    if (c->nowned == c->capowned) {
        size_t cap = c->capowned ? c->capowned * 2 : 8;
        spm_sdb_t **o = realloc(c->owned, cap * sizeof *o);
        if (!o) {
            free(ids);
            return spm_error(SPM_ENOMEM, "out of memory");
        }
        c->owned = o;
        c->capowned = cap;
    }
    c->owned[c->nowned++] = ids;
    return 0;
}

int spm_client_main_run(const spm_main_t *m, const spm_run_opts_t *o, int shared_files,
                        const void *object, size_t len, int argc, char **argv)
{
    spm_client_t c = {.o = *o,
                      .shared_files = shared_files,
                      .object = object,
                      .object_len = len,
                      .program = argv[0]};
    spm_error(0, "%s", "");
    int rc = m->main(&c, argc, argv);
    if (rc != 0 && !*spm_error_detail())
        spm_error(rc, "%s: %s", argv[0], spm_strerror(rc));
    for (size_t i = 0; i < c.nowned; i++)
        free(c.owned[i]);
    free(c.owned);
    if (c.s) {
        char detail[1024]; /* closing may say things of its own */
        snprintf(detail, sizeof detail, "%s", spm_error_detail());
        spm_session_destroy(&c.s);
        spm_error(rc, "%s", detail);
    }
    return rc;
}

int spm_client_run(spm_client_t *c, const void *args, size_t len, void **result, size_t *result_len)
{
    spm_session_t *s;
    int rc = spm_client_session(c, &s);
    if (result)
        *result = NULL;
    if (result_len)
        *result_len = 0;
    if (rc != 0)
        return rc;
    return spm_session_run_plugin(s, c->plugin, c->program, args, len, result, result_len);
}

int spm_client_get(spm_client_t *c, spm_sdb_t id, void **data, size_t *len)
{
    spm_session_t *s;
    int rc = spm_client_session(c, &s);
    return rc ? rc : spm_session_get(s, id, data, len);
}

/*  A block that came before those ahead of it in the order asked. */
typedef struct {
    spm_kept_t *kept; /* held without a copy (NULL: copy is malloc'd) */
    void *copy;
    const void *data;
    size_t len;
    int here;
} early_t;

typedef struct {
    spm_session_t *s;
    FILE *out;
    size_t next;    /* the index to write next */
    early_t *early; /* by index: blocks waiting for NEXT */
    size_t n;
} writer_t;

static int put_out(writer_t *w, const void *data, size_t len)
{
    if (len && fwrite(data, 1, len, w->out) != len)
        return spm_error(SPM_EIO, "writing the results: a write failed (disk full?)");
    return 0;
}

static int got_block(void *arg, size_t index, const void *data, size_t len)
{
    writer_t *w = arg;
    if (index != w->next) { /* ahead of its turn: held, at most a window's worth */
        early_t *e = &w->early[index];
        e->data = data;
        e->len = len;
        if (!(e->kept = spm_session_keep(w->s, &e->data))) {
            if (!(e->copy = malloc(len ? len : 1)))
                return spm_error(SPM_ENOMEM, "out of memory");
            memcpy(e->copy, data, len);
            e->data = e->copy;
        }
        e->here = 1;
        return 0;
    }
    int rc = put_out(w, data, len);
    for (w->next++; rc == 0 && w->next < w->n && w->early[w->next].here; w->next++) {
        early_t *e = &w->early[w->next];
        rc = put_out(w, e->data, e->len);
        spm_kept_free(e->kept);
        free(e->copy);
        *e = (early_t){0};
    }
    return rc;
}

int spm_client_write(spm_client_t *c, const spm_sdb_t *ids, size_t n, FILE *out)
{
    spm_session_t *s;
    int rc = spm_client_session(c, &s);
    if (rc != 0 || n == 0)
        return rc;
    writer_t w = {.s = s, .out = out, .n = n, .early = calloc(n, sizeof(early_t))};
    if (!w.early)
        return spm_error(SPM_ENOMEM, "out of memory");
    rc = spm_session_get_each(s, ids, n, got_block, &w);
    for (size_t i = 0; i < n; i++) {
        spm_kept_free(w.early[i].kept);
        free(w.early[i].copy);
    }
    free(w.early);
    if (rc == 0 && fflush(out) != 0)
        rc = spm_error(SPM_EIO, "writing the results: a write failed (disk full?)");
    return rc;
}
