/*
 * entry.h - how the program reaches the hooks (shim/entry/): the table of
 * our wrappers and the wrapped getters (getproc_hook.c), which dlsym_hook.c
 * uses too. (hooks_process.c and fork.c declare nothing.)
 *
 * Included by: shim/entry.
 */
#ifndef GPUSHIM_SHIM_ENTRY_H
#define GPUSHIM_SHIM_ENTRY_H

#include "gpushim_cuda.h"
#include "shim/base/base.h"

/* ---- getproc_hook.c: the table of our wrappers, and the getters ---- */
/* Called with what a lookup of the program returned for fn. Returns what the
 * program should get: our wrapper if real is (or now becomes) the function
 * the wrapper forwards to, or another entry point of the same object (the
 * driver's internal ones), else real itself, untouched. */
void *gs_substitute(enum gs_fn fn, void *real);

/* What a program gets for a driver entry point it looked up by base name
 * (also through cudaGetDriverEntryPoint): our wrapper, or real untouched. */
void *gs_getproc_substitute(const char *symbol, void *real, int version, gs_cuuint64 flags);

#endif
