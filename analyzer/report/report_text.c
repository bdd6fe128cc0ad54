/*
 * report_text.c - the report for people: what ran, for how long, on which
 * devices; the peak and what held it; what was never freed; what failed;
 * then, for a program that uses the public API, its marks and steps, its
 * own allocator's blocks and the fragmentation of driver allocations.
 * Readable in ten seconds, most important first.
 *
 * Under a site whose stack has no Python frames, a line says which threads
 * allocated there by the names the program gave them, when that says more
 * than "the main thread", and what PyTorch's autograd was doing there
 * ("thread pt_autograd_0: backward of mul").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "gpushim_trace.h"
#include "analyzer/util/bytes.h"
#include "analyzer/util/names.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "analyzer/model/model.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"
#include "gpushim_ring.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/findings.h"
#include "analyzer/whatif/answer.h"
#include "analyzer/report/ranges_report.h"
#include "analyzer/report/roles_report.h"
#include "analyzer/report/threads_report.h"
#include "analyzer/findings/warnings.h"
#include "analyzer/report/report.h"
#include "analyzer/util/text.h"

static double seconds(uint64_t ns) { return (double)ns / 1e9; }

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* A source file as a person reads it: relative to the working directory
 * when it is under it (the report of a build read where it was built:
 * "examples/sim_training.c"), else as the debug information gives it. */
static const char *shown_path(const char *file)
{
    static char cwd[4096];
    static size_t len;
    static int looked;
    if (!looked) {
        looked = 1;
        len = getcwd(cwd, sizeof cwd) && strcmp(cwd, "/") != 0 ? strlen(cwd) : 0;
    }
    if (len && strncmp(file, cwd, len) == 0 && file[len] == '/' && file[len + 1])
        return file + len + 1;
    return file;
}

static void print_frame(FILE *out, const struct gs_frame *f, unsigned index, const char *lead)
{
    fprintf(out, "%s%s ", index ? lead : "", index ? "  from" : "at");
    if (f->function)
        fprintf(out, "%s", f->function);
    else if (f->python)
        fprintf(out, "(Python code not in the trace)");
    else
        fprintf(out, "0x%" PRIx64, f->pc);
    if (f->file) {
        fprintf(out, "  %s:%d", shown_path(f->file), f->line);
    } else if (!f->python) {
        const char *base = gs_basename(f->module);
        fprintf(out, "  (%s)", base[0] ? base : "?");
    }
    fputc('\n', out);
}

/* A stack's frames, as the report's view shows them: copies (the strings
 * they point to are the symbolizer's and the replay's, which outlive them). */
struct stack_frames {
    struct gs_frame *f;
    unsigned n, cap;
};

static void keep_frame(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct stack_frames *s = ctx;
    (void)index;
    if (s->n == s->cap) {
        unsigned cap = s->cap ? s->cap * 2 : 64;
        struct gs_frame *nf = realloc(s->f, cap * sizeof *nf);
        if (!nf)
            return;
        s->f = nf;
        s->cap = cap;
    }
    s->f[s->n++] = *f;
}

/* The thread line of a site (threads_report.c), if it has one. */
static void print_threads(const struct gs_report *rep, FILE *out, uint32_t stack_id,
                          const struct gs_thread_tally *t, const char *lead)
{
    char line[1024];
    if (gs_site_threads_text(rep, stack_id, t, line, sizeof line))
        fprintf(out, "%s  %s\n", lead, line);
}

/* Prints a stack in at most --frames frames. When Python frames would not
 * all fit, the native frames before them (an extension's, which can be
 * dozens in a framework) are shown by the innermost and a count, so the
 * program's own Python lines are always in view. Then its threads. */
