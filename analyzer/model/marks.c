/*
 * marks.c - the program's marks (gpushim_mark, include/gpushim.h) and the
 * steps between them, within the one streaming pass of replay.c.
 *
 * Steps are per label, so that "step" marks at every iteration and "epoch"
 * marks at every epoch make two series of steps that overlap. A step
 * begins at a mark (gpushim_mark, an NVTX mark, a thread's outermost range
 * opening) and ends at the next mark of its label, or where its range ends,
 * or at the end of the run (the run's last step, often the one a failure
 * cut short). Marks made after each step (gpushim_step_end, as an
 * optimizer's post-step hook makes them) end one instead: a step runs
 * from one end to the next, the first from the start of the run, so that
 * N optimizer steps marked either way are N steps, and what the first
 * allocated before its mark is its own; what follows the last end is no
 * step. For each step: its device peak (the most device bytes live at any
 * moment of it), the device bytes that became live and that stopped being
 * live during it, and its growth (bytes at its end less bytes at its
 * start, which is the first less the second).
 *
 * Memory stays bounded however many marks a run makes: one entry per label
 * (at most GS_MARK_LABELS; marks of further labels are counted, not
 * followed) with its running totals, and the last GS_MARKS_KEPT marks and
 * GS_STEPS_KEPT steps in rings. The peak of a step is kept without work per
 * allocation for each label: the replay keeps one figure, the most bytes
 * live since the last mark of any label, and each mark (and each end of a
 * step) folds it into every label's open step (at most GS_MARK_LABELS of
 * them) before starting anew. The first step of marks made after each
 * step began with the run: its peak is the process's until its end.
 */
#include <stdlib.h>
#include <string.h>

#include "analyzer/model/model_int.h"

void gs_marks_init(struct gs_marks *m) { memset(m, 0, sizeof *m); }

void gs_marks_free(struct gs_marks *m)
{
    free(m->labels);
    free(m->recent);
    free(m->steps);
    memset(m, 0, sizeof *m);
}

/* The arrays, made on the first mark: a run without marks pays nothing. */
static int ready(struct gs_marks *m)
{
    if (m->labels)
        return 1;
    m->labels = calloc(GS_MARK_LABELS, sizeof *m->labels);
    m->recent = calloc(GS_MARKS_KEPT, sizeof *m->recent);
    m->steps = calloc(GS_STEPS_KEPT, sizeof *m->steps);
    if (m->labels && m->recent && m->steps)
        return 1;
    free(m->labels);
    free(m->recent);
    free(m->steps);
    m->labels = NULL;
    m->recent = NULL;
    m->steps = NULL;
    return 0;
}

uint32_t gs_marks_label(struct gs_marks *m, const char *label, size_t len, int make)
{
    char clean[GS_MAX_LABEL + 1];
    gs_text_copy(clean, sizeof clean, label, len); /* as the reader makes strings */
    if (!ready(m))
        return GS_MARK_OTHER;
    for (size_t i = 0; i < m->nlabels; i++)
        if (strcmp(m->labels[i].label, clean) == 0)
            return (uint32_t)i;
    if (!make || m->nlabels >= GS_MARK_LABELS)
        return GS_MARK_OTHER;
    struct gs_mark_label *l = &m->labels[m->nlabels];
    memset(l, 0, sizeof *l);
    memcpy(l->label, clean, strlen(clean) + 1);
    return (uint32_t)m->nlabels++;
}

void gs_marks_device_added(struct gs_replay *r, uint64_t size)
{
    r->marks.bytes_in += size;
    if (r->live_bytes > r->marks.since_peak)
        r->marks.since_peak = r->live_bytes;
}

void gs_marks_device_removed(struct gs_replay *r, uint64_t size) { r->marks.bytes_out += size; }

/* Every open step has had at least the most seen since the last fold; the
 * next fold starts from now. */
static void fold_peak(struct gs_replay *r)
{
    struct gs_marks *m = &r->marks;
    for (size_t i = 0; i < m->nlabels; i++)
        if (m->labels[i].open != GS_STEP_NONE && m->since_peak > m->labels[i].step_peak)
            m->labels[i].step_peak = m->since_peak;
    m->since_peak = r->live_bytes;
}

