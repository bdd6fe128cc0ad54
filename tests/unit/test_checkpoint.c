/*
 * test_checkpoint.c - analyzer/model/checkpoint.c and analyzer/read/
 * checkpoint_load.c: a replay written as records by
 * gs_checkpoint_write, read back through gs_decode_chunk into a fresh
 * replay (gs_replay_ops), then fed the events that follow, must agree with
 * a replay of every event on every figure a report reads: counters, peak
 * and its time, each site's bytes and count at the peak
 * (gs_site_peak_bytes), leaks, devices, kinds, pools, failures, the live
 * set with its references and mapping parents, the frees a FREE_FAILED may
 * still undo, modules, Python code objects and stacks.
 *
 * The schedule has three devices, every kind, handles mapped and released
 * while mapped, a retained handle, one unmap over two mappings, FREE then
 * FREE_FAILED (across the checkpoint too), double frees, an allocation over
 * a live address, pools, failed allocations, a peak in its first half, and
 * enough frees to push older ones out of the FREE_FAILED window. It is cut
 * at every event. Also: each record made by hand as include/gpushim_trace.h
 * lays it out, loaded field by field and written back byte for byte (the
 * format itself, which a round trip cannot pin); an empty replay, a
 * checkpoint of a checkpoint, the failures cap, a whole trace file
 * (gs_read_trace) with the checkpoint spread over several chunks, STACK,
 * MODULE and PYCODE records defined twice, and hostile checkpoints (out of
 * place, out of range, truncated at every byte, random) that must be
 * refused and counted, never crash (run it under SAN=1).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/trace/encode.h"
#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/read/checkpoint_load.h"
#include "shim/base/base.h"
#include "shim/file/file.h"
#include "ckpt_bytes.h"
#include "gpushim_ring.h"

#define ASSERT_U64(got, want, ...)                                                             \
    cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

/* ---- the schedule ---- */

#define MAX_EV 2048
#define MB (1ull << 20)

struct seq {
    struct gs_revent ev[MAX_EV];
    size_t n;
    uint64_t t;
};

static struct gs_revent *add(struct seq *s, enum gs_record_type type, uint32_t tid)
{
    cr_assert_lt(s->n, MAX_EV);
    struct gs_revent *e = &s->ev[s->n++];
    memset(e, 0, sizeof *e);
    e->type = type;
    e->time_ns = s->t += 1000;
    e->tid = tid;
    e->api = GS_API_cuMemAlloc_v2;
    return e;
}

static void s_alloc(struct seq *s, uint64_t addr, uint64_t size, uint32_t stack, int32_t dev,
                    uint32_t kind, uint32_t space, uint64_t parent)
{
    struct gs_revent *e = add(s, GS_REC_ALLOC, 1);
    e->addr = addr;
    e->size = size;
    e->stack_id = stack;
    e->device = dev;
    e->kind = kind;
    e->space = space;
    e->parent = parent;
    e->api = (uint32_t)(stack % GS_API_COUNT);
}

static void s_dev(struct seq *s, uint64_t addr, uint64_t size, uint32_t stack, int32_t dev)
{
    s_alloc(s, addr, size, stack, dev, GS_KIND_DEVICE, GS_SPACE_ADDRESS, 0);
}

static void s_free(struct seq *s, uint64_t addr, uint32_t space, uint64_t size, uint32_t tid)
{
    struct gs_revent *e = add(s, GS_REC_FREE, tid);
    e->addr = addr;
    e->space = space;
    e->size = size;
}

static void s_free_failed(struct seq *s, uint64_t addr, uint32_t space, uint32_t tid)
{
    struct gs_revent *e = add(s, GS_REC_FREE_FAILED, tid);
    e->addr = addr;
    e->space = space;
    e->result = 1;
}

static void s_ref(struct seq *s, uint64_t addr, uint32_t space)
{
    struct gs_revent *e = add(s, GS_REC_REF, 1);
    e->addr = addr;
    e->space = space;
}

static void s_pool(struct seq *s, uint64_t pool, int32_t dev, uint64_t reserved, uint64_t used)
{
    struct gs_revent *e = add(s, GS_REC_POOL, 1);
    e->pool = pool;
    e->device = dev;
    e->reserved = reserved;
    e->used = used;
}

static void s_failed(struct seq *s, int32_t dev, uint64_t size, uint32_t stack)
{
    struct gs_revent *e = add(s, GS_REC_ALLOC_FAILED, 3);
    e->device = dev;
    e->size = size;
    e->stack_id = stack;
    e->result = 2;
    e->free_bytes = 5 * MB;
    e->total_bytes = 80 * 1024 * MB;
}

/* Outcomes (outcome.c): a failure of thread tid, and its allocations. */
static void s_fail_t(struct seq *s, uint32_t tid, int32_t dev, uint64_t size, uint32_t stack,
                     uint32_t result, uint64_t free_bytes)
{
    struct gs_revent *e = add(s, GS_REC_ALLOC_FAILED, tid);
    e->device = dev;
    e->size = size;
    e->stack_id = stack;
    e->result = result;
    e->free_bytes = free_bytes;
    e->total_bytes = 64 * MB;
}

static void s_dev_t(struct seq *s, uint32_t tid, uint64_t addr, uint64_t size, uint32_t stack)
{
    s_dev(s, addr, size, stack, 0);
    s->ev[s->n - 1].tid = tid;
}

/* Frees that age the FREE_FAILED window: n allocations of stack 20 freed at once. */
static void churn(struct seq *s, uint64_t base, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        s_dev(s, base + i * 0x100, 4096, 20, 2);
        s_free(s, base + i * 0x100, GS_SPACE_ADDRESS, 0, 1);
    }
}

static size_t peak_index; /* the event that makes the peak */

