/*
 * support.c - what the entry points share: the checks (initialized, valid device, the current
 * context and device), growable arrays, range sets, handle registries and the live-allocation
 * hash table.
 *
 * Design
 *   - Live allocations sit in an open-addressing hash table keyed by
 *     address (linear probing, backward-shift deletion). Reservations,
 *     mappings and pinned host ranges sit in sorted arrays.
 */
#include "tests/sim/driver/sim.h"

/* ---- checks shared by the entry points -------------------------------- */

int is_initialized(void)
{
    return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE);
}

int valid_device(gs_cudevice dev)
{
    return dev >= 0 && dev < cfg.ndevices;
}

struct gs_cuctx_st *ctx_of(const void *p)
{
    for (int i = 0; i < cfg.ndevices; i++)
        if (p == &devices[i].ctx)
            return &devices[i].ctx;
    return NULL;
}

/* Initialized and a live context current: its device, else -error. */
int current_device(void)
{
    int refs;

    if (!is_initialized())
        return -GS_CUDA_ERROR_NOT_INITIALIZED;
    if (!current_ctx)
        return -GS_CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    refs = devices[current_ctx->device].ctx_refs;
    pthread_mutex_unlock(&lock);
    return refs > 0 ? current_ctx->device : -GS_CUDA_ERROR_INVALID_CONTEXT;
}

uint64_t round_up(uint64_t n, uint64_t align)
{
    return (n + align - 1) & ~(align - 1);
}

/* ---- growable arrays, range sets, handle registries (lock held) --------- */

/* v with room for need elements of elem bytes, the new ones zeroed; NULL
 * when out of memory (v stays valid). */
void *grow(void *v, size_t *cap, size_t need, size_t elem)
{
    size_t n = *cap ? *cap : 16;
    char *p;

    if (need <= *cap)
        return v;
    while (n < need)
        n *= 2;
    p = realloc(v, n * elem);
    if (!p)
        return NULL;
    memset(p + *cap * elem, 0, (n - *cap) * elem);
    *cap = n;
    return p;
}

/* Index of the first range that ends above addr. */
static size_t rs_lower(const struct rangeset *s, uint64_t addr)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->v[mid].addr + s->v[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct range *rs_find(const struct rangeset *s, uint64_t addr)
{
    size_t i = rs_lower(s, addr);

    return i < s->n && s->v[i].addr <= addr ? &s->v[i] : NULL;
}

int rs_overlaps(const struct rangeset *s, uint64_t addr, uint64_t size)
{
    size_t i = rs_lower(s, addr);

    return i < s->n && s->v[i].addr < addr + size;
}

int rs_insert(struct rangeset *s, const struct range *r)
{
    size_t i = rs_lower(s, r->addr);
    struct range *v = grow(s->v, &s->cap, s->n + 1, sizeof *v);

    if (!v)
        return -1;
    s->v = v;
    memmove(&v[i + 1], &v[i], (s->n - i) * sizeof *v);
    v[i] = *r;
    s->n++;
    return 0;
}

void rs_remove(struct rangeset *s, size_t i, size_t count)
{
    memmove(&s->v[i], &s->v[i + count], (s->n - i - count) * sizeof *s->v);
    s->n -= count;
}

/* Index of the first of the whole, adjacent ranges that make up exactly
 * [addr, addr+size), their number in *count; -1 when there are none. */
long rs_run(const struct rangeset *s, uint64_t addr, uint64_t size, size_t *count)
{
    size_t i = rs_lower(s, addr), j = i;
    uint64_t end = addr;

    if (i >= s->n || s->v[i].addr != addr)
        return -1;
    while (j < s->n && s->v[j].addr == end && end - addr < size)
        end += s->v[j++].size;
    if (end - addr != size)
        return -1;
    *count = j - i;
    return (long)i;
}

int reg_add(struct reg *r, void *p)
{
    void **v = grow(r->v, &r->cap, r->n + 1, sizeof *v);

    if (!v)
        return -1;
    r->v = v;
    v[r->n++] = p;
    return 0;
}

long reg_index(const struct reg *r, const void *p)
{
    for (size_t i = 0; p && i < r->n; i++)
        if (r->v[i] == p)
            return (long)i;
    return -1;
}

void reg_del(struct reg *r, size_t i)
{
    r->v[i] = r->v[--r->n];
}

/* ---- live-allocation hash table (lock held) --------------------------- */

static size_t slot_home(gs_cudeviceptr addr)
{
    return (size_t)(((addr >> 9) * 0x9e3779b97f4a7c15ull) >> 20) & (table_cap - 1);
}

size_t slot_find(gs_cudeviceptr addr)
{
    size_t i = slot_home(addr);

    while (table[i].addr && table[i].addr != addr)
        i = (i + 1) & (table_cap - 1);
    return i;
}

int table_grow(void)
{
    struct live *old = table;
    size_t old_cap = table_cap;
    size_t cap = old_cap ? old_cap * 2 : 1024;
    struct live *fresh = calloc(cap, sizeof *fresh);

    if (!fresh)
        return -1;
    table = fresh;
    table_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].addr)
            table[slot_find(old[i].addr)] = old[i];
    free(old);
    return 0;
}

struct live *table_get(gs_cudeviceptr addr)
{
    struct live *e;

    if (!table_cap || !addr)
        return NULL;
    e = &table[slot_find(addr)];
    return e->addr ? e : NULL;
}

/* The live allocation whose range holds addr (an O(table) scan when addr
 * is not a base address). */
struct live *table_containing(gs_cudeviceptr addr)
{
    struct live *e = table_get(addr);

    for (size_t i = 0; !e && i < table_cap; i++)
        if (table[i].addr && addr - table[i].addr < table[i].size)
            e = &table[i];
    return e;
}

/* Removes slot i, shifting back the entries that probed past it. */
void table_remove(size_t i)
{
    size_t mask = table_cap - 1;

    for (size_t j = (i + 1) & mask; table[j].addr; j = (j + 1) & mask) {
        size_t k = slot_home(table[j].addr);

        /* j's entry may move to i only if its home is not in (i, j]. */
        if (((j - k) & mask) >= ((j - i) & mask)) {
            table[i] = table[j];
            i = j;
        }
    }
    table[i].addr = 0;
    table_count--;
}
