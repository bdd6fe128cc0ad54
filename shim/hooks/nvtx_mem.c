/*
 * nvtx_mem.c - NVTX's memory extension (nvToolsExtMem.h): an allocator that
 * registers its heaps and the regions it hands out from them tells gpushim
 * what gpushim_block_alloc tells it. A region is a block (GS_REC_BLOCK_ALLOC,
 * with the caller's stack), inside the segment (driver allocation) that
 * holds it; unregistering it gives it back; a heap reset or unregistered
 * gives back every block in it (GS_REC_BLOCK_FREE with a span).
 *
 * The extension finds its tool as the core does (nvtx.c): the loader
 * dlopens NVTX_INJECTION64_PATH and calls InitializeInjectionNvtxExtension
 * with the module's slots, which the tool fills in. Only virtual-address
 * heaps and regions (NVTX_MEM_TYPE_VIRTUAL_ADDRESS, the type CUDA memory
 * is) are followed; region names and permissions are not recorded. The
 * handle of a heap or region is its address, as the extension suggests for
 * virtual memory. NVTX requires the descriptors to be valid; NULL ones and
 * ones of an unknown size or type are ignored. Every function keeps errno.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "shim/base/base.h"
#include "shim/hooks/nvtx.h"
#include "shim/record/record.h"

#define HEAPS 4096 /* heaps whose size is kept, for a reset */

static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const void *ptr;
    size_t size;
} heaps[HEAPS];
static unsigned nheaps;

/* The size of the heap at ptr, and when forget is set, it is forgotten. 0: not ours. */
static size_t heap_size(const void *ptr, int forget)
{
    size_t size = 0;
    pthread_mutex_lock(&heaps_lock);
    for (unsigned i = 0; i < nheaps; i++)
        if (heaps[i].ptr == ptr) {
            size = heaps[i].size;
            if (forget)
                heaps[i] = heaps[--nheaps];
            break;
        }
    pthread_mutex_unlock(&heaps_lock);
    return size;
}

static const void *heap_register(const void *domain, const struct gs_nvtx_mem_heap_desc *d)
{
    (void)domain;
    int saved = errno;
    const struct gs_nvtx_mem_range *r = NULL;
    if (d && d->struct_size >= sizeof *d && d->type == GS_NVTX_MEM_TYPE_VIRTUAL_ADDRESS &&
        d->type_desc_size >= sizeof *r)
        r = d->type_desc;
    const void *handle = r ? r->ptr : NULL;
    if (r && r->ptr) {
        pthread_mutex_lock(&heaps_lock);
        int full = nheaps == HEAPS;
        if (!full)
            heaps[nheaps++] = (typeof(heaps[0])){r->ptr, r->size};
        pthread_mutex_unlock(&heaps_lock);
        if (full) {
            static int once;
            gs_warn_once(&once, "the program registered more NVTX heaps than gpushim follows "
                                "(%d); resetting the others gives back no blocks", HEAPS);
        }
    }
    errno = saved;
    return handle;
}

/* Every block in the heap goes back (NULL: the whole address space). */
static void heap_clear(const void *heap, int forget)
{
    size_t size = heap ? heap_size(heap, forget) : SIZE_MAX;
    if (size)
        gs_record_block(GS_REC_BLOCK_FREE, (uint64_t)(uintptr_t)heap, size);
}

static void heap_unregister(const void *domain, const void *heap)
{
    (void)domain;
    int saved = errno;
    if (heap) /* the extension does not allow the process-wide heap here */
        heap_clear(heap, 1);
    errno = saved;
}

static void heap_reset(const void *domain, const void *heap)
{
    (void)domain;
    int saved = errno;
    heap_clear(heap, 0);
    errno = saved;
}

/* The i-th virtual range of a batch's elements. */
static const struct gs_nvtx_mem_range *range_at(const void *elems, size_t elem_size, size_t i)
{
    return (const void *)((const char *)elems + i * elem_size);
}

