/*
 * roles.c - memory by role, within the replay's one streaming pass
 * (attached as a hook, gs_roles_attach: the analyzer's alone), decided per
 * call site once it is done.
 *
 * During the pass, each device allocation gets the phase of the step it was
 * made in, and each free the phase it happened in:
 *   - backward on a thread PyTorch's autograd engine runs (named
 *     "pt_autograd_N", torch/csrc/autograd/engine.cpp), where CUDA backward
 *     runs;
 *   - else the phase the thread's open ranges name, innermost first
 *     (NVTX ranges and gpushim regions, gs_label_phase: what real training
 *     code pushes); an operator's range of emit_nvtx ("aten::mm, seq = 3")
 *     with no range around it that names one is forward;
 *   - else, for an allocation, the phase its stack's Python frames name,
 *     innermost first: a file in torch/optim/ (the optimizer), backward in
 *     torch/_tensor.py or torch/autograd/__init__.py, a function forward.
 * A call site counts its allocations by phase, and its frees: those before
 * the range that made them ended, those in backward of what was made
 * elsewhere, and of what was made in backward.
 *
 * Then each call site gets the one role whose rule every allocation of it
 * that the run resolved satisfies (gs_site_role). Where the run shows
 * phases (gs_roles_basis), in this order:
 *   workspace        its stack passes through cuBLAS, cuDNN or NCCL (a module
 *                    libcublas*, libcudnn*, libnccl*, or a function naming them)
 *   temporaries      every one freed was freed before the range that made it ended,
 *                    or made in backward and freed in backward
 *   activations      all made in forward; every one freed was freed in backward
 *   gradients        all made in backward; none freed in backward
 *   optimizer state  all made in the optimizer phase by the end of the first
 *                    step (of the step label, gs_marks_step_label), none freed
 *   parameters       all made outside the phases by the end of the first
 *                    step, none freed
 *   activations or   all made outside the phases and freed in the step they
 *   temporaries      were made in (an input batch)
 * Where it shows steps but no phase, lifetimes alone: "parameters or
 * optimizer state" (none freed, all made by the end of the first step) and
 * "activations or temporaries" (each freed in the step it was made in);
 * with neither, only workspaces. Any other site is unclassified, with why
 * (enum gs_role_why): never a guess. An allocation still live at the end
 * resolves nothing about its frees.
 *
 * Memory by role at a moment is the call sites' bytes then, by their role:
 * at the peak from the model's sites; at a failure (the first
 * GS_ROLES_FAILURES) from what each site held then, kept in the pass.
 */
#define _GNU_SOURCE /* strcasestr */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/findings.h"
#include "analyzer/findings/ranges.h"
#include "analyzer/findings/roles.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/util/text.h"

#define RECENT 8 /* frees remembered, that a refused free gives back */

struct failure_sites {
    size_t failure; /* index in gs_replay.failures */
    size_t n;
    uint32_t *site;
    uint64_t *bytes;
};

/* What the roles note on a live device allocation (in their own array, by
 * the allocation's slot in gs_replay.allocs): TAGGED, the phase it was made
 * in, and the low bits of the serial of the range its thread had pushed
 * innermost then (0: none; the whole note 0: nothing noted). */
#define TAGGED 0x80000000u
#define SERIAL_SHIFT 2
#define SERIAL_MASK 0x1fffffffu /* 29 bits: an instance open is matched by them */

struct gs_roles {
    const struct gs_ranges *ranges; /* the ranges analysis's, looked up once */
    /* what is noted on each live device allocation, by its slot (a note not
     * kept for want of memory is counted by util/nomem.c: the report warns) */
    uint32_t *notes;
    size_t nnotes;
    struct gs_role_site *sites;
    size_t nsites;
    uint32_t name;      /* the thread name last looked at, and whether it is autograd's */
    int name_autograd, name_valid;
    uint32_t step_label; /* the run's steps' label so far (gs_marks_step_label), as marks come */
    uint64_t seen[GS_PHASE_COUNT]; /* allocations and frees in each phase */
    struct failure_sites failures[GS_ROLES_FAILURES];
    size_t nfailures;
    struct { /* what the last frees counted, to be taken back when refused */
        uint64_t seq;
        uint32_t site, note;
        uint8_t in_range, in_backward, backward_in_backward, in_step, unlabelled;
    } recent[RECENT];
    unsigned next_recent;
};

