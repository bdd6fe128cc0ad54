/*
 * test_outcome.c - analyzer/model/outcome.c: what became of each failed
 * allocation, on event schedules shaped as the frameworks' own: PyTorch's
 * caching allocator retrying after emptying its cache (recovered), cuDNN's
 * benchmark halving its workspace (recovered), PyTorch's cudaMallocAsync
 * cacheInfo asking for all free memory and halving (a probe, whose
 * allocation never joins the peak), a FABRIC handle type refused, and
 * failures nothing followed (unrecovered), and cacheInfo's first guess
 * fitting at once (a probe that failed nothing). Also what "the same call site"
 * is, the end of a trace, post-mortem slots given back, the chains' cap,
 * and checkpoint records of older writers and hostile ones.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"
#include "analyzer/read/checkpoint_load.h"
#include "analyzer/model/model_int.h"
#include "ckpt_bytes.h"
#include "gpushim_cuda.h"

#define MB (1ull << 20)
#define OOM 2u

#define ASSERT_U64(got, want, ...) cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

static struct gs_replay r;
static uint64_t now;

/* Stacks: 1 and 2 differ in their second frame alone (another line of the
 * same function); 3 differs from 1 in two frames; 4 is deeper. */
static void setup(void)
{
    gs_replay_init(&r);
    gs_growth_attach(&r);
    gs_oom_attach(&r);
    now = 0;
    static const uint64_t s1[] = {0x7f00, 0x4010, 0x4100, 0x4200};
    static const uint64_t s2[] = {0x7f00, 0x4020, 0x4100, 0x4200};
    static const uint64_t s3[] = {0x7f00, 0x4030, 0x4110, 0x4200};
    static const uint64_t s4[] = {0x7f00, 0x4010, 0x4100, 0x4200, 0x4300};
    gs_replay_ops.stack(&r, 1, s1, 4);
    gs_replay_ops.stack(&r, 2, s2, 4);
    gs_replay_ops.stack(&r, 3, s3, 4);
    gs_replay_ops.stack(&r, 4, s4, 5);
}

static void teardown(void) { gs_replay_free(&r); }

TestSuite(outcome, .init = setup, .fini = teardown);

static void alloc(uint32_t tid, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = now += 1000, .tid = tid,
                          .api = GS_API_cuMemAlloc_v2, .addr = addr, .size = size,
                          .stack_id = stack, .kind = GS_KIND_DEVICE};
    gs_replay_event(&r, &e);
}

static void release(uint32_t tid, uint64_t addr)
{
    struct gs_revent e = {.type = GS_REC_FREE, .time_ns = now += 1000, .tid = tid,
                          .api = GS_API_cuMemFree_v2, .addr = addr};
    gs_replay_event(&r, &e);
}

static void fail_on(uint32_t tid, int32_t dev, uint64_t size, uint32_t stack, uint32_t result,
                    uint64_t free_bytes)
{
    struct gs_revent e = {.type = GS_REC_ALLOC_FAILED, .time_ns = now += 1000, .tid = tid,
                          .api = GS_API_cuMemAlloc_v2, .device = dev, .size = size,
                          .stack_id = stack, .result = result, .free_bytes = free_bytes,
                          .total_bytes = 64 * MB};
    gs_replay_event(&r, &e);
}

static void fail(uint32_t tid, uint64_t size, uint32_t stack, uint64_t free_bytes)
{
    fail_on(tid, 0, size, stack, OOM, free_bytes);
}

static void mark(uint32_t tid)
{
    struct gs_revent e = {.type = GS_REC_MARK, .time_ns = now += 1000, .tid = tid,
                          .label = "step", .label_len = 4};
    gs_replay_event(&r, &e);
}

static uint32_t outcome(size_t i)
{
    cr_assert_lt(i, r.nfailures);
    return r.failures[i].outcome;
}

