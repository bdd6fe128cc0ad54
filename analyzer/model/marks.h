/*
 * marks.h - the program's marks (include/gpushim.h: gpushim_mark) and the
 * steps between the marks of a label, as the replay model keeps them
 * (analyzer/model/marks.c).
 *
 * Included by: analyzer/model/model.h (which the others include)
 */
#ifndef GPUSHIM_MODEL_MARKS_H
#define GPUSHIM_MODEL_MARKS_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_trace.h"

#define GS_MARK_LABELS 256  /* distinct labels followed; further ones are counted only */
#define GS_MARKS_KEPT 1000  /* the most recent marks kept, with their figures */
#define GS_STEPS_KEPT 1000  /* the most recent steps kept, with their figures */
#define GS_MARK_OTHER UINT32_MAX /* the label of a mark past the GS_MARK_LABELS limit */

/* A label, and its steps. A step begins at a mark (gpushim_mark, an NVTX
 * mark, a thread's outermost range opening) and runs to the next mark of
 * its label, or to its range's end, or to the end of the run; or, for
 * marks made after each step (gpushim_step_end: GS_MARK_STEP_END), it runs
 * from one end to the next, the first from the start of the run (what the
 * first step allocated before its mark is its own). Device bytes are the
 * process's live device memory (as the peak counts it). */
struct gs_mark_label {
    char label[GS_MAX_LABEL + 1]; /* NUL-terminated, control bytes as '?' */
    uint32_t stack_id;            /* of its first mark */
    uint64_t marks, steps;        /* steps: those ended (marks.c's finish ends the last) */
    uint64_t nvtx_marks;          /* of marks, NVTX's (outermost ranges opening, nvtxMark):
                                   * annotations, not the program's own step marks */
    uint64_t first_ns, last_ns;   /* its first and last mark */
    uint64_t first_start_ns, first_end_ns; /* its first step's (first_end_ns 0: not ended) */
    uint64_t last_start_ns;       /* the start of its last step ended (0: none) */
    uint64_t last_end_ns;         /* and its end */
    uint32_t range_tid;           /* a step begun by an outermost range pushed: the thread
                                   * whose outermost range's end ends it (0: none) */
    uint64_t range_id;            /* ... by a range started: the id whose end ends it */
    uint32_t open;                /* enum gs_step_open: the step open now */
    uint32_t cut;                 /* its last step was ended by the end of the run */
    /* the step open now */
    uint64_t start_ns;            /* when it began (0: at the start of the run) */
    uint64_t start_bytes;         /* device bytes at its start */
    uint64_t start_in, start_out; /* gs_marks.bytes_in and bytes_out then */
    uint64_t step_peak;           /* the most device bytes in it so far */
    /* its completed steps */
    uint64_t max_peak, max_peak_end_ns; /* the largest peak of one, and when that step ended */
    uint64_t allocated, freed;          /* device bytes made live and ended in them */
    /* ... but the one the end of the run cut, whose end is no step's end */
    int64_t growth;                     /* the device bytes they added, all together */
    int64_t max_growth;                 /* the most one step added */
    uint64_t growing;                   /* steps that ended with more than they began with */
};

/* What a mark was. */
enum gs_mark_kind {
    GS_MARK_BEGINS = 0,   /* a mark: a step begins (gpushim_mark, an NVTX mark) */
    GS_MARK_ENDS = 1,     /* a step's end (gpushim_step_end) */
    GS_MARK_RANGE = 2,    /* an outermost range opening */
};

struct gs_mark_item {
    uint32_t label;        /* index in gs_marks.labels, or GS_MARK_OTHER */
    uint32_t kind;         /* enum gs_mark_kind */
    uint64_t time_ns;
    uint64_t device_bytes; /* live then */
    uint64_t block_bytes;  /* in live blocks then */
};

/* One step of a label (struct gs_mark_label says where steps begin and end). */
struct gs_step {
    uint32_t label;
    uint64_t start_ns, end_ns;
    uint64_t peak_bytes;      /* the most device bytes live during it */
    uint64_t allocated_bytes; /* device bytes that became live during it */
    uint64_t freed_bytes;     /* device bytes that stopped being live during it */
    int64_t growth_bytes;     /* device bytes at its end less at its start */
    uint32_t cut;             /* the end of the run ended it (the last, never in a
                               * checkpoint): not in its label's growth figures */
};

struct gs_marks {
    struct gs_mark_label *labels; /* room for GS_MARK_LABELS, made on the first mark */
    size_t nlabels;
    struct gs_mark_item *recent;  /* the last GS_MARKS_KEPT marks, a ring */
    struct gs_step *steps;        /* the last GS_STEPS_KEPT steps, a ring */
    uint64_t marks, nsteps;       /* all of them: the next ring slot is the count's */
    uint64_t labels_dropped;      /* marks whose label came past GS_MARK_LABELS */
    uint64_t bytes_in, bytes_out; /* device bytes made live and ended, the whole run */
    uint64_t since_peak;          /* the most device bytes live since the last mark,
                                   * or the last end of a range's step */
};

/* The label whose steps are the run's steps (the growth samples', the
 * roles', whatif's and the reports' "step"): of the labels the program
 * marked through gpushim's API (gpushim_mark, gpushim_step_end), else of
 * those NVTX alone marked (outermost ranges, nvtxMark: annotations, which a
 * one-off "checkpoint saved" must not outrank a loop's ranges with), the
 * one marked most often, the first of equals. GS_MARK_OTHER: none. */
uint32_t gs_marks_step_label(const struct gs_marks *m);
/* Whether label a is a better step label than b (b may be GS_MARK_OTHER):
 * the same order, for one who follows the marks as they come. */
int gs_marks_better_steps(const struct gs_marks *m, uint32_t a, uint32_t b);
/* The same order on counts alone (marks and NVTX's of them), a first: for
 * a pass that keeps its own labels (whatif.c). */
int gs_marks_better_counts(uint64_t marks_a, uint64_t nvtx_a, int a_first, uint64_t marks_b,
                           uint64_t nvtx_b);
/* Whether an outermost range labelled so makes steps: not PyTorch's
 * per-operator ranges of emit_nvtx ("aten::addmm, seq = 12, op_id = 40",
 * torch/csrc/profiler/util.cpp getNvtxStr), which are a thread's outermost
 * wherever nothing else is pushed, and each of a label of its own. */
int gs_marks_range_makes_steps(const char *label, size_t len);

#endif
