/*
 * whatif_report.c - gpushim whatif's answer in text and JSON: per device,
 * a table per card of each setting's figures (peak reserved and allocated,
 * reserved but unallocated at the peak, the driver calls as PyTorch counts
 * them and the pages mapped, OOM retries, where it ran out), the best
 * setting, what each would take with no limit, and what the settings break.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/util/bytes.h"
#include "analyzer/util/json.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/read/read.h"
#include "analyzer/findings/findings.h"
#include "analyzer/report/report.h"
#include "analyzer/report/whatif_report.h"

const char *gs_wi_source_text(enum gs_wi_source s)
{
    switch (s) {
    case GS_WI_SRC_DRIVER:
        return "each device allocation (cudaMalloc, cuMemAlloc): the program's requests as an "
               "allocator would get them";
    case GS_WI_SRC_STREAM:
        return "each stream-ordered or pluggable-allocator allocation (gpushim run --per-tensor); "
               "other device memory is outside the allocator";
    case GS_WI_SRC_BLOCKS:
        return "the blocks of the program's own allocator (gpushim_block_alloc); its segments "
               "are what the model replaces";
    default:
        return "none: no device allocation a tensor could be (managed, host, array and "
               "mapped memory are not replayed)";
    }
}

static const char *bytes(uint64_t b, char *buf, size_t sz) { return gs_human_bytes(b, buf, sz); }

const char *gs_wi_model_name(const struct gs_wi_answer *a)
{
    return a->q.allocator == GS_WI_XLA ? gs_wi_xla_name() : gs_wi_torch_version_name(a->q.torch);
}

void gs_wi_oom_text(const struct gs_wi_report *rep, const struct gs_wi_oom *o, char *buf,
                    size_t sz)
{
    char size[32], where[256], step[GS_MAX_LABEL + 48] = "";
    if (o->step)
        snprintf(step, sizeof step, "step %" PRIu64 " (%s): ", o->step, o->step_label);
    gs_site_where(rep->r, rep->sym, rep->view, o->stack_id, where, sizeof where);
    snprintf(buf, sz, "%s%s at %s", step, bytes(o->size, size, sizeof size), where);
}

void gs_wi_outcome_text(const struct gs_wi_report *rep, size_t c, const struct gs_wi_outcome *o,
                        char *buf, size_t sz)
{
    char where[512];
    if (o->ran_out) {
        gs_wi_oom_text(rep, &o->first_oom, where, sizeof where);
        snprintf(buf, sz, "runs out: %s", where);
    } else {
        snprintf(buf, sz, "%s", c == rep->a->q.ncards ? "-"
                                : o->served_first_failure ? "fits, and serves the run's failed request"
                                                          : "fits");
    }
}

/* Setting s maps pages (expandable segments): segment_allocs and
 * segment_frees count them, where PyTorch's num_device_alloc counts the
 * map_block calls. */
static int pages_counted(const struct gs_wi_answer *a, size_t s)
{
    return a->q.allocator == GS_WI_TORCH && a->q.settings[s].tc.expandable_segments;
}

/* The driver calls' columns, as the allocator's stats name them:
 * PyTorch's DeviceStats num_device_alloc and num_device_free; XLA's
 * regions (SubAllocator::Alloc and Free). */
static const char *dev_alloc_name(const struct gs_wi_answer *a)
{
    return a->q.allocator == GS_WI_XLA ? "regions" : "num_device_alloc";
}

static const char *dev_free_name(const struct gs_wi_answer *a)
{
    return a->q.allocator == GS_WI_XLA ? "freed" : "num_device_free";
}

static void card_title(const struct gs_wi_report *rep, const struct gs_wi_device *d, size_t c,
                       char *buf, size_t sz)
{
    const struct gs_wi_answer *a = rep->a;
    char b[32], t[32];
    uint64_t cap = gs_wi_card_bytes(a, d, c);
    uint64_t total = c < a->q.ncards ? gs_wi_outcome_of(a, d, c, 0)->total : 0;
    if (c == a->q.ncards)
        snprintf(buf, sz, "with no limit (what each setting would take)");
    else if (a->q.cards[c].run)
        snprintf(buf, sz, "on the run's card (%s: %s for the process)", bytes(total, t, sizeof t),
                 bytes(cap, b, sizeof b));
    else
        snprintf(buf, sz, "on a %s card (%s: %s for the process after %s of context)",
                 a->q.cards[c].name, bytes(total, t, sizeof t), bytes(cap, b, sizeof b),
                 bytes(a->q.context, (char[32]){0}, 32));
}