Test(outcome, the_same_call_site)
{
    cr_assert(gs_outcome_same_site(&r, 1, 1), "the same stack");
    cr_assert(gs_outcome_same_site(&r, 1, 2), "one frame apart");
    cr_assert(!gs_outcome_same_site(&r, 1, 3), "two frames apart");
    cr_assert(!gs_outcome_same_site(&r, 1, 4), "another depth");
    cr_assert(!gs_outcome_same_site(&r, 1, 99), "a stack the trace never defined");
    cr_assert(gs_outcome_same_site(&r, 99, 99), "the same id, defined or not");
}

Test(outcome, pytorch_empties_its_cache_and_retries)
{
    /* CUDACachingAllocator's malloc: alloc_block fails; release_cached_blocks
     * frees the cached segments; alloc_block again, from its next line */
    alloc(1, 0x1000, 20 * MB, 3);
    alloc(1, 0x2000, 20 * MB, 3);
    fail(1, 24 * MB, 1, 3 * MB);
    ASSERT_U64(outcome(0), GS_OUTCOME_PENDING, "pending until its thread's next attempt");
    cr_assert_not_null(gs_failure_postmortem(&r, 0), "a post-mortem, while it may matter");
    release(2, 0x1000); /* another thread's free: not what it cost */
    release(1, 0x2000);
    alloc(1, 0x3000, 24 * MB, 2);
    ASSERT_U64(outcome(0), GS_OUTCOME_RECOVERED, "recovered");
    const struct gs_failure *f = &r.failures[0];
    ASSERT_U64(f->retry_bytes, 24 * MB, "got what it asked");
    ASSERT_U64(f->freed_bytes, 20 * MB, "after its thread freed 20 MB");
    ASSERT_U64(f->frees, 1, "in one free");
    ASSERT_U64(f->retry_ns, 3000, "3 us later");
    cr_assert_null(gs_failure_postmortem(&r, 0), "its post-mortem slot given back");
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_RECOVERED], 1, "counted");
    ASSERT_U64(r.outcomes.retries, 1, "one retry");
    ASSERT_U64(r.outcomes.retry_freed_bytes, 20 * MB, "what the retries cost");
    ASSERT_U64(r.allocations, 3, "the retry is an allocation like any");
    ASSERT_U64(r.nchains, 0, "no chain left");
    ASSERT_U64(gs_outcome_unrecovered(&r), 0, "nothing unrecovered");
}

Test(outcome, the_retry_fails_too_then_succeeds)
{
    fail(1, 24 * MB, 1, 3 * MB);
    fail(1, 24 * MB, 2, 3 * MB);
    alloc(1, 0x3000, 24 * MB, 1);
    ASSERT_U64(outcome(0), GS_OUTCOME_RECOVERED, "first");
    ASSERT_U64(outcome(1), GS_OUTCOME_RECOVERED, "second");
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_RECOVERED], 2, "both counted");
    ASSERT_U64(r.outcomes.retries, 1, "one retry that succeeded");
}

Test(outcome, cudnn_halves_its_workspace_and_keeps_it)
{
    /* Conv_v8.cpp: allocate(max_workspace_size), caught OOM, halve */
    fail(1, 64 * MB, 1, 40 * MB);
    fail(1, 32 * MB, 1, 40 * MB);
    alloc(1, 0x1000, 16 * MB, 1);
    alloc(1, 0x2000, 1 * MB, 3); /* the benchmark goes on with it */
    ASSERT_U64(outcome(0), GS_OUTCOME_RECOVERED, "first");
    ASSERT_U64(outcome(1), GS_OUTCOME_RECOVERED, "second");
    ASSERT_U64(r.peak_bytes, 17 * MB, "the workspace held memory: in the peak");
    ASSERT_U64(r.failures[0].retry_bytes, 16 * MB, "it got 16 MB");
}

