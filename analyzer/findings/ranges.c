/*
 * ranges.c - memory by NVTX range, within the replay's one streaming pass
 * (attached to it as a hook, gs_ranges_attach: the analyzer's alone).
 *
 * A range is a label in a domain under a parent: a pushed range's parent is
 * the innermost range its thread had pushed then (of any domain), so "step
 * > forward" and a forward outside any step are two ranges; a started
 * range (nvtxRangeStart, which may end on another thread) is at the top.
 * A pop ends its thread's innermost pushed range of its domain; an end, the
 * started range of its id.
 *
 * For each instance: its peak (the most device bytes live while it was
 * open, counting what was live when it opened), the device bytes made live
 * while it was open by any thread, and of those the bytes still live when
 * it ended ("kept"). An allocation was made inside an instance when its
 * number (gs_live_alloc.seq) is past the number of allocations when the
 * instance opened.
 *
 * Without work per event for each open instance: the instances open are
 * kept in the order they opened, and each holds its part of the figures
 * from when it opened to when the next one still open did (its "piece").
 * A change of device memory goes to the last piece (the peak, a new
 * allocation) or to the piece of the last instance opened before the
 * allocation was made (a free: a binary search). An instance's figures are
 * its piece and every later one together; when it ends, its piece goes to
 * the instance before it, which covers that time too.
 *
 * Memory stays bounded: at most GS_RANGE_NODES ranges and GS_RANGES_OPEN
 * open instances (more are counted, not followed), the last GS_RANGES_KEPT
 * instances in a ring. An instance of a range past GS_RANGE_NODES is kept
 * open with no range (GS_RANGE_NONE), so that its pop ends it and not its
 * parent; its figures go to the instances around it as any piece's do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/findings/ranges.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/text.h"

struct gs_range_open {
    uint32_t node, tid, domain;
    int pushed;
    uint64_t id;        /* started: its id */
    uint64_t nth;
    uint64_t serial;    /* gs_ranges.opened when it opened */
    uint64_t start_ns;
    uint64_t start_seq; /* allocations made before it opened */
    /* its piece */
    uint64_t peak;
    uint64_t in;
    int64_t net; /* made live less ended, of allocations made inside */
};

struct ranges_ctx {
    struct gs_ranges g;
    struct gs_idmap *by_key; /* a node's key (key_of) -> index */
};

static void clear(struct ranges_ctx *c)
{
    free(c->g.nodes);
    free(c->g.recent);
    free(c->g.open);
    free(c->g.failure_node);
    for (size_t i = 0; i <= GS_RANGE_DOMAINS; i++)
        free(c->g.domains[i]);
    gs_idmap_free(c->by_key);
    memset(c, 0, sizeof *c);
}

static void ranges_reset(void *ctx, struct gs_replay *r)
{
    (void)r; /* a checkpoint: the ranges before it are not in this trace */
    clear(ctx);
}

static void ranges_free(void *ctx) { clear(ctx); }

static uint64_t key_of(uint32_t parent, uint32_t domain, int started, const char *label)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = label; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    h = (h ^ parent) * 1099511628211ull;
    h = (h ^ domain) * 1099511628211ull;
    return (h ^ (uint64_t)started) * 1099511628211ull;
}

/* The node of (parent, domain, label), made if new: GS_RANGE_NONE past the limit. */
static uint32_t node_of(struct ranges_ctx *c, uint32_t parent, uint32_t domain, int started,
                        const char *label)
{
    struct gs_ranges *g = &c->g;
    if (!c->by_key && !(c->by_key = gs_idmap_new()))
        return GS_RANGE_NONE;
    uint64_t key = key_of(parent, domain, started, label), idx;
    for (int probe = 0; probe < 16; probe++, key++) { /* a collision takes the next key */
        if (gs_idmap_get(c->by_key, key, &idx) != 0)
            break;
        const struct gs_range_node *n = &g->nodes[idx];
        if (n->parent == parent && n->domain == domain && n->started == started &&
            strcmp(n->label, label) == 0)
            return (uint32_t)idx;
    }
    if (g->nnodes >= GS_RANGE_NODES)
        return GS_RANGE_NONE;
    if (!g->nodes && !(g->nodes = calloc(GS_RANGE_NODES, sizeof *g->nodes)))
        return GS_RANGE_NONE;
    if (gs_idmap_put(c->by_key, key, g->nnodes) != 0)
        return GS_RANGE_NONE;
    struct gs_range_node *n = &g->nodes[g->nnodes];
    memset(n, 0, sizeof *n);
    snprintf(n->label, sizeof n->label, "%s", label);
    n->domain = domain;
    n->parent = parent;
    n->depth = parent == GS_RANGE_NONE ? 0 : g->nodes[parent].depth + 1;
    n->started = started;
    n->first_ns = UINT64_MAX;
    return (uint32_t)g->nnodes++;
}

