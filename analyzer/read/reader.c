/*
 * reader.c - reads a trace file (include/gpushim_trace.h): its header, its
 * records framed and checked here and each one's payload decoded by the
 * codec (analyzer/trace/meta.c), then its chunks, checked and inflated,
 * whose records decode.c hands in order to callbacks; and what the stats it
 * gathers say of the trace.
 *
 * Every trace is untrusted input: every length is checked against what is
 * left and against the format's limits before anything is allocated or
 * read. A damaged chunk is skipped (the reader scans forward for the next
 * chunk magic whose checksum holds) and counted; an unfinished last chunk
 * marks the trace truncated. Only a file whose preamble or header cannot be
 * read is an error, reported in one line with the file and offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "analyzer/read/tape.h"

/* ---- what the stats say ---- */

int gs_trace_complete(const struct gs_reader_stats *st)
{
    if (st->damaged_chunks || st->damaged_records)
        return 0;
    if (st->ring_use == GS_RING_READ) /* a last chunk cut short is in the ring too */
        return !st->ring_lost && !st->ring_gap;
    return st->end_seen && !st->truncated_at && !st->end_lost;
}

const char *gs_trace_ending(const struct gs_trace_info *info, const struct gs_reader_stats *st)
{
    return st->end_seen ? "finished" : gs_trace_live(info, st) ? "live" : "died";
}

int gs_trace_live(const struct gs_trace_info *info, const struct gs_reader_stats *st)
{
    const struct gs_header_info *h = &info->header;
    char host[256];
    if (st->end_seen || !h->pid || h->pid > INT32_MAX || gethostname(host, sizeof host) != 0)
        return 0;
    host[sizeof host - 1] = 0;
    if (strcmp(host, h->host) != 0 || (kill((pid_t)h->pid, 0) != 0 && errno != EPERM))
        return 0;
    /* The same process, not a later one given its pid: started before the trace. */
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)h->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *p = strrchr(stat, ')'); /* the command may hold spaces */
    unsigned long long start_ticks = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                            "%*d %*d %llu", &start_ticks) != 1)
        return 0;
    double started = (double)start_ticks / (double)sysconf(_SC_CLK_TCK);
    return started <= (double)h->start_ns / 1e9 + 1.0;
}

uint64_t gs_trace_duration_ns(const struct gs_reader_stats *st, uint64_t last_event_ns)
{
    /* an END past GS_PLAUSIBLE_NS is no run's: its events' time stands */
    return st->end_time_ns > last_event_ns && st->end_time_ns <= GS_PLAUSIBLE_NS
               ? st->end_time_ns
               : last_event_ns;
}

/* ---- the file ---- */

struct file {
    int fd;
    const char *path;
    uint64_t size;
    uint64_t scan_budget; /* bytes that candidates found by scanning may still cost */
    char *err;
    size_t errsz;
};

static int fail(struct file *f, uint64_t offset, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(f->err, f->errsz, "%s: offset %llu: %s", f->path, (unsigned long long)offset, what);
    return -1;
}

