/*
 * symbols.h - call sites: recorded stacks as a report shows them (sites.c),
 * trimmed of the shim's and the CUDA libraries' frames, symbolized, Python
 * frames in place of the interpreter's, and ranked; the threads that
 * allocated at a site.
 *
 * Included by: the analyzer's layers from symbols up (symbols, findings,
 * report, export, cmd, main.c).
 */
#ifndef GPUSHIM_SYMBOLS_SYMBOLS_H
#define GPUSHIM_SYMBOLS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct gs_replay;
struct gs_site;
struct gs_symbolizer;
struct gs_frame; /* analyzer/symbols/symbolize.h */

/* What a stack says of Python (include/gpushim_trace.h, Python pcs). */
enum gs_py_state {
    GS_PY_NONE = 0, /* nothing: no Python in the process, or its frames unreadable */
    GS_PY_FRAMES,   /* the thread held the GIL: Python frames follow the native ones */
    GS_PY_NO_GIL,   /* the thread did not hold the GIL: native frames only */
    GS_PY_NO_FRAME, /* it held the GIL with no Python code running */
    GS_PY_RELEASED, /* it did not hold the GIL: its Python frames were read from memory */
    GS_PY_WAITER,   /* it ran no Python: the Python frames are those of the thread that
                     * waited for it in a hand-off (PyTorch's backward), read from memory */
};

/* How a report shows stacks. */
enum gs_stack_view {
    GS_VIEW_MERGED = 0, /* Python frames in place of the interpreter's */
    GS_VIEW_NATIVE,     /* native frames alone (report --native) */
};

/* The threads that allocated at a reported site, by name (merged from the
 * raw sites it stands for): most allocations first once sorted. */
#define GS_TALLY_THREADS 8
struct gs_thread_tally {
    unsigned n;
    uint32_t name[GS_TALLY_THREADS]; /* gs_replay_thread_name */
    uint64_t allocs[GS_TALLY_THREADS];
    uint64_t other; /* allocations by threads of other names */
};
/* Adds a raw site's threads; the name of one thread (1 allocation). */
void gs_tally_add_site(struct gs_thread_tally *t, const struct gs_site *s);
void gs_tally_add(struct gs_thread_tally *t, uint32_t name, uint64_t allocs);
/* Most allocations first (then the name first seen in the trace). */
void gs_tally_sort(struct gs_thread_tally *t);

/* A call site as reported: sites whose stacks are the same after trimming
 * the shim's and the CUDA libraries' frames are merged. */
struct gs_report_site {
    uint64_t bytes, count;
    uint32_t stack_id; /* a representative stack */
    uint32_t api;      /* the API its first allocation was made with */
    struct gs_thread_tally threads; /* sorted */
};

/* What a site is ranked by: what it held at the peak, what it never freed,
 * or all it allocated over the run. */
enum gs_site_metric { GS_METRIC_PEAK, GS_METRIC_LEAK, GS_METRIC_ALLOCATED };

/* The device-kind sites ranked by metric, largest first, merged by their
 * source frames. Returns how many are in *out (caller frees). */
size_t gs_rank_sites(const struct gs_replay *r, struct gs_symbolizer *sym,
                     enum gs_stack_view view, enum gs_site_metric metric,
                     struct gs_report_site **out);

/* The same for the blocks of the program's own allocator (blocks.c): by the
 * call sites of gpushim_block_alloc, at the blocks' peak or at the end. */
size_t gs_rank_block_sites(const struct gs_replay *r, struct gs_symbolizer *sym,
                           enum gs_stack_view view, enum gs_site_metric metric,
                           struct gs_report_site **out);

/* Calls fn for each source frame of a stack as view shows it, innermost
 * first, starting at the program's own call site, at most max frames, for
 * a screen to show: an address among them that its module named no
 * function for counts in gs_sym_unnamed. Returns how many it called fn
 * for. */
typedef void (*gs_frame_fn)(void *ctx, const struct gs_frame *f, unsigned index);
unsigned gs_site_frames(const struct gs_replay *r, struct gs_symbolizer *sym, uint32_t stack_id,
                        enum gs_stack_view view, unsigned max, gs_frame_fn fn, void *ctx);
/* The same frames for a key or a judgement, shown to nobody. */
unsigned gs_site_frames_unshown(const struct gs_replay *r, struct gs_symbolizer *sym,
                                uint32_t stack_id, enum gs_stack_view view, unsigned max,
                                gs_frame_fn fn, void *ctx);
/* What the stack says of Python (GS_PY_NONE for an unknown stack). */
enum gs_py_state gs_site_python(const struct gs_replay *r, uint32_t stack_id);
/* What gs_rank_sites merges sites by: stacks with the same key are one site
 * (their source frames). */
uint64_t gs_site_key(const struct gs_replay *r, struct gs_symbolizer *sym,
                     enum gs_stack_view view, uint32_t stack_id);
/* A frame in a few words: "function (file.c:12)", "function", or
 * "0x1234 (module path)" when the function is unknown. */
void gs_frame_name(const struct gs_frame *f, char *buf, size_t sz);
/* The operator whose backward the stack was running in PyTorch's autograd
 * (autograd.c), from its innermost native frame that says: 1 and the
 * operator's name in out ("mul"), or 0. */
int gs_site_backward_of(const struct gs_replay *r, struct gs_symbolizer *sym, uint32_t stack_id,
                        char *out, size_t outsz);
/* A site in a few words: its innermost two frames as gs_frame_name says
 * them, "f (a.c:3) from g (a.c:9)". */
void gs_site_where(const struct gs_replay *r, struct gs_symbolizer *sym, enum gs_stack_view view,
                   uint32_t stack_id, char *buf, size_t sz);

#endif
