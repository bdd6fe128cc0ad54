/*
 * report_json.c - the report for programs: one JSON object, the schema of
 * which docs/json.md documents. Fields are only ever added.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/report/ranges_report.h"
#include "analyzer/report/roles_report.h"
#include "analyzer/util/json.h"
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
#include "analyzer/findings/warnings.h"
#include "analyzer/report/report.h"

static void frame(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct gs_json *j = ctx;
    char addr[32];
    (void)index;
    snprintf(addr, sizeof addr, "0x%" PRIx64, f->pc);
    gs_json_begin_object(j, NULL);
    gs_json_string(j, "function", f->function);
    gs_json_string(j, "file", f->file);
    gs_json_uint(j, "line", f->line > 0 ? (uint64_t)f->line : 0);
    gs_json_string(j, "module", f->python ? NULL : f->module);
    gs_json_string(j, "address", f->python ? NULL : addr);
    gs_json_string(j, "language", f->python ? "python" : "native");
    gs_json_end_object(j);
}

void gs_json_frames(struct gs_json *j, const struct gs_replay *r, struct gs_symbolizer *sym,
                    enum gs_stack_view view, uint32_t stack_id)
{
    gs_json_begin_array(j, "frames");
    gs_site_frames(r, sym, stack_id, view, GS_MAX_FRAMES * 4, frame, j);
    gs_json_end_array(j);
    enum gs_py_state py = gs_site_python(r, stack_id);
    if (view == GS_VIEW_NATIVE || py == GS_PY_NONE) {
        gs_json_null(j, "gil");
        gs_json_null(j, "waiter");
    } else {
        gs_json_bool(j, "gil", py != GS_PY_NO_GIL && py != GS_PY_RELEASED && py != GS_PY_WAITER);
        gs_json_bool(j, "waiter", py == GS_PY_WAITER);
    }
}

static void frames(struct gs_json *j, const struct gs_report *rep, uint32_t stack_id)
{
    gs_json_frames(j, rep->replay, rep->sym, rep->opt->view, stack_id);
}

static void backward_of(struct gs_json *j, const struct gs_report *rep, uint32_t stack_id)
{
    char op[128];
    gs_json_string(j, "backward_of",
                   gs_site_backward_of(rep->replay, rep->sym, stack_id, op, sizeof op) ? op : NULL);
}

/* A site's threads by name, most allocations first (the rest together,
 * with a null name), and the backward it ran in PyTorch's autograd. */
