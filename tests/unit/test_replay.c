/*
 * test_replay.c - the replay's live-set and peak arithmetic (analyzer/model/
 * live.c, through replay.c's dispatch), driven
 * event by event through gs_replay_event with schedules whose answers are
 * worked out by hand: counts, peak bytes and time, each site's bytes at the
 * peak (gs_site_peak_bytes), per-device and per-kind usage, leaks
 * (gs_replay_leaks), unknown frees, FREE then FREE_FAILED, an ALLOC over a
 * live address, managed and unknown kinds, out-of-range devices, failures;
 * and the hooks attached (gs_replay_attach), each called for the callbacks
 * it has, in the order attached.
 * Also analyzer/util/idmap.c (gs_idmap_*, find and remove_found among them)
 * against a reference: a million random operations with deletions interleaved,
 * and keys that all collide on one slot near the end of the table, deleted in
 * every position.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/names.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"

/* ---- events ---- */

static void alloc_k(struct gs_replay *r, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack,
                    int32_t device, uint32_t kind)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = t, .tid = 1, .api = GS_API_cudaMalloc,
                          .device = device, .addr = addr, .size = size, .stack_id = stack,
                          .kind = kind};
    gs_replay_event(r, &e);
}

static void alloc(struct gs_replay *r, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack,
                  int32_t device)
{
    alloc_k(r, t, addr, size, stack, device, GS_KIND_DEVICE);
}

static void free_t(struct gs_replay *r, uint64_t t, uint64_t addr, uint32_t tid)
{
    struct gs_revent e = {.type = GS_REC_FREE, .time_ns = t, .tid = tid, .addr = addr};
    gs_replay_event(r, &e);
}

static void free_failed(struct gs_replay *r, uint64_t t, uint64_t addr, uint32_t tid)
{
    struct gs_revent e = {.type = GS_REC_FREE_FAILED, .time_ns = t, .tid = tid, .addr = addr,
                          .result = 1};
    gs_replay_event(r, &e);
}

static const struct gs_site *site_of(const struct gs_replay *r, uint32_t stack, uint32_t kind)
{
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].stack_id == stack && r->sites[i].kind == kind)
            return &r->sites[i];
    return NULL;
}

static uint64_t peak_of(const struct gs_replay *r, uint32_t stack, uint64_t *count)
{
    const struct gs_site *s = site_of(r, stack, GS_KIND_DEVICE);
    cr_assert_not_null(s, "site for stack %u exists", stack);
    return gs_site_peak_bytes(r, s, count);
}

#define ASSERT_U64(got, want, what)                                                          \
    cr_assert_eq((uint64_t)(got), (uint64_t)(want), "%s: got %llu, expected %llu", what,      \
                 (unsigned long long)(got), (unsigned long long)(want))

/*
 * t=10 ALLOC A 0x1000 100 stack 1 dev 0    live 100
 * t=20 ALLOC B 0x2000 200 stack 2 dev 1    live 300
 * t=30 ALLOC C 0x3000  50 stack 3 dev 0    live 350  <- the peak
 * t=40 FREE  B                             live 150  (stack 2 freed after the peak)
 * t=50 ALLOC D 0x4000 100 stack 4 dev 1    live 250  (stack 4 created after the peak)
 * t=60 FREE  0xdead                        unknown
 * t=70 ALLOC E 0x5000  20 stack 1 dev 0    live 270  (stack 1 grows after the peak)
 * stack 3 is untouched after the peak.
 */
static void schedule(struct gs_replay *r)
{
    alloc(r, 10, 0x1000, 100, 1, 0);
    alloc(r, 20, 0x2000, 200, 2, 1);
    alloc(r, 30, 0x3000, 50, 3, 0);
    free_t(r, 40, 0x2000, 1);
    alloc(r, 50, 0x4000, 100, 4, 1);
    free_t(r, 60, 0xdead, 1);
    alloc(r, 70, 0x5000, 20, 1, 0);
}

Test(replay, counts_peak_and_peak_time)
{
    struct gs_replay r;
    gs_replay_init(&r);
    schedule(&r);
    ASSERT_U64(r.allocations, 5, "allocations");
    ASSERT_U64(r.frees, 1, "frees");
    ASSERT_U64(r.frees_unknown, 1, "frees of unknown addresses");
    ASSERT_U64(r.frees_undone, 0, "frees undone");
    ASSERT_U64(r.failed, 0, "failed");
    ASSERT_U64(r.live_bytes, 270, "live bytes");
    ASSERT_U64(r.peak_bytes, 350, "peak bytes");
    ASSERT_U64(r.peak_time_ns, 30, "peak time");
    ASSERT_U64(r.last_time_ns, 70, "last time");
    ASSERT_U64(r.nsites, 4, "sites");
    gs_replay_free(&r);
}

Test(replay, site_bytes_at_the_peak)
{
    struct gs_replay r;
    gs_replay_init(&r);
    schedule(&r);
    uint64_t n;
    ASSERT_U64(peak_of(&r, 1, &n), 100, "stack 1 (grew after the peak)");
    ASSERT_U64(n, 1, "stack 1 count");
    ASSERT_U64(peak_of(&r, 2, &n), 200, "stack 2 (freed after the peak)");
    ASSERT_U64(n, 1, "stack 2 count");
    ASSERT_U64(peak_of(&r, 3, &n), 50, "stack 3 (untouched after the peak)");
    ASSERT_U64(n, 1, "stack 3 count");
    ASSERT_U64(peak_of(&r, 4, &n), 0, "stack 4 (created after the peak)");
    ASSERT_U64(n, 0, "stack 4 count");
    /* current figures */
    ASSERT_U64(site_of(&r, 1, 0)->live_bytes, 120, "stack 1 live now");
    ASSERT_U64(site_of(&r, 2, 0)->live_bytes, 0, "stack 2 live now");
    ASSERT_U64(site_of(&r, 1, 0)->allocs, 2, "stack 1 allocations");
    ASSERT_U64(site_of(&r, 1, 0)->alloc_bytes, 120, "stack 1 bytes allocated");
    gs_replay_free(&r);
}

