/*
 * perfetto.c - export --format=perfetto: the run as Chrome's trace-event
 * JSON (the JSON Object Format: {"traceEvents": [...], ...}), which
 * ui.perfetto.dev and chrome://tracing open.
 *
 *   a counter track per device ("ph":"C", "GPU N memory", args {"bytes"}):
 *       the process's live device memory on that device after each change,
 *       as the report's peak counts it
 *   an instant event ("ph":"i", process scope) per mark (gpushim_mark),
 *       named by its label
 *   an instant event ("ph":"i", thread scope: on the thread that made it)
 *       per failed allocation, named by its outcome (outcome.c), with the
 *       request, the device's free and total bytes and what the process
 *       held there; written once its outcome is decided (its thread's next
 *       attempt, or the end), in the order the failures came; failures
 *       past the replay's GS_MAX_FAILURES (kept without details) are not
 *       written
 *   metadata ("ph":"M"): the process's name (its command), its threads'
 *
 * ts is in microseconds since the trace's start, with nanosecond decimals;
 * pid is the traced process's, tid the thread that made the event. Changes
 * of one counter within the same microsecond are coalesced: its last
 * value, after its highest one when that rose above both the value before
 * and the last (so that no peak is lost): a loop that allocates and frees
 * a million times a second writes at most two samples a microsecond (a
 * mark or a failure ends the microsecond's window early: the samples
 * before it come before it), and the counter's highest sample is the
 * device's peak. Times never go back:
 * an event recorded out of order takes the latest time seen before it,
 * and a counter sample after a mark or a failure is at least 1 ns after
 * it (the trace keeps allocation times in microseconds, and never before
 * the record before: the allocation just after a mark can read as the
 * mark's own time, and perfetto would show its bytes at the mark).
 *
 * One pass (load.c's watch): besides the replay's, memory for the devices
 * and the threads named; each event is written as it is read.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/json.h"
#include "analyzer/util/names.h"
#include "analyzer/util/reserve.h"
#include "analyzer/util/text.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/report/load.h"
#include "analyzer/export/export.h"

#define NDEV (GS_MAX_DEVICES + 1) /* [GS_MAX_DEVICES]: the unknown device */

/* A counter's changes in one microsecond, written when the next one starts. */
struct sample {
    int pending;
    uint64_t us;               /* the microsecond */
    uint64_t before;           /* the value before it */
    uint64_t hi, hi_ns;        /* the highest value in it, and when */
    uint64_t last, last_ns;    /* the last value in it, and when */
};

/* A failed allocation of the replay's, as it came. */
struct failed {
    int seen;     /* it came in this trace (not in its checkpoint) */
    uint32_t tid;
    uint64_t now; /* its time, never before the one before it */
};

struct perfetto {
    FILE *out;
    uint64_t pid;
    int first; /* no event written yet: no comma before the next */
    uint64_t known[NDEV]; /* each device's live bytes as last seen */
    struct sample s[NDEV];
    struct gs_idmap *threads; /* tids named so far */
    size_t nfailures;         /* the replay's failures before the event */
    struct failed *failed;    /* per failure of the replay's, by index */
    size_t nfailed, failed_cap;
    size_t next_failure;      /* the first not written yet */
    uint64_t instant_ns;      /* the latest mark's or failure's time */
    int instant;              /* instant_ns holds one */
};

/* The file's opening comes with its first event: a trace that cannot be
 * read writes nothing. */
static void begin_event(struct perfetto *p)
{
    if (p->first)
        fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", p->out);
    fputs(p->first ? "\n" : ",\n", p->out);
    p->first = 0;
}

