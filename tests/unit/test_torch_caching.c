/*
 * test_torch_caching.c - analyzer/whatif/torch_caching.c, the model of
 * PyTorch's CUDA caching allocator, held to the allocator's own rules case
 * by case (issue 17, item 3). Each test is named for the rule and cites the
 * function of c10/cuda/CUDACachingAllocator.cpp (torch 2.12, 13eab2b3ef4e)
 * it follows; the #123548 loop checks the figures its thread and PR #193400
 * report.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "analyzer/whatif/torch_caching.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

#define ASSERT_U64(got, want, ...) cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

static struct gs_tc_config cfg(void)
{
    struct gs_tc_config c;
    gs_tc_config_default(&c);
    return c;
}

static struct gs_tc *model(const struct gs_tc_config *c)
{
    struct gs_tc *t = gs_tc_new(c);
    cr_assert_not_null(t, "gs_tc_new");
    return t;
}

static void ok_alloc(struct gs_tc *t, uint64_t id, uint64_t size, uint64_t stream)
{
    cr_assert_eq(gs_tc_alloc(t, id, size, stream), GS_TC_OK, "alloc id %llu", (unsigned long long)id);
}

static void ok_free(struct gs_tc *t, uint64_t id)
{
    cr_assert_eq(gs_tc_release(t, id), GS_TC_OK, "free id %llu", (unsigned long long)id);
}

/* get_allocation_size: size <= kSmallSize takes a kSmallBuffer (2 MiB)
 * segment; should_split: the small pool splits at a remainder >= 512. */
Test(torch_caching, small_requests_share_a_2mib_segment)
{
    struct gs_tc_config c = cfg();
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 700 * KiB, 0);
    ok_alloc(t, 2, 700 * KiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 2 * MiB, "two share one segment");
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 1, "one cudaMalloc");
    ok_alloc(t, 3, 700 * KiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 4 * MiB, "the third opens another");
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 2, "two cudaMallocs");
    ASSERT_U64(gs_tc_stats(t)->allocated, 2100 * KiB, "700 KiB is a 512-byte multiple");
    gs_tc_free(t);
}

/* get_allocation_size: kSmallSize < size < kMinLargeAlloc (10 MiB) takes a
 * kLargeBuffer (20 MiB) segment, split (should_split: remainder > 1 MiB). */
Test(torch_caching, under_10mib_takes_a_20mib_segment)
{
    struct gs_tc_config c = cfg();
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 5 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 20 * MiB, "a 20 MiB segment");
    ASSERT_U64(gs_tc_stats(t)->allocated, 5 * MiB, "5 MiB allocated");
    ok_alloc(t, 2, 5 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 20 * MiB, "the second fits the remainder");
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 1, "one cudaMalloc");
    ASSERT_U64(gs_tc_segment_size(5 * MiB), 20 * MiB, "get_allocation_size");
    gs_tc_free(t);
}

/* round_size: 512-byte multiples; get_allocation_size: from kMinLargeAlloc
 * up, rounded up to kRoundLarge (2 MiB). */
Test(torch_caching, from_10mib_rounded_up_to_2mib)
{
    struct gs_tc_config c = cfg();
    struct gs_tc *t = model(&c);
    ASSERT_U64(gs_tc_round_size(&c, 10 * MiB + 1), 10 * MiB + 512, "round_size");
    ASSERT_U64(gs_tc_segment_size(10 * MiB + 512), 12 * MiB, "get_allocation_size");
    ok_alloc(t, 1, 10 * MiB + 1, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 12 * MiB, "a 12 MiB segment");
    ASSERT_U64(gs_tc_stats(t)->allocated, 10 * MiB + 512, "the block is the rounded size");
    ASSERT_U64(gs_tc_stats(t)->requested, 10 * MiB + 1, "what was asked");
    gs_tc_free(t);
}

/* round_size -> roundup_power2_next_division: [1 GiB, 2 GiB) in 4 steps of
 * 256 MiB, or 16 of 64 MiB (CUDAAllocatorConfig::roundup_power2_divisions). */
Test(torch_caching, roundup_power2_divisions)
{
    struct gs_tc_config c = cfg();
    gs_tc_config_pow2_all(&c, 4);
    ASSERT_U64(gs_tc_round_size(&c, 1200 * MiB), 1280 * MiB, "4 divisions");
    ASSERT_U64(gs_tc_round_size(&c, 1024 * MiB), 1024 * MiB, "a power of two stays");
    ASSERT_U64(gs_tc_round_size(&c, 1000), 1024, "at most 512 * divisions: 512 multiples");
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 1200 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 1280 * MiB, "the segment is the rounded size");
    gs_tc_free(t);
    gs_tc_config_pow2_all(&c, 16);
    ASSERT_U64(gs_tc_round_size(&c, 1200 * MiB), 1216 * MiB, "16 divisions");
    gs_tc_config_pow2_all(&c, 0);
    ASSERT_U64(gs_tc_round_size(&c, 1200 * MiB), 1200 * MiB, "off");
    ASSERT_U64(gs_tc_round_size(&c, UINT64_MAX - 3), UINT64_MAX, "overflow-safe");
    gs_tc_config_pow2_all(&c, 3);
    cr_assert_lt(gs_tc_config_check(&c), 0, "divisions must be a power of two");
}

/* malloc: get_free_block before alloc_block; the best fit is split
 * (should_split: large remainder > 1 MiB). */
Test(torch_caching, freed_block_reused_before_a_new_segment)
{
    struct gs_tc_config c = cfg();
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 30 * MiB, 0);
    ok_free(t, 1);
    ASSERT_U64(gs_tc_stats(t)->reserved, 30 * MiB, "free -> cached, not released");
    ok_alloc(t, 2, 30 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 1, "reused");
    ok_free(t, 2);
    ok_alloc(t, 3, 12 * MiB, 0);
    ok_alloc(t, 4, 12 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 1, "split: both in the cached block");
    ASSERT_U64(gs_tc_stats(t)->reserved, 30 * MiB, "no new segment");
    ok_free(t, 3);
    ok_free(t, 4);
    ok_alloc(t, 5, 30 * MiB, 0); /* free_block merged the neighbours back */
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 1, "merged, whole again");
    gs_tc_free(t);
}

