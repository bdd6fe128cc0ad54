/*
 * columns.h - the trace codec's columns (columns.c): what gs_encode and
 * gs_decode_chunk call to put an allocation or a free in a chunk's columns
 * and to take it out again. The writer's calls (gs_encoder_use_columns and
 * the rest) are declared with the encoder in include/gpushim_ring.h.
 *
 * Included by: encode.c, decode.c and columns.c only.
 */
#ifndef GPUSHIM_TRACE_COLUMNS_H
#define GPUSHIM_TRACE_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/trace/encode.h"
#include "gpushim_ring.h"
#include "analyzer/util/cursor.h"
#include "analyzer/trace/trace.h"

/* Puts an ALLOC or FREE body in the encoder's columns: 0, or -1 when it
 * stays a record of its own (no columns, another type, columns full, no
 * memory), having changed nothing. */
int gs_columns_put(struct gs_encoder *e, const struct gs_ev *ev);

/* A chunk's columns as they are read. */
struct gs_column_reader {
    int open; /* the chunk had a GS_REC_COLUMNS record */
    struct gs_cursor col[GS_COLUMNS];
    uint64_t *addrs; /* the chunk's column allocations' addresses, in order */
    size_t n, cap;
    uint64_t last_addr; /* the last event's, allocation or free */
    uint32_t wide_kind, wide_space; /* the last event's kind and space, whole */
    int event_bad; /* a column read for the event being read was bad */
};

/* Opens a GS_REC_COLUMNS record's payload: 0, or -1 when it is damaged. */
int gs_columns_open(struct gs_column_reader *r, const uint8_t *payload, size_t len);
/* The next event of the columns, of a GS_REC_COL_ALLOC or GS_REC_COL_FREE
 * record, its time from *time (the chunk's delta state, moved when it
 * parses): 0; 1 when its kind or space is past a byte (e holds their low
 * bytes, r->wide_kind and r->wide_space the whole values: from a newer
 * writer, or damage, for struct gs_revent to carry as they are); or -1 when
 * damaged. Sets every field of *e (tag 0). */
int gs_columns_event(struct gs_column_reader *r, uint64_t *time, uint8_t type,
                     struct gs_compact_event *e);
void gs_columns_close(struct gs_column_reader *r);

#endif