static void schedule(struct seq *s)
{
    memset(s, 0, sizeof *s);
    s_pool(s, 0xa, 0, 8 * MB, 2 * MB);
    s_dev(s, 0x1000, 100 * MB, 1, 0);
    s_dev(s, 0x2000, 50 * MB, 2, 1);
    s_alloc(s, 0x3000, 10 * MB, 3, 0, GS_KIND_MANAGED, GS_SPACE_ADDRESS, 0);
    s_alloc(s, 0x4000, 1 * MB, 4, GS_DEVICE_UNKNOWN, GS_KIND_HOST_PINNED, GS_SPACE_ADDRESS, 0);
    /* VMM: two handles, each mapped; one retained; both released while mapped */
    s_alloc(s, 0x11, 64 * MB, 5, 0, GS_KIND_DEVICE, GS_SPACE_HANDLE, 0);
    s_alloc(s, 0x70000000, 256 * MB, 6, GS_DEVICE_UNKNOWN, GS_KIND_ADDRESS_SPACE,
            GS_SPACE_RESERVATION, 0);
    s_alloc(s, 0x70000000, 64 * MB, 7, 0, GS_KIND_MAPPED, GS_SPACE_MAPPING, 0x11);
    s_ref(s, 0x11, GS_SPACE_HANDLE);
    s_free(s, 0x11, GS_SPACE_HANDLE, 0, 1);
    s_alloc(s, 0x12, 32 * MB, 5, 0, GS_KIND_DEVICE, GS_SPACE_HANDLE, 0);
    s_alloc(s, 0x74000000, 32 * MB, 7, 0, GS_KIND_MAPPED, GS_SPACE_MAPPING, 0x12);
    s_free(s, 0x12, GS_SPACE_HANDLE, 0, 1);
    /* a multicast object, kept: no device, not device memory */
    s_alloc(s, 0x13, 32 * MB, 6, GS_DEVICE_UNKNOWN, GS_KIND_MULTICAST, GS_SPACE_HANDLE, 0);
    /* the peak, freed at once: a FREE_FAILED brings it back, then it goes */
    s_dev(s, 0x5000, 401 * MB, 8, 0); /* 1 MB past a 2 MB page: 1 MB of rounding */
    peak_index = s->n - 1;
    s_failed(s, 0, 1ull << 40, 9);
    s_free(s, 0x5000, GS_SPACE_ADDRESS, 0, 2);
    s_free_failed(s, 0x5000, GS_SPACE_ADDRESS, 2);
    s_free(s, 0x5000, GS_SPACE_ADDRESS, 0, 2);
    s_free(s, 0xdead, GS_SPACE_ADDRESS, 0, 3);
    s_alloc(s, 0x6000, 2 * MB, 10, 1, GS_KIND_ARRAY, GS_SPACE_ARRAY, 0);
    s_pool(s, 0xa, 0, 16 * MB, 12 * MB);
    s_dev(s, 0x7000, 10 * MB, 1, 2);
    /* X is freed, then Y, then 255 more: Y is the oldest free a FREE_FAILED
     * may still undo, X has just left the window. */
    s_dev(s, 0xa000, 3 * MB, 14, 1);
    s_dev(s, 0xb000, 5 * MB, 15, 1);
    s_free(s, 0xa000, GS_SPACE_ADDRESS, 0, 9);
    s_free(s, 0xb000, GS_SPACE_ADDRESS, 0, 8);
    churn(s, 0x10000000, 255);
    s_free_failed(s, 0xb000, GS_SPACE_ADDRESS, 8); /* Y: restored */
    s_free_failed(s, 0xa000, GS_SPACE_ADDRESS, 9); /* X: too late */
    s_free(s, 0x2000, GS_SPACE_ADDRESS, 0, 4);
    s_free_failed(s, 0x2000, GS_SPACE_ADDRESS, 4);
    /* one unmap over both mappings ends them, and the released handle 0x12;
     * a FREE_FAILED of it restores the first mapping and its hold on 0x11 */
    s_free(s, 0x70000000, GS_SPACE_MAPPING, 128 * MB, 5);
    s_free_failed(s, 0x70000000, GS_SPACE_MAPPING, 5);
    s_alloc(s, 0x8000, 7 * MB, 11, 0, GS_KIND_IMPORTED, GS_SPACE_ADDRESS, 0);
    s_dev(s, 0x9000, 150 * MB, 12, 0);
    s_pool(s, 0xb, 1, 4 * MB, 4 * MB);
    s_failed(s, 1, 1ull << 39, 9);
    s_free(s, 0x1000, GS_SPACE_ADDRESS, 0, 1);
    s_dev(s, 0x7000, 20 * MB, 13, 2); /* over a live address: its free was lost */
    s_free(s, 0xdead, GS_SPACE_ADDRESS, 0, 3);
    s_free_failed(s, 0xdead, GS_SPACE_ADDRESS, 3);
    s_free(s, 0x9000, GS_SPACE_ADDRESS, 0, 6);
    s_free(s, 0x9000, GS_SPACE_ADDRESS, 0, 6); /* double free, refused: revives nothing */
    s_free_failed(s, 0x9000, GS_SPACE_ADDRESS, 6);
    s_free(s, 0x70000000, GS_SPACE_MAPPING, 0, 5);
    s_free(s, 0x11, GS_SPACE_HANDLE, 0, 1); /* the last reference: 0x11 ends */
    s_free_failed(s, 0x11, GS_SPACE_HANDLE, 1);
    s_pool(s, 0xa, 0, 0, 0);
    churn(s, 0x20000000, 40);
    s_dev(s, 0xc000, 1 * MB, 16, 3);
    /* two mappings ended by one unmap, the later one in an earlier slot:
     * they end in the same order whether their slots were renumbered by a
     * checkpoint between them or not */
    s_alloc(s, 0x78000000, 1 * MB, 17, 0, GS_KIND_MAPPED, GS_SPACE_MAPPING, 0);
    s_free(s, 0x3000, GS_SPACE_ADDRESS, 0, 1);
    s_alloc(s, 0x79000000, 1 * MB, 17, 0, GS_KIND_MAPPED, GS_SPACE_MAPPING, 0);
    s_free(s, 0x78000000, GS_SPACE_MAPPING, 0x2000000, 5);
    /* Outcomes. Thread 7: a retry from another line (stack 31) after freeing
     * 8 MB, a refused failure between: recovered. */
    s_dev_t(s, 7, 0xd000, 8 * MB, 1);
    s_fail_t(s, 7, 0, 16 * MB, 30, 2, 4 * MB);
    s_free(s, 0xd000, GS_SPACE_ADDRESS, 0, 7);
    s_fail_t(s, 7, 0, 2 * MB, 30, 801, 12 * MB);
    s_fail_t(s, 7, 0, 16 * MB, 31, 2, 12 * MB);
    s_dev_t(s, 7, 0xd100, 16 * MB, 30);
    /* thread 8: all free memory, halved, halved again, freed at once: a probe */
    s_fail_t(s, 8, 0, 60 * MB, 30, 2, 60 * MB);
    s_fail_t(s, 8, 0, 30 * MB, 30, 2, 60 * MB);
    s_dev_t(s, 8, 0xe000, 15 * MB, 30);
    s_pool(s, 0xa, 0, 0, 0); /* a pool sample between: not the thread's */
    s_free(s, 0xe000, GS_SPACE_ADDRESS, 0, 8);
    /* thread 9: halved, then something else before a free: recovered, and
     * held apart until then */
    s_fail_t(s, 9, 0, 40 * MB, 30, 2, 30 * MB);
    s_dev_t(s, 9, 0xe100, 20 * MB, 31);
    s_dev_t(s, 9, 0xe200, 1 * MB, 2);
    /* thread 10: its next attempt from elsewhere: unrecovered */
    s_fail_t(s, 10, 0, 8 * MB, 30, 2, 1 * MB);
    s_dev_t(s, 10, 0xe300, 4 * MB, 3);
    /* thread 11: still open at the end; thread 12: a probe's allocation
     * still held at the end */
    s_fail_t(s, 11, 0, 8 * MB, 30, 2, 1 * MB);
    s_fail_t(s, 12, 0, 10 * MB, 30, 2, 10 * MB);
    s_dev_t(s, 12, 0xe400, 5 * MB, 30);
}

/* ---- modules and stacks, as the reader would define them ---- */

static void define(struct gs_replay *r, uint32_t first_stack, uint32_t last_stack)
{
    static const uint8_t build_id[] = {0xde, 0xad, 0xbe, 0xef};
    struct gs_rmodule prog = {.id = 1, .bias = 0x400000, .lo = 0x400000, .span = 0x100000,
                              .path = "/usr/bin/train", .build_id = build_id,
                              .build_id_len = sizeof build_id};
    struct gs_rmodule cuda = {.id = 2, .bias = 0x7f0000000000, .lo = 0x7f0000000000,
                              .span = 0x1000000, .path = "/usr/lib/libcuda.so.1"};
    struct gs_rpycode forward = {.id = 1, .file = "/srv/model.py", .function = "Model.forward",
                                 .first_line = 80};
    struct gs_rpycode top = {.id = GS_PY_MAX_CODE, .file = "train.py", .function = "<module>",
                             .first_line = 1};
    if (first_stack == 1) {
        gs_replay_ops.module(r, &prog);
        gs_replay_ops.module(r, &cuda);
        gs_replay_ops.pycode(r, &forward);
        gs_replay_ops.pycode(r, &top);
        /* one call site for a retry: a frame apart (outcome.c) */
        uint64_t site30[3] = {0x7f0000000200, 0x400300, 0x401000};
        uint64_t site31[3] = {0x7f0000000200, 0x400310, 0x401000};
        gs_replay_ops.stack(r, 30, site30, 3);
        gs_replay_ops.stack(r, 31, site31, 3);
    }
    for (uint32_t id = first_stack; id <= last_stack; id++) {
        uint64_t pcs[6] = {0x7f0000000100 + id, 0x400100 + id * 16, 0x400000 + id, 0x401000,
                           gs_py_pc(1, 88 + id), gs_py_pc(GS_PY_MAX_CODE, 3)};
        gs_replay_ops.stack(r, id, pcs, id % 7); /* some with Python frames */
    }
}

/* ---- a checkpoint into memory (ckpt_bytes.h), read back in chunks ---- */

/* Decodes b as the reader would, in chunks of about chunk bytes cut at
 * record boundaries (0: one chunk). Returns the damaged records. */
static uint64_t load_chunks(struct gs_replay *r, const uint8_t *p, size_t n, size_t chunk)
{
    struct gs_reader_stats st;
    memset(&st, 0, sizeof st);
    size_t start = 0, at = 0;
    while (at < n) {
        const uint8_t *q = p + at + 1;
        uint64_t len = 0;
        cr_assert_eq(gs_get_varint(&q, p + n, &len), 0, "framing");
        at = (size_t)(q - p) + (size_t)len;
        if (chunk && at - start >= chunk) {
            gs_decode_chunk(p + start, at - start, &gs_replay_ops, r, &st);
            start = at;
        }
    }
    if (start < n)
        gs_decode_chunk(p + start, n - start, &gs_replay_ops, r, &st);
    return st.damaged_records;
}

/* ---- agreement ---- */

static const struct gs_site *site_of(const struct gs_replay *r, uint32_t idx)
{
    cr_assert_lt(idx, r->nsites);
    return &r->sites[idx];
}

/* site: whether the allocation's site matters (a free that ended it, which
 * a FREE_FAILED restores; a live one) or not (a dropped reference, or a free
 * of what was not live, whose site no one reads). */
