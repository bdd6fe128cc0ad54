/*
 * writer.h - the trace's life (shim/writer/writer.c): gs_emit, the one door
 * into the ring; the file created on the first event, drained into chunks
 * by a thread and at exit; finished before exec; let go of after fork.
 *
 * Included by: shim/writer, shim/record, shim/hooks, shim/entry.
 */
#ifndef GPUSHIM_SHIM_WRITER_H
#define GPUSHIM_SHIM_WRITER_H

#include <stdint.h>

#include "gpushim_ring.h" /* the bodies gs_emit takes */

/* ---- writer.c: the trace file's life ---- */
/* Pushes one body (a struct of gpushim_ring.h); creates the trace on the
 * first call; drains synchronously when the ring is full. Returns 0, or -1 once recording has failed for good. */
int gs_emit(void *body, uint32_t len, int timed);
/* True once recording has stopped for good: the trace could not be written,
 * and the ring file (if any) is full too. */
int gs_recording_off(void);
/* An event not recorded because recording is off: counted in the ring file. */
void gs_count_lost(void);
/* Before exec: drains the ring and writes the END record, if this process
 * has a trace. Returns whether it did. */
int gs_writer_finish_for_exec(void);
/* Around fork (fork.c): the writer's locks, and the child's reset (it lets
 * go of the parent's trace and ring; its own starts at its first event). */
void gs_writer_lock(void);
void gs_writer_unlock(void);
void gs_writer_reset_after_fork(void);
/* After an exec that failed (it returned): the trace goes on. */
void gs_writer_exec_failed(int finished);
/* gpushim_flush(): the ring drained into the trace file now, on the calling
 * thread, if this process has a trace open. Keeps errno. */
void gs_writer_flush(void);

#endif
