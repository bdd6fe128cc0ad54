/*
 * test_columns.c - format 3's columns (analyzer/trace/columns.c): a chunk
 * whose allocations and frees the encoder put in columns decodes to the
 * events that the same bodies encoded as records of their own decode to,
 * field for field, but for times in microseconds (never going backwards);
 * over many chunks, with addresses reused, frees of an earlier chunk's
 * allocations, other records in between, and columns that fill up. And a
 * damaged chunk: column events without columns, a columns record short of
 * columns, cut short or given twice, a free naming an allocation the chunk
 * lacks; each counted damaged, none read out of bounds. A reader of
 * compact events is handed each as the columns give it, but one whose kind
 * or space is past a byte, which comes whole.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analyzer/trace/encode.h"
#include "gpushim_trace.h"
#include "gpushim_ring.h"
#include "analyzer/trace/trace.h"

/* ---- a chunk, built as the shim's writer builds it ---- */

struct chunk {
    uint8_t *buf;  /* the columns record, then the records */
    size_t len;
    uint8_t *recs; /* the records, while the chunk is made */
    size_t rlen;
};

#define CHUNK_CAP (4u << 20)

static void chunk_start(struct chunk *c)
{
    if (!c->buf) {
        c->buf = malloc(CHUNK_CAP);
        c->recs = malloc(CHUNK_CAP);
        cr_assert(c->buf && c->recs);
    }
    c->len = c->rlen = 0;
}

static void chunk_put(struct chunk *c, struct gs_encoder *e, const void *body, uint32_t len)
{
    size_t n = gs_encode(e, body, len, c->recs + c->rlen);
    cr_assert_gt(n, 0, "gs_encode refused a body of type %u", *(const uint8_t *)body);
    c->rlen += n;
    cr_assert_lt(c->rlen + gs_encoder_held(e, NULL), CHUNK_CAP - GS_MAX_RECORD);
}

/* The columns record (when the encoder holds any event), then the records. */
static void chunk_finish(struct chunk *c, const struct gs_encoder *e)
{
    c->len = gs_encode_columns(e, c->buf);
    memcpy(c->buf + c->len, c->recs, c->rlen);
    c->len += c->rlen;
}

static void chunk_free(struct chunk *c)
{
    free(c->buf);
    free(c->recs);
}

/* ---- what the decoder gave ---- */

struct seen {
    struct gs_revent *ev;
    size_t n, cap;
    uint64_t chunk_last; /* the last time in the chunk being decoded */
    int backwards;       /* a time before the one before it in its chunk */
};

static void on_event(void *ctx, const struct gs_revent *e)
{
    struct seen *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->ev = realloc(s->ev, s->cap * sizeof *s->ev);
        cr_assert_not_null(s->ev);
    }
    if (e->time_ns < s->chunk_last)
        s->backwards = 1;
    s->chunk_last = e->time_ns;
    s->ev[s->n] = *e;
    s->ev[s->n].label = NULL; /* points into the chunk */
    s->n++;
}

static const struct gs_reader_ops ops = {.event = on_event};

static void decode(struct seen *s, const struct chunk *c, struct gs_reader_stats *st)
{
    s->chunk_last = 0;
    gs_decode_chunk(c->buf, c->len, &ops, s, st);
}

/* ---- a schedule of events ---- */

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A workload's events: allocations into slots whose addresses come from a
 * small pool (so they are reused, within a chunk and across chunks), frees
 * of what a slot holds (sometimes of an address never allocated, or freed
 * twice), every field varied; now and then a mark (times in nanoseconds). */
#define SLOTS 300
/* An event's body, or a mark's with its label (gs_mark_body ends in a
 * flexible array: its room is the words after the struct). */
struct body {
    union {
        struct gs_ev ev;
        uint64_t words[(sizeof(struct gs_mark_body) + 8) / 8 + 1];
    };
};

static struct gs_mark_body *mark_of(struct body *b) { return (struct gs_mark_body *)b->words; }

