/*
 * rt_torch_caching.c - PyTorch's CUDA caching allocator, a small but real
 * model of it, through the runtime (the simulated libcudart) as PyTorch
 * calls it, driven by the phases named on the command line. It follows
 * pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp (a recent 2.x, whose
 * ExpandableSegment tries a FABRIC handle first; DeviceCachingAllocator and
 * ExpandableSegment, the functions named below are that file's) and
 * c10/cuda/driver_api.cpp; with
 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (CUDAAllocatorConfig)
 * it grows expandable segments instead of calling cudaMalloc. Each tensor
 * is reported as a block of its segment (gpushim_block_alloc/_free,
 * include/gpushim.h), so that the report shows the segments (what the
 * driver sees) and the tensors in them.
 *
 * The rules kept (one device; no CUDA graphs, memory fraction, garbage
 * collection or recordStream; the defaults: max_split_size SIZE_MAX, no
 * roundup_power2_divisions):
 *   round_size           below kMinBlockSize (512) 512, else a multiple of
 *                        512
 *   get_pool             kSmallSize (1 MiB) or less: the small pool, else
 *                        the large; a block is found only on its own stream
 *                        (BlockComparatorSize orders by stream, then size,
 *                        then address)
 *   get_allocation_size  small: kSmallBuffer (2 MiB); below kMinLargeAlloc
 *                        (10 MiB): kLargeBuffer (20 MiB); else rounded up
 *                        to kRoundLarge (2 MiB)
 *   get_free_block       the smallest cached block of the pool and stream
 *                        that holds the request (lower_bound)
 *   should_split         small pool (or expandable segments): at least 512
 *                        bytes left; large pool: more than kSmallSize left
 *   malloc               get_free_block; else alloc_block, then
 *                        release_available_cached_blocks (false at once
 *                        with the default max_split_size), then
 *                        release_cached_blocks and alloc_block again
 *                        (isRetry); else cudaMemGetInfo and the
 *                        OutOfMemoryError, with its figures (format_size;
 *                        no NVML here, so no process list), the retries
 *                        counted as stats.num_alloc_retries
 *   alloc_block          cudaGetLastError (a defensive check), then
 *                        cudaMalloc of the allocation size; on
 *                        cudaErrorMemoryAllocation cudaGetLastError and
 *                        false. Expandable: try_allocate_expandable_block
 *   free / free_block    the block goes back to its pool, merged with free
 *                        neighbours of its segment (try_merge_blocks)
 *   release_cached_blocks  synchronize_and_free_events (no events here:
 *                        nothing recorded a stream), then release_blocks of
 *                        the large pool and of the small: cudaFree
 *                        (release_block) of each cached block that is a
 *                        whole segment, in the pool's order; a free block
 *                        of an expandable segment is unmapped (unmap_block)
 *                        and the segment released when nothing of it is
 *                        left mapped (release_expandable_segment)
 *   emptyCache           release_cached_blocks
 *
 * Expandable segments (ExpandableSegment; find_expandable_block, map_block,
 * try_allocate_expandable_block, unmap_block): one per (stream, pool); its
 * constructor asks cudaGetDeviceProperties for totalGlobalMem and reserves
 * segment_size_ * numSegments(total + total / 8) (cuMemAddressReserve), the
 * segment size 2 MiB for the small pool and 20 MiB for the large. A request
 * is put at the lowest address with room (a free block before the unmapped
 * rest counts), mapping the pages it lacks: map() creates each page
 * (cuDeviceGetAttribute GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, then
 * cuMemCreate with the handle type; the first time with FABRIC, which the
 * simulated driver refuses, then POSIX_FD: "if fabric handle is not
 * supported, use posix file handle"; out of memory: the pages created for
 * the request are released, and nothing is mapped), then mapAndSetAccess:
 * cuMemMap of each page and one cuMemSetAccess over them. unmapHandles:
 * cudaStreamSynchronize of the segment's stream, then cuMemUnmap and
 * cuMemRelease of each page; the destructor cuMemAddressFree. The driver
 * functions come from cudaGetDriverEntryPointByVersion at version 12000
 * with cudaEnableDefault, as driver_api.cpp's get_symbol does for the
 * C10_LIBCUDA_DRIVER_API_REQUIRED list (of which the simulated driver has
 * all but cuMemsetD32Async and cuStreamWriteValue32, which are not looked
 * up here).
 *
 * Phases (tensors t1...t11; "side" is a second stream, made as c10's
 * stream pool makes one, non-blocking, without its priority):
 *   small     t1, t2, t3 of 700 KiB, t4 of 700 KiB on the side stream
 *   large     t5 of 10 MiB + 1 byte, t6 of 5 MiB, t7 of 3 MiB; del t6;
 *             t8 of 4 MiB
 *   retry     del t1, t2, t3, t5, t8; t9 of 20 MiB; del t9; t10 of 20 MiB
 *             (the next step's tensor: from the cache, no driver call)
 *   oom       t11 of 40 MiB: the OutOfMemoryError, nobody catches it: exit 1
 *   frag      (run alone, SIMCUDA_MEMORY=100M) four pairs: t of 5 MiB cut
 *             from a new 20 MiB segment (kLargeBuffer; 15 MiB left is more
 *             than kSmallSize: split), then one of 15 MiB that takes the
 *             rest; the four 15 MiB tensors deleted: 60 MiB cached in
 *             pieces that live tensors pin. Then 25 MiB: no cached block
 *             holds it, cudaMalloc(26 MiB) finds 20 MiB free, the retry
 *             after release_cached_blocks (no whole segment cached) fails
 *             too: the OutOfMemoryError, exit 1. 20 MiB of tensors live, 45
 *             with the request, on a 100 MiB device: fragmentation ran out
 *             (gpushim whatif: expandable segments put the request after
 *             the last free piece and map one more page, 100 MiB in all)
 *   teardown  del of every live tensor, then torch.cuda.empty_cache()
 *   lib=PATH  dlopen PATH, as import torch loads libc10_cuda.so (the
 *             report names the framework from its modules)
 *
 * What the driver sees, run with SIMCUDA_MEMORY=64M SIMCUDA_OTHER=20M
 * (20 MiB held by another process; 44 MiB free at the start):
 *   native   small: S1 2 MiB holds t1 and t2 (its remainder, 680960 bytes,
 *            is too small for t3), S2 2 MiB t3, S3 2 MiB t4 (the side
 *            stream's: S2's free 1.32 MiB is the default stream's). large:
 *            S4 12 MiB t5 (10 MiB + 512), S5 20 MiB t6 then t7 from its
 *            remainder; t8 gets t6's whole 5 MiB block (1 MiB left is not
 *            more than kSmallSize: no split). Held: 38 MiB. retry: t9's
 *            cudaMalloc(20 MiB) fails with 6 MiB free; release_cached_blocks
 *            frees S4, S1 and S2 (16 MiB in 3 cudaFree; S3 and S5 hold
 *            tensors); the retry gets S6; peak 42 MiB; t10 takes t9's cached
 *            block. teardown: S3, S5, S6 freed; nothing left.
 *   expandable  small: a 72 MiB reservation (36 pages of 2 MiB) for the
 *            default stream's small pool, its first page refused as FABRIC
 *            then created as POSIX_FD; t1 and t2 in page 0, t3 across pages
 *            0 and 1; another 72 MiB for the side stream's, t4 in its page
 *            0. large: 80 MiB (4 pages of 20 MiB) for the large pool; t5,
 *            t6, t7 and t8 all in its page 0. Mapped: 26 MiB. retry: the
 *            20 MiB page t9 needs is refused (cuMemCreate out of memory,
 *            18 MiB free); release_cached_blocks unmaps and releases the
 *            default stream's two small pages, all free, and frees their
 *            reservation; the retry creates the page; peak 42 MiB, 2 small
 *            and 40 of large pages. teardown: each page unmapped and
 *            released, each reservation freed.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "gpushim.h"
#include "progs.h"

gs_cudaerror cudaMalloc(void **p, size_t size);
gs_cudaerror cudaFree(void *p);
gs_cudaerror cudaGetLastError(void);
gs_cudaerror cudaGetDeviceCount(int *count);
gs_cudaerror cudaMemGetInfo(size_t *free_bytes, size_t *total);
gs_cudaerror cudaStreamCreateWithFlags(gs_custream *stream, unsigned int flags);
gs_cudaerror cudaStreamSynchronize(gs_custream stream);
gs_cudaerror cudaGetDeviceProperties(gs_cudadeviceprop_head *prop, int device);
gs_cudaerror cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned version,
                                              unsigned long long flags, int *status);

#define kMinBlockSize 512u
#define kSmallSize (1u * MiB)
#define kSmallBuffer (2u * MiB)
#define kLargeBuffer (20u * MiB)
#define kMinLargeAlloc (10u * MiB)
#define kRoundLarge (2u * MiB)

#define cudaStreamNonBlocking 1u
#define CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED 110
#define CU_MEM_ACCESS_FLAGS_PROT_READWRITE 3

static int expandable; /* CUDAAllocatorConfig::expandable_segments() */

