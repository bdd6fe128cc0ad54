/*
 * torch_caching.c - owns the model of PyTorch's CUDA caching allocator
 * (DeviceCachingAllocator in c10/cuda/CUDACachingAllocator.cpp, with the
 * options of c10/cuda/CUDAAllocatorConfig.{h,cpp}), written here in C from
 * reading that source (pytorch/pytorch, as of torch 2.12, 13eab2b3ef4e),
 * one device: the small (<= 1 MiB) and large pools, round_size,
 * get_allocation_size, the best fit per stream (get_free_block),
 * should_split, the merging of free neighbours (free_block,
 * try_merge_blocks), max_split_size_mb (get_free_block's oversize rules,
 * release_available_cached_blocks), OOM -> release_cached_blocks -> retry
 * (malloc, alloc_block), garbage_collection_threshold
 * (garbage_collect_cached_blocks) and expandable segments (ExpandableSegment,
 * find_expandable_block, try_allocate_expandable_block, map_block,
 * unmap_block, release_blocks). Each function below names the one it follows.
 *
 * Addresses are the model's own: segments take fresh virtual ranges and no
 * range is ever reused; only their order and adjacency matter, as in the
 * source's comparators. The source's ordered sets are ordered here too, so
 * that a request costs about the same however many blocks are cached (issue
 * 17 item 6: six settings replayed side by side over 100 M events): a
 * pool's free blocks per stream in size bins of treaps (struct tcbins; the
 * best fit, its neighbours in order), its unmapped blocks in one treap by
 * address (find_expandable_block), and with garbage collection on, the
 * freeable blocks in a list by age plus the sum of their ages
 * (garbage_collect_cached_blocks). Every search finds the block the
 * source's std::set would (tests/unit/test_torch_caching.c holds the
 * figures of a long random schedule under every option as the arrays
 * searched in full gave them). In the steady state a request allocates
 * nothing: blocks are slots of one array, reused, linked by index.
 *
 * Not modelled: CUDA graphs' private pools, recordStream and events (a block
 * freed is reusable at once, as on a synchronised stream), the free-memory
 * callbacks, other devices, and the IPC and peer-access side of expandable
 * segments.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/idmap.h"
#include "analyzer/whatif/torch_caching.h"

/* The source's constants (CUDACachingAllocator.cpp, top of namespace
 * Native; CUDAAllocatorConfig.h). */
#define K_MIN_BLOCK 512ull                /* kMinBlockSize */
#define K_SMALL_SIZE (1ull << 20)         /* kSmallSize */
#define K_SMALL_BUFFER (2ull << 20)       /* kSmallBuffer */
#define K_LARGE_BUFFER (20ull << 20)      /* kLargeBuffer */
#define K_MIN_LARGE_ALLOC (10ull << 20)   /* kMinLargeAlloc */
#define K_ROUND_LARGE (2ull << 20)        /* kRoundLarge */
#define K_POW2_START_LOG 20               /* roundup_power2_divisions: intervals from 1 MiB */
#define NONE UINT32_MAX
#define ZERO_ID UINT64_MAX                /* an id live with size 0: no block */

struct tcb { /* a Block: 64 bytes, a cache line (gs_tc.b is aligned) */
    uint64_t size, addr; /* what the searches read first: the keys, */
    uint32_t ch[2];      /* the children [left, right] in its pool's tree, */
    uint32_t prio;       /* its priority there (a treap's heap order) */
    uint32_t sidx;       /* and its stream, as its index in gs_tc.streams */
    uint32_t prev, next; /* neighbours in the segment */
    uint32_t seg;        /* its expandable segment, or NONE */
    uint8_t small, allocated, mapped, used;
    uint8_t in_pool;     /* in its pool's tree of free or of unmapped blocks */
    uint8_t in_gc;       /* in the collection list */
    uint8_t gc_counted;  /* counted in the pool's gc_count, gc_base_sum */
    uint64_t requested;
};

_Static_assert(sizeof(struct tcb) == 64, "a block is a cache line");

struct tcgc { /* a block's side of garbage collection (kept whether it acts or not) */
    uint64_t base;       /* gc_count_base */
    uint32_t older, newer; /* its neighbours in the collection list */
};

/* The source's ordered sets (std::set with a comparator) as treaps whose
 * nodes are the blocks themselves: ordered by the keys of `order`, each
 * node's prio not below its children's. */
enum tcorder {
    BY_SIZE,    /* BlockComparatorSize: (stream, size, address), in a bin of one stream */
    BY_ADDRESS, /* BlockComparatorAddress: (stream, address) */
};

/* A pool's free blocks of one stream in BlockComparatorSize order, cut by
 * size into bins, each a treap: 16 bins per power of two from kMinBlockSize
 * up, each bin's sizes all below the next's; bits says which bins hold
 * blocks, words which words of bits do. A search goes down one small tree,
 * or to the next bin that holds blocks. */
#define BIN_SUB_LOG 4
#define NBINS ((64 - 9) << BIN_SUB_LOG)
#define NBINWORDS ((NBINS + 63) / 64)
struct tcbins {
    uint32_t root[NBINS];
    uint64_t bits[NBINWORDS];
    uint64_t words; /* which words of bits are not 0 */
};
struct tcstream { /* a stream's free blocks: [0] small pool, [1] large */
    uint64_t id;
    struct tcbins bins[2];
};

struct tcseg { /* an ExpandableSegment: one range of address space, mapped by pages */
    uint64_t base, size, page;
    uint8_t used;
};

struct ixs { /* an array of block indices */
    uint32_t *v;
    uint32_t n, cap;
};

struct tcpool { /* a BlockPool; its blocks (free, mapped) in gs_tc.streams' bins */
    uint32_t um; /* unmapped: the unmapped ranges of expandable segments, a tree BY_ADDRESS */
    /* Garbage collection's bookkeeping, kept as the source keeps it whether
     * the collection acts or not (so that a model made from this one for a
     * card with it on, gs_tc_clone, finds the ages): the large pool's free
     * unsplit blocks: gc_count of them and the sum of their gc_count_base (their
     * total age is gc_count * gfb_calls - gc_base_sum), and those of them
     * not of an expandable segment in a list by the time they were cached,
     * so by gc_count_base, oldest first (gs_tc.gc). */
    uint32_t gc_old, gc_new;
    uint64_t gc_count, gc_base_sum;
    uint64_t gfb_calls; /* get_free_blocks_call_count */
    int small;
};

struct gs_tc {
    struct gs_tc_config c;
    struct gs_tc_stats s;
    struct tcb *b;
    struct tcgc *gc; /* by block index */
    uint32_t nb, capb, free_slot; /* free_slot: a chain through .prev of unused slots */
    struct tcseg *seg;
    uint32_t nseg, capseg;
    struct tcpool pool[2]; /* [0] small, [1] large */
    struct gs_idmap *ids;  /* id -> block index */
    struct tcstream *streams; /* the streams seen, in the order seen */
    uint32_t nstreams, capstreams, last_sidx; /* last_sidx: the last one looked up */
    struct gs_idmap *sids; /* stream -> its index in streams */
    struct ixs scratch;    /* a snapshot of a pool's free blocks while releasing */
    uint64_t next_va;
    uint64_t max_split; /* UINT64_MAX when unlimited */
    uint64_t allowed;   /* allowed_memory_maximum, with set_fraction */
    uint64_t external;  /* device memory held outside the allocator (gs_tc_set_external) */
    int set_fraction, peak_pending;
    int gc_on; /* garbage_collection_threshold acts: set_fraction and a threshold */
    uint64_t rng; /* the treaps' priorities: a fixed-seed xorshift, reproducible */
    int err; /* the model's own memory ran out during this request */
};

