/*
 * test_whatif.c - analyzer/whatif/whatif.c and settings.c: what the replay
 * takes as tensors (each device allocation; the stream-ordered ones once
 * they appear, everything else then outside the allocator; the program's
 * blocks once they appear), the memory outside the allocator taken from
 * the card, the run's failed requests offered and released, the step an
 * OOM falls in; and PYTORCH_CUDA_ALLOC_CONF read as
 * CUDAAllocatorConfig::parseArgs reads it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/whatif/settings.h"
#include "analyzer/whatif/whatif.h"

#define MiB (1024ull * 1024ull)

static struct gs_whatif *one_setting(const char *conf, uint64_t capacity)
{
    static struct gs_wi_setting s;
    char err[256];
    cr_assert_eq(gs_wi_parse_torch(conf, GS_TC_TORCH_2_12, &s, err, sizeof err), 0, "%s", err);
    struct gs_wi_case c = {.setting = 0, .capacity = capacity};
    struct gs_whatif *w = gs_whatif_new(&s, 1, &c, 1);
    cr_assert_not_null(w);
    return w;
}

static void alloc(struct gs_whatif *w, uint32_t api, uint64_t addr, uint64_t size,
                  uint64_t stream)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .api = api, .addr = addr, .size = size,
                          .stream = stream, .kind = GS_KIND_DEVICE, .space = GS_SPACE_ADDRESS};
    gs_whatif_event(w, &e);
}

static void release(struct gs_whatif *w, uint64_t addr, uint64_t size)
{
    struct gs_revent e = {.type = GS_REC_FREE, .api = GS_API_cudaFree, .addr = addr, .size = size,
                          .space = GS_SPACE_ADDRESS};
    gs_whatif_event(w, &e);
}

static const struct gs_wi_device *dev0(struct gs_whatif *w)
{
    gs_whatif_finish(w);
    const struct gs_wi_device *d = gs_whatif_device(w, 0);
    cr_assert_not_null(d, "device 0 replayed");
    return d;
}

Test(whatif, driver_allocations_are_tensors_until_stream_ordered_ones_come)
{
    struct gs_whatif *w = one_setting("default", 0);
    alloc(w, GS_API_cudaMalloc, 0x1000, 100 * MiB, 0); /* before: a tensor */
    cr_assert_eq(gs_whatif_source(w), GS_WI_SRC_DRIVER);
    alloc(w, GS_API_cudaMallocAsync, 0x9000000, 30 * MiB, 7);
    cr_assert_eq(gs_whatif_source(w), GS_WI_SRC_STREAM);
    alloc(w, GS_API_cuMemAlloc_v2, 0x20000000, 50 * MiB, 0); /* now outside */
    const struct gs_wi_device *d = dev0(w);
    cr_assert_eq(d->outside_bytes, 150 * MiB, "the first tensor and the cuMemAlloc: outside");
    cr_assert_eq(d->requests, 1, "one request since the switch");
    cr_assert_eq(d->out[0].st.reserved, 30 * MiB, "30 MiB: a large segment rounded to 2 MiB");
    cr_assert_eq(d->out[0].device_peak, 180 * MiB, "reserved plus outside");
    release(w, 0x1000, 100 * MiB);
    d = dev0(w);
    cr_assert_eq(d->outside_bytes, 50 * MiB, "a free of outside memory");
    cr_assert_eq(d->outside_peak, 150 * MiB);
    gs_whatif_free(w);
}

Test(whatif, memory_outside_the_allocator_is_taken_from_the_card)
{
    struct gs_whatif *w = one_setting("default", 100 * MiB);
    alloc(w, GS_API_cudaMallocAsync, 0x1000, 2 * MiB, 1);
    alloc(w, GS_API_cudaMalloc, 0x9000000, 70 * MiB, 0); /* NCCL's, say */
    alloc(w, GS_API_cudaMallocAsync, 0x20000000, 40 * MiB, 1);
    const struct gs_wi_device *d = dev0(w);
    cr_assert_eq(d->out[0].ran_out, 1, "20 (the first segment) + 70 + 40 > 100 MiB");
    cr_assert_eq(d->out[0].first_oom.request, 1, "the second tensor");
    release(w, 0x9000000, 70 * MiB);
    alloc(w, GS_API_cudaMallocAsync, 0x30000000, 40 * MiB, 1);
    d = dev0(w);
    cr_assert_eq(d->out[0].ran_out, 1, "one OOM, then the freed 70 MiB make room");
    cr_assert_eq(d->out[0].st.reserved, 60 * MiB, "20 MiB + 40 MiB");
    gs_whatif_free(w);
}