/* get_free_block's oversize rules (L3436-L3439) and should_split: a block
 * over max_split_size_mb is not split nor given to a request under it; a
 * request over it takes one within max_non_split_rounding (20 MiB), whole. */
Test(torch_caching, max_split_size_blocks_are_not_split)
{
    struct gs_tc_config c = cfg();
    c.max_split_size = 64 * MiB;
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 100 * MiB, 0);
    ok_free(t, 1);
    ok_alloc(t, 2, 90 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->allocated, 100 * MiB, "the whole oversize block");
    ASSERT_U64(gs_tc_stats(t)->reserved, 100 * MiB, "no new segment");
    ok_free(t, 2);
    ok_alloc(t, 3, 50 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 150 * MiB, "under max_split: a new segment");
    ok_alloc(t, 4, 70 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 220 * MiB, "100 >= 70 + 20: a new segment");
    gs_tc_free(t);

    c = cfg(); /* the same without max_split_size_mb: split */
    t = model(&c);
    ok_alloc(t, 1, 100 * MiB, 0);
    ok_free(t, 1);
    ok_alloc(t, 2, 50 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->allocated, 50 * MiB, "split");
    ASSERT_U64(gs_tc_stats(t)->reserved, 100 * MiB, "no new segment");
    gs_tc_free(t);
    /* parseMaxSplitSize: from 2.10 AcceleratorAllocatorConfig's val_env >=
     * min_allowed_split_size_mb (kLargeBuffer / kMB, 20); before it
     * CUDAAllocatorConfig's val1 > kLargeBuffer / mb */
    c.max_split_size = 20 * MiB;
    cr_assert_eq(gs_tc_config_check(&c), 0, "2.12: max_split_size_mb may be 20");
    c.max_split_size = 19 * MiB;
    cr_assert_lt(gs_tc_config_check(&c), 0, "2.12: not 19");
    c.torch = GS_TC_TORCH_2_9;
    c.max_split_size = 20 * MiB;
    cr_assert_lt(gs_tc_config_check(&c), 0, "2.9: must be > 20");
    c.max_split_size = 21 * MiB;
    cr_assert_eq(gs_tc_config_check(&c), 0, "2.9: 21");
}

/* get_free_block: pool.blocks ordered by (stream, size, address), a block of
 * another stream is no fit ("Once freed, blocks can be re-allocated on the
 * same stream, but not on any other stream"). */
Test(torch_caching, block_freed_on_one_stream_not_used_by_another)
{
    struct gs_tc_config c = cfg();
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 30 * MiB, 1);
    ok_free(t, 1);
    ok_alloc(t, 2, 30 * MiB, 2);
    ASSERT_U64(gs_tc_stats(t)->reserved, 60 * MiB, "stream 2 opens its own");
    ok_alloc(t, 3, 30 * MiB, 1);
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 2, "stream 1 reuses its block");
    gs_tc_free(t);
}

/* malloc: alloc_block fails -> release_cached_blocks -> alloc_block(isRetry)
 * (num_alloc_retries); release_blocks frees unsplit cached segments. */
Test(torch_caching, oom_frees_cached_segments_and_retries)
{
    struct gs_tc_config c = cfg();
    c.capacity = 100 * MiB;
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 60 * MiB, 1);
    ok_free(t, 1);
    ok_alloc(t, 2, 60 * MiB, 2); /* the cached 60 MiB is stream 1's */
    const struct gs_tc_stats *s = gs_tc_stats(t);
    ASSERT_U64(s->oom_retries, 1, "one retry");
    ASSERT_U64(s->segment_frees, 1, "the cached segment freed");
    ASSERT_U64(s->reserved, 60 * MiB, "reserved");
    ASSERT_U64(s->ooms, 0, "no OOM");
    gs_tc_free(t);
}

Test(torch_caching, oom_when_the_live_set_does_not_fit)
{
    struct gs_tc_config c = cfg();
    c.capacity = 100 * MiB;
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 60 * MiB, 0);
    ok_alloc(t, 2, 12 * MiB, 0);
    ok_free(t, 2);
    cr_assert_eq(gs_tc_alloc(t, 3, 50 * MiB, 0), GS_TC_OOM, "out of memory");
    const struct gs_tc_stats *s = gs_tc_stats(t);
    ASSERT_U64(s->oom_retries, 1, "it retried once");
    ASSERT_U64(s->ooms, 1, "one OOM");
    ASSERT_U64(s->first_oom_request, 3, "the 4th request");
    ASSERT_U64(s->first_oom_size, 50 * MiB, "its size");
    ASSERT_U64(s->reserved, 60 * MiB, "the cached 12 MiB segment went in the retry");
    cr_assert_eq(gs_tc_release(t, 3), GS_TC_BAD, "the failed id is not live");
    gs_tc_free(t);
}

/* ExpandableSegment::map / unmap, try_allocate_expandable_block, map_block,
 * unmap_block, release_blocks: one segment per stream and pool grows by
 * kLargeBuffer pages (20 MiB; kSmallBuffer for the small pool); empty_cache
 * unmaps the whole free pages and releases a segment left all unmapped. */
Test(torch_caching, expandable_segments_grow_by_pages_and_give_back_free_pages)
{
    struct gs_tc_config c = cfg();
    c.expandable_segments = 1;
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 30 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 40 * MiB, "two pages");
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 2, "two maps");
    ok_alloc(t, 2, 30 * MiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 60 * MiB, "the 10 MiB left and one page more");
    ASSERT_U64(gs_tc_stats(t)->segment_allocs, 3, "one map");
    ok_free(t, 1);
    gs_tc_empty_cache(t);
    ASSERT_U64(gs_tc_stats(t)->reserved, 40 * MiB, "the free whole page [0, 20) unmapped");
    ASSERT_U64(gs_tc_stats(t)->segment_frees, 1, "one unmap");
    ok_free(t, 2);
    gs_tc_empty_cache(t);
    ASSERT_U64(gs_tc_stats(t)->reserved, 0, "all unmapped");
    ASSERT_U64(gs_tc_stats(t)->segment_frees, 3, "three unmaps in all");
    ASSERT_U64(gs_tc_stats(t)->live_blocks, 0, "the segment released");
    ok_alloc(t, 3, 700 * KiB, 0);
    ASSERT_U64(gs_tc_stats(t)->reserved, 2 * MiB, "small pool pages are 2 MiB");
    gs_tc_free(t);
}