Test(outcome, cacheinfo_probes_and_the_probe_never_joins_the_peak)
{
    /* CUDAMallocAsyncAllocator's cacheInfo: cudaMemGetInfo, then the free
     * memory, halved until it fits, freed at once */
    alloc(1, 0x1000, 4 * MB, 3);
    fail(1, 60 * MB, 1, 60 * MB);
    fail(1, 30 * MB, 1, 60 * MB);
    alloc(2, 0x5000, 1 * MB, 3); /* another thread meanwhile */
    alloc(1, 0x2000, 15 * MB, 1);
    ASSERT_U64(r.nchains, 1, "held apart, awaiting its thread's next event");
    cr_assert_null(gs_replay_find_live(&r, GS_SPACE_ADDRESS, 0x2000), "not live");
    release(1, 0x2000);
    ASSERT_U64(outcome(0), GS_OUTCOME_PROBE, "a probe");
    ASSERT_U64(outcome(1), GS_OUTCOME_PROBE, "a probe");
    ASSERT_U64(r.failures[1].retry_bytes, 15 * MB, "what fit");
    ASSERT_U64(r.peak_bytes, 5 * MB, "the peak without the probe");
    ASSERT_U64(r.allocations, 2, "the probe is no allocation of the job's");
    ASSERT_U64(r.frees, 0, "nor its free");
    ASSERT_U64(r.frees_unknown, 0, "which is no unknown free either");
    ASSERT_U64(r.outcomes.probes, 1, "one probe allocation");
    ASSERT_U64(r.outcomes.probe_largest, 15 * MB, "of 15 MB");
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_PROBE], 2, "two probe failures");
    uint64_t n;
    ASSERT_U64(gs_replay_leaks(&r, &n), 5 * MB, "no leak of it");
}

Test(outcome, a_probe_is_freed_before_its_thread_does_anything_else)
{
    fail(1, 60 * MB, 1, 60 * MB);
    alloc(1, 0x2000, 30 * MB, 1);
    mark(1);
    release(1, 0x2000);
    ASSERT_U64(outcome(0), GS_OUTCOME_RECOVERED, "not freed at once: recovered");
    ASSERT_U64(r.peak_bytes, 30 * MB, "and it joined the live set");
    ASSERT_U64(r.frees, 1, "its free is a free");
    ASSERT_U64(r.outcomes.probes, 0, "no probe");
}

/* An allocation the shim marked: it asked for exactly the free memory its
 * thread's cuMemGetInfo had just answered. */
static void alloc_all_free(uint32_t tid, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = now += 1000, .tid = tid,
                          .api = GS_API_cuMemAllocAsync, .addr = addr, .size = size,
                          .stack_id = stack, .kind = GS_KIND_DEVICE, .all_free = 1};
    gs_replay_event(&r, &e);
}

Test(outcome, a_first_guess_that_fits_is_a_probe_without_failures)
{
    /* cacheInfo with memory cached in the pool: cudaMemGetInfo, then all of
     * it asked for, which fits at once, freed at once */
    alloc(1, 0x1000, 8 * MB, 3);
    alloc_all_free(1, 0x2000, 47 * MB, 1);
    ASSERT_U64(r.nchains, 1, "held apart, awaiting its thread's next event");
    cr_assert_null(gs_replay_find_live(&r, GS_SPACE_ADDRESS, 0x2000), "not live");
    alloc(2, 0x5000, 1 * MB, 3); /* another thread meanwhile */
    release(1, 0x2000);
    ASSERT_U64(r.nchains, 0, "decided");
    ASSERT_U64(r.peak_bytes, 9 * MB, "the peak without the probe");
    ASSERT_U64(r.allocations, 2, "the probe is no allocation of the job's");
    ASSERT_U64(r.frees, 0, "nor its free");
    ASSERT_U64(r.frees_unknown, 0, "which is no unknown free either");
    ASSERT_U64(r.outcomes.probes, 1, "one probe allocation");
    ASSERT_U64(r.outcomes.probe_bytes, 47 * MB, "of 47 MB");
    ASSERT_U64(r.nfailures, 0, "nothing failed");
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_PROBE], 0, "no probe failure");
}

Test(outcome, all_free_memory_kept_is_an_allocation_like_any)
{
    alloc_all_free(1, 0x2000, 47 * MB, 1);
    alloc(1, 0x3000, 1 * MB, 2); /* its thread's next event is no free of it */
    release(1, 0x2000);
    ASSERT_U64(r.peak_bytes, 48 * MB, "it joined the live set before the next event");
    ASSERT_U64(r.allocations, 2, "two allocations");
    ASSERT_U64(r.frees, 1, "and its free is a free");
    ASSERT_U64(r.outcomes.probes, 0, "no probe");
    ASSERT_U64(r.outcomes.retries, 0, "and no retry: nothing had failed");
}