Test(replay, site_peaks_sum_to_the_peak)
{
    struct gs_replay r;
    gs_replay_init(&r);
    schedule(&r);
    uint64_t sum = 0, n;
    for (size_t i = 0; i < r.nsites; i++)
        sum += gs_site_peak_bytes(&r, &r.sites[i], &n);
    ASSERT_U64(sum, r.peak_bytes, "sum of site peaks");
    gs_replay_free(&r);
}

Test(replay, a_higher_peak_supersedes)
{
    struct gs_replay r;
    gs_replay_init(&r);
    schedule(&r);
    alloc(&r, 80, 0x6000, 500, 5, 0); /* live 770: a new peak */
    free_t(&r, 90, 0x1000, 1);        /* stack 1 shrinks after it */
    ASSERT_U64(r.peak_bytes, 770, "peak");
    ASSERT_U64(r.peak_time_ns, 80, "peak time");
    uint64_t n;
    ASSERT_U64(peak_of(&r, 1, &n), 120, "stack 1 at the new peak");
    ASSERT_U64(n, 2, "stack 1 count at the new peak");
    ASSERT_U64(peak_of(&r, 2, &n), 0, "stack 2 at the new peak");
    ASSERT_U64(peak_of(&r, 3, &n), 50, "stack 3");
    ASSERT_U64(peak_of(&r, 4, &n), 100, "stack 4 now counts");
    ASSERT_U64(peak_of(&r, 5, &n), 500, "stack 5");
    gs_replay_free(&r);
}

Test(replay, per_device_peak_and_live)
{
    struct gs_replay r;
    gs_replay_init(&r);
    schedule(&r);
    const struct gs_device_usage *d0 = &r.devices[0], *d1 = &r.devices[1];
    cr_assert(d0->present && d1->present, "devices 0 and 1 present");
    cr_assert(!r.devices[2].present, "device 2 absent");
    cr_assert(!r.devices[GS_MAX_DEVICES].present, "no unknown device");
    ASSERT_U64(d0->live_bytes, 170, "dev 0 live");
    ASSERT_U64(d0->peak_bytes, 170, "dev 0 peak");
    ASSERT_U64(d0->peak_time_ns, 70, "dev 0 peak time");
    ASSERT_U64(d0->allocs, 3, "dev 0 allocations");
    ASSERT_U64(d1->live_bytes, 100, "dev 1 live");
    ASSERT_U64(d1->peak_bytes, 200, "dev 1 peak");
    ASSERT_U64(d1->peak_time_ns, 20, "dev 1 peak time");
    ASSERT_U64(d1->allocs, 2, "dev 1 allocations");
    gs_replay_free(&r);
}

Test(replay, leaks_are_what_is_live_at_the_end)
{
    struct gs_replay r;
    gs_replay_init(&r);
    schedule(&r);
    uint64_t n;
    ASSERT_U64(gs_replay_leaks(&r, &n), 270, "leaked bytes");
    ASSERT_U64(n, 3 + 0 + 1, "leaked allocations (A, C, D, E)");
    free_t(&r, 100, 0x1000, 1);
    free_t(&r, 101, 0x3000, 1);
    free_t(&r, 102, 0x4000, 1);
    free_t(&r, 103, 0x5000, 1);
    ASSERT_U64(gs_replay_leaks(&r, &n), 0, "nothing leaked after freeing all");
    ASSERT_U64(n, 0, "no leaked allocations");
    ASSERT_U64(r.live_bytes, 0, "live");
    ASSERT_U64(r.peak_bytes, 350, "peak unchanged");
    gs_replay_free(&r);
}

Test(replay, free_then_free_failed_restores_the_allocation)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc(&r, 10, 0x1000, 100, 1, 0);
    free_t(&r, 20, 0x1000, 7);
    ASSERT_U64(r.live_bytes, 0, "live after the free");
    free_failed(&r, 21, 0x1000, 8); /* another thread: not this free */
    ASSERT_U64(r.live_bytes, 0, "FREE_FAILED of another thread changes nothing");
    ASSERT_U64(r.frees_undone, 0, "nothing undone");
    free_failed(&r, 22, 0x2000, 7); /* another address */
    ASSERT_U64(r.frees_undone, 0, "nothing undone");
    free_failed(&r, 23, 0x1000, 7);
    ASSERT_U64(r.live_bytes, 100, "live bytes restored");
    ASSERT_U64(r.devices[0].live_bytes, 100, "device live restored");
    ASSERT_U64(site_of(&r, 1, 0)->live_bytes, 100, "site live restored");
    ASSERT_U64(r.frees, 0, "the free did not happen");
    ASSERT_U64(r.frees_undone, 1, "frees undone");
    uint64_t n;
    ASSERT_U64(gs_replay_leaks(&r, &n), 100, "restored allocation leaks");
    ASSERT_U64(n, 1, "one leak");
    free_failed(&r, 24, 0x1000, 7); /* a second FREE_FAILED for the same free */
    ASSERT_U64(r.live_bytes, 100, "undone only once");
    ASSERT_U64(r.frees_undone, 1, "undone only once");
    free_t(&r, 30, 0x1000, 7); /* the address is live again: it can be freed */
    ASSERT_U64(r.live_bytes, 0, "freed for real");
    ASSERT_U64(r.frees, 1, "frees");
    ASSERT_U64(r.frees_unknown, 0, "the restored address was known");
    gs_replay_free(&r);
}

