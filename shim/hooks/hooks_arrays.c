/*
 * hooks_arrays.c - CUDA arrays (textures and surfaces): device memory whose
 * size the program never states. It is computed from the descriptor:
 * width x height x depth (0 meaning 1) x channels x the bytes of the format,
 * summed over the levels of a mipmapped array.
 */
#include "shim/base/base.h"
#include "shim/record/record.h"
#include "shim/hooks/hooks_int.h"

static uint64_t format_bytes(int format)
{
    switch (format) {
    case GS_CU_AD_FORMAT_UNSIGNED_INT8:
    case GS_CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case GS_CU_AD_FORMAT_UNSIGNED_INT16:
    case GS_CU_AD_FORMAT_SIGNED_INT16:
    case GS_CU_AD_FORMAT_HALF:
        return 2;
    case GS_CU_AD_FORMAT_UNSIGNED_INT32:
    case GS_CU_AD_FORMAT_SIGNED_INT32:
    case GS_CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0; /* a format whose size is not known here: the size is recorded as 0 */
    }
}

static uint64_t at_least_1(uint64_t v) { return v ? v : 1; }

/* Bytes of an array of the given extent, 0 if unknown or beyond 64 bits. */
static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, unsigned channels, int format)
{
    uint64_t bytes = format_bytes(format) * channels, out;
    if (__builtin_mul_overflow(bytes, w, &out) ||
        __builtin_mul_overflow(out, at_least_1(h), &out) ||
        __builtin_mul_overflow(out, at_least_1(d), &out))
        return 0;
    return out;
}

static uint64_t bytes_3d(const gs_cuarray3ddesc *d)
{
    return d ? array_bytes(d->Width, d->Height, d->Depth, d->NumChannels, d->Format) : 0;
}

static uint64_t bytes_mipmapped(const gs_cuarray3ddesc *d, unsigned levels)
{
    uint64_t total = 0;
    for (unsigned l = 0; d && l < levels && l < 64; l++)
        total += array_bytes(at_least_1(d->Width >> l), d->Height ? at_least_1(d->Height >> l) : 0,
                             d->Depth ? at_least_1(d->Depth >> l) : 0, d->NumChannels, d->Format);
    return total;
}

GS_EXPORT gs_curesult cuArrayCreate_v2(gs_cuarray *pHandle, const gs_cuarraydesc *pAllocateArray)
{
    GS_REAL_OR_MISSING(cuArrayCreate_v2);
    gs_curesult r = real(pHandle, pAllocateArray);
    const gs_cuarraydesc *d = pAllocateArray;
    uint64_t size = d ? array_bytes(d->Width, d->Height, 0, d->NumChannels, d->Format) : 0;
    gs_after_alloc(GS_API_cuArrayCreate_v2, GS_KIND_ARRAY, GS_SPACE_ARRAY, GS_DEVICE_CURRENT, r,
                   pHandle, size, NULL);
    return r;
}

GS_EXPORT gs_curesult cuArray3DCreate_v2(gs_cuarray *pHandle,
                                         const gs_cuarray3ddesc *pAllocateArray)
{
    GS_REAL_OR_MISSING(cuArray3DCreate_v2);
    gs_curesult r = real(pHandle, pAllocateArray);
    gs_after_alloc(GS_API_cuArray3DCreate_v2, GS_KIND_ARRAY, GS_SPACE_ARRAY, GS_DEVICE_CURRENT,
                   r, pHandle, bytes_3d(pAllocateArray), NULL);
    return r;
}

GS_EXPORT gs_curesult cuMipmappedArrayCreate(gs_cumipmappedarray *pHandle,
                                             const gs_cuarray3ddesc *pMipmappedArrayDesc,
                                             unsigned int numMipmapLevels)
{
    GS_REAL_OR_MISSING(cuMipmappedArrayCreate);
    gs_curesult r = real(pHandle, pMipmappedArrayDesc, numMipmapLevels);
    gs_after_alloc(GS_API_cuMipmappedArrayCreate, GS_KIND_ARRAY, GS_SPACE_ARRAY,
                   GS_DEVICE_CURRENT, r, pHandle,
                   bytes_mipmapped(pMipmappedArrayDesc, numMipmapLevels), NULL);
    return r;
}

GS_EXPORT gs_curesult cuArrayDestroy(gs_cuarray hArray)
{
    GS_REAL_OR_MISSING(cuArrayDestroy);
    uint64_t key = (uint64_t)(uintptr_t)hArray;
    GS_FREEING(GS_API_cuArrayDestroy, GS_SPACE_ARRAY, key, NULL, real(hArray));
}

GS_EXPORT gs_curesult cuMipmappedArrayDestroy(gs_cumipmappedarray hMipmappedArray)
{
    GS_REAL_OR_MISSING(cuMipmappedArrayDestroy);
    uint64_t key = (uint64_t)(uintptr_t)hMipmappedArray;
    GS_FREEING(GS_API_cuMipmappedArrayDestroy, GS_SPACE_ARRAY, key, NULL,
               real(hMipmappedArray));
}
