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
 * a trace of its own. The page is zeroed in a fork() child too: its handler
 * sets it back (gs_lineage_mark_ours), so that it resets once, not twice.
 * The parent's ring is forgotten, not unmapped: the child has no mapping of
 * it, and the range may hold what the child mapped since. A vfork child shares the page, and the memory: it is
 * this process as far as the page can tell (writer.c and hooks_process.c
 * tell it by its pid where it matters). Where the kernel has no
 * MADV_WIPEONFORK (before Linux 4.14) nothing is checked.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim/base/base.h"

uint8_t *gs_lineage_page;
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
        gs_lineage_page = p;
        gs_lineage_mark_ours();
        return;
    }
#endif
    munmap(p, size > 0 ? (size_t)size : 4096);
}

void gs_lineage_mark_ours(void)
{
    if (gs_lineage_page)
        __atomic_store_n(gs_lineage_page, 1, __ATOMIC_RELEASE);
}

void gs_lineage_unseen_child(void)
{
    /* The child may have made threads since the clone: the first to come
     * here (0 -> 2) resets, the others wait until it has (1). */
    uint8_t zero = 0;
    if (__atomic_compare_exchange_n(gs_lineage_page, &zero, 2, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        if (unseen_child)
            unseen_child(); /* ends with gs_lineage_mark_ours */
        gs_lineage_mark_ours();
        return;
    }
    while (__atomic_load_n(gs_lineage_page, __ATOMIC_ACQUIRE) != 1)
        sched_yield();
}
