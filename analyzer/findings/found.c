/*
 * found.c - a replayed trace's findings, made once (found.h, struct
 * gs_findings): the sites ranked, the suspects, the fit, each failure's
 * verdicts and fragmentation, the outcomes in words, the warnings. The
 * judgements themselves are their own files' (sites.c, suspects.c,
 * cards.c, verdict.c, oom.c, blocks.c, warnings.c); this file gathers
 * them, and the screens format what it gathered.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"
#include "analyzer/findings/ranges.h"
#include "analyzer/util/bytes.h"
#include "analyzer/findings/found.h"

uint64_t gs_frag_free(const struct gs_frag *f)
{
    return f->segment_bytes > f->block_bytes ? f->segment_bytes - f->block_bytes : 0;
}

double gs_frag_ratio(const struct gs_frag *f)
{
    uint64_t free_bytes = gs_frag_free(f);
    return free_bytes ? 1.0 - (double)f->largest_free / (double)free_bytes : 0.0;
}

const struct gs_report_site *gs_found_sites(const struct gs_findings *f, int blocks,
                                            enum gs_site_metric metric, size_t *n)
{
    if (metric == GS_METRIC_PEAK) {
        *n = blocks ? f->nblock_peak_sites : f->npeak_sites;
        return blocks ? f->block_peak_sites : f->peak_sites;
    }
    if (metric == GS_METRIC_LEAK) {
        *n = blocks ? f->nblock_leak_sites : f->nleak_sites;
        return blocks ? f->block_leak_sites : f->leak_sites;
    }
    *n = 0;
    return NULL;
}

const char *gs_frag_text(const struct gs_frag *f, char *buf, size_t sz)
{
    char a[32], b[32], c[32], d[32];
    int n;
    if (!f->segments)
        n = snprintf(buf, sz, "no segment holds a block");
    else
        n = snprintf(buf, sz,
                     "%" PRIu64 " segment%s of %s hold%s %s of blocks: %s free inside %s, the "
                     "largest gap %s (fragmentation %.2f)",
                     f->segments, f->segments == 1 ? "" : "s",
                     gs_human_bytes(f->segment_bytes, a, sizeof a), f->segments == 1 ? "s" : "",
                     gs_human_bytes(f->block_bytes, b, sizeof b),
                     gs_human_bytes(gs_frag_free(f), c, sizeof c),
                     f->segments == 1 ? "it" : "them", gs_human_bytes(f->largest_free, d, sizeof d),
                     gs_frag_ratio(f));
    if (f->outside_bytes && n >= 0 && (size_t)n < sz)
        snprintf(buf + n, sz - (size_t)n, "; %s of blocks lie in no segment",
                 gs_human_bytes(f->outside_bytes, a, sizeof a));
    return buf;
}

const char *gs_mark_label_text(const struct gs_marks *m, uint32_t idx)
{
    if (idx >= m->nlabels)
        return "(other)";
    return m->labels[idx].label[0] ? m->labels[idx].label : "(empty)";
}

int gs_label_step_growth(const struct gs_mark_label *l, int64_t *avg)
{
    /* steps from a checkpoint may be past INT64_MAX: never INT64_MIN / -1 */
    uint64_t whole = l->steps - (l->cut != 0);
    if (!whole)
        return 0;
    *avg = whole > INT64_MAX ? 0 : l->growth / (int64_t)whole;
    return 1;
}

const char *gs_gap_text(enum gs_gap_fit gap)
{
    switch (gap) {
    case GS_GAP_ONE: return "have fit in one free gap of a segment already held";
    case GS_GAP_ALL_FREE:
        return "have fit in the free space inside the segments held, but in no one gap: "
               "fragmentation";
    case GS_GAP_NONE: return "not have fit even in all the free space inside the segments held";
    default: return "";
    }
}

/* What became of the failed allocations in a few words, when they were not
 * all unrecovered; else "". */
static void outcomes_text(const struct gs_replay *r, uint64_t unrecovered, char *buf, size_t sz)
{
    buf[0] = 0;
    if (unrecovered == r->failed)
        return;
    size_t n = (size_t)snprintf(buf, sz, "%" PRIu64 " unrecovered", unrecovered);
    static const struct {
        enum gs_outcome o;
        const char *one, *many;
    } kinds[] = {{GS_OUTCOME_RECOVERED, "recovered", "recovered"},
                 {GS_OUTCOME_PROBE, "probe", "probes"},
                 {GS_OUTCOME_REFUSED, "refused", "refused"}};
    const char *sep = "; ";
    for (size_t k = 0; k < 3 && n < sz; k++) {
        uint64_t c = r->outcomes.count[kinds[k].o];
        if (!c)
            continue;
        n += (size_t)snprintf(buf + n, sz - n, "%s%" PRIu64 " %s", sep, c,
                              c == 1 ? kinds[k].one : kinds[k].many);
        sep = ", ";
    }
}

