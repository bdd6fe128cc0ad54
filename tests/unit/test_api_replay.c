/*
 * test_api_replay.c - what the public API's records do in the replay:
 * analyzer/model/marks.c (steps between marks of a label, overlapping labels, the
 * peak of a step that happens between marks of another label, a free undone
 * inside a step, the rings of recent marks and steps past their size, the
 * limit on labels, labels cleaned) and analyzer/model/blocks.c (block sites at
 * the block peak and at the end, unknown frees, a block over a live
 * address; fragmentation with overlapping blocks, a block past its
 * segment's end, blocks in no segment, a segment freed under its blocks and
 * one made again under them, per device; mapped ranges of device memory
 * that touch as one segment, split by an unmap and joined again, mapped
 * host memory none; the device peak's figures taken
 * at the first change after it, at the end, and never for a peak before any
 * block), all with figures worked out by hand. Also analyzer/util/ordmap.c
 * against a sorted array: random puts, deletes, floors and ceilings.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/ordmap.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"

#define ASSERT_U64(got, want, ...) cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

/* ---- events ---- */

static void mark(struct gs_replay *r, uint64_t t, const char *label)
{
    struct gs_revent e = {.type = GS_REC_MARK, .time_ns = t, .tid = 1, .stack_id = 7,
                          .label = label, .label_len = label ? strlen(label) : 0};
    gs_replay_event(r, &e);
}

static void seg(struct gs_replay *r, uint64_t t, uint64_t addr, uint64_t size, int32_t dev)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = t, .tid = 1, .device = dev,
                          .addr = addr, .size = size, .stack_id = 1, .kind = GS_KIND_DEVICE,
                          .space = GS_SPACE_ADDRESS};
    gs_replay_event(r, &e);
}

static void handle(struct gs_replay *r, uint64_t t, uint64_t h, uint64_t size)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = t, .tid = 1, .device = 0, .addr = h,
                          .size = size, .stack_id = 2, .kind = GS_KIND_DEVICE,
                          .space = GS_SPACE_HANDLE};
    gs_replay_event(r, &e);
}

/* cuMemMap of handle h (mem: its kind) at addr. */
static void map(struct gs_replay *r, uint64_t t, uint64_t addr, uint64_t size, uint64_t h)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = t, .tid = 1, .device = 0,
                          .addr = addr, .size = size, .stack_id = 3, .kind = GS_KIND_MAPPED,
                          .space = GS_SPACE_MAPPING, .parent = h};
    gs_replay_event(r, &e);
}

static void unmap(struct gs_replay *r, uint64_t t, uint64_t addr, uint64_t size)
{
    struct gs_revent e = {.type = GS_REC_FREE, .time_ns = t, .tid = 1, .addr = addr,
                          .size = size, .space = GS_SPACE_MAPPING};
    gs_replay_event(r, &e);
}

static void dfree(struct gs_replay *r, uint64_t t, uint64_t addr)
{
    struct gs_revent e = {.type = GS_REC_FREE, .time_ns = t, .tid = 1, .addr = addr};
    gs_replay_event(r, &e);
}

static void dfree_failed(struct gs_replay *r, uint64_t t, uint64_t addr)
{
    struct gs_revent e = {.type = GS_REC_FREE_FAILED, .time_ns = t, .tid = 1, .addr = addr,
                          .result = 1};
    gs_replay_event(r, &e);
}

static void failed(struct gs_replay *r, uint64_t t, int32_t dev, uint64_t size)
{
    struct gs_revent e = {.type = GS_REC_ALLOC_FAILED, .time_ns = t, .tid = 1, .device = dev,
                          .size = size, .result = 2, .free_bytes = 0, .total_bytes = 1 << 20};
    gs_replay_event(r, &e);
}

static void balloc(struct gs_replay *r, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct gs_revent e = {.type = GS_REC_BLOCK_ALLOC, .time_ns = t, .tid = 3, .addr = addr,
                          .size = size, .stack_id = stack, .device = GS_DEVICE_UNKNOWN};
    gs_replay_event(r, &e);
}

static void bfree(struct gs_replay *r, uint64_t t, uint64_t addr)
{
    struct gs_revent e = {.type = GS_REC_BLOCK_FREE, .time_ns = t, .tid = 3, .addr = addr,
                          .device = GS_DEVICE_UNKNOWN};
    gs_replay_event(r, &e);
}

static const struct gs_mark_label *label_named(const struct gs_replay *r, const char *name)
{
    for (size_t i = 0; i < r->marks.nlabels; i++)
        if (strcmp(r->marks.labels[i].label, name) == 0)
            return &r->marks.labels[i];
    cr_assert_fail("no label %s", name);
    return NULL;
}

static const struct gs_step *step(const struct gs_replay *r, uint64_t k)
{
    cr_assert_lt(k, r->marks.nsteps);
    return &r->marks.steps[k % GS_STEPS_KEPT];
}

