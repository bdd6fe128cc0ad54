/*
 * json.h - JSON written as a stream, with its nesting kept (json.c).
 *
 * Included by: any analyzer file that writes JSON (reports, exports,
 * commands).
 */
#ifndef GPUSHIM_UTIL_JSON_H
#define GPUSHIM_UTIL_JSON_H

#include <stdint.h>
#include <stdio.h>

struct gs_json {
    FILE *out;
    int depth;
    int need_comma[64];
    int indent;
};
void gs_json_begin_object(struct gs_json *j, const char *key);
void gs_json_end_object(struct gs_json *j);
void gs_json_begin_array(struct gs_json *j, const char *key);
void gs_json_end_array(struct gs_json *j);
void gs_json_string(struct gs_json *j, const char *key, const char *value); /* NULL -> null */
void gs_json_uint(struct gs_json *j, const char *key, uint64_t value);
void gs_json_int(struct gs_json *j, const char *key, int64_t value);
void gs_json_bool(struct gs_json *j, const char *key, int value);
void gs_json_null(struct gs_json *j, const char *key);
void gs_json_double(struct gs_json *j, const char *key, double value); /* 6 decimals */

/* For writers of their own JSON: s as a JSON string: quoted, escaped,
 * valid UTF-8. */
void gs_json_quoted(FILE *out, const char *s);

#endif