/* DeviceStats' num_device_alloc counts map_block calls, not pages:
 * map_block maps the pages the block needs (ExpandableSegment::map, a
 * cuMemCreate and cuMemMap each) and then stats.num_device_alloc++ once;
 * unmap_block likewise stats.num_device_free++ once for the whole pages it
 * unmaps. 30 MiB maps 2 pages in one call, 30 more one page (the 10 MiB
 * left and 20), 100 MiB 5 pages in one call; empty_cache unmaps the free
 * [0, 20) page, then, all freed, the 7 whole pages of the free
 * [20, 160) in one call. */
Test(torch_caching, num_device_alloc_counts_map_block_calls_not_pages)
{
    struct gs_tc_config c = cfg();
    c.expandable_segments = 1;
    struct gs_tc *t = model(&c);
    const struct gs_tc_stats *s = gs_tc_stats(t);
    ok_alloc(t, 1, 30 * MiB, 0);
    ASSERT_U64(s->segment_allocs, 2, "two pages");
    ASSERT_U64(s->num_device_alloc, 1, "in one map_block");
    ok_alloc(t, 2, 30 * MiB, 0);
    ok_alloc(t, 3, 100 * MiB, 0);
    ASSERT_U64(s->segment_allocs, 8, "2 + 1 + 5 pages");
    ASSERT_U64(s->num_device_alloc, 3, "in three map_block calls");
    ok_free(t, 1);
    gs_tc_empty_cache(t);
    ok_free(t, 2);
    ok_free(t, 3);
    gs_tc_empty_cache(t);
    ASSERT_U64(s->segment_frees, 8, "every page unmapped");
    ASSERT_U64(s->num_device_free, 2, "in two unmap_block calls");
    gs_tc_free(t);

    c.expandable_segments = 0;
    t = model(&c);
    s = gs_tc_stats(t);
    ok_alloc(t, 1, 30 * MiB, 0);
    ok_free(t, 1);
    gs_tc_empty_cache(t);
    ASSERT_U64(s->num_device_alloc, 1, "without expandable segments, one per cudaMalloc");
    ASSERT_U64(s->num_device_free, 1, "and one per cudaFree");
    gs_tc_free(t);
}

/* An expandable segment maps pages only while the card has them: OOM ->
 * release_cached_blocks unmaps the free pages -> the retry maps. */
Test(torch_caching, expandable_segments_unmap_on_oom_retry)
{
    struct gs_tc_config c = cfg();
    c.expandable_segments = 1;
    c.capacity = 100 * MiB;
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 60 * MiB, 1);
    ok_free(t, 1);
    ok_alloc(t, 2, 60 * MiB, 2);
    ASSERT_U64(gs_tc_stats(t)->oom_retries, 1, "one retry");
    ASSERT_U64(gs_tc_stats(t)->reserved, 60 * MiB, "stream 1's pages unmapped");
    gs_tc_free(t);
}

/* pytorch/pytorch#123548, PR #193400's reproducer: each cycle A = 91 MiB,
 * B = 45.5 MiB, a 2 MiB block kept, A and B freed. With max_split_size_mb:128
 * and expandable_segments:True the merged 136.5 MiB block is refused by the
 * oversize rule (get_free_block, L3436-L3439) and every cycle maps new
 * pages: the PR's table, 220 MiB reserved at cycle 0 and 14,060 at 100
 * (2,760 and 2,780 MiB per 20 cycles in turn), allocated 66 -> 266 MiB. Its
 * cycle 0 holds a warm-up the loop here has not (64 MiB allocated, 80 more
 * reserved): the model gives 140 MiB at cycle 0, 14,000 at 100, the same
 * steps in the other phase (13,860 MiB grown against the thread's 13,840,
 * both 138.5 MiB a cycle mapped in 20 MiB pages). Either option alone, or
 * with the PR's fix, stays under 500 MiB. */
static uint64_t every20[6]; /* reserved after cycles 0, 20, ..., 100 */

static uint64_t loop_123548(const struct gs_tc_config *c, uint64_t *at0, uint64_t *alloc_growth)
{
    struct gs_tc *t = model(c);
    uint64_t id = 1, a0 = 0;
    for (int cycle = 0; cycle <= 100; cycle++) {
        uint64_t a = id++, b = id++, keep = id++;
        ok_alloc(t, a, 91 * MiB, 0);
        ok_alloc(t, b, 45 * MiB + 512 * KiB, 0);
        ok_alloc(t, keep, 2 * MiB, 0);
        ok_free(t, a);
        ok_free(t, b);
        if (cycle % 20 == 0)
            every20[cycle / 20] = gs_tc_stats(t)->reserved;
        if (cycle == 0) {
            *at0 = gs_tc_stats(t)->reserved;
            a0 = gs_tc_stats(t)->allocated;
        }
    }
    uint64_t r = gs_tc_stats(t)->reserved;
    *alloc_growth = gs_tc_stats(t)->allocated - a0;
    cr_assert_eq(gs_tc_stats(t)->ooms, 0, "no OOM on an unlimited card");
    gs_tc_free(t);
    return r;
}