static void print_stack(const struct gs_report *rep, FILE *out, uint32_t stack_id, const char *lead,
                        const struct gs_thread_tally *threads)
{
    struct stack_frames s = {0};
    unsigned max = rep->opt->frames;
    gs_site_frames(rep->replay, rep->sym, stack_id, rep->opt->view, UINT32_MAX, keep_frame, &s);
    const struct gs_frame *copy = s.f;
    if (!s.n) {
        fprintf(out, "(no stack recorded)\n");
        free(s.f);
        print_threads(rep, out, stack_id, threads, lead);
        return;
    }
    unsigned before = 0; /* native frames before the first Python frame */
    while (before < s.n && !copy[before].python)
        before++;
    unsigned skip_from = before, skip_to = before; /* frames [from, to) are counted, not shown */
    if (before < s.n && before > 1 && s.n > max) {
        skip_from = 1;
        skip_to = before;
    }
    unsigned shown = 0;
    for (unsigned i = 0; i < s.n && shown < max; i++) {
        if (i == skip_from && skip_to > skip_from) {
            fprintf(out, "%s  ... %u native frame%s\n", lead, skip_to - skip_from,
                    skip_to - skip_from == 1 ? "" : "s");
            i = skip_to - 1;
            continue;
        }
        print_frame(out, &copy[i], shown++, lead);
    }
    free(s.f);
    if (rep->opt->view == GS_VIEW_MERGED &&
        gs_site_python(rep->replay, stack_id) == GS_PY_NO_GIL)
        fprintf(out, "%s  (native stack: this thread did not hold the GIL)\n", lead);
    print_threads(rep, out, stack_id, threads, lead);
}

/* The allocations' device sites, or the blocks' (blocks set). */
static void print_ranked(const struct gs_report *rep, FILE *out, int blocks,
                         enum gs_site_metric metric)
{
    size_t n;
    const struct gs_report_site *sites = gs_found_sites(rep->found, blocks, metric, &n);
    const char *what = blocks ? "block" : "allocation";
    char b[32];
    for (size_t i = 0; i < n && i < rep->opt->top; i++) {
        fprintf(out, "  %12s in %6" PRIu64 " %s%s  ", gs_human_bytes(sites[i].bytes, b, sizeof b),
                sites[i].count, what, sites[i].count == 1 ? " " : "s");
        print_stack(rep, out, sites[i].stack_id, "                                        ",
                    &sites[i].threads);
    }
    if (n > rep->opt->top)
        fprintf(out, "  ... and %zu more call sites (--top N shows more)\n", n - rep->opt->top);
}

static void print_sites(const struct gs_report *rep, FILE *out, enum gs_site_metric metric)
{
    print_ranked(rep, out, 0, metric);
}

