/*
 * test_codec.c - analyzer/trace/encode.c against decode.c's gs_decode_chunk:
 * ring bodies (events of every type with extreme values, stacks of 0, 1 and
 * GS_MAX_FRAMES frames, modules, the END record) encoded into one raw chunk
 * come back field for field, in order. Also: unknown record types are
 * skipped, a record whose payload is short is counted as damaged and the
 * records after it still decode, a record whose length runs past the chunk
 * ends that chunk with one damaged record, and gs_encode refuses malformed
 * bodies. Marks and blocks (the public API's records) round-trip among events,
 * and malformed ones are refused or counted; so do threads' names.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/trace/encode.h"
#include "gpushim_trace.h"
#include "gpushim_ring.h"
#include "analyzer/trace/trace.h"
#include "shim/base/base.h"
#include "shim/file/file.h"

/* ---- what the callbacks saw ---- */

#define CAP_MAX 64

struct cap_stack {
    uint32_t id;
    unsigned n;
    uint64_t pcs[GS_MAX_FRAMES];
};

struct cap_module {
    uint32_t id;
    uint64_t bias, lo, span;
    char path[4096];
    uint8_t build_id[256];
    size_t build_id_len;
};

struct cap {
    char order[CAP_MAX + 1]; /* 'e' event, 's' stack, 'm' module */
    int n;
    struct gs_revent ev[CAP_MAX];
    int nev;
    struct cap_stack st[8];
    int nst;
    struct cap_module mod[4];
    int nmod;
};

static void on_event(void *ctx, const struct gs_revent *e)
{
    struct cap *c = ctx;
    cr_assert_lt(c->nev, CAP_MAX);
    c->ev[c->nev++] = *e;
    c->order[c->n++] = 'e';
}

static void on_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    struct cap *c = ctx;
    cr_assert_lt(c->nst, 8);
    cr_assert_leq(n, GS_MAX_FRAMES);
    struct cap_stack *s = &c->st[c->nst++];
    s->id = id;
    s->n = n;
    memcpy(s->pcs, pcs, n * sizeof *pcs);
    c->order[c->n++] = 's';
}

static void on_module(void *ctx, const struct gs_rmodule *m)
{
    struct cap *c = ctx;
    cr_assert_lt(c->nmod, 4);
    struct cap_module *d = &c->mod[c->nmod++];
    d->id = m->id;
    d->bias = m->bias;
    d->lo = m->lo;
    d->span = m->span;
    cr_assert_lt(strlen(m->path), sizeof d->path);
    strcpy(d->path, m->path);
    cr_assert_leq(m->build_id_len, sizeof d->build_id);
    memcpy(d->build_id, m->build_id, m->build_id_len);
    d->build_id_len = m->build_id_len;
    c->order[c->n++] = 'm';
}

static const struct gs_reader_ops ops = {
    .module = on_module, .stack = on_stack, .event = on_event};

static struct cap *cap_new(void)
{
    struct cap *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    return c;
}

/* ---- building a raw chunk ---- */

struct chunk {
    uint8_t *buf;
    size_t len;
};

static void chunk_init(struct chunk *b)
{
    b->buf = malloc(1 << 20);
    cr_assert_not_null(b->buf);
    b->len = 0;
}

static void put(struct chunk *b, struct gs_encoder *e, const void *body, uint32_t len)
{
    size_t n = gs_encode(e, body, len, b->buf + b->len);
    cr_assert_gt(n, 0, "gs_encode refused a well-formed body of type %u", *(const uint8_t *)body);
    cr_assert_leq(n, GS_MAX_RECORD, "record of %zu bytes exceeds GS_MAX_RECORD", n);
    b->len += n;
}

static void put_raw(struct chunk *b, const void *bytes, size_t len)
{
    memcpy(b->buf + b->len, bytes, len);
    b->len += len;
}

static struct gs_stack_body *stack_body(uint32_t id, uint32_t n, uint32_t *len)
{
    *len = (uint32_t)(sizeof(struct gs_stack_body) + n * 8u);
    struct gs_stack_body *s = calloc(1, *len);
    cr_assert_not_null(s);
    s->type = GS_REC_STACK;
    s->id = id;
    s->n = n;
    return s;
}

static struct gs_module_body *module_body(uint32_t id, const char *path, const uint8_t *bid,
                                          uint8_t bid_len, uint32_t *len)
{
    size_t plen = strlen(path);
    *len = (uint32_t)(sizeof(struct gs_module_body) + plen + bid_len);
    struct gs_module_body *m = calloc(1, *len);
    cr_assert_not_null(m);
    m->type = GS_REC_MODULE;
    m->id = id;
    m->path_len = (uint16_t)plen;
    m->build_id_len = bid_len;
    memcpy(m->data, path, plen);
    memcpy(m->data + plen, bid, bid_len);
    return m;
}

/* What the reader must produce for a ring event. */
static void check_event(const struct gs_revent *got, const struct gs_ev *ev, int i)
{
    cr_assert_eq(got->type, ev->type, "event %d: type %u vs %u", i, got->type, ev->type);
    cr_assert_eq(got->time_ns, ev->time_ns, "event %d: time %llu vs %llu", i,
                 (unsigned long long)got->time_ns, (unsigned long long)ev->time_ns);
    cr_assert_eq(got->tid, ev->tid, "event %d: tid", i);
    cr_assert_eq(got->api, ev->api, "event %d: api", i);
    cr_assert_eq(got->device, ev->device, "event %d: device %d vs %d", i, got->device,
                 ev->device);
    int has_addr = ev->type != GS_REC_ALLOC_FAILED;
    int has_size = ev->type == GS_REC_ALLOC || ev->type == GS_REC_ALLOC_FAILED;
    int has_stream = ev->type != GS_REC_FREE_FAILED;
    int has_result = ev->type == GS_REC_FREE_FAILED || ev->type == GS_REC_ALLOC_FAILED;
    cr_assert_eq(got->addr, has_addr ? ev->addr : 0, "event %d: addr %#llx vs %#llx", i,
                 (unsigned long long)got->addr, (unsigned long long)ev->addr);
    cr_assert_eq(got->size, has_size ? ev->size : 0, "event %d: size", i);
    cr_assert_eq(got->stream, has_stream ? ev->stream : 0, "event %d: stream", i);
    cr_assert_eq(got->stack_id, has_size ? ev->stack_id : 0, "event %d: stack id", i);
    cr_assert_eq(got->kind, ev->type == GS_REC_ALLOC ? ev->kind : 0, "event %d: kind", i);
    cr_assert_eq(got->result, has_result ? (uint32_t)ev->result : 0, "event %d: result", i);
    cr_assert_eq(got->free_bytes, ev->type == GS_REC_ALLOC_FAILED ? ev->free_bytes : 0,
                 "event %d: free bytes", i);
    cr_assert_eq(got->total_bytes, ev->type == GS_REC_ALLOC_FAILED ? ev->total_bytes : 0,
                 "event %d: total bytes", i);
}

