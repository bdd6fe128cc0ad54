/*
 * shim.h - the interfaces between the parts of libgpushim.so.
 *
 * The path of one event, and the file that owns each step:
 *
 *   hooks_driver.c / hooks_runtime.c   the program's call, forwarded to the real function
 *   (hooks_vmm.c, _host.c, _arrays.c, _pools.c, _graphs.c: the other kinds of memory)
 *   record.c                           event assembly: device, stack id, time -> ring
 *   stacks.c, modules.c                stack capture and dedup; loaded modules
 *   python.c                           the Python frames (pyread.c, pylayout.c, pylines.c:
 *                                      read from memory, without the GIL)
 *   ring.c                             the queue of entries, in a file mapped MAP_SHARED
 *                                      ("<trace>.ring") that outlives the process
 *   writer.c                           drains the ring into blocks (encode.c, tracefile.c)
 *                                      from a thread every 100 ms and at exit
 *   hooks_threads.c                    thread renames, so that each event has its thread's name
 *   api.c                              the public API (include/gpushim.h): marks, blocks
 *   torch_alloc.c                      PyTorch's pluggable allocator, recorded
 *   bound.c                            GPUSHIM_MAX_BYTES: checkpoint and swap of the file
 *
 * and of the lookups that bring the program to the hooks:
 *
 *   real.c          the real functions, and which of our wrappers stands for each
 *   dlsym_hook.c    the exported dlsym (both glibc symbol versions)
 *   getproc_hook.c  the wrapped cuGetProcAddress / cuGetProcAddress_v2
 *
 * Lock order (take only in this order): the unwinding gate, runtime call
 * sites, pools, stack table, Python code objects, modules, writer, ring.
 */
#ifndef GPUSHIM_SHIM_H
#define GPUSHIM_SHIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct link_map;

#include "gpushim_cuda.h"
#include "gpushim_ring.h"
#include "gpushim_trace.h"

#define GS_EXPORT __attribute__((visibility("default")))

/* ---- config.c: settings from the environment, read once ---- */
struct gs_config {
    const char *output;   /* GPUSHIM_OUTPUT, default "gpushim.%p.trace" */
    unsigned stack_depth; /* GPUSHIM_STACK_DEPTH, 1..GS_MAX_FRAMES, default 64 */
    unsigned flush_ms;    /* GPUSHIM_FLUSH_MS, 10..10000, default 100 */
    unsigned pool_sample_ms; /* GPUSHIM_POOL_SAMPLE_MS, 0..60000, default 10 */
    unsigned buffer_mb;   /* GPUSHIM_BUFFER_MB, 1..1024, default 8: the ring's size */
    uint64_t max_bytes;   /* GPUSHIM_MAX_BYTES, 0 (default: no bound) or at least 4 MiB */
    unsigned python;      /* GPUSHIM_PYTHON: 1 (default: Python frames, read from memory
                           * where the layout is known), 2 (only through the API,
                           * where a thread holds the GIL) or 0 (none) */
    int verbose;          /* GPUSHIM_VERBOSE=1: say where the trace goes */
};
const struct gs_config *gs_config(void);
/* Says something on stderr, prefixed "gpushim: ", once per distinct call site
 * (pass a static int as *once). Never fails, never allocates. */
