/*  =========================================================================
    array - growing a zero-filled array indexed by a small id
    =========================================================================
*/
#include "isa/core/array.h"
#include "vm/spm.h"

#include <stdlib.h>
#include <string.h>

int spm_array_grow(void **items, size_t *count, size_t need, size_t size)
{
    if (need <= *count)
        return 0;
    size_t n = need < 2 * *count ? 2 * *count : need;
    unsigned char *v = realloc(*items, n * size);
    if (!v)
        return SPM_ENOMEM;
    memset(v + *count * size, 0, (n - *count) * size);
    *items = v;
    *count = n;
    return 0;
}