/* Whether a batch of regions is one we follow: virtual addresses, described
 * by elements at least as large as the extension's. */
static int virtual_batch(uint32_t region_type, const void *elems, size_t elem_size)
{
    return region_type == GS_NVTX_MEM_TYPE_VIRTUAL_ADDRESS && elems &&
           elem_size >= sizeof(struct gs_nvtx_mem_range);
}

static void regions_register(const void *domain, const struct gs_nvtx_mem_regions *b)
{
    (void)domain;
    int saved = errno;
    if (b && b->struct_size >= sizeof *b && virtual_batch(b->region_type, b->elems, b->elem_size))
        for (size_t i = 0; i < b->count; i++) {
            const struct gs_nvtx_mem_range *r = range_at(b->elems, b->elem_size, i);
            if (r->ptr)
                gs_record_block(GS_REC_BLOCK_ALLOC, (uint64_t)(uintptr_t)r->ptr, r->size);
            if (b->handles_out)
                b->handles_out[i] = r->ptr;
        }
    errno = saved;
}

static void regions_resize(const void *domain, const struct gs_nvtx_mem_resize *b)
{
    (void)domain;
    int saved = errno;
    if (b && b->struct_size >= sizeof *b && virtual_batch(b->region_type, b->elems, b->elem_size))
        for (size_t i = 0; i < b->count; i++) {
            const struct gs_nvtx_mem_range *r = range_at(b->elems, b->elem_size, i);
            if (!r->ptr)
                continue;
            gs_record_block(GS_REC_BLOCK_FREE, (uint64_t)(uintptr_t)r->ptr, 0);
            gs_record_block(GS_REC_BLOCK_ALLOC, (uint64_t)(uintptr_t)r->ptr, r->size);
        }
    errno = saved;
}

static void regions_unregister(const void *domain, const struct gs_nvtx_mem_unregister *b)
{
    (void)domain;
    int saved = errno;
    if (b && b->struct_size >= sizeof *b && b->refs && b->elem_size >= sizeof(void *) &&
        (b->ref_type == GS_NVTX_MEM_REF_POINTER || b->ref_type == GS_NVTX_MEM_REF_HANDLE))
        for (size_t i = 0; i < b->count; i++) {
            const void *p = *(const void *const *)((const char *)b->refs + i * b->elem_size);
            if (p) /* a handle is the region's address */
                gs_record_block(GS_REC_BLOCK_FREE, (uint64_t)(uintptr_t)p, 0);
        }
    errno = saved;
}

/* NVTX's extension loader calls this once per extension module and NVTX
 * instance; the modules other than memory are left to NVTX (no-ops). */
GS_EXPORT int InitializeInjectionNvtxExtension(struct gs_nvtx_ext_module *m)
{
    if (!m || m->module_id != GS_NVTX_EXT_MODULE_MEM || m->compat_id != GS_NVTX_EXT_COMPAT_MEM)
        return 1;
    static const struct {
        size_t id;
        intptr_t fn;
    } slots[] = {
        {GS_NVTX_MEM_HeapRegister, (intptr_t)heap_register},
        {GS_NVTX_MEM_HeapUnregister, (intptr_t)heap_unregister},
        {GS_NVTX_MEM_HeapReset, (intptr_t)heap_reset},
        {GS_NVTX_MEM_RegionsRegister, (intptr_t)regions_register},
        {GS_NVTX_MEM_RegionsResize, (intptr_t)regions_resize},
        {GS_NVTX_MEM_RegionsUnregister, (intptr_t)regions_unregister},
    };
    for (size_t s = 0; s < m->nsegments && m->segments; s++) {
        struct gs_nvtx_ext_segment *seg = &m->segments[s];
        if (seg->id != 1 || !seg->slots) /* the memory module has one segment, id 1 */
            continue;
        for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
            if (slots[i].id < seg->slot_count)
                seg->slots[slots[i].id] = slots[i].fn;
    }
    return 1;
}
