/*
 * test_roles.c - the rules of memory by role (analyzer/findings/roles.c),
 * fed events by hand: the phase a range's label names, for the labels
 * PyTorch's emit_nvtx, DeepSpeed, Megatron-LM, NeMo and Lightning push; an
 * operator's range is forward unless a range around it names its phase; a
 * call site whose allocations agree on nothing is unclassified, never a
 * guess, and says why; parameters need a first step to be before (no
 * marks: unclassified); with steps but no phase, what is held and what
 * lives within a step is told, and nothing finer (a gate on activations
 * cannot be checked); with phases, the demo's job in small; a free the
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
#include "analyzer/model/replay.h"
#include "analyzer/trace/trace.h"

#define MiB (1024ull * 1024)

static uint64_t now = 1;
static int depth; /* ranges pushed on thread 1 */

static void ev(struct gs_replay *r, struct gs_revent e)
{
    e.time_ns = now++;
    gs_replay_event(r, &e);
}

/* A push, flagged outermost as the shim flags it (top: the thread's first;
 * 0 for a range a test wants to make no step, as an older shim's). */
static void push(struct gs_replay *r, const char *label, int top)
{
    depth++;
    ev(r, (struct gs_revent){.type = GS_REC_RANGE, .tid = 1, .op = GS_RANGE_PUSH,
                             .flags = top ? GS_RANGE_TOP : 0, .label = label,
                             .label_len = strlen(label)});
}

/* A pop, flagged GS_RANGE_TOP where it leaves the thread nothing pushed
 * (shim/hooks/nvtx.c): the step an outermost range began ends. */
static void pop(struct gs_replay *r)
{
    depth--;
    ev(r, (struct gs_revent){.type = GS_REC_RANGE, .tid = 1, .op = GS_RANGE_POP,
                             .flags = depth ? 0 : GS_RANGE_TOP});
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
    depth = 0;
    gs_replay_init(r);
    cr_assert_eq(gs_ranges_attach(r), 0);
    cr_assert_eq(gs_roles_attach(r), 0);
}

static size_t site_of(struct gs_replay *r, uint32_t stack)
{
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].stack_id == stack)
            return i;
    cr_assert_fail("no site of stack %u", stack);
    return 0;
}

/* The role of the site of stack id, and why it is unclassified. */
static enum gs_role role(struct gs_replay *r, uint32_t stack)
{
    return gs_site_role(r, NULL, site_of(r, stack));
}

static enum gs_role_why why(struct gs_replay *r, uint32_t stack)
{
    return gs_site_role_why(r, NULL, site_of(r, stack));
}

/* Every allocation of the site of stack was made in phase p. */
#define ASSERT_MADE(r, stack, p)                                                           \
    do {                                                                                   \
        const struct gs_role_site *s_ = gs_roles_site(gs_roles_of(r), site_of((r), (stack))); \
        cr_assert(s_ && s_->made[(p)] == 1, "stack %u made in phase %d", (stack), (int)(p)); \
    } while (0)

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

