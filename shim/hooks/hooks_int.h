/*
 * hooks_int.h - what the files of shim/hooks/ share: the helpers every hook
 * file uses (hooks_common.c), the pools' and the graphs' state that the
 * driver's stream-ordered hooks consult (hooks_pools.c, hooks_graphs.c).
 *
 * Included by: shim/hooks.
 */
#ifndef GPUSHIM_SHIM_HOOKS_INT_H
#define GPUSHIM_SHIM_HOOKS_INT_H

#include <stdint.h>

#include "gpushim_cuda.h"
#include "gpushim_trace.h"
#include "shim/base/base.h"
#include "shim/record/record.h"

/* ---- hooks_common.c: what every hook file shares ---- */
/* A hooked function whose real one cannot be found (our export called with
 * no driver loaded): said once, and the driver's "not initialized". */
gs_curesult gs_missing(enum gs_fn fn);
#define GS_REAL_OR_MISSING(name)                                                                   \
    gs_pfn_##name real = (gs_pfn_##name)gs_real(GS_FN_##name);                                     \
    if (!real)                                                                                     \
        return gs_missing(GS_FN_##name)
/* Records what an allocating call did: on success the allocation named by
 * the 8 bytes at out (a pointer, address or handle), else the failure. */
void gs_after_alloc(enum gs_api api, enum gs_kind kind, enum gs_space space, int32_t device,
                    gs_curesult r, const void *out, uint64_t size, gs_custream stream);
/* After a freeing call whose free was recorded before it: undoes it if r failed. */
void gs_after_free(enum gs_api api, enum gs_space space, uint64_t key, gs_custream stream,
                   gs_curesult r);
/* The body of a freeing hook: the free recorded, the real call, its undoing
 * if the driver refused, and the driver's answer returned. */
#define GS_FREEING(api, space, key, stream, call)                                                  \
    do {                                                                                           \
        gs_record_free(api, space, key, stream);                                                   \
        gs_curesult r_ = (call);                                                                   \
        gs_after_free(api, space, key, stream, r_);                                                \
        return r_;                                                                                 \
    } while (0)

/* ---- hooks_common.c: reading what the program points at ---- */
/* Copies up to max bytes of the string at p (of wchar_t when wide) into
 * out, stopping at the first byte that cannot be read (process_vm_readv: a
 * bad pointer is no crash); the caller finds its NUL. Returns the bytes
 * copied (0 for NULL). Changes errno: the caller keeps it. */
uint32_t gs_read_string(const void *p, void *out, uint32_t max, int wide);
/* The string at label, at most max bytes, into out: its length (up to its
 * NUL). One that cannot be read at all is the empty label, said once as
 * "WHO was given a label it cannot read". */
uint32_t gs_read_label(const char *label, char *out, uint32_t max, const char *who);

/* ---- nvtx.c: ranges that nest per thread (NVTX's and the public API's) ---- */
/* A range of domain (0: NVTX's default) named by text opens on this thread:
 * its depth in that domain, from 0. */
int gs_nvtx_push(uint32_t domain, const char *text, uint32_t len);
/* The thread's innermost range of domain closes: the depth left, or -1
 * when none was open. */
int gs_nvtx_pop(uint32_t domain);

/* ---- hooks_pools.c: stream-ordered pools ---- */
/* The device of a pool (from its creation), else of the stream; and the
 * kind of memory it holds (pinned host memory for a host-located pool). */
int32_t gs_pool_device(gs_cumempool pool, gs_custream stream, enum gs_kind *kind);
/* After an allocation or free in pool (NULL: the device's current pool):
 * samples its reserved and used bytes, at most every GPUSHIM_POOL_SAMPLE_MS
 * unless now is set. */
void gs_pool_note(gs_cumempool pool, int32_t device, int now);
/* After a stream-ordered free on device: samples the pools seen on it. */
void gs_pool_note_free(int32_t device);
/* Has any pool been seen? (A cheap test before gs_pool_note_free.) */
int gs_pools_seen(void);

/* ---- hooks_graphs.c: CUDA graphs ---- */
/* Does stream capture now (its stream-ordered allocations are graph nodes)? */
int gs_graph_capturing(gs_custream stream);
/* The device of a stream (its context's), or else of the current context;
 * the current context's while any capture is under way (see there). */
int32_t gs_stream_device(gs_custream stream);

#endif
