/*
 * checkpoint.c - the replay state (replay.c) as trace records, and back.
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
 * fragmentation figures (marks.c, blocks.c). The analyzer loads them (gs_checkpoint_load,
 * through gs_replay_ops) in place of the events the file no longer holds.
 *
 * Everything is copied as it stands, peak epochs and the age of each recent
 * free included, and live allocations keep their order, so the events after
 * the checkpoint change the loaded state exactly as they would have changed
 * the state of a replay of the whole history: peak, what each site held at
 * it, leaks, devices, kinds, pools and failures come out the same. Only the
 * slots of the live set are renumbered (free slots are not kept), which no
 * report sees.
 *
 * The loader reads untrusted input: every field is checked against its
 * range before anything changes, a record makes at most one site, live
 * allocation, pool, failure or recent free (so memory grows with the
 * records, not with the numbers in them), and a record out of place (before
 * BEGIN, after END or an event) or a count in END that does not match is
 * refused, for the reader to count as damaged.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "gpushim_cuda.h" /* GS_CUDA_ERROR_OUT_OF_MEMORY */
#include "gpushim_ring.h" /* GS_MAX_RECORD */

/* The totals GS_REC_CKPT_BEGIN carries, in its order: one list for the
 * writer and the loader, so that they cannot disagree. */
static const size_t totals[] = {
    offsetof(struct gs_replay, events),
    offsetof(struct gs_replay, last_time_ns),
    offsetof(struct gs_replay, allocations),
    offsetof(struct gs_replay, frees),
    offsetof(struct gs_replay, failed),
    offsetof(struct gs_replay, frees_unknown),
    offsetof(struct gs_replay, frees_undone),
    offsetof(struct gs_replay, refs),
    offsetof(struct gs_replay, live_bytes),
    offsetof(struct gs_replay, peak_bytes),
    offsetof(struct gs_replay, peak_time_ns),
    offsetof(struct gs_replay, peak_epoch),
    offsetof(struct gs_replay, pool_reserved),
    offsetof(struct gs_replay, pool_used),
    offsetof(struct gs_replay, peak_pool_reserved),
    offsetof(struct gs_replay, peak_pool_used),
    offsetof(struct gs_replay, failures_dropped),
    offsetof(struct gs_replay, nthreads_hint),
    /* added after the first, in groups: a checkpoint may end before any
     * group (then its totals are 0) */
    offsetof(struct gs_replay, rounding_live),
    offsetof(struct gs_replay, rounding_at_peak),
    /* the failures' outcomes (outcome.c) */
    offsetof(struct gs_replay, outcomes.count[GS_OUTCOME_UNRECOVERED]),
    offsetof(struct gs_replay, outcomes.count[GS_OUTCOME_RECOVERED]),
    offsetof(struct gs_replay, outcomes.count[GS_OUTCOME_PROBE]),
    offsetof(struct gs_replay, outcomes.count[GS_OUTCOME_REFUSED]),
    offsetof(struct gs_replay, outcomes.retries),
    offsetof(struct gs_replay, outcomes.retry_ns),
    offsetof(struct gs_replay, outcomes.retry_freed_bytes),
    offsetof(struct gs_replay, outcomes.retry_frees),
    offsetof(struct gs_replay, outcomes.probes),
    offsetof(struct gs_replay, outcomes.probe_bytes),
    offsetof(struct gs_replay, outcomes.probe_largest),
    offsetof(struct gs_replay, outcomes.probe_largest_ns),
};
#define NTOTALS (sizeof totals / sizeof totals[0])
/* Where each group of totals ends: every checkpoint has the first. */
static const size_t total_groups[] = {18, 20, NTOTALS};

static uint64_t *total(struct gs_replay *r, size_t i)
{
    return (uint64_t *)((char *)r + totals[i]);
}

static uint64_t total_of(const struct gs_replay *r, size_t i)
{
    return *(const uint64_t *)((const char *)r + totals[i]);
}