Test(torch_caching, issue_123548_reserved_grows_before_the_fix)
{
    struct gs_tc_config c = cfg();
    c.torch = GS_TC_TORCH_2_12;
    c.max_split_size = 128 * MiB;
    c.expandable_segments = 1;
    uint64_t at0, ag;
    uint64_t r = loop_123548(&c, &at0, &ag);
    ASSERT_U64(ag, 200 * MiB, "allocated grows 2 MiB a cycle (66 -> 266 MiB)");
    /* The thread: 14,060 - 220 = 13,840 MiB over 100 cycles; the model maps
     * whole 20 MiB pages, so within one page of it. */
    cr_assert_geq(r - at0, 13820 * MiB, "growth %llu MiB", (unsigned long long)((r - at0) / MiB));
    cr_assert_leq(r - at0, 13860 * MiB, "growth %llu MiB", (unsigned long long)((r - at0) / MiB));
    for (int k = 1; k < 6; k++) { /* the table's steps: 2,760 and 2,780 MiB in turn */
        uint64_t step = every20[k] - every20[k - 1];
        cr_assert(step == 2760 * MiB || step == 2780 * MiB, "cycles %d-%d: %llu MiB", 20 * (k - 1),
                  20 * k, (unsigned long long)(step / MiB));
    }
}

Test(torch_caching, issue_123548_flat_with_either_setting_alone_or_the_fix)
{
    uint64_t at0, ag;
    struct gs_tc_config c = cfg();
    c.expandable_segments = 1;
    cr_assert_lt(loop_123548(&c, &at0, &ag), 500 * MiB, "expandable_segments alone");
    c = cfg();
    c.max_split_size = 128 * MiB;
    cr_assert_lt(loop_123548(&c, &at0, &ag), 500 * MiB, "max_split_size_mb alone");
    c = cfg();
    cr_assert_lt(loop_123548(&c, &at0, &ag), 500 * MiB, "defaults");
    c.torch = GS_TC_TORCH_PR193400;
    c.max_split_size = 128 * MiB;
    c.expandable_segments = 1;
    cr_assert_lt(loop_123548(&c, &at0, &ag), 500 * MiB, "both, with PR #193400");
}

/* garbage_collect_cached_blocks acts only with a memory fraction set
 * (set_fraction before 2.10, allowed_memory_maximum.has_value() from it),
 * as the source does: old unsplit cached large blocks are freed once
 * reserved passes threshold * allowed, without an OOM retry. Before 2.10 a
 * fraction of 1 sets one (setMemoryFraction: set_fraction = true); from
 * 2.10 it sets none ("if (fraction < 1.0)"): 2.12 collects nothing under
 * 1.0, and 0.9 x 1000 MiB x 0.5 = 450 MiB is its threshold. */
Test(torch_caching, garbage_collection_threshold_needs_a_memory_fraction)
{
    struct gs_tc_config c = cfg();
    c.capacity = 1000 * MiB;
    c.gc_threshold = 0.5;
    c.torch = GS_TC_TORCH_2_9;
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 400 * MiB, 0);
    ok_free(t, 1);
    ok_alloc(t, 2, 300 * MiB, 1);
    ASSERT_U64(gs_tc_stats(t)->gc_frees, 0, "no fraction set: no collection");
    ASSERT_U64(gs_tc_stats(t)->reserved, 700 * MiB, "both segments");
    gs_tc_free(t);

    c.memory_fraction = 1.0;
    t = model(&c);
    ok_alloc(t, 1, 400 * MiB, 0);
    ok_free(t, 1);
    ok_alloc(t, 2, 300 * MiB, 1);
    ASSERT_U64(gs_tc_stats(t)->gc_frees, 0, "400 <= 500: under the threshold");
    ok_free(t, 2);
    ok_alloc(t, 3, 200 * MiB, 2); /* reserved 700 > 500: reclaim 200 */
    ASSERT_U64(gs_tc_stats(t)->gc_frees, 1, "the oldest cached block freed");
    ASSERT_U64(gs_tc_stats(t)->reserved, 500 * MiB, "400 MiB freed, 200 taken");
    ASSERT_U64(gs_tc_stats(t)->oom_retries, 0, "without a retry");
    gs_tc_free(t);

    c.torch = GS_TC_TORCH_2_12; /* 1.0 is no limit: no collection */
    t = model(&c);
    ok_alloc(t, 1, 400 * MiB, 0);
    ok_free(t, 1);
    ok_alloc(t, 2, 300 * MiB, 1);
    ok_free(t, 2);
    ok_alloc(t, 3, 200 * MiB, 2);
    ASSERT_U64(gs_tc_stats(t)->gc_frees, 0, "2.12: a fraction of 1 sets no maximum");
    ASSERT_U64(gs_tc_stats(t)->reserved, 900 * MiB, "all three segments");
    gs_tc_free(t);

    c.memory_fraction = 0.9; /* 900 MiB allowed, threshold 450 */
    t = model(&c);
    ok_alloc(t, 1, 400 * MiB, 0);
    ok_free(t, 1);
    ok_alloc(t, 2, 300 * MiB, 1);
    ok_free(t, 2);
    ok_alloc(t, 3, 200 * MiB, 2); /* reserved 700 > 450: reclaim 250 */
    ASSERT_U64(gs_tc_stats(t)->gc_frees, 1, "2.12 under 0.9: the oldest freed");
    ASSERT_U64(gs_tc_stats(t)->reserved, 500 * MiB, "400 MiB freed, 200 taken");
    gs_tc_free(t);
}

/* DeviceCachingAllocator::setMemoryFraction: allowed_memory_maximum =
 * static_cast<size_t>(fraction * device_total), device_total being
 * cudaMemGetInfo's total (device_prop.totalGlobalMem in the newer source),
 * not what the process can have: on a 1000 MiB card with 100 MiB taken by
 * the context, 0.5 allows 500 MiB (of the total), not 450 (of the rest).
 * alloc_block refuses past it (total_allocated_memory + size >
 * allowed_memory_maximum), and the device (cudaMalloc) past what it has,
 * whichever bites first. */
Test(torch_caching, memory_fraction_is_of_the_cards_total)
{
    struct gs_tc_config c = cfg();
    c.total = 1000 * MiB;
    c.capacity = 900 * MiB;
    c.memory_fraction = 0.5;
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 480 * MiB, 0); /* 480 <= 500: allowed (not under 450) */
    cr_assert_eq(gs_tc_alloc(t, 2, 40 * MiB, 0), GS_TC_OOM, "480 + 40 > 500: past the fraction");
    ASSERT_U64(gs_tc_stats(t)->reserved, 480 * MiB, "the first segment alone");
    gs_tc_free(t);

    c.memory_fraction = 0.99; /* 990 MiB allowed; the device has 900 */
    t = model(&c);
    ok_alloc(t, 1, 880 * MiB, 0);
    cr_assert_eq(gs_tc_alloc(t, 2, 40 * MiB, 0), GS_TC_OOM, "920 <= 990, but over the 900 the "
                                                           "device has: the device bites first");
    gs_tc_free(t);
}

