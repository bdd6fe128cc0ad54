/*
 * test_xla_bfc.c - analyzer/whatif/xla_bfc.c, the model of XLA's BFC
 * allocator, held to the allocator's own rules case by case (issue 17,
 * item 5). Each test is named for the rule and cites the function of
 * xla/tsl/framework/bfc_allocator.{h,cc} (openxla/xla 00df9eefeb54) or
 * xla/pjrt/gpu/gpu_helpers.cc (CreateBFCAllocator) it follows.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "analyzer/whatif/xla_bfc.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

#define ASSERT_U64(got, want, ...) cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

/* A card of `capacity` bytes whose whole is the memory limit (fraction 1). */
static struct gs_bfc_config cfg(uint64_t capacity, int preallocate)
{
    struct gs_bfc_config c;
    gs_bfc_config_default(&c);
    c.capacity = capacity;
    c.memory_fraction = 1.0;
    c.preallocate = preallocate;
    return c;
}

static struct gs_bfc *model(const struct gs_bfc_config *c)
{
    struct gs_bfc *t = gs_bfc_new(c);
    cr_assert_not_null(t, "gs_bfc_new");
    return t;
}

static void ok_alloc(struct gs_bfc *t, uint64_t id, uint64_t size)
{
    cr_assert_eq(gs_bfc_alloc(t, id, size), GS_BFC_OK, "alloc id %llu", (unsigned long long)id);
    cr_assert_eq(gs_bfc_check(t), 0, "invariant %d after alloc %llu", gs_bfc_check(t),
                 (unsigned long long)id);
}

static void ok_free(struct gs_bfc *t, uint64_t id)
{
    cr_assert_eq(gs_bfc_release(t, id), GS_BFC_OK, "free id %llu", (unsigned long long)id);
    cr_assert_eq(gs_bfc_check(t), 0, "invariant %d after free %llu", gs_bfc_check(t),
                 (unsigned long long)id);
}

static uint64_t addr_of(struct gs_bfc *t, uint64_t id)
{
    uint64_t a, s;
    cr_assert_eq(gs_bfc_chunk_of(t, id, &a, &s), 0, "id %llu has a chunk", (unsigned long long)id);
    return a;
}

static uint64_t size_of(struct gs_bfc *t, uint64_t id)
{
    uint64_t a, s;
    cr_assert_eq(gs_bfc_chunk_of(t, id, &a, &s), 0, "id %llu has a chunk", (unsigned long long)id);
    return s;
}

/* RoundedBytes: kMinAllocationSize (256) multiples; AllocateRawInternal
 * gives the chunk the rounded size and keeps what was asked
 * (requested_size). */
Test(xla_bfc, requests_rounded_to_256_bytes)
{
    ASSERT_U64(gs_bfc_rounded_bytes(1), 256, "1 -> 256");
    ASSERT_U64(gs_bfc_rounded_bytes(256), 256, "256 stays");
    ASSERT_U64(gs_bfc_rounded_bytes(257), 512, "257 -> 512");
    ASSERT_U64(gs_bfc_rounded_bytes(1000), 1024, "1000 -> 1024");
    ASSERT_U64(gs_bfc_rounded_bytes(UINT64_MAX - 3), UINT64_MAX, "overflow-safe");
    struct gs_bfc_config c = cfg(64 * MiB, 1);
    struct gs_bfc *t = model(&c);
    ok_alloc(t, 1, 1);
    ok_alloc(t, 2, 257);
    ASSERT_U64(size_of(t, 1), 256, "chunk of 1 byte");
    ASSERT_U64(size_of(t, 2), 512, "chunk of 257 bytes");
    ASSERT_U64(addr_of(t, 2) - addr_of(t, 1), 256, "split right after the first");
    ASSERT_U64(gs_bfc_stats(t)->bytes_in_use, 768, "in use: the chunks");
    ASSERT_U64(gs_bfc_stats(t)->requested, 258, "requested: what was asked");
    gs_bfc_free(t);
}

/* BinNumForSize: bin b holds [256 << b, 256 << (b + 1)), the last (20) all
 * from 256 MiB up; the constructor's CHECKs: BinForSize(bin_size),
 * (bin_size + 255) and (bin_size * 2 - 1) are bin b, bin_size * 2 is not. */