Test(outcome, a_first_guess_held_at_a_checkpoint)
{
    alloc(1, 0x1000, 8 * MB, 3);
    alloc_all_free(1, 0x2000, 47 * MB, 1);
    struct buf b = checkpoint(&r);
    struct gs_replay loaded;
    gs_replay_init(&loaded);
    ASSERT_U64(damaged(&loaded, b.p, b.n), 0, "a held chain without failures loads");
    ASSERT_U64(loaded.nchains, 1, "the chain");
    struct gs_replay whole = r;
    r = loaded;
    release(1, 0x2000);
    ASSERT_U64(r.outcomes.probes, 1, "decided after the checkpoint as before it");
    ASSERT_U64(r.peak_bytes, 8 * MB, "without the probe");
    loaded = r;
    r = whole;
    gs_replay_free(&loaded);
    free(b.p);
}

Test(outcome, a_probe_asks_for_all_free_memory_and_halves)
{
    /* freed at once, but its first request was less than the free memory */
    fail(1, 40 * MB, 1, 60 * MB);
    alloc(1, 0x2000, 20 * MB, 1);
    release(1, 0x2000);
    ASSERT_U64(outcome(0), GS_OUTCOME_RECOVERED, "not all of it: recovered");
    /* all of it, but not halved: a retry of the same size */
    fail(1, 60 * MB, 1, 60 * MB);
    alloc(1, 0x3000, 60 * MB, 1);
    release(1, 0x3000);
    ASSERT_U64(outcome(1), GS_OUTCOME_RECOVERED, "not halved: recovered");
    /* free memory unknown (another device's context) */
    fail(1, 60 * MB, 1, UINT64_MAX);
    alloc(1, 0x4000, 30 * MB, 1);
    release(1, 0x4000);
    ASSERT_U64(outcome(2), GS_OUTCOME_RECOVERED, "free memory unknown: recovered");
    ASSERT_U64(r.peak_bytes, 60 * MB, "all of them in the peak");
}

Test(outcome, refused_whatever_follows)
{
    /* NCCL's ncclMemAlloc: FABRIC refused, POSIX_FD next */
    fail_on(1, 0, 2 * MB, 1, GS_CUDA_ERROR_NOT_SUPPORTED, 60 * MB);
    fail_on(1, 0, 2 * MB, 1, GS_CUDA_ERROR_NOT_PERMITTED, 60 * MB);
    fail_on(1, 0, 2 * MB, 1, GS_CUDA_ERROR_INVALID_VALUE, 60 * MB);
    ASSERT_U64(outcome(0), GS_OUTCOME_REFUSED, "NOT_SUPPORTED");
    ASSERT_U64(outcome(1), GS_OUTCOME_REFUSED, "NOT_PERMITTED");
    ASSERT_U64(outcome(2), GS_OUTCOME_REFUSED, "INVALID_VALUE");
    cr_assert_null(gs_failure_postmortem(&r, 0), "no post-mortem");
    ASSERT_U64(r.nchains, 0, "no chain");
    alloc(1, 0x1000, 2 * MB, 1);
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_REFUSED], 3, "counted");
    ASSERT_U64(gs_outcome_unrecovered(&r), 0, "none unrecovered");
}

Test(outcome, a_refusal_in_a_chain_leaves_it_as_it_is)
{
    fail(1, 24 * MB, 1, 3 * MB);
    fail_on(1, 0, 2 * MB, 3, GS_CUDA_ERROR_NOT_SUPPORTED, 3 * MB);
    alloc(1, 0x1000, 24 * MB, 2);
    ASSERT_U64(outcome(0), GS_OUTCOME_RECOVERED, "the chain went on past it");
    ASSERT_U64(outcome(1), GS_OUTCOME_REFUSED, "refused");
}

