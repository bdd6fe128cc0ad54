/*
 * protobuf.c - owns the protocol buffer wire format as the analyzer writes
 * it (the pprof export): a growing buffer of fields, each a key (field
 * number << 3 | wire type) then a varint (wire type 0) or a length and
 * that many bytes (wire type 2: strings, bytes, messages, packed repeated
 * scalars).
 *
 * A nested message or a packed run is written in place after its key and
 * its length is put in front when it ends: the bytes written since are
 * moved up by the length's size. Messages are nested at most a few deep
 * and are small, so the moves cost little.
 *
 * Running out of memory makes the buffer failed: later calls do nothing,
 * and the caller checks failed once at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/protobuf.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

static int room(struct gs_pb *b, size_t more)
{
    if (b->failed)
        return -1;
    if (more > SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return -1;
    }
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    uint8_t *p = realloc(b->buf, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->buf = p;
    b->cap = cap;
    return 0;
}

void gs_pb_varint(struct gs_pb *b, uint64_t v)
{
    if (room(b, 10) == 0)
        b->len += gs_put_varint(b->buf + b->len, v);
}

static void key(struct gs_pb *b, unsigned field, unsigned wire)
{
    gs_pb_varint(b, (uint64_t)field << 3 | wire);
}

void gs_pb_uint(struct gs_pb *b, unsigned field, uint64_t v)
{
    if (!v)
        return;
    key(b, field, WIRE_VARINT);
    gs_pb_varint(b, v);
}

void gs_pb_int(struct gs_pb *b, unsigned field, int64_t v)
{
    gs_pb_uint(b, field, (uint64_t)v); /* int64: two's complement, 10 bytes when negative */
}

void gs_pb_bool(struct gs_pb *b, unsigned field, int v)
{
    gs_pb_uint(b, field, v ? 1 : 0);
}

void gs_pb_bytes(struct gs_pb *b, unsigned field, const void *data, size_t len)
{
    key(b, field, WIRE_LEN);
    gs_pb_varint(b, len);
    if (len && room(b, len) == 0) {
        memcpy(b->buf + b->len, data, len);
        b->len += len;
    }
}

void gs_pb_string(struct gs_pb *b, unsigned field, const char *s)
{
    gs_pb_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}

size_t gs_pb_begin(struct gs_pb *b, unsigned field)
{
    key(b, field, WIRE_LEN);
    return b->len;
}

void gs_pb_end(struct gs_pb *b, size_t start)
{
    if (b->failed || start > b->len)
        return;
    uint8_t len[10];
    size_t n = gs_put_varint(len, b->len - start);
    if (room(b, n) != 0)
        return;
    memmove(b->buf + start + n, b->buf + start, b->len - start);
    memcpy(b->buf + start, len, n);
    b->len += n;
}

void gs_pb_free(struct gs_pb *b)
{
    free(b->buf);
    memset(b, 0, sizeof *b);
}
