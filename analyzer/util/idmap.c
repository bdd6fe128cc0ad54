/*
 * idmap.c - a map from 64-bit keys to 64-bit values: the analyzer's one
 * hash table (live allocations by address, stacks and sites by id).
 *
 * Open addressing with linear probing and backward-shift deletion, so a
 * table that sees millions of inserts and deletes never fills with
 * tombstones. Kept at most half full.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/idmap.h"

struct slot {
    uint64_t key, value;
    int used;
};

struct gs_idmap {
    struct slot *slots;
    size_t cap, count; /* cap is a power of two */
};

static size_t hash(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

struct gs_idmap *gs_idmap_new(void) { return calloc(1, sizeof(struct gs_idmap)); }

void gs_idmap_free(struct gs_idmap *m)
{
    if (m)
        free(m->slots);
    free(m);
}

size_t gs_idmap_count(const struct gs_idmap *m) { return m->count; }

struct gs_idmap *gs_idmap_copy(const struct gs_idmap *m)
{
    struct gs_idmap *c = gs_idmap_new();
    if (!c || !m->cap)
        return c;
    if (!(c->slots = malloc(m->cap * sizeof *c->slots))) {
        free(c);
        return NULL;
    }
    memcpy(c->slots, m->slots, m->cap * sizeof *c->slots);
    c->cap = m->cap;
    c->count = m->count;
    return c;
}

static struct slot *find(const struct gs_idmap *m, uint64_t key)
{
    for (size_t i = hash(key, m->cap);; i = (i + 1) & (m->cap - 1))
        if (!m->slots[i].used || m->slots[i].key == key)
            return &m->slots[i];
}

int gs_idmap_get(const struct gs_idmap *m, uint64_t key, uint64_t *value)
{
    if (!m->cap)
        return -1;
    struct slot *s = find(m, key);
    if (!s->used)
        return -1;
    *value = s->value;
    return 0;
}

static int grow(struct gs_idmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct slot *old = m->slots, *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    size_t oldcap = m->cap;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].used)
            *find(m, old[i].key) = old[i];
    free(old);
    return 0;
}

int gs_idmap_put(struct gs_idmap *m, uint64_t key, uint64_t value)
{
    if ((m->count + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    struct slot *s = find(m, key);
    if (!s->used) {
        s->used = 1;
        s->key = key;
        m->count++;
    }
    s->value = value;
    return 0;
}

int gs_idmap_del(struct gs_idmap *m, uint64_t key)
{
    if (!m->cap)
        return -1;
    struct slot *s = find(m, key);
    if (!s->used)
        return -1;
    size_t mask = m->cap - 1, hole = (size_t)(s - m->slots);
    for (size_t i = (hole + 1) & mask; m->slots[i].used; i = (i + 1) & mask) {
        size_t home = hash(m->slots[i].key, m->cap);
        /* move slot i into the hole if its home is not in (hole, i] */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole].used = 0;
    m->count--;
    return 0;
}
