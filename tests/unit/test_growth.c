/*
 * test_growth.c - analyzer/findings/growth.c's sampling without marks, judged by
 * analyzer/findings/suspects.c, driven event by event through gs_replay_event with
 * schedules whose samples are worked out by hand: a window ends at the
 * clock's next millisecond or at its 4th event, whichever comes first; the
 * sample is its quietest moment (the first with the least device memory
 * live); when 64 samples are full every other one goes and windows widen.
 *
 * Each schedule is a training step repeated: keep (stack 1) allocates 1 MiB
 * and keeps it, the leak; scratch (stack 2) allocates 4 MiB and frees it at
 * once, a step's temporary. The leak is the one suspect, the temporary
 * never: each window's quietest moment has it freed.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/growth.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/findings/findings.h"

#define US 1000ull
#define MS 1000000ull
#define MiB (1024ull * 1024ull)
#define KEEP 1    /* stack ids */
#define SCRATCH 2

#define ASSERT_U64(got, want, ...)                                                           \
    cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

static void ev(struct gs_replay *r, enum gs_record_type type, uint64_t t, uint64_t addr,
               uint64_t size, uint32_t stack)
{
    struct gs_revent e = {.type = type, .time_ns = t, .tid = 1, .api = GS_API_cuMemAlloc_v2,
                          .device = 0, .addr = addr, .size = size, .stack_id = stack,
                          .kind = GS_KIND_DEVICE};
    gs_replay_event(r, &e);
}

/* Step s at time t: keep 1 MiB at t, scratch 4 MiB at t + gap, freed at
 * t + 2 gap. */
static void step(struct gs_replay *r, uint64_t s, uint64_t t, uint64_t gap)
{
    ev(r, GS_REC_ALLOC, t, 0x100000000ull + s * MiB, MiB, KEEP);
    ev(r, GS_REC_ALLOC, t + gap, 0x10000, 4 * MiB, SCRATCH);
    ev(r, GS_REC_FREE, t + 2 * gap, 0x10000, 0, 0);
}

static void start(struct gs_replay *r)
{
    gs_replay_init(r);
    gs_growth_attach(r); /* as the analyzer's load.c does */
}

/* The raw site of a stack. */
static size_t site_of(const struct gs_replay *r, uint32_t stack)
{
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].stack_id == stack)
            return i;
    cr_assert_fail("no site for stack %u", stack);
    return 0;
}

static uint64_t sampled(const struct gs_replay *r, uint32_t stack, unsigned k)
{
    return gs_growth_of(r)->live[site_of(r, stack) * GS_GROWTH_SAMPLES + k];
}

/* Without marks, the first sample is the run's start: time 0, nothing live. */
static void start_sample(const struct gs_replay *r)
{
    const struct gs_growth *g = gs_growth_of(r);
    ASSERT_U64(g->time_ns[0], 0, "the first sample: the run's start");
    ASSERT_U64(sampled(r, KEEP, 0), 0, "keep then");
    ASSERT_U64(sampled(r, SCRATCH, 0), 0, "scratch then");
}

/* The suspects: exactly one, keep's; *s is it. */
static void only_keep_suspect(const struct gs_replay *r, struct gs_suspect *s)
{
    struct gs_suspect *sus;
    size_t n = gs_growth_suspects(r, NULL, GS_VIEW_MERGED, &sus);
    cr_assert_eq(n, 1, "one suspect, not %zu (the first: stack %u)", n, n ? sus[0].stack_id : 0);
    cr_assert_eq(sus[0].stack_id, KEEP, "the leak, not scratch");
    *s = sus[0];
    free(sus);
}

