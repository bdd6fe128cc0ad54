/*
 * growth.c - every call site's live device bytes over the run, sampled
 * within the replay's one streaming pass (attached to it as a hook,
 * gs_growth_attach: the analyzer's alone), for the leak suspects; and at
 * the same moments the two layers of memory held (blocks in segments, the
 * pools' reserved and used bytes), for fragmentation over time.
 *
 * A run that died mid-training leaves everything unfreed, so what is live
 * at the end says little. What does say something is the shape of each
 * site's live bytes over the run: a leak rises step after step; weights,
 * optimizer state and a cache that fills rise and then stay flat.
 *
 * The pass samples every site's live bytes at the same moments:
 *   - steps: at the marks of the step label (gs_marks_step_label: the one
 *     a training loop marks each iteration), where one step ends and the
 *     next begins; a quiet moment, so activations that live within a step
 *     do not show. For marks made after each step (gpushim_step_end), the
 *     first sample is the run's start, where the first step began with
 *     nothing live, so that its growth counts;
 *   - windows: without marks, at the run's start (nothing live then), then
 *     at the quietest moment of each window (the
 *     least device memory live in it, taken at most GS_GROWTH_QUIET_TAKES
 *     times a window), which in a training loop is between two steps, as a
 *     mark would be. A window ends at the clock's next multiple of its
 *     width (GS_GROWTH_WINDOW_NS at first) or by its events, whichever
 *     comes first: at its GS_GROWTH_WINDOW_EVENTS-th event (at first) or
 *     the first after it that lifts device memory above the window's
 *     quietest moment, so that the window holds its trough. The clock
 *     alone gives a run of a few milliseconds a sample or two, however
 *     many steps it made; events alone would give a slow run's idle
 *     minutes none.
 * At most GS_GROWTH_SAMPLES samples are kept: when they are full, every
 * other one is dropped and samples are taken half as often (steps, or
 * windows twice as wide in time and in events), so memory is fixed per
 * site whatever the run's length, and the samples stay evenly spread over
 * it. Live bytes at the end of the trace are the last point.
 *
 * suspects.c judges the samples once the pass is done.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/growth.h"

static void growth_reset(void *ctx, struct gs_replay *r)
{
    (void)r;
    struct gs_growth *g = ctx;
    free(g->live);
    free(g->first_ns);
    memset(g, 0, sizeof *g);
}

static void growth_free(void *ctx) { growth_reset(ctx, NULL); }

/* room past its common case, out of line: the samples of sites up to idx
 * made. 0, or -1 on no memory. */
static __attribute__((noinline)) int grow(struct gs_growth *g, size_t idx)
{
    size_t cap = g->nsites ? g->nsites : 64;
    while (cap <= idx)
        cap *= 2;
    uint64_t *live = realloc(g->live, cap * GS_GROWTH_SAMPLES * sizeof *live);
    if (!live)
        return -1;
    g->live = live;
    uint64_t *first = realloc(g->first_ns, cap * sizeof *first);
    if (!first)
        return -1;
    g->first_ns = first;
    /* a site made after a sample held nothing then */
    memset(live + g->nsites * GS_GROWTH_SAMPLES, 0,
           (cap - g->nsites) * GS_GROWTH_SAMPLES * sizeof *live);
    for (size_t i = g->nsites; i < cap; i++)
        first[i] = UINT64_MAX;
    g->nsites = cap;
    return 0;
}

/* Room for the samples of site idx: 0, or -1 on no memory. */
static inline int room(struct gs_growth *g, size_t idx)
{
    return idx < g->nsites ? 0 : grow(g, idx);
}

static void growth_on_alloc(void *ctx, struct gs_replay *r, size_t site, uint64_t time_ns)
{
    (void)r;
    struct gs_growth *g = ctx; /* gs_growth_attach's */
    if (room(g, site) != 0)
        return;
    if (time_ns < g->first_ns[site])
        g->first_ns[site] = time_ns;
}

/* Slot from's state copied to slot to. */
static void copy_slot(struct gs_growth *g, unsigned from, unsigned to)
{
    g->time_ns[to] = g->time_ns[from];
    g->step[to] = g->step[from];
    g->layers[to] = g->layers[from];
    for (size_t s = 0; s < g->nsites; s++)
        g->live[s * GS_GROWTH_SAMPLES + to] = g->live[s * GS_GROWTH_SAMPLES + from];
}

