/*
 * api.c - the public API's entry points (include/gpushim.h): what a program
 * may tell the profiler, found by name with dlsym, so that a program built
 * against the header runs the same without the shim.
 *
 * A mark is an event with a label and the caller's stack (a step's end is a
 * mark flagged GS_MARK_STEP_END); a range is an
 * NVTX range of the default domain (nvtx.c), without a stack; a block of the
 * program's own allocator is an event with its address, size and stack, and
 * its return one with its address. They go through the ring like the
 * driver's events, so a death loses none of them. A flush drains the ring
 * into the trace file on the calling thread.
 *
 * Every argument may be NULL or wrong, as everywhere in the shim: the label
 * is read through process_vm_readv, so that a pointer to memory that is not
 * there is read as the empty label instead of a crash the program would not
 * have had without us; a NULL block is ignored and said once. errno is kept.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "gpushim.h"
#include "shim/base/base.h"
#include "shim/writer/writer.h"
#include "shim/hooks/hooks_int.h"
#include "shim/record/record.h"

GS_EXPORT void gpushim_api_v1_mark(const char *label)
{
    int saved = errno;
    char buf[GS_MAX_LABEL];
    uint32_t len = gs_read_label(label, buf, sizeof buf, "gpushim_mark");
    gs_record_mark(buf, len);
    errno = saved;
}

GS_EXPORT void gpushim_api_v1_step_end(const char *label)
{
    int saved = errno;
    char buf[GS_MAX_LABEL];
    uint32_t len = gs_read_label(label, buf, sizeof buf, "gpushim_step_end");
    gs_record_mark_flags(buf, len, GS_MARK_STEP_END);
    errno = saved;
}

GS_EXPORT void gpushim_api_v1_block_alloc(const void *ptr, size_t size)
{
    int saved = errno;
    if (ptr) {
        gs_record_block(GS_REC_BLOCK_ALLOC, (uint64_t)(uintptr_t)ptr, size);
    } else {
        static int once;
        gs_warn_once(&once, "gpushim_block_alloc was given a NULL block (of %zu bytes); "
                            "it is not recorded", size);
    }
    errno = saved;
}

GS_EXPORT void gpushim_api_v1_block_free(const void *ptr)
{
    int saved = errno;
    if (ptr)
        gs_record_block(GS_REC_BLOCK_FREE, (uint64_t)(uintptr_t)ptr, 0);
    errno = saved; /* freeing NULL does nothing, as free(NULL) */
}

GS_EXPORT void gpushim_api_v1_flush(void) { gs_writer_flush(); }

/* A range is an NVTX range of the default domain: the two nest together. */
GS_EXPORT int gpushim_api_v1_range_push(const char *label)
{
    int saved = errno;
    char buf[GS_MAX_LABEL];
    int depth = gs_nvtx_push(0, buf, gs_read_label(label, buf, sizeof buf, "gpushim_range_push"));
    errno = saved;
    return depth;
}

GS_EXPORT int gpushim_api_v1_range_pop(void)
{
    int saved = errno;
    int depth = gs_nvtx_pop(0);
    errno = saved;
    return depth;
}

/* The header's names and these definitions must agree. */
_Static_assert(GPUSHIM_API_VERSION == 1, "the v1 entry points are defined here");
_Static_assert(GPUSHIM_MAX_LABEL == GS_MAX_LABEL, "one limit on a label's length");