/*
 * 20 steps 10 us apart, 3 us between their events: all 60 events inside the
 * millisecond from 5 ms, so no window ends by the clock (the clock alone
 * took one sample). Windows of 4 events: events 1-4, 5-8, ..., 57-60, 15
 * samples and none left for the end. Event j (from 1) is step (j-1)/3's
 * keep, scratch or free; a window's quietest moment is its first moment
 * without scratch's 4 MiB:
 *   window 1-4    keep0 scratch0 free0 keep1      after keep0: keep 1 MiB
 *   window 5-8    scratch1 free1 keep2 scratch2   after free1: keep 2 MiB
 *   window 9-12   free2 keep3 scratch3 free3      after free2: keep 3 MiB
 *   window 13-16  keep4 ...                       after keep4: keep 5 MiB
 * and so on, three samples every four steps: keep holds 1, 2, 3, 5, 6, 7,
 * 9, ..., 19 MiB, then 20 at the end; scratch 0 at every sample.
 */
Test(growth, a_short_fast_run_is_sampled_by_its_events)
{
    struct gs_replay r;
    start(&r);
    for (uint64_t s = 0; s < 20; s++)
        step(&r, s, 5 * MS + s * 10 * US, 3 * US);
    gs_replay_finish(&r);
    const struct gs_growth *g = gs_growth_of(&r);
    cr_assert_eq(g->by_steps, 0, "no marks: windows");
    cr_assert_eq(g->n, 16, "the start, then a sample every 4 events: %u", g->n);
    start_sample(&r);
    for (unsigned k = 0; k < 15; k++) {
        /* the quiet moment: the window's first event, or its second where
         * the first is a scratch (window 4k starts at a step's keep, scratch
         * or free as k % 3 is 0, 1 or 2); after the start's sample */
        uint64_t j = 4 * k + (k % 3 == 1); /* from 0 */
        ASSERT_U64(sampled(&r, KEEP, k + 1), (j / 3 + 1) * MiB, "keep at sample %u", k + 1);
        ASSERT_U64(sampled(&r, SCRATCH, k + 1), 0, "scratch at sample %u", k + 1);
        ASSERT_U64(g->time_ns[k + 1], 5 * MS + j / 3 * 10 * US + j % 3 * 3 * US,
                   "sample %u at event %llu", k + 1, (unsigned long long)j);
    }
    struct gs_suspect s;
    only_keep_suspect(&r, &s);
    ASSERT_U64(s.growth_bytes, 20 * MiB, "from nothing at the start to 20 at the end: all of it");
    ASSERT_U64(s.live_bytes, 20 * MiB, "live at the end");
    ASSERT_U64(s.from_ns, 0, "lowest at the start");
    cr_assert_eq(s.npoints, 17, "the start, 15 samples and the end");
    cr_assert_eq((s.rising << 8) | s.intervals, (8 << 8) | 8,
                 "rose in all 8 intervals of the second half: %u of %u", s.rising, s.intervals);
    cr_assert_lt(s.bytes_per_step, 0, "no steps without marks");
    gs_replay_free(&r);
}

/*
 * 20 steps 500 us apart from 10 ms (10 ms in all), 10 us between their
 * events: two steps, 6 events, in each millisecond. A window ends at its 4th
 * event (keep, scratch, free, the next step's keep: quietest after the
 * first keep) and the next at the clock (the next step's scratch and free:
 * quietest after the free): a sample for each step, as marks would give,
 * where the clock alone gave one for every two.
 */
Test(growth, the_clock_and_the_events_both_end_windows)
{
    struct gs_replay r;
    start(&r);
    for (uint64_t s = 0; s < 20; s++)
        step(&r, s, 10 * MS + s * 500 * US, 10 * US);
    gs_replay_finish(&r);
    const struct gs_growth *g = gs_growth_of(&r);
    cr_assert_eq(g->n, 21, "the start, then a sample a step: %u", g->n);
    start_sample(&r);
    for (unsigned k = 0; k < 20; k++) {
        ASSERT_U64(sampled(&r, KEEP, k + 1), (k + 1) * MiB, "keep at sample %u", k + 1);
        ASSERT_U64(sampled(&r, SCRATCH, k + 1), 0, "scratch at sample %u", k + 1);
        ASSERT_U64(g->time_ns[k + 1], 10 * MS + k * 500 * US + (k % 2 ? 20 * US : 0),
                   "sample %u: after step %u's %s", k + 1, k, k % 2 ? "free" : "keep");
    }
    struct gs_suspect s;
    only_keep_suspect(&r, &s);
    ASSERT_U64(s.growth_bytes, 20 * MiB, "nothing at the start to 20 MiB");
    cr_assert_eq((s.rising << 8) | s.intervals, (10 << 8) | 10,
                 "rose at each step of the second half, up to its most: %u of %u",
                 s.rising, s.intervals);
    gs_replay_free(&r);
}