/* Every other sample dropped, the earlier of each pair kept: the first
 * stays the run's first, and those kept are a new width apart, as is the
 * next one from the last kept (kept, the later of each pair would leave
 * half a width before the next). */
static void halve(struct gs_growth *g)
{
    unsigned keep = g->n / 2;
    for (unsigned k = 0; k < keep; k++)
        copy_slot(g, 2 * k, k);
    g->n = keep;
    g->every *= 2;
    g->every_events *= 2;
}

/* Writes the state now into sample slot g->n (made free first), without
 * taking it yet. */
static int write_slot(struct gs_replay *r, struct gs_growth *g, uint64_t time_ns,
                      uint64_t step)
{
    if (r->nsites && room(g, r->nsites - 1) != 0)
        return -1;
    if (g->n == GS_GROWTH_SAMPLES)
        halve(g);
    unsigned k = g->n;
    g->time_ns[k] = time_ns;
    g->step[k] = step;
    struct gs_frag f;
    gs_blocks_fragmentation(r, GS_DEVICE_UNKNOWN, &f);
    g->layers[k] = (struct gs_layers){.segment_bytes = f.segment_bytes,
                                      .block_bytes = f.block_bytes,
                                      .largest_free = f.largest_free,
                                      .pool_reserved = r->pool_reserved,
                                      .pool_used = r->pool_used};
    for (size_t s = 0; s < r->nsites; s++)
        g->live[s * GS_GROWTH_SAMPLES + k] = r->sites[s].live_bytes;
    for (size_t s = r->nsites; s < g->nsites; s++)
        g->live[s * GS_GROWTH_SAMPLES + k] = 0;
    return 0;
}

static void sample(struct gs_replay *r, struct gs_growth *g, uint64_t time_ns, uint64_t step)
{
    if (write_slot(r, g, time_ns, step) == 0)
        g->n++;
}

/* A sample of the run's start, when nothing was live (step: the step that
 * began then, or 0). */
static void start_sample(struct gs_replay *r, struct gs_growth *g, uint64_t step)
{
    if (write_slot(r, g, 0, step) != 0)
        return;
    memset(&g->layers[g->n], 0, sizeof g->layers[0]);
    for (size_t s = 0; s < g->nsites; s++)
        g->live[s * GS_GROWTH_SAMPLES + g->n] = 0;
    g->n++;
}

/* Forgets the samples (a new way of taking them begins). */
static void restart(struct gs_growth *g, int by_steps, uint32_t label)
{
    g->n = 0;
    g->by_steps = by_steps;
    g->step_label = label;
    g->steps = 0;
    g->every = by_steps ? 1 : GS_GROWTH_WINDOW_NS;
    g->every_events = by_steps ? 0 : GS_GROWTH_WINDOW_EVENTS;
    g->events = 0;
    g->next_ns = 0;
    g->shadow = 0;
    g->due = 0;
    g->fell = 0;
    g->quiet = 0;
}

/* Windows: the window's quietest moment so far becomes its sample, and the
 * next window begins. */
static void take_quiet(struct gs_growth *g)
{
    if (g->quiet) {
        g->n++;
        g->quiet = 0;
    }
    g->events = 0;
    g->due = 0;
    g->fell = 0;
}

static void growth_before_event(void *ctx, struct gs_replay *r, uint64_t time_ns)
{
    struct gs_growth *g = ctx; /* gs_growth_attach's */
    if (g->by_steps)
        return;
    if (!g->every) {
        restart(g, 0, 0);
        /* the first sample is the run's start, with nothing live, so that a
         * suspect's growth is all it made; not after a checkpoint, whose
         * state was no start */
        if (!r->checkpoint.present)
            start_sample(r, g, 0);
    }
    g->before = r->live_bytes;
    if (time_ns < g->next_ns)
        return;
    /* the clock ends the window: here, where memory fell in it (its trough
     * is behind it), else at its trough (growth_after_event) */
    if (g->fell)
        take_quiet(g);
    else
        g->due = g->quiet;
    g->next_ns = (time_ns / g->every + 1) * g->every;
}

/* The window's quietest moment so far, in slot n: the least device memory
 * live in it (between two steps of a training loop, when a step's tensors
 * are gone), or its first moment; a few takes a window. */