/* The records GS_REC_CKPT_END counts, in its order. */
static const uint8_t end_counts[] = {GS_REC_CKPT_SITE,    GS_REC_CKPT_ALLOC,
                                     GS_REC_CKPT_POOL,    GS_REC_CKPT_FAILURE,
                                     GS_REC_CKPT_RECENT_FREE, GS_REC_CKPT_DEVICE,
                                     GS_REC_CKPT_KIND,
                                     /* added later: an older END ends before it */
                                     GS_REC_CKPT_CHAIN};
#define END_COUNTS_FIRST 7 /* those every END has */

/* How many records of a checkpoint type were loaded. */
#define LOADED(r, type) ((r)->checkpoint.loaded[(type) - GS_REC_CKPT_FIRST])

/* ---- the fields of each record ----
 * What follows a record's key (its index, type or site), in the record's
 * order: one list for the writer and the loader, so that they cannot
 * disagree. A field is an unsigned varint, or a signed one zigzagged; the
 * loader counts as damage a value its member cannot hold, and takes a
 * device number past the devices it counts for unknown, as decode.c does
 * an event's (an older shim's checkpoint may hold the number the program
 * gave). */
enum coding { UNSIGNED, SIGNED, DEVICE };
struct field {
    uint16_t off;
    uint8_t size; /* the member's: 4 or 8 bytes */
    uint8_t coding;
};
/* n, or a compile error (an array of size -1) unless n is 4 or 8 */
#define SIZE_4_OR_8(n) ((n) * sizeof(char[(n) == 4 || (n) == 8 ? 1 : -1]))
#define FIELD(type, member, coding)                                                                \
    {offsetof(type, member), SIZE_4_OR_8(sizeof(((type *)0)->member)), coding}
#define FIELDS(list) list, sizeof list / sizeof list[0]

#define F(m) FIELD(struct gs_device_usage, m, UNSIGNED)
static const struct field device_fields[] = {F(live_bytes), F(peak_bytes), F(peak_time_ns),
                                             F(allocs)};
#undef F
#define F(m) FIELD(struct gs_kind_usage, m, UNSIGNED)
static const struct field kind_fields[] = {F(live_bytes), F(peak_bytes), F(allocs)};
#undef F
#define F(m) FIELD(struct gs_site, m, UNSIGNED)
static const struct field site_fields[] = {
    F(stack_id), F(kind), F(api), F(allocs), F(alloc_bytes), F(live_bytes), F(live_count),
    F(saved_bytes), F(saved_count), F(saved_epoch)};
static const struct field block_site_fields[] = { /* a block site has no kind or API */
    F(stack_id), F(allocs), F(alloc_bytes), F(live_bytes), F(live_count), F(saved_bytes),
    F(saved_count), F(saved_epoch)};
#undef F
/* an allocation's site goes between the two, by its stack id */
#define F(m) FIELD(struct gs_live_alloc, m, UNSIGNED)
static const struct field alloc_head[] = {F(addr), F(size), F(time_ns)};
static const struct field alloc_tail[] = {F(kind), FIELD(struct gs_live_alloc, device, DEVICE),
                                          F(space), F(tid), F(refs), F(parent)};
#undef F
#define F(m) FIELD(struct gs_pool_usage, m, UNSIGNED)
static const struct field pool_fields[] = {
    F(pool), FIELD(struct gs_pool_usage, device, DEVICE), F(reserved), F(used),
    F(peak_reserved), F(peak_used), F(peak_unused), F(samples)};
#undef F
#define F(m) FIELD(struct gs_failure, m, UNSIGNED)
static const struct field failure_fields[] = {
    F(time_ns), F(api), F(result), FIELD(struct gs_failure, device, DEVICE), F(requested),
    F(free_bytes), F(total_bytes), F(process_live_bytes), F(stack_id)};
/* after its thread's name (since outcomes; absent from older checkpoints) */
static const struct field failure_outcome_fields[] = {
    F(outcome), F(chain_prev), F(retry_ns), F(retry_bytes), F(freed_bytes), F(frees)};
#undef F
/* a chain open (outcome.c) after its thread id */
#define F(m) FIELD(struct gs_chain, m, UNSIGNED)
static const struct field chain_fields[] = {
    FIELD(struct gs_chain, device, DEVICE), F(stack_id), F(state), F(probe), F(last),
    F(last_size), F(first_ns), F(failures), F(freed_bytes), F(frees)};