static void same_step(const struct gs_step *s, uint64_t start, uint64_t end, uint64_t peak,
                      uint64_t allocated, uint64_t freed, int64_t growth, const char *what)
{
    ASSERT_U64(s->start_ns, start, "%s: start", what);
    ASSERT_U64(s->end_ns, end, "%s: end", what);
    ASSERT_U64(s->peak_bytes, peak, "%s: peak %llu", what, (unsigned long long)s->peak_bytes);
    ASSERT_U64(s->allocated_bytes, allocated, "%s: allocated", what);
    ASSERT_U64(s->freed_bytes, freed, "%s: freed", what);
    cr_assert_eq(s->growth_bytes, growth, "%s: growth %lld", what, (long long)s->growth_bytes);
}

/* ---- marks ---- */

/*
 * t=1  mark A               live   0
 * t=2  alloc X 100          live 100
 * t=3  mark B               live 100
 * t=4  alloc Y 50           live 150   (between B's mark and the next: both steps see it)
 * t=5  free Y               live 100
 * t=6  alloc Z 30           live 130
 * t=7  mark A   A: 1..7  peak 150, allocated 180, freed 50, growth +130
 * t=8  free X               live  30
 * t=9  mark B   B: 3..9  peak 150, allocated  80, freed 150, growth -70
 * t=10 mark A   A: 7..10 peak 130, allocated   0, freed 100, growth -100
 */
Test(marks, overlapping_labels_and_peaks_between_marks)
{
    struct gs_replay r;
    gs_replay_init(&r);
    mark(&r, 1, "A");
    seg(&r, 2, 0x1000, 100, 0);
    mark(&r, 3, "B");
    seg(&r, 4, 0x2000, 50, 0);
    dfree(&r, 5, 0x2000);
    seg(&r, 6, 0x3000, 30, 0);
    mark(&r, 7, "A");
    dfree(&r, 8, 0x1000);
    mark(&r, 9, "B");
    mark(&r, 10, "A");
    ASSERT_U64(r.marks.marks, 5, "marks");
    ASSERT_U64(r.marks.nsteps, 3, "steps");
    same_step(step(&r, 0), 1, 7, 150, 180, 50, 130, "A's first");
    same_step(step(&r, 1), 3, 9, 150, 80, 150, -70, "B's");
    same_step(step(&r, 2), 7, 10, 130, 0, 100, -100, "A's second");
    ASSERT_U64(step(&r, 0)->label, 0, "A is label 0");
    ASSERT_U64(step(&r, 1)->label, 1, "B is label 1");
    const struct gs_mark_label *a = label_named(&r, "A"), *b = label_named(&r, "B");
    ASSERT_U64(a->marks, 3, "A marks");
    ASSERT_U64(a->steps, 2, "A steps");
    ASSERT_U64(a->max_peak, 150, "A's largest peak");
    ASSERT_U64(a->max_peak_end_ns, 7, "in the step ending at 7");
    ASSERT_U64(a->allocated, 180, "A allocated");
    ASSERT_U64(a->freed, 150, "A freed");
    cr_assert_eq(a->growth, 30, "A growth");
    cr_assert_eq(a->max_growth, 130, "A's largest growth");
    ASSERT_U64(a->growing, 1, "A steps that grew");
    ASSERT_U64(a->first_ns, 1, "A first");
    ASSERT_U64(a->last_ns, 10, "A last");
    ASSERT_U64(a->stack_id, 7, "A's stack");
    cr_assert_eq(b->max_growth, -70, "B's largest growth is a shrink");
    ASSERT_U64(b->growing, 0, "B did not grow");
    uint64_t want[5] = {0, 100, 130, 30, 30};
    for (int i = 0; i < 5; i++)
        ASSERT_U64(r.marks.recent[i].device_bytes, want[i], "mark %d's device bytes", i);
    gs_replay_free(&r);
}

Test(marks, a_free_undone_inside_a_step)
{
    /* the restored allocation counts as made live again: growth = in - out */
    struct gs_replay r;
    gs_replay_init(&r);
    seg(&r, 1, 0x1000, 10, 0);
    mark(&r, 2, "s");
    dfree(&r, 3, 0x1000);
    dfree_failed(&r, 4, 0x1000);
    mark(&r, 5, "s");
    same_step(step(&r, 0), 2, 5, 10, 10, 10, 0, "the step");
    gs_replay_free(&r);
}