static void threads(struct gs_json *j, const struct gs_report *rep, uint32_t stack_id,
                    const struct gs_thread_tally *t)
{
    gs_json_begin_array(j, "threads");
    for (unsigned i = 0; i < t->n; i++) {
        gs_json_begin_object(j, NULL);
        gs_json_string(j, "name", gs_replay_thread_name(rep->replay, t->name[i]));
        gs_json_uint(j, "allocations", t->allocs[i]);
        gs_json_end_object(j);
    }
    if (t->other) {
        gs_json_begin_object(j, NULL);
        gs_json_null(j, "name");
        gs_json_uint(j, "allocations", t->other);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    backward_of(j, rep, stack_id);
}

/* The allocations' device sites, or the blocks' sites (blocks set). */
static void ranked_sites(struct gs_json *j, const struct gs_report *rep, int blocks,
                         enum gs_site_metric metric)
{
    size_t n;
    const struct gs_report_site *s = gs_found_sites(rep->found, blocks, metric, &n);
    gs_json_begin_array(j, "sites");
    for (size_t i = 0; i < n && i < rep->opt->top; i++) {
        gs_json_begin_object(j, NULL);
        gs_json_uint(j, "bytes", s[i].bytes);
        gs_json_uint(j, "count", s[i].count);
        gs_json_string(j, "api", blocks ? "gpushim_block_alloc" : gs_api_name(s[i].api));
        frames(j, rep, s[i].stack_id);
        threads(j, rep, s[i].stack_id, &s[i].threads);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
}

static void sites(struct gs_json *j, const struct gs_report *rep, enum gs_site_metric metric)
{
    ranked_sites(j, rep, 0, metric);
}

static void bytes_or_null(struct gs_json *j, const char *key, uint64_t v)
{
    if (v == UINT64_MAX)
        gs_json_null(j, key);
    else
        gs_json_uint(j, key, v);
}

static void process(struct gs_json *j, const struct gs_report *rep)
{
    gs_json_begin_object(j, "process");
    gs_json_uint(j, "pid", rep->info->header.pid);
    gs_json_uint(j, "ppid", rep->info->header.ppid);
    gs_json_string(j, "host", gs_shown_host(rep->info));
    gs_json_string(j, "command", gs_shown_command(rep->info));
    gs_json_uint(j, "start_unix_ns", rep->info->header.realtime_ns);
    gs_json_uint(j, "duration_ns", rep->found->duration_ns);
    gs_json_end_object(j);
}

static void allocator(struct gs_json *j, const struct gs_report *rep)
{
    const struct gs_alloc_mode *m = &rep->found->mode;
    gs_json_begin_object(j, "allocator");
    gs_json_begin_object(j, "settings");
    for (unsigned i = 0; i < rep->info->header.nsettings; i++)
        gs_json_string(j, rep->info->header.settings[i].name, rep->info->header.settings[i].value);
    gs_json_end_object(j);
    gs_json_begin_array(j, "frameworks");
    static const char *const names[] = {"pytorch", "jax", "tensorflow"};
    for (unsigned f = 0; f < 3; f++)
        if (m->frameworks & (1u << f))
            gs_json_string(j, NULL, names[f]);
    gs_json_end_array(j);
    if (m->per_tensor < 0)
        gs_json_null(j, "per_tensor");
    else
        gs_json_bool(j, "per_tensor", m->per_tensor);
    gs_json_string(j, "note", m->note[0] ? m->note : NULL);
    gs_json_end_object(j);
}

static void events(struct gs_json *j, const struct gs_findings *fd)
{
    gs_json_begin_object(j, "events");
    gs_json_uint(j, "allocations", fd->allocations);
    gs_json_uint(j, "frees", fd->frees);
    gs_json_uint(j, "failed", fd->failed);
    gs_json_uint(j, "frees_unknown", fd->frees_unknown);
    gs_json_uint(j, "references", fd->refs);
    gs_json_end_object(j);
}

static void buckets(struct gs_json *j, const struct gs_timeline *t)
{
    gs_json_begin_array(j, "max_bytes");
    for (unsigned i = 0; i < t->n; i++)
        gs_json_uint(j, NULL, t->hi[i]);
    gs_json_end_array(j);
}

/* All devices together, as it always was; then each device on the same
 * time scale, with what a chart of it marks: its peak, its failures, and
 * the marks of the program. */
static void timeline(struct gs_json *j, const struct gs_findings *fd)
{
    const struct gs_timeline *t = fd->timeline;
    uint64_t width = fd->timeline_width_ns;
    gs_json_begin_object(j, "timeline");
    gs_json_uint(j, "bucket_ns", t->width_ns);
    buckets(j, t);
    gs_json_uint(j, "device_bucket_ns", width);
    gs_json_begin_array(j, "devices");
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_device_usage *u = &fd->devices[d];
        if (!u->present)
            continue;
        int32_t dev = d < GS_MAX_DEVICES ? d : -1;
        struct gs_timeline dt;
        gs_timeline_aligned(fd->device_timeline[d], width, fd->timeline_n, &dt);
        gs_json_begin_object(j, NULL);
        gs_json_int(j, "device", dev);
        buckets(j, &dt);
        gs_json_uint(j, "peak_bytes", u->peak_bytes);
        gs_json_uint(j, "peak_time_ns", u->peak_time_ns);
        gs_json_begin_array(j, "failure_times_ns");
        for (size_t i = 0; i < fd->nfailures; i++) {
            int32_t on = fd->failures[i].f->device;
            if (on == dev || (dev == -1 && (on < 0 || on >= GS_MAX_DEVICES)))
                gs_json_uint(j, NULL, fd->failures[i].f->time_ns);
        }
        gs_json_end_array(j);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    const struct gs_marks *m = fd->marks;
    gs_json_begin_array(j, "mark_times_ns");
    for (uint64_t i = m->marks > GS_MARKS_KEPT ? m->marks - GS_MARKS_KEPT : 0;
         m->recent && i < m->marks; i++)
        gs_json_uint(j, NULL, m->recent[i % GS_MARKS_KEPT].time_ns);
    gs_json_end_array(j);
    gs_json_end_object(j);
}

static void capacity(struct gs_json *j, const struct gs_findings *fd)
{
    uint64_t peak = fd->largest_device_peak;
    const struct gs_fit fit = fd->fit;
    gs_json_begin_object(j, "capacity");
    gs_json_uint(j, "peak_bytes", peak);
    gs_json_uint(j, "need_bytes", fit.need);
    if (fit.asked) {
        gs_json_uint(j, "failed_held_bytes", fit.held);
        gs_json_uint(j, "failed_asked_bytes", fit.asked);
    } else {
        gs_json_null(j, "failed_held_bytes");
        gs_json_null(j, "failed_asked_bytes");
    }
    gs_json_bool(j, "leak_grew", fit.growing);
    gs_json_string(j, "fits_on", fd->fit_text);
    gs_json_begin_array(j, "cards");
    for (int c = 0; c < GS_NCARDS; c++) {
        uint64_t need = fit.need, card = gs_cards[c].bytes;
        gs_json_begin_object(j, NULL);
        gs_json_string(j, "name", gs_cards[c].name);
        gs_json_uint(j, "bytes", card);
        gs_json_bool(j, "fits", need <= card);
        /* a need past 2^63 (a hostile trace) saturates */
        gs_json_int(j, "headroom_bytes",
                    need <= card ? (int64_t)(card - need)
                    : need - card > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)(need - card));
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    gs_json_end_object(j);
}

static void devices(struct gs_json *j, const struct gs_findings *fd)
{
    gs_json_begin_array(j, "devices");
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_device_usage *u = &fd->devices[d];
        if (!u->present)
            continue;
        gs_json_begin_object(j, NULL);
        gs_json_int(j, "device", d < GS_MAX_DEVICES ? d : -1);
        gs_json_uint(j, "peak_bytes", u->peak_bytes);
        gs_json_uint(j, "peak_time_ns", u->peak_time_ns);
        gs_json_uint(j, "live_bytes_at_end", u->live_bytes);
        gs_json_uint(j, "allocations", u->allocs);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
}

static void categories(struct gs_json *j, const struct gs_findings *fd)
{
    gs_json_begin_object(j, "categories");
    for (int k = 0; k < GS_KIND_COUNT; k++) {
        gs_json_begin_object(j, gs_kind_name((uint32_t)k));
        gs_json_uint(j, "peak_bytes", fd->kinds[k].peak_bytes);
        gs_json_uint(j, "live_bytes_at_end", fd->kinds[k].live_bytes);
        gs_json_uint(j, "allocations", fd->kinds[k].allocs);
        gs_json_end_object(j);
    }
    gs_json_end_object(j);
}

static void pools(struct gs_json *j, const struct gs_findings *fd)
{
    gs_json_begin_object(j, "pools");
    gs_json_uint(j, "reserved_bytes_at_peak", fd->pool_reserved_at_peak);
    gs_json_uint(j, "used_bytes_at_peak", fd->pool_used_at_peak);
    gs_json_begin_array(j, "pools");
    for (size_t i = 0; i < fd->npools; i++) {
        const struct gs_pool_usage *p = &fd->pools[i];
        char id[32];
        snprintf(id, sizeof id, "0x%" PRIx64, p->pool);
        gs_json_begin_object(j, NULL);
        gs_json_string(j, "pool", id);
        gs_json_int(j, "device", p->device);
        gs_json_uint(j, "peak_reserved_bytes", p->peak_reserved);
        gs_json_uint(j, "peak_used_bytes", p->peak_used);
        gs_json_uint(j, "peak_unused_bytes", p->peak_unused);
        gs_json_uint(j, "reserved_bytes_at_end", p->reserved);
        gs_json_uint(j, "used_bytes_at_end", p->used);
        gs_json_uint(j, "samples", p->samples);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    gs_json_end_object(j);
}

/* CUDA graphs (graphs.c): each device's graph pool, and the allocation
 * nodes of the graphs, executables and captures alive at the end. */
static void graphs(struct gs_json *j, const struct gs_report *rep)
{
    const struct gs_graphs *g = rep->found->graphs;
    static const char *const which[] = {"graph", "executable", "capture"};
    if (!g->seen) {
        gs_json_null(j, "graphs");
        return;
    }
    gs_json_begin_object(j, "graphs");
    gs_json_uint(j, "memory_nodes", g->nodes);
    gs_json_uint(j, "executables_instantiated", g->execs_made);
    gs_json_uint(j, "graphs_at_end", gs_graphs_count(g, GS_GRAPH_OBJ_GRAPH));
    gs_json_uint(j, "executables_at_end", gs_graphs_count(g, GS_GRAPH_OBJ_EXEC));
    gs_json_begin_array(j, "pools");
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_graph_pool *p = &g->pools[d];
        if (!p->seen)
            continue;
        gs_json_begin_object(j, NULL);
        gs_json_int(j, "device", d < GS_MAX_DEVICES ? d : GS_DEVICE_UNKNOWN);
        gs_json_uint(j, "reserved_bytes", p->reserved);
        gs_json_uint(j, "live_bytes", p->live);
        gs_json_uint(j, "peak_reserved_bytes", p->peak_reserved);
        gs_json_uint(j, "sampled_reserved_bytes", p->sampled_reserved);
        gs_json_uint(j, "sampled_used_bytes", p->sampled_used);
        gs_json_uint(j, "samples", p->samples);
        gs_json_uint(j, "launches", p->launches);
        gs_json_uint(j, "launches_failed", p->launches_failed);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    gs_json_begin_array(j, "allocation_nodes");
    for (size_t i = 0; i < g->nobjs; i++) {
        const struct gs_graph_obj *o = &g->objs[i];
        for (size_t k = 0; k < o->n; k++) {
            const struct gs_graph_node *n = &o->nodes[k];
            char h[32], a[32];
            if (n->is_free)
                continue;
            snprintf(h, sizeof h, "0x%" PRIx64, o->handle);
            snprintf(a, sizeof a, "0x%" PRIx64, n->addr);
            gs_json_begin_object(j, NULL);
            gs_json_string(j, "in", o->which < 3 ? which[o->which] : "?");
            gs_json_string(j, "handle", h);
            gs_json_string(j, "address", a);
            gs_json_uint(j, "bytes", n->size);
            gs_json_int(j, "device", n->device);
            gs_json_string(j, "api", gs_api_name(n->api));
            gs_json_bool(j, "live",
                         gs_replay_find_live(rep->replay, GS_SPACE_ADDRESS, n->addr) != NULL);
            frames(j, rep, n->stack_id);
            gs_json_end_object(j);
        }
    }
    gs_json_end_array(j);
    gs_json_end_object(j);
}

/* A raw site (index in gs_replay.sites) with a figure: the postmortem's lists. */
static void raw_site(struct gs_json *j, const struct gs_report *rep, uint32_t site,
                     uint64_t bytes, const uint64_t *count)
{
    const struct gs_site *s = &rep->found->sites[site];
    gs_json_begin_object(j, NULL);
    gs_json_uint(j, "bytes", bytes);
    if (count)
        gs_json_uint(j, "count", *count);
    gs_json_string(j, "api", gs_api_name(s->api));
    frames(j, rep, s->stack_id);
    struct gs_thread_tally t = {0};
    gs_tally_add_site(&t, s);
    gs_tally_sort(&t);
    threads(j, rep, s->stack_id, &t);
    gs_json_end_object(j);
}

/* The verdict on an unrecovered failure (verdict.c), with the allocator's
 * (answer.c); null for the others, which the program got past. */
static void verdict(struct gs_json *j, const struct gs_failure_found *x)
{
    const struct gs_oom_verdict *v = &x->cause;
    if (!x->judged) {
        gs_json_null(j, "verdict");
        return;
    }
    gs_json_begin_object(j, "verdict");
    gs_json_string(j, "cause", gs_oom_cause_name(v->cause));
    gs_json_string(j, "sentence", v->sentence);
    gs_json_uint(j, "shortfall_bytes", v->shortfall);
    if (!v->known)
        gs_json_null(j, "other_bytes");
    else
        gs_json_int(j, "other_bytes", v->other_bytes);
    gs_json_uint(j, "held_free_bytes", v->held_free);
    gs_json_uint(j, "largest_held_free_bytes", v->largest_free);
    gs_json_bool(j, "fits_in_held_free", x->fits_in_held_free);
    gs_json_uint(j, "leak_growth_bytes", v->leak_growth);
    if (x->has_allocator) {
        gs_json_begin_object(j, "allocator");
        gs_json_string(j, "setting", x->allocator_setting);
        gs_json_uint(j, "peak_bytes", x->allocator.peak);
        gs_json_uint(j, "capacity_bytes", x->allocator.capacity);
        gs_json_string(j, "compared_to", x->allocator_compared);
        gs_json_uint(j, "compared_needs_bytes", x->allocator.needs);
        gs_json_string(j, "sentence", x->allocator.sentence);
        gs_json_end_object(j);
    } else {
        gs_json_null(j, "allocator");
    }
    gs_json_end_object(j);
}

/* What a failure found, and the verdict (oom.c, verdict.c). */
static void postmortem(struct gs_json *j, const struct gs_report *rep,
                       const struct gs_failure_found *x)
{
    const struct gs_postmortem *pm = x->pm;
    verdict(j, x);
    if (!pm) {
        gs_json_null(j, "postmortem");
        return;
    }
    gs_json_begin_object(j, "postmortem");
    gs_json_uint(j, "pool_unused_bytes", pm->pool_unused);
    gs_json_begin_array(j, "held");
    for (unsigned k = 0; k < pm->nheld; k++)
        raw_site(j, rep, pm->held_site[k], pm->held_bytes[k], &pm->held_count[k]);
    gs_json_end_array(j);
    gs_json_begin_object(j, "grew");
    if (pm->ngrew || rep->found->growth->n) {
        gs_json_uint(j, "since_ns", pm->grew_from_ns);
        if (pm->grew_by_steps)
            gs_json_uint(j, "since_step", pm->grew_from_step);
        else
            gs_json_null(j, "since_step");
    }
    gs_json_begin_array(j, "sites");
    for (unsigned k = 0; k < pm->ngrew; k++)
        raw_site(j, rep, pm->grew_site[k], pm->grew_bytes[k], NULL);
    gs_json_end_array(j);
    gs_json_end_object(j);
    gs_json_end_object(j);
}

static void failures(struct gs_json *j, const struct gs_report *rep)
{
    const struct gs_findings *fd = rep->found;
    gs_json_begin_array(j, "failures");
    for (size_t i = 0; i < fd->nfailures; i++) {
        const struct gs_failure_found *x = &fd->failures[i];
        const struct gs_failure *f = x->f;
        gs_json_begin_object(j, NULL);
        gs_json_uint(j, "time_ns", f->time_ns);
        gs_json_string(j, "api", gs_api_name(f->api));
        gs_json_int(j, "device", f->device);
        gs_json_uint(j, "requested_bytes", f->requested);
        gs_json_uint(j, "result", f->result);
        gs_json_string(j, "result_name", gs_result_name(f->result));
        bytes_or_null(j, "free_bytes", f->free_bytes);
        bytes_or_null(j, "total_bytes", f->total_bytes);
        gs_json_uint(j, "process_bytes", f->process_live_bytes);
        frames(j, rep, f->stack_id);
        gs_json_string(j, "thread", gs_replay_thread_name(rep->replay, f->thread));
        backward_of(j, rep, f->stack_id);
        gs_json_string(j, "outcome", gs_outcome_name(f->outcome));
        if (f->outcome == GS_OUTCOME_RECOVERED || f->outcome == GS_OUTCOME_PROBE) {
            gs_json_begin_object(j, "recovery");
            gs_json_uint(j, "after_ns", f->retry_ns);
            gs_json_uint(j, "bytes", f->retry_bytes);
            gs_json_uint(j, "freed_bytes", f->freed_bytes);
            gs_json_uint(j, "frees", f->frees);
            gs_json_end_object(j);
        } else {
            gs_json_null(j, "recovery");
        }
        postmortem(j, rep, x);
        char path[1024];
        gs_json_string(j, "range", gs_ranges_failure_path(rep, i, path, sizeof path) ? path : NULL);
        gs_roles_json_failure(j, x);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
}

/* How many failures of each outcome (outcome.c), what the recovered cost,
 * the probes held apart, and the results refused. */
static void failure_outcomes(struct gs_json *j, const struct gs_findings *fd)
{
    const struct gs_outcomes *o = fd->outcome_counts;
    gs_json_begin_object(j, "failure_outcomes");
    gs_json_uint(j, "unrecovered", fd->unrecovered);
    gs_json_uint(j, "recovered", o->count[GS_OUTCOME_RECOVERED]);
    gs_json_uint(j, "probe", o->count[GS_OUTCOME_PROBE]);
    gs_json_uint(j, "refused", o->count[GS_OUTCOME_REFUSED]);
    gs_json_begin_object(j, "retries");
    gs_json_uint(j, "count", o->retries);
    gs_json_uint(j, "ns", o->retry_ns);
    gs_json_uint(j, "freed_bytes", o->retry_freed_bytes);
    gs_json_uint(j, "frees", o->retry_frees);
    gs_json_end_object(j);
    gs_json_begin_object(j, "probes");
    gs_json_uint(j, "allocations", o->probes);
    gs_json_uint(j, "bytes", o->probe_bytes);
    gs_json_uint(j, "largest_bytes", o->probe_largest);
    gs_json_uint(j, "largest_time_ns", o->probe_largest_ns);
    gs_json_end_object(j);
    gs_json_begin_array(j, "refused_results");
    for (size_t i = 0; i < fd->nfailures; i++) {
        const struct gs_failure *f = fd->failures[i].f;
        int first = f->outcome == GS_OUTCOME_REFUSED;
        for (size_t k = 0; first && k < i; k++)
            first = !(fd->failures[k].f->outcome == GS_OUTCOME_REFUSED &&
                      fd->failures[k].f->result == f->result);
        if (!first)
            continue;
        uint64_t n = 0;
        for (size_t k = i; k < fd->nfailures; k++)
            n += fd->failures[k].f->outcome == GS_OUTCOME_REFUSED &&
                 fd->failures[k].f->result == f->result;
        gs_json_begin_object(j, NULL);
        gs_json_uint(j, "result", f->result);
        gs_json_string(j, "result_name", gs_result_name(f->result));
        gs_json_uint(j, "count", n);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    gs_json_end_object(j);
}

/* ---- marks and steps (marks.c) ---- */

static void label(struct gs_json *j, const struct gs_marks *m, uint32_t idx)
{
    gs_json_string(j, "label", idx < m->nlabels ? m->labels[idx].label : NULL);
}

static void marks(struct gs_json *j, const struct gs_report *rep)
{
    const struct gs_marks *m = rep->found->marks;
    uint64_t first_mark = m->marks > GS_MARKS_KEPT ? m->marks - GS_MARKS_KEPT : 0;
    uint64_t first_step = m->nsteps > GS_STEPS_KEPT ? m->nsteps - GS_STEPS_KEPT : 0;
    gs_json_begin_array(j, "marks");
    for (uint64_t i = first_mark; m->recent && i < m->marks; i++) {
        const struct gs_mark_item *it = &m->recent[i % GS_MARKS_KEPT];
        gs_json_begin_object(j, NULL);
        label(j, m, it->label);
        static const char *const kinds[] = {"mark", "step_end", "range"};
        gs_json_string(j, "kind", kinds[it->kind <= GS_MARK_RANGE ? it->kind : 0]);
        gs_json_uint(j, "time_ns", it->time_ns);
        gs_json_uint(j, "device_bytes", it->device_bytes);
        gs_json_uint(j, "block_bytes", it->block_bytes);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    gs_json_begin_array(j, "steps");
    for (uint64_t i = first_step; m->steps && i < m->nsteps; i++) {
        const struct gs_step *st = &m->steps[i % GS_STEPS_KEPT];
        gs_json_begin_object(j, NULL);
        label(j, m, st->label);
        gs_json_uint(j, "start_ns", st->start_ns);
        gs_json_uint(j, "end_ns", st->end_ns);
        gs_json_uint(j, "peak_bytes", st->peak_bytes);
        gs_json_uint(j, "allocated_bytes", st->allocated_bytes);
        gs_json_uint(j, "freed_bytes", st->freed_bytes);
        gs_json_int(j, "growth_bytes", st->growth_bytes);
        gs_json_bool(j, "to_the_end", st->cut != 0);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    gs_json_begin_array(j, "mark_labels");
    for (size_t i = 0; i < m->nlabels; i++) {
        const struct gs_mark_label *l = &m->labels[i];
        gs_json_begin_object(j, NULL);
        gs_json_string(j, "label", l->label);
        gs_json_uint(j, "marks", l->marks);
        gs_json_uint(j, "nvtx_marks", l->nvtx_marks);
        gs_json_uint(j, "steps", l->steps);
        gs_json_bool(j, "last_step_to_the_end", l->cut != 0);
        gs_json_uint(j, "first_time_ns", l->first_ns);
        gs_json_uint(j, "last_time_ns", l->last_ns);
        gs_json_uint(j, "peak_bytes", l->max_peak);
        gs_json_uint(j, "peak_step_end_ns", l->max_peak_end_ns);
        gs_json_uint(j, "allocated_bytes", l->allocated);
        gs_json_uint(j, "freed_bytes", l->freed);
        gs_json_int(j, "growth_bytes", l->growth);
        gs_json_int(j, "max_growth_bytes", l->max_growth);
        gs_json_uint(j, "growing_steps", l->growing);
        frames(j, rep, l->stack_id);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    gs_json_begin_object(j, "mark_counts");
    gs_json_uint(j, "marks", m->marks);
    gs_json_uint(j, "marks_listed", m->marks - first_mark);
    gs_json_uint(j, "steps", m->nsteps);
    gs_json_uint(j, "steps_listed", m->nsteps - first_step);
    gs_json_uint(j, "labels", m->nlabels);
    gs_json_uint(j, "marks_of_labels_not_followed", m->labels_dropped);
    gs_json_end_object(j);
}

/* ---- blocks and fragmentation (blocks.c) ---- */

static void blocks(struct gs_json *j, const struct gs_report *rep)
{
    const struct gs_blocks *b = rep->found->blocks;
    if (!b->seen) {
        gs_json_null(j, "blocks");
        return;
    }
    gs_json_begin_object(j, "blocks");
    gs_json_uint(j, "allocations", b->allocs);
    gs_json_uint(j, "frees", b->frees);
    gs_json_uint(j, "frees_unknown", b->frees_unknown);
    gs_json_begin_object(j, "peak");
    gs_json_uint(j, "bytes", b->peak_bytes);
    gs_json_uint(j, "time_ns", b->peak_time_ns);
    ranked_sites(j, rep, 1, GS_METRIC_PEAK);
    gs_json_end_object(j);
    gs_json_begin_object(j, "leaks");
    gs_json_uint(j, "bytes", b->live_bytes);
    gs_json_uint(j, "count", b->live_count);
    ranked_sites(j, rep, 1, GS_METRIC_LEAK);
    gs_json_end_object(j);
    gs_json_end_object(j);
}

static void frag_fields(struct gs_json *j, const struct gs_frag *f)
{
    gs_json_uint(j, "time_ns", f->time_ns);
    gs_json_int(j, "device", f->device);
    gs_json_uint(j, "segments", f->segments);
    gs_json_uint(j, "segment_bytes", f->segment_bytes);
    gs_json_uint(j, "block_bytes", f->block_bytes);
    gs_json_uint(j, "free_bytes", gs_frag_free(f));
    gs_json_uint(j, "largest_free_bytes", f->largest_free);
    gs_json_double(j, "fragmentation", gs_frag_ratio(f));
    gs_json_uint(j, "blocks_outside_segments_bytes", f->outside_bytes);
}

/* The two layers of memory held at each growth sample (growth.c). */
static void over_time(struct gs_json *j, const struct gs_findings *fd)
{
    const struct gs_growth *g = fd->growth;
    gs_json_begin_array(j, "over_time");
    for (unsigned k = 0; k < g->n; k++) {
        const struct gs_layers *l = &g->layers[k];
        struct gs_frag f = {.segment_bytes = l->segment_bytes, .block_bytes = l->block_bytes,
                            .largest_free = l->largest_free};
        uint64_t free_bytes = gs_frag_free(&f);
        gs_json_begin_object(j, NULL);
        gs_json_uint(j, "time_ns", g->time_ns[k]);
        if (g->by_steps)
            gs_json_uint(j, "step", g->step[k]);
        else
            gs_json_null(j, "step");
        gs_json_uint(j, "segment_bytes", l->segment_bytes);
        gs_json_uint(j, "block_bytes", l->block_bytes);
        gs_json_uint(j, "free_bytes", free_bytes);
        gs_json_uint(j, "largest_free_bytes", l->largest_free);
        gs_json_double(j, "fragmentation", gs_frag_ratio(&f));
        gs_json_uint(j, "pool_reserved_bytes", l->pool_reserved);
        gs_json_uint(j, "pool_used_bytes", l->pool_used);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
}

static void fragmentation(struct gs_json *j, const struct gs_findings *fd)
{
    const struct gs_blocks *b = fd->blocks;
    gs_json_begin_object(j, "fragmentation");
    if (b->at_peak.present) {
        gs_json_begin_object(j, "at_peak");
        frag_fields(j, &b->at_peak);
        gs_json_end_object(j);
    } else {
        gs_json_null(j, "at_peak");
    }
    gs_json_begin_array(j, "at_failures");
    for (size_t i = 0; i < fd->nfailures; i++) {
        const struct gs_failure_found *x = &fd->failures[i];
        if (!x->frag)
            continue;
        gs_json_begin_object(j, NULL);
        gs_json_uint(j, "failure", x->index);
        gs_json_uint(j, "requested_bytes", x->f->requested);
        frag_fields(j, x->frag);
        gs_json_bool(j, "fits_in_free", x->fits_in_segments_free);
        gs_json_bool(j, "fits_in_largest_free", x->fits_in_largest_gap);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
    over_time(j, fd);
    gs_json_begin_object(j, "pools_at_peak");
    gs_json_uint(j, "reserved_bytes", fd->pool_reserved_at_peak);
    gs_json_uint(j, "used_bytes", fd->pool_used_at_peak);
    gs_json_uint(j, "free_bytes", fd->pool_reserved_at_peak > fd->pool_used_at_peak
                                      ? fd->pool_reserved_at_peak - fd->pool_used_at_peak : 0);
    gs_json_end_object(j);
    gs_json_begin_object(j, "rounding");
    gs_json_uint(j, "page_bytes", GS_DEVICE_PAGE);
    gs_json_uint(j, "waste_bytes_at_peak", fd->rounding_at_peak);
    gs_json_uint(j, "waste_bytes_at_end", fd->rounding_at_end);
    gs_json_end_object(j);
    gs_json_end_object(j);
}

/* A rotated trace: the history before this point is summarized, not replayed. */
static void checkpoint(struct gs_json *j, const struct gs_checkpoint_state *c)
{
    if (!c->present) {
        gs_json_null(j, "checkpoint");
        return;
    }
    gs_json_begin_object(j, "checkpoint");
    gs_json_uint(j, "time_ns", c->time_ns);
    gs_json_uint(j, "events", c->events);
    gs_json_end_object(j);
}

/* Whether the report is whole, and what it lacks (findings/warnings.h). */
static void warnings(struct gs_json *j, const struct gs_warnings *w)
{
    gs_json_bool(j, "complete", !w || w->n == 0);
    gs_json_begin_array(j, "warnings");
    for (size_t i = 0; w && i < w->n; i++) {
        gs_json_begin_object(j, NULL);
        gs_json_string(j, "kind", gs_warning_kind_name(w->w[i].kind));
        gs_json_string(j, "message", w->w[i].text);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
}

static void trace(struct gs_json *j, const struct gs_report *rep)
{
    const struct gs_reader_stats *st = rep->stats;
    gs_json_begin_object(j, "trace");
    gs_json_string(j, "path", rep->path);
    gs_json_uint(j, "format_version", rep->info->version);
    gs_json_bool(j, "complete", gs_trace_complete(st));
    gs_json_bool(j, "finished", st->end_seen);
    gs_json_bool(j, "live", gs_trace_live(rep->info, st));
    gs_json_uint(j, "bytes", st->bytes);
    gs_json_uint(j, "blocks", st->chunks); /* the old names of the two after them, kept */
    gs_json_uint(j, "damaged_blocks", st->damaged_chunks);
    gs_json_uint(j, "chunks", st->chunks);
    gs_json_uint(j, "damaged_chunks", st->damaged_chunks);
    gs_json_uint(j, "damaged_records", st->damaged_records);
    gs_json_uint(j, "truncated_at", st->truncated_at);
    gs_json_string(j, "ending", gs_trace_ending(rep->info, st));
    static const char *const ring_use[] = {"none", "read", "missing", "unusable"};
    gs_json_begin_object(j, "ring");
    gs_json_string(j, "use", ring_use[st->ring_use]);
    gs_json_string(j, "path", st->ring_use == GS_RING_NONE ? NULL : st->ring_path);
    gs_json_string(j, "problem", st->ring_problem[0] ? st->ring_problem : NULL);
    gs_json_end_object(j);
    gs_json_uint(j, "recovered_events", st->recovered_events);
    gs_json_uint(j, "lost_events", st->ring_lost + st->end_lost);
    if (st->write_failed) {
        gs_json_begin_object(j, "write_failed");
        gs_json_uint(j, "offset", st->fail_offset);
        gs_json_uint(j, "time_ns", st->fail_time_ns);
        gs_json_string(j, "error", strerror(st->fail_errno));
        gs_json_end_object(j);
    } else {
        gs_json_null(j, "write_failed");
    }
    checkpoint(j, rep->found->checkpoint);
    gs_json_end_object(j);
}

/* Leak suspects by growth (growth.c, suspects.c), most growth first. */
static void suspects(struct gs_json *j, const struct gs_report *rep)
{
    const struct gs_findings *fd = rep->found;
    const struct gs_growth *g = fd->growth;
    const struct gs_suspect *sus = fd->suspects;
    size_t nsus = fd->nsuspects;
    gs_json_begin_object(j, "growth");
    gs_json_string(j, "sampled_at", !g->n ? NULL : g->by_steps ? "steps" : "time");
    gs_json_string(j, "step_label", fd->growth_step_label);
    gs_json_uint(j, "samples", g->n);
    gs_json_end_object(j);
    gs_json_begin_array(j, "suspects");
    for (size_t i = 0; i < nsus && i < rep->opt->top; i++) {
        const struct gs_suspect *s = &sus[i];
        gs_json_begin_object(j, NULL);
        gs_json_uint(j, "growth_bytes", s->growth_bytes);
        if (s->bytes_per_step < 0)
            gs_json_null(j, "bytes_per_step");
        else
            gs_json_double(j, "bytes_per_step", s->bytes_per_step);
        gs_json_double(j, "bytes_per_second", s->bytes_per_second);
        char rate[64];
        gs_json_string(j, "rate",
                       gs_suspect_rate(s, fd->duration_ns, rate, sizeof rate));
        gs_json_uint(j, "first_seen_ns", s->first_seen_ns);
        gs_json_uint(j, "lowest_ns", s->from_ns);
        gs_json_uint(j, "rising_intervals", s->rising);
        gs_json_uint(j, "intervals", s->intervals);
        gs_json_uint(j, "bytes", s->live_bytes);
        gs_json_uint(j, "count", s->live_count);
        gs_json_string(j, "api", gs_api_name(fd->sites[s->site].api));
        frames(j, rep, s->stack_id);
        threads(j, rep, s->stack_id, &s->threads);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
}

/* The modules that named no function for a frame given, and why. */
static void unnamed_modules(struct gs_json *j, const struct gs_report *rep)
{
    static const char *const why[] = {
        [GS_SYM_NAMED] = "named", [GS_SYM_NOT_FOUND] = "not_found",
        [GS_SYM_NOT_ELF] = "not_elf", [GS_SYM_REBUILT] = "rebuilt",
        [GS_SYM_STRIPPED] = "stripped"};
    struct gs_sym_unnamed u[64];
    size_t n = gs_sym_unnamed(rep->sym, u, 64);
    gs_json_begin_array(j, "unnamed_modules");
    for (size_t i = 0; i < n && i < 64; i++) {
        gs_json_begin_object(j, NULL);
        gs_json_string(j, "path", u[i].path);
        gs_json_string(j, "why", why[u[i].why]);
        gs_json_uint(j, "addresses", u[i].unnamed);
        gs_json_end_object(j);
    }
    gs_json_end_array(j);
}

void gs_report_json(FILE *out, const struct gs_report *rep)
{
    const struct gs_findings *fd = rep->found;
    struct gs_json j = {.out = out};

    gs_json_begin_object(&j, NULL);
    process(&j, rep);
    allocator(&j, rep);
    events(&j, fd);
    gs_json_begin_object(&j, "peak");
    gs_json_uint(&j, "bytes", fd->peak_bytes);
    gs_json_uint(&j, "time_ns", fd->peak_time_ns);
    sites(&j, rep, GS_METRIC_PEAK);
    gs_json_end_object(&j);
    gs_roles_json(&j, fd);
    devices(&j, fd);
    timeline(&j, fd);
    capacity(&j, fd);
    categories(&j, fd);
    pools(&j, fd);
    graphs(&j, rep);
    gs_json_begin_object(&j, "leaks");
    gs_json_uint(&j, "bytes", fd->leak_bytes);
    gs_json_uint(&j, "count", fd->leak_count);
    sites(&j, rep, GS_METRIC_LEAK);
    suspects(&j, rep);
    gs_json_end_object(&j);
    failures(&j, rep);
    failure_outcomes(&j, fd);
    marks(&j, rep);
    gs_ranges_json(&j, rep);
    blocks(&j, rep);
    fragmentation(&j, fd);
    unnamed_modules(&j, rep); /* after every frame given */
    trace(&j, rep);
    warnings(&j, &fd->warnings);
    gs_json_end_object(&j);
}
