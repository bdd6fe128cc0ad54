/*
 * whatif.c - owns the what-if replay: a run's tensor-level allocations and
 * frees, in the trace's order and on their streams, handed to one allocator
 * model (models.c: PyTorch's caching allocator or XLA's BFC) per (setting,
 * card) and per device, side by side in one pass; and what each model did: its figures,
 * where it first ran out (call site, step), and which of the run's failed
 * requests it would have served.
 *
 * What a tensor is depends on how the run was recorded (enum
 * gs_wi_source): each device allocation, until the trace shows
 * stream-ordered or pluggable-allocator allocations (gpushim run
 * --per-tensor), which then are the tensors and everything else is memory
 * outside the allocator; or the program allocator's own blocks, whose
 * segments the model replaces. When the trace shows a finer source than
 * the one replayed so far, the models start over with it: the events
 * before it were not tensors.
 *
 * The models take the events in batches (struct op), each case's model in
 * turn over the batch; what the events do to the state every case shares
 * (the live set, what is outside the allocator, the failed requests kept)
 * is done as they come. A live tensor's row holds each model's handle of
 * it, so the models keep no map of their own.
 *
 * One model serves several cases while they would do the same (models.h,
 * following): on each device a case follows the first case before it in
 * the replay's order (no limit first, then cards; without max_split_size
 * first) whose model its own would copy, and gets that one's outcome; at
 * the op where it could first act otherwise, its model is forked from the
 * one it followed, and takes the ops from there in its own turn.
 *
 * A request that failed in the run is offered to each model; one that
 * serves it frees it at once, since what the program did next in the run
 * was the failure's path, not the tensor's life. Under blocks, what failed
 * is the segment the program's allocator asked the driver for: its size
 * stands for the block's. Blocks are as the program's allocator sized them
 * (its rounding included): those sizes are the requests replayed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/util/idmap.h"
#include "analyzer/util/text.h"
#include "analyzer/model/marks.h"
#include "analyzer/read/read.h"
#include "analyzer/whatif/whatif.h"

#define LABELS 32               /* mark labels counted for the step of an OOM */

#define OPS 8192 /* the events buffered before the models take them */

enum { OP_ALLOC, OP_FAILED, OP_RELEASE, OP_EXTERNAL };

/* What an event asks of every case's model. */
struct op {
    uint8_t kind;          /* OP_* */
    uint8_t slot;          /* the device's, in gs_whatif.dev */
    uint8_t first_failure; /* OP_FAILED: the device's first */
    uint16_t kept;         /* OP_FAILED: its index in failed[] + 1; 0: not kept */
    uint32_t stack_id, tid, step_label;
    uint32_t row;          /* OP_ALLOC, OP_RELEASE: the tensor's row in its device's */
    int32_t device;
    uint64_t id, size, stream, time_ns, request, step; /* id: the address (0: failed) */
    uint64_t outside;      /* memory outside the allocator after it */
};

/* A label's steps, as marks.c counts them (docs/api.md "Marks and steps"):
 * which one runs now. */
struct label {
    char text[GS_MAX_LABEL + 1];
    uint64_t marks, nvtx; /* marks, and NVTX's of them (gs_marks_better_counts) */
    uint64_t begun;       /* steps begun: the one running now, from 1 */
    uint32_t open;        /* enum gs_step_open */
    uint32_t range_tid;   /* open since an outermost range pushed on it, */
    uint64_t range_id;    /* or started with that id */
};

#define NO_CASE UINT8_MAX

