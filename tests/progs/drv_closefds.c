/*
 * drv_closefds.c - a program that closes every descriptor it does not know
 * (as daemons do) and opens a file of its own, which may get the number the
 * trace had. The shim must never write into the program's file: it stops
 * recording, says so once, and the program's file holds only its own text.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "progs.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 98;
    EXPECT(cuInit(0), GS_CUDA_SUCCESS);
    use_device(0);
    gs_cudeviceptr p;
    EXPECT(cuMemAlloc_v2(&p, 4096), GS_CUDA_SUCCESS); /* the trace is open now */
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT(fd >= 0, 1);
    for (int i = 0; i < 1000; i++) {
        EXPECT(cuMemAlloc_v2(&p, 4096), GS_CUDA_SUCCESS);
        EXPECT(cuMemFree_v2(p), GS_CUDA_SUCCESS);
    }
    usleep(300 * 1000); /* the writer thread runs in between */
    EXPECT(write(fd, "mine\n", 5), 5);
    close(fd);
    puts("closefds done");
    return 0;
}