Test(marks, rings_keep_the_last)
{
    struct gs_replay r;
    gs_replay_init(&r);
    const uint64_t n = GS_MARKS_KEPT + 500;
    for (uint64_t i = 0; i < n; i++) {
        seg(&r, 2 * i + 1, 0x1000 + i * 0x100, 1, 0); /* one more byte before each mark */
        mark(&r, 2 * i + 2, "step");
    }
    ASSERT_U64(r.marks.marks, n, "marks counted");
    ASSERT_U64(r.marks.nsteps, n - 1, "steps counted");
    for (uint64_t i = n - GS_MARKS_KEPT; i < n; i++) {
        const struct gs_mark_item *it = &r.marks.recent[i % GS_MARKS_KEPT];
        ASSERT_U64(it->time_ns, 2 * i + 2, "mark %llu kept", (unsigned long long)i);
        ASSERT_U64(it->device_bytes, i + 1, "its bytes");
    }
    for (uint64_t k = n - 1 - GS_STEPS_KEPT; k < n - 1; k++)
        same_step(step(&r, k), 2 * k + 2, 2 * k + 4, k + 2, 1, 0, 1, "a kept step");
    const struct gs_mark_label *l = label_named(&r, "step");
    ASSERT_U64(l->growing, n - 1, "every step grew");
    ASSERT_U64(l->allocated, n - 1, "one byte each");
    ASSERT_U64(r.marks.nlabels, 1, "one label");
    gs_replay_free(&r);
}

Test(marks, labels_past_the_limit_are_counted_not_followed)
{
    struct gs_replay r;
    gs_replay_init(&r);
    char name[32];
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < GS_MARK_LABELS + 44; i++) {
            snprintf(name, sizeof name, "step %d", i);
            mark(&r, (uint64_t)(round * 1000 + i + 1), name);
        }
    ASSERT_U64(r.marks.nlabels, GS_MARK_LABELS, "labels followed");
    ASSERT_U64(r.marks.labels_dropped, 88, "marks of the others");
    ASSERT_U64(r.marks.nsteps, GS_MARK_LABELS, "one step for each label followed");
    ASSERT_U64(r.marks.marks, 2 * (GS_MARK_LABELS + 44), "every mark counted");
    const struct gs_mark_item *last = &r.marks.recent[(r.marks.marks - 1) % GS_MARKS_KEPT];
    ASSERT_U64(last->label, GS_MARK_OTHER, "the last mark's label is not followed");
    gs_replay_free(&r);
}

Test(marks, labels_are_cleaned_and_cut)
{
    struct gs_replay r;
    gs_replay_init(&r);
    char longest[400];
    memset(longest, 'x', sizeof longest - 1);
    longest[sizeof longest - 1] = 0;
    struct gs_revent e = {.type = GS_REC_MARK, .time_ns = 1, .label = "a\nb\x7f\x01" "c",
                          .label_len = 6};
    gs_replay_event(&r, &e);
    mark(&r, 2, longest);
    mark(&r, 3, "");
    mark(&r, 4, NULL);
    e.time_ns = 5;
    e.label = "a?b??c"; /* the same once cleaned: the same label */
    gs_replay_event(&r, &e);
    ASSERT_U64(r.marks.nlabels, 3, "labels");
    cr_assert_str_eq(r.marks.labels[0].label, "a?b??c");
    ASSERT_U64(strlen(r.marks.labels[1].label), GS_MAX_LABEL, "cut to the limit");
    cr_assert_str_eq(r.marks.labels[2].label, "", "empty, and NULL is empty");
    ASSERT_U64(r.marks.labels[2].marks, 2, "both");
    ASSERT_U64(r.marks.labels[0].steps, 1, "a step from 1 to 5");
    gs_replay_free(&r);
}

static void step_end(struct gs_replay *r, uint64_t t, const char *label)
{
    struct gs_revent e = {.type = GS_REC_MARK, .time_ns = t, .tid = 1, .stack_id = 7,
                          .label = label, .label_len = strlen(label), .flags = GS_MARK_STEP_END};
    gs_replay_event(r, &e);
}

/* A thread's outermost range: pushed (label) or popped (NULL). */
static void top_range(struct gs_replay *r, uint64_t t, uint32_t tid, const char *label)
{
    struct gs_revent e = {.type = GS_REC_RANGE, .time_ns = t, .tid = tid,
                          .op = label ? GS_RANGE_PUSH : GS_RANGE_POP, .flags = GS_RANGE_TOP,
                          .label = label, .label_len = label ? strlen(label) : 0};
    gs_replay_event(r, &e);
}

/*
 * Marks before each step: 3 marks are 3 steps, the last to the run's end.
 * t=1 seg 100 (before the first step: not in one); t=2 mark; t=3 seg 10;
 * t=4 mark; t=5 seg 20; t=6 mark; t=7 seg 30; t=8 free of the 100; the
 * end at t=8.
 */