Test(replay, alloc_at_live_address_replaces_it)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc(&r, 10, 0x1000, 10, 1, 0);
    alloc(&r, 20, 0x1000, 30, 2, 0); /* the free of the first was lost */
    ASSERT_U64(r.allocations, 2, "allocations");
    ASSERT_U64(r.live_bytes, 30, "live is the new one only");
    ASSERT_U64(r.peak_bytes, 30, "peak");
    ASSERT_U64(r.devices[0].live_bytes, 30, "device live");
    ASSERT_U64(site_of(&r, 1, 0)->live_bytes, 0, "old site no longer holds it");
    ASSERT_U64(site_of(&r, 1, 0)->live_count, 0, "old site count");
    ASSERT_U64(site_of(&r, 2, 0)->live_bytes, 30, "new site holds it");
    uint64_t n;
    ASSERT_U64(gs_replay_leaks(&r, &n), 30, "leaks");
    ASSERT_U64(n, 1, "one live allocation");
    free_t(&r, 30, 0x1000, 1);
    ASSERT_U64(r.live_bytes, 0, "freed");
    ASSERT_U64(r.frees, 1, "frees");
    free_t(&r, 31, 0x1000, 1);
    ASSERT_U64(r.frees_unknown, 1, "a second free is unknown");
    gs_replay_free(&r);
}

Test(replay, managed_memory_is_totalled_apart)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc(&r, 10, 0x1000, 100, 1, 0);
    alloc_k(&r, 20, 0x2000, 1000, 1, 0, GS_KIND_MANAGED);
    ASSERT_U64(r.allocations, 2, "allocations");
    ASSERT_U64(r.peak_bytes, 100, "peak ignores managed");
    ASSERT_U64(r.live_bytes, 100, "live ignores managed");
    ASSERT_U64(r.devices[0].live_bytes, 100, "device live ignores managed");
    ASSERT_U64(r.devices[0].allocs, 1, "device allocations ignore managed");
    ASSERT_U64(r.kinds[GS_KIND_MANAGED].live_bytes, 1000, "managed live");
    ASSERT_U64(r.kinds[GS_KIND_MANAGED].peak_bytes, 1000, "managed peak");
    ASSERT_U64(r.kinds[GS_KIND_MANAGED].allocs, 1, "managed allocations");
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 100, "device kind live");
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].allocs, 1, "device kind allocations");
    const struct gs_site *ms = site_of(&r, 1, GS_KIND_MANAGED);
    cr_assert_not_null(ms, "a managed site apart from the device one");
    cr_assert_neq(ms, site_of(&r, 1, GS_KIND_DEVICE));
    uint64_t n;
    ASSERT_U64(gs_site_peak_bytes(&r, ms, &n), 0, "managed site has no device peak");
    ASSERT_U64(gs_replay_leaks(&r, &n), 100, "leaks are device memory only");
    ASSERT_U64(n, 1, "one device leak");
    free_t(&r, 30, 0x2000, 1);
    ASSERT_U64(r.kinds[GS_KIND_MANAGED].live_bytes, 0, "managed freed");
    ASSERT_U64(r.kinds[GS_KIND_MANAGED].peak_bytes, 1000, "managed peak stays");
    ASSERT_U64(r.live_bytes, 100, "device live unchanged");
    ASSERT_U64(r.frees, 1, "frees");
    gs_replay_free(&r);
}

Test(replay, managed_only_trace_has_no_peak)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc_k(&r, 10, 0x1000, 1000, 1, 0, GS_KIND_MANAGED);
    ASSERT_U64(r.peak_bytes, 0, "peak");
    ASSERT_U64(r.peak_epoch, 0, "no peak epoch");
    cr_assert(!r.devices[0].present, "no device memory seen");
    uint64_t n;
    ASSERT_U64(gs_site_peak_bytes(&r, site_of(&r, 1, GS_KIND_MANAGED), &n), 0, "site peak");
    gs_replay_free(&r);
}

Test(replay, unknown_kind_is_ignored)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc_k(&r, 10, 0x1000, 100, 1, 0, GS_KIND_COUNT);
    alloc_k(&r, 11, 0x2000, 100, 1, 0, UINT32_MAX);
    ASSERT_U64(r.allocations, 0, "not counted");
    ASSERT_U64(r.nsites, 0, "no site made");
    ASSERT_U64(r.live_bytes, 0, "live");
    ASSERT_U64(r.kinds[0].live_bytes + r.kinds[1].live_bytes, 0, "no kind holds it");
    ASSERT_U64(r.last_time_ns, 11, "its time still counts");
    free_t(&r, 20, 0x1000, 1);
    ASSERT_U64(r.frees_unknown, 1, "its free is of an unknown address");
    gs_replay_free(&r);
}

Test(replay, out_of_range_devices_count_as_unknown)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc(&r, 10, 0x1000, 10, 1, GS_DEVICE_UNKNOWN);
    alloc(&r, 20, 0x2000, 20, 1, GS_MAX_DEVICES);
    alloc(&r, 30, 0x3000, 30, 1, 1000);
    alloc(&r, 40, 0x4000, 40, 1, INT32_MIN);
    alloc(&r, 50, 0x5000, 5, 1, GS_MAX_DEVICES - 1);
    const struct gs_device_usage *u = &r.devices[GS_MAX_DEVICES];
    cr_assert(u->present, "unknown device present");
    ASSERT_U64(u->live_bytes, 100, "unknown device live");
    ASSERT_U64(u->peak_bytes, 100, "unknown device peak");
    ASSERT_U64(u->allocs, 4, "unknown device allocations");
    ASSERT_U64(r.devices[GS_MAX_DEVICES - 1].live_bytes, 5, "device 63 is a real device");
    ASSERT_U64(r.live_bytes, 105, "all count in the process's live bytes");
    for (int d = 0; d < GS_MAX_DEVICES - 1; d++)
        cr_assert(!r.devices[d].present, "device %d absent", d);
    free_t(&r, 60, 0x3000, 1);
    ASSERT_U64(u->live_bytes, 70, "unknown device live after a free");
    gs_replay_free(&r);
}

