/*
 * drv_roles.c - a training loop whose memory's roles are known, for the
 * rules of analyzer/findings/roles.c. Phases as PyTorch's show them: the
 * step and its forward and optimizer as ranges (gpushim_range_push, as
 * torch.cuda.nvtx.range_push or gpushim.region make them), backward on a
 * thread named pt_autograd_0, as PyTorch's autograd engine runs CUDA
 * backward (torch/csrc/autograd/engine.cpp: "pt_autograd_" + device), with
 * no range; a cuBLAS-like workspace made from inside a library named
 * libcublasLt.so.13 (argv[1]: tests/progs/plugin/framework_stub.c). Linked
 * with -lcuda; run with SIMCUDA_MEMORY=64M. Device memory, in MiB:
 *
 *   load_model: params 2 x 4, before the first step      parameters        8
 *   3 steps, each a range "step" (also a "step" mark):
 *     range "forward":
 *       step 1: the workspace, 1, kept                  workspace         1
 *       act 2 (freed in backward)                       activations       2
 *       hist 1, kept: the leak (no rule: unclassified)  unclassified      1 a step
 *       tmp 1, freed in the range                       temporaries       1
 *       step 3: 1 GiB asked for, which fails (the OOM)
 *     backward, on pt_autograd_0:
 *       step 1: grad 4, kept (reused later)              gradients         4
 *       gtmp 2, freed there                             temporaries       2
 *       act freed
 *     range "optimizer": step 1: state 8, kept         optimizer state   8
 *
 *   at the OOM (26): parameters 8, optimizer state 8, gradients 4,
 *     unclassified 3, activations 2, workspace 1
 *   at the peak (28, step 3's backward): the same and temporaries 2
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

#include "gpushim.h"
#include "progs.h"

static gs_cudeviceptr params[2], hist[3], act, grad, state;
static int step;

NOINLINE static gs_cudeviceptr alloc(size_t mib)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, mib * MiB), GS_CUDA_SUCCESS);
    return p;
}

static void release(gs_cudeviceptr p) { EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS); }

NOINLINE static void load_model(void)
{
    params[0] = alloc(4);
    params[1] = alloc(4);
}

NOINLINE static void forward(int (*workspace)(size_t))
{
    gpushim_range_push("forward");
    if (step == 0)
        EXPECT(workspace(1 * MiB), GS_CUDA_SUCCESS);
    act = alloc(2);
    hist[step] = alloc(1);
    release(alloc(1)); /* tmp */
    if (step == 2) { /* last on this thread: no smaller allocation after it, which the
                      * report would read as the program getting past it */
        gs_cudeviceptr huge;
        EXPECT(cuMemAlloc_v2(&huge, 1024 * MiB), GS_CUDA_ERROR_OUT_OF_MEMORY);
    }
    gpushim_range_pop();
}

NOINLINE static void *backward(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pt_autograd_0");
    use_device(0);
    if (step == 0)
        grad = alloc(4);
    release(alloc(2)); /* gtmp */
    release(act);
    return NULL;
}

NOINLINE static void optimizer(void)
{
    gpushim_range_push("optimizer");
    if (step == 0)
        state = alloc(8);
    gpushim_range_pop();
}

int main(int argc, char **argv)
{
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    int (*workspace)(size_t) = lib ? (int (*)(size_t))dlsym(lib, "gs_framework_alloc") : NULL;
    if (!workspace) {
        fprintf(stderr, "usage: drv_roles PATH/libcublasLt.so.13\n");
        return 2;
    }
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    load_model();
    for (step = 0; step < 3; step++) {
        gpushim_range_push("step");
        forward(workspace);
        pthread_t t;
        EXPECT(pthread_create(&t, NULL, backward, NULL), 0);
        EXPECT(pthread_join(t, NULL), 0);
        optimizer();
        gpushim_range_pop();
    }
    puts("roles done");
    return 0;
}
