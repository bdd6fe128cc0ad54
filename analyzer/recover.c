/*
 * recover.c - the end of a trace whose process did not finish it: the
 * entries of its ring file (include/gpushim_ring.h) that no block holds.
 *
 * When a process dies (SIGKILL, a crash, _exit) its last events are in the
 * ring file's pages, which outlive it. The trace's blocks each end with the
 * ring position they reach (GS_REC_RING_POS); the entries from the largest
 * such position up to the ring's head are the ones missing from the file.
 * They are turned into records with the shim's own encoder and handed to
 * the same callbacks as the blocks', so a report cannot tell them apart.
 *
 * The ring file is untrusted like the trace: its header must match the
 * trace (id) and this build (layout, byte order), every entry's length is
 * checked against the ring's limits, and a body that is not well formed is
 * counted as a damaged record. For a process that is still running, the
 * entries are copied first and used only if the writer did not reuse their
 * space meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer.h"
#include "gpushim_ring.h"

static void problem(struct gs_reader_stats *st, enum gs_ring_use use, const char *fmt,
                    const char *arg)
{
    st->ring_use = use;
    snprintf(st->ring_problem, sizeof st->ring_problem, fmt, arg);
}

/* Opens the ring next to the trace: "<trace path>.ring", else the name the
 * trace recorded, in the trace's directory (the trace may have been renamed). */
static int open_ring(const char *trace_path, const struct gs_trace_info *info,
                     struct gs_reader_stats *st)
{
    snprintf(st->ring_path, sizeof st->ring_path, "%s.ring", trace_path);
    int fd = open(st->ring_path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 || !info->ring_name[0] || strchr(info->ring_name, '/') ||
        !strcmp(info->ring_name, ".") || !strcmp(info->ring_name, ".."))
        return fd;
    const char *slash = strrchr(trace_path, '/');
    int dirlen = slash ? (int)(slash - trace_path) + 1 : 0;
    char other[sizeof st->ring_path];
    snprintf(other, sizeof other, "%.*s%s", dirlen, trace_path, info->ring_name);
    int fd2 = open(other, O_RDONLY | O_CLOEXEC);
    if (fd2 >= 0)
        snprintf(st->ring_path, sizeof st->ring_path, "%s", other);
    return fd2;
}

static void copy_out(const uint8_t *data, uint64_t cap, uint64_t pos, void *dst, size_t len)
{
    size_t off = (size_t)(pos & (cap - 1));
    size_t first = len < cap - off ? len : (size_t)(cap - off);
    memcpy(dst, data + off, first);
    memcpy((uint8_t *)dst + first, data, len - first);
}

static int is_event(uint8_t type)
{
    return type == GS_REC_ALLOC || type == GS_REC_FREE || type == GS_REC_FREE_FAILED ||
           type == GS_REC_ALLOC_FAILED || type == GS_REC_REF || type == GS_REC_POOL ||
           type == GS_REC_MARK || type == GS_REC_BLOCK_ALLOC || type == GS_REC_BLOCK_FREE;
}

/* Hands the entries in copy (n bytes, from ring position start) to ops. */
static void replay_entries(const uint8_t *copy, uint64_t n, const struct gs_reader_ops *ops,
                           void *ctx, struct gs_reader_stats *st)
{
    static uint64_t body[GS_RING_MAX_BODY / 8]; /* aligned for the body structs */
    static uint8_t rec[GS_MAX_RECORD];
    uint64_t at = 0;
    while (at + sizeof(uint32_t) <= n) {
        uint32_t total;
        memcpy(&total, copy + at, sizeof total);
        if (total <= sizeof total || total - sizeof total > GS_RING_MAX_BODY || total > n - at) {
            st->damaged_records++; /* the rest cannot be framed */
            return;
        }
        uint32_t len = total - (uint32_t)sizeof total;
        memcpy(body, copy + at + sizeof total, len);
        at += total;
        struct gs_encoder e;
        gs_encoder_reset(&e);
        size_t rlen = gs_encode(&e, body, len, rec);
        if (!rlen) {
            st->damaged_records++;
            continue;
        }
        if (is_event(*(const uint8_t *)body))
            st->recovered_events++;
        gs_decode_block(rec, rlen, ops, ctx, st);
    }
}

