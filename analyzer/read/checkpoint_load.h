/*
 * checkpoint_load.h - a rotated trace's checkpoint loaded into a replay,
 * and the replay's reader callbacks that do it (analyzer/read/
 * checkpoint_load.c): the analyzer's alone, never in libgpushim.so (whose
 * bounded model takes gs_model_ops, without checkpoints).
 *
 * Included by: analyzer/read and the analyzer's layers above it (report:
 * load.c); tests.
 */
#ifndef GPUSHIM_READ_CHECKPOINT_LOAD_H
#define GPUSHIM_READ_CHECKPOINT_LOAD_H

#include <stddef.h>
#include <stdint.h>

struct gs_replay;
struct gs_reader_ops;

/* Loads one checkpoint record into r (gs_replay_ops' checkpoint callback).
 * BEGIN starts the state over (modules and stacks stay). The payload is
 * untrusted: returns -1 for one that is damaged, out of range, or out of
 * place (before BEGIN, after END or an event), changing nothing but the
 * checkpoint's openness (an END is the last record, whole or not). */
int gs_checkpoint_load(struct gs_replay *r, uint8_t type, const uint8_t *payload, size_t len);
/* The replay's callbacks for gs_read_trace and gs_decode_chunk: gs_model_ops
 * and the checkpoint's records (ctx: struct gs_replay *). */
extern const struct gs_reader_ops gs_replay_ops;

#endif
