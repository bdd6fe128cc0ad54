/*
 * test_varint.c - the LEB128 varint and zigzag helpers of
 * include/gpushim_trace.h: round trips at the 7-bit boundaries, exact
 * encoded lengths, zigzag of the signed extremes, and what gs_get_varint
 * must reject (empty or truncated input, more than 10 bytes, a 10th byte
 * that would overflow 64 bits); and that the columns' fast read,
 * gs_varint_in_room, reads every varint as gs_get_varint does.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/cursor.h"

struct vcase {
    uint64_t v;
    size_t len;
};

static const struct vcase cases[] = {
    {0, 1},
    {127, 1},
    {128, 2},
    {(1ull << 14) - 1, 2},
    {1ull << 14, 3},
    {(1ull << 21) - 1, 3},
    {1ull << 21, 4},
    {1ull << 32, 5},
    {(1ull << 56) - 1, 8},
    {1ull << 56, 9},
    {(1ull << 63) - 1, 9},
    {1ull << 63, 10},
    {UINT64_MAX, 10},
};

Test(varint, round_trip_at_boundaries_with_exact_lengths)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[16];
        memset(buf, 0xee, sizeof buf);
        size_t n = gs_put_varint(buf, cases[i].v);
        cr_assert_eq(n, cases[i].len, "value %llu: encoded in %zu bytes, expected %zu",
                     (unsigned long long)cases[i].v, n, cases[i].len);
        cr_assert_eq(buf[n], 0xee, "value %llu: wrote past its length",
                     (unsigned long long)cases[i].v);
        const uint8_t *p = buf;
        uint64_t out = 12345;
        cr_assert_eq(gs_get_varint(&p, buf + n, &out), 0, "value %llu: decode failed",
                     (unsigned long long)cases[i].v);
        cr_assert_eq(out, cases[i].v, "decoded %llu, expected %llu", (unsigned long long)out,
                     (unsigned long long)cases[i].v);
        cr_assert_eq(p, buf + n, "value %llu: cursor not advanced by exactly %zu",
                     (unsigned long long)cases[i].v, n);
    }
}

Test(varint, exact_bytes_of_known_encodings)
{
    uint8_t buf[16];
    cr_assert_eq(gs_put_varint(buf, 300), 2);
    cr_assert_eq(buf[0], 0xac, "300: first byte %#x", buf[0]);
    cr_assert_eq(buf[1], 0x02, "300: second byte %#x", buf[1]);
    cr_assert_eq(gs_put_varint(buf, UINT64_MAX), 10);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(buf[i], 0xff, "UINT64_MAX byte %d is %#x", i, buf[i]);
    cr_assert_eq(buf[9], 0x01, "UINT64_MAX last byte is %#x", buf[9]);
}

Test(varint, consecutive_values_decode_in_sequence)
{
    uint8_t buf[64];
    size_t n = 0;
    n += gs_put_varint(buf + n, 1);
    n += gs_put_varint(buf + n, UINT64_MAX);
    n += gs_put_varint(buf + n, 128);
    const uint8_t *p = buf, *end = buf + n;
    uint64_t a, b, c;
    cr_assert_eq(gs_get_varint(&p, end, &a), 0);
    cr_assert_eq(gs_get_varint(&p, end, &b), 0);
    cr_assert_eq(gs_get_varint(&p, end, &c), 0);
    cr_assert_eq(a, 1);
    cr_assert_eq(b, UINT64_MAX);
    cr_assert_eq(c, 128);
    cr_assert_eq(p, end, "all input consumed");
    cr_assert_eq(gs_get_varint(&p, end, &a), -1, "nothing left to read");
}

Test(varint, zigzag_extremes)
{
    cr_assert_eq(gs_zigzag(0), 0);
    cr_assert_eq(gs_zigzag(-1), 1);
    cr_assert_eq(gs_zigzag(1), 2);
    cr_assert_eq(gs_zigzag(INT64_MAX), UINT64_MAX - 1);
    cr_assert_eq(gs_zigzag(INT64_MIN), UINT64_MAX);
    const int64_t vals[] = {INT64_MIN, INT64_MIN + 1, -2, -1, 0, 1, 2, INT64_MAX - 1, INT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        cr_assert_eq(gs_unzigzag(gs_zigzag(vals[i])), vals[i], "zigzag round trip of %lld",
                     (long long)vals[i]);
}

Test(varint, zigzag_through_varint_round_trip)
{
    const int64_t vals[] = {INT64_MIN, -1, 0, 1, INT64_MAX};
    const size_t lens[] = {10, 1, 1, 1, 10};
    for (size_t i = 0; i < 5; i++) {
        uint8_t buf[16];
        size_t n = gs_put_varint(buf, gs_zigzag(vals[i]));
        cr_assert_eq(n, lens[i], "zz %lld: %zu bytes", (long long)vals[i], n);
        const uint8_t *p = buf;
        uint64_t out = 0;
        cr_assert_eq(gs_get_varint(&p, buf + n, &out), 0);
        cr_assert_eq(gs_unzigzag(out), vals[i]);
    }
}

Test(varint, rejects_empty_input)
{
    uint8_t buf[1] = {0};
    const uint8_t *p = buf;
    uint64_t out = 7;
    cr_assert_eq(gs_get_varint(&p, buf, &out), -1, "empty input must fail");
    cr_assert_eq(out, 7, "output untouched on failure");
}

Test(varint, rejects_truncated_input)
{
    uint8_t buf[16];
    size_t n = gs_put_varint(buf, 1ull << 40);
    for (size_t cut = 1; cut < n; cut++) {
        const uint8_t *p = buf;
        uint64_t out = 0;
        cr_assert_eq(gs_get_varint(&p, buf + cut, &out), -1, "cut to %zu of %zu bytes must fail",
                     cut, n);
        cr_assert_leq(p, buf + cut, "never reads past end");
    }
    uint8_t cont[] = {0x80};
    const uint8_t *p = cont;
    uint64_t out = 0;
    cr_assert_eq(gs_get_varint(&p, cont + 1, &out), -1, "a lone continuation byte must fail");
}

Test(varint, rejects_eleven_byte_varint)
{
    /* 10 bytes with the continuation bit, then a terminator. */
    uint8_t buf[11];
    memset(buf, 0x80, 10);
    buf[10] = 0x00;
    const uint8_t *p = buf;
    uint64_t out = 0;
    cr_assert_eq(gs_get_varint(&p, buf + sizeof buf, &out), -1, "11-byte varint must fail");
    /* also with all-ones payload bits */
    memset(buf, 0xff, 10);
    buf[10] = 0x01;
    p = buf;
    cr_assert_eq(gs_get_varint(&p, buf + sizeof buf, &out), -1, "11-byte varint must fail");
}