Test(outcome, unrecovered_when_the_next_attempt_is_another)
{
    fail(1, 24 * MB, 1, 3 * MB);
    alloc(1, 0x1000, 1 * MB, 3); /* another call site */
    fail(2, 24 * MB, 1, 3 * MB);
    alloc(2, 0x2000, 32 * MB, 1); /* more than it asked */
    fail(3, 24 * MB, 1, 3 * MB);
    fail_on(3, 1, 24 * MB, 1, OOM, 3 * MB); /* another device: a chain of its own */
    fail(4, 24 * MB, 1, 3 * MB);
    struct gs_revent reserve = {.type = GS_REC_ALLOC, .time_ns = now += 1000, .tid = 4,
                                .addr = 0x9000, .size = 64 * MB, .stack_id = 3,
                                .kind = GS_KIND_ADDRESS_SPACE, .space = GS_SPACE_RESERVATION};
    gs_replay_event(&r, &reserve); /* address space is no attempt */
    ASSERT_U64(outcome(0), GS_OUTCOME_UNRECOVERED, "elsewhere");
    ASSERT_U64(outcome(1), GS_OUTCOME_UNRECOVERED, "bigger");
    ASSERT_U64(outcome(2), GS_OUTCOME_UNRECOVERED, "another device");
    ASSERT_U64(outcome(3), GS_OUTCOME_PENDING, "still open");
    ASSERT_U64(outcome(4), GS_OUTCOME_PENDING, "still open after a reservation");
    cr_assert_not_null(gs_failure_postmortem(&r, 0), "the unrecovered keep their post-mortems");
    gs_replay_finish(&r);
    ASSERT_U64(outcome(3), GS_OUTCOME_UNRECOVERED, "the end decides");
    ASSERT_U64(outcome(4), GS_OUTCOME_UNRECOVERED, "the end decides");
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_UNRECOVERED], 5, "counted");
    ASSERT_U64(gs_outcome_unrecovered(&r), 5, "all five");
    ASSERT_U64(r.nchains, 0, "no chain left");
}

Test(outcome, a_probe_held_to_the_end_joins_then)
{
    fail(1, 60 * MB, 1, 60 * MB);
    alloc(1, 0x2000, 30 * MB, 1);
    ASSERT_U64(r.peak_bytes, 0, "held apart");
    gs_replay_finish(&r);
    ASSERT_U64(outcome(0), GS_OUTCOME_RECOVERED, "never freed: recovered");
    ASSERT_U64(r.peak_bytes, 30 * MB, "and live at the end");
    uint64_t n;
    ASSERT_U64(gs_replay_leaks(&r, &n), 30 * MB, "a leak, as it is");
}

Test(outcome, post_mortems_go_to_failures_that_may_matter)
{
    for (int i = 0; i < 40; i++) { /* forty recovered retries, each its own slot a while */
        fail(1, 8 * MB, 1, 1 * MB);
        alloc(1, 0x1000 + (uint64_t)i * 0x100, 8 * MB, 2);
    }
    for (int i = 0; i < 40; i++) /* forty refused: none */
        fail_on(1, 0, 2 * MB, 3, GS_CUDA_ERROR_NOT_SUPPORTED, 1 * MB);
    fail(1, 64 * MB, 3, 1 * MB);
    gs_replay_finish(&r);
    ASSERT_U64(outcome(80), GS_OUTCOME_UNRECOVERED, "the last one");
    cr_assert_not_null(gs_failure_postmortem(&r, 80), "it has its post-mortem");
}

Test(outcome, the_chains_cap)
{
    for (uint32_t t = 1; t <= GS_MAX_CHAINS + 3; t++)
        fail(t, 8 * MB, 1, 1 * MB);
    ASSERT_U64(r.nchains, GS_MAX_CHAINS, "at most so many open");
    ASSERT_U64(outcome(GS_MAX_CHAINS), GS_OUTCOME_UNRECOVERED, "past them: decided at once");
    gs_replay_finish(&r);
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_UNRECOVERED], GS_MAX_CHAINS + 3, "all counted");
}