/*
 * A slow run, as before: 20 steps 3 ms apart, 10 us between their events.
 * No window reaches 4 events (a step has 3), so the clock ends each at the
 * next step: 20 samples, each after its step's keep (the free after it is
 * no quieter).
 */
Test(growth, a_slow_run_is_sampled_by_the_clock)
{
    struct gs_replay r;
    start(&r);
    for (uint64_t s = 0; s < 20; s++)
        step(&r, s, 1 * MS + s * 3 * MS, 10 * US);
    gs_replay_finish(&r);
    const struct gs_growth *g = gs_growth_of(&r);
    cr_assert_eq(g->n, 21, "the start, then a sample a step: %u", g->n);
    start_sample(&r);
    for (unsigned k = 0; k < 20; k++) {
        ASSERT_U64(sampled(&r, KEEP, k + 1), (k + 1) * MiB, "keep at sample %u", k + 1);
        ASSERT_U64(g->time_ns[k + 1], 1 * MS + k * 3 * MS, "sample %u at its step's keep", k + 1);
    }
    struct gs_suspect s;
    only_keep_suspect(&r, &s);
    ASSERT_U64(s.growth_bytes, 20 * MiB, "nothing at the start to 20 MiB");
    gs_replay_free(&r);
}

/*
 * The slow run above, then a teardown that frees the 20 MiB kept within
 * 20 us, in one burst. Device memory falls at every one of its events, so
 * its window never has its trough behind it and does not end by events: the
 * whole burst is one window, and the samples before it keep their place in
 * the run. Its sample is its quietest moment as far as a window looks: its
 * state is taken at most 8 times as memory falls, so at the 8th free (12 MiB
 * left). The leak held the most at sample 20 of 23 points (the start, 20
 * steps, the teardown, the end): late enough to be the suspect that a
 * teardown frees.
 */
Test(growth, a_teardown_burst_is_one_window)
{
    struct gs_replay r;
    start(&r);
    for (uint64_t s = 0; s < 20; s++)
        step(&r, s, 1 * MS + s * 3 * MS, 10 * US);
    for (uint64_t s = 0; s < 20; s++)
        ev(&r, GS_REC_FREE, 70 * MS + s * US, 0x100000000ull + s * MiB, 0, 0);
    gs_replay_finish(&r);
    const struct gs_growth *g = gs_growth_of(&r);
    cr_assert_eq(g->n, 22, "the start, a sample a step and one for the teardown: %u", g->n);
    ASSERT_U64(sampled(&r, KEEP, 20), 20 * MiB, "the last step");
    ASSERT_U64(sampled(&r, KEEP, 21), 12 * MiB, "in the teardown, at its 8th free");
    ASSERT_U64(g->time_ns[21], 70 * MS + 7 * US, "the 8th free's time");
    struct gs_suspect s;
    only_keep_suspect(&r, &s);
    ASSERT_U64(s.growth_bytes, 20 * MiB, "nothing at the start to 20 MiB");
    ASSERT_U64(s.live_bytes, 0, "all freed at the end");
    gs_replay_free(&r);
}

/*
 * 20000 steps, 60000 events 10 ns apart (0.6 ms, inside one millisecond of
 * the clock): windows of 4 events fill the 64 samples after 256 events;
 * then every other sample goes, the earlier of each pair kept, and windows
 * of 8 follow, and so on. At the end at most 64 samples remain, the first
 * still the run's start, each a window's worth of events after the
 * one before (give or take the one event by which a window's quietest
 * moment may come after its first), and the sites' arrays did not grow with
 * the run.
 */
