/*
 * drv_exec.c - exec: the old image allocates 2 MiB (before_exec), then
 * replaces itself with `drv_exec after`, which allocates 3 MiB (after_exec)
 * and exits. Two traces: the first ends with its END record and holds the
 * 2 MiB; the second holds the 3 MiB. Also an exec that fails (ENOENT): the
 * first trace goes on.
 *
 * `drv_exec die`: after the failed exec, allocates 1 MiB (after_failed_exec)
 * and is killed (SIGKILL): the trace must go on past the END record the
 * failed exec wrote, and its end is read from the ring file made again.
 */
#include <signal.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

NOINLINE static void before_exec(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 2 * MiB), GS_CUDA_SUCCESS);
}

NOINLINE static void after_exec(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 3 * MiB), GS_CUDA_SUCCESS);
}

NOINLINE static void after_failed_exec(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
}

int main(int argc, char **argv)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    if (argc > 1 && strcmp(argv[1], "after") == 0) {
        after_exec();
        puts("after exec");
        return 0;
    }
    before_exec();
    EXPECT(execl("/nonexistent/program", "x", (char *)NULL), -1);
    EXPECT(errno, ENOENT);
    if (argc > 1 && strcmp(argv[1], "die") == 0) {
        after_failed_exec();
        raise(SIGKILL);
    }
    fflush(stdout);
    execl("/proc/self/exe", argv[0], "after", (char *)NULL);
    return 97;
}