static const struct gs_ev extreme_events[] = {
    {.type = GS_REC_ALLOC, .api = GS_API_cudaFreeAsync_ptsz, .kind = GS_KIND_MANAGED,
     .device = 63, .tid = UINT32_MAX, .stack_id = UINT32_MAX, .time_ns = 1000000,
     .addr = UINT64_MAX, .size = UINT64_MAX, .stream = UINT64_MAX},
    /* time goes backwards, addr from UINT64_MAX to 0 */
    {.type = GS_REC_FREE, .api = GS_API_UNKNOWN, .device = -1, .tid = 0, .time_ns = 5,
     .addr = 0, .stream = 0},
    /* time jumps to the top */
    {.type = GS_REC_FREE_FAILED, .api = GS_API_cuMemFree_v2, .device = 0, .tid = 77,
     .time_ns = UINT64_MAX, .addr = 0x7f0000001000, .result = -1},
    /* and back to 0 */
    {.type = GS_REC_ALLOC_FAILED, .api = GS_API_cuMemAlloc_v2, .device = 63, .tid = 1,
     .stack_id = 7, .result = 2, .time_ns = 0, .size = UINT64_MAX, .stream = 3,
     .free_bytes = UINT64_MAX, .total_bytes = UINT64_MAX},
    {.type = GS_REC_ALLOC, .api = GS_API_cuMemAlloc_v2, .kind = GS_KIND_DEVICE, .device = -1,
     .tid = 2, .stack_id = 1, .time_ns = 1ull << 63, .addr = 0, .size = 0, .stream = 0},
    {.type = GS_REC_FREE, .api = GS_API_cudaFree, .device = 5, .tid = 2, .time_ns = 1ull << 62,
     .addr = 1ull << 63, .stream = 1},
    {.type = GS_REC_ALLOC_FAILED, .api = GS_API_cudaMalloc, .device = -1, .tid = 9,
     .stack_id = 0, .result = INT32_MIN, .time_ns = 3, .size = 0, .stream = 0,
     .free_bytes = 0, .total_bytes = 0},
    {.type = GS_REC_FREE_FAILED, .api = GS_API_cudaFree, .device = 63, .tid = UINT32_MAX,
     .time_ns = 2, .addr = UINT64_MAX, .result = INT32_MAX},
};
#define NEXTREME (sizeof extreme_events / sizeof extreme_events[0])

Test(codec, events_with_extreme_values_round_trip)
{
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    for (size_t i = 0; i < NEXTREME; i++)
        put(&b, &e, &extreme_events[i], sizeof extreme_events[i]);
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    uint64_t recs = gs_decode_chunk(b.buf, b.len, &ops, c, &st);
    cr_assert_eq(recs, NEXTREME, "records decoded: %llu", (unsigned long long)recs);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(c->nev, (int)NEXTREME);
    for (size_t i = 0; i < NEXTREME; i++)
        check_event(&c->ev[i], &extreme_events[i], (int)i);
    free(c);
    free(b.buf);
}

Test(codec, every_record_kind_round_trips_in_order)
{
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);

    uint32_t len0, len1, lenmax, lenm1, lenm2;
    struct gs_stack_body *s0 = stack_body(1, 0, &len0);
    struct gs_stack_body *s1 = stack_body(2, 1, &len1);
    s1->pcs[0] = UINT64_MAX;
    struct gs_stack_body *smax = stack_body(UINT32_MAX, GS_MAX_FRAMES, &lenmax);
    for (uint32_t i = 0; i < GS_MAX_FRAMES; i++) /* huge and descending, some wild jumps */
        smax->pcs[i] = i % 17 == 5 ? (uint64_t)i * 3 : UINT64_MAX - (uint64_t)i * 0x100000001ull;

    uint8_t bid[64];
    for (int i = 0; i < 64; i++)
        bid[i] = (uint8_t)(255 - i * 3); /* raw bytes, NULs included */
    bid[10] = 0;
    struct gs_module_body *m1 =
        module_body(1, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", bid, 20, &lenm1);
    m1->bias = 0x7f0000000000;
    m1->lo = 0x7f0000001000;
    m1->span = UINT64_MAX;
    char longpath[4096];
    memset(longpath, 'p', 4095);
    longpath[0] = '/';
    longpath[4095] = 0;
    struct gs_module_body *m2 = module_body(UINT32_MAX, longpath, bid, 64, &lenm2);
    m2->bias = UINT64_MAX;
    m2->lo = 0;
    m2->span = 0;
    uint32_t lenm3;
    struct gs_module_body *m3 = module_body(3, "", bid, 0, &lenm3);

    struct gs_end_body end = {.type = GS_REC_END, .events = 123456789, .lost = UINT64_MAX};

    put(&b, &e, m1, lenm1);
    put(&b, &e, s0, len0);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev));
    put(&b, &e, s1, len1);
    put(&b, &e, m2, lenm2);
    put(&b, &e, &extreme_events[1], sizeof(struct gs_ev));
    put(&b, &e, smax, lenmax);
    put(&b, &e, m3, lenm3);
    put(&b, &e, &extreme_events[2], sizeof(struct gs_ev));
    put(&b, &e, &extreme_events[3], sizeof(struct gs_ev));
    put(&b, &e, &end, sizeof end);

    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    uint64_t recs = gs_decode_chunk(b.buf, b.len, &ops, c, &st);
    cr_assert_eq(recs, 11, "records: %llu", (unsigned long long)recs);
    cr_assert_eq(st.damaged_records, 0, "damaged: %llu", (unsigned long long)st.damaged_records);
    cr_assert_str_eq(c->order, "msesmesmee", "callback order %s", c->order);

    cr_assert_eq(c->mod[0].id, 1);
    cr_assert_eq(c->mod[0].bias, m1->bias);
    cr_assert_eq(c->mod[0].lo, m1->lo);
    cr_assert_eq(c->mod[0].span, m1->span);
    cr_assert_str_eq(c->mod[0].path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
    cr_assert_eq(c->mod[0].build_id_len, 20);
    cr_assert_eq(memcmp(c->mod[0].build_id, bid, 20), 0, "build id bytes");
    cr_assert_eq(c->mod[1].id, UINT32_MAX);
    cr_assert_eq(c->mod[1].bias, UINT64_MAX);
    cr_assert_eq(c->mod[1].lo, 0);
    cr_assert_eq(c->mod[1].span, 0);
    cr_assert_str_eq(c->mod[1].path, longpath, "a 4095-byte path");
    cr_assert_eq(c->mod[1].build_id_len, 64);
    cr_assert_eq(memcmp(c->mod[1].build_id, bid, 64), 0);
    cr_assert_eq(c->mod[2].id, 3);
    cr_assert_str_eq(c->mod[2].path, "", "empty path");
    cr_assert_eq(c->mod[2].build_id_len, 0);

    cr_assert_eq(c->st[0].id, 1);
    cr_assert_eq(c->st[0].n, 0);
    cr_assert_eq(c->st[1].id, 2);
    cr_assert_eq(c->st[1].n, 1);
    cr_assert_eq(c->st[1].pcs[0], UINT64_MAX);
    cr_assert_eq(c->st[2].id, UINT32_MAX);
    cr_assert_eq(c->st[2].n, GS_MAX_FRAMES);
    for (unsigned i = 0; i < GS_MAX_FRAMES; i++)
        cr_assert_eq(c->st[2].pcs[i], smax->pcs[i], "frame %u: %#llx vs %#llx", i,
                     (unsigned long long)c->st[2].pcs[i], (unsigned long long)smax->pcs[i]);

    for (int i = 0; i < 4; i++)
        check_event(&c->ev[i], &extreme_events[i], i);

    cr_assert_eq(st.end_seen, 1, "END seen");
    cr_assert_eq(st.end_events, 123456789);
    cr_assert_eq(st.end_lost, UINT64_MAX);

    free(s0);
    free(s1);
    free(smax);
    free(m1);
    free(m2);
    free(m3);
    free(c);
    free(b.buf);
}