Test(growth, a_long_fast_run_keeps_at_most_64_evenly_spread_samples)
{
    struct gs_replay r;
    start(&r);
    const uint64_t gap = 10, steps = 20000;
    for (uint64_t s = 0; s < steps; s++)
        step(&r, s, 1 * MS + 3 * s * gap, gap);
    gs_replay_finish(&r);
    const struct gs_growth *g = gs_growth_of(&r);
    /* the start takes a slot, then windows of 4 events fill the other 63,
     * then of 8, ..., of 512: the start and 31 windows kept, then 26 windows
     * of 1024 and a last one; from the second window kept on, a window's
     * worth of events apart (the start is the run's, before the first) */
    ASSERT_U64(g->every_events, 1024, "windows of 1024 events: %llu",
               (unsigned long long)g->every_events);
    cr_assert_eq(g->n, 32 + 26 + 1, "samples: %u", g->n);
    start_sample(&r);
    for (unsigned k = 2; k < g->n; k++) {
        uint64_t apart = g->time_ns[k] - g->time_ns[k - 1];
        cr_assert(apart >= (1024 - 1) * gap && apart <= (1024 + 1) * gap,
                  "samples %u and %u are %llu ns apart", k - 1, k, (unsigned long long)apart);
        ASSERT_U64(sampled(&r, SCRATCH, k), 0, "scratch at sample %u", k);
    }
    cr_assert_leq(g->nsites, 64, "room for %zu sites", g->nsites);
    struct gs_suspect s;
    only_keep_suspect(&r, &s);
    ASSERT_U64(s.growth_bytes, steps * MiB, "from nothing at the start to the end");
    gs_replay_free(&r);
}

/* Keep the one suspect, with all its growth, 1 MiB a marked step. */
static void keep_grew_a_mib_a_step(const struct gs_replay *r, uint64_t growth)
{
    struct gs_suspect s;
    only_keep_suspect(r, &s);
    ASSERT_U64(s.growth_bytes, growth, "all the steps made, from nothing at the first mark");
    cr_assert_float_eq(s.bytes_per_step, (double)MiB, 1e-6, "1 MiB a step: %f", s.bytes_per_step);
}

static void mark(struct gs_replay *r, uint64_t t, const char *label)
{
    struct gs_revent e = {.type = GS_REC_MARK, .time_ns = t, .tid = 1, .stack_id = 7,
                          .label = label, .label_len = strlen(label)};
    gs_replay_event(r, &e);
}

/*
 * With marks the samples are at the steps, and they halve the same way:
 * 100 steps, each marked "step" before its keep. The marks of steps 1 to 64
 * fill the samples; the 65th halves them to those of steps 1, 3, ..., 63
 * and is taken, and from then on every other mark: 67, 69, ..., 99. Every
 * sample is 2 steps after the one before: step 2i + 1, keep 2i MiB then.
 */
Test(growth, marks_halve_to_every_other_step)
{
    struct gs_replay r;
    start(&r);
    for (uint64_t s = 0; s < 100; s++) {
        mark(&r, 1 * MS + s * MS, "step");
        step(&r, s, 1 * MS + s * MS + 10 * US, 10 * US);
    }
    gs_replay_finish(&r);
    const struct gs_growth *g = gs_growth_of(&r);
    cr_assert_eq(g->by_steps, 1, "by steps");
    ASSERT_U64(g->every, 2, "every other step");
    cr_assert_eq(g->n, 32 + 1 + 17, "samples: %u", g->n);
    for (unsigned k = 0; k < g->n; k++) {
        ASSERT_U64(g->step[k], 2 * k + 1, "sample %u's step", k);
        ASSERT_U64(g->time_ns[k], 1 * MS + 2 * k * MS, "sample %u at its mark", k);
        ASSERT_U64(sampled(&r, KEEP, k), 2 * k * MiB, "keep at sample %u", k);
        ASSERT_U64(sampled(&r, SCRATCH, k), 0, "scratch at sample %u", k);
    }
    keep_grew_a_mib_a_step(&r, 100 * MiB);
    gs_replay_free(&r);
}

