/*
 * roles.h - memory by role: which device memory was parameters, optimizer
 * state, gradients, activations, temporaries or workspaces, from when each
 * call site's allocations were made and freed relative to the phases of a
 * step (NVTX ranges and regions, PyTorch's autograd threads, Python frames)
 * and from its stack; shown at the peak and at failures. An analysis
 * attached to the replay (analyzer/findings/roles.c), decided per call site
 * once the pass is done.
 *
 * Included by: analyzer/findings, the layers above it (report, export,
 * cmd); tests. Never by the shim or the model.
 */
#ifndef GPUSHIM_FINDINGS_ROLES_H
#define GPUSHIM_FINDINGS_ROLES_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/model/marks.h"

struct gs_replay;
struct gs_symbolizer;
struct gs_trace_info;

enum gs_role {
    GS_ROLE_PARAMETERS = 0,      /* made outside the phases by the first step, never freed */
    GS_ROLE_OPTIMIZER_STATE = 1, /* made in the first step's optimizer phase, never freed */
    GS_ROLE_GRADIENTS = 2,       /* made in backward, not freed in it */
    GS_ROLE_ACTIVATIONS = 3,     /* made in forward, freed in backward */
    GS_ROLE_TEMPORARIES = 4,     /* freed before the range that made them ended, or
                                  * made and freed in backward */
    GS_ROLE_WORKSPACE = 5,       /* made by cuBLAS, cuDNN or NCCL (by the stack) */
    /* where the run shows lifetimes but no phase to tell the two apart */
    GS_ROLE_HELD = 6,            /* held from by the first step on, never freed: parameters
                                  * or optimizer state */
    GS_ROLE_STEP_LOCAL = 7,      /* made and freed within a step: activations or
                                  * temporaries */
    GS_ROLE_UNCLASSIFIED = 8,    /* no rule decides (struct gs_role_site's why says why) */
    GS_ROLE_COUNT
};

/* Why a call site is unclassified, as the reports say it. */
enum gs_role_why {
    GS_WHY_NONE = 0,          /* it is classified */
    GS_WHY_NO_STEPS,          /* no steps: no lifetime tells a role */
    GS_WHY_PHASES,            /* made in more than one phase */
    GS_WHY_KEPT_FROM_FORWARD, /* made in forward, never freed: kept past its backward */
    GS_WHY_NO_BACKWARD,       /* made in forward and freed, with no backward in the run */
    GS_WHY_KEPT_EVERY_STEP,   /* made in steps past the first, never freed: kept, a leak
                               * or a cache */
    GS_WHY_ACROSS_STEPS,      /* freed in a later step than it was made in */
    GS_WHY_MIXED,             /* some freed, some kept, or no rule's every condition */
    GS_WHY_COUNT
};

/* What the run lets the roles be told from. */
enum gs_roles_basis {
    GS_BASIS_PHASES = 0,    /* forward, backward or optimizer phases were seen */
    GS_BASIS_LIFETIMES = 1, /* steps, but no phase: held or step-local, no finer */
    GS_BASIS_NONE = 2,      /* neither: only workspaces, by their stacks */
};

/* The phase of a step something happened in. */
enum gs_phase {
    GS_PHASE_NONE = 0,
    GS_PHASE_FORWARD = 1,
    GS_PHASE_BACKWARD = 2,
    GS_PHASE_OPTIMIZER = 3,
    GS_PHASE_COUNT
};

#define GS_ROLES_FAILURES 16 /* failures whose memory by site is kept, the first ones */

