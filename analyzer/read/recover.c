/*
 * recover.c - the end of a trace whose process did not finish it: the
 * entries of its ring file (include/gpushim_ring.h) that no chunk holds.
 *
 * When a process dies (SIGKILL, a crash, _exit) its last events are in the
 * ring file's pages, which outlive it. The trace's chunks each end with the
 * ring position they reach (GS_REC_RING_POS); the entries from the largest
 * such position up to the ring's head are the ones missing from the file.
 * They are turned into records with the shim's own encoder and handed to
 * the same callbacks as the chunks', so a report cannot tell them apart.
 *
 * The ring is copied before the trace's chunks are read (a snapshot of
 * [tail, head)): for a process still running, everything the writer takes
 * out of the ring after the copy is in chunks written before the trace is
 * read, so the two meet without a gap. The copy is kept only if no producer
 * wrapped around into it while it was made.
 *
 * The ring file is untrusted like the trace: read with pread (a file cut
 * short meanwhile is an error, not a SIGBUS), only a regular file, its
 * header must match the trace (id) and this build (layout, byte order),
 * every entry's length is checked against the ring's limits, and a body
 * that is not well formed is counted as a damaged record.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/trace/encode.h"
#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "gpushim_ring.h"

static int read_exact(int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

static uint64_t read_u64(int fd, size_t offset)
{
    uint64_t v = 0;
    if (read_exact(fd, &v, sizeof v, offset) != 0)
        return UINT64_MAX;
    return v;
}

/* Opens path as this trace's ring and reads its header; NULL or why not. */
static const char *open_checked(const char *path, const struct gs_trace_info *info, int *fdp,
                                struct gs_ring_header *h)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return strerror(errno);
    struct stat sb;
    const char *bad = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        bad = "not a regular file";
    else if ((uint64_t)sb.st_size < sizeof *h || read_exact(fd, h, sizeof *h, 0) != 0)
        bad = "too short to be a ring file";
    else
        bad = memcmp(h->magic, GS_RING_MAGIC, sizeof h->magic) ? "not a gpushim ring file"
              : h->version != GS_RING_VERSION ? "ring file version unknown to this gpushim"
              : h->endian != GS_RING_ENDIAN || h->layout != GS_RING_LAYOUT
                  ? "written on a machine of another architecture"
              : h->header_size != GS_RING_HEADER_SIZE || h->cap < GS_RING_MIN_CAP ||
                      h->cap > GS_RING_MAX_CAP || (h->cap & (h->cap - 1)) ||
                      (uint64_t)sb.st_size != GS_RING_HEADER_SIZE + h->cap
                  ? "its size does not match its header"
              : h->trace_id != info->header.ring_id ? "it belongs to another trace"
                                             : NULL;
    if (bad) {
        close(fd);
        return bad;
    }
    *fdp = fd;
    return NULL;
}

/* Opens the ring next to the trace, "<trace path>.ring", else the name the
 * trace recorded, in the trace's directory (the shim picks another name
 * when a stale file stands in the way). */
static int open_ring(const char *trace_path, const struct gs_trace_info *info,
                     struct gs_ring_snapshot *snap, struct gs_ring_header *h)
{
    int fd = -1;
    snprintf(snap->path, sizeof snap->path, "%s.ring", trace_path);
    const char *why = open_checked(snap->path, info, &fd, h);
    if (!why)
        return fd;
    const char *slash = strrchr(trace_path, '/');
    int dirlen = slash ? (int)(slash - trace_path) + 1 : 0;
    char other[sizeof snap->path];
    const char *name = info->header.ring_name;
    snprintf(other, sizeof other, "%.*s%s", dirlen, trace_path, name);
    if (name[0] && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..") &&
        strcmp(other, snap->path)) {
        const char *why2 = open_checked(other, info, &fd, h);
        if (!why2) {
            snprintf(snap->path, sizeof snap->path, "%s", other);
            return fd;
        }
        if (strcmp(why2, strerror(ENOENT)) != 0)
            why = why2;
    }
    snap->use = !strcmp(why, strerror(ENOENT)) ? GS_RING_MISSING : GS_RING_UNUSABLE;
    snprintf(snap->problem, sizeof snap->problem, "%s", why);
    return -1;
}