/*
 * tests/progs/drv_schedule.c's run, as short as it is: 4 weights of 1 MiB
 * (stack 3), then 3 steps of two 4 MiB scratches, a keep of 1 MiB and the
 * scratches freed. Its 19 events make a handful of windows, and where the
 * clock's millisecond falls among them, which changes from run to run,
 * decides which window it ends. Wherever it falls (the run begun at every
 * point from 20 events before the 10th to just after it, its events 1 us
 * to 400 us apart), keep is the one suspect, with all 3 MiB it made; weights,
 * which rose and stayed, and scratch, never. Before, the clock ended a
 * window wherever it fell, a sample came in the middle of the last step,
 * and its flat point with the end's outnumbered keep's rises: one report
 * in a hundred said no leak.
 */
Test(growth, a_three_step_run_has_its_suspect_wherever_the_clock_falls)
{
    static const uint64_t gaps[] = {1 * US, 3 * US, 7 * US, 20 * US, 60 * US, 150 * US, 400 * US};
    for (size_t i = 0; i < sizeof gaps / sizeof *gaps; i++) {
        uint64_t gap = gaps[i], by = gap / 8 ? gap / 8 : 1;
        for (uint64_t t0 = 10 * MS - 20 * gap; t0 <= 10 * MS + by; t0 += by) {
            struct gs_replay r;
            start(&r);
            uint64_t t = t0;
            for (uint64_t w = 0; w < 4; w++, t += gap)
                ev(&r, GS_REC_ALLOC, t, 0x200000000ull + w * MiB, MiB, 3);
            for (uint64_t s = 0; s < 3; s++, t += gap) {
                ev(&r, GS_REC_ALLOC, t, 0x10000, 4 * MiB, SCRATCH);
                ev(&r, GS_REC_ALLOC, t += gap, 0x20000000, 4 * MiB, SCRATCH);
                ev(&r, GS_REC_ALLOC, t += gap, 0x100000000ull + s * MiB, MiB, KEEP);
                ev(&r, GS_REC_FREE, t += gap, 0x10000, 0, 0);
                ev(&r, GS_REC_FREE, t += gap, 0x20000000, 0, 0);
            }
            gs_replay_finish(&r);
            struct gs_suspect *sus;
            size_t n = gs_growth_suspects(&r, NULL, GS_VIEW_MERGED, &sus);
            cr_assert_eq(n, 1, "%llu ns apart, begun at %llu ns: one suspect, not %zu",
                         (unsigned long long)gap, (unsigned long long)t0, n);
            cr_assert_eq(sus[0].stack_id, KEEP, "%llu ns apart, begun at %llu ns: keep",
                         (unsigned long long)gap, (unsigned long long)t0);
            ASSERT_U64(sus[0].growth_bytes, 3 * MiB, "%llu ns apart, begun at %llu ns: all of it",
                       (unsigned long long)gap, (unsigned long long)t0);
            free(sus);
            gs_replay_free(&r);
        }
    }
}

/*
 * tests/progs/drv_api_steps.c's marks: "epoch" once at the start, the
 * weights, then 5 steps each marked "step" before its keep. At the first
 * "step" the two labels are marked once each and "epoch", the first, is the
 * better (marks.c); at the second "step" becomes it. Its first mark's state
 * was kept, so its samples are at all 5 of its marks: the leak's growth is
 * all 5 MiB, not the 4 MiB since its second mark.
 */
