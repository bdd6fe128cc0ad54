/*
 * test_tape.c - analyzer/read/tape.c through the reader: every trace of the
 * report fuzz corpus (tests/fuzz/corpus/report: events of every kind,
 * marks and ranges with labels, stacks, modules, Python code, thread
 * names, checkpoints, damaged and cut chunks) read on one thread, where
 * each chunk is decoded straight into the callbacks, and read ahead, where
 * it is decoded onto tapes on the other thread and played here; once with
 * the usual tape size and once handing every record on by itself. Every
 * callback's every argument and every count must be the same all three
 * ways, and a checkpoint the callback refuses is counted damaged either way.
 * Then the same for a trace written here with what the corpus lacks: a
 * mapping's parent, an allocation of all the free memory, damaged records,
 * an empty label, ring positions.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/trace/encode.h"
#include "gpushim_ring.h"
#include "analyzer/read/read.h"
#include "shim/base/base.h"
#include "shim/file/file.h"

#define CORPUS "tests/fuzz/corpus/report"

/* Everything the callbacks were handed, as bytes in order. */
struct log {
    uint8_t *p;
    size_t len, cap;
    unsigned events, full_events, all_free, labels, stacks, modules, pycodes, threads, checkpoints;
};

static void put(struct log *l, const void *p, size_t n)
{
    if (l->len + n > l->cap) {
        l->cap = (l->len + n) * 2;
        l->p = realloc(l->p, l->cap);
        cr_assert_not_null(l->p);
    }
    memcpy(l->p + l->len, p, n);
    l->len += n;
}

#define PUT(l, v)                                                                                  \
    do {                                                                                           \
        __typeof__(v) v_ = (v);                                                                    \
        put(l, &v_, sizeof v_);                                                                    \
    } while (0)

static void on_event(void *ctx, const struct gs_revent *e)
{
    struct log *l = ctx;
    l->events++;
    l->full_events += e->result || e->free_bytes > 1 || e->total_bytes || e->pool ||
                      e->reserved || e->used || e->graph || e->op || e->flags;
    l->labels += e->label != NULL;
    l->all_free += e->all_free != 0;
    PUT(l, 'E');
    PUT(l, (uint32_t)e->type);
    PUT(l, e->time_ns);
    PUT(l, e->tid);
    PUT(l, e->api);
    PUT(l, e->device);
    PUT(l, e->addr);
    PUT(l, e->size);
    PUT(l, e->stream);
    PUT(l, e->stack_id);
    PUT(l, e->kind);
    PUT(l, e->space);
    PUT(l, e->result);
    PUT(l, e->free_bytes);
    PUT(l, e->total_bytes);
    PUT(l, e->pool);
    PUT(l, e->reserved);
    PUT(l, e->used);
    PUT(l, e->parent);
    PUT(l, e->all_free);
    PUT(l, e->graph);
    PUT(l, e->exec);
    PUT(l, e->flags);
    PUT(l, e->op);
    PUT(l, e->sampled);
    PUT(l, e->label != NULL);
    PUT(l, e->label_len);
    if (e->label_len)
        put(l, e->label, e->label_len);
}

static void on_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    struct log *l = ctx;
    l->stacks++;
    PUT(l, 'S');
    PUT(l, id);
    PUT(l, n);
    put(l, pcs, n * sizeof *pcs);
}

static void on_module(void *ctx, const struct gs_rmodule *m)
{
    struct log *l = ctx;
    l->modules++;
    PUT(l, 'M');
    PUT(l, m->id);
    PUT(l, m->bias);
    PUT(l, m->lo);
    PUT(l, m->span);
    put(l, m->path, strlen(m->path) + 1);
    PUT(l, m->build_id_len);
    put(l, m->build_id, m->build_id_len);
}

static void on_pycode(void *ctx, const struct gs_rpycode *c)
{
    struct log *l = ctx;
    l->pycodes++;
    PUT(l, 'P');
    PUT(l, c->id);
    PUT(l, c->first_line);
    put(l, c->file, strlen(c->file) + 1);
    put(l, c->function, strlen(c->function) + 1);
}

static void on_thread(void *ctx, uint32_t tid, const char *name)
{
    struct log *l = ctx;
    l->threads++;
    PUT(l, 'T');
    PUT(l, tid);
    put(l, name, strlen(name) + 1);
}

/* Refuses every checkpoint record whose payload's length is odd: the
 * damage it reports must be counted the same on either thread. */
static int on_checkpoint(void *ctx, uint8_t type, const uint8_t *payload, size_t len)
{
    struct log *l = ctx;
    l->checkpoints++;
    PUT(l, 'C');
    PUT(l, type);
    PUT(l, len);
    put(l, payload, len);
    return len % 2 ? -1 : 0;
}

