/*
 * drv_stream_order.c - the simulated driver's stream order, step by step:
 * when memory freed with cuMemFreeAsync may be handed out again, and the
 * reuse hazard it flags when it is handed out while a stream may still be
 * using it. It follows what CUDA documents for the default pool
 * (CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES and
 * CU_MEMPOOL_ATTR_RELEASE_THRESHOLD in cuda.h) and for the legacy default
 * stream. Run with SIMCUDA_MEMORY=64M. A and B are non-blocking streams, C a
 * blocking one; each allocation is 2 MiB from device 0's default pool.
 *
 *   same_stream   p on A, freed on A; q on A gets p's memory at once
 *   other_stream  q freed on A; r on B does not get it: the pool grows
 *   event         s on A takes q's memory (A's own free); r freed on B, an
 *                 event recorded on B after it, A waits for the event: t on A
 *                 gets r's memory
 *   legacy        w on the NULL stream, freed there; x on C (blocking, so
 *                 after the NULL stream's work) gets w's memory
 *   hazard        B uses t (simcuda_use); t freed on A; u on A gets t's
 *                 memory while B may still use it: one reuse hazard
 *   synchronized  B synchronized: its use is over; u freed on A, v on A
 *                 gets it again, no hazard
 *   trim          the context synchronized: the pool gives back all but
 *                 what v and x use (release threshold 0)
 *
 * The pool reserves 2, then 4 MiB (other_stream), then 6 MiB (legacy's x)
 * and keeps 4 MiB after the trim. Allocations 9, frees 7, 1 hazard.
 */
#include "progs.h"

gs_curesult cuStreamWaitEvent(gs_custream stream, gs_cuevent event, unsigned int flags);
gs_curesult cuEventCreate(gs_cuevent *event, unsigned int flags);
gs_curesult cuEventRecord(gs_cuevent event, gs_custream stream);
gs_curesult cuEventDestroy_v2(gs_cuevent event);
gs_curesult cuCtxSynchronize(void);
gs_curesult cuDeviceGetDefaultMemPool(gs_cumempool *pool, gs_cudevice dev);
gs_curesult cuMemPoolGetAttribute(gs_cumempool pool, gs_cumempoolattr attr, void *value);
gs_curesult simcuda_use(gs_custream stream, gs_cudeviceptr ptr);
unsigned long simcuda_hazards(void);

#define SIZE (2 * MiB)

static gs_cumempool pool;

static gs_cuuint64 reserved(void)
{
    gs_cuuint64 r = 0;
    EXPECT(cuMemPoolGetAttribute(pool, GS_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r),
           GS_CUDA_SUCCESS);
    return r;
}

static gs_cudeviceptr alloc_on(gs_custream s)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAllocAsync(&p, SIZE, s), GS_CUDA_SUCCESS);
    return p;
}

int main(void)
{
    gs_custream a, b, c;
    gs_cuevent e;
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    EXPECT(cuDeviceGetDefaultMemPool(&pool, 0), GS_CUDA_SUCCESS);
    EXPECT(cuStreamCreate(&a, 1), GS_CUDA_SUCCESS);
    EXPECT(cuStreamCreate(&b, 1), GS_CUDA_SUCCESS);
    EXPECT(cuStreamCreate(&c, 0), GS_CUDA_SUCCESS);

    gs_cudeviceptr p = alloc_on(a); /* same_stream */
    EXPECT(cuMemFreeAsync(p, a), GS_CUDA_SUCCESS);
    gs_cudeviceptr q = alloc_on(a);
    EXPECT(q, p);
    EXPECT(reserved(), 2 * MiB);

    EXPECT(cuMemFreeAsync(q, a), GS_CUDA_SUCCESS); /* other_stream */
    gs_cudeviceptr r = alloc_on(b);
    EXPECT(r != q, 1);
    EXPECT(reserved(), 4 * MiB);

    gs_cudeviceptr s = alloc_on(a); /* event */
    EXPECT(s, q);
    EXPECT(cuMemFreeAsync(r, b), GS_CUDA_SUCCESS);
    EXPECT(cuEventCreate(&e, 2), GS_CUDA_SUCCESS); /* CU_EVENT_DISABLE_TIMING */
    EXPECT(cuEventRecord(e, b), GS_CUDA_SUCCESS);
    EXPECT(cuStreamWaitEvent(a, e, 0), GS_CUDA_SUCCESS);
    EXPECT(cuEventDestroy_v2(e), GS_CUDA_SUCCESS);
    gs_cudeviceptr t = alloc_on(a);
    EXPECT(t, r);
    EXPECT(reserved(), 4 * MiB);

    gs_cudeviceptr w = alloc_on(NULL); /* legacy */
    EXPECT(reserved(), 6 * MiB);
    EXPECT(cuMemFreeAsync(w, NULL), GS_CUDA_SUCCESS);
    gs_cudeviceptr x = alloc_on(c);
    EXPECT(x, w);

    EXPECT(simcuda_use(b, t), GS_CUDA_SUCCESS); /* hazard */
    EXPECT(cuMemFreeAsync(t, a), GS_CUDA_SUCCESS);
    gs_cudeviceptr u = alloc_on(a);
    EXPECT(u, t);
    EXPECT(simcuda_hazards(), 1);

    EXPECT(cuStreamSynchronize(b), GS_CUDA_SUCCESS); /* synchronized */
    EXPECT(cuMemFreeAsync(u, a), GS_CUDA_SUCCESS);
    gs_cudeviceptr v = alloc_on(a);
    EXPECT(v, u);
    EXPECT(simcuda_hazards(), 1);

    EXPECT(cuMemFreeAsync(s, a), GS_CUDA_SUCCESS); /* trim */
    EXPECT(reserved(), 6 * MiB);
    EXPECT(cuCtxSynchronize(), GS_CUDA_SUCCESS);
    EXPECT(reserved(), 4 * MiB);
    printf("stream order done, %lu hazard\n", simcuda_hazards());
    return 0;
}