Test(growth, a_step_label_that_wins_at_its_second_mark_keeps_its_first)
{
    struct gs_replay r;
    start(&r);
    mark(&r, 1 * MS, "epoch");
    ev(&r, GS_REC_ALLOC, 1 * MS + 10 * US, 0x200000000ull, 4 * MiB, 3);
    for (uint64_t s = 0; s < 5; s++) {
        mark(&r, 2 * MS + s * MS, "step");
        step(&r, s, 2 * MS + s * MS + 10 * US, 10 * US);
    }
    gs_replay_finish(&r);
    const struct gs_growth *g = gs_growth_of(&r);
    cr_assert_eq(g->by_steps, 1, "by steps");
    cr_assert_eq(g->n, 5, "a sample at each step's mark: %u", g->n);
    for (unsigned k = 0; k < g->n; k++) {
        ASSERT_U64(g->step[k], k + 1, "sample %u's step", k);
        ASSERT_U64(g->time_ns[k], 2 * MS + k * MS, "sample %u at its mark", k);
        ASSERT_U64(sampled(&r, KEEP, k), k * MiB, "keep at sample %u", k);
    }
    keep_grew_a_mib_a_step(&r, 5 * MiB);
    gs_replay_free(&r);
}

/*
 * tests/progs/drv_growth.c "time": weights of 8 MiB (stack 3), the
 * optimizer's 4 MiB in the first step (stack 4), a cache of 1 MiB in each
 * of the first three (stack 5), then in each of 12 steps a 6 MiB
 * activation (scratch), 512 KiB of loss kept (keep, the leak) and the
 * activation freed, each step 3 ms after the one before, its events 3 us
 * apart; then the teardown frees everything. Begun at every microsecond
 * of a millisecond: keep is the one suspect, with all its 6 MiB. (Where the
 * millisecond fell inside a step, between its first allocation and its
 * free, the window ended at the free and the next began there with no fall
 * behind it; the clock then let the teardown's frees take its sample past
 * the last step's trough, and the leak read 5.5 MiB.)
 */
Test(growth, a_run_with_a_teardown_keeps_its_last_steps_trough_wherever_the_clock_falls)
{
    const uint64_t gap = 3 * US;
    for (uint64_t t0 = 1 * MS; t0 < 2 * MS; t0 += US) {
        struct gs_replay r;
        start(&r);
        uint64_t t = t0;
        ev(&r, GS_REC_ALLOC, t, 0x200000000ull, 8 * MiB, 3);
        for (uint64_t s = 0; s < 12; s++) {
            t += gap;
            if (s == 0)
                ev(&r, GS_REC_ALLOC, t += gap, 0x300000000ull, 4 * MiB, 4);
            if (s < 3)
                ev(&r, GS_REC_ALLOC, t += gap, 0x400000000ull + s * MiB, MiB, 5);
            ev(&r, GS_REC_ALLOC, t += gap, 0x10000, 6 * MiB, SCRATCH);
            ev(&r, GS_REC_ALLOC, t += gap, 0x100000000ull + s * MiB, MiB / 2, KEEP);
            ev(&r, GS_REC_FREE, t += gap, 0x10000, 0, 0);
            t += 3 * MS;
        }
        ev(&r, GS_REC_FREE, t += gap, 0x200000000ull, 0, 0);
        ev(&r, GS_REC_FREE, t += gap, 0x300000000ull, 0, 0);
        for (uint64_t s = 0; s < 3; s++)
            ev(&r, GS_REC_FREE, t += gap, 0x400000000ull + s * MiB, 0, 0);
        for (uint64_t s = 0; s < 12; s++)
            ev(&r, GS_REC_FREE, t += gap, 0x100000000ull + s * MiB, 0, 0);
        gs_replay_finish(&r);
        struct gs_suspect *sus;
        size_t n = gs_growth_suspects(&r, NULL, GS_VIEW_MERGED, &sus);
        cr_assert_eq(n, 1, "begun at %llu ns: one suspect, not %zu", (unsigned long long)t0, n);
        cr_assert_eq(sus[0].stack_id, KEEP, "begun at %llu ns: keep", (unsigned long long)t0);
        ASSERT_U64(sus[0].growth_bytes, 6 * MiB, "begun at %llu ns: all 6 MiB",
                   (unsigned long long)t0);
        free(sus);
        gs_replay_free(&r);
    }
}
