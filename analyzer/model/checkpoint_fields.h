/*
 * checkpoint_fields.h - what the checkpoint's writer (analyzer/model/
 * checkpoint.c) and its loader (analyzer/read/checkpoint_load.c) share: the
 * totals BEGIN and API_END carry, the records END counts, and the fields of
 * each record, in their order. One list for the two, so that they cannot
 * disagree; each a static const table (a few hundred bytes in each).
 *
 * Included by: analyzer/model/checkpoint.c and analyzer/read/checkpoint_load.c
 * alone (private to the checkpoint).
 */
#ifndef GPUSHIM_MODEL_CHECKPOINT_FIELDS_H
#define GPUSHIM_MODEL_CHECKPOINT_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"

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

static inline uint64_t *total(struct gs_replay *r, size_t i)
{
    return (uint64_t *)((char *)r + totals[i]);
}

static inline uint64_t total_of(const struct gs_replay *r, size_t i)
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
/* then, where written (old writers did not), the step open and the first */
static const struct field label_step_fields[] = {F(open), F(range_tid), F(range_id),
                                                 F(nvtx_marks), F(start_ns),
                                                 F(first_start_ns), F(first_end_ns),
                                                 F(last_start_ns), F(last_end_ns)};
#undef F
/* a mark's and a step's after their label */
#define F(m) FIELD(struct gs_mark_item, m, UNSIGNED)
static const struct field mark_fields[] = {F(time_ns), F(device_bytes), F(block_bytes)};
/* then, where written (old writers did not: a mark a step begins at) */
static const struct field mark_kind_fields[] = {F(kind)};
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

#endif
