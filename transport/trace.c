/*  =========================================================================
    trace - a job's SIs as Chrome trace events (`--trace FILE`)
    =========================================================================
*/
#include "transport/trace.h"
#include "base/textio.h"
#include "base/grow.h"
#include "base/json.h"
#include "spm/spm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CENTER_LANE 1000000 /* pid of the center's lane (counters, instants) */

struct spm_trace {
    spm_trace_event_t *ev; /* events, in arrival order */
    size_t n, cap;
    size_t limit;   /* events kept at most (0: no limit) */
    size_t dropped; /* events past the limit */
    char *note;     /* otherData.note, or NULL */
};

spm_trace_t *spm_trace_new(void)
{
    return calloc(1, sizeof(spm_trace_t));
}

void spm_trace_destroy(spm_trace_t **self_p)
{
    if (!*self_p)
        return;
    free((*self_p)->ev);
    free((*self_p)->note);
    free(*self_p);
    *self_p = NULL;
}

spm_trace_t *spm_trace_copy(const spm_trace_t *self)
{
    spm_trace_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->limit = self->limit;
    t->dropped = self->dropped;
    if ((self->n && !(t->ev = malloc(self->n * sizeof *t->ev))) ||
        (self->note && !(t->note = strdup(self->note)))) {
        spm_trace_destroy(&t);
        return NULL;
    }
    if (self->n)
        memcpy(t->ev, self->ev, self->n * sizeof *t->ev);
    t->n = t->cap = self->n;
    return t;
}

int spm_trace_set_note(spm_trace_t *self, const char *note)
{
    char *copy = note && *note ? strdup(note) : NULL;
    if (note && *note && !copy)
        return SPM_ENOMEM;
    free(self->note);
    self->note = copy;
    return 0;
}

const char *spm_trace_note(const spm_trace_t *self)
{
    return self->note ? self->note : "";
}

void spm_trace_set_limit(spm_trace_t *self, size_t limit)
{
    self->limit = limit;
}

size_t spm_trace_dropped(const spm_trace_t *self)
{
    return self->dropped;
}

int spm_trace_add(spm_trace_t *self, const spm_trace_event_t *ev)
{
    if (self->limit && self->n >= self->limit) {
        self->dropped++;
        return 0;
    }
    if (spm_grow(&self->ev, self->n, &self->cap, sizeof *self->ev, 1024) != 0)
        return SPM_ENOMEM;
    self->ev[self->n++] = *ev;
    return 0;
}

size_t spm_trace_count(const spm_trace_t *self)
{
    return self->n;
}

void spm_trace_map_clocks(spm_trace_t *self, int64_t (*offset)(void *arg, uint32_t ieu), void *arg)
{
    for (size_t i = 0; i < self->n; i++)
        if (self->ev[i].phase == 'X')
            self->ev[i].ts = (uint64_t)((int64_t)self->ev[i].ts + offset(arg, self->ev[i].ieu));
}

size_t spm_trace_pack(const spm_trace_t *self, size_t from, size_t n, Spm__TraceEvents *msg)
{
    spm__trace_events__init(msg);
    if (from >= self->n)
        return 0;
    if (n > self->n - from)
        n = self->n - from;
    Spm__TraceEvent *evs = calloc(n, sizeof *evs);
    Spm__TraceEvent **ptrs = calloc(n, sizeof *ptrs);
    if (!evs || !ptrs) {
        free(evs);
        free(ptrs);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const spm_trace_event_t *e = &self->ev[from + i];
        spm__trace_event__init(&evs[i]);
        evs[i].name = (char *)e->name;
        evs[i].phase = (uint32_t)e->phase;
        evs[i].ts = e->ts;
        evs[i].dur = e->dur;
        evs[i].ieu = e->ieu;
        evs[i].node = e->node;
        evs[i].si = e->si;
        evs[i].bytes = e->bytes;
        evs[i].wait_us = e->wait_us;
        evs[i].value = e->value;
        evs[i].sf = (char *)e->sf;
        ptrs[i] = &evs[i];
    }
    msg->events = ptrs;
    msg->n_events = n;
    return n;
}

void spm_trace_msg_free(Spm__TraceEvents *msg)
{
    if (msg->n_events)
        free(msg->events[0]); /* the array of events packed in one block */
    free(msg->events);
    msg->events = NULL;
    msg->n_events = 0;
}

