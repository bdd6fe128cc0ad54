/*
 * space.c - fake address space: a region of it is holes below a bump pointer (struct space);
 * the devices' allocations, graph allocations, IPC mappings and cuMemAddressReserve ranges
 * take their addresses here and give them back.
 *
 * Design
 *   - Addresses come from a first-fit list of holes (sorted by address,
 *     coalesced) and, when no hole fits, from a bump pointer. A freed range
 *     is a hole again, so later allocations reuse it, as the real one does.
 *   - The caller holds lock.
 */
#include "tests/sim/driver/sim.h"

static void hole_delete(struct space *s, size_t i)
{
    memmove(&s->holes[i], &s->holes[i + 1], (s->nholes - i - 1) * sizeof *s->holes);
    s->nholes--;
}

static int hole_insert(struct space *s, size_t i, uint64_t off, uint64_t len)
{
    struct hole *h = grow(s->holes, &s->holes_cap, s->nholes + 1, sizeof *h);

    if (!h)
        return -1;
    s->holes = h;
    memmove(&h[i + 1], &h[i], (s->nholes - i) * sizeof *h);
    h[i] = (struct hole){off, len};
    s->nholes++;
    return 0;
}

/* Takes [off, off+len), which lies inside hole i, out of it. */
static int hole_carve(struct space *s, size_t i, uint64_t off, uint64_t len)
{
    struct hole *h = &s->holes[i];
    uint64_t end = h->off + h->len;

    if (off > h->off && off + len < end) {
        if (hole_insert(s, i + 1, off + len, end - off - len) != 0)
            return -1;
        s->holes[i].len = off - s->holes[i].off;
    } else if (off > h->off) {
        h->len = off - h->off;
    } else if (off + len < end) {
        h->off += len;
        h->len -= len;
    } else {
        hole_delete(s, i);
    }
    return 0;
}

/* Offset of the first address at or above base + off aligned to align. */
static uint64_t align_off(const struct space *s, uint64_t off, uint64_t align)
{
    return round_up(s->base + off, align) - s->base;
}

/* Takes [off, off+len) at or above the bump pointer; the gap is a hole. */
static int space_take_top(struct space *s, uint64_t off, uint64_t len, uint64_t *addr)
{
    if (off > s->limit || s->limit - off < len)
        return -1;
    if (off > s->top && hole_insert(s, s->nholes, s->top, off - s->top) != 0)
        return -1;
    s->top = off + len;
    *addr = s->base + off;
    return 0;
}

/* First fit: the lowest hole that holds len bytes at an address aligned to
 * align (a power of two, at most the region's span), else the bump pointer. */
int space_take(struct space *s, uint64_t len, uint64_t align, uint64_t *addr)
{
    for (size_t i = 0; i < s->nholes; i++) {
        uint64_t off = align_off(s, s->holes[i].off, align);
        uint64_t end = s->holes[i].off + s->holes[i].len;

        if (off >= end || end - off < len)
            continue;
        if (hole_carve(s, i, off, len) != 0)
            return -1;
        *addr = s->base + off;
        return 0;
    }
    return space_take_top(s, align_off(s, s->top, align), len, addr);
}

/* Takes exactly [addr, addr+len) if all of it is free. */
int space_take_at(struct space *s, uint64_t addr, uint64_t len)
{
    uint64_t off = addr - s->base, got;

    if (addr < s->base)
        return -1;
    if (off >= s->top)
        return space_take_top(s, off, len, &got);
    for (size_t i = 0; i < s->nholes; i++) {
        const struct hole *h = &s->holes[i];

        if (h->off <= off && off - h->off < h->len && h->off + h->len - off >= len)
            return hole_carve(s, i, off, len);
    }
    return -1;
}

/* Returns [addr, addr+len) to the free space, merging with its neighbours
 * and giving the last hole back to the bump pointer. */
void space_put(struct space *s, uint64_t addr, uint64_t len)
{
    uint64_t off = addr - s->base;
    size_t i = 0;

    while (i < s->nholes && s->holes[i].off < off)
        i++;
    if (i > 0 && s->holes[i - 1].off + s->holes[i - 1].len == off) {
        i--;
        s->holes[i].len += len;
    } else if (hole_insert(s, i, off, len) != 0) {
        return; /* out of host memory: the range is lost, nothing breaks */
    }
    if (i + 1 < s->nholes && s->holes[i].off + s->holes[i].len == s->holes[i + 1].off) {
        s->holes[i].len += s->holes[i + 1].len;
        hole_delete(s, i + 1);
    }
    if (i + 1 == s->nholes && s->holes[i].off + s->holes[i].len == s->top) {
        s->top = s->holes[i].off;
        s->nholes--;
    }
}
