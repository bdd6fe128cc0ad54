/*
 * record_int.h - what the files of shim/record/ share: stack capture
 * (unwind.c, with walk.c and cfi.c) and the table of distinct stacks (stacks.c), the Python frames
 * (python.c, which reads them with pyread.h), the loaded modules
 * (modules.c). record.c assembles an event from them.
 *
 * Included by: shim/record, and the unit tests.
 */
#ifndef GPUSHIM_SHIM_RECORD_INT_H
#define GPUSHIM_SHIM_RECORD_INT_H

#include <stddef.h>
#include <stdint.h>

/* ---- unwind.c, walk.c, cfi.c: capture ---- */
/* Captures up to max return addresses of the calling thread, innermost
 * first, starting at the first frame outside the shim (unwind.c: the fast
 * unwinder, else libunwind, as GPUSHIM_UNWIND says). */
unsigned gs_capture_stack(uint64_t *pcs, unsigned max);
/* The fast unwinder (walk.c): the same as gs_capture_stack, or -1 where it
 * cannot be sure to give libunwind's frames. */
int gs_walk_stack(uint64_t *pcs, unsigned max);
/* How the calling thread's last gs_walk_stack used the walk before it
 * (walk.c): GS_WALK_NEW, walked by the rules alone; GS_WALK_WENT_ON, it
 * went on from that walk, checking some of its steps rather than walking
 * them; GS_WALK_CHECKED, every step it took was one of that walk's,
 * checked. */
enum gs_walk_memo { GS_WALK_NEW, GS_WALK_WENT_ON, GS_WALK_CHECKED };
enum gs_walk_memo gs_walk_memo(void);
/* cfi.c: how to step from a frame at a code address to its caller. */
enum gs_cfi_kind {
    GS_CFI_UNSURE,   /* not a rule cfi.c reads: ask libunwind */
    GS_CFI_FRAME,    /* the rule below */
    GS_CFI_OUTERMOST /* the return address is undefined: the first frame of a thread */
};
struct gs_cfi_rule {
    uint8_t kind;      /* enum gs_cfi_kind */
    uint8_t cfa_rbp;   /* CFA = rbp + cfa_off; else rsp + cfa_off */
    uint8_t rbp_saved; /* the caller's rbp is at CFA + rbp_off; else rbp is kept */
    int16_t ra_off;    /* the return address is at CFA + ra_off */
    int16_t rbp_off;
    int32_t cfa_off;
};
/* The rule of the row that covers target, from the module whose
 * .eh_frame_hdr is at eh_frame_hdr; 0, or -1 with kind GS_CFI_UNSURE. */
int gs_cfi_rule(const void *eh_frame_hdr, uint64_t target, struct gs_cfi_rule *r);

/* ---- stacks.c: deduplication ---- */
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
/* When the calling thread holds the GIL and is starting a threading.Thread
 * (inside pthread_create), that thread's name, at most max bytes (cut at a
 * character), in out; returns its length, 0 when there is none to tell. */
size_t gs_python_starting_thread_name(char *out, size_t max);

/* ---- handoff.c: the Python functions that hand work to a thread and wait ---- */
struct gs_pyframe;
/* The built-in hand-offs and those of more (GPUSHIM_HANDOFF; "0": none). */
void gs_handoff_init(const char *more);
/* Whether any hand-off is known. */
int gs_handoff_any(void);
/* Whether f, read with its names, is a frame of a hand-off function. */
int gs_handoff_is(const struct gs_pyframe *f);

/* ---- pythreads.c: threading.Thread's names ---- */
/* The calling thread's Python name, noted when it was started, in out (at
 * most max bytes), once: its length, or 0 when none was noted. */
size_t gs_pythreads_take(char *out, size_t max);

/* ---- modules.c: the images loaded in the process ---- */
/* Makes sure every pc is inside a module already pushed to the ring, pushing
 * new modules first (call with no shim lock held). */
void gs_modules_cover(const uint64_t *pcs, unsigned n);

#endif