static const char *const names[GS_ROLE_COUNT] = {
    "parameters", "optimizer state", "gradients", "activations", "temporaries", "workspace",
    "parameters or optimizer state", "activations or temporaries", "unclassified",
};
static const char *const keys[GS_ROLE_COUNT] = {
    "parameters", "optimizer_state", "gradients", "activations", "temporaries", "workspace",
    "parameters_or_optimizer_state", "activations_or_temporaries", "unclassified",
};
static const char *const whys[GS_WHY_COUNT] = {
    "",
    "no steps are marked, against which to tell what is held from what lives within one",
    "made in more than one phase",
    ("made in forward and never freed, kept past its backward (a leak suspect, or kept on "
     "purpose)"),
    "made in forward and freed, but no backward was seen (activations are what backward frees)",
    "made in steps past the first and never freed (a leak suspect, or a cache)",
    "freed in a later step than it was made in",
    "some freed and some kept, or fitting no rule whole",
};

const char *gs_role_name(enum gs_role role) { return role < GS_ROLE_COUNT ? names[role] : "?"; }
const char *gs_role_key(enum gs_role role) { return role < GS_ROLE_COUNT ? keys[role] : "?"; }

const char *gs_role_why_text(enum gs_role_why why) { return why < GS_WHY_COUNT ? whys[why] : "?"; }

enum gs_phase gs_label_phase(const char *label)
{
    int bwd = strcasestr(label, "backward") || strcasestr(label, "bwd");
    int fwd = strcasestr(label, "forward") || strcasestr(label, "fwd") ||
              strcasestr(label, "training_step");
    if ((bwd && fwd) || strcasestr(label, "closure"))
        return GS_PHASE_NONE; /* a range around both: the phase is an inner one's */
    if (bwd)
        return GS_PHASE_BACKWARD;
    if (strcasestr(label, "optim"))
        return GS_PHASE_OPTIMIZER;
    return fwd ? GS_PHASE_FORWARD : GS_PHASE_NONE;
}

static void clear(struct gs_roles *g)
{
    const struct gs_ranges *ranges = g->ranges;
    uint32_t *notes = g->notes;
    size_t nnotes = g->nnotes;
    free(g->sites);
    for (size_t i = 0; i < g->nfailures; i++) {
        free(g->failures[i].site);
        free(g->failures[i].bytes);
    }
    memset(g, 0, sizeof *g);
    g->ranges = ranges;
    g->notes = notes;
    g->nnotes = nnotes;
    g->step_label = GS_MARK_OTHER;
}

static void roles_reset(void *ctx, struct gs_replay *r)
{
    (void)r; /* a checkpoint: what came before it is summarized without phases */
    struct gs_roles *g = ctx;
    clear(g);
    if (g->notes)
        memset(g->notes, 0, g->nnotes * sizeof *g->notes);
}

static void roles_free(void *ctx)
{
    struct gs_roles *g = ctx;
    clear(g);
    free(g->notes);
}

/* Room for site's figures in g->sites: 0, or -1 on no memory. */
static __attribute__((noinline)) int grow_sites(struct gs_roles *g, size_t site)
{
    size_t n = g->nsites ? g->nsites : 64;
    while (n <= site)
        n *= 2;
    struct gs_role_site *s = realloc(g->sites, n * sizeof *s);
    if (!s)
        return -1;
    for (size_t i = g->nsites; i < n; i++)
        s[i] = (struct gs_role_site){.first_ns = UINT64_MAX, .first_free_ns = UINT64_MAX,
                                     .stack_phase = -1, .role = -1};
    g->sites = s;
    g->nsites = n;
    return 0;
}

static inline struct gs_role_site *site_stats(struct gs_roles *g, size_t site)
{
    return site < g->nsites || grow_sites(g, site) == 0 ? &g->sites[site] : NULL;
}

/* thread_phase past its most common case (a thread of the name looked at
 * last, not autograd's, no range open), out of line. */