static void nth_body(struct body *b, uint64_t *time, uint64_t *slots)
{
    memset(b, 0, sizeof *b);
    uint64_t r = next_random();
    *time += r % 5000; /* often within one microsecond of the event before */
    if (r % 97 == 0) {
        struct gs_mark_body *m = mark_of(b);
        m->ev.type = GS_REC_MARK;
        m->ev.time_ns = *time;
        m->ev.tid = (uint32_t)(r >> 40) % 4 + 100;
        m->ev.stack_id = 3;
        m->label_len = 4;
        memcpy(m->label, "step", 4);
        return;
    }
    struct gs_ev *ev = &b->ev;
    unsigned slot = (unsigned)(r >> 8) % SLOTS;
    ev->time_ns = *time;
    ev->tid = (uint32_t)(r >> 16) % 3 + 100;
    ev->api = (uint8_t)((r >> 20) % 4 + 1);
    ev->device = (int32_t)((r >> 24) % 5) - 1;
    ev->stream = (r >> 28) % 3 ? 0 : 0x7f0012340000ull + (r >> 30) % 4 * 0x100;
    ev->space = (uint8_t)((r >> 34) % 16 == 0);
    if (slots[slot] && (r >> 36) % 8) {
        ev->type = GS_REC_FREE;
        ev->addr = slots[slot];
        ev->size = (r >> 40) % 10 == 0 ? (r >> 44) % 4096 : 0;
        if ((r >> 50) % 4)
            slots[slot] = 0; /* else it is freed again later */
    } else {
        ev->type = GS_REC_ALLOC;
        ev->addr = 0x7f1000000000ull + ((r >> 40) % 512) * 0x200000; /* a pool of 512 */
        if ((r >> 60) == 0)
            ev->addr = UINT64_MAX - (r >> 40) % 3; /* far from the others */
        ev->size = (r >> 12) % (1u << 22) + 1;
        ev->stack_id = (uint32_t)(r >> 44) % 50 + 1;
        ev->kind = (uint8_t)((r >> 52) % 4);
        ev->parent = (r >> 55) % 7 == 0 ? (r >> 20) : 0;
        ev->free_bytes = (r >> 58) % 9 == 0;
        slots[slot] = ev->addr;
    }
}

static uint32_t body_len(struct body *b)
{
    return b->ev.type == GS_REC_MARK
               ? (uint32_t)(sizeof(struct gs_mark_body) + mark_of(b)->label_len)
               : (uint32_t)sizeof b->ev;
}

/* What a column event decodes to: the record's, but for its time. */
static void same_event(const struct gs_revent *col, const struct gs_revent *rec, size_t i)
{
    cr_assert_eq(col->type, rec->type, "event %zu: type %u vs %u", i, col->type, rec->type);
    if (col->type == GS_REC_MARK)
        cr_assert_eq(col->time_ns, rec->time_ns, "event %zu: a mark's time is exact", i);
    else
        cr_assert(col->time_ns <= rec->time_ns && rec->time_ns - col->time_ns < 1000,
                  "event %zu: time %llu for %llu", i, (unsigned long long)col->time_ns,
                  (unsigned long long)rec->time_ns);
    cr_assert_eq(col->tid, rec->tid, "event %zu: tid", i);
    cr_assert_eq(col->api, rec->api, "event %zu: api", i);
    cr_assert_eq(col->device, rec->device, "event %zu: device", i);
    cr_assert_eq(col->addr, rec->addr, "event %zu: addr %#llx vs %#llx", i,
                 (unsigned long long)col->addr, (unsigned long long)rec->addr);
    cr_assert_eq(col->size, rec->size, "event %zu: size", i);
    cr_assert_eq(col->stream, rec->stream, "event %zu: stream", i);
    cr_assert_eq(col->stack_id, rec->stack_id, "event %zu: stack", i);
    cr_assert_eq(col->kind, rec->kind, "event %zu: kind", i);
    cr_assert_eq(col->space, rec->space, "event %zu: space", i);
    cr_assert_eq(col->parent, rec->parent, "event %zu: parent", i);
    cr_assert_eq(col->all_free, rec->all_free, "event %zu: all_free", i);
    cr_assert_eq(col->label_len, rec->label_len, "event %zu: label", i);
}