/* ---- the configuration (CUDAAllocatorConfig) ---- */

void gs_tc_config_default(struct gs_tc_config *c)
{
    memset(c, 0, sizeof *c);
    c->torch = GS_TC_TORCH_NEWEST;
    c->max_non_split_rounding = K_LARGE_BUFFER; /* max_non_split_rounding_mb's default */
}

void gs_tc_config_pow2_all(struct gs_tc_config *c, uint32_t divisions)
{
    for (int i = 0; i < GS_TC_POW2_INTERVALS; i++)
        c->roundup_power2_divisions[i] = divisions;
}

int gs_tc_config_check(const struct gs_tc_config *c)
{
    if (c->torch > GS_TC_TORCH_PR193400)
        return -1;
    /* parseMaxSplitSize: at least 21 MiB before 2.10, 20 from it. */
    if (c->max_split_size && c->max_split_size < (uint64_t)gs_tc_torch_min_split_mb(c->torch) << 20)
        return -1;
    /* parseRoundUpPower2Divisions: each a power of two (0 or 1 off). */
    for (int i = 0; i < GS_TC_POW2_INTERVALS; i++) {
        uint32_t d = c->roundup_power2_divisions[i];
        if (d > 1 && (d & (d - 1)))
            return -1;
    }
    /* parseGarbageCollectionThreshold: 0 < threshold < 1. */
    if (c->gc_threshold != 0.0 && !(c->gc_threshold > 0.0 && c->gc_threshold < 1.0))
        return -1;
    if (c->memory_fraction != 0.0 && !(c->memory_fraction > 0.0 && c->memory_fraction <= 1.0))
        return -1;
    if (c->capacity > (1ull << 60) || c->total > (1ull << 60)) /* an exbibyte: the model's
                                                                 * address arithmetic stays exact */
        return -1;
    if (c->total && c->total < c->capacity)
        return -1;
    return 0;
}

/* The card's total memory: what PyTorch's fractions are of. */
static uint64_t card_total(const struct gs_tc_config *c) { return c->total ? c->total : c->capacity; }

/* ---- rounding: round_size, roundup_power2_next_division, get_allocation_size ---- */

static int log2_floor(uint64_t x) { return 63 - __builtin_clzll(x); }

/* CUDAAllocatorConfig::roundup_power2_divisions(size): the interval is
 * log2(size) - log2(1 MiB), 0 below 1 MiB, the last one for all above. */
static uint32_t pow2_divisions(const struct gs_tc_config *c, uint64_t size)
{
    int lg = log2_floor(size);
    int i = lg > K_POW2_START_LOG ? lg - K_POW2_START_LOG : 0;
    if (i > GS_TC_POW2_INTERVALS - 1)
        i = GS_TC_POW2_INTERVALS - 1;
    return c->roundup_power2_divisions[i];
}

/* roundup_power2_next_division: the power-of-two interval [2^k, 2^(k+1))
 * cut into `divisions` equal steps, size rounded up to the next step. */
static uint64_t pow2_next_division(uint64_t size, uint32_t divisions)
{
    if ((size & (size - 1)) == 0)
        return size;
    uint64_t floor2 = 1ull << log2_floor(size);
    uint64_t step = floor2 >> log2_floor(divisions);
    if (step == 0)
        return floor2 > UINT64_MAX / 2 ? UINT64_MAX : floor2 << 1;
    uint64_t r = size & ~(step - 1);
    if (r == size)
        return size;
    return r > UINT64_MAX - step ? UINT64_MAX : r + step;
}

static uint64_t round_up(uint64_t x, uint64_t unit)
{
    if (x > UINT64_MAX - (unit - 1))
        return UINT64_MAX;
    return (x + unit - 1) / unit * unit;
}

/* round_size: at least kMinBlockSize; with roundup_power2_divisions set for
 * the size's interval and size > kMinBlockSize * divisions, the next
 * division; else a multiple of 512. */
uint64_t gs_tc_round_size(const struct gs_tc_config *c, uint64_t size)
{
    if (size < K_MIN_BLOCK)
        return K_MIN_BLOCK;
    uint32_t d = pow2_divisions(c, size);
    if (d > 1 && size > K_MIN_BLOCK * d)
        return pow2_next_division(size, d);
    return round_up(size, K_MIN_BLOCK);
}

/* get_allocation_size: a 2 MiB segment for the small pool, 20 MiB for
 * requests under 10 MiB (kMinLargeAlloc), else rounded up to 2 MiB. */
uint64_t gs_tc_segment_size(uint64_t rounded)
{
    if (rounded <= K_SMALL_SIZE)
        return K_SMALL_BUFFER;
    if (rounded < K_MIN_LARGE_ALLOC)
        return K_LARGE_BUFFER;
    return round_up(rounded, K_ROUND_LARGE);
}

/* ---- blocks, pools ---- */

