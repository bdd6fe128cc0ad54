/*
 * checkpoint.c - the replay state (replay.c) as trace records: the writer
 * (the loader is the analyzer's alone: analyzer/read/checkpoint_load.c).
 *
 * A trace bounded by GPUSHIM_MAX_BYTES goes on in a new file when it is
 * full. The shim runs this replay over the events it writes, and starts the
 * new file with what gs_checkpoint_write makes of it: every module, Python
 * code object and stack, every thread's latest name (GS_REC_THREAD), then
 * the checkpoint records (include/gpushim_trace.h): totals,
 * devices, kinds, sites, live allocations, pools, failures with their
 * outcomes, the chains of retries still open (outcome.c), CUDA graphs
 * (graphs.c: their pools, graphs, executables, captures) and the frees a
 * FREE_FAILED may still undo; and, for a run that used the public API, its
 * mark labels, recent marks and steps, blocks, block sites and
 * fragmentation figures (marks.c, blocks.c). The analyzer loads them (gs_checkpoint_load, analyzer/read/
 * checkpoint_load.c) in place of the events the file no longer holds.
 *
 * Everything is copied as it stands, peak epochs and the age of each recent
 * free included, and live allocations keep their order, so the events after
 * the checkpoint change the loaded state exactly as they would have changed
 * the state of a replay of the whole history: peak, what each site held at
 * it, leaks, devices, kinds, pools and failures come out the same. Only the
 * slots of the live set are renumbered (free slots are not kept), which no
 * report sees.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/trace/encode.h"
#include "analyzer/model/model_int.h"
#include "analyzer/model/checkpoint_fields.h"
#include "gpushim_ring.h" /* GS_MAX_RECORD */

/* ================= writing ================= */

/* Room before the payload for its type and length, which are known only
 * once the payload is: the record is put from where they start. */
#define HEAD_ROOM 11

struct out {
    int (*put)(void *ctx, const uint8_t *rec, size_t len);
    void *ctx;
    int failed;
    uint64_t written[GS_REC_CKPT_LAST - GS_REC_CKPT_FIRST + 1];
    size_t n; /* end of the payload in buf */
    uint8_t buf[GS_MAX_RECORD];
};

static void begin(struct out *o) { o->n = HEAD_ROOM; }

/* No payload comes near GS_MAX_RECORD (the longest is a module's: a path of
 * at most 4095 bytes); the checks keep it that way should one grow. */
static void put_u(struct out *o, uint64_t v)
{
    if (o->n + 10 > sizeof o->buf) {
        o->failed = 1;
        return;
    }
    o->n += gs_put_varint(o->buf + o->n, v);
}

static void put_s(struct out *o, int64_t v) { put_u(o, gs_zigzag(v)); }

static void put_fields(struct out *o, const void *obj, const struct field *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *at = (const char *)obj + f[i].off;
        if (f[i].size == 4 && f[i].coding == UNSIGNED) {
            uint32_t v;
            memcpy(&v, at, 4);
            put_u(o, v);
        } else if (f[i].size == 4) {
            int32_t v;
            memcpy(&v, at, 4);
            put_s(o, v);
        } else {
            uint64_t v;
            memcpy(&v, at, 8);
            if (f[i].coding == UNSIGNED)
                put_u(o, v);
            else
                put_s(o, (int64_t)v);
        }
    }
}

static void put_bytes(struct out *o, const void *b, size_t len)
{
    put_u(o, len);
    if (o->failed || len > sizeof o->buf - o->n) {
        o->failed = 1;
        return;
    }
    memcpy(o->buf + o->n, b, len);
    o->n += len;
}

/* Frames the payload built since begin() and hands the record to put. */
static void emit(struct out *o, uint8_t type)
{
    if (o->failed)
        return;
    uint8_t head[HEAD_ROOM];
    size_t plen = o->n - HEAD_ROOM, h = 0;
    head[h++] = type;
    h += gs_put_varint(head + h, plen);
    uint8_t *rec = o->buf + HEAD_ROOM - h;
    memcpy(rec, head, h);
    if (o->put(o->ctx, rec, h + plen) != 0) {
        o->failed = 1;
        return;
    }
    if (type >= GS_REC_CKPT_FIRST && type <= GS_REC_CKPT_LAST)
        o->written[type - GS_REC_CKPT_FIRST]++;
}