/* The schedule's events, n of them, in chunks of at most per_chunk bodies:
 * with columns into cols, as records into recs; returns the bytes each took
 * once compressed (zlib 1, as the shim does). */
static void encode_both(size_t n, size_t per_chunk, struct seen *cols, struct seen *recs,
                        size_t *zcols, size_t *zrecs, struct gs_reader_stats *st)
{
    uint64_t slots[SLOTS] = {0}, time = 0;
    struct gs_encoder ec, er;
    gs_encoder_reset(&ec);
    gs_encoder_reset(&er);
    cr_assert_eq(gs_encoder_use_columns(&ec), 0);
    struct chunk a = {0}, b = {0};
    uint8_t *z = malloc(compressBound(CHUNK_CAP));
    cr_assert_not_null(z);
    *zcols = *zrecs = 0;
    for (size_t done = 0; done < n;) {
        chunk_start(&a);
        chunk_start(&b);
        gs_encoder_new_chunk(&ec);
        gs_encoder_reset(&er);
        for (size_t i = 0; i < per_chunk && done < n; i++, done++) {
            struct body body;
            nth_body(&body, &time, slots);
            chunk_put(&a, &ec, &body, body_len(&body));
            chunk_put(&b, &er, &body, body_len(&body));
        }
        chunk_finish(&a, &ec);
        chunk_finish(&b, &er);
        cr_assert_eq(b.len, b.rlen, "no columns without gs_encoder_use_columns");
        decode(cols, &a, st);
        decode(recs, &b, st);
        uLongf zl = compressBound(CHUNK_CAP);
        cr_assert_eq(compress2(z, &zl, a.buf, a.len, 1), Z_OK);
        *zcols += zl;
        zl = compressBound(CHUNK_CAP);
        cr_assert_eq(compress2(z, &zl, b.buf, b.len, 1), Z_OK);
        *zrecs += zl;
    }
    gs_encoder_free(&ec);
    cr_assert_null(ec.cols);
    chunk_free(&a);
    chunk_free(&b);
    free(z);
}

Test(columns, decode_as_records_do_over_many_chunks)
{
    struct seen cols = {0}, recs = {0};
    struct gs_reader_stats st = {0};
    size_t zc, zr;
    encode_both(300000, GS_COLUMN_EVENTS, &cols, &recs, &zc, &zr, &st);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(cols.n, 300000);
    cr_assert_eq(recs.n, 300000);
    for (size_t i = 0; i < cols.n; i++)
        same_event(&cols.ev[i], &recs.ev[i], i);
    cr_assert_not(cols.backwards, "a time went backwards within a chunk");
    /* the point of them: this schedule, whose every field is random bits,
     * compresses to 12.4 bytes an event as records and to 7.5 in columns */
    cr_assert_lt(zc * 10, zr * 7, "columns %zu bytes, records %zu", zc, zr);
    free(cols.ev);
    free(recs.ev);
}

Test(columns, full_columns_leave_the_rest_as_records)
{
    /* More bodies than a chunk's columns take: the rest are records of
     * their own, and everything still decodes in order. */
    struct seen cols = {0}, recs = {0};
    struct gs_reader_stats st = {0};
    size_t zc, zr;
    encode_both(GS_COLUMN_EVENTS + 5000, GS_COLUMN_EVENTS + 5000, &cols, &recs, &zc, &zr, &st);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(cols.n, recs.n);
    for (size_t i = 0; i < cols.n; i++)
        same_event(&cols.ev[i], &recs.ev[i], i);
    free(cols.ev);
    free(recs.ev);
}

/* ---- times ---- */

static struct gs_ev alloc_at(uint64_t t, uint64_t addr)
{
    return (struct gs_ev){.type = GS_REC_ALLOC, .time_ns = t, .addr = addr, .size = 512,
                          .stack_id = 1, .tid = 7, .device = 0};
}