/* The index of the last open instance of tid that was pushed (of domain,
 * or of any when any is set; followed ones only when followed is set), or -1. */
static ptrdiff_t last_pushed(const struct gs_ranges *g, uint32_t tid, uint32_t domain, int any,
                             int followed)
{
    for (size_t i = g->nopen; i-- > 0;)
        if (g->open[i].pushed && g->open[i].tid == tid && (any || g->open[i].domain == domain) &&
            (!followed || g->open[i].node != GS_RANGE_NONE))
            return (ptrdiff_t)i;
    return -1;
}

static void open_instance(struct ranges_ctx *c, struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_ranges *g = &c->g;
    int pushed = e->op == GS_RANGE_PUSH;
    uint32_t domain = e->stream <= GS_RANGE_DOMAINS ? (uint32_t)e->stream : 0;
    char label[GS_MAX_LABEL + 1];
    gs_text_copy(label, sizeof label, e->label, e->label ? e->label_len : 0);
    uint32_t parent = GS_RANGE_NONE;
    if (pushed) { /* the innermost followed: a range not followed has no node */
        ptrdiff_t p = last_pushed(g, e->tid, 0, 1, 1);
        parent = p < 0 ? GS_RANGE_NONE : g->open[p].node;
    }
    if (g->nopen == g->open_cap && g->nopen < GS_RANGES_OPEN) {
        size_t cap = g->open_cap ? g->open_cap * 2 : 16;
        struct gs_range_open *o = realloc(g->open, cap * sizeof *o);
        if (o) {
            g->open = o;
            g->open_cap = cap;
        }
    }
    if (g->nopen == g->open_cap) {
        /* no room even to hold its place: its pop may end another */
        g->dropped++;
        return;
    }
    /* Past GS_RANGE_NODES a range is not followed, but holds its place,
     * so that its pop or end ends it and nothing else. */
    uint32_t node = node_of(c, parent, domain, !pushed, label);
    uint64_t opened = 0;
    if (node == GS_RANGE_NONE) {
        g->dropped++;
    } else {
        struct gs_range_node *n = &g->nodes[node];
        if (n->first_ns == UINT64_MAX)
            n->first_ns = e->time_ns;
        opened = n->ended;
        for (size_t i = 0; i < g->nopen; i++)
            opened += g->open[i].node == node;
    }
    g->open[g->nopen++] = (struct gs_range_open){.node = node,
                                                 .tid = e->tid,
                                                 .domain = domain,
                                                 .pushed = pushed,
                                                 .id = e->addr,
                                                 .nth = opened + 1,
                                                 .serial = ++g->opened,
                                                 .start_ns = e->time_ns,
                                                 .start_seq = r->allocations,
                                                 .peak = r->live_bytes};
}

/* Instance i's figures: its piece and every later one. */
static struct gs_range_instance whole(const struct gs_ranges *g, size_t i)
{
    const struct gs_range_open *o = &g->open[i];
    struct gs_range_instance x = {.node = o->node, .tid = o->tid, .nth = o->nth,
                                  .start_ns = o->start_ns};
    for (size_t j = i; j < g->nopen; j++) {
        if (g->open[j].peak > x.peak)
            x.peak = g->open[j].peak;
        x.allocated += g->open[j].in;
        x.kept += g->open[j].net;
    }
    return x;
}

