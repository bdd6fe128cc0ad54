/*
 * test_protobuf.c - the protocol buffer writer (analyzer/util/protobuf.c): the
 * exact bytes of varint fields (the format's own example: field 1 = 150 is
 * 08 96 01), zero scalars left out, negative int64 as 10 bytes, strings and
 * empty strings, a nested message whose length needs two bytes, packed
 * repeated varints, and messages nested in messages.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/protobuf.h"

static void expect(const struct gs_pb *b, const uint8_t *want, size_t n)
{
    cr_assert(!b->failed);
    cr_assert_eq(b->len, n, "length %zu, want %zu", b->len, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(b->buf[i], want[i], "byte %zu: %02x, want %02x", i, b->buf[i], want[i]);
}

Test(protobuf, varint_fields)
{
    struct gs_pb b = {0};
    gs_pb_uint(&b, 1, 150);
    gs_pb_uint(&b, 2, 0); /* the default: left out */
    gs_pb_bool(&b, 3, 7);
    gs_pb_bool(&b, 4, 0);
    gs_pb_uint(&b, 16, 1); /* a field number that needs a two-byte key */
    gs_pb_uint(&b, 5, UINT64_MAX);
    static const uint8_t want[] = {0x08, 0x96, 0x01, 0x18, 0x01, 0x80, 0x01, 0x01, 0x28,
                                   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    expect(&b, want, sizeof want);
    gs_pb_free(&b);
    cr_assert_null(b.buf);
}

Test(protobuf, negative_int64_is_ten_bytes)
{
    struct gs_pb b = {0};
    gs_pb_int(&b, 2, -1);
    gs_pb_int(&b, 2, -2);
    static const uint8_t want[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                                   0x10, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    expect(&b, want, sizeof want);
    gs_pb_free(&b);
}

Test(protobuf, strings_empty_ones_too)
{
    struct gs_pb b = {0};
    gs_pb_string(&b, 6, "");
    gs_pb_string(&b, 6, NULL);
    gs_pb_string(&b, 6, "testing");
    gs_pb_bytes(&b, 7, "\0\1", 2);
    static const uint8_t want[] = {0x32, 0x00, 0x32, 0x00, 0x32, 0x07, 't', 'e', 's', 't',
                                   'i',  'n',  'g',  0x3a, 0x02, 0x00, 0x01};
    expect(&b, want, sizeof want);
    gs_pb_free(&b);
}

Test(protobuf, packed_repeated)
{
    struct gs_pb b = {0};
    size_t at = gs_pb_begin(&b, 4);
    gs_pb_varint(&b, 3);
    gs_pb_varint(&b, 270);
    gs_pb_varint(&b, 86942);
    gs_pb_varint(&b, 0); /* packed elements are written even when 0 */
    gs_pb_end(&b, at);
    static const uint8_t want[] = {0x22, 0x07, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05, 0x00};
    expect(&b, want, sizeof want);
    gs_pb_free(&b);
}

Test(protobuf, nested_messages_and_a_two_byte_length)
{
    struct gs_pb b = {0};
    size_t outer = gs_pb_begin(&b, 3);
    gs_pb_uint(&b, 1, 1);
    size_t inner = gs_pb_begin(&b, 2);
    gs_pb_uint(&b, 1, 150);
    gs_pb_end(&b, inner);
    gs_pb_end(&b, outer);
    size_t empty = gs_pb_begin(&b, 5);
    gs_pb_end(&b, empty);
    static const uint8_t want[] = {0x1a, 0x07, 0x08, 0x01, 0x12, 0x03, 0x08, 0x96, 0x01,
                                   0x2a, 0x00};
    expect(&b, want, sizeof want);
    gs_pb_free(&b);

    /* 200 bytes of contents: a length of two bytes (c8 01) moved in front. */
    char text[197];
    memset(text, 'x', sizeof text);
    outer = gs_pb_begin(&b, 1);
    gs_pb_bytes(&b, 2, text, sizeof text);
    gs_pb_end(&b, outer);
    cr_assert(!b.failed);
    cr_assert_eq(b.len, 3 + 200);
    static const uint8_t head[] = {0x0a, 0xc8, 0x01, 0x12, 0xc5, 0x01};
    cr_assert_eq(memcmp(b.buf, head, sizeof head), 0);
    cr_assert_eq(b.buf[b.len - 1], 'x');
    gs_pb_free(&b);
}

Test(protobuf, grows_past_its_first_buffer)
{
    struct gs_pb b = {0};
    size_t at = gs_pb_begin(&b, 1);
    for (uint64_t i = 0; i < 100000; i++)
        gs_pb_varint(&b, i);
    gs_pb_end(&b, at);
    cr_assert(!b.failed);
    /* 128 one-byte values, 16384 - 128 two-byte ones, the rest three bytes */
    size_t body = 128 + 2 * (16384 - 128) + 3 * (100000 - 16384);
    const uint8_t *p = b.buf + 1, *end = b.buf + b.len;
    uint64_t len;
    cr_assert_eq(b.buf[0], 0x0a);
    cr_assert_eq(gs_get_varint(&p, end, &len), 0);
    cr_assert_eq(len, body);
    cr_assert_eq((size_t)(end - p), body);
    for (uint64_t i = 0; i < 100000; i++) {
        uint64_t v;
        cr_assert_eq(gs_get_varint(&p, end, &v), 0);
        cr_assert_eq(v, i);
    }
    gs_pb_free(&b);
}
