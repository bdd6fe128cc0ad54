/*
 * hooks.h - the wrapped functions (shim/hooks/): what the top of the shim
 * (shim/entry) uses of them: which runtime a call goes to (for the
 * runtime's driver entry-point getters), the thread-rename wrappers that
 * dlsym hands out, and the lock and reset functions fork.c calls.
 *
 * Included by: shim/hooks, shim/entry.
 */
#ifndef GPUSHIM_SHIM_HOOKS_H
#define GPUSHIM_SHIM_HOOKS_H

#include <pthread.h>

#include "gpushim_cuda.h"
#include "shim/base/base.h"

/* ---- hooks_runtime.c: around fork, the table of call sites ---- */
void gs_runtime_lock(void);
void gs_runtime_unlock(void);
void gs_runtime_reset_after_fork(void);
/* The runtime function fn as the program's call from caller reaches it: in
 * the scope of the caller's object, else the next after the shim (cached by
 * call site). NULL when there is none; then gs_runtime_missing says so once
 * and returns the runtime's "initialization error". */
void *gs_runtime_real(enum gs_fn fn, const void *caller);
gs_cudaerror gs_runtime_missing(enum gs_fn fn);

/* ---- hooks_pools.c: around fork, the pools seen ---- */
void gs_pools_lock(void);
void gs_pools_unlock(void);
void gs_pools_reset(void);

/* ---- hooks_threads.c: our pthread_setname_np and prctl, by names no other
 * definition can stand in for (what dlsym_hook.c hands out) ---- */
__attribute__((visibility("hidden"))) int gs_setname_wrapper(pthread_t thread, const char *name);
__attribute__((visibility("hidden"))) int gs_prctl_wrapper(int option, ...);
__attribute__((visibility("hidden"))) int gs_create_wrapper(pthread_t *thread,
                                                            const pthread_attr_t *attr,
                                                            void *(*start)(void *), void *arg);

#endif