static void note_quiet(struct gs_replay *r, struct gs_growth *g, uint64_t time_ns)
{
    if ((!g->quiet || (r->live_bytes < g->quiet_bytes && g->quiet_takes < GS_GROWTH_QUIET_TAKES)) &&
        write_slot(r, g, time_ns, 0) == 0) {
        g->quiet_takes = g->quiet ? g->quiet_takes + 1 : 1;
        g->quiet = 1;
        g->quiet_bytes = r->live_bytes;
    }
}

static void growth_after_event(void *ctx, struct gs_replay *r, uint64_t time_ns)
{
    struct gs_growth *g = ctx; /* gs_growth_attach's */
    if (g->by_steps || !g->every)
        return;
    note_quiet(r, g, time_ns);
    g->fell |= r->live_bytes < g->before;
    /* a window ends by the clock (above), or by its events, so that a run
     * too short or too fast for the clock is sampled as often as a long
     * one: at its every_events-th event, or at the first after it that
     * lifts device memory above the window's quietest moment (its trough
     * behind it: a teardown that frees everything in a burst is one window,
     * not many). A window the clock ended before memory fell in it (all its
     * events so far a step's tensors made) ends at the first event after a
     * fall that lifts memory above its quietest moment: the clock never
     * cuts a step where its tensors are live (it did: a sample in the
     * middle of a short run's last step) */
    g->events++;
    if (!g->quiet || r->live_bytes <= g->quiet_bytes)
        return;
    if (g->due && g->fell) {
        /* as where the clock ends it above: the event that ends it is the
         * next one's first */
        take_quiet(g);
        note_quiet(r, g, time_ns);
        g->events = 1;
        /* and where that event was a fall (a step's last free, above the
         * trough before its first allocation), the new window begins at a
         * trough: the clock ends it where it next falls due, not at its
         * trough after, which a teardown's frees would move past the last
         * step's (drv_growth "time": its leak read 5.5 MiB of 6 one run in
         * 400) */
        g->fell = r->live_bytes < g->before;
    } else if (g->events >= g->every_events) {
        take_quiet(g);
    }
}

static void growth_finish(void *ctx, struct gs_replay *r)
{
    (void)r;
    struct gs_growth *g = ctx; /* gs_growth_attach's */
    if (!g->by_steps)
        take_quiet(g);
}

static void growth_on_mark(void *ctx, struct gs_replay *r, uint32_t label, uint64_t time_ns)
{
    struct gs_growth *g = ctx; /* gs_growth_attach's */
    const struct gs_marks *m = &r->marks;
    if (label == GS_MARK_OTHER || label >= m->nlabels)
        return;
    const struct gs_mark_label *l = &m->labels[label];
    if (!g->by_steps || (label != g->step_label && gs_marks_better_steps(m, label, g->step_label))) {
        /* a label better at its second mark than one marked once before it
         * (an epoch's mark, then a step's): its first mark's state was kept */
        int shadow = g->by_steps && g->shadow && g->shadow_label == label && l->marks == 2;
        unsigned from = g->n;
        restart(g, 1, label); /* the first marks, or a label now better (marks.h) */
        if (shadow) {
            copy_slot(g, from, 0);
            g->n = 1;
            g->steps = 1;
        } else if (l->marks == 1 && l->steps == 1 && l->first_start_ns == 0) {
            /* marks made after each step: the first step began with the
             * run, when nothing was live */
            start_sample(r, g, 1);
        }
    }
    if (label != g->step_label) {
        /* another label's first mark: kept in the next free slot until a
         * sample takes it */
        if (l->marks == 1 && write_slot(r, g, time_ns, l->steps + 1) == 0) {
            g->shadow = 1;
            g->shadow_label = label;
        }
        return;
    }
    g->shadow = 0;
    if (g->steps++ % g->every == 0)
        sample(r, g, time_ns, l->steps + 1); /* the step that begins here */
}

static const struct gs_replay_hook growth_hook = {
    .before_event = growth_before_event,
    .after_event = growth_after_event,
    .on_alloc = growth_on_alloc,
    .on_mark = growth_on_mark,
    .finish = growth_finish,
    .reset = growth_reset,
    .free = growth_free,
};

int gs_growth_attach(struct gs_replay *r)
{
    return gs_replay_attach(r, &growth_hook, sizeof(struct gs_growth)) ? 0 : -1;
}

const struct gs_growth *gs_growth_of(const struct gs_replay *r)
{
    static const struct gs_growth none;
    const struct gs_growth *g = gs_replay_hook_ctx(r, &growth_hook);
    return g ? g : &none;
}