/* ---- blocks and pools ---- */

struct es;

struct block {
    uintptr_t ptr;
    size_t size, requested;
    gs_custream stream;
    int small;     /* its pool: small_blocks or large_blocks */
    int allocated; /* a tensor's, or taken out of the pool to become one */
    int mapped;    /* false: address space of an expandable segment alone */
    struct block *prev, *next; /* the neighbours in its segment */
    struct es *es;             /* its expandable segment, or NULL */
    struct block *all;         /* every block, for the pools' searches */
};

static struct block *blocks;
static size_t allocated_bytes, reserved_bytes; /* stats' AGGREGATE currents */
static size_t num_alloc_retries;

static struct block *new_block(uintptr_t ptr, size_t size, gs_custream stream, int small,
                               struct es *es, int mapped)
{
    struct block *b = calloc(1, sizeof *b);
    EXPECT(b != NULL, 1);
    *b = (struct block){.ptr = ptr, .size = size, .stream = stream, .small = small,
                        .mapped = mapped, .es = es, .all = blocks};
    blocks = b;
    return b;
}

static void delete_block(struct block *b)
{
    struct block **p = &blocks;
    while (*p != b)
        p = &(*p)->all;
    *p = b->all;
    free(b);
}

/* b inserted between before and after (Block::splice). */
static void splice(struct block *b, struct block *before, struct block *after)
{
    if (before)
        before->next = b;
    b->prev = before;
    if (after)
        after->prev = b;
    b->next = after;
}

