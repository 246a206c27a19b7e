/*  =========================================================================
    registry - the opcodes, SDB types and programs this process knows

    @discuss
    Names travel on the wire as 32-bit FNV-1a hashes (spm_name_id), so an
    ISSUE carries four bytes per opcode, not a string. Registration refuses
    a name whose hash collides with another's, so a hash names one thing.
    Every process of a VM runs the same binary and so has the same built-in
    tables. A plugin's names are registered in a scope (its content hash,
    runtime/plugin.h): their ids hash "SCOPE/NAME", so two plugins that
    use one name do not meet; lookups in a scope find its names first,
    then the built-in ones.
    @end
    =========================================================================
*/
#ifndef SPM_REGISTRY_H_INCLUDED
#define SPM_REGISTRY_H_INCLUDED

#include "spm/spm.h"

/*  FNV-1a hash of NAME, never 0. */
uint32_t spm_name_id(const char *name);

/*  The id of NAME in SCOPE (NULL or "": unscoped, spm_name_id). */
uint32_t spm_scoped_id(const char *scope, const char *name);

/*  Sets the scope that registrations on this thread go to (NULL: none)
    and returns the one before. The plugin loader sets it around dlopen,
    whose constructors register. */
const char *spm_registry_scope(const char *scope);

/*  The wire id of opcode / SDB type NAME as a job in SCOPE (NULL: a
    built-in program's) names it: its own first, then the built-in one.
    0 when neither is registered. */
uint32_t spm_opcode_id_in(const char *scope, const char *name);
uint32_t spm_sdb_type_id_in(const char *scope, const char *name);

/*  Program NAME in SCOPE (NULL: built-in), or NULL. */
const spm_program_t *spm_program_find_in(const char *scope, const char *name);

/*  The command side of program PROGRAM of the plugin SCOPE (its own only:
    built-in programs have theirs in base/cli), or NULL. */
const spm_main_t *spm_main_find_in(const char *scope, const char *program);

/*  Writes the names of SCOPE's own programs, comma-separated, into BUF
    (truncated to SIZE) and returns how many there are. */
size_t spm_program_names_in(const char *scope, char *buf, size_t size);

/*  Look-ups by wire id; NULL when unknown. */
const spm_opcode_t *spm_opcode_by_id(uint32_t id);
const spm_sdb_type_t *spm_sdb_type_by_id(uint32_t id);

/*  Whether LEN bytes at DATA are a well-formed block of the type with wire
    id TYPE: 0, or SPM_EFORMAT (also for an unknown type). What the data
    plane checks before it keeps a block that came over the network. */
int spm_sdb_check(uint32_t type, const void *data, size_t len);

/*  The same, but a block of a type this process does not know passes: a
    node's data agent keeps blocks of plugins it never loads, on their
    checksum alone (the IEU that reads one has loaded its plugin and
    checks it before an SI body sees it). */
int spm_sdb_check_known(uint32_t type, const void *data, size_t len);

/*  Iteration over registered SDB types (the fuzz targets check each):
    returns the I-th type or NULL past the end. */
const spm_sdb_type_t *spm_sdb_type_at(size_t i);

/*  Iteration over registered programs, for `spm run --help`: returns the
    I-th program or NULL past the end. */
const spm_program_t *spm_program_at(size_t i);

#endif
