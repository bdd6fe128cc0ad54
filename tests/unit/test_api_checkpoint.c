/*
 * test_api_checkpoint.c - the marks and blocks in a checkpoint
 * (analyzer/model/checkpoint.c, types GS_REC_CKPT_API_FIRST..LAST): a replay cut
 * at every event of a schedule, written as records, read back into a fresh
 * replay and fed the rest, must agree with a replay of the whole schedule on
 * every figure the reports read: each label with its open step, the recent
 * marks and steps, the block sites at the block peak and at the end, the
 * live blocks, the fragmentation at the device peak (also when it is still
 * pending at the cut), at each failure and now. Also each record made by
 * hand as include/gpushim_trace.h lays it out, loaded field by field and
 * written back byte for byte; a checkpoint of a
 * checkpoint, the rings past their size, and hostile records (each cut at
 * every byte, out of place, out of range, twice, counts that do not match,
 * random ones) that must be refused and counted, never crash.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpushim_trace.h"
#include "analyzer/util/idmap.h"
#include "analyzer/trace/trace.h"
#include "analyzer/model/model.h"
#include "analyzer/model/replay.h"
#include "analyzer/read/checkpoint_load.h"
#include "ckpt_bytes.h"
#include "gpushim_ring.h"

#define ASSERT_U64(got, want, ...) cr_assert_eq((uint64_t)(got), (uint64_t)(want), __VA_ARGS__)

/* ---- the schedule ---- */

#define MAX_EV 4096

struct seq {
    struct gs_revent ev[MAX_EV];
    size_t n;
    uint64_t t;
};

static struct seq seq;
static size_t peak_index;

static struct gs_revent *add(struct seq *s, enum gs_record_type type)
{
    cr_assert_lt(s->n, MAX_EV);
    struct gs_revent *e = &s->ev[s->n++];
    memset(e, 0, sizeof *e);
    e->type = type;
    e->time_ns = s->t += 100;
    e->tid = 1;
    e->device = GS_DEVICE_UNKNOWN;
    return e;
}

static void s_mark(struct seq *s, const char *label)
{
    struct gs_revent *e = add(s, GS_REC_MARK);
    e->label = label;
    e->label_len = strlen(label);
    e->stack_id = 1 + (uint32_t)(strlen(label) % 3);
}

/* A step's end (gpushim_step_end). */
static void s_step_end(struct seq *s, const char *label)
{
    s_mark(s, label);
    s->ev[s->n - 1].flags = GS_MARK_STEP_END;
}

/* A thread's outermost range: its push (label) or its pop (NULL). */
static void s_range(struct seq *s, uint32_t tid, const char *label)
{
    struct gs_revent *e = add(s, GS_REC_RANGE);
    e->tid = tid;
    e->op = label ? GS_RANGE_PUSH : GS_RANGE_POP;
    e->flags = GS_RANGE_TOP;
    e->label = label;
    e->label_len = label ? strlen(label) : 0;
}

static void s_seg(struct seq *s, uint64_t addr, uint64_t size, int32_t dev)
{
    struct gs_revent *e = add(s, GS_REC_ALLOC);
    e->addr = addr;
    e->size = size;
    e->device = dev;
    e->stack_id = 4;
    e->kind = GS_KIND_DEVICE;
    e->space = GS_SPACE_ADDRESS;
}

static void s_free(struct seq *s, uint64_t addr)
{
    struct gs_revent *e = add(s, GS_REC_FREE);
    e->addr = addr;
}

static void s_failed(struct seq *s, int32_t dev, uint64_t size)
{
    struct gs_revent *e = add(s, GS_REC_ALLOC_FAILED);
    e->device = dev;
    e->size = size;
    e->stack_id = 5;
    e->result = 2;
}

static void s_block(struct seq *s, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct gs_revent *e = add(s, GS_REC_BLOCK_ALLOC);
    e->addr = addr;
    e->size = size;
    e->stack_id = stack;
}

static void s_unblock(struct seq *s, uint64_t addr)
{
    struct gs_revent *e = add(s, GS_REC_BLOCK_FREE);
    e->addr = addr;
}

#define MB 0x100000ull
#define S1 0x10000000ull
#define S2 0x20000000ull
#define S3 0x30000000ull