Test(marks, marks_before_each_step_the_last_to_the_end_of_the_run)
{
    struct gs_replay r;
    gs_replay_init(&r);
    seg(&r, 1, 0x1000, 100, 0);
    mark(&r, 2, "s");
    seg(&r, 3, 0x2000, 10, 0);
    mark(&r, 4, "s");
    seg(&r, 5, 0x3000, 20, 0);
    mark(&r, 6, "s");
    seg(&r, 7, 0x4000, 30, 0);
    dfree(&r, 8, 0x1000);
    ASSERT_U64(r.marks.nsteps, 2, "two ended before the end");
    gs_replay_finish(&r);
    ASSERT_U64(r.marks.nsteps, 3, "three marks, three steps");
    same_step(step(&r, 0), 2, 4, 110, 10, 0, 10, "the first");
    same_step(step(&r, 1), 4, 6, 130, 20, 0, 20, "the second");
    same_step(step(&r, 2), 6, 8, 160, 30, 100, -70, "the last, ended by the run's end");
    cr_assert(step(&r, 2)->cut && !step(&r, 1)->cut, "the last cut by the end of the run");
    const struct gs_mark_label *l = label_named(&r, "s");
    cr_assert(l->cut && l->open == GS_STEP_NONE, "cut by the end");
    ASSERT_U64(l->steps, 3, "its steps");
    /* the cut step's growth (-70: the end of no step) is in no growth figure */
    cr_assert_eq(l->growth, 30, "growth of the whole steps");
    cr_assert_eq(l->max_growth, 20, "the most of them");
    ASSERT_U64(l->growing, 2, "both grew");
    ASSERT_U64(l->allocated, 60, "but all three allocated");
    ASSERT_U64(l->first_start_ns, 2, "the first began at its mark");
    ASSERT_U64(l->first_end_ns, 4, "and ended at the next");
    gs_replay_free(&r);
}

/*
 * Step ends after each step: 3 ends are 3 steps, the first from the start
 * of the run, with what it made before its end; what follows the last end
 * is no step. t=1 seg 100; t=2 end; t=3 seg 10; t=4 end; t=5 seg 20; t=6
 * end; t=7 seg 30 (after the last: no step's).
 */
Test(marks, step_ends_after_each_step_the_first_from_the_start)
{
    struct gs_replay r;
    gs_replay_init(&r);
    seg(&r, 1, 0x1000, 100, 0);
    step_end(&r, 2, "s");
    seg(&r, 3, 0x2000, 10, 0);
    step_end(&r, 4, "s");
    seg(&r, 5, 0x3000, 20, 0);
    step_end(&r, 6, "s");
    seg(&r, 7, 0x4000, 30, 0);
    gs_replay_finish(&r);
    ASSERT_U64(r.marks.nsteps, 3, "three ends, three steps");
    same_step(step(&r, 0), 0, 2, 100, 100, 0, 100, "the first, from the start");
    same_step(step(&r, 1), 2, 4, 110, 10, 0, 10, "the second");
    same_step(step(&r, 2), 4, 6, 130, 20, 0, 20, "the third");
    const struct gs_mark_label *l = label_named(&r, "s");
    cr_assert(!l->cut && l->open == GS_STEP_NONE, "what followed the last end: no step");
    ASSERT_U64(l->first_start_ns, 0, "the first from the start");
    ASSERT_U64(l->first_end_ns, 2, "to its end");
    gs_replay_free(&r);
}

/* A mark, then ends (gpushim.torch.mark_steps): the first step from the
 * mark; a mark after an end drops the step the end opened. */
Test(marks, a_mark_then_step_ends)
{
    struct gs_replay r;
    gs_replay_init(&r);
    seg(&r, 1, 0x1000, 100, 0); /* the model: before the first step */
    mark(&r, 2, "s");
    seg(&r, 3, 0x2000, 10, 0);
    step_end(&r, 4, "s");
    seg(&r, 5, 0x3000, 20, 0);
    step_end(&r, 6, "s");
    seg(&r, 7, 0x4000, 5, 0); /* between an end and a mark: no step's */
    mark(&r, 8, "s");
    seg(&r, 9, 0x5000, 1, 0);
    step_end(&r, 10, "s");
    gs_replay_finish(&r);
    ASSERT_U64(r.marks.nsteps, 3, "three ends, three steps");
    same_step(step(&r, 0), 2, 4, 110, 10, 0, 10, "the first, from the mark");
    same_step(step(&r, 1), 4, 6, 130, 20, 0, 20, "the second");
    same_step(step(&r, 2), 8, 10, 136, 1, 0, 1, "the third, from the mark");
    gs_replay_free(&r);
}

/*
 * Outermost ranges: a step from a range's push to its pop on its thread; a
 * pop on another thread ends nothing; between two ranges, no step; one
 * open at the end is ended by it. t=1 push (tid 5); t=2 seg 10; t=3 pop on
 * tid 6 (nothing); t=4 pop (tid 5); t=5 seg 20 (between: no step's); t=6
 * push; t=7 seg 30; t=8 the end.
 */
Test(marks, outermost_ranges_are_steps_from_push_to_pop)
{
    struct gs_replay r;
    gs_replay_init(&r);
    top_range(&r, 1, 5, "iter");
    seg(&r, 2, 0x1000, 10, 0);
    top_range(&r, 3, 6, NULL);
    top_range(&r, 4, 5, NULL);
    seg(&r, 5, 0x2000, 20, 0);
    top_range(&r, 6, 5, "iter");
    seg(&r, 7, 0x3000, 30, 0);
    dfree(&r, 8, 0x1000);
    gs_replay_finish(&r);
    ASSERT_U64(r.marks.nsteps, 2, "two ranges, two steps");
    same_step(step(&r, 0), 1, 4, 10, 10, 0, 10, "the first, to its pop");
    same_step(step(&r, 1), 6, 8, 60, 30, 10, 20, "the second, to the end");
    const struct gs_mark_label *l = label_named(&r, "iter");
    ASSERT_U64(l->marks, 2, "its pushes are its marks");
    ASSERT_U64(l->nvtx_marks, 2, "all of them ranges");
    gs_replay_free(&r);
}

