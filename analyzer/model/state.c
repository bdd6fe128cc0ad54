/*
 * state.c - the bottom of the replay model: what the trace defines (modules,
 * stacks, Python code objects, threads' names), the live set's lookups, and
 * the analyses attached (gs_replay_attach). It calls no other file of the
 * model; blocks.c, marks.c, timeline.c and live.c build on it.
 *
 * Threads' names (GS_REC_THREAD) are kept as the trace defines them, like
 * modules: each distinct name once, and each thread's latest; a site counts
 * its allocations by the name their thread had then, so a pool of workers
 * that share a name counts as one, and a thread renamed midway counts under
 * each name in turn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model_int.h"
#include "analyzer/util/text.h"

void *gs_replay_attach(struct gs_replay *r, const struct gs_replay_hook *h, size_t ctx_size)
{
    void *ctx = r->nhooks < GS_REPLAY_HOOKS ? calloc(1, ctx_size) : NULL;
    if (ctx == NULL)
        return NULL;
    r->hook[r->nhooks] = h;
    r->hook_ctx[r->nhooks++] = ctx;
#define GS_WITH(cb)                                                                  \
    if (h->cb) {                                                                     \
        r->with.cb.fn[r->with.cb.n] = h->cb;                                         \
        r->with.cb.ctx[r->with.cb.n++] = ctx;                                        \
    }
    GS_REPLAY_HOOK_CALLBACKS(GS_WITH)
#undef GS_WITH
    return ctx;
}

void *gs_replay_hook_ctx(const struct gs_replay *r, const struct gs_replay_hook *h)
{
    for (unsigned i = 0; i < r->nhooks; i++)
        if (r->hook[i] == h)
            return r->hook_ctx[i];
    return NULL;
}

static int runtime_module(const char *path)
{
    const char *base = gs_basename(path);
    return strncmp(base, "libgpushim.so", 13) == 0 || strncmp(base, "libcuda.so", 10) == 0 ||
           strncmp(base, "libcudart.so", 12) == 0;
}

void gs_replay_on_module(void *ctx, const struct gs_rmodule *m)
{
    struct gs_replay *r = ctx;
    struct gs_replay_trace *t = &r->trace;
    uint64_t idx;
    if (gs_idmap_get(t->modules_by_id, m->id, &idx) == 0)
        return; /* defined twice (a checkpoint, a copied chunk): the first stands */
    if (gs_reserve((void **)&t->modules, &t->modules_cap, t->nmodules, sizeof *t->modules) != 0)
        return;
    char *path = strdup(m->path);
    if (!path)
        return;
    if (gs_idmap_put(t->modules_by_id, m->id, t->nmodules) != 0) {
        free(path);
        return;
    }
    struct gs_module *mod = &t->modules[t->nmodules++];
    mod->id = m->id;
    mod->bias = m->bias;
    mod->lo = m->lo;
    mod->span = m->span;
    mod->path = path;
    mod->build_id_len = m->build_id_len <= sizeof mod->build_id ? m->build_id_len : 0;
    if (mod->build_id_len) /* none may come as NULL (the shim's own modules) */
        memcpy(mod->build_id, m->build_id, mod->build_id_len);
    mod->is_runtime = runtime_module(path);
}

void gs_replay_on_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    struct gs_replay *r = ctx;
    struct gs_replay_trace *t = &r->trace;
    uint64_t idx;
    if (gs_idmap_get(t->stacks_by_id, id, &idx) == 0)
        return; /* defined twice: the first stands */
    if (gs_reserve((void **)&t->stacks, &t->stacks_cap, t->nstacks, sizeof *t->stacks) != 0)
        return;
    uint64_t *copy = malloc((n ? n : 1) * sizeof *copy);
    if (!copy)
        return;
    memcpy(copy, pcs, n * sizeof *pcs);
    if (gs_idmap_put(t->stacks_by_id, id, t->nstacks) != 0) {
        free(copy);
        return;
    }
    t->stacks[t->nstacks++] = (struct gs_stack){.id = id, .n = n, .pcs = copy};
}

void gs_replay_on_pycode(void *ctx, const struct gs_rpycode *c)
{
    struct gs_replay *r = ctx;
    struct gs_replay_trace *t = &r->trace;
    uint64_t idx;
    if (gs_idmap_get(t->pycodes_by_id, c->id, &idx) == 0)
        return; /* defined twice: the first stands */
    if (gs_reserve((void **)&t->pycodes, &t->pycodes_cap, t->npycodes, sizeof *t->pycodes) != 0)
        return;
    char *file = strdup(c->file), *function = strdup(c->function);
    if (!file || !function || gs_idmap_put(t->pycodes_by_id, c->id, t->npycodes) != 0) {
        free(file);
        free(function);
        return;
    }
    t->pycodes[t->npycodes++] = (struct gs_pycode){
        .id = c->id, .first_line = c->first_line, .file = file, .function = function};
}