static void schedule(struct seq *s)
{
    memset(s, 0, sizeof *s);
    s_mark(s, "epoch");
    s_seg(s, S1, 8 * MB, 0);
    s_block(s, S1, 2 * MB, 6);
    s_block(s, S1 + 3 * MB, MB, 6);
    for (int step = 0; step < 6; step++) {
        s_mark(s, "step");
        s_range(s, 2, "iter"); /* a range's step, ended by its pop */
        s_range(s, 3, "aten::mm, seq = 4, op_id = 9"); /* emit_nvtx's: no step */
        s_block(s, S1 + 5 * MB, MB / 2, 7);          /* an activation */
        s_block(s, S1 + 6 * MB + step * 4096, 4096, 8); /* kept: the leak */
        if (step == 2) {
            s_seg(s, S2, 4 * MB, 1); /* the device peak: 12 MB */
            peak_index = s->n - 1;
            s_block(s, S2 + MB, MB, 6);
        }
        if (step == 3) {
            s_failed(s, 0, 3 * MB);
            s_failed(s, 1, 3 * MB);
            s_unblock(s, 0xdead);
            s_block(s, 0x7000, 64, 9); /* in no segment */
        }
        if (step == 4) {
            s_free(s, S2); /* under its block */
            s_seg(s, S3, MB, 0);
            s_free(s, S3);
        }
        s_range(s, 3, NULL);
        s_unblock(s, S1 + 5 * MB);
        s_range(s, 2, NULL);
        s_step_end(s, "opt"); /* the first step from the start */
    }
    s_range(s, 2, "iter"); /* open at the end: a step the end ends */
    s_mark(s, "step");
    s_mark(s, "phase\n2"); /* cleaned */
    s_mark(s, "epoch");
    s_seg(s, S2, 2 * MB, 1); /* made again under the orphan block */
    s_unblock(s, S1);
    s_block(s, S1, MB, 6);
    s_block(s, S1, MB / 2, 6); /* over a live block */
    s_mark(s, "phase\n2");
    s_failed(s, GS_DEVICE_UNKNOWN, 100 * MB);
}

static void define(struct gs_replay *r)
{
    for (uint32_t id = 1; id <= 9; id++) {
        uint64_t pcs[2] = {0x400000 + id, 0x401000};
        gs_replay_ops.stack(r, id, pcs, 2);
    }
}

static void replay(struct gs_replay *r, const struct seq *s, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        gs_replay_event(r, &s->ev[i]);
}

/* ---- agreement ---- */

static void same_frag(const struct gs_frag *a, const struct gs_frag *b, const char *what,
                      size_t cut)
{
    cr_assert_eq(a->present, b->present, "cut %zu: %s present", cut, what);
    if (!a->present)
        return;
    ASSERT_U64(a->time_ns, b->time_ns, "cut %zu: %s time", cut, what);
    cr_assert_eq(a->device, b->device, "cut %zu: %s device", cut, what);
    ASSERT_U64(a->segments, b->segments, "cut %zu: %s segments", cut, what);
    ASSERT_U64(a->segment_bytes, b->segment_bytes, "cut %zu: %s segment bytes", cut, what);
    ASSERT_U64(a->block_bytes, b->block_bytes, "cut %zu: %s block bytes", cut, what);
    ASSERT_U64(a->largest_free, b->largest_free, "cut %zu: %s largest", cut, what);
    ASSERT_U64(a->outside_bytes, b->outside_bytes, "cut %zu: %s outside", cut, what);
}

static void same_marks(const struct gs_marks *x, const struct gs_marks *y, size_t cut)
{
#define SAME(f) ASSERT_U64(x->f, y->f, "cut %zu: " #f, cut)
    SAME(marks);
    SAME(nsteps);
    SAME(labels_dropped);
    SAME(nlabels);
    SAME(bytes_in);
    SAME(bytes_out);
    SAME(since_peak);
#undef SAME
    for (size_t i = 0; i < x->nlabels; i++) {
        const struct gs_mark_label *a = &x->labels[i], *b = &y->labels[i];
#define SAME(f) ASSERT_U64(a->f, b->f, "cut %zu: label %zu " #f, cut, i)
        cr_assert_str_eq(a->label, b->label, "cut %zu: label %zu", cut, i);
        SAME(stack_id);
        SAME(marks);
        SAME(steps);
        SAME(first_ns);
        SAME(last_ns);
        SAME(start_bytes);
        SAME(start_in);
        SAME(start_out);
        SAME(step_peak);
        SAME(max_peak);
        SAME(max_peak_end_ns);
        SAME(allocated);
        SAME(freed);
        SAME(growth);
        SAME(max_growth);
        SAME(growing);
        SAME(nvtx_marks);
        SAME(first_start_ns);
        SAME(first_end_ns);
        SAME(last_start_ns);
        SAME(last_end_ns);
        SAME(range_tid);
        SAME(range_id);
        SAME(open);
        SAME(cut);
        SAME(start_ns);
#undef SAME
    }
    for (uint64_t i = x->marks > GS_MARKS_KEPT ? x->marks - GS_MARKS_KEPT : 0; i < x->marks; i++) {
        const struct gs_mark_item *a = &x->recent[i % GS_MARKS_KEPT];
        const struct gs_mark_item *b = &y->recent[i % GS_MARKS_KEPT];
        ASSERT_U64(a->label, b->label, "cut %zu: mark %llu label", cut, (unsigned long long)i);
        ASSERT_U64(a->time_ns, b->time_ns, "cut %zu: mark time", cut);
        ASSERT_U64(a->device_bytes, b->device_bytes, "cut %zu: mark device bytes", cut);
        ASSERT_U64(a->block_bytes, b->block_bytes, "cut %zu: mark block bytes", cut);
        ASSERT_U64(a->kind, b->kind, "cut %zu: mark kind", cut);
    }
    for (uint64_t i = x->nsteps > GS_STEPS_KEPT ? x->nsteps - GS_STEPS_KEPT : 0; i < x->nsteps;
         i++) {
        const struct gs_step *a = &x->steps[i % GS_STEPS_KEPT];
        const struct gs_step *b = &y->steps[i % GS_STEPS_KEPT];
        cr_assert(!memcmp(a, b, sizeof *a) || (a->label == b->label && a->start_ns == b->start_ns &&
                                               a->end_ns == b->end_ns &&
                                               a->peak_bytes == b->peak_bytes &&
                                               a->allocated_bytes == b->allocated_bytes &&
                                               a->freed_bytes == b->freed_bytes &&
                                               a->growth_bytes == b->growth_bytes),
                  "cut %zu: step %llu", cut, (unsigned long long)i);
    }
}