/* garbage_collect_cached_blocks: gc_threshold =
 * garbage_collection_threshold() * allowed_memory_maximum, so a fraction of
 * the card's total too: 0.5 x (0.9 x 1000 MiB) = 450 MiB, not 0.5 x (0.9 x
 * 800) = 360. At 410 MiB reserved the collection does not act. */
Test(torch_caching, garbage_collection_threshold_is_of_the_allowed_maximum_of_the_total)
{
    struct gs_tc_config c = cfg();
    c.total = 1000 * MiB;
    c.capacity = 800 * MiB;
    c.memory_fraction = 0.9;
    c.gc_threshold = 0.5;
    struct gs_tc *t = model(&c);
    ok_alloc(t, 1, 200 * MiB, 0);
    ok_free(t, 1);
    ok_alloc(t, 2, 210 * MiB, 0); /* the cached 200 MiB is too small: reserved 410 */
    ok_free(t, 2);
    ok_alloc(t, 3, 220 * MiB, 0); /* neither fits: 410 <= 450, no collection */
    ASSERT_U64(gs_tc_stats(t)->gc_frees, 0, "410 MiB is under 450");
    ASSERT_U64(gs_tc_stats(t)->reserved, 630 * MiB, "a third segment beside the two cached");
    gs_tc_free(t);
}

/* unallocated_at_peak: reserved but not allocated while reserved stands at
 * its peak, the least of it after a request. A 2 MiB tensor takes a 20 MiB
 * segment (get_allocation_size: under kMinLargeAlloc), leaving 18 MiB; 19
 * MiB do not fit there and take a 20 MiB segment whole (should_split: the 1
 * MiB left is not over kSmallSize): 40 MiB reserved, 22 allocated. Then 16
 * MiB fit the first segment's rest with no new segment: 38 of the 40 MiB
 * peak are allocated, 2 idle. Taken only when the peak was reached it said
 * 18 (beside peaks of 40 reserved and 38 allocated). A new peak starts over. */
Test(torch_caching, unallocated_at_peak_is_the_least_while_at_the_peak)
{
    struct gs_tc_config c = cfg();
    struct gs_tc *t = model(&c);
    const struct gs_tc_stats *s = gs_tc_stats(t);
    ok_alloc(t, 1, 2 * MiB, 0);
    ok_alloc(t, 2, 19 * MiB, 0);
    ASSERT_U64(s->reserved_peak, 40 * MiB, "two 20 MiB segments");
    ASSERT_U64(s->unallocated_at_peak, 18 * MiB, "40 - 22 when the peak is reached");
    ok_alloc(t, 3, 16 * MiB, 0);
    ASSERT_U64(s->reserved_peak, 40 * MiB, "no new segment");
    ASSERT_U64(s->allocated_peak, 38 * MiB, "2 + 20 + 16");
    ASSERT_U64(s->unallocated_at_peak, 2 * MiB, "the peak held 2 MiB beyond the blocks");
    ok_free(t, 3);
    ASSERT_U64(s->unallocated_at_peak, 2 * MiB, "a free does not raise it");
    ok_alloc(t, 4, 30 * MiB, 0);
    ASSERT_U64(s->reserved_peak, 70 * MiB, "a new 30 MiB segment: a new peak");
    ASSERT_U64(s->unallocated_at_peak, 18 * MiB, "70 - 52: starts over");
    gs_tc_free(t);
}

/* Untrusted input: a size that cannot be rounded, an id twice, a free of
 * an id not live, size 0. */
Test(torch_caching, untrusted_requests)
{
    struct gs_tc_config c = cfg();
    struct gs_tc *t = model(&c);
    cr_assert_eq(gs_tc_alloc(t, 1, UINT64_MAX, 0), GS_TC_OOM, "too big to round");
    cr_assert_eq(gs_tc_alloc(t, 2, UINT64_MAX - 4 * MiB, 0), GS_TC_OOM, "too big for a segment");
    ok_alloc(t, 3, 0, 0);
    cr_assert_eq(gs_tc_alloc(t, 3, 10, 0), GS_TC_BAD, "id live");
    ok_free(t, 3);
    cr_assert_eq(gs_tc_release(t, 3), GS_TC_BAD, "id no longer live");
    ASSERT_U64(gs_tc_stats(t)->reserved, 0, "nothing reserved");
    struct gs_tc_config e = cfg();
    e.expandable_segments = 1;
    struct gs_tc *x = model(&e);
    cr_assert_eq(gs_tc_alloc(x, 1, UINT64_MAX - 4 * MiB, 0), GS_TC_OOM, "over the address space");
    gs_tc_free(x);
    gs_tc_free(t);
}

/* Every rule together: a seeded random schedule (sizes from 1 byte to
 * 600 MiB, three streams, frees, empty_cache) under each combination of
 * the options, on an unlimited card and a 2 GiB one; gs_tc_check's
 * invariants after every request, and all memory given back at the end. */
static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

