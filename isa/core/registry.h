/*  =========================================================================
    registry - the opcodes, SDB types and programs this binary knows

    @discuss
    Names travel on the wire as 32-bit FNV-1a hashes (spm_name_id), so an
    ISSUE carries four bytes per opcode, not a string. Registration refuses
    a name whose hash collides with another's, so a hash names one thing.
    Every process of a VM runs the same binary and so has the same tables.
    @end
    =========================================================================
*/
#ifndef SPM_REGISTRY_H_INCLUDED
#define SPM_REGISTRY_H_INCLUDED

#include "vm/spm.h"

/*  FNV-1a hash of NAME, never 0. */
uint32_t spm_name_id(const char *name);

/*  Look-ups by wire id; NULL when unknown. */
const spm_opcode_t *spm_opcode_by_id(uint32_t id);
const spm_sdb_type_t *spm_sdb_type_by_id(uint32_t id);

/*  Whether LEN bytes at DATA are a well-formed block of the type with wire
    id TYPE: 0, or SPM_EFORMAT (also for an unknown type). What the data
    plane checks before it keeps a block that came over the network. */
int spm_sdb_check(uint32_t type, const void *data, size_t len);

/*  Iteration over registered SDB types (the fuzz targets check each):
    returns the I-th type or NULL past the end. */
const spm_sdb_type_t *spm_sdb_type_at(size_t i);

/*  Iteration over registered programs, for `spm run --help`: returns the
    I-th program or NULL past the end. */
const spm_program_t *spm_program_at(size_t i);

#endif
