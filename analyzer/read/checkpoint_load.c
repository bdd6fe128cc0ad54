/*
 * checkpoint_load.c - a checkpoint's records loaded into a replay
 * (gs_checkpoint_load), and the replay's reader callbacks with it
 * (gs_replay_ops): the analyzer's alone. The shim writes checkpoints
 * (analyzer/model/checkpoint.c, which says what they hold) but never reads
 * one, so libgpushim.so holds none of this.
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

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/util/cursor.h"
#include "analyzer/util/idmap.h"
#include "analyzer/util/reserve.h"
#include "analyzer/model/checkpoint_fields.h"
#include "analyzer/read/checkpoint_load.h"
#include "gpushim_cuda.h" /* GS_CUDA_ERROR_OUT_OF_MEMORY */

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
    if (c->p < c->end) {
        get_fields(c, &l, FIELDS(label_step_fields));
    } else { /* an old writer's: a step open since its last mark; its first
              * step's end and its last's unknown (0: the roles tell no
              * lifetime from them) */
        l.open = GS_STEP_BEGUN;
        l.start_ns = l.last_ns;
        l.first_start_ns = l.first_ns;
    }
    if (c->bad || idx != m->nlabels || idx >= GS_MARK_LABELS || len > GS_MAX_LABEL || !l.marks ||
        l.open > GS_STEP_AFTER || l.nvtx_marks > l.marks)
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
        struct gs_mark_item it = {0};
        uint64_t label = u(c);
        it.label = (uint32_t)label;
        get_fields(c, &it, FIELDS(mark_fields));
        if (c->p < c->end)
            get_fields(c, &it, FIELDS(mark_kind_fields)); /* an old writer's: a mark */
        if (c->bad || !label_ok(m, label) || !m->recent || it.kind > GS_MARK_RANGE)
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

/* Every record END counts arrived (a damaged chunk loses some). */
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

/* ---- the CUDA graphs: GS_REC_CKPT_GRAPH (analyzer/model/graphs.c builds them) ---- */

static int32_t graph_device(struct gs_cursor *c)
{
    int64_t d = gs_unzigzag(u(c));
    return d < -1 || d >= GS_MAX_DEVICES ? GS_DEVICE_UNKNOWN : (int32_t)d;
}

static int load_graph(struct gs_replay *r, struct gs_cursor *c)
{
    uint64_t what = u(c);
    r->graphs.seen = 1;
    if (what == 0) {
        struct gs_graph_pool p = {.seen = 1};
        int32_t d = graph_device(c);
        p.reserved = u(c);
        p.live = u(c);
        p.sampled_reserved = u(c);
        p.sampled_used = u(c);
        p.samples = u(c);
        p.peak_reserved = u(c);
        p.launches = u(c);
        p.launches_failed = u(c);
        p.stack_id = (uint32_t)u(c);
        p.api = (uint32_t)u(c);
        p.prev_reserved = u(c);
        if (c->bad || p.api >= GS_API_COUNT)
            return -1;
        *gs_graphs_pool(r, d) = p;
        return 0;
    }
    if (what == 1) {
        uint64_t which = u(c), handle = u(c), graph = u(c), flags = u(c);
        int32_t dev = graph_device(c);
        uint64_t launches = u(c), n = u(c);
        if (c->bad || which > GS_GRAPH_OBJ_CAPTURE || n > (uint64_t)(c->end - c->p) ||
            gs_graphs_find(r, (uint32_t)which, handle))
            return -1; /* each node takes a byte at least */
        struct gs_graph_obj *o = gs_graphs_make(r, (uint32_t)which, handle);
        if (!o)
            return -1;
        o->graph = graph;
        o->flags = flags;
        o->launches = launches;
        for (uint64_t i = 0; i < n && !c->bad; i++) {
            struct gs_graph_node node;
            node.is_free = u(c) != 0;
            node.addr = u(c);
            node.size = u(c);
            uint64_t stack = u(c), api = u(c);
            node.device = graph_device(c);
            node.stack_id = stack > UINT32_MAX ? 0 : (uint32_t)stack;
            node.api = api >= GS_API_COUNT ? GS_API_UNKNOWN : (uint32_t)api;
            if (!c->bad && gs_graphs_add_node(o, &node) != 0)
                return -1;
        }
        o->device = dev;
        return c->bad ? -1 : 0;
    }
    if (what == 2) {
        uint64_t addr = u(c);
        int32_t d = graph_device(c);
        if (c->bad || !gs_replay_find_live(r, GS_SPACE_ADDRESS, addr))
            return -1;
        return gs_idmap_put(r->graphs.live, addr, (uint64_t)(d + 1));
    }
    if (what == 3) {
        uint64_t tid = u(c), exec = u(c);
        if (c->bad || tid > UINT32_MAX)
            return -1;
        r->graphs.pending = 1;
        r->graphs.pending_tid = (uint32_t)tid;
        r->graphs.pending_exec = exec;
        return 0;
    }
    if (what == 4) {
        uint64_t nodes = u(c), execs = u(c);
        if (c->bad)
            return -1;
        r->graphs.nodes = nodes;
        r->graphs.execs_made = execs;
        return 0;
    }
    return 0; /* a newer writer's */
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
    case GS_REC_CKPT_GRAPH: rc = load_graph(r, &c); break;
    default: return load_end(r, &c);
    }
    if (rc == 0)
        LOADED(r, type)++;
    return rc;
}

static int on_checkpoint(void *ctx, uint8_t type, const uint8_t *payload, size_t len)
{
    return gs_checkpoint_load(ctx, type, payload, len);
}

const struct gs_reader_ops gs_replay_ops = {
    .module = gs_replay_on_module,
    .stack = gs_replay_on_stack,
    .pycode = gs_replay_on_pycode,
    .event = gs_replay_on_event,
    .checkpoint = on_checkpoint,
    .thread = gs_replay_on_thread,
};
