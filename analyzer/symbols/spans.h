/*
 * spans.h - sorted address ranges with a payload (spans.c): the symbolizer's
 * two indexes of a module, its symbols and its DWARF's compile units.
 *
 * Included by: analyzer/symbols/symbolize.c (and unit tests).
 */
#ifndef GPUSHIM_SYMBOLS_SPANS_H
#define GPUSHIM_SYMBOLS_SPANS_H

#include <stddef.h>
#include <stdint.h>

/* An address range [lo, hi) and what is there. */
struct gs_span {
    uint64_t lo, hi;
    int rank;     /* among equal lo, the lowest rank is kept */
    int open_end; /* size unknown: hi is clipped to the next span's lo */
    union {
        uint64_t cu;      /* CU index: DWARF addresses, CU DIE offset */
        const char *name; /* symbol index: runtime addresses, libdw's string */
    } u;
};

/* Spans added in any order, then finished (sorted) once, then looked up;
 * built once per module on first need. Zeroed is empty; free(v) frees it. */
struct gs_span_index {
    struct gs_span *v;
    size_t n, cap;
    int built;
};

/* 0, or -1 on no memory (sp is not added). */
int gs_span_add(struct gs_span_index *ix, struct gs_span sp);
/* Sorts by start address, and keeps one span per start address: the lowest
 * rank, and of equal ranks the first added. */
void gs_span_finish(struct gs_span_index *ix);
/* The span containing a, or NULL: the nearest few starting at or below it
 * are tried, as ranges may nest. */
const struct gs_span *gs_span_find(const struct gs_span_index *ix, uint64_t a);

#endif
