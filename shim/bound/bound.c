/*
 * bound.c - GPUSHIM_MAX_BYTES: a trace that never grows past a size, for
 * runs that last weeks, keeping full detail for the most recent events and
 * an exact summary of everything before them.
 *
 * The writer hands every chunk it writes to a model of the analyzer's
 * state: the analyzer's own decoder and replay engine (analyzer/trace/decode.c,
 * analyzer/model/replay.c, compiled into the shim), which read it as the analyzer
 * will, so the summary means exactly what a report of the whole history
 * would. When the trace reaches half the limit, the model's state is
 * written as a checkpoint (analyzer/model/checkpoint.c) into a new file
 * "<trace>.next", after the same header. When the trace then nears the
 * limit, the chunks written since that midpoint are copied after the
 * checkpoint and the new file is renamed over the trace: one atomic step, so
 * a reader (or a death) sees either the old file or the new one, whole. The
 * ring's positions carry on across the swap, so recovery after a death is
 * unchanged.
 *
 * After a swap the file holds the checkpoint and the chunks since the last
 * midpoint; the next midpoint is half way from there to the limit. So the
 * detail kept is about half of what the limit leaves beside the checkpoint,
 * which grows with the live allocations and distinct stacks, not with time.
 *
 * The checkpoint and the swap are the writer thread's work, a little before
 * the limit; a program thread that drains a full ring does a swap itself
 * only when its next chunk would otherwise pass the limit. Every checkpoint
 * ends with the ring position it reaches, so a trace that is all
 * checkpoint still joins its ring after a death. The files are the user's:
 * the next file's descriptor is checked to be still ours before each use,
 * and the trace's name to be still the trace before the rename.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "analyzer/trace/encode.h"
#include "analyzer/trace/meta.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "shim/base/base.h"
#include "shim/file/file.h"
#include "shim/bound/bound.h"

#define RAW_CAP (1u << 20)

static struct {
    uint64_t max; /* 0: not bounding */
    struct gs_replay model;
    struct gs_reader_stats decoded; /* what decoding the chunks counted: unused */
    int next_fd;             /* the checkpoint file being prepared, or -1 */
    dev_t next_dev;          /* the file next_fd was opened on */
    ino_t next_ino;
    char next_path[4096 + 8];
    uint64_t next_size;
    uint64_t mid_offset;     /* the trace's size when the checkpoint was taken */
    uint64_t base;           /* the trace's size after the last swap (or its header) */
    uint8_t *raw, *scratch;  /* a chunk in the making, and its compressed form */
    size_t raw_len, scratch_len;
} b = {.next_fd = -1};

/* Is next_fd still the file we made? A program may close descriptors it does
 * not know and reuse the number. */
static int next_ours(void)
{
    struct stat sb;
    if (b.next_fd >= 0 && fstat(b.next_fd, &sb) == 0 && sb.st_dev == b.next_dev &&
        sb.st_ino == b.next_ino)
        return 1;
    errno = EBADF;
    return 0;
}

/* Lets go of the next file (removed unless keep_file). */
static void drop_next(int keep_file)
{
    if (next_ours()) {
        close(b.next_fd);
        if (!keep_file)
            unlink(b.next_path);
    }
    b.next_fd = -1;
}

static void stop(const char *why, int err)
{
    static int once;
    gs_warn_once(&once, "cannot keep the trace under GPUSHIM_MAX_BYTES=%llu: %s%s%s; it grows "
                        "without bound from here",
                 (unsigned long long)b.max, why, err ? ": " : "", err ? strerror(err) : "");
    gs_replay_free(&b.model);
    drop_next(0);
    b.max = 0;
    free(b.raw);
    free(b.scratch);
    b.raw = b.scratch = NULL;
}

void gs_bound_start(uint64_t max_bytes)
{
    b.scratch_len = gs_chunk_scratch_size(RAW_CAP);
    b.raw = malloc(RAW_CAP);
    b.scratch = malloc(b.scratch_len);
    gs_replay_init(&b.model);
    b.max = max_bytes;
    if (!b.raw || !b.scratch)
        stop("out of memory", 0);
}

/* ---- the model ---- */

void gs_bound_feed_chunk(const uint8_t *raw, size_t len)
{
    if (b.max)
        gs_decode_chunk(raw, len, &gs_model_ops, &b.model, &b.decoded); /* no checkpoint loader */
}

/* ---- the next file ---- */

static int flush_raw(void)
{
    size_t written;
    if (b.raw_len && !next_ours())
        return -1;
    if (b.raw_len &&
        gs_write_chunk(b.next_fd, b.raw, b.raw_len, b.scratch, b.scratch_len, &written) != 0)
        return -1;
    if (b.raw_len)
        b.next_size += written;
    b.raw_len = 0;
    return 0;
}

static int put(void *ctx, const uint8_t *rec, size_t len)
{
    (void)ctx;
    if (len > RAW_CAP)
        return -1;
    if (b.raw_len + len > RAW_CAP && flush_raw() != 0)
        return -1;
    memcpy(b.raw + b.raw_len, rec, len);
    b.raw_len += len;
    return 0;
}

