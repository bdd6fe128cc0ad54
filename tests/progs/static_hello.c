/*
 * static_hello.c - a statically linked program: the dynamic loader never
 * runs, so LD_PRELOAD has no effect; it must behave the same and leave no
 * trace.
 */
#include <stdio.h>

int main(void)
{
    puts("static hello");
    return 5;
}
