/*
 * stacks.c - deduplication of call stacks (capture is in unwind.c).
 *
 * The table maps a stack (its return addresses) to a small id, so the trace
 * holds each distinct stack once and events name it. Open addressing on a
 * 64-bit hash. Frames are stored back to back in chunks that are never
 * moved or freed before the table is cleared: a stack's frames stay where
 * they are, so record.c's per-thread caches point at them and compare
 * without the table's lock.
 */
#include <stdlib.h>
#include <string.h>

#include "shim/base/base.h"
#include "shim/record/record_int.h"

struct gs_stack_slot {
    uint64_t hash;
    const uint64_t *frames; /* in a chunk */
    uint32_t n;
    uint32_t id; /* 0: empty slot */
};

#define CHUNK_FRAMES 16384 /* frames in a chunk, unless one stack needs more */

struct gs_stack_chunk {
    struct gs_stack_chunk *prev;
    size_t used, cap;
    uint64_t frames[];
};

/* Four lanes, frame i in lane i % 4, so that their multiplies overlap
 * instead of each waiting for the one before (a 100-frame stack costs a
 * quarter of the chained multiplies); mixed at the end. */
#define LANE(x, pc, k) ((x) = ((x) ^ (pc)) * (k), (x) ^= (x) >> 32)
uint64_t gs_stack_hash(const uint64_t *pcs, unsigned n)
{
    const uint64_t k0 = 0xff51afd7ed558ccdull, k1 = 0xc4ceb9fe1a85ec53ull;
    uint64_t a = 0x9e3779b97f4a7c15ull ^ n, b = 0xc2b2ae3d27d4eb4full, c = 0x165667b19e3779f9ull,
             d = 0x27d4eb2f165667c5ull;
    unsigned i = 0;
    for (; i + 3 < n; i += 4) {
        LANE(a, pcs[i], k0);
        LANE(b, pcs[i + 1], k1);
        LANE(c, pcs[i + 2], k0);
        LANE(d, pcs[i + 3], k1);
    }
    if (i < n)
        LANE(a, pcs[i], k0);
    if (i + 1 < n)
        LANE(b, pcs[i + 1], k1);
    if (i + 2 < n)
        LANE(c, pcs[i + 2], k0);
    uint64_t h = a ^ (b * 0x9e3779b97f4a7c15ull) ^ (c * 0xbf58476d1ce4e5b9ull) ^
                 (d * 0x94d049bb133111ebull);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ h >> 32;
}
#undef LANE

static int same(const struct gs_stack_slot *s, const uint64_t *pcs, unsigned n, uint64_t hash)
{
    return s->hash == hash && s->n == n &&
           (n == 0 || memcmp(s->frames, pcs, n * sizeof *pcs) == 0);
}

static struct gs_stack_slot *probe(const struct gs_stack_table *t, const uint64_t *pcs, unsigned n,
                                   uint64_t hash)
{
    size_t mask = t->nslots - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        struct gs_stack_slot *s = &t->slots[i];
        if (!s->id || same(s, pcs, n, hash))
            return s;
    }
}

uint32_t gs_stack_find(const struct gs_stack_table *t, const uint64_t *pcs, unsigned n,
                       uint64_t hash, const uint64_t **frames)
{
    if (!t->nslots)
        return 0;
    const struct gs_stack_slot *s = probe(t, pcs, n, hash);
    if (frames)
        *frames = s->frames;
    return s->id;
}

static int grow_slots(struct gs_stack_table *t)
{
    size_t nslots = t->nslots ? t->nslots * 2 : 1024;
    struct gs_stack_slot *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    struct gs_stack_table bigger = *t;
    bigger.slots = slots;
    bigger.nslots = nslots;
    for (size_t i = 0; i < t->nslots; i++) {
        struct gs_stack_slot *s = &t->slots[i];
        if (s->id)
            *probe(&bigger, s->frames, s->n, s->hash) = *s;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

/* Room for n more frames: a new chunk when the newest lacks it. */
static uint64_t *frames_room(struct gs_stack_table *t, size_t n)
{
    struct gs_stack_chunk *c = t->chunk;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_FRAMES ? n : CHUNK_FRAMES;
        c = malloc(sizeof *c + cap * sizeof c->frames[0]);
        if (!c)
            return NULL;
        c->prev = t->chunk;
        c->used = 0;
        c->cap = cap;
        t->chunk = c;
    }
    return c->frames + c->used;
}

uint32_t gs_stack_intern(struct gs_stack_table *t, const uint64_t *pcs, unsigned n, uint64_t hash,
                         int *is_new, const uint64_t **frames)
{
    *is_new = 0;
    if ((t->used + 1) * 2 > t->nslots && grow_slots(t) != 0)
        return 0;
    struct gs_stack_slot *s = probe(t, pcs, n, hash);
    if (!s->id) {
        uint64_t *room = frames_room(t, n);
        if (!room)
            return 0;
        if (n) /* an empty stack (nothing could be unwound) has no frames to store */
            memcpy(room, pcs, n * sizeof *pcs);
        t->chunk->used += n;
        s->hash = hash;
        s->frames = room;
        s->n = n;
        s->id = ++t->next_id;
        t->used++;
        *is_new = 1;
    }
    if (frames)
        *frames = s->frames;
    return s->id;
}

void gs_stack_table_clear(struct gs_stack_table *t)
{
    free(t->slots);
    for (struct gs_stack_chunk *c = t->chunk, *prev; c; c = prev) {
        prev = c->prev;
        free(c);
    }
    memset(t, 0, sizeof *t);
}
