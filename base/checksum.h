/*  =========================================================================
    checksum - the 64-bit checksum of a block

    @header
    Blocks are verified end to end: whoever produces a block (an IEU that
    wrote it, a client that staged it) computes its checksum once, the
    checksum travels with every copy and is stored beside it, and whoever
    receives a copy computes it again and compares. A holder that serves a
    corrupted copy (a bad disk, a bad page, a bug) is caught by the reader
    instead of poisoning the results.

    The function is XXH3_64bits of libxxhash (seed 0): fast (tens of GB/s on
    one core, so hashing a block costs little against moving it) and the
    same on every node and every build, which end-to-end checking needs. It
    detects corruption; it is no defence against a holder that forges blocks
    on purpose. Every 64-bit value, 0 included, is a valid checksum: code
    that needs to say "no checksum" must say so beside it, not with 0.
    @discuss
        uint64_t sum = spm_checksum(bytes, len);
        ... send (bytes, len, sum); the receiver checks
        if (spm_checksum(got, got_len) != sum) ... the copy is corrupt ...
    @end
    =========================================================================
*/
#ifndef SPM_CHECKSUM_H_INCLUDED
#define SPM_CHECKSUM_H_INCLUDED

#include <stddef.h>
#include <stdint.h>

/*  Returns the checksum of the LEN bytes at DATA (DATA may be NULL when LEN
    is 0). Cannot fail. */
uint64_t spm_checksum(const void *data, size_t len);

#endif
