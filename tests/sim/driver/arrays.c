/*
 * arrays.c - Memory Management, arrays; Mipmapped Array Management: cuArrayCreate,
 * cuArray3DCreate, cuArrayDestroy, cuMipmappedArrayCreate/Destroy.
 *
 * Design
 *   - Arrays and mipmapped arrays are heap objects charged to the current
 *     context's device; their handles are the objects' addresses.
 */
#include "tests/sim/driver/sim.h"

/* What CUarray and CUmipmappedArray handles point to. */
struct sim_array {
    int device;
    uint64_t size; /* rounded, as accounted */
};

static unsigned int format_bytes(int format)
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
        return 0;
    }
}

/* Bytes of one array: width * max(height,1) * max(depth,1) elements. Too
 * big for any device: CUDA_ERROR_OUT_OF_MEMORY. */
static gs_curesult array_bytes(size_t w, size_t h, size_t d, int format, unsigned int channels,
                               uint64_t *out)
{
    uint64_t n = format_bytes(format);

    if (!w || !n || (channels != 1 && channels != 2 && channels != 4))
        return GS_CUDA_ERROR_INVALID_VALUE;
    if (__builtin_mul_overflow(n * channels, (uint64_t)w, &n) ||
        __builtin_mul_overflow(n, (uint64_t)(h ? h : 1), &n) ||
        __builtin_mul_overflow(n, (uint64_t)(d ? d : 1), &n) || n > SIM_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    *out = n;
    return GS_CUDA_SUCCESS;
}

static size_t level_extent(size_t extent, unsigned int level)
{
    return extent >> level ? extent >> level : 1;
}

/* The sum over levels 0..levels-1, each extent halved per level (at least
 * 1); at most floor(log2(largest extent)) + 1 levels. */
static gs_curesult mipmap_bytes(const gs_cuarray3ddesc *a, unsigned int levels, uint64_t *out)
{
    size_t big = a->Width > a->Height ? a->Width : a->Height;
    unsigned int max_levels = 0;
    uint64_t sum = 0, n;

    if (a->Depth > big)
        big = a->Depth;
    while (max_levels < 64 && big >> max_levels)
        max_levels++;
    if (!levels || levels > max_levels)
        return GS_CUDA_ERROR_INVALID_VALUE;
    for (unsigned int l = 0; l < levels; l++) {
        gs_curesult rc = array_bytes(level_extent(a->Width, l), level_extent(a->Height, l),
                                     level_extent(a->Depth, l), a->Format, a->NumChannels, &n);

        if (rc != GS_CUDA_SUCCESS)
            return rc;
        sum += n;
    }
    if (sum > SIM_SPAN)
        return GS_CUDA_ERROR_OUT_OF_MEMORY;
    *out = sum;
    return GS_CUDA_SUCCESS;
}

/* A new object of bytes (rounded to 512) charged to dev and registered;
 * NULL when out of memory. */
static struct sim_array *array_new(const char *api, struct reg *set, int dev, uint64_t bytes)
{
    struct sim_array *a = malloc(sizeof *a);
    int ok = 0;

    if (!a)
        return NULL;
    *a = (struct sim_array){dev, round_up(bytes, SIM_ALIGN)};
    pthread_mutex_lock(&lock);
    if (devices[dev].capacity - devices[dev].used >= a->size && reg_add(set, a) == 0) {
        devices[dev].used += a->size;
        ok = 1;
    }
    pthread_mutex_unlock(&lock);
    sim_log("%s(%llu) dev %d -> %d %p", api, (unsigned long long)bytes, dev, ok ? 0 : 2,
            (void *)a);
    if (!ok)
        free(a);
    return ok ? a : NULL;
}

static gs_curesult array_destroy(const char *api, struct reg *set, void *handle)
{
    long i;

    if (!is_initialized())
        return GS_CUDA_ERROR_NOT_INITIALIZED;
    pthread_mutex_lock(&lock);
    i = reg_index(set, handle);
    if (i >= 0) {
        const struct sim_array *a = handle;

        devices[a->device].used -= a->size;
        reg_del(set, (size_t)i);
    }
    pthread_mutex_unlock(&lock);
    sim_log("%s(%p) -> %d", api, handle, i >= 0 ? 0 : SIM_CUDA_ERROR_INVALID_HANDLE);
    if (i < 0)
        return SIM_CUDA_ERROR_INVALID_HANDLE;
    free(handle);
    return GS_CUDA_SUCCESS;
}

gs_curesult sim_cuArrayCreate_v2(gs_cuarray *pHandle, const gs_cuarraydesc *pAllocateArray)
{
    int dev = current_device();
    const gs_cuarraydesc *a = pAllocateArray;
    uint64_t bytes;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    if (!pHandle || !a)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = array_bytes(a->Width, a->Height, 0, a->Format, a->NumChannels, &bytes);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    *pHandle = (gs_cuarray)(void *)array_new("cuArrayCreate_v2", &arrays, dev, bytes);
    return *pHandle ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_OUT_OF_MEMORY;
}
SIM_EXPORT(cuArrayCreate_v2)

gs_curesult sim_cuArray3DCreate_v2(gs_cuarray *pHandle,
                                   const gs_cuarray3ddesc *pAllocateArray)
{
    int dev = current_device();
    const gs_cuarray3ddesc *a = pAllocateArray;
    uint64_t bytes;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    if (!pHandle || !a)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = array_bytes(a->Width, a->Height, a->Depth, a->Format, a->NumChannels, &bytes);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    *pHandle = (gs_cuarray)(void *)array_new("cuArray3DCreate_v2", &arrays, dev, bytes);
    return *pHandle ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_OUT_OF_MEMORY;
}
SIM_EXPORT(cuArray3DCreate_v2)

gs_curesult sim_cuArrayDestroy(gs_cuarray hArray)
{
    return array_destroy("cuArrayDestroy", &arrays, hArray);
}
SIM_EXPORT(cuArrayDestroy)

gs_curesult sim_cuMipmappedArrayCreate(gs_cumipmappedarray *pHandle,
                                       const gs_cuarray3ddesc *pMipmappedArrayDesc,
                                       unsigned int numMipmapLevels)
{
    int dev = current_device();
    uint64_t bytes;
    gs_curesult rc;

    if (dev < 0)
        return -dev;
    if (!pHandle || !pMipmappedArrayDesc)
        return GS_CUDA_ERROR_INVALID_VALUE;
    rc = mipmap_bytes(pMipmappedArrayDesc, numMipmapLevels, &bytes);
    if (rc != GS_CUDA_SUCCESS)
        return rc;
    *pHandle = (gs_cumipmappedarray)(void *)array_new("cuMipmappedArrayCreate", &mip_arrays,
                                                      dev, bytes);
    return *pHandle ? GS_CUDA_SUCCESS : GS_CUDA_ERROR_OUT_OF_MEMORY;
}
SIM_EXPORT(cuMipmappedArrayCreate)

gs_curesult sim_cuMipmappedArrayDestroy(gs_cumipmappedarray hMipmappedArray)
{
    return array_destroy("cuMipmappedArrayDestroy", &mip_arrays, hMipmappedArray);
}
SIM_EXPORT(cuMipmappedArrayDestroy)