static __attribute__((noinline)) enum gs_phase phase_of(struct gs_roles *rg, struct gs_replay *r,
                                                        uint32_t tid, uint32_t name)
{
    if (!rg->name_valid || name != rg->name) { /* names change seldom: looked at once */
        const char *text = gs_replay_thread_name(r, name);
        rg->name = name;
        rg->name_autograd = text && strncmp(text, "pt_autograd", 11) == 0;
        rg->name_valid = 1;
    }
    if (rg->name_autograd)
        return GS_PHASE_BACKWARD;
    const struct gs_ranges *g = rg->ranges;
    if (!g->nopen)
        return GS_PHASE_NONE;
    uint32_t nodes[32];
    size_t n = gs_ranges_of_thread(g, tid, nodes, NULL, 32);
    int op = 0;
    for (size_t i = 0; i < n; i++) {
        const char *label = g->nodes[nodes[i]].label;
        enum gs_phase p = gs_label_phase(label);
        if (p != GS_PHASE_NONE)
            return p;
        /* an operator's range of emit_nvtx with its autograd sequence
         * number ("aten::addmm, seq = 12, op_id = 40", getNvtxStr): forward,
         * unless a range around it names its phase */
        op |= strstr(label, ", seq = ") != NULL;
    }
    return op ? GS_PHASE_FORWARD : GS_PHASE_NONE;
}