Test(codec, encoder_reset_restarts_deltas_per_chunk)
{
    /* The same events in two chunks, with a reset between: each chunk
     * decodes alone, and the second's bytes equal the first's. */
    struct gs_encoder e;
    struct chunk b1, b2;
    chunk_init(&b1);
    chunk_init(&b2);
    gs_encoder_reset(&e);
    for (size_t i = 0; i < NEXTREME; i++)
        put(&b1, &e, &extreme_events[i], sizeof(struct gs_ev));
    gs_encoder_reset(&e);
    for (size_t i = 0; i < NEXTREME; i++)
        put(&b2, &e, &extreme_events[i], sizeof(struct gs_ev));
    cr_assert_eq(b1.len, b2.len);
    cr_assert_eq(memcmp(b1.buf, b2.buf, b1.len), 0, "identical chunks after reset");
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    gs_decode_chunk(b2.buf, b2.len, &ops, c, &st);
    cr_assert_eq(c->nev, (int)NEXTREME);
    for (size_t i = 0; i < NEXTREME; i++)
        check_event(&c->ev[i], &extreme_events[i], (int)i);
    free(c);
    free(b1.buf);
    free(b2.buf);
}

Test(codec, unknown_record_type_is_skipped)
{
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev));
    /* type 200, 5 bytes of payload that would look like records if misframed */
    const uint8_t unknown[] = {200, 5, GS_REC_ALLOC, 3, 0xff, 0xff, 0xff};
    put_raw(&b, unknown, sizeof unknown);
    put(&b, &e, &extreme_events[1], sizeof(struct gs_ev));
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    uint64_t recs = gs_decode_chunk(b.buf, b.len, &ops, c, &st);
    cr_assert_eq(recs, 3, "three records framed, got %llu", (unsigned long long)recs);
    cr_assert_eq(st.damaged_records, 0, "unknown type is not damage");
    cr_assert_eq(c->nev, 2);
    check_event(&c->ev[0], &extreme_events[0], 0);
    check_event(&c->ev[1], &extreme_events[1], 1);
    free(c);
    free(b.buf);
}

Test(codec, extra_payload_bytes_are_ignored)
{
    /* An END record with a field appended by a newer writer. */
    struct chunk b;
    chunk_init(&b);
    const uint8_t endrec[] = {GS_REC_END, 4, 7, 1, 0x80, 0x01};
    put_raw(&b, endrec, sizeof endrec);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev));
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &ops, c, &st), 2);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(st.end_seen, 1);
    cr_assert_eq(st.end_events, 7);
    cr_assert_eq(st.end_lost, 1);
    check_event(&c->ev[0], &extreme_events[0], 0);
    free(c);
    free(b.buf);
}

Test(codec, short_payload_is_damaged_and_decoding_goes_on)
{
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    struct gs_ev a = {.type = GS_REC_ALLOC, .device = 0, .tid = 1, .time_ns = 100,
                      .addr = 0x1000, .size = 64, .stack_id = 1};
    struct gs_ev f = {.type = GS_REC_FREE, .device = 0, .tid = 1, .time_ns = 200, .addr = 0x1000};
    put(&b, &e, &a, sizeof a);
    const uint8_t empty_free[] = {GS_REC_FREE, 0}; /* no fields at all */
    put_raw(&b, empty_free, sizeof empty_free);
    const uint8_t short_stack[] = {GS_REC_STACK, 3, 9, 3, 2}; /* says 3 pcs, has 1 */
    put_raw(&b, short_stack, sizeof short_stack);
    const uint8_t zero_id_stack[] = {GS_REC_STACK, 2, 0, 0}; /* id 0 is not an id */
    put_raw(&b, zero_id_stack, sizeof zero_id_stack);
    const uint8_t half_varint_end[] = {GS_REC_END, 2, 5, 0x80}; /* lost: cut varint */
    put_raw(&b, half_varint_end, sizeof half_varint_end);
    put(&b, &e, &f, sizeof f);
    uint32_t lens;
    struct gs_stack_body *s = stack_body(4, 2, &lens);
    s->pcs[0] = 11;
    s->pcs[1] = 22;
    put(&b, &e, s, lens);

    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    uint64_t recs = gs_decode_chunk(b.buf, b.len, &ops, c, &st);
    cr_assert_eq(recs, 7, "all 7 records framed, got %llu", (unsigned long long)recs);
    cr_assert_eq(st.damaged_records, 4, "four damaged, got %llu",
                 (unsigned long long)st.damaged_records);
    cr_assert_eq(st.end_seen, 0, "a damaged END does not count");
    cr_assert_str_eq(c->order, "ees", "only the good records reach the callbacks");
    check_event(&c->ev[0], &a, 0);
    check_event(&c->ev[1], &f, 1);
    cr_assert_eq(c->st[0].id, 4);
    cr_assert_eq(c->st[0].n, 2);
    cr_assert_eq(c->st[0].pcs[1], 22);
    free(s);
    free(c);
    free(b.buf);
}

