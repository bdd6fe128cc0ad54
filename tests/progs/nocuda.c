/*
 * nocuda.c - a program that never touches CUDA. Under the shim it must print
 * the same, exit with the same status (3) and leave no trace file.
 */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    printf("hello from %s with %d arguments\n", argc > 0 && argv[0] ? "nocuda" : "?", argc);
    fflush(stdout);
    fprintf(stderr, "a line on stderr\n");
    return 3;
}
