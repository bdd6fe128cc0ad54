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
/* A change, signed: "+1.50 GiB", "-512 B", "+0 B". */
const char *gs_signed_bytes(int64_t v, char *buf, size_t sz);
/* A figure that may be below 0: "1.50 GiB", "-512 B". */
const char *gs_int_bytes(int64_t v, char *buf, size_t sz);

/* A figure worked out in floating point (a rate, an average, a plan's
 * line) as whole bytes, rounded: 0 for none or less (or NaN), and
 * UINT64_MAX past it (a hostile trace's bytes over a few nanoseconds),
 * where a cast would be undefined. */
static inline uint64_t gs_whole_bytes(long double v)
{
    return !(v > 0) ? 0 : v >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)(v + 0.5L);
}

#endif