static void header(const struct gs_report *rep, FILE *out)
{
    const struct gs_trace_info *in = rep->info;
    const struct gs_findings *fd = rep->found;
    char when[64] = "";
    time_t t = (time_t)(in->header.realtime_ns / 1000000000u);
    struct tm tm;
    if (in->header.realtime_ns && localtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(out, "gpushim report for %s\n\n", rep->path);
    const char *host = gs_shown_host(in), *command = gs_shown_command(in);
    fprintf(out, "  process   %" PRIu64 " on %s, started %s\n", in->header.pid,
            host ? host : "(left out: --redact)", when);
    fprintf(out, "  command   %s\n",
            !command ? "(left out: --redact)" : command[0] ? command : "(not recorded)");
    fprintf(out, "  recorded  %.3f s: %" PRIu64 " allocation%s, %" PRIu64 " free%s, %" PRIu64
                 " failed allocation%s",
            seconds(fd->duration_ns), fd->allocations, plural(fd->allocations), fd->frees,
            plural(fd->frees), fd->failed, plural(fd->failed));
    if (fd->outcomes[0])
        fprintf(out, " (%s)", fd->outcomes);
    fputc('\n', out);
    if (fd->mode.note[0])
        fprintf(out, "  allocator %s\n", fd->mode.note);
    for (unsigned i = 0; i < in->header.nsettings; i++)
        fprintf(out, "%s%s=%s\n", i ? "            " : "  settings  ", in->header.settings[i].name,
                in->header.settings[i].value);
    if (fd->frees_unknown)
        fprintf(out, "            %" PRIu64 " free%s of addresses not allocated while recording\n",
                fd->frees_unknown, plural(fd->frees_unknown));
}

static void trace_state(const struct gs_report *rep, FILE *out)
{
    const struct gs_reader_stats *st = rep->stats;
    const char *ending = gs_trace_ending(rep->info, st);
    int ring = st->ring_use == GS_RING_READ;
    fprintf(out, "  trace     %s, %" PRIu64 " chunks", gs_trace_complete(st) ? "complete" : "INCOMPLETE",
            st->chunks);
    if (ring)
        fprintf(out, " and %" PRIu64 " event%s from its ring file", st->recovered_events,
                plural(st->recovered_events));
    if (st->damaged_chunks)
        fprintf(out, ", %" PRIu64 " damaged chunks skipped", st->damaged_chunks);
    if (st->damaged_records)
        fprintf(out, ", %" PRIu64 " damaged records skipped", st->damaged_records);
    if (st->truncated_at && !ring)
        fprintf(out, ", cut off at byte %" PRIu64, st->truncated_at);
    if (!strcmp(ending, "live"))
        fprintf(out, " (the process is still running: this is what it has recorded so far)");
    else if (!strcmp(ending, "died"))
        fprintf(out, " (the process did not finish the trace: it was killed or crashed%s)",
                ring && gs_trace_complete(st) ? "; nothing it recorded was lost" : "");
    fputc('\n', out);
    const struct gs_checkpoint_state *c = rep->found->checkpoint;
    if (c->present)
        fprintf(out, "            history before %.3f s (%" PRIu64 " event%s) is summarized: peak, "
                     "leaks and sites are exact, event detail starts there\n",
                seconds(c->time_ns), c->events, plural(c->events));
    if (st->ring_use == GS_RING_MISSING || st->ring_use == GS_RING_UNUSABLE)
        fprintf(out, "            its ring file %s could not be read (%s): the events of the "
                     "last moments may be missing\n",
                st->ring_path, st->ring_problem);
    int no_ring = st->ring_use == GS_RING_NONE; /* it could not be made */
    if (st->write_failed)
        fprintf(out, "            the trace could not be written past byte %" PRIu64
                     " at %.3f s (%s); %s\n",
                st->fail_offset, seconds(st->fail_time_ns), strerror(st->fail_errno),
                no_ring ? "there was no ring file to keep later events"
                        : "later events were kept in the ring while it had room");
    if (st->ring_lost || st->end_lost)
        fprintf(out, "            %" PRIu64 " events were lost: %s\n", st->ring_lost + st->end_lost,
                st->write_failed && no_ring ? "not in the trace, and no ring file kept them"
                                            : "the ring was full");
    if (st->ring_gap)
        fprintf(out, "            the ring moved past chunks this file does not have: events "
                     "are missing before the ones from the ring\n");
}

/* What the report lacks besides the trace (trace_state says that): the
 * analyzer's memory, implausible values; a line each. */
static void warning_lines(const struct gs_warnings *w, FILE *out)
{
    for (size_t i = 0; w && i < w->n; i++)
        if (w->w[i].kind != GS_WARNING_TRACE)
            fprintf(out, "  WARNING   %s\n", w->w[i].text);
}

/* Device memory over time in one line: each character a bucket, its
 * height the most live in it against the line's own peak. */
static void sparkline(FILE *out, const char *lead, const struct gs_timeline *t)
{
    static const char *const bars[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    uint64_t top = 0;
    for (unsigned i = 0; i < t->n; i++)
        if (t->hi[i] > top)
            top = t->hi[i];
    if (!top)
        return;
    fputs(lead, out);
    for (unsigned i = 0; i < t->n; i++) /* 1 to 8 eighths of the peak, rounded up */
        fputs(bars[t->hi[i] ? 1 + (unsigned)((double)t->hi[i] * 8 / (double)top - 1e-9) : 0], out);
    fprintf(out, "  %.3f s a character\n", (double)t->width_ns / 1e9);
}

/* One line for the one device; with several, a line each, on the same
 * time scale. */
static void timeline(const struct gs_findings *fd, FILE *out)
{
    if (fd->ndevices <= 1) {
        sparkline(out, "  timeline  ", fd->timeline);
        return;
    }
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        if (!fd->devices[d].present)
            continue;
        struct gs_timeline t;
        char lead[32];
        gs_timeline_aligned(fd->device_timeline[d], fd->timeline_width_ns, fd->timeline_n, &t);
        if (d < GS_MAX_DEVICES)
            snprintf(lead, sizeof lead, "  timeline %-2d", d);
        else
            snprintf(lead, sizeof lead, "  timeline ? ");
        sparkline(out, lead, &t);
    }
}

static void devices(const struct gs_findings *fd, FILE *out)
{
    char a[32], b[32];
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_device_usage *u = &fd->devices[d];
        if (!u->present)
            continue;
        if (d < GS_MAX_DEVICES)
            fprintf(out, "  device %-2d", d);
        else
            fprintf(out, "  device ? ");
        fprintf(out, " peak %s at %.3f s, %s live at the end\n", gs_human_bytes(u->peak_bytes, a, sizeof a),
                seconds(u->peak_time_ns), gs_human_bytes(u->live_bytes, b, sizeof b));
    }
    timeline(fd, out);
    fprintf(out, "  fits on   %s\n", fd->fit_text); /* (or that no device memory was used) */
    if (fd->rounding_at_peak)
        fprintf(out, "  pages     %s more at the peak: sizes rounded up to whole %s pages\n",
                gs_human_bytes(fd->rounding_at_peak, a, sizeof a),
                gs_human_bytes(GS_DEVICE_PAGE, b, sizeof b));
    for (int k = GS_KIND_DEVICE + 1; k < GS_KIND_COUNT; k++) {
        const struct gs_kind_usage *u = &fd->kinds[k];
        if (u->allocs)
            fprintf(out, "  %-29s peak %s, %s live at the end, %" PRIu64 " allocation%s\n",
                    gs_kind_label((uint32_t)k), gs_human_bytes(u->peak_bytes, a, sizeof a),
                    gs_human_bytes(u->live_bytes, b, sizeof b), u->allocs, plural(u->allocs));
    }
    for (size_t i = 0; i < fd->npools; i++) {
        const struct gs_pool_usage *p = &fd->pools[i];
        char c[32];
        fprintf(out, "  pool 0x%" PRIx64 " on device %d: reserved up to %s, used up to %s, "
                     "up to %s held beyond use\n",
                p->pool, p->device, gs_human_bytes(p->peak_reserved, a, sizeof a),
                gs_human_bytes(p->peak_used, b, sizeof b), gs_human_bytes(p->peak_unused, c, sizeof c));
    }
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_graph_pool *p = &fd->graphs->pools[d];
        char c[32];
        if (!p->seen)
            continue;
        fprintf(out, "  CUDA graph pool on device %d: reserved %s (up to %s), used %s; "
                     "%" PRIu64 " graph%s instantiated, %" PRIu64 " launch%s",
                d < GS_MAX_DEVICES ? d : GS_DEVICE_UNKNOWN, gs_human_bytes(p->reserved, a, sizeof a),
                gs_human_bytes(p->peak_reserved, c, sizeof c), gs_human_bytes(p->live, b, sizeof b),
                fd->graphs->execs_made, plural(fd->graphs->execs_made), p->launches,
                p->launches == 1 ? "" : "es");
        if (p->launches_failed)
            fprintf(out, " (%" PRIu64 " failed)", p->launches_failed);
        fprintf(out, "\n");
    }
}