static void write_modules(struct out *o, const struct gs_replay *r)
{
    for (size_t i = 0; i < r->trace.nmodules && !o->failed; i++) {
        const struct gs_module *m = &r->trace.modules[i];
        if (!m->id)
            continue; /* not a valid id: a reader would refuse it */
        begin(o);
        put_u(o, m->id);
        put_u(o, m->bias);
        put_u(o, m->lo);
        put_u(o, m->span);
        put_bytes(o, m->path, strnlen(m->path, 4095)); /* what a reader keeps */
        put_bytes(o, m->build_id, m->build_id_len);
        emit(o, GS_REC_MODULE);
    }
}

static void write_pycodes(struct out *o, const struct gs_replay *r)
{
    for (size_t i = 0; i < r->trace.npycodes && !o->failed; i++) {
        const struct gs_pycode *c = &r->trace.pycodes[i];
        if (!c->id || c->id > GS_PY_MAX_CODE)
            continue; /* not a valid id: a reader would refuse it */
        begin(o);
        put_u(o, c->id);
        put_bytes(o, c->file, strnlen(c->file, 4095)); /* what a reader keeps */
        put_bytes(o, c->function, strnlen(c->function, 1023));
        put_u(o, c->first_line);
        emit(o, GS_REC_PYCODE);
    }
}

static void write_stacks(struct out *o, const struct gs_replay *r)
{
    for (size_t i = 0; i < r->trace.nstacks && !o->failed; i++) {
        const struct gs_stack *st = &r->trace.stacks[i];
        unsigned n = st->n < GS_MAX_FRAMES ? st->n : GS_MAX_FRAMES;
        uint64_t prev = 0;
        if (!st->id)
            continue;
        begin(o);
        put_u(o, st->id);
        put_u(o, n);
        for (unsigned k = 0; k < n; k++) {
            put_s(o, (int64_t)(st->pcs[k] - prev));
            prev = st->pcs[k];
        }
        emit(o, GS_REC_STACK);
    }
}

/* Each thread's latest name, so that events after the checkpoint are named
 * as before it: a thread is named once, before its first event. */
static void write_threads(struct out *o, const struct gs_replay *r)
{
    const struct gs_replay_trace *t = &r->trace;
    for (size_t i = 0; i < t->nthreads && !o->failed; i++) {
        const char *name = gs_replay_thread_name(r, t->threads[i].name);
        if (!name)
            continue;
        begin(o);
        put_u(o, t->threads[i].tid);
        put_bytes(o, name, strlen(name));
        emit(o, GS_REC_THREAD);
    }
}

/* After a site's fields, the threads that allocated there, by name; left
 * out when there are none (as an older writer's checkpoint has none). */
static void put_threads(struct out *o, const struct gs_replay *r, const struct gs_site *s)
{
    unsigned n = 0;
    while (n < GS_SITE_THREADS && gs_replay_thread_name(r, s->thread[n]))
        n++;
    if (!n && !s->other_thread_allocs)
        return;
    put_u(o, n);
    for (unsigned i = 0; i < n; i++) {
        const char *name = gs_replay_thread_name(r, s->thread[i]);
        put_bytes(o, name, strlen(name));
        put_u(o, s->thread_allocs[i]);
    }
    put_u(o, s->other_thread_allocs);
}

static void write_begin(struct out *o, const struct gs_replay *r)
{
    begin(o);
    for (size_t i = 0; i < NTOTALS; i++)
        put_u(o, total_of(r, i));
    emit(o, GS_REC_CKPT_BEGIN);
}

static void write_devices(struct out *o, const struct gs_replay *r)
{
    for (int d = 0; d <= GS_MAX_DEVICES; d++) {
        const struct gs_device_usage *du = &r->devices[d];
        if (!du->present && !du->live_bytes && !du->peak_bytes && !du->peak_time_ns &&
            !du->allocs)
            continue; /* never used */
        begin(o);
        put_s(o, d < GS_MAX_DEVICES ? d : GS_DEVICE_UNKNOWN);
        put_u(o, du->present != 0);
        put_fields(o, du, FIELDS(device_fields));
        emit(o, GS_REC_CKPT_DEVICE);
    }
}