Test(torch_caching, invariants_hold_under_a_random_schedule)
{
    for (int v = 0; v < 16; v++) {
        struct gs_tc_config c = cfg();
        c.expandable_segments = v & 1;
        if (v & 2)
            c.max_split_size = 64 * MiB;
        if (v & 4)
            gs_tc_config_pow2_all(&c, 4);
        if (v & 8)
            c.capacity = 2048 * MiB;
        if ((v & 8) && (v & 2)) {
            c.gc_threshold = 0.6;
            c.memory_fraction = 0.9;
        }
        if (v == 5)
            c.torch = GS_TC_TORCH_PR193400;
        struct gs_tc *t = model(&c);
        uint64_t seed = (uint64_t)v + 1, live[128], id = 1;
        int n = 0;
        for (int op = 0; op < 4000; op++) {
            uint64_t r = lcg(&seed) % 100;
            if (r < 50 && n < 128) {
                static const uint64_t top[4] = {1 * MiB, 10 * MiB, 200 * MiB, 600 * MiB};
                uint64_t size = lcg(&seed) % top[lcg(&seed) % 4] + 1;
                int rc = gs_tc_alloc(t, id, size, lcg(&seed) % 3);
                cr_assert(rc == GS_TC_OK || (rc == GS_TC_OOM && c.capacity), "variant %d op %d", v, op);
                if (rc == GS_TC_OK)
                    live[n++] = id;
                id++;
            } else if (r < 98 && n) {
                int k = (int)(lcg(&seed) % (uint64_t)n);
                ok_free(t, live[k]);
                live[k] = live[--n];
            } else {
                gs_tc_empty_cache(t);
            }
            cr_assert_eq(gs_tc_check(t), 0, "variant %d op %d: invariant %d", v, op, gs_tc_check(t));
        }
        while (n)
            ok_free(t, live[--n]);
        gs_tc_empty_cache(t);
        const struct gs_tc_stats *s = gs_tc_stats(t);
        ASSERT_U64(s->reserved, 0, "variant %d: all given back", v);
        ASSERT_U64(s->live_blocks, 0, "variant %d: no block left", v);
        ASSERT_U64(s->segment_allocs, s->segment_frees, "variant %d: each segment freed", v);
        cr_assert_leq(s->reserved_peak, c.capacity ? c.capacity : UINT64_MAX, "variant %d", v);
        gs_tc_free(t);
    }
}

/* The same figures before and after a change of the model's insides (issue
 * 17 item 6: the pools' unordered arrays made ordered trees): a longer
 * seeded schedule - up to 256 live tensors, sizes mostly small with some
 * up to 600 MiB, frees mostly LIFO, three streams, empty_cache now and then
 * - under each of the 64 combinations of expandable_segments,
 * max_split_size_mb:64, roundup_power2_divisions:4, an 8 GiB card,
 * garbage_collection_threshold:0.6 with a memory fraction of 0.9 (acting
 * only with the card) and PR #193400. gs_tc_check after every request; a
 * digest of each request's outcome and figures, and the final figures, as
 * the model gave them with the arrays searched in full (commit 6a7005e):
 * every search (get_free_block's best fit and its expandable walk,
 * find_expandable_block, release_available_cached_blocks,
 * garbage_collect_cached_blocks, release_blocks) must find the blocks it
 * found then. */
struct tc_figures {
    uint64_t digest, reserved_peak, allocated_peak, segment_allocs, segment_frees;
    uint64_t oom_retries, gc_frees, ooms;
};