/* The allocation nodes of the graphs and executables alive at the end:
 * memory they take each time they run. */
static void graph_nodes(const struct gs_report *rep, FILE *out)
{
    const struct gs_graphs *g = rep->found->graphs;
    static const char *const which[] = {"graph", "executable", "capture (not ended)"};
    int said = 0;
    for (size_t i = 0; i < g->nobjs; i++) {
        const struct gs_graph_obj *o = &g->objs[i];
        for (size_t k = 0; k < o->n; k++) {
            const struct gs_graph_node *n = &o->nodes[k];
            char a[32];
            if (n->is_free)
                continue;
            if (!said++)
                fprintf(out, "\nCUDA graphs alive at the end: their allocation nodes (taken from "
                             "the graph pool at each launch):\n");
            fprintf(out, "  %10s at 0x%" PRIx64 " in %s 0x%" PRIx64 "%s  ",
                    gs_human_bytes(n->size, a, sizeof a), n->addr,
                    o->which < 3 ? which[o->which] : "?", o->handle,
                    gs_replay_find_live(rep->replay, GS_SPACE_ADDRESS, n->addr) ? " (live)" : "");
            print_stack(rep, out, n->stack_id, "          ", NULL);
        }
    }
}

static void print_frag(FILE *out, const struct gs_frag *f)
{
    char line[512];
    fputs(gs_frag_text(f, line, sizeof line), out);
}

/* Under a failure: would it have fit inside the segments the process held? */
static void failure_frag(FILE *out, const struct gs_failure_found *x)
{
    if (!x->frag)
        return;
    fprintf(out, "             inside its segments: ");
    print_frag(out, x->frag);
    fprintf(out, "\n             so the request would %s\n", gs_gap_text(x->gap));
}