static void same_alloc(const struct gs_replay *x, const struct gs_live_alloc *a,
                       const struct gs_replay *y, const struct gs_live_alloc *b, const char *what,
                       int site, size_t cut)
{
    ASSERT_U64(a->addr, b->addr, "cut %zu: %s addr", cut, what);
    ASSERT_U64(a->size, b->size, "cut %zu: %s size", cut, what);
    ASSERT_U64(a->time_ns, b->time_ns, "cut %zu: %s time", cut, what);
    if (site) {
        ASSERT_U64(a->site, b->site, "cut %zu: %s site", cut, what);
        ASSERT_U64(site_of(x, a->site)->stack_id, site_of(y, b->site)->stack_id,
                   "cut %zu: %s site stack", cut, what);
    }
    cr_assert_eq(a->device, b->device, "cut %zu: %s device", cut, what);
    ASSERT_U64(a->kind, b->kind, "cut %zu: %s kind", cut, what);
    ASSERT_U64(a->space, b->space, "cut %zu: %s space", cut, what);
    ASSERT_U64(a->tid, b->tid, "cut %zu: %s tid", cut, what);
    ASSERT_U64(a->refs, b->refs, "cut %zu: %s references", cut, what);
    ASSERT_U64(a->parent, b->parent, "cut %zu: %s parent", cut, what);
}

static void same_totals(const struct gs_replay *x, const struct gs_replay *y, size_t cut)
{
#define SAME(f) ASSERT_U64(x->f, y->f, "cut %zu: " #f ": %llu vs %llu", cut, \
                           (unsigned long long)x->f, (unsigned long long)y->f)
    SAME(allocations);
    SAME(frees);
    SAME(failed);
    SAME(frees_unknown);
    SAME(frees_undone);
    SAME(refs);
    SAME(last_time_ns);
    SAME(live_bytes);
    SAME(peak_bytes);
    SAME(peak_time_ns);
    SAME(pool_reserved);
    SAME(pool_used);
    SAME(peak_pool_reserved);
    SAME(peak_pool_used);
    SAME(failures_dropped);
    SAME(events);
    SAME(rounding_live);
    SAME(rounding_at_peak);
    for (int o = 0; o < GS_OUTCOME_COUNT; o++)
        SAME(outcomes.count[o]);
    SAME(outcomes.retries);
    SAME(outcomes.retry_ns);
    SAME(outcomes.retry_freed_bytes);
    SAME(outcomes.retry_frees);
    SAME(outcomes.probes);
    SAME(outcomes.probe_bytes);
    SAME(outcomes.probe_largest);
    SAME(outcomes.probe_largest_ns);
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        cr_assert_eq(x->devices[d].present, y->devices[d].present, "cut %zu: device %d", cut, d);
        SAME(devices[d].live_bytes);
        SAME(devices[d].peak_bytes);
        SAME(devices[d].peak_time_ns);
        SAME(devices[d].allocs);
    }
    for (int k = 0; k < GS_KIND_COUNT; k++) {
        SAME(kinds[k].live_bytes);
        SAME(kinds[k].peak_bytes);
        SAME(kinds[k].allocs);
    }
#undef SAME
}

static void same_sites(const struct gs_replay *x, const struct gs_replay *y, size_t cut)
{
    ASSERT_U64(x->nsites, y->nsites, "cut %zu: sites", cut);
    for (size_t i = 0; i < x->nsites; i++) {
        const struct gs_site *a = &x->sites[i], *b = &y->sites[i];
        ASSERT_U64(a->stack_id, b->stack_id, "cut %zu: site %zu stack", cut, i);
        ASSERT_U64(a->kind, b->kind, "cut %zu: site %zu kind", cut, i);
        ASSERT_U64(a->api, b->api, "cut %zu: site %zu api", cut, i);
        ASSERT_U64(a->allocs, b->allocs, "cut %zu: site %zu allocations", cut, i);
        ASSERT_U64(a->alloc_bytes, b->alloc_bytes, "cut %zu: site %zu bytes", cut, i);
        ASSERT_U64(a->live_bytes, b->live_bytes, "cut %zu: site %zu live", cut, i);
        ASSERT_U64(a->live_count, b->live_count, "cut %zu: site %zu live count", cut, i);
        uint64_t na, nb;
        uint64_t pa = gs_site_peak_bytes(x, a, &na), pb = gs_site_peak_bytes(y, b, &nb);
        ASSERT_U64(pa, pb, "cut %zu: site %zu bytes at the peak: %llu vs %llu", cut, i,
                   (unsigned long long)pa, (unsigned long long)pb);
        ASSERT_U64(na, nb, "cut %zu: site %zu count at the peak", cut, i);
    }
    uint64_t ca, cb;
    ASSERT_U64(gs_replay_leaks(x, &ca), gs_replay_leaks(y, &cb), "cut %zu: leaked bytes", cut);
    ASSERT_U64(ca, cb, "cut %zu: leaked allocations", cut);
}

static void same_live(const struct gs_replay *x, const struct gs_replay *y, size_t cut)
{
    size_t nx = 0, ny = 0;
    for (size_t i = 0; i < x->nallocs; i++) {
        if (!gs_replay_slot_live(x, i))
            continue;
        nx++;
        const struct gs_live_alloc *a = &x->allocs[i];
        const struct gs_live_alloc *b = gs_replay_find_live(y, a->space, a->addr);
        cr_assert_not_null(b, "cut %zu: 0x%llx (space %u) live in both", cut,
                           (unsigned long long)a->addr, a->space);
        same_alloc(x, a, y, b, "live", 1, cut);
    }
    for (size_t i = 0; i < y->nallocs; i++)
        ny += gs_replay_slot_live(y, i) != 0;
    ASSERT_U64(nx, ny, "cut %zu: live allocations", cut);
}

static void same_recent(const struct gs_replay *x, const struct gs_replay *y, size_t cut)
{
    for (size_t age = 0; age < GS_RECENT_FREES; age++) {
        const struct gs_recent_free *a = &x->recent[(x->recent_next - 1 - age) % GS_RECENT_FREES];
        const struct gs_recent_free *b = &y->recent[(y->recent_next - 1 - age) % GS_RECENT_FREES];
        cr_assert_eq(!!a->valid, !!b->valid, "cut %zu: recent free %zu valid", cut, age);
        if (!a->valid)
            continue;
        ASSERT_U64(a->tid, b->tid, "cut %zu: recent free %zu tid", cut, age);
        cr_assert_eq(!!a->removed, !!b->removed, "cut %zu: recent free %zu removed", cut, age);
        cr_assert_eq(!!a->nothing, !!b->nothing, "cut %zu: recent free %zu nothing", cut, age);
        same_alloc(x, &a->a, y, &b->a, "recent free", a->removed, cut);
    }
}

