/*
 * pickle.h - Python pickles (protocol 4) of plain values, streamed
 * (pickle.c).
 *
 * Included by: any analyzer file that writes pickles (the torch-snapshot
 * export).
 */
#ifndef GPUSHIM_UTIL_PICKLE_H
#define GPUSHIM_UTIL_PICKLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GS_PICKLE_BATCH 1000 /* a container's items between a MARK and its APPENDS/SETITEMS */
#define GS_PICKLE_DEPTH 16
struct gs_pickle_level {
    int dict;
    int want_value; /* a dict whose key was written, its value not yet */
    unsigned items; /* in the open batch */
};
struct gs_pickle {
    FILE *out;
    int depth;
    unsigned overflow; /* containers opened past GS_PICKLE_DEPTH */
    struct gs_pickle_level level[GS_PICKLE_DEPTH];
};
/* PROTO 4. Then exactly one value (a dict or list holding the rest), then
 * gs_pickle_finish (ends what is open, STOP). In a dict, a key (a value
 * like any other) and its value alternate. */
void gs_pickle_begin(struct gs_pickle *p, FILE *out);
void gs_pickle_finish(struct gs_pickle *p);
/* Without PROTO: a part of a pickle (values to be put in one with
 * gs_pickle_raw); gs_pickle_end each container, never gs_pickle_finish. */
void gs_pickle_begin_part(struct gs_pickle *p, FILE *out);
/* One whole value, its n bytes written by a part; with NULL bytes the
 * caller writes them to p->out next. */
void gs_pickle_raw(struct gs_pickle *p, const void *bytes, size_t n);
void gs_pickle_dict(struct gs_pickle *p); /* opens one; gs_pickle_end ends it */
void gs_pickle_list(struct gs_pickle *p);
void gs_pickle_end(struct gs_pickle *p);
void gs_pickle_none(struct gs_pickle *p);
void gs_pickle_bool(struct gs_pickle *p, int v);
void gs_pickle_int(struct gs_pickle *p, int64_t v);
void gs_pickle_uint(struct gs_pickle *p, uint64_t v); /* above INT64_MAX: INT64_MAX */
void gs_pickle_float(struct gs_pickle *p, double v);
void gs_pickle_str(struct gs_pickle *p, const char *s); /* NULL: None */
void gs_pickle_bytes_str(struct gs_pickle *p, const char *s, size_t n); /* as UTF-8 */

#endif
