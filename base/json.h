/*  =========================================================================
    json - a JSON string for any bytes

    @header
    Text spm writes as JSON (`spm mine --format json`, a run report with
    --json) holds strings it did not choose: item names as a file spelled
    them, file names, error lines. A JSON reader refuses a file with
    invalid UTF-8 or a raw control character in it, so such a string is
    written escaped: '"', '\' and control characters as JSON's escapes,
    valid UTF-8 as it is, and every byte that is not part of valid UTF-8
    (0xff, a lone continuation byte, an overlong form, a surrogate) as
    \u00XX of that byte. The output always loads; a reader gets U+00XX for
    such a byte, so "\xff" and "ÿ" read back alike: escaping is lossless
    for valid UTF-8 only.
    @end
    =========================================================================
*/
#ifndef SPM_JSON_H_INCLUDED
#define SPM_JSON_H_INCLUDED

#include <stdio.h>

/*  Writes the NUL-terminated S to F as a JSON string, quotes included.
    The caller checks F's error state. */
void spm_json_string(FILE *f, const char *s);

#endif