/* The label's open step ends now (cut: by the end of the run): its figures,
 * into its totals and the ring. */
static void end_step(struct gs_replay *r, uint32_t idx, uint64_t now, int cut)
{
    struct gs_marks *m = &r->marks;
    struct gs_mark_label *l = &m->labels[idx];
    struct gs_step st = {.label = idx,
                         .start_ns = l->start_ns,
                         .end_ns = now,
                         .peak_bytes = l->step_peak,
                         .allocated_bytes = m->bytes_in - l->start_in,
                         .freed_bytes = m->bytes_out - l->start_out,
                         .growth_bytes = (int64_t)(r->live_bytes - l->start_bytes),
                         .cut = (uint32_t)cut};
    l->steps++;
    l->last_start_ns = st.start_ns;
    l->last_end_ns = now;
    if (l->steps == 1) {
        l->first_start_ns = l->start_ns;
        l->first_end_ns = now;
    }
    if (l->steps == 1 || st.peak_bytes > l->max_peak) {
        l->max_peak = st.peak_bytes;
        l->max_peak_end_ns = now;
    }
    l->allocated += st.allocated_bytes;
    l->freed += st.freed_bytes;
    if (!cut) { /* a step the run cut short grew by what it had not yet freed */
        if (l->steps == 1 || st.growth_bytes > l->max_growth)
            l->max_growth = st.growth_bytes;
        /* saturated: a hostile trace's steps may add up past 2^63 */
        if (__builtin_add_overflow(l->growth, st.growth_bytes, &l->growth))
            l->growth = st.growth_bytes > 0 ? INT64_MAX : INT64_MIN;
        l->growing += st.growth_bytes > 0;
    }
    l->open = GS_STEP_NONE;
    l->range_tid = 0;
    l->range_id = 0;
    m->steps[m->nsteps++ % GS_STEPS_KEPT] = st;
}

/* What ends a step a range began: the thread of a pushed one, the id of a
 * started one (0: a mark's step). */
struct range_end {
    uint32_t tid;
    uint64_t id;
};

/* A step of the label opens now (how: enum gs_step_open), its figures from
 * here. */
static void open_step(struct gs_replay *r, struct gs_mark_label *l, uint8_t how, uint64_t now,
                      struct range_end by)
{
    l->open = how;
    l->range_tid = by.tid;
    l->range_id = by.id;
    l->start_ns = now;
    l->start_bytes = r->live_bytes;
    l->start_in = r->marks.bytes_in;
    l->start_out = r->marks.bytes_out;
    l->step_peak = r->live_bytes;
}

/* A mark of label idx: a step begins (a mark, or an outermost range: by,
 * what ends it), or ends (step_end). */
static void mark(struct gs_replay *r, uint32_t idx, const struct gs_revent *e, int step_end,
                 struct range_end by)
{
    struct gs_marks *m = &r->marks;
    fold_peak(r);
    if (idx == GS_MARK_OTHER) {
        m->labels_dropped++;
    } else {
        struct gs_mark_label *l = &m->labels[idx];
        if (!l->marks) {
            l->first_ns = e->time_ns;
            l->stack_id = e->stack_id;
            if (step_end) { /* the first step ran from the start of the run */
                l->open = GS_STEP_AFTER;
                l->start_ns = 0;
                l->start_bytes = l->start_in = l->start_out = 0;
                l->step_peak = r->peak_bytes;
            }
        }
        if (l->open == GS_STEP_BEGUN || (step_end && l->open == GS_STEP_AFTER))
            end_step(r, idx, e->time_ns, 0);
        l->marks++;
        l->nvtx_marks += e->type == GS_REC_RANGE || (e->flags & GS_MARK_NVTX);
        l->last_ns = e->time_ns;
        open_step(r, l, step_end ? GS_STEP_AFTER : GS_STEP_BEGUN, e->time_ns, by);
    }
    m->recent[m->marks++ % GS_MARKS_KEPT] = (struct gs_mark_item){
        .label = idx,
        .kind = e->type == GS_REC_RANGE ? GS_MARK_RANGE : step_end ? GS_MARK_ENDS : GS_MARK_BEGINS,
        .time_ns = e->time_ns,
        .device_bytes = r->live_bytes,
        .block_bytes = r->blocks.live_bytes,
    };
    GS_REPLAY_HOOKS_CALL(r, on_mark, idx, e->time_ns);
}

