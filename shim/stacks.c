/*
 * stacks.c - deduplication of call stacks (capture is in unwind.c).
 *
 * The table maps a stack (its return addresses) to a small id, so the trace
 * holds each distinct stack once and events name it. Open addressing on a
 * 64-bit hash; frames are stored back to back in one array.
 */
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct gs_stack_slot {
    uint64_t hash;
    size_t offset; /* into frames */
    uint32_t n;
    uint32_t id; /* 0: empty slot */
};

uint64_t gs_stack_hash(const uint64_t *pcs, unsigned n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (unsigned i = 0; i < n; i++) {
        h ^= pcs[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static int same(const struct gs_stack_table *t, const struct gs_stack_slot *s, const uint64_t *pcs,
                unsigned n, uint64_t hash)
{
    return s->hash == hash && s->n == n &&
           (n == 0 || memcmp(t->frames + s->offset, pcs, n * sizeof *pcs) == 0);
}

static struct gs_stack_slot *probe(const struct gs_stack_table *t, const uint64_t *pcs, unsigned n,
                                   uint64_t hash)
{
    size_t mask = t->nslots - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        struct gs_stack_slot *s = &t->slots[i];
        if (!s->id || same(t, s, pcs, n, hash))
            return s;
    }
}

uint32_t gs_stack_find(const struct gs_stack_table *t, const uint64_t *pcs, unsigned n,
                       uint64_t hash)
{
    if (!t->nslots)
        return 0;
    return probe(t, pcs, n, hash)->id;
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
            *probe(&bigger, t->frames + s->offset, s->n, s->hash) = *s;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

static int grow_frames(struct gs_stack_table *t, size_t need)
{
    if (t->nframes + need <= t->frames_cap)
        return 0;
    size_t cap = t->frames_cap ? t->frames_cap : 16384;
    while (cap < t->nframes + need)
        cap *= 2;
    uint64_t *frames = realloc(t->frames, cap * sizeof *frames);
    if (!frames)
        return -1;
    t->frames = frames;
    t->frames_cap = cap;
    return 0;
}

uint32_t gs_stack_intern(struct gs_stack_table *t, const uint64_t *pcs, unsigned n, uint64_t hash,
                         int *is_new)
{
    *is_new = 0;
    if ((t->used + 1) * 2 > t->nslots && grow_slots(t) != 0)
        return 0;
    struct gs_stack_slot *s = probe(t, pcs, n, hash);
    if (s->id)
        return s->id;
    if (grow_frames(t, n) != 0)
        return 0;
    if (n) /* an empty stack (nothing could be unwound) has no frames to store */
        memcpy(t->frames + t->nframes, pcs, n * sizeof *pcs);
    s->hash = hash;
    s->offset = t->nframes;
    s->n = n;
    s->id = ++t->next_id;
    t->nframes += n;
    t->used++;
    *is_new = 1;
    return s->id;
}

void gs_stack_table_clear(struct gs_stack_table *t)
{
    free(t->slots);
    free(t->frames);
    memset(t, 0, sizeof *t);
}