Test(whatif, blocks_replace_the_driver_allocations_as_tensors)
{
    struct gs_whatif *w = one_setting("default", 0);
    alloc(w, GS_API_cudaMalloc, 0x1000, 20 * MiB, 0); /* the program allocator's segment */
    struct gs_revent b = {.type = GS_REC_BLOCK_ALLOC, .addr = 0x1000, .size = 700 * 1024};
    gs_whatif_event(w, &b);
    cr_assert_eq(gs_whatif_source(w), GS_WI_SRC_BLOCKS);
    alloc(w, GS_API_cudaMalloc, 0x2000000, 20 * MiB, 0); /* ignored: a segment */
    gs_whatif_finish(w);
    cr_assert_null(gs_whatif_device(w, 0), "no device-0 replay: the segments were dropped");
    const struct gs_wi_device *d = gs_whatif_device(w, GS_MAX_DEVICES);
    cr_assert_not_null(d, "blocks carry no device");
    cr_assert_eq(d->requests, 1);
    cr_assert_eq(d->out[0].st.reserved, 2 * MiB, "a small block in a 2 MiB segment");
    struct gs_revent f = {.type = GS_REC_BLOCK_FREE, .addr = 0x1000};
    gs_whatif_event(w, &f);
    gs_whatif_finish(w);
    cr_assert_eq(d->frees, 1);
    gs_whatif_free(w);
}

Test(whatif, a_failed_request_is_offered_then_released)
{
    struct gs_whatif *w = one_setting("default", 64 * MiB);
    alloc(w, GS_API_cudaMalloc, 0x1000, 30 * MiB, 0);
    struct gs_revent f = {.type = GS_REC_ALLOC_FAILED, .api = GS_API_cudaMalloc, .size = 30 * MiB};
    gs_whatif_event(w, &f);
    gs_whatif_event(w, &f);
    const struct gs_wi_device *d = dev0(w);
    cr_assert_eq(d->failed_requests, 2);
    cr_assert_eq(d->out[0].failures_served, 2, "each fits once the other is released");
    cr_assert_eq(d->out[0].served_first_failure, 1);
    cr_assert_eq(d->out[0].st.allocated, 30 * MiB, "only the run's tensor stays");
    gs_whatif_free(w);
}

Test(whatif, an_oom_falls_in_the_step_of_the_most_marked_label)
{
    struct gs_whatif *w = one_setting("default", 40 * MiB);
    struct gs_revent m = {.type = GS_REC_MARK, .label = "epoch", .label_len = 5};
    gs_whatif_event(w, &m);
    for (int i = 0; i < 3; i++) {
        struct gs_revent s = {.type = GS_REC_MARK, .label = "step\n", .label_len = 5};
        gs_whatif_event(w, &s);
        alloc(w, GS_API_cudaMalloc, 0x1000 + (uint64_t)i * 0x10000000, 15 * MiB, 0);
    }
    const struct gs_wi_device *d = dev0(w);
    cr_assert_eq(d->out[0].ran_out, 1);
    cr_assert_eq(d->out[0].first_oom.step, 3, "16 + 16 MiB fit, the third does not (step %llu, request %llu)", (unsigned long long)d->out[0].first_oom.step, (unsigned long long)d->out[0].first_oom.request);
    cr_assert_str_eq(d->out[0].first_oom.step_label, "step?", "control bytes shown as ?");
    gs_whatif_free(w);
}