struct dev {
    struct gs_wi_device d;
    struct gs_wi_model *m[GS_WI_CASES]; /* the cases' own models (NULL: following) */
    /* Following: the case whose model each runs on (itself: its own), on
     * what conditions; the conditional followers of a case chained from
     * first_f[it] through next_f; the op of this batch its own model takes
     * first (forked in the batch: the one it forked at, else 0). */
    uint8_t lead[GS_WI_CASES];
    struct gs_wi_follow follow[GS_WI_CASES];
    uint8_t first_f[GS_WI_CASES], next_f[GS_WI_CASES];
    uint32_t from[GS_WI_CASES];
    struct gs_idmap *live; /* tensor id (address) -> its row */
    /* a row per live tensor: its size as requested, and each case's handle
     * of it (an array per case, which its turn over a batch reads alone);
     * free rows chained through their size */
    uint64_t *sizes;
    uint32_t *handles[GS_WI_CASES];
    uint32_t nrows, caprows, free_row;
};

struct gs_whatif {
    struct gs_wi_setting settings[GS_WI_SETTINGS];
    size_t nsettings;
    struct gs_wi_case cases[GS_WI_CASES];
    size_t ncases;
    uint8_t order[GS_WI_CASES]; /* the cases replayed (not GS_WI_SKIP): those that may be
                                 * followed before those that may follow */
    size_t norder;
    int alone;                  /* each case its own model (gs_whatif_set_sizes) */
    enum gs_wi_source source;
    struct dev *dev[GS_MAX_DEVICES + 1]; /* [GS_MAX_DEVICES]: device -1 */
    uint64_t run_card[GS_MAX_DEVICES + 1];
    uint64_t run_total[GS_MAX_DEVICES + 1];
    struct label labels[LABELS];
    size_t nlabels;
    size_t step_label; /* the run's steps' (gs_marks_better_counts); LABELS: none */
    int nomem;
    gs_wi_size_fn size_of; /* gs_whatif_set_sizes */
    void *size_ctx;
    gs_wi_tap_fn tap;      /* gs_whatif_set_tap */
    void *tap_ctx;
    struct op ops[OPS];    /* the batch the models have not taken yet */
    size_t nops;
};

static void flush(struct gs_whatif *w);

/* Each case replayed, as i, in the replay's order. */
#define FOR_CASES(w, k, i) \
    for (size_t k = 0, i = 0; k < (w)->norder && ((i = (w)->order[k]), 1); k++)

int gs_wi_tensor_api(uint32_t api, int *stream_ordered)
{
    switch (api) {
    case GS_API_cuMemAllocAsync:
    case GS_API_cuMemAllocAsync_ptsz:
    case GS_API_cuMemAllocFromPoolAsync:
    case GS_API_cuMemAllocFromPoolAsync_ptsz:
    case GS_API_cudaMallocAsync:
    case GS_API_cudaMallocAsync_ptsz:
    case GS_API_cudaMallocFromPoolAsync:
    case GS_API_cudaMallocFromPoolAsync_ptsz:
    case GS_API_gpushim_torch_alloc:
        *stream_ordered = 1;
        return 1;
    case GS_API_cuMemAlloc_v2:
    case GS_API_cuMemAllocPitch_v2:
    case GS_API_cudaMalloc:
    case GS_API_cudaMallocPitch:
    case GS_API_cudaMalloc3D:
        *stream_ordered = 0;
        return 1;
    default:
        return 0;
    }
}

/* Where a case comes in the replay's order: those that may be followed
 * (no limit, no max_split_size) first. */
static int follow_rank(const struct gs_wi_setting *s, const struct gs_wi_case *c)
{
    return (c->capacity != 0) * 2 + (s->allocator == GS_WI_TORCH && s->tc.max_split_size != 0);
}

struct gs_whatif *gs_whatif_new(const struct gs_wi_setting *settings, size_t nsettings,
                                const struct gs_wi_case *cases, size_t ncases)
{
    if (nsettings > GS_WI_SETTINGS || ncases > GS_WI_CASES || (nsettings && !settings) ||
        (ncases && !cases))
        return NULL;
    for (size_t i = 0; i < ncases; i++)
        if (cases[i].setting >= nsettings)
            return NULL;
    struct gs_whatif *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    if (nsettings)
        memcpy(w->settings, settings, nsettings * sizeof *settings);
    if (ncases)
        memcpy(w->cases, cases, ncases * sizeof *cases);
    w->nsettings = nsettings;
    w->ncases = ncases;
    for (int rank = 0; rank < 4; rank++)
        for (size_t i = 0; i < ncases; i++)
            if (cases[i].capacity != GS_WI_SKIP &&
                follow_rank(&settings[cases[i].setting], &cases[i]) == rank)
                w->order[w->norder++] = (uint8_t)i;
    w->step_label = LABELS;
    return w;
}

