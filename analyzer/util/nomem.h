/*
 * nomem.h - how many of the analyzer's own allocations failed (nomem.c).
 *
 * A failed allocation deep in a model or an index drops what it would have
 * held (an allocation of the live set, a site, a sample); every such place
 * copes, and none can say so to the user. So the gpushim binary counts them
 * all, where they are made: analyzer/nomem_wrap.c wraps malloc and its
 * kin at link time (ld --wrap) for every object of the analyzer, and the
 * count makes the report incomplete (findings/warnings.c). Programs linked
 * without the wrap (unit tests, fuzz targets, libgpushim.so) count none.
 *
 * Included by: analyzer/nomem_wrap.c, findings/warnings.c.
 */
#ifndef GPUSHIM_UTIL_NOMEM_H
#define GPUSHIM_UTIL_NOMEM_H

#include <stdint.h>

/* One allocation failed (any thread). */
void gs_nomem_note(void);
/* How many have, so far. */
uint64_t gs_nomem_count(void);

#endif