#undef F
/* then, held apart, the allocation of a probe */
#define F(m) FIELD(struct gs_revent, m, UNSIGNED)
static const struct field held_fields[] = {
    F(addr), F(size), F(time_ns), F(stack_id), F(kind), FIELD(struct gs_revent, device, DEVICE),
    F(space), F(api), F(parent), F(stream)};
#undef F
/* after whether it is present; its device is checked, not made unknown */
#define F(m) FIELD(struct gs_frag, m, UNSIGNED)
static const struct field frag_fields[] = {
    F(time_ns), FIELD(struct gs_frag, device, SIGNED), F(segments), F(segment_bytes),
    F(block_bytes), F(largest_free), F(outside_bytes)};
#undef F
#define F(m) FIELD(struct gs_mark_label, m, UNSIGNED)
static const struct field label_fields[] = {
    F(stack_id), F(marks), F(steps), F(first_ns), F(last_ns), F(start_bytes), F(start_in),
    F(start_out), F(step_peak), F(max_peak), F(max_peak_end_ns), F(allocated), F(freed),
    FIELD(struct gs_mark_label, growth, SIGNED), FIELD(struct gs_mark_label, max_growth, SIGNED),
    F(growing)};
#undef F
/* a mark's and a step's after their label */
#define F(m) FIELD(struct gs_mark_item, m, UNSIGNED)
static const struct field mark_fields[] = {F(time_ns), F(device_bytes), F(block_bytes)};
#undef F
#define F(m) FIELD(struct gs_step, m, UNSIGNED)
static const struct field step_fields[] = {F(start_ns), F(end_ns), F(peak_bytes),
                                           F(allocated_bytes), F(freed_bytes),
                                           FIELD(struct gs_step, growth_bytes, SIGNED)};