Test(xla_bfc, bin_index_of_sizes)
{
    ASSERT_U64(gs_bfc_bin_for_size(0), 0, "0 -> bin 0 (max(bytes, 256))");
    ASSERT_U64(gs_bfc_bin_for_size(256), 0, "256");
    ASSERT_U64(gs_bfc_bin_for_size(511), 0, "511");
    ASSERT_U64(gs_bfc_bin_for_size(512), 1, "512");
    ASSERT_U64(gs_bfc_bin_for_size(1 * MiB), 12, "1 MiB");
    ASSERT_U64(gs_bfc_bin_for_size(256 * MiB - 256), 19, "just under 256 MiB");
    ASSERT_U64(gs_bfc_bin_for_size(256 * MiB), 20, "256 MiB: the last bin");
    ASSERT_U64(gs_bfc_bin_for_size(64 * GiB), 20, "and all above");
    for (int b = 0; b < GS_BFC_NUM_BINS; b++) {
        uint64_t bin_size = 256ull << b;
        cr_assert_eq(gs_bfc_bin_for_size(bin_size), b, "bin %d", b);
        cr_assert_eq(gs_bfc_bin_for_size(bin_size + 255), b, "bin %d + 255", b);
        cr_assert_eq(gs_bfc_bin_for_size(bin_size * 2 - 1), b, "bin %d, 2x - 1", b);
        if (b + 1 < GS_BFC_NUM_BINS)
            cr_assert_neq(gs_bfc_bin_for_size(bin_size * 2), b, "bin %d, 2x", b);
    }
}

/* CreateBFCAllocator: memory limit = total x memory_fraction (0.75 by
 * default), allow_growth = !preallocate; the constructor makes the first
 * region RoundedBytes(limit); Extend takes at most what is left under the
 * limit rounded down to 256, on the first allocation - the whole pool. */
Test(xla_bfc, preallocation_reserves_fraction_of_capacity_at_the_first_request)
{
    struct gs_bfc_config c;
    gs_bfc_config_default(&c);
    cr_assert(c.preallocate && c.memory_fraction == 0.75 && !c.garbage_collection, "JAX's defaults");
    cr_assert_lt(gs_bfc_config_check(&c), 0, "the card's bytes are required");
    c.capacity = 80 * GiB;
    ASSERT_U64(gs_bfc_memory_limit(&c), 60 * GiB, "75%% of 80 GiB");
    struct gs_bfc *t = model(&c);
    ASSERT_U64(gs_bfc_stats(t)->pool_bytes, 0, "nothing before the first request");
    ok_alloc(t, 1, 1 * MiB);
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ASSERT_U64(s->pool_bytes, 60 * GiB, "the whole limit at once");
    ASSERT_U64(s->region_allocs, 1, "one region");
    ASSERT_U64(s->bytes_in_use, 1 * MiB, "in use");
    ok_alloc(t, 2, 10 * GiB);
    ASSERT_U64(s->region_allocs, 1, "still one region");
    ASSERT_U64(s->next_region_bytes, 120 * GiB, "the target doubled after the region (not needed)");
    gs_bfc_free(t);

    /* A limit not a multiple of 256: the region is what is left rounded down. */
    c.capacity = 1000 * MiB + 1000;
    uint64_t limit = gs_bfc_memory_limit(&c);
    ASSERT_U64(limit, 786432750, "(1000 MiB + 1000) x 0.75, truncated");
    t = model(&c);
    ok_alloc(t, 1, 256);
    ASSERT_U64(gs_bfc_stats(t)->pool_bytes, 786432512, "rounded down to 256");
    gs_bfc_free(t);
}

/* Extend with allow_growth=false: after the preallocated region nothing is
 * left under the limit (rounded_bytes > available_bytes), so a request no
 * free chunk holds is out of memory. */
