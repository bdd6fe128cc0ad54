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
#include "analyzer/read/read.h"
#include "analyzer/whatif/whatif.h"

#define LABELS 32               /* mark labels counted for the step of an OOM */
#define FAILED_ID (1ull << 63)  /* ids of the run's failed requests (no address) */

struct label {
    char text[GS_MAX_LABEL + 1];
    uint64_t marks;
};

struct dev {
    struct gs_wi_device d;
    struct gs_wi_model *m[GS_WI_CASES];
    struct gs_idmap *live; /* tensor id (address) -> size as requested */
};

struct gs_whatif {
    struct gs_wi_setting settings[GS_WI_SETTINGS];
    size_t nsettings;
    struct gs_wi_case cases[GS_WI_CASES];
    size_t ncases;
    uint8_t active[GS_WI_CASES]; /* the cases replayed (not GS_WI_SKIP), in order */
    size_t nactive;
    enum gs_wi_source source;
    struct dev *dev[GS_MAX_DEVICES + 1]; /* [GS_MAX_DEVICES]: device -1 */
    uint64_t run_card[GS_MAX_DEVICES + 1];
    struct label labels[LABELS];
    size_t nlabels;
    size_t step_label; /* the label with the most marks; LABELS: none */
    uint64_t failed_seq;
    int nomem;
    gs_wi_size_fn size_of; /* gs_whatif_set_sizes */
    void *size_ctx;
};

/* Each case replayed, as i. */
#define FOR_CASES(w, k, i) \
    for (size_t k = 0, i = 0; k < (w)->nactive && ((i = (w)->active[k]), 1); k++)

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
    for (size_t i = 0; i < ncases; i++)
        if (cases[i].capacity != GS_WI_SKIP)
            w->active[w->nactive++] = (uint8_t)i;
    w->step_label = LABELS;
    return w;
}

