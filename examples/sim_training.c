/*
 * sim_training.c - a training job in miniature, on the simulated CUDA
 * runtime (no GPU needed), with the two faults gpushim exists to explain.
 *
 *   load_model             12 layers of 200 MiB weights, kept
 *   init_optimizer         Adam state: two buffers per layer, kept
 *   forward / backward     per step, 12 activations of 300 MiB, freed after
 *   log_loss               per step, a 256 MiB tensor appended to a history
 *                          list and never released (the leak)
 *
 * Each step starts with gpushim_mark("step") (include/gpushim.h: it does
 * nothing without the shim), so the report follows memory step by step.
 *
 * On a 16 GiB device (the simulator's default) the leak grows until a
 * forward pass no longer fits: the job dies with out of memory, as real
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

__attribute__((noinline)) static void init_optimizer(void)
{
    for (int l = 0; l < LAYERS; l++) {
        adam_m[l] = device_alloc(200 * MiB, "optimizer state", 0);
        adam_v[l] = device_alloc(200 * MiB, "optimizer state", 0);
    }
}

__attribute__((noinline)) static void forward(void **acts, int step)
{
    for (int l = 0; l < LAYERS; l++)
        acts[l] = device_alloc(300 * MiB, "activations", step);
}

__attribute__((noinline)) static void backward(void **acts)
{
    for (int l = LAYERS - 1; l >= 0; l--)
        cudaFree(acts[l]);
}

/* The bug: the loss tensor is kept "for logging", with its whole graph. */
__attribute__((noinline)) static void log_loss(int step)
{
    loss_history[step] = device_alloc(256 * MiB, "loss", step);
}

__attribute__((noinline)) static void train_step(int step)
{
    void *acts[LAYERS];
    forward(acts, step);
    log_loss(step);
    backward(acts);
}

int main(void)
{
    load_model();
    init_optimizer();
    for (int step = 1; step < MAX_STEPS; step++) {
        gpushim_mark("step");
        train_step(step);
        usleep(20000); /* the rest of a step: kernels, data loading */
        if (step % 5 == 0)
            printf("step %d done\n", step);
    }
    return 0;
}