#undef F
/* a block's site goes between the two, by its stack id */
#define F(m) FIELD(struct gs_block, m, UNSIGNED)
static const struct field block_head[] = {F(addr), F(size), F(time_ns)};
static const struct field block_tail[] = {F(tid)};
#undef F

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
    for (size_t i = 0; i < r->nmodules && !o->failed; i++) {
        const struct gs_module *m = &r->modules[i];
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
    for (size_t i = 0; i < r->npycodes && !o->failed; i++) {
        const struct gs_pycode *c = &r->pycodes[i];
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
    for (size_t i = 0; i < r->nstacks && !o->failed; i++) {
        const struct gs_stack *st = &r->stacks[i];
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
    for (size_t i = 0; i < r->nthreads && !o->failed; i++) {
        const char *name = gs_replay_thread_name(r, r->threads[i].name);
        if (!name)
            continue;
        begin(o);
        put_u(o, r->threads[i].tid);
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

/* The totals GS_REC_CKPT_API_END carries before its fragmentation and
 * counts, in its order. */
#define API_TOTAL(field) offsetof(struct gs_replay, field)
static const size_t api_totals[] = {
    API_TOTAL(marks.marks),        API_TOTAL(marks.nsteps),       API_TOTAL(marks.labels_dropped),
    API_TOTAL(marks.bytes_in),     API_TOTAL(marks.bytes_out),    API_TOTAL(marks.since_peak),
    API_TOTAL(blocks.allocs),      API_TOTAL(blocks.frees),       API_TOTAL(blocks.frees_unknown),
    API_TOTAL(blocks.live_bytes),  API_TOTAL(blocks.live_count),  API_TOTAL(blocks.peak_bytes),
    API_TOTAL(blocks.peak_time_ns), API_TOTAL(blocks.peak_epoch),
};
#define NAPI_TOTALS (sizeof api_totals / sizeof api_totals[0])

/* What CKPT_API_END counts, in its order: the records of each type, and
 * the items of each kind. */
enum { API_LABELS, API_MARKS, API_STEPS, API_FAILURES, API_BLOCK_SITES, API_BLOCKS, API_COUNTS };

static void write_labels(struct out *o, const struct gs_marks *m, uint64_t *n)
{
    for (size_t i = 0; i < m->nlabels && !o->failed; i++) {
        const struct gs_mark_label *l = &m->labels[i];
        begin(o);
        put_u(o, i);
        put_bytes(o, l->label, strlen(l->label));
        put_fields(o, l, FIELDS(label_fields));
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

/* ================= loading ================= */

static uint64_t u(struct gs_cursor *c) { return gs_cursor_u(c); }

static uint32_t u32(struct gs_cursor *c)
{
    uint64_t v = u(c);
    if (v > UINT32_MAX)
        c->bad = 1;
    return (uint32_t)v;
}

static int32_t s32(struct gs_cursor *c)
{
    int64_t v = gs_unzigzag(u(c));
    if (v < INT32_MIN || v > INT32_MAX)
        c->bad = 1;
    return (int32_t)v;
}

static void get_fields(struct gs_cursor *c, void *obj, const struct field *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *at = (char *)obj + f[i].off;
        if (f[i].size == 8) {
            uint64_t v = u(c);
            if (f[i].coding != UNSIGNED)
                v = (uint64_t)gs_unzigzag(v);
            memcpy(at, &v, 8);
        } else if (f[i].coding == UNSIGNED) {
            uint32_t v = u32(c);
            memcpy(at, &v, 4);
        } else {
            int32_t v = s32(c);
            if (f[i].coding == DEVICE && (v < GS_DEVICE_UNKNOWN || v >= GS_MAX_DEVICES))
                v = GS_DEVICE_UNKNOWN;
            memcpy(at, &v, 4);
        }
    }
}

/* The state starts over from the totals; modules, Python code objects and
 * stacks stay. */
static int load_begin(struct gs_replay *r, struct gs_cursor *c)
{
    uint64_t v[NTOTALS] = {0};
    /* each later group of totals whole, or not at all (an older writer's) */
    size_t n = NTOTALS;
    for (size_t i = 0; i < n; i++) {
        v[i] = u(c);
        for (size_t g = 0; g + 1 < sizeof total_groups / sizeof total_groups[0]; g++)
            if (i + 1 == total_groups[g] && c->p == c->end)
                n = total_groups[g];
    }
    if (c->bad)
        return -1;
    gs_replay_reset(r);
    for (size_t i = 0; i < NTOTALS; i++)
        *total(r, i) = v[i];
    r->checkpoint.present = 1;
    r->checkpoint.open = 1;
    r->checkpoint.events = r->events;
    r->checkpoint.time_ns = r->last_time_ns;
    return 0;
}

static int load_device(struct gs_replay *r, struct gs_cursor *c)
{
    int32_t d = s32(c);
    uint64_t present = u(c);
    struct gs_device_usage usage = {.present = present != 0};
    get_fields(c, &usage, FIELDS(device_fields));
    if (c->bad || present > 1 || d < GS_DEVICE_UNKNOWN || d >= GS_MAX_DEVICES)
        return -1;
    r->devices[d == GS_DEVICE_UNKNOWN ? GS_MAX_DEVICES : d] = usage;
    return 0;
}

static int load_kind(struct gs_replay *r, struct gs_cursor *c)
{
    uint64_t k = u(c);
    struct gs_kind_usage usage;
    get_fields(c, &usage, FIELDS(kind_fields));
    if (c->bad || k >= GS_KIND_COUNT)
        return -1;
    r->kinds[k] = usage;
    return 0;
}

/* The threads after a site's fields (put_threads), if there: their names
 * are made only once the whole list has read well. */
static void get_threads(struct gs_cursor *c, struct gs_replay *r, struct gs_site *s)
{
    if (c->bad || c->p >= c->end)
        return; /* none, or an older writer's */
    char names[GS_SITE_THREADS][GS_MAX_THREAD_NAME + 1];
    uint64_t n = u(c);
    if (n > GS_SITE_THREADS) {
        c->bad = 1;
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *text = gs_cursor_bytes(c, &len);
        if (len > GS_MAX_THREAD_NAME)
            c->bad = 1;
        gs_text_copy(names[i], sizeof names[i], text, text ? len : 0);
        s->thread_allocs[i] = u(c);
    }
    s->other_thread_allocs = u(c);
    for (uint64_t i = 0; i < n && !c->bad; i++) {
        uint32_t name = gs_replay_thread_intern(r, names[i]);
        for (uint64_t k = 0; k < i; k++)
            if (s->thread[k] == name)
                c->bad = 1; /* a name twice */
        s->thread[i] = name;
        if (!name)
            c->bad = 1;
    }
}

static int load_site(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_site s = {0};
    get_fields(c, &s, FIELDS(site_fields));
    get_threads(c, r, &s);
    if (c->bad || s.kind >= GS_KIND_COUNT || gs_replay_site(r, s.stack_id, s.kind, 0))
        return -1; /* out of range, or the site twice */
    struct gs_site *made = gs_replay_site(r, s.stack_id, s.kind, 1);
    if (!made)
        return -1;
    *made = s;
    return 0;
}

/* The allocation fields of CKPT_ALLOC and CKPT_RECENT_FREE; the site is
 * left to the caller, which knows whether it must exist. */
static void get_alloc(struct gs_cursor *c, struct gs_live_alloc *a, uint32_t *stack_id)
{
    memset(a, 0, sizeof *a);
    get_fields(c, a, FIELDS(alloc_head));
    *stack_id = u32(c);
    get_fields(c, a, FIELDS(alloc_tail));
    /* Only a mapping holds another allocation (its physical memory's handle),
     * as in the replay: so a free never follows a chain of parents. */
    if (a->parent && a->space != GS_SPACE_MAPPING)
        c->bad = 1;
}

/* The index of the site (stack_id, kind) already loaded, or -1. */
static int64_t site_index(struct gs_replay *r, uint32_t stack_id, uint32_t kind)
{
    struct gs_site *s = kind < GS_KIND_COUNT ? gs_replay_site(r, stack_id, kind, 0) : NULL;
    return s ? s - r->sites : -1;
}

static int load_alloc(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_live_alloc a;
    uint32_t stack_id;
    get_alloc(c, &a, &stack_id);
    if (c->bad || a.kind >= GS_KIND_COUNT || a.space >= GS_SPACE_COUNT || !a.refs)
        return -1;
    int64_t site = site_index(r, stack_id, a.kind);
    if (site < 0 || gs_replay_find_live(r, a.space, a.addr))
        return -1; /* no such site, or the address twice */
    a.site = (uint32_t)site;
    return gs_replay_insert(r, &a);
}

static int load_pool(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_pool_usage p;
    get_fields(c, &p, FIELDS(pool_fields));
    if (c->bad || gs_replay_pool(r, p.pool, p.device, 0))
        return -1;
    struct gs_pool_usage *made = gs_replay_pool(r, p.pool, p.device, 1);
    if (!made)
        return -1;
    *made = p;
    return 0;
}

static int load_failure(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_failure f;
    memset(&f, 0, sizeof f);
    get_fields(c, &f, FIELDS(failure_fields));
    if (!c->bad && c->p < c->end) { /* its thread's name (an older writer's has none) */
        size_t len;
        const uint8_t *text = gs_cursor_bytes(c, &len);
        char name[GS_MAX_THREAD_NAME + 1];
        gs_text_copy(name, sizeof name, text, text ? len : 0);
        if (!c->bad && len > GS_MAX_THREAD_NAME)
            c->bad = 1;
        if (!c->bad && len && !(f.thread = gs_replay_thread_intern(r, name)))
            c->bad = 1;
    }
    /* its outcome; an older writer's has none: decided by its result alone,
     * as its reports did */
    int decided_here = c->bad || c->p >= c->end;
    if (!decided_here)
        get_fields(c, &f, FIELDS(failure_outcome_fields));
    else
        f.outcome = f.result == GS_CUDA_ERROR_OUT_OF_MEMORY ? GS_OUTCOME_UNRECOVERED
                                                            : GS_OUTCOME_REFUSED;
    /* a link names an earlier failure pending too */
    if (f.outcome >= GS_OUTCOME_COUNT ||
        (f.chain_prev && (f.outcome != GS_OUTCOME_PENDING || f.chain_prev > r->nfailures ||
                          r->failures[f.chain_prev - 1].outcome != GS_OUTCOME_PENDING)))
        c->bad = 1;
    if (c->bad || r->nfailures >= GS_MAX_FAILURES ||
        gs_reserve((void **)&r->failures, &r->failures_cap, r->nfailures, sizeof *r->failures) != 0)
        return -1;
    r->failures[r->nfailures++] = f;
    if (decided_here)
        r->outcomes.count[f.outcome]++;
    return 0;
}

static int load_chain(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_chain ch;
    memset(&ch, 0, sizeof ch);
    ch.tid = u32(c);
    get_fields(c, &ch, FIELDS(chain_fields));
    if (!c->bad && ch.state == GS_CHAIN_HELD) {
        get_fields(c, &ch.held, FIELDS(held_fields));
        ch.held.type = GS_REC_ALLOC;
        ch.held.tid = ch.tid;
    }
    for (size_t i = 0; i < r->nchains; i++)
        if (r->chains[i].tid == ch.tid)
            c->bad = 1; /* a thread's chain twice */
    if (c->bad || ch.state > GS_CHAIN_HELD || ch.probe > 1 ||
        (!ch.failures && ch.state != GS_CHAIN_HELD) || /* held with none: a first guess */
        ch.last > r->nfailures ||
        (ch.last && r->failures[ch.last - 1].outcome != GS_OUTCOME_PENDING) ||
        (ch.state == GS_CHAIN_HELD &&
         (ch.held.kind >= GS_KIND_COUNT || ch.held.space >= GS_SPACE_COUNT)) ||
        r->nchains >= GS_MAX_CHAINS ||
        gs_reserve((void **)&r->chains, &r->chains_cap, r->nchains, sizeof *r->chains) != 0)
        return -1;
    r->chains[r->nchains++] = ch;
    return 0;
}

static int load_recent(struct gs_replay *r, struct gs_cursor *c)
{
    uint64_t age = u(c);
    uint32_t tid = u32(c), stack_id;
    uint64_t what = u(c);
    struct gs_live_alloc a;
    get_alloc(c, &a, &stack_id);
    if (c->bad || age >= GS_RECENT_FREES || what > 2 || !r->recent)
        return -1;
    /* A refused free of what was not live names any space; the others are
     * looked up (and an ended allocation restored) in theirs. */
    if (what != 2 && (a.space >= GS_SPACE_COUNT || a.kind >= GS_KIND_COUNT))
        return -1;
    int64_t site = site_index(r, stack_id, a.kind);
    if (what == 1 && site < 0)
        return -1; /* restoring it would need its site */
    a.site = site < 0 ? 0 : (uint32_t)site;
    struct gs_recent_free *f = &r->recent[(r->recent_next - 1 - age) % GS_RECENT_FREES];
    *f = (struct gs_recent_free){.a = a, .tid = tid, .valid = 1, .removed = what == 1,
                                 .nothing = what == 2};
    return 0;
}

/* ---- the marks and blocks ---- */

static void get_frag(struct gs_cursor *c, struct gs_frag *f)
{
    uint64_t present = u(c);
    get_fields(c, f, FIELDS(frag_fields));
    f->present = present != 0;
    if (present > 1 || f->device < GS_DEVICE_UNKNOWN || f->device >= GS_MAX_DEVICES)
        c->bad = 1;
}

/* Labels come in their order, each once. */
static int load_label(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_marks *m = &r->marks;
    uint64_t idx = u(c);
    size_t len;
    const uint8_t *text = gs_cursor_bytes(c, &len);
    struct gs_mark_label l;
    memset(&l, 0, sizeof l);
    get_fields(c, &l, FIELDS(label_fields));
    if (c->bad || idx != m->nlabels || idx >= GS_MARK_LABELS || len > GS_MAX_LABEL || !l.marks)
        return -1;
    if (gs_marks_label(m, (const char *)text, len, 0) != GS_MARK_OTHER)
        return -1; /* the same label twice */
    uint32_t made = gs_marks_label(m, (const char *)text, len, 1);
    if (made != idx)
        return -1;
    memcpy(l.label, m->labels[made].label, sizeof l.label); /* as cleaned */
    m->labels[made] = l;
    return 0;
}

static int label_ok(const struct gs_marks *m, uint64_t label)
{
    return label == GS_MARK_OTHER || label < m->nlabels;
}

static int load_item(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_marks *m = &r->marks;
    struct gs_checkpoint_state *cp = &r->checkpoint;
    uint64_t what = u(c), seq = u(c);
    if (what == 0) {
        struct gs_mark_item it;
        uint64_t label = u(c);
        it.label = (uint32_t)label;
        get_fields(c, &it, FIELDS(mark_fields));
        if (c->bad || !label_ok(m, label) || !m->recent)
            return -1;
        m->recent[seq % GS_MARKS_KEPT] = it;
        cp->api_items[0]++;
        return 0;
    }
    if (what == 1) {
        struct gs_step st;
        uint64_t label = u(c);
        st.label = (uint32_t)label;
        get_fields(c, &st, FIELDS(step_fields));
        if (c->bad || label >= m->nlabels || !m->steps)
            return -1; /* a step is always of a label followed */
        m->steps[seq % GS_STEPS_KEPT] = st;
        cp->api_items[1]++;
        return 0;
    }
    struct gs_frag f;
    get_frag(c, &f);
    if (c->bad || what != 2 || seq >= r->nfailures ||
        gs_blocks_failure_room(&r->blocks, (size_t)seq) != 0)
        return -1;
    r->blocks.at_failure[seq] = f;
    cp->api_items[2]++;
    return 0;
}

static int load_block_site(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_site s = {0};
    get_fields(c, &s, FIELDS(block_site_fields));
    get_threads(c, r, &s);
    if (c->bad || gs_blocks_site(&r->blocks, s.stack_id, 0))
        return -1;
    struct gs_site *made = gs_blocks_site(&r->blocks, s.stack_id, 1);
    if (!made)
        return -1;
    *made = s;
    return 0;
}

static int load_block(struct gs_replay *r, struct gs_cursor *c)
{
    struct gs_block blk;
    get_fields(c, &blk, FIELDS(block_head));
    uint32_t stack_id = u32(c);
    get_fields(c, &blk, FIELDS(block_tail));
    struct gs_site *s = c->bad ? NULL : gs_blocks_site(&r->blocks, stack_id, 0);
    if (!s)
        return -1; /* damaged, or no such site */
    blk.site = (uint32_t)(s - r->blocks.sites);
    return gs_blocks_insert(&r->blocks, &blk);
}

static int load_api_end(struct gs_replay *r, struct gs_cursor *c)
{
    uint64_t v[NAPI_TOTALS], counts[API_COUNTS];
    for (size_t i = 0; i < NAPI_TOTALS; i++)
        v[i] = u(c);
    uint64_t seen = u(c), pending = u(c);
    struct gs_frag at_peak;
    get_frag(c, &at_peak);
    for (int i = 0; i < API_COUNTS; i++)
        counts[i] = u(c);
    const struct gs_checkpoint_state *cp = &r->checkpoint;
#define API_LOADED(type) cp->api_loaded[(type) - GS_REC_CKPT_API_FIRST]
    if (c->bad || seen > 1 || pending > 1 ||
        counts[API_LABELS] != API_LOADED(GS_REC_CKPT_MARK_LABEL) ||
        counts[API_MARKS] != cp->api_items[0] || counts[API_STEPS] != cp->api_items[1] ||
        counts[API_FAILURES] != cp->api_items[2] ||
        counts[API_BLOCK_SITES] != API_LOADED(GS_REC_CKPT_BLOCK_SITE) ||
        counts[API_BLOCKS] != API_LOADED(GS_REC_CKPT_BLOCK))
        return -1;
    uint64_t bytes = 0; /* the live blocks are the blocks that came */
    for (size_t i = 0; i < r->blocks.nblocks; i++)
        if (gs_blocks_slot_live(&r->blocks, i))
            bytes += r->blocks.blocks[i].size;
    for (size_t i = 0; i < NAPI_TOTALS; i++)
        if ((api_totals[i] == API_TOTAL(blocks.live_count) && v[i] != counts[API_BLOCKS]) ||
            (api_totals[i] == API_TOTAL(blocks.live_bytes) && v[i] != bytes))
            return -1;
#undef API_LOADED
    for (size_t i = 0; i < NAPI_TOTALS; i++)
        *(uint64_t *)((char *)r + api_totals[i]) = v[i];
    r->blocks.seen = (int)seen;
    r->blocks.peak_pending = (int)pending;
    r->blocks.at_peak = at_peak;
    return 0;
}

static int load_api(struct gs_replay *r, uint8_t type, struct gs_cursor *c)
{
    int rc;
    switch (type) {
    case GS_REC_CKPT_MARK_LABEL: rc = load_label(r, c); break;
    case GS_REC_CKPT_API_ITEM: rc = load_item(r, c); break;
    case GS_REC_CKPT_BLOCK_SITE: rc = load_block_site(r, c); break;
    case GS_REC_CKPT_BLOCK: rc = load_block(r, c); break;
    default: rc = load_api_end(r, c); break;
    }
    if (rc == 0)
        r->checkpoint.api_loaded[type - GS_REC_CKPT_API_FIRST]++;
    return rc;
}

/* Every record END counts arrived (a damaged block loses some). */
static int load_end(struct gs_replay *r, struct gs_cursor *c)
{
    int whole = 1;
    for (size_t i = 0; i < sizeof end_counts; i++) {
        /* a count an older END does not have: none of those records came */
        uint64_t want = i >= END_COUNTS_FIRST && c->p == c->end && !c->bad ? 0 : u(c);
        if (want != LOADED(r, end_counts[i]))
            whole = 0;
    }
    /* the marks' and blocks' records end with theirs, which says they are whole */
    uint64_t api = 0;
    for (int i = 0; i < GS_REC_CKPT_API_LAST - GS_REC_CKPT_API_FIRST + 1; i++)
        api += r->checkpoint.api_loaded[i];
    if (api && !r->checkpoint.api_loaded[GS_REC_CKPT_API_END - GS_REC_CKPT_API_FIRST])
        whole = 0;
    if (r->blocks.live_count) { /* figures to come are taken from the loaded live sets */
        r->blocks.indexed = 0;
        gs_blocks_index(r);
    }
    r->checkpoint.open = 0;
    return c->bad || !whole ? -1 : 0;
}

int gs_checkpoint_load(struct gs_replay *r, uint8_t type, const uint8_t *payload, size_t len)
{
    struct gs_cursor c = {payload, payload + len, 0};
    if (type == GS_REC_CKPT_BEGIN)
        return load_begin(r, &c);
    int api = type >= GS_REC_CKPT_API_FIRST && type <= GS_REC_CKPT_API_LAST;
    if (!api && (type < GS_REC_CKPT_FIRST ||
                 (type > GS_REC_CKPT_CHAIN && type != GS_REC_CKPT_GRAPH)))
        return 0; /* a newer writer's: skipped, as unknown records are */
    if (!r->checkpoint.open)
        return -1; /* its BEGIN was lost, or it comes after the END or an event */
    if (api) /* after its own END, nothing of it may come */
        return r->checkpoint.api_loaded[GS_REC_CKPT_API_END - GS_REC_CKPT_API_FIRST]
                   ? -1
                   : load_api(r, type, &c);
    int rc;
    switch (type) {
    case GS_REC_CKPT_DEVICE: rc = load_device(r, &c); break;
    case GS_REC_CKPT_KIND: rc = load_kind(r, &c); break;
    case GS_REC_CKPT_SITE: rc = load_site(r, &c); break;
    case GS_REC_CKPT_ALLOC: rc = load_alloc(r, &c); break;
    case GS_REC_CKPT_POOL: rc = load_pool(r, &c); break;
    case GS_REC_CKPT_FAILURE: rc = load_failure(r, &c); break;
    case GS_REC_CKPT_RECENT_FREE: rc = load_recent(r, &c); break;
    case GS_REC_CKPT_CHAIN: rc = load_chain(r, &c); break;
    case GS_REC_CKPT_GRAPH: rc = gs_graphs_load(r, &c); break;
    default: return load_end(r, &c);
    }
    if (rc == 0)
        LOADED(r, type)++;
    return rc;
}