static void dev_drop(struct dev *d)
{
    for (size_t i = 0; i < GS_WI_CASES; i++)
        gs_wi_model_free(d->m[i]);
    gs_idmap_free(d->live);
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

static size_t slot_of(int32_t device)
{
    return device >= 0 && device < GS_MAX_DEVICES ? (size_t)device : GS_MAX_DEVICES;
}

void gs_whatif_set_sizes(struct gs_whatif *w, gs_wi_size_fn fn, void *ctx)
{
    w->size_of = fn;
    w->size_ctx = ctx;
}

void gs_whatif_set_run_card(struct gs_whatif *w, int32_t device, uint64_t bytes)
{
    w->run_card[slot_of(device)] = bytes;
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
    d->live = gs_idmap_new();
    FOR_CASES(w, k, i) {
        uint64_t cap = w->cases[i].capacity;
        cap = cap == GS_WI_RUN_CARD ? d->d.run_card : cap;
        d->d.out[i].capacity = cap;
        d->m[i] = gs_wi_model_new(&w->settings[w->cases[i].setting], cap);
        if (!d->m[i]) {
            w->nomem = 1;
            dev_drop(d);
            memset(d, 0, sizeof *d);
            return NULL;
        }
    }
    if (!d->live) {
        w->nomem = 1;
        dev_drop(d);
        memset(d, 0, sizeof *d);
        return NULL;
    }
    d->d.present = 1;
    return d;
}

/* The source is now src: what was replayed under another starts over. */
static void switch_source(struct gs_whatif *w, enum gs_wi_source src)
{
    for (size_t i = 0; i <= GS_MAX_DEVICES; i++) {
        struct dev *d = w->dev[i];
        if (!d || !d->d.present)
            continue;
        /* what were tensors under the driver source is now memory outside
         * the allocator, when the stream-ordered ones take over */
        uint64_t outside = src == GS_WI_SRC_STREAM ? d->d.tensor_bytes + d->d.outside_bytes : 0;
        dev_drop(d);
        memset(d, 0, sizeof *d);
        if (outside && (d = dev_of(w, i == GS_MAX_DEVICES ? -1 : (int32_t)i)) != NULL) {
            d->d.outside_bytes = d->d.outside_peak = outside;
            FOR_CASES(w, k, i)
                gs_wi_model_set_external(d->m[i], outside);
        }
    }
    w->source = src;
}

static void after_request(const struct gs_whatif *w, struct dev *d)
{
    FOR_CASES(w, k, i) {
        uint64_t held = gs_wi_model_reserved(d->m[i]) + d->d.outside_bytes;
        if (held > d->d.out[i].device_peak)
            d->d.out[i].device_peak = held;
    }
}

static void outside_change(struct gs_whatif *w, struct dev *d, uint64_t bytes, int add)
{
    if (add)
        d->d.outside_bytes += bytes;
    else
        d->d.outside_bytes -= bytes < d->d.outside_bytes ? bytes : d->d.outside_bytes;
    if (d->d.outside_bytes > d->d.outside_peak)
        d->d.outside_peak = d->d.outside_bytes;
    FOR_CASES(w, k, i)
        gs_wi_model_set_external(d->m[i], d->d.outside_bytes);
    after_request(w, d);
}

static void ran_out(struct gs_whatif *w, struct gs_wi_outcome *o, const struct gs_revent *e,
                    uint64_t request, uint64_t size)
{
    if (o->ran_out++)
        return;
    o->first_oom = (struct gs_wi_oom){.request = request,
                                      .size = size,
                                      .time_ns = e->time_ns,
                                      .stack_id = e->stack_id,
                                      .tid = e->tid};
    if (w->step_label < LABELS) {
        o->first_oom.step = w->labels[w->step_label].marks;
        snprintf(o->first_oom.step_label, sizeof o->first_oom.step_label, "%s",
                 w->labels[w->step_label].text);
    }
}

/* An allocation request of the run, on the device's models. */
static void request(struct gs_whatif *w, const struct gs_revent *e, int failed)
{
    struct dev *d = dev_of(w, e->device);
    if (!d)
        return;
    uint64_t idx = d->d.requests++;
    uint64_t id = failed ? FAILED_ID | w->failed_seq++ : e->addr;
    if (!failed) {
        if (gs_idmap_get(d->live, id, &(uint64_t){0}) == 0)
            return; /* an address live twice: the trace's damage, not a tensor */
        if (gs_idmap_put(d->live, id, e->size) != 0) {
            w->nomem = 1;
            return;
        }
        d->d.tensor_bytes += e->size;
        if (d->d.tensor_bytes > d->d.tensor_peak)
            d->d.tensor_peak = d->d.tensor_bytes;
    } else {
        d->d.failed_requests++;
        if (d->d.nfailed < GS_WI_FAILED_KEPT)
            d->d.failed[d->d.nfailed++] = (struct gs_wi_failed){.time_ns = e->time_ns,
                                                                .size = e->size};
    }
    struct gs_wi_failed *kept = failed && d->d.nfailed && d->d.failed_requests <= GS_WI_FAILED_KEPT
                                    ? &d->d.failed[d->d.nfailed - 1]
                                    : NULL;
    FOR_CASES(w, k, i) {
        struct gs_wi_outcome *o = &d->d.out[i];
        uint64_t size = w->size_of ? w->size_of(w->size_ctx, i, e) : e->size;
        int rc = gs_wi_model_alloc(d->m[i], id, size, e->stream);
        if (rc == GS_WI_NOMEM)
            w->nomem = 1;
        else if (rc == GS_WI_OOM)
            ran_out(w, o, e, idx, size);
        else if (rc == GS_WI_OK && failed) {
            o->failures_served++;
            if (d->d.failed_requests == 1)
                o->served_first_failure = 1;
            if (kept)
                kept->served |= 1ull << i;
        }
    }
    after_request(w, d);
    if (failed)
        FOR_CASES(w, k, i)
            gs_wi_model_release(d->m[i], id); /* served: the run's failure path came next */
}

/* A free of address on device: a tensor's, or memory outside the allocator. */
static void release(struct gs_whatif *w, int32_t device, uint64_t addr, uint64_t size)
{
    struct dev *d = w->dev[slot_of(device)];
    if (!d || !d->d.present)
        return;
    uint64_t was;
    if (gs_idmap_get(d->live, addr, &was) == 0) {
        gs_idmap_del(d->live, addr);
        d->d.tensor_bytes -= was;
        d->d.frees++;
        FOR_CASES(w, k, i)
            gs_wi_model_release(d->m[i], addr); /* not live where it ran out: nothing to do */
        after_request(w, d);
    } else if (w->source == GS_WI_SRC_STREAM) {
        outside_change(w, d, size, 0);
    }
}

static void on_mark(struct gs_whatif *w, const struct gs_revent *e)
{
    char text[GS_MAX_LABEL + 1];
    size_t len = e->label_len > GS_MAX_LABEL ? GS_MAX_LABEL : e->label_len;
    memcpy(text, e->label, len);
    text[len] = 0;
    for (size_t k = 0; k < len; k++) /* as marks.c shows a label */
        if ((unsigned char)text[k] < 0x20 || text[k] == 0x7f)
            text[k] = '?';
    size_t i;
    for (i = 0; i < w->nlabels; i++)
        if (!strcmp(w->labels[i].text, text))
            break;
    if (i == w->nlabels) {
        if (w->nlabels == LABELS)
            return;
        memcpy(w->labels[i].text, text, len + 1);
        w->nlabels++;
    }
    w->labels[i].marks++;
    if (w->step_label == LABELS || w->labels[i].marks > w->labels[w->step_label].marks)
        w->step_label = i;
}

void gs_whatif_event(struct gs_whatif *w, const struct gs_revent *e)
{
    int so;
    switch (e->type) {
    case GS_REC_ALLOC:
    case GS_REC_ALLOC_FAILED:
        if (w->source == GS_WI_SRC_BLOCKS && e->type == GS_REC_ALLOC_FAILED &&
            gs_wi_tensor_api(e->api, &so)) { /* the segment it wanted stands for the block */
            struct gs_revent b = *e;
            b.device = -1;
            b.stream = 0;
            request(w, &b, 1);
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
                outside_change(w, d, e->size, 1);
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
        {
            struct gs_revent b = *e;
            b.device = -1;
            b.stream = 0;
            request(w, &b, 0);
        }
        return;
    case GS_REC_BLOCK_FREE:
        if (w->source == GS_WI_SRC_BLOCKS)
            release(w, -1, e->addr, 0);
        return;
    case GS_REC_MARK:
        on_mark(w, e);
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

int gs_whatif_replay(const char *path, struct gs_whatif *w, char *err, size_t errsz)
{
    static const struct gs_reader_ops ops = {
        .module = no_module, .stack = no_stack, .event = each_event};
    struct gs_trace_info info;
    struct gs_reader_stats st;
    if (gs_read_trace(path, &ops, w, &info, &st, err, errsz) != 0)
        return -1;
    gs_whatif_finish(w);
    return 0;
}

void gs_whatif_finish(struct gs_whatif *w)
{
    for (size_t i = 0; i <= GS_MAX_DEVICES; i++) {
        struct dev *d = w->dev[i];
        if (d && d->d.present)
            FOR_CASES(w, k, i)
                gs_wi_model_figures(d->m[i], &d->d.out[i].st);
    }
}

enum gs_wi_source gs_whatif_source(const struct gs_whatif *w) { return w->source; }

const struct gs_wi_device *gs_whatif_device(const struct gs_whatif *w, size_t idx)
{
    return idx <= GS_MAX_DEVICES && w->dev[idx] && w->dev[idx]->d.present ? &w->dev[idx]->d
                                                                          : NULL;
}

int gs_whatif_nomem(const struct gs_whatif *w) { return w->nomem; }