Test(columns, times_are_microseconds_and_never_go_back)
{
    struct gs_encoder e;
    gs_encoder_reset(&e);
    cr_assert_eq(gs_encoder_use_columns(&e), 0);
    struct chunk c = {0};
    chunk_start(&c);
    struct gs_ev a1 = alloc_at(2999, 0x1000);
    chunk_put(&c, &e, &a1, sizeof a1);
    struct body mark = {0};
    struct gs_mark_body *m = mark_of(&mark);
    m->ev = (struct gs_ev){.type = GS_REC_MARK, .time_ns = 5500, .tid = 7};
    m->label_len = 1;
    m->label[0] = 'x';
    chunk_put(&c, &e, m, body_len(&mark));
    struct gs_ev a2 = alloc_at(5700, 0x2000), a3 = alloc_at(7001, 0x3000);
    struct gs_ev f1 = {.type = GS_REC_FREE, .time_ns = 7002, .addr = 0x1000, .tid = 7};
    chunk_put(&c, &e, &a2, sizeof a2);
    chunk_put(&c, &e, &a3, sizeof a3);
    chunk_put(&c, &e, &f1, sizeof f1);
    chunk_finish(&c, &e);
    struct seen s = {0};
    struct gs_reader_stats st = {0};
    decode(&s, &c, &st);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(s.n, 5);
    uint64_t want[] = {2000, 5500, 5500, 7000, 7000};
    for (int i = 0; i < 5; i++)
        cr_assert_eq(s.ev[i].time_ns, want[i], "event %d: %llu, not %llu", i,
                     (unsigned long long)s.ev[i].time_ns, (unsigned long long)want[i]);
    cr_assert_eq(s.ev[4].addr, 0x1000, "the free found its allocation by distance");
    free(s.ev);
    chunk_free(&c);
    gs_encoder_free(&e);
}

/* ---- damage ---- */

static uint64_t damaged(const uint8_t *raw, size_t len, struct seen *s)
{
    struct gs_reader_stats st = {0};
    s->n = 0;
    s->chunk_last = 0;
    gs_decode_chunk(raw, len, &ops, s, &st);
    return st.damaged_records;
}

/* A chunk of three allocations and a free of the second, in columns. */
static void small_chunk(struct chunk *c)
{
    struct gs_encoder e;
    gs_encoder_reset(&e);
    cr_assert_eq(gs_encoder_use_columns(&e), 0);
    chunk_start(c);
    for (int i = 0; i < 3; i++) {
        struct gs_ev a = alloc_at(1000 * (uint64_t)(i + 1), 0x10000 * (uint64_t)(i + 1));
        chunk_put(c, &e, &a, sizeof a);
    }
    struct gs_ev f = {.type = GS_REC_FREE, .time_ns = 9000, .addr = 0x20000, .tid = 7};
    chunk_put(c, &e, &f, sizeof f);
    chunk_finish(c, &e);
    gs_encoder_free(&e);
}

Test(columns, column_events_without_columns_are_damaged)
{
    struct chunk c = {0};
    small_chunk(&c);
    struct seen s = {0};
    cr_assert_eq(damaged(c.buf, c.len, &s), 0);
    cr_assert_eq(s.n, 4);
    cr_assert_eq(s.ev[3].addr, 0x20000);
    /* the records alone: four damaged, nothing read */
    cr_assert_eq(damaged(c.recs, c.rlen, &s), 4);
    cr_assert_eq(s.n, 0);
    /* the columns twice: the second is damaged, the events read from the first */
    size_t cols = c.len - c.rlen;
    uint8_t *twice = malloc(c.len + cols);
    memcpy(twice, c.buf, cols);
    memcpy(twice + cols, c.buf, c.len);
    cr_assert_eq(damaged(twice, c.len + cols, &s), 1);
    cr_assert_eq(s.n, 4);
    free(twice);
    free(s.ev);
    chunk_free(&c);
}