Test(outcome, dropped_failures_are_counted_in_their_chains)
{
    for (int i = 0; i < GS_MAX_FAILURES; i++)
        fail_on((uint32_t)(1000 + i % 200), 0, 8 * MB, 3, GS_CUDA_ERROR_NOT_SUPPORTED, 1 * MB);
    fail(1, 24 * MB, 1, 3 * MB); /* dropped: past the cap */
    fail(1, 24 * MB, 2, 3 * MB);
    alloc(1, 0x1000, 24 * MB, 1);
    ASSERT_U64(r.failures_dropped, 2, "two dropped");
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_RECOVERED], 2, "both recovered, counted");
    ASSERT_U64(gs_outcome_unrecovered(&r), 0, "none unrecovered");
}

/* ---- checkpoints ---- */

Test(outcome, an_older_checkpoint_decides_by_the_result)
{
    /* BEGIN with its first 20 totals; failures without outcomes, one with
     * its thread's name, one without; an END of seven counts */
    uint8_t b[512];
    size_t n = 0;
    n += REC(b + n, GS_REC_CKPT_BEGIN, 2, 9, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
             0);
    n += REC(b + n, GS_REC_CKPT_FAILURE, 5, 1, OOM, gs_zigzag(0), 8 * MB, 1, 64 * MB, 0, 1, 0);
    n += REC(b + n, GS_REC_CKPT_FAILURE, 6, 1, 801, gs_zigzag(0), 2 * MB, 1, 64 * MB, 0, 1);
    n += REC(b + n, GS_REC_CKPT_END, 0, 0, 0, 2, 0, 0, 0);
    ASSERT_U64(load(&r, b, n), 0, "loads");
    ASSERT_U64(outcome(0), GS_OUTCOME_UNRECOVERED, "out of memory: unrecovered");
    ASSERT_U64(outcome(1), GS_OUTCOME_REFUSED, "another result: refused");
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_UNRECOVERED], 1, "counted as loaded");
    ASSERT_U64(r.outcomes.count[GS_OUTCOME_REFUSED], 1, "counted as loaded");
    ASSERT_U64(gs_outcome_unrecovered(&r), 2, "and the one dropped before is unrecovered");
}

