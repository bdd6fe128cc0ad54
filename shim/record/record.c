/*
 * record.c - turns one hooked call into ring entries.
 *
 * For an allocation: the thread, the device (from the current context, via
 * the real cuCtxGetDevice, never recorded), the call stack (native, then
 * Python frames when the thread holds the GIL: python.c) interned into a
 * stack id (a new stack is pushed to the ring once, after the modules its
 * frames lie in and the Python code objects it names), then the event
 * itself. The event's time is taken under
 * the ring's lock (writer.c), so times in the trace never go backwards.
 *
 * Everything here keeps errno, and a thread already inside the recorder
 * (a driver call made while recording) is not recorded twice.
 *
 * The stack table is shared and locked; each thread also keeps a small
 * cache of the stacks it met (hash -> id and the table's copy of the
 * frames, which never moves), so that a stack seen before costs no lock.
 *
 * Each thread's name (as the program set it: PyTorch's "pt_autograd_0", a
 * pool's workers) goes into the ring before the thread's first event, and
 * again before its first event after it changed (GS_REC_THREAD). Reading
 * the name is a system call, too dear for every event, and a thread may be
 * renamed at any time, by itself or by another thread; so the hooks of
 * pthread_setname_np and prctl(PR_SET_NAME) (hooks_threads.c) count
 * renames, and a thread reads its name again only when that count moved
 * since it last did: one relaxed load per event otherwise, and a rename is
 * caught at the renamed thread's very next event. A name set without those
 * functions (a write to /proc/self/task/TID/comm, a raw system call) is
 * seen when another rename comes; the first name is always read. A thread
 * that Python's threading started has the name Python gave it instead
 * (pythreads.c), for good.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/base/base.h"
#include "shim/writer/writer.h"
#include "shim/record/record.h"
#include "shim/record/record_int.h"

static __thread struct {
    uint8_t label; /* GS_API_* set by a runtime hook, 0 for none */
    uint8_t depth; /* runtime hooks active on this thread */
    uint8_t busy;  /* inside the recorder */
    uint8_t name_len; /* of name, the name last recorded */
    uint8_t py_named; /* its name is the one Python gave it (pythreads.c): kept */
    uint32_t tid;
    uint32_t name_gen; /* renames when the name was last read (0: never read) */
    char name[16];
    uint8_t free_told;    /* cuMemGetInfo answered, no allocation attempt since */
    uint64_t free_answer; /* what it answered: the free device memory */
} tls;

/* Renames of threads counted by the hooks; never 0, which a thread's
 * name_gen holds before its first event. */
static uint32_t renames = 1;

void gs_thread_renamed(void)
{
    if (__atomic_add_fetch(&renames, 1, __ATOMIC_RELEASE) == 0)
        __atomic_add_fetch(&renames, 1, __ATOMIC_RELEASE);
}

static pthread_mutex_t stack_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gs_stack_table stacks;

/* A thread's cache of stacks: direct-mapped on the hash, allocated on the
 * thread's first stack, freed when it exits. An entry holds a stack the
 * thread found or put in the table under the lock, so the frames it points
 * at were published to this thread then; they are never written again. */
#define CACHE_SLOTS 256
struct cached_stack {
    uint64_t hash;
    const uint64_t *frames; /* the table's copy (stacks.c) */
    uint32_t n, id;         /* id 0: empty */
};
static __thread struct cached_stack *stack_cache;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_key_ok;

static void cache_free(void *cache)
{
    stack_cache = NULL; /* this thread's: a later event starts a new cache */
    free(cache);
}

static void cache_key_init(void) { cache_key_ok = pthread_key_create(&cache_key, cache_free) == 0; }

static uint32_t cache_find(const uint64_t *pcs, unsigned n, uint64_t hash)
{
    const struct cached_stack *e = stack_cache ? &stack_cache[hash & (CACHE_SLOTS - 1)] : NULL;
    if (e && e->id && e->hash == hash && e->n == n &&
        (n == 0 || memcmp(e->frames, pcs, n * sizeof *pcs) == 0))
        return e->id;
    return 0;
}