Test(codec, oversized_build_id_is_refused_and_damaged)
{
    /* Writer and reader take at most GS_MAX_BUILD_ID bytes of build id: the
     * encoder refuses a longer one, and a reader given one by hand (a
     * hostile file) counts the record as damaged and goes on. */
    struct gs_encoder e;
    gs_encoder_reset(&e);
    uint8_t bid[GS_MAX_BUILD_ID + 1] = {1};
    uint32_t len;
    struct gs_module_body *m = module_body(1, "/lib/x.so", bid, sizeof bid, &len);
    uint8_t out[GS_MAX_RECORD];
    cr_assert_eq(gs_encode(&e, m, len, out), 0, "the encoder takes no build id over the limit");
    free(m);

    struct chunk b;
    chunk_init(&b);
    uint8_t rec[128], *p = rec + 2;
    p += gs_put_varint(p, 1);                    /* id */
    p += gs_put_varint(p, 0);                    /* bias */
    p += gs_put_varint(p, 0x1000);               /* lo */
    p += gs_put_varint(p, 0x1000);               /* span */
    p += gs_put_varint(p, 1);                    /* path "x" */
    *p++ = 'x';
    p += gs_put_varint(p, sizeof bid);           /* build id, one byte too long */
    memset(p, 7, sizeof bid);
    p += sizeof bid;
    rec[0] = GS_REC_MODULE;
    rec[1] = (uint8_t)(p - rec - 2);             /* fits in one varint byte */
    memcpy(b.buf + b.len, rec, (size_t)(p - rec));
    b.len += (size_t)(p - rec);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev));
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &ops, c, &st), 2);
    cr_assert_eq(st.damaged_records, 1);
    cr_assert_str_eq(c->order, "e");
    free(c);
    free(b.buf);
}

Test(codec, length_past_chunk_end_stops_the_chunk)
{
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev));
    size_t good = b.len;
    put(&b, &e, &extreme_events[1], sizeof(struct gs_ev));
    put(&b, &e, &extreme_events[2], sizeof(struct gs_ev));
    /* rewrite the second record's length to run 100 bytes past the end */
    uint8_t *rec = b.buf + good;
    uint64_t plen;
    const uint8_t *p = rec + 1;
    cr_assert_eq(gs_get_varint(&p, b.buf + b.len, &plen), 0);
    cr_assert_eq(p - (rec + 1), 1, "payload length fits one byte");
    rec[1] = 0x7f; /* 127 > what is left */
    cr_assert_gt((size_t)127, b.len - good - 2);
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    uint64_t recs = gs_decode_chunk(b.buf, b.len, &ops, c, &st);
    cr_assert_eq(recs, 1, "only the first record, got %llu", (unsigned long long)recs);
    cr_assert_eq(st.damaged_records, 1, "one damaged record, got %llu",
                 (unsigned long long)st.damaged_records);
    cr_assert_eq(c->nev, 1, "the third record is not reached");
    check_event(&c->ev[0], &extreme_events[0], 0);
    free(c);
    free(b.buf);
}

Test(codec, cut_length_varint_stops_the_chunk)
{
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev));
    const uint8_t cut[] = {GS_REC_STACK, 0x80}; /* the length varint never ends */
    put_raw(&b, cut, sizeof cut);
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &ops, c, &st), 1);
    cr_assert_eq(st.damaged_records, 1);
    cr_assert_eq(c->nev, 1);
    const uint8_t lone_type[] = {GS_REC_ALLOC}; /* a type byte and nothing else */
    memset(&st, 0, sizeof st);
    cr_assert_eq(gs_decode_chunk(lone_type, 1, &ops, c, &st), 0);
    cr_assert_eq(st.damaged_records, 1);
    memset(&st, 0, sizeof st);
    cr_assert_eq(gs_decode_chunk(lone_type, 0, &ops, c, &st), 0, "an empty chunk");
    cr_assert_eq(st.damaged_records, 0);
    free(c);
    free(b.buf);
}