static void same_rest(const struct gs_replay *x, const struct gs_replay *y, size_t cut)
{
    ASSERT_U64(x->npools, y->npools, "cut %zu: pools", cut);
    for (size_t i = 0; i < x->npools; i++) {
        const struct gs_pool_usage *a = &x->pools[i], *b = &y->pools[i];
        ASSERT_U64(a->pool, b->pool, "cut %zu: pool %zu id", cut, i);
        cr_assert_eq(a->device, b->device, "cut %zu: pool %zu device", cut, i);
        ASSERT_U64(a->reserved, b->reserved, "cut %zu: pool %zu reserved", cut, i);
        ASSERT_U64(a->used, b->used, "cut %zu: pool %zu used", cut, i);
        ASSERT_U64(a->peak_reserved, b->peak_reserved, "cut %zu: pool %zu peak reserved", cut, i);
        ASSERT_U64(a->peak_used, b->peak_used, "cut %zu: pool %zu peak used", cut, i);
        ASSERT_U64(a->peak_unused, b->peak_unused, "cut %zu: pool %zu peak unused", cut, i);
        ASSERT_U64(a->samples, b->samples, "cut %zu: pool %zu samples", cut, i);
    }
    ASSERT_U64(x->nfailures, y->nfailures, "cut %zu: failures", cut);
    for (size_t i = 0; i < x->nfailures; i++) {
        const struct gs_failure *a = &x->failures[i], *b = &y->failures[i];
        ASSERT_U64(a->time_ns, b->time_ns, "cut %zu: failure %zu time", cut, i);
        ASSERT_U64(a->api, b->api, "cut %zu: failure %zu api", cut, i);
        ASSERT_U64(a->result, b->result, "cut %zu: failure %zu result", cut, i);
        cr_assert_eq(a->device, b->device, "cut %zu: failure %zu device", cut, i);
        ASSERT_U64(a->requested, b->requested, "cut %zu: failure %zu requested", cut, i);
        ASSERT_U64(a->free_bytes, b->free_bytes, "cut %zu: failure %zu free", cut, i);
        ASSERT_U64(a->total_bytes, b->total_bytes, "cut %zu: failure %zu total", cut, i);
        ASSERT_U64(a->process_live_bytes, b->process_live_bytes, "cut %zu: failure %zu held", cut,
                   i);
        ASSERT_U64(a->stack_id, b->stack_id, "cut %zu: failure %zu stack", cut, i);
        ASSERT_U64(a->outcome, b->outcome, "cut %zu: failure %zu outcome", cut, i);
        ASSERT_U64(a->chain_prev, b->chain_prev, "cut %zu: failure %zu link", cut, i);
        ASSERT_U64(a->retry_ns, b->retry_ns, "cut %zu: failure %zu retry time", cut, i);
        ASSERT_U64(a->retry_bytes, b->retry_bytes, "cut %zu: failure %zu retry bytes", cut, i);
        ASSERT_U64(a->freed_bytes, b->freed_bytes, "cut %zu: failure %zu freed", cut, i);
        ASSERT_U64(a->frees, b->frees, "cut %zu: failure %zu frees", cut, i);
    }
    ASSERT_U64(x->nchains, y->nchains, "cut %zu: chains open", cut);
    for (size_t i = 0; i < x->nchains; i++) {
        const struct gs_chain *a = &x->chains[i], *b = NULL;
        for (size_t k = 0; k < y->nchains; k++)
            if (y->chains[k].tid == a->tid)
                b = &y->chains[k];
        cr_assert_not_null(b, "cut %zu: thread %u's chain in both", cut, a->tid);
        cr_assert_eq(a->device, b->device, "cut %zu: chain %zu device", cut, i);
        const uint64_t ga[] = {a->stack_id, a->state, a->probe, a->last, a->last_size,
                               a->first_ns, a->failures, a->freed_bytes, a->frees};
        const uint64_t gb[] = {b->stack_id, b->state, b->probe, b->last, b->last_size,
                               b->first_ns, b->failures, b->freed_bytes, b->frees};
        for (size_t k = 0; k < sizeof ga / sizeof ga[0]; k++)
            ASSERT_U64(ga[k], gb[k], "cut %zu: chain %zu figure %zu", cut, i, k);
        if (a->state != GS_CHAIN_HELD)
            continue;
        const struct gs_revent *ha = &a->held, *hb = &b->held;
        cr_assert(ha->type == hb->type && ha->tid == hb->tid && ha->addr == hb->addr &&
                      ha->size == hb->size && ha->time_ns == hb->time_ns &&
                      ha->stack_id == hb->stack_id && ha->kind == hb->kind &&
                      ha->device == hb->device && ha->space == hb->space && ha->api == hb->api &&
                      ha->parent == hb->parent && ha->stream == hb->stream,
                  "cut %zu: chain %zu's held allocation", cut, i);
    }
    ASSERT_U64(x->trace.nmodules, y->trace.nmodules, "cut %zu: modules", cut);
    for (size_t i = 0; i < x->trace.nmodules; i++) {
        const struct gs_module *a = &x->trace.modules[i], *b = &y->trace.modules[i];
        ASSERT_U64(a->id, b->id, "cut %zu: module %zu id", cut, i);
        ASSERT_U64(a->bias, b->bias, "cut %zu: module %zu bias", cut, i);
        ASSERT_U64(a->lo, b->lo, "cut %zu: module %zu lo", cut, i);
        ASSERT_U64(a->span, b->span, "cut %zu: module %zu span", cut, i);
        cr_assert_str_eq(a->path, b->path, "cut %zu: module %zu path", cut, i);
        ASSERT_U64(a->build_id_len, b->build_id_len, "cut %zu: module %zu build id", cut, i);
        cr_assert(!memcmp(a->build_id, b->build_id, a->build_id_len));
        cr_assert_eq(a->is_runtime, b->is_runtime, "cut %zu: module %zu runtime", cut, i);
    }
    ASSERT_U64(x->trace.npycodes, y->trace.npycodes, "cut %zu: Python code objects", cut);
    for (size_t i = 0; i < x->trace.npycodes; i++) {
        const struct gs_pycode *a = &x->trace.pycodes[i], *b = gs_replay_pycode(y, a->id);
        cr_assert_not_null(b, "cut %zu: code %u defined", cut, a->id);
        cr_assert_str_eq(a->file, b->file, "cut %zu: code %u file", cut, a->id);
        cr_assert_str_eq(a->function, b->function, "cut %zu: code %u function", cut, a->id);
        ASSERT_U64(a->first_line, b->first_line, "cut %zu: code %u first line", cut, a->id);
    }
    ASSERT_U64(x->trace.nstacks, y->trace.nstacks, "cut %zu: stacks", cut);
    for (size_t i = 0; i < x->trace.nstacks; i++) {
        const struct gs_stack *a = &x->trace.stacks[i];
        const struct gs_stack *b = gs_replay_stack(y, x->trace.stacks[i].id);
        cr_assert_not_null(b, "cut %zu: stack %u defined", cut, a->id);
        cr_assert_eq(a->n, b->n, "cut %zu: stack %u depth", cut, a->id);
        cr_assert(!memcmp(a->pcs, b->pcs, a->n * sizeof *a->pcs), "cut %zu: stack %u", cut, a->id);
    }
}

static void same(const struct gs_replay *x, const struct gs_replay *y, size_t cut)
{
    same_totals(x, y, cut);
    same_sites(x, y, cut);
    same_live(x, y, cut);
    same_recent(x, y, cut);
    same_rest(x, y, cut);
}

static void replay(struct gs_replay *r, const struct seq *s, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        gs_replay_event(r, &s->ev[i]);
}

static struct seq seq;

static void full(struct gs_replay *r)
{
    gs_replay_init(r);
    define(r, 1, 16);
    replay(r, &seq, 0, seq.n);
}

/* Replays [0, cut), checkpoints, loads that into a fresh replay (which is
 * given chunks of that many bytes), replays [cut, n) there: into *out. */
static void through_checkpoint(struct gs_replay *out, size_t cut, size_t chunk)
{
    struct gs_replay a;
    gs_replay_init(&a);
    define(&a, 1, 16);
    replay(&a, &seq, 0, cut);
    struct buf b = checkpoint(&a);
    gs_replay_init(out);
    ASSERT_U64(load_chunks(out, b.p, b.n, chunk), 0, "cut %zu: nothing damaged", cut);
    cr_assert(out->checkpoint.present && !out->checkpoint.open, "cut %zu: loaded whole", cut);
    ASSERT_U64(out->checkpoint.events, cut, "cut %zu: events summarized", cut);
    ASSERT_U64(out->checkpoint.time_ns, a.last_time_ns, "cut %zu: checkpoint time", cut);
    same(&a, out, cut); /* the loaded state is the state written */
    replay(out, &seq, cut, seq.n);
    gs_replay_free(&a);
    free(b.p);
}

/* ---- tests ---- */

Test(checkpoint, the_schedule_is_what_it_claims)
{
    schedule(&seq);
    struct gs_replay r;
    full(&r);
    ASSERT_U64(r.peak_time_ns, seq.ev[peak_index].time_ns, "the peak is where it was put");
    ASSERT_U64(r.rounding_at_peak, 1 * MB, "the 401 MB allocation's page rounding at the peak");
    cr_assert_lt(peak_index, seq.n / 2, "in the first half");
    cr_assert_gt(r.frees_undone, 2, "FREE_FAILED undid frees");
    cr_assert_gt(r.frees_unknown, 0, "frees of unknown addresses");
    cr_assert_gt(r.refs, 0, "references");
    ASSERT_U64(r.nfailures, 11, "failures");
    const uint32_t want[11] = {GS_OUTCOME_UNRECOVERED, GS_OUTCOME_PENDING, GS_OUTCOME_RECOVERED,
                               GS_OUTCOME_REFUSED, GS_OUTCOME_RECOVERED, GS_OUTCOME_PROBE,
                               GS_OUTCOME_PROBE, GS_OUTCOME_RECOVERED, GS_OUTCOME_UNRECOVERED,
                               GS_OUTCOME_PENDING, GS_OUTCOME_PENDING};
    for (int i = 0; i < 11; i++)
        ASSERT_U64(r.failures[i].outcome, want[i], "failure %d's outcome", i);
    ASSERT_U64(r.nchains, 3, "threads 3, 11 and 12 have a chain open");
    cr_assert(!gs_replay_find_live(&r, GS_SPACE_ADDRESS, 0xe000), "the probe never joined");
    cr_assert(gs_replay_find_live(&r, GS_SPACE_ADDRESS, 0xe100), "thread 9's did, in the end");
    cr_assert(!gs_replay_find_live(&r, GS_SPACE_ADDRESS, 0xe400), "thread 12's is held apart");
    ASSERT_U64(r.failures[2].freed_bytes, 8 * MB, "thread 7 freed 8 MB before its retry");
    ASSERT_U64(r.failures[4].freed_bytes, 0, "and nothing after its second failure");
    ASSERT_U64(r.npools, 2, "pools");
    uint64_t n;
    cr_assert_gt(gs_replay_leaks(&r, &n), 0, "leaks");
    const struct gs_live_alloc *y = gs_replay_find_live(&r, GS_SPACE_ADDRESS, 0xb000);
    cr_assert_not_null(y, "Y's FREE_FAILED came in time");
    cr_assert_null(gs_replay_find_live(&r, GS_SPACE_ADDRESS, 0xa000), "X's came too late");
    cr_assert(r.devices[0].present && r.devices[1].present && r.devices[2].present &&
              r.devices[3].present, "four devices");
    for (int k = 0; k < GS_KIND_COUNT; k++)
        cr_assert_gt(r.kinds[k].allocs, 0, "kind %d used", k);
    gs_replay_free(&r);
}