static int ixs_push(struct ixs *a, uint32_t v)
{
    if (a->n == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 16;
        uint32_t *nv = realloc(a->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return -1;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = v;
    return 0;
}

static uint32_t block_new(struct gs_tc *t)
{
    uint32_t i;
    if (t->free_slot != NONE) {
        i = t->free_slot;
        t->free_slot = t->b[i].prev;
    } else {
        if (t->nb == t->capb) {
            uint32_t cap = t->capb ? t->capb * 2 : 64;
            if (cap <= t->capb || cap == NONE) {
                t->err = 1;
                return NONE;
            }
            struct tcb *nb = aligned_alloc(64, (size_t)cap * sizeof *nb);
            struct tcgc *ng = realloc(t->gc, (size_t)cap * sizeof *ng);
            if (!nb || !ng) {
                free(nb);
                if (ng)
                    t->gc = ng;
                t->err = 1;
                return NONE;
            }
            if (t->nb)
                memcpy(nb, t->b, (size_t)t->nb * sizeof *nb);
            free(t->b);
            t->b = nb;
            t->gc = ng;
            t->capb = cap;
        }
        i = t->nb++;
    }
    memset(&t->b[i], 0, sizeof t->b[i]);
    t->b[i].prev = t->b[i].next = t->b[i].seg = NONE;
    t->b[i].ch[0] = t->b[i].ch[1] = NONE;
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    t->b[i].prio = (uint32_t)(t->rng >> 32);
    t->b[i].used = 1;
    t->s.live_blocks++;
    return i;
}

static void block_drop(struct gs_tc *t, uint32_t i)
{
    t->b[i].used = 0;
    t->b[i].prev = t->free_slot;
    t->free_slot = i;
    t->s.live_blocks--;
}

static struct tcpool *pool_of(struct gs_tc *t, uint32_t i) { return &t->pool[t->b[i].small ? 0 : 1]; }

/* ---- the ordered sets: treaps of blocks (enum tcorder) ---- */

/* BlockComparatorSize: (stream, size, address), here within one stream's
 * bins. */
static int size_less(const struct tcb *x, const struct tcb *y)
{
    if (x->size != y->size)
        return x->size < y->size;
    return x->addr < y->addr;
}

static int tree_less(enum tcorder o, const struct tcb *x, const struct tcb *y)
{
    if (o == BY_SIZE)
        return size_less(x, y);
    if (x->sidx != y->sidx) /* streams in the order first seen: only one's blocks are walked */
        return x->sidx < y->sidx;
    return x->addr < y->addr;
}

#define CH(u) (t->b[(u)].ch)

/* Inserts block i (not in the tree): down the search path while the
 * nodes' priorities are higher, there the subtree split around i. */
static void tree_insert(struct gs_tc *t, enum tcorder o, uint32_t *root, uint32_t i)
{
    const struct tcb *x = &t->b[i];
    uint32_t *link = root;
    while (*link != NONE && t->b[*link].prio > x->prio)
        link = &CH(*link)[tree_less(o, x, &t->b[*link]) ? 0 : 1];
    uint32_t u = *link, *l = &CH(i)[0], *r = &CH(i)[1];
    *link = i;
    while (u != NONE) {
        if (tree_less(o, &t->b[u], x)) {
            *l = u;
            l = &CH(u)[1];
            u = *l;
        } else {
            *r = u;
            r = &CH(u)[0];
            u = *r;
        }
    }
    *l = *r = NONE;
}

/* Removes block i (in the tree, its keys as when inserted): its place
 * taken by its subtrees merged. */
static void tree_erase(struct gs_tc *t, enum tcorder o, uint32_t *root, uint32_t i)
{
    const struct tcb *x = &t->b[i];
    uint32_t *link = root;
    while (*link != i) {
        if (*link == NONE)
            return; /* not reached: i is in the tree */
        link = &CH(*link)[tree_less(o, x, &t->b[*link]) ? 0 : 1];
    }
    uint32_t a = CH(i)[0], b = CH(i)[1];
    while (a != NONE && b != NONE) {
        if (t->b[a].prio > t->b[b].prio) {
            *link = a;
            link = &CH(a)[1];
            a = *link;
        } else {
            *link = b;
            link = &CH(b)[0];
            b = *link;
        }
    }
    *link = a != NONE ? a : b;
    CH(i)[0] = CH(i)[1] = NONE;
}

/* The first block not less than the key (lower_bound, after=0) or greater
 * than it (upper_bound, after=1); NONE at the end. */
static uint32_t tree_after(const struct gs_tc *t, enum tcorder o, uint32_t root,
                           const struct tcb *key, int after)
{
    uint32_t u = root, best = NONE;
    while (u != NONE) {
        if (after ? tree_less(o, key, &t->b[u]) : !tree_less(o, &t->b[u], key)) {
            best = u;
            u = CH(u)[0];
        } else {
            u = CH(u)[1];
        }
    }
    return best;
}

/* The last block less than the key (std::prev of lower_bound); NONE when none is. */
static uint32_t tree_before(const struct gs_tc *t, enum tcorder o, uint32_t root,
                            const struct tcb *key)
{
    uint32_t u = root, best = NONE;
    while (u != NONE) {
        if (tree_less(o, &t->b[u], key)) {
            best = u;
            u = CH(u)[1];
        } else {
            u = CH(u)[0];
        }
    }
    return best;
}

/* The first (dir 0) or last (dir 1) block of a tree. */
static uint32_t tree_end(const struct gs_tc *t, uint32_t u, int dir)
{
    if (u != NONE)
        while (CH(u)[dir] != NONE)
            u = CH(u)[dir];
    return u;
}

/* The blocks of the subtree at u in order onto the array. */
static int tree_collect(struct gs_tc *t, uint32_t u, struct ixs *a)
{
    while (u != NONE) {
        if (tree_collect(t, CH(u)[0], a) < 0 || ixs_push(a, u) < 0)
            return -1;
        u = CH(u)[1];
    }
    return 0;
}

/* gs_tc_check's: the subtree at u ordered within (lo, hi) (NONE: open), its
 * priorities a heap, its blocks cached and mapped (BY_SIZE) or not
 * (BY_ADDRESS); its size added to *n. 0 when all holds. */
static int tree_check(const struct gs_tc *t, enum tcorder o, uint32_t u, uint32_t lo,
                      uint32_t hi, uint64_t *n)
{
    if (u == NONE)
        return 0;
    if (u >= t->nb || ++*n > t->nb)
        return -1;
    const struct tcb *x = &t->b[u];
    if (!x->used || x->allocated || !x->in_pool || (o == BY_SIZE) != x->mapped)
        return -1;
    if ((lo != NONE && !tree_less(o, &t->b[lo], x)) || (hi != NONE && !tree_less(o, x, &t->b[hi])))
        return -1;
    for (int d = 0; d < 2; d++)
        if (CH(u)[d] != NONE && (CH(u)[d] >= t->nb || t->b[CH(u)[d]].prio > x->prio))
            return -1;
    if (tree_check(t, o, CH(u)[0], lo, u, n) < 0)
        return -1;
    return tree_check(t, o, CH(u)[1], u, hi, n);
}

#undef CH

/* ---- the free blocks by stream and size (struct tcbins) ---- */

/* The bin of a size (from kMinBlockSize up): its power of two and the next
 * BIN_SUB_LOG bits below the top one. */
static uint32_t size_bin(uint64_t size)
{
    if (size < K_MIN_BLOCK)
        return 0;
    int lg = log2_floor(size);
    uint32_t sub = (uint32_t)(size >> (lg - BIN_SUB_LOG)) % (1u << BIN_SUB_LOG);
    return (uint32_t)(lg - 9) << BIN_SUB_LOG | sub;
}

/* The first bin from `from` up (dir 0) or down (dir 1) that holds blocks;
 * NONE when none does. */
static uint32_t next_bin(const struct tcbins *bs, uint32_t from, int dir)
{
    if (from >= NBINS)
        return NONE;
    uint32_t w = from / 64;
    uint64_t m = bs->bits[w] & (dir ? ~0ull >> (63 - from % 64) : ~0ull << (from % 64));
    if (!m) {
        uint64_t ws = bs->words & (dir ? (1ull << w) - 1 : ~0ull << w << 1);
        if (!ws)
            return NONE;
        w = dir ? (uint32_t)log2_floor(ws) : (uint32_t)__builtin_ctzll(ws);
        m = bs->bits[w];
    }
    return w * 64 + (dir ? (uint32_t)log2_floor(m) : (uint32_t)__builtin_ctzll(m));
}

/* The stream's index in t->streams, made on first sight (create); NONE
 * when it has none or the model's memory ran out. */
static uint32_t stream_index(struct gs_tc *t, uint64_t stream, int create)
{
    if (t->last_sidx < t->nstreams && t->streams[t->last_sidx].id == stream)
        return t->last_sidx;
    uint64_t v;
    if (gs_idmap_get(t->sids, stream, &v) == 0)
        return t->last_sidx = (uint32_t)v;
    if (!create)
        return NONE;
    if (t->nstreams == t->capstreams) {
        uint32_t cap = t->capstreams ? t->capstreams * 2 : 2;
        struct tcstream *ns = realloc(t->streams, (size_t)cap * sizeof *ns);
        if (!ns)
            goto nomem;
        t->streams = ns;
        t->capstreams = cap;
    }
    if (gs_idmap_put(t->sids, stream, t->nstreams) < 0)
        goto nomem;
    struct tcstream *st = &t->streams[t->nstreams];
    memset(st, 0, sizeof *st);
    memset(st->bins[0].root, 0xff, sizeof st->bins[0].root);
    memset(st->bins[1].root, 0xff, sizeof st->bins[1].root);
    st->id = stream;
    return t->last_sidx = t->nstreams++;
nomem:
    t->err = 1;
    return NONE;
}

static struct tcbins *bins_of(struct gs_tc *t, const struct tcb *x)
{
    return &t->streams[x->sidx].bins[x->small ? 0 : 1];
}

/* In the free blocks of the pool (small) and key's stream: the first block not
 * less than the key (after=0), or greater (after=1), or the last less
 * (before); NONE when there is none of that stream. */
static uint32_t bins_find(struct gs_tc *t, int small, const struct tcb *key, int after, int before)
{
    const struct tcbins *bs = &t->streams[key->sidx].bins[small ? 0 : 1];
    uint32_t b = size_bin(key->size);
    uint32_t u = before ? tree_before(t, BY_SIZE, bs->root[b], key)
                        : tree_after(t, BY_SIZE, bs->root[b], key, after);
    if (u != NONE)
        return u;
    b = before ? (b ? next_bin(bs, b - 1, 1) : NONE) : next_bin(bs, b + 1, 0);
    return b == NONE ? NONE : tree_end(t, bs->root[b], before);
}

/* ---- blocks, pools ---- */

static int is_split(const struct tcb *x) { return x->prev != NONE || x->next != NONE; }

/* BlockPool::insert_into_blocks (a free block gets its gc_count_base), or
 * pool.unmapped.insert for an unmapped one. */
static void pool_insert(struct gs_tc *t, uint32_t i)
{
    struct tcpool *p = pool_of(t, i);
    struct tcb *x = &t->b[i];
    x->in_pool = 1;
    if (!x->mapped) {
        tree_insert(t, BY_ADDRESS, &p->um, i);
        return;
    }
    struct tcbins *bs = bins_of(t, x);
    uint32_t b = size_bin(x->size);
    tree_insert(t, BY_SIZE, &bs->root[b], i);
    bs->bits[b / 64] |= 1ull << (b % 64);
    bs->words |= 1ull << (b / 64);
    if (!p->small && !is_split(x)) {
        struct tcgc *g = &t->gc[i];
        g->base = p->gfb_calls;
        x->gc_counted = 1;
        p->gc_count++;
        p->gc_base_sum += g->base;
        if (x->seg == NONE) { /* appended: the newest */
            x->in_gc = 1;
            g->older = p->gc_new;
            g->newer = NONE;
            *(p->gc_new != NONE ? &t->gc[p->gc_new].newer : &p->gc_old) = i;
            p->gc_new = i;
        }
    }
}

static void pool_erase(struct gs_tc *t, uint32_t i)
{
    struct tcpool *p = pool_of(t, i);
    struct tcb *x = &t->b[i];
    if (!x->in_pool)
        return;
    x->in_pool = 0;
    if (!x->mapped) {
        tree_erase(t, BY_ADDRESS, &p->um, i);
        return;
    }
    struct tcbins *bs = bins_of(t, x);
    uint32_t b = size_bin(x->size);
    tree_erase(t, BY_SIZE, &bs->root[b], i);
    if (bs->root[b] == NONE && !(bs->bits[b / 64] &= ~(1ull << (b % 64))))
        bs->words &= ~(1ull << (b / 64));
    if (x->gc_counted) {
        x->gc_counted = 0;
        p->gc_count--;
        p->gc_base_sum -= t->gc[i].base;
    }
    if (x->in_gc) {
        x->in_gc = 0;
        uint32_t o = t->gc[i].older, n = t->gc[i].newer;
        *(o != NONE ? &t->gc[o].newer : &p->gc_old) = n;
        *(n != NONE ? &t->gc[n].older : &p->gc_new) = o;
    }
}

/* pool.blocks.lower_bound((stream, size, 0)): the first free block not less
 * than the key; here NONE rather than a block of another stream (every
 * caller takes such a block for none). */
static uint32_t lower_bound(struct gs_tc *t, struct tcpool *p, uint32_t si, uint64_t size)
{
    struct tcb k = {.sidx = si, .size = size, .addr = 0};
    return bins_find(t, p->small, &k, 0, 0);
}

/* The block after (successor) or before (predecessor) `of` in the pool's
 * order, of its stream (NONE for one of another, as above). */
static uint32_t neighbour_in_order(struct gs_tc *t, struct tcpool *p, const struct tcb *of,
                                   int after)
{
    return bins_find(t, p->small, of, after, !after);
}

static void reserve_add(struct gs_tc *t, uint64_t n)
{
    t->s.reserved += n;
    if (t->s.reserved > t->s.reserved_peak) {
        t->s.reserved_peak = t->s.reserved;
        t->peak_pending = 1;
    }
}

/* Block i's size is new: the largest mapped block there has been (what
 * max_split_size's rules compare with) is kept. */
static void note_size(struct gs_tc *t, uint32_t i)
{
    if (t->b[i].mapped && t->b[i].size > t->s.block_max)
        t->s.block_max = t->b[i].size;
}

/* try_merge_blocks: src into dst when src is free and mapped alike. */
static void try_merge(struct gs_tc *t, uint32_t dst, uint32_t src)
{
    if (src == NONE || t->b[src].allocated || t->b[src].mapped != t->b[dst].mapped)
        return;
    struct tcb *d = &t->b[dst], *s = &t->b[src];
    if (d->prev == src) {
        d->addr = s->addr;
        d->prev = s->prev;
        if (d->prev != NONE)
            t->b[d->prev].next = dst;
    } else {
        d->next = s->next;
        if (d->next != NONE)
            t->b[d->next].prev = dst;
    }
    d->size += s->size;
    pool_erase(t, src);
    block_drop(t, src);
    note_size(t, dst);
}

/* A new block in the same segment right before (before=1) or after `at`. */
static uint32_t block_splice(struct gs_tc *t, uint32_t at, int before, uint64_t addr,
                             uint64_t size, int mapped)
{
    uint32_t n = block_new(t);
    if (n == NONE)
        return NONE;
    struct tcb *a = &t->b[at], *x = &t->b[n];
    x->addr = addr;
    x->size = size;
    x->sidx = a->sidx;
    x->small = a->small;
    x->seg = a->seg;
    x->mapped = (uint8_t)mapped;
    if (before) {
        x->prev = a->prev;
        x->next = at;
        if (x->prev != NONE)
            t->b[x->prev].next = n;
        a->prev = n;
    } else {
        x->next = a->next;
        x->prev = at;
        if (x->next != NONE)
            t->b[x->next].prev = n;
        a->next = n;
    }
    return n;
}

/* release_block: cudaFree of a whole (unsplit) cached segment. */
static void release_block(struct gs_tc *t, uint32_t i)
{
    t->s.reserved -= t->b[i].size;
    t->s.segment_frees++;
    t->s.num_device_free++;
    pool_erase(t, i);
    block_drop(t, i);
}

/* The device cannot give bytes more: the card's capacity less what the
 * allocator reserved and what is held outside it. */
static int device_full(const struct gs_tc *t, uint64_t bytes)
{
    uint64_t held = t->s.reserved + t->external;
    return t->c.capacity && (held < t->s.reserved || held > t->c.capacity ||
                             bytes > t->c.capacity - held);
}

/* ---- expandable segments (ExpandableSegment and the allocator's use of it) ---- */

/* ExpandableSegment::map: the pages covering [addr, addr+size) are created
 * and mapped (cuMemCreate + cuMemMap a page each), all or none.
 * map_block: the block becomes mapped, what is left of it beyond the pages
 * stays unmapped, and it merges with its free neighbours. */
static int map_block(struct gs_tc *t, uint32_t i, uint64_t size)
{
    struct tcseg *g = &t->seg[t->b[i].seg];
    uint64_t off = t->b[i].addr - g->base;
    uint64_t begin = off / g->page, end = (off + size + g->page - 1) / g->page;
    uint64_t bytes = (end - begin) * g->page;
    if (bytes > t->b[i].size)
        bytes = t->b[i].size;
    if (device_full(t, bytes))
        return 0; /* cuMemCreate: out of memory */
    pool_erase(t, i);
    t->b[i].mapped = 1;
    if (bytes < t->b[i].size) {
        uint32_t rest = block_splice(t, i, 0, t->b[i].addr + bytes, t->b[i].size - bytes, 0);
        if (rest == NONE)
            return 0;
        t->b[i].size = bytes;
        pool_insert(t, rest);
    }
    try_merge(t, i, t->b[i].prev);
    try_merge(t, i, t->b[i].next);
    note_size(t, i);
    pool_insert(t, i);
    reserve_add(t, bytes);
    t->s.segment_allocs += bytes / g->page;
    t->s.num_device_alloc++; /* map_block: stats.num_device_alloc++, once whatever the pages */
    return 1;
}

/* ExpandableSegment::unmap: the whole pages inside the free block go;
 * unmap_block: the parts before and after them stay free and mapped, the
 * unmapped part merges with unmapped neighbours. */
static void unmap_block(struct gs_tc *t, uint32_t i)
{
    struct tcseg *g = &t->seg[t->b[i].seg];
    uint64_t off = t->b[i].addr - g->base, endoff = off + t->b[i].size;
    uint64_t begin = (off + g->page - 1) / g->page, end = endoff / g->page;
    if (begin >= end)
        return;
    pool_erase(t, i);
    uint64_t before = begin * g->page - off, after = endoff - end * g->page;
    if (before) {
        uint32_t x = block_splice(t, i, 1, t->b[i].addr, before, 1);
        if (x != NONE)
            pool_insert(t, x);
    }
    if (after) {
        uint32_t x = block_splice(t, i, 0, g->base + end * g->page, after, 1);
        if (x != NONE)
            pool_insert(t, x);
    }
    uint64_t bytes = (end - begin) * g->page;
    t->b[i].addr = g->base + begin * g->page;
    t->b[i].size = bytes;
    t->b[i].mapped = 0;
    try_merge(t, i, t->b[i].prev);
    try_merge(t, i, t->b[i].next);
    pool_insert(t, i);
    t->s.reserved -= bytes;
    t->s.segment_frees += end - begin;
    t->s.num_device_free++; /* unmap_block: stats.num_device_free++, once */
}

static int allocatable(struct gs_tc *t, uint32_t i) { return i != NONE && !t->b[i].allocated; }

/* find_expandable_block's has_available_address_space. */
static int has_space(struct gs_tc *t, uint32_t i, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && allocatable(t, i)) {
        bytes += t->b[i].size;
        i = t->b[i].next;
    }
    return bytes >= size;
}

/* find_expandable_block: the unmapped ranges of the stream's segments in
 * address order, each with the free block before it; the first with room.
 * Else a new segment: address space for 1 1/8 of the card's total memory
 * (ExpandableSegment's constructor: max_handles_ = numSegments(
 * prop.totalGlobalMem + prop.totalGlobalMem / 8)), in pages of
 * kSmallBuffer (small pool) or kLargeBuffer (large pool). */
static uint32_t find_expandable_block(struct gs_tc *t, struct tcpool *p, uint32_t si,
                                      uint64_t size)
{
    struct tcb key = {.sidx = si, .addr = 0};
    for (uint32_t u = tree_after(t, BY_ADDRESS, p->um, &key, 0); u != NONE && t->b[u].sidx == si;
         u = tree_after(t, BY_ADDRESS, p->um, &t->b[u], 1)) {
        uint32_t c = allocatable(t, t->b[u].prev) ? t->b[u].prev : u;
        if (has_space(t, c, size))
            return c;
    }

    /* Every segment's range the same size (a multiple of both pages), so a
     * released segment's range is taken again with its slot: the model's
     * address space stays bounded by the live segments. */
    uint64_t page = p->small ? K_SMALL_BUFFER : K_LARGE_BUFFER;
    uint64_t total = card_total(&t->c);
    uint64_t space = total ? total + total / 8 : (1ull << 44);
    space = round_up(space, K_LARGE_BUFFER);
    if (size > space)
        return NONE;
    if (t->nseg == t->capseg) {
        uint32_t cap = t->capseg ? t->capseg * 2 : 8;
        struct tcseg *ns = realloc(t->seg, (size_t)cap * sizeof *ns);
        if (!ns) {
            t->err = 1;
            return NONE;
        }
        t->seg = ns;
        t->capseg = cap;
    }
    uint32_t gi = t->nseg; /* a released segment's slot is reused */
    for (uint32_t k = 0; k < t->nseg; k++)
        if (!t->seg[k].used) {
            gi = k;
            break;
        }
    uint64_t base;
    if (gi == t->nseg) {
        if (t->next_va > UINT64_MAX - space - K_LARGE_BUFFER)
            return NONE;
        base = t->next_va;
        t->next_va += space + K_LARGE_BUFFER;
        t->nseg++;
    } else {
        base = t->seg[gi].base;
    }
    t->seg[gi] = (struct tcseg){.base = base, .size = space, .page = page, .used = 1};
    uint32_t c = block_new(t);
    if (c == NONE)
        return NONE;
    t->b[c].addr = t->seg[gi].base;
    t->b[c].size = space;
    t->b[c].sidx = si;
    t->b[c].small = (uint8_t)p->small;
    t->b[c].seg = gi;
    pool_insert(t, c);
    return c;
}

/* try_allocate_expandable_block: map the candidate's first pages if it is
 * unmapped, then map following unmapped ranges into it until it holds
 * size; the block leaves the free pool. */
static uint32_t try_allocate_expandable(struct gs_tc *t, struct tcpool *p, uint32_t si,
                                        uint64_t size)
{
    uint32_t c = find_expandable_block(t, p, si, size);
    if (c == NONE)
        return NONE;
    if (!t->b[c].mapped && !map_block(t, c, size < t->b[c].size ? size : t->b[c].size))
        return NONE;
    while (t->b[c].size < size) {
        uint32_t n = t->b[c].next;
        if (n == NONE || t->b[n].mapped || t->b[n].allocated)
            return NONE;
        uint64_t rem = size - t->b[c].size;
        if (!map_block(t, n, rem < t->b[n].size ? rem : t->b[n].size))
            return NONE;
        c = n; /* map_block merged c into n */
    }
    pool_erase(t, c);
    return c;
}

/* ---- the allocator's steps ---- */

/* get_free_block: the best fit of the stream in the pool; with expandable
 * segments a block's "size" for the fit counts the unmapped range after it;
 * then the max_split_size oversize rules (2.12: source L3436-L3439, applied
 * to every block; PR #193400: not to blocks of expandable segments). */
static uint32_t get_free_block(struct gs_tc *t, struct tcpool *p, uint32_t si, uint64_t size)
{
    p->gfb_calls++;
    uint32_t it = lower_bound(t, p, si, size);
    if (it == NONE || t->b[it].sidx != si)
        return NONE;
    if (t->b[it].seg != NONE && t->c.expandable_segments) {
        for (;;) {
            uint32_t nx = neighbour_in_order(t, p, &t->b[it], 1);
            if (t->b[it].seg == NONE || nx == NONE || t->b[nx].sidx != si)
                break;
            uint32_t a = t->b[nx].next, z = t->b[it].next;
            uint64_t es_nx = t->b[nx].size + (a != NONE && !t->b[a].mapped ? t->b[a].size : 0);
            uint64_t es_it = t->b[it].size + (z != NONE && !t->b[z].mapped ? t->b[z].size : 0);
            if (!(es_nx < es_it))
                break;
            it = nx;
        }
    }
    int rules = !(t->c.torch >= GS_TC_TORCH_PR193400 && t->b[it].seg != NONE);
    if (rules) {
        uint64_t bs = t->b[it].size;
        if (size < t->max_split && bs >= t->max_split)
            return NONE; /* no oversized block for a small request */
        if (size >= t->max_split && size <= UINT64_MAX - t->c.max_non_split_rounding &&
            bs >= size + t->c.max_non_split_rounding)
            return NONE; /* nor one too much bigger for a large request */
    }
    pool_erase(t, it);
    return it;
}

/* garbage_collect_cached_blocks: with a memory fraction set and reserved
 * over threshold * allowed, free unsplit cached blocks of the large pool
 * at least as old (get_free_block calls since freed) as the average, until
 * reserved - threshold * allowed is reclaimed. */
static void garbage_collect(struct gs_tc *t)
{
    if (!t->gc_on)
        return;
    struct tcpool *p = &t->pool[1];
    uint64_t thr = (uint64_t)(t->c.gc_threshold * (double)t->allowed);
    if (t->s.reserved <= thr)
        return;
    /* The total age of the unsplit cached blocks (expandable ones too), as
     * the source sums it block by block (mod 2^64 alike). */
    uint64_t target = t->s.reserved - thr, reclaimed = 0, count = p->gc_count;
    uint64_t total_age = count * p->gfb_calls - p->gc_base_sum;
    int freed = 1;
    while (reclaimed < target && freed && count > 0) {
        double age_thr = (double)total_age / (double)count;
        freed = 0;
        /* Every freeable block at least that old, whatever the order: the
         * oldest first, down the age order while they are. */
        uint32_t i;
        while ((i = p->gc_old) != NONE) {
            uint64_t age = p->gfb_calls - t->gc[i].base;
            if (!((double)age >= age_thr))
                break;
            freed = 1;
            reclaimed += t->b[i].size;
            total_age -= age;
            count--;
            t->s.gc_frees++;
            release_block(t, i);
        }
    }
}

/* alloc_block: a new segment (cudaMalloc of get_allocation_size), or with
 * expandable segments pages mapped; a retry is counted (stats
 * num_alloc_retries). The memory fraction refuses first. */
static uint32_t alloc_block(struct gs_tc *t, struct tcpool *p, uint32_t si, uint64_t size,
                            uint64_t alloc_size, int retry)
{
    if (retry)
        t->s.oom_retries++;
    if (t->set_fraction && (t->s.reserved > t->allowed || alloc_size > t->allowed - t->s.reserved))
        return NONE;
    if (t->c.expandable_segments)
        return try_allocate_expandable(t, p, si, size);
    if (device_full(t, alloc_size))
        return NONE; /* cudaMalloc: out of memory */
    if (t->next_va > UINT64_MAX - alloc_size - K_ROUND_LARGE)
        return NONE;
    uint32_t i = block_new(t);
    if (i == NONE)
        return NONE;
    t->b[i].sidx = si;
    t->b[i].addr = t->next_va;
    t->next_va += alloc_size + K_ROUND_LARGE;
    t->b[i].size = alloc_size;
    t->b[i].small = (uint8_t)p->small;
    t->b[i].mapped = 1;
    note_size(t, i);
    reserve_add(t, alloc_size);
    t->s.segment_allocs++;
    t->s.num_device_alloc++;
    return i;
}

/* release_available_cached_blocks (max_split_size set): free one cached
 * unsplit block of the stream at least max(size, max_split_size) big, or
 * else the stream's oversize blocks from the largest down until that much
 * is freed; blocks of expandable segments are skipped. */
static int release_available(struct gs_tc *t, struct tcpool *p, uint32_t si, uint64_t size)
{
    if (t->max_split == UINT64_MAX)
        return 0;
    uint64_t key = size < t->max_split ? t->max_split : size;
    uint32_t it = lower_bound(t, p, si, key);
    if (it == NONE || t->b[it].sidx != si || t->b[it].seg != NONE) {
        struct tcb k = {.sidx = si, .size = key, .addr = 0};
        uint32_t cur = neighbour_in_order(t, p, &k, 0);
        if (cur == NONE)
            return 0;
        uint64_t total = 0;
        while (total < key && t->b[cur].size >= t->max_split && t->b[cur].sidx == si) {
            uint32_t before = neighbour_in_order(t, p, &t->b[cur], 0);
            /* The source frees any such block; one split in two is not
             * reachable with max_split_size_mb > 20 and is kept here. */
            if (t->b[cur].seg == NONE && !is_split(&t->b[cur])) {
                total += t->b[cur].size;
                release_block(t, cur);
            }
            if (before == NONE)
                break;
            cur = before;
        }
        return total >= key;
    }
    if (is_split(&t->b[it]))
        return 0;
    release_block(t, it);
    return 1;
}

/* release_blocks: every unsplit cached segment freed; the free blocks of
 * expandable segments unmapped, a segment left all unmapped released. */
static void release_pool(struct gs_tc *t, struct tcpool *p)
{
    t->scratch.n = 0;
    for (uint32_t si = 0; si < t->nstreams; si++) {
        const struct tcbins *bs = &t->streams[si].bins[p->small ? 0 : 1];
        for (uint32_t b = next_bin(bs, 0, 0); b != NONE; b = next_bin(bs, b + 1, 0))
            if (tree_collect(t, bs->root[b], &t->scratch) < 0) {
                t->err = 1;
                return;
            }
    }
    uint32_t n = t->scratch.n;
    for (uint32_t k = 0; k < n; k++) { /* the segments first, expandable ones kept */
        uint32_t i = t->scratch.v[k];
        if (t->b[i].seg == NONE && !is_split(&t->b[i]))
            release_block(t, i);
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = t->scratch.v[k];
        if (!t->b[i].used || t->b[i].seg == NONE || !t->b[i].mapped || t->b[i].allocated)
            continue;
        unmap_block(t, i);
        if (!t->b[i].mapped && !is_split(&t->b[i])) { /* release_expandable_segment */
            t->seg[t->b[i].seg].used = 0;
            pool_erase(t, i);
            block_drop(t, i);
        }
    }
}

/* release_cached_blocks: what an OOM retry and empty_cache do (after a
 * device synchronise): the large pool, then the small. */
static void release_cached(struct gs_tc *t)
{
    release_pool(t, &t->pool[1]);
    release_pool(t, &t->pool[0]);
}

/* alloc_found_block: split when should_split says so - the small pool, or
 * any pool with expandable segments, at a remainder >= kMinBlockSize; the
 * large pool at a remainder > kSmallSize for a request under
 * max_split_size. The remainder stays cached. */
static void alloc_found(struct gs_tc *t, uint32_t *bi, uint64_t size, uint64_t orig)
{
    uint32_t i = *bi;
    uint64_t rem = t->b[i].size - size;
    int split = (t->b[i].small || t->c.expandable_segments) ? rem >= K_MIN_BLOCK
                                                            : size < t->max_split && rem > K_SMALL_SIZE;
    if (split) {
        uint32_t n = block_splice(t, i, 1, t->b[i].addr, size, 1);
        if (n != NONE) {
            t->b[i].addr += size;
            t->b[i].size -= size;
            pool_insert(t, i);
            i = n;
        }
    }
    t->b[i].allocated = 1;
    t->b[i].requested = orig;
    t->s.allocated += t->b[i].size;
    t->s.requested += orig;
    if (t->s.allocated > t->s.allocated_peak)
        t->s.allocated_peak = t->s.allocated;
    *bi = i;
}

/* free_block: merge with free neighbours, back to the pool. */
static void free_block(struct gs_tc *t, uint32_t i)
{
    t->s.allocated -= t->b[i].size;
    t->s.requested -= t->b[i].requested;
    t->b[i].allocated = 0;
    try_merge(t, i, t->b[i].prev);
    try_merge(t, i, t->b[i].next);
    pool_insert(t, i);
}

/* After each request: reserved but not allocated while reserved stands at
 * its peak, the least of it (a new peak starts over). What the peak holds
 * beyond the blocks at their fullest during it; taken when the peak was
 * first reached, it said 16 MiB beside a peak of 36 MiB that 36 MiB of
 * blocks filled a request later. */
static void end_request(struct gs_tc *t)
{
    uint64_t idle = t->s.reserved - t->s.allocated;
    if (t->peak_pending) {
        t->s.unallocated_at_peak = t->s.reserved_peak - t->s.allocated;
        t->peak_pending = 0;
    } else if (t->s.reserved == t->s.reserved_peak && idle < t->s.unallocated_at_peak) {
        t->s.unallocated_at_peak = idle;
    }
}

/* ---- the interface ---- */

/* The configuration and what follows from it (CUDAAllocatorConfig, and
 * set_per_process_memory_fraction's allowed_memory_maximum: the fraction
 * of the device's total memory, DeviceCachingAllocator::setMemoryFraction,
 * `static_cast<size_t>(fraction * device_total)` of cudaMemGetInfo's total
 * in the older source, of device_prop.totalGlobalMem in the newer; never
 * of what is free, and the context is not taken from it). */
static void configure(struct gs_tc *t, const struct gs_tc_config *c)
{
    t->c = *c;
    t->max_split = c->max_split_size ? c->max_split_size : UINT64_MAX;
    t->set_fraction = c->memory_fraction > 0.0 && c->capacity > 0 &&
                      !(gs_tc_torch_fraction_optional(c->torch) && c->memory_fraction >= 1.0);
    t->allowed =
        t->set_fraction ? (uint64_t)(c->memory_fraction * (double)card_total(c)) : 0;
    t->gc_on = t->set_fraction && c->gc_threshold > 0.0;
}

struct gs_tc *gs_tc_new(const struct gs_tc_config *c)
{
    if (gs_tc_config_check(c) < 0)
        return NULL;
    struct gs_tc *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ids = gs_idmap_new();
    t->sids = gs_idmap_new();
    if (!t->ids || !t->sids) {
        gs_idmap_free(t->ids);
        gs_idmap_free(t->sids);
        free(t);
        return NULL;
    }
    t->free_slot = NONE;
    t->rng = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < 2; k++) {
        struct tcpool *p = &t->pool[k];
        p->small = k == 0;
        p->um = NONE;
        p->gc_old = p->gc_new = NONE;
    }
    t->next_va = 1ull << 32;
    configure(t, c);
    return t;
}

