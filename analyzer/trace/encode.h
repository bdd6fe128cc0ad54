/*
 * encode.h - the trace codec's encoding half (encode.c): ring bodies
 * (include/gpushim_ring.h) to trace records (include/gpushim_trace.h). The
 * header's records and the writer's own are meta.h's.
 *
 * Included by: the shim's writer and bound trace (shim/writer/writer.c,
 * shim/bound/bound.c: GS_COLUMNS_OVERHEAD), the model's
 * checkpoint writer (analyzer/model/checkpoint.c: GS_MAX_RECORD),
 * analyzer/read/recover.c (a dead process's ring entries into records),
 * analyzer/trace's own files (encode.c, columns.h), their unit tests.
 */
#ifndef GPUSHIM_TRACE_ENCODE_H
#define GPUSHIM_TRACE_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_ring.h"
#include "gpushim_trace.h"

struct gs_columns; /* a chunk's allocations and frees by column (columns.c) */
struct gs_encoder {
    uint64_t last_time;
    uint64_t last_addr;
    struct gs_columns *cols; /* NULL: every event a record of its own */
};
/* Largest record gs_encode can produce. */
#define GS_MAX_RECORD (16 + 10 * (GS_MAX_FRAMES + 8) + 4096)
/* Makes e an encoder without columns, as for a chunk's first record. */
void gs_encoder_reset(struct gs_encoder *e);
/* Encodes one ring body as a record into out (GS_MAX_RECORD bytes of room);
 * returns its length, 0 for a body that is not well formed. Bodies may be
 * hostile (read back from a ring file): every length is checked. With
 * columns, an allocation or a free goes into them, and its record is the
 * empty GS_REC_COL_ALLOC or GS_REC_COL_FREE. */
size_t gs_encode(struct gs_encoder *e, const void *body, uint32_t len, uint8_t *out);

/* The writer's chunks (format 3): from now on e puts allocations and frees
 * in columns, which gs_encode_columns writes as the chunk's first record.
 * 0, or -1 when out of memory (e goes on without). */
int gs_encoder_use_columns(struct gs_encoder *e);
void gs_encoder_free(struct gs_encoder *e);
/* Restarts the deltas for the next chunk and empties the columns. */
void gs_encoder_new_chunk(struct gs_encoder *e);
/* The bytes in the columns; *events (unless NULL): the events they hold. */
size_t gs_encoder_held(const struct gs_encoder *e, uint32_t *events);
/* Writes the columns as a GS_REC_COLUMNS record into out (room: held bytes
 * + GS_COLUMNS_OVERHEAD); returns its length, 0 when they hold no event. */
size_t gs_encode_columns(const struct gs_encoder *e, uint8_t *out);
/* A GS_REC_COLUMNS record's bytes beyond its columns', and what one event
 * adds to the columns, at most. */
#define GS_COLUMNS_OVERHEAD (1 + 10 * (GS_COLUMNS + 2))
#define GS_COLUMN_EVENT_MAX (10 * GS_COLUMNS)

#endif
