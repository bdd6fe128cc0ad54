/*
 * bytes.c - byte counts as people read them ("1.50 GiB", "512 B"), for the
 * text report, the HTML export, the verdicts and the commands over several
 * traces.
 */
#include <inttypes.h>
#include <stdio.h>

#include "analyzer/util/bytes.h"

const char *gs_human_bytes(uint64_t b, char *buf, size_t sz)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, sz, "%" PRIu64 " B", b);
    else
        snprintf(buf, sz, "%.2f %s", v, units[u]);
    return buf;
}

/* v's size after sign (which it has only when negative: "-" or
 * plus_sign). */
static const char *bytes_with_sign(int64_t v, const char *plus_sign, char *buf, size_t sz)
{
    char b[32];
    snprintf(buf, sz, "%s%s", v < 0 ? "-" : plus_sign,
             gs_human_bytes(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, b, sizeof b));
    return buf;
}

const char *gs_signed_bytes(int64_t v, char *buf, size_t sz)
{
    return bytes_with_sign(v, "+", buf, sz);
}

const char *gs_int_bytes(int64_t v, char *buf, size_t sz)
{
    return bytes_with_sign(v, "", buf, sz);
}
