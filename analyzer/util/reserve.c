/*
 * reserve.c - gs_reserve, the growable arrays' one way to grow: the model
 * (replay.c and its parts, also in libgpushim.so) and the exports use it.
 */
#include <stdlib.h>

#include "analyzer/util/reserve.h"

/* Grows an array of n elements of size sz to hold one more. */
int gs_reserve(void **arr, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, c * sz);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}