/* What the breakdown at the peak rests on and leaves open, in a sentence:
 * roles told from lifetimes alone, and the largest site left unclassified
 * and why; "" when neither. */
static void roles_note(struct gs_findings *fd, const struct gs_replay *r,
                       struct gs_symbolizer *sym, enum gs_stack_view view)
{
    char *buf = fd->roles_note;
    size_t sz = sizeof fd->roles_note, len = 0;
    buf[0] = 0;
    if (fd->roles_basis == GS_BASIS_LIFETIMES) {
        const char *why = NULL;
        gs_role_told(r, GS_ROLE_ACTIVATIONS, &why);
        len = (size_t)snprintf(buf, sz, "told from lifetimes alone: %s", why ? why : "");
    }
    size_t u = fd->roles_largest[GS_ROLE_UNCLASSIFIED];
    if (u == SIZE_MAX || len >= sz)
        return;
    char where[200], a[32], b[32], part[48];
    gs_site_where(r, sym, view, r->sites[u].stack_id, where, sizeof where);
    uint64_t count, at = gs_site_peak_bytes(r, &r->sites[u], &count);
    if (at == fd->roles_at_peak[GS_ROLE_UNCLASSIFIED])
        snprintf(part, sizeof part, "all of it");
    else
        snprintf(part, sizeof part, "%s of it", gs_human_bytes(at, b, sizeof b));
    snprintf(buf + len, sz - len, "%sunclassified %s, %s at %s: %s", len ? "; " : "",
             gs_human_bytes(fd->roles_at_peak[GS_ROLE_UNCLASSIFIED], a, sizeof a), part, where,
             gs_role_why_text(gs_site_role_why(r, sym, u)));
}

static void judge_roles(struct gs_findings *fd, const struct gs_trace_info *info,
                        const struct gs_replay *r, struct gs_symbolizer *sym,
                        enum gs_stack_view view)
{
    fd->roles_attached = gs_roles_of(r) != NULL;
    fd->roles_not_told = gs_roles_not_told(info, r);
    if (fd->roles_not_told)
        return;
    gs_roles_at_peak(r, sym, fd->roles_at_peak, fd->roles_largest);
    fd->roles_basis = gs_roles_basis(r);
    roles_note(fd, r, sym, view);
    for (size_t i = 0; i < fd->nfailures; i++)
        fd->failures[i].has_roles = gs_roles_at_failure(r, sym, i, fd->failures[i].roles);
}

static void judge_failure(struct gs_findings *fd, const struct gs_replay *r, size_t i,
                          struct gs_symbolizer *sym, enum gs_stack_view view)
{
    struct gs_failure_found *x = &fd->failures[i];
    const struct gs_failure *f = x->f;
    x->pm = gs_failure_postmortem(r, i);
    const struct gs_blocks *b = &r->blocks;
    if (b->seen && i < b->at_failure_cap && b->at_failure[i].present) {
        x->frag = &b->at_failure[i];
        x->fits_in_largest_gap = f->requested <= x->frag->largest_free;
        x->fits_in_segments_free = f->requested <= gs_frag_free(x->frag);
        x->gap = x->fits_in_largest_gap     ? GS_GAP_ONE
                 : x->fits_in_segments_free ? GS_GAP_ALL_FREE
                                            : GS_GAP_NONE;
    }
    if (f->outcome != GS_OUTCOME_UNRECOVERED)
        return;
    x->judged = 1;
    gs_oom_verdict(r, i, fd->suspects, fd->nsuspects, sym, view, &x->cause);
    x->fits_in_held_free = x->cause.held_free && f->requested <= x->cause.held_free;
    const struct gs_wi_answer *a = fd->whatif;
    if (a && gs_wi_verdict(a, f->device, f->time_ns, &x->allocator) == 0) {
        x->has_allocator = 1;
        x->allocator_setting =
            x->allocator.setting == SIZE_MAX ? NULL : a->q.settings[x->allocator.setting].name;
        x->allocator_compared = a->q.settings[0].name;
    }
}

