/*  Whether a pointer lies in this process's memory map of a file: how the
    store and node-cache tests tell a zero-copy read from a copy. */
#ifndef SPM_TEST_MAPPED_H_INCLUDED
#define SPM_TEST_MAPPED_H_INCLUDED

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/*  1 when P points into a mapping of FILE (an absolute path) in this
    process (/proc/self/maps); 0 otherwise, or when the maps are unreadable. */
static inline int spm_test_mapped(const char *file, const void *p)
{
    char line[512], path[256];
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        path[0] = '\0';
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &lo, &hi, path) == 3 &&
            strcmp(path, file) == 0 && (uintptr_t)p >= lo && (uintptr_t)p < hi)
            found = 1;
    }
    fclose(f);
    return found;
}

#endif
