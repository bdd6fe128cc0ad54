/*
 * sites.c - from stacks to the call sites a person reads.
 *
 * A recorded stack starts inside the shim or the CUDA libraries; the report
 * starts it at the program's own call site, the first frame outside them.
 * Stacks that are the same from there on, line for line, are one site: a
 * cudaMalloc and the cuMemAlloc it made differ only in frames nobody wants
 * to read, and an unrolled loop calls from several addresses of one line.
 * The frames every stack shares (_start, start_thread) are left out.
 *
 * A stack with Python frames is shown merged (pyframes.c): the Python
 * frames in place of the interpreter's, and sites are one when their merged
 * frames are; the native view (report --native) shows and merges the native
 * frames alone, as for a program without Python.
 *
 * The blocks of the program's own allocator (blocks.c) are ranked the same
 * way, by the call sites of gpushim_block_alloc; the public API's wrappers
 * (include/gpushim.h), compiled into the program, are not its call site.
 *
 * A thread's name never splits a site: a reported site lists the names of
 * the threads that allocated at the raw sites it merges, with their
 * allocations; and what PyTorch's autograd was doing there, from the
 * frames (autograd.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/idmap.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/symbols/symbolize.h"
#include "analyzer/symbols/symbols.h"
#include "analyzer/symbols/symbols_int.h"
#include "analyzer/util/text.h"

/* How many of the stack's pcs are native: all up to the first Python pc. */
static unsigned native_count(const struct gs_stack *st)
{
    unsigned n = 0;
    while (n < st->n && !gs_pc_is_python(st->pcs[n]))
        n++;
    return n;
}