/* The figures, less the warnings (said last, once the rest is made). */
static void figures(struct gs_findings *fd, const struct gs_trace_info *info,
                    const struct gs_reader_stats *st, const struct gs_replay *r)
{
    memset(fd, 0, sizeof *fd);
    fd->duration_ns = gs_trace_duration_ns(st, r->last_time_ns);
    fd->allocations = r->allocations;
    fd->frees = r->frees;
    fd->failed = r->failed;
    fd->frees_unknown = r->frees_unknown;
    fd->refs = r->refs;
    fd->unrecovered = gs_outcome_unrecovered(r);
    outcomes_text(r, fd->unrecovered, fd->outcomes, sizeof fd->outcomes);
    gs_allocator_mode(info, r, &fd->mode);

    fd->peak_bytes = r->peak_bytes;
    fd->peak_time_ns = r->peak_time_ns;
    fd->largest_device_peak = gs_largest_device_peak(r);
    fd->rounding_at_peak = r->rounding_at_peak;
    fd->rounding_at_end = r->rounding_live;
    fd->pool_reserved_at_peak = r->peak_pool_reserved;
    fd->pool_used_at_peak = r->peak_pool_used;
    fd->leak_bytes = gs_replay_leaks(r, &fd->leak_count);
    fd->growth = gs_growth_of(r);
    if (fd->growth->n && fd->growth->by_steps && fd->growth->step_label < r->marks.nlabels)
        fd->growth_step_label = r->marks.labels[fd->growth->step_label].label;

    fd->outcome_counts = &r->outcomes;
    if (r->nfailures) {
        fd->failures = calloc(r->nfailures, sizeof *fd->failures);
        if (fd->failures) /* (the shortage is a warning, below) */
            fd->nfailures = r->nfailures;
    }
    for (size_t i = 0; i < fd->nfailures; i++) {
        fd->failures[i].f = &r->failures[i];
        fd->failures[i].index = i;
    }
    for (int k = 0; k < GS_ROLE_COUNT; k++)
        fd->roles_largest[k] = SIZE_MAX;
    fd->ranges = gs_ranges_of(r);

    fd->sites = r->sites;
    fd->nsites = r->nsites;
    fd->devices = r->devices;
    fd->kinds = r->kinds;
    fd->pools = r->pools;
    fd->npools = r->npools;
    fd->graphs = &r->graphs;
    fd->marks = &r->marks;
    fd->blocks = &r->blocks;
    fd->checkpoint = &r->checkpoint;
    fd->timeline = &r->timeline;
    for (unsigned d = 0; d <= GS_MAX_DEVICES; d++) {
        fd->device_timeline[d] = gs_device_timeline(r, d);
        fd->ndevices += r->devices[d].present != 0;
    }
    gs_timeline_span(r, &fd->timeline_width_ns, &fd->timeline_n);
}

void gs_findings_figures(struct gs_findings *fd, const struct gs_trace_info *info,
                         const struct gs_reader_stats *st, const struct gs_replay *r)
{
    figures(fd, info, st, r);
    gs_warnings_of(info, st, r, &fd->warnings); /* last: it counts the shortages above */
}

void gs_findings_make(struct gs_findings *fd, const struct gs_trace_info *info,
                      const struct gs_reader_stats *st, const struct gs_replay *r,
                      struct gs_symbolizer *sym, enum gs_stack_view view,
                      const struct gs_wi_answer *whatif)
{
    figures(fd, info, st, r);
    fd->judged = 1;
    fd->whatif = whatif;
    fd->npeak_sites = gs_rank_sites(r, sym, view, GS_METRIC_PEAK, &fd->peak_sites);
    fd->nleak_sites = gs_rank_sites(r, sym, view, GS_METRIC_LEAK, &fd->leak_sites);
    fd->nsuspects = gs_growth_suspects(r, sym, view, &fd->suspects);
    gs_card_fit(r, fd->nsuspects, &fd->fit);
    gs_fit_text(&fd->fit, fd->fit_text, sizeof fd->fit_text);
    for (size_t i = 0; i < fd->nfailures; i++)
        judge_failure(fd, r, i, sym, view);
    judge_roles(fd, info, r, sym, view);
    if (r->blocks.seen) {
        fd->nblock_peak_sites =
            gs_rank_block_sites(r, sym, view, GS_METRIC_PEAK, &fd->block_peak_sites);
        fd->nblock_leak_sites =
            gs_rank_block_sites(r, sym, view, GS_METRIC_LEAK, &fd->block_leak_sites);
    }
    gs_warnings_of(info, st, r, &fd->warnings); /* last: it counts the shortages above */
}

void gs_findings_free(struct gs_findings *fd)
{
    free(fd->peak_sites);
    free(fd->leak_sites);
    free(fd->suspects);
    free(fd->failures);
    free(fd->block_peak_sites);
    free(fd->block_leak_sites);
    memset(fd, 0, sizeof *fd);
}
