/*  =========================================================================
    registry - the opcodes, SDB types and programs this process knows

    Tables are filled from constructors: the binary's own before main(),
    a plugin's while it is loaded (runtime/plugin.c), which may happen
    while IEU worker threads look opcodes up. An entry is written before
    the count that makes it visible is published (release/acquire), and
    entries are never removed or moved, so readers need no lock. Only one
    thread (the process's main loop) registers at a time.
    =========================================================================
*/
#include "runtime/registry.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define MAX_ENTRIES 4096

typedef struct {
    uint32_t id;      /* spm_name_id of the scoped name */
    const char *name; /* the registered (unscoped) name; not owned */
} entry_t;

typedef struct {
    entry_t ids[MAX_ENTRIES];
    _Atomic size_t n;
} table_t;

static spm_opcode_t opcodes[MAX_ENTRIES]; /* registered opcodes, same index as opcode_ids */
static table_t opcode_ids;
static spm_sdb_type_t types[MAX_ENTRIES];
static table_t type_ids;
static spm_program_t programs[MAX_ENTRIES];
static table_t program_ids;
static spm_main_t mains[MAX_ENTRIES]; /* programs' command sides */
static table_t main_ids;

/*  The scope of what is registered now: a plugin's while it loads. */
static __thread const char *reg_scope;

uint32_t spm_name_id(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h ? h : 1;
}

uint32_t spm_scoped_id(const char *scope, const char *name)
{
    if (!scope || !*scope)
        return spm_name_id(name);
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)scope; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    h ^= '/';
    h *= 16777619u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h ? h : 1;
}

const char *spm_registry_scope(const char *scope)
{
    const char *prev = reg_scope;
    reg_scope = scope;
    return prev;
}

static ssize_t find_id(const table_t *tab, uint32_t id)
{
    size_t n = atomic_load_explicit(&tab->n, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (tab->ids[i].id == id)
            return (ssize_t)i;
    return -1;
}

/*  Index of NAME in TAB, looked up in SCOPE first, then unscoped. */
static ssize_t find_name(const table_t *tab, const char *scope, const char *name)
{
    ssize_t i = scope && *scope ? find_id(tab, spm_scoped_id(scope, name)) : -1;
    return i >= 0 ? i : find_id(tab, spm_name_id(name));
}

/*  Reserves the next slot of TAB for NAME in the registering scope; returns
    its index, or SPM_EINVAL for a missing name, a duplicate, a hash
    collision or a full table. The caller fills the slot, then publishes. */
static int add_entry(table_t *tab, const char *name)
{
    size_t n = atomic_load_explicit(&tab->n, memory_order_relaxed);
    if (!name || !*name || n >= MAX_ENTRIES)
        return SPM_EINVAL;
    uint32_t id = spm_scoped_id(reg_scope, name);
    if (find_id(tab, id) >= 0)
        return SPM_EINVAL;
    tab->ids[n] = (entry_t){id, name};
    return (int)n;
}

static void publish(table_t *tab, int i)
{
    atomic_store_explicit(&tab->n, (size_t)i + 1, memory_order_release);
}

int spm_opcode_register(const spm_opcode_t *op)
{
    if (!op->exec)
        return SPM_EINVAL;
    int i = add_entry(&opcode_ids, op->name);
    if (i < 0)
        return i;
    opcodes[i] = *op;
    publish(&opcode_ids, i);
    return 0;
}

const spm_opcode_t *spm_opcode_by_id(uint32_t id)
{
    ssize_t i = find_id(&opcode_ids, id);
    return i < 0 ? NULL : &opcodes[i];
}

const spm_opcode_t *spm_opcode_find(const char *name)
{
    ssize_t i = find_name(&opcode_ids, NULL, name);
    return i < 0 ? NULL : &opcodes[i];
}

uint32_t spm_opcode_id_in(const char *scope, const char *name)
{
    ssize_t i = find_name(&opcode_ids, scope, name);
    return i < 0 ? 0 : opcode_ids.ids[i].id;
}

int spm_sdb_type_register(const spm_sdb_type_t *type)
{
    if (!type->validate)
        return SPM_EINVAL;
    int i = add_entry(&type_ids, type->name);
    if (i < 0)
        return i;
    types[i] = *type;
    publish(&type_ids, i);
    return 0;
}

const spm_sdb_type_t *spm_sdb_type_by_id(uint32_t id)
{
    ssize_t i = find_id(&type_ids, id);
    return i < 0 ? NULL : &types[i];
}

uint32_t spm_sdb_type_id_in(const char *scope, const char *name)
{
    ssize_t i = find_name(&type_ids, scope, name);
    return i < 0 ? 0 : type_ids.ids[i].id;
}

int spm_sdb_check(uint32_t type, const void *data, size_t len)
{
    const spm_sdb_type_t *t = spm_sdb_type_by_id(type);
    return t && t->validate(data, len) == 0 ? 0 : SPM_EFORMAT;
}

int spm_sdb_check_known(uint32_t type, const void *data, size_t len)
{
    const spm_sdb_type_t *t = spm_sdb_type_by_id(type);
    return !t || t->validate(data, len) == 0 ? 0 : SPM_EFORMAT;
}

const spm_sdb_type_t *spm_sdb_type_at(size_t i)
{
    return i < atomic_load_explicit(&type_ids.n, memory_order_acquire) ? &types[i] : NULL;
}

const spm_sdb_type_t *spm_sdb_type_find(const char *name)
{
    ssize_t i = find_name(&type_ids, NULL, name);
    return i < 0 ? NULL : &types[i];
}

int spm_program_register(const spm_program_t *p)
{
    if (!p->root)
        return SPM_EINVAL;
    int i = add_entry(&program_ids, p->name);
    if (i < 0)
        return i;
    programs[i] = *p;
    publish(&program_ids, i);
    return 0;
}

const spm_program_t *spm_program_find(const char *name)
{
    return spm_program_find_in(NULL, name);
}

const spm_program_t *spm_program_find_in(const char *scope, const char *name)
{
    ssize_t i = find_name(&program_ids, scope, name);
    return i < 0 ? NULL : &programs[i];
}

const spm_program_t *spm_program_at(size_t i)
{
    return i < atomic_load_explicit(&program_ids.n, memory_order_acquire) ? &programs[i] : NULL;
}

size_t spm_program_names_in(const char *scope, char *buf, size_t size)
{
    size_t n = atomic_load_explicit(&program_ids.n, memory_order_acquire), count = 0, used = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (program_ids.ids[i].id != spm_scoped_id(scope, programs[i].name))
            continue;
        int w = snprintf(buf + used, size > used ? size - used : 0, "%s%s", count ? ", " : "",
                         programs[i].name);
        if (w > 0 && used + (size_t)w < size)
            used += (size_t)w;
        count++;
    }
    return count;
}

int spm_main_register(const spm_main_t *m)
{
    if (!m->main)
        return SPM_EINVAL;
    int i = add_entry(&main_ids, m->program);
    if (i < 0)
        return i;
    mains[i] = *m;
    publish(&main_ids, i);
    return 0;
}

const spm_main_t *spm_main_find_in(const char *scope, const char *program)
{
    ssize_t i = scope && *scope ? find_id(&main_ids, spm_scoped_id(scope, program)) : -1;
    return i < 0 ? NULL : &mains[i];
}
