/*
 * ordmap.c - an ordered map from u64 keys to u64 values: a treap.
 *
 * The fragmentation figures (blocks.c) need to find the driver allocation
 * that holds an address, and the blocks inside it in address order; the
 * hash maps of idmap.c cannot say what lies near a key. A treap keeps its
 * keys in a binary search tree whose shape is set by random priorities, so
 * every operation takes O(log n) expected time whatever order the keys come
 * in (addresses from an allocator mostly ascend, which would make a plain
 * tree a list).
 *
 * Nodes live in one array, linked by index (0 is "none"); freed nodes are
 * reused. The priorities come from a fixed-seed generator: the same
 * operations build the same tree, so a run is reproducible.
 */
#include <stdlib.h>

#include "analyzer/util/ordmap.h"

struct node {
    uint64_t key, value;
    uint32_t prio;
    uint32_t left, right; /* indices in nodes, 0: none */
};

struct gs_ordmap {
    struct node *nodes; /* nodes[0] is unused */
    size_t cap, used;
    uint32_t root;
    uint32_t free_list; /* threaded through left */
    size_t count;
    uint64_t rng;
};

struct gs_ordmap *gs_ordmap_new(void)
{
    struct gs_ordmap *m = calloc(1, sizeof *m);
    if (m) {
        m->used = 1;
        m->rng = 0x9e3779b97f4a7c15ull;
    }
    return m;
}

void gs_ordmap_free(struct gs_ordmap *m)
{
    if (m)
        free(m->nodes);
    free(m);
}

size_t gs_ordmap_count(const struct gs_ordmap *m) { return m->count; }

static uint32_t next_prio(struct gs_ordmap *m)
{
    uint64_t x = m->rng; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    m->rng = x;
    return (uint32_t)(x >> 32);
}

static uint32_t new_node(struct gs_ordmap *m, uint64_t key, uint64_t value)
{
    uint32_t i = m->free_list;
    if (i) {
        m->free_list = m->nodes[i].left;
    } else {
        if (m->used >= UINT32_MAX)
            return 0;
        if (m->used >= m->cap) {
            size_t cap = m->cap ? m->cap * 2 : 64;
            struct node *n = realloc(m->nodes, cap * sizeof *n);
            if (!n)
                return 0;
            m->nodes = n;
            m->cap = cap;
        }
        i = (uint32_t)m->used++;
    }
    m->nodes[i] = (struct node){.key = key, .value = value, .prio = next_prio(m)};
    return i;
}

/* Splits the tree t into keys < key (*l) and keys >= key (*r). */
static void split(struct node *n, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
    if (!t) {
        *l = *r = 0;
    } else if (n[t].key < key) {
        split(n, n[t].right, key, &n[t].right, r);
        *l = t;
    } else {
        split(n, n[t].left, key, l, &n[t].left);
        *r = t;
    }
}

/* Joins l and r, every key of l below every key of r. */
static uint32_t merge(struct node *n, uint32_t l, uint32_t r)
{
    if (!l || !r)
        return l ? l : r;
    if (n[l].prio > n[r].prio) {
        n[l].right = merge(n, n[l].right, r);
        return l;
    }
    n[r].left = merge(n, l, n[r].left);
    return r;
}

static uint32_t find(const struct gs_ordmap *m, uint64_t key)
{
    uint32_t t = m->root;
    while (t && m->nodes[t].key != key)
        t = key < m->nodes[t].key ? m->nodes[t].left : m->nodes[t].right;
    return t;
}

int gs_ordmap_put(struct gs_ordmap *m, uint64_t key, uint64_t value)
{
    uint32_t t = find(m, key);
    if (t) {
        m->nodes[t].value = value;
        return 0;
    }
    uint32_t x = new_node(m, key, value);
    if (!x)
        return -1;
    uint32_t l, r;
    split(m->nodes, m->root, key, &l, &r);
    m->root = merge(m->nodes, merge(m->nodes, l, x), r);
    m->count++;
    return 0;
}

int gs_ordmap_del(struct gs_ordmap *m, uint64_t key)
{
    if (!find(m, key))
        return -1;
    uint32_t l, mid;
    split(m->nodes, m->root, key, &l, &mid);
    /* mid's smallest key is key: take that one node off */
    uint32_t *p = &mid;
    while (m->nodes[*p].left)
        p = &m->nodes[*p].left;
    uint32_t gone = *p;
    *p = m->nodes[gone].right;
    m->nodes[gone].left = m->free_list;
    m->free_list = gone;
    m->root = merge(m->nodes, l, mid);
    m->count--;
    return 0;
}

int gs_ordmap_floor(const struct gs_ordmap *m, uint64_t key, uint64_t *k, uint64_t *v)
{
    uint32_t t = m->root, best = 0;
    while (t) {
        if (m->nodes[t].key <= key) {
            best = t;
            t = m->nodes[t].right;
        } else {
            t = m->nodes[t].left;
        }
    }
    if (!best)
        return -1;
    *k = m->nodes[best].key;
    *v = m->nodes[best].value;
    return 0;
}

int gs_ordmap_ceil(const struct gs_ordmap *m, uint64_t key, uint64_t *k, uint64_t *v)
{
    uint32_t t = m->root, best = 0;
    while (t) {
        if (m->nodes[t].key >= key) {
            best = t;
            t = m->nodes[t].left;
        } else {
            t = m->nodes[t].right;
        }
    }
    if (!best)
        return -1;
    *k = m->nodes[best].key;
    *v = m->nodes[best].value;
    return 0;
}