/* In pool.blocks: cached, free and mapped. */
static int in_pool(const struct block *b, int small)
{
    return b->small == small && !b->allocated && b->mapped;
}

/* BlockComparatorSize: stream, then size, then address. */
static int before_size(const struct block *a, gs_custream stream, size_t size, uintptr_t ptr)
{
    if (a->stream != stream)
        return (uintptr_t)a->stream < (uintptr_t)stream;
    if (a->size != size)
        return a->size < size;
    return a->ptr < ptr;
}

/* pool.blocks.lower_bound of (stream, size, ptr): the first block of the
 * pool not ordered before it. */
static struct block *lower_bound(int small, gs_custream stream, size_t size, uintptr_t ptr)
{
    struct block *best = NULL;
    for (struct block *b = blocks; b; b = b->all)
        if (in_pool(b, small) && !before_size(b, stream, size, ptr) &&
            (!best || before_size(b, best->stream, best->size, best->ptr)))
            best = b;
    return best;
}

/* The next block of the pool after b (++it). */
static struct block *successor(const struct block *b)
{
    return lower_bound(b->small, b->stream, b->size, b->ptr + 1);
}

struct params {
    size_t size, alloc_size;
    gs_custream stream;
    int small;
    struct block *block;
};

static size_t round_size(size_t size)
{
    if (size < kMinBlockSize)
        return kMinBlockSize;
    return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

static size_t get_allocation_size(size_t size)
{
    if (size <= kSmallSize)
        return kSmallBuffer;
    if (size < kMinLargeAlloc)
        return kLargeBuffer;
    return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

static size_t expandable_size(const struct block *b)
{
    return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

/* get_free_block (no garbage collection, no max_split_size checks: both
 * off by default). */
static int get_free_block(struct params *p)
{
    struct block *it = lower_bound(p->small, p->stream, p->size, 0);
    if (!it || it->stream != p->stream)
        return 0;
    if (it->es) { /* best fit by the size it can expand to */
        struct block *next = successor(it);
        while (it->es && next && next->stream == p->stream &&
               expandable_size(next) < expandable_size(it)) {
            it = next;
            next = successor(next);
        }
    }
    p->block = it;
    it->allocated = 1; /* pool.blocks.erase(it) */
    return 1;
}

/* try_merge_blocks: src into dst, when src is free and mapped as dst is. */
static size_t try_merge_blocks(struct block *dst, struct block *src)
{
    if (!src || src->allocated || dst->mapped != src->mapped)
        return 0;
    if (dst->prev == src) { /* [src dst] */
        dst->ptr = src->ptr;
        dst->prev = src->prev;
        if (dst->prev)
            dst->prev->next = dst;
    } else { /* [dst src] */
        dst->next = src->next;
        if (dst->next)
            dst->next->prev = dst;
    }
    size_t subsumed = src->size;
    dst->size += subsumed;
    delete_block(src);
    return subsumed;
}

/* ---- expandable segments ---- */

static gs_curesult (*device_get_attribute)(int *pi, int attrib, gs_cudevice dev);
static gs_pfn_cuMemAddressReserve mem_address_reserve;
static gs_pfn_cuMemAddressFree mem_address_free;
static gs_pfn_cuMemCreate mem_create;
static gs_pfn_cuMemRelease mem_release;
static gs_pfn_cuMemMap mem_map;
static gs_pfn_cuMemUnmap mem_unmap;
static gs_curesult (*mem_set_access)(gs_cudeviceptr ptr, size_t size, const void *desc,
                                     size_t count);

/* driver_api.cpp, get_symbol: cudaGetDriverEntryPointByVersion(name, &out,
 * version, cudaEnableDefault, &qres), required to succeed. */
static void *get_symbol(const char *name)
{
    void *out = NULL;
    int qres = -1;
    EXPECT(cudaGetDriverEntryPointByVersion(name, &out, 12000, 0, &qres), GS_cudaSuccess);
    EXPECT(qres == 0 && out != NULL, 1);
    return out;
}

/* DriverAPI::get(), the first time: create_driver_api. */
static void driver_api(void)
{
    if (mem_create)
        return;
    device_get_attribute = get_symbol("cuDeviceGetAttribute");
    mem_address_reserve = get_symbol("cuMemAddressReserve");
    mem_release = get_symbol("cuMemRelease");
    mem_map = get_symbol("cuMemMap");
    mem_address_free = get_symbol("cuMemAddressFree");
    mem_set_access = get_symbol("cuMemSetAccess");
    mem_unmap = get_symbol("cuMemUnmap");
    mem_create = get_symbol("cuMemCreate");
    get_symbol("cuMemGetAllocationGranularity");
    get_symbol("cuMemExportToShareableHandle");
    get_symbol("cuMemImportFromShareableHandle");
    get_symbol("cuGetErrorString");
}

/* CUDAAllocatorConfig::expandable_segments_handle_type(), process-wide. */
static enum { UNSPECIFIED, FABRIC_HANDLE, POSIX_FD } handle_type = UNSPECIFIED;

struct es {
    gs_cudeviceptr ptr;
    size_t segment_size, max_handles;
    gs_custream stream;
    size_t nhandles;         /* handles_.size() */
    gs_cumemhandle *handles; /* handles_: 0 for nullopt (handles start at 1) */
};

struct range {
    uintptr_t ptr; /* 0: nullptr, the handle type is not supported */
    size_t size;
};

static size_t num_segments(const struct es *es, size_t size)
{
    return (size + es->segment_size - 1) / es->segment_size;
}

static struct range range_from_handles(const struct es *es, size_t begin, size_t end)
{
    return (struct range){es->ptr + es->segment_size * begin, es->segment_size * (end - begin)};
}

/* ExpandableSegment's constructor. */
NOINLINE static struct es *es_new(gs_custream stream, size_t segment_size)
{
    struct es *es = calloc(1, sizeof *es);
    gs_cudadeviceprop_head prop;
    EXPECT(es != NULL, 1);
    driver_api();
    EXPECT(cudaGetDeviceProperties(&prop, 0), GS_cudaSuccess);
    es->stream = stream;
    es->segment_size = segment_size;
    /* "enough address space for 1 1/8 the total memory on the GPU" */
    es->max_handles = num_segments(es, prop.totalGlobalMem + prop.totalGlobalMem / 8);
    es->handles = calloc(es->max_handles, sizeof *es->handles);
    EXPECT(es->handles != NULL, 1);
    EXPECT(mem_address_reserve(&es->ptr, es->segment_size * es->max_handles, 0, 0, 0),
           GS_CUDA_SUCCESS);
    return es;
}

static void set_access(struct es *es, size_t begin, size_t end)
{
    struct {
        gs_cumemlocation location;
        int flags;
    } desc = {{GS_CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT(mem_set_access(es->ptr + begin * es->segment_size, (end - begin) * es->segment_size,
                          &desc, 1),
           GS_CUDA_SUCCESS);
}

static void map_and_set_access(struct es *es, size_t begin, size_t end)
{
    for (size_t i = begin; i < end; i++)
        EXPECT(mem_map(es->ptr + i * es->segment_size, es->segment_size, 0, es->handles[i], 0),
               GS_CUDA_SUCCESS);
    set_access(es, begin, end); /* no peers */
}

static void trim_handles(struct es *es)
{
    while (es->nhandles && !es->handles[es->nhandles - 1])
        es->nhandles--;
}

/* ExpandableSegment::map of the pages that [ptr, ptr + size) touches; a
 * range of size 0 is out of memory. */
NOINLINE static struct range es_map(struct es *es, uintptr_t ptr, size_t size)
{
    size_t begin = (ptr - es->ptr) / es->segment_size;
    size_t end = num_segments(es, ptr + size - es->ptr);
    if (begin == end)
        return range_from_handles(es, begin, end);
    if (handle_type == UNSPECIFIED) { /* "try to use fabric handle first" */
        handle_type = FABRIC_HANDLE;
        struct range out = es_map(es, ptr, size);
        if (out.ptr)
            return out;
        handle_type = POSIX_FD;
        return es_map(es, ptr, size);
    }
    if (end > es->nhandles)
        es->nhandles = end;
    for (size_t i = begin; i < end; i++) {
        gs_cumemallocationprop prop = {.type = GS_CU_MEM_ALLOCATION_TYPE_PINNED,
                                       .location = {GS_CU_MEM_LOCATION_TYPE_DEVICE, 0}};
        prop.requestedHandleTypes = handle_type == FABRIC_HANDLE
                                        ? GS_CU_MEM_HANDLE_TYPE_FABRIC
                                        : GS_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        int flag = 0;
        EXPECT(device_get_attribute(&flag, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                                    0),
               GS_CUDA_SUCCESS);
        if (flag)
            prop.allocFlags.gpuDirectRDMACapable = 1;
        gs_cumemhandle handle = 0;
        gs_curesult status = mem_create(&handle, es->segment_size, &prop, 0);
        if (status != GS_CUDA_SUCCESS) {
            if (status == GS_CUDA_ERROR_OUT_OF_MEMORY) {
                for (size_t j = begin; j < i; j++) {
                    EXPECT(mem_release(es->handles[j]), GS_CUDA_SUCCESS);
                    es->handles[j] = 0;
                }
                trim_handles(es);
                return range_from_handles(es, begin, begin);
            }
            if (handle_type == FABRIC_HANDLE)
                return (struct range){0, 0}; /* the handle type is not supported */
            EXPECT(status, GS_CUDA_SUCCESS);
        }
        es->handles[i] = handle;
    }
    map_and_set_access(es, begin, end);
    return range_from_handles(es, begin, end);
}

/* unmapHandles: "we have to wait for the stream to finish before this
 * memory is truly free". */
static void unmap_handles(struct es *es, size_t begin, size_t end)
{
    EXPECT(cudaStreamSynchronize(es->stream), GS_cudaSuccess);
    for (size_t i = begin; i < end; i++) {
        EXPECT(mem_unmap(es->ptr + es->segment_size * i, es->segment_size), GS_CUDA_SUCCESS);
        EXPECT(mem_release(es->handles[i]), GS_CUDA_SUCCESS);
        es->handles[i] = 0;
    }
    trim_handles(es);
}

/* ExpandableSegment::unmap: the pages wholly inside [ptr, ptr + size). */
static struct range es_unmap(struct es *es, uintptr_t ptr, size_t size)
{
    size_t begin = num_segments(es, ptr - es->ptr);
    size_t end = (ptr + size - es->ptr) / es->segment_size;
    if (begin >= end)
        return (struct range){ptr, 0};
    unmap_handles(es, begin, end);
    return range_from_handles(es, begin, end);
}

/* ~ExpandableSegment. */
NOINLINE static void es_delete(struct es *es)
{
    size_t start = 0;
    for (size_t i = 0; i < es->nhandles; i++) { /* forEachAllocatedRange */
        if (es->handles[i] && (i == 0 || !es->handles[i - 1]))
            start = i;
        if (es->handles[i] && (i + 1 == es->nhandles || !es->handles[i + 1]))
            unmap_handles(es, start, i + 1);
    }
    EXPECT(mem_address_free(es->ptr, es->segment_size * es->max_handles), GS_CUDA_SUCCESS);
    free(es->handles);
    free(es);
}

static int allocatable(const struct block *b)
{
    return b && !b->allocated;
}

/* find_expandable_block: the lowest address of the stream's segment of this
 * pool with room for size (a free block just before the unmapped rest
 * counts), or a new segment. */
static struct block *find_expandable_block(gs_custream stream, int small, size_t size)
{
    uintptr_t after = 0;
    for (;;) { /* pool->unmapped from lower_bound(stream), in address order */
        struct block *c = NULL;
        for (struct block *b = blocks; b; b = b->all)
            if (b->small == small && !b->mapped && b->stream == stream && b->ptr > after &&
                (!c || b->ptr < c->ptr))
                c = b;
        if (!c)
            break;
        after = c->ptr;
        if (allocatable(c->prev)) /* a free block just before it */
            c = c->prev;
        size_t bytes = 0; /* has_available_address_space */
        for (struct block *b = c; bytes < size && allocatable(b); b = b->next)
            bytes += b->size;
        if (bytes >= size)
            return c;
    }
    struct es *es = es_new(stream, small ? kSmallBuffer : kLargeBuffer);
    return new_block(es->ptr, es->segment_size * es->max_handles, stream, small, es, 0);
}

/* map_block: maps [to_map->ptr, +size) and merges it with its free
 * neighbours. */
static int map_block(struct block *to_map, size_t size)
{
    struct range mapped = es_map(to_map->es, to_map->ptr, size);
    if (mapped.size == 0)
        return 0;
    to_map->mapped = 1;
    if (mapped.size < to_map->size) {
        struct block *remaining = new_block(to_map->ptr + mapped.size, to_map->size - mapped.size,
                                            to_map->stream, to_map->small, to_map->es, 0);
        splice(remaining, to_map, to_map->next);
        to_map->size = mapped.size;
    }
    try_merge_blocks(to_map, to_map->prev);
    try_merge_blocks(to_map, to_map->next);
    reserved_bytes += mapped.size;
    return 1;
}

static struct block *try_allocate_expandable_block(gs_custream stream, int small, size_t size)
{
    struct block *candidate = find_expandable_block(stream, small, size);
    if (!candidate->mapped &&
        !map_block(candidate, candidate->size < size ? candidate->size : size))
        return NULL;
    while (candidate->size < size) {
        size_t remaining = size - candidate->size;
        struct block *next = candidate->next;
        if (!map_block(next, remaining < next->size ? remaining : next->size))
            return NULL;
        candidate = next;
    }
    candidate->allocated = 1; /* pool->blocks.erase(candidate) */
    return candidate;
}

/* unmap_block: the pages wholly free in block go back to the driver. */
static void unmap_block(struct block *block)
{
    struct range unmapped = es_unmap(block->es, block->ptr, block->size);
    if (unmapped.size == 0)
        return;
    size_t before = unmapped.ptr - block->ptr;
    if (before > 0) {
        struct block *free_before =
            new_block(block->ptr, before, block->stream, block->small, block->es, 1);
        splice(free_before, block->prev, block);
    }
    size_t after = block->size - (before + unmapped.size);
    if (after > 0) {
        struct block *free_after = new_block(unmapped.ptr + unmapped.size, after, block->stream,
                                             block->small, block->es, 1);
        splice(free_after, block, block->next);
    }
    block->ptr = unmapped.ptr;
    block->size = unmapped.size;
    block->mapped = 0;
    try_merge_blocks(block, block->prev);
    try_merge_blocks(block, block->next);
    reserved_bytes -= unmapped.size;
}

/* ---- the device caching allocator ---- */

/* alloc_block: a new segment for p. */
NOINLINE static int alloc_block(struct params *p, int is_retry)
{
    EXPECT(cudaGetLastError(), GS_cudaSuccess); /* "defensively checks" */
    num_alloc_retries += is_retry;
    if (expandable) {
        p->block = try_allocate_expandable_block(p->stream, p->small, p->size);
        return p->block != NULL;
    }
    void *ptr = NULL;
    gs_cudaerror err = cudaMalloc(&ptr, p->alloc_size);
    if (err != GS_cudaSuccess) {
        EXPECT(err, GS_cudaErrorMemoryAllocation);
        (void)cudaGetLastError(); /* forgiven: malloc retries, or raises */
        return 0;
    }
    reserved_bytes += p->alloc_size;
    p->block = new_block((uintptr_t)ptr, p->alloc_size, p->stream, p->small, NULL, 1);
    p->block->allocated = 1;
    return 1;
}

/* release_block: cudaFree of a cached block that is a whole segment. */
NOINLINE static void release_block(struct block *block)
{
    EXPECT(cudaFree((void *)block->ptr), GS_cudaSuccess);
    reserved_bytes -= block->size;
    delete_block(block);
}

/* release_blocks: the pool's cached blocks in its order; those of
 * expandable segments gathered first, "unmapping will mutate the free pool". */
static void release_blocks(int small)
{
    size_t n = 0, nu = 0;
    for (struct block *b = blocks; b; b = b->all)
        n += in_pool(b, small);
    struct block **to_unmap = calloc(n + 1, sizeof *to_unmap);
    EXPECT(to_unmap != NULL, 1);
    for (struct block *b = lower_bound(small, NULL, 0, 0), *next; b; b = next) {
        next = successor(b);
        if (b->es)
            to_unmap[nu++] = b;
        else if (!b->prev && !b->next)
            release_block(b);
    }
    for (size_t i = 0; i < nu; i++) {
        unmap_block(to_unmap[i]);
        if (!to_unmap[i]->prev && !to_unmap[i]->next) { /* release_expandable_segment */
            es_delete(to_unmap[i]->es);
            delete_block(to_unmap[i]);
        }
    }
    free(to_unmap);
}

NOINLINE static int release_cached_blocks(void)
{
    /* synchronize_and_free_events: no block waits on an event here */
    release_blocks(0);
    release_blocks(1);
    return 1;
}

/* format_size, as the OutOfMemoryError prints sizes. */
static const char *format_size(char *buf, size_t size)
{
    if (size <= 1024)
        sprintf(buf, "%zu bytes", size);
    else if (size <= 1048576)
        sprintf(buf, "%.2f KiB", size / 1024.0);
    else
        sprintf(buf, "%.2f MiB", size / 1048576.0);
    return buf;
}

/* malloc's end when no block was found: TORCH_CHECK_WITH(OutOfMemoryError,
 * ...), which nobody catches here. */
NOINLINE static void out_of_memory(const struct params *p)
{
    size_t device_free = 0, device_total = 0;
    char a[32], b[32], c[32], d[32], e[32];
    EXPECT(cudaMemGetInfo(&device_free, &device_total), GS_cudaSuccess);
    fprintf(stderr,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. GPU 0 has a total "
            "capacity of %s of which %s is free. Of the allocated memory %s is allocated by "
            "PyTorch, and %s is reserved by PyTorch but unallocated. If reserved but "
            "unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n",
            format_size(a, p->alloc_size), format_size(b, device_total),
            format_size(c, device_free), format_size(d, allocated_bytes),
            format_size(e, reserved_bytes - allocated_bytes));
    exit(1);
}

/* alloc_found_block: the request's part of the block, the rest split off
 * when should_split says so. */
static struct block *alloc_found_block(struct params *p, size_t orig_size)
{
    struct block *block = p->block;
    size_t remaining = block->size - p->size;
    int split = block->small || expandable ? remaining >= kMinBlockSize : remaining > kSmallSize;
    if (split) {
        struct block *rest = block;
        block = new_block(rest->ptr, p->size, p->stream, p->small, rest->es, 1);
        splice(block, rest->prev, rest);
        rest->ptr += p->size;
        rest->size -= p->size;
        rest->allocated = 0; /* pool->insert_into_blocks(remaining) */
    }
    block->allocated = 1;
    block->requested = orig_size;
    allocated_bytes += block->size;
    gpushim_block_alloc((const void *)block->ptr, block->size);
    return block;
}

/* DeviceCachingAllocator::malloc */
NOINLINE static struct block *caching_malloc(size_t orig_size, gs_custream stream)
{
    size_t size = round_size(orig_size);
    struct params p = {size, get_allocation_size(size), stream, size <= kSmallSize, NULL};
    /* get_free_block, then trigger_free_memory_callbacks (nothing to free) */
    int found = get_free_block(&p);
    if (!found)
        found = alloc_block(&p, 0)
                /* release_available_cached_blocks: false with max_split_size SIZE_MAX */
                || (release_cached_blocks() && alloc_block(&p, 1));
    if (!found)
        out_of_memory(&p);
    return alloc_found_block(&p, orig_size);
}

/* DeviceCachingAllocator::free, then free_block. */
NOINLINE static void caching_free(struct block *block)
{
    gpushim_block_free((const void *)block->ptr);
    block->allocated = 0;
    allocated_bytes -= block->size;
    try_merge_blocks(block, block->prev);
    try_merge_blocks(block, block->next);
}

/* ---- the program ---- */

static gs_custream side;
static struct block *t[21];

/* A tensor of size bytes on stream: the allocator's allocate(). */
NOINLINE static void empty(int i, size_t size, gs_custream stream)
{
    t[i] = caching_malloc(size, stream);
}

static void del(int i)
{
    caching_free(t[i]);
    t[i] = NULL;
}

NOINLINE static void small(void)
{
    empty(1, 700 * KiB, NULL);
    empty(2, 700 * KiB, NULL);
    empty(3, 700 * KiB, NULL);
    empty(4, 700 * KiB, side);
}

NOINLINE static void large(void)
{
    empty(5, 10 * MiB + 1, NULL);
    empty(6, 5 * MiB, NULL);
    empty(7, 3 * MiB, NULL);
    del(6);
    empty(8, 4 * MiB, NULL);
}

NOINLINE static void retry(void)
{
    del(1);
    del(2);
    del(3);
    del(5);
    del(8);
    empty(9, 20 * MiB, NULL);
    del(9);
    empty(10, 20 * MiB, NULL);
}

NOINLINE static void oom(void)
{
    empty(11, 40 * MiB, NULL);
}

NOINLINE static void frag(void)
{
    for (int i = 12; i < 20; i += 2) {
        empty(i, 5 * MiB, NULL);
        empty(i + 1, 15 * MiB, NULL);
    }
    for (int i = 13; i < 20; i += 2)
        del(i);
    empty(20, 25 * MiB, NULL);
}

NOINLINE static void teardown(void)
{
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i])
            del(i);
    release_cached_blocks(); /* torch.cuda.empty_cache() */
}

int main(int argc, char **argv)
{
    const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
    int devices = 0;
    expandable = conf && strstr(conf, "expandable_segments:True") != NULL;
    EXPECT(cudaGetDeviceCount(&devices), GS_cudaSuccess); /* torch.cuda's lazy init */
    EXPECT(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), GS_cudaSuccess);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "small"))
            small();
        else if (!strcmp(argv[i], "large"))
            large();
        else if (!strcmp(argv[i], "retry"))
            retry();
        else if (!strcmp(argv[i], "oom"))
            oom();
        else if (!strcmp(argv[i], "frag"))
            frag();
        else if (!strcmp(argv[i], "teardown"))
            teardown();
        else if (!strncmp(argv[i], "lib=", 4))
            EXPECT(dlopen(argv[i] + 4, RTLD_NOW | RTLD_GLOBAL) != NULL, 1);
        else
            EXPECT(argv[i][0], 0); /* a phase it does not know */
    }
    printf("torch caching done: allocated %zu, reserved %zu, retries %zu\n", allocated_bytes,
           reserved_bytes, num_alloc_retries);
    return 0;
}
