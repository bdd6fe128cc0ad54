/*
 * lineage.c - whether this process is the one the shim's state belongs to.
 *
 * fork() runs the pthread_atfork handlers (entry/fork.c), which let the
 * child go of the parent's trace. A child made by clone() without CLONE_VM
 * (clone(fn, stack, SIGCHLD), syscall(SYS_clone, SIGCHLD), as some
 * launchers and sandboxes start workers) runs none: it has a copy of the
 * parent's state, which says the trace is open, without the ring (mapped
 * MADV_DONTFORK) and without the locks' holders. Its first recorded call
 * used to die in the ring.
 *
 * Asking the kernel for the pid at every event costs a system call (2.5 us
 * on these machines, more than an event). Instead one page, mapped
 * MADV_WIPEONFORK, holds a 1: the kernel gives any child that does not
 * share our memory that page filled with zeros, and a zero read at an
 * event (gs_lineage_check, before any lock) is a child no handler ran in,
 * which then runs the handler fork would have run, once, and goes on with
 * a trace of its own. A vfork child shares the page, and the memory: it is
 * this process as far as the page can tell (writer.c and hooks_process.c
 * tell it by its pid where it matters). Where the kernel has no
 * MADV_WIPEONFORK (before Linux 4.14) nothing is checked.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "shim/base/base.h"

volatile uint8_t *gs_lineage_page;
static void (*unseen_child)(void);

void gs_lineage_init(void (*on_unseen_child)(void))
{
    long size = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, size > 0 ? (size_t)size : 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
#ifdef MADV_WIPEONFORK
    if (madvise(p, size > 0 ? (size_t)size : 4096, MADV_WIPEONFORK) == 0) {
        unseen_child = on_unseen_child;
        *(volatile uint8_t *)p = 1;
        gs_lineage_page = p;
        return;
    }
#endif
    munmap(p, size > 0 ? (size_t)size : 4096);
}

void gs_lineage_unseen_child(void)
{
    /* this process has one thread, this one, until it makes another */
    if (unseen_child)
        unseen_child();
    *gs_lineage_page = 1;
}
