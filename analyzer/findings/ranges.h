/*
 * ranges.h - memory by NVTX range: for each range a program's NVTX calls
 * open (a label under its parent range), the most device memory live while
 * one was open, the bytes made in it and still live when it ended; the
 * ranges open at the end and at each failure. An analysis attached to the
 * replay model (analyzer/findings/ranges.c), read by the reports.
 *
 * Included by: analyzer/findings, the layers above it (report, cmd); tests.
 * Never by the shim or the model.
 */
#ifndef GPUSHIM_FINDINGS_RANGES_H
#define GPUSHIM_FINDINGS_RANGES_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_trace.h"

struct gs_replay;

#define GS_RANGE_NODES 1024     /* distinct ranges followed; instances of others are counted */
#define GS_RANGES_OPEN 4096     /* ranges open at once that are followed */
#define GS_RANGES_KEPT 1000     /* the most recent ranges that ended, kept with their figures */
#define GS_RANGE_DOMAINS 256    /* named domains */
#define GS_RANGE_FAILURES 10000 /* failures whose open ranges are kept (as GS_MAX_FAILURES) */
#define GS_RANGE_NONE UINT32_MAX

/* A range: a label in a domain, under a parent range (pushed ranges nest
 * per thread; started ones are at the top). Figures over its instances
 * that ended; device bytes as the peak counts them. */
struct gs_range_node {
    char label[GS_MAX_LABEL + 1]; /* NUL-terminated, control bytes as '?' */
    uint32_t domain;              /* 0: NVTX's default domain */
    uint32_t parent;              /* index, or GS_RANGE_NONE */
    uint32_t depth;               /* 0 at the top */
    int started;                  /* opened by nvtxRangeStart (else pushed) */
    uint64_t ended;
    uint64_t first_ns;            /* when the first one opened */
    uint64_t peak_max;            /* the most device bytes live inside one */
    uint64_t peak_nth;            /* which instance that was, from 1 */
    uint64_t peak_start_ns;       /* and when it opened */
    uint64_t allocated;           /* device bytes made live inside them, all together */
    uint64_t allocated_max;       /* ... the most inside one */
    int64_t kept_last, kept_max;  /* bytes made inside one and live when it ended */
    int64_t kept_total;
    uint64_t kept_nonzero;        /* instances that kept any */
};

/* One instance of a range, open or ended. */
struct gs_range_instance {
    uint32_t node;
    uint32_t tid;
    uint64_t nth;          /* its number among its range's instances, from 1 */
    uint64_t start_ns, end_ns; /* end_ns: 0 while open */
    uint64_t peak;         /* the most device bytes live while it was open */
    uint64_t allocated;    /* device bytes made live while it was open */
    int64_t kept;          /* ... and still live when it ended (or now) */
};

struct gs_ranges {
    struct gs_range_node *nodes;
    size_t nnodes;
    char *domains[GS_RANGE_DOMAINS + 1]; /* [1..]: names, as the trace gave them */
    struct gs_range_instance *recent;    /* the last GS_RANGES_KEPT that ended, a ring */
    uint64_t ended;                      /* all of them: the next ring slot is the count's */
    uint64_t pushes, pops, starts, ends;
    uint64_t opened;        /* instances followed, all of them: each one's serial, from 1 */
    uint64_t unmatched;     /* pops and ends with nothing open to end */
    uint64_t dropped;       /* instances not followed: past GS_RANGE_NODES or GS_RANGES_OPEN */
    /* the failures' ranges: for failure i (gs_replay.failures), the innermost
     * range open on its thread then, or GS_RANGE_NONE */
    uint32_t *failure_node;
    size_t nfailure_nodes;
    /* the instances open now (ranges.c keeps their figures in pieces;
     * gs_ranges_open gives them whole) */
    struct gs_range_open *open;
    size_t nopen, open_cap;
};

/* Attaches the analysis to r (after gs_replay_init). 0, or -1 on no memory. */
int gs_ranges_attach(struct gs_replay *r);
/* r's ranges; with the analysis not attached, none. */
const struct gs_ranges *gs_ranges_of(const struct gs_replay *r);
/* The i-th instance open now (0: the first opened of those still open),
 * whole: 1, or 0 past the last. Its node is GS_RANGE_NONE for an instance
 * not followed (past GS_RANGE_NODES), which holds its place only. */
int gs_ranges_open_at(const struct gs_ranges *g, size_t i, struct gs_range_instance *out);
/* The instances thread tid pushed that are open now, innermost first: their
 * ranges into nodes and their serials into serials (either may be NULL),
 * at most max; the count. */
size_t gs_ranges_of_thread(const struct gs_ranges *g, uint32_t tid, uint32_t *nodes,
                           uint64_t *serials, size_t max);
/* Whether an instance whose serial's bits in mask are serial's is open now. */
int gs_ranges_serial_open(const struct gs_ranges *g, uint64_t serial, uint64_t mask);
/* The range's name as reports show it: "[domain] label" in a named domain. */
void gs_range_name(const struct gs_ranges *g, uint32_t node, char *out, size_t outsz);
/* Its path from the top, "step > forward". */
void gs_range_path(const struct gs_ranges *g, uint32_t node, char *out, size_t outsz);

#endif
