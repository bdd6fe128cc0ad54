/*
 * ckpt_bytes.h - what the checkpoint tests (test_checkpoint.c for the
 * driver's state, test_api_checkpoint.c for the marks' and blocks') share:
 * a checkpoint written into memory and read back, records made by hand, and
 * rounds of random records after a real checkpoint. Everything is static:
 * each test file includes it once.
 */
#ifndef CKPT_BYTES_H
#define CKPT_BYTES_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/trace/encode.h"
#include "gpushim_ring.h" /* GS_MAX_RECORD */
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/read/checkpoint_load.h"

/* ---- a checkpoint into memory, and back ---- */

struct buf {
    uint8_t *p;
    size_t n, cap, records, largest;
    int fail_after; /* put fails from this record on (0: never) */
};

static int put(void *ctx, const uint8_t *rec, size_t len)
{
    struct buf *b = ctx;
    if (b->fail_after && b->records + 1 >= (size_t)b->fail_after)
        return -1;
    if (b->n + len > b->cap) {
        b->cap = (b->n + len) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    memcpy(b->p + b->n, rec, len);
    b->n += len;
    b->records++;
    if (len > b->largest)
        b->largest = len;
    return 0;
}

static struct buf checkpoint(const struct gs_replay *r)
{
    struct buf b = {0};
    cr_assert_eq(gs_checkpoint_write(r, put, &b), 0, "gs_checkpoint_write");
    cr_assert_leq(b.largest, GS_MAX_RECORD, "every record within GS_MAX_RECORD");
    return b;
}

/* Decodes [p, p+n) as one chunk; returns its damaged records. */
static uint64_t load(struct gs_replay *r, const uint8_t *p, size_t n)
{
    struct gs_reader_stats st;
    memset(&st, 0, sizeof st);
    gs_decode_chunk(p, n, &gs_replay_ops, r, &st);
    return st.damaged_records;
}

static uint64_t damaged(struct gs_replay *r, const uint8_t *p, size_t n) { return load(r, p, n); }

/* ---- records by hand ---- */

static size_t record(uint8_t *out, uint8_t type, const uint8_t *payload, size_t len)
{
    size_t n = 0;
    out[n++] = type;
    n += gs_put_varint(out + n, len);
    memcpy(out + n, payload, len);
    return n + len;
}

/* A record of nv varints. */
static size_t rec_u(uint8_t *out, uint8_t type, const uint64_t *v, size_t nv)
{
    uint8_t payload[512];
    size_t n = 0;
    for (size_t i = 0; i < nv; i++)
        n += gs_put_varint(payload + n, v[i]);
    return record(out, type, payload, n);
}

#define REC(out, type, ...)                                                                        \
    rec_u(out, type, (const uint64_t[]){__VA_ARGS__},                                              \
          sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

/* ---- random records ---- */

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A value a field might hold, or one just past what it may. */
static uint64_t field(uint64_t *s)
{
    switch (rnd(s) % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return rnd(s) % 8;
    case 3: return rnd(s) % 300;
    case 4: return gs_zigzag(-(int64_t)(rnd(s) % 3));
    case 5: return UINT32_MAX + (rnd(s) % 3);
    case 6: return UINT64_MAX - (rnd(s) % 2);
    default: return rnd(s);
    }
}

/* Writes one random record at out (at most 512 bytes of payload). */
typedef size_t (*random_record_fn)(uint8_t *out, uint64_t *seed);

/* rounds times: the checkpoint good cut at a random record boundary, then 60
 * records from make, then (flip) in a third of the rounds four bits flipped
 * anywhere; loaded into a fresh replay, which use must find usable. */
static void random_rounds(const struct buf *good, uint64_t seed, int rounds, random_record_fn make,
                          int flip, void (*use)(struct gs_replay *))
{
    uint8_t *p = malloc(good->n + 60 * 520);
    cr_assert_not_null(p);
    for (int round = 0; round < rounds; round++) {
        size_t n = good->n * (rnd(&seed) % 101) / 100, at = 0;
        while (at < n) { /* cut at a record boundary */
            const uint8_t *q = good->p + at + 1;
            uint64_t len = 0;
            gs_get_varint(&q, good->p + good->n, &len);
            size_t next = (size_t)(q - good->p) + (size_t)len;
            if (next > n)
                break;
            at = next;
        }
        memcpy(p, good->p, at);
        n = at;
        for (int k = 0; k < 60; k++)
            n += make(p + n, &seed);
        if (flip && n && rnd(&seed) % 3 == 0)
            for (int k = 0; k < 4; k++)
                p[rnd(&seed) % n] ^= (uint8_t)(1u << (rnd(&seed) % 8));
        struct gs_replay r;
        gs_replay_init(&r);
        load(&r, p, n);
        use(&r);
        gs_replay_free(&r);
    }
    free(p);
}

#endif
