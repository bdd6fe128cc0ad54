/*
 * drv_clone.c - children made by clone() without CLONE_VM, which run no
 * pthread_atfork handler, as some launchers and sandboxes start workers.
 *
 * The parent allocates 1 MiB (parent_alloc) and keeps it. Then two
 * children, one at a time:
 *   clone(fn, stack, SIGCHLD): on a stack of its own, it frees an address
 *     never allocated (recorded before the driver is called, which refuses
 *     it), allocates 64 KiB in child_alloc, and exits;
 *   syscall(SYS_clone, SIGCHLD, 0, ...): as fork but by the raw system
 *     call, on the parent's stack: maps 4 MiB of its own and fills it,
 *     allocates 64 KiB in child_alloc, checks its 4 MiB, exits.
 * Each child's trace holds its own events only (one allocation; the first
 * also the refused free); the parent's is whole and holds its 1 MiB.
 * The parent prints how many children exited 0.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "progs.h"

NOINLINE static void parent_alloc(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, MiB), GS_CUDA_SUCCESS);
}

NOINLINE static void child_alloc(void)
{
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 64 * KiB), GS_CUDA_SUCCESS);
}

static int child(void *arg)
{
    (void)arg;
    EXPECT(cuMemFree_v2(0x1000), GS_CUDA_ERROR_INVALID_VALUE);
    child_alloc();
    exit(0); /* the shim's exit handlers finish the child's trace */
}

static int reap(pid_t pid)
{
    int status;
    EXPECT(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void)
{
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    parent_alloc();
    static char stack[256 * 1024] __attribute__((aligned(16)));
    int ok = 0;
    pid_t pid = clone(child, stack + sizeof stack, SIGCHLD, NULL);
    EXPECT(pid > 0, 1);
    ok += reap(pid);
    pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        /* memory of its own before its first call: the kernel tends to put
         * it where the parent's ring was, which this child has no mapping
         * of; the shim must leave it alone (it unmapped it) */
        size_t len = 4 * MiB;
        unsigned char *own = mmap(NULL, len, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT(own != MAP_FAILED, 1);
        memset(own, 7, len);
        child_alloc();
        EXPECT(own[0] + own[len / 2] + own[len - 1], 21);
        exit(0);
    }
    EXPECT(pid > 0, 1);
    ok += reap(pid);
    printf("%d children exited 0\n", ok);
    return 0;
}