static void same_blocks(struct gs_replay *x, struct gs_replay *y, size_t cut)
{
    const struct gs_blocks *a = &x->blocks, *b = &y->blocks;
#define SAME(f) ASSERT_U64(a->f, b->f, "cut %zu: blocks " #f, cut)
    cr_assert_eq(!!a->seen, !!b->seen, "cut %zu: seen", cut);
    SAME(allocs);
    SAME(frees);
    SAME(frees_unknown);
    SAME(live_bytes);
    SAME(live_count);
    SAME(peak_bytes);
    SAME(peak_time_ns);
    SAME(nsites);
#undef SAME
    for (size_t i = 0; i < a->nsites; i++) {
        const struct gs_site *s = &a->sites[i];
        const struct gs_site *t = gs_blocks_site(&y->blocks, s->stack_id, 0);
        cr_assert_not_null(t, "cut %zu: block site %u", cut, s->stack_id);
        ASSERT_U64(s->allocs, t->allocs, "cut %zu: block site allocs", cut);
        ASSERT_U64(s->alloc_bytes, t->alloc_bytes, "cut %zu: block site bytes", cut);
        ASSERT_U64(s->live_bytes, t->live_bytes, "cut %zu: block site live", cut);
        ASSERT_U64(s->live_count, t->live_count, "cut %zu: block site live count", cut);
        uint64_t na, nb;
        ASSERT_U64(gs_block_site_peak_bytes(a, s, &na), gs_block_site_peak_bytes(b, t, &nb),
                   "cut %zu: block site %u at the peak", cut, s->stack_id);
        ASSERT_U64(na, nb, "cut %zu: count at the peak", cut);
    }
    for (size_t i = 0; i < a->nblocks; i++) {
        if (!gs_blocks_slot_live(a, i))
            continue;
        uint64_t at;
        cr_assert_eq(gs_idmap_get(b->by_addr, a->blocks[i].addr, &at), 0, "cut %zu: block live",
                     cut);
        ASSERT_U64(a->blocks[i].size, b->blocks[at].size, "cut %zu: block size", cut);
        ASSERT_U64(a->blocks[i].time_ns, b->blocks[at].time_ns, "cut %zu: block time", cut);
        ASSERT_U64(a->blocks[i].tid, b->blocks[at].tid, "cut %zu: block tid", cut);
        ASSERT_U64(a->sites[a->blocks[i].site].stack_id, b->sites[b->blocks[at].site].stack_id,
                   "cut %zu: block site", cut);
    }
    same_frag(&a->at_peak, &b->at_peak, "at the peak", cut);
    ASSERT_U64(x->nfailures, y->nfailures, "cut %zu: failures", cut);
    for (size_t i = 0; i < x->nfailures; i++)
        same_frag(&a->at_failure[i], &b->at_failure[i], "at a failure", cut);
    struct gs_frag fa, fb;
    for (int32_t d = -1; d < 2; d++) {
        gs_blocks_fragmentation(x, d, &fa);
        gs_blocks_fragmentation(y, d, &fb);
        fa.time_ns = fb.time_ns = 0;
        same_frag(&fa, &fb, "now", cut);
    }
}

static void same(struct gs_replay *x, struct gs_replay *y, size_t cut)
{
    ASSERT_U64(x->peak_bytes, y->peak_bytes, "cut %zu: peak", cut);
    ASSERT_U64(x->live_bytes, y->live_bytes, "cut %zu: live", cut);
    same_marks(&x->marks, &y->marks, cut);
    same_blocks(x, y, cut);
}

static void whole(struct gs_replay *r)
{
    gs_replay_init(r);
    define(r);
    replay(r, &seq, 0, seq.n);
    gs_replay_finish(r);
}

static void through(struct gs_replay *out, size_t cut)
{
    struct gs_replay a;
    gs_replay_init(&a);
    define(&a);
    replay(&a, &seq, 0, cut);
    struct buf b = checkpoint(&a);
    gs_replay_init(out);
    ASSERT_U64(load(out, b.p, b.n), 0, "cut %zu: nothing damaged", cut);
    cr_assert(out->checkpoint.present && !out->checkpoint.open, "cut %zu: loaded whole", cut);
    same_marks(&a.marks, &out->marks, cut); /* the loaded state is the state written */
    replay(out, &seq, cut, seq.n);
    gs_replay_finish(out);
    gs_replay_free(&a);
    free(b.p);
}

/* ---- tests ---- */