static uint64_t load_after_failures(const uint8_t *tail, size_t tail_len)
{
    /* two pending failures, the second linked to the first, and one decided */
    uint8_t b[1024];
    size_t n = 0;
    n += REC(b + n, GS_REC_CKPT_BEGIN, 3, 9, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
             0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    n += REC(b + n, GS_REC_CKPT_FAILURE, 5, 1, OOM, gs_zigzag(0), 8 * MB, 1, 64 * MB, 0, 1, 0,
             GS_OUTCOME_PENDING, 0, 0, 0, 0, 0);
    n += REC(b + n, GS_REC_CKPT_FAILURE, 6, 1, OOM, gs_zigzag(0), 8 * MB, 1, 64 * MB, 0, 2, 0,
             GS_OUTCOME_PENDING, 1, 0, 0, 0, 0);
    n += REC(b + n, GS_REC_CKPT_FAILURE, 7, 1, OOM, gs_zigzag(0), 8 * MB, 1, 64 * MB, 0, 2, 0,
             GS_OUTCOME_UNRECOVERED, 0, 0, 0, 0, 0);
    memcpy(b + n, tail, tail_len);
    n += tail_len;
    return load(&r, b, n);
}

Test(outcome, a_chain_loads_and_decides_as_it_would_have)
{
    uint8_t t[256];
    size_t n = 0;
    n += REC(t + n, GS_REC_CKPT_CHAIN, 1, gs_zigzag(0), 2, GS_CHAIN_OPEN, 0, 2, 8 * MB, 5, 2,
             0, 0);
    n += REC(t + n, GS_REC_CKPT_END, 0, 0, 0, 3, 0, 0, 0, 1);
    ASSERT_U64(load_after_failures(t, n), 0, "loads");
    ASSERT_U64(r.nchains, 1, "the chain");
    alloc(1, 0x1000, 8 * MB, 1);
    ASSERT_U64(outcome(0), GS_OUTCOME_RECOVERED, "first, through the link");
    ASSERT_U64(outcome(1), GS_OUTCOME_RECOVERED, "second");
    ASSERT_U64(outcome(2), GS_OUTCOME_UNRECOVERED, "the third as it was");
}

Test(outcome, hostile_chains_and_links_are_refused)
{
    struct {
        const char *what;
        uint64_t f[21];
        size_t n;
    } bad[] = {
        {"a state past the last", {1, 0, 2, 2, 0, 2, 8, 5, 2, 0, 0}, 11},
        {"probe past 1", {1, 0, 2, 0, 2, 2, 8, 5, 2, 0, 0}, 11},
        {"no failures", {1, 0, 2, 0, 0, 2, 8, 5, 0, 0, 0}, 11},
        {"its latest failure decided", {1, 0, 2, 0, 0, 3, 8, 5, 1, 0, 0}, 11},
        {"its latest failure past those loaded", {1, 0, 2, 0, 0, 4, 8, 5, 1, 0, 0}, 11},
        {"a held kind past the last", {1, 0, 2, 1, 1, 2, 8, 5, 1, 0, 0, 0x1000, 1, 1, 1,
                                       GS_KIND_COUNT, 0, 0, 0, 0, 0}, 21},
        {"a held space past the last", {1, 0, 2, 1, 1, 2, 8, 5, 1, 0, 0, 0x1000, 1, 1, 1, 0, 0,
                                        GS_SPACE_COUNT, 0, 0, 0}, 21},
        {"held, cut short", {1, 0, 2, 1, 1, 2, 8, 5, 1, 0, 0, 0x1000, 1}, 13},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t t[256];
        size_t n = rec_u(t, GS_REC_CKPT_CHAIN, bad[i].f, bad[i].n);
        cr_assert_geq(load_after_failures(t, n), 1, "%s: refused", bad[i].what);
        ASSERT_U64(r.nchains, 0, "%s: no chain", bad[i].what);
        gs_replay_free(&r);
        setup();
    }
    /* a thread's chain twice */
    uint8_t t[256];
    size_t n = REC(t, GS_REC_CKPT_CHAIN, 1, 0, 2, 0, 0, 2, 8, 5, 1, 0, 0);
    n += REC(t + n, GS_REC_CKPT_CHAIN, 1, 0, 2, 0, 0, 1, 8, 5, 1, 0, 0);
    cr_assert_geq(load_after_failures(t, n), 1, "twice: refused");
    ASSERT_U64(r.nchains, 1, "the first stands");
    gs_replay_free(&r);
    setup();
    /* links: to a later failure, to a decided one, from a decided one */
    static const uint64_t links[][2] = {{GS_OUTCOME_PENDING, 4}, {GS_OUTCOME_PENDING, 3},
                                        {GS_OUTCOME_RECOVERED, 1}, {GS_OUTCOME_COUNT, 0}};
    for (size_t i = 0; i < 4; i++) {
        n = REC(t, GS_REC_CKPT_FAILURE, 8, 1, OOM, 0, 8 * MB, 1, 64 * MB, 0, 2, 0, links[i][0],
                links[i][1], 0, 0, 0, 0);
        cr_assert_geq(load_after_failures(t, n), 1, "link %zu: refused", i);
        ASSERT_U64(r.nfailures, 3, "link %zu: not added", i);
        gs_replay_finish(&r); /* the pending ones no chain names: unrecovered */
        ASSERT_U64(outcome(0), GS_OUTCOME_UNRECOVERED, "link %zu: decided at the end", i);
        gs_replay_free(&r);
        setup();
    }
}

/* A replay with a chain open (thread 1) and a probe's allocation held
 * apart (thread 2), checkpointed and loaded: the events after decide
 * alike. */
static void two_chains(void)
{
    alloc(3, 0x9000, 4 * MB, 3);
    fail(1, 24 * MB, 1, 3 * MB);
    release(1, 0x9000);
    fail(2, 60 * MB, 1, 60 * MB);
    alloc(2, 0x2000, 30 * MB, 1);
}

static void after_two_chains(void)
{
    release(2, 0x2000);
    alloc(1, 0x3000, 24 * MB, 2);
    gs_replay_finish(&r);
}

Test(outcome, open_chains_cross_a_checkpoint)
{
    two_chains();
    struct buf b = checkpoint(&r);
    struct gs_replay loaded;
    gs_replay_init(&loaded);
    ASSERT_U64(damaged(&loaded, b.p, b.n), 0, "nothing damaged");
    ASSERT_U64(loaded.nchains, 2, "both chains");
    uint64_t t = now;
    after_two_chains();
    struct gs_replay whole = r;
    r = loaded;
    now = t;
    after_two_chains();
    loaded = r;
    r = whole;
    for (struct gs_replay *x = &r; x; x = x == &r ? &loaded : NULL) {
        ASSERT_U64(x->failures[0].outcome, GS_OUTCOME_RECOVERED, "thread 1 retried");
        ASSERT_U64(x->failures[0].freed_bytes, 4 * MB, "after freeing 4 MB");
        ASSERT_U64(x->failures[1].outcome, GS_OUTCOME_PROBE, "thread 2 probed");
        ASSERT_U64(x->peak_bytes, 24 * MB, "without the probe");
        ASSERT_U64(x->outcomes.probes, 1, "one probe");
        ASSERT_U64(x->outcomes.retry_freed_bytes, 4 * MB, "the retry's cost");
    }
    gs_replay_free(&loaded);
    free(b.p);
}

static size_t random_outcome_record(uint8_t *out, uint64_t *seed)
{
    uint64_t v[24];
    size_t n = rnd(seed) % 24;
    for (size_t i = 0; i < n; i++)
        v[i] = field(seed);
    static const uint8_t types[] = {GS_REC_CKPT_CHAIN, GS_REC_CKPT_FAILURE, GS_REC_CKPT_END};
    return rec_u(out, types[rnd(seed) % 3], v, n);
}

static void use(struct gs_replay *x)
{
    struct gs_replay keep = r;
    r = *x;
    for (uint32_t t = 0; t < 4; t++) {
        fail(t, 8 * MB, 1 + t % 2, 1 * MB);
        alloc(t, 0x100000 + t, 4 * MB, 2);
        release(t, 0x100000 + t);
    }
    gs_replay_finish(&r);
    for (size_t i = 0; i < r.nfailures; i++)
        cr_assert_neq(r.failures[i].outcome, GS_OUTCOME_PENDING, "decided at the end");
    cr_assert_eq(r.nchains, 0, "no chain left");
    struct buf b = checkpoint(&r);
    struct gs_replay again;
    gs_replay_init(&again);
    cr_assert_eq(damaged(&again, b.p, b.n), 0, "a checkpoint of it reads back");
    gs_replay_free(&again);
    free(b.p);
    *x = r;
    r = keep;
}

Test(outcome, random_chain_and_failure_records)
{
    two_chains();
    struct buf good = checkpoint(&r);
    random_rounds(&good, 15, 300, random_outcome_record, 1, use);
    free(good.p);
}

/* The replay asks outcome.c about an event only when gs_outcome_sees it: no
 * chain open, and not an allocation of all free memory. Every other event,
 * of every type, must be nothing to gs_outcome_event: 0, and no change. */
Test(outcome, events_it_does_not_see_are_nothing_to_it)
{
    static struct gs_replay before;
    alloc(7, 0x1000, 4 * MB, 1); /* something live, and a site */
    cr_assert_eq(r.nchains, 0);
    for (uint32_t type = 0; type < 64; type++) {
        for (int all_free = 0; all_free < 2; all_free++) {
            struct gs_revent e = {.type = type, .all_free = all_free, .addr = 0x1000,
                                  .size = 4 * MB, .stack_id = 1, .tid = 7, .time_ns = now};
            if (type == GS_REC_ALLOC && all_free) {
                cr_assert(gs_outcome_sees(&r, &e), "an allocation of all free memory: seen");
                continue;
            }
            cr_assert_not(gs_outcome_sees(&r, &e), "type %u", type);
            memcpy(&before, &r, sizeof r);
            cr_assert_eq(gs_outcome_event(&r, &e), 0, "type %u, all_free %d", type, all_free);
            cr_assert_arr_eq(&r, &before, sizeof r, "type %u, all_free %d: nothing changed",
                             type, all_free);
        }
    }
}
