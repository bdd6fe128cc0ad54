/*
 * test_chunk.c - the trace file end to end through files in a temp dir:
 * shim/file/tracefile.c writes it (gs_create_trace, gs_write_header,
 * gs_write_chunk), analyzer/read/reader.c reads it back (gs_read_trace). Covers
 * chunk framing and checksums: every record arrives in order with the
 * header's fields; a flipped byte in one chunk's payload loses only that
 * chunk; a file cut inside its last chunk is reported truncated at that
 * chunk; a damaged header is an error naming the file and the offset; the
 * read-ahead thread reads what one thread reads; a second read
 * (gs_read_trace_again) reads what the first saw, the live writer's chunks
 * and ring entries since left out, and refuses a file replaced or cut short.
 * Also gs_create_trace's rules (never overwrite: NAME-1.trace; never follow
 * a symlink; mode 0600) and gs_expand_path's %p, %h, %% and a lone %.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "analyzer/trace/encode.h"
#include "analyzer/trace/meta.h"
#include "gpushim_trace.h"
#include "gpushim_ring.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "shim/base/base.h"
#include "shim/file/file.h"

/* ---- a temp dir per test ---- */

static char tmpdir[256];

static void make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gs_unit_XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
    cr_redirect_stderr(); /* gs_create_trace says where it writes instead */
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", tmpdir, de->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(tmpdir);
}

TestSuite(chunk, .init = make_tmpdir, .fini = remove_tmpdir);
TestSuite(create, .init = make_tmpdir, .fini = remove_tmpdir);

static void in_tmp(char *out, size_t outsz, const char *name)
{
    snprintf(out, outsz, "%s/%s", tmpdir, name);
}

/* ---- writing a trace of NCHUNKS chunks ---- */

#define NCHUNKS 4
#define PER_CHUNK 200 /* events per chunk: enough for a payload worth flipping */

struct written {
    char path[PATH_MAX];
    uint64_t off[NCHUNKS]; /* where each chunk starts */
    uint64_t end;          /* the file's size */
};

/* Event number k: tid k, so the order can be checked. */
static struct gs_ev nth_event(unsigned k)
{
    struct gs_ev ev = {.type = k % 2 ? GS_REC_FREE : GS_REC_ALLOC,
                       .api = GS_API_cuMemAlloc_v2,
                       .device = (int32_t)(k % 3),
                       .tid = k,
                       .stack_id = 1,
                       .time_ns = 1000ull * k,
                       .addr = 0x7f0000000000ull + (k / 2) * 4096,
                       .size = 4096,
                       .stream = 0};
    return ev;
}

/* The trace of a live process when ring_id is not 0: its ring file
 * ring_name beside it, no END record. */
static void write_trace_as(struct written *w, uint64_t ring_id, const char *ring_name)
{
    in_tmp(w->path, sizeof w->path, "t.trace");
    int fd = gs_create_trace(w->path, sizeof w->path);
    cr_assert_geq(fd, 0, "gs_create_trace: %s", strerror(errno));
    cr_assert_eq(gs_write_header(fd, 111, 222, 48, ring_id, ring_name), 0, "gs_write_header");
    size_t rawcap = 1 << 16;
    uint8_t *raw = malloc(rawcap);
    size_t scratch_len = gs_chunk_scratch_size(rawcap);
    uint8_t *scratch = malloc(scratch_len);
    cr_assert(raw && scratch);
    struct gs_encoder e;
    unsigned k = 0;
    for (int b = 0; b < NCHUNKS; b++) {
        size_t len = 0;
        gs_encoder_reset(&e);
        if (b == 0) {
            uint64_t body[(sizeof(struct gs_stack_body) + 2 * 8) / 8] = {0};
            struct gs_stack_body *st = (struct gs_stack_body *)body;
            st->type = GS_REC_STACK;
            st->id = 1;
            st->n = 2;
            st->pcs[0] = 0x401000;
            st->pcs[1] = 0x402000;
            len += gs_encode(&e, st, sizeof body, raw + len);
        }
        for (int i = 0; i < PER_CHUNK; i++, k++) {
            struct gs_ev ev = nth_event(k);
            size_t n = gs_encode(&e, &ev, sizeof ev, raw + len);
            cr_assert_gt(n, 0);
            len += n;
        }
        if (b == NCHUNKS - 1 && !ring_id) {
            struct gs_end_body end = {.type = GS_REC_END, .events = k, .lost = 3};
            len += gs_encode(&e, &end, sizeof end, raw + len);
        }
        cr_assert_leq(len, rawcap);
        off_t at = lseek(fd, 0, SEEK_CUR);
        cr_assert_geq(at, 0);
        w->off[b] = (uint64_t)at;
        size_t written;
        cr_assert_eq(gs_write_chunk(fd, raw, len, scratch, scratch_len, &written), 0,
                     "gs_write_chunk %d", b);
        cr_assert_eq(lseek(fd, 0, SEEK_CUR), at + (off_t)written, "its size in the file");
    }
    off_t end = lseek(fd, 0, SEEK_CUR);
    w->end = (uint64_t)end;
    close(fd);
    free(raw);
    free(scratch);
}

