/*  =========================================================================
    json - a JSON string for any bytes
    =========================================================================
*/
#include "base/json.h"

#include <stddef.h>

/*  The length of the valid UTF-8 sequence at S (1 to 4), or 0 when the
    byte at S starts none (RFC 3629: no overlong forms, no surrogates,
    nothing above U+10FFFF). S is NUL-terminated, so a sequence cut short
    by the end fails on the NUL. */
static size_t utf8_length(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlong form */
        hi = c == 0xed ? 0x9f : 0xbf; /* no surrogate */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        lo = c == 0xf0 ? 0x90 : 0x80; /* no overlong form */
        hi = c == 0xf4 ? 0x8f : 0xbf; /* nothing past U+10FFFF */
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

void spm_json_string(FILE *f, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    putc_unlocked('"', f);
    while (*s) {
        size_t n = utf8_length(s);
        if (n == 1 && *s >= 0x20 && *s != '"' && *s != '\\') {
            putc_unlocked(*s++, f);
        } else if (*s == '"' || *s == '\\') {
            putc_unlocked('\\', f);
            putc_unlocked(*s++, f);
        } else if (n > 1) {
            fwrite_unlocked(s, 1, n, f);
            s += n;
        } else { /* a control character, or a byte of no valid sequence */
            fputs_unlocked("\\u00", f);
            putc_unlocked(hex[*s >> 4], f);
            putc_unlocked(hex[*s & 15], f);
            s++;
        }
    }
    putc_unlocked('"', f);
}
