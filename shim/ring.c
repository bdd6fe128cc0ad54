/*
 * ring.c - the queue between the threads that record and the writer.
 *
 * A byte ring of variable-length entries (u32 length, then the body) in one
 * mmap'd region. Producers append under the ring's lock (writer.c holds it);
 * the writer reads [tail, head) without it, since producers never write
 * there, and advances tail when the entries are in the file. head and tail
 * only grow; the position in the buffer is the value modulo cap.
 *
 * Nothing in an entry points outside the ring, so the same region can later
 * be shared with a writer in another process and outlive the program.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "shim.h"

int gs_ring_init(struct gs_ring *r, size_t cap)
{
    memset(r, 0, sizeof *r);
    if (cap & (cap - 1))
        return -1;
    /* Populated now, on the first event, rather than a page fault at a time
     * on the program's threads. */
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED)
        return -1;
    r->buf = p;
    r->cap = cap;
    return 0;
}

void gs_ring_destroy(struct gs_ring *r)
{
    if (r->buf)
        munmap(r->buf, r->cap);
    memset(r, 0, sizeof *r);
}

static void copy_in(struct gs_ring *r, uint64_t pos, const void *src, size_t len)
{
    size_t off = (size_t)(pos & (r->cap - 1));
    size_t first = len < r->cap - off ? len : r->cap - off;
    memcpy(r->buf + off, src, first);
    memcpy(r->buf, (const uint8_t *)src + first, len - first);
}

static void copy_out(const struct gs_ring *r, uint64_t pos, void *dst, size_t len)
{
    size_t off = (size_t)(pos & (r->cap - 1));
    size_t first = len < r->cap - off ? len : r->cap - off;
    memcpy(dst, r->buf + off, first);
    memcpy((uint8_t *)dst + first, r->buf, len - first);
}

int gs_ring_push(struct gs_ring *r, const void *body, uint32_t len)
{
    uint32_t total = len + (uint32_t)sizeof(uint32_t);
    if (len == 0 || len > GS_RING_MAX_BODY || r->head - r->tail + total > r->cap)
        return -1;
    copy_in(r, r->head, &total, sizeof total);
    copy_in(r, r->head + sizeof total, body, len);
    __atomic_store_n(&r->head, r->head + total, __ATOMIC_RELEASE);
    return 0;
}

uint32_t gs_ring_read(const struct gs_ring *r, uint64_t pos, void *out, uint32_t max,
                      uint64_t *next)
{
    uint32_t total;
    copy_out(r, pos, &total, sizeof total);
    if (total <= sizeof total || total - sizeof total > max)
        return 0;
    uint32_t len = total - (uint32_t)sizeof total;
    copy_out(r, pos + sizeof total, out, len);
    *next = pos + total;
    return len;
}