static void write_kinds(struct out *o, const struct gs_replay *r)
{
    for (uint32_t k = 0; k < GS_KIND_COUNT; k++) {
        const struct gs_kind_usage *ku = &r->kinds[k];
        if (!ku->live_bytes && !ku->peak_bytes && !ku->allocs)
            continue;
        begin(o);
        put_u(o, k);
        put_fields(o, ku, FIELDS(kind_fields));
        emit(o, GS_REC_CKPT_KIND);
    }
}

static void write_sites(struct out *o, const struct gs_replay *r)
{
    for (size_t i = 0; i < r->nsites && !o->failed; i++) {
        begin(o);
        put_fields(o, &r->sites[i], FIELDS(site_fields));
        put_threads(o, r, &r->sites[i]);
        emit(o, GS_REC_CKPT_SITE);
    }
}

/* The fields of an allocation, in CKPT_ALLOC and CKPT_RECENT_FREE; its site
 * by its key (stack id, kind), which the loader numbers anew. */
static void put_alloc(struct out *o, const struct gs_replay *r, const struct gs_live_alloc *a)
{
    put_fields(o, a, FIELDS(alloc_head));
    put_u(o, a->site < r->nsites ? r->sites[a->site].stack_id : 0);
    put_fields(o, a, FIELDS(alloc_tail));
}

static void write_live(struct out *o, const struct gs_replay *r)
{
    for (size_t i = 0; i < r->nallocs && !o->failed; i++) {
        if (!gs_replay_slot_live(r, i))
            continue;
        begin(o);
        put_alloc(o, r, &r->allocs[i]);
        emit(o, GS_REC_CKPT_ALLOC);
    }
}

static void write_pools(struct out *o, const struct gs_replay *r)
{
    for (size_t i = 0; i < r->npools && !o->failed; i++) {
        begin(o);
        put_fields(o, &r->pools[i], FIELDS(pool_fields));
        emit(o, GS_REC_CKPT_POOL);
    }
}

/* CUDA graphs (graphs.c): after the live allocations, which the last part
 * names. Written only for a run that used them. */
static void write_graphs(struct out *o, const struct gs_replay *r)
{
    const struct gs_graphs *g = &r->graphs;
    if (!g->seen)
        return;
    begin(o);
    put_u(o, 4);
    put_u(o, g->nodes);
    put_u(o, g->execs_made);
    emit(o, GS_REC_CKPT_GRAPH);
    for (int d = 0; d <= GS_MAX_DEVICES && !o->failed; d++) {
        const struct gs_graph_pool *p = &g->pools[d];
        if (!p->seen)
            continue;
        begin(o);
        put_u(o, 0);
        put_s(o, d < GS_MAX_DEVICES ? d : GS_DEVICE_UNKNOWN);
        put_u(o, p->reserved);
        put_u(o, p->live);
        put_u(o, p->sampled_reserved);
        put_u(o, p->sampled_used);
        put_u(o, p->samples);
        put_u(o, p->peak_reserved);
        put_u(o, p->launches);
        put_u(o, p->launches_failed);
        put_u(o, p->stack_id);
        put_u(o, p->api);
        put_u(o, p->prev_reserved);
        emit(o, GS_REC_CKPT_GRAPH);
    }
    for (size_t i = 0; i < g->nobjs && !o->failed; i++) {
        const struct gs_graph_obj *x = &g->objs[i];
        begin(o);
        put_u(o, 1);
        put_u(o, x->which);
        put_u(o, x->handle);
        put_u(o, x->graph);
        put_u(o, x->flags);
        put_s(o, x->device);
        put_u(o, x->launches);
        put_u(o, x->n);
        for (size_t k = 0; k < x->n; k++) {
            put_u(o, x->nodes[k].is_free);
            put_u(o, x->nodes[k].addr);
            put_u(o, x->nodes[k].size);
            put_u(o, x->nodes[k].stack_id);
            put_u(o, x->nodes[k].api);
            put_s(o, x->nodes[k].device);
        }
        emit(o, GS_REC_CKPT_GRAPH);
    }
    if (g->pending) { /* a launch that failed for memory, its failure still to come */
        begin(o);
        put_u(o, 3);
        put_u(o, g->pending_tid);
        put_u(o, g->pending_exec);
        emit(o, GS_REC_CKPT_GRAPH);
    }
    for (size_t i = 0; i < r->nallocs && !o->failed; i++) {
        const struct gs_live_alloc *a = &r->allocs[i];
        uint64_t v;
        if (a->space != GS_SPACE_ADDRESS || !gs_replay_slot_live(r, i) ||
            gs_idmap_get(g->live, a->addr, &v) != 0)
            continue;
        begin(o);
        put_u(o, 2);
        put_u(o, a->addr);
        put_s(o, (int64_t)v - 1);
        emit(o, GS_REC_CKPT_GRAPH);
    }
}