static void write_trace(struct written *w) { write_trace_as(w, 0, NULL); }

/* ---- reading it back ---- */

#define RING_EVENTS 16 /* at most, past the chunks: a live trace's ring */

struct seen {
    unsigned tids[NCHUNKS * PER_CHUNK + RING_EVENTS];
    unsigned n;
    unsigned stacks;
    int in_order;
    int fields_ok;
};

static void seen_event(void *ctx, const struct gs_revent *e)
{
    struct seen *s = ctx;
    struct gs_ev want = nth_event(e->tid);
    if (s->n && e->tid <= s->tids[s->n - 1])
        s->in_order = 0;
    if (e->type != want.type || e->time_ns != want.time_ns || e->addr != want.addr ||
        e->device != want.device || (e->type == GS_REC_ALLOC && e->size != want.size))
        s->fields_ok = 0;
    if (s->n < NCHUNKS * PER_CHUNK + RING_EVENTS)
        s->tids[s->n++] = e->tid;
}

static void seen_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    struct seen *s = ctx;
    if (id == 1 && n == 2 && pcs[0] == 0x401000 && pcs[1] == 0x402000)
        s->stacks++;
}

static const struct gs_reader_ops seen_ops = {.stack = seen_stack, .event = seen_event};

static struct seen *read_back(const char *path, struct gs_trace_info *info,
                              struct gs_reader_stats *st)
{
    struct seen *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    s->in_order = s->fields_ok = 1;
    char err[512] = "";
    int rc = gs_read_trace(path, &seen_ops, s, info, st, err, sizeof err);
    cr_assert_eq(rc, 0, "gs_read_trace: %s", err);
    cr_assert(s->in_order, "events in file order");
    cr_assert(s->fields_ok, "event fields as written");
    return s;
}

/* Events of chunk b are the tids [b*PER_CHUNK, (b+1)*PER_CHUNK). */
static int has_chunk(const struct seen *s, int b)
{
    unsigned found = 0;
    for (unsigned i = 0; i < s->n; i++)
        found += s->tids[i] / PER_CHUNK == (unsigned)b;
    return found == PER_CHUNK ? 1 : found == 0 ? 0 : -1;
}

static uint32_t chunk_clen(const char *path, uint64_t off)
{
    uint8_t h[GS_CHUNK_HEADER_LEN];
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(pread(fd, h, sizeof h, (off_t)off), (ssize_t)sizeof h);
    close(fd);
    cr_assert_eq(gs_get_u32le(h), GS_CHUNK_MAGIC, "a chunk starts at %llu",
                 (unsigned long long)off);
    return gs_get_u32le(h + 4);
}