struct gs_tc *gs_tc_clone(const struct gs_tc *t, const struct gs_tc_config *c)
{
    if (gs_tc_config_check(c) < 0)
        return NULL;
    struct gs_tc *n = malloc(sizeof *n);
    if (!n)
        return NULL;
    *n = *t;
    n->b = NULL;
    n->gc = NULL;
    n->seg = NULL;
    n->streams = NULL;
    n->scratch = (struct ixs){0};
    n->ids = gs_idmap_copy(t->ids);
    n->sids = gs_idmap_copy(t->sids);
    if (t->capb) {
        n->b = aligned_alloc(64, (size_t)t->capb * sizeof *n->b);
        n->gc = malloc((size_t)t->capb * sizeof *n->gc);
        if (n->b)
            memcpy(n->b, t->b, (size_t)t->nb * sizeof *n->b);
        if (n->gc)
            memcpy(n->gc, t->gc, (size_t)t->nb * sizeof *n->gc);
    }
    if (t->capseg && (n->seg = malloc((size_t)t->capseg * sizeof *n->seg)) != NULL)
        memcpy(n->seg, t->seg, (size_t)t->nseg * sizeof *n->seg);
    if (t->capstreams && (n->streams = malloc((size_t)t->capstreams * sizeof *n->streams)))
        memcpy(n->streams, t->streams, (size_t)t->nstreams * sizeof *n->streams);
    if (!n->ids || !n->sids || (t->capb && (!n->b || !n->gc)) || (t->capseg && !n->seg) ||
        (t->capstreams && !n->streams)) {
        gs_tc_free(n);
        return NULL;
    }
    configure(n, c);
    return n;
}