void gs_ring_snapshot_take(const char *trace_path, const struct gs_trace_info *info,
                           struct gs_ring_snapshot *snap)
{
    memset(snap, 0, sizeof *snap);
    struct gs_ring_header h;
    int fd = open_ring(trace_path, info, snap, &h);
    if (fd < 0)
        return;
    /* tail, then head: both only grow, so tail <= head holds for the pair. */
    uint64_t tail = read_u64(fd, offsetof(struct gs_ring_header, tail));
    uint64_t head = read_u64(fd, offsetof(struct gs_ring_header, head));
    const char *bad = NULL;
    if (tail > head || head - tail > h.cap)
        bad = "its positions are not those of a ring";
    uint8_t *copy = bad ? NULL : malloc(head - tail ? head - tail : 1);
    if (!bad && !copy)
        bad = "out of memory";
    if (!bad) {
        uint64_t n = head - tail, off = tail & (h.cap - 1);
        uint64_t first = n < h.cap - off ? n : h.cap - off;
        if (read_exact(fd, copy, first, GS_RING_HEADER_SIZE + off) != 0 ||
            read_exact(fd, copy + first, n - first, GS_RING_HEADER_SIZE) != 0)
            bad = "it could not be read";
        else if (read_u64(fd, offsetof(struct gs_ring_header, head)) > tail + h.cap)
            bad = "the running process reused it while it was read; read the trace again";
    }
    struct gs_ring_header now;
    if (!bad && read_exact(fd, &now, sizeof now, 0) != 0)
        bad = "it could not be read";
    close(fd);
    if (bad) {
        free(copy);
        snap->use = GS_RING_UNUSABLE;
        snprintf(snap->problem, sizeof snap->problem, "%s", bad);
        return;
    }
    snap->use = GS_RING_READ;
    snap->tail = tail;
    snap->head = head;
    snap->data = copy;
    snap->hdr = now;
}

void gs_ring_snapshot_free(struct gs_ring_snapshot *snap)
{
    free(snap->data);
    snap->data = NULL;
}

static int is_event(uint8_t type)
{
    return type == GS_REC_ALLOC || type == GS_REC_FREE || type == GS_REC_FREE_FAILED ||
           type == GS_REC_ALLOC_FAILED || type == GS_REC_REF || type == GS_REC_POOL ||
           type == GS_REC_MARK || type == GS_REC_RANGE || type == GS_REC_BLOCK_ALLOC ||
           type == GS_REC_BLOCK_FREE || type == GS_REC_GRAPH_NODE || type == GS_REC_GRAPH;
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
        gs_decode_chunk(rec, rlen, ops, ctx, st);
    }
}

void gs_ring_snapshot_replay(const struct gs_ring_snapshot *snap, const struct gs_reader_ops *ops,
                             void *ctx, struct gs_reader_stats *st)
{
    snprintf(st->ring_path, sizeof st->ring_path, "%s", snap->path);
    st->ring_use = snap->use;
    snprintf(st->ring_problem, sizeof st->ring_problem, "%s", snap->problem);
    if (snap->use != GS_RING_READ)
        return;
    uint64_t start = st->ring_pos;
    if (start < snap->tail) { /* the ring moved past chunks this file does not have */
        st->ring_gap = snap->tail - start;
        start = snap->tail;
    }
    const struct gs_ring_header *h = &snap->hdr;
    st->ring_lost = h->lost;
    if (h->state == GS_RING_FAILED) {
        st->write_failed = 1;
        st->fail_errno = h->fail_errno;
        st->fail_offset = h->fail_offset;
        st->fail_time_ns = h->fail_time_ns;
        if (h->end_time_ns) { /* it exited cleanly, and said so here since the trace could not */
            st->end_seen = 1;
            st->end_time_ns = h->end_time_ns;
            st->end_events = h->events;
        }
    }
    if (start < snap->head)
        replay_entries(snap->data + (start - snap->tail), snap->head - start, ops, ctx, st);
}