static uint32_t label_of(struct gs_marks *m, const struct gs_revent *e)
{
    return gs_marks_label(m, e->label ? e->label : "", e->label ? e->label_len : 0, 1);
}

void gs_marks_on_mark(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_marks *m = &r->marks;
    if (!ready(m)) {
        m->marks++;
        m->labels_dropped++;
        return;
    }
    mark(r, label_of(m, e), e, (e->flags & GS_MARK_STEP_END) != 0, (struct range_end){0, 0});
}

void gs_marks_on_range(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_marks *m = &r->marks;
    if ((e->op == GS_RANGE_PUSH || e->op == GS_RANGE_START) && (e->flags & GS_RANGE_TOP)) {
        if (!gs_marks_range_makes_steps(e->label, e->label ? e->label_len : 0))
            return;
        if (!ready(m)) {
            m->marks++;
            m->labels_dropped++;
            return;
        }
        /* what ends it: a pushed range's pop on its thread, a started one's
         * end (of its id, on any thread) */
        struct range_end by = {0, 0};
        if (e->op == GS_RANGE_PUSH)
            by.tid = e->tid;
        else
            by.id = e->addr;
        mark(r, label_of(m, e), e, 0, by);
        return;
    }
    int pop = e->op == GS_RANGE_POP && (e->flags & GS_RANGE_TOP) && e->tid;
    if (!pop && !(e->op == GS_RANGE_END && e->addr))
        return;
    int folded = 0;
    for (size_t i = 0; i < m->nlabels; i++) {
        struct gs_mark_label *l = &m->labels[i];
        if (l->open != GS_STEP_BEGUN ||
            (pop ? !l->range_tid || l->range_tid != e->tid : l->range_id != e->addr))
            continue;
        if (!folded++)
            fold_peak(r);
        end_step(r, (uint32_t)i, e->time_ns, 0);
    }
}

void gs_marks_finish(struct gs_replay *r)
{
    struct gs_marks *m = &r->marks;
    int folded = 0;
    for (size_t i = 0; i < m->nlabels; i++) {
        struct gs_mark_label *l = &m->labels[i];
        if (l->open == GS_STEP_AFTER) {
            l->open = GS_STEP_NONE; /* what follows the last end is no step */
            continue;
        }
        if (l->open != GS_STEP_BEGUN)
            continue;
        if (!folded++)
            fold_peak(r);
        l->cut = 1;
        end_step(r, (uint32_t)i, r->last_time_ns, 1);
    }
}

int gs_marks_better_counts(uint64_t marks_a, uint64_t nvtx_a, int a_first, uint64_t marks_b,
                           uint64_t nvtx_b)
{
    int own_a = marks_a > nvtx_a, own_b = marks_b > nvtx_b;
    if (own_a != own_b)
        return own_a;
    return marks_a > marks_b || (marks_a == marks_b && a_first);
}

int gs_marks_better_steps(const struct gs_marks *m, uint32_t a, uint32_t b)
{
    if (a >= m->nlabels)
        return 0;
    if (b >= m->nlabels)
        return 1;
    const struct gs_mark_label *x = &m->labels[a], *y = &m->labels[b];
    return gs_marks_better_counts(x->marks, x->nvtx_marks, a < b, y->marks, y->nvtx_marks);
}

uint32_t gs_marks_step_label(const struct gs_marks *m)
{
    uint32_t best = GS_MARK_OTHER;
    for (uint32_t i = 0; i < m->nlabels; i++)
        if (gs_marks_better_steps(m, i, best))
            best = i;
    return best;
}

/* Finds "needle" in the len bytes at s. */
static int contains(const char *s, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(s + i, needle, n) == 0)
            return 1;
    return 0;
}

int gs_marks_range_makes_steps(const char *label, size_t len)
{
    return !label || !(contains(label, len, ", seq = ") || contains(label, len, ", op_id = "));
}