Test(codec, encode_refuses_malformed_bodies)
{
    struct gs_encoder e;
    gs_encoder_reset(&e);
    static uint8_t out[GS_MAX_RECORD];
    /* room for a stack of GS_MAX_FRAMES + 1 frames, suitably aligned */
    static uint64_t buf[(sizeof(struct gs_stack_body) + (GS_MAX_FRAMES + 2) * 8) / 8 + 1];

    struct gs_ev ev = {.type = GS_REC_ALLOC};
    cr_assert_eq(gs_encode(&e, &ev, 0, out), 0, "length 0");
    cr_assert_eq(gs_encode(&e, &ev, sizeof ev - 1, out), 0, "event one byte short");
    uint8_t big[sizeof ev + 8] = {0};
    memcpy(big, &ev, sizeof ev);
    cr_assert_eq(gs_encode(&e, big, sizeof big, out), 0, "event 8 bytes long");
    for (uint8_t t = GS_REC_ALLOC; t <= GS_REC_ALLOC_FAILED; t++) {
        big[0] = t;
        cr_assert_eq(gs_encode(&e, big, sizeof ev + 1, out), 0, "event type %u, wrong length", t);
    }

    struct gs_stack_body *s = (struct gs_stack_body *)buf;
    s->type = GS_REC_STACK;
    s->id = 1;
    s->n = GS_MAX_FRAMES + 1;
    cr_assert_eq(gs_encode(&e, s, (uint32_t)(sizeof *s + s->n * 8u), out), 0,
                 "n > GS_MAX_FRAMES with a matching length");
    s->n = 2;
    cr_assert_eq(gs_encode(&e, s, (uint32_t)(sizeof *s + 8), out), 0, "n = 2, one pc");
    cr_assert_eq(gs_encode(&e, s, (uint32_t)(sizeof *s + 24), out), 0, "n = 2, three pcs");
    cr_assert_eq(gs_encode(&e, s, (uint32_t)sizeof *s - 1, out), 0, "shorter than the header");
    cr_assert_gt(gs_encode(&e, s, (uint32_t)(sizeof *s + 16), out), 0, "n = 2, two pcs is fine");

    struct gs_module_body *m = (struct gs_module_body *)buf;
    memset(buf, 0, sizeof buf);
    m->type = GS_REC_MODULE;
    m->id = 1;
    m->path_len = 10;
    m->build_id_len = 4;
    cr_assert_eq(gs_encode(&e, m, (uint32_t)(sizeof *m + 13), out), 0, "module one byte short");
    cr_assert_eq(gs_encode(&e, m, (uint32_t)(sizeof *m + 15), out), 0, "module one byte long");
    cr_assert_eq(gs_encode(&e, m, (uint32_t)sizeof *m - 1, out), 0, "module header cut");
    cr_assert_gt(gs_encode(&e, m, (uint32_t)(sizeof *m + 14), out), 0, "exact length is fine");

    static uint64_t mbuf[(sizeof(struct gs_module_body) + 4096 + 8) / 8 + 1];
    m = (struct gs_module_body *)mbuf;
    m->type = GS_REC_MODULE;
    m->id = 1;
    m->path_len = 4096;
    cr_assert_eq(gs_encode(&e, m, (uint32_t)(sizeof *m + 4096), out), 0, "path of 4096 bytes");

    struct gs_end_body end = {.type = GS_REC_END};
    cr_assert_eq(gs_encode(&e, &end, sizeof end - 1, out), 0, "END short");
    cr_assert_eq(gs_encode(&e, &end, sizeof end + 1, out), 0, "END long");

    uint8_t unknown[sizeof ev] = {0};
    for (unsigned t = 0; t < 256; t++) {
        if (t == GS_REC_MODULE || t == GS_REC_STACK || t == GS_REC_END || t == GS_REC_REF ||
            t == GS_REC_POOL || (t >= GS_REC_ALLOC && t <= GS_REC_ALLOC_FAILED) ||
            t == GS_REC_BLOCK_ALLOC || t == GS_REC_BLOCK_FREE || t == GS_REC_GRAPH_NODE ||
            t == GS_REC_GRAPH)
            continue;
        unknown[0] = (uint8_t)t;
        cr_assert_eq(gs_encode(&e, unknown, sizeof unknown, out), 0, "type %u unknown", t);
    }
}

Test(codec, refused_body_leaves_delta_state_alone)
{
    struct gs_encoder e;
    gs_encoder_reset(&e);
    struct gs_ev ev = {.type = GS_REC_ALLOC, .time_ns = 999, .addr = 0x5000};
    uint8_t out[GS_MAX_RECORD];
    cr_assert_eq(gs_encode(&e, &ev, sizeof ev - 1, out), 0);
    cr_assert_eq(e.last_time, 0, "time state untouched");
    cr_assert_eq(e.last_addr, 0, "addr state untouched");
}

/* ---- Python code objects (GS_REC_PYCODE) ---- */

struct cap_pycode {
    int n;
    uint32_t id[4], first_line[4];
    char file[4][4096], function[4][1024];
};

static void on_pycode(void *ctx, const struct gs_rpycode *pc)
{
    struct cap_pycode *c = ctx;
    cr_assert_lt(c->n, 4);
    c->id[c->n] = pc->id;
    c->first_line[c->n] = pc->first_line;
    cr_assert_lt(strlen(pc->file), sizeof c->file[0]);
    cr_assert_lt(strlen(pc->function), sizeof c->function[0]);
    strcpy(c->file[c->n], pc->file);
    strcpy(c->function[c->n], pc->function);
    c->n++;
}

static struct gs_pycode_body *pycode_body(uint32_t id, const char *file, size_t flen,
                                          const char *name, size_t nlen, uint32_t first,
                                          uint32_t *len)
{
    *len = (uint32_t)(sizeof(struct gs_pycode_body) + flen + nlen);
    struct gs_pycode_body *b = calloc(1, *len);
    cr_assert_not_null(b);
    b->type = GS_REC_PYCODE;
    b->id = id;
    b->file_len = (uint16_t)flen;
    b->name_len = (uint16_t)nlen;
    b->first_line = first;
    memcpy(b->data, file, flen);
    memcpy(b->data + flen, name, nlen);
    return b;
}

Test(codec, python_code_objects_round_trip_and_python_pcs_stay_in_stacks)
{
    static const struct gs_reader_ops pyops = {.pycode = on_pycode};
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    static char longfile[GS_PY_MAX_FILE], longname[GS_PY_MAX_NAME];
    memset(longfile, 'f', sizeof longfile);
    memset(longname, 'n', sizeof longname);
    uint32_t l1, l2, l3;
    struct gs_pycode_body *c1 =
        pycode_body(1, "/srv/model.py", 13, "Model.forward", 13, 88, &l1);
    struct gs_pycode_body *c2 =
        pycode_body(GS_PY_MAX_CODE, longfile, sizeof longfile, longname, sizeof longname,
                    UINT32_MAX, &l2);
    /* a control character and bytes that are not UTF-8: kept off terminals */
    struct gs_pycode_body *c3 = pycode_body(7, "a\nb\xff", 4, "", 0, 0, &l3);
    put(&b, &e, c1, l1);
    put(&b, &e, c2, l2);
    put(&b, &e, c3, l3);
    struct cap_pycode *c = calloc(1, sizeof *c);
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &pyops, c, &st), 3);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(c->n, 3);
    cr_assert_eq(c->id[0], 1);
    cr_assert_str_eq(c->file[0], "/srv/model.py");
    cr_assert_str_eq(c->function[0], "Model.forward");
    cr_assert_eq(c->first_line[0], 88);
    cr_assert_eq(c->id[1], GS_PY_MAX_CODE);
    cr_assert_eq(strlen(c->file[1]), GS_PY_MAX_FILE, "the longest file is kept whole");
    cr_assert_eq(strlen(c->function[1]), GS_PY_MAX_NAME, "the longest name is kept whole");
    cr_assert_eq(c->first_line[1], UINT32_MAX);
    cr_assert_str_eq(c->file[2], "a?b\xff");
    cr_assert_str_eq(c->function[2], "");

    /* The pcs that name them are ordinary stack entries. */
    uint64_t pc = gs_py_pc(GS_PY_MAX_CODE, GS_PY_MAX_LINE + 5);
    cr_assert(gs_pc_is_python(pc));
    cr_assert_eq(gs_py_pc_code(pc), GS_PY_MAX_CODE);
    cr_assert_eq(gs_py_pc_line(pc), GS_PY_MAX_LINE, "lines are capped");
    cr_assert(gs_pc_is_python(GS_PY_PC_NO_GIL) && gs_py_pc_code(GS_PY_PC_NO_GIL) == 0);
    cr_assert(!gs_pc_is_python(0x00007fffffffffffull), "no user-space address is a Python pc");
    cr_assert_eq(gs_py_pc(1, 42), 0xffff800001000000ull | 42);

    free(c1);
    free(c2);
    free(c3);
    free(c);
    free(b.buf);
}

