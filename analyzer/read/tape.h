/*
 * tape.h - decoded records kept for another thread (tape.c): the reader's
 * read-ahead thread decodes chunks onto tapes, the thread that asked for
 * the trace plays them to its callbacks, in the same order.
 *
 * Included by: reader.c, and the unit test that plays tapes against a
 * direct decode.
 */
#ifndef GPUSHIM_READ_TAPE_H
#define GPUSHIM_READ_TAPE_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/trace/trace.h"

struct gs_tape {
    uint8_t *p;
    size_t len, cap;
};

/* The ctx of gs_tape_ops: which tape the records go on, and what takes a
 * tape once it holds full_at bytes or more (full() must leave rec->tape a
 * tape to go on with, emptied). */
struct gs_tape_recorder {
    struct gs_tape *tape;
    size_t full_at;
    void (*full)(struct gs_tape_recorder *rec);
    void *owner;   /* full()'s own */
    uint64_t lost; /* records not kept for want of memory: count them damaged */
};

/* decode.c's callbacks that record onto rec->tape (every one set; a
 * checkpoint record is judged when it is played). */
extern const struct gs_reader_ops gs_tape_ops;

/* Hands the tape's records to ops in order, as gs_decode_chunk would have;
 * a checkpoint record that ops->checkpoint finds damaged is counted in
 * st->damaged_records. */
void gs_tape_play(const struct gs_tape *t, const struct gs_reader_ops *ops, void *ctx,
                  struct gs_reader_stats *st);

void gs_tape_free(struct gs_tape *t);

#endif
