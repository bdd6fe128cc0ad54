/*
 * drv_small_stack.c - the first CUDA allocation of the process made on a
 * thread with a small stack (16 KiB, PTHREAD_STACK_MIN on x86-64, the least
 * pthread_attr_setstacksize takes): under the shim, that call also opens
 * the trace and walks the stack, and must fit in what the program gave.
 * The thread allocates 64 KiB in small_alloc and frees it; the main thread
 * then allocates 1 MiB and keeps it. Prints "small stack done".
 */
#include <pthread.h>

#include "progs.h"

NOINLINE static void small_alloc(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 64 * KiB), GS_CUDA_SUCCESS);
    EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
}

static void *on_a_small_stack(void *arg)
{
    (void)arg;
    use_device(0);
    small_alloc();
    return NULL;
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    pthread_attr_t a;
    pthread_attr_init(&a);
    EXPECT(pthread_attr_setstacksize(&a, 16 * KiB), 0);
    pthread_t t;
    EXPECT(pthread_create(&t, &a, on_a_small_stack, NULL), 0);
    EXPECT(pthread_join(t, NULL), 0);
    use_device(0);
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
    puts("small stack done");
    return 0;
}
