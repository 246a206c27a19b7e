/*  =========================================================================
    registry - the opcodes, SDB types and programs this binary knows

    Tables are small (tens of entries) and filled once from constructors
    before main(), then only read; a linear scan by id is fast enough and
    needs no locking.
    =========================================================================
*/
#include "isa/core/registry.h"

#include <string.h>
#include <sys/types.h>

#define MAX_ENTRIES 256

typedef struct {
    uint32_t id;      /* spm_name_id(name) */
    const char *name; /* the registered name (not owned: static strings) */
} entry_t;

static spm_opcode_t opcodes[MAX_ENTRIES]; /* registered opcodes */
static entry_t opcode_ids[MAX_ENTRIES];   /* their ids, same index */
static size_t nopcodes;
static spm_sdb_type_t types[MAX_ENTRIES]; /* registered SDB types */
static entry_t type_ids[MAX_ENTRIES];
static size_t ntypes;
static spm_program_t programs[MAX_ENTRIES]; /* registered programs */
static size_t nprograms;

uint32_t spm_name_id(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h ? h : 1;
}

static ssize_t find_id(const entry_t *tab, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (tab[i].id == id)
            return (ssize_t)i;
    return -1;
}

/*  Adds NAME to TAB; returns its index or SPM_EINVAL for a missing name,
    a duplicate, a hash collision or a full table. */
static int add_entry(entry_t *tab, size_t *n, const char *name)
{
    if (!name || !*name || *n >= MAX_ENTRIES)
        return SPM_EINVAL;
    uint32_t id = spm_name_id(name);
    if (find_id(tab, *n, id) >= 0)
        return SPM_EINVAL;
    tab[*n] = (entry_t){id, name};
    return (int)(*n)++;
}

int spm_opcode_register(const spm_opcode_t *op)
{
    if (!op->exec)
        return SPM_EINVAL;
    int i = add_entry(opcode_ids, &nopcodes, op->name);
    if (i < 0)
        return i;
    opcodes[i] = *op;
    return 0;
}

const spm_opcode_t *spm_opcode_by_id(uint32_t id)
{
    ssize_t i = find_id(opcode_ids, nopcodes, id);
    return i < 0 ? NULL : &opcodes[i];
}

const spm_opcode_t *spm_opcode_find(const char *name)
{
    return spm_opcode_by_id(spm_name_id(name));
}

int spm_sdb_type_register(const spm_sdb_type_t *type)
{
    if (!type->validate)
        return SPM_EINVAL;
    int i = add_entry(type_ids, &ntypes, type->name);
    if (i < 0)
        return i;
    types[i] = *type;
    return 0;
}

const spm_sdb_type_t *spm_sdb_type_by_id(uint32_t id)
{
    ssize_t i = find_id(type_ids, ntypes, id);
    return i < 0 ? NULL : &types[i];
}

int spm_sdb_check(uint32_t type, const void *data, size_t len)
{
    const spm_sdb_type_t *t = spm_sdb_type_by_id(type);
    return t && t->validate(data, len) == 0 ? 0 : SPM_EFORMAT;
}

const spm_sdb_type_t *spm_sdb_type_at(size_t i)
{
    return i < ntypes ? &types[i] : NULL;
}

const spm_sdb_type_t *spm_sdb_type_find(const char *name)
{
    return spm_sdb_type_by_id(spm_name_id(name));
}

int spm_program_register(const spm_program_t *p)
{
    if (!p->name || !p->root || nprograms >= MAX_ENTRIES || spm_program_find(p->name))
        return SPM_EINVAL;
    programs[nprograms++] = *p;
    return 0;
}

const spm_program_t *spm_program_find(const char *name)
{
    for (size_t i = 0; i < nprograms; i++)
        if (strcmp(programs[i].name, name) == 0)
            return &programs[i];
    return NULL;
}

const spm_program_t *spm_program_at(size_t i)
{
    return i < nprograms ? &programs[i] : NULL;
}