Test(columns, a_columns_record_short_of_columns_or_cut_is_damaged)
{
    struct chunk c = {0};
    small_chunk(&c);
    struct seen s = {0};
    /* payload: K, K lengths, columns; K one short of what a reader needs */
    uint8_t *p = c.buf + 2 + (c.buf[1] >= 0x80); /* past type and length */
    cr_assert_eq(c.buf[0], GS_REC_COLUMNS);
    cr_assert_eq(p[0], GS_COLUMNS);
    p[0] = GS_COLUMNS - 1;
    cr_assert_eq(damaged(c.buf, c.len, &s), 5, "the columns and the four events");
    cr_assert_eq(s.n, 0);
    p[0] = GS_COLUMNS;
    /* the time column's length one more than the bytes there are */
    p[1]++;
    cr_assert_eq(damaged(c.buf, c.len, &s), 5);
    p[1]--;
    /* the time column a byte short (the tid column one longer, the total
     * the same): the last event finds no time */
    p[1]--;
    p[2]++;
    uint64_t d = damaged(c.buf, c.len, &s);
    cr_assert_geq(d, 1, "a column cut short damages the events past its end");
    cr_assert_eq(s.n + d, 4, "each event read or counted, %zu read", s.n);
    free(s.ev);
    chunk_free(&c);
}

/* A chunk written by hand: a columns record of lens[i] bytes of data[i]
 * each, then the events evs (n bytes: each a type and its empty length).
 * Returns its length in chunk (256 bytes). */
#define BY_HAND_BYTES 8
static size_t columns_by_hand(uint8_t chunk[256], const uint8_t lens[GS_COLUMNS],
                              uint8_t data[GS_COLUMNS][BY_HAND_BYTES], const uint8_t *evs,
                              size_t n)
{
    uint8_t *q = chunk;
    *q++ = GS_REC_COLUMNS;
    uint8_t *plen = q++;
    *q++ = GS_COLUMNS;
    for (int i = 0; i < GS_COLUMNS; i++)
        *q++ = lens[i];
    for (int i = 0; i < GS_COLUMNS; i++) {
        memcpy(q, data[i], lens[i]);
        q += lens[i];
    }
    *plen = (uint8_t)(q - plen - 1);
    memcpy(q, evs, n);
    return (size_t)(q - chunk) + n;
}

Test(columns, a_free_naming_an_allocation_the_chunk_lacks_is_damaged)
{
    /* Columns written by hand: one allocation, then a free 2 back, then a
     * free 1 back. The second is damaged alone. */
    uint8_t lens[GS_COLUMNS] = {0}, data[GS_COLUMNS][BY_HAND_BYTES];
    memset(data, 0, sizeof data);
    for (int i = 0; i <= GS_COL_SIZE; i++)
        lens[i] = 3; /* both: three events, a 0 each */
    lens[GS_COL_ADDR] = 1;
    data[GS_COL_ADDR][0] = 0x20; /* zz 16 */
    lens[GS_COL_STACK] = lens[GS_COL_KIND] = lens[GS_COL_PARENT] = 1;
    lens[GS_COL_WHICH] = 2;
    data[GS_COL_WHICH][0] = 2;
    data[GS_COL_WHICH][1] = 1;
    const uint8_t evs[] = {GS_REC_COL_ALLOC, 0, GS_REC_COL_FREE, 0, GS_REC_COL_FREE, 0};
    uint8_t chunk[256];
    size_t len = columns_by_hand(chunk, lens, data, evs, sizeof evs);
    struct seen s = {0};
    cr_assert_eq(damaged(chunk, len, &s), 1);
    cr_assert_eq(s.n, 2);
    cr_assert_eq(s.ev[0].type, GS_REC_ALLOC);
    cr_assert_eq(s.ev[0].addr, 16);
    cr_assert_eq(s.ev[1].type, GS_REC_FREE);
    cr_assert_eq(s.ev[1].addr, 16, "the free 1 back is the allocation's");
    free(s.ev);
}

