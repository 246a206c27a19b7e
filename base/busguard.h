/*  =========================================================================
    busguard - a call that touches a mapped file, whose SIGBUS is an error

    @header
    A process that reads a file through a map gets SIGBUS, not an error
    code, when the page it touches is no longer backed by the file: the
    file was cut short, or its disk failed to read. LMDB reads its pages
    in place, and a corrupted page number can point past the end of the
    file, so a node cache whose file went bad killed the IEU or agent that
    read it. spm_busguard_run runs a function so that a SIGBUS this thread
    raises inside it returns instead, saying so: the caller then treats the
    file as corrupt (datacache/nodecache.c takes the cache out of service).
    A library that finds the file inconsistent and would abort can leave
    the guarded call the same way (spm_busguard_escape).

    The function is left where it faulted, so it must own nothing the
    caller cannot release: a caller keeps transactions and cursors, the
    function only uses them. A SIGBUS outside any guarded call, or sent by
    another process, does what it did before the first guard (the handler
    that was there, or the default: the process dies).
    @discuss
        int rc;
        if (spm_busguard_run(read_pages, &ctx, &rc) != 0)
            ... the mapped file is gone or unreadable ...
    @end
    =========================================================================
*/
#ifndef SPM_BUSGUARD_H_INCLUDED
#define SPM_BUSGUARD_H_INCLUDED

/*  Leaves this thread's innermost guarded call as its SIGBUS would
    (spm_busguard_run returns 1); returns at once when the thread runs
    none. For a library's callback that reports its mapped file corrupt
    and must not return (LMDB's assert callback: LMDB aborts after it). */
void spm_busguard_escape(void);

/*  Runs FN(ARG) and returns 0 with FN's result in *RESULT, or 1 when this
    thread raised SIGBUS inside FN (which then stopped where it faulted;
    *RESULT is untouched). Guards nest: a fault goes to the innermost. */
int spm_busguard_run(int (*fn)(void *arg), void *arg, int *result);

#endif