Test(checkpoint, cut_at_every_event_agrees_with_the_whole_history)
{
    schedule(&seq);
    struct gs_replay whole;
    full(&whole);
    for (size_t cut = 0; cut <= seq.n; cut++) {
        struct gs_replay r;
        through_checkpoint(&r, cut, cut % 3 == 0 ? 0 : 64 + cut % 500);
        same(&whole, &r, cut);
        gs_replay_free(&r);
    }
    gs_replay_free(&whole);
}

Test(checkpoint, cut_at_the_peak)
{
    schedule(&seq);
    struct gs_replay whole, r;
    full(&whole);
    through_checkpoint(&r, peak_index + 1, 0);
    ASSERT_U64(r.checkpoint.time_ns, seq.ev[peak_index].time_ns, "taken at the peak");
    same(&whole, &r, peak_index + 1);
    uint64_t sum = 0, n;
    for (size_t i = 0; i < r.nsites; i++)
        sum += gs_site_peak_bytes(&r, &r.sites[i], &n);
    ASSERT_U64(sum, r.peak_bytes, "the sites at the peak add up to it");
    gs_replay_free(&whole);
    gs_replay_free(&r);
}

Test(checkpoint, a_checkpoint_of_a_checkpoint)
{
    /* A trace rotated twice: the second file's checkpoint is taken from a
     * replay that began with the first's. */
    schedule(&seq);
    struct gs_replay whole;
    full(&whole);
    size_t cuts[][2] = {{0, seq.n}, {10, 11}, {peak_index, peak_index + 1}, {30, 300},
                        {seq.n / 2, seq.n - 3}};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        struct gs_replay a, b, c;
        gs_replay_init(&a);
        define(&a, 1, 16);
        replay(&a, &seq, 0, cuts[i][0]);
        struct buf ba = checkpoint(&a);
        gs_replay_init(&b);
        ASSERT_U64(load(&b, ba.p, ba.n), 0, "first checkpoint");
        replay(&b, &seq, cuts[i][0], cuts[i][1]);
        struct buf bb = checkpoint(&b);
        gs_replay_init(&c);
        ASSERT_U64(load(&c, bb.p, bb.n), 0, "second checkpoint");
        ASSERT_U64(c.checkpoint.events, cuts[i][1], "the second summarizes both");
        replay(&c, &seq, cuts[i][1], seq.n);
        same(&whole, &c, cuts[i][1]);
        gs_replay_free(&a);
        gs_replay_free(&b);
        gs_replay_free(&c);
        free(ba.p);
        free(bb.p);
    }
    gs_replay_free(&whole);
}

Test(checkpoint, an_empty_replay)
{
    struct gs_replay a, b;
    gs_replay_init(&a);
    struct buf buf = checkpoint(&a);
    ASSERT_U64(buf.records, 2, "BEGIN and END only");
    gs_replay_init(&b);
    ASSERT_U64(load(&b, buf.p, buf.n), 0, "nothing damaged");
    cr_assert(b.checkpoint.present, "a checkpoint, of nothing");
    ASSERT_U64(b.checkpoint.events, 0, "no events");
    ASSERT_U64(b.checkpoint.time_ns, 0, "at the start");
    same(&a, &b, 0);
    /* and events after it replay as in a fresh replay */
    schedule(&seq);
    struct gs_replay whole;
    gs_replay_init(&whole);
    replay(&whole, &seq, 0, seq.n);
    replay(&b, &seq, 0, seq.n);
    same(&whole, &b, 0);
    gs_replay_free(&a);
    gs_replay_free(&b);
    gs_replay_free(&whole);
    free(buf.p);
}

Test(checkpoint, no_checkpoint_no_summary)
{
    struct gs_replay r;
    gs_replay_init(&r);
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = 5, .addr = 1, .size = 1};
    gs_replay_event(&r, &e);
    cr_assert(!r.checkpoint.present, "no checkpoint");
    ASSERT_U64(r.events, 1, "events counted");
    gs_replay_free(&r);
}

Test(checkpoint, the_failures_cap_carries_over)
{
    struct gs_replay whole, a, b;
    gs_replay_init(&whole);
    gs_replay_init(&a);
    struct gs_revent f = {.type = GS_REC_ALLOC_FAILED, .size = 1, .device = 1};
    for (int i = 0; i < GS_MAX_FAILURES + 5; i++) {
        f.time_ns = (uint64_t)i;
        f.stack_id = (uint32_t)i;
        gs_replay_event(&whole, &f);
        gs_replay_event(&a, &f);
    }
    struct buf buf = checkpoint(&a);
    gs_replay_init(&b);
    ASSERT_U64(load(&b, buf.p, buf.n), 0, "nothing damaged");
    for (int i = 0; i < 3; i++) {
        f.time_ns = 1000000 + (uint64_t)i;
        gs_replay_event(&whole, &f);
        gs_replay_event(&b, &f);
    }
    ASSERT_U64(b.nfailures, GS_MAX_FAILURES, "kept");
    ASSERT_U64(b.failures_dropped, 8, "dropped, before and after");
    same(&whole, &b, 0);
    gs_replay_free(&whole);
    gs_replay_free(&a);
    gs_replay_free(&b);
    free(buf.p);
}

Test(checkpoint, devices_beyond_the_count_load_as_the_reader_decodes_them)
{
    /* The shim's model sees a device number as the hook recorded it; the
     * analyzer, reading the event, sees -1 for one it does not count. */
    struct gs_replay model, reader, b;
    gs_replay_init(&model);
    gs_replay_init(&reader);
    int32_t devs[2] = {100, GS_DEVICE_UNKNOWN};
    struct gs_replay *rs[2] = {&model, &reader};
    for (int i = 0; i < 2; i++) {
        struct seq *s = &seq;
        memset(s, 0, sizeof *s);
        s_dev(s, 0x1000, 10, 1, devs[i]);
        s_pool(s, 0xa, devs[i], 5, 1);
        s_failed(s, devs[i], 1 << 30, 2);
        s_dev(s, 0x2000, 10, 1, devs[i]);
        s_free(s, 0x2000, GS_SPACE_ADDRESS, 0, 1);
        replay(rs[i], s, 0, s->n);
    }
    struct buf buf = checkpoint(&model);
    gs_replay_init(&b);
    ASSERT_U64(load(&b, buf.p, buf.n), 0, "nothing damaged");
    same(&reader, &b, 0);
    cr_assert_eq(b.pools[0].device, GS_DEVICE_UNKNOWN, "pool device");
    cr_assert_eq(b.failures[0].device, GS_DEVICE_UNKNOWN, "failure device");
    gs_replay_free(&model);
    gs_replay_free(&reader);
    gs_replay_free(&b);
    free(buf.p);
}

Test(checkpoint, put_failing_fails_the_write)
{
    schedule(&seq);
    struct gs_replay r;
    full(&r);
    struct buf all = checkpoint(&r);
    for (size_t k = 1; k <= all.records; k += all.records / 7 + 1) {
        struct buf b = {.fail_after = (int)k};
        cr_assert_eq(gs_checkpoint_write(&r, put, &b), -1, "put failed at record %zu", k);
        ASSERT_U64(b.records, k - 1, "nothing written after the failure");
        free(b.p);
    }
    gs_replay_free(&r);
    free(all.p);
}

Test(checkpoint, stacks_modules_and_code_objects_defined_twice_keep_the_first)
{
    schedule(&seq);
    struct gs_replay whole, r;
    full(&whole);
    through_checkpoint(&r, seq.n / 2, 0);
    /* a copied chunk defines them again, differently: ignored */
    uint64_t other[3] = {1, 2, 3};
    struct gs_rmodule m = {.id = 1, .lo = 0, .span = 1, .path = "/elsewhere"};
    struct gs_rpycode c = {.id = 1, .file = "/elsewhere.py", .function = "f"};
    gs_replay_ops.stack(&r, 3, other, 3);
    gs_replay_ops.module(&r, &m);
    gs_replay_ops.pycode(&r, &c);
    same(&whole, &r, seq.n / 2);
    /* and the whole checkpoint again changes nothing either */
    struct buf b = checkpoint(&whole);
    struct gs_replay again;
    gs_replay_init(&again);
    ASSERT_U64(load(&again, b.p, b.n), 0, "first load");
    ASSERT_U64(load(&again, b.p, b.n), 0, "second load: a BEGIN starts over");
    same(&whole, &again, seq.n);
    gs_replay_free(&whole);
    gs_replay_free(&r);
    gs_replay_free(&again);
    free(b.p);
}