Test(codec, python_code_records_out_of_range_are_damaged)
{
    static const struct gs_reader_ops pyops = {.pycode = on_pycode};
    /* hand-made records: id 0, an id past the pcs' room, a cut string */
    static const uint8_t raw[] = {
        GS_REC_PYCODE, 5, 0, 1, 'a', 1, 'b',                     /* id 0 */
        GS_REC_PYCODE, 8, 0x80, 0x80, 0x80, 0x04, 1, 'a', 0, 1,  /* id 2^23 */
        GS_REC_PYCODE, 4, 1, 9, 'a', 'b',                        /* file longer than the record */
        GS_REC_PYCODE, 6, 2, 1, 'x', 1, 'y', 3,                  /* fine */
    };
    struct cap_pycode *c = calloc(1, sizeof *c);
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(raw, sizeof raw, &pyops, c, &st), 4);
    cr_assert_eq(st.damaged_records, 3);
    cr_assert_eq(c->n, 1);
    cr_assert_eq(c->id[0], 2);
    cr_assert_str_eq(c->file[0], "x");
    cr_assert_str_eq(c->function[0], "y");
    cr_assert_eq(c->first_line[0], 3);
    free(c);
}

Test(codec, encode_refuses_malformed_python_code_bodies)
{
    struct gs_encoder e;
    gs_encoder_reset(&e);
    static uint8_t out[GS_MAX_RECORD];
    uint32_t len;
    struct gs_pycode_body *c = pycode_body(1, "f.py", 4, "g", 1, 1, &len);
    cr_assert_gt(gs_encode(&e, c, len, out), 0, "exact length is fine");
    cr_assert_eq(gs_encode(&e, c, len - 1, out), 0, "one byte short");
    cr_assert_eq(gs_encode(&e, c, len + 1, out), 0, "one byte long");
    cr_assert_eq(gs_encode(&e, c, (uint32_t)sizeof *c - 1, out), 0, "header cut");
    free(c);
    static char big[GS_PY_MAX_FILE + 1];
    c = pycode_body(1, big, sizeof big, "g", 1, 1, &len);
    cr_assert_eq(gs_encode(&e, c, len, out), 0, "a file name past GS_PY_MAX_FILE");
    free(c);
    c = pycode_body(1, "f", 1, big, GS_PY_MAX_NAME + 1, 1, &len);
    cr_assert_eq(gs_encode(&e, c, len, out), 0, "a function name past GS_PY_MAX_NAME");
    free(c);
}


/* ---- threads' names ---- */

struct cap_thread {
    int n;
    uint32_t tid[8];
    char name[8][GS_MAX_THREAD_NAME + 1];
    char order[16]; /* 't' a name, 'e' an event */
    int norder;
};

static void on_thread(void *ctx, uint32_t tid, const char *name)
{
    struct cap_thread *c = ctx;
    cr_assert_lt(c->n, 8);
    cr_assert_leq(strlen(name), GS_MAX_THREAD_NAME);
    c->tid[c->n] = tid;
    strcpy(c->name[c->n++], name);
    c->order[c->norder++] = 't';
}

static void on_thread_event(void *ctx, const struct gs_revent *e)
{
    struct cap_thread *c = ctx;
    (void)e;
    c->order[c->norder++] = 'e';
}

static struct gs_thread_body *thread_body(uint32_t tid, const char *name, uint8_t name_len,
                                          uint32_t *len)
{
    *len = (uint32_t)(sizeof(struct gs_thread_body) + name_len);
    struct gs_thread_body *t = calloc(1, *len);
    cr_assert_not_null(t);
    t->type = GS_REC_THREAD;
    t->tid = tid;
    t->name_len = name_len;
    memcpy(t->name, name, name_len);
    return t;
}

Test(codec, thread_names_round_trip_in_order_with_events)
{
    static const struct gs_reader_ops tops = {.thread = on_thread, .event = on_thread_event};
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    static char longest[GS_MAX_THREAD_NAME];
    memset(longest, 'w', sizeof longest);
    uint32_t l1, l2, l3, l4;
    struct gs_thread_body *t1 = thread_body(4242, "pt_autograd_0", 13, &l1);
    struct gs_thread_body *t2 = thread_body(UINT32_MAX, longest, sizeof longest, &l2);
    struct gs_thread_body *t3 = thread_body(7, "", 0, &l3);
    struct gs_thread_body *t4 = thread_body(8, "a\tb\x7f", 4, &l4); /* kept off terminals */
    struct gs_ev ev = {.type = GS_REC_ALLOC, .tid = 4242, .size = 1, .stack_id = 1};
    put(&b, &e, t1, l1);
    put(&b, &e, &ev, sizeof ev);
    put(&b, &e, t2, l2);
    put(&b, &e, t3, l3);
    put(&b, &e, t4, l4);
    struct cap_thread *c = calloc(1, sizeof *c);
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &tops, c, &st), 5);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_str_eq(c->order, "tettt", "a name before the event it names");
    cr_assert_eq(c->n, 4);
    cr_assert_eq(c->tid[0], 4242);
    cr_assert_str_eq(c->name[0], "pt_autograd_0");
    cr_assert_eq(c->tid[1], UINT32_MAX);
    cr_assert_eq(strlen(c->name[1]), GS_MAX_THREAD_NAME, "the longest name is kept whole");
    cr_assert_eq(c->tid[2], 7);
    cr_assert_str_eq(c->name[2], "");
    cr_assert_str_eq(c->name[3], "a?b?");
    /* a reader without the callback skips them, as an older reader does */
    struct gs_reader_stats st2 = {0};
    static const struct gs_reader_ops none = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &none, NULL, &st2), 5);
    cr_assert_eq(st2.damaged_records, 0);
    free(t1);
    free(t2);
    free(t3);
    free(t4);
    free(c);
    free(b.buf);
}

