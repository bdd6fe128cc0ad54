/*
 * columns.c - a chunk's allocations and frees by column (GS_REC_COLUMNS,
 * format 3; the layout is in include/gpushim_trace.h): the writer's side,
 * which gs_encode fills when the encoder has columns, and the reader's,
 * which decode.c takes each GS_REC_COL_ALLOC and GS_REC_COL_FREE from.
 *
 * A field a column after another is what makes the trace small: a
 * thread's id, a stream, a device repeat from event to event and cost
 * nothing once compressed, and a free names the allocation it ends by its
 * distance back, a small number, instead of an address. The writer finds
 * that distance in a table of the chunk's allocations by address, stamped
 * with the chunk's number so that a new chunk empties it without clearing.
 * The table grows with the allocations a chunk holds, from 16 KiB: a
 * process that makes few touches few of its pages (each first touch is a
 * page fault, which costs a short run more than its events do).
 */
#include <stdlib.h>
#include <string.h>

#include "gpushim_ring.h"
#include "analyzer/trace/columns.h"

/* ---- writing ---- */

struct column {
    uint8_t *p;
    size_t len, cap;
};

/* An allocation of the chunk's columns, by address. */
struct live_slot {
    uint64_t addr;
    uint32_t seq; /* its number among the chunk's allocations; GONE once freed */
    uint32_t gen; /* the chunk it is of: a slot of another chunk is empty */
};
#define LIVE_MIN 1024                      /* slots, at first */
#define LIVE_MAX (2 * GS_COLUMN_EVENTS)    /* never more than half full */
#define GONE UINT32_MAX
#define VARINT_MAX 10

struct gs_columns {
    struct column col[GS_COLUMNS];
    uint32_t events, allocs, gen;
    uint64_t last_addr; /* the last event's in the columns, allocation or free */
    struct live_slot *live;
    uint32_t live_cap; /* slots: 0, or a power of two from LIVE_MIN to LIVE_MAX */
};

int gs_encoder_use_columns(struct gs_encoder *e)
{
    if (e->cols)
        return 0;
    struct gs_columns *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->gen = 1;
    e->cols = c;
    return 0;
}

void gs_encoder_free(struct gs_encoder *e)
{
    struct gs_columns *c = e->cols;
    if (!c)
        return;
    for (int i = 0; i < GS_COLUMNS; i++)
        free(c->col[i].p);
    free(c->live);
    free(c);
    e->cols = NULL;
}

void gs_encoder_new_chunk(struct gs_encoder *e)
{
    e->last_time = e->last_addr = 0;
    struct gs_columns *c = e->cols;
    if (!c)
        return;
    for (int i = 0; i < GS_COLUMNS; i++)
        c->col[i].len = 0;
    c->events = c->allocs = 0;
    c->last_addr = 0;
    if (++c->gen == 0) { /* stamps wrapped: every slot could look current */
        if (c->live)
            memset(c->live, 0, c->live_cap * sizeof *c->live);
        c->gen = 1;
    }
}

size_t gs_encoder_held(const struct gs_encoder *e, uint32_t *events)
{
    size_t n = 0;
    if (events)
        *events = e->cols ? e->cols->events : 0;
    if (e->cols)
        for (int i = 0; i < GS_COLUMNS; i++)
            n += e->cols->col[i].len;
    return n;
}

/* Room for one more varint in every column; -1 when memory runs out. */
static int room(struct gs_columns *c)
{
    for (int i = 0; i < GS_COLUMNS; i++) {
        struct column *k = &c->col[i];
        if (k->cap - k->len >= VARINT_MAX)
            continue;
        size_t cap = k->cap ? k->cap * 2 : 16384;
        uint8_t *p = realloc(k->p, cap);
        if (!p)
            return -1;
        k->p = p;
        k->cap = cap;
    }
    return 0;
}

static void put(struct gs_columns *c, enum gs_column i, uint64_t v)
{
    struct column *k = &c->col[i];
    k->len += gs_put_varint(k->p + k->len, v);
}

/* The slot of addr in this chunk's table (which has slots), or the empty
 * one it would take. */
static struct live_slot *live_find(struct gs_columns *c, uint64_t addr)
{
    size_t mask = c->live_cap - 1;
    size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 40) & mask;
    for (;; i = (i + 1) & mask) {
        struct live_slot *s = &c->live[i];
        if (s->gen != c->gen || s->addr == addr)
            return s;
    }
}