Test(whatif_settings, conf_read_as_pytorch_reads_it)
{
    struct gs_wi_setting s;
    char err[256];
    cr_assert_eq(gs_wi_parse_torch(" expandable_segments:True, max_split_size_mb:256,"
                                   "roundup_power2_divisions:4,garbage_collection_threshold:0.6,"
                                   "pinned_use_cuda_host_register:True",
                                   GS_TC_TORCH_2_12, &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(s.tc.expandable_segments, 1);
    cr_assert_eq(s.tc.max_split_size, 256 * MiB);
    cr_assert_eq(s.tc.roundup_power2_divisions[3], 4);
    cr_assert(s.tc.gc_threshold > 0.59 && s.tc.gc_threshold < 0.61);
    cr_assert_eq(s.costs, GS_WI_IPC_HANDLES | GS_WI_SLOWER_SPLIT);
    cr_assert_eq(gs_wi_parse_torch("backend:cudaMallocAsync", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), -1);
    cr_assert(strstr(err, "only backend:native"), "%s", err);
    cr_assert_eq(gs_wi_parse_torch("max_split_size_mb:19", GS_TC_TORCH_2_12, &s, err, sizeof err),
                 -1, "AcceleratorAllocatorConfig refuses under 20 MiB");
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:3", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), -1, "not a power of two");
    cr_assert_eq(gs_wi_parse_torch("expandable_segments", GS_TC_TORCH_2_12, &s, err, sizeof err),
                 -1, "key without value");
}

/* max_split_size_mb's least value by version: from 2.10
 * AcceleratorAllocatorConfig::parseMaxSplitSize (c10/core/AllocatorConfig.cpp)
 * checks val_env >= min_allowed_split_size_mb (kLargeBuffer / kMB = 20);
 * before, CUDAAllocatorConfig::parseMaxSplitSize (c10/cuda/
 * CUDAAllocatorConfig.cpp) checked val1 > kLargeBuffer / mb. Likewise
 * max_non_split_rounding_mb (parseMaxNonSplitRoundingSize). */
Test(whatif_settings, max_split_size_mb_least_value_by_version)
{
    struct gs_wi_setting s;
    char err[256];
    cr_assert_eq(gs_wi_parse_torch("max_split_size_mb:20", GS_TC_TORCH_2_12, &s, err, sizeof err),
                 0, "2.12 takes 20: %s", err);
    cr_assert_eq(s.tc.max_split_size, 20 * MiB);
    cr_assert_eq(gs_wi_parse_torch("max_split_size_mb:20", GS_TC_TORCH_2_10, &s, err, sizeof err),
                 0, "2.10 takes 20: %s", err);
    cr_assert_eq(gs_wi_parse_torch("max_split_size_mb:20", GS_TC_TORCH_2_9, &s, err, sizeof err),
                 -1, "2.9 refuses 20");
    cr_assert(strstr(err, "> 20"), "%s", err);
    cr_assert_eq(gs_wi_parse_torch("max_split_size_mb:21", GS_TC_TORCH_2_9, &s, err, sizeof err),
                 0, "2.9 takes 21: %s", err);
    cr_assert_eq(gs_wi_parse_torch("max_non_split_rounding_mb:20", GS_TC_TORCH_2_9, &s, err,
                                   sizeof err), -1, "2.9 refuses 20 here too");
    cr_assert_eq(gs_wi_parse_torch("max_non_split_rounding_mb:20", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), 0, "%s", err);
}

/* parseRoundUpPower2Divisions' list: each SIZE (MiB, a power of 2) names
 * the interval log2(SIZE) ([SIZE, 2 SIZE) MiB, clamped to the 16 intervals
 * from 1 MiB), the first SIZE fills the intervals below it too, and ">"
 * fills from the last SIZE's interval, that one included (std::fill from
 * last_index): [256:1,512:2,>:8] gives 1 below 512 MiB and 8 from 512 MiB
 * up (2 was overwritten). Divisions are 0 or powers of 2; so is SIZE. The
 * single number must be a power of 2 (llvm::isPowerOf2_64: not 0). */
Test(whatif_settings, roundup_power2_divisions_list_as_pytorch_parses_it)
{
    struct gs_wi_setting s;
    char err[256];
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:[256:1,512:2,>:8]", GS_TC_TORCH_2_12,
                                   &s, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < GS_TC_POW2_INTERVALS; i++)
        cr_assert_eq(s.tc.roundup_power2_divisions[i], i < 9 ? 1u : 8u, "interval %d", i);
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:[64:4,1024:0], expandable_segments:True",
                                   GS_TC_TORCH_2_12, &s, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < GS_TC_POW2_INTERVALS; i++)
        cr_assert_eq(s.tc.roundup_power2_divisions[i], i <= 6 ? 4u : 0u, "interval %d", i);
    cr_assert_eq(s.tc.expandable_segments, 1, "the option after the list");
    /* a 100 MiB request is in interval 6 ([64, 128) MiB): 4 divisions of
     * 64 MiB, rounded up to 112; 1200 MiB (interval 10) is not rounded */
    cr_assert_eq(gs_tc_round_size(&s.tc, 100 * MiB), 112 * MiB);
    cr_assert_eq(gs_tc_round_size(&s.tc, 1200 * MiB + 1), 1200 * MiB + 512);
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:[>:2]", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), 0, "%s", err);
    cr_assert_eq(s.tc.roundup_power2_divisions[0], 2u, "> alone fills all");
    cr_assert_eq(s.tc.roundup_power2_divisions[15], 2u);
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:[1000000:2]", GS_TC_TORCH_2_12, &s,
                                   err, sizeof err), -1, "SIZE not a power of 2");
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:[1048576:2]", GS_TC_TORCH_2_12, &s,
                                   err, sizeof err), 0, "%s", err);
    cr_assert_eq(s.tc.roundup_power2_divisions[15], 2u, "2^20 MiB: the last interval");
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:[256:3]", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), -1, "N not 0 or a power of 2");
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:0", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), -1, "the single number: a power of 2, not 0");
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:[256:1", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), -1, "unclosed");
}

