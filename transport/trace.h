/*  =========================================================================
    trace - a job's SIs as Chrome trace events (`--trace FILE`)

    @discuss
    The center records, for a job submitted with a trace, one slice per SI
    (lane: its IEU, grouped by node), instants for IEU deaths and re-issues,
    and a counter of ready SIs; it sends them to the job's watcher before
    the report. The client writes them in the Chrome trace event format,
    which Perfetto (ui.perfetto.dev) and chrome://tracing open, one event a
    line, and `spm plot` reads back. Times are microseconds from the job's
    start on the center's clock; IEU times are mapped to it with the send
    time of each COMMIT (accurate to one message latency).
    @end
    =========================================================================
*/
#ifndef SPM_TRACE_H_INCLUDED
#define SPM_TRACE_H_INCLUDED

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "transport/spm.pb-c.h" /* generated into build/gen */

typedef struct {
    char name[40]; /* opcode, or what happened */
    char phase;    /* 'X' slice, 'i' instant, 'C' counter */
    uint64_t ts;   /* us, center clock (absolute until written) */
    uint64_t dur;  /* us, slices */
    uint32_t ieu, node;
    uint64_t si;
    uint64_t bytes, wait_us; /* operand bytes fetched, slot wait for them */
    uint64_t value;          /* counters */
    char sf[32];             /* slices: the issuing SF's class ("" for merges) */
} spm_trace_event_t;

typedef struct spm_trace spm_trace_t;

/*  An empty trace, or NULL when out of memory. */
spm_trace_t *spm_trace_new(void);
void spm_trace_destroy(spm_trace_t **self_p);

/*  Appends EV (copied). Returns 0 or SPM_ENOMEM (the event is dropped). */
int spm_trace_add(spm_trace_t *self, const spm_trace_event_t *ev);

size_t spm_trace_count(const spm_trace_t *self);

/*  Keeps at most LIMIT events (0: all); spm_trace_add drops those past it
    and counts them (spm_trace_dropped). What the dashboard records of
    every job is bounded so; a trace a client asked for is not. */
void spm_trace_set_limit(spm_trace_t *self, size_t limit);
size_t spm_trace_dropped(const spm_trace_t *self);

/*  A copy of the trace (its events, limit, drop count and note), or NULL
    when out of memory. The caller owns it (spm_trace_destroy). */
spm_trace_t *spm_trace_copy(const spm_trace_t *self);

/*  Sets the trace's NOTE (copied; NULL or "": none), written as
    otherData.note: what a reader should know of what it covers. Returns 0
    or SPM_ENOMEM (the note is then unchanged). */
int spm_trace_set_note(spm_trace_t *self, const char *note);

/*  The trace's note ("" when none); valid until the next set_note. */
const char *spm_trace_note(const spm_trace_t *self);

/*  Moves the slices ('X', recorded on their IEU's clock) to the center's
    clock: ts += OFFSET(ARG, ieu). */
void spm_trace_map_clocks(spm_trace_t *self, int64_t (*offset)(void *arg, uint32_t ieu), void *arg);

/*  Packs events FROM .. FROM+N-1 into MSG (its arrays malloc'd; free with
    spm_trace_msg_free). Returns how many it packed. */
size_t spm_trace_pack(const spm_trace_t *self, size_t from, size_t n, Spm__TraceEvents *msg);
void spm_trace_msg_free(Spm__TraceEvents *msg);

/*  Appends the events of a received MSG. */
int spm_trace_unpack(spm_trace_t *self, const Spm__TraceEvents *msg);

/*  Writes the trace to PATH (all or nothing), times relative to the first
    event, with lane names, PROGRAM and the note as metadata. With SYNC the file and
    its directory are synced before it returns (a command's --sync);
    without, it is only renamed into place (base/textio.h).
    Returns 0 or SPM_EIO / SPM_EFULL with the detail set. */
int spm_trace_write(const spm_trace_t *self, const char *path, const char *program, int sync);

/*  Writes the trace as spm_trace_write does, to the stream F (errors are
    F's: check ferror). PROGRAM must need no JSON escapes. */
void spm_trace_print(const spm_trace_t *self, FILE *f, const char *program);

#endif
