/*
 * cuda_leak.cu - a CUDA C program that forgets to free one buffer in three.
 *
 *     nvcc -cudart shared -o cuda_leak examples/cuda_leak.cu
 *     gpushim run -- ./cuda_leak
 *     gpushim report gpushim.<pid>.trace
 *
 * Expected report: 30 allocations of 1 MiB..30 MiB from make_buffer, reached
 * from main; 20 freed; unfreed at the end: the 10 made when i % 3 == 0
 * (1, 4, 7, ..., 28 MiB: 145 MiB), all at make_buffer. The peak is the
 * moment before the last free.
 */
#include <cstdio>
#include <cuda_runtime_api.h>

static void *make_buffer(size_t mib)
{
    void *p = nullptr;
    if (cudaMalloc(&p, mib << 20) != cudaSuccess)
        return nullptr;
    cudaMemset(p, 0, mib << 20);
    return p;
}

int main()
{
    for (int i = 0; i < 30; i++) {
        void *p = make_buffer((size_t)i + 1);
        if (!p) {
            std::printf("cudaMalloc failed at %d MiB\n", i + 1);
            return 1;
        }
        if (i % 3 != 0)
            cudaFree(p); /* one in three is forgotten */
    }
    cudaDeviceSynchronize();
    std::printf("done\n");
    return 0;
}