/* What a compact_event reader is handed: each column event, unless its kind
 * or space is past a byte (a newer writer's, or damage), which comes whole
 * to event instead. */
struct split {
    struct seen whole;
    struct gs_compact_event compact[4];
    size_t ncompact;
};

static void on_whole(void *ctx, const struct gs_revent *e)
{
    on_event(&((struct split *)ctx)->whole, e);
}

static void on_compact(void *ctx, const struct gs_compact_event *c)
{
    struct split *s = ctx;
    cr_assert_lt(s->ncompact, 4);
    s->compact[s->ncompact++] = *c;
}

Test(columns, a_kind_or_space_past_a_byte_comes_whole)
{
    /* Columns written by hand: an allocation of kind 300 (asking for all the
     * free memory) in space 2, one of kind 1 in space 256, one of kind 1 in
     * space 2, then a free of the first. */
    uint8_t lens[GS_COLUMNS] = {0}, data[GS_COLUMNS][BY_HAND_BYTES];
    memset(data, 0, sizeof data);
    for (int i = 0; i <= GS_COL_SIZE; i++)
        lens[i] = 4; /* a 0 for each event */
    lens[GS_COL_SPACE] = 5;
    memcpy(data[GS_COL_SPACE], (const uint8_t[]){2, 0x80, 0x02, 2, 2}, 5);
    lens[GS_COL_ADDR] = 3;
    memcpy(data[GS_COL_ADDR], (const uint8_t[]){0x20, 0x20, 0x20}, 3); /* +16 each */
    lens[GS_COL_STACK] = 3;
    lens[GS_COL_PARENT] = 3;
    lens[GS_COL_KIND] = 4; /* 601 (300, all free), then 2 (1) twice */
    memcpy(data[GS_COL_KIND], (const uint8_t[]){0xd9, 0x04, 2, 2}, 4);
    lens[GS_COL_WHICH] = 1;
    data[GS_COL_WHICH][0] = 3;
    const uint8_t evs[] = {GS_REC_COL_ALLOC, 0, GS_REC_COL_ALLOC, 0,
                           GS_REC_COL_ALLOC, 0, GS_REC_COL_FREE,  0};
    uint8_t chunk[256];
    size_t len = columns_by_hand(chunk, lens, data, evs, sizeof evs);

    /* an event reader sees each whole */
    struct seen s = {0};
    cr_assert_eq(damaged(chunk, len, &s), 0);
    cr_assert_eq(s.n, 4);
    cr_assert_eq(s.ev[0].kind, 300);
    cr_assert_eq(s.ev[0].all_free, 1);
    cr_assert_eq(s.ev[0].space, 2);
    cr_assert_eq(s.ev[1].kind, 1);
    cr_assert_eq(s.ev[1].space, 256);
    cr_assert_eq(s.ev[2].kind, 1);
    cr_assert_eq(s.ev[2].space, 2);
    cr_assert_eq(s.ev[3].type, GS_REC_FREE);
    cr_assert_eq(s.ev[3].addr, 16, "the free 3 back is the first allocation's");
    cr_assert_eq(s.ev[3].kind, 0);

    /* a compact reader: the first two whole, the others compact, the same */
    struct split sp = {0};
    const struct gs_reader_ops split_ops = {.event = on_whole, .compact_event = on_compact};
    struct gs_reader_stats st = {0};
    gs_decode_chunk(chunk, len, &split_ops, &sp, &st);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(sp.whole.n, 2);
    same_event(&sp.whole.ev[0], &s.ev[0], 0);
    same_event(&sp.whole.ev[1], &s.ev[1], 1);
    cr_assert_eq(sp.ncompact, 2);
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(sp.compact[i].tag, 0);
        struct gs_revent e;
        memset(&e, 0, sizeof e);
        gs_compact_event_revent(&sp.compact[i], &e);
        same_event(&e, &s.ev[2 + i], 2 + i);
    }
    free(s.ev);
    free(sp.whole.ev);
}