Test(replay, failures_record_process_live_bytes)
{
    struct gs_replay r;
    gs_replay_init(&r);
    alloc(&r, 10, 0x1000, 300, 1, 1);
    alloc(&r, 15, 0x3000, 77, 1, 0); /* another device's bytes are not counted */
    alloc_k(&r, 20, 0x2000, 1000, 1, 1, GS_KIND_MANAGED);
    struct gs_revent f = {.type = GS_REC_ALLOC_FAILED, .time_ns = 30, .tid = 3,
                          .api = GS_API_cuMemAlloc_v2, .device = 1, .size = 1ull << 40,
                          .stack_id = 9, .result = 2, .free_bytes = 5, .total_bytes = 10};
    gs_replay_event(&r, &f);
    free_t(&r, 40, 0x1000, 1);
    f.time_ns = 50;
    f.free_bytes = f.total_bytes = UINT64_MAX;
    gs_replay_event(&r, &f);
    ASSERT_U64(r.failed, 2, "failed");
    ASSERT_U64(r.nfailures, 2, "failures kept");
    ASSERT_U64(r.allocations, 3, "failures are not allocations");
    const struct gs_failure *a = &r.failures[0], *b = &r.failures[1];
    ASSERT_U64(a->time_ns, 30, "time");
    ASSERT_U64(a->api, GS_API_cuMemAlloc_v2, "api");
    ASSERT_U64(a->result, 2, "result");
    cr_assert_eq(a->device, 1, "device");
    ASSERT_U64(a->requested, 1ull << 40, "requested");
    ASSERT_U64(a->free_bytes, 5, "free bytes");
    ASSERT_U64(a->total_bytes, 10, "total bytes");
    ASSERT_U64(a->stack_id, 9, "stack");
    ASSERT_U64(a->process_live_bytes, 300, "device 1's bytes held then (managed excluded)");
    ASSERT_U64(b->process_live_bytes, 0, "after the free");
    ASSERT_U64(b->free_bytes, UINT64_MAX, "unknown free bytes");
    gs_replay_free(&r);
}

Test(replay, failures_beyond_the_cap_are_counted_as_dropped)
{
    struct gs_replay r;
    gs_replay_init(&r);
    struct gs_revent f = {.type = GS_REC_ALLOC_FAILED, .size = 1};
    for (int i = 0; i < 10005; i++) {
        f.time_ns = (uint64_t)i;
        gs_replay_event(&r, &f);
    }
    ASSERT_U64(r.failed, 10005, "failed");
    ASSERT_U64(r.nfailures, 10000, "kept");
    ASSERT_U64(r.failures_dropped, 5, "dropped");
    gs_replay_free(&r);
}

Test(replay, many_allocations_reuse_slots)
{
    /* Allocate and free in waves so the free list of slots is used. */
    struct gs_replay r;
    gs_replay_init(&r);
    uint64_t t = 0, live = 0;
    for (int wave = 0; wave < 20; wave++) {
        for (uint64_t i = 0; i < 1000; i++, t++) {
            alloc(&r, t, 0x100000 + (uint64_t)wave * 0x1000000 + i * 16, i + 1,
                  (uint32_t)(i % 10 + 1), 0);
            live += i + 1;
        }
        for (uint64_t i = 0; i < 1000; i += 2, t++) {
            free_t(&r, t, 0x100000 + (uint64_t)wave * 0x1000000 + i * 16, 1);
            live -= i + 1;
        }
    }
    ASSERT_U64(r.live_bytes, live, "live bytes");
    ASSERT_U64(r.frees, 20 * 500, "frees");
    ASSERT_U64(r.frees_unknown, 0, "no unknown frees");
    uint64_t n;
    ASSERT_U64(gs_replay_leaks(&r, &n), live, "leaks");
    ASSERT_U64(n, 20 * 500, "leaked count");
    ASSERT_U64(r.nallocs, 20 * 500 + 500, "slots: the live set's high water");
    gs_replay_free(&r);
}

/* ---- idmap ---- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Sites by (stack, kind), looked up through the cache in front of their
 * map: stacks far more than its slots, and each kind of each, in a random
 * order, each lookup the site of that stack and kind, the same each time. */
Test(replay, sites_by_stack_and_kind_through_the_cache)
{
    enum { STACKS = 3 * GS_SITE_CACHE + 5, LOOKS = 200000 };
    static struct gs_replay r;
    gs_replay_init(&r);
    static size_t first[STACKS][GS_KIND_COUNT]; /* index + 1 of each site made */
    cr_assert_not_null(gs_replay_site(&r, 1, 0, 1)); /* sites[0], in a slot of its own */
    cr_assert_null(gs_replay_site(&r, 0, 0, 0), "stack 0 in a slot never filled: no site");
    cr_assert_eq(gs_replay_site(&r, 1, 0, 0), &r.sites[0]);
    uint64_t seed = 99;
    size_t made = 1;
    for (int i = 0; i < LOOKS; i++) {
        uint64_t x = splitmix(&seed);
        uint32_t stack = (uint32_t)(x % STACKS) * 7 + 2, kind = (uint32_t)(x >> 40) % GS_KIND_COUNT;
        int make = (x >> 60) != 0; /* some only look */
        struct gs_site *s = gs_replay_site(&r, stack, kind, make);
        size_t *f = &first[(stack - 2) / 7][kind];
        if (!*f && !make) {
            cr_assert_null(s, "look %d: stack %u kind %u was never made", i, stack, kind);
            continue;
        }
        cr_assert_not_null(s);
        cr_assert_eq(s->stack_id, stack, "look %d: the site of stack %u", i, stack);
        cr_assert_eq(s->kind, kind, "look %d: the site of kind %u", i, kind);
        size_t idx = (size_t)(s - r.sites);
        if (!*f) {
            *f = idx + 1;
            made++;
        }
        cr_assert_eq(idx + 1, *f, "look %d: stack %u kind %u: the same site each time", i, stack,
                     kind);
    }
    cr_assert_eq(r.nsites, made, "one site per (stack, kind)");
    cr_assert_null(gs_replay_site(&r, 0, 0, 0), "stack 0 still never made");
    gs_replay_free(&r);
}

