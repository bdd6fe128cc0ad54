/*
 * cursor.h - a record's payload as it is read: varints and string fields
 * of untrusted bytes (struct gs_cursor).
 *
 * Included by: the trace codec (analyzer/trace), the model's checkpoint
 * loader and graphs, and any analyzer file that reads a payload.
 */
#ifndef GPUSHIM_UTIL_CURSOR_H
#define GPUSHIM_UTIL_CURSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/text.h"

/* A record's payload as it is read (reader.c, checkpoint.c): a field past
 * its end, or a varint that does not fit, marks it bad and reads as 0. */
struct gs_cursor {
    const uint8_t *p, *end;
    int bad;
};

/* The varint at p, which has room for the longest (GS_VARINT_ROOM bytes from
 * p are there): its length in bytes, or 0 when it does not fit in 64 bits.
 * Its bytes are read without a bound each (sizes, addresses, times).
 *
 * One of up to 8 bytes, nearly all, is read without a branch per byte (the
 * byte that ends it is taken from the high bits of all 8 at once, and its
 * 7-bit groups are put together in three steps), where a loop's exit was
 * mispredicted for most multi-byte values. */
#define GS_VARINT_ROOM 10
static inline unsigned gs_varint_in_room(const uint8_t *p, uint64_t *out)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, p, sizeof w);
    uint64_t stops = ~w & 0x8080808080808080ull; /* each byte that ends a varint */
    if (stops) {
        /* the bytes up to the first stop, each's 7 bits, put together */
        uint64_t x = w & (stops ^ (stops - 1)) & 0x7f7f7f7f7f7f7f7full;
        x = (x & 0x007f007f007f007full) | (x & 0x7f007f007f007f00ull) >> 1;
        x = (x & 0x00003fff00003fffull) | (x & 0x3fff00003fff0000ull) >> 2;
        x = (x & 0x000000000fffffffull) | (x & 0x0fffffff00000000ull) >> 4;
        *out = x;
        return (unsigned)__builtin_ctzll(stops) / 8 + 1;
    }
#endif
    uint64_t v = 0;
    for (unsigned i = 0; i < GS_VARINT_ROOM; i++) {
        uint64_t b = p[i];
        v |= (b & 0x7f) << (7 * i);
        if (b < 0x80) {
            if (i == GS_VARINT_ROOM - 1 && b > 1)
                return 0; /* past 64 bits */
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

static inline uint64_t gs_cursor_u(struct gs_cursor *c)
{
    const uint8_t *p = c->p;
    if (p < c->end && *p < 0x80 && !c->bad) {
        c->p = p + 1;
        return *p; /* a byte alone: most fields of most records */
    }
    uint64_t v = 0;
    if (!c->bad && c->end - p >= GS_VARINT_ROOM) {
        unsigned n = gs_varint_in_room(p, &v);
        c->p = p + n;
        c->bad = n == 0;
        return v;
    }
    if (!c->bad && gs_get_varint(&c->p, c->end, &v) != 0)
        c->bad = 1;
    return c->bad ? 0 : v;
}
/* A string field: its bytes, in the payload (NULL and *len 0 when bad). */
static inline const uint8_t *gs_cursor_bytes(struct gs_cursor *c, size_t *len)
{
    uint64_t n = gs_cursor_u(c);
    if (c->bad || n > (uint64_t)(c->end - c->p)) {
        c->bad = 1;
        *len = 0;
        return NULL;
    }
    const uint8_t *b = c->p;
    c->p += n;
    *len = (size_t)n;
    return b;
}

/* A string field, as gs_text_copy makes it; "" when bad. */
static inline void gs_cursor_text(struct gs_cursor *c, char *out, size_t outsz)
{
    size_t len;
    const uint8_t *b = gs_cursor_bytes(c, &len);
    gs_text_copy(out, outsz, b, b ? len : 0);
}

#endif