/* A started range (nvtxRangeStart) that opens on a thread with nothing
 * pushed: a step to its end, of its id, on any thread. */
Test(marks, a_started_range_is_a_step_to_its_end)
{
    struct gs_replay r;
    gs_replay_init(&r);
    struct gs_revent start = {.type = GS_REC_RANGE, .time_ns = 1, .tid = 5, .op = GS_RANGE_START,
                              .addr = 9, .flags = GS_RANGE_TOP, .label = "load",
                              .label_len = 4};
    gs_replay_event(&r, &start);
    seg(&r, 2, 0x1000, 10, 0);
    struct gs_revent other = {.type = GS_REC_RANGE, .time_ns = 3, .tid = 6, .op = GS_RANGE_END,
                              .addr = 8};
    gs_replay_event(&r, &other);
    struct gs_revent end = {.type = GS_REC_RANGE, .time_ns = 4, .tid = 6, .op = GS_RANGE_END,
                            .addr = 9};
    gs_replay_event(&r, &end);
    seg(&r, 5, 0x2000, 20, 0);
    gs_replay_finish(&r);
    ASSERT_U64(r.marks.nsteps, 1, "one step");
    same_step(step(&r, 0), 1, 4, 10, 10, 0, 10, "to its end, on another thread");
    gs_replay_free(&r);
}

Test(marks, per_operator_ranges_of_emit_nvtx_make_no_steps)
{
    struct gs_replay r;
    gs_replay_init(&r);
    top_range(&r, 1, 5, "aten::addmm, seq = 12, op_id = 40, sizes = [[2, 4]]");
    top_range(&r, 2, 5, NULL);
    top_range(&r, 3, 5, "autograd::engine::evaluate_function: AddmmBackward0, op_id = 41");
    top_range(&r, 4, 5, NULL);
    top_range(&r, 5, 5, "aten::mul, seq = 3"); /* an older PyTorch's, without op_id */
    top_range(&r, 6, 5, NULL);
    ASSERT_U64(r.marks.marks, 0, "no marks");
    cr_assert(gs_marks_range_makes_steps("XlaModule:#hlo_module=jit_step,program_id=4#", 44),
              "XLA's module range, one a jitted step");
    cr_assert(gs_marks_range_makes_steps("forward", 7));
    gs_replay_free(&r);
}

/* The step label: of the labels the program marked itself, the one marked
 * most; else of the ranges'. */
Test(marks, the_step_label_prefers_the_programs_own_marks)
{
    struct gs_replay r;
    gs_replay_init(&r);
    ASSERT_U64(gs_marks_step_label(&r.marks), GS_MARK_OTHER, "none yet");
    for (uint64_t t = 1; t <= 10; t += 2) {
        top_range(&r, t, 5, "DeepSpeedEngine.forward");
        top_range(&r, t + 1, 5, NULL);
    }
    ASSERT_U64(gs_marks_step_label(&r.marks), 0, "ranges alone");
    step_end(&r, 11, "step");
    step_end(&r, 12, "step");
    mark(&r, 13, "epoch");
    mark(&r, 14, "epoch");
    mark(&r, 15, "epoch");
    ASSERT_U64(gs_marks_step_label(&r.marks), 2, "the most marked of the program's own");
    cr_assert(gs_marks_better_steps(&r.marks, 1, 0), "step ends over ranges");
    cr_assert(!gs_marks_better_steps(&r.marks, 1, 2), "fewer");
    cr_assert(!gs_marks_better_steps(&r.marks, 2, 2), "not better than itself");
    gs_replay_free(&r);
}

Test(marks, none_costs_nothing)
{
    struct gs_replay r;
    gs_replay_init(&r);
    seg(&r, 1, 0x1000, 10, 0);
    cr_assert_null(r.marks.labels, "no arrays without a mark");
    ASSERT_U64(r.marks.bytes_in, 10, "but the totals run");
    gs_replay_free(&r);
}

/* ---- blocks ---- */

static uint64_t site_peak(const struct gs_replay *r, uint32_t stack, uint64_t *count)
{
    const struct gs_site *s = gs_blocks_site((struct gs_blocks *)&r->blocks, stack, 0);
    cr_assert_not_null(s, "block site %u", stack);
    return gs_block_site_peak_bytes(&r->blocks, s, count);
}