Test(idmap, empty_map)
{
    struct gs_idmap *m = gs_idmap_new();
    cr_assert_not_null(m);
    uint64_t v = 5;
    cr_assert_eq(gs_idmap_get(m, 0, &v), -1);
    cr_assert_eq(v, 5, "value untouched");
    cr_assert_eq(gs_idmap_del(m, 0), -1);
    cr_assert_eq(gs_idmap_count(m), 0);
    cr_assert_eq(gs_idmap_put(m, 0, 9), 0, "key 0 is a key");
    cr_assert_eq(gs_idmap_get(m, 0, &v), 0);
    cr_assert_eq(v, 9);
    cr_assert_eq(gs_idmap_put(m, UINT64_MAX, 10), 0);
    cr_assert_eq(gs_idmap_put(m, 0, 11), 0, "overwrite");
    cr_assert_eq(gs_idmap_count(m), 2, "overwriting does not add");
    cr_assert_eq(gs_idmap_get(m, 0, &v), 0);
    cr_assert_eq(v, 11);
    cr_assert_null(gs_idmap_find(m, 12345));
    uint64_t *found = gs_idmap_find(m, UINT64_MAX); /* the key kept beside the table */
    cr_assert_not_null(found);
    cr_assert_eq(*found, 10);
    gs_idmap_remove_found(m, found);
    cr_assert_eq(gs_idmap_count(m), 1);
    cr_assert_eq(gs_idmap_get(m, UINT64_MAX, &v), -1);
    cr_assert_null(gs_idmap_find(m, UINT64_MAX));
    found = gs_idmap_find(m, 0);
    cr_assert_not_null(found);
    gs_idmap_remove_found(m, found);
    cr_assert_eq(gs_idmap_count(m), 0);
    cr_assert_eq(gs_idmap_get(m, 0, &v), -1);
    gs_idmap_free(m);
    gs_idmap_free(NULL);
}

Test(idmap, million_random_ops_against_reference)
{
    enum { U = 40000, OPS = 1000000 };
    uint64_t *keys = malloc(U * sizeof *keys), *vals = calloc(U, sizeof *vals);
    uint8_t *present = calloc(U, 1);
    cr_assert(keys && vals && present);
    uint64_t seed = 12345;
    for (size_t i = 0; i < U; i++)
        keys[i] = splitmix(&seed);
    keys[0] = 0;
    keys[1] = UINT64_MAX;
    for (size_t i = 2; i < 200; i++) /* a run of small consecutive keys, like stack ids */
        keys[i] = i;
    struct gs_idmap *m = gs_idmap_new();
    size_t count = 0;
    for (uint64_t op = 0; op < OPS; op++) {
        uint64_t r = splitmix(&seed);
        size_t i = (size_t)(r % U);
        unsigned kind = (unsigned)(r >> 32) % 100;
        /* phases: grow to about U/2, churn, then shrink, then churn again */
        unsigned put_pct = op < OPS / 4 ? 70 : op < OPS / 2 ? 50 : op < 3 * OPS / 4 ? 25 : 50;
        uint64_t v;
        if (kind < put_pct) {
            uint64_t val = r ^ op;
            if (kind % 2) { /* half by put, half by add, which says whether it was there */
                cr_assert_eq(gs_idmap_put(m, keys[i], val), 0);
            } else {
                int added = -1;
                uint64_t *slot = gs_idmap_add(m, keys[i], &added);
                cr_assert_not_null(slot);
                cr_assert_eq(added, !present[i], "op %llu: add of key %zu, there %d",
                             (unsigned long long)op, i, present[i]);
                cr_assert_eq(*slot, present[i] ? vals[i] : 0, "op %llu: key %zu's value",
                             (unsigned long long)op, i);
                *slot = val;
            }
            count += !present[i];
            present[i] = 1;
            vals[i] = val;
        } else if (kind < 90) {
            /* a third by del, a third by take, which also gives the value, and a
             * third by find and remove_found, which give it too */
            int rc;
            if (kind % 3 == 0) {
                rc = gs_idmap_del(m, keys[i]);
            } else if (kind % 3 == 1) {
                rc = gs_idmap_take(m, keys[i], &v);
            } else {
                uint64_t *found = gs_idmap_find(m, keys[i]);
                rc = found ? 0 : -1;
                if (found) {
                    v = *found;
                    gs_idmap_remove_found(m, found);
                }
            }
            cr_assert_eq(rc, present[i] ? 0 : -1, "op %llu: del of key %zu returned %d",
                         (unsigned long long)op, i, rc);
            if (present[i] && kind % 3 != 0)
                cr_assert_eq(v, vals[i], "op %llu: value taken of key %zu", (unsigned long long)op,
                             i);
            count -= present[i];
            present[i] = 0;
        } else {
            int rc = gs_idmap_get(m, keys[i], &v);
            cr_assert_eq(rc, present[i] ? 0 : -1, "op %llu: get of key %zu", (unsigned long long)op,
                         i);
            if (present[i])
                cr_assert_eq(v, vals[i], "op %llu: value of key %zu", (unsigned long long)op, i);
        }
        /* after every op, some other key is still right */
        size_t j = (size_t)((r >> 17) % U);
        int rc = gs_idmap_get(m, keys[j], &v);
        cr_assert_eq(rc, present[j] ? 0 : -1, "op %llu: probe of key %zu", (unsigned long long)op,
                     j);
        if (present[j])
            cr_assert_eq(v, vals[j], "op %llu: probe value of key %zu", (unsigned long long)op, j);
        if (op % 100000 == 0 || op == OPS - 1) {
            cr_assert_eq(gs_idmap_count(m), count, "op %llu: count", (unsigned long long)op);
            for (size_t k = 0; k < U; k++) {
                rc = gs_idmap_get(m, keys[k], &v);
                cr_assert_eq(rc, present[k] ? 0 : -1, "op %llu: full check of key %zu",
                             (unsigned long long)op, k);
                if (present[k])
                    cr_assert_eq(v, vals[k]);
            }
        }
    }
    gs_idmap_free(m);
    free(keys);
    free(vals);
    free(present);
}

