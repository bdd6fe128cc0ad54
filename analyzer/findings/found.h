/*
 * found.h - the findings of one replayed trace (struct gs_findings,
 * found.c): every judgement a screen gives, made once. The text report, its
 * JSON, the HTML and the other exports, the gate (--fail-if), diff, plan
 * and ranks read this structure and only format it: the figures of the run,
 * the peak and the call sites that held it, what was never freed and where,
 * the leak suspects, the cards the run fits on, memory by role, each
 * failed allocation with its outcome and both verdicts (its cause, and the
 * allocator's what-if), the fragmentation at the peak and at each failure,
 * the NVTX ranges, the warnings; and, read-only, the parts of the replay
 * they rest on (devices, kinds, pools, graphs, marks and steps, blocks,
 * growth samples, timelines).
 *
 * The findings depend on the stack view (--native merges no Python frames
 * into stacks, so sites and verdicts name other frames): they are made for
 * one view. Each field is commented below; docs/architecture.md "Findings"
 * says how the screens use them.
 *
 * Included by: analyzer/findings/found.c, gate.c; the analyzer's layers
 * above findings (report, export, cmd).
 */
#ifndef GPUSHIM_FINDINGS_FOUND_H
#define GPUSHIM_FINDINGS_FOUND_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/trace/trace.h" /* GS_MAX_DEVICES */
#include "analyzer/findings/findings.h"
#include "analyzer/findings/roles.h" /* GS_ROLE_COUNT */
#include "analyzer/findings/warnings.h"
#include "analyzer/whatif/answer.h"

struct gs_trace_info;
struct gs_reader_stats;
struct gs_replay;
struct gs_symbolizer;
struct gs_failure;
struct gs_postmortem;
struct gs_frag;
struct gs_growth;
struct gs_outcomes;
struct gs_device_usage;
struct gs_kind_usage;
struct gs_pool_usage;
struct gs_graphs;
struct gs_marks;
struct gs_blocks;
struct gs_checkpoint_state;
struct gs_timeline;
struct gs_site;
struct gs_ranges;

/* Where a failed request would have fit inside the segments of the
 * program's own allocator at that moment (blocks.c). */
enum gs_gap_fit {
    GS_GAP_UNKNOWN = 0, /* the program had given no blocks then */
    GS_GAP_ONE,         /* in one free gap of a segment already held */
    GS_GAP_ALL_FREE,    /* in the free space inside them, but in no one gap: fragmentation */
    GS_GAP_NONE,        /* not even in all the free space inside them */
};

/* A failed allocation and what was judged of it. */
struct gs_failure_found {
    const struct gs_failure *f; /* when, what, where, its result and outcome (outcome.h) */
    size_t index;               /* in the replay's failures (as the JSON numbers them) */
    int judged;                 /* unrecovered: cause is set (and allocator where it is) */
    struct gs_oom_verdict cause; /* verdict.c */
    int has_allocator;          /* the what-if replay had the request (answer.c) */
    struct gs_wi_verdict allocator;
    const char *allocator_setting;  /* the setting that served it; NULL: none */
    const char *allocator_compared; /* the setting its needs are of */
    const struct gs_postmortem *pm; /* what was held and grew then (oom.c); NULL: none */
    const struct gs_frag *frag;     /* the program's segments then (blocks.c); NULL: none */
    enum gs_gap_fit gap;
    int fits_in_segments_free, fits_in_largest_gap; /* the two tests gap is made of */
    int has_roles;                  /* memory by role then (roles.c, the first failures) */
    uint64_t roles[GS_ROLE_COUNT];
    int fits_in_held_free;          /* it would have fit in the free bytes the process held */
};

struct gs_findings {
    /* the run */
    uint64_t duration_ns; /* as the trace's end says, else its last event */
    uint64_t allocations, frees, failed, frees_unknown;
    uint64_t refs;        /* references taken on live allocations (mappings, imports) */
    uint64_t unrecovered; /* failed allocations the program did not get past */
    char outcomes[160];   /* "1 unrecovered; 2 recovered, 1 probe" when not all were
                           * unrecovered; else "" */
    struct gs_alloc_mode mode; /* what the framework's allocator lets the trace see */

    /* the peak of device memory, and the call sites live then, most first */
    uint64_t peak_bytes, peak_time_ns;
    uint64_t largest_device_peak; /* the largest of one device's peaks */
    uint64_t rounding_at_peak;    /* bytes the 2 MiB pages added then */
    uint64_t rounding_at_end;     /* and at the end */
    uint64_t pool_reserved_at_peak, pool_used_at_peak; /* all stream-ordered pools */
    struct gs_report_site *peak_sites;
    size_t npeak_sites;

    /* never freed, and where */
    uint64_t leak_bytes, leak_count;
    struct gs_report_site *leak_sites;
    size_t nleak_sites;

    /* leak suspects, most growth first (suspects.c), and how it was sampled */
    struct gs_suspect *suspects;
    size_t nsuspects;
    const struct gs_growth *growth;
    const char *growth_step_label; /* sampled at steps of this label; NULL: by time */

