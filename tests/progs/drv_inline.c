/*
 * drv_inline.c - a leak made inside an inlined function.
 *
 * grab_buffer is always inlined into load_table, so the return address the
 * shim records lies in load_table's code; the report must still show two
 * frames: grab_buffer at the line of the driver call, then load_table at
 * the line where grab_buffer was inlined. Unfreed: 3 x 64 KiB.
 */
#include "progs.h"

static gs_cudeviceptr table[3];

static inline __attribute__((always_inline)) void grab_buffer(gs_cudeviceptr *p)
{
    EXPECT(cuMemAlloc_v2(p, 64 * KiB), GS_CUDA_SUCCESS); /* line 15 */
}

NOINLINE static void load_table(void)
{
    for (int i = 0; i < 3; i++)
        grab_buffer(&table[i]); /* line 21 */
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    load_table();
    return 0;
}