static const struct tc_figures recorded[64] = {
    {0xa7f531895e0c91b8ull, 18427674624, 13748939264, 401, 349, 0, 0, 0},
    {0x71c038e94a1ebbecull, 18811453440, 17277524992, 4675, 4163, 0, 0, 0},
    {0xb7bc8843a41dd04full, 12928942080, 3903351296, 1403, 1369, 0, 0, 0},
    {0x5087840bc0f8d67bull, 16911433728, 10807230976, 5560, 5249, 0, 0, 0},
    {0x11866a9b3924da29ull, 10292822016, 7825794048, 396, 376, 0, 0, 0},
    {0x55dcf2cfbad2f7ebull, 10385096704, 8366783488, 5207, 5113, 0, 0, 0},
    {0xb118d7f0aad37b0eull, 21795700736, 17395458560, 1129, 1017, 0, 0, 0},
    {0xd45ac18f3198608aull, 17744003072, 16191179264, 6021, 5196, 0, 0, 0},
    {0xaccdafda93bd78eeull, 8589934592, 7598342656, 500, 463, 115, 0, 68},
    {0xef8044de0ffb4140ull, 8562671616, 8075065344, 4896, 4576, 11, 0, 2},
    {0xd4e75e697748f4d2ull, 8589934592, 6172123136, 1229, 1157, 2, 0, 0},
    {0xd995d7922312554cull, 8172601344, 4141385216, 5343, 5321, 0, 0, 0},
    {0x172571e6586c57e7ull, 8571060224, 7488473088, 399, 363, 19, 0, 11},
    {0x305eb6ce33ff68e6ull, 7340032000, 6392006144, 4761, 4627, 0, 0, 0},
    {0xaca5e13c8a167ee4ull, 8589934592, 7811772928, 1127, 1073, 9, 0, 0},
    {0xe9c1de255d875417ull, 8575254528, 6147755520, 5782, 5379, 3, 0, 0},
    {0xcdde95f9e09c37d5ull, 14334033920, 9984338432, 319, 271, 0, 0, 0},
    {0x2c760da298512c7eull, 10867441664, 8138809856, 4049, 3819, 0, 0, 0},
    {0xe12183e88fe26cd3ull, 11878268928, 5578782720, 1148, 1107, 0, 0, 0},
    {0xa50dfdb5b85ae684ull, 13268680704, 11376050688, 5558, 4910, 0, 0, 0},
    {0x5b497c014e919515ull, 10804527104, 6986952704, 524, 498, 0, 0, 0},
    {0x42d27c58a368d86eull, 18163433472, 14850324480, 5427, 4809, 0, 0, 0},
    {0x49648210406adb5bull, 12291407872, 4628110336, 1353, 1283, 0, 0, 0},
    {0xe4524021fad7180cull, 10427039744, 6814782976, 5749, 5398, 0, 0, 0},
    {0xd007ad86962a3294ull, 7725907968, 6730944000, 489, 450, 4, 177, 4},
    {0xd4a3b4ab108bc573ull, 7721713664, 7281119232, 5208, 4949, 20, 0, 4},
    {0x075e266f00684fa0ull, 7203717120, 7042634752, 1347, 1295, 0, 703, 0},
    {0xe56c579e5be851aaull, 7746879488, 7350250496, 6777, 6411, 154, 0, 57},
    {0x0ef857685ef26a68ull, 7713325056, 7297425920, 497, 475, 39, 247, 39},
    {0xa0048fa8166afb87ull, 7713325056, 7392289792, 4545, 4352, 8, 0, 0},
    {0xed81a0e064e23428ull, 7730102272, 7659495936, 1561, 1485, 77, 1194, 77},
    {0x33f48b73c28bbe65ull, 7732199424, 7461175808, 7741, 7387, 128, 0, 45},
    {0xafbfd69a31495a24ull, 14289993728, 9934973440, 322, 282, 0, 0, 0},
    {0x6df4c3ff24b9c095ull, 8988393472, 7163495424, 4696, 4356, 0, 0, 0},
    {0x803f41d97853cc83ull, 19727908864, 8581966336, 1094, 1022, 0, 0, 0},
    {0x0aa7859d8fde7ce8ull, 10169090048, 7765177856, 4145, 3748, 0, 0, 0},
    {0xb98d26ade28e531eull, 7629438976, 4300956672, 785, 764, 0, 0, 0},
    {0x6076aea2729e865eull, 6872367104, 5334459392, 5379, 5375, 0, 0, 0},
    {0x7bcdd851bfd4e2ddull, 13096714240, 8292514816, 1119, 1056, 0, 0, 0},
    {0x2c379956beaa4f45ull, 6224347136, 4610293248, 5265, 5237, 0, 0, 0},
    {0xde20de3aefd57e6eull, 8558477312, 7045444096, 385, 347, 11, 0, 1},
    {0x8dd72f31c2b6832aull, 8585740288, 8146775040, 4060, 3697, 20, 0, 6},
    {0xd46bbbcb90d98cabull, 8589934592, 8438658048, 1203, 1122, 218, 0, 104},
    {0xbd741bff42f02688ull, 8434745344, 6999225856, 4565, 4191, 1, 0, 0},
    {0xed4cfcd09e81e965ull, 8573157376, 7374615040, 351, 319, 37, 0, 19},
    {0xd1c693415692784cull, 8589934592, 8279963648, 6709, 6346, 65, 0, 11},
    {0x1c43ee47bf1f14a9ull, 8587837440, 8452896768, 1187, 1130, 33, 0, 6},
    {0x2592b081a31f058full, 8589934592, 8214722560, 4946, 4522, 131, 0, 72},
    {0xc62b159f57ee7d76ull, 13841203200, 11904272896, 375, 318, 0, 0, 0},
    {0x86fa817c904812bcull, 8868855808, 7190056960, 4186, 3928, 0, 0, 0},
    {0xf2dc11879beb32cbull, 18060673024, 10194016768, 1074, 998, 0, 0, 0},
    {0x9c279789042ecd9bull, 12782141440, 10255147520, 4949, 4455, 0, 0, 0},
    {0x417c3a7e024892dfull, 9065988096, 6342446592, 593, 561, 0, 0, 0},
    {0x33156050d76ee36bull, 8684306432, 6832829952, 5117, 4811, 0, 0, 0},
    {0xfc9bdf9eaa9b6fbdull, 13163823104, 6128822784, 1292, 1243, 0, 0, 0},
    {0x737b0a8aa2bbe33full, 8889827328, 7350511616, 5090, 5015, 0, 0, 0},
    {0x4cb7e8c515c1d6f5ull, 7717519360, 7353014784, 490, 461, 45, 179, 45},
    {0xdaca4feb0aeae0f8ull, 6876561408, 5238565888, 4058, 3867, 0, 0, 0},
    {0x780491a02f2e5bb1ull, 7709130752, 7658474496, 1528, 1471, 12, 795, 12},
    {0xd215fc972940abbdull, 7312769024, 5277899776, 5051, 4784, 0, 0, 0},
    {0xab1b295e436e0fabull, 7730102272, 7236915712, 448, 424, 142, 161, 142},
    {0x5c0e4f27197b7549ull, 7738490880, 7454729728, 6021, 5915, 69, 0, 23},
    {0x4f54a3c17deab003ull, 7730102272, 7639691776, 1470, 1401, 13, 812, 13},
    {0x2ae75f6109b55d40ull, 7732199424, 7510857728, 6129, 5756, 199, 0, 98},
};

static uint64_t digest_step(uint64_t h, uint64_t x)
{
    h ^= x;
    h *= 0x100000001b3ull; /* FNV-1a's prime, a word at a time */
    return h;
}

