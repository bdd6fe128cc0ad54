/*
 * test_roles.c - the rules of memory by role (analyzer/findings/roles.c),
 * fed events by hand: the phase a range's label names; a call site whose
 * allocations agree on nothing is unclassified, never a guess; parameters
 * need a first step to be before (no marks: unclassified); a free the
 * driver refused is taken back, so a site whose only free was refused is
 * not a temporary; a site freed in backward but made in two phases is not
 * activations; the breakdown at the peak adds up to the peak.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/findings/ranges.h"
#include "analyzer/findings/roles.h"
#include "analyzer/model/model.h"
#include "analyzer/trace/trace.h"

#define MiB (1024ull * 1024)

static uint64_t now = 1;

static void ev(struct gs_replay *r, struct gs_revent e)
{
    e.time_ns = now++;
    gs_replay_event(r, &e);
}

static void push(struct gs_replay *r, const char *label, int top)
{
    ev(r, (struct gs_revent){.type = GS_REC_RANGE, .tid = 1, .op = GS_RANGE_PUSH,
                             .flags = top ? GS_RANGE_TOP : 0, .label = label,
                             .label_len = strlen(label)});
}

static void pop(struct gs_replay *r)
{
    ev(r, (struct gs_revent){.type = GS_REC_RANGE, .tid = 1, .op = GS_RANGE_POP});
}

static void alloc(struct gs_replay *r, uint32_t stack, uint64_t addr, uint64_t size)
{
    ev(r, (struct gs_revent){.type = GS_REC_ALLOC, .tid = 1, .device = 0, .addr = addr,
                             .size = size, .stack_id = stack, .kind = GS_KIND_DEVICE,
                             .space = GS_SPACE_ADDRESS});
}

static void dfree(struct gs_replay *r, uint64_t addr)
{
    ev(r, (struct gs_revent){.type = GS_REC_FREE, .tid = 1, .addr = addr});
}

static void refused(struct gs_replay *r, uint64_t addr)
{
    ev(r, (struct gs_revent){.type = GS_REC_FREE_FAILED, .tid = 1, .addr = addr, .result = 1});
}

static void setup(struct gs_replay *r)
{
    gs_replay_init(r);
    cr_assert_eq(gs_ranges_attach(r), 0);
    cr_assert_eq(gs_roles_attach(r), 0);
}

/* The role of the site of stack id. */
static enum gs_role role(struct gs_replay *r, uint32_t stack)
{
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].stack_id == stack)
            return gs_site_role(r, NULL, i);
    cr_assert_fail("no site of stack %u", stack);
    return GS_ROLE_COUNT;
}

Test(roles, phases_from_labels)
{
    cr_assert_eq(gs_label_phase("Backward"), GS_PHASE_BACKWARD);
    cr_assert_eq(gs_label_phase("layer3.bwd"), GS_PHASE_BACKWARD);
    cr_assert_eq(gs_label_phase("Optimizer.step#Adam.step"), GS_PHASE_OPTIMIZER);
    cr_assert_eq(gs_label_phase("forward"), GS_PHASE_FORWARD);
    cr_assert_eq(gs_label_phase("FWD pass"), GS_PHASE_FORWARD);
    cr_assert_eq(gs_label_phase("step"), GS_PHASE_NONE);
    cr_assert_eq(gs_label_phase(""), GS_PHASE_NONE);
}

Test(roles, without_steps_nothing_is_a_parameter)
{
    struct gs_replay r;
    setup(&r);
    alloc(&r, 1, 0x1000, MiB); /* kept, but no step to be before */
    gs_replay_finish(&r);
    cr_assert_eq(role(&r, 1), GS_ROLE_UNCLASSIFIED);
    gs_replay_free(&r);
}

Test(roles, mixed_or_refused_evidence_is_unclassified)
{
    struct gs_replay r;
    setup(&r);
    alloc(&r, 1, 0x1000, MiB);           /* parameters: before the first step */
    push(&r, "step", 1);
    push(&r, "forward", 0);
    alloc(&r, 2, 0x2000, MiB);           /* stack 2: in forward ... */
    alloc(&r, 3, 0x3000, MiB);           /* stack 3: its only free refused */
    dfree(&r, 0x3000);
    refused(&r, 0x3000);
    pop(&r);
    push(&r, "backward", 0);
    alloc(&r, 2, 0x4000, MiB);           /* ... and in backward: two phases */
    dfree(&r, 0x2000);
    dfree(&r, 0x4000);
    pop(&r);
    pop(&r);
    push(&r, "step", 1);
    pop(&r);
    gs_replay_finish(&r);
    cr_assert_eq(role(&r, 1), GS_ROLE_PARAMETERS);
    cr_assert_eq(role(&r, 2), GS_ROLE_UNCLASSIFIED, "made in two phases");
    cr_assert_eq(role(&r, 3), GS_ROLE_UNCLASSIFIED, "no free stood: live, made in forward");
    uint64_t by[GS_ROLE_COUNT], sum = 0;
    uint64_t all = gs_roles_at_peak(&r, NULL, by, NULL);
    for (int k = 0; k < GS_ROLE_COUNT; k++)
        sum += by[k];
    cr_assert_eq(all, r.peak_bytes, "every byte of the peak has a role");
    cr_assert_eq(sum, all);
    cr_assert_eq(by[GS_ROLE_PARAMETERS], MiB);
    gs_replay_free(&r);
}