Test(codec, thread_names_out_of_range_are_damaged_or_cut)
{
    static const struct gs_reader_ops tops = {.thread = on_thread};
    static uint8_t raw[256];
    size_t n = 0;
    /* a tid past 32 bits */
    static const uint8_t big_tid[] = {GS_REC_THREAD, 7, 0x80, 0x80, 0x80, 0x80, 0x10, 1, 'x'};
    memcpy(raw + n, big_tid, sizeof big_tid);
    n += sizeof big_tid;
    /* a name longer than its record */
    static const uint8_t cut[] = {GS_REC_THREAD, 3, 1, 5, 'a'};
    memcpy(raw + n, cut, sizeof cut);
    n += sizeof cut;
    /* a name longer than any writer records: cut to GS_MAX_THREAD_NAME */
    raw[n++] = GS_REC_THREAD;
    raw[n++] = 2 + 100;
    raw[n++] = 9;
    raw[n++] = 100;
    memset(raw + n, 'n', 100);
    n += 100;
    struct cap_thread *c = calloc(1, sizeof *c);
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(raw, n, &tops, c, &st), 3);
    cr_assert_eq(st.damaged_records, 2);
    cr_assert_eq(c->n, 1);
    cr_assert_eq(c->tid[0], 9);
    cr_assert_eq(strlen(c->name[0]), GS_MAX_THREAD_NAME);
    free(c);
}

Test(codec, encode_refuses_malformed_thread_bodies)
{
    struct gs_encoder e;
    gs_encoder_reset(&e);
    static uint8_t out[GS_MAX_RECORD];
    uint32_t len;
    struct gs_thread_body *t = thread_body(1, "loader", 6, &len);
    cr_assert_gt(gs_encode(&e, t, len, out), 0, "exact length is fine");
    cr_assert_eq(gs_encode(&e, t, len - 1, out), 0, "one byte short");
    cr_assert_eq(gs_encode(&e, t, len + 1, out), 0, "one byte long");
    cr_assert_eq(gs_encode(&e, t, (uint32_t)sizeof *t - 1, out), 0, "header cut");
    free(t);
    static char big[GS_MAX_THREAD_NAME + 1];
    t = thread_body(1, big, sizeof big, &len);
    cr_assert_eq(gs_encode(&e, t, len, out), 0, "a name past GS_MAX_THREAD_NAME");
    free(t);
}

/* ---- the public API's records: marks and blocks ---- */

static struct gs_mark_body *mark_body(uint32_t tid, uint32_t stack, uint64_t t, const char *label,
                                      uint32_t label_len, uint32_t *len)
{
    *len = (uint32_t)(sizeof(struct gs_mark_body) + label_len);
    struct gs_mark_body *m = calloc(1, *len);
    cr_assert_not_null(m);
    m->ev.type = GS_REC_MARK;
    m->ev.tid = tid;
    m->ev.stack_id = stack;
    m->ev.time_ns = t;
    m->label_len = label_len;
    memcpy(m->label, label, label_len);
    return m;
}

Test(codec, marks_and_blocks_round_trip_among_events)
{
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    char longest[GS_MAX_LABEL];
    for (int i = 0; i < GS_MAX_LABEL; i++)
        longest[i] = (char)(i % 7 == 3 ? 0 : i % 11 == 1 ? '\n' : 'a' + i % 26); /* any bytes */
    uint32_t l0, l1, l2;
    struct gs_mark_body *m0 = mark_body(5, 3, 1000, "step", 4, &l0);
    struct gs_mark_body *m1 = mark_body(UINT32_MAX, UINT32_MAX, 10, "", 0, &l1);
    struct gs_mark_body *m2 = mark_body(0, 0, UINT64_MAX, longest, GS_MAX_LABEL, &l2);
    struct gs_ev ba = {.type = GS_REC_BLOCK_ALLOC, .tid = 9, .time_ns = 2000,
                       .addr = 0x700000001000, .size = 4096, .stack_id = 12};
    struct gs_ev bmax = {.type = GS_REC_BLOCK_ALLOC, .tid = UINT32_MAX, .time_ns = 0,
                         .addr = UINT64_MAX, .size = UINT64_MAX, .stack_id = UINT32_MAX};
    struct gs_ev bf = {.type = GS_REC_BLOCK_FREE, .tid = 9, .time_ns = 1ull << 63, .addr = 0};
    put(&b, &e, m0, l0);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev)); /* the delta state is shared */
    put(&b, &e, &ba, sizeof ba);
    put(&b, &e, m1, l1);
    put(&b, &e, &bmax, sizeof bmax);
    put(&b, &e, &bf, sizeof bf);
    put(&b, &e, m2, l2);
    put(&b, &e, &extreme_events[1], sizeof(struct gs_ev));

    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &ops, c, &st), 8);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(c->nev, 8);
    const struct gs_mark_body *marks[] = {m0, m1, m2};
    const int mark_at[] = {0, 3, 6};
    for (int k = 0; k < 3; k++) {
        const struct gs_revent *g = &c->ev[mark_at[k]];
        cr_assert_eq(g->type, GS_REC_MARK, "mark %d", k);
        cr_assert_eq(g->time_ns, marks[k]->ev.time_ns, "mark %d time", k);
        cr_assert_eq(g->tid, marks[k]->ev.tid, "mark %d tid", k);
        cr_assert_eq(g->stack_id, marks[k]->ev.stack_id, "mark %d stack", k);
        cr_assert_eq(g->label_len, marks[k]->label_len, "mark %d label length", k);
        cr_assert_eq(g->device, GS_DEVICE_UNKNOWN, "mark %d device", k);
    }
    /* the labels point into the chunk, which is still there */
    cr_assert_eq(memcmp(c->ev[0].label, "step", 4), 0);
    cr_assert_eq(memcmp(c->ev[6].label, longest, GS_MAX_LABEL), 0, "any bytes, NULs too");
    check_event(&c->ev[1], &extreme_events[0], 1);
    check_event(&c->ev[7], &extreme_events[1], 7);
    const struct gs_ev *blocks[] = {&ba, &bmax, &bf};
    const int block_at[] = {2, 4, 5};
    for (int k = 0; k < 3; k++) {
        const struct gs_revent *g = &c->ev[block_at[k]];
        const struct gs_ev *w = blocks[k];
        cr_assert_eq(g->type, w->type, "block %d type", k);
        cr_assert_eq(g->time_ns, w->time_ns, "block %d time", k);
        cr_assert_eq(g->tid, w->tid, "block %d tid", k);
        cr_assert_eq(g->addr, w->addr, "block %d addr", k);
        cr_assert_eq(g->size, w->type == GS_REC_BLOCK_ALLOC ? w->size : 0, "block %d size", k);
        cr_assert_eq(g->stack_id, w->type == GS_REC_BLOCK_ALLOC ? w->stack_id : 0,
                     "block %d stack", k);
    }
    free(m0);
    free(m1);
    free(m2);
    free(c);
    free(b.buf);
}