/* Under a failure: the verdict, what the process held on the device, and
 * what grew before (oom.c, verdict.c). */
static void failure_postmortem(const struct gs_report *rep, FILE *out,
                               const struct gs_failure_found *x)
{
    const struct gs_site *sites = rep->found->sites;
    char a[32], where[256];
    fprintf(out, "             verdict: %s\n", x->cause.sentence);
    if (x->has_allocator)
        fprintf(out, "           allocator: %s\n", x->allocator.sentence);
    const struct gs_postmortem *pm = x->pm;
    if (!pm)
        return;
    if (pm->nheld)
        fprintf(out, "             held then on its device, by call site:\n");
    for (unsigned k = 0; k < pm->nheld; k++) {
        gs_site_where(rep->replay, rep->sym, rep->opt->view, sites[pm->held_site[k]].stack_id,
                      where, sizeof where);
        fprintf(out, "             %12s in %6" PRIu64 "  %s\n",
                gs_human_bytes(pm->held_bytes[k], a, sizeof a), pm->held_count[k], where);
    }
    if (!pm->ngrew)
        return;
    if (pm->grew_by_steps)
        fprintf(out, "             grew since step %" PRIu64 " (%.3f s), by call site:\n",
                pm->grew_from_step, seconds(pm->grew_from_ns));
    else
        fprintf(out, "             grew since %.3f s, by call site:\n", seconds(pm->grew_from_ns));
    for (unsigned k = 0; k < pm->ngrew; k++) {
        gs_site_where(rep->replay, rep->sym, rep->opt->view, sites[pm->grew_site[k]].stack_id,
                      where, sizeof where);
        fprintf(out, "             %12s  %s\n", gs_human_bytes(pm->grew_bytes[k], a, sizeof a),
                where);
    }
}

/* A failure's first line: when, what, on which device, the result. */
static void failure_line(FILE *out, const struct gs_failure *f)
{
    char a[32];
    fprintf(out, "  at %.3f s  %s of %s on device %d: %s (%u)", seconds(f->time_ns),
            gs_api_name(f->api), gs_human_bytes(f->requested, a, sizeof a), f->device,
            gs_result_name(f->result), f->result);
}

/* An unrecovered failure, in full: the memory then, the verdict, what was
 * held and grew, its stack. */
static void failure_in_full(const struct gs_report *rep, FILE *out,
                            const struct gs_failure_found *x)
{
    const struct gs_failure *f = x->f;
    char b[32], c[32], d[32];
    failure_line(out, f);
    fputc('\n', out);
    if (f->total_bytes != UINT64_MAX)
        fprintf(out, "             device had %s free of %s; this process held %s\n",
                gs_human_bytes(f->free_bytes, b, sizeof b), gs_human_bytes(f->total_bytes, c, sizeof c),
                gs_human_bytes(f->process_live_bytes, d, sizeof d));
    char path[1024];
    if (gs_ranges_failure_path(rep, x->index, path, sizeof path))
        fprintf(out, "             inside NVTX range %s\n", path);
    gs_roles_text_failure(out, x, "             ");
    failure_frag(out, x);
    failure_postmortem(rep, out, x);
    fprintf(out, "             ");
    struct gs_thread_tally thread = {0};
    gs_tally_add(&thread, f->thread, 1);
    print_stack(rep, out, f->stack_id, "             ", &thread);
}

/* The failures the program got past, of one outcome: a line each (at most
 * --top) with what came of it, and where. */
static void failures_got_past(const struct gs_report *rep, FILE *out, enum gs_outcome o)
{
    const struct gs_findings *fd = rep->found;
    char a[32], b[32], where[256];
    size_t shown = 0, more = 0;
    for (size_t i = 0; i < fd->nfailures; i++) {
        const struct gs_failure *f = fd->failures[i].f;
        if (f->outcome != o)
            continue;
        if (shown == rep->opt->top) {
            more++;
            continue;
        }
        shown++;
        failure_line(out, f);
        if (o == GS_OUTCOME_RECOVERED && f->freed_bytes)
            fprintf(out, "; got %s %.3f s later, its thread having freed %s in %" PRIu64
                         " free%s",
                    gs_human_bytes(f->retry_bytes, a, sizeof a), seconds(f->retry_ns),
                    gs_human_bytes(f->freed_bytes, b, sizeof b), f->frees, plural(f->frees));
        else if (o == GS_OUTCOME_RECOVERED)
            fprintf(out, "; got %s %.3f s later", gs_human_bytes(f->retry_bytes, a, sizeof a),
                    seconds(f->retry_ns));
        else if (o == GS_OUTCOME_PROBE)
            fprintf(out, "; %s fit, freed at once", gs_human_bytes(f->retry_bytes, a, sizeof a));
        gs_site_where(rep->replay, rep->sym, rep->opt->view, f->stack_id, where, sizeof where);
        fprintf(out, "\n             at %s\n", where);
    }
    if (more)
        fprintf(out, "  ... and %zu more (--top N shows more)\n", more);
}

