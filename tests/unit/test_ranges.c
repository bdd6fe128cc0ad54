/*
 * test_ranges.c - memory by NVTX range (analyzer/findings/ranges.c), fed
 * events by hand with figures worked out by hand: pushed ranges nest per
 * thread (another thread's push in between is not a parent), a pop ends
 * its own domain's innermost range, a started range ends on another thread
 * by its id; an instance's peak counts what was live when it opened and the
 * peaks of the instances inside it; allocations made before it opened do
 * not count when they are freed inside it, and a free the driver refused
 * gives its bytes back without counting as made again; pops and ends with
 * nothing to end are counted; a failure is inside its thread's innermost
 * range; a top-level range is also a mark; a range past the limit on
 * ranges is counted, not followed, and its pop ends it, not its parent.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/findings/ranges.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/trace/trace.h"

#define MiB (1024ull * 1024)

static uint64_t now = 1;

static void range(struct gs_replay *r, uint32_t tid, enum gs_range_op op, uint64_t domain,
                  uint64_t id, const char *label)
{
    struct gs_revent e = {.type = GS_REC_RANGE, .time_ns = now++, .tid = tid, .op = op,
                          .addr = id, .stream = domain, .label = label,
                          .label_len = label ? strlen(label) : 0};
    gs_replay_event(r, &e);
}

static void push(struct gs_replay *r, uint32_t tid, const char *label)
{
    range(r, tid, GS_RANGE_PUSH, 0, 0, label);
}

static void pop(struct gs_replay *r, uint32_t tid) { range(r, tid, GS_RANGE_POP, 0, 0, NULL); }

static void alloc(struct gs_replay *r, uint32_t tid, uint64_t addr, uint64_t size)
{
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = now++, .tid = tid, .device = 0,
                          .addr = addr, .size = size, .stack_id = 1, .kind = GS_KIND_DEVICE,
                          .space = GS_SPACE_ADDRESS};
    gs_replay_event(r, &e);
}

static void dfree(struct gs_replay *r, uint64_t addr)
{
    struct gs_revent e = {.type = GS_REC_FREE, .time_ns = now++, .tid = 1, .addr = addr};
    gs_replay_event(r, &e);
}

static void refused(struct gs_replay *r, uint64_t addr)
{
    struct gs_revent e = {.type = GS_REC_FREE_FAILED, .time_ns = now++, .tid = 1, .addr = addr,
                          .result = 1};
    gs_replay_event(r, &e);
}

static const struct gs_ranges *setup(struct gs_replay *r)
{
    gs_replay_init(r);
    cr_assert_eq(gs_ranges_attach(r), 0);
    return gs_ranges_of(r);
}

static void path(const struct gs_ranges *g, uint32_t node, const char *want)
{
    char p[512];
    gs_range_path(g, node, p, sizeof p);
    cr_assert_str_eq(p, want, "range %u", node);
}

Test(ranges, nesting_is_per_thread_and_per_domain)
{
    struct gs_replay r;
    const struct gs_ranges *g = setup(&r);
    range(&r, 1, GS_RANGE_DOMAIN, 1, 0, "nemo");
    push(&r, 1, "a");
    push(&r, 2, "b");                            /* thread 2: its own top */
    range(&r, 1, GS_RANGE_PUSH, 1, 0, "c");      /* under a, in domain nemo */
    push(&r, 1, "d");                            /* under c */
    range(&r, 1, GS_RANGE_POP, 1, 0, NULL);      /* ends c, nemo's innermost: d stays */
    pop(&r, 2);                                  /* ends b */
    pop(&r, 1);                                  /* ends d */
    pop(&r, 1);                                  /* ends a */
    pop(&r, 1);                                  /* nothing left */
    range(&r, 3, GS_RANGE_END, 0, 99, NULL);     /* no such id */
    cr_assert_eq(g->nnodes, 4);
    path(g, 0, "a");
    path(g, 1, "b");
    path(g, 2, "a > [nemo] c");
    path(g, 3, "a > [nemo] c > d");
    for (uint32_t k = 0; k < 4; k++)
        cr_assert_eq(g->nodes[k].ended, 1, "range %u ended once", k);
    cr_assert_eq(g->pushes, 4);
    cr_assert_eq(g->pops, 5);
    cr_assert_eq(g->unmatched, 2, "the extra pop and the unknown end");
    cr_assert_eq(g->nopen, 0);
    uint32_t order[] = {2, 1, 3, 0}; /* the order they ended */
    for (unsigned k = 0; k < 4; k++)
        cr_assert_eq(g->recent[k].node, order[k], "ended %u", k);
    gs_replay_free(&r);
}