static void flip_byte(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x5a;
    cr_assert_eq(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

Test(chunk, whole_trace_reads_back_complete)
{
    struct written w;
    write_trace(&w);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct seen *s = read_back(w.path, &info, &st);
    cr_assert_eq(st.chunks, NCHUNKS, "chunks %llu", (unsigned long long)st.chunks);
    cr_assert_eq(s->n, NCHUNKS * PER_CHUNK, "all %u events, got %u", NCHUNKS * PER_CHUNK, s->n);
    for (unsigned i = 0; i < s->n; i++)
        cr_assert_eq(s->tids[i], i, "event %u in order", i);
    cr_assert_eq(s->stacks, 1, "the stack arrived");
    cr_assert_eq(st.damaged_chunks, 0);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(st.truncated_at, 0);
    cr_assert_eq(st.end_seen, 1, "END seen");
    cr_assert_eq(st.end_events, NCHUNKS * PER_CHUNK);
    cr_assert_eq(st.end_lost, 3);
    cr_assert_eq(st.bytes, w.end, "file size");
    cr_assert_eq(info.version, GS_TRACE_VERSION);
    cr_assert_eq(info.header.pid, (uint64_t)getpid());
    cr_assert_eq(info.header.ppid, (uint64_t)getppid());
    cr_assert_eq(info.header.start_ns, 111);
    cr_assert_eq(info.header.realtime_ns, 222);
    cr_assert_eq(info.header.stack_depth, 48);
    cr_assert_str_eq(info.header.shim_version, "0.1.0");
    char host[256];
    cr_assert_eq(gethostname(host, sizeof host), 0);
    cr_assert_str_eq(info.header.host, host);
    cr_assert_neq(info.header.command[0], 0, "command line recorded");
    free(s);
}

/* A trace of format 2 (allocations and frees as records of their own,
 * which write_trace writes): it still reads, and says its version. */
Test(chunk, a_version_2_trace_still_reads)
{
    struct written w;
    write_trace(&w);
    int fd = open(w.path, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t pre[GS_PREAMBLE_LEN];
    cr_assert_eq(pread(fd, pre, sizeof pre, 0), (ssize_t)sizeof pre);
    uint32_t hlen = gs_get_u32le(pre + 12);
    uint8_t *head = malloc(GS_PREAMBLE_LEN + hlen);
    cr_assert_not_null(head);
    cr_assert_eq(pread(fd, head, GS_PREAMBLE_LEN + hlen, 0), (ssize_t)(GS_PREAMBLE_LEN + hlen));
    gs_put_u32le(head + 8, 2);
    uint8_t crc[4];
    gs_put_u32le(crc, (uint32_t)crc32(0, head, GS_PREAMBLE_LEN + hlen));
    cr_assert_eq(pwrite(fd, head, GS_PREAMBLE_LEN, 0), GS_PREAMBLE_LEN);
    cr_assert_eq(pwrite(fd, crc, 4, GS_PREAMBLE_LEN + hlen), 4);
    close(fd);
    free(head);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct seen *s = read_back(w.path, &info, &st);
    cr_assert_eq(info.version, 2);
    cr_assert_eq(s->n, NCHUNKS * PER_CHUNK, "all %u events, got %u", NCHUNKS * PER_CHUNK, s->n);
    cr_assert_eq(st.damaged_chunks, 0);
    cr_assert_eq(st.damaged_records, 0);
    cr_assert_eq(st.end_seen, 1);
    free(s);
}

Test(chunk, header_only_trace_has_no_chunks)
{
    char path[PATH_MAX];
    in_tmp(path, sizeof path, "empty.trace");
    int fd = gs_create_trace(path, sizeof path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(gs_write_header(fd, 1, 2, 3, 0, NULL), 0);
    close(fd);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct seen *s = read_back(path, &info, &st);
    cr_assert_eq(st.chunks, 0);
    cr_assert_eq(st.damaged_chunks, 0);
    cr_assert_eq(st.truncated_at, 0);
    cr_assert_eq(st.end_seen, 0);
    cr_assert_eq(s->n, 0);
    free(s);
}

/* The codec's header (gs_encode_header) read back by the reader, field by
 * field: both directions of the format agree. */
Test(chunk, an_encoded_header_reads_back_field_by_field)
{
    static const char args[] = "python3\0train.py\0--lr=0.1";
    const char *names[] = {"PYTORCH_CUDA_ALLOC_CONF", "TF_GPU_ALLOCATOR"};
    const char *values[] = {"expandable_segments:True", "cuda_malloc_async"};
    struct gs_header_values v = {.pid = 4242, .ppid = 7, .host = "node-3", .version = "9.9.9",
                                 .args = args, .args_len = sizeof args, .start_ns = 123456789,
                                 .realtime_ns = 1700000000000000000ull, .stack_depth = 48,
                                 .rank_1 = 4, .local_rank_1 = 2, .world_size = 16,
                                 .setting_names = names, .setting_values = values,
                                 .nsettings = 2, .ring_id = 0xabcdef, .ring_name = "t.trace.ring"};
    static uint8_t buf[GS_HEADER_MAX], scratch[GS_HEADER_SCRATCH];
    size_t n = gs_encode_header(&v, buf, sizeof buf, scratch);
    cr_assert_gt(n, GS_PREAMBLE_LEN + 4);
    cr_assert_eq(gs_encode_header(&v, buf, 40, scratch), 0, "too little room: none");
    char path[PATH_MAX];
    in_tmp(path, sizeof path, "header.trace");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    n = gs_encode_header(&v, buf, sizeof buf, scratch);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    free(read_back(path, &info, &st));
    cr_assert_eq(info.header.pid, 4242);
    cr_assert_eq(info.header.ppid, 7);
    cr_assert_str_eq(info.header.host, "node-3");
    cr_assert_str_eq(info.header.shim_version, "9.9.9");
    cr_assert_str_eq(info.header.command, "python3 train.py --lr=0.1");
    cr_assert_eq(info.header.start_ns, 123456789);
    cr_assert_eq(info.header.realtime_ns, 1700000000000000000ull);
    cr_assert_eq(info.header.stack_depth, 48);
    cr_assert_eq(info.header.rank, 3);
    cr_assert_eq(info.header.local_rank, 1);
    cr_assert_eq(info.header.world_size, 16);
    cr_assert_eq(info.header.nsettings, 2);
    cr_assert_str_eq(info.header.settings[1].name, "TF_GPU_ALLOCATOR");
    cr_assert_str_eq(info.header.settings[0].value, "expandable_segments:True");
    cr_assert_eq(info.header.ring_id, 0xabcdef);
    cr_assert_str_eq(info.header.ring_name, "t.trace.ring");
}

Test(chunk, flipped_payload_byte_loses_only_that_chunk)
{
    struct written w;
    write_trace(&w);
    uint32_t clen = chunk_clen(w.path, w.off[1]);
    flip_byte(w.path, w.off[1] + GS_CHUNK_HEADER_LEN + clen / 2);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct seen *s = read_back(w.path, &info, &st);
    cr_assert_eq(st.damaged_chunks, 1, "damaged chunks %llu",
                 (unsigned long long)st.damaged_chunks);
    cr_assert_eq(st.chunks, NCHUNKS - 1);
    cr_assert_eq(has_chunk(s, 0), 1, "chunk 1's events arrive");
    cr_assert_eq(has_chunk(s, 1), 0, "chunk 2's events are dropped whole");
    cr_assert_eq(has_chunk(s, 2), 1, "chunk 3's events arrive");
    cr_assert_eq(has_chunk(s, 3), 1, "chunk 4's events arrive");
    cr_assert_eq(st.truncated_at, 0);
    cr_assert_eq(st.end_seen, 1);
    free(s);
}

Test(chunk, flipped_chunk_header_byte_loses_only_that_chunk)
{
    struct written w;
    write_trace(&w);
    flip_byte(w.path, w.off[2] + 9); /* the raw length */
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct seen *s = read_back(w.path, &info, &st);
    cr_assert_eq(st.damaged_chunks, 1);
    cr_assert_eq(st.chunks, NCHUNKS - 1);
    cr_assert_eq(has_chunk(s, 1), 1);
    cr_assert_eq(has_chunk(s, 2), 0);
    cr_assert_eq(has_chunk(s, 3), 1);
    free(s);
}

Test(chunk, cut_inside_last_chunk_is_truncated_there)
{
    struct written w;
    write_trace(&w);
    uint64_t last = w.off[NCHUNKS - 1];
    uint32_t clen = chunk_clen(w.path, last);
    cr_assert_eq(last + GS_CHUNK_HEADER_LEN + clen, w.end, "the last chunk ends the file");
    cr_assert_eq(truncate(w.path, (off_t)(last + GS_CHUNK_HEADER_LEN + clen / 2)), 0);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct seen *s = read_back(w.path, &info, &st);
    cr_assert_eq(st.truncated_at, last, "truncated at %llu, expected %llu",
                 (unsigned long long)st.truncated_at, (unsigned long long)last);
    cr_assert_eq(st.chunks, NCHUNKS - 1);
    cr_assert_eq(st.damaged_chunks, 0, "a cut last chunk is not damage");
    cr_assert_eq(st.end_seen, 0, "END was in the lost chunk");
    cr_assert_eq(s->n, (NCHUNKS - 1) * PER_CHUNK);
    free(s);
}

Test(chunk, cut_inside_last_chunk_header_is_truncated_there)
{
    struct written w;
    write_trace(&w);
    uint64_t last = w.off[NCHUNKS - 1];
    cr_assert_eq(truncate(w.path, (off_t)(last + 7)), 0);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct seen *s = read_back(w.path, &info, &st);
    cr_assert_eq(st.truncated_at, last);
    cr_assert_eq(st.chunks, NCHUNKS - 1);
    cr_assert_eq(st.damaged_chunks, 0);
    free(s);
}

/* Reads w's file as it is now on one thread and then with the read-ahead
 * thread (gs_read_ahead_from 0), and checks both saw the same. */
static void same_both_ways(const struct written *w)
{
    uint64_t usual = gs_read_ahead_from;
    struct gs_trace_info info[2];
    struct gs_reader_stats st[2];
    struct seen *s[2];
    for (int threaded = 0; threaded < 2; threaded++) {
        gs_read_ahead_from = threaded ? 0 : UINT64_MAX;
        gs_read_cpus = 2; /* ahead, whatever this machine's CPUs */
        s[threaded] = read_back(w->path, &info[threaded], &st[threaded]);
    }
    gs_read_ahead_from = usual;
    gs_read_cpus = 0;
    cr_assert_eq(s[1]->n, s[0]->n, "events: %u with read-ahead, %u without", s[1]->n, s[0]->n);
    cr_assert_eq(memcmp(s[1]->tids, s[0]->tids, s[0]->n * sizeof s[0]->tids[0]), 0,
                 "the same events in the same order");
    cr_assert_eq(s[1]->stacks, s[0]->stacks);
    cr_assert_eq(st[1].chunks, st[0].chunks);
    cr_assert_eq(st[1].damaged_chunks, st[0].damaged_chunks);
    cr_assert_eq(st[1].truncated_at, st[0].truncated_at);
    cr_assert_eq(st[1].end_seen, st[0].end_seen);
    free(s[0]);
    free(s[1]);
}

Test(chunk, read_ahead_thread_reads_what_one_thread_reads)
{
    struct written w;
    write_trace(&w);
    same_both_ways(&w);
    /* damage in the middle, then a cut last chunk, as reader.c's two
     * threads must agree on where one chunk ends and the next begins */
    flip_byte(w.path, w.off[1] + GS_CHUNK_HEADER_LEN + chunk_clen(w.path, w.off[1]) / 2);
    same_both_ways(&w);
    uint64_t last = w.off[NCHUNKS - 1];
    cr_assert_eq(truncate(w.path, (off_t)(last + GS_CHUNK_HEADER_LEN +
                                          chunk_clen(w.path, last) / 2)), 0);
    same_both_ways(&w);
}

/* The file's bytes from off to its end (the chunks a live writer has not
 * written yet, for a test to write them later). */
static uint8_t *cut_at(const char *path, uint64_t off, uint64_t end)
{
    uint8_t *rest = malloc(end - off);
    int fd = open(path, O_RDONLY);
    cr_assert(rest && fd >= 0);
    cr_assert_eq(pread(fd, rest, end - off, (off_t)off), (ssize_t)(end - off));
    close(fd);
    cr_assert_eq(truncate(path, (off_t)off), 0);
    return rest;
}

static void append(const char *path, const uint8_t *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_APPEND);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

static unsigned read_again(const char *path, const struct gs_read_seen *seen, char *err,
                           size_t errsz)
{
    struct seen *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    int rc = gs_read_trace_again(path, seen, &seen_ops, s, &info, &st, err, errsz);
    unsigned n = rc ? UINT32_MAX : s->n;
    free(s);
    return n;
}

/* A what-if replay reads the trace again after the report's read: it must
 * see the records the report saw, though the process wrote more since. */
Test(chunk, a_second_read_sees_what_the_first_saw)
{
    struct written w;
    write_trace(&w);
    uint8_t *rest = cut_at(w.path, w.off[2], w.end); /* two chunks written so far */
    struct seen *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    struct gs_read_seen seen;
    char err[512] = "";
    cr_assert_eq(gs_read_trace_seen(w.path, &seen_ops, s, &info, &st, &seen, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(s->n, 2 * PER_CHUNK);
    cr_assert_eq(seen.size, w.off[2]);
    cr_assert_null(seen.snap, "no ring");
    append(w.path, rest, w.end - w.off[2]); /* the writer goes on */
    cr_assert_eq(read_again(w.path, &seen, err, sizeof err), 2 * PER_CHUNK, "%s", err);
    struct seen *all = read_back(w.path, &info, &st);
    cr_assert_eq(all->n, NCHUNKS * PER_CHUNK, "a new read reads it all");
    /* another file in its place, or this one cut short: said, not read */
    char other[PATH_MAX];
    snprintf(other, sizeof other, "%s", w.path);
    write_trace(&w);
    cr_assert_eq(rename(w.path, other), 0);
    cr_assert_eq(read_again(other, &seen, err, sizeof err), UINT32_MAX);
    cr_assert_not_null(strstr(err, "changed since it was read"), "%s", err);
    gs_read_seen_free(&seen);
    cr_assert_eq(gs_read_trace_seen(other, &seen_ops, s, &info, &st, &seen, err, sizeof err), 0);
    cr_assert_eq(truncate(other, (off_t)w.off[1]), 0);
    cr_assert_eq(read_again(other, &seen, err, sizeof err), UINT32_MAX);
    cr_assert_not_null(strstr(err, "cut short"), "%s", err);
    gs_read_seen_free(&seen);
    free(rest);
    free(all);
    free(s);
}

/* A live process's ring moves on between two reads: the second plays the
 * first's copy of it. */
Test(chunk, a_second_read_plays_the_first_reads_ring)
{
    struct written w;
    write_trace_as(&w, 0x5eed, "t.trace.ring");
    char ring[PATH_MAX + 8];
    snprintf(ring, sizeof ring, "%s.ring", w.path);
    struct gs_ring r;
    cr_assert_eq(gs_ring_init(&r, ring, 1u << 16, 0x5eed), 0, "ring: %s", strerror(errno));
    for (unsigned i = 0; i < 5; i++) {
        if (i == 3) { /* the first read, between the third entry and the fourth */
            struct seen *s = calloc(1, sizeof *s);
            struct gs_trace_info info;
            struct gs_reader_stats st;
            struct gs_read_seen seen;
            char err[512] = "";
            cr_assert_not_null(s);
            cr_assert_eq(gs_read_trace_seen(w.path, &seen_ops, s, &info, &st, &seen, err,
                                            sizeof err), 0, "%s", err);
            cr_assert_eq(st.ring_use, GS_RING_READ, "%s", st.ring_problem);
            cr_assert_eq(s->n, NCHUNKS * PER_CHUNK + 3, "the chunks, and the ring's 3");
            free(s);
            for (unsigned j = 3; j < 5; j++) { /* the process goes on */
                struct gs_ev ev = nth_event(NCHUNKS * PER_CHUNK + j);
                cr_assert_eq(gs_ring_push(&r, &ev, sizeof ev), 0);
            }
            cr_assert_eq(read_again(w.path, &seen, err, sizeof err), NCHUNKS * PER_CHUNK + 3,
                         "%s", err);
            gs_read_seen_free(&seen);
            cr_assert_eq(read_again(w.path, &seen, err, sizeof err), UINT32_MAX,
                         "freed: nothing seen");
            break;
        }
        struct gs_ev ev = nth_event(NCHUNKS * PER_CHUNK + i);
        cr_assert_eq(gs_ring_push(&r, &ev, sizeof ev), 0);
    }
    struct seen *all = calloc(1, sizeof *all);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    char err[512];
    cr_assert_eq(gs_read_trace(w.path, &seen_ops, all, &info, &st, err, sizeof err), 0);
    cr_assert_eq(all->n, NCHUNKS * PER_CHUNK + 5, "a new read: the ring's 5");
    free(all);
    gs_ring_destroy(&r);
    unlink(ring);
}

Test(chunk, flipped_header_byte_is_an_error_naming_file_and_offset)
{
    struct written w;
    write_trace(&w);
    flip_byte(w.path, GS_PREAMBLE_LEN + 4); /* inside the header records */
    struct seen *s = calloc(1, sizeof *s);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    char err[512] = "";
    cr_assert_eq(gs_read_trace(w.path, &seen_ops, s, &info, &st, err, sizeof err), -1,
                 "a damaged header is an error");
    cr_assert_not_null(strstr(err, w.path), "error names the file: %s", err);
    cr_assert_not_null(strstr(err, "offset"), "error says offset: %s", err);
    cr_assert_not_null(strstr(err, "checksum"), "error says why: %s", err);
    cr_assert_eq(s->n, 0, "no events from an unreadable trace");
    free(s);
}

Test(chunk, bad_magic_and_missing_file_are_errors)
{
    struct written w;
    write_trace(&w);
    flip_byte(w.path, 0);
    struct gs_trace_info info;
    struct gs_reader_stats st;
    char err[512] = "";
    cr_assert_eq(gs_read_trace(w.path, &seen_ops, NULL, &info, &st, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, w.path), "%s", err);
    cr_assert_not_null(strstr(err, "offset 0"), "%s", err);
    char missing[PATH_MAX];
    in_tmp(missing, sizeof missing, "missing.trace");
    cr_assert_eq(gs_read_trace(missing, &seen_ops, NULL, &info, &st, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, missing), "%s", err);
}

/* ---- creating the file ---- */

static void write_str(int fd, const char *s)
{
    cr_assert_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void check_content(const char *path, const char *want)
{
    char buf[256] = "";
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0, "open %s", path);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    cr_assert_geq(n, 0);
    buf[n] = 0;
    cr_assert_str_eq(buf, want, "content of %s", path);
}

Test(create, never_overwrites_adds_a_suffix)
{
    char p1[PATH_MAX], p2[PATH_MAX], p3[PATH_MAX], want[PATH_MAX];
    in_tmp(p1, sizeof p1, "run.trace");
    strcpy(p2, p1);
    strcpy(p3, p1);
    int fd1 = gs_create_trace(p1, sizeof p1);
    cr_assert_geq(fd1, 0);
    write_str(fd1, "first");
    close(fd1);
    int fd2 = gs_create_trace(p2, sizeof p2);
    cr_assert_geq(fd2, 0, "second create succeeds under another name");
    in_tmp(want, sizeof want, "run-1.trace");
    cr_assert_str_eq(p2, want, "second name written back");
    write_str(fd2, "second");
    close(fd2);
    int fd3 = gs_create_trace(p3, sizeof p3);
    cr_assert_geq(fd3, 0);
    in_tmp(want, sizeof want, "run-2.trace");
    cr_assert_str_eq(p3, want, "third name written back");
    close(fd3);
    check_content(p1, "first");
    check_content(p2, "second");
}

Test(create, suffix_for_a_name_without_dot_trace)
{
    char p[PATH_MAX], want[PATH_MAX];
    in_tmp(p, sizeof p, "out.bin");
    int fd = gs_create_trace(p, sizeof p);
    cr_assert_geq(fd, 0);
    close(fd);
    fd = gs_create_trace(p, sizeof p);
    cr_assert_geq(fd, 0);
    close(fd);
    in_tmp(want, sizeof want, "out.bin-1");
    cr_assert_str_eq(p, want);
}

Test(create, symlink_is_not_followed)
{
    char link[PATH_MAX], victim[PATH_MAX], want[PATH_MAX];
    in_tmp(link, sizeof link, "s.trace");
    in_tmp(victim, sizeof victim, "victim");
    cr_assert_eq(symlink(victim, link), 0, "symlink: %s", strerror(errno));
    int fd = gs_create_trace(link, sizeof link);
    cr_assert_geq(fd, 0);
    write_str(fd, "trace");
    close(fd);
    in_tmp(want, sizeof want, "s-1.trace");
    cr_assert_str_eq(link, want, "written beside the symlink, not through it");
    struct stat sb;
    cr_assert_eq(lstat(victim, &sb), -1, "the dangling symlink's target was not created");
    char orig[PATH_MAX];
    in_tmp(orig, sizeof orig, "s.trace");
    cr_assert_eq(lstat(orig, &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode), "the symlink is still a symlink");
}

Test(create, symlink_to_existing_file_leaves_it_alone)
{
    char link[PATH_MAX], victim[PATH_MAX];
    in_tmp(link, sizeof link, "s.trace");
    in_tmp(victim, sizeof victim, "victim");
    int vfd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0644);
    cr_assert_geq(vfd, 0);
    write_str(vfd, "precious");
    close(vfd);
    cr_assert_eq(symlink(victim, link), 0);
    int fd = gs_create_trace(link, sizeof link);
    cr_assert_geq(fd, 0);
    write_str(fd, "trace");
    close(fd);
    check_content(victim, "precious");
}

Test(create, files_are_mode_0600)
{
    umask(022);
    char p[PATH_MAX];
    in_tmp(p, sizeof p, "m.trace");
    int fd = gs_create_trace(p, sizeof p);
    cr_assert_geq(fd, 0);
    struct stat sb;
    cr_assert_eq(fstat(fd, &sb), 0);
    cr_assert_eq(sb.st_mode & 07777, 0600, "mode %o", (unsigned)(sb.st_mode & 07777));
    close(fd);
    fd = gs_create_trace(p, sizeof p); /* the suffixed one too */
    cr_assert_geq(fd, 0);
    cr_assert_eq(fstat(fd, &sb), 0);
    cr_assert_eq(sb.st_mode & 07777, 0600, "suffixed file mode %o",
                 (unsigned)(sb.st_mode & 07777));
    close(fd);
}

Test(create, missing_directories_are_created)
{
    char p[PATH_MAX];
    in_tmp(p, sizeof p, "no/such/dir.trace");
    int fd = gs_create_trace(p, sizeof p);
    cr_assert_geq(fd, 0, "created through missing directories: errno %d", errno);
    close(fd);
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0600);
}

Test(create, a_file_in_the_way_of_a_directory_fails_with_errno)
{
    char blocker[PATH_MAX], p[PATH_MAX];
    in_tmp(blocker, sizeof blocker, "plain");
    int fd = open(blocker, O_WRONLY | O_CREAT, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    in_tmp(p, sizeof p, "plain/sub/x.trace");
    errno = 0;
    cr_assert_eq(gs_create_trace(p, sizeof p), -1);
    cr_assert_eq(errno, ENOTDIR, "errno %d", errno);
}

/* ---- gs_expand_path ---- */

Test(expand, rank_local_rank_and_time)
{
    char out[512];
    setenv("RANK", "7", 1);
    setenv("LOCAL_RANK", "3", 1);
    cr_assert_eq(gs_expand_path("r%r-l%l", out, sizeof out), 0);
    cr_assert_str_eq(out, "r7-l3");
    unsetenv("RANK");
    unsetenv("LOCAL_RANK");
    setenv("SLURM_PROCID", "12", 1);
    cr_assert_eq(gs_expand_path("r%r-l%l", out, sizeof out), 0);
    cr_assert_str_eq(out, "r12-l0", "the next variable, and 0 for none");
    unsetenv("SLURM_PROCID");
    cr_assert_eq(gs_expand_path("%t", out, sizeof out), 0);
    cr_assert_eq(strlen(out), 15, "YYYYMMDD-HHMMSS: %s", out);
    cr_assert_eq(out[8], '-');
}

Test(expand, pid_host_percent_and_lone_percent)
{
    char out[512], want[512], host[256];
    cr_assert_eq(gethostname(host, sizeof host), 0);
    host[sizeof host - 1] = 0;

    cr_assert_eq(gs_expand_path("gpushim.%p.trace", out, sizeof out), 0);
    snprintf(want, sizeof want, "gpushim.%ld.trace", (long)getpid());
    cr_assert_str_eq(out, want);

    cr_assert_eq(gs_expand_path("%h-%p", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s-%ld", host, (long)getpid());
    cr_assert_str_eq(out, want);

    cr_assert_eq(gs_expand_path("100%%.trace", out, sizeof out), 0);
    cr_assert_str_eq(out, "100%.trace");

    cr_assert_eq(gs_expand_path("%%p", out, sizeof out), 0);
    cr_assert_str_eq(out, "%p", "%%p is a percent then p");

    cr_assert_eq(gs_expand_path("trace%", out, sizeof out), 0);
    cr_assert_str_eq(out, "trace%", "a lone %% at the end stands for itself");

    cr_assert_eq(gs_expand_path("%", out, sizeof out), 0);
    cr_assert_str_eq(out, "%");

    cr_assert_eq(gs_expand_path("a%xb", out, sizeof out), 0);
    cr_assert_str_eq(out, "a%xb", "unknown escapes stand for themselves");
}

Test(expand, empty_and_too_long_fail)
{
    char out[16];
    cr_assert_eq(gs_expand_path("", out, sizeof out), -1, "empty name");
    cr_assert_eq(gs_expand_path("0123456789abcdef", out, sizeof out), -1, "16 chars + NUL");
    cr_assert_eq(gs_expand_path("0123456789abcde", out, sizeof out), 0, "15 chars + NUL fit");
    cr_assert_str_eq(out, "0123456789abcde");
    char tiny[4];
    cr_assert_eq(gs_expand_path("%p%p%p", tiny, sizeof tiny), -1, "pids do not fit");
}