Test(xla_bfc, preallocated_pool_does_not_grow)
{
    struct gs_bfc_config c = cfg(100 * MiB, 1);
    struct gs_bfc *t = model(&c);
    ok_alloc(t, 1, 40 * MiB); /* 100 >= 2 x 40: split */
    cr_assert_eq(gs_bfc_alloc(t, 2, 70 * MiB), GS_BFC_OOM, "60 MiB left");
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ASSERT_U64(s->ooms, 1, "one OOM");
    ASSERT_U64(s->first_oom_request, 1, "the second request");
    ASSERT_U64(s->first_oom_size, 70 * MiB, "its size");
    ASSERT_U64(s->region_allocs, 1, "no second region");
    ASSERT_U64(s->largest_free_chunk, 60 * MiB, "the rest, one free chunk");
    cr_assert_eq(gs_bfc_release(t, 2), GS_BFC_BAD, "the failed id is not live");
    ok_alloc(t, 3, 60 * MiB);
    ASSERT_U64(s->bytes_in_use, 100 * MiB, "the whole pool in use");
    gs_bfc_free(t);

    /* ShouldSplitChunk: 60 MiB of a 100 MiB pool takes it all (100 < 120,
     * 40 MiB < 128 MiB), so a second request finds nothing. */
    t = model(&c);
    ok_alloc(t, 1, 60 * MiB);
    ASSERT_U64(gs_bfc_stats(t)->bytes_in_use, 100 * MiB, "the whole pool for 60 MiB");
    cr_assert_eq(gs_bfc_alloc(t, 2, 1 * MiB), GS_BFC_OOM, "nothing left");
    gs_bfc_free(t);
}

/* Extend with allow_growth: the first region 2 MiB (the constructor's
 * curr_region_allocation_bytes_); the target doubles after each region
 * that did not need it raised, and doubles until it holds a request larger
 * than it (then not again after). */
Test(xla_bfc, region_growth_doubles_under_allow_growth)
{
    struct gs_bfc_config c = cfg(1 * GiB, 0);
    struct gs_bfc *t = model(&c);
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ASSERT_U64(s->next_region_bytes, 2 * MiB, "2 MiB first");
    ok_alloc(t, 1, 1 * MiB);
    ASSERT_U64(s->pool_bytes, 2 * MiB, "a 2 MiB region");
    ok_alloc(t, 2, 1 * MiB); /* the split-off remainder */
    ASSERT_U64(s->region_allocs, 1, "both in the first region");
    ok_alloc(t, 3, 1 * MiB);
    ASSERT_U64(s->pool_bytes, 6 * MiB, "then 4 MiB");
    ok_alloc(t, 4, 5 * MiB); /* the 3 MiB left cannot hold it */
    ASSERT_U64(s->pool_bytes, 14 * MiB, "then 8 MiB");
    ASSERT_U64(s->next_region_bytes, 16 * MiB, "next 16");
    ok_alloc(t, 5, 20 * MiB);
    ASSERT_U64(s->pool_bytes, 46 * MiB, "16 < 20: raised to 32 MiB");
    ASSERT_U64(s->next_region_bytes, 32 * MiB, "raised for the request: not doubled after");
    ASSERT_U64(s->region_allocs, 4, "four regions");
    ASSERT_U64(s->regions, 4, "held");
    gs_bfc_free(t);

    c = cfg(1 * MiB, 0); /* a limit under 2 MiB: the first region is the limit */
    t = model(&c);
    ASSERT_U64(gs_bfc_stats(t)->next_region_bytes, 1 * MiB, "min(total, 2 MiB)");
    gs_bfc_free(t);
}

/* Extend: the region is min(curr_region_allocation_bytes_, what is left);
 * FindChunkPtr: free bytes split over chunks none of which holds the
 * request do not serve it - out of memory with 3 MiB free. */
Test(xla_bfc, oom_when_no_chunk_fits_and_the_pool_cannot_grow)
{
    struct gs_bfc_config c = cfg(10 * MiB, 0);
    struct gs_bfc *t = model(&c);
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ok_alloc(t, 1, 1 * MiB); /* region 2 MiB, split: 1 MiB free */
    ok_alloc(t, 2, 2 * MiB); /* region 4 MiB, split: 2 MiB free */
    ok_alloc(t, 3, 4 * MiB); /* target 8 MiB, 4 left: region 4 MiB */
    ASSERT_U64(s->pool_bytes, 10 * MiB, "the limit reached");
    ASSERT_U64(s->region_allocs, 3, "three regions");
    cr_assert_eq(gs_bfc_alloc(t, 4, 3 * MiB), GS_BFC_OOM, "no chunk of 3 MiB");
    ASSERT_U64(s->pool_bytes - s->bytes_in_use, 3 * MiB, "3 MiB free");
    ASSERT_U64(s->largest_free_chunk, 2 * MiB, "in chunks of 1 and 2 MiB");
    ASSERT_U64(s->first_oom_request, 3, "the fourth request");
    gs_bfc_free(t);
}