static void cache_put(const uint64_t *frames, unsigned n, uint64_t hash, uint32_t id)
{
    if (!stack_cache) {
        pthread_once(&cache_once, cache_key_init);
        if (!cache_key_ok)
            return; /* no way to free it at the thread's exit: go without */
        struct cached_stack *c = calloc(CACHE_SLOTS, sizeof *c);
        if (!c || pthread_setspecific(cache_key, c) != 0) {
            free(c);
            return;
        }
        stack_cache = c;
    }
    stack_cache[hash & (CACHE_SLOTS - 1)] =
        (struct cached_stack){.hash = hash, .frames = frames, .n = n, .id = id};
}

void gs_label_push(enum gs_api api)
{
    if (tls.depth++ == 0)
        tls.label = (uint8_t)api;
}

void gs_label_pop(void)
{
    if (tls.depth && --tls.depth == 0)
        tls.label = 0;
}

enum gs_api gs_api_label(enum gs_api driver_api)
{
    return tls.label ? (enum gs_api)tls.label : driver_api;
}

static uint32_t thread_id(void)
{
    if (!tls.tid)
        tls.tid = (uint32_t)syscall(SYS_gettid);
    return tls.tid;
}

int32_t gs_current_device(void)
{
    gs_pfn_cuCtxGetDevice get = (gs_pfn_cuCtxGetDevice)gs_real(GS_FN_cuCtxGetDevice);
    gs_cudevice dev;
    if (get && get(&dev) == GS_CUDA_SUCCESS)
        return dev;
    return GS_DEVICE_UNKNOWN; /* a thread with no current context */
}

/* The id of the calling thread's current stack; 0 when it could not be had. */
static uint32_t current_stack(void)
{
    uint64_t pcs[GS_MAX_FRAMES];
    unsigned native = gs_capture_stack(pcs, gs_config()->stack_depth);
    unsigned n = gs_python_frames(pcs, native, GS_MAX_FRAMES);
    uint64_t h = gs_stack_hash(pcs, n);
    uint32_t id = cache_find(pcs, n, h);
    if (id)
        return id;

    const uint64_t *frames = NULL;
    pthread_mutex_lock(&stack_lock);
    id = gs_stack_find(&stacks, pcs, n, h, &frames);
    pthread_mutex_unlock(&stack_lock);
    if (id) {
        cache_put(frames, n, h, id);
        return id;
    }

    gs_modules_cover(pcs, native); /* takes the loader's lock: no shim lock may be held */

    pthread_mutex_lock(&stack_lock);
    int is_new = 0;
    id = gs_stack_intern(&stacks, pcs, n, h, &is_new, &frames);
    if (is_new) {
        /* Pushed before the lock is released: no thread can name the id
         * before its definition is in the ring. */
        static union { /* stack_lock held: not on the stack, which may be a small one */
            struct gs_stack_body b;
            uint8_t bytes[sizeof(struct gs_stack_body) + GS_MAX_FRAMES * sizeof(uint64_t)];
        } body;
        memset(&body.b, 0, sizeof body.b);
        body.b.type = GS_REC_STACK;
        body.b.id = id;
        body.b.n = n;
        memcpy(body.b.pcs, pcs, n * sizeof pcs[0]);
        gs_emit(&body, (uint32_t)(sizeof body.b + n * sizeof pcs[0]), 0);
    }
    pthread_mutex_unlock(&stack_lock);
    if (id)
        cache_put(frames, n, h, id);
    return id;
}

/* Puts the calling thread's name in the ring before its event when it was
 * never recorded or may have changed since (see the top of the file). */