static void end_instance(struct gs_ranges *g, size_t i, uint64_t now)
{
    struct gs_range_instance x = whole(g, i);
    x.end_ns = now > x.start_ns ? now : x.start_ns;
    if (i > 0) { /* the one before covers this time too */
        struct gs_range_open *prev = &g->open[i - 1], *o = &g->open[i];
        if (o->peak > prev->peak)
            prev->peak = o->peak;
        prev->in += o->in;
        prev->net += o->net;
    }
    memmove(&g->open[i], &g->open[i + 1], (g->nopen - i - 1) * sizeof g->open[0]);
    g->nopen--;
    if (x.node == GS_RANGE_NONE)
        return; /* not followed: it only held its place */
    struct gs_range_node *n = &g->nodes[x.node];
    n->ended++;
    if (n->ended == 1 || x.peak > n->peak_max) {
        n->peak_max = x.peak;
        n->peak_nth = x.nth;
        n->peak_start_ns = x.start_ns;
    }
    n->allocated += x.allocated;
    if (x.allocated > n->allocated_max)
        n->allocated_max = x.allocated;
    n->kept_last = x.kept;
    if (n->ended == 1 || x.kept > n->kept_max)
        n->kept_max = x.kept;
    n->kept_total += x.kept;
    n->kept_nonzero += x.kept > 0;
    if (!g->recent && !(g->recent = calloc(GS_RANGES_KEPT, sizeof *g->recent)))
        return;
    g->recent[g->ended++ % GS_RANGES_KEPT] = x;
}

static void ranges_on_range(void *ctx, struct gs_replay *r, const struct gs_revent *e)
{
    struct ranges_ctx *c = ctx;
    struct gs_ranges *g = &c->g;
    uint32_t domain = e->stream <= GS_RANGE_DOMAINS ? (uint32_t)e->stream : 0;
    ptrdiff_t i = -1;
    switch (e->op) {
    case GS_RANGE_PUSH:
        g->pushes++;
        open_instance(c, r, e);
        return;
    case GS_RANGE_START:
        g->starts++;
        open_instance(c, r, e);
        return;
    case GS_RANGE_POP:
        g->pops++;
        i = last_pushed(g, e->tid, domain, 0, 0);
        break;
    case GS_RANGE_END:
        g->ends++;
        for (size_t k = g->nopen; k-- > 0 && i < 0;)
            if (!g->open[k].pushed && g->open[k].id == e->addr)
                i = (ptrdiff_t)k;
        break;
    case GS_RANGE_DOMAIN:
        if (domain) { /* the domain's number is in its field */
            char name[GS_MAX_LABEL + 1];
            gs_text_copy(name, sizeof name, e->label, e->label ? e->label_len : 0);
            free(g->domains[domain]);
            g->domains[domain] = strdup(name);
        }
        return;
    default:
        return; /* an op of a newer writer */
    }
    if (i < 0)
        g->unmatched++;
    else
        end_instance(g, (size_t)i, e->time_ns);
}