/* An option a version lacks is refused, naming the version that added it
 * (the older parsers: "Unrecognized CachingAllocator option"). */
Test(whatif_settings, options_a_version_lacks_are_refused_naming_the_version)
{
    static const struct {
        const char *conf;
        enum gs_tc_torch first;
    } cases[] = {
        {"per_process_memory_fraction:0.5", GS_TC_TORCH_2_10},
        {"pinned_reserve_segment_size_mb:64", GS_TC_TORCH_2_10},
        {"graph_capture_record_stream_reuse:True", GS_TC_TORCH_2_9},
        {"max_non_split_rounding_mb:64", GS_TC_TORCH_2_6},
        {"pinned_use_background_threads:True", GS_TC_TORCH_2_6},
        {"release_lock_on_cudamalloc:True", GS_TC_TORCH_2_2},
        {"expandable_segments:True", GS_TC_TORCH_2_1},
    };
    struct gs_wi_setting s;
    char err[256], want[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum gs_tc_torch before = (enum gs_tc_torch)(cases[i].first - 1);
        cr_assert_eq(gs_wi_parse_torch(cases[i].conf, cases[i].first, &s, err, sizeof err), 0,
                     "%s: %s", cases[i].conf, err);
        cr_assert_eq(gs_wi_parse_torch(cases[i].conf, before, &s, err, sizeof err), -1,
                     "%s refused before", cases[i].conf);
        snprintf(want, sizeof want, "PyTorch 2.%d and later", (int)cases[i].first);
        cr_assert(strstr(err, want), "%s: %s", cases[i].conf, err);
    }
    cr_assert_eq(gs_wi_parse_torch("per_process_memory_fraction:0.5", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), 0, "%s", err);
    cr_assert(s.tc.memory_fraction > 0.49 && s.tc.memory_fraction < 0.51,
              "per_process_memory_fraction is the memory fraction");
    cr_assert_eq(gs_wi_parse_torch("per_process_memory_fraction:1.5", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), -1, "in [0, 1]");
    /* from 2.10 the compared garbage collection runs under 0.99, not 1.0,
     * which sets no maximum there */
    struct gs_wi_setting all[GS_WI_SETTINGS];
    size_t n = gs_wi_default_settings(GS_TC_TORCH_2_12, NULL, all, GS_WI_SETTINGS);
    int gc12 = 0, gc9 = 0;
    for (size_t i = 0; i < n; i++)
        gc12 |= !strcmp(all[i].name,
                        "garbage_collection_threshold:0.8,per_process_memory_fraction:0.99");
    n = gs_wi_default_settings(GS_TC_TORCH_2_9, NULL, all, GS_WI_SETTINGS);
    for (size_t i = 0; i < n; i++)
        gc9 |= !strcmp(all[i].name, "garbage_collection_threshold:0.8,memory_fraction:1.0");
    cr_assert(gc12 && gc9, "the compared collection as each version sets it");
}