/* NVTX's records (GS_REC_RANGE) and a block freed with a span, among the
 * events whose delta state they share; a RANGE whose label runs past its
 * payload is damaged. */
Test(codec, ranges_and_block_spans_round_trip)
{
    struct chunk b;
    chunk_init(&b);
    struct gs_encoder e;
    gs_encoder_reset(&e);
    uint32_t l0, l1, l2;
    struct gs_mark_body *push = mark_body(5, 0, 100, "forward", 7, &l0);
    push->ev.type = GS_REC_RANGE;
    push->ev.kind = GS_RANGE_PUSH;
    push->ev.space = GS_RANGE_TOP;
    push->ev.stream = 3;
    struct gs_mark_body *end = mark_body(UINT32_MAX, 0, UINT64_MAX, "", 0, &l1);
    end->ev.type = GS_REC_RANGE;
    end->ev.kind = GS_RANGE_END;
    end->ev.addr = UINT64_MAX;
    end->ev.stream = UINT32_MAX;
    struct gs_mark_body *dom = mark_body(1, 0, 50, "trainer", 7, &l2);
    dom->ev.type = GS_REC_RANGE;
    dom->ev.kind = GS_RANGE_DOMAIN;
    dom->ev.stream = 1;
    struct gs_ev span = {.type = GS_REC_BLOCK_FREE, .tid = 2, .time_ns = 7, .addr = 0x7000,
                         .size = UINT64_MAX};
    put(&b, &e, push, l0);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev));
    put(&b, &e, &span, sizeof span);
    put(&b, &e, end, l1);
    put(&b, &e, dom, l2);
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &ops, c, &st), 5);
    cr_assert_eq(st.damaged_records, 0);
    const struct gs_mark_body *want[] = {push, end, dom};
    const int at[] = {0, 3, 4};
    for (int k = 0; k < 3; k++) {
        const struct gs_revent *g = &c->ev[at[k]];
        cr_assert_eq(g->type, GS_REC_RANGE, "range %d", k);
        cr_assert_eq(g->time_ns, want[k]->ev.time_ns, "range %d time", k);
        cr_assert_eq(g->tid, want[k]->ev.tid, "range %d tid", k);
        cr_assert_eq(g->op, want[k]->ev.kind, "range %d op", k);
        cr_assert_eq(g->addr, want[k]->ev.addr, "range %d id", k);
        cr_assert_eq(g->stream, want[k]->ev.stream, "range %d domain", k);
        cr_assert_eq(g->flags, want[k]->ev.space, "range %d flags", k);
        cr_assert_eq(g->label_len, want[k]->label_len, "range %d label", k);
    }
    cr_assert_eq(memcmp(c->ev[0].label, "forward", 7), 0);
    check_event(&c->ev[1], &extreme_events[0], 1);
    cr_assert_eq(c->ev[2].type, GS_REC_BLOCK_FREE);
    cr_assert_eq(c->ev[2].addr, 0x7000);
    cr_assert_eq(c->ev[2].size, UINT64_MAX, "the span");

    struct chunk bad;
    chunk_init(&bad);
    const uint8_t damaged[] = {GS_REC_RANGE, 7, 2, 1, 0, 0, 0, 0, 9}; /* label: 9 bytes, has 0 */
    put_raw(&bad, damaged, sizeof damaged);
    put(&bad, &e, &extreme_events[1], sizeof(struct gs_ev));
    struct cap *c2 = cap_new();
    struct gs_reader_stats st2 = {0};
    gs_decode_chunk(bad.buf, bad.len, &ops, c2, &st2);
    cr_assert_eq(st2.damaged_records, 1, "the range with too short a payload");
    cr_assert_eq(c2->nev, 1, "the event after it decodes");
    free(push);
    free(end);
    free(dom);
    free(c);
    free(c2);
    free(b.buf);
    free(bad.buf);
}

Test(codec, malformed_marks_and_blocks)
{
    struct gs_encoder e;
    gs_encoder_reset(&e);
    uint8_t out[GS_MAX_RECORD];
    uint32_t len;
    char label[GS_MAX_LABEL + 1];
    memset(label, 'x', sizeof label);
    struct gs_mark_body *m = mark_body(1, 1, 1, label, GS_MAX_LABEL + 1, &len);
    cr_assert_eq(gs_encode(&e, m, len, out), 0, "a label over GS_MAX_LABEL");
    m->label_len = 3;
    cr_assert_eq(gs_encode(&e, m, len, out), 0, "a length that disagrees with the body's");
    cr_assert_eq(gs_encode(&e, m, (uint32_t)sizeof(struct gs_ev), out), 0, "a body too short");
    free(m);
    struct gs_ev ba = {.type = GS_REC_BLOCK_ALLOC};
    cr_assert_eq(gs_encode(&e, &ba, sizeof ba - 1, out), 0, "a block body too short");

    /* By hand: a mark whose label runs past its payload, a block with no
     * fields; both damaged, and the event after them decodes. */
    struct chunk b;
    chunk_init(&b);
    const uint8_t bad_mark[] = {GS_REC_MARK, 4, 2, 1, 1, 9}; /* label says 9 bytes, has 0 */
    put_raw(&b, bad_mark, sizeof bad_mark);
    const uint8_t empty_block[] = {GS_REC_BLOCK_ALLOC, 0};
    put_raw(&b, empty_block, sizeof empty_block);
    put(&b, &e, &extreme_events[0], sizeof(struct gs_ev));
    struct cap *c = cap_new();
    struct gs_reader_stats st = {0};
    cr_assert_eq(gs_decode_chunk(b.buf, b.len, &ops, c, &st), 3);
    cr_assert_eq(st.damaged_records, 2);
    cr_assert_eq(c->nev, 1);
    check_event(&c->ev[0], &extreme_events[0], 0);
    free(c);
    free(b.buf);
}