static void ts(FILE *out, uint64_t ns)
{
    fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void device_name(char *buf, size_t n, int d)
{
    if (d == GS_MAX_DEVICES)
        snprintf(buf, n, "GPU ? memory");
    else
        snprintf(buf, n, "GPU %d memory", d);
}

static void counter(struct perfetto *p, int d, uint64_t time_ns, uint64_t bytes)
{
    if (p->instant && time_ns <= p->instant_ns)
        time_ns = p->instant_ns + 1; /* its change came after the instant */
    char name[32];
    device_name(name, sizeof name, d);
    begin_event(p);
    fprintf(p->out, "{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"ts\":",
            name, p->pid, p->pid);
    ts(p->out, time_ns);
    fprintf(p->out, ",\"args\":{\"bytes\":%" PRIu64 "}}", bytes);
}

/* The microsecond's samples: its last value, after its highest when that
 * rose above both the value before and the last (no peak is lost). */
static void flush_sample(struct perfetto *p, int d)
{
    struct sample *s = &p->s[d];
    if (!s->pending)
        return;
    if (s->hi > s->last && s->hi > s->before)
        counter(p, d, s->hi_ns, s->hi);
    counter(p, d, s->last_ns, s->last);
    s->pending = 0;
}

static void flush_all(struct perfetto *p)
{
    for (int d = 0; d < NDEV; d++)
        flush_sample(p, d);
}

/* Notes each device whose live bytes changed since last seen. */
static void note_devices(struct perfetto *p, const struct gs_replay *r, uint64_t time_ns)
{
    for (int d = 0; d < NDEV; d++) {
        uint64_t now = r->devices[d].live_bytes;
        if (now == p->known[d])
            continue;
        struct sample *s = &p->s[d];
        if (s->pending && s->us != time_ns / 1000)
            flush_sample(p, d);
        if (!s->pending) {
            *s = (struct sample){.pending = 1, .us = time_ns / 1000, .before = p->known[d],
                                 .hi = now, .hi_ns = time_ns};
        } else if (now > s->hi) {
            s->hi = now;
            s->hi_ns = time_ns;
        }
        s->last = now;
        s->last_ns = time_ns;
        p->known[d] = now;
    }
}

static void name_thread(struct perfetto *p, uint32_t tid)
{
    uint64_t v;
    if (!p->threads || gs_idmap_get(p->threads, tid, &v) == 0)
        return;
    gs_idmap_put(p->threads, tid, 1);
    begin_event(p);
    fprintf(p->out,
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu32
            ",\"ts\":0,\"args\":{\"name\":",
            p->pid, tid);
    if (tid == p->pid) {
        fputs("\"main\"", p->out);
    } else {
        fprintf(p->out, "\"thread %" PRIu32 "\"", tid);
    }
    fputs("}}", p->out);
}

/* What the replay held before the event that its checkpoint (a rotated
 * trace) loaded: the counters start from it. */
static void before(void *ctx, struct gs_loaded *l, const struct gs_revent *e)
{
    struct perfetto *p = ctx;
    (void)e;
    p->pid = l->info.header.pid; /* the header is read before any event */
    note_devices(p, &l->r, l->r.last_time_ns);
    p->nfailures = l->r.nfailures;
}

static void mark(struct perfetto *p, const struct gs_replay *r, const struct gs_revent *e,
                 uint64_t now)
{
    char label[GS_MAX_LABEL + 1];
    gs_text_copy(label, sizeof label, e->label, e->label ? e->label_len : 0);
    begin_event(p);
    fprintf(p->out, "{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"mark\",\"name\":");
    gs_json_quoted(p->out, label);
    fprintf(p->out, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu32 ",\"ts\":", p->pid, e->tid);
    ts(p->out, now);
    fprintf(p->out, ",\"args\":{\"device_bytes\":%" PRIu64 ",\"block_bytes\":%" PRIu64 "}}",
            r->live_bytes, r->blocks.live_bytes);
}

static const char *failure_name(const struct gs_failure *f)
{
    switch (f->outcome) {
    case GS_OUTCOME_RECOVERED: return "out of memory, recovered";
    case GS_OUTCOME_PROBE: return "out of memory, a probe";
    case GS_OUTCOME_REFUSED: return "allocation refused";
    default: return "out of memory";
    }
}

static void failure(struct perfetto *p, const struct gs_failure *f, const struct failed *at)
{
    name_thread(p, at->tid);
    begin_event(p);
    fprintf(p->out, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"failure\",\"name\":\"%s\"",
            failure_name(f));
    fprintf(p->out, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu32 ",\"ts\":", p->pid, at->tid);
    ts(p->out, at->now);
    fprintf(p->out,
            ",\"args\":{\"api\":\"%s\",\"result\":\"%s\",\"outcome\":\"%s\",\"device\":%" PRId32
            ",\"requested_bytes\":%" PRIu64 ",\"device_free_bytes\":%" PRIu64
            ",\"device_total_bytes\":%" PRIu64 ",\"process_device_bytes\":%" PRIu64 "}}",
            gs_api_name(f->api), gs_result_name(f->result), gs_outcome_name(f->outcome),
            f->device, f->requested, f->free_bytes, f->total_bytes, f->process_live_bytes);
}

/* Notes the failure e added to the replay, if it kept one. */
static void failure_came(struct perfetto *p, const struct gs_replay *r, const struct gs_revent *e,
                         uint64_t now)
{
    if (r->nfailures <= p->nfailures)
        return;
    size_t i = r->nfailures - 1;
    while (p->failed_cap <= i)
        if (gs_reserve((void **)&p->failed, &p->failed_cap, p->failed_cap, sizeof *p->failed))
            return;
    for (; p->nfailed < i; p->nfailed++) /* a checkpoint's, seen in no event */
        p->failed[p->nfailed] = (struct failed){0};
    p->failed[i] = (struct failed){.seen = 1, .tid = e->tid, .now = now};
    p->nfailed = i + 1;
}

/* Writes the failures decided, in the order they came, up to the first
 * whose outcome waits on its thread's next attempt. */
static void failures_decided(struct perfetto *p, const struct gs_replay *r)
{
    for (; p->next_failure < r->nfailures; p->next_failure++) {
        const struct gs_failure *f = &r->failures[p->next_failure];
        if (f->outcome == GS_OUTCOME_PENDING)
            return;
        if (p->next_failure < p->nfailed && p->failed[p->next_failure].seen)
            failure(p, f, &p->failed[p->next_failure]);
    }
}

static void after(void *ctx, struct gs_loaded *l, const struct gs_revent *e)
{
    struct perfetto *p = ctx;
    uint64_t now = l->r.last_time_ns;
    note_devices(p, &l->r, now);
    if (e->type == GS_REC_MARK || e->type == GS_REC_ALLOC_FAILED) {
        flush_all(p); /* the samples before it come before it */
        name_thread(p, e->tid);
        p->instant = 1;
        p->instant_ns = now;
    }
    if (e->type == GS_REC_MARK)
        mark(p, &l->r, e, now);
    else if (e->type == GS_REC_ALLOC_FAILED)
        failure_came(p, &l->r, e, now);
    failures_decided(p, &l->r);
}

int gs_export_perfetto(FILE *out, const char *path)
{
    struct perfetto *p = calloc(1, sizeof *p);
    if (!p) {
        fprintf(stderr, "gpushim export: out of memory\n");
        return -1;
    }
    p->out = out;
    p->first = 1;
    p->threads = gs_idmap_new();
    /* the format takes metadata anywhere in the array: the process's name
     * comes last, once the whole header is surely read */
    struct gs_event_watch w = {.ctx = p, .before = before, .after = after};
    struct gs_loaded l;
    if (gs_load_watch("export", path, &l, &w) != 0) {
        gs_idmap_free(p->threads);
        free(p->failed);
        free(p);
        return -1;
    }
    p->pid = l.info.header.pid;
    flush_all(p);
    failures_decided(p, &l.r); /* the end decided those still waiting */
    begin_event(p);
    fprintf(out,
            "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64
            ",\"ts\":0,\"args\":{\"name\":",
            p->pid, p->pid);
    const char *command = gs_shown_command(&l.info);
    gs_json_quoted(out, command && command[0] ? command : "?");
    fputs("}}", out);
    name_thread(p, (uint32_t)p->pid);
    fputs("\n],\"otherData\":{\"producer\":\"gpushim\",\"command\":", out);
    if (command)
        gs_json_quoted(out, command);
    else
        fputs("null", out);
    fprintf(out, ",\"pid\":%" PRIu64 ",\"trace\":", l.info.header.pid);
    gs_json_quoted(out, path);
    fputs(",\"counters\":\"live device bytes of the process, per device; changes within one "
          "microsecond are coalesced: the last, after the highest if higher than before and "
          "after\"}}\n",
          out);
    gs_loaded_free(&l);
    gs_idmap_free(p->threads);
    free(p->failed);
    free(p);
    return 0;
}
