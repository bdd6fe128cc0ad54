/*
 * drv_api_steps.c - a training loop that marks its steps and its epoch with
 * the public API (include/gpushim.h), linked with -lcuda, never with the
 * shim: it must run the same with and without it.
 *
 *   mark "epoch"                            device 0 MiB
 *   load_weights: 4 MiB, kept
 *   3 steps, each:
 *     mark "step"                           device 4, 5, 6 MiB
 *     2 MiB activation, 1 MiB kept in a history (the leak), the activation freed
 *   step end "step"                         7 MiB: ends the third step
 *   step end "epoch"                        7 MiB: ends the epoch
 *   gpushim_flush()
 *
 * Steps, in the order they end (what follows the ends is no step's):
 *   step  4 -> 5 MiB: peak 7, allocated 3, freed 2, growth +1
 *   step  5 -> 6 MiB: peak 8, allocated 3, freed 2, growth +1
 *   step  6 -> 7 MiB: peak 9, allocated 3, freed 2, growth +1
 *   epoch 0 -> 7 MiB: peak 9, allocated 13, freed 6, growth +7
 * The marks are made in begin_step, end_step and in main (the epoch).
 *
 * With the argument "bad", it then also marks with an unreadable label, a
 * NULL label, and gives a NULL block: the shim says so on stderr once each
 * and records the marks with empty labels.
 *
 * With the argument "kill", it does not flush, gives a 4 KiB block at the
 * start of the weights, and dies of SIGKILL: the marks and the block must
 * come back from the ring file.
 */
#include <signal.h>
#include <string.h>

#include "gpushim.h"
#include "progs.h"

static gs_cudeviceptr weights, history[3];

NOINLINE static void load_weights(void) { EXPECT(cuMemAlloc_v2(&weights, 4 * MiB), 0); }

NOINLINE static void begin_step(void) { gpushim_mark("step"); }

NOINLINE static void end_step(void) { gpushim_step_end("step"); }

NOINLINE static void train_step(int step)
{
    gs_cudeviceptr act;
    EXPECT(cuMemAlloc_v2(&act, 2 * MiB), GS_CUDA_SUCCESS);
    EXPECT(cuMemAlloc_v2(&history[step], 1 * MiB), GS_CUDA_SUCCESS);
    EXPECT(cuMemFree_v2(act), GS_CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    gpushim_mark("epoch");
    load_weights();
    for (int step = 0; step < 3; step++) {
        begin_step();
        train_step(step);
    }
    end_step();
    gpushim_step_end("epoch");
    if (argc > 1 && strcmp(argv[1], "kill") == 0) {
        gpushim_block_alloc((const void *)(uintptr_t)weights, 4 * KiB);
        raise(SIGKILL);
    }
    gpushim_flush();
    if (argc > 1 && strcmp(argv[1], "bad") == 0) {
        gpushim_mark((const char *)16); /* not a readable address */
        gpushim_mark(NULL);
        gpushim_block_alloc(NULL, 100);
        gpushim_block_free(NULL); /* as free(NULL): nothing, and nothing said */
    }
    puts("steps done");
    return 0;
}