void gs_tc_free(struct gs_tc *t)
{
    if (!t)
        return;
    gs_idmap_free(t->ids);
    gs_idmap_free(t->sids);
    free(t->streams);
    free(t->b);
    free(t->gc);
    free(t->seg);
    free(t->scratch.v);
    free(t);
}

static int oom(struct gs_tc *t, uint64_t size)
{
    if (!t->s.ooms++) {
        t->s.first_oom_request = t->s.requests - 1;
        t->s.first_oom_size = size;
    }
    end_request(t);
    return GS_TC_OOM;
}

/* DeviceCachingAllocator::malloc: the pool by the rounded size, the cached
 * fit, else garbage collection, a new segment, the oversize cached blocks
 * freed and a new one, all unsplit cached blocks freed and a new one (the
 * retry), else out of memory. */
/* DeviceCachingAllocator::malloc: the block for a request, in *out (a
 * block index, GS_TC_HANDLE_ZERO for size 0). */
static int malloc_block(struct gs_tc *t, uint64_t size, uint64_t stream, uint32_t *out)
{
    if (size == 0) {
        *out = GS_TC_HANDLE_ZERO;
        return GS_TC_OK;
    }
    uint64_t rs = gs_tc_round_size(&t->c, size);
    uint64_t as = gs_tc_segment_size(rs);
    if (rs == UINT64_MAX || as == UINT64_MAX)
        return oom(t, size);
    struct tcpool *p = &t->pool[rs <= K_SMALL_SIZE ? 0 : 1];
    uint32_t si = stream_index(t, stream, 1);
    if (si == NONE)
        return GS_TC_NOMEM;
    uint32_t bi = get_free_block(t, p, si, rs);
    if (bi == NONE) {
        garbage_collect(t);
        bi = alloc_block(t, p, si, rs, as, 0);
        if (bi == NONE && release_available(t, p, si, rs))
            bi = alloc_block(t, p, si, rs, as, 0);
        if (bi == NONE) {
            release_cached(t);
            bi = alloc_block(t, p, si, rs, as, 1);
        }
    }
    if (t->err)
        return GS_TC_NOMEM;
    if (bi == NONE)
        return oom(t, size);
    alloc_found(t, &bi, rs, size);
    if (t->err) {
        free_block(t, bi);
        end_request(t);
        return GS_TC_NOMEM;
    }
    end_request(t);
    *out = bi;
    return GS_TC_OK;
}