/* Index of the first frame of the program's own code among the first n. */
static unsigned first_own_frame(const struct gs_replay *r, const struct gs_stack *st, unsigned n)
{
    unsigned i = 0;
    while (i < n) {
        const struct gs_module *m = gs_replay_module_at(r, st->pcs[i]);
        if (!m || !m->is_runtime)
            break;
        i++;
    }
    return i == n ? 0 : i; /* all runtime frames: show them rather than nothing */
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

static uint64_t mix_string(uint64_t h, const char *str)
{
    for (const unsigned char *p = (const unsigned char *)(str ? str : ""); *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return mix(h, 0xff);
}

/* Whether function is one of the n names. */
static int named(const char *function, const char *const *names, size_t n)
{
    for (size_t i = 0; function && i < n; i++)
        if (strcmp(function, names[i]) == 0)
            return 1;
    return 0;
}

static void hash_frame(void *ctx, const struct gs_frame *f, unsigned index)
{
    uint64_t *h = ctx;
    (void)index;
    if (f->function || f->file) {
        *h = mix_string(mix_string(*h, f->function), f->file);
        *h = mix(*h, (uint64_t)f->line);
    } else {
        *h = mix(*h, f->pc);
    }
}

/* Identifies a site by its source frames as view shows them, so that
 * stacks that differ only in return addresses of the same lines (an
 * unrolled loop) are one site. Merged, what the stack says of Python counts
 * too: a thread without the GIL is not one with it. */
uint64_t gs_site_key(const struct gs_replay *r, struct gs_symbolizer *sym,
                     enum gs_stack_view view, uint32_t stack_id)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    if (!gs_site_frames_unshown(r, sym, stack_id, view, UINT32_MAX, hash_frame, &h))
        return 0x5bd1e995ull ^ stack_id; /* unknown stacks stay apart */
    if (view == GS_VIEW_MERGED)
        h = mix(h, (uint64_t)gs_site_python(r, stack_id));
    return h;
}

/* ---- the threads of a site ---- */

void gs_tally_add(struct gs_thread_tally *t, uint32_t name, uint64_t allocs)
{
    if (!name || !allocs)
        return;
    for (unsigned i = 0; i < t->n; i++)
        if (t->name[i] == name) {
            t->allocs[i] += allocs;
            return;
        }
    if (t->n == GS_TALLY_THREADS) {
        t->other += allocs;
        return;
    }
    t->name[t->n] = name;
    t->allocs[t->n++] = allocs;
}

void gs_tally_add_site(struct gs_thread_tally *t, const struct gs_site *s)
{
    for (int i = 0; i < GS_SITE_THREADS; i++)
        gs_tally_add(t, s->thread[i], s->thread_allocs[i]);
    t->other += s->other_thread_allocs;
}

void gs_tally_sort(struct gs_thread_tally *t)
{
    for (unsigned i = 1; i < t->n; i++) /* a few entries: insertion */
        for (unsigned k = i; k > 0 && (t->allocs[k] > t->allocs[k - 1] ||
                                       (t->allocs[k] == t->allocs[k - 1] &&
                                        t->name[k] < t->name[k - 1]));
             k--) {
            uint32_t name = t->name[k];
            uint64_t allocs = t->allocs[k];
            t->name[k] = t->name[k - 1];
            t->allocs[k] = t->allocs[k - 1];
            t->name[k - 1] = name;
            t->allocs[k - 1] = allocs;
        }
}

static int by_bytes(const void *a, const void *b)
{
    const struct gs_report_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Ranks from (device sites of the allocations, or block sites). */
static size_t rank(const struct gs_replay *r, struct gs_symbolizer *sym, int blocks,
                   enum gs_stack_view view, enum gs_site_metric metric,
                   struct gs_report_site **out)
{
    const struct gs_site *from = blocks ? r->blocks.sites : r->sites;
    size_t nfrom = blocks ? r->blocks.nsites : r->nsites;
    struct gs_report_site *sites = calloc(nfrom ? nfrom : 1, sizeof *sites);
    struct gs_idmap *merged = gs_idmap_new();
    size_t n = 0;
    if (!sites || !merged) {
        free(sites);
        gs_idmap_free(merged);
        *out = NULL;
        return 0;
    }
    for (size_t i = 0; i < nfrom; i++) {
        const struct gs_site *s = &from[i];
        uint64_t bytes, count;
        if (!blocks && s->kind != GS_KIND_DEVICE)
            continue;
        if (metric == GS_METRIC_PEAK) {
            bytes = blocks ? gs_block_site_peak_bytes(&r->blocks, s, &count)
                           : gs_site_peak_bytes(r, s, &count);
        } else if (metric == GS_METRIC_ALLOCATED) {
            bytes = s->alloc_bytes;
            count = s->allocs;
        } else {
            bytes = s->live_bytes;
            count = s->live_count;
        }
        if (!count)
            continue;
        uint64_t key = gs_site_key(r, sym, view, s->stack_id), at;
        if (gs_idmap_get(merged, key, &at) != 0) {
            at = n++;
            sites[at].stack_id = s->stack_id;
            sites[at].api = s->api;
            gs_idmap_put(merged, key, at);
        }
        sites[at].bytes += bytes;
        sites[at].count += count;
        gs_tally_add_site(&sites[at].threads, s);
    }
    gs_idmap_free(merged);
    for (size_t i = 0; i < n; i++)
        gs_tally_sort(&sites[i].threads);
    qsort(sites, n, sizeof *sites, by_bytes);
    *out = sites;
    return n;
}

size_t gs_rank_sites(const struct gs_replay *r, struct gs_symbolizer *sym,
                     enum gs_stack_view view, enum gs_site_metric metric,
                     struct gs_report_site **out)
{
    return rank(r, sym, 0, view, metric, out);
}

size_t gs_rank_block_sites(const struct gs_replay *r, struct gs_symbolizer *sym,
                           enum gs_stack_view view, enum gs_site_metric metric,
                           struct gs_report_site **out)
{
    return rank(r, sym, 1, view, metric, out);
}

/* A growing array of frames. */
struct frame_list {
    struct gs_frame *f;
    size_t n, cap;
    int failed;
};

static void frame_add(struct frame_list *l, const struct gs_frame *f)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct gs_frame *nf = realloc(l->f, cap * sizeof *nf);
        if (!nf) {
            l->failed = 1;
            return;
        }
        l->f = nf;
        l->cap = cap;
    }
    l->f[l->n++] = *f;
}

/* The native source frames of the stack's first n pcs, from the program's
 * own call site on, plumbing left out. */
static void native_frames(const struct gs_replay *r, struct gs_symbolizer *sym,
                          const struct gs_stack *st, unsigned n, struct frame_list *out)
{
    for (unsigned i = first_own_frame(r, st, n); i < n; i++) {
        const struct gs_module *m = gs_replay_module_at(r, st->pcs[i]);
        if (!m) {
            struct gs_frame f = {.module = "?", .pc = st->pcs[i], .stack_index = i};
            frame_add(out, &f);
            continue;
        }
        const struct gs_frame *frames;
        int nf = gs_sym_resolve(sym, m->id, st->pcs[i], &frames);
        for (int k = 0; k < nf; k++) {
            if (gs_sym_plumbing(frames[k].function, m->path))
                continue;
            struct gs_frame f = frames[k];
            f.stack_index = i;
            frame_add(out, &f);
        }
    }
}

/* The public API's wrappers (include/gpushim.h): compiled into the program,
 * usually inlined, but the shim's side of a mark or block all the same. */
static int api_wrapper(const char *function)
{
    static const char *const names[] = {"gpushim_mark", "gpushim_block_alloc",
                                        "gpushim_block_free", "gpushim_flush",
                                        "gpushim_lookup_"};
    return named(function, names, sizeof names / sizeof names[0]);
}