static void note_thread_name(uint32_t tid)
{
    uint32_t now = __atomic_load_n(&renames, __ATOMIC_ACQUIRE);
    if (tls.name_gen == now)
        return;
    int first = tls.name_gen == 0;
    tls.name_gen = now;
    if (tls.py_named)
        return;
    union {
        struct gs_thread_body t;
        uint8_t bytes[sizeof(struct gs_thread_body) + GS_MAX_THREAD_NAME];
    } body;
    char name[GS_MAX_THREAD_NAME] = {0};
    size_t len = first ? gs_pythreads_take(name, sizeof name) : 0;
    if (len) {
        tls.py_named = 1;
    } else {
        /* The raw call: the program's prctl may be our own hook, or another's. */
        if (syscall(SYS_prctl, PR_GET_NAME, name, 0, 0, 0) != 0)
            return;
        len = strnlen(name, 16);
        if (!first && len == tls.name_len && memcmp(name, tls.name, len) == 0)
            return; /* another thread was renamed */
        memcpy(tls.name, name, len);
        tls.name_len = (uint8_t)len;
    }
    memset(&body.t, 0, sizeof body.t);
    body.t.type = GS_REC_THREAD;
    body.t.name_len = (uint8_t)len;
    body.t.tid = tid;
    memcpy(body.t.name, name, len);
    gs_emit(&body, (uint32_t)(sizeof body.t + len), 0);
}

/* Records a body of len bytes that starts with the event ev. */
static void record_body(struct gs_ev *ev, uint32_t len, int with_stack)
{
    if (tls.busy)
        return;
    if (gs_recording_off()) { /* first, in a clone() child, lets go of the parent's trace */
        gs_count_lost();
        return;
    }
    tls.busy = 1;
    int saved = errno;
    ev->tid = thread_id();
    note_thread_name(ev->tid);
    if (ev->device == GS_DEVICE_CURRENT)
        ev->device = gs_current_device();
    if (with_stack)
        ev->stack_id = current_stack();
    gs_emit(ev, len, 1);
    errno = saved;
    tls.busy = 0;
}

static void record(struct gs_ev *ev, int with_stack) { record_body(ev, sizeof *ev, with_stack); }

void gs_note_free_memory(uint64_t free_bytes)
{
    tls.free_answer = free_bytes;
    tls.free_told = 1;
}

/* Did the thread's last cuMemGetInfo, with no attempt since, answer size?
 * Ends what it answered: it speaks of the next attempt only. */
static int asks_all_free(uint64_t size)
{
    int all = tls.free_told && tls.free_answer == size;
    tls.free_told = 0;
    return all;
}

void gs_record_alloc(enum gs_api api, enum gs_kind kind, enum gs_space space, int32_t device,
                     uint64_t addr, uint64_t size, gs_custream stream)
{
    struct gs_ev ev = {.type = GS_REC_ALLOC,
                       .api = (uint8_t)gs_api_label(api),
                       .kind = (uint8_t)kind,
                       .space = (uint8_t)space,
                       .device = device,
                       .addr = addr,
                       .size = size,
                       .stream = (uint64_t)(uintptr_t)stream};
    if (kind != GS_KIND_ADDRESS_SPACE && kind != GS_KIND_MAPPED)
        ev.free_bytes = (uint64_t)asks_all_free(size);
    record(&ev, 1);
}

void gs_record_alloc_failed(enum gs_api api, int32_t device, uint64_t size, gs_custream stream,
                            gs_curesult result)
{
    struct gs_ev ev = {.type = GS_REC_ALLOC_FAILED,
                       .api = (uint8_t)gs_api_label(api),
                       .device = device,
                       .size = size,
                       .stream = (uint64_t)(uintptr_t)stream,
                       .result = result,
                       .free_bytes = UINT64_MAX,
                       .total_bytes = UINT64_MAX};
    tls.free_told = 0; /* an attempt: what cuMemGetInfo answered is about it at most */
    if (tls.busy)
        return;
    int saved = errno;
    int32_t current = gs_current_device();
    if (ev.device == GS_DEVICE_CURRENT)
        ev.device = current;
    /* cuMemGetInfo speaks of the current context's device only. */
    gs_pfn_cuMemGetInfo_v2 info = (gs_pfn_cuMemGetInfo_v2)gs_real(GS_FN_cuMemGetInfo_v2);
    size_t free_b, total_b;
    if (ev.device == current && current >= 0 && info &&
        info(&free_b, &total_b) == GS_CUDA_SUCCESS) {
        ev.free_bytes = free_b;
        ev.total_bytes = total_b;
    }
    errno = saved;
    record(&ev, 1);
}