/* FindChunkPtr over Bin::free_chunks ordered by ChunkComparator (size,
 * then address): from the request's bin up, the smallest chunk that
 * holds it, of those the lowest address. */
Test(xla_bfc, best_fit_smallest_chunk_then_lowest_address)
{
    struct gs_bfc_config c = cfg(64 * MiB, 1);
    struct gs_bfc *t = model(&c);
    static const uint64_t hole[4] = {4 * MiB, 2 * MiB, 3 * MiB, 2 * MiB};
    uint64_t at[4];
    for (uint64_t k = 0; k < 4; k++) { /* hole k, then a 1 MiB separator */
        ok_alloc(t, 10 + k, hole[k]);
        ok_alloc(t, 20 + k, 1 * MiB);
        at[k] = addr_of(t, 10 + k);
    }
    for (uint64_t k = 0; k < 4; k++)
        ok_free(t, 10 + k);
    ASSERT_U64(gs_bfc_stats(t)->free_chunks, 5, "four holes and the tail");
    ok_alloc(t, 1, 2 * MiB);
    ASSERT_U64(addr_of(t, 1), at[1], "2 MiB: the lower of the two 2 MiB holes");
    ok_alloc(t, 2, 1536 * KiB);
    ASSERT_U64(addr_of(t, 2), at[3], "1.5 MiB: the other 2 MiB hole, not the 3 or 4");
    ASSERT_U64(size_of(t, 2), 2 * MiB, "taken whole: 2 < 2 x 1.5 and 0.5 MiB < 128 MiB");
    ok_alloc(t, 3, 3 * MiB);
    ASSERT_U64(addr_of(t, 3), at[2], "3 MiB: the 3 MiB hole");
    ok_alloc(t, 4, 3 * MiB);
    ASSERT_U64(addr_of(t, 4), at[0], "3 MiB more: the 4 MiB hole");
    gs_bfc_free(t);
}

/* On a 1 GiB pool: 1 MiB in use, a free 300 MiB hole, 1 MiB in use, the
 * tail. */
static struct gs_bfc *with_300mib_hole(const struct gs_bfc_config *c)
{
    struct gs_bfc *t = model(c);
    ok_alloc(t, 1, 1 * MiB);
    ok_alloc(t, 2, 300 * MiB);
    ok_alloc(t, 3, 1 * MiB);
    ok_free(t, 2);
    return t;
}

/* ShouldSplitChunk: split when the chunk is at least twice the request or
 * the waste would be max_internal_fragmentation_bytes_ (128 MiB, or
 * fragmentation_fraction x limit) or more; SplitChunk leaves the remainder
 * a free chunk in its bin. */
Test(xla_bfc, split_rule_and_the_remainder_left_free)
{
    struct gs_bfc_config c = cfg(1 * GiB, 1);
    struct gs_bfc *t = model(&c);
    ok_alloc(t, 1, 1 * MiB);
    ASSERT_U64(size_of(t, 1), 1 * MiB, "the pool split");
    ASSERT_U64(gs_bfc_stats(t)->free_chunks, 1, "the remainder free");
    ASSERT_U64(gs_bfc_stats(t)->largest_free_chunk, 1023 * MiB, "all of it");
    gs_bfc_free(t);

    t = with_300mib_hole(&c);
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ASSERT_U64(s->free_chunks, 2, "the hole and the tail");
    ok_alloc(t, 4, 200 * MiB);
    ASSERT_U64(size_of(t, 4), 300 * MiB, "300 < 400 and 100 MiB < 128 MiB: whole");
    ok_free(t, 4);
    ok_alloc(t, 5, 160 * MiB);
    ASSERT_U64(size_of(t, 5), 160 * MiB, "140 MiB >= 128 MiB: split");
    ASSERT_U64(s->bytes_in_use, 162 * MiB, "in use");
    ok_free(t, 5);
    ok_alloc(t, 6, 172 * MiB);
    ASSERT_U64(size_of(t, 6), 172 * MiB, "128 MiB exactly: split (>=)");
    ok_free(t, 6);
    ok_alloc(t, 7, 172 * MiB + 256);
    ASSERT_U64(size_of(t, 7), 300 * MiB, "128 MiB - 256: whole");
    gs_bfc_free(t);

    c.fragmentation_fraction = 0.5; /* 512 MiB of the 1 GiB limit */
    t = with_300mib_hole(&c);
    ok_alloc(t, 5, 160 * MiB);
    ASSERT_U64(size_of(t, 5), 300 * MiB, "140 MiB < 512 MiB: whole");
    gs_bfc_free(t);
}

