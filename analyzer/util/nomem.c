/*
 * nomem.c - the count of the analyzer's failed allocations (nomem.h).
 */
#include "analyzer/util/nomem.h"

static uint64_t failed;

void gs_nomem_note(void) { __atomic_add_fetch(&failed, 1, __ATOMIC_RELAXED); }

uint64_t gs_nomem_count(void) { return __atomic_load_n(&failed, __ATOMIC_RELAXED); }