static void device_text(FILE *out, const struct gs_wi_report *rep, const struct gs_wi_device *d)
{
    const struct gs_wi_answer *a = rep->a;
    char b1[32], b2[32], b3[32], line[512];
    if (d->device < 0)
        fputs("\nthe blocks (they name no device)", out);
    else
        fprintf(out, "\ndevice %" PRId32, d->device);
    fprintf(out, ": %" PRIu64 " requests (%" PRIu64 " failed in the run), %" PRIu64
                 " frees; tensors live at most %s",
            d->requests, d->failed_requests, d->frees, bytes(d->tensor_peak, b1, sizeof b1));
    if (d->outside_peak)
        fprintf(out, "; outside the allocator at most %s", bytes(d->outside_peak, b2, sizeof b2));
    fputc('\n', out);
    int width = 7; /* the settings' column: the longest name, up to 68 */
    for (size_t s = 0; s < a->q.nsettings; s++)
        if ((int)strlen(a->q.settings[s].name) > width)
            width = (int)strlen(a->q.settings[s].name);
    width = width > 68 ? 68 : width;
    if (a->run_card_unknown)
        fputs("  the run's card: unknown (no failed allocation said how much memory was free); "
              "give --card\n", out);
    for (size_t c = 0; c <= a->q.ncards; c++) {
        if (c < a->q.ncards && a->q.cards[c].run && !gs_wi_card_bytes(a, d, c)) {
            fputs("  the run's card on this device: unknown (no failed allocation here said "
                  "how much memory was free)\n", out);
            continue;
        }
        card_title(rep, d, c, line, sizeof line);
        fprintf(out, "  %s:\n", line);
        fprintf(out, "    %-*s %13s %12s %12s %16s %15s %16s %7s  %s\n", width, "setting",
                "peak reserved", "allocated", "idle at peak", dev_alloc_name(a), dev_free_name(a),
                "pages (un)mapped", "retries", "outcome");
        for (size_t s = 0; s < a->q.nsettings; s++) {
            const struct gs_wi_outcome *o = gs_wi_outcome_of(a, d, c, s);
            char outcome[600], pages[48] = "-";
            gs_wi_outcome_text(rep, c, o, outcome, sizeof outcome);
            if (pages_counted(a, s))
                snprintf(pages, sizeof pages, "%" PRIu64 "/%" PRIu64, o->st.segment_allocs,
                         o->st.segment_frees);
            fprintf(out, "    %-*.*s %13s %12s %12s %16" PRIu64 " %15" PRIu64 " %16s %7" PRIu64
                         "  %s\n",
                    width, width, a->q.settings[s].name, bytes(o->st.reserved_peak, b1, sizeof b1),
                    bytes(o->st.allocated_peak, b2, sizeof b2),
                    bytes(o->st.unallocated_at_peak, b3, sizeof b3), o->st.num_device_alloc,
                    o->st.num_device_free, pages, o->st.oom_retries, outcome);
        }
        if (c == a->q.ncards)
            continue;
        size_t best = gs_wi_best(a, d, c);
        if (best == SIZE_MAX) {
            fprintf(out, "    best: none fits this card\n");
        } else {
            const struct gs_wi_outcome *o = gs_wi_outcome_of(a, d, c, best);
            const char *cost = gs_wi_costs_text(a->q.settings[best].costs);
            fprintf(out, "    best: %s: peak %s of %s%s%s\n", a->q.settings[best].name,
                    bytes(o->device_peak, b1, sizeof b1),
                    o->capacity ? bytes(o->capacity, b2, sizeof b2) : "no limit",
                    cost ? "; " : "", cost ? cost : "");
        }
    }
}

