/*
 * load.c - a trace read into all that a report or an export needs: the
 * replay of its events, what its header says, how complete it was, and a
 * symbolizer that knows its modules (registered as they come; the ones the
 * stacks name are opened ahead while the rest is read).
 *
 * An export that needs the events themselves, in order (perfetto.c,
 * torch_snapshot.c), watches them in the same one pass: each is handed to
 * it just before and just after the replay applies it, so that the live
 * set, sites and stacks it looks at are those of that moment.
 */
#include <stdio.h>

#include "gpushim_trace.h"
#include "analyzer/trace/trace.h"
#include "analyzer/read/read.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/ranges.h"
#include "analyzer/findings/roles.h"
#include "analyzer/findings/growth.h"
#include "analyzer/findings/oom.h"
#include "analyzer/read/checkpoint_load.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/report/incomplete.h"
#include "analyzer/symbols/symcache.h"
#include "analyzer/report/load.h"

int gs_load(const char *cmd, const char *path, struct gs_loaded *l)
{
    return gs_load_watch(cmd, path, l, NULL);
}

struct watching {
    struct gs_loaded *l;
    const struct gs_event_watch *w;
    uint64_t last_lo, last_span; /* the module the last pc looked up lay in */
    uint32_t last_id;            /* its id */
    int last_ahead;              /* it is handed over to be opened ahead */
    uint64_t scan_budget;        /* module scans left for open_named */
};

/* Modules comparisons that finding the modules stacks name may cost: a
 * hostile trace of many modules and many stacks must not make it the cost
 * of reading (past it, modules are opened when first asked about). */
#define SCAN_BUDGET (1u << 24)

/* Hands the symbolizer, to open ahead, each module the stack's pcs lie in:
 * those its frames will be asked about (unless its symbol cache answers
 * them all). */
static void open_named(struct watching *wa, const uint64_t *pcs, unsigned n)
{
    const struct gs_replay *r = &wa->l->r;
    for (unsigned i = 0; i < n; i++) {
        uint64_t pc = pcs[i];
        if (gs_pc_is_python(pc))
            continue;
        if (pc >= wa->last_lo && pc - wa->last_lo < wa->last_span) {
            /* (a stack's frames are mostly in the module of the one before) */
            if (!wa->last_ahead)
                wa->last_ahead = gs_sym_open_ahead(wa->l->sym, wa->last_id, pc);
            continue;
        }
        if (wa->scan_budget < r->trace.nmodules + 1)
            return;
        wa->scan_budget -= r->trace.nmodules + 1;
        const struct gs_module *m = gs_replay_module_at(r, pc);
        if (m) {
            wa->last_ahead = gs_sym_open_ahead(wa->l->sym, m->id, pc);
            wa->last_id = m->id;
            wa->last_lo = m->lo;
            wa->last_span = m->span;
        }
    }
}

static void watch_module(void *ctx, const struct gs_rmodule *m)
{
    struct watching *wa = ctx;
    struct gs_replay *r = &wa->l->r;
    size_t before = r->trace.nmodules;
    gs_replay_ops.module(r, m);
    if (r->trace.nmodules > before) { /* new (a module defined twice: the first stands) */
        const struct gs_module *mod = &r->trace.modules[r->trace.nmodules - 1];
        gs_sym_add_module(wa->l->sym, mod->id, mod->path, mod->bias, mod->lo, mod->span,
                          mod->build_id, mod->build_id_len);
    }
}

static void watch_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    struct watching *wa = ctx;
    gs_replay_ops.stack(&wa->l->r, id, pcs, n);
    open_named(wa, pcs, n);
}

static void watch_pycode(void *ctx, const struct gs_rpycode *c)
{
    gs_replay_ops.pycode(&((struct watching *)ctx)->l->r, c);
}

/* Each event to the replay, between the watch's two looks. */
static void watch_event(void *ctx, const struct gs_revent *e)
{
    struct watching *wa = ctx;
    if (wa->w->before)
        wa->w->before(wa->w->ctx, wa->l, e);
    gs_replay_event(&wa->l->r, e);
    if (wa->w->after)
        wa->w->after(wa->w->ctx, wa->l, e);
}

/* Each event to the replay, unwatched: straight on (most of reading's cost
 * is per event). */
static void replay_event(void *ctx, const struct gs_revent *e)
{
    gs_replay_event(&((struct watching *)ctx)->l->r, e);
}

static int watch_checkpoint(void *ctx, uint8_t type, const uint8_t *payload, size_t len)
{
    return gs_replay_ops.checkpoint(&((struct watching *)ctx)->l->r, type, payload, len);
}

static void watch_thread(void *ctx, uint32_t tid, const char *name)
{
    gs_replay_ops.thread(&((struct watching *)ctx)->l->r, tid, name);
}

/* Watched or not, the same ops but for events (replay_event when unwatched):
 * modules are registered with the symbolizer as they come, so that it opens
 * those the stacks name while the rest is read. */
static const struct gs_reader_ops watch_ops = {
    .module = watch_module,
    .stack = watch_stack,
    .pycode = watch_pycode,
    .event = watch_event,
    .checkpoint = watch_checkpoint,
    .thread = watch_thread,
};

static int redact;

void gs_load_redact(void) { redact = 1; }

int gs_load_watch(const char *cmd, const char *path, struct gs_loaded *l,
                  const struct gs_event_watch *w)
{
    char err[512];
    struct watching wa = {.l = l, .w = w, .scan_budget = SCAN_BUDGET};
    l->path = path;
    gs_replay_init(&l->r);
    gs_growth_attach(&l->r); /* leak suspects and post-mortems: the analyzer's alone */
    gs_oom_attach(&l->r);
    gs_ranges_attach(&l->r);
    gs_roles_attach(&l->r); /* after the ranges, which it reads */
    l->sym = gs_sym_new();
    char cache[4096];
    int chosen;
    if (l->sym && gs_symcache_dir(cache, sizeof cache, &chosen))
        gs_sym_use_cache(l->sym, cache, chosen);
    struct gs_reader_ops ops = watch_ops;
    if (!w || (!w->before && !w->after))
        ops.event = replay_event;
    int rc = gs_read_trace_seen(path, &ops, &wa, &l->info, &l->st, &l->seen, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "gpushim %s: %s\n", cmd, err);
        gs_sym_free(l->sym);
        l->sym = NULL;
        gs_replay_free(&l->r);
        return -1;
    }
    gs_replay_finish(&l->r);
    l->info.redacted = redact;
    return 0;
}

void gs_loaded_free(struct gs_loaded *l)
{
    struct gs_warnings w;
    gs_warnings_of(&l->info, &l->st, &l->r, &w);
    gs_incomplete_note(l->path, &w);
    gs_sym_free(l->sym);
    gs_replay_free(&l->r);
    gs_read_seen_free(&l->seen);
}