/* DeallocateRawInternal -> MarkFree, TryToCoalesce (the next chunk merged
 * into this one, this one into the previous), InsertFreeChunk. */
Test(xla_bfc, free_coalesces_both_neighbours)
{
    struct gs_bfc_config c = cfg(64 * MiB, 1);
    struct gs_bfc *t = model(&c);
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ok_alloc(t, 1, 1 * MiB);
    ok_alloc(t, 2, 2 * MiB);
    ok_alloc(t, 3, 3 * MiB);
    ok_alloc(t, 4, 1 * MiB); /* keeps 1-3 apart from the tail */
    uint64_t a1 = addr_of(t, 1);
    ok_free(t, 1);
    ok_free(t, 3);
    ASSERT_U64(s->free_chunks, 3, "two holes and the tail");
    ASSERT_U64(s->live_chunks, 5, "five chunks");
    ok_free(t, 2);
    ASSERT_U64(s->free_chunks, 2, "one 6 MiB hole and the tail");
    ASSERT_U64(s->live_chunks, 3, "three chunks");
    ok_alloc(t, 5, 6 * MiB);
    ASSERT_U64(addr_of(t, 5), a1, "the merged hole, at the first's address");
    ASSERT_U64(size_of(t, 5), 6 * MiB, "whole");
    ok_free(t, 5);
    ok_free(t, 4);
    ASSERT_U64(s->live_chunks, 1, "the region one chunk again");
    ASSERT_U64(s->largest_free_chunk, 64 * MiB, "all free");
    gs_bfc_free(t);
}

/* AllocateRawInternal: FindChunkPtr, Extend, then DeallocateFreeRegions
 * (garbage_collection: the regions with no chunk in use freed when that and
 * what is left under the limit could hold the request) and Extend again. */
Test(xla_bfc, garbage_collection_frees_free_regions_then_retries)
{
    for (int gc = 0; gc < 2; gc++) {
        struct gs_bfc_config c = cfg(16 * MiB, 0);
        c.garbage_collection = gc;
        struct gs_bfc *t = model(&c);
        const struct gs_bfc_stats *s = gs_bfc_stats(t);
        ok_alloc(t, 1, 2 * MiB); /* region 2 MiB */
        ok_alloc(t, 2, 4 * MiB); /* region 4 MiB */
        ok_alloc(t, 3, 8 * MiB); /* region 8 MiB: 14 of 16 */
        ok_free(t, 1);
        ok_free(t, 2);
        int rc = gs_bfc_alloc(t, 4, 7 * MiB); /* 2 left; 6 in free regions */
        cr_assert_eq(gs_bfc_check(t), 0, "invariants");
        if (!gc) {
            cr_assert_eq(rc, GS_BFC_OOM, "without collection: out of memory");
            ASSERT_U64(s->pool_bytes, 14 * MiB, "the regions kept");
            ASSERT_U64(s->region_frees, 0, "none freed");
        } else {
            cr_assert_eq(rc, GS_BFC_OK, "with collection it fits");
            ASSERT_U64(s->region_frees, 2, "the two free regions freed");
            ASSERT_U64(s->gc_runs, 1, "one collection");
            ASSERT_U64(s->region_allocs, 4, "and a fourth region");
            ASSERT_U64(s->pool_bytes, 16 * MiB, "8 + min(16, 8)");
            ASSERT_U64(s->peak_pool_bytes, 16 * MiB, "peak");
            ASSERT_U64(s->regions, 2, "two held");
            ASSERT_U64(size_of(t, 4), 8 * MiB, "8 < 14 and 1 MiB waste: whole");
            /* Collection that cannot help frees nothing ("rough estimation"). */
            ok_free(t, 4);
            cr_assert_eq(gs_bfc_alloc(t, 5, 17 * MiB), GS_BFC_OOM, "over the limit");
            ASSERT_U64(s->region_frees, 2, "nothing more freed");
        }
        gs_bfc_free(t);
    }
}

