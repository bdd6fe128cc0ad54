/*
 * drv_batch.c - a training loop whose memory grows with its batch size, for
 * gpushim plan, diff and the ranks report. Linked with -lcuda; marks with
 * the public API (include/gpushim.h). Arguments: the batch size B (1 to
 * 1000), and the steps N (default 3).
 *
 *   mark "batch=B"
 *   load_weights: W = 8 MiB, never freed
 *   N steps, step i = 0 .. N-1:
 *     mark "step"
 *     make_activations: B x 1.5 MiB (one allocation)
 *     make_scratch: i x 512 KiB (none in step 0)
 *     both freed
 *   step end "step" (ends the last step)
 *
 * Device peak (in the last step): 8 MiB + B x 1.5 MiB + (N-1) x 512 KiB;
 * with N = 3: 9 MiB + B x 1.5 MiB, so fixed 9 MiB and 1.5 MiB per sample.
 * Step i peaks at 8 MiB + B x 1.5 MiB + i x 512 KiB: the steps' peaks are
 * (N-1) x 512 KiB apart. Allocated over the run: activations N x B x
 * 1.5 MiB, scratch N(N-1)/2 x 512 KiB, weights 8 MiB; unfreed: the weights.
 *
 * When an allocation fails (run it with SIMCUDA_MEMORY below the peak), it
 * says "out of memory at batch B" on stderr and exits with status 1 there,
 * the failed allocation recorded.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gpushim.h"
#include "progs.h"

static gs_cudeviceptr alloc_or_exit(size_t bytes, int batch)
{
    gs_cudeviceptr p;
    gs_curesult r = cuMemAlloc_v2(&p, bytes);
    if (r == GS_CUDA_ERROR_OUT_OF_MEMORY) {
        fprintf(stderr, "out of memory at batch %d\n", batch);
        exit(1);
    }
    EXPECT(r, GS_CUDA_SUCCESS);
    return p;
}

NOINLINE static gs_cudeviceptr load_weights(int batch) { return alloc_or_exit(8 * MiB, batch); }

NOINLINE static gs_cudeviceptr make_activations(int batch)
{
    return alloc_or_exit((size_t)batch * (3 * MiB / 2), batch);
}

NOINLINE static gs_cudeviceptr make_scratch(int step, int batch)
{
    return alloc_or_exit((size_t)step * (512 * KiB), batch);
}

int main(int argc, char **argv)
{
    int batch = argc > 1 ? atoi(argv[1]) : 0, steps = argc > 2 ? atoi(argv[2]) : 3;
    if (batch < 1 || batch > 1000 || steps < 1 || steps > 1000) {
        fprintf(stderr, "usage: drv_batch BATCH [STEPS]\n");
        return 2;
    }
    char label[32];
    snprintf(label, sizeof label, "batch=%d", batch);
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    gpushim_mark(label);
    load_weights(batch);
    for (int i = 0; i < steps; i++) {
        gpushim_mark("step");
        gs_cudeviceptr act = make_activations(batch), scratch = 0;
        if (i)
            scratch = make_scratch(i, batch);
        EXPECT(cuMemFree_v2(act), GS_CUDA_SUCCESS);
        if (scratch)
            EXPECT(cuMemFree_v2(scratch), GS_CUDA_SUCCESS);
    }
    gpushim_step_end("step");
    printf("batch %d: %d steps\n", batch, steps);
    return 0;
}