/* Starts "<trace>.next": the header, then the model's state now, which
 * reaches ring position ring_pos. */
static int take_checkpoint(const struct gs_trace_file *tf, uint64_t ring_pos)
{
    snprintf(b.next_path, sizeof b.next_path, "%s.next", tf->path);
    unlink(b.next_path); /* one a dead process of the same name left */
    b.next_fd = open(b.next_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat sb;
    if (b.next_fd < 0 || fstat(b.next_fd, &sb) != 0)
        return -1;
    b.next_dev = sb.st_dev;
    b.next_ino = sb.st_ino;
    b.raw_len = 0;
    if (gs_write_header(b.next_fd, tf->start_ns, tf->realtime_ns, tf->stack_depth, tf->ring_id,
                        tf->ring_name) != 0)
        return -1;
    off_t size = lseek(b.next_fd, 0, SEEK_CUR);
    if (size < 0)
        return -1;
    b.next_size = (uint64_t)size;
    uint8_t pos[GS_RING_POS_MAX];
    size_t pos_len = gs_encode_ring_pos(ring_pos, pos);
    errno = 0;
    if (gs_checkpoint_write(&b.model, put, NULL) != 0 ||
        (tf->ring_name && put(NULL, pos, pos_len) != 0) || flush_raw() != 0) {
        if (!errno)
            errno = ENOMEM;
        return -1;
    }
    b.mid_offset = tf->size;
    return 0;
}

/* Copies [from, to) of the trace to the end of the next file. */
static int copy_chunks(const struct gs_trace_file *tf, uint64_t from, uint64_t to)
{
    if (!gs_fsize_room(b.next_size + (to - from)))
        return -1;
    for (uint64_t off = from; off < to;) {
        size_t want = to - off < b.scratch_len ? (size_t)(to - off) : b.scratch_len;
        ssize_t n = pread(tf->fd, b.scratch, want, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        if (!next_ours() || gs_write_all(b.next_fd, b.scratch, (size_t)n) != 0)
            return -1;
        off += (uint64_t)n;
        b.next_size += (uint64_t)n;
    }
    return 0;
}

/* Copies the trace's chunks from the midpoint after the checkpoint and puts
 * the new file in the trace's place. */
static int swap_in(struct gs_trace_file *tf)
{
    if (copy_chunks(tf, b.mid_offset, tf->size) != 0)
        return -1;
    struct stat sb, named;
    if (!next_ours() || fstat(b.next_fd, &sb) != 0)
        return -1;
    if (stat(tf->path, &named) != 0 || named.st_dev != tf->dev || named.st_ino != tf->ino) {
        errno = ESTALE; /* the trace was moved or replaced: never rename over another file */
        return -1;
    }
    if (rename(b.next_path, tf->path) != 0)
        return -1;
    close(tf->fd);
    tf->fd = b.next_fd;
    tf->dev = sb.st_dev;
    tf->ino = sb.st_ino;
    tf->size = b.next_size;
    b.next_fd = -1;
    b.base = tf->size;
    return 0;
}

/* A chunk of at most this many bytes may come next. */
static uint64_t next_chunk_bound(void) { return gs_chunk_scratch_size(GS_WRITER_CHUNK_MAX); }

void gs_bound_after_chunk(struct gs_trace_file *tf, uint64_t ring_pos, int writer_thread)
{
    if (!b.max)
        return;
    if (!b.base)
        b.base = tf->size; /* the first chunk: the header before it */
    uint64_t next = next_chunk_bound();
    int must = tf->size + next > b.max;                              /* the next chunk won't fit */
    int soon = tf->size + next + b.max / 8 > b.max;                  /* the writer's margin */
    int mid = tf->size >= b.base + (b.max - b.base) / 2;             /* time for a checkpoint */
    if (!writer_thread && !must)
        return; /* the writer thread's work, not the program's */
    if (b.next_fd < 0 && (mid || must || soon) && take_checkpoint(tf, ring_pos) != 0) {
        stop("cannot write the checkpoint file", errno);
        return;
    }
    if (!must && !soon)
        return;
    if (swap_in(tf) != 0) {
        stop("cannot replace the trace", errno);
        return;
    }
    if (tf->size + next + b.max / 8 > b.max)
        stop("the live allocations and stacks alone need about that much", 0);
}

void gs_bound_finish(int for_exec)
{
    if (!b.max)
        return;
    drop_next(0); /* a checkpoint no swap needed */
    if (for_exec)
        return; /* if the exec fails the trace goes on, still bounded */
    /* The END record is written: the few events after it (other libraries'
     * destructors) are appended as they are, never cut away from the END. */
    gs_replay_free(&b.model);
    free(b.raw);
    free(b.scratch);
    b.raw = b.scratch = NULL;
    b.max = 0;
}

void gs_bound_reset_after_fork(void)
{
    drop_next(1); /* the parent's: its file stays */
    if (b.max) {
        gs_replay_free(&b.model);
        free(b.raw);
        free(b.scratch);
        b.raw = b.scratch = NULL;
    }
    b.max = 0; /* the child starts its own trace, and bound, on its first event */
}