Test(api_checkpoint, the_schedule_is_what_it_claims)
{
    schedule(&seq);
    struct gs_replay r;
    whole(&r);
    ASSERT_U64(r.peak_time_ns, seq.ev[peak_index].time_ns, "the peak is where it was put");
    ASSERT_U64(r.peak_bytes, 12 * MB, "12 MB");
    cr_assert(r.blocks.at_peak.present, "figures at the peak");
    ASSERT_U64(r.blocks.at_peak.segments, 1, "S2 held no block at the peak");
    ASSERT_U64(r.marks.nlabels, 5, "labels (none of emit_nvtx's range)");
    cr_assert_str_eq(r.marks.labels[4].label, "phase?2");
    /* "iter": 6 ranges pushed and popped, a seventh open at the end; "opt":
     * 6 step ends, the first step from the start */
    const struct gs_mark_label *iter = &r.marks.labels[2], *opt = &r.marks.labels[3];
    cr_assert_str_eq(iter->label, "iter");
    ASSERT_U64(iter->marks, 7, "iter's marks");
    ASSERT_U64(iter->nvtx_marks, 7, "all ranges");
    ASSERT_U64(iter->steps, 7, "iter's steps, the last cut by the end");
    cr_assert(iter->cut, "the end ended iter's last");
    cr_assert_str_eq(opt->label, "opt");
    ASSERT_U64(opt->steps, 6, "opt's steps");
    ASSERT_U64(opt->first_start_ns, 0, "opt's first from the start");
    cr_assert(!opt->cut && opt->open == GS_STEP_NONE, "what followed opt's last end: none");
    ASSERT_U64(r.nfailures, 3, "failures");
    cr_assert(r.blocks.at_failure[0].present && r.blocks.at_failure[2].present, "their figures");
    ASSERT_U64(r.blocks.frees_unknown, 1, "an unknown block free");
    ASSERT_U64(r.blocks.at_failure[2].outside_bytes, 64, "a block in no segment");
    gs_replay_free(&r);
}

Test(api_checkpoint, cut_at_every_event_agrees_with_the_whole_history)
{
    schedule(&seq);
    struct gs_replay w;
    whole(&w);
    for (size_t cut = 0; cut <= seq.n; cut++) {
        struct gs_replay r;
        through(&r, cut);
        same(&w, &r, cut);
        gs_replay_free(&r);
    }
    gs_replay_free(&w);
}

Test(api_checkpoint, cut_right_after_the_peak_while_its_figures_are_pending)
{
    schedule(&seq);
    struct gs_replay a;
    gs_replay_init(&a);
    define(&a);
    replay(&a, &seq, 0, peak_index + 1);
    cr_assert(a.blocks.peak_pending, "pending at the cut");
    struct buf b = checkpoint(&a);
    struct gs_replay r;
    gs_replay_init(&r);
    ASSERT_U64(load(&r, b.p, b.n), 0, "loaded");
    cr_assert(r.blocks.peak_pending, "still pending once loaded");
    replay(&r, &seq, peak_index + 1, seq.n);
    gs_replay_finish(&r);
    struct gs_replay w;
    whole(&w);
    same(&w, &r, peak_index + 1);
    gs_replay_free(&a);
    gs_replay_free(&r);
    gs_replay_free(&w);
    free(b.p);
}

Test(api_checkpoint, a_checkpoint_of_a_checkpoint)
{
    schedule(&seq);
    struct gs_replay w;
    whole(&w);
    size_t cuts[][2] = {{5, 20}, {peak_index, peak_index + 1}, {10, seq.n - 2}, {0, seq.n}};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        struct gs_replay a, b, c;
        gs_replay_init(&a);
        define(&a);
        replay(&a, &seq, 0, cuts[i][0]);
        struct buf ba = checkpoint(&a);
        gs_replay_init(&b);
        ASSERT_U64(load(&b, ba.p, ba.n), 0, "first");
        replay(&b, &seq, cuts[i][0], cuts[i][1]);
        struct buf bb = checkpoint(&b);
        gs_replay_init(&c);
        ASSERT_U64(load(&c, bb.p, bb.n), 0, "second");
        replay(&c, &seq, cuts[i][1], seq.n);
        gs_replay_finish(&c);
        same(&w, &c, cuts[i][1]);
        gs_replay_free(&a);
        gs_replay_free(&b);
        gs_replay_free(&c);
        free(ba.p);
        free(bb.p);
    }
    gs_replay_free(&w);
}

Test(api_checkpoint, rings_past_their_size)
{
    struct gs_replay w, a, r;
    gs_replay_init(&w);
    gs_replay_init(&a);
    struct gs_revent m = {.type = GS_REC_MARK, .label = "s", .label_len = 1};
    for (uint64_t i = 0; i < GS_MARKS_KEPT + 321; i++) {
        m.time_ns = i;
        gs_replay_event(&w, &m);
        gs_replay_event(&a, &m);
    }
    struct buf b = checkpoint(&a);
    gs_replay_init(&r);
    ASSERT_U64(load(&r, b.p, b.n), 0, "loaded");
    for (uint64_t i = 0; i < 7; i++) {
        m.time_ns = 100000 + i;
        gs_replay_event(&w, &m);
        gs_replay_event(&r, &m);
    }
    same(&w, &r, 0);
    gs_replay_free(&w);
    gs_replay_free(&a);
    gs_replay_free(&r);
    free(b.p);
}