int spm_trace_unpack(spm_trace_t *self, const Spm__TraceEvents *msg)
{
    for (size_t i = 0; i < msg->n_events; i++) {
        const Spm__TraceEvent *m = msg->events[i];
        spm_trace_event_t e = {.phase = (char)m->phase,
                               .ts = m->ts,
                               .dur = m->dur,
                               .ieu = m->ieu,
                               .node = m->node,
                               .si = m->si,
                               .bytes = m->bytes,
                               .wait_us = m->wait_us,
                               .value = m->value};
        snprintf(e.name, sizeof e.name, "%s", m->name ? m->name : "");
        snprintf(e.sf, sizeof e.sf, "%s", m->sf ? m->sf : "");
        if (e.phase != 'X' && e.phase != 'i' && e.phase != 'C')
            continue; /* not ours to draw */
        if (spm_trace_add(self, &e) != 0)
            return SPM_ENOMEM;
    }
    return 0;
}

/*  Names of the lanes: one process per node, one thread per IEU. */
static void write_lanes(const spm_trace_t *self, FILE *f)
{
    uint32_t max_ieu = 0, max_node = 0;
    for (size_t i = 0; i < self->n; i++)
        if (self->ev[i].phase == 'X') {
            max_ieu = self->ev[i].ieu > max_ieu ? self->ev[i].ieu : max_ieu;
            max_node = self->ev[i].node > max_node ? self->ev[i].node : max_node;
        }
    for (uint32_t n = 0; n <= max_node; n++)
        fprintf(f,
                "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %u, \"args\": {\"name\": "
                "\"node %u\"}},\n",
                n, n);
    for (size_t i = 0, seen = 0; i < self->n && seen <= max_ieu; i++) {
        const spm_trace_event_t *e = &self->ev[i];
        if (e->phase != 'X')
            continue;
        /* one thread_name per IEU: emitted at its first slice */
        int first = 1;
        for (size_t k = 0; k < i && first; k++)
            first = !(self->ev[k].phase == 'X' && self->ev[k].ieu == e->ieu);
        if (!first)
            continue;
        seen++;
        fprintf(f,
                "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %u, \"tid\": %u, \"args\": "
                "{\"name\": \"IEU %u\"}},\n",
                e->node, e->ieu, e->ieu);
    }
    fprintf(f,
            "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": "
            "\"center\"}}",
            CENTER_LANE); /* last: each event begins with the comma */
}

int spm_trace_write(const spm_trace_t *self, const char *path, const char *program, int sync)
{
    spm_outfile_t *out = spm_outfile_open(path);
    if (!out)
        return SPM_EIO;
    spm_outfile_set_sync(out, sync);
    spm_trace_print(self, spm_outfile_stream(out), program);
    return spm_outfile_commit(&out);
}

void spm_trace_print(const spm_trace_t *self, FILE *f, const char *program)
{
    uint64_t t0 = UINT64_MAX;
    for (size_t i = 0; i < self->n; i++)
        if (self->ev[i].ts < t0)
            t0 = self->ev[i].ts;
    fprintf(f,
            "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"program\": \"%s\", \"tool\": \"spm\"",
            program);
    if (self->note) {
        fputs(", \"note\": ", f);
        spm_json_string(f, self->note);
    }
    if (self->dropped)
        fprintf(f, ", \"dropped\": %zu", self->dropped);
    fputs("},\n\"traceEvents\": [\n", f);
    write_lanes(self, f);
    for (size_t i = 0; i < self->n; i++) {
        const spm_trace_event_t *e = &self->ev[i];
        double ts = (double)(e->ts - t0);
        fputs(",\n", f);
        if (e->phase == 'X')
            fprintf(f,
                    "{\"name\": \"%s\", \"cat\": \"si\", \"ph\": \"X\", \"ts\": %.0f, \"dur\": "
                    "%llu, \"pid\": %u, \"tid\": %u, \"args\": {\"si\": %llu, \"bytes\": %llu, "
                    "\"wait_us\": %llu, \"sf\": \"%s\"}}",
                    e->name, ts, (unsigned long long)e->dur, e->node, e->ieu,
                    (unsigned long long)e->si, (unsigned long long)e->bytes,
                    (unsigned long long)e->wait_us, e->sf);
        else if (e->phase == 'i')
            fprintf(f,
                    "{\"name\": \"%s\", \"cat\": \"vm\", \"ph\": \"i\", \"s\": \"g\", \"ts\": "
                    "%.0f, \"pid\": %d, \"tid\": 0}",
                    e->name, ts, CENTER_LANE);
        else
            fprintf(f,
                    "{\"name\": \"%s\", \"ph\": \"C\", \"ts\": %.0f, \"pid\": %d, \"args\": "
                    "{\"value\": %llu}}",
                    e->name, ts, CENTER_LANE, (unsigned long long)e->value);
    }
    fputs("\n]}\n", f);
}
