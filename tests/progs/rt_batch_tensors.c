/*
 * rt_batch_tensors.c - a training loop at batch size B, one cudaMalloc per
 * tensor (as PyTorch makes them with PYTORCH_NO_CUDA_MEMORY_CACHING=1), for
 * gpushim plan's replay through the model of the caching allocator. What
 * the allocator makes of it at each batch is worked out in
 * tests/integration/test_plan_replay.py.
 *
 * usage: rt_batch_tensors B [probe|managed]   (B: 1 to 100000)
 *
 *   mark "batch=B"
 *   probe (with "probe" only): B x 1 MiB, freed at once
 *   load_weights: 5 MiB, kept
 *   2 steps, each:
 *     mark "step"
 *     make_labels: B x 1 KiB
 *     make_activations: B x 1.25 MiB
 *     both freed
 *   step end "step" (ends the last step)
 *
 * Device peak: 5 MiB + B x (1.25 MiB + 1 KiB). With "managed" the same
 * schedule is made of cudaMallocManaged memory: no tensor-level
 * allocation for the replay. With "lib=PATH" the library at PATH is loaded
 * first (a framework's, so that the trace's modules name it).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim.h"
#include "progs.h"

gs_cudaerror cudaMalloc(void **p, size_t size);
gs_cudaerror cudaMallocManaged(void **p, size_t size, unsigned flags);
gs_cudaerror cudaFree(void *p);
gs_cudaerror cudaGetDeviceCount(int *count);

static int managed;

static void *tensor(size_t bytes)
{
    void *p = NULL;
    if (managed)
        EXPECT(cudaMallocManaged(&p, bytes, 1), 0);
    else
        EXPECT(cudaMalloc(&p, bytes), 0);
    return p;
}

NOINLINE static void probe(int batch) { EXPECT(cudaFree(tensor((size_t)batch * MiB)), 0); }

NOINLINE static void *load_weights(void) { return tensor(5 * MiB); }

NOINLINE static void *make_labels(int batch) { return tensor((size_t)batch * KiB); }

NOINLINE static void *make_activations(int batch)
{
    return tensor((size_t)batch * (5 * MiB / 4));
}

int main(int argc, char **argv)
{
    int batch = argc > 1 ? atoi(argv[1]) : 0;
    const char *mode = argc > 2 ? argv[2] : "";
    if (!strncmp(mode, "lib=", 4)) { /* a framework's library, loaded as import jax loads
                                        * it, once the runtime has found the driver */
        int devices = 0;
        EXPECT(cudaGetDeviceCount(&devices), 0);
        if (!dlopen(mode + 4, RTLD_NOW | RTLD_LOCAL)) {
            fprintf(stderr, "rt_batch_tensors: %s\n", dlerror());
            return 2;
        }
        mode = "";
    }
    if (batch < 1 || batch > 100000 || (*mode && strcmp(mode, "probe") && strcmp(mode, "managed"))) {
        fprintf(stderr, "usage: rt_batch_tensors B [probe|managed|lib=PATH]\n");
        return 2;
    }
    managed = !strcmp(mode, "managed");
    char label[32];
    snprintf(label, sizeof label, "batch=%d", batch);
    gpushim_mark(label);
    if (!strcmp(mode, "probe"))
        probe(batch);
    void *weights = load_weights();
    for (int i = 0; i < 2; i++) {
        gpushim_mark("step");
        void *labels = make_labels(batch), *act = make_activations(batch);
        EXPECT(cudaFree(labels), 0);
        EXPECT(cudaFree(act), 0);
    }
    gpushim_step_end("step");
    EXPECT(cudaFree(weights), 0);
    printf("batch %d: 2 steps\n", batch);
    return 0;
}