const struct gs_pycode *gs_replay_pycode(const struct gs_replay *r, uint32_t id)
{
    uint64_t idx;
    return gs_idmap_get(r->trace.pycodes_by_id, id, &idx) == 0 ? &r->trace.pycodes[idx] : NULL;
}

/* ---- thread names ---- */

static uint64_t name_hash(const char *text)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

const char *gs_replay_thread_name(const struct gs_replay *r, uint32_t name)
{
    return name && name <= r->trace.nthread_names ? r->trace.thread_names[name - 1] : NULL;
}

uint32_t gs_replay_thread_intern(struct gs_replay *r, const char *text)
{
    struct gs_replay_trace *t = &r->trace;
    char cut[GS_MAX_THREAD_NAME + 1];
    snprintf(cut, sizeof cut, "%s", text);
    uint64_t h = name_hash(cut), idx;
    int hashed = gs_idmap_get(t->thread_names_by_hash, h, &idx) == 0;
    if (hashed && strcmp(t->thread_names[idx], cut) == 0)
        return (uint32_t)idx + 1;
    for (size_t i = 0; hashed && i < t->nthread_names; i++) /* two names, one hash */
        if (strcmp(t->thread_names[i], cut) == 0)
            return (uint32_t)i + 1;
    if (t->nthread_names >= UINT32_MAX - 1 ||
        gs_reserve((void **)&t->thread_names, &t->thread_names_cap, t->nthread_names,
                   sizeof *t->thread_names) != 0)
        return 0;
    char *copy = strdup(cut);
    if (!copy || (!hashed && gs_idmap_put(t->thread_names_by_hash, h, t->nthread_names) != 0)) {
        free(copy);
        return 0;
    }
    t->thread_names[t->nthread_names++] = copy;
    return (uint32_t)t->nthread_names;
}

void gs_replay_thread_named(struct gs_replay *r, uint32_t tid, const char *text)
{
    struct gs_replay_trace *t = &r->trace;
    uint32_t name = gs_replay_thread_intern(r, text);
    uint64_t idx;
    r->last_tid_valid = 0;
    if (gs_idmap_get(t->threads_by_tid, tid, &idx) == 0) {
        t->threads[idx].name = name; /* renamed, or a new thread with an old one's tid */
        return;
    }
    if (!name ||
        gs_reserve((void **)&t->threads, &t->threads_cap, t->nthreads, sizeof *t->threads) != 0 ||
        gs_idmap_put(t->threads_by_tid, tid, t->nthreads) != 0)
        return;
    t->threads[t->nthreads++] = (struct gs_thread){.tid = tid, .name = name};
}

uint32_t gs_replay_thread_of(const struct gs_replay *r, uint32_t tid)
{
    uint64_t idx;
    return gs_idmap_get(r->trace.threads_by_tid, tid, &idx) == 0 ? r->trace.threads[idx].name : 0;
}

void gs_site_count_thread(struct gs_site *s, uint32_t name)
{
    if (!name)
        return;
    for (int i = 0; i < GS_SITE_THREADS; i++) {
        if (s->thread[i] == name || !s->thread[i]) {
            s->thread[i] = name;
            s->thread_allocs[i]++;
            return;
        }
    }
    s->other_thread_allocs++;
}

void gs_replay_on_thread(void *ctx, uint32_t tid, const char *name)
{
    gs_replay_thread_named(ctx, tid, name);
}

const struct gs_stack *gs_replay_stack(const struct gs_replay *r, uint32_t id)
{
    uint64_t idx;
    return gs_idmap_get(r->trace.stacks_by_id, id, &idx) == 0 ? &r->trace.stacks[idx] : NULL;
}

const struct gs_module *gs_replay_module_at(const struct gs_replay *r, uint64_t pc)
{
    /* The latest module that holds pc: a later image at the same place
     * replaced an earlier one. */
    for (size_t i = r->trace.nmodules; i-- > 0;) {
        const struct gs_module *m = &r->trace.modules[i];
        if (pc >= m->lo && pc - m->lo < m->span)
            return m;
    }
    return NULL;
}

/* ---- the live set's lookups ---- */

struct gs_live_alloc *gs_replay_find_live(const struct gs_replay *r, uint32_t space,
                                          uint64_t addr)
{
    return gs_live_find(r, space, addr);
}

int gs_replay_slot_live(const struct gs_replay *r, size_t idx)
{
    /* A free slot's addr threads the free list: its (space, addr) is not
     * in the live set, or is another slot's. */
    const struct gs_live_alloc *a = &r->allocs[idx];
    return gs_live_find(r, a->space, a->addr) == a;
}