Test(api_checkpoint, nothing_written_without_marks_or_blocks)
{
    struct gs_replay a;
    gs_replay_init(&a);
    struct gs_revent e = {.type = GS_REC_ALLOC, .time_ns = 1, .addr = 1, .size = 1};
    gs_replay_event(&a, &e);
    struct buf b = checkpoint(&a);
    for (size_t at = 0; at < b.n;) {
        uint8_t type = b.p[at];
        cr_assert(type < GS_REC_CKPT_API_FIRST || type > GS_REC_CKPT_API_LAST,
                  "no record of marks or blocks");
        const uint8_t *q = b.p + at + 1;
        uint64_t len = 0;
        cr_assert_eq(gs_get_varint(&q, b.p + b.n, &len), 0);
        at = (size_t)(q - b.p) + (size_t)len;
    }
    gs_replay_free(&a);
    free(b.p);
}

/* Each record by hand as include/gpushim_trace.h lays it out, every field a
 * value of its own: loaded, each lands in the member it names; written back
 * from the loaded state, the records come out byte for byte (test_checkpoint.c
 * does the same for the driver's records). */
Test(api_checkpoint, each_field_where_the_format_says)
{
    uint8_t b[2048];
    size_t n = 0;
    n += REC(b + n, GS_REC_CKPT_BEGIN, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
             0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    n += REC(b + n, GS_REC_CKPT_FAILURE, 1, 2, 3, gs_zigzag(0), 4, 5, 6, 7, 8, 0,
             GS_OUTCOME_REFUSED, 0, 0, 0, 0, 0);
    /* the label: index 0, the string "s", then its 16 fields, then the step
     * open (after each step's end: GS_STEP_AFTER), its range's thread and
     * id, its marks that were NVTX's, and the open step's start, the first
     * step's start and end, the last ended step's start and end */
    uint8_t lab[64] = {0, 1, 's'};
    size_t ln = 3;
    const uint64_t label_fields[] = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                     gs_zigzag(-24), gs_zigzag(25), 26,
                                     GS_STEP_AFTER, 27, 31, 5, 28, 29, 30, 32, 33};
    for (size_t i = 0; i < 25; i++)
        ln += gs_put_varint(lab + ln, label_fields[i]);
    n += record(b + n, GS_REC_CKPT_MARK_LABEL, lab, ln);
    n += REC(b + n, GS_REC_CKPT_API_ITEM, 0, 0, 0, 31, 32, 33, GS_MARK_ENDS);
    n += REC(b + n, GS_REC_CKPT_API_ITEM, 1, 0, 0, 41, 42, 43, 44, 45, gs_zigzag(-46));
    n += REC(b + n, GS_REC_CKPT_API_ITEM, 2, 0, 1, 51, gs_zigzag(0), 52, 53, 54, 55, 56);
    n += REC(b + n, GS_REC_CKPT_BLOCK_SITE, 61, 62, 63, 64, 65, 66, 67, 68);
    n += REC(b + n, GS_REC_CKPT_BLOCK, 0x9000, 71, 72, 61, 73);
    /* marks 1, steps 1, then 81.., live block bytes and count as the block
     * that came; seen, pending; the fragmentation at the peak; the counts */
    n += REC(b + n, GS_REC_CKPT_API_END, 1, 1, 81, 82, 83, 84, 85, 86, 87, 71, 1, 88, 89, 90, 1, 1,
             1, 91, gs_zigzag(-1), 92, 93, 94, 95, 96, 1, 1, 1, 1, 1, 1);
    n += REC(b + n, GS_REC_CKPT_END, 0, 0, 0, 1, 0, 0, 0, 0);
    struct gs_replay r;
    gs_replay_init(&r);
    ASSERT_U64(load(&r, b, n), 0, "every record loads");
    cr_assert(r.checkpoint.present && !r.checkpoint.open, "loaded whole");

    const struct gs_marks *m = &r.marks;
    cr_assert_eq(m->nlabels, 1);
    const struct gs_mark_label *l = &m->labels[0];
    cr_assert_str_eq(l->label, "s");
    const uint64_t label_got[] = {l->stack_id, l->marks, l->steps, l->first_ns, l->last_ns,
                                  l->start_bytes, l->start_in, l->start_out, l->step_peak,
                                  l->max_peak, l->max_peak_end_ns, l->allocated, l->freed};
    for (size_t i = 0; i < 13; i++)
        ASSERT_U64(label_got[i], 11 + i, "label field %zu", i);
    cr_assert_eq(l->growth, -24);
    cr_assert_eq(l->max_growth, 25);
    ASSERT_U64(l->growing, 26, "label growing");
    ASSERT_U64(l->open, GS_STEP_AFTER, "the step open");
    const uint64_t step_open_got[] = {l->range_tid, l->range_id, l->nvtx_marks, l->start_ns,
                                      l->first_start_ns, l->first_end_ns, l->last_start_ns,
                                      l->last_end_ns};
    const uint64_t step_open_want[] = {27, 31, 5, 28, 29, 30, 32, 33};
    for (size_t i = 0; i < 8; i++)
        ASSERT_U64(step_open_got[i], step_open_want[i], "label step field %zu", i);
    const struct gs_mark_item *it = &m->recent[0];
    ASSERT_U64(it->label, 0, "mark label");
    ASSERT_U64(it->time_ns, 31, "mark time");
    ASSERT_U64(it->device_bytes, 32, "mark device bytes");
    ASSERT_U64(it->block_bytes, 33, "mark block bytes");
    ASSERT_U64(it->kind, GS_MARK_ENDS, "mark kind");
    const struct gs_step *st = &m->steps[0];
    ASSERT_U64(st->label, 0, "step label");
    const uint64_t step_got[] = {st->start_ns, st->end_ns, st->peak_bytes, st->allocated_bytes,
                                 st->freed_bytes};
    for (size_t i = 0; i < 5; i++)
        ASSERT_U64(step_got[i], 41 + i, "step field %zu", i);
    cr_assert_eq(st->growth_bytes, -46);
    const struct gs_frag *f = &r.blocks.at_failure[0];
    cr_assert(f->present);
    ASSERT_U64(f->time_ns, 51, "failure frag time");
    cr_assert_eq(f->device, 0, "failure frag device");
    const uint64_t frag_got[] = {f->segments, f->segment_bytes, f->block_bytes, f->largest_free,
                                 f->outside_bytes};
    for (size_t i = 0; i < 5; i++)
        ASSERT_U64(frag_got[i], 52 + i, "failure frag field %zu", i);
    cr_assert_eq(r.blocks.nsites, 1);
    const struct gs_site *bs = &r.blocks.sites[0];
    const uint64_t site_got[] = {bs->stack_id, bs->allocs, bs->alloc_bytes, bs->live_bytes,
                                 bs->live_count, bs->saved_bytes, bs->saved_count,
                                 bs->saved_epoch};
    for (size_t i = 0; i < 8; i++)
        ASSERT_U64(site_got[i], 61 + i, "block site field %zu", i);
    const struct gs_block *blk = NULL;
    for (size_t i = 0; i < r.blocks.nblocks; i++)
        if (gs_blocks_slot_live(&r.blocks, i))
            blk = &r.blocks.blocks[i];
    cr_assert_not_null(blk, "the block");
    ASSERT_U64(blk->addr, 0x9000, "block addr");
    ASSERT_U64(blk->size, 71, "block size");
    ASSERT_U64(blk->time_ns, 72, "block time");
    ASSERT_U64(blk->site, 0, "block site");
    ASSERT_U64(blk->tid, 73, "block tid");
    const uint64_t totals[] = {m->marks, m->nsteps, m->labels_dropped, m->bytes_in,
                               m->bytes_out, m->since_peak, r.blocks.allocs, r.blocks.frees,
                               r.blocks.frees_unknown, r.blocks.live_bytes,
                               r.blocks.live_count, r.blocks.peak_bytes,
                               r.blocks.peak_time_ns, r.blocks.peak_epoch};
    const uint64_t totals_want[] = {1, 1, 81, 82, 83, 84, 85, 86, 87, 71, 1, 88, 89, 90};
    for (size_t i = 0; i < 14; i++)
        ASSERT_U64(totals[i], totals_want[i], "API_END total %zu", i);
    cr_assert(r.blocks.seen && r.blocks.peak_pending);
    const struct gs_frag *pk = &r.blocks.at_peak;
    cr_assert(pk->present);
    ASSERT_U64(pk->time_ns, 91, "peak frag time");
    cr_assert_eq(pk->device, -1, "peak frag device");
    const uint64_t peak_got[] = {pk->segments, pk->segment_bytes, pk->block_bytes,
                                 pk->largest_free, pk->outside_bytes};
    for (size_t i = 0; i < 5; i++)
        ASSERT_U64(peak_got[i], 92 + i, "peak frag field %zu", i);

    struct buf out = checkpoint(&r);
    ASSERT_U64(out.n, n, "as many bytes written back");
    cr_assert_eq(memcmp(out.p, b, n), 0, "the records written back byte for byte");
    free(out.p);
    gs_replay_free(&r);
}