/* The labels real training code pushes (the source each is from). */
Test(roles, phases_from_the_labels_frameworks_push)
{
    static const struct {
        const char *label;
        enum gs_phase phase;
    } cases[] = {
        /* PyTorch emit_nvtx (torch/csrc/profiler/util.cpp getNvtxStr): an
         * operator names no phase itself; a backward node does; the
         * optimizer's record_function (torch/optim/optimizer.py
         * profile_hook_step) is a range under emit_nvtx */
        {"aten::addmm, seq = 12, op_id = 40, sizes = [[4], [2, 3]]", GS_PHASE_NONE},
        {"autograd::engine::evaluate_function: AddmmBackward0, op_id = 41", GS_PHASE_BACKWARD},
        {"AddmmBackward0, seq = 12, op_id = 42", GS_PHASE_BACKWARD},
        {"Optimizer.step#SGD.step, op_id = 5", GS_PHASE_OPTIMIZER},
        {"Optimizer.zero_grad#SGD.zero_grad, op_id = 6", GS_PHASE_OPTIMIZER},
        /* DeepSpeed (deepspeed/utils/nvtx.py instrument_w_nvtx: __qualname__) */
        {"DeepSpeedEngine.forward", GS_PHASE_FORWARD},
        {"DeepSpeedEngine.backward", GS_PHASE_BACKWARD},
        {"DeepSpeedZeroOptimizer_Stage3.step", GS_PHASE_OPTIMIZER},
        /* Megatron-LM (megatron/core/pipeline_parallel/schedules.py): a range
         * around both forward and backward names neither */
        {"megatron.core.pipeline_parallel.schedules."
         "forward_backward_pipelining_with_interleaving.warmup", GS_PHASE_NONE},
        /* NeMo (nemo/core/optim/mcore_optim.py): the closure is forward and
         * backward inside the optimizer's step; .step.step the update */
        {"nemo.core.optim.mcore_optim.step.closure", GS_PHASE_NONE},
        {"nemo.core.optim.mcore_optim.step.step", GS_PHASE_OPTIMIZER},
        /* Lightning's profiler (src/lightning/pytorch/profilers/pytorch.py) */
        {"[pl][profile][Strategy]DDPStrategy.training_step", GS_PHASE_FORWARD},
        {"[pl][profile][Strategy]DDPStrategy.backward", GS_PHASE_BACKWARD},
        {"[pl][profile][LightningModule]Model.optimizer_step", GS_PHASE_OPTIMIZER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(gs_label_phase(cases[i].label), cases[i].phase, "%s", cases[i].label);
}

/* Under emit_nvtx an operator's range is innermost: forward where no range
 * around it names a phase, the enclosing range's phase where one does. */
Test(roles, an_operators_range_is_forward_unless_a_range_around_it_says)
{
    struct gs_replay r;
    setup(&r);
    push(&r, "aten::empty, seq = 3, op_id = 7", 1);
    alloc(&r, 1, 0x1000, MiB);
    pop(&r);
    push(&r, "Optimizer.step#Adam.step, op_id = 8", 1);
    push(&r, "aten::zeros_like, seq = 4, op_id = 9", 0);
    alloc(&r, 2, 0x2000, MiB);
    pop(&r);
    pop(&r);
    gs_replay_finish(&r);
    ASSERT_MADE(&r, 1, GS_PHASE_FORWARD);
    ASSERT_MADE(&r, 2, GS_PHASE_OPTIMIZER);
    gs_replay_free(&r);
}

/* Made in forward and freed, in a run with no backward: no activations
 * (what backward frees), and the report says why; the weights, with no
 * steps to be before, are no parameters. */
Test(roles, without_a_backward_what_forward_made_is_no_activations)
{
    struct gs_replay r;
    setup(&r);
    alloc(&r, 1, 0x1000, MiB);
    for (int k = 0; k < 2; k++) {
        push(&r, "forward", 0); /* not flagged outermost: no steps */
        alloc(&r, 2, 0x2000, MiB);
        pop(&r);
        dfree(&r, 0x2000);
    }
    gs_replay_finish(&r);
    cr_assert_eq(role(&r, 2), GS_ROLE_UNCLASSIFIED);
    cr_assert_eq(why(&r, 2), GS_WHY_NO_BACKWARD);
    cr_assert_eq(role(&r, 1), GS_ROLE_UNCLASSIFIED);
    cr_assert_eq(why(&r, 1), GS_WHY_NO_STEPS);
    gs_replay_free(&r);
}

static void mark(struct gs_replay *r, const char *label)
{
    ev(r, (struct gs_revent){.type = GS_REC_MARK, .tid = 1, .stack_id = 99, .label = label,
                             .label_len = strlen(label)});
}

static void step_end(struct gs_replay *r, const char *label)
{
    ev(r, (struct gs_revent){.type = GS_REC_MARK, .tid = 1, .stack_id = 99, .label = label,
                             .label_len = strlen(label), .flags = GS_MARK_STEP_END});
}

/* Steps marked after each (gpushim_step_end): the first step began with the
 * run, before its label was known, and what it made and freed is its own;
 * a free in a step after the last end is the teardown's. */
Test(roles, step_ends_tell_the_first_steps_lifetimes_too)
{
    struct gs_replay r;
    setup(&r);
    alloc(&r, 1, 0x1000, MiB); /* weights, in the first step */
    for (int k = 0; k < 3; k++) {
        alloc(&r, 2, 0x2000, MiB); /* an activation, freed in its step */
        dfree(&r, 0x2000);
        step_end(&r, "step");
    }
    alloc(&r, 3, 0x3000, MiB); /* after the last end: the teardown's */
    dfree(&r, 0x3000);
    dfree(&r, 0x1000);
    gs_replay_finish(&r);
    cr_assert_eq(gs_roles_basis(&r), GS_BASIS_LIFETIMES);
    cr_assert_eq(role(&r, 2), GS_ROLE_STEP_LOCAL, "the first step's activation is in a step");
    cr_assert_eq(role(&r, 1), GS_ROLE_HELD, "freed after the last end: the teardown's");
    cr_assert_eq(role(&r, 3), GS_ROLE_UNCLASSIFIED, "made and freed after it: in no step");
    gs_replay_free(&r);
}

/* A run that died in its first step (the end of the run cut its only
 * step) tells no lifetime: what it never freed is not held for that. */
Test(roles, a_run_that_died_in_its_first_step_tells_no_lifetime)
{
    struct gs_replay r;
    setup(&r);
    alloc(&r, 1, 0x1000, MiB);
    mark(&r, "step");
    alloc(&r, 2, 0x2000, MiB);
    alloc(&r, 3, 0x3000, MiB);
    gs_replay_finish(&r);
    cr_assert_eq(role(&r, 1), GS_ROLE_UNCLASSIFIED);
    cr_assert_eq(role(&r, 2), GS_ROLE_UNCLASSIFIED);
    cr_assert_eq(why(&r, 2), GS_WHY_NO_STEPS);
    gs_replay_free(&r);
}

/* A one-off nvtxMark ("checkpoint saved") does not outrank a loop's
 * outermost ranges as the step label. */
Test(roles, an_nvtx_mark_does_not_outrank_the_loops_ranges)
{
    struct gs_replay r;
    setup(&r);
    for (int k = 0; k < 3; k++) {
        push(&r, "step", 1);
        pop(&r);
    }
    ev(&r, (struct gs_revent){.type = GS_REC_MARK, .tid = 1, .label = "saved", .label_len = 5,
                              .flags = GS_MARK_NVTX});
    cr_assert_str_eq(r.marks.labels[gs_marks_step_label(&r.marks)].label, "step");
    mark(&r, "own");
    cr_assert_str_eq(r.marks.labels[gs_marks_step_label(&r.marks)].label, "own",
                     "gpushim_mark's label does");
    gs_replay_free(&r);
}

/* A bare C program: steps, no phase. What is held from the first step on
 * and what lives within a step is told, not which of them is which; a
 * gate on activations cannot be checked. */
Test(roles, lifetimes_alone_tell_held_from_step_local_and_say_why_no_more)
{
    struct gs_replay r;
    setup(&r);
    alloc(&r, 1, 0x1000, MiB); /* weights, before the first step */
    for (int k = 0; k < 3; k++) {
        mark(&r, "step");
        if (k == 0)
            alloc(&r, 2, 0x2000, MiB); /* state made in the first step */
        alloc(&r, 3, 0x3000, MiB);     /* an activation, freed within its step */
        dfree(&r, 0x3000);
        alloc(&r, 4, 0x10000 + (uint64_t)k * 0x1000, MiB); /* kept every step */
        if (k)
            dfree(&r, 0x5000);         /* made in one step, freed in the next */
        alloc(&r, 5, 0x5000, MiB);
    }
    dfree(&r, 0x1000); /* a teardown's free, in the last step: still held */
    gs_replay_finish(&r);
    cr_assert_eq(gs_roles_basis(&r), GS_BASIS_LIFETIMES);
    cr_assert_eq(role(&r, 1), GS_ROLE_HELD, "weights, freed in the teardown");
    cr_assert_eq(role(&r, 2), GS_ROLE_HELD, "state made in the first step");
    cr_assert_eq(role(&r, 3), GS_ROLE_STEP_LOCAL, "freed within its step");
    cr_assert_eq(role(&r, 4), GS_ROLE_UNCLASSIFIED, "kept every step");
    cr_assert_eq(why(&r, 4), GS_WHY_KEPT_EVERY_STEP);
    cr_assert_eq(role(&r, 5), GS_ROLE_UNCLASSIFIED, "freed a step later");
    cr_assert_eq(why(&r, 5), GS_WHY_ACROSS_STEPS);
    const char *no = NULL;
    cr_assert(!gs_role_told(&r, GS_ROLE_ACTIVATIONS, &no) && no && strstr(no, "no forward"),
              "activations not told: %s", no ? no : "(none)");
    cr_assert(!gs_role_told(&r, GS_ROLE_PARAMETERS, NULL));
    cr_assert(gs_role_told(&r, GS_ROLE_HELD, NULL) && gs_role_told(&r, GS_ROLE_STEP_LOCAL, NULL));
    gs_replay_free(&r);
}

/* The demo's job (examples/sim_training.c) in small: phases as ranges,
 * Adam's state made in the first optimizer step. */
Test(roles, phases_tell_parameters_state_activations_and_a_kept_loss)
{
    struct gs_replay r;
    setup(&r);
    alloc(&r, 1, 0x100000, MiB); /* weights */
    for (int k = 0; k < 3; k++) {
        push(&r, "step", 1);
        push(&r, "forward", 0);
        alloc(&r, 2, 0x200000, MiB);                      /* an activation */
        alloc(&r, 3, 0x1000000 + (uint64_t)k * MiB, MiB); /* the loss, kept */
        pop(&r);
        push(&r, "backward", 0);
        dfree(&r, 0x200000);
        pop(&r);
        push(&r, "optimizer step", 0);
        if (k == 0)
            alloc(&r, 4, 0x400000, MiB); /* Adam's state */
        pop(&r);
        pop(&r);
    }
    gs_replay_finish(&r);
    cr_assert_eq(gs_roles_basis(&r), GS_BASIS_PHASES);
    cr_assert_eq(role(&r, 1), GS_ROLE_PARAMETERS);
    cr_assert_eq(role(&r, 2), GS_ROLE_ACTIVATIONS);
    cr_assert_eq(role(&r, 3), GS_ROLE_UNCLASSIFIED);
    cr_assert_eq(why(&r, 3), GS_WHY_KEPT_FROM_FORWARD);
    cr_assert_eq(role(&r, 4), GS_ROLE_OPTIMIZER_STATE);
    cr_assert(gs_role_told(&r, GS_ROLE_ACTIVATIONS, NULL));
    gs_replay_free(&r);
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