static void dev_drop(struct dev *d)
{
    for (size_t i = 0; i < GS_WI_CASES; i++)
        gs_wi_model_free(d->m[i]);
    gs_idmap_free(d->live);
    free(d->sizes);
    for (size_t i = 0; i < GS_WI_CASES; i++)
        free(d->handles[i]);
}

#define NO_ROW UINT32_MAX

/* A row for a new live tensor: NO_ROW on no memory. */
static uint32_t row_new(struct gs_whatif *w, struct dev *d, uint64_t size)
{
    uint32_t r = d->free_row;
    if (r != NO_ROW) {
        d->free_row = (uint32_t)d->sizes[r];
    } else {
        if (d->nrows == d->caprows) {
            uint32_t cap = d->caprows ? d->caprows * 2 : 256;
            uint64_t *sz = cap < d->caprows ? NULL : realloc(d->sizes, cap * sizeof *sz);
            if (!sz)
                return NO_ROW;
            d->sizes = sz;
            FOR_CASES(w, k, i) {
                uint32_t *h = realloc(d->handles[i], (size_t)cap * sizeof *h);
                if (!h)
                    return NO_ROW;
                d->handles[i] = h;
            }
            d->caprows = cap;
        }
        r = d->nrows++;
    }
    d->sizes[r] = size;
    return r;
}

static void row_drop(struct dev *d, uint32_t r)
{
    d->sizes[r] = d->free_row;
    d->free_row = r;
}

void gs_whatif_free(struct gs_whatif *w)
{
    if (!w)
        return;
    for (size_t i = 0; i <= GS_MAX_DEVICES; i++)
        if (w->dev[i]) {
            dev_drop(w->dev[i]);
            free(w->dev[i]);
        }
    free(w);
}