/* The phase thread tid is in now, from its name and its ranges. */
static inline enum gs_phase thread_phase(struct gs_roles *rg, struct gs_replay *r, uint32_t tid)
{
    uint32_t name = gs_replay_thread_of_event(r, tid);
    if (rg->name_valid && name == rg->name && !rg->name_autograd && !rg->ranges->nopen)
        return GS_PHASE_NONE;
    return phase_of(rg, r, tid, name);
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* The phase a stack's Python frames name, innermost first. */
static enum gs_phase stack_phase(const struct gs_replay *r, uint32_t stack_id)
{
    const struct gs_stack *st = gs_replay_stack(r, stack_id);
    for (unsigned i = 0; st && i < st->n; i++) {
        if (!gs_pc_is_python(st->pcs[i]))
            continue;
        const struct gs_pycode *c = gs_replay_pycode(r, gs_py_pc_code(st->pcs[i]));
        if (!c || !c->file || !c->function)
            continue;
        if (strstr(c->file, "/torch/optim/"))
            return GS_PHASE_OPTIMIZER;
        if ((ends_with(c->file, "torch/_tensor.py") ||
             ends_with(c->file, "torch/autograd/__init__.py")) &&
            ends_with(c->function, "backward"))
            return GS_PHASE_BACKWARD;
        if (strcmp(c->function, "forward") == 0 || ends_with(c->function, ".forward"))
            return GS_PHASE_FORWARD;
    }
    return GS_PHASE_NONE;
}

/* The step of the run's step label open now, if any. */
static inline const struct gs_mark_label *open_step(const struct gs_roles *g,
                                                   const struct gs_replay *r)
{
    const struct gs_marks *m = &r->marks;
    if (g->step_label >= m->nlabels || m->labels[g->step_label].open == GS_STEP_NONE)
        return NULL;
    return &m->labels[g->step_label];
}

/* on_new and on_gone out of line: each saves only the registers it uses. */
/* Room for slot idx's note: the note's place, or NULL on no memory. */
static uint32_t *note_at(struct gs_roles *g, size_t idx)
{
    if (idx < g->nnotes)
        return &g->notes[idx];
    size_t n = g->nnotes ? g->nnotes : 1024;
    while (n <= idx)
        n *= 2;
    uint32_t *notes = realloc(g->notes, n * sizeof *notes);
    if (!notes)
        return NULL;
    memset(notes + g->nnotes, 0, (n - g->nnotes) * sizeof *notes);
    g->notes = notes;
    g->nnotes = n;
    return &notes[idx];
}

static __attribute__((noinline)) void on_new(struct gs_roles *g, struct gs_replay *r,
                                             const struct gs_live_alloc *a, size_t idx)
{
    uint32_t *at = note_at(g, idx);
    if (at)
        *at = 0; /* the slot's last allocation's note is gone with it */
    struct gs_role_site *s = site_stats(g, a->site);
    if (!s || !a->seq || !at)
        return;
    enum gs_phase phase = thread_phase(g, r, a->tid);
    if (phase == GS_PHASE_NONE) {
        if (s->stack_phase < 0)
            s->stack_phase = (int8_t)stack_phase(r, r->sites[a->site].stack_id);
        phase = (enum gs_phase)s->stack_phase;
    }
    uint64_t serial = 0;
    const struct gs_ranges *ranges = g->ranges;
    if (ranges->nopen)
        gs_ranges_of_thread(ranges, a->tid, NULL, &serial, 1);
    *at = TAGGED | (uint32_t)(serial & SERIAL_MASK) << SERIAL_SHIFT | (uint32_t)phase;
    s->made[phase]++;
    s->made_in_step += open_step(g, r) != NULL;
    s->made_unlabelled += g->step_label == GS_MARK_OTHER;
    g->seen[phase]++;
    if (a->time_ns < s->first_ns)
        s->first_ns = a->time_ns;
    if (a->time_ns > s->last_ns)
        s->last_ns = a->time_ns;
}

static __attribute__((noinline)) void on_gone(struct gs_roles *g, struct gs_replay *r,
                                              const struct gs_live_alloc *a, size_t idx)
{
    uint32_t note = 0;
    if (idx < g->nnotes) {
        note = g->notes[idx];
        g->notes[idx] = 0;
    }
    if (!(note & TAGGED) || a->site >= g->nsites)
        return; /* made before the analysis began (a checkpoint) */
    struct gs_role_site *s = &g->sites[a->site];
    enum gs_phase made = (enum gs_phase)(note & 3), now = thread_phase(g, r, r->event_tid);
    uint64_t serial = (note >> SERIAL_SHIFT) & SERIAL_MASK;
    int in_range = serial && gs_ranges_serial_open(g->ranges, serial, SERIAL_MASK);
    int in_backward = now == GS_PHASE_BACKWARD && made != GS_PHASE_BACKWARD;
    int backward_in_backward = now == GS_PHASE_BACKWARD && made == GS_PHASE_BACKWARD;
    /* freed in the step it was made in: one is open, and opened before it */
    const struct gs_mark_label *step = open_step(g, r);
    int in_step = step && a->time_ns >= step->start_ns;
    /* made and freed before any step label: the first step's, if it began
     * with the run (steps_of) */
    int unlabelled = g->step_label == GS_MARK_OTHER;
    s->freed++;
    s->freed_in_backward += in_backward;
    s->backward_in_backward += backward_in_backward;
    s->freed_as_temporary += in_range || backward_in_backward;
    s->freed_in_step += in_step;
    s->freed_unlabelled += unlabelled;
    g->seen[now]++;
    if (r->last_time_ns < s->first_free_ns)
        s->first_free_ns = r->last_time_ns;
    g->recent[g->next_recent++ % RECENT] = (typeof(g->recent[0])){
        a->seq, a->site, (uint32_t)note, (uint8_t)in_range, (uint8_t)in_backward,
        (uint8_t)backward_in_backward, (uint8_t)in_step, (uint8_t)unlabelled};
}

/* A free the driver refused: what it counted is taken back, and the
 * allocation comes back with its note. */
static void on_back(struct gs_roles *g, const struct gs_live_alloc *a, size_t idx)
{
    for (unsigned k = 0; k < RECENT; k++) {
        typeof(g->recent[0]) *f = &g->recent[k];
        if (f->seq != a->seq || !f->seq || f->site >= g->nsites)
            continue;
        struct gs_role_site *s = &g->sites[f->site];
        s->freed--;
        s->freed_in_backward -= f->in_backward;
        s->backward_in_backward -= f->backward_in_backward;
        s->freed_as_temporary -= f->in_range || f->backward_in_backward;
        s->freed_in_step -= f->in_step;
        s->freed_unlabelled -= f->unlabelled;
        uint32_t *at = note_at(g, idx);
        if (at)
            *at = f->note;
        f->seq = 0;
        return;
    }
}

static void roles_on_device(void *ctx, struct gs_replay *r, const struct gs_live_alloc *a,
                            size_t idx, int how)
{
    struct gs_roles *g = ctx;
    if (how == GS_DEVICE_NEW)
        on_new(g, r, a, idx);
    else if (how == GS_DEVICE_GONE)
        on_gone(g, r, a, idx);
    else
        on_back(g, a, idx);
}

static void roles_on_mark(void *ctx, struct gs_replay *r, uint32_t label, uint64_t time_ns)
{
    (void)time_ns;
    struct gs_roles *g = ctx;
    if (label != g->step_label && gs_marks_better_steps(&r->marks, label, g->step_label))
        g->step_label = label;
}

static void roles_on_failure(void *ctx, struct gs_replay *r, size_t idx)
{
    struct gs_roles *g = ctx;
    if (g->nfailures >= GS_ROLES_FAILURES)
        return;
    struct failure_sites *f = &g->failures[g->nfailures];
    size_t n = 0;
    for (size_t i = 0; i < r->nsites; i++)
        n += r->sites[i].kind == GS_KIND_DEVICE && r->sites[i].live_bytes > 0;
    f->site = malloc((n ? n : 1) * sizeof *f->site);
    f->bytes = malloc((n ? n : 1) * sizeof *f->bytes);
    if (!f->site || !f->bytes) {
        free(f->site);
        free(f->bytes);
        f->site = NULL;
        f->bytes = NULL;
        return;
    }
    f->failure = idx;
    f->n = 0;
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].kind == GS_KIND_DEVICE && r->sites[i].live_bytes > 0) {
            f->site[f->n] = (uint32_t)i;
            f->bytes[f->n++] = r->sites[i].live_bytes;
        }
    g->nfailures++;
}