static void write_failures(struct out *o, const struct gs_replay *r)
{
    for (size_t i = 0; i < r->nfailures && !o->failed; i++) {
        begin(o);
        put_fields(o, &r->failures[i], FIELDS(failure_fields));
        const char *thread = gs_replay_thread_name(r, r->failures[i].thread);
        put_bytes(o, thread ? thread : "", thread ? strlen(thread) : 0);
        put_fields(o, &r->failures[i], FIELDS(failure_outcome_fields));
        emit(o, GS_REC_CKPT_FAILURE);
    }
}

/* The chains open (outcome.c), after the failures they link. */
static void write_chains(struct out *o, const struct gs_replay *r)
{
    for (size_t i = 0; i < r->nchains && !o->failed; i++) {
        const struct gs_chain *c = &r->chains[i];
        begin(o);
        put_u(o, c->tid);
        put_fields(o, c, FIELDS(chain_fields));
        if (c->state == GS_CHAIN_HELD)
            put_fields(o, &c->held, FIELDS(held_fields));
        emit(o, GS_REC_CKPT_CHAIN);
    }
}

/* Each with its age, so that later frees push it out of the window at the
 * same moment as they would have. */
static void write_recent(struct out *o, const struct gs_replay *r)
{
    if (!r->recent)
        return;
    for (size_t age = GS_RECENT_FREES; age-- > 0 && !o->failed;) {
        const struct gs_recent_free *f = &r->recent[(r->recent_next - 1 - age) % GS_RECENT_FREES];
        if (!f->valid)
            continue;
        begin(o);
        put_u(o, age);
        put_u(o, f->tid);
        put_u(o, f->removed ? 1 : f->nothing ? 2 : 0);
        put_alloc(o, r, &f->a);
        emit(o, GS_REC_CKPT_RECENT_FREE);
    }
}

/* ---- the marks and blocks (marks.c, blocks.c) ---- */

static void put_frag(struct out *o, const struct gs_frag *f)
{
    put_u(o, f->present != 0);
    put_fields(o, f, FIELDS(frag_fields));
}


static void write_labels(struct out *o, const struct gs_marks *m, uint64_t *n)
{
    for (size_t i = 0; i < m->nlabels && !o->failed; i++) {
        const struct gs_mark_label *l = &m->labels[i];
        begin(o);
        put_u(o, i);
        put_bytes(o, l->label, strlen(l->label));
        put_fields(o, l, FIELDS(label_fields));
        put_fields(o, l, FIELDS(label_step_fields));
        emit(o, GS_REC_CKPT_MARK_LABEL);
        (*n)++;
    }
}

/* Recent marks and steps by their number in the run (the ring slot is the
 * number's), oldest first. */
static void write_rings(struct out *o, const struct gs_marks *m, uint64_t *nmarks,
                        uint64_t *nsteps)
{
    if (!m->recent)
        return;
    for (uint64_t seq = m->marks > GS_MARKS_KEPT ? m->marks - GS_MARKS_KEPT : 0;
         seq < m->marks && !o->failed; seq++) {
        const struct gs_mark_item *it = &m->recent[seq % GS_MARKS_KEPT];
        begin(o);
        put_u(o, 0);
        put_u(o, seq);
        put_u(o, it->label);
        put_fields(o, it, FIELDS(mark_fields));
        put_fields(o, it, FIELDS(mark_kind_fields));
        emit(o, GS_REC_CKPT_API_ITEM);
        (*nmarks)++;
    }
    for (uint64_t seq = m->nsteps > GS_STEPS_KEPT ? m->nsteps - GS_STEPS_KEPT : 0;
         seq < m->nsteps && !o->failed; seq++) {
        const struct gs_step *st = &m->steps[seq % GS_STEPS_KEPT];
        begin(o);
        put_u(o, 1);
        put_u(o, seq);
        put_u(o, st->label);
        put_fields(o, st, FIELDS(step_fields));
        emit(o, GS_REC_CKPT_API_ITEM);
        (*nsteps)++;
    }
}

