/*
 * dl_next.c - dlsym(RTLD_NEXT, ...) from the program: the next definition
 * after the program, which may be a library preloaded before the shim
 * (LD_PRELOAD=libgsnext.so:libgpushim.so). Prints what it found.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    int (*probe)(void) = (int (*)(void))dlsym(RTLD_NEXT, "gs_next_probe");
    printf("probe %s %d\n", probe ? "found" : "missing", probe ? probe() : 0);
    void *getpid_next = dlsym(RTLD_NEXT, "getpid");
    printf("getpid %s\n", getpid_next ? "found" : "missing");
    return 0;
}