void gs_whatif_text(FILE *out, const struct gs_wi_report *rep)
{
    const struct gs_wi_answer *a = rep->a;
    fprintf(out, "gpushim whatif %s\n", rep->path);
    fprintf(out, "model: %s\n", gs_wi_model_name(a));
    if (rep->torch_approx)
        fprintf(out, "       (--torch %s: that version's options and memory fraction; its "
                     "allocator otherwise read as 2.12's)\n", rep->torch_asked);
    fprintf(out, "tensors: %s\n", gs_wi_source_text(a->source));
    size_t shown = 0;
    for (size_t i = 0; i <= GS_MAX_DEVICES; i++) {
        const struct gs_wi_device *d = gs_wi_answer_device(a, i);
        if (d) {
            device_text(out, rep, d);
            shown++;
        }
    }
    if (!shown) {
        fputs("\nno tensor-level allocation to replay: record with gpushim run --per-tensor, "
              "or PYTORCH_NO_CUDA_MEMORY_CACHING=1\n", out);
        return;
    }
    int any = 0;
    for (size_t s = 0; s < a->q.nsettings; s++) {
        const char *cost = gs_wi_costs_text(a->q.settings[s].costs);
        if (cost) {
            fprintf(out, "%s  %s: %s\n", any++ ? "" : "\nwhat the settings cost besides memory:\n",
                    a->q.settings[s].name, cost);
        }
    }
    if (a->ipc_breaks)
        fputs("the run imported memory from another process (CUDA IPC), and before PyTorch 2.5 "
              "expandable segments cannot be shared: they are not named best\n", out);
}

static void oom_json(struct gs_json *j, const struct gs_wi_report *rep, const struct gs_wi_oom *o)
{
    char where[256];
    gs_json_begin_object(j, "first_oom");
    gs_json_uint(j, "request", o->request);
    gs_json_uint(j, "size_bytes", o->size);
    gs_json_uint(j, "time_ns", o->time_ns);
    gs_json_uint(j, "step", o->step);
    gs_json_string(j, "step_label", o->step ? o->step_label : NULL);
    gs_site_where(rep->r, rep->sym, rep->view, o->stack_id, where, sizeof where);
    gs_json_string(j, "site", where);
    gs_json_frames(j, rep->r, rep->sym, rep->view, o->stack_id);
    gs_json_end_object(j);
}

static const char *source_name(enum gs_wi_source s)
{
    static const char *const names[] = {"none", "driver", "stream_ordered", "blocks"};
    return s <= GS_WI_SRC_BLOCKS ? names[s] : "none";
}