static int read_at(struct file *f, uint64_t off, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(f->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

static int read_header(struct file *f, struct gs_trace_info *info, uint64_t *body_start)
{
    uint8_t pre[GS_PREAMBLE_LEN];
    if (f->size == 0)
        return fail(f, 0, "empty: nothing was recorded (a process killed as the shim began "
                          "recording leaves its trace so)");
    if (f->size < GS_PREAMBLE_LEN || read_at(f, 0, pre, sizeof pre) != 0)
        return fail(f, 0, "too short to be a gpushim trace (%llu bytes)",
                    (unsigned long long)f->size);
    if (memcmp(pre, GS_TRACE_MAGIC, GS_TRACE_MAGIC_LEN) != 0)
        return fail(f, 0, "not a gpushim trace (bad magic)");
    info->version = gs_get_u32le(pre + 8);
    if (info->version < GS_TRACE_OLDEST_READABLE || info->version > GS_TRACE_VERSION)
        return fail(f, 8, "trace format version %u; this gpushim reads versions %u to %u",
                    info->version, GS_TRACE_OLDEST_READABLE, GS_TRACE_VERSION);
    uint32_t hlen = gs_get_u32le(pre + 12);
    if (hlen > GS_MAX_HEADER || GS_PREAMBLE_LEN + (uint64_t)hlen + 4 > f->size)
        return fail(f, 12, "header length %u runs past the end of the file", hlen);
    uint8_t *h = malloc(GS_PREAMBLE_LEN + (size_t)hlen + 4);
    if (!h)
        return fail(f, 12, "out of memory");
    if (read_at(f, 0, h, GS_PREAMBLE_LEN + (size_t)hlen + 4) != 0) {
        free(h);
        return fail(f, GS_PREAMBLE_LEN, "cannot read the header: %s", strerror(errno));
    }
    uint32_t want = gs_get_u32le(h + GS_PREAMBLE_LEN + hlen);
    if (libdeflate_crc32(0, h, GS_PREAMBLE_LEN + hlen) != want) {
        free(h);
        return fail(f, GS_PREAMBLE_LEN + hlen, "header checksum mismatch");
    }
    const uint8_t *p = h + GS_PREAMBLE_LEN, *end = p + hlen;
    while (p < end) {
        uint8_t type = *p++;
        uint64_t plen;
        if (gs_get_varint(&p, end, &plen) != 0 || plen > (uint64_t)(end - p)) {
            uint64_t at = (uint64_t)(p - h);
            free(h);
            return fail(f, at, "malformed header record");
        }
        /* a record whose payload does not parse gives what of it does */
        gs_decode_header_record(type, p, plen, &info->header);
        p += plen;
    }
    free(h);
    *body_start = GS_PREAMBLE_LEN + (uint64_t)hlen + 4;
    return 0;
}

/* A chunk header at off that is whole and plausible: 1; else 0. */
static int chunk_header(struct file *f, uint64_t off, uint32_t *clen, uint32_t *rlen, uint32_t *crc)
{
    uint8_t h[GS_CHUNK_HEADER_LEN];
    if (off + GS_CHUNK_HEADER_LEN > f->size || read_at(f, off, h, sizeof h) != 0)
        return 0;
    if (gs_get_u32le(h) != GS_CHUNK_MAGIC)
        return 0;
    *clen = gs_get_u32le(h + 4);
    *rlen = gs_get_u32le(h + 8);
    *crc = gs_get_u32le(h + 12);
    return *clen <= GS_MAX_CHUNK && *rlen <= GS_MAX_CHUNK;
}

/* The next offset after off where a chunk magic stands, or f->size. */
static uint64_t next_magic(struct file *f, uint64_t off)
{
    uint8_t buf[65536];
    for (;;) {
        if (off + 4 > f->size)
            return f->size;
        size_t len = (size_t)(f->size - off < sizeof buf ? f->size - off : sizeof buf);
        if (read_at(f, off, buf, len) != 0)
            return f->size;
        for (size_t i = 0; i + 4 <= len; i++)
            if (gs_get_u32le(buf + i) == GS_CHUNK_MAGIC)
                return off + i;
        if (len < 4)
            return f->size;
        off += len - 3;
    }
}

enum chunk_result { CHUNK_OK, CHUNK_DAMAGED, CHUNK_TRUNCATED, CHUNK_GIVE_UP };

/* Does a chunk of clen bytes at off end where the file or another chunk
 * starts? Checked before a chunk found by scanning is checksummed, so that
 * a hostile file of fake chunk magics costs a read of 4 bytes each, not a
 * checksum of up to 16 MiB. */
static int ends_at_a_boundary(struct file *f, uint64_t off, uint32_t clen)
{
    uint64_t end = off + GS_CHUNK_HEADER_LEN + clen;
    uint8_t m[4];
    return end == f->size ||
           (end + 4 <= f->size && read_at(f, end, m, 4) == 0 && gs_get_u32le(m) == GS_CHUNK_MAGIC);
}

/* A buffer as large as the largest chunk so far needed in it (at most
 * GS_MAX_CHUNK), not that up front, so a small trace costs little memory. */
struct buffer {
    uint8_t *p;
    size_t cap;
};

static int grow(struct buffer *b, size_t need)
{
    if (need <= b->cap && b->p)
        return 0;
    size_t n = b->cap ? b->cap : 64 * 1024;
    while (n < need)
        n *= 2;
    if (n > GS_MAX_CHUNK)
        n = GS_MAX_CHUNK;
    uint8_t *p = realloc(b->p, n);
    if (!p)
        return -1;
    b->p = p;
    b->cap = n;
    return 0;
}

/* What inflates the chunks: libdeflate's decompressor, made for the first
 * chunk and kept for the others. The chunks are zlib streams, as zlib
 * writes them in the shim; libdeflate inflates a whole buffer at once,
 * about twice as fast as zlib's inflate on a trace's chunks, and on two
 * cores inflating was half of the read-ahead thread's time. */
struct inflater {
    struct libdeflate_decompressor *d;
};

/* Inflates a chunk's zlib stream (in, inlen bytes) into exactly outlen
 * bytes: 0, or -1 when it is not a zlib stream or does not give that many
 * (or no decompressor could be made). The Adler-32 at its end is not
 * checked: the chunk's CRC-32, checked before, covers every compressed
 * byte. */
static int inflate_chunk(struct inflater *inf, uint8_t *out, uint32_t outlen, const uint8_t *in,
                         uint32_t inlen)
{
    /* RFC 1950: CMF (deflate, window <= 32 KiB), FLG (no preset dictionary) */
    if (inlen < 2 || (in[0] & 0x0f) != 8 || (in[0] >> 4) > 7 || (in[1] & 0x20) ||
        (in[0] * 256u + in[1]) % 31 != 0)
        return -1;
    if (!inf->d && !(inf->d = libdeflate_alloc_decompressor()))
        return -1;
    size_t got; /* raw deflate, past the header read above */
    enum libdeflate_result r =
        libdeflate_deflate_decompress(inf->d, in + 2, inlen - 2, out, outlen, &got);
    return r == LIBDEFLATE_SUCCESS && got == outlen ? 0 : -1;
}

static void inflater_end(struct inflater *inf)
{
    if (inf->d)
        libdeflate_free_decompressor(inf->d);
    inf->d = NULL;
}

/* Reads the chunk at off into comp, checks it and inflates it into raw
 * (*rlen bytes); *next is the offset after it. */
static enum chunk_result fetch_chunk(struct file *f, uint64_t off, int scanned, struct buffer *comp,
                                     struct inflater *inf, struct buffer *raw, uint32_t *rlen,
                                     uint64_t *next)
{
    uint32_t clen, crc;
    if (off + GS_CHUNK_HEADER_LEN > f->size)
        return CHUNK_TRUNCATED;
    if (!chunk_header(f, off, &clen, rlen, &crc))
        return CHUNK_DAMAGED;
    if (off + GS_CHUNK_HEADER_LEN + clen > f->size)
        return CHUNK_TRUNCATED;
    if (scanned && !ends_at_a_boundary(f, off, clen))
        return CHUNK_DAMAGED;
    if (scanned) { /* a file of fake chunks must not cost a checksum per byte */
        if (clen > f->scan_budget)
            return CHUNK_GIVE_UP;
        f->scan_budget -= clen;
    }
    uint8_t h[12];
    if (grow(comp, clen) != 0)
        return CHUNK_GIVE_UP;
    if (read_at(f, off, h, sizeof h) != 0 ||
        read_at(f, off + GS_CHUNK_HEADER_LEN, comp->p, clen) != 0)
        return CHUNK_DAMAGED;
    if (libdeflate_crc32(libdeflate_crc32(0, h, sizeof h), comp->p, clen) != crc)
        return CHUNK_DAMAGED;
    if (grow(raw, *rlen) != 0)
        return CHUNK_GIVE_UP;
    if (inflate_chunk(inf, raw->p, *rlen, comp->p, clen) != 0)
        return CHUNK_DAMAGED;
    *next = off + GS_CHUNK_HEADER_LEN + clen;
    return CHUNK_OK;
}

/* ---- reading ahead ----
 * The chunks are found, read, checked, inflated and decoded by a second
 * thread, onto tapes (tape.c) that this one plays to the callbacks: on a
 * trace of millions of events, inflating and decoding are as much work as
 * what the callbacks do with the events. At most TAPES tapes wait at once,
 * each of about gs_read_tape_bytes (an entry may take it past that), beside
 * one inflated chunk (at most GS_MAX_CHUNK). A trace smaller than
 * gs_read_ahead_from, a process that may keep only one CPU busy (where
 * two threads would take turns, the tapes' copies a cost on top), or one
 * that cannot start a thread, decodes each chunk into the callbacks as
 * soon as it is inflated, on one thread. */
#define TAPES 4
uint64_t gs_read_ahead_from = 2u << 20;
size_t gs_read_tape_bytes = 256u << 10;
unsigned gs_read_cpus;

static int read_ahead(const struct file *f, uint64_t off)
{
    if (f->size - off < gs_read_ahead_from)
        return 0;
    return (gs_read_cpus ? gs_read_cpus : gs_cpus_usable()) > 1;
}

struct ahead {
    struct file *f;
    uint64_t off; /* the first chunk */
    struct buffer comp, raw;
    struct inflater inf;
    uint32_t len;
    int threaded;
    /* threaded: the tapes, filled on the read-ahead thread, played here */
    struct gs_tape tapes[TAPES];
    unsigned produced, consumed; /* tapes filled and played; tape i is tapes[i % TAPES] */
    int done;                    /* no tape after the last produced */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct gs_tape_recorder rec;
    struct gs_reader_stats decoded; /* what decoding the chunks counted (decode.c) */
    /* what finding the chunks saw, the stats' once it is over */
    uint64_t chunks, damaged_chunks, truncated_at;
    const struct gs_reader_ops *ops;
    void *ctx;
    struct gs_reader_stats *st;
};

/* Hands the tape being filled on to be played, and waits for one that has
 * been played to fill next. */
static void tape_full(struct gs_tape_recorder *rec)
{
    struct ahead *a = rec->owner;
    pthread_mutex_lock(&a->lock);
    a->produced++;
    pthread_cond_signal(&a->cond);
    while (a->produced - a->consumed >= TAPES)
        pthread_cond_wait(&a->cond, &a->lock);
    rec->tape = &a->tapes[a->produced % TAPES];
    pthread_mutex_unlock(&a->lock);
    rec->tape->len = 0;
}

static void chunk_ready(struct ahead *a)
{
    if (a->threaded)
        gs_decode_chunk(a->raw.p, a->len, &gs_tape_ops, &a->rec, &a->decoded);
    else
        gs_decode_chunk(a->raw.p, a->len, a->ops, a->ctx, a->st);
}

/* Every chunk from a->off to the end, skipping damage. */
static void *find_chunks(void *arg)
{
    struct ahead *a = arg;
    struct file *f = a->f;
    uint64_t off = a->off;
    int scanned = 0; /* off was found by scanning past damage */
    while (off < f->size) {
        uint64_t next = off;
        enum chunk_result r =
            fetch_chunk(f, off, scanned, &a->comp, &a->inf, &a->raw, &a->len, &next);
        if (r == CHUNK_OK) {
            a->chunks++;
            chunk_ready(a);
            off = next;
            scanned = 0;
        } else if (r == CHUNK_GIVE_UP) {
            a->truncated_at = off; /* damage too dense to search, or no memory: no further */
            break;
        } else if (r == CHUNK_TRUNCATED && next_magic(f, off + 1) >= f->size) {
            a->truncated_at = off; /* the process stopped while writing it */
            break;
        } else {
            if (!scanned)
                a->damaged_chunks++;
            off = next_magic(f, off + 1);
            scanned = 1;
        }
    }
    if (a->threaded) {
        pthread_mutex_lock(&a->lock);
        if (a->rec.tape->len)
            a->produced++;
        a->done = 1;
        pthread_cond_signal(&a->cond);
        pthread_mutex_unlock(&a->lock);
    }
    return NULL;
}

/* Plays the tapes find_chunks fills on its thread, in order. */
static void play_tapes(struct ahead *a)
{
    for (;;) {
        pthread_mutex_lock(&a->lock);
        while (a->consumed == a->produced && !a->done)
            pthread_cond_wait(&a->cond, &a->lock);
        int more = a->consumed != a->produced;
        unsigned i = a->consumed % TAPES;
        pthread_mutex_unlock(&a->lock);
        if (!more)
            return;
        gs_tape_play(&a->tapes[i], a->ops, a->ctx, a->st);
        pthread_mutex_lock(&a->lock);
        a->consumed++;
        pthread_cond_signal(&a->cond);
        pthread_mutex_unlock(&a->lock);
    }
}

/* What decoding counted on the read-ahead thread, into the stats: this
 * thread has counted only the checkpoint records the callbacks refused. */
static void add_decoded(struct gs_reader_stats *st, const struct ahead *a)
{
    const struct gs_reader_stats *d = &a->decoded;
    st->damaged_records += d->damaged_records + a->rec.lost;
    st->end_seen = d->end_seen;
    st->end_events = d->end_events;
    st->end_lost = d->end_lost;
    st->end_time_ns = d->end_time_ns;
    if (d->ring_pos > st->ring_pos)
        st->ring_pos = d->ring_pos;
}

static void read_chunks(struct file *f, uint64_t off, const struct gs_reader_ops *ops, void *ctx,
                        struct gs_reader_stats *st)
{
    struct ahead a = {.f = f, .off = off, .ops = ops, .ctx = ctx, .st = st};
    a.rec = (struct gs_tape_recorder){
        .tape = &a.tapes[0], .full_at = gs_read_tape_bytes, .full = tape_full, .owner = &a};
    pthread_t t;
    if (read_ahead(f, off) && pthread_mutex_init(&a.lock, NULL) == 0) {
        if (pthread_cond_init(&a.cond, NULL) == 0) {
            /* signals (SIGINT, SIGPIPE) are the main thread's to take */
            sigset_t all, old;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &old);
            a.threaded = 1; /* before the thread reads it */
            if (pthread_create(&t, NULL, find_chunks, &a) != 0)
                a.threaded = 0;
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            if (a.threaded) {
                play_tapes(&a);
                pthread_join(t, NULL);
                add_decoded(st, &a);
            }
            pthread_cond_destroy(&a.cond);
        }
        pthread_mutex_destroy(&a.lock);
    }
    if (!a.threaded)
        find_chunks(&a);
    st->chunks += a.chunks;
    st->damaged_chunks += a.damaged_chunks;
    if (a.truncated_at)
        st->truncated_at = a.truncated_at;
    free(a.comp.p);
    free(a.raw.p);
    inflater_end(&a.inf);
    for (unsigned i = 0; i < TAPES; i++)
        gs_tape_free(&a.tapes[i]);
}

/* Reads the trace at path (from what an earlier read saw, when again is
 * not NULL), keeping what it saw in *seen when that is not NULL. */
static int read_trace(const char *path, const struct gs_reader_ops *ops, void *ctx,
                      struct gs_trace_info *info, struct gs_reader_stats *st,
                      const struct gs_read_seen *again, struct gs_read_seen *seen, char *err,
                      size_t errsz)
{
    struct file f = {.path = path, .err = err, .errsz = errsz};
    memset(info, 0, sizeof *info);
    gs_header_info_init(&info->header);
    memset(st, 0, sizeof *st);
    if (seen)
        memset(seen, 0, sizeof *seen);
    /* not blocking: a FIFO named as the trace would wait for a writer
     * forever before the check below could refuse it */
    f.fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f.fd < 0)
        return fail(&f, 0, "cannot open: %s", strerror(errno));
    struct stat sb;
    if (fstat(f.fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(f.fd);
        return fail(&f, 0, "not a regular file");
    }
    if (again && ((uint64_t)sb.st_dev != again->dev || (uint64_t)sb.st_ino != again->ino ||
                  (uint64_t)sb.st_size < again->size)) {
        close(f.fd);
        return fail(&f, 0, "the file changed since it was read (replaced or cut short)");
    }
    f.size = again ? again->size : (uint64_t)sb.st_size;
    uint64_t off = 0;
    if (read_header(&f, info, &off) != 0) {
        close(f.fd);
        return -1;
    }
    /* The ring first: what the writer takes from it after this is in chunks
     * that are in the file by the time they are read below, so the size is
     * taken again once the copy is made. A second read plays the first's
     * copy, up to the first's size: the same records. */
    const struct gs_ring_snapshot *play = again ? again->snap : NULL;
    struct gs_ring_snapshot *snap = NULL;
    if (!again && info->header.ring_id && (snap = malloc(sizeof *snap))) {
        gs_ring_snapshot_take(path, info, snap);
        play = snap;
        if (fstat(f.fd, &sb) == 0 && (uint64_t)sb.st_size > f.size)
            f.size = (uint64_t)sb.st_size;
    }
    st->bytes = f.size;
    f.scan_budget = 2 * f.size + (64u << 20);
    read_chunks(&f, off, ops, ctx, st);
    close(f.fd);
    if (play && !st->end_seen)
        gs_ring_snapshot_replay(play, ops, ctx, st);
    if (seen) {
        *seen = (struct gs_read_seen){.dev = (uint64_t)sb.st_dev, .ino = (uint64_t)sb.st_ino,
                                      .size = f.size, .snap = snap};
    } else if (snap) {
        gs_ring_snapshot_free(snap);
        free(snap);
    }
    return 0;
}

int gs_read_trace(const char *path, const struct gs_reader_ops *ops, void *ctx,
                  struct gs_trace_info *info, struct gs_reader_stats *st, char *err,
                  size_t errsz)
{
    return read_trace(path, ops, ctx, info, st, NULL, NULL, err, errsz);
}

int gs_read_trace_seen(const char *path, const struct gs_reader_ops *ops, void *ctx,
                       struct gs_trace_info *info, struct gs_reader_stats *st,
                       struct gs_read_seen *seen, char *err, size_t errsz)
{
    return read_trace(path, ops, ctx, info, st, NULL, seen, err, errsz);
}

int gs_read_trace_again(const char *path, const struct gs_read_seen *seen,
                        const struct gs_reader_ops *ops, void *ctx, struct gs_trace_info *info,
                        struct gs_reader_stats *st, char *err, size_t errsz)
{
    return read_trace(path, ops, ctx, info, st, seen, NULL, err, errsz);
}

void gs_read_seen_free(struct gs_read_seen *seen)
{
    if (seen->snap) {
        gs_ring_snapshot_free(seen->snap);
        free(seen->snap);
    }
    memset(seen, 0, sizeof *seen);
}