void gs_record_free(enum gs_api api, enum gs_space space, uint64_t addr, gs_custream stream)
{
    if (!addr)
        return; /* freeing 0 (NULL) does nothing */
    struct gs_ev ev = {.type = GS_REC_FREE,
                       .api = (uint8_t)gs_api_label(api),
                       .space = (uint8_t)space,
                       .device = GS_DEVICE_CURRENT,
                       .addr = addr,
                       .stream = (uint64_t)(uintptr_t)stream};
    record(&ev, 0);
}

void gs_record_free_failed(enum gs_api api, enum gs_space space, uint64_t addr,
                           gs_custream stream, gs_curesult result)
{
    struct gs_ev ev = {.type = GS_REC_FREE_FAILED,
                       .api = (uint8_t)gs_api_label(api),
                       .space = (uint8_t)space,
                       .device = GS_DEVICE_CURRENT,
                       .addr = addr,
                       .stream = (uint64_t)(uintptr_t)stream,
                       .result = result};
    record(&ev, 0);
}

void gs_record_map(enum gs_api api, uint64_t addr, uint64_t size, gs_cumemhandle handle)
{
    struct gs_ev ev = {.type = GS_REC_ALLOC,
                       .api = (uint8_t)gs_api_label(api),
                       .kind = GS_KIND_MAPPED,
                       .space = GS_SPACE_MAPPING,
                       .device = GS_DEVICE_CURRENT,
                       .addr = addr,
                       .size = size,
                       .parent = handle};
    record(&ev, 1);
}

void gs_record_unmap(enum gs_api api, uint64_t addr, uint64_t size)
{
    struct gs_ev ev = {.type = GS_REC_FREE,
                       .api = (uint8_t)gs_api_label(api),
                       .space = GS_SPACE_MAPPING,
                       .device = GS_DEVICE_CURRENT,
                       .addr = addr,
                       .size = size};
    if (addr)
        record(&ev, 0);
}

void gs_record_ref(enum gs_api api, enum gs_space space, uint64_t addr)
{
    struct gs_ev ev = {.type = GS_REC_REF,
                       .api = (uint8_t)gs_api_label(api),
                       .space = (uint8_t)space,
                       .device = GS_DEVICE_CURRENT,
                       .addr = addr};
    record(&ev, 0);
}

void gs_record_pool(enum gs_api api, int32_t device, gs_cumempool pool, uint64_t reserved,
                    uint64_t used)
{
    struct gs_ev ev = {.type = GS_REC_POOL,
                       .api = (uint8_t)gs_api_label(api),
                       .device = device,
                       .addr = (uint64_t)(uintptr_t)pool,
                       .size = reserved,
                       .free_bytes = used};
    record(&ev, 0);
}

void gs_record_graph_node(enum gs_api api, int32_t device, uint64_t addr, uint64_t size,
                          gs_custream stream, uint64_t graph, int is_free)
{
    struct gs_ev ev = {.type = GS_REC_GRAPH_NODE,
                       .api = (uint8_t)gs_api_label(api),
                       .kind = (uint8_t)(is_free != 0),
                       .device = device,
                       .addr = addr,
                       .size = is_free ? 0 : size,
                       .stream = (uint64_t)(uintptr_t)stream,
                       .parent = graph};
    if (addr)
        record(&ev, 1);
}