/* The slot idmap.c's hash picks (a copy; if it changes, these keys merely
 * stop colliding and the test still checks correctness). */
static size_t home(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

Test(idmap, colliding_cluster_across_the_end_survives_every_deletion)
{
    /* From 16 to 31 keys the table has 128 slots (a quarter full at most).
     * Take 12 keys whose home is slot 126 and 12 whose home is slot 127 or 0,
     * so one cluster wraps around the end; delete each position in turn and
     * check the rest. */
    enum { N = 24 };
    uint64_t keys[N];
    int n126 = 0, nwrap = 0;
    for (uint64_t k = 1; n126 + nwrap < N; k++) {
        size_t h = home(k, 128);
        if (h == 126 && n126 < 12)
            keys[n126++ + nwrap] = k;
        else if ((h == 127 || h == 0) && nwrap < 12)
            keys[n126 + nwrap++] = k;
    }
    for (int victim = 0; victim < N; victim++) {
        for (int second = 0; second < N; second++) {
            struct gs_idmap *m = gs_idmap_new();
            for (int i = 0; i < N; i++)
                cr_assert_eq(gs_idmap_put(m, keys[i], (uint64_t)i * 7), 0);
            cr_assert_eq(gs_idmap_del(m, keys[victim]), 0);
            int rc2 = gs_idmap_del(m, keys[second]);
            cr_assert_eq(rc2, second == victim ? -1 : 0, "second delete");
            for (int i = 0; i < N; i++) {
                uint64_t v;
                int gone = i == victim || i == second;
                int rc = gs_idmap_get(m, keys[i], &v);
                cr_assert_eq(rc, gone ? -1 : 0, "deleted %d then %d: key %d %s", victim, second,
                             i, gone ? "must be gone" : "must be found");
                if (!gone)
                    cr_assert_eq(v, (uint64_t)i * 7);
            }
            cr_assert_eq(gs_idmap_count(m), (size_t)(N - 1 - (second != victim)));
            /* put them back: all found again */
            gs_idmap_put(m, keys[victim], 1);
            gs_idmap_put(m, keys[second], 1);
            for (int i = 0; i < N; i++) {
                uint64_t v;
                cr_assert_eq(gs_idmap_get(m, keys[i], &v), 0, "key %d after reinsert", i);
            }
            gs_idmap_free(m);
        }
    }
}

/* ---- references, spaces, pools (virtual memory management) ---- */

static void ev(struct gs_replay *r, enum gs_record_type type, uint64_t addr, uint32_t space,
               uint32_t kind, uint64_t size)
{
    struct gs_revent e = {.type = type, .time_ns = 1, .tid = 7, .addr = addr, .size = size,
                          .space = space, .kind = kind, .stack_id = 9, .device = 0, .result = 1};
    gs_replay_event(r, &e);
}

Test(replay, a_handle_lives_until_its_last_reference)
{
    /* NCCL: create, map, retain, release, unmap, release. */
    struct gs_replay r;
    gs_replay_init(&r);
    ev(&r, GS_REC_ALLOC, 0x42, GS_SPACE_HANDLE, GS_KIND_DEVICE, 4096);
    ev(&r, GS_REC_ALLOC, 0x42, GS_SPACE_MAPPING, GS_KIND_MAPPED, 4096); /* same value, other space */
    ev(&r, GS_REC_REF, 0x42, GS_SPACE_HANDLE, 0, 0);
    ev(&r, GS_REC_FREE, 0x42, GS_SPACE_HANDLE, 0, 0);
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 4096, "one reference left: still live");
    ASSERT_U64(r.frees, 0, "no allocation ended yet");
    ev(&r, GS_REC_FREE, 0x42, GS_SPACE_MAPPING, 0, 0);
    ASSERT_U64(r.kinds[GS_KIND_MAPPED].live_bytes, 0, "unmapped");
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 4096, "the mapping's end is not the handle's");
    ev(&r, GS_REC_FREE, 0x42, GS_SPACE_HANDLE, 0, 0);
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 0, "the last reference released");
    ASSERT_U64(r.frees, 2, "the mapping and the handle ended");
    ASSERT_U64(r.refs, 1, "references taken");
    ASSERT_U64(r.peak_bytes, 4096, "the mapping did not count twice");
    gs_replay_free(&r);
}

Test(replay, a_failed_release_gives_the_reference_back)
{
    struct gs_replay r;
    gs_replay_init(&r);
    ev(&r, GS_REC_ALLOC, 0x42, GS_SPACE_HANDLE, GS_KIND_DEVICE, 100);
    ev(&r, GS_REC_REF, 0x42, GS_SPACE_HANDLE, 0, 0);
    ev(&r, GS_REC_FREE, 0x42, GS_SPACE_HANDLE, 0, 0);        /* 2 -> 1 */
    ev(&r, GS_REC_FREE_FAILED, 0x42, GS_SPACE_HANDLE, 0, 0); /* back to 2 */
    ev(&r, GS_REC_FREE, 0x42, GS_SPACE_HANDLE, 0, 0);        /* 2 -> 1 */
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 100, "still referenced");
    ev(&r, GS_REC_FREE, 0x42, GS_SPACE_HANDLE, 0, 0); /* 1 -> 0 */
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 0, "gone");
    ev(&r, GS_REC_FREE_FAILED, 0x42, GS_SPACE_HANDLE, 0, 0); /* the release did not happen */
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 100, "restored");
    ASSERT_U64(r.frees, 0, "the undone end is not counted");
    gs_replay_free(&r);
}

