/*  =========================================================================
    lmdbenv - the LMDB plumbing that the store, its views and the node cache
    share

    The center's store (datacache/store.c), a view of it from another
    process of its host (datacache/storeview.c) and a node's cache
    (datacache/nodecache.c) each keep blocks in an LMDB environment, under
    the same 16-byte keys and in values of the same shape. What they do
    alike is here, once: keys and values, opening and growing an
    environment, LMDB's and the system's errors as SPM_E* codes, reading the
    store's identity record, and giving back the pages of a map that this
    process read.
    =========================================================================
*/
#include "datacache/lmdbenv.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

void spm_store_be64_put(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

uint64_t spm_store_be64_get(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

void spm_store_key(uint8_t *key, spm_sdb_t id, uint64_t version)
{
    spm_store_be64_put(key, id);
    spm_store_be64_put(key + 8, version);
}

void spm_store_key_parse(const uint8_t *key, spm_sdb_t *id, uint64_t *version)
{
    *id = spm_store_be64_get(key);
    *version = spm_store_be64_get(key + 8);
}

int spm_store_check_put(spm_sdb_t id, uint64_t version, const void *data, size_t len)
{
    if (id == 0 || version == 0)
        return spm_error(SPM_EINVAL, "SDB id and version must not be 0 (got %llu, %llu)",
                         (unsigned long long)id, (unsigned long long)version);
    if (len && !data)
        return spm_error(SPM_EINVAL, "no bytes given for a block of %zu bytes", len);
    return 0;
}

#if defined(__x86_64__)
#define STREAM_FROM ((size_t)1 << 20) /* blocks this large are copied past the caches */

/*  memcpy with non-temporal stores: the bytes at DST do not go through the
    caches. A block copied into the store is not read again by this process
    soon, and an ordinary copy of a large one evicts what the SIs running
    beside it hold in the caches they share: on the dense 4096² product
    (8 MiB blocks of C, which the IEUs' main threads copy into the store
    while the workers multiply) the job took 1.042 s against 1.10 s, medians of
    10 alternating runs. */
static void copy_streaming(uint8_t *dst, const uint8_t *src, size_t len)
{
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    memcpy(dst, src, head);
    dst += head, src += head, len -= head;
    size_t n = len / 16;
    for (size_t i = 0; i < n; i++)
        _mm_stream_si128((__m128i *)(void *)dst + i,
                         _mm_loadu_si128((const __m128i *)(const void *)src + i));
    _mm_sfence();
    memcpy(dst + n * 16, src + n * 16, len - n * 16);
}
#endif

void spm_store_value_write(void *dst, size_t hdr, uint32_t type, const void *data, size_t len)
{
    uint8_t *p = dst;
    memset(p, 0, hdr);
    for (int i = 0; i < 4; i++, type >>= 8)
        p[i] = (uint8_t)type;
#if defined(__x86_64__)
    if (len >= STREAM_FROM) {
        copy_streaming(p + hdr, data, len);
        return;
    }
#endif
    if (len)
        memcpy(p + hdr, data, len);
}

int spm_store_value_parse(const MDB_val *v, size_t hdr, uint32_t *type, const void **data,
                          size_t *len)
{
    if (v->mv_size < hdr)
        return spm_error(SPM_EFORMAT, "stored value of %zu bytes has no type header", v->mv_size);
    const uint8_t *p = v->mv_data;
    if (type)
        *type = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    *data = p + hdr;
    *len = v->mv_size - hdr;
    return 0;
}

/* LMDB reports a write cut short by a full disk (or by the file size limit) as EIO, so a failed
   write is taken for a full disk when less than 1 MiB is left. Writes REASON and returns 1 then. */
static int looks_full(const char *dir, char *reason, size_t size)
{
    const uint64_t slack = 1 << 20;
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < slack) {
        snprintf(reason, size, "%llu KiB free",
                 (unsigned long long)vfs.f_bavail * vfs.f_frsize >> 10);
        return 1;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    struct stat st;
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        stat(path, &st) == 0 && (uint64_t)st.st_size + slack >= (uint64_t)lim.rlim_cur) {
        snprintf(reason, size, "the file size limit of %llu KiB is reached",
                 (unsigned long long)lim.rlim_cur >> 10);
        return 1;
    }
    return 0;
}

int spm_store_lmdb_error(int rc, const char *dir, const char *what)
{
    char reason[96];
    if (rc == EIO && looks_full(dir, reason, sizeof reason))
        return spm_error(SPM_EFULL, "%s: disk full while %s (%s)", dir, what, reason);
    switch (rc) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case MDB_MAP_FULL:
        return spm_error(SPM_EFULL, "%s: disk full while %s (%s)", dir, what, mdb_strerror(rc));
    case EACCES:
    case EPERM:
    case EROFS:
        return spm_error(SPM_EIO, "%s: %s", dir, strerror(rc));
    case EIO:
        return spm_error(SPM_EIO, "%s: %s: %s", dir, what, strerror(rc));
    case ENOMEM:
        return spm_error(SPM_ENOMEM, "%s: out of memory while %s", dir, what);
    default:
        return spm_error(SPM_ESTORE, "%s: %s: %s", dir, what, mdb_strerror(rc));
    }
}

