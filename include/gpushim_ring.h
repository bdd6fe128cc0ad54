/*
 * gpushim_ring.h - the ring file: the events the writer has not yet put in
 * the trace, in memory that outlives the process.
 *
 * The shim keeps its queue of events in a file mapped MAP_SHARED next to the
 * trace, "<trace>.ring". A hook's event is in that file's pages the moment
 * the hook returns, and the kernel keeps those pages whatever happens to the
 * process (SIGKILL, a crash, _exit), so after a death the trace and its ring
 * together hold every event; the analyzer reads the trace's chunks, then the
 * ring's entries from the position the last chunk ends at (GS_REC_RING_POS).
 * A trace that ends with an END record no longer needs its ring, and the
 * shim removes it then.
 *
 * The ring file is in the recording machine's native byte order and struct
 * layout (the analyzer checks GS_RING_LAYOUT and refuses another): it is a
 * crash artefact to read where it was written, not an exchange format.
 *
 * File
 *   struct gs_ring_header   GS_RING_HEADER_SIZE bytes
 *   data                    cap bytes (a power of two), entries back to back,
 *                           wrapping at the end: entry at position pos
 *                           starts at data[pos % cap]
 * Entry: u32 length L of the whole entry (4 + body), then the body, whose
 * first byte is its enum gs_record_type; bodies are the structs below.
 * Positions only grow. [tail, head) holds the entries not yet in the trace
 * file; a producer writes an entry, then moves head past it (a release
 * store), so an entry below head is always whole.
 */
#ifndef GPUSHIM_RING_H
#define GPUSHIM_RING_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_trace.h"

#define GS_RING_MAGIC "GSRING\r\n"
#define GS_RING_VERSION 1u
#define GS_RING_HEADER_SIZE 4096u
#define GS_RING_MIN_CAP 64u
#define GS_RING_MAX_CAP (1u << 30)
/* Room for bodies up to this size is always reserved in an entry. */
#define GS_RING_MAX_BODY (64u * 1024)

/* Ring bodies. */
struct gs_ev {
    uint8_t type; /* GS_REC_ALLOC, _FREE, _FREE_FAILED, _ALLOC_FAILED, _REF, _POOL,
                   * _BLOCK_ALLOC, _BLOCK_FREE (time, tid, addr; BLOCK_ALLOC: size,
                   * stack_id; BLOCK_FREE: size, its span or 0), _GRAPH_NODE, _GRAPH
                   * (analyzer/trace/encode.c says which
                   * field carries what) */
    uint8_t api;
    uint8_t kind;
    uint8_t space;
    int32_t device;
    uint32_t tid;
    uint32_t stack_id;
    int32_t result;
    uint32_t pad2;
    uint64_t time_ns; /* since the trace's start */
    uint64_t addr; /* POOL: the pool */
    uint64_t size; /* POOL: its reserved bytes */
    uint64_t stream;
    uint64_t free_bytes;  /* ALLOC_FAILED; POOL: its used bytes; ALLOC: 1 when it asked for
                           * all free memory (gs_note_free_memory), else 0 */
    uint64_t total_bytes; /* ALLOC_FAILED */
    uint64_t parent;      /* ALLOC of a mapping: the physical memory's handle */
};
/* GS_REC_MARK: an event (time, tid, stack_id, ev.space its flags) and its
 * label. GS_REC_RANGE:
 * the same with ev.kind its op, ev.space its flags, ev.addr its id and
 * ev.stream its domain. */
struct gs_mark_body {
    struct gs_ev ev; /* ev.type: GS_REC_MARK or GS_REC_RANGE */
    uint32_t label_len; /* at most GS_MAX_LABEL */
    uint32_t pad;
    char label[]; /* label_len bytes, no NUL */
};
struct gs_stack_body {
    uint8_t type; /* GS_REC_STACK */
    uint8_t pad[3];
    uint32_t id;
    uint32_t n;
    uint32_t pad2;
    uint64_t pcs[]; /* n of them, innermost first */
};
struct gs_module_body {
    uint8_t type; /* GS_REC_MODULE */
    uint8_t build_id_len;
    uint16_t path_len;
    uint32_t id;
    uint64_t bias, lo, span;
    char data[]; /* path (path_len bytes), then the build id */
};
/* Longest file and function names a PYCODE body carries (longer ones are cut). */
#define GS_PY_MAX_FILE 4095u
#define GS_PY_MAX_NAME 1023u
struct gs_pycode_body {
    uint8_t type; /* GS_REC_PYCODE */
    uint8_t pad;
    uint16_t file_len; /* at most GS_PY_MAX_FILE */
    uint16_t name_len; /* at most GS_PY_MAX_NAME */
    uint16_t pad2;
    uint32_t id;
    uint32_t first_line;
    char data[]; /* the file (file_len bytes), then the function */
};
/* GS_REC_THREAD: the name of thread tid, as the kernel has it. */
struct gs_thread_body {
    uint8_t type;     /* GS_REC_THREAD */
    uint8_t name_len; /* at most GS_MAX_THREAD_NAME */
    uint16_t pad;
    uint32_t tid;
    char name[]; /* name_len bytes, no NUL */
};
struct gs_end_body {
    uint8_t type; /* GS_REC_END */
    uint8_t pad[7];
    uint64_t events;
    uint64_t lost;
    uint64_t time_ns; /* since the trace's start */
};

/* Sizes that must agree between the shim that wrote a ring and the analyzer
 * that reads it. */
#define GS_RING_LAYOUT                                                                             \
    ((uint32_t)(sizeof(struct gs_ev) | sizeof(struct gs_stack_body) << 8 |                        \
                sizeof(struct gs_module_body) << 16 | sizeof(struct gs_end_body) << 24))
#define GS_RING_ENDIAN 0x01020304u

enum gs_ring_state {
    GS_RING_OPEN = 0,   /* the writer is writing the trace */
    GS_RING_FAILED = 1, /* the trace file could not be written past fail_offset */
};

struct gs_ring_header {
    char magic[8]; /* GS_RING_MAGIC */
    uint32_t version;
    uint32_t header_size; /* GS_RING_HEADER_SIZE */
    uint32_t layout;      /* GS_RING_LAYOUT */
    uint32_t endian;      /* GS_RING_ENDIAN */
    uint64_t cap;
    uint64_t trace_id; /* the same as in the trace's GS_REC_RING record */
    uint64_t pid;
    uint8_t pad0[16];
    /* What changes, each on a cache line of its own. */
    uint64_t head __attribute__((aligned(64))); /* producers, under the ring lock */
    uint64_t tail __attribute__((aligned(64))); /* the writer: the trace has all below */
    uint64_t lost __attribute__((aligned(64))); /* events dropped: the ring was full and
                                                 * the trace could not take them */
    uint64_t events;       /* events pushed (the END record's count) */
    uint32_t state;        /* enum gs_ring_state */
    int32_t fail_errno;    /* GS_RING_FAILED: why the trace could not be written */
    uint64_t fail_offset;  /* GS_RING_FAILED: the trace's size when it failed */
    uint64_t fail_time_ns; /* GS_RING_FAILED: when (since the trace's start) */
    uint64_t end_time_ns;  /* GS_RING_FAILED: the process ended cleanly then (the
                            * END record the trace could not take); 0 before */
};

#endif