/* ---- a whole trace file: header, a checkpoint over several chunks, events ---- */

static char tmpdir[256];

static void make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gs_ckpt_XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void remove_tmpdir(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/rotated.trace", tmpdir);
    unlink(p);
    rmdir(tmpdir);
}

TestSuite(checkpoint_file, .init = make_tmpdir, .fini = remove_tmpdir);

static void write_chunk(int fd, const uint8_t *raw, size_t len)
{
    size_t cap = gs_chunk_scratch_size(len), written;
    uint8_t *scratch = malloc(cap);
    cr_assert_not_null(scratch);
    cr_assert_eq(gs_write_chunk(fd, raw, len, scratch, cap, &written), 0);
    free(scratch);
}

static struct gs_ev ring_body(const struct gs_revent *e)
{
    struct gs_ev ev = {.type = (uint8_t)e->type, .api = (uint8_t)e->api, .kind = (uint8_t)e->kind,
                       .space = (uint8_t)e->space, .device = e->device, .tid = e->tid,
                       .stack_id = e->stack_id, .result = (int32_t)e->result,
                       .time_ns = e->time_ns, .addr = e->addr, .size = e->size,
                       .stream = e->stream, .free_bytes = e->free_bytes,
                       .total_bytes = e->total_bytes, .parent = e->parent};
    if (e->type == GS_REC_POOL) {
        ev.addr = e->pool;
        ev.size = e->reserved;
        ev.free_bytes = e->used;
    }
    return ev;
}