static void failures(const struct gs_report *rep, FILE *out)
{
    const struct gs_findings *fd = rep->found;
    const struct gs_outcomes *o = fd->outcome_counts;
    char a[32], b[32];
    if (!fd->failed) {
        fprintf(out, "\nNo failed allocations.\n");
        return;
    }
    uint64_t unrecovered = fd->unrecovered;
    fprintf(out, "\nFailed allocations: %" PRIu64, fd->failed);
    if (unrecovered == fd->failed)
        fputc('\n', out);
    else if (unrecovered)
        fprintf(out, ", %" PRIu64 " unrecovered (the program did not get past %s):\n",
                unrecovered, unrecovered == 1 ? "it" : "them");
    else
        fprintf(out, ", none unrecovered: the program got past each one\n");
    size_t listed = 0, more = 0;
    for (size_t i = 0; i < fd->nfailures; i++) {
        if (fd->failures[i].f->outcome != GS_OUTCOME_UNRECOVERED)
            continue;
        if (listed == rep->opt->top) {
            more++;
            continue;
        }
        listed++;
        failure_in_full(rep, out, &fd->failures[i]);
    }
    if (more)
        fprintf(out, "  ... and %zu more\n", more);

    uint64_t n = o->count[GS_OUTCOME_RECOVERED];
    if (n) {
        fprintf(out, "\nRecovered: %" PRIu64 " failed allocation%s whose call site got the memory "
                     "afterwards, in %" PRIu64 " retr%s",
                n, plural(n), o->retries, o->retries == 1 ? "y" : "ies");
        if (o->retry_frees)
            fprintf(out, "; before retrying, the threads freed %s in %" PRIu64 " free%s (a "
                         "caching allocator emptying its cache: PyTorch's also synchronises "
                         "the device)",
                    gs_human_bytes(o->retry_freed_bytes, a, sizeof a), o->retry_frees,
                    plural(o->retry_frees));
        fprintf(out, ", %.3f s in all:\n", seconds(o->retry_ns));
        failures_got_past(rep, out, GS_OUTCOME_RECOVERED);
    }
    n = o->count[GS_OUTCOME_PROBE];
    if (n) {
        fprintf(out, "\nProbes: %" PRIu64 " failed allocation%s asked to learn what fits (all "
                     "the free memory, halved until it fit); %" PRIu64 " allocation%s that fit, "
                     "%s in all, the largest %s, %s freed at once and not counted in the peak, "
                     "the leaks or the fit:\n",
                n, plural(n), o->probes, plural(o->probes),
                gs_human_bytes(o->probe_bytes, a, sizeof a),
                gs_human_bytes(o->probe_largest, b, sizeof b), o->probes == 1 ? "was" : "were");
        failures_got_past(rep, out, GS_OUTCOME_PROBE);
    }
    n = o->count[GS_OUTCOME_REFUSED];
    if (n) {
        fprintf(out, "\nRefused: %" PRIu64 " failed allocation%s the driver refused as asked, "
                     "not for want of memory:\n",
                n, plural(n));
        failures_got_past(rep, out, GS_OUTCOME_REFUSED);
    }
}

