/*
 * ring.c - the queue between the threads that record and the writer, kept
 * in the ring file (include/gpushim_ring.h) so that it outlives the process.
 *
 * A byte ring of variable-length entries (u32 length, then the body).
 * Producers append under the ring's lock (writer.c holds it) and publish
 * with a release store of head; the writer reads [tail, head) without it,
 * since producers never write there, and advances tail when the entries are
 * in the trace file. head and tail only grow; the position in the data is
 * the value modulo cap.
 *
 * The file is allocated on disk in full when it is created, so a write into
 * its pages never needs space the disk no longer has. MAP_POPULATE reads the
 * pages in then; the first write to a page (and the first after the kernel
 * wrote it back) still takes a minor fault on the thread that writes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim/base/base.h"
#include "shim/file/file.h"

_Static_assert(sizeof(struct gs_ring_header) <= GS_RING_HEADER_SIZE, "ring header fits");

static int map(struct gs_ring *r, int fd, size_t cap)
{
    size_t total = GS_RING_HEADER_SIZE + cap;
    void *p = fd >= 0 ? mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)
                      : mmap(NULL, total, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    /* A forked child must never write the parent's ring: it gets no mapping. */
    r->dontfork = madvise(p, total, MADV_DONTFORK) == 0;
    r->hdr = p;
    r->buf = (uint8_t *)p + GS_RING_HEADER_SIZE;
    r->cap = cap;
    r->shared = fd >= 0;
    return 0;
}

/* A new file at path, allocated in full, or -1 with errno (nothing left behind). */
static int create_file(const char *path, size_t total)
{
    if (!gs_fsize_room(total))
        return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int e = posix_fallocate(fd, 0, (off_t)total);
    if (e != 0) {
        close(fd);
        unlink(path);
        errno = e;
        return -1;
    }
    return fd;
}

int gs_ring_init(struct gs_ring *r, const char *path, size_t cap, uint64_t id)
{
    memset(r, 0, sizeof *r);
    if (cap < GS_RING_MIN_CAP || cap > GS_RING_MAX_CAP || (cap & (cap - 1))) {
        errno = EINVAL;
        return -1;
    }
    int fd = -1;
    if (path && (fd = create_file(path, GS_RING_HEADER_SIZE + cap)) < 0)
        return -1;
    int failed = map(r, fd, cap);
    int e = errno;
    if (fd >= 0)
        close(fd); /* the mapping keeps the file */
    if (failed) {
        if (path)
            unlink(path);
        errno = e;
        return -1;
    }
    struct gs_ring_header *h = r->hdr;
    h->version = GS_RING_VERSION;
    h->header_size = GS_RING_HEADER_SIZE;
    h->layout = GS_RING_LAYOUT;
    h->endian = GS_RING_ENDIAN;
    h->cap = cap;
    h->trace_id = id;
    h->pid = (uint64_t)getpid();
    /* The magic last, in one release store (the header is page-aligned): a
     * reader takes a file without it for one not yet made. */
    typedef uint64_t __attribute__((may_alias)) word;
    word magic;
    memcpy(&magic, GS_RING_MAGIC, sizeof magic);
    __atomic_store_n((word *)(void *)h->magic, magic, __ATOMIC_RELEASE);
    return 0;
}

void gs_ring_destroy(struct gs_ring *r)
{
    if (r->hdr)
        munmap(r->hdr, GS_RING_HEADER_SIZE + r->cap);
    memset(r, 0, sizeof *r);
}

void gs_ring_forget_in_child(struct gs_ring *r)
{
    if (r->dontfork)
        memset(r, 0, sizeof *r);
    else
        gs_ring_destroy(r); /* the child's own copy */
}

int gs_ring_move_to_file(struct gs_ring *r, const char *path)
{
    size_t total = GS_RING_HEADER_SIZE + r->cap;
    int fd = create_file(path, total);
    if (fd < 0)
        return -1;
    struct gs_ring moved;
    int failed = map(&moved, fd, r->cap);
    int e = errno;
    close(fd);
    if (failed) {
        unlink(path);
        errno = e;
        return -1;
    }
    memcpy(moved.hdr, r->hdr, total);
    gs_ring_destroy(r);
    *r = moved;
    return 0;
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
    uint64_t head = r->hdr->head;
    if (len == 0 || len > GS_RING_MAX_BODY ||
        head - __atomic_load_n(&r->hdr->tail, __ATOMIC_ACQUIRE) + total > r->cap)
        return -1;
    size_t off = (size_t)(head & (r->cap - 1));
    if (off + total <= r->cap) { /* most entries: not across the end */
        memcpy(r->buf + off, &total, sizeof total);
        memcpy(r->buf + off + sizeof total, body, len);
    } else {
        copy_in(r, head, &total, sizeof total);
        copy_in(r, head + sizeof total, body, len);
    }
    __atomic_store_n(&r->hdr->head, head + total, __ATOMIC_RELEASE);
    /* The ring's lines the next entries go to were last read by the writer
     * on the other core, or not touched for a lap of the ring: asked for
     * now, for writing, they are in this core's cache when those entries
     * are pushed, instead of the ring lock's release waiting for them. */
    __builtin_prefetch(r->buf + ((head + total + 256) & (r->cap - 1)), 1, 3);
    return 0;
}

uint32_t gs_ring_read(const struct gs_ring *r, uint64_t pos, void *out, uint32_t max,
                      uint64_t *next)
{
    uint32_t total;
    size_t off = (size_t)(pos & (r->cap - 1));
    int whole = off + sizeof total <= r->cap;
    if (whole)
        memcpy(&total, r->buf + off, sizeof total);
    else
        copy_out(r, pos, &total, sizeof total);
    if (total <= sizeof total || total - sizeof total > max)
        return 0;
    uint32_t len = total - (uint32_t)sizeof total;
    if (whole && off + total <= r->cap) /* most entries: not across the end */
        memcpy(out, r->buf + off + sizeof total, len);
    else
        copy_out(r, pos + sizeof total, out, len);
    *next = pos + total;
    return len;
}