static struct tc_figures run_recorded_schedule(int v, int clone_at)
{
    struct gs_tc_config c = cfg();
    c.expandable_segments = v & 1;
    if (v & 2)
        c.max_split_size = 64 * MiB;
    if (v & 4)
        gs_tc_config_pow2_all(&c, 4);
    if (v & 8)
        c.capacity = 8192 * MiB;
    if (v & 16) {
        c.gc_threshold = 0.6;
        c.memory_fraction = 0.9;
    }
    if (v & 32)
        c.torch = GS_TC_TORCH_PR193400;
    struct gs_tc *t = model(&c);
    uint64_t seed = 1000 + (uint64_t)v, live[256], id = 1, h = 0xcbf29ce484222325ull;
    uint64_t peak = 0, at_new_peak = 0; /* reserved - allocated after the request that last
                                         * raised the peak: what unallocated_at_peak was
                                         * when these digests were recorded */
    int n = 0;
    for (int op = 0; op < 10000; op++) {
        uint64_t r = lcg(&seed) % 1000;
        int rc;
        if (op == clone_at) { /* the schedule goes on in a copy; the original is gone */
            struct gs_tc *copy = gs_tc_clone(t, &c);
            cr_assert_not_null(copy);
            gs_tc_free(t);
            t = copy;
        }
        if (r < 500 && n < 256) {
            static const uint64_t top[10] = {4 * KiB,  64 * KiB,  1 * MiB,   1 * MiB,   10 * MiB,
                                             10 * MiB, 30 * MiB, 100 * MiB, 200 * MiB, 600 * MiB};
            uint64_t range = top[lcg(&seed) % 10]; /* one call a statement: a set order */
            uint64_t size = lcg(&seed) % range + 1, stream = lcg(&seed) % 3;
            rc = gs_tc_alloc(t, id, size, stream);
            cr_assert(rc == GS_TC_OK || (rc == GS_TC_OOM && c.capacity), "variant %d op %d", v, op);
            if (rc == GS_TC_OK)
                live[n++] = id;
            id++;
        } else if (r < 995 && n) {
            /* mostly the newest; else any */
            uint64_t back = lcg(&seed) % 4;
            int k = back < 3 && back < (uint64_t)n ? n - 1 - (int)back
                                                   : (int)(lcg(&seed) % (uint64_t)n);
            rc = gs_tc_release(t, live[k]);
            cr_assert_eq(rc, GS_TC_OK, "variant %d op %d", v, op);
            live[k] = live[--n];
        } else {
            gs_tc_empty_cache(t);
            rc = 7;
        }
        cr_assert_eq(gs_tc_check(t), 0, "variant %d op %d: invariant %d", v, op, gs_tc_check(t));
        const struct gs_tc_stats *s = gs_tc_stats(t);
        h = digest_step(h, (uint64_t)rc);
        h = digest_step(h, s->reserved);
        h = digest_step(h, s->allocated);
        h = digest_step(h, s->requested);
        if (s->reserved_peak > peak) {
            peak = s->reserved_peak;
            at_new_peak = s->reserved_peak - s->allocated;
        }
        cr_assert_leq(s->unallocated_at_peak, at_new_peak, "variant %d op %d: the least while "
                      "at the peak", v, op);
        h = digest_step(h, at_new_peak);
        h = digest_step(h, s->segment_allocs);
        h = digest_step(h, s->segment_frees);
        h = digest_step(h, s->live_blocks);
    }
    const struct gs_tc_stats *s = gs_tc_stats(t);
    struct tc_figures f = {h,           s->reserved_peak, s->allocated_peak, s->segment_allocs,
                           s->segment_frees, s->oom_retries, s->gc_frees, s->ooms};
    gs_tc_free(t);
    return f;
}

Test(torch_caching, figures_as_recorded_from_the_searches_in_full)
{
    for (int v = 0; v < 64; v++) {
        struct tc_figures f = run_recorded_schedule(v, -1), w = recorded[v];
        ASSERT_U64(f.reserved_peak, w.reserved_peak, "variant %d: reserved_peak", v);
        ASSERT_U64(f.allocated_peak, w.allocated_peak, "variant %d: allocated_peak", v);
        ASSERT_U64(f.segment_allocs, w.segment_allocs, "variant %d: segment_allocs", v);
        ASSERT_U64(f.segment_frees, w.segment_frees, "variant %d: segment_frees", v);
        ASSERT_U64(f.oom_retries, w.oom_retries, "variant %d: oom_retries", v);
        ASSERT_U64(f.gc_frees, w.gc_frees, "variant %d: gc_frees", v);
        ASSERT_U64(f.ooms, w.ooms, "variant %d: ooms", v);
        ASSERT_U64(f.digest, w.digest, "variant %d: the figures request by request", v);
    }
}

/* gs_tc_clone: a copy taken halfway goes on as the original would have
 * (the what-if replay forks a case's model from the one it followed). */
Test(torch_caching, a_clone_goes_on_as_the_original)
{
    for (int v = 0; v < 64; v++) {
        struct tc_figures f = run_recorded_schedule(v, 5000), w = recorded[v];
        ASSERT_U64(f.digest, w.digest, "variant %d: the figures request by request", v);
        ASSERT_U64(f.reserved_peak, w.reserved_peak, "variant %d: reserved_peak", v);
        ASSERT_U64(f.gc_frees, w.gc_frees, "variant %d: gc_frees", v);
    }
}

/* gs_tc_alloc_h / gs_tc_release_h: the same allocator known by handles (the
 * what-if replay keeps its own map): the same figures as by ids, and a
 * handle not live refused. */
Test(torch_caching, handles_give_the_figures_ids_give)
{
    struct gs_tc_config c = cfg();
    c.expandable_segments = 1;
    struct gs_tc *a = model(&c), *b = model(&c);
    uint32_t h[64];
    for (int i = 0; i < 64; i++) {
        uint64_t size = (uint64_t)(i % 7 + 1) * 700 * KiB + (uint64_t)(i % 3) * 9 * MiB;
        ok_alloc(a, (uint64_t)i + 1, size, (uint64_t)(i % 2));
        cr_assert_eq(gs_tc_alloc_h(b, size, (uint64_t)(i % 2), &h[i]), GS_TC_OK);
        if (i % 3 == 2) {
            ok_free(a, (uint64_t)i);
            cr_assert_eq(gs_tc_release_h(b, h[i - 1]), GS_TC_OK);
        }
    }
    const struct gs_tc_stats *x = gs_tc_stats(a), *y = gs_tc_stats(b);
    ASSERT_U64(y->reserved_peak, x->reserved_peak, "reserved peak");
    ASSERT_U64(y->allocated, x->allocated, "allocated");
    ASSERT_U64(y->segment_allocs, x->segment_allocs, "segment allocs");
    cr_assert_eq(gs_tc_check(b), 0);
    uint32_t once;
    cr_assert_eq(gs_tc_alloc_h(b, 3 * MiB, 0, &once), GS_TC_OK);
    cr_assert_eq(gs_tc_release_h(b, once), GS_TC_OK);
    cr_assert_eq(gs_tc_release_h(b, once), GS_TC_BAD, "released twice, nothing allocated between");
    cr_assert_eq(gs_tc_release_h(b, 1u << 30), GS_TC_BAD, "no such block");
    cr_assert_eq(gs_tc_release_h(b, GS_TC_HANDLE_NONE), GS_TC_BAD, "no allocation");
    uint32_t z;
    cr_assert_eq(gs_tc_alloc_h(b, 0, 0, &z), GS_TC_OK);
    cr_assert_eq(z, GS_TC_HANDLE_ZERO);
    cr_assert_eq(gs_tc_release_h(b, z), GS_TC_OK);
    gs_tc_free(a);
    gs_tc_free(b);
}
