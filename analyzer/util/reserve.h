/*
 * reserve.h - growing an array by one element (reserve.c).
 *
 * Included by: any analyzer or model file.
 */
#ifndef GPUSHIM_UTIL_RESERVE_H
#define GPUSHIM_UTIL_RESERVE_H

#include <stddef.h>

/* Grows an array of n elements of size sz to hold one more: 0, or -1. */
int gs_reserve(void **arr, size_t *cap, size_t n, size_t sz);

#endif