void gs_warn_once(int *once, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gs_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline uint64_t gs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- real.c: the functions the hooks forward to ---- */
enum gs_fn {
#define GS_FN_ENUM(name, ret, params) GS_FN_##name,
    GS_DRIVER_HOOKED(GS_FN_ENUM) GS_DRIVER_GETTERS(GS_FN_ENUM) GS_DRIVER_USED(GS_FN_ENUM)
        GS_RUNTIME_HOOKED(GS_FN_ENUM)
#undef GS_FN_ENUM
        GS_FN_COUNT
};
/* The real function for fn, resolved on first use: the pointer a lookup of
 * the program's handed us, else the next definition after the shim, else the
 * driver already loaded in the process. NULL when there is none. */
void *gs_real(enum gs_fn fn);
const char *gs_fn_name(enum gs_fn fn);
/* Offers real as fn's real function: the slot keeps it if it was empty.
 * Returns what the slot holds now (real, or the one found before). */
void *gs_real_offer(enum gs_fn fn, void *real);
/* Index of the exported function called name that the shim wraps, or -1. */
int gs_fn_by_name(const char *name);
/* The next definition of name after the shim (glibc's), looked up once into
 * *cache; errno as it was. */
void *gs_real_next(void **cache, const char *name);
/* The real dlsym, from glibc; never our own. */
void *gs_real_dlsym(void *handle, const char *name);
/* True when addr lies inside libgpushim.so's own image. */
int gs_in_shim(const void *addr);
/* The loaded object that holds addr, or NULL. */
struct link_map *gs_link_map_of(const void *addr);
/* name as a lookup in the scope of the loaded object l finds it (l, then its
 * dependencies; for the program, the global scope): never loads anything. */
void *gs_lookup_in_scope(struct link_map *l, const char *name);

/* ---- hooks_driver.c: what every hook file shares ---- */
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
void gs_pools_lock(void);
void gs_pools_unlock(void);
void gs_pools_reset(void);

/* ---- hooks_graphs.c: CUDA graphs ---- */
/* Does stream capture now (its stream-ordered allocations are graph nodes)? */
int gs_graph_capturing(gs_custream stream);

/* ---- hooks_runtime.c: around fork, the table of call sites ---- */
void gs_runtime_lock(void);
void gs_runtime_unlock(void);
void gs_runtime_reset_after_fork(void);
/* The runtime function fn as the program's call from caller reaches it: in
 * the scope of the caller's object, else the next after the shim (cached by
 * call site). NULL when there is none; then gs_runtime_missing says so once
 * and returns the runtime's "initialization error". */
void *gs_runtime_real(enum gs_fn fn, const void *caller);
gs_cudaerror gs_runtime_missing(enum gs_fn fn);

/* ---- getproc_hook.c: the table of our wrappers, and the getters ---- */
/* Called with what a lookup of the program returned for fn. Returns what the
 * program should get: our wrapper if real is (or now becomes) the function
 * the wrapper forwards to, or another entry point of the same object (the
 * driver's internal ones), else real itself, untouched. */
void *gs_substitute(enum gs_fn fn, void *real);

/* What a program gets for a driver entry point it looked up by base name
 * (also through cudaGetDriverEntryPoint): our wrapper, or real untouched. */
void *gs_getproc_substitute(const char *symbol, void *real, int version, gs_cuuint64 flags);

/* ---- record.c: what the hooks call ---- */
/* The API the program called: a runtime hook sets it for the driver calls it causes. */
enum gs_api gs_api_label(enum gs_api driver_api);
void gs_label_push(enum gs_api api);
void gs_label_pop(void);

/* A device argument that means: the current context's device. */
#define GS_DEVICE_CURRENT (-2)
/* The device of a stream (its context's), or else of the current context. */
int32_t gs_stream_device(gs_custream stream);

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
void gs_record_block(enum gs_record_type type, uint64_t addr, uint64_t size);
/* A thread was renamed (hooks_threads.c): every thread reads its name
 * again at its next event. Keeps errno. */
void gs_thread_renamed(void);
/* hooks_threads.c: our pthread_setname_np and prctl, by names no other
 * definition can stand in for. */
__attribute__((visibility("hidden"))) int gs_setname_wrapper(pthread_t thread, const char *name);
__attribute__((visibility("hidden"))) int gs_prctl_wrapper(int option, ...);
/* Around fork (fork.c): the stack table's lock, and the child's reset. */
void gs_record_lock(void);
void gs_record_unlock(void);
void gs_record_reset_after_fork(void);

/* ---- ring.c: the queue of entries, in the ring file (include/gpushim_ring.h) ---- */
struct gs_ring {
    struct gs_ring_header *hdr; /* head, tail and the rest live in the mapping */
    uint8_t *buf;               /* the data, hdr + GS_RING_HEADER_SIZE */
    uint64_t cap;               /* a power of two */
    int shared;                 /* backed by a file that outlives the process */
};
/* Maps a ring of cap data bytes: in the file at path (created, fully
 * allocated on disk so that no later write to it can fail for space), or
 * anonymous memory when path is NULL. Returns 0, or -1 with errno. */
int gs_ring_init(struct gs_ring *r, const char *path, size_t cap, uint64_t id);
/* Unmaps it (the file stays). */
void gs_ring_destroy(struct gs_ring *r);
/* Moves the ring's content into a new file at path (after the old one was
 * removed); the ring is left as it was on failure. 0 or -1 with errno. */
int gs_ring_move_to_file(struct gs_ring *r, const char *path);
/* Appends an entry with body [body, body+len); -1 when it does not fit now. */
int gs_ring_push(struct gs_ring *r, const void *body, uint32_t len);
/* Copies the body of the entry at pos into out (room for max bytes). Returns
 * the body length and sets *next to the following entry, or 0 if malformed. */
uint32_t gs_ring_read(const struct gs_ring *r, uint64_t pos, void *out, uint32_t max,
                      uint64_t *next);

/* ---- stacks.c: capture and deduplication ---- */
/* Captures up to max return addresses of the calling thread, innermost
 * first, starting at the first frame outside the shim. */
unsigned gs_capture_stack(uint64_t *pcs, unsigned max);
/* Around fork: no capture runs while the gate is held (see unwind.c). */
void gs_unwind_lock(void);
void gs_unwind_unlock(void);
void gs_unwind_reset_after_fork(void);
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
void gs_python_lock(void);
void gs_python_unlock(void);
void gs_python_reset_after_fork(void);

/* ---- modules.c: the images loaded in the process ---- */
/* Makes sure every pc is inside a module already pushed to the ring, pushing
 * new modules first (call with no shim lock held). */
void gs_modules_cover(const uint64_t *pcs, unsigned n);
void gs_modules_lock(void);
void gs_modules_unlock(void);
void gs_modules_reset(void);

/* ---- writer.c: the trace file's life ---- */
/* Pushes one body; creates the trace on the first call; drains synchronously
 * when the ring is full. Returns 0, or -1 once recording has failed for good. */
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

/* ---- bound.c: GPUSHIM_MAX_BYTES (call with the writer's lock held) ---- */
struct gs_trace_file;
void gs_bound_start(uint64_t max_bytes);
/* Every block the writer writes, its records as the file will hold them
 * (encoded, not yet compressed), in order, before gs_bound_after_block. */
void gs_bound_feed_block(const uint8_t *raw, size_t len);
/* After each block is in the file (ring_pos: the ring position the file
 * reaches): may take a checkpoint, or put a new file (checkpoint, then the
 * recent blocks) in the trace's place. A program thread (writer_thread 0)
 * does so only when the next block would otherwise pass the limit. */
void gs_bound_after_block(struct gs_trace_file *tf, uint64_t ring_pos, int writer_thread);
/* At the END record: a checkpoint file not needed is removed; at exit the
 * bounding stops, at exec it goes on if the exec fails. */
void gs_bound_finish(int for_exec);
void gs_bound_reset_after_fork(void);

/* ---- encode.c: ring bodies -> trace records: in gpushim_ring.h ---- */

/* ---- tracefile.c: naming, creating and framing the file ---- */
/* What the writer knows of its trace file. */
struct gs_trace_file {
    int fd;
    dev_t dev; /* the file fd was opened on */
    ino_t ino;
    char path[4096];
    uint64_t size; /* bytes written whole */
    /* what its header says */
    uint64_t start_ns, realtime_ns;
    unsigned stack_depth;
    uint64_t ring_id;
    const char *ring_name; /* NULL: no ring file */
};
/* Expands %p, %h, %% in a GPUSHIM_OUTPUT template. Returns 0, -1 if too long. */
int gs_expand_path(const char *tmpl, char *out, size_t outsz);
/* Creates the file: mode 0600, never follows a symlink, never overwrites;
 * when the name exists, tries NAME-1.trace, NAME-2.trace, ... Returns the fd
 * and the name it used in path (outsz bytes), or -1 with errno. */
int gs_create_trace(char *path, size_t outsz);
/* Writes the preamble and header. 0 or -1 with errno. */
/* May a file grow to end bytes under RLIMIT_FSIZE? Past it the kernel would
 * send SIGXFSZ, which kills the program: the shim checks first, and treats
 * a file that may not grow as full (0, errno EFBIG). */
int gs_fsize_room(uint64_t end);
/* Writes all of buf at fd's offset (retrying short writes and EINTR), if
 * the file may grow that far. 0, or -1 with errno. */
int gs_write_all(int fd, const void *buf, size_t len);
/* ring_name: the ring file's name (no directory), or NULL for none. */
int gs_write_header(int fd, uint64_t start_ns, uint64_t realtime_ns, unsigned stack_depth,
                    uint64_t ring_id, const char *ring_name);
/* Compresses raw[0..len) into one block and writes it; *written: its size
 * in the file. 0 or -1 with errno. */
int gs_write_block(int fd, const uint8_t *raw, size_t len, uint8_t *scratch, size_t scratch_len,
                   size_t *written);
size_t gs_block_scratch_size(size_t raw_len);

#endif