Test(replay, a_free_in_one_space_leaves_the_others)
{
    struct gs_replay r;
    gs_replay_init(&r);
    ev(&r, GS_REC_ALLOC, 0x7000, GS_SPACE_RESERVATION, GS_KIND_ADDRESS_SPACE, 1 << 20);
    ev(&r, GS_REC_ALLOC, 0x7000, GS_SPACE_MAPPING, GS_KIND_MAPPED, 1 << 16);
    ev(&r, GS_REC_ALLOC, 0x7000, GS_SPACE_ADDRESS, GS_KIND_DEVICE, 10);
    ev(&r, GS_REC_FREE, 0x7000, GS_SPACE_RESERVATION, 0, 0);
    ASSERT_U64(r.kinds[GS_KIND_ADDRESS_SPACE].live_bytes, 0, "reservation freed");
    ASSERT_U64(r.kinds[GS_KIND_MAPPED].live_bytes, 1 << 16, "mapping untouched");
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 10, "allocation untouched");
    ev(&r, GS_REC_FREE, 0x7000, GS_SPACE_COUNT, 0, 0);
    ASSERT_U64(r.frees_unknown, 1, "a space from a newer writer frees nothing");
    gs_replay_free(&r);
}

Test(replay, pools_from_their_samples)
{
    struct gs_replay r;
    gs_replay_init(&r);
    struct gs_revent s = {.type = GS_REC_POOL, .device = 1, .pool = 0xabc};
    s.reserved = 4 << 20, s.used = 3 << 20;
    gs_replay_event(&r, &s);
    alloc(&r, 2, 0x1000, 5 << 20, 1, 1); /* the device peak, with the pool as sampled */
    s.reserved = 4 << 20, s.used = 1 << 20;
    gs_replay_event(&r, &s);
    s.reserved = 0, s.used = 0; /* destroyed */
    gs_replay_event(&r, &s);
    cr_assert_eq(r.npools, 1);
    const struct gs_pool_usage *p = &r.pools[0];
    ASSERT_U64(p->peak_reserved, 4 << 20, "peak reserved");
    ASSERT_U64(p->peak_used, 3 << 20, "peak used");
    ASSERT_U64(p->peak_unused, 3 << 20, "most held beyond use");
    ASSERT_U64(p->samples, 3, "samples");
    cr_assert_eq(p->device, 1);
    ASSERT_U64(r.peak_pool_reserved, 4 << 20, "reserved at the device peak");
    ASSERT_U64(r.peak_pool_used, 3 << 20, "used at the device peak");
    ASSERT_U64(r.pool_reserved, 0, "all pools now");
    gs_replay_free(&r);
}

Test(replay, a_refused_double_free_revives_nothing)
{
    /* alloc, free, free again (the driver refuses the second): still freed. */
    struct gs_replay r;
    gs_replay_init(&r);
    alloc(&r, 1, 0x1000, 64, 1, 0);
    free_t(&r, 2, 0x1000, 1);
    free_t(&r, 3, 0x1000, 1);
    free_failed(&r, 4, 0x1000, 1);
    ASSERT_U64(r.live_bytes, 0, "nothing live");
    ASSERT_U64(r.frees, 1, "one free");
    ASSERT_U64(r.frees_unknown, 1, "one free of an address not live");
    gs_replay_free(&r);
}

static void map_ev(struct gs_replay *r, uint64_t addr, uint64_t size, uint64_t handle)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = 1, .tid = 7, .addr = addr, .size = size,
                          .space = GS_SPACE_MAPPING, .kind = GS_KIND_MAPPED, .parent = handle};
    gs_replay_event(r, &e);
}

static void unmap_ev(struct gs_replay *r, uint64_t addr, uint64_t size)
{
    struct gs_revent e = {.type = GS_REC_FREE, .time_ns = 2, .tid = 7, .addr = addr, .size = size,
                          .space = GS_SPACE_MAPPING};
    gs_replay_event(r, &e);
}

Test(replay, memory_released_while_mapped_lives_until_unmapped)
{
    /* NVIDIA's vectorAddMMAP: create, map, release at once; unmap later. */
    struct gs_replay r;
    gs_replay_init(&r);
    ev(&r, GS_REC_ALLOC, 0x1, GS_SPACE_HANDLE, GS_KIND_DEVICE, 2 << 20);
    ev(&r, GS_REC_ALLOC, 0x2, GS_SPACE_HANDLE, GS_KIND_DEVICE, 2 << 20);
    map_ev(&r, 0x70000000, 2 << 20, 0x1);
    map_ev(&r, 0x70200000, 2 << 20, 0x2);
    ev(&r, GS_REC_FREE, 0x1, GS_SPACE_HANDLE, 0, 0);
    ev(&r, GS_REC_FREE, 0x2, GS_SPACE_HANDLE, 0, 0);
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 4 << 20, "released but mapped: still held");
    unmap_ev(&r, 0x70000000, 4 << 20); /* one unmap over both mappings */
    ASSERT_U64(r.kinds[GS_KIND_MAPPED].live_bytes, 0, "both mappings ended");
    ASSERT_U64(r.kinds[GS_KIND_DEVICE].live_bytes, 0, "and with them the memory");
    ASSERT_U64(r.frees, 4, "two mappings, two allocations");
    ASSERT_U64(r.frees_unknown, 0, "nothing unknown");
    gs_replay_free(&r);
}

