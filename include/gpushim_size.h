/*
 * gpushim_size.h - a size as people write it, for the shim's settings
 * (GPUSHIM_MAX_BYTES) and the command line (run --max-size, plan --card):
 * digits, then optionally K, M, G or T (powers of 1024, either case),
 * then optionally "B" or "iB". Header-only: the shim and the analyzer
 * share it.
 */
#ifndef GPUSHIM_SIZE_H
#define GPUSHIM_SIZE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 0 and *out, or -1 when s is not such a size or does not fit 64 bits. */
static inline int gs_parse_size(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    int saved = errno;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int overflow = errno != 0;
    errno = saved;
    unsigned shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    case 'T': case 't': shift = 40; break;
    default: break;
    }
    if (shift) {
        end++;
        if (!strcmp(end, "iB") || !strcmp(end, "ib"))
            end += 2;
    }
    if (!strcmp(end, "B") || !strcmp(end, "b"))
        end++;
    if (overflow || *end || v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

#endif
