/*
 * hooks_common.c - what every hook file shares: the answer when the real
 * function cannot be found (gs_missing), and the recording after an
 * allocating or freeing call (gs_after_alloc, gs_after_free). It calls no
 * hook file, so that they may all call it.
 */
#include <string.h>

#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks_int.h"

gs_curesult gs_missing(enum gs_fn fn)
{
    static int once;
    gs_warn_once(&once, "%s called but no CUDA driver is loaded", gs_fn_name(fn));
    return GS_CUDA_ERROR_NOT_INITIALIZED;
}

void gs_after_alloc(enum gs_api api, enum gs_kind kind, enum gs_space space, int32_t device,
                    gs_curesult r, const void *out, uint64_t size, gs_custream stream)
{
    uint64_t key = 0;
    if (r == GS_CUDA_SUCCESS && out)
        memcpy(&key, out, sizeof key); /* a pointer, a device address or a handle */
    if (r == GS_CUDA_SUCCESS && key)
        gs_record_alloc(api, kind, space, device, key, size, stream);
    else if (r != GS_CUDA_SUCCESS)
        gs_record_alloc_failed(api, device, size, stream, r);
}

void gs_after_free(enum gs_api api, enum gs_space space, uint64_t key, gs_custream stream,
                   gs_curesult r)
{
    if (key && r != GS_CUDA_SUCCESS)
        gs_record_free_failed(api, space, key, stream, r);
}