void gs_recover_ring(const char *trace_path, const struct gs_trace_info *info,
                     const struct gs_reader_ops *ops, void *ctx, struct gs_reader_stats *st)
{
    int fd = open_ring(trace_path, info, st);
    if (fd < 0) {
        problem(st, GS_RING_MISSING, "%s", strerror(errno));
        return;
    }
    struct stat sb;
    struct gs_ring_header h;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size < sizeof h ||
        pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        close(fd);
        problem(st, GS_RING_UNUSABLE, "%s", "too short to be a ring file");
        return;
    }
    const char *bad = memcmp(h.magic, GS_RING_MAGIC, sizeof h.magic) ? "not a gpushim ring file"
                      : h.version != GS_RING_VERSION ? "ring file version unknown to this gpushim"
                      : h.endian != GS_RING_ENDIAN || h.layout != GS_RING_LAYOUT
                          ? "written on a machine of another architecture"
                      : h.header_size != GS_RING_HEADER_SIZE || h.cap < GS_RING_MIN_CAP ||
                              h.cap > GS_RING_MAX_CAP || (h.cap & (h.cap - 1)) ||
                              (uint64_t)sb.st_size != GS_RING_HEADER_SIZE + h.cap
                          ? "its size does not match its header"
                      : h.trace_id != info->ring_id ? "it belongs to another trace"
                                                    : NULL;
    if (bad) {
        close(fd);
        problem(st, GS_RING_UNUSABLE, "%s", bad);
        return;
    }
    size_t total = (size_t)(GS_RING_HEADER_SIZE + h.cap);
    uint8_t *map = mmap(NULL, total, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        problem(st, GS_RING_UNUSABLE, "cannot map it: %s", strerror(errno));
        return;
    }
    const struct gs_ring_header *live = (const void *)map;
    const uint8_t *data = map + GS_RING_HEADER_SIZE;
    uint64_t head = __atomic_load_n(&live->head, __ATOMIC_ACQUIRE);
    uint64_t tail = __atomic_load_n(&live->tail, __ATOMIC_ACQUIRE);
    uint64_t start = st->ring_pos;
    if (start < tail) { /* the ring moved past blocks this file does not have */
        st->ring_gap = tail - start;
        start = tail;
    }
    if (head < start || head - start > h.cap) {
        munmap(map, total);
        problem(st, GS_RING_UNUSABLE, "%s", "its positions do not match the trace");
        return;
    }
    uint64_t n = head - start;
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) {
        munmap(map, total);
        problem(st, GS_RING_UNUSABLE, "%s", "out of memory");
        return;
    }
    copy_out(data, h.cap, start, copy, n);
    /* A running process may have reused the space meanwhile. */
    uint64_t head_now = __atomic_load_n(&live->head, __ATOMIC_ACQUIRE);
    if (head_now > start + h.cap) {
        free(copy);
        munmap(map, total);
        problem(st, GS_RING_UNUSABLE, "%s",
                "the running process reused it while it was read; read the trace again");
        return;
    }
    st->ring_use = GS_RING_READ;
    st->ring_lost = __atomic_load_n(&live->lost, __ATOMIC_RELAXED);
    if (__atomic_load_n(&live->state, __ATOMIC_ACQUIRE) == GS_RING_FAILED) {
        st->write_failed = 1;
        st->fail_errno = live->fail_errno;
        st->fail_offset = live->fail_offset;
        st->fail_time_ns = live->fail_time_ns;
        uint64_t end = __atomic_load_n(&live->end_time_ns, __ATOMIC_ACQUIRE);
        if (end) { /* it exited cleanly, and said so here since the trace could not */
            st->end_seen = 1;
            st->end_time_ns = end;
            st->end_events = live->events;
        }
    }
    munmap(map, total);
    replay_entries(copy, n, ops, ctx, st);
    free(copy);
}