/* ---- hostile ---- */

/* A replay after hostile loading is still usable: events, figures, and a
 * checkpoint of it that reads back. */
static void use(struct gs_replay *r)
{
    replay(r, &seq, seq.n / 2, seq.n);
    gs_replay_finish(r);
    struct gs_frag f;
    gs_blocks_fragmentation(r, -1, &f);
    uint64_t n;
    for (size_t i = 0; i < r->blocks.nsites; i++)
        gs_block_site_peak_bytes(&r->blocks, &r->blocks.sites[i], &n);
    struct buf b = checkpoint(r);
    struct gs_replay again;
    gs_replay_init(&again);
    load(&again, b.p, b.n);
    gs_replay_free(&again);
    free(b.p);
}

/* The bytes of a label record's payload (at p, len bytes) up to its step
 * fields: its index, its string and its 16 fields, as old writers ended it. */
static size_t label_before_step(const uint8_t *p, uint64_t len)
{
    const uint8_t *q = p, *end = p + len;
    uint64_t v = 0;
    cr_assert_eq(gs_get_varint(&q, end, &v), 0, "the index");
    cr_assert_eq(gs_get_varint(&q, end, &v), 0, "the string's length");
    q += v;
    for (int i = 0; i < 16; i++)
        cr_assert_eq(gs_get_varint(&q, end, &v), 0, "field %d", i);
    return (size_t)(q - p);
}

