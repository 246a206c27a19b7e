/*  =========================================================================
    heap - how spm processes get memory from malloc
    =========================================================================
*/
#include "base/heap.h"
#include "spm/spm.h"

#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#define MMAP_FROM (32 << 20)     /* glibc refuses a larger threshold */
#define KEEP (256 << 20)         /* freed memory the main heap keeps */
#define CHUNK ((size_t)16 << 20) /* under MMAP_FROM; two fit one of a thread's 64 MiB heaps */
#define MAX_CHUNKS 256           /* 4 GiB */

void spm_heap_keep(void)
{
    mallopt(M_MMAP_THRESHOLD, MMAP_FROM);
    mallopt(M_TRIM_THRESHOLD, KEEP);
}

void spm_heap_release(void)
{
    malloc_trim(0);
}

int spm_heap_prepare(size_t bytes)
{
    void *chunks[MAX_CHUNKS];
    size_t n = 0, page = (size_t)sysconf(_SC_PAGESIZE);
    int rc = 0;
    for (size_t done = 0; done < bytes && n < MAX_CHUNKS; done += CHUNK) {
        size_t len = bytes - done < CHUNK ? bytes - done : CHUNK;
        volatile unsigned char *p = malloc(len);
        if (!p) {
            rc = spm_error(SPM_ENOMEM, "cannot prepare %zu MiB of memory", bytes >> 20);
            break;
        }
        /* a write per page: the compiler may not drop it as it could a
           memset of memory freed unread */
        for (size_t at = 0; at < len; at += page)
            p[at] = 0;
        chunks[n++] = (void *)p;
    }
    while (n > 0) /* in reverse, so that they merge into one free stretch */
        free(chunks[--n]);
    return rc;
}
