/*
 * bound.h - GPUSHIM_MAX_BYTES (shim/bound/bound.c): the bounded trace, which
 * feeds every chunk to the replay model (analyzer/model, the one seam of
 * the shim to it), takes checkpoints and swaps the file.
 *
 * Included by: shim/bound, shim/writer, shim/entry (fork.c).
 */
#ifndef GPUSHIM_SHIM_BOUND_H
#define GPUSHIM_SHIM_BOUND_H

#include <stddef.h>
#include <stdint.h>

/* ---- bound.c: GPUSHIM_MAX_BYTES (call with the writer's lock held) ---- */
struct gs_trace_file; /* shim/file/file.h */
void gs_bound_start(uint64_t max_bytes);
/* Every chunk the writer writes, its records as the file will hold them
 * (encoded, not yet compressed), in order, before gs_bound_after_chunk. */
void gs_bound_feed_chunk(const uint8_t *raw, size_t len);
/* After each chunk is in the file (ring_pos: the ring position the file
 * reaches): may take a checkpoint, or put a new file (checkpoint, then the
 * recent chunks) in the trace's place. A program thread (writer_thread 0)
 * does so only when the next chunk would otherwise pass the limit. */
void gs_bound_after_chunk(struct gs_trace_file *tf, uint64_t ring_pos, int writer_thread);
/* At the END record: a checkpoint file not needed is removed; at exit the
 * bounding stops, at exec it goes on if the exec fails. */
void gs_bound_finish(int for_exec);
void gs_bound_reset_after_fork(void);

#endif