Test(api_checkpoint_hostile, every_record_cut_at_every_byte)
{
    schedule(&seq);
    struct gs_replay a;
    gs_replay_init(&a);
    define(&a);
    replay(&a, &seq, 0, seq.n * 2 / 3);
    struct buf b = checkpoint(&a);
    uint8_t *copy = malloc(b.n);
    cr_assert_not_null(copy);
    size_t tested = 0;
    for (size_t at = 0; at < b.n;) {
        const uint8_t *q = b.p + at + 1;
        uint64_t len = 0;
        cr_assert_eq(gs_get_varint(&q, b.p + b.n, &len), 0);
        size_t pstart = (size_t)(q - b.p), next = pstart + (size_t)len;
        uint8_t type = b.p[at];
        if (type >= GS_REC_CKPT_API_FIRST && type <= GS_REC_CKPT_API_LAST) {
            for (size_t keep = 0; keep < len; keep++) {
                memcpy(copy, b.p, at);
                size_t n = at + record(copy + at, type, b.p + pstart, keep);
                memcpy(copy + n, b.p + next, b.n - next);
                n += b.n - next;
                struct gs_replay r;
                gs_replay_init(&r);
                /* a label cut where an old writer's ended is an old writer's
                 * label (test_api_checkpoint's an_old_writers_label) */
                if ((type == GS_REC_CKPT_MARK_LABEL && keep == label_before_step(b.p + pstart, len)) ||
                    (type == GS_REC_CKPT_API_ITEM && b.p[pstart] == 0 && keep == len - 1))
                    cr_assert_eq(load(&r, copy, n), 0, "a label or a mark as old writers wrote it");
                else
                    cr_assert_geq(load(&r, copy, n), 1, "type %u cut to %zu of %llu bytes", type,
                                  keep, (unsigned long long)len);
                if (tested % 8 == 0)
                    use(&r);
                gs_replay_free(&r);
                tested++;
            }
        }
        at = next;
    }
    cr_assert_gt(tested, 200);
    free(copy);
    free(b.p);
    gs_replay_free(&a);
}