Test(checkpoint_file, a_rotated_trace_reads_as_the_whole_history)
{
    schedule(&seq);
    struct gs_replay whole, a, r;
    full(&whole);
    size_t cut = seq.n / 3;
    gs_replay_init(&a);
    define(&a, 1, 16);
    replay(&a, &seq, 0, cut);
    struct buf b = checkpoint(&a);

    char path[512];
    snprintf(path, sizeof path, "%s/rotated.trace", tmpdir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(gs_write_header(fd, 1, 2, 16, 0, NULL), 0);
    /* the checkpoint in chunks of about 512 bytes, cut at record boundaries */
    size_t start = 0, at = 0, chunks = 0;
    while (at < b.n) {
        const uint8_t *q = b.p + at + 1;
        uint64_t len = 0;
        cr_assert_eq(gs_get_varint(&q, b.p + b.n, &len), 0);
        at = (size_t)(q - b.p) + (size_t)len;
        if (at - start >= 512 || at == b.n) {
            write_chunk(fd, b.p + start, at - start);
            start = at;
            chunks++;
        }
    }
    cr_assert_gt(chunks, 3, "the checkpoint spans chunks");
    /* then the events, 50 to a chunk, each chunk's deltas from 0 */
    uint8_t *raw = malloc(64 * GS_MAX_RECORD);
    cr_assert_not_null(raw);
    for (size_t i = cut; i < seq.n;) {
        struct gs_encoder enc;
        gs_encoder_reset(&enc);
        size_t n = 0;
        for (size_t k = 0; k < 50 && i < seq.n; k++, i++) {
            struct gs_ev ev = ring_body(&seq.ev[i]);
            n += gs_encode(&enc, &ev, sizeof ev, raw + n);
        }
        write_chunk(fd, raw, n);
    }
    free(raw);
    close(fd);

    struct gs_trace_info info;
    struct gs_reader_stats st;
    char err[256];
    gs_replay_init(&r);
    cr_assert_eq(gs_read_trace(path, &gs_replay_ops, &r, &info, &st, err, sizeof err), 0, "%s",
                 err);
    ASSERT_U64(st.damaged_chunks, 0, "no damaged chunks");
    ASSERT_U64(st.damaged_records, 0, "no damaged records");
    cr_assert(r.checkpoint.present, "the checkpoint was loaded");
    ASSERT_U64(r.checkpoint.events, cut, "events it summarizes");
    same(&whole, &r, cut);
    gs_replay_free(&whole);
    gs_replay_free(&a);
    gs_replay_free(&r);
    free(b.p);
}

Test(checkpoint, a_begin_record_without_the_later_totals_loads)
{
    /* A checkpoint of a writer before the rounding totals: BEGIN ends
     * after its first 18 values, which load, and the others are 0. */
    schedule(&seq);
    struct gs_replay a;
    gs_replay_init(&a);
    define(&a, 1, 16);
    replay(&a, &seq, 0, peak_index + 1);
    cr_assert_gt(a.rounding_live, 0, "rounding to checkpoint");
    struct buf b = checkpoint(&a);
    uint8_t *old = malloc(b.n);
    size_t at = 0, n = 0;
    while (at < b.n) {
        const uint8_t *q = b.p + at + 1;
        uint64_t len = 0;
        cr_assert_eq(gs_get_varint(&q, b.p + b.n, &len), 0, "framing");
        size_t body = (size_t)(q - b.p), next = body + (size_t)len;
        if (b.p[at] != GS_REC_CKPT_BEGIN) {
            memcpy(old + n, b.p + at, next - at);
            n += next - at;
        } else {
            const uint8_t *f = b.p + body;
            for (int i = 0; i < 18; i++) {
                uint64_t v = 0;
                cr_assert_eq(gs_get_varint(&f, b.p + next, &v), 0, "total %d", i);
            }
            old[n++] = GS_REC_CKPT_BEGIN;
            n += gs_put_varint(old + n, (uint64_t)(f - (b.p + body)));
            memcpy(old + n, b.p + body, (size_t)(f - (b.p + body)));
            n += (size_t)(f - (b.p + body));
        }
        at = next;
    }
    cr_assert_lt(n, b.n, "BEGIN was shortened");
    struct gs_replay r;
    gs_replay_init(&r);
    ASSERT_U64(load(&r, old, n), 0, "nothing damaged");
    cr_assert(r.checkpoint.present && !r.checkpoint.open, "loaded whole");
    ASSERT_U64(r.peak_bytes, a.peak_bytes, "the totals before them");
    ASSERT_U64(r.rounding_live + r.rounding_at_peak, 0, "the missing ones are 0");
    gs_replay_free(&r);
    gs_replay_free(&a);
    free(old);
    free(b.p);
}

/* ---- the layout, field by field ----
 * Each record by hand as include/gpushim_trace.h lays it out, every field a
 * value of its own: loaded, each lands in the member it names; written back
 * from the loaded state, the records come out byte for byte. So neither the
 * loader nor the writer can move a field, which a round trip alone (both
 * moved alike) would not see. */

Test(checkpoint, each_field_where_the_format_says)
{
    uint8_t b[4096];
    size_t n = 0;
    n += REC(b + n, GS_REC_CKPT_BEGIN, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
             18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32);
    n += REC(b + n, GS_REC_CKPT_DEVICE, gs_zigzag(1), 1, 101, 102, 103, 104);
    n += REC(b + n, GS_REC_CKPT_KIND, 2, 201, 202, 203);
    n += REC(b + n, GS_REC_CKPT_SITE, 7, 2, 3, 301, 302, 303, 304, 305, 306, 307);
    n += REC(b + n, GS_REC_CKPT_ALLOC, 0x4000, 401, 402, 7, 2, gs_zigzag(1), GS_SPACE_MAPPING,
             403, 404, 405);
    n += REC(b + n, GS_REC_CKPT_POOL, 501, gs_zigzag(1), 502, 503, 504, 505, 506, 507);
    /* its nine fields, its thread's name (""), its outcome (pending), its link
     * (none) and four figures */
    n += REC(b + n, GS_REC_CKPT_FAILURE, 601, 602, 603, gs_zigzag(1), 604, 605, 606, 607, 7, 0,
             GS_OUTCOME_PENDING, 0, 608, 609, 610, 611);
    /* a chain holding a probe's allocation apart, its latest failure the one above */
    n += REC(b + n, GS_REC_CKPT_CHAIN, 801, gs_zigzag(1), 7, GS_CHAIN_HELD, 1, 1, 802, 803, 804,
             805, 806, 0x9000, 807, 808, 7, 2, gs_zigzag(1), GS_SPACE_ADDRESS, 3, 809, 810);
    n += REC(b + n, GS_REC_CKPT_RECENT_FREE, 0, 701, 0, 0x8000, 702, 703, 7, 2, gs_zigzag(1),
             GS_SPACE_ADDRESS, 704, 705, 0);
    n += REC(b + n, GS_REC_CKPT_END, 1, 1, 1, 1, 1, 1, 1, 1);
    struct gs_replay r;
    gs_replay_init(&r);
    ASSERT_U64(load(&r, b, n), 0, "every record loads");
    cr_assert(r.checkpoint.present && !r.checkpoint.open, "loaded whole");

    const struct gs_outcomes *o = &r.outcomes;
    const uint64_t totals[] = {r.events, r.last_time_ns, r.allocations, r.frees, r.failed,
                               r.frees_unknown, r.frees_undone, r.refs, r.live_bytes,
                               r.peak_bytes, r.peak_time_ns, r.peak_epoch, r.pool_reserved,
                               r.pool_used, r.peak_pool_reserved, r.peak_pool_used,
                               r.failures_dropped, r.nthreads_hint, r.rounding_live,
                               r.rounding_at_peak, o->count[GS_OUTCOME_UNRECOVERED],
                               o->count[GS_OUTCOME_RECOVERED], o->count[GS_OUTCOME_PROBE],
                               o->count[GS_OUTCOME_REFUSED], o->retries, o->retry_ns,
                               o->retry_freed_bytes, o->retry_frees, o->probes, o->probe_bytes,
                               o->probe_largest, o->probe_largest_ns};
    for (size_t i = 0; i < sizeof totals / sizeof totals[0]; i++)
        ASSERT_U64(totals[i], i + 1, "BEGIN's total %zu", i);
    const struct gs_device_usage *d = &r.devices[1];
    cr_assert(d->present);
    ASSERT_U64(d->live_bytes, 101, "device live");
    ASSERT_U64(d->peak_bytes, 102, "device peak");
    ASSERT_U64(d->peak_time_ns, 103, "device peak time");
    ASSERT_U64(d->allocs, 104, "device allocations");
    const struct gs_kind_usage *k = &r.kinds[2];
    ASSERT_U64(k->live_bytes, 201, "kind live");
    ASSERT_U64(k->peak_bytes, 202, "kind peak");
    ASSERT_U64(k->allocs, 203, "kind allocations");
    cr_assert_eq(r.nsites, 1);
    const struct gs_site *s = &r.sites[0];
    ASSERT_U64(s->stack_id, 7, "site stack");
    ASSERT_U64(s->kind, 2, "site kind");
    ASSERT_U64(s->api, 3, "site api");
    const uint64_t site_figures[] = {s->allocs, s->alloc_bytes, s->live_bytes, s->live_count,
                                     s->saved_bytes, s->saved_count, s->saved_epoch};
    for (size_t i = 0; i < 7; i++)
        ASSERT_U64(site_figures[i], 301 + i, "site figure %zu", i);
    const struct gs_live_alloc *a = gs_replay_find_live(&r, GS_SPACE_MAPPING, 0x4000);
    cr_assert_not_null(a, "the allocation, by its address and space");
    ASSERT_U64(a->size, 401, "alloc size");
    ASSERT_U64(a->time_ns, 402, "alloc time");
    ASSERT_U64(a->site, 0, "alloc site");
    ASSERT_U64(a->kind, 2, "alloc kind");
    cr_assert_eq(a->device, 1, "alloc device");
    ASSERT_U64(a->tid, 403, "alloc tid");
    ASSERT_U64(a->refs, 404, "alloc references");
    ASSERT_U64(a->parent, 405, "alloc parent");
    cr_assert_eq(r.npools, 1);
    const struct gs_pool_usage *p = &r.pools[0];
    ASSERT_U64(p->pool, 501, "pool");
    cr_assert_eq(p->device, 1, "pool device");
    const uint64_t pool_figures[] = {p->reserved, p->used, p->peak_reserved, p->peak_used,
                                     p->peak_unused, p->samples};
    for (size_t i = 0; i < 6; i++)
        ASSERT_U64(pool_figures[i], 502 + i, "pool figure %zu", i);
    cr_assert_eq(r.nfailures, 1);
    const struct gs_failure *f = &r.failures[0];
    ASSERT_U64(f->time_ns, 601, "failure time");
    ASSERT_U64(f->api, 602, "failure api");
    ASSERT_U64(f->result, 603, "failure result");
    cr_assert_eq(f->device, 1, "failure device");
    ASSERT_U64(f->requested, 604, "failure requested");
    ASSERT_U64(f->free_bytes, 605, "failure free");
    ASSERT_U64(f->total_bytes, 606, "failure total");
    ASSERT_U64(f->process_live_bytes, 607, "failure process live");
    ASSERT_U64(f->stack_id, 7, "failure stack");
    ASSERT_U64(f->outcome, GS_OUTCOME_PENDING, "failure outcome");
    ASSERT_U64(f->chain_prev, 0, "failure link");
    const uint64_t failure_figures[] = {f->retry_ns, f->retry_bytes, f->freed_bytes, f->frees};
    for (size_t i = 0; i < 4; i++)
        ASSERT_U64(failure_figures[i], 608 + i, "failure figure %zu", i);
    cr_assert_eq(r.nchains, 1);
    const struct gs_chain *ch = &r.chains[0];
    ASSERT_U64(ch->tid, 801, "chain thread");
    cr_assert_eq(ch->device, 1, "chain device");
    ASSERT_U64(ch->stack_id, 7, "chain stack");
    ASSERT_U64(ch->state, GS_CHAIN_HELD, "chain state");
    ASSERT_U64(ch->probe, 1, "chain probe");
    ASSERT_U64(ch->last, 1, "chain's latest failure");
    const uint64_t chain_figures[] = {ch->last_size, ch->first_ns, ch->failures, ch->freed_bytes,
                                      ch->frees};
    for (size_t i = 0; i < 5; i++)
        ASSERT_U64(chain_figures[i], 802 + i, "chain figure %zu", i);
    const struct gs_revent *h = &ch->held;
    cr_assert(h->type == GS_REC_ALLOC && h->tid == 801, "held: an allocation of its thread");
    ASSERT_U64(h->addr, 0x9000, "held addr");
    ASSERT_U64(h->size, 807, "held size");
    ASSERT_U64(h->time_ns, 808, "held time");
    ASSERT_U64(h->stack_id, 7, "held stack");
    ASSERT_U64(h->kind, 2, "held kind");
    cr_assert_eq(h->device, 1, "held device");
    ASSERT_U64(h->space, GS_SPACE_ADDRESS, "held space");
    ASSERT_U64(h->api, 3, "held api");
    ASSERT_U64(h->parent, 809, "held parent");
    ASSERT_U64(h->stream, 810, "held stream");
    const struct gs_recent_free *rf = &r.recent[(r.recent_next - 1) % GS_RECENT_FREES];
    cr_assert(rf->valid && !rf->removed && !rf->nothing, "the latest free dropped a reference");
    ASSERT_U64(rf->tid, 701, "free tid");
    ASSERT_U64(rf->a.addr, 0x8000, "freed addr");
    ASSERT_U64(rf->a.size, 702, "freed size");
    ASSERT_U64(rf->a.time_ns, 703, "freed time");
    ASSERT_U64(rf->a.tid, 704, "freed tid");
    ASSERT_U64(rf->a.refs, 705, "freed references");

    struct buf out = checkpoint(&r);
    ASSERT_U64(out.n, n, "as many bytes written back");
    cr_assert_eq(memcmp(out.p, b, n), 0, "the records written back byte for byte");
    free(out.p);
    gs_replay_free(&r);
}

/* ---- hostile checkpoints ---- */

Test(checkpoint_hostile, records_out_of_place_or_range_are_refused)
{
    uint8_t b[4096];
    size_t n;
    struct gs_replay r;
    gs_replay_init(&r);
    /* before any BEGIN */
    n = REC(b, GS_REC_CKPT_SITE, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "a site before BEGIN");
    ASSERT_U64(r.nsites, 0, "not loaded");
    n = REC(b, GS_REC_CKPT_BEGIN, 1, 2);
    ASSERT_U64(damaged(&r, b, n), 1, "a short BEGIN");
    cr_assert(!r.checkpoint.present, "not begun");
    /* a BEGIN, then bad records one by one */
    n = REC(b, GS_REC_CKPT_BEGIN, 7, 100, 1, 0, 0, 0, 0, 0, 10, 10, 50, 1, 0, 0, 0, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 0, "BEGIN");
    cr_assert(r.checkpoint.open);
    struct {
        size_t n;
        const char *what;
    } bad[32];
    uint8_t recs[32][256];
    size_t nb = 0;
#define BAD(what_, ...) (bad[nb].n = REC(recs[nb], __VA_ARGS__), bad[nb++].what = what_)
    BAD("device 64", GS_REC_CKPT_DEVICE, gs_zigzag(64), 1, 0, 0, 0, 0);
    BAD("device -2", GS_REC_CKPT_DEVICE, gs_zigzag(-2), 1, 0, 0, 0, 0);
    BAD("present 2", GS_REC_CKPT_DEVICE, gs_zigzag(0), 2, 0, 0, 0, 0);
    BAD("device beyond int32", GS_REC_CKPT_DEVICE, gs_zigzag(1ll << 40), 1, 0, 0, 0, 0);
    BAD("kind past the last", GS_REC_CKPT_KIND, GS_KIND_COUNT, 1, 1, 1);
    BAD("site of a kind past the last", GS_REC_CKPT_SITE, 1, GS_KIND_COUNT, 0, 1, 1, 1, 1, 0, 0, 0);
    BAD("site stack beyond u32", GS_REC_CKPT_SITE, 1ull << 32, 0, 0, 1, 1, 1, 1, 0, 0, 0);
    BAD("a short site", GS_REC_CKPT_SITE, 1, 0, 0, 1);
    BAD("alloc of no site", GS_REC_CKPT_ALLOC, 0x1000, 10, 5, 99, 0, 0, 0, 1, 1, 0);
    BAD("recent free aged 256", GS_REC_CKPT_RECENT_FREE, 256, 1, 2, 0x1, 0, 0, 0, 0, 0, 0, 0, 0,
        0);
    BAD("recent free what 3", GS_REC_CKPT_RECENT_FREE, 0, 1, 3, 0x1, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    BAD("ended free of no site", GS_REC_CKPT_RECENT_FREE, 0, 1, 1, 0x1, 10, 0, 99, 0, 0, 0, 0, 1,
        0);
    BAD("dropped reference in space 9", GS_REC_CKPT_RECENT_FREE, 0, 1, 0, 0x1, 10, 0, 1, 0, 0,
        9, 0, 1, 0);
    BAD("failure beyond u32 api", GS_REC_CKPT_FAILURE, 1, 1ull << 33, 2, 0, 1, 1, 1, 1, 1);
    for (size_t i = 0; i < nb; i++)
        ASSERT_U64(damaged(&r, recs[i], bad[i].n), 1, "%s", bad[i].what);
    ASSERT_U64(r.nsites, 0, "no site");
    ASSERT_U64(r.nfailures, 0, "no failure");
    /* good ones, then the same again: a second site, pool or address is refused */
    n = REC(b, GS_REC_CKPT_SITE, 1, 0, 0, 1, 10, 10, 1, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 0, "a site");
    ASSERT_U64(damaged(&r, b, n), 1, "the site again");
    n = REC(b, GS_REC_CKPT_ALLOC, 0x1000, 10, 5, 1, 0, 0, 0, 1, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "no references");
    n = REC(b, GS_REC_CKPT_ALLOC, 0x1000, 10, 5, 1, 0, 0, 0, 1, 1, 0);
    ASSERT_U64(damaged(&r, b, n), 0, "an allocation");
    ASSERT_U64(damaged(&r, b, n), 1, "the address again");
    n = REC(b, GS_REC_CKPT_POOL, 0xa, 0, 1, 1, 1, 1, 0, 1);
    ASSERT_U64(damaged(&r, b, n), 0, "a pool");
    ASSERT_U64(damaged(&r, b, n), 1, "the pool again");
    /* END counts what arrived: one site, one allocation, one pool */
    n = REC(b, GS_REC_CKPT_END, 1, 1, 2, 0, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "END counting a pool that never came");
    cr_assert(!r.checkpoint.open, "but it is closed");
    n = REC(b, GS_REC_CKPT_SITE, 2, 0, 0, 1, 10, 10, 1, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "a site after END");
    n = REC(b, 47, 1, 2, 3);
    ASSERT_U64(damaged(&r, b, n), 0, "an unknown checkpoint type is skipped");
    /* a checkpoint whose END was lost ends at the first event */
    n = REC(b, GS_REC_CKPT_BEGIN, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    struct gs_replay q;
    gs_replay_init(&q);
    ASSERT_U64(damaged(&q, b, n), 0, "BEGIN");
    struct gs_revent first = {.type = GS_REC_POOL, .time_ns = 1, .pool = 1};
    gs_replay_event(&q, &first);
    n = REC(b, GS_REC_CKPT_SITE, 2, 0, 0, 1, 10, 10, 1, 0, 0, 0);
    ASSERT_U64(damaged(&q, b, n), 1, "a site after an event");
    gs_replay_free(&q);
    /* what was loaded holds together: free the allocation */
    struct gs_revent e = {.type = GS_REC_FREE, .time_ns = 200, .addr = 0x1000};
    gs_replay_event(&r, &e);
    ASSERT_U64(r.frees, 1, "the loaded allocation freed");
    ASSERT_U64(r.live_bytes, 0, "live");
    ASSERT_U64(r.sites[0].live_bytes, 0, "site live");
    ASSERT_U64(r.peak_bytes, 10, "peak as loaded");
    gs_replay_free(&r);
}

/* Exercises a replay after hostile loading: events, reports' queries, and a
 * checkpoint of it read back. */
static void use(struct gs_replay *r)
{
    replay(r, &seq, seq.n / 2, seq.n);
    uint64_t n;
    gs_replay_leaks(r, &n);
    for (size_t i = 0; i < r->nsites; i++)
        gs_site_peak_bytes(r, &r->sites[i], &n);
    struct buf b = {0};
    cr_assert_eq(gs_checkpoint_write(r, put, &b), 0);
    struct gs_replay again;
    gs_replay_init(&again);
    ASSERT_U64(load(&again, b.p, b.n), 0, "a checkpoint of whatever was loaded reads back");
    same(r, &again, 0);
    gs_replay_free(&again);
    free(b.p);
}

Test(checkpoint_hostile, every_record_truncated_at_every_byte)
{
    schedule(&seq);
    struct gs_replay a;
    gs_replay_init(&a);
    define(&a, 1, 16);
    replay(&a, &seq, 0, seq.n / 2);
    struct buf b = checkpoint(&a);
    uint8_t *copy = malloc(b.n);
    cr_assert_not_null(copy);
    size_t tested = 0;
    for (size_t at = 0; at < b.n;) {
        const uint8_t *q = b.p + at + 1;
        uint64_t len = 0;
        cr_assert_eq(gs_get_varint(&q, b.p + b.n, &len), 0);
        size_t pstart = (size_t)(q - b.p), next = pstart + (size_t)len;
        uint8_t type = b.p[at];
        /* BEGIN as older writers made it: its first 18 totals, or 20 */
        size_t older[2] = {0, 0};
        if (type == GS_REC_CKPT_BEGIN) {
            const uint8_t *f = b.p + pstart;
            uint64_t v = 0;
            for (int i = 0; i < 20; i++) {
                cr_assert_eq(gs_get_varint(&f, b.p + next, &v), 0);
                if (i == 17 || i == 19)
                    older[i == 19] = (size_t)(f - (b.p + pstart));
            }
        }
        for (size_t keep = 0; keep < len; keep += 1 + (tested % 3)) {
            if (keep && (keep == older[0] || keep == older[1]))
                continue; /* a_begin_record_without_the_later_totals_loads */
            size_t n = 0;
            memcpy(copy, b.p, at);
            n = at + record(copy + at, type, b.p + pstart, keep);
            memcpy(copy + n, b.p + next, b.n - next);
            n += b.n - next;
            struct gs_replay r;
            gs_replay_init(&r);
            uint64_t d = load(&r, copy, n);
            /* every field of every record is read: a cut one is refused */
            cr_assert_geq(d, 1, "record type %u cut to %zu of %llu bytes: refused", type, keep,
                          (unsigned long long)len);
            if (tested % 16 == 0)
                use(&r);
            gs_replay_free(&r);
            tested++;
        }
        at = next;
    }
    cr_assert_gt(tested, 500);
    free(copy);
    free(b.p);
    gs_replay_free(&a);
}

/* A checkpoint record (or, one in ten, a STACK or MODULE) of random
 * fields, sometimes cut inside a field. */
static size_t random_ckpt_record(uint8_t *out, uint64_t *seed)
{
    uint8_t payload[256];
    size_t len = 0, nf = rnd(seed) % 20;
    for (size_t f = 0; f < nf; f++)
        len += gs_put_varint(payload + len, field(seed));
    if (rnd(seed) % 4 == 0)
        len = rnd(seed) % (len + 1); /* cut inside a field */
    uint8_t type = (uint8_t)(GS_REC_CKPT_FIRST + rnd(seed) % 16);
    if (rnd(seed) % 10 == 0)
        type = rnd(seed) % 2 ? GS_REC_STACK : GS_REC_MODULE;
    return record(out, type, payload, len);
}

Test(checkpoint_hostile, random_records_after_a_real_checkpoint)
{
    schedule(&seq);
    struct gs_replay a;
    gs_replay_init(&a);
    define(&a, 1, 16);
    replay(&a, &seq, 0, seq.n / 2);
    struct buf good = checkpoint(&a);
    gs_replay_free(&a);
    random_rounds(&good, 42, 300, random_ckpt_record, 1, use);
    free(good.p);
}
