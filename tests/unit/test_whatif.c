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
    cr_assert_eq(gs_wi_parse_torch("max_split_size_mb:20", GS_TC_TORCH_2_12, &s, err, sizeof err),
                 -1, "CUDAAllocatorConfig refuses 20 MiB or less");
    cr_assert_eq(gs_wi_parse_torch("roundup_power2_divisions:3", GS_TC_TORCH_2_12, &s, err,
                                   sizeof err), -1, "not a power of two");
    cr_assert_eq(gs_wi_parse_torch("expandable_segments", GS_TC_TORCH_2_12, &s, err, sizeof err),
                 -1, "key without value");
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
    cr_assert_eq(gs_wi_parse_torch_version("2.5", &t), 1, "read with the 2.12 rules");
    cr_assert_eq(gs_wi_parse_torch_version("2.12.1", &t), 0);
    cr_assert_eq(gs_wi_parse_torch_version("pr193400", &t), 0);
    cr_assert_eq(t, GS_TC_TORCH_PR193400);
    cr_assert_eq(gs_wi_parse_torch_version("1.13", &t), -1);
}

/* Cases whose models would do the same share one (same_model): with no
 * limit, garbage_collection_threshold and the memory fraction act not
 * (set_fraction needs a card), so their outcome is default's; on a card they
 * keep their own. */
Test(whatif, twins_share_a_model_and_its_outcome)
{
    struct gs_wi_setting s[2];
    char err[256];
    cr_assert_eq(gs_wi_parse_torch("default", GS_TC_TORCH_2_12, &s[0], err, sizeof err), 0);
    cr_assert_eq(gs_wi_parse_torch("garbage_collection_threshold:0.5,memory_fraction:1.0",
                                   GS_TC_TORCH_2_12, &s[1], err, sizeof err), 0, "%s", err);
    struct gs_wi_case c[4] = {{0, 0}, {1, 0}, {0, 64 * MiB}, {1, 64 * MiB}};
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
    gs_whatif_free(w);
}
