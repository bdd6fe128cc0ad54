/*
 * checkpoint.h - the replay state as trace records, for GPUSHIM_MAX_BYTES:
 * the writer (analyzer/model/checkpoint.c, which the shim's bounded trace
 * runs), what a loaded checkpoint left (struct gs_checkpoint_state), and
 * what the loader (analyzer/read/checkpoint_load.c, the analyzer's alone)
 * builds a replay state with.
 *
 * Included by: analyzer/model/model.h (which the others include)
 */
#ifndef GPUSHIM_MODEL_CHECKPOINT_H
#define GPUSHIM_MODEL_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "gpushim_trace.h"

struct gs_replay;
struct gs_site;
struct gs_live_alloc;
struct gs_pool_usage;
struct gs_marks;
struct gs_blocks;
struct gs_block;
struct gs_graph_pool;
struct gs_graph_obj;
struct gs_graph_node;

/* The checkpoint a rotated trace starts with (checkpoint.c). */
struct gs_checkpoint_state {
    int present;             /* one was loaded: the history before it is summarized */
    int open;                /* its BEGIN record was read, its END and events not yet */
    uint64_t time_ns;        /* the time it was taken (its last event's) */
    uint64_t events;         /* events it summarizes */
    uint64_t loaded[GS_REC_CKPT_LAST - GS_REC_CKPT_FIRST + 1]; /* records, by type */
    uint64_t api_loaded[GS_REC_CKPT_API_LAST - GS_REC_CKPT_API_FIRST + 1]; /* the same, of
                                                                            * marks and blocks */
    uint64_t api_items[3]; /* CKPT_API_ITEM records: recent marks, steps, failure figures */
};

/* Writes the whole of r as complete trace records (u8 type, varint payload
 * length, payload; each at most GS_MAX_RECORD bytes), one put call each:
 * the MODULE, PYCODE and STACK records of every module, Python code object
 * and stack r knows, then the
 * checkpoint records (include/gpushim_trace.h). Replaying them into a fresh
 * replay, then the events that follow, reports what replaying every event
 * would. put returns 0, or -1 to stop. Returns 0, or -1 when put failed. */
int gs_checkpoint_write(const struct gs_replay *r,
                        int (*put)(void *ctx, const uint8_t *rec, size_t len), void *ctx);

/* ---- building a state (the loader) ---- */
/* Forgets the live set, the sites, the totals, pools, failures and recent
 * frees; keeps the modules, stacks and Python code objects. */
void gs_replay_reset(struct gs_replay *r);
/* The site (stack_id, kind); made (zeroed) when make is set and there is
 * none. NULL: none, or no memory. kind must be below GS_KIND_COUNT. */
struct gs_site *gs_replay_site(struct gs_replay *r, uint32_t stack_id, uint32_t kind, int make);
/* Adds a to the live set as is, touching no totals: 0, or -1 on no memory. */
int gs_replay_insert(struct gs_replay *r, const struct gs_live_alloc *a);
/* The pool with this id; made (zeroed but for its id and device) when make
 * is set and there is none. NULL: none, or no memory. */
struct gs_pool_usage *gs_replay_pool(struct gs_replay *r, uint64_t pool, int32_t device, int make);
/* A label's index, made if make and there is room; GS_MARK_OTHER if none. */
uint32_t gs_marks_label(struct gs_marks *m, const char *label, size_t len, int make);
/* Builds the address-ordered cache of segments and blocks from the live
 * sets, if it is not there: 0, or -1 on no memory. */
int gs_blocks_index(struct gs_replay *r);
/* Room for at_failure[idx] (new entries zeroed): 0, or -1 on no memory. */
int gs_blocks_failure_room(struct gs_blocks *b, size_t idx);
/* The block site of a stack; made (zeroed) when make. NULL: none, or no memory. */
struct gs_site *gs_blocks_site(struct gs_blocks *b, uint32_t stack_id, int make);
/* Adds a live block as it is (checkpoint.c): 0, or -1 on no memory or a
 * block already live at its address. */
int gs_blocks_insert(struct gs_blocks *b, const struct gs_block *blk);
/* A device's graph pool (GS_MAX_DEVICES: an unknown device's); a graph,
 * executable or capture by its handle (NULL: none); one made (NULL: no
 * memory); a memory node added to one (0, or -1 on no memory). */
struct gs_graph_pool *gs_graphs_pool(struct gs_replay *r, int32_t device);
struct gs_graph_obj *gs_graphs_find(struct gs_replay *r, uint32_t which, uint64_t handle);
struct gs_graph_obj *gs_graphs_make(struct gs_replay *r, uint32_t which, uint64_t handle);
int gs_graphs_add_node(struct gs_graph_obj *o, const struct gs_graph_node *n);

#endif
