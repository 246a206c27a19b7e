/*  =========================================================================
    sink - an output file that is all-or-nothing when it can be
    =========================================================================
*/
#include "programs/apriori/sink.h"
#include "vm/spm.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

int spm_sink_open(spm_sink_t *s, const char *path)
{
    struct stat st;
    s->of = NULL;
    s->direct = NULL;
    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (!(s->direct = fopen(path, "w")))
            return spm_error(SPM_EIO, "%s: %s", path, strerror(errno));
        return 0;
    }
    return (s->of = spm_outfile_open(path)) ? 0 : SPM_EIO;
}

FILE *spm_sink_stream(spm_sink_t *s)
{
    return s->direct ? s->direct : spm_outfile_stream(s->of);
}

int spm_sink_commit(spm_sink_t *s)
{
    if (s->of)
        return spm_outfile_commit(&s->of);
    int bad = ferror(s->direct);
    bad |= fclose(s->direct) != 0;
    s->direct = NULL;
    return bad ? spm_error(SPM_EIO, "write failed") : 0;
}

void spm_sink_abort(spm_sink_t *s)
{
    if (s->of)
        spm_outfile_abort(&s->of);
    if (s->direct)
        fclose(s->direct);
    s->direct = NULL;
}