int gs_tc_alloc(struct gs_tc *t, uint64_t id, uint64_t size, uint64_t stream)
{
    uint64_t v;
    uint32_t bi;
    t->s.requests++;
    t->err = 0;
    if (gs_idmap_get(t->ids, id, &v) == 0)
        return GS_TC_BAD;
    int rc = malloc_block(t, size, stream, &bi);
    if (rc != GS_TC_OK)
        return rc;
    if (gs_idmap_put(t->ids, id, bi == GS_TC_HANDLE_ZERO ? ZERO_ID : bi) < 0) {
        if (bi != GS_TC_HANDLE_ZERO)
            free_block(t, bi);
        return GS_TC_NOMEM;
    }
    return GS_TC_OK;
}

int gs_tc_alloc_h(struct gs_tc *t, uint64_t size, uint64_t stream, uint32_t *handle)
{
    t->s.requests++;
    t->err = 0;
    *handle = GS_TC_HANDLE_NONE;
    return malloc_block(t, size, stream, handle);
}

int gs_tc_release(struct gs_tc *t, uint64_t id)
{
    uint64_t v;
    t->s.requests++;
    t->err = 0;
    if (gs_idmap_get(t->ids, id, &v) < 0)
        return GS_TC_BAD;
    gs_idmap_del(t->ids, id);
    if (v != ZERO_ID)
        free_block(t, (uint32_t)v);
    return t->err ? GS_TC_NOMEM : GS_TC_OK;
}