Test(whatif_settings, the_runs_own_setting_comes_first_and_once)
{
    struct gs_wi_setting s[GS_WI_SETTINGS];
    size_t n = gs_wi_default_settings(GS_TC_TORCH_2_12, "max_split_size_mb:64", s, GS_WI_SETTINGS);
    cr_assert_eq(n, 7);
    cr_assert_str_eq(s[0].name, "max_split_size_mb:64");
    cr_assert_str_eq(s[1].name, "default");
    n = gs_wi_default_settings(GS_TC_TORCH_2_12, "expandable_segments:True", s, GS_WI_SETTINGS);
    cr_assert_eq(n, 6, "the run's own is one of the compared: listed once");
    cr_assert_str_eq(s[0].name, "expandable_segments:True");
    enum gs_tc_torch t;
    cr_assert_eq(gs_wi_parse_torch_version("2.12", &t), 0);
    cr_assert_eq(gs_wi_parse_torch_version("2.5", &t), 1, "2.5's options, 2.12's allocator");
    cr_assert_eq(t, GS_TC_TORCH_2_5);
    cr_assert_eq(gs_wi_parse_torch_version("2.13", &t), 1, "after the newest: read as 2.12");
    cr_assert_eq(t, GS_TC_TORCH_2_12);
    cr_assert_eq(gs_wi_parse_torch_version("2.12.1", &t), 0);
    cr_assert_eq(gs_wi_parse_torch_version("pr193400", &t), 0);
    cr_assert_eq(t, GS_TC_TORCH_PR193400);
    cr_assert_eq(gs_wi_parse_torch_version("1.13", &t), -1);
}

/* Cases whose models would do the same share one (models.h, following):
 * with no limit, garbage_collection_threshold and the memory fraction act
 * not (set_fraction needs a card), so their outcome is default's; on a card
 * they keep their own, forked from default's with no limit when reserved
 * could pass its threshold (0.5 x 0.99 x 64 MiB; from 2.10 a fraction of 1
 * sets no maximum, and so no collection). Default on the card follows
 * default with no limit to the end: 50 MiB never nears 64. */
Test(whatif, twins_share_a_model_and_its_outcome)
{
    struct gs_wi_setting s[2];
    char err[256];
    cr_assert_eq(gs_wi_parse_torch("default", GS_TC_TORCH_2_12, &s[0], err, sizeof err), 0);
    cr_assert_eq(gs_wi_parse_torch("garbage_collection_threshold:0.5,memory_fraction:0.99",
                                   GS_TC_TORCH_2_12, &s[1], err, sizeof err), 0, "%s", err);
    struct gs_wi_case c[4] = {{0, 0, 0}, {1, 0, 0}, {0, 64 * MiB, 0}, {1, 64 * MiB, 0}};
    struct gs_whatif *w = gs_whatif_new(s, 2, c, 4);
    cr_assert_not_null(w);
    /* three 12 MiB segments (36 MiB, over half the card), the first freed;
     * then 14 MiB, which no cached block holds: on the card, garbage
     * collection frees the cached 12 MiB segment before a new one is asked */
    alloc(w, GS_API_cudaMalloc, 0x1000000, 12 * MiB, 0);
    alloc(w, GS_API_cudaMalloc, 0x2000000, 12 * MiB, 0);
    alloc(w, GS_API_cudaMalloc, 0x3000000, 12 * MiB, 0);
    release(w, 0x1000000, 12 * MiB);
    alloc(w, GS_API_cudaMalloc, 0x4000000, 14 * MiB, 0);
    const struct gs_wi_device *d = dev0(w);
    cr_assert_eq(d->out[1].st.reserved_peak, d->out[0].st.reserved_peak, "no limit: twins");
    cr_assert_eq(d->out[0].st.reserved_peak, 50 * MiB, "12 x 3 + 14, none freed");
    cr_assert_eq(d->out[1].st.gc_frees, 0);
    cr_assert_eq(d->out[1].capacity, 0);
    cr_assert_eq(d->out[3].capacity, 64 * MiB, "on the card: its own");
    cr_assert_eq(d->out[2].st.gc_frees, 0, "default collects nothing");
    cr_assert_eq(d->out[3].st.gc_frees, 1, "on the card garbage collection acts");
    cr_assert_eq(d->models, 2, "default's, and the collection's on the card");
    gs_whatif_free(w);
}