static const struct gs_reader_ops log_ops = {
    .module = on_module,
    .stack = on_stack,
    .pycode = on_pycode,
    .event = on_event,
    .checkpoint = on_checkpoint,
    .thread = on_thread,
};

enum way { ONE_THREAD, AHEAD, AHEAD_EVERY_RECORD, WAYS };

static void read_one_way(const char *path, enum way way, struct log *l, struct gs_reader_stats *st)
{
    uint64_t usual_from = gs_read_ahead_from;
    size_t usual_bytes = gs_read_tape_bytes;
    gs_read_ahead_from = way == ONE_THREAD ? UINT64_MAX : 0;
    gs_read_cpus = 2; /* ahead, whatever this machine's CPUs */
    if (way == AHEAD_EVERY_RECORD)
        gs_read_tape_bytes = 1;
    struct gs_trace_info info;
    char err[512];
    int rc = gs_read_trace(path, &log_ops, l, &info, st, err, sizeof err);
    gs_read_ahead_from = usual_from;
    gs_read_tape_bytes = usual_bytes;
    gs_read_cpus = 0;
    cr_assert_eq(rc, 0, "%s: %s", path, err);
}

/* Reads path every way into l and st, and checks they all saw the same. */
static void read_every_way(const char *path, struct log *l, struct gs_reader_stats *st)
{
    for (int w = 0; w < WAYS; w++)
        read_one_way(path, (enum way)w, &l[w], &st[w]);
    for (int w = 1; w < WAYS; w++) {
        cr_assert_eq(l[w].len, l[0].len, "%s, way %d: %zu bytes of callbacks, one thread %zu",
                     path, w, l[w].len, l[0].len);
        cr_assert(l[0].len == 0 || memcmp(l[w].p, l[0].p, l[0].len) == 0,
                  "%s, way %d: the callbacks differ from one thread's", path, w);
        cr_assert_eq(st[w].damaged_records, st[0].damaged_records, "%s, way %d", path, w);
        cr_assert_eq(st[w].damaged_chunks, st[0].damaged_chunks, "%s, way %d", path, w);
        cr_assert_eq(st[w].chunks, st[0].chunks, "%s, way %d", path, w);
        cr_assert_eq(st[w].truncated_at, st[0].truncated_at, "%s, way %d", path, w);
        cr_assert_eq(st[w].end_seen, st[0].end_seen, "%s, way %d", path, w);
        cr_assert_eq(st[w].end_events, st[0].end_events, "%s, way %d", path, w);
        cr_assert_eq(st[w].end_lost, st[0].end_lost, "%s, way %d", path, w);
        cr_assert_eq(st[w].end_time_ns, st[0].end_time_ns, "%s, way %d", path, w);
        cr_assert_eq(st[w].ring_pos, st[0].ring_pos, "%s, way %d", path, w);
        cr_assert_eq(st[w].recovered_events, st[0].recovered_events, "%s, way %d", path, w);
    }
}

Test(tape, tapes_hand_on_what_one_thread_decodes)
{
    DIR *d = opendir(CORPUS);
    cr_assert_not_null(d, "%s: run the unit tests from the repository's top", CORPUS);
    struct dirent *de;
    unsigned traces = 0;
    struct log all = {0};
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", CORPUS, de->d_name);
        struct log l[WAYS] = {{0}};
        struct gs_reader_stats st[WAYS];
        read_every_way(path, l, st);
        all.events += l[0].events;
        all.full_events += l[0].full_events;
        all.labels += l[0].labels;
        all.stacks += l[0].stacks;
        all.modules += l[0].modules;
        all.pycodes += l[0].pycodes;
        all.threads += l[0].threads;
        all.checkpoints += l[0].checkpoints;
        for (int w = 0; w < WAYS; w++)
            free(l[w].p);
        traces++;
    }
    closedir(d);
    /* what the corpus must hold for the comparison to mean something */
    cr_assert_geq(traces, 20, "%u traces in %s", traces, CORPUS);
    cr_assert_gt(all.events, 300, "events %u", all.events);
    cr_assert_gt(all.full_events, 0, "events with fields past an allocation's or a free's");
    cr_assert_gt(all.labels, 0, "events with labels");
    cr_assert_gt(all.stacks, 0);
    cr_assert_gt(all.modules, 0);
    cr_assert_gt(all.pycodes, 0);
    cr_assert_gt(all.threads, 0);
    cr_assert_gt(all.checkpoints, 0);
}

/* ---- a trace with what the corpus lacks ---- */

#define CHUNKS 3

