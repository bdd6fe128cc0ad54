/*
 * findings.h - the analyzer's judgements on a replayed trace: what the
 * framework's allocator settings let the trace see (allocator_view.c), leak suspects
 * (suspects.c, from growth's samples), the verdict on a failed allocation
 * (verdict.c), the cards a peak fits on (cards.c). Growth's sampling and
 * oom's post-mortems have headers of their own (analyzer/findings/growth.h,
 * oom.h).
 *
 * Included by: the analyzer's layers from findings up (findings, report,
 * export, cmd, main.c).
 */
#ifndef GPUSHIM_FINDINGS_FINDINGS_H
#define GPUSHIM_FINDINGS_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/findings/growth.h" /* GS_GROWTH_SAMPLES */
#include "analyzer/symbols/symbols.h"

struct gs_trace_info;
struct gs_replay;
struct gs_symbolizer;

/* ---- allocator_view.c ---- */
enum { GS_FW_PYTORCH = 1, GS_FW_JAX = 2, GS_FW_TENSORFLOW = 4 };
struct gs_alloc_mode {
    unsigned frameworks; /* GS_FW_*: found among the modules loaded */
    int per_tensor;      /* each tensor (buffer) is a driver allocation: 1, 0, or -1 (no
                          * framework known) */
    char note[768];      /* what the sizes are, one sentence per framework; "" if none */
};
/* A JAX run and no PyTorch in it: XLA's allocator is the one to replay. */
int gs_alloc_mode_jax(const struct gs_alloc_mode *m);
void gs_allocator_mode(const struct gs_trace_info *info, const struct gs_replay *r,
                       struct gs_alloc_mode *m);

/* ---- suspects.c ---- */
/* A reported site whose live device bytes keep rising. */
struct gs_suspect {
    uint32_t site, stack_id;   /* a representative raw site and its stack */
    uint64_t growth_bytes;     /* live bytes at the end less the lowest sampled */
    uint64_t live_bytes, live_count; /* at the end */
    uint64_t first_seen_ns;    /* its first allocation */
    uint64_t from_ns;          /* when it held the least */
    double bytes_per_second;   /* least-squares slope over the second half */
    double bytes_per_step;     /* the same against steps; -1 without marks */
    unsigned rising, intervals; /* of the second half's intervals, how many rose */
    unsigned npoints;          /* its live bytes at each sample, then at the end */
    uint64_t v[GS_GROWTH_SAMPLES + 1];
    struct gs_thread_tally threads; /* sorted */
};
/* The suspects, most growth first (caller frees *out). */
size_t gs_growth_suspects(const struct gs_replay *r, struct gs_symbolizer *sym,
                          enum gs_stack_view view, struct gs_suspect **out);
/* How fast s grew, as every screen says it, into buf: "4.00 MiB a step"
 * with steps; else "1.50 MiB/s"; in a run shorter than a second (run_ns:
 * the trace's duration, as the reports give it), "in a run of 0.105 s" (a
 * rate per second of so short a run reads as a flood). */
const char *gs_suspect_rate(const struct gs_suspect *s, uint64_t run_ns, char *buf, size_t sz);
/* The figure that rate is of, for sorting (bytes a step or a second). */
double gs_suspect_rate_value(const struct gs_suspect *s);

/* ---- verdict.c ---- */
enum gs_oom_cause {
    GS_OOM_UNKNOWN = 0,   /* the device's memory figures are unknown */
    GS_OOM_FRAGMENTATION, /* the request would have fit in free memory the process held */
    GS_OOM_LEAK,          /* without the growth of leak suspects it would have fit */
    GS_OOM_OTHER_PROCESS, /* without what others held it would have fit */
    GS_OOM_TOO_LARGE,     /* the process alone needs more than the device has */
};
struct gs_oom_verdict {
    enum gs_oom_cause cause;
    int known;                 /* the device's free and total memory then are known */
    uint64_t shortfall;        /* requested - free (0 if it was free, or unknown) */
    int64_t other_bytes;       /* total - free - held: other processes and the CUDA context */
    uint64_t held_free;        /* free bytes inside what the process held: blocks' segments, pools */
    uint64_t largest_free;     /* the largest free piece of those (blocks' segments) */
    uint64_t leak_growth;      /* what the suspects live then had grown (since their low) */
    uint32_t leak_stack;       /* the suspect that grew most: its stack (0: none) */
    uint64_t leak_site_growth;
    char sentence[512];        /* the verdict, in one sentence */
};
const char *gs_oom_cause_name(enum gs_oom_cause c);
/* The verdict on failures[idx], given the suspects (may be none). */
void gs_oom_verdict(const struct gs_replay *r, size_t idx, const struct gs_suspect *sus,
                    size_t nsus, struct gs_symbolizer *sym, enum gs_stack_view view,
                    struct gs_oom_verdict *v);

/* ---- cards.c ---- */
#define GS_NCARDS 6
struct gs_card {
    const char *name; /* as sold: "80 GB" */
    uint64_t bytes;   /* as it reports to CUDA */
};
extern const struct gs_card gs_cards[GS_NCARDS];
/* The largest peak of device memory on one device (0 if none). */
uint64_t gs_largest_device_peak(const struct gs_replay *r);
/* Which card the job needs: what one device needed, its peak or, where an
 * allocation failed that nothing got past, what the process held there
 * then and asked for, the larger; and whether a leak suspect kept rising,
 * so that no card holds a longer run. */
struct gs_fit {
    uint64_t need;        /* bytes on one device (0: no device memory) */
    uint64_t held, asked; /* need from a failure: held then and asked; else 0, 0 */
    int card;             /* gs_cards' smallest that holds need; GS_NCARDS: none */
    int growing;          /* a leak suspect kept rising (suspects.c: late in the run) */
};
void gs_card_fit(const struct gs_replay *r, size_t nsuspects, struct gs_fit *f);
/* The sentence each screen gives ("24 GB and larger cards: 8.20 GiB spare
 * on 24 GB", and what it rests on) into buf. */
void gs_fit_text(const struct gs_fit *f, char *buf, size_t sz);

#endif