int gs_tc_release_h(struct gs_tc *t, uint32_t handle)
{
    t->s.requests++;
    t->err = 0;
    if (handle == GS_TC_HANDLE_ZERO)
        return GS_TC_OK;
    if (handle >= t->nb || !t->b[handle].used || !t->b[handle].allocated)
        return GS_TC_BAD;
    free_block(t, handle);
    return t->err ? GS_TC_NOMEM : GS_TC_OK;
}

void gs_tc_empty_cache(struct gs_tc *t)
{
    t->s.requests++;
    t->err = 0;
    release_cached(t);
}

void gs_tc_set_external(struct gs_tc *t, uint64_t bytes) { t->external = bytes; }

const struct gs_tc_stats *gs_tc_stats(const struct gs_tc *t) { return &t->s; }

const struct gs_tc_config *gs_tc_config_of(const struct gs_tc *t) { return &t->c; }

int gs_tc_check(const struct gs_tc *t)
{
    uint64_t alloc = 0, mapped = 0, live = 0, req = 0, cached = 0;
    uint64_t gcn = 0, gcs = 0, gc_in = 0; /* the collection's blocks, their gc_count_base */
    for (uint32_t i = 0; i < t->nb; i++) {
        const struct tcb *x = &t->b[i];
        if (!x->used)
            continue;
        live++;
        if (x->size == 0)
            return 1;
        if (x->allocated) {
            alloc += x->size;
            req += x->requested;
            if (!x->mapped || x->in_pool || x->in_gc || x->gc_counted)
                return 2; /* allocated blocks are mapped and in no pool */
        } else {
            if (!x->in_pool)
                return 3; /* a cached block is in its pool */
            cached++;
            uint32_t root = t->pool[x->small ? 0 : 1].um;
            if (x->mapped) {
                if (x->sidx >= t->nstreams)
                    return 3;
                root = t->streams[x->sidx].bins[x->small ? 0 : 1].root[size_bin(x->size)];
            }
            if (tree_after(t, x->mapped ? BY_SIZE : BY_ADDRESS, root, x, 0) != i)
                return 3; /* found where its keys say */
            int counted = !x->small && x->mapped && !is_split(x);
            if (x->gc_counted != counted || x->in_gc != (counted && x->seg == NONE))
                return 13; /* the collection's figures and tree hold the freeable blocks */
            if (counted) {
                gcn++;
                gcs += t->gc[i].base;
                gc_in += x->in_gc;
            }
        }
        if (x->mapped)
            mapped += x->size;
        if (!x->mapped && x->seg == NONE)
            return 4;
        if (x->next != NONE) {
            const struct tcb *n = &t->b[x->next];
            if (!n->used || n->prev != i || x->addr + x->size != n->addr || n->seg != x->seg)
                return 5; /* neighbours contiguous and linked both ways */
            if (!x->allocated && !n->allocated && x->mapped == n->mapped)
                return 6; /* free neighbours alike are merged */
        }
        if (x->prev != NONE && t->b[x->prev].next != i)
            return 5;
        if (x->seg != NONE) {
            const struct tcseg *g = &t->seg[x->seg];
            if (!g->used || x->addr < g->base || x->addr - g->base + x->size > g->size)
                return 7;
            if (!x->mapped && ((x->addr - g->base) % g->page || x->size % g->page))
                return 8; /* unmapped ranges are whole pages */
        }
    }
    /* The trees: ordered, heaps, holding the cached blocks and no other;
     * the collection's list oldest first. */
    uint64_t in_trees = 0, in_list = 0;
    for (int k = 0; k < 2; k++) {
        const struct tcpool *p = &t->pool[k];
        if (tree_check(t, BY_ADDRESS, p->um, NONE, NONE, &in_trees) < 0)
            return 3;
        for (uint32_t si = 0; si < t->nstreams; si++) {
            const struct tcbins *bs = &t->streams[si].bins[k];
            for (uint32_t w = 0; w < NBINWORDS; w++)
                if (!(bs->words >> w & 1) != !bs->bits[w])
                    return 3;
            /* (a bin holding blocks but not marked leaves them out of the count) */
            for (uint32_t b = next_bin(bs, 0, 0); b != NONE; b = next_bin(bs, b + 1, 0)) {
                if (bs->root[b] == NONE ||
                    tree_check(t, BY_SIZE, bs->root[b], NONE, NONE, &in_trees) < 0)
                    return 3;
            }
        }
        uint32_t prev = NONE;
        for (uint32_t i = p->gc_old; i != NONE; prev = i, i = t->gc[i].newer) {
            if (i >= t->nb || ++in_list > gc_in || !t->b[i].in_gc || t->gc[i].older != prev ||
                (prev != NONE && t->gc[prev].base > t->gc[i].base))
                return 13;
        }
        if (p->gc_new != prev || (k == 0 && (p->gc_old != NONE || p->gc_count || p->gc_base_sum)))
            return 13;
    }
    if (in_trees != cached || in_list != gc_in)
        return 3;
    if (t->pool[1].gc_count != gcn || t->pool[1].gc_base_sum != gcs)
        return 13;
    if (alloc != t->s.allocated || req != t->s.requested)
        return 9;
    if (mapped != t->s.reserved || t->s.reserved > t->s.reserved_peak)
        return 10;
    if (t->c.capacity && t->s.reserved > t->c.capacity)
        return 11;
    if (live != t->s.live_blocks)
        return 12;
    return 0;
}