void gs_record_graph(enum gs_api api, enum gs_graph_op op, int32_t device, uint64_t graph,
                     uint64_t exec, gs_custream stream, uint64_t flags, gs_curesult result,
                     int sample)
{
    struct gs_ev ev = {.type = GS_REC_GRAPH,
                       .api = (uint8_t)gs_api_label(api),
                       .kind = (uint8_t)op,
                       .device = device,
                       .addr = graph,
                       .parent = exec,
                       .stream = (uint64_t)(uintptr_t)stream,
                       .size = flags,
                       .result = result};
    if (tls.busy)
        return;
    int saved = errno;
    if (ev.device == GS_DEVICE_CURRENT)
        ev.device = gs_current_device();
    gs_pfn_cuDeviceGetGraphMemAttribute get =
        (gs_pfn_cuDeviceGetGraphMemAttribute)gs_real(GS_FN_cuDeviceGetGraphMemAttribute);
    gs_cuuint64 reserved, used;
    if (sample && ev.device >= 0 && get &&
        get(ev.device, GS_CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) == GS_CUDA_SUCCESS &&
        get(ev.device, GS_CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used) == GS_CUDA_SUCCESS) {
        ev.space = 1;
        ev.free_bytes = reserved;
        ev.total_bytes = used;
    }
    errno = saved;
    record(&ev, 1);
}

/* A mark or a range: an event with a label after it. */
static void record_labelled(struct gs_ev ev, const char *label, uint32_t len, int with_stack)
{
    union {
        struct gs_mark_body m;
        uint8_t bytes[sizeof(struct gs_mark_body) + GS_MAX_LABEL];
    } body;
    if (len > GS_MAX_LABEL)
        len = GS_MAX_LABEL;
    memset(&body.m, 0, sizeof body.m);
    body.m.ev = ev;
    body.m.ev.device = GS_DEVICE_UNKNOWN;
    body.m.label_len = len;
    if (len)
        memcpy(body.m.label, label, len);
    record_body(&body.m.ev, (uint32_t)(sizeof body.m + len), with_stack);
}

void gs_record_mark(const char *label, uint32_t len) { gs_record_mark_flags(label, len, 0); }

void gs_record_mark_flags(const char *label, uint32_t len, uint32_t flags)
{
    record_labelled((struct gs_ev){.type = GS_REC_MARK, .space = (uint8_t)flags}, label, len, 1);
}

void gs_record_range(enum gs_range_op op, uint32_t domain, uint64_t id, uint32_t flags,
                     const char *label, uint32_t len)
{
    struct gs_ev ev = {.type = GS_REC_RANGE,
                       .kind = (uint8_t)op,
                       .space = (uint8_t)flags,
                       .addr = id,
                       .stream = domain};
    record_labelled(ev, label, len, 0); /* no stack: ranges are many, and named */
}

void gs_record_block(enum gs_record_type type, uint64_t addr, uint64_t size)
{
    struct gs_ev ev = {.type = (uint8_t)type,
                       .device = GS_DEVICE_UNKNOWN,
                       .addr = addr,
                       .size = size}; /* BLOCK_FREE: its span, or 0 */
    record(&ev, type == GS_REC_BLOCK_ALLOC);
}

void gs_record_lock(void) { pthread_mutex_lock(&stack_lock); }
void gs_record_unlock(void) { pthread_mutex_unlock(&stack_lock); }

void gs_record_reset_after_fork(void)
{
    /* The child has one thread, this one, and a fresh trace to come: the
     * stacks the parent wrote are not in it. */
    pthread_mutex_init(&stack_lock, NULL);
    gs_stack_table_clear(&stacks);
    if (stack_cache) /* it points into the table just cleared */
        memset(stack_cache, 0, CACHE_SLOTS * sizeof *stack_cache);
    tls.tid = 0;
    tls.name_gen = 0; /* the child's trace names its thread anew, */
    tls.py_named = 0; /* by its OS name */
}
