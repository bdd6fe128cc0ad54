/*
 * record.h - one event (shim/record/): what the hooks call to record an
 * allocation, a free, a mapping, a pool's figures, a graph call, a mark or
 * a block (record.c: the thread, its device, the stack, the time -> the
 * ring), and the lock and reset functions fork.c calls.
 *
 * Included by: shim/record, shim/hooks, shim/entry.
 */
#ifndef GPUSHIM_SHIM_RECORD_H
#define GPUSHIM_SHIM_RECORD_H

#include <pthread.h>
#include <stdint.h>

#include "gpushim_cuda.h"
#include "gpushim_trace.h"

/* ---- record.c: what the hooks call ---- */
/* The API the program called: a runtime hook sets it for the driver calls it causes. */
enum gs_api gs_api_label(enum gs_api driver_api);
void gs_label_push(enum gs_api api);
void gs_label_pop(void);

/* A device argument that means: the current context's device. */
#define GS_DEVICE_CURRENT (-2)
/* The current context's device, or GS_DEVICE_UNKNOWN on a thread without one. */
int32_t gs_current_device(void);

/* Each records one event and keeps errno. addr is in the given space
 * (enum gs_space): an address, a handle, an array. */
void gs_record_alloc(enum gs_api api, enum gs_kind kind, enum gs_space space, int32_t device,
                     uint64_t addr, uint64_t size, gs_custream stream);
/* A failed allocation, with the device's free and total memory now. */
/* The free device memory cuMemGetInfo just told the calling thread: if its
 * next allocation asks for exactly that much, the allocation is marked as a
 * request for all free memory (a probe's first guess: PyTorch's
 * cudaMallocAsync backend in cacheInfo). */
void gs_note_free_memory(uint64_t free_bytes);
void gs_record_alloc_failed(enum gs_api api, int32_t device, uint64_t size, gs_custream stream,
                            gs_curesult result);
/* Recorded before the real call; followed by gs_record_free_failed if it fails. */
void gs_record_free(enum gs_api api, enum gs_space space, uint64_t addr, gs_custream stream);
void gs_record_free_failed(enum gs_api api, enum gs_space space, uint64_t addr,
                           gs_custream stream, gs_curesult result);
/* A mapping of physical memory (handle) at [addr, addr+size), and the end of
 * every mapping in [addr, addr+size) (recorded before the real call). */
void gs_record_map(enum gs_api api, uint64_t addr, uint64_t size, gs_cumemhandle handle);
void gs_record_unmap(enum gs_api api, uint64_t addr, uint64_t size);
/* One more reference to a live allocation. */
void gs_record_ref(enum gs_api api, enum gs_space space, uint64_t addr);
/* A stream-ordered pool's reserved and used bytes. */
void gs_record_pool(enum gs_api api, int32_t device, gs_cumempool pool, uint64_t reserved,
                    uint64_t used);
/* CUDA graphs (hooks_graphs.c): a memory node added to graph (0: to the
 * graph the capture on stream makes), and a graph call, with the device's
 * graph pool after it when sample is set. */
void gs_record_graph_node(enum gs_api api, int32_t device, uint64_t addr, uint64_t size,
                          gs_custream stream, uint64_t graph, int is_free);
void gs_record_graph(enum gs_api api, enum gs_graph_op op, int32_t device, uint64_t graph,
                     uint64_t exec, gs_custream stream, uint64_t flags, gs_curesult result,
                     int sample);
/* The public API (api.c): a mark with its label (len bytes, cut at
 * GS_MAX_LABEL), and a block of the program's own allocator given out
 * (GS_REC_BLOCK_ALLOC, with the stack) or back (GS_REC_BLOCK_FREE). */
void gs_record_mark(const char *label, uint32_t len);
/* The same with flags (enum gs_mark_flag: GS_MARK_STEP_END, a step's end). */
void gs_record_mark_flags(const char *label, uint32_t len, uint32_t flags);
/* BLOCK_FREE: size is a span (every block starting in [addr, addr+size)
 * goes back), or 0 for the one block at addr. */
void gs_record_block(enum gs_record_type type, uint64_t addr, uint64_t size);
/* An NVTX range event (nvtx.c): op, domain (0: the default), id (START,
 * END), flags (enum gs_range_flag), label (PUSH, START, DOMAIN). No stack. */
void gs_record_range(enum gs_range_op op, uint32_t domain, uint64_t id, uint32_t flags,
                     const char *label, uint32_t len);
/* A thread was renamed (hooks_threads.c): every thread reads its name
 * again at its next event. Keeps errno. */
void gs_thread_renamed(void);
/* Around fork (fork.c): the stack table's lock, and the child's reset. */
void gs_record_lock(void);
void gs_record_unlock(void);
void gs_record_reset_after_fork(void);

/* Around fork (fork.c): no capture runs while the gate is held (unwind.c). */
void gs_unwind_lock(void);
void gs_unwind_unlock(void);
void gs_unwind_reset_after_fork(void);

/* Around fork (fork.c): the Python code objects' lock (python.c), and the
 * modules' (modules.c); pythreads.c's notes after it. */
void gs_python_lock(void);
void gs_python_unlock(void);
void gs_python_reset_after_fork(void);
void gs_modules_lock(void);
void gs_modules_unlock(void);
void gs_modules_reset(void);

/* pythreads.c: a thread t the calling thread just started (the
 * pthread_create hook): when it is a threading.Thread, its Python name is
 * noted for it to take at its first event. */
void gs_pythreads_started(pthread_t t);
void gs_pythreads_reset_after_fork(void);

#endif
