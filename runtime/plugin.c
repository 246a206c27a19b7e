/*  =========================================================================
    plugin - programs built out of tree, loaded from their bytes

    The ELF check reads only the file header, the section headers and the
    section-name table, each bounds-checked against the bytes, so a
    truncated or forged object is refused before dlopen sees it.
    =========================================================================
*/
#include "runtime/plugin.h"

#include "base/checksum.h"
#include "runtime/registry.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#else
#error "spm plugins: unknown machine (add its EM_ value)"
#endif

#define MARK_SECTION "spm_plugin"

typedef struct {
    char scope[SPM_SCOPE_LEN];
    void *handle;
    int fd; /* its memory file, kept open: the loader knows an object by its path
               (/proc/self/fd/N), so a later plugin must never get the same N */
} loaded_t;

static loaded_t loaded[SPM_PLUGIN_MAX];
static size_t nloaded;

/*  Whether [OFF, OFF + SIZE) lies inside LEN bytes. */
static int inside(uint64_t off, uint64_t size, size_t len)
{
    return off <= len && size <= len - off;
}

int spm_plugin_check(const void *data, size_t len)
{
    const unsigned char *p = data;
    Elf64_Ehdr eh;
    if (len < sizeof eh || memcmp(p, ELFMAG, SELFMAG) != 0)
        return spm_error(SPM_EFORMAT, "not an ELF object (a plugin is a shared object built "
                                      "with -shared -fPIC)");
    memcpy(&eh, p, sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        eh.e_machine != HOST_MACHINE)
        return spm_error(SPM_EFORMAT,
                         "an ELF object for another machine (class %u, machine %u; "
                         "this spm runs on machine %u)",
                         eh.e_ident[EI_CLASS], eh.e_machine, HOST_MACHINE);
    if (eh.e_type != ET_DYN)
        return spm_error(SPM_EFORMAT,
                         "not a shared object (ELF type %u; build it with -shared "
                         "-fPIC)",
                         eh.e_type);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum ||
        !inside(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), len))
        return spm_error(SPM_EFORMAT,
                         "a truncated or damaged object (%zu bytes; its section "
                         "table is not inside them)",
                         len);
    Elf64_Shdr strtab;
    memcpy(&strtab, p + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof strtab, sizeof strtab);
    if (!inside(strtab.sh_offset, strtab.sh_size, len))
        return spm_error(SPM_EFORMAT, "a truncated or damaged object (%zu bytes)", len);
    int marked = 0;
    spm_plugin_mark_t mark;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, p + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
            !inside(sh.sh_offset, sh.sh_size, len))
            return spm_error(SPM_EFORMAT,
                             "a truncated or damaged object (%zu bytes; section %u "
                             "ends past them)",
                             len, i);
        if (sh.sh_name >= strtab.sh_size)
            continue;
        const char *name = (const char *)p + strtab.sh_offset + sh.sh_name;
        size_t room = strtab.sh_size - sh.sh_name;
        if (strnlen(name, room) == strlen(MARK_SECTION) && !strcmp(name, MARK_SECTION) &&
            sh.sh_type == SHT_PROGBITS && sh.sh_size >= sizeof mark) {
            memcpy(&mark, p + sh.sh_offset, sizeof mark);
            marked = 1;
        }
    }
    if (!marked || memcmp(mark.magic, "spm-abi", 8) != 0)
        return spm_error(SPM_EFORMAT, "not an spm plugin (no SPM_PLUGIN mark: write SPM_PLUGIN; "
                                      "once in it, at file scope)");
    if (mark.abi != SPM_ABI_VERSION || mark.size != sizeof mark)
        return spm_error(SPM_EFORMAT,
                         "built against spm ABI version %" PRIu32
                         "; this spm has version %d: rebuild it against this "
                         "spm's spm.h",
                         mark.abi, SPM_ABI_VERSION);
    return 0;
}

void spm_plugin_scope(uint64_t sum, char scope[SPM_SCOPE_LEN])
{
    snprintf(scope, SPM_SCOPE_LEN, "%016" PRIx64, sum);
}

int spm_plugin_loaded(const char *scope)
{
    for (size_t i = 0; i < nloaded; i++)
        if (!strcmp(loaded[i].scope, scope))
            return 1;
    return 0;
}

int spm_plugin_load(const void *data, size_t len, char scope[SPM_SCOPE_LEN])
{
    spm_plugin_scope(spm_checksum(data, len), scope);
    if (spm_plugin_loaded(scope))
        return 0;
    int rc = spm_plugin_check(data, len);
    if (rc != 0)
        return rc;
    if (nloaded >= SPM_PLUGIN_MAX)
        return spm_error(SPM_EFULL, "this process has loaded %d plugins, its most; restart it",
                         SPM_PLUGIN_MAX);
    char name[32];
    snprintf(name, sizeof name, "spm-plugin-%.8s", scope);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return spm_error(SPM_ESYS, "memfd_create: %s", strerror(errno));
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = spm_error(SPM_ESYS, "writing the plugin to memory: %s", strerror(errno));
            close(fd);
            return rc;
        }
        off += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    loaded_t *l = &loaded[nloaded];
    memcpy(l->scope, scope, SPM_SCOPE_LEN);
    const char *prev = spm_registry_scope(l->scope);
    l->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    spm_registry_scope(prev);
    if (!l->handle) {
        close(fd);
        const char *why = dlerror();
        const char *at = why ? strstr(why, ": ") : NULL;
        return spm_error(SPM_EFORMAT, "cannot be loaded: %s",
                         at    ? at + 2
                         : why ? why
                               : "dlopen failed");
    }
    l->fd = fd;
    nloaded++;
    return 0;
}

size_t spm_args(const void *args, size_t len, const char **argv, size_t max)
{
    const char *p = args, *end = p + len;
    size_t n = 0;
    while (p && p < end) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        if (!z)
            break; /* an unterminated tail is no argument */
        if (n < max)
            argv[n] = p;
        n++;
        p = z + 1;
    }
    return n;
}

static int plugin_validate(const void *data, size_t len)
{
    return len <= SPM_PLUGIN_BYTES && spm_plugin_check(data, len) == 0 ? 0 : SPM_EFORMAT;
}

static void plugin_summary(const void *data, size_t len, char *buf, size_t size)
{
    snprintf(buf, size, "plugin %016" PRIx64 ", %zu bytes", spm_checksum(data, len), len);
}

SPM_CONSTRUCTOR(plugin)
{
    spm_sdb_type_register(&(spm_sdb_type_t){
        .name = SPM_PLUGIN_TYPE, .validate = plugin_validate, .summary = plugin_summary});
}