void gs_whatif_json(FILE *out, const struct gs_wi_report *rep)
{
    const struct gs_wi_answer *a = rep->a;
    struct gs_json j = {.out = out};
    gs_json_begin_object(&j, NULL);
    gs_json_string(&j, "trace", rep->path);
    gs_json_string(&j, "allocator", a->q.allocator == GS_WI_XLA ? "xla" : "torch");
    gs_json_string(&j, "model", gs_wi_model_name(a));
    gs_json_string(&j, "torch",
                   a->q.allocator == GS_WI_XLA ? NULL : gs_wi_torch_version(a->q.torch));
    gs_json_bool(&j, "torch_approximate", rep->torch_approx);
    gs_json_string(&j, "source", source_name(a->source));
    gs_json_uint(&j, "context_bytes", a->q.context);
    gs_json_bool(&j, "ipc_seen", a->ipc_seen);
    gs_json_bool(&j, "ipc_breaks", a->ipc_breaks);
    gs_json_bool(&j, "run_card_unknown", a->run_card_unknown);
    gs_json_begin_array(&j, "settings");
    for (size_t s = 0; s < a->q.nsettings; s++) {
        gs_json_begin_object(&j, NULL);
        gs_json_string(&j, "name", a->q.settings[s].name);
        gs_json_bool(&j, "ipc_through_handles",
                     !!(a->q.settings[s].costs & GS_WI_IPC_HANDLES));
        gs_json_bool(&j, "unsplit_large_blocks", !!(a->q.settings[s].costs & GS_WI_SLOWER_SPLIT));
        gs_json_end_object(&j);
    }
    gs_json_end_array(&j);
    gs_json_begin_array(&j, "devices");
    for (size_t i = 0; i <= GS_MAX_DEVICES; i++) {
        const struct gs_wi_device *d = gs_wi_answer_device(a, i);
        if (!d)
            continue;
        gs_json_begin_object(&j, NULL);
        gs_json_int(&j, "device", d->device);
        gs_json_uint(&j, "requests", d->requests);
        gs_json_uint(&j, "failed_requests", d->failed_requests);
        gs_json_uint(&j, "frees", d->frees);
        gs_json_uint(&j, "models", d->models);
        gs_json_uint(&j, "tensor_peak_bytes", d->tensor_peak);
        gs_json_uint(&j, "outside_peak_bytes", d->outside_peak);
        if (d->run_card)
            gs_json_uint(&j, "run_card_bytes", d->run_card);
        else
            gs_json_null(&j, "run_card_bytes");
        gs_json_begin_array(&j, "cards");
        for (size_t c = 0; c <= a->q.ncards; c++) {
            gs_json_begin_object(&j, NULL);
            gs_json_string(&j, "name", c == a->q.ncards ? "no limit" : a->q.cards[c].name);
            gs_json_bool(&j, "run", c < a->q.ncards && a->q.cards[c].run);
            uint64_t cap = gs_wi_card_bytes(a, d, c);
            if (cap) {
                gs_json_uint(&j, "capacity_bytes", cap);
                gs_json_uint(&j, "total_bytes", gs_wi_outcome_of(a, d, c, 0)->total);
            } else {
                gs_json_null(&j, "capacity_bytes");
                gs_json_null(&j, "total_bytes");
            }
            size_t best = c < a->q.ncards ? gs_wi_best(a, d, c) : SIZE_MAX;
            gs_json_string(&j, "best", best == SIZE_MAX ? NULL : a->q.settings[best].name);
            gs_json_begin_array(&j, "outcomes");
            for (size_t s = 0; s < a->q.nsettings; s++) {
                const struct gs_wi_outcome *o = gs_wi_outcome_of(a, d, c, s);
                gs_json_begin_object(&j, NULL);
                gs_json_string(&j, "setting", a->q.settings[s].name);
                gs_json_uint(&j, "peak_reserved_bytes", o->st.reserved_peak);
                gs_json_uint(&j, "peak_allocated_bytes", o->st.allocated_peak);
                gs_json_uint(&j, "unallocated_at_peak_bytes", o->st.unallocated_at_peak);
                gs_json_uint(&j, "device_peak_bytes", o->device_peak);
                gs_json_uint(&j, "cuda_malloc_calls", o->st.segment_allocs);
                gs_json_uint(&j, "cuda_free_calls", o->st.segment_frees);
                gs_json_uint(&j, "num_device_alloc", o->st.num_device_alloc);
                gs_json_uint(&j, "num_device_free", o->st.num_device_free);
                if (pages_counted(a, s)) {
                    gs_json_uint(&j, "pages_mapped", o->st.segment_allocs);
                    gs_json_uint(&j, "pages_unmapped", o->st.segment_frees);
                } else {
                    gs_json_null(&j, "pages_mapped");
                    gs_json_null(&j, "pages_unmapped");
                }
                gs_json_uint(&j, "oom_retries", o->st.oom_retries);
                gs_json_uint(&j, "gc_frees", o->st.gc_frees);
                gs_json_bool(&j, "fits", !o->ran_out);
                gs_json_uint(&j, "failures_served", o->failures_served);
                gs_json_bool(&j, "served_run_failure", o->served_first_failure);
                if (o->ran_out)
                    oom_json(&j, rep, &o->first_oom);
                else
                    gs_json_null(&j, "first_oom");
                gs_json_end_object(&j);
            }
            gs_json_end_array(&j);
            gs_json_end_object(&j);
        }
        gs_json_end_array(&j);
        gs_json_end_object(&j);
    }
    gs_json_end_array(&j);
    gs_json_end_object(&j);
    fputc('\n', out);
}

int gs_report_whatif(const char *path, const struct gs_read_seen *seen,
                     const struct gs_trace_info *info, const struct gs_replay *r,
                     struct gs_wi_answer *a)
{
    int unrecovered = 0;
    for (size_t i = 0; i < r->nfailures && !unrecovered; i++)
        unrecovered = r->failures[i].outcome == GS_OUTCOME_UNRECOVERED;
    struct gs_alloc_mode m;
    gs_allocator_mode(info, r, &m);
    int torch = (m.frameworks & GS_FW_PYTORCH) && (m.per_tensor == 1 || r->blocks.seen);
    int jax = gs_alloc_mode_jax(&m) && m.per_tensor == 1;
    if (!unrecovered || !(torch || jax))
        return 0;
    static struct gs_wi_question q; /* the defaults: the run's card, the usual settings */
    memset(&q, 0, sizeof q);
    q.torch = GS_TC_TORCH_NEWEST;
    q.allocator = jax ? GS_WI_XLA : GS_WI_TORCH;
    char err[512];
    if (gs_wi_answer(path, seen, info, r, &q, a, err, sizeof err) != 0) {
        fprintf(stderr, "gpushim report: the what-if replay for the verdict: %s\n", err);
        return 0;
    }
    return 1;
}