Test(api_checkpoint_hostile, out_of_place_out_of_range_and_twice)
{
    uint8_t b[1024];
    size_t n;
    struct gs_replay r;
    gs_replay_init(&r);
    /* before any BEGIN */
    n = REC(b, GS_REC_CKPT_BLOCK_SITE, 1, 1, 1, 1, 1, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "a block site before BEGIN");
    n = REC(b, GS_REC_CKPT_BEGIN, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 0, "BEGIN");
    /* a label: index 0, "s", stack 1, 1 mark, then 14 more fields */
    uint8_t lab[64] = {GS_REC_CKPT_MARK_LABEL, 0, 0, 1, 's', 1, 1};
    size_t ln = 7;
    for (int i = 0; i < 14; i++)
        lab[ln++] = 0;
    lab[1] = (uint8_t)(ln - 2);
    uint8_t badlab[64];
    memcpy(badlab, lab, ln);
    badlab[2] = 1; /* index 1 before index 0 */
    ASSERT_U64(damaged(&r, badlab, ln), 1, "a label out of order");
    memcpy(badlab, lab, ln);
    badlab[6] = 0; /* no marks */
    ASSERT_U64(damaged(&r, badlab, ln), 1, "a label never marked");
    ASSERT_U64(damaged(&r, lab, ln), 0, "a label");
    lab[2] = 1;
    ASSERT_U64(damaged(&r, lab, ln), 1, "the same label again");
    n = REC(b, GS_REC_CKPT_API_ITEM, 0, 0, 5, 1, 1, 1);
    ASSERT_U64(damaged(&r, b, n), 1, "a mark of a label that is not there");
    n = REC(b, GS_REC_CKPT_API_ITEM, 0, 0, GS_MARK_OTHER, 1, 1, 1);
    ASSERT_U64(damaged(&r, b, n), 0, "a mark of a label not followed");
    n = REC(b, GS_REC_CKPT_API_ITEM, 1, 0, GS_MARK_OTHER, 1, 2, 3, 4, 5, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "a step of a label not followed");
    n = REC(b, GS_REC_CKPT_API_ITEM, 2, 0, 1, 1, 0, 1, 1, 1, 1, 1);
    ASSERT_U64(damaged(&r, b, n), 1, "figures of a failure that is not there");
    n = REC(b, GS_REC_CKPT_API_ITEM, 3, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "an item of no kind");
    n = REC(b, GS_REC_CKPT_BLOCK, 0x1000, 10, 1, 4, 1);
    ASSERT_U64(damaged(&r, b, n), 1, "a block of no site");
    n = REC(b, GS_REC_CKPT_BLOCK_SITE, 4, 1, 10, 10, 1, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 0, "a block site");
    ASSERT_U64(damaged(&r, b, n), 1, "the block site again");
    n = REC(b, GS_REC_CKPT_BLOCK, 0x1000, 10, 1, 4, 1);
    ASSERT_U64(damaged(&r, b, n), 0, "a block");
    ASSERT_U64(damaged(&r, b, n), 1, "the block again");
    /* API_END: 14 totals, seen, pending, a fragmentation of 8, 6 counts */
    uint64_t end[30] = {0};
    end[0] = 1;  /* marks */
    end[9] = 10; /* live block bytes */
    end[10] = 1; /* live blocks */
    end[14] = 1; /* seen */
    end[16 + 8 + 0] = 1; /* labels */
    end[16 + 8 + 1] = 1; /* recent marks */
    end[16 + 8 + 4] = 1; /* block sites */
    end[16 + 8 + 5] = 2; /* blocks: one more than came */
    n = rec_u(b, GS_REC_CKPT_API_END, end, 30);
    ASSERT_U64(damaged(&r, b, n), 1, "counts that do not match");
    end[16 + 8 + 5] = 1;
    end[10] = 2;
    n = rec_u(b, GS_REC_CKPT_API_END, end, 30);
    ASSERT_U64(damaged(&r, b, n), 1, "live blocks that are not the blocks that came");
    end[10] = 1;
    end[9] = 11;
    n = rec_u(b, GS_REC_CKPT_API_END, end, 30);
    ASSERT_U64(damaged(&r, b, n), 1, "live block bytes that are not the blocks' bytes");
    end[9] = 10;
    end[15] = 2;
    n = rec_u(b, GS_REC_CKPT_API_END, end, 30);
    ASSERT_U64(damaged(&r, b, n), 1, "pending is 0 or 1");
    end[15] = 0;
    end[16 + 2] = gs_zigzag(GS_MAX_DEVICES); /* the fragmentation's device */
    n = rec_u(b, GS_REC_CKPT_API_END, end, 30);
    ASSERT_U64(damaged(&r, b, n), 1, "a device out of range");
    end[16 + 2] = 0;
    n = rec_u(b, GS_REC_CKPT_API_END, end, 30);
    ASSERT_U64(damaged(&r, b, n), 0, "API_END");
    n = REC(b, GS_REC_CKPT_BLOCK_SITE, 5, 1, 10, 10, 1, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "after API_END");
    n = REC(b, GS_REC_CKPT_END, 0, 0, 0, 0, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 0, "END");
    ASSERT_U64(r.blocks.live_count, 1, "the block loaded");
    ASSERT_U64(r.marks.marks, 1, "the mark loaded");
    /* what was loaded holds together */
    struct gs_revent e = {.type = GS_REC_BLOCK_FREE, .time_ns = 5, .addr = 0x1000};
    gs_replay_event(&r, &e);
    ASSERT_U64(r.blocks.live_bytes, 0, "the loaded block taken back");
    gs_replay_free(&r);

    /* the marks' and blocks' records without their API_END: END refuses */
    gs_replay_init(&r);
    n = REC(b, GS_REC_CKPT_BEGIN, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 0, "BEGIN");
    n = REC(b, GS_REC_CKPT_BLOCK_SITE, 4, 1, 10, 10, 1, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 0, "a block site");
    n = REC(b, GS_REC_CKPT_END, 0, 0, 0, 0, 0, 0, 0);
    ASSERT_U64(damaged(&r, b, n), 1, "END without API_END");
    gs_replay_free(&r);
}

/* A record of the marks' and blocks' checkpoint (or, one in eight, of the
 * others'), of random fields, sometimes with a label's string among them,
 * sometimes cut inside a field. */
static size_t random_api_record(uint8_t *out, uint64_t *seed)
{
    uint8_t payload[512];
    size_t len = 0, nf = rnd(seed) % 32;
    if (rnd(seed) % 4 == 0) { /* a label's string among the fields */
        len += gs_put_varint(payload + len, rnd(seed) % 3);
        size_t sl = rnd(seed) % 300;
        len += gs_put_varint(payload + len, sl);
        for (size_t i = 0; i < sl && len < 400; i++)
            payload[len++] = (uint8_t)rnd(seed);
    }
    for (size_t f = 0; f < nf && len < 480; f++)
        len += gs_put_varint(payload + len, field(seed));
    if (rnd(seed) % 4 == 0)
        len = rnd(seed) % (len + 1);
    const uint64_t ntypes = GS_REC_CKPT_API_LAST - GS_REC_CKPT_API_FIRST + 1;
    uint8_t type = (uint8_t)(GS_REC_CKPT_API_FIRST + rnd(seed) % ntypes);
    if (rnd(seed) % 8 == 0)
        type = (uint8_t)(GS_REC_CKPT_FIRST + rnd(seed) % 16);
    return record(out, type, payload, len);
}

Test(api_checkpoint_hostile, random_records_after_a_real_checkpoint)
{
    schedule(&seq);
    struct gs_replay a;
    gs_replay_init(&a);
    define(&a);
    replay(&a, &seq, 0, seq.n / 2);
    struct buf good = checkpoint(&a);
    gs_replay_free(&a);
    random_rounds(&good, 99, 400, random_api_record, 0, use);
    free(good.p);
}
