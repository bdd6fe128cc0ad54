/*
 * drv_hostile_names.c - a program whose native names carry control bytes,
 * once tests/integration/test_hostile_names.py has patched a copy of it:
 * the marker gsEVILgs, in its symbol table and its DWARF (a function's
 * name, and by #line its source file's), becomes ESC ] 2 ; x BEL newline
 * ESC, 8 bytes for 8, so the ELF stays whole. Unpatched, it runs as any
 * other: one allocation of 1 MiB, never freed, made in alloc_gsEVILgs.
 */
#include "progs.h"

#line 1 "gsEVILgs.c"
NOINLINE static void alloc_gsEVILgs(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 1 * MiB), GS_CUDA_SUCCESS);
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    alloc_gsEVILgs();
    puts("hostile names done");
    return 0;
}