/* The leak suspects (growth.c, suspects.c): what the report leads with. */
static void suspects(const struct gs_report *rep, FILE *out)
{
    const struct gs_findings *fd = rep->found;
    const struct gs_growth *g = fd->growth;
    const struct gs_suspect *sus = fd->suspects;
    size_t nsus = fd->nsuspects;
    char a[32], b[32], c[32];
    if (!g->n)
        return;
    char how[320];
    if (g->by_steps)
        snprintf(how, sizeof how, "where \"%s\" steps begin or end, %u time%s",
                 fd->growth_step_label ? fd->growth_step_label : "?", g->n, plural(g->n));
    else
        snprintf(how, sizeof how, "at %u quiet moment%s", g->n, plural(g->n));
    if (!nsus) {
        fprintf(out, "\nLeak suspects: none; no call site's live memory kept rising (sampled %s, "
                     "and at the end of the run).\n", how);
        return;
    }
    fprintf(out, "\nLeak suspects: %zu call site%s whose live memory kept rising (sampled %s, and "
                 "at the end of the run):\n", nsus, plural(nsus), how);
    for (size_t i = 0; i < nsus && i < rep->opt->top; i++) {
        const struct gs_suspect *s = &sus[i];
        gs_suspect_rate(s, fd->duration_ns, c, sizeof c);
        fprintf(out, "  +%11s since %.3f s, %s; %s live at the end  ",
                gs_human_bytes(s->growth_bytes, a, sizeof a), seconds(s->from_ns), c,
                gs_human_bytes(s->live_bytes, b, sizeof b));
        print_stack(rep, out, s->stack_id, "                                        ", &s->threads);
    }
    if (nsus > rep->opt->top)
        fprintf(out, "  ... and %zu more (--top N shows more)\n", nsus - rep->opt->top);
}


/* The marks' labels with their steps, then the last steps. */
static void marks(const struct gs_report *rep, FILE *out)
{
    const struct gs_marks *m = rep->found->marks;
    char a[32], b[32], c[32];
    if (!m->marks)
        return;
    fprintf(out, "\nMarks: %" PRIu64 " mark%s of %zu label%s; a step runs from a mark to the next "
                 "of its label, or to its range's end,\n  or to the end of the run; a step end "
                 "(gpushim.step_end, mark_steps) ends one that began at the last\n",
            m->marks, plural(m->marks), m->nlabels, plural(m->nlabels));
    for (size_t i = 0; i < m->nlabels && i < rep->opt->top; i++) {
        const struct gs_mark_label *l = &m->labels[i];
        fprintf(out, "  %-12s %" PRIu64 " mark%s, %" PRIu64 " step%s%s", gs_mark_label_text(m, (uint32_t)i),
                l->marks, plural(l->marks), l->steps, plural(l->steps),
                l->cut ? " (the last to the end of the run)" : "");
        if (l->steps) {
            fprintf(out, ": peak %s (the step ending at %.3f s)",
                    gs_human_bytes(l->max_peak, c, sizeof c), seconds(l->max_peak_end_ns));
            int64_t avg; /* the growth of the steps before one the run cut */
            if (gs_label_step_growth(l, &avg)) {
                gs_signed_bytes(avg, a, sizeof a);
                gs_signed_bytes(l->max_growth, b, sizeof b);
                fprintf(out, "; device memory %s a step on average%s, at most %s; %" PRIu64
                             " step%s grew",
                        a, l->cut ? " before the last" : "", b, l->growing, plural(l->growing));
            }
        }
        fputc('\n', out);
    }
    if (m->nlabels > rep->opt->top)
        fprintf(out, "  ... and %zu more labels (--top N shows more)\n",
                m->nlabels - rep->opt->top);
    if (m->labels_dropped)
        fprintf(out, "  and %" PRIu64 " mark%s of labels past the first %d, not followed\n",
                m->labels_dropped, plural(m->labels_dropped), GS_MARK_LABELS);
    if (!m->nsteps)
        return;
    uint64_t shown = m->nsteps < rep->opt->top ? m->nsteps : rep->opt->top;
    if (shown > GS_STEPS_KEPT)
        shown = GS_STEPS_KEPT;
    fprintf(out, "  the last %" PRIu64 " step%s of %" PRIu64 ":\n", shown, plural(shown),
            m->nsteps);
    for (uint64_t k = m->nsteps - shown; k < m->nsteps; k++) {
        const struct gs_step *st = &m->steps[k % GS_STEPS_KEPT];
        char d[32];
        gs_signed_bytes(st->growth_bytes, d, sizeof d);
        fprintf(out, "    %-12s %9.3f s to %9.3f s  peak %10s  allocated %10s  freed %10s  %s%s\n",
                gs_mark_label_text(m, st->label), seconds(st->start_ns), seconds(st->end_ns),
                gs_human_bytes(st->peak_bytes, a, sizeof a),
                gs_human_bytes(st->allocated_bytes, b, sizeof b),
                gs_human_bytes(st->freed_bytes, c, sizeof c), d,
                st->cut ? "  (the end of the run)" : "");
    }
}