/* A call site's allocations, as the rules need them. */
struct gs_role_site {
    uint64_t made[GS_PHASE_COUNT];  /* allocations, by the phase they were made in */
    uint64_t freed;                 /* of them, freed */
    uint64_t freed_as_temporary;    /* ... before the range that made them ended, or
                                     * made in backward and freed there */
    uint64_t freed_in_backward;     /* ... in backward, made in another phase */
    uint64_t backward_in_backward;  /* ... in backward, made in backward */
    uint64_t first_ns, last_ns;     /* its first and last allocation */
    uint64_t first_free_ns;         /* its first free (UINT64_MAX: none) */
    uint64_t made_in_step;          /* ... while a step of the step label was open */
    uint64_t freed_in_step;         /* ... freed in the step they were made in */
    uint64_t made_unlabelled;       /* ... made before any step label, */
    uint64_t freed_unlabelled;      /* ... and freed then too */
    int8_t stack_phase;             /* its stack's phase; -1: not looked at yet */
    int8_t role;                    /* decided (gs_site_role); -1: not yet */
    int8_t why;                     /* enum gs_role_why, with role */
};

struct gs_roles;

/* Attaches the analysis (after gs_ranges_attach, whose ranges it reads). 0,
 * or -1 on no memory. */
int gs_roles_attach(struct gs_replay *r);
/* r's roles; NULL when the analysis is not attached. */
struct gs_roles *gs_roles_of(const struct gs_replay *r);
/* What the pass counted of r->sites[site] (NULL: nothing yet). */
const struct gs_role_site *gs_roles_site(const struct gs_roles *g, size_t site);
/* The role of the call site r->sites[site], decided once (sym: for the
 * stack's libraries and functions; may be NULL). */
enum gs_role gs_site_role(const struct gs_replay *r, struct gs_symbolizer *sym, size_t site);
/* Device bytes by role at the peak, into out; their sum. largest (may be
 * NULL) gets each role's site (index in r->sites) holding the most then,
 * the first of equals; SIZE_MAX for a role with nothing. */
uint64_t gs_roles_at_peak(const struct gs_replay *r, struct gs_symbolizer *sym,
                          uint64_t out[GS_ROLE_COUNT], size_t largest[GS_ROLE_COUNT]);
/* The same when failures[idx] failed (the process's device memory then): 1,
 * or 0 when it is not kept (past the first GS_ROLES_FAILURES). */
int gs_roles_at_failure(const struct gs_replay *r, struct gs_symbolizer *sym, size_t idx,
                        uint64_t out[GS_ROLE_COUNT]);
/* What this run's roles are told from (after the pass). */
enum gs_roles_basis gs_roles_basis(const struct gs_replay *r);
/* Whether a role can be told in this run at all (a role not told is
 * neither there nor absent: a gate on it cannot be checked); why, if not. */
int gs_role_told(const struct gs_replay *r, enum gs_role role, const char **why);
/* Why site was left unclassified (GS_WHY_NONE when it was not), and what
 * that means, as the reports say it ("made in forward and never freed"). */
enum gs_role_why gs_site_role_why(const struct gs_replay *r, struct gs_symbolizer *sym,
                                  size_t site);
const char *gs_role_why_text(enum gs_role_why why);
/* Why roles cannot be told for this run (no device memory; driver
 * allocations that are a caching allocator's segments, each holding
 * tensors of any role), or NULL when they can. */
const char *gs_roles_not_told(const struct gs_trace_info *info, const struct gs_replay *r);
const char *gs_role_name(enum gs_role role); /* "optimizer state" */
const char *gs_role_key(enum gs_role role);  /* "optimizer_state" (JSON) */
/* The phase a range's label names, any case: none for one that names both
 * forward and backward ("forward_backward", Megatron-LM's schedules) or an
 * optimizer's closure ("mcore_optim.step.closure", NeMo: forward and
 * backward inside the optimizer's step); backward ("backward", "bwd",
 * autograd's "...Backward0"); the optimizer ("optim": "Optimizer.step#SGD.step",
 * DeepSpeed's "DeepSpeedZeroOptimizer_Stage3.step", Lightning's
 * "optimizer_step"); forward ("forward", "fwd", Lightning's "training_step");
 * else GS_PHASE_NONE. */
enum gs_phase gs_label_phase(const char *label);

#endif