Test(blocks, sites_peak_leaks_and_unknown_frees)
{
    struct gs_replay r;
    gs_replay_init(&r);
    balloc(&r, 1, 0x100, 100, 1);
    balloc(&r, 2, 0x200, 50, 2); /* the block peak: 150 */
    bfree(&r, 3, 0x100);
    balloc(&r, 4, 0x300, 20, 2);
    bfree(&r, 5, 0xdead);        /* never given */
    balloc(&r, 6, 0x300, 5, 2);  /* over a live block: its free was lost */
    const struct gs_blocks *b = &r.blocks;
    ASSERT_U64(b->allocs, 4, "given");
    ASSERT_U64(b->frees, 1, "taken back");
    ASSERT_U64(b->frees_unknown, 1, "unknown");
    ASSERT_U64(b->peak_bytes, 150, "peak");
    ASSERT_U64(b->peak_time_ns, 2, "peak time");
    ASSERT_U64(b->live_bytes, 55, "live");
    ASSERT_U64(b->live_count, 2, "live count");
    uint64_t n;
    ASSERT_U64(site_peak(&r, 1, &n), 100, "stack 1 at the peak");
    ASSERT_U64(n, 1, "count");
    ASSERT_U64(site_peak(&r, 2, &n), 50, "stack 2 at the peak");
    ASSERT_U64(n, 1, "count");
    const struct gs_site *s2 = gs_blocks_site(&r.blocks, 2, 0);
    ASSERT_U64(s2->live_bytes, 55, "stack 2 at the end");
    ASSERT_U64(s2->live_count, 2, "count");
    ASSERT_U64(s2->allocs, 3, "stack 2 gave 3");
    ASSERT_U64(s2->alloc_bytes, 75, "bytes");
    cr_assert(b->seen, "seen");
    gs_replay_free(&r);
}

static void frag(struct gs_replay *r, int32_t dev, struct gs_frag *f)
{
    gs_blocks_fragmentation(r, dev, f);
    cr_assert(f->present, "present");
}

static void same_frag(const struct gs_frag *f, uint64_t segments, uint64_t bytes, uint64_t blocks,
                      uint64_t largest, uint64_t outside, const char *what)
{
    ASSERT_U64(f->segments, segments, "%s: segments", what);
    ASSERT_U64(f->segment_bytes, bytes, "%s: segment bytes %llu", what,
               (unsigned long long)f->segment_bytes);
    ASSERT_U64(f->block_bytes, blocks, "%s: block bytes %llu", what,
               (unsigned long long)f->block_bytes);
    ASSERT_U64(f->largest_free, largest, "%s: largest free %llu", what,
               (unsigned long long)f->largest_free);
    ASSERT_U64(f->outside_bytes, outside, "%s: outside %llu", what,
               (unsigned long long)f->outside_bytes);
}

#define A 0x10000ull
#define B 0x20000ull

/*
 * A (device 0, 1000 bytes): blocks [100,300), [250,350), [300,400) (they
 *   overlap: 100..400 covered, 300 bytes), [900,1100) (past A's end: 100 of
 *   it in A). Covered 400, gaps [0,100) and [400,900): the largest 500.
 * B (device 1, 500 bytes): one block over all of it.
 * C (device 0, 100 bytes): no block; H: device memory by handle, no segment.
 * A block of 7 bytes at 0x50000, in no segment.
 */
static void layout(struct gs_replay *r)
{
    seg(r, 1, A, 1000, 0);
    seg(r, 2, B, 500, 1);
    seg(r, 3, 0x30000, 100, 0);
    handle(r, 4, 0x11, 4096);
    balloc(r, 5, A + 100, 200, 1);
    balloc(r, 6, A + 250, 100, 1);
    balloc(r, 7, A + 300, 100, 1);
    balloc(r, 8, A + 900, 200, 1);
    balloc(r, 9, B, 500, 2);
    balloc(r, 10, 0x50000, 7, 3);
}

Test(blocks, fragmentation_inside_segments)
{
    struct gs_replay r;
    gs_replay_init(&r);
    layout(&r);
    struct gs_frag f;
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 2, 1500, 900, 500, 7, "all devices");
    frag(&r, 0, &f);
    same_frag(&f, 1, 1000, 400, 500, 7, "device 0");
    frag(&r, 1, &f);
    same_frag(&f, 1, 500, 500, 0, 7, "device 1");
    frag(&r, 5, &f);
    same_frag(&f, 0, 0, 0, 0, 7, "a device without segments");
    /* A freed under its blocks: they lie in no segment now */
    dfree(&r, 11, A);
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 1, 500, 500, 0, 607, "A freed");
    /* a larger segment at A's address holds them again: gaps 100, 500, 900 */
    seg(&r, 12, A, 2000, 0);
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 2, 2500, 1000, 900, 7, "A made again, larger");
    /* the overlapping block in the middle goes: [300,400) still covers 300..400 */
    bfree(&r, 13, A + 250);
    frag(&r, 0, &f);
    same_frag(&f, 1, 2000, 500, 900, 7, "one of the overlapping blocks back");
    bfree(&r, 14, A + 300);
    frag(&r, 0, &f);
    same_frag(&f, 1, 2000, 400, 900, 7, "both back: a gap [300,900)");
    /* the largest gap shrinks: a block in it */
    balloc(&r, 15, A + 1500, 10, 1);
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 2, 2500, 910, 600, 7, "gaps 100, 600, 400, 490");
    /* every block back: nothing holds a block */
    bfree(&r, 16, A + 100);
    bfree(&r, 17, A + 900);
    bfree(&r, 18, A + 1500);
    bfree(&r, 19, B);
    bfree(&r, 20, 0x50000);
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 0, 0, 0, 0, 0, "no blocks");
    gs_replay_free(&r);
}