static const struct gs_replay_hook roles_hook = {
    .on_device = roles_on_device,
    .on_mark = roles_on_mark,
    .on_failure = roles_on_failure,
    .reset = roles_reset,
    .free = roles_free,
};

int gs_roles_attach(struct gs_replay *r)
{
    const struct gs_ranges *ranges = gs_ranges_of(r); /* attached before, or none */
    struct gs_roles *g = gs_replay_attach(r, &roles_hook, sizeof *g);
    if (!g)
        return -1;
    g->ranges = ranges;
    g->step_label = GS_MARK_OTHER;
    return 0;
}

struct gs_roles *gs_roles_of(const struct gs_replay *r)
{
    return gs_replay_hook_ctx(r, &roles_hook);
}

const struct gs_role_site *gs_roles_site(const struct gs_roles *g, size_t site)
{
    return g && site < g->nsites ? &g->sites[site] : NULL;
}

/* Whether a name is one of the libraries whose memory is a workspace or a
 * communication buffer. */
static int library_name(const char *s)
{
    return s && (strcasestr(s, "cublas") || strcasestr(s, "cudnn") || strcasestr(s, "nccl"));
}

static int workspace(const struct gs_replay *r, struct gs_symbolizer *sym, uint32_t stack_id)
{
    const struct gs_stack *st = gs_replay_stack(r, stack_id);
    for (unsigned i = 0; st && i < st->n; i++) {
        if (gs_pc_is_python(st->pcs[i]))
            continue;
        const struct gs_module *m = gs_replay_module_at(r, st->pcs[i]);
        if (!m || !m->path)
            continue;
        const char *base = gs_basename(m->path);
        if (strncmp(base, "libcublas", 9) == 0 || strncmp(base, "libcudnn", 8) == 0 ||
            strncmp(base, "libnccl", 7) == 0)
            return 1;
        const struct gs_frame *f;
        int n = sym ? gs_sym_resolve(sym, m->id, st->pcs[i], &f) : 0;
        for (int k = 0; k < n; k++)
            if (library_name(f[k].function))
                return 1;
    }
    return 0;
}

enum gs_roles_basis gs_roles_basis(const struct gs_replay *r)
{
    const struct gs_roles *g = gs_roles_of(r);
    if (g && (g->seen[GS_PHASE_FORWARD] || g->seen[GS_PHASE_BACKWARD] ||
              g->seen[GS_PHASE_OPTIMIZER]))
        return GS_BASIS_PHASES;
    return gs_marks_step_label(&r->marks) != GS_MARK_OTHER ? GS_BASIS_LIFETIMES : GS_BASIS_NONE;
}

int gs_role_told(const struct gs_replay *r, enum gs_role role, const char **why)
{
    enum gs_roles_basis b = gs_roles_basis(r);
    const char *no = NULL;
    if (role == GS_ROLE_WORKSPACE || role == GS_ROLE_UNCLASSIFIED)
        no = NULL; /* by the stack, or what no rule decides */
    else if (b == GS_BASIS_NONE)
        no = "no steps are marked and no forward, backward or optimizer phase was seen";
    else if (b == GS_BASIS_LIFETIMES && role != GS_ROLE_HELD && role != GS_ROLE_STEP_LOCAL)
        no = "no forward, backward or optimizer phase was seen (NVTX ranges, gpushim.region, "
             "PyTorch's autograd threads or Python frames would name them): what is held and "
             "what lives within a step is told, not which of them is which";
    else if (b == GS_BASIS_PHASES && (role == GS_ROLE_HELD || role == GS_ROLE_STEP_LOCAL))
        no = NULL; /* told too: what the phases left undecided */
    if (why)
        *why = no;
    return no == NULL;
}