/* Following (models.h): a case on a card follows the same setting with no
 * limit, and max_split_size_mb follows the setting without it, until the
 * request where its own rules could act otherwise; then its model is
 * forked. Whatever the schedule, each case's outcome is the one its model
 * alone gives. A random schedule (fixed seed) on two streams: tensors of
 * 512 B to 20 MiB, then to 100 MiB (blocks over max_split_size_mb:64,
 * cards filled); memory outside the allocator; failed requests. */
static void random_schedule(struct gs_whatif *w)
{
    uint64_t rng = 0x2545f4914f6cdd1dull, next = 1;
    struct { uint64_t addr, size; } live[32] = {{0, 0}};
    uint64_t outside = 0;
    for (int n = 0; n < 6000; n++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        unsigned slot = (unsigned)(rng >> 40) % 32, pick = (unsigned)(rng >> 20) % 100;
        uint64_t top = n < 3000 ? 20 * MiB : 100 * MiB;
        uint64_t size = pick < 60 ? 512 + (rng >> 8) % MiB
                        : pick < 90 ? MiB + (rng >> 8) % (19 * MiB)
                                    : 20 * MiB + (rng >> 8) % (top - 20 * MiB + 1);
        if (pick == 99) { /* a failed request of the run */
            struct gs_revent f = {.type = GS_REC_ALLOC_FAILED, .api = GS_API_cudaMallocAsync,
                                  .size = size, .stream = 1 + n % 2};
            gs_whatif_event(w, &f);
            continue;
        }
        if (pick == 98) { /* memory outside the allocator, taken or given back */
            if (outside)
                release(w, outside, 40 * MiB);
            else
                alloc(w, GS_API_cudaMalloc, outside = 0x7000000000ull + next++ * 0x1000,
                      40 * MiB, 0);
            outside = pick == 98 && outside && (rng & 1) ? outside : 0;
            continue;
        }
        if (live[slot].addr)
            release(w, live[slot].addr, live[slot].size);
        live[slot].addr = 0x100000 + next++ * 0x1000;
        live[slot].size = size;
        alloc(w, GS_API_cudaMallocAsync, live[slot].addr, size, 1 + (rng >> 30) % 2);
    }
}