Test(blocks, fragmentation_at_failures_by_device)
{
    struct gs_replay r;
    gs_replay_init(&r);
    layout(&r);
    failed(&r, 11, 0, 600);
    failed(&r, 12, 1, 1);
    failed(&r, 13, GS_DEVICE_UNKNOWN, 1);
    const struct gs_frag *f = r.blocks.at_failure;
    cr_assert(f[0].present && f[1].present && f[2].present, "present");
    same_frag(&f[0], 1, 1000, 400, 500, 7, "device 0's failure");
    ASSERT_U64(f[0].time_ns, 11, "its time");
    cr_assert_eq(f[0].device, 0);
    same_frag(&f[1], 1, 500, 500, 0, 7, "device 1's failure");
    same_frag(&f[2], 2, 1500, 900, 500, 7, "a failure of no device: all of them");
    gs_replay_free(&r);
}

/*
 * PyTorch's expandable segments: pages of device memory mapped one by one
 * into a reservation at V (pages of 0x1000 here). Page 1, then page 0,
 * then page 2: one run [V, V+0x3000). Blocks [0x800,0x1800) (across pages
 * 0 and 1) and [0x2800,0x2900); host memory mapped at 0x90000 and a block
 * there, in no segment. Gaps 0x800, 0x1000, 0x700.
 */
Test(blocks, mapped_ranges_that_touch_are_one_segment)
{
    struct gs_replay r;
    gs_replay_init(&r);
    const uint64_t V = 0x40000;
    handle(&r, 1, 0x11, 0x1000);
    handle(&r, 2, 0x12, 0x1000);
    handle(&r, 3, 0x13, 0x1000);
    struct gs_revent host = {.type = GS_REC_ALLOC, .time_ns = 4, .tid = 1, .device = 0,
                             .addr = 0x14, .size = 0x1000, .stack_id = 2,
                             .kind = GS_KIND_HOST_PINNED, .space = GS_SPACE_HANDLE};
    gs_replay_event(&r, &host);
    balloc(&r, 5, V + 0x800, 0x1000, 1); /* the index is made before the mappings */
    map(&r, 6, V + 0x1000, 0x1000, 0x12);
    map(&r, 7, V, 0x1000, 0x11);
    map(&r, 8, V + 0x2000, 0x1000, 0x13);
    map(&r, 9, 0x90000, 0x1000, 0x14);
    balloc(&r, 10, V + 0x2800, 0x100, 1);
    balloc(&r, 11, 0x90000, 0x10, 2);
    struct gs_frag f;
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 1, 0x3000, 0x1100, 0x1000, 0x10, "one run of three pages");
    frag(&r, 0, &f);
    same_frag(&f, 1, 0x3000, 0x1100, 0x1000, 0x10, "on device 0");
    /* page 1 unmapped: two runs; the first block's bytes past page 0 in none */
    unmap(&r, 12, V + 0x1000, 0x1000);
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 2, 0x2000, 0x900, 0x800, 0x10, "split in two");
    /* one unmap of the whole reservation ends both */
    unmap(&r, 13, V, 0x3000);
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 0, 0, 0, 0, 0x1110, "nothing mapped");
    /* mapped again, the middle page last: it joins the runs on both sides */
    map(&r, 14, V + 0x2000, 0x1000, 0x13);
    map(&r, 15, V, 0x1000, 0x11);
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 2, 0x2000, 0x900, 0x800, 0x10, "two pages apart");
    map(&r, 16, V + 0x1000, 0x1000, 0x12);
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 1, 0x3000, 0x1100, 0x1000, 0x10, "joined");
    /* the index made again from the live set finds the same run */
    r.blocks.indexed = 0;
    frag(&r, GS_DEVICE_UNKNOWN, &f);
    same_frag(&f, 1, 0x3000, 0x1100, 0x1000, 0x10, "indexed again");
    gs_replay_free(&r);
}

Test(blocks, no_blocks_no_figures)
{
    struct gs_replay r;
    gs_replay_init(&r);
    seg(&r, 1, A, 1000, 0);
    failed(&r, 2, 0, 10);
    dfree(&r, 3, A);
    gs_replay_finish(&r);
    cr_assert(!r.blocks.seen, "no block");
    cr_assert(!r.blocks.at_peak.present, "no figures at the peak");
    cr_assert(r.nfailures == 1 && !r.blocks.at_failure[0].present, "nor at the failure");
    cr_assert(!r.blocks.indexed, "no index made");
    gs_replay_free(&r);
}