/* The last open instance that opened before allocation seq was made, or -1. */
static ptrdiff_t made_in(const struct gs_ranges *g, uint64_t seq)
{
    size_t lo = 0, hi = g->nopen; /* start_seq never falls along the list */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->open[mid].start_seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static void ranges_on_device(void *ctx, struct gs_replay *r, const struct gs_live_alloc *a,
                             size_t idx, int how)
{
    (void)idx;
    struct gs_ranges *g = &((struct ranges_ctx *)ctx)->g;
    if (!g->nopen)
        return;
    struct gs_range_open *last = &g->open[g->nopen - 1];
    if (how != GS_DEVICE_GONE && r->live_bytes > last->peak)
        last->peak = r->live_bytes;
    ptrdiff_t k = a->seq ? made_in(g, a->seq) : -1;
    if (k < 0)
        return; /* made before every range open now, or before the checkpoint */
    if (how == GS_DEVICE_NEW)
        g->open[k].in += a->size;
    g->open[k].net += how == GS_DEVICE_GONE ? -(int64_t)a->size : (int64_t)a->size;
}

static void ranges_on_failure(void *ctx, struct gs_replay *r, size_t idx)
{
    struct gs_ranges *g = &((struct ranges_ctx *)ctx)->g;
    if (idx >= GS_RANGE_FAILURES || (!g->nopen && !g->failure_node))
        return;
    if (idx >= g->nfailure_nodes) {
        uint32_t *f = realloc(g->failure_node, (idx + 1) * sizeof *f);
        if (!f)
            return;
        for (size_t k = g->nfailure_nodes; k <= idx; k++)
            f[k] = GS_RANGE_NONE;
        g->failure_node = f;
        g->nfailure_nodes = idx + 1;
    }
    /* the innermost range pushed on its thread, else the last started */
    ptrdiff_t i = last_pushed(g, r->failures[idx].tid, 0, 1, 1);
    for (size_t k = g->nopen; k-- > 0 && i < 0;)
        if (!g->open[k].pushed && g->open[k].node != GS_RANGE_NONE)
            i = (ptrdiff_t)k;
    g->failure_node[idx] = i < 0 ? GS_RANGE_NONE : g->open[i].node;
}

static const struct gs_replay_hook ranges_hook = {
    .on_range = ranges_on_range,
    .on_device = ranges_on_device,
    .on_failure = ranges_on_failure,
    .reset = ranges_reset,
    .free = ranges_free,
};

int gs_ranges_attach(struct gs_replay *r)
{
    return gs_replay_attach(r, &ranges_hook, sizeof(struct ranges_ctx)) ? 0 : -1;
}

const struct gs_ranges *gs_ranges_of(const struct gs_replay *r)
{
    static const struct gs_ranges none;
    const struct ranges_ctx *c = gs_replay_hook_ctx(r, &ranges_hook);
    return c ? &c->g : &none;
}

size_t gs_ranges_of_thread(const struct gs_ranges *g, uint32_t tid, uint32_t *nodes,
                           uint64_t *serials, size_t max)
{
    size_t n = 0;
    for (size_t i = g->nopen; i-- > 0 && n < max;)
        if (g->open[i].pushed && g->open[i].tid == tid && g->open[i].node != GS_RANGE_NONE) {
            if (nodes)
                nodes[n] = g->open[i].node;
            if (serials)
                serials[n] = g->open[i].serial;
            n++;
        }
    return n;
}

int gs_ranges_serial_open(const struct gs_ranges *g, uint64_t serial, uint64_t mask)
{
    for (size_t i = g->nopen; i-- > 0;) /* few are open: the innermost are likelier */
        if ((g->open[i].serial & mask) == (serial & mask))
            return 1;
    return 0;
}

int gs_ranges_open_at(const struct gs_ranges *g, size_t i, struct gs_range_instance *out)
{
    if (i >= g->nopen)
        return 0;
    *out = whole(g, i);
    return 1;
}

void gs_range_name(const struct gs_ranges *g, uint32_t node, char *out, size_t outsz)
{
    if (node >= g->nnodes) {
        snprintf(out, outsz, "?");
        return;
    }
    const struct gs_range_node *n = &g->nodes[node];
    const char *domain = n->domain ? g->domains[n->domain] : NULL;
    if (domain)
        snprintf(out, outsz, "[%s] %s", domain, n->label);
    else
        snprintf(out, outsz, "%s", n->label);
}

void gs_range_path(const struct gs_ranges *g, uint32_t node, char *out, size_t outsz)
{
    uint32_t chain[64];
    size_t n = 0;
    for (uint32_t k = node; k < g->nnodes && n < 64; k = g->nodes[k].parent)
        chain[n++] = k;
    size_t len = 0;
    out[0] = 0;
    while (n-- > 0 && len + 1 < outsz) {
        char name[GS_MAX_LABEL + 64];
        gs_range_name(g, chain[n], name, sizeof name);
        int w = snprintf(out + len, outsz - len, "%s%s", len ? " > " : "", name);
        len = w < 0 ? outsz : len + (size_t)w;
    }
}
