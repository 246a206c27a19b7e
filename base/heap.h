/*  =========================================================================
    heap - how spm processes get memory from malloc

    Blocks of up to a few MiB are allocated and freed all the time (a
    message received, a block copied into the store, an SI's result).
    glibc would map each one afresh and unmap it on free, so every byte of
    every block cost a page fault: a third of the center's CPU in a sparse
    matmul. spm_heap_keep, which every spm process calls first, has them
    served from malloc's heaps, which keep freed memory for the next ones.

    A fresh process still gets each page of its heaps from the kernel the
    first time it touches it. On a VM whose host takes freed pages back,
    that took 3 to 45 ms for an 8 MiB block of C against under 1 ms for
    memory used before, and the first three SIs of each IEU on a dense
    product paid it. spm_heap_prepare touches memory in the calling
    thread's heap ahead of need (`spm ieu --heap-mb`).
    =========================================================================
*/
#ifndef SPM_HEAP_H
#define SPM_HEAP_H

#include <stddef.h>

#define SPM_HEAP_MB_MAX (1L << 20) /* --heap-mb: at most 1 TiB */

/*  Has malloc serve requests below 32 MiB (its limit) from its heaps and
    keep up to 256 MiB of freed memory at the top of the main heap (a
    thread's heap keeps all of it). Process-wide; call once, first. */
void spm_heap_keep(void);

/*  Touches BYTES of the calling thread's malloc heap and frees them again,
    so that the thread's later requests up to about that size find their
    pages in place. Needs spm_heap_keep first. Returns 0, or SPM_ENOMEM when
    the memory could not be had (what was touched is kept). */
int spm_heap_prepare(size_t bytes);

/*  Gives the memory malloc holds freed back to the system (malloc_trim):
    spm_heap_keep has it keep up to 256 MiB, which a long-lived process
    that just freed what a large job held should not go on holding. Takes
    a few milliseconds per 100 MiB; call it when idle. */
void spm_heap_release(void);

#endif
