/*
 * idmap.c - a map from 64-bit keys to 64-bit values: the analyzer's one
 * hash table (live allocations by address, stacks and sites by id).
 *
 * Open addressing with linear probing and backward-shift deletion, so a
 * table that sees millions of inserts and deletes never fills with
 * tombstones. Kept at most a quarter full: the live set's map sees a miss
 * (an allocation's address) or a removal (its free) for most events, each
 * a walk to the end of a run of full slots, and short runs pay for the
 * memory (report of a 10 M-event trace: 0.515 s half full, 0.48 s a quarter
 * full). A slot is its key and value alone, 16 bytes, four to a cache line:
 * an empty one holds the key UINT64_MAX, and that key, when it is one, is
 * kept beside the table.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/idmap.h"

#define EMPTY UINT64_MAX

struct slot {
    uint64_t key, value;
};

struct gs_idmap {
    struct slot *slots;
    size_t cap, count; /* cap is a power of two; count includes the key EMPTY */
    int has_empty_key;
    uint64_t empty_key_value;
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
    if (!c)
        return NULL;
    *c = *m;
    c->slots = NULL;
    if (m->cap && !(c->slots = malloc(m->cap * sizeof *c->slots))) {
        free(c);
        return NULL;
    }
    if (m->cap)
        memcpy(c->slots, m->slots, m->cap * sizeof *c->slots);
    return c;
}

/* The slot of key (not EMPTY), or the empty one it would take. */
static struct slot *find(const struct gs_idmap *m, uint64_t key)
{
    for (size_t i = hash(key, m->cap);; i = (i + 1) & (m->cap - 1))
        if (m->slots[i].key == key || m->slots[i].key == EMPTY)
            return &m->slots[i];
}

/* Where key's value is kept (the key EMPTY's beside the table), or NULL. */
static uint64_t *lookup(const struct gs_idmap *m, uint64_t key)
{
    if (key == EMPTY)
        return m->has_empty_key ? (uint64_t *)&m->empty_key_value : NULL;
    if (!m->cap)
        return NULL;
    struct slot *s = find(m, key);
    return s->key == EMPTY ? NULL : &s->value;
}

int gs_idmap_get(const struct gs_idmap *m, uint64_t key, uint64_t *value)
{
    const uint64_t *v = lookup(m, key);
    if (!v)
        return -1;
    *value = *v;
    return 0;
}

static int grow(struct gs_idmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct slot *old = m->slots, *slots = malloc(cap * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, cap * sizeof *slots); /* every key EMPTY */
    size_t oldcap = m->cap;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key != EMPTY)
            *find(m, old[i].key) = old[i];
    free(old);
    return 0;
}

uint64_t *gs_idmap_add(struct gs_idmap *m, uint64_t key, int *added)
{
    if (key == EMPTY) {
        *added = !m->has_empty_key;
        if (*added) {
            m->has_empty_key = 1;
            m->empty_key_value = 0;
            m->count++;
        }
        return &m->empty_key_value;
    }
    if ((m->count + 1) * 4 > m->cap && grow(m) != 0) {
        *added = 0;
        return lookup(m, key); /* no room for a new key: one already there still counts */
    }
    struct slot *s = find(m, key);
    *added = s->key == EMPTY;
    if (*added) {
        s->key = key;
        s->value = 0;
        m->count++;
    }
    return &s->value;
}

int gs_idmap_put(struct gs_idmap *m, uint64_t key, uint64_t value)
{
    int added;
    uint64_t *v = gs_idmap_add(m, key, &added);
    if (!v)
        return -1;
    *v = value;
    return 0;
}

/* Empties the slot, moving up the slots after it that belong before it. */
static void remove_slot(struct gs_idmap *m, struct slot *s)
{
    size_t mask = m->cap - 1, hole = (size_t)(s - m->slots);
    for (size_t i = (hole + 1) & mask; m->slots[i].key != EMPTY; i = (i + 1) & mask) {
        size_t home = hash(m->slots[i].key, m->cap);
        /* move slot i into the hole if its home is not in (hole, i] */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole].key = EMPTY;
    m->count--;
}

uint64_t *gs_idmap_find(struct gs_idmap *m, uint64_t key) { return lookup(m, key); }

void gs_idmap_remove_found(struct gs_idmap *m, uint64_t *found)
{
    if (found == &m->empty_key_value) {
        m->has_empty_key = 0;
        m->count--;
        return;
    }
    /* found is a slot's value: the slot is the struct it ends */
    remove_slot(m, (struct slot *)((char *)found - offsetof(struct slot, value)));
}

int gs_idmap_take(struct gs_idmap *m, uint64_t key, uint64_t *value)
{
    uint64_t *found = gs_idmap_find(m, key);
    if (!found)
        return -1;
    *value = *found;
    gs_idmap_remove_found(m, found);
    return 0;
}

int gs_idmap_del(struct gs_idmap *m, uint64_t key)
{
    uint64_t v;
    return gs_idmap_take(m, key, &v);
}