/* Sums of sizes from an untrusted trace stop at the top, not wrap. */
static uint64_t add_sat(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

static size_t slot_of(int32_t device)
{
    return device >= 0 && device < GS_MAX_DEVICES ? (size_t)device : GS_MAX_DEVICES;
}

void gs_whatif_set_sizes(struct gs_whatif *w, gs_wi_size_fn fn, void *ctx)
{
    w->size_of = fn;
    w->size_ctx = ctx;
    w->alone = fn != NULL; /* each case its own sizes: none follows another */
}

void gs_whatif_set_tap(struct gs_whatif *w, gs_wi_tap_fn fn, void *ctx)
{
    w->tap = fn;
    w->tap_ctx = ctx;
}

void gs_whatif_set_run_card(struct gs_whatif *w, int32_t device, uint64_t bytes, uint64_t total)
{
    w->run_card[slot_of(device)] = bytes;
    w->run_total[slot_of(device)] = total > bytes ? total : bytes;
}

/* The device's models, made on its first tensor (or made again when the
 * source changes). NULL when the model's memory ran out. */
static struct dev *dev_of(struct gs_whatif *w, int32_t device)
{
    size_t s = slot_of(device);
    struct dev *d = w->dev[s];
    if (d && d->d.present)
        return d;
    if (!d && !(d = w->dev[s] = calloc(1, sizeof *d))) {
        w->nomem = 1;
        return NULL;
    }
    d->d.device = s == GS_MAX_DEVICES ? -1 : device;
    d->d.run_card = w->run_card[s];
    d->d.run_card_total = w->run_total[s];
    d->free_row = NO_ROW;
    if (!(d->live = gs_idmap_new()))
        goto nomem;
    FOR_CASES(w, k, i) {
        uint64_t cap = w->cases[i].capacity, total = w->cases[i].total;
        if (cap == GS_WI_RUN_CARD) {
            cap = d->d.run_card;
            total = d->d.run_card_total;
        }
        total = !cap ? 0 : total > cap ? total : cap;
        const struct gs_wi_setting *si = &w->settings[w->cases[i].setting];
        d->d.out[i].capacity = cap;
        d->d.out[i].total = total;
        d->lead[i] = (uint8_t)i;
        d->first_f[i] = NO_CASE;
        for (size_t k2 = 0; k2 < k && !w->alone; k2++) {
            size_t r = w->order[k2];
            struct gs_wi_follow *f = &d->follow[i];
            if (d->lead[r] != r ||
                !gs_wi_model_follow(si, cap, total, &w->settings[w->cases[r].setting],
                                    d->d.out[r].capacity, d->d.out[r].total, f))
                continue;
            d->lead[i] = (uint8_t)r;
            if (f->conditional) {
                d->next_f[i] = d->first_f[r];
                d->first_f[r] = (uint8_t)i;
            }
            break;
        }
        if (d->lead[i] != i)
            continue;
        if (!(d->m[i] = gs_wi_model_new(si, cap, total)))
            goto nomem;
        d->d.models++;
    }
    d->d.present = 1;
    return d;
nomem:
    w->nomem = 1;
    dev_drop(d);
    memset(d, 0, sizeof *d);
    return NULL;
}

/* The source is now src: what was replayed under another starts over. */
static void switch_source(struct gs_whatif *w, enum gs_wi_source src)
{
    flush(w); /* what was asked under the old source, done with it */
    for (size_t slot = 0; slot <= GS_MAX_DEVICES; slot++) {
        struct dev *d = w->dev[slot];
        if (!d || !d->d.present)
            continue;
        /* what were tensors under the driver source is now memory outside
         * the allocator, when the stream-ordered ones take over */
        uint64_t outside =
            src == GS_WI_SRC_STREAM ? add_sat(d->d.tensor_bytes, d->d.outside_bytes) : 0;
        dev_drop(d);
        memset(d, 0, sizeof *d);
        if (outside && (d = dev_of(w, slot == GS_MAX_DEVICES ? -1 : (int32_t)slot)) != NULL) {
            d->d.outside_bytes = d->d.outside_peak = outside;
            FOR_CASES(w, k, i)
                if (d->m[i])
                    gs_wi_model_set_external(d->m[i], outside);
        }
    }
    w->source = src;
}

/* ---- the models' work, in batches of ops: what each op does to one
 * case's model ---- */

static void add_op(struct gs_whatif *w, const struct op *o)
{
    w->ops[w->nops++] = *o;
    if (w->nops == OPS)
        flush(w);
}

static void ran_out(const struct gs_whatif *w, struct gs_wi_outcome *out, const struct op *o,
                    uint64_t size)
{
    if (out->ran_out++)
        return;
    out->first_oom = (struct gs_wi_oom){.request = o->request,
                                        .size = size,
                                        .time_ns = o->time_ns,
                                        .stack_id = o->stack_id,
                                        .tid = o->tid,
                                        .step = o->step};
    if (o->step)
        snprintf(out->first_oom.step_label, sizeof out->first_oom.step_label, "%s",
                 w->labels[o->step_label].text);
}

/* The size case i requests for op o: the trace's, or the caller's. */
static uint64_t size_for(const struct gs_whatif *w, const struct op *o, size_t i)
{
    if (!w->size_of)
        return o->size;
    struct gs_revent e = {.type = o->kind == OP_FAILED ? GS_REC_ALLOC_FAILED : GS_REC_ALLOC,
                          .time_ns = o->time_ns, .tid = o->tid, .device = o->device,
                          .addr = o->id, .size = o->size, .stream = o->stream,
                          .stack_id = o->stack_id};
    return w->size_of(w->size_ctx, i, &e);
}

static void apply(struct gs_whatif *w, const struct op *o, size_t i)
{
    struct dev *d = w->dev[o->slot];
    struct gs_wi_model *m = d->m[i];
    struct gs_wi_outcome *out = &d->d.out[i];
    uint32_t failed_handle = GS_WI_NO_HANDLE;
    switch (o->kind) {
    case OP_ALLOC:
    case OP_FAILED: {
        uint64_t size = size_for(w, o, i);
        uint32_t h;
        int rc = gs_wi_model_alloc(m, size, o->stream, &h);
        if (o->kind == OP_ALLOC)
            d->handles[i][o->row] = h;
        else
            failed_handle = h;
        if (rc == GS_WI_NOMEM) {
            w->nomem = 1;
        } else if (rc == GS_WI_OOM) {
            ran_out(w, out, o, size);
        } else if (rc == GS_WI_OK && o->kind == OP_FAILED) {
            out->failures_served++;
            out->served_first_failure |= o->first_failure;
            if (o->kept)
                d->d.failed[o->kept - 1].served |= 1ull << i;
        }
        break;
    }
    case OP_RELEASE: /* one that ran out here has no handle: nothing to do */
        gs_wi_model_release(m, d->handles[i][o->row]);
        return; /* (a free takes nothing from the device: no new peak) */
    default: /* OP_EXTERNAL */
        gs_wi_model_set_external(m, o->outside);
        break;
    }
    uint64_t held = gs_wi_model_reserved(m) + o->outside;
    if (held > out->device_peak)
        out->device_peak = held;
    if (o->kind == OP_FAILED)
        gs_wi_model_release(m, failed_handle); /* served: the run's failure path came next */
}

/* Case s's outcome is lead's so far (its own card kept). */
static void take_outcome(struct dev *d, size_t s, size_t lead)
{
    uint64_t cap = d->d.out[s].capacity, total = d->d.out[s].total;
    d->d.out[s] = d->d.out[lead];
    d->d.out[s].capacity = cap;
    d->d.out[s].total = total;
    for (size_t f = 0; f < d->d.nfailed; f++)
        if (d->d.failed[f].served & (1ull << lead))
            d->d.failed[f].served |= 1ull << s;
}

/* Case s's own model from now on (op n of the batch), made from lead's,
 * with what lead's outcome says so far. */
static void fork_case(struct gs_whatif *w, struct dev *d, size_t s, size_t lead, size_t n)
{
    d->m[s] = gs_wi_model_fork(d->m[lead], &w->settings[w->cases[s].setting],
                               d->d.out[s].capacity, d->d.out[s].total);
    if (!d->m[s]) {
        w->nomem = 1; /* it follows on, no longer asked */
        return;
    }
    take_outcome(d, s, lead);
    if (d->nrows)
        memcpy(d->handles[s], d->handles[lead], d->nrows * sizeof *d->handles[s]);
    d->lead[s] = (uint8_t)s;
    d->from[s] = (uint32_t)n;
    d->d.models++;
}

/* Before lead's model takes op n: its followers that could act otherwise
 * there get their own. */
static void forks(struct gs_whatif *w, struct dev *d, size_t lead, const struct op *o, size_t n)
{
    int alloc = o->kind == OP_ALLOC || o->kind == OP_FAILED;
    uint8_t *link = &d->first_f[lead];
    while (*link != NO_CASE) {
        size_t s = *link;
        if (!gs_wi_model_diverges(d->m[lead], &d->follow[s], alloc, o->size, o->outside)) {
            link = &d->next_f[s];
            continue;
        }
        *link = d->next_f[s];
        fork_case(w, d, s, lead, n);
    }
}

/* The batch to the models, one case at a time: its model stays in the
 * cache. The cases followed come first, so a case forked in the batch
 * takes the rest of it in its own turn. (Two threads, each with half the
 * cases, were slower on the two cores measured: the models are bound by
 * memory, not by instructions.) */
static void flush(struct gs_whatif *w)
{
    FOR_CASES(w, k, i)
        for (size_t n = 0; n < w->nops; n++) {
            const struct op *o = &w->ops[n];
            struct dev *d = w->dev[o->slot];
            if (d->lead[i] != i || n < d->from[i])
                continue;
            if (d->first_f[i] != NO_CASE)
                forks(w, d, i, o, n);
            apply(w, o, i);
        }
    for (size_t slot = 0; slot <= GS_MAX_DEVICES; slot++)
        if (w->dev[slot])
            memset(w->dev[slot]->from, 0, sizeof w->dev[slot]->from);
    w->nops = 0;
}

/* ---- the events' effects shared by every case: what a tensor is, the
 * live set, memory outside the allocator ---- */

static void outside_change(struct gs_whatif *w, struct dev *d, size_t slot, uint64_t bytes,
                           int add)
{
    if (add)
        d->d.outside_bytes = add_sat(d->d.outside_bytes, bytes);
    else
        d->d.outside_bytes -= bytes < d->d.outside_bytes ? bytes : d->d.outside_bytes;
    if (d->d.outside_bytes > d->d.outside_peak)
        d->d.outside_peak = d->d.outside_bytes;
    add_op(w, &(struct op){.kind = OP_EXTERNAL, .slot = (uint8_t)slot,
                           .outside = d->d.outside_bytes});
}

/* An allocation request of the run, on the device's models. */
static void request(struct gs_whatif *w, const struct gs_revent *e, int failed)
{
    struct dev *d = dev_of(w, e->device);
    if (!d)
        return;
    struct op o = {.kind = failed ? OP_FAILED : OP_ALLOC,
                   .slot = (uint8_t)slot_of(e->device),
                   .device = e->device,
                   .request = d->d.requests++,
                   .id = failed ? 0 : e->addr,
                   .size = e->size,
                   .stream = e->stream,
                   .time_ns = e->time_ns,
                   .stack_id = e->stack_id,
                   .tid = e->tid,
                   .outside = d->d.outside_bytes};
    if (w->step_label < LABELS && w->labels[w->step_label].open != GS_STEP_NONE) {
        o.step = w->labels[w->step_label].begun; /* the step running */
        o.step_label = (uint32_t)w->step_label;
    }
    if (!failed) {
        if (gs_idmap_get(d->live, o.id, &(uint64_t){0}) == 0)
            return; /* an address live twice: the trace's damage, not a tensor */
        o.row = row_new(w, d, e->size);
        if (o.row == NO_ROW || gs_idmap_put(d->live, o.id, o.row) != 0) {
            if (o.row != NO_ROW)
                row_drop(d, o.row);
            w->nomem = 1;
            return;
        }
        d->d.tensor_bytes = add_sat(d->d.tensor_bytes, e->size);
        if (d->d.tensor_bytes > d->d.tensor_peak)
            d->d.tensor_peak = d->d.tensor_bytes;
    } else {
        o.first_failure = ++d->d.failed_requests == 1;
        if (d->d.nfailed < GS_WI_FAILED_KEPT) {
            d->d.failed[d->d.nfailed++] = (struct gs_wi_failed){.time_ns = e->time_ns,
                                                                .size = e->size};
            o.kept = (uint16_t)d->d.nfailed;
        }
    }
    if (w->tap)
        w->tap(w->tap_ctx, e);
    add_op(w, &o);
}

/* A free of address on device: a tensor's, or memory outside the allocator. */
static void release(struct gs_whatif *w, int32_t device, uint64_t addr, uint64_t size)
{
    size_t slot = slot_of(device);
    struct dev *d = w->dev[slot];
    if (!d || !d->d.present)
        return;
    uint64_t row;
    if (gs_idmap_get(d->live, addr, &row) == 0) {
        gs_idmap_del(d->live, addr);
        d->d.tensor_bytes -= d->sizes[row] < d->d.tensor_bytes ? d->sizes[row] : d->d.tensor_bytes;
        d->d.frees++;
        /* the row may be taken again at once: the models take the ops in order */
        row_drop(d, (uint32_t)row);
        add_op(w, &(struct op){.kind = OP_RELEASE, .slot = (uint8_t)slot, .id = addr,
                               .row = (uint32_t)row, .outside = d->d.outside_bytes});
    } else if (w->source == GS_WI_SRC_STREAM) {
        outside_change(w, d, slot, size, 0);
    }
}

/* The label of a mark or an outermost range, made on its first: its index,
 * or LABELS past the most followed. */
static size_t label_of(struct gs_whatif *w, const struct gs_revent *e)
{
    char text[GS_MAX_LABEL + 1];
    size_t len = !e->label ? 0 : e->label_len > GS_MAX_LABEL ? GS_MAX_LABEL : e->label_len;
    gs_text_copy(text, sizeof text, e->label, len); /* as marks.c shows a label */
    size_t i;
    for (i = 0; i < w->nlabels; i++)
        if (!strcmp(w->labels[i].text, text))
            break;
    if (i == w->nlabels) {
        if (w->nlabels == LABELS)
            return LABELS;
        memset(&w->labels[i], 0, sizeof w->labels[i]);
        memcpy(w->labels[i].text, text, len + 1);
        w->nlabels++;
    }
    return i;
}

/* A step of label i begins (a mark, or an outermost range: tid or id, what
 * ends it) or ends (end), as marks.c has them; then the run's step label. */
static void step_mark(struct gs_whatif *w, size_t i, int end, int nvtx, uint32_t tid,
                      uint64_t id)
{
    struct label *l = &w->labels[i];
    if (end) /* the step running ends (the first, begun with the run), the next opens */
        l->begun += l->marks ? 1 : 2;
    else if (l->open != GS_STEP_AFTER) /* a mark after an end begins that step */
        l->begun++;
    l->open = end ? GS_STEP_AFTER : GS_STEP_BEGUN;
    l->range_tid = tid;
    l->range_id = id;
    l->marks++;
    l->nvtx += nvtx != 0;
    if (w->step_label == LABELS ||
        (i != w->step_label && gs_marks_better_counts(l->marks, l->nvtx, i < w->step_label,
                                                      w->labels[w->step_label].marks,
                                                      w->labels[w->step_label].nvtx)))
        w->step_label = i;
}

static void on_mark(struct gs_whatif *w, const struct gs_revent *e)
{
    size_t i = label_of(w, e);
    if (i < LABELS)
        step_mark(w, i, (e->flags & GS_MARK_STEP_END) != 0, (e->flags & GS_MARK_NVTX) != 0, 0,
                  0);
}

static void on_range(struct gs_whatif *w, const struct gs_revent *e)
{
    if ((e->op == GS_RANGE_PUSH || e->op == GS_RANGE_START) && (e->flags & GS_RANGE_TOP)) {
        if (!gs_marks_range_makes_steps(e->label, e->label ? e->label_len : 0))
            return;
        size_t i = label_of(w, e);
        if (i < LABELS)
            step_mark(w, i, 0, 1, e->op == GS_RANGE_PUSH ? e->tid : 0,
                      e->op == GS_RANGE_START ? e->addr : 0);
        return;
    }
    int pop = e->op == GS_RANGE_POP && (e->flags & GS_RANGE_TOP) && e->tid;
    if (!pop && !(e->op == GS_RANGE_END && e->addr))
        return;
    for (size_t i = 0; i < w->nlabels; i++) {
        struct label *l = &w->labels[i];
        if (l->open == GS_STEP_BEGUN &&
            (pop ? l->range_tid && l->range_tid == e->tid : l->range_id == e->addr))
            l->open = GS_STEP_NONE;
    }
}

/* A request under blocks: they carry no device (theirs is -1) and no stream. */
static void block_request(struct gs_whatif *w, const struct gs_revent *e, int failed)
{
    struct gs_revent b = *e;
    b.device = -1;
    b.stream = 0;
    request(w, &b, failed);
}

void gs_whatif_event(struct gs_whatif *w, const struct gs_revent *e)
{
    int so;
    switch (e->type) {
    case GS_REC_ALLOC:
    case GS_REC_ALLOC_FAILED:
        if (w->source == GS_WI_SRC_BLOCKS && e->type == GS_REC_ALLOC_FAILED &&
            gs_wi_tensor_api(e->api, &so)) { /* the segment it wanted stands for the block */
            block_request(w, e, 1);
            return;
        }
        if (w->source == GS_WI_SRC_BLOCKS || !gs_wi_tensor_api(e->api, &so) ||
            (e->type == GS_REC_ALLOC &&
             (e->kind != GS_KIND_DEVICE || e->space != GS_SPACE_ADDRESS)))
            return;
        if (w->source < GS_WI_SRC_DRIVER)
            w->source = GS_WI_SRC_DRIVER;
        if (so && w->source == GS_WI_SRC_DRIVER)
            switch_source(w, GS_WI_SRC_STREAM);
        if (!so && w->source == GS_WI_SRC_STREAM) { /* outside the allocator */
            struct dev *d = dev_of(w, e->device);
            if (d && e->type == GS_REC_ALLOC)
                outside_change(w, d, slot_of(e->device), e->size, 1);
            return;
        }
        request(w, e, e->type == GS_REC_ALLOC_FAILED);
        return;
    case GS_REC_FREE:
        if (w->source != GS_WI_SRC_BLOCKS && e->space == GS_SPACE_ADDRESS)
            release(w, e->device, e->addr, e->size);
        return;
    case GS_REC_BLOCK_ALLOC:
        if (w->source != GS_WI_SRC_BLOCKS)
            switch_source(w, GS_WI_SRC_BLOCKS);
        block_request(w, e, 0);
        return;
    case GS_REC_BLOCK_FREE:
        if (w->source == GS_WI_SRC_BLOCKS)
            release(w, -1, e->addr, 0);
        return;
    case GS_REC_MARK:
        on_mark(w, e);
        return;
    case GS_REC_RANGE:
        on_range(w, e);
        return;
    default:
        return;
    }
}

/* ---- one pass over a trace's events ---- */

static void no_module(void *ctx, const struct gs_rmodule *m) { (void)ctx, (void)m; }
static void no_stack(void *ctx, uint32_t id, const uint64_t *pcs, unsigned n)
{
    (void)ctx, (void)id, (void)pcs, (void)n;
}
static void each_event(void *ctx, const struct gs_revent *e) { gs_whatif_event(ctx, e); }

int gs_whatif_replay(const char *path, const struct gs_read_seen *seen, struct gs_whatif *w,
                     char *err, size_t errsz)
{
    static const struct gs_reader_ops ops = {
        .module = no_module, .stack = no_stack, .event = each_event};
    struct gs_trace_info info;
    struct gs_reader_stats st;
    if (gs_read_trace_again(path, seen, &ops, w, &info, &st, err, errsz) != 0)
        return -1;
    gs_whatif_finish(w);
    return 0;
}

void gs_whatif_finish(struct gs_whatif *w)
{
    flush(w);
    for (size_t slot = 0; slot <= GS_MAX_DEVICES; slot++) {
        struct dev *d = w->dev[slot];
        if (!d || !d->d.present)
            continue;
        FOR_CASES(w, k, i)
            if (d->lead[i] == i)
                gs_wi_model_figures(d->m[i], &d->d.out[i].st);
        FOR_CASES(w, k, i) /* a follower's outcome is its lead's */
            if (d->lead[i] != i)
                take_outcome(d, i, d->lead[i]);
    }
}

enum gs_wi_source gs_whatif_source(const struct gs_whatif *w) { return w->source; }

const struct gs_wi_device *gs_whatif_device(const struct gs_whatif *w, size_t idx)
{
    return idx <= GS_MAX_DEVICES && w->dev[idx] && w->dev[idx]->d.present ? &w->dev[idx]->d
                                                                          : NULL;
}

int gs_whatif_nomem(const struct gs_whatif *w) { return w->nomem; }
