/*  =========================================================================
    busguard - a call that reads a mapped file, whose fault is an error

    A process that reads a file through a map gets a signal, not an error
    code, when the file is not what it should be: SIGBUS when the page it
    touches is no longer backed by the file (the file was cut short, or
    its disk failed to read), SIGSEGV when a corrupted offset or size in
    the file sends the reader past the end of the map or onto a page it
    may not write. LMDB reads its pages in place and trusts the numbers in
    them, so a node cache whose file went bad killed the IEU or agent that
    read it. spm_busguard_run runs a function so that a SIGBUS or SIGSEGV
    this thread raises inside it returns instead, naming the signal: the
    caller then treats the file as corrupt (datacache/nodecache.c takes the
    cache out of service). A library that finds the file inconsistent and
    would abort can leave the guarded call the same way
    (spm_busguard_escape).

    The function is left where it faulted, so it must own nothing the
    caller cannot release: a caller keeps transactions and cursors, the
    function only uses them, and nothing the function touched may be used
    again but to be released. Code of the caller's own that the function
    calls back (a listing's callback) runs paused (spm_busguard_pause), so
    that its own bugs are not taken for the file's. A fault outside any
    guarded call, one sent by another process, and a stack overflow do
    what they did before the first guard (the handler that was there, or
    the default: the process dies, with a core).
    @discuss
        int rc;
        if (spm_busguard_run(read_pages, &ctx, &rc) != 0)
            ... the mapped file is gone, unreadable or corrupt ...
    @end
    =========================================================================
*/
#ifndef SPM_BUSGUARD_H_INCLUDED
#define SPM_BUSGUARD_H_INCLUDED

/*  Leaves this thread's innermost guarded call as its fault would
    (spm_busguard_run returns SIGABRT); returns at once when the thread
    runs none. For a library's callback that reports its mapped file
    corrupt and must not return (LMDB's assert callback: LMDB aborts after
    it). */
void spm_busguard_escape(void);

/*  Runs FN(ARG) and returns 0 with FN's result in *RESULT, or the reason
    FN stopped where it was (*RESULT is untouched): SIGBUS or SIGSEGV when
    this thread raised that signal inside FN, SIGABRT when FN called
    spm_busguard_escape. Guards nest: a fault goes to the innermost. */
int spm_busguard_run(int (*fn)(void *arg), void *arg, int *result);

/*  Takes this thread out of its guards until spm_busguard_resume with the
    token returned (NULL when it runs none): a fault meanwhile is not the
    mapped file's, and goes where a fault outside any guard goes. For code
    that a guarded function calls back into. */
void *spm_busguard_pause(void);

/*  Puts back the guards that spm_busguard_pause returned TOKEN for. */
void spm_busguard_resume(void *token);

#endif
