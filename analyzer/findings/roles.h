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
    GS_ROLE_PARAMETERS = 0,      /* made before the first step, never freed */
    GS_ROLE_OPTIMIZER_STATE = 1, /* made in the first step's optimizer phase, never freed */
    GS_ROLE_GRADIENTS = 2,       /* made in backward, not freed in it */
    GS_ROLE_ACTIVATIONS = 3,     /* made in forward, freed in backward */
    GS_ROLE_TEMPORARIES = 4,     /* freed before the range that made them ended, or
                                  * made and freed in backward */
    GS_ROLE_WORKSPACE = 5,       /* made by cuBLAS, cuDNN or NCCL (by the stack) */
    GS_ROLE_UNCLASSIFIED = 6,    /* no rule decides */
    GS_ROLE_COUNT
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
    int8_t stack_phase;             /* its stack's phase; -1: not looked at yet */
    int8_t role;                    /* decided (gs_site_role); -1: not yet */
};

struct gs_roles;

/* Attaches the analysis (after gs_ranges_attach, whose ranges it reads). 0,
 * or -1 on no memory. */
int gs_roles_attach(struct gs_replay *r);
/* r's roles; NULL when the analysis is not attached. */
struct gs_roles *gs_roles_of(const struct gs_replay *r);
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
/* Why roles cannot be told for this run (no device memory; driver
 * allocations that are a caching allocator's segments, each holding
 * tensors of any role), or NULL when they can. */
const char *gs_roles_not_told(const struct gs_trace_info *info, const struct gs_replay *r);
const char *gs_role_name(enum gs_role role); /* "optimizer state" */
const char *gs_role_key(enum gs_role role);  /* "optimizer_state" (JSON) */
/* The phase a range's label names: backward ("backward", "bwd"), optimizer
 * ("optim"), forward ("forward", "fwd"), any case; else GS_PHASE_NONE. */
enum gs_phase gs_label_phase(const char *label);

#endif