static size_t put_body(struct gs_encoder *e, uint8_t *raw, const void *body, uint32_t len)
{
    size_t n = gs_encode(e, body, len, raw);
    cr_assert_gt(n, 0, "gs_encode refused a body of type %u", *(const uint8_t *)body);
    return n;
}

static void write_odd_trace(const char *path_in, char *path, size_t pathsz)
{
    snprintf(path, pathsz, "%s", path_in);
    int fd = gs_create_trace(path, pathsz);
    cr_assert_geq(fd, 0, "gs_create_trace %s: %s", path, strerror(errno));
    cr_assert_eq(gs_write_header(fd, 111, 222, 48, 0, NULL), 0);
    size_t rawcap = 1 << 16, scratch_len = gs_chunk_scratch_size(rawcap);
    uint8_t *raw = malloc(rawcap), *scratch = malloc(scratch_len);
    cr_assert(raw && scratch);
    struct gs_encoder e;
    for (unsigned c = 0; c < CHUNKS; c++) {
        gs_encoder_reset(&e);
        size_t len = 0;
        uint64_t t = 1000 * (c + 1);
        struct gs_ev handle = {.type = GS_REC_ALLOC, .kind = GS_KIND_DEVICE,
                               .space = GS_SPACE_HANDLE, .tid = 7, .stack_id = 1,
                               .time_ns = t, .addr = 0x55 + c, .size = 2 << 20,
                               .free_bytes = 1 /* it asked for all the free memory */};
        struct gs_ev mapping = {.type = GS_REC_ALLOC, .kind = GS_KIND_MAPPED,
                                .space = GS_SPACE_MAPPING, .tid = 7, .stack_id = 1,
                                .time_ns = t + 1, .addr = 0x7f0000000000ull + (c << 21),
                                .size = 2 << 20, .parent = 0x55 + c};
        struct gs_ev failed = {.type = GS_REC_ALLOC_FAILED, .tid = 8, .stack_id = 1,
                               .time_ns = t + 2, .size = 1ull << 40, .result = 2,
                               .free_bytes = 12345, .total_bytes = 67890};
        struct gs_mark_body mark = {.ev = {.type = GS_REC_MARK, .tid = 7, .time_ns = t + 3},
                                    .label_len = 0};
        len += put_body(&e, raw + len, &handle, sizeof handle);
        len += put_body(&e, raw + len, &mapping, sizeof mapping);
        len += put_body(&e, raw + len, &failed, sizeof failed);
        len += put_body(&e, raw + len, &mark, sizeof mark);
        const uint8_t damaged[] = {GS_REC_FREE, 0, GS_REC_STACK, 3, 9, 3, 2};
        memcpy(raw + len, damaged, sizeof damaged);
        len += sizeof damaged;
        const uint8_t ring_pos[] = {GS_REC_RING_POS, 2, (uint8_t)(0x80 | c), 1};
        memcpy(raw + len, ring_pos, sizeof ring_pos);
        len += sizeof ring_pos;
        if (c == CHUNKS - 1) {
            struct gs_end_body end = {.type = GS_REC_END, .events = 12, .lost = 3,
                                      .time_ns = 99999};
            len += put_body(&e, raw + len, &end, sizeof end);
        }
        size_t written;
        cr_assert_eq(gs_write_chunk(fd, raw, len, scratch, scratch_len, &written), 0);
    }
    close(fd);
    free(raw);
    free(scratch);
}

Test(tape, tapes_hand_on_parents_damage_empty_labels_and_ring_positions)
{
    const char *base = getenv("TMPDIR");
    char dir[256], path[512], want[512];
    snprintf(dir, sizeof dir, "%s/gs_tape_XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(want, sizeof want, "%s/odd.trace", dir);
    write_odd_trace(want, path, sizeof path);
    struct log l[WAYS] = {{0}};
    struct gs_reader_stats st[WAYS];
    read_every_way(path, l, st);
    /* what one thread saw: the trace as written */
    cr_assert_eq(l[0].events, 4 * CHUNKS);
    cr_assert_eq(l[0].full_events, CHUNKS, "the failed allocations");
    cr_assert_eq(l[0].labels, CHUNKS, "the marks' empty labels");
    cr_assert_eq(l[0].all_free, CHUNKS, "the handles asked for all the free memory");
    cr_assert_eq(st[0].damaged_records, 2 * CHUNKS);
    cr_assert_eq(st[0].ring_pos, 0x80 + CHUNKS - 1);
    cr_assert_eq(st[0].end_seen, 1);
    cr_assert_eq(st[0].end_time_ns, 99999);
    for (int w = 0; w < WAYS; w++)
        free(l[w].p);
    unlink(path);
    rmdir(dir);
}