enum gs_py_state gs_site_python(const struct gs_replay *r, uint32_t stack_id)
{
    const struct gs_stack *st = gs_replay_stack(r, stack_id);
    return st ? gs_py_stack_state(st->pcs, st->n) : GS_PY_NONE;
}

static unsigned site_frames(const struct gs_replay *r, struct gs_symbolizer *sym,
                            uint32_t stack_id, enum gs_stack_view view, unsigned max,
                            gs_frame_fn fn, void *ctx, int shown_to_person)
{
    const struct gs_stack *st = gs_replay_stack(r, stack_id);
    if (!st)
        return 0;
    unsigned nn = native_count(st);
    struct frame_list native = {0}, py = {0}, merged = {0};
    native_frames(r, sym, st, nn, &native);
    for (unsigned i = nn; view == GS_VIEW_MERGED && i < st->n; i++) {
        if (!gs_pc_is_python(st->pcs[i]) || !gs_py_pc_code(st->pcs[i]))
            continue; /* a marker, or a native pc where none belongs */
        struct gs_frame f;
        gs_py_frame(r, st->pcs[i], &f);
        f.stack_index = i;
        frame_add(&py, &f);
    }
    const struct gs_frame *show = native.f;
    size_t n = native.n, before;
    if (py.n && !native.failed && !py.failed) {
        merged.f = malloc((native.n + py.n) * sizeof *merged.f);
        if (merged.f) {
            n = gs_py_merge(native.f, native.n, py.f, py.n, merged.f, &before);
            show = merged.f;
            (void)before;
        }
    }
    unsigned shown = 0;
    size_t i = 0;
    while (i < n && api_wrapper(show[i].function)) /* the program's side of the API call */
        i++;
    for (; i < n && shown < max; i++) {
        const struct gs_module *m = !shown_to_person || show[i].python || show[i].function
                                        ? NULL
                                        : gs_replay_module_at(r, st->pcs[show[i].stack_index]);
        if (m)
            gs_sym_shown(sym, m->id, st->pcs[show[i].stack_index]);
        fn(ctx, &show[i], shown++);
    }
    free(native.f);
    free(py.f);
    free(merged.f);
    return shown;
}

unsigned gs_site_frames(const struct gs_replay *r, struct gs_symbolizer *sym, uint32_t stack_id,
                        enum gs_stack_view view, unsigned max, gs_frame_fn fn, void *ctx)
{
    return site_frames(r, sym, stack_id, view, max, fn, ctx, 1);
}

unsigned gs_site_frames_unshown(const struct gs_replay *r, struct gs_symbolizer *sym,
                                uint32_t stack_id, enum gs_stack_view view, unsigned max,
                                gs_frame_fn fn, void *ctx)
{
    return site_frames(r, sym, stack_id, view, max, fn, ctx, 0);
}

struct backward {
    char *out;
    size_t sz;
    int found;
};

static void backward_frame(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct backward *b = ctx;
    (void)index;
    if (!b->found && !f->python && gs_autograd_backward_of(f->function, b->out, b->sz))
        b->found = 1;
}

int gs_site_backward_of(const struct gs_replay *r, struct gs_symbolizer *sym, uint32_t stack_id,
                        char *out, size_t outsz)
{
    struct backward b = {out, outsz, 0};
    gs_site_frames_unshown(r, sym, stack_id, GS_VIEW_NATIVE, UINT32_MAX, backward_frame, &b);
    return b.found;
}

struct where {
    char *buf;
    size_t sz;
};

void gs_frame_name(const struct gs_frame *f, char *buf, size_t sz)
{
    const char *base = gs_basename(f->file);
    if (f->function && base)
        snprintf(buf, sz, "%s (%s:%d)", f->function, base, f->line);
    else if (f->function)
        snprintf(buf, sz, "%s", f->function);
    else
        snprintf(buf, sz, "0x%" PRIx64 " (%s)", f->pc, f->module ? f->module : "?");
}

static void innermost(void *ctx, const struct gs_frame *f, unsigned index)
{
    struct where *w = ctx;
    if (index == 0) {
        gs_frame_name(f, w->buf, w->sz);
        return;
    }
    size_t len = strlen(w->buf);
    if (len + 7 < w->sz) {
        memcpy(w->buf + len, " from ", 7);
        gs_frame_name(f, w->buf + len + 6, w->sz - len - 6);
    }
}

void gs_site_where(const struct gs_replay *r, struct gs_symbolizer *sym, enum gs_stack_view view,
                   uint32_t stack_id, char *buf, size_t sz)
{
    struct where w = {buf, sz};
    snprintf(buf, sz, "an unknown call site");
    gs_site_frames(r, sym, stack_id, view, 2, innermost, &w);
}