/* The step label's steps, where they tell lifetimes: the end of the first
 * and when the teardown began (frees from then on are the program's end's:
 * after the last step ended, or inside it when the end of the run ended it;
 * UINT64_MAX with fewer than two steps); *after: when the last step ended,
 * where what followed is no step (step ends, ranges; else UINT64_MAX);
 * *from_start: the first step began with the run (step ends). 0 when there
 * is no step label, or no step that
 * a mark ended (only one the end of the run cut, a failure in the first
 * step: its end is no step's end), or an old checkpoint's label whose first
 * step's end is not known. */
static int steps_of(const struct gs_replay *r, uint64_t *first_end, uint64_t *teardown,
                    uint64_t *after, int *from_start)
{
    uint32_t k = gs_marks_step_label(&r->marks);
    if (k == GS_MARK_OTHER)
        return 0;
    const struct gs_mark_label *l = &r->marks.labels[k];
    if (!l->steps || !l->first_end_ns || (l->steps == 1 && l->cut))
        return 0;
    *first_end = l->first_end_ns;
    *teardown = l->steps < 2 ? UINT64_MAX : l->cut ? l->last_start_ns : l->last_end_ns;
    *after = l->cut ? UINT64_MAX : l->last_end_ns;
    *from_start = l->first_start_ns == 0;
    return 1;
}

/* The rules, in order (docs/commands.md "By role"). */
static enum gs_role decide(const struct gs_replay *r, struct gs_symbolizer *sym,
                           const struct gs_roles *g, size_t site, enum gs_role_why *why)
{
    const struct gs_site *m = &r->sites[site];
    *why = GS_WHY_MIXED;
    if (m->kind != GS_KIND_DEVICE)
        return GS_ROLE_UNCLASSIFIED;
    *why = GS_WHY_NONE;
    if (workspace(r, sym, m->stack_id))
        return GS_ROLE_WORKSPACE;
    *why = GS_WHY_MIXED;
    if (site >= g->nsites)
        return GS_ROLE_UNCLASSIFIED;
    const struct gs_role_site *s = &g->sites[site];
    uint64_t n = 0, phases = 0;
    for (int p = 0; p < GS_PHASE_COUNT; p++) {
        n += s->made[p];
        phases += p != GS_PHASE_NONE && s->made[p];
    }
    if (!n)
        return GS_ROLE_UNCLASSIFIED;
    uint64_t end = UINT64_MAX, teardown = UINT64_MAX, after = UINT64_MAX;
    int from_start = 0, steps = steps_of(r, &end, &teardown, &after, &from_start);
    /* kept: none freed before the teardown; held: kept, and all made by the
     * end of the first step */
    int kept = !s->freed || (steps && s->first_free_ns >= teardown);
    int held = kept && steps && s->last_ns <= end;
    /* step-local: every one freed in the step it was made in; where the
     * first step began with the run, what came before its label did is the
     * first step's */
    uint64_t made_in = s->made_in_step + (from_start ? s->made_unlabelled : 0);
    uint64_t freed_in = s->freed_in_step + (from_start ? s->freed_unlabelled : 0);
    int local = steps && s->freed && freed_in == s->freed && made_in == n && s->last_ns < after;
    enum gs_roles_basis basis = gs_roles_basis(r);
    *why = GS_WHY_NONE;
    if (basis == GS_BASIS_PHASES) {
        if (s->freed && s->freed_as_temporary == s->freed)
            return GS_ROLE_TEMPORARIES;
        if (s->made[GS_PHASE_FORWARD] == n && s->freed && s->freed_in_backward == s->freed)
            return GS_ROLE_ACTIVATIONS;
        if (s->made[GS_PHASE_BACKWARD] == n && !s->backward_in_backward)
            return GS_ROLE_GRADIENTS;
        if (s->made[GS_PHASE_OPTIMIZER] == n && kept && (!steps || s->last_ns <= end))
            return GS_ROLE_OPTIMIZER_STATE;
        if (s->made[GS_PHASE_NONE] == n && held)
            return GS_ROLE_PARAMETERS;
        if (s->made[GS_PHASE_NONE] == n && local)
            return GS_ROLE_STEP_LOCAL; /* outside the phases, within a step: an input batch */
    } else if (basis == GS_BASIS_LIFETIMES) {
        if (held)
            return GS_ROLE_HELD;
        if (local)
            return GS_ROLE_STEP_LOCAL;
    }
    if (basis == GS_BASIS_NONE)
        *why = GS_WHY_NO_STEPS;
    else if (phases > 1)
        *why = GS_WHY_PHASES;
    else if (kept && s->made[GS_PHASE_FORWARD] == n)
        *why = GS_WHY_KEPT_FROM_FORWARD;
    else if (s->made[GS_PHASE_FORWARD] == n && !g->seen[GS_PHASE_BACKWARD])
        *why = GS_WHY_NO_BACKWARD;
    else if (!steps)
        *why = GS_WHY_NO_STEPS;
    else if (kept && s->last_ns > end)
        *why = GS_WHY_KEPT_EVERY_STEP;
    else if (s->freed && s->freed_in_step < s->freed && steps)
        *why = GS_WHY_ACROSS_STEPS;
    else
        *why = GS_WHY_MIXED;
    return GS_ROLE_UNCLASSIFIED;
}