/* Extend: a refusal from the sub-allocator backs the region off by
 * kBackpedalFactor (0.9) until the card gives it or it is under the
 * request. gpu_system_memory_size over the card: 200 MiB asked of 100, 7
 * refusals (200, 180, 162, 145.8, 131.2, 118.1, 106.3 MiB) then ~95.7. */
Test(xla_bfc, card_refusal_backs_the_region_off)
{
    struct gs_bfc_config c = cfg(100 * MiB, 1);
    c.system_memory_size = 200 * MiB;
    ASSERT_U64(gs_bfc_memory_limit(&c), 200 * MiB, "gpu_system_memory_size replaces the fraction");
    struct gs_bfc *t = model(&c);
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ok_alloc(t, 1, 1 * MiB);
    ASSERT_U64(s->driver_refusals, 7, "seven refusals");
    cr_assert_leq(s->pool_bytes, 100 * MiB, "within the card");
    cr_assert_gt(s->pool_bytes, 95 * MiB, "0.9^7 x 200 MiB: %llu", (unsigned long long)s->pool_bytes);
    ASSERT_U64(s->pool_bytes % 256, 0, "RoundedBytes");
    ASSERT_U64(s->region_allocs, 1, "one region");
    cr_assert_eq(gs_bfc_alloc(t, 2, 99 * MiB), GS_BFC_OOM, "under the limit, over the card");
    cr_assert_gt(s->driver_refusals, 7, "refused again");
    ASSERT_U64(s->region_allocs, 1, "no region");
    gs_bfc_free(t);
}

/* CreateBFCAllocator (xla/pjrt/gpu/gpu_helpers.cc): DeviceMemoryUsage
 * gives free and total memory; allocator_memory = total_memory *
 * memory_fraction, the free memory unused. On a 1 GiB card of which 900
 * MiB are the process's (the context has the rest), .75 is 768 MiB of the
 * whole card, and the preallocated region of 768 MiB fits in the 900.
 * With 200 MiB more held outside the allocator (700 left), the card
 * refuses 768 and Extend backs off (x 0.9) to 691.2 MiB. */
Test(xla_bfc, memory_limit_is_of_the_cards_total_and_the_card_refuses_past_what_it_has)
{
    struct gs_bfc_config c = cfg(1 * GiB, 1);
    c.memory_fraction = 0.75;
    c.available = 900 * MiB;
    ASSERT_U64(gs_bfc_memory_limit(&c), 768 * MiB, "0.75 of the whole card");
    struct gs_bfc *t = model(&c);
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ok_alloc(t, 1, 700 * MiB);
    ASSERT_U64(s->pool_bytes, 768 * MiB, "the whole limit preallocated");
    ASSERT_U64(s->driver_refusals, 0, "768 <= 900: no refusal");
    gs_bfc_free(t);

    t = model(&c);
    s = gs_bfc_stats(t);
    gs_bfc_set_external(t, 200 * MiB);
    ok_alloc(t, 1, 100 * MiB);
    ASSERT_U64(s->driver_refusals, 1, "768 > 900 - 200");
    uint64_t back = (uint64_t)((float)(768 * MiB) * 0.9f); /* kBackpedalFactor is a float */
    ASSERT_U64(s->pool_bytes, (back + 255) / 256 * 256,
               "backed off once: RoundedBytes(768 MiB x 0.9)");
    gs_bfc_free(t);
}

