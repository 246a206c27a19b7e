/*  =========================================================================
    busguard - a call that reads a mapped file, whose fault is an error

    One process-wide handler for SIGBUS and SIGSEGV, installed by the first
    guard, and a per-thread pointer to the innermost guard running. The
    handler jumps back to that guard; with none, it puts back the handler
    that was there before and returns, so the faulting instruction runs
    again and meets that handler (by default: the process dies of the
    signal, with a core).

    A stack overflow is not the file's: without an alternate signal stack
    the kernel cannot run a handler on the full stack and the process dies
    as before; with one (AddressSanitizer sets one up) the handler sees a
    fault just below the guard's own frame and hands it on, as outside a
    guard. LMDB does not recurse (its cursors hold a fixed stack of 32
    pages), so no guarded call of the node cache overflows on its own.
    =========================================================================
*/
#include "base/busguard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

/* How far below a guard's frame a fault is taken for its thread's stack
   running over: more than any thread's stack here (8 MiB by default). */
#define STACK_REACH ((size_t)256 << 20)

typedef struct guard {
    sigjmp_buf jump;   /* where the guarded call is left */
    const char *frame; /* an address in spm_busguard_run's frame */
    volatile int why;  /* the signal that left it, or SIGABRT for an escape */
} guard_t;

static _Thread_local guard_t *innermost; /* this thread's running guard, or NULL */
static const int signals[] = {SIGBUS, SIGSEGV};
static struct sigaction before[2]; /* the actions the first guard replaced, as signals[] */
static pthread_once_t installed = PTHREAD_ONCE_INIT;

/* Whether ADDR lies just below G's frame: the thread's stack ran over. */
static int overflow(const guard_t *g, const void *addr)
{
    const char *a = addr;
    return a < g->frame && (size_t)(g->frame - a) <= STACK_REACH;
}

static void on_fault(int sig, siginfo_t *info, void *context)
{
    (void)context;
    guard_t *g = innermost;
    /* si_code > 0: raised by a fault of this thread, not sent by kill(2) */
    if (g && info->si_code > 0 && !overflow(g, info->si_addr)) {
        g->why = sig;
        siglongjmp(g->jump, 1);
    }
    sigaction(sig, &before[sig == SIGSEGV], NULL);
    if (info->si_code <= 0)
        raise(sig); /* sent: no instruction runs again to raise it */
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    /* SA_ONSTACK: where the thread has an alternate stack, a stack
       overflow reaches the handler, which hands it on. */
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof signals / sizeof *signals; i++)
        sigaction(signals[i], &sa, &before[signals[i] == SIGSEGV]);
}

void spm_busguard_escape(void)
{
    if (innermost) {
        innermost->why = SIGABRT;
        siglongjmp(innermost->jump, 1);
    }
}

void *spm_busguard_pause(void)
{
    guard_t *g = innermost;
    innermost = NULL;
    return g;
}

void spm_busguard_resume(void *token)
{
    innermost = token;
}

int spm_busguard_run(int (*fn)(void *arg), void *arg, int *result)
{
    pthread_once(&installed, install);
    guard_t g;
    g.frame = (const char *)&g;
    guard_t *outer = innermost;
    /* The signal mask is not saved: the handler runs with its signal
       unblocked (SA_NODEFER) and blocks nothing else, so the mask at the
       jump is the mask at the fault. Saving it costs a system call a
       guard (1 us against 6 ns on this machine), and the node cache
       guards every lookup an IEU makes. */
    if (sigsetjmp(g.jump, 0)) {
        innermost = outer;
        return g.why;
    }
    innermost = &g;
    int rc = fn(arg);
    innermost = outer;
    *result = rc;
    return 0;
}
