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

/* A label, and the steps between its consecutive marks. Device bytes are
 * the process's live device memory (as the peak counts it). */
struct gs_mark_label {
    char label[GS_MAX_LABEL + 1]; /* NUL-terminated, control bytes as '?' */
    uint32_t stack_id;            /* of its first mark */
    uint64_t marks, steps;
    uint64_t first_ns, last_ns;   /* its first and last mark */
    /* the step open since its last mark */
    uint64_t start_bytes;         /* device bytes at its start */
    uint64_t start_in, start_out; /* gs_marks.bytes_in and bytes_out then */
    uint64_t step_peak;           /* the most device bytes in it so far */
    /* its completed steps */
    uint64_t max_peak, max_peak_end_ns; /* the largest peak of one, and when that step ended */
    uint64_t allocated, freed;          /* device bytes made live and ended in them */
    int64_t growth;                     /* the device bytes they added, all together */
    int64_t max_growth;                 /* the most one step added */
    uint64_t growing;                   /* steps that ended with more than they began with */
};

struct gs_mark_item {
    uint32_t label;        /* index in gs_marks.labels, or GS_MARK_OTHER */
    uint64_t time_ns;
    uint64_t device_bytes; /* live then */
    uint64_t block_bytes;  /* in live blocks then */
};

/* From one mark to the next mark of the same label. */
struct gs_step {
    uint32_t label;
    uint64_t start_ns, end_ns;
    uint64_t peak_bytes;      /* the most device bytes live during it */
    uint64_t allocated_bytes; /* device bytes that became live during it */
    uint64_t freed_bytes;     /* device bytes that stopped being live during it */
    int64_t growth_bytes;     /* device bytes at its end less at its start */
};

struct gs_marks {
    struct gs_mark_label *labels; /* room for GS_MARK_LABELS, made on the first mark */
    size_t nlabels;
    struct gs_mark_item *recent;  /* the last GS_MARKS_KEPT marks, a ring */
    struct gs_step *steps;        /* the last GS_STEPS_KEPT steps, a ring */
    uint64_t marks, nsteps;       /* all of them: the next ring slot is the count's */
    uint64_t labels_dropped;      /* marks whose label came past GS_MARK_LABELS */
    uint64_t bytes_in, bytes_out; /* device bytes made live and ended, the whole run */
    uint64_t since_peak;          /* the most device bytes live since the last mark */
};

#endif