/* The program's own allocator's blocks, and fragmentation at the peak. */
static void blocks(const struct gs_report *rep, FILE *out)
{
    const struct gs_blocks *b = rep->found->blocks;
    char a[32];
    if (!b->seen)
        return;
    fprintf(out, "\nBlocks of the program's own allocator: %" PRIu64 " given, %" PRIu64
                 " taken back",
            b->allocs, b->frees);
    if (b->frees_unknown)
        fprintf(out, ", %" PRIu64 " taken back that %s never given", b->frees_unknown,
                b->frees_unknown == 1 ? "was" : "were");
    fprintf(out, "\nBlock peak: %s at %.3f s. Live then, by call site:\n",
            gs_human_bytes(b->peak_bytes, a, sizeof a), seconds(b->peak_time_ns));
    print_ranked(rep, out, 1, GS_METRIC_PEAK);
    if (b->live_count) {
        fprintf(out, "Blocks never taken back: %s in %" PRIu64 " block%s, by call site:\n",
                gs_human_bytes(b->live_bytes, a, sizeof a), b->live_count, plural(b->live_count));
        print_ranked(rep, out, 1, GS_METRIC_LEAK);
    } else {
        fprintf(out, "Every block was taken back.\n");
    }
    if (b->at_peak.present) {
        fprintf(out, "Fragmentation at the device peak (%.3f s): ", seconds(b->at_peak.time_ns));
        print_frag(out, &b->at_peak);
        fputc('\n', out);
    }
}

/* The modules that named no function for a frame shown, once each, and
 * why (after everything else: the frames were asked for by then). */
static void unnamed(const struct gs_report *rep, FILE *out)
{
    struct gs_sym_unnamed u[16];
    size_t n = gs_sym_unnamed(rep->sym, u, 16);
    if (!n)
        return;
    fprintf(out, "\nWithout names: %zu module%s, shown as addresses:\n", n, plural(n));
    for (size_t i = 0; i < n && i < 16; i++)
        fprintf(out, "  %s: %s; %u address%s\n", u[i].path, gs_sym_why_text(u[i].why),
                u[i].unnamed, u[i].unnamed == 1 ? "" : "es");
    if (n > 16)
        fprintf(out, "  and %zu more\n", n - 16);
    fputs("  --symbols DIR finds a copy in DIR (as under a sysroot, by file name, or in "
          "DIR/.build-id/) by its build id;\n  DEBUGINFOD_URLS names debuginfod servers to ask "
          "for its debug information by build id\n", out);
}

void gs_report_text(FILE *out, const struct gs_report *rep)
{
    const struct gs_findings *fd = rep->found;
    char a[32];
    header(rep, out);
    trace_state(rep, out);
    warning_lines(&fd->warnings, out);
    devices(fd, out);
    suspects(rep, out);

    fprintf(out, "\nPeak: %s of device memory at %.3f s", gs_human_bytes(fd->peak_bytes, a, sizeof a),
            seconds(fd->peak_time_ns));
    if (fd->outcome_counts->probes) {
        char b[32];
        fprintf(out, " (not counting %" PRIu64 " probe%s of up to %s, freed at once: see "
                     "Probes)",
                fd->outcome_counts->probes, plural(fd->outcome_counts->probes),
                gs_human_bytes(fd->outcome_counts->probe_largest, b, sizeof b));
    }
    fprintf(out, ". Live then, by call site:\n");
    print_sites(rep, out, GS_METRIC_PEAK);
    gs_roles_text_peak(out, rep);

    if (fd->leak_count) {
        fprintf(out, "\nUnfreed at the end: %s in %" PRIu64 " allocation%s, by call site:\n",
                gs_human_bytes(fd->leak_bytes, a, sizeof a), fd->leak_count, plural(fd->leak_count));
        print_sites(rep, out, GS_METRIC_LEAK);
    } else {
        fprintf(out, "\nEverything allocated was freed.\n");
    }
    failures(rep, out);
    marks(rep, out);
    gs_ranges_text(out, rep);
    blocks(rep, out);
    graph_nodes(rep, out);
    unnamed(rep, out);
}