/* Room in the table for one more allocation: 0, or -1 when memory runs out.
 * Growing keeps this chunk's allocations, not the slots of those freed. */
static int live_room(struct gs_columns *c)
{
    if ((c->allocs + 1) * 2 <= c->live_cap)
        return 0;
    uint32_t cap = c->live_cap ? c->live_cap * 2 : LIVE_MIN;
    struct live_slot *old = c->live, *live = cap <= LIVE_MAX ? calloc(cap, sizeof *live) : NULL;
    if (!live)
        return -1;
    uint32_t old_cap = c->live_cap;
    c->live = live;
    c->live_cap = cap;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i].gen == c->gen && old[i].seq != GONE) {
            struct live_slot *s = live_find(c, old[i].addr);
            *s = old[i];
        }
    free(old);
    return 0;
}

int gs_columns_put(struct gs_encoder *e, const struct gs_ev *ev)
{
    struct gs_columns *c = e->cols;
    if (!c || (ev->type != GS_REC_ALLOC && ev->type != GS_REC_FREE) ||
        c->events >= GS_COLUMN_EVENTS || room(c) != 0 ||
        (ev->type == GS_REC_ALLOC && live_room(c) != 0))
        return -1;
    uint64_t us = e->last_time / 1000, t_us = ev->time_ns / 1000;
    put(c, GS_COL_TIME, gs_zigzag((int64_t)(t_us - us)));
    uint64_t t = t_us * 1000;
    e->last_time = t > e->last_time ? t : e->last_time;
    put(c, GS_COL_TID, ev->tid);
    put(c, GS_COL_API, ev->api);
    put(c, GS_COL_DEVICE, gs_zigzag(ev->device));
    put(c, GS_COL_STREAM, ev->stream);
    put(c, GS_COL_SPACE, ev->space);
    put(c, GS_COL_SIZE, ev->size);
    struct live_slot *s = c->live_cap ? live_find(c, ev->addr) : NULL;
    if (ev->type == GS_REC_ALLOC) {
        put(c, GS_COL_ADDR, gs_zigzag((int64_t)(ev->addr - c->last_addr)));
        put(c, GS_COL_STACK, ev->stack_id);
        put(c, GS_COL_KIND, (uint64_t)ev->kind * 2 + (ev->free_bytes != 0));
        put(c, GS_COL_PARENT, ev->parent);
        *s = (struct live_slot){.addr = ev->addr, .seq = c->allocs++, .gen = c->gen};
    } else if (s && s->gen == c->gen && s->seq != GONE) {
        put(c, GS_COL_WHICH, c->allocs - s->seq);
        s->seq = GONE; /* stays taken: the slots after it are found through it */
    } else {
        put(c, GS_COL_WHICH, 0);
        put(c, GS_COL_FREE_ADDR, gs_zigzag((int64_t)(ev->addr - c->last_addr)));
    }
    c->last_addr = ev->addr;
    c->events++;
    return 0;
}

size_t gs_encode_columns(const struct gs_encoder *e, uint8_t *out)
{
    const struct gs_columns *c = e->cols;
    if (!c || !c->events)
        return 0;
    uint8_t head[VARINT_MAX * (GS_COLUMNS + 1)];
    size_t hlen = gs_put_varint(head, GS_COLUMNS);
    for (int i = 0; i < GS_COLUMNS; i++)
        hlen += gs_put_varint(head + hlen, c->col[i].len);
    uint8_t *p = out;
    *p++ = GS_REC_COLUMNS;
    p += gs_put_varint(p, hlen + gs_encoder_held(e, NULL));
    memcpy(p, head, hlen);
    p += hlen;
    for (int i = 0; i < GS_COLUMNS; i++) {
        if (c->col[i].len)
            memcpy(p, c->col[i].p, c->col[i].len);
        p += c->col[i].len;
    }
    return (size_t)(p - out);
}

/* ---- reading ---- */

int gs_columns_open(struct gs_column_reader *r, const uint8_t *payload, size_t len)
{
    struct gs_cursor c = {payload, payload + len, 0};
    uint64_t k = gs_cursor_u(&c), lens[GS_COLUMNS];
    if (c.bad || k < GS_COLUMNS || k > len)
        return -1;
    uint64_t total = 0;
    for (uint64_t i = 0; i < k; i++) {
        uint64_t n = gs_cursor_u(&c);
        if (i < GS_COLUMNS)
            lens[i] = n;
        total += n;
        if (c.bad || n > len || total > len)
            return -1;
    }
    if (total > (uint64_t)(c.end - c.p))
        return -1;
    memset(r, 0, sizeof *r);
    const uint8_t *p = c.p;
    for (int i = 0; i < GS_COLUMNS; i++) {
        r->col[i] = (struct gs_cursor){p, p + lens[i], 0};
        p += lens[i];
    }
    r->open = 1;
    return 0;
}

