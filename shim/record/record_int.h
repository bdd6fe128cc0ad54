/*
 * record_int.h - what the files of shim/record/ share: stack capture
 * (unwind.c) and the table of distinct stacks (stacks.c), the Python frames
 * (python.c, which reads them with pyread.h), the loaded modules
 * (modules.c). record.c assembles an event from them.
 *
 * Included by: shim/record, and the unit tests.
 */
#ifndef GPUSHIM_SHIM_RECORD_INT_H
#define GPUSHIM_SHIM_RECORD_INT_H

#include <stddef.h>
#include <stdint.h>

/* ---- stacks.c: capture and deduplication ---- */
/* Captures up to max return addresses of the calling thread, innermost
 * first, starting at the first frame outside the shim. */
unsigned gs_capture_stack(uint64_t *pcs, unsigned max);
/* A hash table of distinct stacks; not thread-safe (record.c locks it).
 * A stack's frames never move once stored (they live in chunks that are
 * only freed by gs_stack_table_clear), so a thread may keep a pointer to
 * them and compare against it without the lock. */
struct gs_stack_chunk;
struct gs_stack_table {
    struct gs_stack_slot *slots;
    struct gs_stack_chunk *chunk; /* the newest chunk of frames; each links the one before */
    size_t nslots, used;
    uint32_t next_id;
};
uint64_t gs_stack_hash(const uint64_t *pcs, unsigned n);
/* Id of the stack, inserting it if new (*is_new says which). 0 on allocation
 * failure. *frames (when not NULL) is set to its stored frames. */
uint32_t gs_stack_intern(struct gs_stack_table *t, const uint64_t *pcs, unsigned n, uint64_t hash,
                         int *is_new, const uint64_t **frames);
/* Id of the stack, or 0 when it is not in the table; *frames as above. */
uint32_t gs_stack_find(const struct gs_stack_table *t, const uint64_t *pcs, unsigned n,
                       uint64_t hash, const uint64_t **frames);
void gs_stack_table_clear(struct gs_stack_table *t);

/* ---- python.c: the Python frames of the thread that allocates ---- */
/* Appends to pcs[0..n) the calling thread's Python frames as Python pcs
 * (innermost first; their code objects' PYCODE records pushed to the ring
 * first), or a marker (include/gpushim_trace.h), never past max; returns
 * the new count. Call with no shim lock held. */
unsigned gs_python_frames(uint64_t *pcs, unsigned n, unsigned max);

/* ---- modules.c: the images loaded in the process ---- */
/* Makes sure every pc is inside a module already pushed to the ring, pushing
 * new modules first (call with no shim lock held). */
void gs_modules_cover(const uint64_t *pcs, unsigned n);

#endif
