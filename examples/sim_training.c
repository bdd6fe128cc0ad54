/*
 * sim_training.c - a training job in miniature, on the simulated CUDA
 * runtime (no GPU needed), with the two faults gpushim exists to explain.
 *
 *   load_model             12 layers of 200 MiB weights, kept
 *   each step, inside a range "step", its phases ranges of their own, as a
 *   training loop's NVTX ranges (torch.cuda.nvtx.range) make them:
 *     "forward"            12 activations of 300 MiB, kept for backward;
 *                          log_loss: a 256 MiB loss tensor appended to a
 *                          history list and never released (the leak)
 *     "backward"           the activations freed
 *     "optimizer step"     Adam's state, two buffers per layer, made in the
 *                          first step and kept, as torch.optim.Adam makes
 *                          exp_avg and exp_avg_sq in its first step()
 *                          (torch/optim/adam.py, Adam._init_group)
 *
 * The ranges go through the public API (include/gpushim.h), which does
 * nothing without the shim; a thread's outermost range is a step of its
 * label, so "step" makes the report's steps, and the phases make its roles:
 * 2.34 GiB parameters, 4.69 GiB optimizer state, 3.52 GiB activations.
 *
 * On a 16 GiB device (the simulator's default) the leak grows until the
 * loss of step 22 no longer fits: the job dies with out of memory, as real
 * ones do after hours. `make demo` runs it under gpushim and reports.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpushim.h"

#define MiB (1024ull * 1024ull)
#define LAYERS 12
#define MAX_STEPS 1000

typedef int cudaError_t;
cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaFree(void *p);
const char *cudaGetErrorString(cudaError_t e);

static void *weights[LAYERS], *adam_m[LAYERS], *adam_v[LAYERS];
static void *loss_history[MAX_STEPS];

/* Allocates or ends the job the way a framework does. */
static void *device_alloc(size_t bytes, const char *what, int step)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != 0) {
        fprintf(stderr, "step %d: CUDA out of memory allocating %zu MiB for %s: %s\n", step,
                (size_t)(bytes / MiB), what, cudaGetErrorString(e));
        exit(1);
    }
    return p;
}

__attribute__((noinline)) static void load_model(void)
{
    for (int l = 0; l < LAYERS; l++)
        weights[l] = device_alloc(200 * MiB, "weights", 0);
}

__attribute__((noinline)) static void forward(void **acts, int step)
{
    for (int l = 0; l < LAYERS; l++)
        acts[l] = device_alloc(300 * MiB, "activations", step);
}

/* The bug: the loss tensor is kept "for logging", with its whole graph. */
__attribute__((noinline)) static void log_loss(int step)
{
    loss_history[step] = device_alloc(256 * MiB, "loss", step);
}

__attribute__((noinline)) static void backward(void **acts)
{
    for (int l = LAYERS - 1; l >= 0; l--)
        cudaFree(acts[l]);
}

/* Adam's state, made by its first step. */
__attribute__((noinline)) static void optimizer_step(int step)
{
    for (int l = 0; l < LAYERS && !adam_m[l]; l++) {
        adam_m[l] = device_alloc(200 * MiB, "optimizer state", step);
        adam_v[l] = device_alloc(200 * MiB, "optimizer state", step);
    }
}

__attribute__((noinline)) static void train_step(int step)
{
    void *acts[LAYERS];
    gpushim_range_push("forward");
    forward(acts, step);
    log_loss(step);
    gpushim_range_pop();
    gpushim_range_push("backward");
    backward(acts);
    gpushim_range_pop();
    gpushim_range_push("optimizer step");
    optimizer_step(step);
    gpushim_range_pop();
}

int main(void)
{
    load_model();
    for (int step = 1; step < MAX_STEPS; step++) {
        gpushim_range_push("step");
        train_step(step);
        gpushim_range_pop();
        usleep(20000); /* the rest of a step: kernels, data loading */
        if (step % 5 == 0)
            printf("step %d done\n", step);
    }
    return 0;
}
