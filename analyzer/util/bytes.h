/*
 * bytes.h - a byte count for people: "1.50 GiB" (bytes.c).
 *
 * Included by: any analyzer or model file.
 */
#ifndef GPUSHIM_UTIL_BYTES_H
#define GPUSHIM_UTIL_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* "1.50 GiB", "512 B" */
const char *gs_human_bytes(uint64_t b, char *buf, size_t sz);

#endif