    /* the cards the run fits on (cards.c), and the sentence every screen gives */
    struct gs_fit fit;
    char fit_text[512];

    /* every failed allocation kept, in order */
    struct gs_failure_found *failures;
    size_t nfailures;
    const struct gs_outcomes *outcome_counts; /* recovered, probes, refused, retries */

    /* the program's own allocator: its blocks' sites at their peak and at
     * the end, most first (none without blocks) */
    struct gs_report_site *block_peak_sites, *block_leak_sites;
    size_t nblock_peak_sites, nblock_leak_sites;

    /* memory by role at the peak (roles.c) */
    int roles_attached;         /* the analysis ran: a screen says why roles are not told */
    const char *roles_not_told; /* why they are not (NULL: they are told) */
    enum gs_roles_basis roles_basis;
    uint64_t roles_at_peak[GS_ROLE_COUNT];
    size_t roles_largest[GS_ROLE_COUNT]; /* the raw site holding most of each; SIZE_MAX */
    char roles_note[1024]; /* what that rests on and leaves open: lifetimes alone, the
                            * largest site unclassified and why; "" when neither */

    /* memory by NVTX range (ranges.c): the ranges' tree and what the run
     * was inside at its end and at the failures */
    const struct gs_ranges *ranges;

    /* what the report lacks: said by every screen */
    struct gs_warnings warnings;

    /* the replay's parts the findings rest on, read-only */
    const struct gs_site *sites; /* raw sites, as post-mortems name them (model.h) */
    size_t nsites;
    const struct gs_device_usage *devices; /* [GS_MAX_DEVICES + 1], the last: unknown */
    const struct gs_kind_usage *kinds;     /* [GS_KIND_COUNT] */
    const struct gs_pool_usage *pools;
    size_t npools;
    const struct gs_graphs *graphs;
    const struct gs_marks *marks;
    const struct gs_blocks *blocks;
    const struct gs_checkpoint_state *checkpoint;
    /* device memory over time (timeline.h): the process's, each device's
     * (NULL where it never changed), and the one bucket width and count
     * that lines them up */
    const struct gs_timeline *timeline;
    const struct gs_timeline *device_timeline[GS_MAX_DEVICES + 1];
    uint64_t timeline_width_ns;
    unsigned timeline_n;
    unsigned ndevices; /* devices present (with any device memory) */

    /* what they were made with */
    int judged; /* gs_findings_make: the judgements are made; gs_findings_figures: 0 */
    const struct gs_wi_answer *whatif; /* NULL: no what-if replay */
};

/* The run's figures alone, with no judgement that needs names (no sites
 * ranked, suspects, fit, verdicts or roles: judged 0): what a command
 * over many traces reads (ranks, plan). Free with gs_findings_free. */
void gs_findings_figures(struct gs_findings *f, const struct gs_trace_info *info,
                         const struct gs_reader_stats *st, const struct gs_replay *r);
/* The findings of r, its last event in (gs_replay_finish), read from info
 * and st, with sym for names in view, and the what-if replay for the
 * failures' allocator verdicts (NULL: none). The warnings are worked out
 * last, so that they count the analyzer's own memory shortage while
 * finding. Free with gs_findings_free (every field is set, if only to
 * none, whatever memory there was). */
void gs_findings_make(struct gs_findings *f, const struct gs_trace_info *info,
                      const struct gs_reader_stats *st, const struct gs_replay *r,
                      struct gs_symbolizer *sym, enum gs_stack_view view,
                      const struct gs_wi_answer *whatif);
void gs_findings_free(struct gs_findings *f);

/* The sites ranked by metric (GS_METRIC_PEAK or GS_METRIC_LEAK), the
 * device allocations' or, with blocks, the program's own blocks'; their
 * count in *n. GS_METRIC_ALLOCATED is no finding: NULL, 0. */
const struct gs_report_site *gs_found_sites(const struct gs_findings *f, int blocks,
                                            enum gs_site_metric metric, size_t *n);

/* A fragmentation sample as every screen says it, into buf: "3 segments of
 * 24.00 MiB hold 18.00 MiB of blocks: 6.00 MiB free inside them, the
 * largest gap 4.00 MiB (fragmentation 0.33)", and the bytes of blocks in no
 * segment. Returns buf. */
const char *gs_frag_text(const struct gs_frag *f, char *buf, size_t sz);
/* Where a failed request would have fit, after "so the request would ". */
const char *gs_gap_text(enum gs_gap_fit gap);

/* A mark's label as the screens name it: its text, "(empty)", or
 * "(other)" for one past the labels followed. */
struct gs_mark_label;
const char *gs_mark_label_text(const struct gs_marks *m, uint32_t idx);
/* A label's change of device memory a step, on average over its steps
 * that the end of the run did not cut: 1 with *avg, or 0 (no such step). */
int gs_label_step_growth(const struct gs_mark_label *l, int64_t *avg);

/* Free bytes inside the segments of a fragmentation sample, and how broken
 * up they are: 1 - largest gap / free (0 with nothing free). */
uint64_t gs_frag_free(const struct gs_frag *f);
double gs_frag_ratio(const struct gs_frag *f);

#endif