void gs_columns_close(struct gs_column_reader *r)
{
    free(r->addrs);
    memset(r, 0, sizeof *r);
}

static int32_t device(uint64_t zz)
{
    int64_t d = gs_unzigzag(zz);
    return d < -1 || d >= GS_MAX_DEVICES ? GS_DEVICE_UNKNOWN : (int32_t)d;
}

/* Keeps an allocation's address for the frees that name it by distance. */
static int keep_addr(struct gs_column_reader *r, uint64_t addr)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 4096;
        uint64_t *a = realloc(r->addrs, cap * sizeof *a);
        if (!a)
            return -1;
        r->addrs = a;
        r->cap = cap;
    }
    r->addrs[r->n++] = addr;
    return 0;
}

/* A column's varint the long way: more than a byte, the column's end, or a
 * column gone bad. A bad read makes the event bad, and leaves the column
 * at its end, so that every later read of it comes here too. */
static __attribute__((noinline)) uint64_t column_slow(struct gs_column_reader *r,
                                                     struct gs_cursor *k)
{
    uint64_t v = gs_cursor_u(k);
    if (k->bad) {
        k->p = k->end;
        r->event_bad = 1;
    }
    return v;
}

/* A column's next value (its cursor is bad only at its end: no check). */
static inline __attribute__((always_inline)) uint64_t column(struct gs_column_reader *r,
                                                            enum gs_column i)
{
    struct gs_cursor *k = &r->col[i];
    const uint8_t *p = k->p;
    if (p < k->end && *p < 0x80) {
        k->p = p + 1;
        return *p;
    }
    uint64_t v;
    unsigned n = k->end - p >= GS_VARINT_ROOM ? gs_varint_in_room(p, &v) : 0;
    if (n) {
        k->p = p + n;
        return v;
    }
    return column_slow(r, k);
}

int gs_columns_event(struct gs_column_reader *r, uint64_t *time, uint8_t type,
                     struct gs_compact_event *e)
{
    if (!r->open)
        return -1; /* a column event in a chunk without columns */
    r->event_bad = 0; /* a column that ran out is bad from then on: only those read now count */
    e->tag = 0;
    e->type = type == GS_REC_COL_ALLOC ? GS_REC_ALLOC : GS_REC_FREE;
    uint64_t t = (*time / 1000 + (uint64_t)gs_unzigzag(column(r, GS_COL_TIME))) * 1000;
    e->time_ns = t > *time ? t : *time;
    e->tid = (uint32_t)column(r, GS_COL_TID);
    e->api = (uint32_t)column(r, GS_COL_API);
    e->device = device(column(r, GS_COL_DEVICE));
    e->stream = column(r, GS_COL_STREAM);
    uint32_t space = (uint32_t)column(r, GS_COL_SPACE), kind = 0;
    e->size = column(r, GS_COL_SIZE);
    if (e->type == GS_REC_ALLOC) {
        e->addr = r->last_addr + (uint64_t)gs_unzigzag(column(r, GS_COL_ADDR));
        e->stack_id = (uint32_t)column(r, GS_COL_STACK);
        uint64_t kind_free = column(r, GS_COL_KIND);
        kind = (uint32_t)(kind_free >> 1);
        e->all_free = (int)(kind_free & 1);
        e->parent = column(r, GS_COL_PARENT);
    } else {
        e->stack_id = 0;
        e->all_free = 0;
        e->parent = 0;
        uint64_t which = column(r, GS_COL_WHICH);
        if (which == 0)
            e->addr = r->last_addr + (uint64_t)gs_unzigzag(column(r, GS_COL_FREE_ADDR));
        else if (which <= r->n)
            e->addr = r->addrs[r->n - which];
        else
            return -1; /* names an allocation the chunk does not have */
    }
    if (r->event_bad)
        return -1;
    if (e->type == GS_REC_ALLOC && keep_addr(r, e->addr) != 0)
        return -1;
    e->kind = (uint8_t)kind;
    e->space = (uint8_t)space;
    r->wide_kind = kind;
    r->wide_space = space;
    r->last_addr = e->addr;
    *time = e->time_ns;
    return kind > UINT8_MAX || space > UINT8_MAX;
}