/* FinishChunkAllocation, MarkFree, Extend and GetStats' figures, exactly. */
Test(xla_bfc, stats_exact)
{
    struct gs_bfc_config c = cfg(64 * MiB, 1);
    struct gs_bfc *t = model(&c);
    ok_alloc(t, 1, 1000);
    ok_alloc(t, 2, 3 * MiB);
    ok_free(t, 1);
    const struct gs_bfc_stats *s = gs_bfc_stats(t);
    ASSERT_U64(s->requests, 3, "requests");
    ASSERT_U64(s->memory_limit, 64 * MiB, "limit");
    ASSERT_U64(s->bytes_in_use, 3 * MiB, "in use");
    ASSERT_U64(s->peak_bytes_in_use, 3 * MiB + 1024, "peak in use");
    ASSERT_U64(s->requested, 3 * MiB, "requested");
    ASSERT_U64(s->largest_alloc_size, 3 * MiB, "largest chunk");
    ASSERT_U64(s->num_allocs, 2, "allocs");
    ASSERT_U64(s->pool_bytes, 64 * MiB, "pool");
    ASSERT_U64(s->peak_pool_bytes, 64 * MiB, "peak pool");
    ASSERT_U64(s->unallocated_at_peak, 61 * MiB - 1024,
               "the least idle while the pool stood at its 64 MiB peak: after the second");
    ASSERT_U64(s->region_allocs, 1, "regions added");
    ASSERT_U64(s->region_frees, 0, "regions freed");
    ASSERT_U64(s->driver_refusals, 0, "refusals");
    ASSERT_U64(s->gc_runs, 0, "collections");
    ASSERT_U64(s->next_region_bytes, 128 * MiB, "target doubled");
    ASSERT_U64(s->largest_free_chunk, 61 * MiB - 1024, "the tail, not the 1 KiB hole");
    ASSERT_U64(s->ooms, 0, "no OOM");
    ASSERT_U64(s->live_chunks, 3, "hole, 3 MiB, tail");
    ASSERT_U64(s->free_chunks, 2, "hole and tail");
    ASSERT_U64(s->regions, 1, "one region");
    gs_bfc_free(t);
}

/* Untrusted input: a size that cannot be rounded, an id twice, a free of an
 * id not live, size 0 (AllocateRawInternal: no pointer, no memory), and
 * configurations the model refuses. */
Test(xla_bfc, untrusted_requests_and_configs)
{
    struct gs_bfc_config c = cfg(64 * MiB, 1);
    struct gs_bfc *t = model(&c);
    cr_assert_eq(gs_bfc_alloc(t, 1, UINT64_MAX), GS_BFC_OOM, "too big to round");
    cr_assert_eq(gs_bfc_alloc(t, 2, UINT64_MAX - 4 * MiB), GS_BFC_OOM, "over the limit");
    ok_alloc(t, 3, 0);
    ASSERT_U64(gs_bfc_stats(t)->pool_bytes, 0, "size 0 takes nothing");
    uint64_t a, s;
    cr_assert_lt(gs_bfc_chunk_of(t, 3, &a, &s), 0, "no chunk");
    cr_assert_eq(gs_bfc_alloc(t, 3, 10), GS_BFC_BAD, "id live");
    ok_free(t, 3);
    cr_assert_eq(gs_bfc_release(t, 3), GS_BFC_BAD, "id no longer live");
    cr_assert_eq(gs_bfc_release(t, 99), GS_BFC_BAD, "never live");
    gs_bfc_free(t);

    c.capacity = (1ull << 60) + 1;
    cr_assert_lt(gs_bfc_config_check(&c), 0, "over 1 EiB");
    cr_assert_null(gs_bfc_new(&c), "refused");
    c = cfg(64 * MiB, 1);
    c.memory_fraction = 0.0;
    cr_assert_lt(gs_bfc_config_check(&c), 0, "fraction 0");
    c.memory_fraction = 1.5;
    cr_assert_lt(gs_bfc_config_check(&c), 0, "fraction over 1");
    c.memory_fraction = 0.5;
    c.fragmentation_fraction = -0.1;
    cr_assert_lt(gs_bfc_config_check(&c), 0, "negative fragmentation_fraction");
    c.fragmentation_fraction = 0.0;
    cr_assert_eq(gs_bfc_config_check(&c), 0, "accepted");
}

/* Every rule together: a seeded random schedule (sizes from 1 byte to
 * 300 MiB, frees) under each combination of preallocate, garbage
 * collection, a fragmentation_fraction and a limit over the card, on a
 * 2 GiB card; gs_bfc_check's invariants after every request; at the end,
 * all freed, each region one free chunk. */
static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

