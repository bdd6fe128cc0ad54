/*
 * trace.h - the trace codec's analyzer half: the records of one chunk
 * decoded (decode.c) into callbacks, as modules, stacks, Python code
 * objects, threads, checkpoint records and events (struct gs_revent), and
 * what decoding counts (struct gs_reader_stats). The encoder's half is
 * declared with the ring entry it encodes (include/gpushim_ring.h).
 *
 * Included by: the model (analyzer/model), the shim's bounded trace
 * (shim/bound/bound.c), and every analyzer layer from read up.
 */
#ifndef GPUSHIM_TRACE_TRACE_H
#define GPUSHIM_TRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_trace.h"

/* Devices an event may name: 0 .. GS_MAX_DEVICES - 1; the decoder reads
 * any other as GS_DEVICE_UNKNOWN (the model keeps one slot past them for it). */
#define GS_MAX_DEVICES 64

/* A loaded module (GS_REC_MODULE). */
struct gs_rmodule {
    uint32_t id;
    uint64_t bias, lo, span;
    const char *path; /* NUL-terminated copy, valid during the callback */
    const uint8_t *build_id;
    size_t build_id_len;
};

/* A Python code object (GS_REC_PYCODE). */
struct gs_rpycode {
    uint32_t id;        /* 1..GS_PY_MAX_CODE */
    const char *file;   /* NUL-terminated copies, valid during the callback */
    const char *function;
    uint32_t first_line;
};

/* Past these a value is no real run's, only a damaged or forged trace's
 * (docs/limits.md, "What a trace can make the analyzer do"). */
#define GS_PLAUSIBLE_NS (1ull << 58)    /* an event 9.1 years after the start */
#define GS_PLAUSIBLE_SIZE (1ull << 48)  /* 256 TiB in one allocation, block or pool */
#define GS_PLAUSIBLE_TOTAL (1ull << 62) /* 4 EiB allocated over the run */

struct gs_revent {
    enum gs_record_type type; /* ALLOC, FREE, FREE_FAILED, ALLOC_FAILED, REF, POOL,
                               * MARK, BLOCK_ALLOC, BLOCK_FREE, GRAPH_NODE, GRAPH */
    uint64_t time_ns;         /* since the trace's start */
    uint32_t tid;
    uint32_t api;
    int32_t device;
    uint64_t addr, size, stream;
    uint32_t stack_id;
    uint32_t kind;  /* enum gs_kind */
    uint32_t space; /* enum gs_space: what addr names */
    uint32_t result;
    uint64_t free_bytes, total_bytes;
    uint64_t pool, reserved, used; /* POOL */
    uint64_t parent;               /* ALLOC of a mapping: the handle it maps */
    int all_free;                  /* ALLOC: it asked for all the free memory its thread's
                                    * last cuMemGetInfo answered (a probe's first guess) */
    /* GRAPH_NODE (op: what), GRAPH (op: enum gs_graph_op; reserved, used:
     * the graph pool's, when sampled), RANGE (op: enum gs_range_op, addr: its
     * id, stream: its domain, flags: enum gs_range_flag), MARK (flags: enum
     * gs_mark_flag); BLOCK_FREE: size is its span (0: the one block at addr) */
    uint64_t graph, exec, flags;
    uint32_t op;
    int sampled;
    const char *label;             /* MARK, RANGE: its label's bytes (not NUL-terminated, any
                                    * bytes), valid during the callback */
    size_t label_len;
};

/* An allocation or a free of a chunk's columns (GS_REC_COL_ALLOC,
 * GS_REC_COL_FREE) as it is decoded: the fields of struct gs_revent that
 * the columns carry, every other field of it 0 (gs_compact_event_revent).
 * 64 bytes, copied whole by a reader that keeps it (the read-ahead's tapes). */
struct gs_compact_event {
    uint8_t tag; /* 0 as decoded: the keeping reader's own (tape.c's entry tag) */
    uint8_t type, kind, space; /* type: GS_REC_ALLOC or GS_REC_FREE */
    uint32_t api;
    int32_t device;
    uint32_t tid;
    uint32_t stack_id;
    int32_t all_free;
    uint64_t time_ns, addr, size, stream, parent;
};

