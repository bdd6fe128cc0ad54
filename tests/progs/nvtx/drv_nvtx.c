/*
 * drv_nvtx.c - a training loop annotated with NVTX, built against the NVTX
 * v3 headers of the CUDA toolkit (/usr/local/cuda/include/nvtx3): NVIDIA's
 * own loader code finds the shim through NVTX_INJECTION64_PATH, as it finds
 * Nsight. Linked with -lcuda (the simulated driver), never with the shim.
 *
 *   weights: 4 MiB, kept                                  live 4 MiB
 *   3 steps, each a pushed range "step" (the first of a thread: also a mark):
 *     "forward"  (pushed, ASCII):   act 2 MiB, hist[s] 1 MiB (hist kept: the leak)
 *     "backward" (pushed, wide):    grad 3 MiB, act freed, grad freed
 *     "optimizer" (domain "trainer", a registered string):
 *                                   step 0 only: state 8 MiB, kept
 *   range figures (peak inside; bytes made in it and live when it ended):
 *     step      peaks 13, 19, 20   allocated 14, 6, 6   kept 9, 1, 1
 *     forward   peaks  7, 16, 17   allocated  3, 3, 3   kept 3, 3, 3
 *     backward  peaks 10, 19, 20   allocated  3, 3, 3   kept 0, 0, 0
 *     optimizer peaks 13, 14, 15   allocated  8, 0, 0   kept 8, 0, 0
 *   mark "done", and in domain "trainer" mark "saved"     live 15 MiB
 *   "prefetch": started here, a thread allocates 5 MiB and ends it there
 *     prefetch  peak 20             allocated 5           kept 5
 *   the memory extension: heap over the weights; regions 1 MiB at its start
 *   and 512 KiB after it (blocks); the first unregistered, the heap reset
 *   (the second goes back with it): 2 blocks given, 2 taken back, peak 1.5 MiB
 *
 * Arguments, any of:
 *   traced  check the levels NVTX returns with a tool attached (push: the
 *           depth in its domain from 0; pop: the depth after); without it,
 *           NVTX's own answer when no tool is: NVTX_NO_PUSH_POP_TRACKING
 *   bad     also push a range whose message cannot be read: the shim says
 *           so once and records an empty label
 *   oom     in the third step's backward, ask for 1 GiB (more than the
 *           simulated device has) and go on when it fails
 *   die     in the third step's forward, after its allocations, die of
 *           SIGKILL: step #3 > forward #3 is open at the end
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include "../progs.h"

static int traced;

static int has(int argc, char **argv, const char *word)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], word) == 0)
            return 1;
    return 0;
}

static void level(int got, int want)
{
    EXPECT(got, traced ? want : NVTX_NO_PUSH_POP_TRACKING);
}

static gs_cudeviceptr alloc(size_t n)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, n), GS_CUDA_SUCCESS);
    return p;
}

static void release(gs_cudeviceptr p) { EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS); }

static nvtxRangeId_t prefetch_id;
static gs_cudeviceptr prefetched;

static void *prefetcher(void *arg)
{
    (void)arg;
    use_device(0);
    prefetched = alloc(5 * MiB);
    nvtxRangeEnd(prefetch_id);
    return NULL;
}

int main(int argc, char **argv)
{
    traced = has(argc, argv, "traced");
    int bad = has(argc, argv, "bad"), oom = has(argc, argv, "oom"), die = has(argc, argv, "die");
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);

    nvtxDomainHandle_t trainer = nvtxDomainCreateA("trainer");
    nvtxStringHandle_t optimizer = nvtxDomainRegisterStringA(trainer, "optimizer");
    nvtxEventAttributes_t opt = {0};
    opt.version = NVTX_VERSION;
    opt.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    opt.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    opt.message.registered = optimizer;

    gs_cudeviceptr weights = alloc(4 * MiB), hist[3], state = 0;
    for (int s = 0; s < 3; s++) {
        level(nvtxRangePushA("step"), 0);
        level(nvtxRangePushA("forward"), 1);
        gs_cudeviceptr act = alloc(2 * MiB);
        hist[s] = alloc(1 * MiB);
        if (die && s == 2)
            raise(SIGKILL);
        level(nvtxRangePop(), 1);
        level(nvtxRangePushW(L"backward"), 1);
        gs_cudeviceptr grad = alloc(3 * MiB);
        if (oom && s == 2) {
            gs_cudeviceptr huge;
            EXPECT(cuMemAlloc_v2(&huge, 1024 * MiB), GS_CUDA_ERROR_OUT_OF_MEMORY);
        }
        release(act);
        release(grad);
        level(nvtxRangePop(), 1);
        level(nvtxDomainRangePushEx(trainer, &opt), 0);
        if (s == 0)
            state = alloc(8 * MiB);
        level(nvtxDomainRangePop(trainer), 0);
        level(nvtxRangePop(), 0);
    }
    nvtxMarkA("done");
    nvtxEventAttributes_t saved = {0};
    saved.version = NVTX_VERSION;
    saved.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    saved.messageType = NVTX_MESSAGE_TYPE_ASCII;
    saved.message.ascii = "saved";
    nvtxDomainMarkEx(trainer, &saved);

    prefetch_id = nvtxRangeStartA("prefetch");
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, prefetcher, NULL), 0);
    EXPECT(pthread_join(t, NULL), 0);

    /* the memory extension: the weights as a sub-allocator's heap */
    nvtxMemVirtualRangeDesc_t heap_range = {4 * MiB, (const void *)(uintptr_t)weights};
    nvtxMemHeapDesc_t heap_desc = {0};
    heap_desc.extCompatID = NVTX_EXT_COMPATID_MEM;
    heap_desc.structSize = sizeof heap_desc;
    heap_desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    heap_desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    heap_desc.typeSpecificDescSize = sizeof heap_range;
    heap_desc.typeSpecificDesc = &heap_range;
    nvtxMemHeapHandle_t heap = nvtxMemHeapRegister(trainer, &heap_desc);
    nvtxMemVirtualRangeDesc_t regions[2] = {
        {1 * MiB, (const void *)(uintptr_t)weights},
        {512 * KiB, (const void *)(uintptr_t)(weights + 1 * MiB)},
    };
    nvtxMemRegionHandle_t handles[2] = {0};
    nvtxMemRegionsRegisterBatch_t reg = {0};
    reg.extCompatID = NVTX_EXT_COMPATID_MEM;
    reg.structSize = sizeof reg;
    reg.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    reg.heap = heap;
    reg.regionCount = 2;
    reg.regionDescElementSize = sizeof regions[0];
    reg.regionDescElements = regions;
    reg.regionHandleElementsOut = handles;
    nvtxMemRegionsRegister(trainer, &reg);
    if (traced) /* the tool's handles are the regions' addresses */
        EXPECT((uintptr_t)handles[1], (uintptr_t)(weights + 1 * MiB));
    nvtxMemRegionRef_t first = {.handle = handles[0]};
    if (!traced)
        first.pointer = regions[0].ptr; /* no tool: no handles either */
    nvtxMemRegionsUnregisterBatch_t unreg = {0};
    unreg.extCompatID = NVTX_EXT_COMPATID_MEM;
    unreg.structSize = sizeof unreg;
    unreg.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    unreg.refCount = 1;
    unreg.refElementSize = sizeof first;
    unreg.refElements = &first;
    nvtxMemRegionsUnregister(trainer, &unreg);
    nvtxMemHeapReset(trainer, heap);
    nvtxMemHeapUnregister(trainer, heap);

    if (bad) {
        level(nvtxRangePushA((const char *)16), 0); /* not a readable address */
        level(nvtxRangePop(), 0);
    }
    (void)state; /* kept to the end, as the history is */
    (void)prefetched;
    (void)hist;
    puts("nvtx done");
    return 0;
}