Test(xla_bfc, invariants_hold_under_a_random_schedule)
{
    for (int v = 0; v < 16; v++) {
        struct gs_bfc_config c;
        gs_bfc_config_default(&c);
        c.capacity = 2 * GiB;
        c.preallocate = v & 1;
        c.garbage_collection = (v >> 1) & 1;
        if (v & 4)
            c.fragmentation_fraction = 0.05;
        if (v & 8)
            c.system_memory_size = 3 * GiB; /* over the card: refusals */
        struct gs_bfc *t = model(&c);
        uint64_t seed = (uint64_t)v + 1, live[128], id = 1;
        int n = 0;
        for (int op = 0; op < 4000; op++) {
            if (lcg(&seed) % 100 < 55 && n < 128) {
                static const uint64_t top[4] = {4 * KiB, 1 * MiB, 40 * MiB, 300 * MiB};
                uint64_t size = lcg(&seed) % top[lcg(&seed) % 4] + 1;
                int rc = gs_bfc_alloc(t, id, size);
                cr_assert(rc == GS_BFC_OK || rc == GS_BFC_OOM, "variant %d op %d: rc %d", v, op, rc);
                if (rc == GS_BFC_OK)
                    live[n++] = id;
                id++;
            } else if (n) {
                int k = (int)(lcg(&seed) % (uint64_t)n);
                cr_assert_eq(gs_bfc_release(t, live[k]), GS_BFC_OK, "variant %d op %d", v, op);
                live[k] = live[--n];
            }
            cr_assert_eq(gs_bfc_check(t), 0, "variant %d op %d: invariant %d", v, op, gs_bfc_check(t));
        }
        const struct gs_bfc_stats *s = gs_bfc_stats(t);
        cr_assert_gt(s->ooms, 0, "variant %d: the schedule ran out at least once", v);
        cr_assert_leq(s->peak_pool_bytes, c.capacity, "variant %d: within the card", v);
        if (v & 8)
            cr_assert_gt(s->driver_refusals, 0, "variant %d: the card refused", v);
        while (n)
            cr_assert_eq(gs_bfc_release(t, live[--n]), GS_BFC_OK, "variant %d", v);
        cr_assert_eq(gs_bfc_check(t), 0, "variant %d at the end", v);
        ASSERT_U64(s->bytes_in_use, 0, "variant %d: nothing in use", v);
        ASSERT_U64(s->free_chunks, s->regions, "variant %d: each region one free chunk", v);
        ASSERT_U64(s->live_chunks, s->regions, "variant %d: and no other chunk", v);
        ASSERT_U64(s->region_allocs - s->region_frees, s->regions, "variant %d: regions", v);
        gs_bfc_free(t);
    }
}

/* gs_bfc_alloc_h / gs_bfc_release_h: the same allocator known by handles:
 * the same figures as by ids, and a handle not live refused. */
Test(xla_bfc, handles_give_the_figures_ids_give)
{
    struct gs_bfc_config c = cfg(1024 * MiB, 0);
    struct gs_bfc *a = model(&c), *b = model(&c);
    uint32_t h[64];
    for (int i = 0; i < 64; i++) {
        uint64_t size = (uint64_t)(i % 5 + 1) * 3 * MiB + (uint64_t)(i % 3) * 1000;
        ok_alloc(a, (uint64_t)i + 1, size);
        cr_assert_eq(gs_bfc_alloc_h(b, size, &h[i]), GS_BFC_OK);
        if (i % 3 == 2) {
            ok_free(a, (uint64_t)i);
            cr_assert_eq(gs_bfc_release_h(b, h[i - 1]), GS_BFC_OK);
        }
    }
    const struct gs_bfc_stats *x = gs_bfc_stats(a), *y = gs_bfc_stats(b);
    cr_assert_eq(y->peak_pool_bytes, x->peak_pool_bytes, "pool peak");
    cr_assert_eq(y->bytes_in_use, x->bytes_in_use, "in use");
    cr_assert_eq(y->region_allocs, x->region_allocs, "regions");
    cr_assert_eq(gs_bfc_check(b), 0);
    uint32_t once;
    cr_assert_eq(gs_bfc_alloc_h(b, 3 * MiB, &once), GS_BFC_OK);
    cr_assert_eq(gs_bfc_release_h(b, once), GS_BFC_OK);
    cr_assert_eq(gs_bfc_release_h(b, once), GS_BFC_BAD, "released twice, nothing allocated between");
    cr_assert_eq(gs_bfc_release_h(b, 1u << 30), GS_BFC_BAD, "no such chunk");
    cr_assert_eq(gs_bfc_release_h(b, GS_BFC_HANDLE_NONE), GS_BFC_BAD, "no allocation");
    uint32_t z;
    cr_assert_eq(gs_bfc_alloc_h(b, 0, &z), GS_BFC_OK);
    cr_assert_eq(z, GS_BFC_HANDLE_ZERO);
    cr_assert_eq(gs_bfc_release_h(b, z), GS_BFC_OK);
    gs_bfc_free(a);
    gs_bfc_free(b);
}