Test(varint, rejects_tenth_byte_overflow)
{
    uint8_t buf[10];
    memset(buf, 0xff, 9);
    for (unsigned last = 2; last < 0x80; last++) {
        buf[9] = (uint8_t)last;
        const uint8_t *p = buf;
        uint64_t out = 0;
        cr_assert_eq(gs_get_varint(&p, buf + 10, &out), -1, "10th byte %#x overflows", last);
    }
    buf[9] = 0x01;
    const uint8_t *p = buf;
    uint64_t out = 0;
    cr_assert_eq(gs_get_varint(&p, buf + 10, &out), 0, "10th byte 1 is UINT64_MAX");
    cr_assert_eq(out, UINT64_MAX);
    /* a 10th byte of 0 is accepted (non-minimal but fits) */
    memset(buf, 0x80, 9);
    buf[9] = 0x00;
    p = buf;
    cr_assert_eq(gs_get_varint(&p, buf + 10, &out), 0);
    cr_assert_eq(out, 0);
}

/* ---- gs_varint_in_room (analyzer/util/cursor.h): the columns' fast read ---- */

/* What gs_get_varint says of the 10 bytes at p: the length, or 0. */
static unsigned reference(const uint8_t *p, uint64_t *v)
{
    const uint8_t *q = p;
    return gs_get_varint(&q, p + GS_VARINT_ROOM, v) == 0 ? (unsigned)(q - p) : 0;
}

static void same_as_reference(const uint8_t *p, const char *what, unsigned long i)
{
    uint64_t want = 0xdead, got = 0xbeef;
    unsigned n = reference(p, &want), m = gs_varint_in_room(p, &got);
    cr_assert_eq(m, n, "%s %lu: length %u, gs_get_varint's %u", what, i, m, n);
    if (n)
        cr_assert_eq(got, want, "%s %lu: value %llx, gs_get_varint's %llx", what, i,
                     (unsigned long long)got, (unsigned long long)want);
}

Test(varint, in_room_reads_as_gs_get_varint_does)
{
    uint8_t buf[16];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(buf, 0xff, sizeof buf); /* whatever follows it must not count */
        gs_put_varint(buf, cases[i].v);
        uint64_t v = 0;
        cr_assert_eq(gs_varint_in_room(buf, &v), cases[i].len, "case %zu's length", i);
        cr_assert_eq(v, cases[i].v, "case %zu's value", i);
    }
    /* every length, and past 64 bits: random bytes whose high bits end the
     * varint at each place (or at none), each byte's low 7 bits random */
    uint64_t s = 1;
    for (unsigned long i = 0; i < 400000; i++) {
        unsigned end = (unsigned)(i % 12); /* 10, 11: no end within the room */
        for (unsigned k = 0; k < sizeof buf; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            uint8_t low = (uint8_t)(s >> 57);
            buf[k] = k < end ? (uint8_t)(0x80 | low) : k == end ? low : (uint8_t)(s >> 33);
        }
        if (i % 7 == 0 && end == 9)
            buf[9] &= 1; /* a tenth byte that fits in 64 bits */
        same_as_reference(buf, "random", i);
    }
    /* overlong encodings: trailing zero groups */
    const uint8_t overlong[][10] = {{0x80, 0x00}, {0xff, 0x80, 0x80, 0x00},
                                    {0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
                                    {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
                                    {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}};
    for (unsigned long i = 0; i < sizeof overlong / sizeof overlong[0]; i++)
        same_as_reference(overlong[i], "overlong", i);
}