Test(replay, a_multicast_object_is_its_own_kind_not_device_memory)
{
    /* NCCL's NVLS teardown order (nvls.cc): the multicast object mapped,
     * the physical memory bound to it; unmap, release, release. */
    struct gs_replay r;
    gs_replay_init(&r);
    ev(&r, GS_REC_ALLOC, 0x1, GS_SPACE_HANDLE, GS_KIND_MULTICAST, 8 << 20);
    ev(&r, GS_REC_ALLOC, 0x2, GS_SPACE_HANDLE, GS_KIND_DEVICE, 8 << 20);
    map_ev(&r, 0x70000000, 8 << 20, 0x1);
    ASSERT_U64(r.peak_bytes, 8 << 20, "device peak: the physical memory only");
    ASSERT_U64(r.kinds[GS_KIND_MULTICAST].live_bytes, 8 << 20, "the object");
    ev(&r, GS_REC_FREE, 0x2, GS_SPACE_HANDLE, 0, 0);
    unmap_ev(&r, 0x70000000, 8 << 20);
    ev(&r, GS_REC_FREE, 0x1, GS_SPACE_HANDLE, 0, 0);
    ASSERT_U64(r.kinds[GS_KIND_MULTICAST].live_bytes, 0, "released");
    ASSERT_U64(r.kinds[GS_KIND_MULTICAST].peak_bytes, 8 << 20, "its peak");
    ASSERT_U64(r.live_bytes, 0, "no device memory left");
    ASSERT_U64(r.frees_unknown, 0, "nothing unknown");
    cr_assert_str_eq(gs_kind_name(GS_KIND_MULTICAST), "multicast");
    gs_replay_free(&r);
}

/* ---- the hooks (gs_replay_attach) ---- */

/* What each hook was called for, in order: its letter, then the callback's. */
struct hook_log {
    char calls[256];
    size_t n;
};

static struct hook_log hooks_seen;

static void seen(void *ctx, char what)
{
    cr_assert_lt(hooks_seen.n + 2, sizeof hooks_seen.calls);
    hooks_seen.calls[hooks_seen.n++] = *(const char *)ctx;
    hooks_seen.calls[hooks_seen.n++] = what;
}

static void h_before(void *c, struct gs_replay *r, uint64_t t) { (void)r, (void)t, seen(c, 'b'); }
static void h_after(void *c, struct gs_replay *r, uint64_t t) { (void)r, (void)t, seen(c, 'a'); }
static void h_alloc(void *c, struct gs_replay *r, size_t site, uint64_t t)
{
    (void)r, (void)site, (void)t, seen(c, 'n');
}
static void h_mark(void *c, struct gs_replay *r, uint32_t label, uint64_t t)
{
    (void)r, (void)label, (void)t, seen(c, 'm');
}
static void h_range(void *c, struct gs_replay *r, const struct gs_revent *e)
{
    (void)r, (void)e, seen(c, 'g');
}
static void h_device(void *c, struct gs_replay *r, const struct gs_live_alloc *a, size_t idx,
                     int how)
{
    (void)r, (void)a, (void)idx, seen(c, how == GS_DEVICE_NEW ? 'd' : 'D');
}
static void h_failure(void *c, struct gs_replay *r, size_t idx) { (void)r, (void)idx, seen(c, 'f'); }
static void h_finish(void *c, struct gs_replay *r) { (void)r, seen(c, 'e'); }
static void h_reset(void *c, struct gs_replay *r) { (void)r, seen(c, 'r'); }

static const struct gs_replay_hook every_hook = {
    .before_event = h_before, .after_event = h_after, .on_alloc = h_alloc,
    .on_mark = h_mark,        .on_range = h_range,    .on_device = h_device,
    .on_failure = h_failure,  .finish = h_finish,     .reset = h_reset};
static const struct gs_replay_hook two_hook = {.before_event = h_before, .reset = h_reset};

Test(replay, hooks_are_called_for_their_callbacks_in_the_order_attached)
{
    struct gs_replay r;
    gs_replay_init(&r);
    memset(&hooks_seen, 0, sizeof hooks_seen);
    *(char *)gs_replay_attach(&r, &every_hook, 1) = 'A';
    *(char *)gs_replay_attach(&r, &two_hook, 1) = 'B';
    *(char *)gs_replay_attach(&r, &every_hook, 1) = 'C';
    alloc(&r, 10, 0x1000, 300, 1, 0);
    free_t(&r, 20, 0x1000, 1);
    struct gs_revent mark = {.type = GS_REC_MARK, .time_ns = 30, .tid = 1, .label = "step",
                             .label_len = 4};
    gs_replay_event(&r, &mark);
    struct gs_revent range = {.type = GS_REC_RANGE, .time_ns = 40, .tid = 1, .op = GS_RANGE_PUSH,
                              .label = "fwd", .label_len = 3};
    gs_replay_event(&r, &range);
    struct gs_revent failed = {.type = GS_REC_ALLOC_FAILED, .time_ns = 50, .tid = 1,
                               .size = 1ull << 40, .result = 2, .free_bytes = UINT64_MAX,
                               .total_bytes = UINT64_MAX};
    gs_replay_event(&r, &failed);
    gs_replay_reset(&r);
    gs_replay_finish(&r);
    hooks_seen.calls[hooks_seen.n] = '\0';
    cr_assert_str_eq(hooks_seen.calls,
                     "AbBbCb" "AnCn" "AdCd" "AaCa"  /* the allocation */
                     "AbBbCb" "ADCD" "AaCa"         /* its free */
                     "AbBbCb" "AmCm" "AaCa"         /* the mark */
                     "AbBbCb" "AgCg" "AaCa"         /* the range (not a mark: not top-level) */
                     "AbBbCb" "AfCf" "AaCa"         /* the failure */
                     "ArBrCr"                       /* reset, after a checkpoint */
                     "AeCe");                       /* finish */
    gs_replay_free(&r);
}
