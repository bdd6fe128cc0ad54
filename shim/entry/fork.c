/*
 * fork.c - the shim across fork: pthread_atfork handlers that take every
 * shim lock before the fork, release them after it in the parent, and in the
 * child reset each subsystem (so none is left held, and the child lets go of
 * the parent's trace and starts its own on its first event); the same for a
 * child of clone() without CLONE_VM, which runs no handler, at its first
 * recorded call (base/lineage.c).
 *
 * It sits on top of the subsystems and calls their lock, unlock and reset
 * functions; none of them calls back. Lock order (take only in this order):
 * the unwinding gate, runtime call sites, pools, stack table, Python code
 * objects, modules, writer, ring.
 */
#include <pthread.h>

#include "shim/base/base.h"
#include "shim/bound/bound.h"
#include "shim/writer/writer.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks.h"

static void before_fork(void)
{
    gs_unwind_lock();
    gs_runtime_lock();
    gs_pools_lock();
    gs_record_lock();
    gs_python_lock();
    gs_modules_lock();
    gs_writer_lock(); /* the writer's, then the ring's */
}

static void after_fork_parent(void)
{
    gs_writer_unlock();
    gs_modules_unlock();
    gs_python_unlock();
    gs_record_unlock();
    gs_pools_unlock();
    gs_runtime_unlock();
    gs_unwind_unlock();
}

static void after_fork_child(void)
{
    gs_writer_reset_after_fork();
    gs_bound_reset_after_fork();
    gs_record_reset_after_fork();
    gs_python_reset_after_fork();
    gs_pythreads_reset_after_fork();
    gs_modules_reset();
    gs_pools_reset();
    gs_runtime_reset_after_fork();
    gs_unwind_reset_after_fork();
    gs_lineage_mark_ours(); /* the kernel zeroed it in this child: reset once, here */
}

__attribute__((constructor)) static void fork_init(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    /* a child made by clone() runs no handler: it runs the child's at its
     * first recorded call (base/lineage.c) */
    gs_lineage_init(after_fork_child);
}
