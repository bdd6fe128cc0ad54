/*
 * pickle.c - writes Python pickles (protocol 4) of plain values: dict, list,
 * str, int, float, bool and None, as a stream, so that a large one never
 * needs to be held whole (export.c's torch-snapshot).
 *
 * The opcodes are the few that Python's unpickler and the small unpicklers
 * of other readers (PyTorch's MemoryViz.js) all know: PROTO, EMPTY_DICT,
 * MARK, SETITEMS, EMPTY_LIST, APPENDS, BININT, LONG1, SHORT_BINUNICODE,
 * BINUNICODE, BINFLOAT, NEWTRUE, NEWFALSE, NONE, STOP. No memo (nothing is
 * shared), no FRAME (optional in protocol 4).
 *
 * A container's items are added in batches of GS_PICKLE_BATCH, each between
 * a MARK and an APPENDS (SETITEMS), as Python's own pickler does: a reader
 * that pushes a batch's items as a function's arguments (MemoryViz.js) runs
 * out of stack on a batch of a million.
 *
 * Ints: BININT for the signed 32-bit range, else LONG1 with the fewest
 * bytes of two's complement (at most 8): the writer takes int64_t, and a
 * uint64_t above INT64_MAX is written as INT64_MAX (gs_pickle_uint), since
 * JavaScript readers turn a LONG1 wider than 8 bytes into a BigInt that
 * does not mix with their numbers. Strings are written as valid UTF-8 (a
 * byte that is not is written as U+FFFD), as Python's unpickler requires.
 */
#include <string.h>

#include "analyzer/util/pickle.h"

enum {
    OP_MARK = '(',
    OP_STOP = '.',
    OP_BININT = 'J',
    OP_NONE = 'N',
    OP_BINFLOAT = 'G',
    OP_BINUNICODE = 'X',
    OP_APPENDS = 'e',
    OP_SETITEMS = 'u',
    OP_EMPTY_DICT = '}',
    OP_EMPTY_LIST = ']',
    OP_PROTO = 0x80,
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_LONG1 = 0x8a,
    OP_SHORT_BINUNICODE = 0x8c,
};

/* One writer per stream: the unlocked calls (a pickle is written byte by byte). */
static void put(struct gs_pickle *p, int byte) { putc_unlocked(byte, p->out); }

void gs_pickle_begin(struct gs_pickle *p, FILE *out)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    put(p, OP_PROTO);
    put(p, 4);
}

void gs_pickle_begin_part(struct gs_pickle *p, FILE *out)
{
    memset(p, 0, sizeof *p);
    p->out = out;
}

/* Before a value: a list's item, or a dict's key (a dict's value is not
 * counted). Closes the batch that is full and opens the next. */
static void item(struct gs_pickle *p)
{
    if (!p->depth)
        return;
    struct gs_pickle_level *l = &p->level[p->depth - 1];
    if (l->dict && l->want_value) {
        l->want_value = 0;
        return;
    }
    if (l->items == GS_PICKLE_BATCH) {
        put(p, l->dict ? OP_SETITEMS : OP_APPENDS);
        put(p, OP_MARK);
        l->items = 0;
    }
    l->items++;
    if (l->dict)
        l->want_value = 1;
}

static void open_container(struct gs_pickle *p, int dict)
{
    item(p);
    put(p, dict ? OP_EMPTY_DICT : OP_EMPTY_LIST);
    put(p, OP_MARK);
    if (p->depth == GS_PICKLE_DEPTH) { /* deeper than any caller goes: counted, not kept */
        p->overflow++;
        return;
    }
    p->level[p->depth++] = (struct gs_pickle_level){.dict = dict};
}

void gs_pickle_dict(struct gs_pickle *p) { open_container(p, 1); }
void gs_pickle_list(struct gs_pickle *p) { open_container(p, 0); }