/* Creates DIR and its missing parents with mode 0700. */
static int mkdirs(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return spm_error(SPM_EIO, "%s: File name too long", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return spm_error(SPM_EIO, "%s: %s", dir, strerror(errno));
        *p = '/';
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return spm_error(SPM_EIO, "%s: %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0)
        return spm_error(SPM_EIO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return spm_error(SPM_EIO, "%s: %s", dir, strerror(ENOTDIR));
    if (access(dir, W_OK | X_OK) != 0)
        return spm_error(SPM_EIO, "%s: %s", dir, strerror(errno));
    return 0;
}

/* For a read-only open: checks that DIR holds an LMDB data file before LMDB is asked, since
   LMDB would create its lock file in any directory it is pointed at. */
int spm_store_exists(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/data.mdb", dir) >= (int)sizeof path)
        return spm_error(SPM_EIO, "%s: File name too long", dir);
    struct stat st;
    int found = stat(path, &st) == 0;
    if (!found && errno != ENOENT && errno != ENOTDIR)
        return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
    if (!found || !S_ISREG(st.st_mode))
        return spm_error(SPM_ENOTFOUND, "%s: not a store (no data.mdb)", dir);
    return 0;
}

static size_t round_page(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return n < page ? page : (n + page - 1) / page * page;
}

int spm_store_env_open(MDB_env **env, const char *dir, size_t mapsize, unsigned maxdbs,
                       unsigned maxreaders, unsigned flags)
{
    *env = NULL;
    int rdonly = (flags & MDB_RDONLY) != 0;
    int rc = rdonly ? spm_store_exists(dir) : mkdirs(dir);
    if (rc)
        return rc;
    MDB_env *e;
    rc = mdb_env_create(&e);
    if (rc)
        return spm_store_lmdb_error(rc, dir, "creating the environment");
    rc = mdb_env_set_mapsize(e, round_page(mapsize));
    if (!rc && maxdbs)
        rc = mdb_env_set_maxdbs(e, maxdbs);
    if (!rc && maxreaders)
        rc = mdb_env_set_maxreaders(e, maxreaders);
    if (!rc)
        rc = mdb_env_open(e, dir, flags, 0600);
    if (rc) {
        mdb_env_close(e);
        if (rdonly && (rc == ENOENT || rc == MDB_INVALID)) /* an empty or foreign data file */
            return spm_error(SPM_ENOTFOUND, "%s: not a store (%s)", dir, mdb_strerror(rc));
        return spm_store_lmdb_error(rc, dir, "opening the environment");
    }
    *env = e;
    return 0;
}

size_t spm_store_fs_map(const char *dir, size_t min, size_t max)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    struct statvfs vfs;
    while (statvfs(path, &vfs) != 0) {
        char *slash = strrchr(path, '/');
        if (strcmp(path, "/") == 0 || strcmp(path, ".") == 0)
            return min;
        if (!slash)
            strcpy(path, ".");
        else if (slash == path)
            path[1] = '\0';
        else
            *slash = '\0';
    }
    uint64_t size = (uint64_t)vfs.f_blocks * vfs.f_frsize;
    return size < min ? min : size > max ? max : (size_t)size;
}

int spm_store_env_grow(MDB_env *env, const char *dir, size_t *mapsize)
{
    struct statvfs vfs;
    if (statvfs(dir, &vfs) != 0)
        return spm_error(SPM_ESTORE, "%s: %s", dir, strerror(errno));
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    struct stat st;
    uint64_t used = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
    uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    uint64_t limit = used + avail;
    limit -= limit % (uint64_t)sysconf(_SC_PAGESIZE);
    if (limit > SIZE_MAX / 2)
        limit = SIZE_MAX / 2;
    if (*mapsize >= limit)
        return spm_error(SPM_EFULL,
                         "%s: disk full: the data needs more than %zu MiB and %llu MiB are free",
                         dir, *mapsize >> 20, (unsigned long long)(avail >> 20));
    uint64_t want = (uint64_t)*mapsize * 2;
    if (want > limit)
        want = limit;
    int rc = mdb_env_set_mapsize(env, (size_t)want);
    if (rc)
        return spm_store_lmdb_error(rc, dir, "growing the map");
    MDB_envinfo info;
    mdb_env_info(env, &info);
    *mapsize = info.me_mapsize;
    return 0;
}

int spm_store_identity_read(MDB_txn *txn, MDB_dbi dbi, const char *dir,
                            uint8_t id[SPM_STORE_ID_LEN])
{
    uint8_t k[SPM_STORE_KEY_LEN];
    spm_store_key(k, 0, 0);
    MDB_val key = {sizeof k, k}, val;
    int rc = mdb_get(txn, dbi, &key, &val);
    if (rc == MDB_NOTFOUND)
        return spm_error(SPM_ENOTFOUND, "%s: no identity record", dir);
    if (rc)
        return spm_store_lmdb_error(rc, dir, "reading the identity record");
    const char *v = val.mv_data;
    if (val.mv_size >= SPM_STORE_MAGIC_LEN &&
        memcmp(v, SPM_STORE_MAGIC, SPM_STORE_MAGIC_LEN - 1) == 0 &&
        v[SPM_STORE_MAGIC_LEN - 1] != SPM_STORE_MAGIC[SPM_STORE_MAGIC_LEN - 1])
        return spm_error(
            SPM_EFORMAT, "%s: a store of layout %c, written by %s spm; this spm reads layout %c",
            dir, v[SPM_STORE_MAGIC_LEN - 1],
            v[SPM_STORE_MAGIC_LEN - 1] < SPM_STORE_MAGIC[SPM_STORE_MAGIC_LEN - 1] ? "an older"
                                                                                  : "a newer",
            SPM_STORE_MAGIC[SPM_STORE_MAGIC_LEN - 1]);
    if (val.mv_size != SPM_STORE_IDENT_LEN || memcmp(v, SPM_STORE_MAGIC, SPM_STORE_MAGIC_LEN) != 0)
        return spm_error(SPM_EFORMAT, "%s: not a store of spm (its identity record is unknown)",
                         dir);
    memcpy(id, (const uint8_t *)val.mv_data + SPM_STORE_MAGIC_LEN, SPM_STORE_ID_LEN);
    return 0;
}

void spm_store_map_find(MDB_env *env, MDB_dbi dbi, spm_store_map_t *m)
{
    memset(m, 0, sizeof *m);
    MDB_envinfo info;
    MDB_txn *txn;
    if (mdb_env_info(env, &info) != 0 || mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) != 0)
        return;
    uint8_t k[SPM_STORE_KEY_LEN];
    spm_store_key(k, 0, 0); /* the identity record */
    MDB_val key = {sizeof k, k}, val;
    uintptr_t p = mdb_get(txn, dbi, &key, &val) == 0 ? (uintptr_t)val.mv_data : 0;
    mdb_txn_abort(txn);
    FILE *f = p ? fopen("/proc/self/maps", "r") : NULL;
    char line[512];
    unsigned long lo, hi;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && p >= lo && p < hi) {
            if (hi - lo == info.me_mapsize) /* the whole map is this one mapping */
                *m = (spm_store_map_t){.size = info.me_mapsize, .lo = lo, .hi = hi};
            break;
        }
    if (f)
        fclose(f);
}

void spm_store_unmap(MDB_env *env, const spm_store_map_t *m, const void *data, size_t len)
{
    MDB_envinfo info;
    if (!m->size || mdb_env_info(env, &info) != 0 || info.me_mapsize != m->size)
        return; /* remapped since: the addresses may be another mapping's now */
    uintptr_t lo = (uintptr_t)data & ~(SPM_STORE_UNMAP_ALIGN - 1);
    uintptr_t hi =
        ((uintptr_t)data + len + SPM_STORE_UNMAP_ALIGN - 1) & ~(SPM_STORE_UNMAP_ALIGN - 1);
    lo = lo < m->lo ? m->lo : lo; /* never past the map: what lies beside it is not ours */
    hi = hi > m->hi ? m->hi : hi;
    if (hi > lo) /* a shared file map: only this process's page table entries go */
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}