static void write_failure_frags(struct out *o, const struct gs_replay *r, uint64_t *n)
{
    const struct gs_blocks *b = &r->blocks;
    for (size_t i = 0; i < r->nfailures && i < b->at_failure_cap && !o->failed; i++) {
        if (!b->at_failure[i].present)
            continue;
        begin(o);
        put_u(o, 2);
        put_u(o, i);
        put_frag(o, &b->at_failure[i]);
        emit(o, GS_REC_CKPT_API_ITEM);
        (*n)++;
    }
}

static void write_blocks(struct out *o, const struct gs_replay *r, uint64_t *nsites,
                         uint64_t *nblocks)
{
    const struct gs_blocks *b = &r->blocks;
    for (size_t i = 0; i < b->nsites && !o->failed; i++) {
        begin(o);
        put_fields(o, &b->sites[i], FIELDS(block_site_fields));
        put_threads(o, r, &b->sites[i]);
        emit(o, GS_REC_CKPT_BLOCK_SITE);
        (*nsites)++;
    }
    for (size_t i = 0; i < b->nblocks && !o->failed; i++) {
        if (!gs_blocks_slot_live(b, i))
            continue;
        const struct gs_block *blk = &b->blocks[i];
        begin(o);
        put_fields(o, blk, FIELDS(block_head));
        put_u(o, blk->site < b->nsites ? b->sites[blk->site].stack_id : 0);
        put_fields(o, blk, FIELDS(block_tail));
        emit(o, GS_REC_CKPT_BLOCK);
        (*nblocks)++;
    }
}

/* Written only for a run with marks or blocks: without them, none of this
 * state changes what a report says. */
static void write_api(struct out *o, const struct gs_replay *r)
{
    uint64_t n[API_COUNTS] = {0};
    if (!r->marks.marks && !r->blocks.seen)
        return;
    write_labels(o, &r->marks, &n[API_LABELS]);
    write_rings(o, &r->marks, &n[API_MARKS], &n[API_STEPS]);
    write_failure_frags(o, r, &n[API_FAILURES]);
    write_blocks(o, r, &n[API_BLOCK_SITES], &n[API_BLOCKS]);
    begin(o);
    for (size_t i = 0; i < NAPI_TOTALS; i++)
        put_u(o, *(const uint64_t *)((const char *)r + api_totals[i]));
    put_u(o, r->blocks.seen != 0);
    put_u(o, r->blocks.peak_pending != 0);
    put_frag(o, &r->blocks.at_peak);
    for (int i = 0; i < API_COUNTS; i++)
        put_u(o, n[i]);
    emit(o, GS_REC_CKPT_API_END);
}

static void write_end(struct out *o)
{
    begin(o);
    for (size_t i = 0; i < sizeof end_counts; i++)
        put_u(o, o->written[end_counts[i] - GS_REC_CKPT_FIRST]);
    emit(o, GS_REC_CKPT_END);
}

int gs_checkpoint_write(const struct gs_replay *r,
                        int (*put)(void *ctx, const uint8_t *rec, size_t len), void *ctx)
{
    struct out *o = calloc(1, sizeof *o); /* a record's room: kept off the caller's stack */
    if (!o)
        return -1;
    o->put = put;
    o->ctx = ctx;
    write_modules(o, r);
    write_pycodes(o, r); /* before the stacks that name them */
    write_stacks(o, r);
    write_threads(o, r);
    write_begin(o, r);
    write_devices(o, r);
    write_kinds(o, r);
    write_sites(o, r); /* before the allocations that name them */
    write_live(o, r);
    write_graphs(o, r);
    write_pools(o, r);
    write_failures(o, r);
    write_chains(o, r);
    write_recent(o, r);
    write_api(o, r);
    write_end(o);
    int failed = o->failed;
    free(o);
    return failed ? -1 : 0;
}