Test(whatif, each_case_as_its_model_alone_gives_whatever_it_follows)
{
    static const char *const conf[] = {
        "default",
        "max_split_size_mb:64",
        "garbage_collection_threshold:0.6,memory_fraction:0.9",
        "expandable_segments:True",
        "expandable_segments:True,max_split_size_mb:64",
        "max_split_size_mb:64,garbage_collection_threshold:0.7,memory_fraction:0.8",
        "roundup_power2_divisions:4",
        "memory_fraction:0.5",
    };
    /* each card with a total above what the process has (its context), on
     * which the fractions are taken: the limits a follower forks at */
    static const uint64_t cards[] = {0, 256 * MiB, 768 * MiB, GS_WI_RUN_CARD};
    static const uint64_t totals[] = {0, 320 * MiB, 1024 * MiB, 0};
    enum { NS = sizeof conf / sizeof *conf, NC = sizeof cards / sizeof *cards };
    struct gs_wi_setting s[NS];
    struct gs_wi_case c[NS * NC];
    char err[256];
    for (size_t i = 0; i < NS; i++)
        cr_assert_eq(gs_wi_parse_torch(conf[i], GS_TC_TORCH_2_12, &s[i], err, sizeof err), 0,
                     "%s", err);
    for (size_t k = 0; k < NS * NC; k++)
        c[k] = (struct gs_wi_case){
            .setting = k % NS, .capacity = cards[k / NS], .total = totals[k / NS]};
    struct gs_whatif *all = gs_whatif_new(s, NS, c, NS * NC);
    cr_assert_not_null(all);
    gs_whatif_set_run_card(all, 0, 512 * MiB, 640 * MiB);
    random_schedule(all);
    const struct gs_wi_device *d = dev0(all);
    cr_assert_lt(d->models, NS * NC, "some cases followed others to the end (%zu models)",
                 d->models);
    size_t forked, differ = 0;
    for (size_t k = 0; k < NS * NC; k++) {
        struct gs_whatif *one = gs_whatif_new(&s[c[k].setting], 1,
                                              &(struct gs_wi_case){0, c[k].capacity, c[k].total},
                                              1);
        gs_whatif_set_run_card(one, 0, 512 * MiB, 640 * MiB);
        random_schedule(one);
        const struct gs_wi_device *o = dev0(one);
        const struct gs_wi_outcome *x = &d->out[k], *y = &o->out[0];
        cr_assert_eq(x->capacity, y->capacity, "case %zu", k);
        cr_assert_eq(x->total, y->total, "case %zu", k);
        cr_assert(!memcmp(&x->st, &y->st, sizeof x->st),
                  "case %zu (%s, card %llu): reserved peak %llu, alone %llu; retries %llu, "
                  "alone %llu", k, conf[c[k].setting], (unsigned long long)x->capacity,
                  (unsigned long long)x->st.reserved_peak, (unsigned long long)y->st.reserved_peak,
                  (unsigned long long)x->st.oom_retries, (unsigned long long)y->st.oom_retries);
        cr_assert_eq(x->device_peak, y->device_peak, "case %zu", k);
        cr_assert_eq(x->ran_out, y->ran_out, "case %zu", k);
        cr_assert_eq(x->first_oom.request, y->first_oom.request, "case %zu", k);
        cr_assert_eq(x->first_oom.size, y->first_oom.size, "case %zu", k);
        cr_assert_eq(x->failures_served, y->failures_served, "case %zu", k);
        cr_assert_eq(x->served_first_failure, y->served_first_failure, "case %zu", k);
        cr_assert_eq(d->nfailed, o->nfailed);
        for (size_t f = 0; f < d->nfailed; f++)
            cr_assert_eq(d->failed[f].served >> k & 1, o->failed[f].served & 1, "case %zu", k);
        /* the same setting with no limit, or without max_split_size: the
         * one it may follow; an outcome other than that one's was forked */
        size_t lead = c[k].capacity ? k % NS : k;
        lead = s[c[lead].setting].tc.max_split_size ? lead - 1 : lead;
        differ += memcmp(&d->out[lead].st, &x->st, sizeof x->st) != 0;
        gs_whatif_free(one);
    }
    forked = d->models - (NS * NC - differ);
    cr_assert_gt(differ, 10, "the schedule takes most cases apart from the one they follow");
    cr_assert_gt(forked, 10, "and their own models were forked from it (%zu)", forked);
    gs_whatif_free(all);
}

/* max_split_size_mb:64 follows default until a request could be one its
 * rules treat otherwise: 100.5 MiB takes a 102 MiB segment, which default
 * splits (the 1.5 MiB left is over kSmallSize: should_split) and
 * max_split_size does not (size >= max_split_size), so its model is forked
 * before that request, not after it. Then 1.2 MiB fits default's cached
 * 1.5 MiB block; max_split_size's asks for a 20 MiB segment. */
Test(whatif, max_split_size_is_forked_before_a_request_it_would_not_split)
{
    struct gs_wi_setting s[2];
    char err[256];
    cr_assert_eq(gs_wi_parse_torch("default", GS_TC_TORCH_2_12, &s[0], err, sizeof err), 0);
    cr_assert_eq(gs_wi_parse_torch("max_split_size_mb:64", GS_TC_TORCH_2_12, &s[1], err,
                                   sizeof err), 0);
    struct gs_wi_case c[2] = {{0, 0, 0}, {1, 0, 0}};
    struct gs_whatif *w = gs_whatif_new(s, 2, c, 2);
    cr_assert_not_null(w);
    alloc(w, GS_API_cudaMallocAsync, 0x1000, 100 * MiB + 512 * 1024, 1);
    alloc(w, GS_API_cudaMallocAsync, 0x9000000, 1200 * 1024, 1);
    const struct gs_wi_device *d = dev0(w);
    cr_assert_eq(d->models, 2, "one model, then max_split_size's own");
    cr_assert_eq(d->out[0].st.reserved_peak, 102 * MiB, "the split's 1.5 MiB reused");
    cr_assert_eq(d->out[1].st.reserved_peak, 122 * MiB, "unsplit: a 20 MiB segment more");
    gs_whatif_free(w);
}
