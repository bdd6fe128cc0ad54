/*
 * real_cudart.cu - NVIDIA's real CUDA runtime on a machine without a driver.
 *
 * Built with `nvcc -cudart shared` when the toolkit is installed. Every call
 * fails (no libcuda.so.1), and must fail the same way, with the same output,
 * under the shim: the shim must not change what the runtime sees.
 */
#include <cstdio>
#include <cuda_runtime_api.h>

static void say(const char *what, cudaError_t e)
{
    std::printf("%s: %d %s\n", what, (int)e, cudaGetErrorName(e));
}

int main()
{
    int n = -1;
    say("cudaGetDeviceCount", cudaGetDeviceCount(&n));
    void *p = nullptr;
    say("cudaMalloc", cudaMalloc(&p, 1 << 20));
    say("cudaMallocManaged", cudaMallocManaged(&p, 1 << 20, cudaMemAttachGlobal));
    size_t free_b = 0, total_b = 0;
    say("cudaMemGetInfo", cudaMemGetInfo(&free_b, &total_b));
    say("cudaFree", cudaFree(nullptr));
    int v = 0;
    say("cudaRuntimeGetVersion", cudaRuntimeGetVersion(&v));
    std::printf("runtime %d, devices %d, pointer %s\n", v, n, p ? "set" : "null");
    return 0;
}
