/*
 * protobuf.h - the protocol buffer wire format, written (protobuf.c).
 *
 * Included by: any analyzer file that writes protocol buffers (the pprof
 * export).
 */
#ifndef GPUSHIM_UTIL_PROTOBUF_H
#define GPUSHIM_UTIL_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

struct gs_pb {
    uint8_t *buf;
    size_t len, cap;
    int failed; /* memory ran out: the rest was not written */
};
/* A bare varint (the elements of a packed run). */
void gs_pb_varint(struct gs_pb *b, uint64_t v);
/* Scalar fields (wire type 0), left out when 0 (proto3's default). */
void gs_pb_uint(struct gs_pb *b, unsigned field, uint64_t v);
void gs_pb_int(struct gs_pb *b, unsigned field, int64_t v);
void gs_pb_bool(struct gs_pb *b, unsigned field, int v);
/* Length-delimited fields (wire type 2), always written, empty ones too. */
void gs_pb_bytes(struct gs_pb *b, unsigned field, const void *data, size_t len);
void gs_pb_string(struct gs_pb *b, unsigned field, const char *s); /* NULL: "" */
/* A nested message or a packed repeated field: begin writes its key and
 * returns where its contents start; end puts their length in front. */
size_t gs_pb_begin(struct gs_pb *b, unsigned field);
void gs_pb_end(struct gs_pb *b, size_t start);
void gs_pb_free(struct gs_pb *b);

#endif
