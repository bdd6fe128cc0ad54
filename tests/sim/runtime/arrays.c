/*
 * arrays.c - Memory Management, CUDA arrays: cudaMallocArray, cudaMalloc3DArray,
 * cudaFreeArray; a channel descriptor becomes a CUarray_format and a channel count.
 */
#include "tests/sim/runtime/runtime.h"

static int channel_format(int kind, int bits)
{
    switch (kind) {
    case SIM_cudaChannelFormatKindSigned:
        return bits == 8    ? GS_CU_AD_FORMAT_SIGNED_INT8
               : bits == 16 ? GS_CU_AD_FORMAT_SIGNED_INT16
               : bits == 32 ? GS_CU_AD_FORMAT_SIGNED_INT32
                            : 0;
    case SIM_cudaChannelFormatKindUnsigned:
        return bits == 8    ? GS_CU_AD_FORMAT_UNSIGNED_INT8
               : bits == 16 ? GS_CU_AD_FORMAT_UNSIGNED_INT16
               : bits == 32 ? GS_CU_AD_FORMAT_UNSIGNED_INT32
                            : 0;
    case SIM_cudaChannelFormatKindFloat:
        return bits == 16 ? GS_CU_AD_FORMAT_HALF : bits == 32 ? GS_CU_AD_FORMAT_FLOAT : 0;
    default:
        return 0;
    }
}

/* The driver's format and channel count for desc; -1 when it has none. */
static int array_format(const gs_cudachannelformatdesc *desc, int *format,
                        unsigned int *channels)
{
    const int bits[4] = {desc->x, desc->y, desc->z, desc->w};
    int size = 0;

    *channels = 0;
    for (int i = 0; i < 4; i++) {
        if (!bits[i])
            continue;
        if (size && bits[i] != size)
            return -1;
        size = bits[i];
        ++*channels;
    }
    *format = channel_format(desc->f, size);
    return *format && (*channels == 1 || *channels == 2 || *channels == 4) ? 0 : -1;
}

/* The checks both array allocators start with. */
static gs_cudaerror array_start(gs_cudaarray *array, const gs_cudachannelformatdesc *desc,
                                int *format, unsigned int *channels)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess)
        return err;
    if (!array || !desc)
        return GS_cudaErrorInvalidValue;
    return array_format(desc, format, channels) == 0 ? GS_cudaSuccess
                                                     : SIM_cudaErrorInvalidChannelDescriptor;
}

/* The driver's CUarray is the cudaArray_t. d3: 3D descriptor, else d. */
static gs_cudaerror array_create(const gs_cuarraydesc *d, const gs_cuarray3ddesc *d3,
                                 gs_cudaarray *array)
{
    gs_cuarray made = NULL;
    gs_curesult rc = d3 ? drv.array3d_create(&made, d3) : drv.array_create(&made, d);

    if (rc == GS_CUDA_SUCCESS)
        *array = (gs_cudaarray)(void *)made;
    return done(from_driver(rc));
}

/* height 0: a 1D array. */
gs_cudaerror cudaMallocArray(gs_cudaarray *array, const gs_cudachannelformatdesc *desc,
                             size_t width, size_t height, unsigned int flags)
{
    int format = 0;
    unsigned int channels = 0;
    gs_cudaerror err = array_start(array, desc, &format, &channels);
    gs_cuarraydesc d = {width, height, format, channels};
    gs_cuarray3ddesc d3 = {width, height, 0, format, channels, flags};

    if (err != GS_cudaSuccess)
        return done(err);
    return array_create(&d, flags ? &d3 : NULL, array);
}

gs_cudaerror cudaMalloc3DArray(gs_cudaarray *array, const gs_cudachannelformatdesc *desc,
                               gs_cudaextent extent, unsigned int flags)
{
    int format = 0;
    unsigned int channels = 0;
    gs_cudaerror err = array_start(array, desc, &format, &channels);
    gs_cuarray3ddesc d = {extent.width, extent.height, extent.depth, format, channels, flags};

    if (err != GS_cudaSuccess)
        return done(err);
    return array_create(NULL, &d, array);
}

gs_cudaerror cudaFreeArray(gs_cudaarray array)
{
    gs_cudaerror err = bind_context();

    if (err != GS_cudaSuccess || !array)
        return done(err);
    return done(from_driver(drv.array_destroy((gs_cuarray)(void *)array)));
}