/* c's fields into e, whose other fields stay as they are (0 for c's event). */
static inline void gs_compact_event_revent(const struct gs_compact_event *c,
                                           struct gs_revent *e)
{
    e->type = c->type;
    e->kind = c->kind;
    e->space = c->space;
    e->api = c->api;
    e->device = c->device;
    e->tid = c->tid;
    e->stack_id = c->stack_id;
    e->all_free = c->all_free;
    e->time_ns = c->time_ns;
    e->addr = c->addr;
    e->size = c->size;
    e->stream = c->stream;
    e->parent = c->parent;
}

struct gs_reader_ops {
    void (*module)(void *ctx, const struct gs_rmodule *m);
    void (*stack)(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n);
    void (*pycode)(void *ctx, const struct gs_rpycode *c); /* may be NULL: skipped */
    void (*event)(void *ctx, const struct gs_revent *e);
    /* A column event as decoded, for a reader that keeps it as it is. May be
     * NULL: event is called with it (gs_compact_event_revent) instead. */
    void (*compact_event)(void *ctx, const struct gs_compact_event *c);
    /* A checkpoint record (GS_REC_CKPT_FIRST..GS_REC_CKPT_LAST), its payload
     * as it stands in the trace. Returns 0, or -1 when it is damaged (the
     * reader counts it in damaged_records). May be NULL: skipped. */
    int (*checkpoint)(void *ctx, uint8_t type, const uint8_t *payload, size_t len);
    /* A thread's name (GS_REC_THREAD): NUL-terminated, valid during the
     * callback. May be NULL: skipped. */
    void (*thread)(void *ctx, uint32_t tid, const char *name);
};

/* How a trace without an END record was completed from its ring file
 * (analyzer/read/recover.c). */
enum gs_ring_use {
    GS_RING_NONE = 0,    /* none was needed: no ring record, or the END record was read */
    GS_RING_READ,        /* its entries past the trace's chunks were read */
    GS_RING_MISSING,     /* the trace names one, but it is not there */
    GS_RING_UNUSABLE,    /* it is there but cannot be read (ring_problem says why) */
};

/* What reading a trace counted: decoding (damaged records, END, RING_POS)
 * and the reader (chunks, the ring file). */
struct gs_reader_stats {
    uint64_t chunks;          /* chunks read whole */
    uint64_t damaged_chunks;  /* skipped: bad checksum, bad length, bad compression */
    uint64_t damaged_records; /* records whose payload did not parse */
    uint64_t bytes;           /* file size */
    uint64_t truncated_at;    /* offset of an unfinished last chunk, 0 if none */
    int end_seen;             /* the END record: the process finished cleanly */
    uint64_t end_events;      /* events the END record says were recorded */
    uint64_t end_lost;
    uint64_t end_time_ns;     /* when the process finished the trace */
    /* The ring file (recover.c): what it added to a trace without an END. */
    uint64_t ring_pos;          /* the largest GS_REC_RING_POS in the chunks */
    enum gs_ring_use ring_use;
    char ring_path[4096 + 8];   /* the ring file read (or looked for) */
    char ring_problem[256];     /* GS_RING_MISSING, GS_RING_UNUSABLE: why */
    uint64_t recovered_events;  /* events read from the ring */
    uint64_t ring_lost;         /* events the ring had no room for */
    uint64_t ring_gap;          /* ring bytes between the trace's end and the ring's tail */
    int write_failed;           /* the shim could not write the trace past fail_offset */
    int fail_errno;
    uint64_t fail_offset, fail_time_ns;
};

/* Decodes one inflated chunk's records, in order, into ops; counts in st
 * the damaged records, END, RESUMED, STOPPED and the largest RING_POS.
 * Returns the records framed. */
uint64_t gs_decode_chunk(const uint8_t *raw, size_t len, const struct gs_reader_ops *ops,
                         void *ctx, struct gs_reader_stats *st);

#endif