Test(ranges, figures_of_nested_and_crossing_instances)
{
    struct gs_replay r;
    const struct gs_ranges *g = setup(&r);
    alloc(&r, 1, 0x1000, 4 * MiB);           /* before any range: live 4 */
    push(&r, 1, "step");                     /* opens at 4 */
    alloc(&r, 1, 0x2000, 2 * MiB);           /* 6 */
    push(&r, 1, "fwd");                      /* opens at 6 */
    alloc(&r, 1, 0x3000, 3 * MiB);           /* 9: peak of both */
    dfree(&r, 0x1000);                       /* 5: made before both, counts in neither */
    dfree(&r, 0x2000);                       /* 3: made in step only */
    alloc(&r, 1, 0x4000, 1 * MiB);           /* 4 */
    dfree(&r, 0x4000);                       /* 3 */
    refused(&r, 0x4000);                     /* 4: back, not made again */
    range(&r, 2, GS_RANGE_START, 0, 7, "io"); /* opens at 4, on thread 2 */
    alloc(&r, 2, 0x5000, 8 * MiB);           /* 12 */
    pop(&r, 1);                              /* fwd ends: the started one is still open */
    dfree(&r, 0x5000);                       /* 4 */
    range(&r, 3, GS_RANGE_END, 0, 7, NULL);  /* io ends on thread 3 */
    pop(&r, 1);                              /* step ends */
    cr_assert_eq(g->nnodes, 3);
    path(g, 1, "step > fwd");
    path(g, 2, "io");
    const struct gs_range_instance *fwd = &g->recent[0], *io = &g->recent[1],
                                   *step = &g->recent[2];
    cr_assert_eq(fwd->node, 1);
    cr_assert_eq(fwd->peak, 12 * MiB, "fwd: the io's 8 MiB came while it was open");
    cr_assert_eq(fwd->allocated, 3 * MiB + 1 * MiB + 8 * MiB);
    cr_assert_eq(fwd->kept, 3 * MiB + 1 * MiB + 8 * MiB, "all three live when fwd ended");
    cr_assert_eq(io->node, 2);
    cr_assert_eq(io->peak, 12 * MiB);
    cr_assert_eq(io->allocated, 8 * MiB);
    cr_assert_eq(io->kept, 0);
    cr_assert_eq(step->node, 0);
    cr_assert_eq(step->peak, 12 * MiB);
    cr_assert_eq(step->allocated, 2 * MiB + 3 * MiB + 1 * MiB + 8 * MiB);
    cr_assert_eq(step->kept, 3 * MiB + 1 * MiB, "the 2 and the 8 were freed inside it");
    cr_assert_eq(g->nodes[0].kept_max, 4 * MiB);
    cr_assert_eq(g->nodes[0].peak_nth, 1);
    /* the top-level push and start were marks too */
    cr_assert_eq(r.marks.marks, 0, "flags not set: no marks");
    gs_replay_free(&r);
}

Test(ranges, a_top_level_range_is_a_mark_and_a_failure_is_inside_its_threads_range)
{
    struct gs_replay r;
    const struct gs_ranges *g = setup(&r);
    struct gs_revent e = {.type = GS_REC_RANGE, .time_ns = now++, .tid = 1,
                          .op = GS_RANGE_PUSH, .flags = GS_RANGE_TOP, .label = "step",
                          .label_len = 4};
    gs_replay_event(&r, &e);
    push(&r, 1, "backward");
    push(&r, 2, "loader");
    struct gs_revent f = {.type = GS_REC_ALLOC_FAILED, .time_ns = now++, .tid = 1, .device = 0,
                          .size = MiB, .result = 2, .free_bytes = 0, .total_bytes = MiB};
    gs_replay_event(&r, &f);
    gs_replay_finish(&r);
    cr_assert_eq(r.marks.marks, 1);
    cr_assert_str_eq(r.marks.labels[0].label, "step");
    cr_assert_eq(g->nfailure_nodes, 1);
    path(g, g->failure_node[0], "step > backward");
    struct gs_range_instance x;
    cr_assert(gs_ranges_open_at(g, 1, &x));
    cr_assert_eq(x.node, 1);
    cr_assert_eq(x.end_ns, 0, "open");
    cr_assert(!gs_ranges_open_at(g, 3, &x));
    gs_replay_free(&r);
}

Test(ranges, a_range_past_the_limit_holds_its_place)
{
    struct gs_replay r;
    const struct gs_ranges *g = setup(&r);
    push(&r, 1, "outer");
    char label[32];
    for (int k = 0; k < GS_RANGE_NODES + 4; k++) { /* "outer" and 1023 more are followed */
        snprintf(label, sizeof label, "op %d", k);
        push(&r, 1, label);
        alloc(&r, 1, 0x1000 + (uint64_t)k * 0x1000, 4096);
        pop(&r, 1);
    }
    push(&r, 1, "op 0");   /* followed: an inner range of outer already known */
    pop(&r, 1);
    pop(&r, 1);               /* ends outer, not a range past the limit */
    cr_assert_eq(g->nnodes, GS_RANGE_NODES);
    cr_assert_eq(g->dropped, 5, "the five past the limit: counted, not followed");
    cr_assert_eq(g->unmatched, 0, "each pop ended its own push");
    cr_assert_eq(g->nopen, 0);
    cr_assert_eq(g->nodes[0].ended, 1);
    cr_assert_eq(g->nodes[1].ended, 2, "op 0, twice");
    cr_assert_eq(g->nodes[0].allocated, (uint64_t)(GS_RANGE_NODES + 4) * 4096,
                 "outer counts what was made inside those not followed too");
    gs_replay_free(&r);
}