const char *gs_roles_not_told(const struct gs_trace_info *info, const struct gs_replay *r)
{
    if (!gs_roles_of(r))
        return "not analysed";
    if (!r->peak_bytes)
        return "no device memory";
    struct gs_alloc_mode m;
    gs_allocator_mode(info, r, &m);
    if (m.per_tensor == 0)
        return "the driver allocations are a caching allocator's segments, each holding "
               "tensors of any role: record with gpushim run --per-tensor";
    return NULL;
}

enum gs_role gs_site_role(const struct gs_replay *r, struct gs_symbolizer *sym, size_t site)
{
    struct gs_roles *g = gs_roles_of(r);
    if (!g || site >= r->nsites)
        return GS_ROLE_UNCLASSIFIED;
    if (site < g->nsites && g->sites[site].role >= 0)
        return (enum gs_role)g->sites[site].role;
    enum gs_role_why why;
    enum gs_role role = decide(r, sym, g, site, &why);
    struct gs_role_site *s = site_stats(g, site);
    if (s) {
        s->role = (int8_t)role;
        s->why = (int8_t)why;
    }
    return role;
}

enum gs_role_why gs_site_role_why(const struct gs_replay *r, struct gs_symbolizer *sym,
                                  size_t site)
{
    const struct gs_roles *g = gs_roles_of(r);
    if (gs_site_role(r, sym, site) != GS_ROLE_UNCLASSIFIED)
        return GS_WHY_NONE;
    return g && site < g->nsites ? (enum gs_role_why)g->sites[site].why : GS_WHY_MIXED;
}

uint64_t gs_roles_at_peak(const struct gs_replay *r, struct gs_symbolizer *sym,
                          uint64_t out[GS_ROLE_COUNT], size_t largest[GS_ROLE_COUNT])
{
    uint64_t all = 0, most[GS_ROLE_COUNT] = {0};
    memset(out, 0, GS_ROLE_COUNT * sizeof *out);
    for (int k = 0; largest && k < GS_ROLE_COUNT; k++)
        largest[k] = SIZE_MAX;
    for (size_t i = 0; i < r->nsites; i++) {
        uint64_t count, b = gs_site_peak_bytes(r, &r->sites[i], &count); /* 0: not device */
        if (!b)
            continue;
        enum gs_role role = gs_site_role(r, sym, i);
        out[role] += b;
        all += b;
        if (b > most[role]) {
            most[role] = b;
            if (largest)
                largest[role] = i;
        }
    }
    return all;
}

int gs_roles_at_failure(const struct gs_replay *r, struct gs_symbolizer *sym, size_t idx,
                        uint64_t out[GS_ROLE_COUNT])
{
    const struct gs_roles *g = gs_roles_of(r);
    memset(out, 0, GS_ROLE_COUNT * sizeof *out);
    for (size_t k = 0; g && k < g->nfailures; k++) {
        const struct failure_sites *f = &g->failures[k];
        if (f->failure != idx)
            continue;
        for (size_t i = 0; i < f->n; i++)
            out[gs_site_role(r, sym, f->site[i])] += f->bytes[i];
        return 1;
    }
    return 0;
}