Test(blocks, the_peak_figures_are_those_of_the_peak)
{
    struct gs_replay r;
    gs_replay_init(&r);
    seg(&r, 1, 0x1000, 1000, 0);    /* a peak before any block: no figures */
    balloc(&r, 2, 0x1000, 400, 1);
    cr_assert(!r.blocks.at_peak.present, "the peak came before any block");
    seg(&r, 3, 0x5000, 2000, 0);    /* the peak, 3000: S1 [0,400) of 1000 */
    balloc(&r, 4, 0x5000, 100, 1);  /* after it: not in its figures */
    struct gs_frag *p = &r.blocks.at_peak;
    cr_assert(p->present, "taken at the first change after the peak");
    ASSERT_U64(p->time_ns, 3, "at the peak's time");
    same_frag(p, 1, 1000, 400, 600, 0, "at the peak");
    bfree(&r, 5, 0x5000);
    dfree(&r, 6, 0x5000);
    same_frag(p, 1, 1000, 400, 600, 0, "no new peak: unchanged");
    handle(&r, 7, 0x11, 5000);      /* a new peak, 6000, of memory that is no segment */
    bfree(&r, 8, 0x1000);           /* the change after it: the figures before it */
    same_frag(p, 1, 1000, 400, 600, 0, "at the second peak");
    ASSERT_U64(p->time_ns, 7, "its time");
    handle(&r, 9, 0x12, 1);         /* a third peak, with no block live */
    gs_replay_finish(&r);           /* taken at the end */
    ASSERT_U64(p->time_ns, 9, "the third");
    same_frag(p, 0, 0, 0, 0, 0, "nothing held a block then");
    gs_replay_free(&r);
}

Test(blocks, a_peak_climbing_allocation_after_allocation)
{
    /* new peaks one after another: the figures are those of the last */
    struct gs_replay r;
    gs_replay_init(&r);
    seg(&r, 1, 0x1000, 100, 0);
    balloc(&r, 2, 0x1000, 10, 1);
    for (uint64_t i = 0; i < 50; i++)
        seg(&r, 10 + i, 0x10000 + i * 0x1000, 100, 0);
    balloc(&r, 100, 0x10000, 100, 1);
    ASSERT_U64(r.blocks.at_peak.time_ns, 59, "the last peak");
    same_frag(&r.blocks.at_peak, 1, 100, 10, 90, 0, "one segment with a block then");
    gs_replay_free(&r);
}

/* ---- ordmap ---- */

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define REF_MAX 5000

Test(ordmap, against_a_sorted_array)
{
    static uint64_t keys[REF_MAX], vals[REF_MAX];
    size_t n = 0;
    uint64_t seed = 7;
    struct gs_ordmap *m = gs_ordmap_new();
    cr_assert_not_null(m);
    for (int op = 0; op < 300000; op++) {
        /* small keys collide often; ascending runs, as an allocator's addresses */
        uint64_t key = op % 3 == 0 ? rnd(&seed) % 4000 : op % 3 == 1 ? (uint64_t)op * 16
                                                                      : rnd(&seed);
        if (op % 5000 == 0)
            key = op % 10000 ? 0 : UINT64_MAX;
        size_t at = 0;
        while (at < n && keys[at] < key)
            at++;
        int here = at < n && keys[at] == key;
        switch (rnd(&seed) % 4) {
        case 0:
        case 1:
            if (!here && n == REF_MAX)
                break;
            cr_assert_eq(gs_ordmap_put(m, key, (uint64_t)op), 0);
            if (!here) {
                memmove(keys + at + 1, keys + at, (n - at) * sizeof *keys);
                memmove(vals + at + 1, vals + at, (n - at) * sizeof *vals);
                keys[at] = key;
                n++;
            }
            vals[at] = (uint64_t)op;
            break;
        case 2:
            cr_assert_eq(gs_ordmap_del(m, key), here ? 0 : -1, "del of %llu",
                         (unsigned long long)key);
            if (here) {
                memmove(keys + at, keys + at + 1, (n - at - 1) * sizeof *keys);
                memmove(vals + at, vals + at + 1, (n - at - 1) * sizeof *vals);
                n--;
            }
            break;
        default: {
            uint64_t k, v;
            int fl = gs_ordmap_floor(m, key, &k, &v);
            /* the floor is keys[at] when key is there, else keys[at - 1] */
            if (here) {
                cr_assert(fl == 0 && k == keys[at] && v == vals[at], "floor of a key");
            } else if (at == 0) {
                cr_assert_eq(fl, -1, "no floor");
            } else {
                cr_assert(fl == 0 && k == keys[at - 1] && v == vals[at - 1], "floor");
            }
            int cl = gs_ordmap_ceil(m, key, &k, &v);
            if (at == n)
                cr_assert_eq(cl, -1, "no ceiling");
            else
                cr_assert(cl == 0 && k == keys[at] && v == vals[at], "ceiling");
            break;
        }
        }
        ASSERT_U64(gs_ordmap_count(m), n, "count");
    }
    gs_ordmap_free(m);
}