void gs_pickle_end(struct gs_pickle *p)
{
    if (p->overflow) {
        p->overflow--;
        put(p, OP_APPENDS);
        return;
    }
    if (!p->depth)
        return;
    struct gs_pickle_level *l = &p->level[--p->depth];
    put(p, l->dict ? OP_SETITEMS : OP_APPENDS);
}

void gs_pickle_finish(struct gs_pickle *p)
{
    while (p->depth || p->overflow)
        gs_pickle_end(p);
    put(p, OP_STOP);
}

void gs_pickle_raw(struct gs_pickle *p, const void *bytes, size_t n)
{
    item(p);
    if (n)
        fwrite_unlocked(bytes, 1, n, p->out);
}

void gs_pickle_none(struct gs_pickle *p)
{
    item(p);
    put(p, OP_NONE);
}

void gs_pickle_bool(struct gs_pickle *p, int v)
{
    item(p);
    put(p, v ? OP_NEWTRUE : OP_NEWFALSE);
}

void gs_pickle_int(struct gs_pickle *p, int64_t v)
{
    item(p);
    uint64_t u = (uint64_t)v;
    if (v >= INT32_MIN && v <= INT32_MAX) {
        put(p, OP_BININT);
        for (int i = 0; i < 4; i++)
            put(p, (int)(u >> (8 * i) & 0xff));
        return;
    }
    int n = 5; /* the fewest bytes whose top bit is the sign */
    while (n < 8) {
        int64_t lo = -((int64_t)1 << (8 * n - 1)), hi = ((int64_t)1 << (8 * n - 1)) - 1;
        if (v >= lo && v <= hi)
            break;
        n++;
    }
    put(p, OP_LONG1);
    put(p, n);
    for (int i = 0; i < n; i++)
        put(p, (int)(u >> (8 * i) & 0xff));
}

void gs_pickle_uint(struct gs_pickle *p, uint64_t v)
{
    gs_pickle_int(p, v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v);
}

void gs_pickle_float(struct gs_pickle *p, double v)
{
    item(p);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put(p, OP_BINFLOAT);
    for (int i = 7; i >= 0; i--) /* big-endian */
        put(p, (int)(bits >> (8 * i) & 0xff));
}

/* Bytes of the valid UTF-8 sequence at p (of n left): 1 to 4, or 0 when
 * it is not one (overlong, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if ((p[0] & 0xe0) == 0xc0) {
        len = 2, cp = p[0] & 0x1f, min = 0x80;
    } else if ((p[0] & 0xf0) == 0xe0) {
        len = 3, cp = p[0] & 0x0f, min = 0x800;
    } else if ((p[0] & 0xf8) == 0xf0) {
        len = 4, cp = p[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

void gs_pickle_bytes_str(struct gs_pickle *p, const char *s, size_t n)
{
    static const unsigned char fffd[3] = {0xef, 0xbf, 0xbd};
    const unsigned char *b = (const unsigned char *)s;
    size_t out = 0;
    if (n > (size_t)1 << 30) /* at most 3 bytes written for each: BINUNICODE holds it */
        n = (size_t)1 << 30;
    for (size_t i = 0; i < n;) { /* the length as written */
        size_t k = utf8_seq(b + i, n - i);
        out += k ? k : 3;
        i += k ? k : 1;
    }
    item(p);
    if (out < 256) {
        put(p, OP_SHORT_BINUNICODE);
        put(p, (int)out);
    } else {
        put(p, OP_BINUNICODE);
        for (int i = 0; i < 4; i++)
            put(p, (int)(out >> (8 * i) & 0xff));
    }
    if (out == n) { /* all valid */
        fwrite_unlocked(b, 1, n, p->out);
        return;
    }
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(b + i, n - i);
        if (k)
            fwrite_unlocked(b + i, 1, k, p->out);
        else
            fwrite_unlocked(fffd, 1, sizeof fffd, p->out);
        i += k ? k : 1;
    }
}

void gs_pickle_str(struct gs_pickle *p, const char *s)
{
    if (!s)
        gs_pickle_none(p);
    else
        gs_pickle_bytes_str(p, s, strlen(s));
}
