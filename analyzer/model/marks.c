/*
 * marks.c - the program's marks (gpushim_mark, include/gpushim.h) and the
 * steps between them, within the one streaming pass of replay.c.
 *
 * A step runs from a mark to the next mark of the same label, so that
 * "step" marks at every iteration and "epoch" marks at every epoch make two
 * series of steps that overlap. For each step: its device peak (the most
 * device bytes live at any moment of it), the device bytes that became
 * live and that stopped being live during it, and its growth (bytes at its
 * end less bytes at its start, which is the first less the second).
 *
 * Memory stays bounded however many marks a run makes: one entry per label
 * (at most GS_MARK_LABELS; marks of further labels are counted, not
 * followed) with its running totals, and the last GS_MARKS_KEPT marks and
 * GS_STEPS_KEPT steps in rings. The peak of a step is kept without work per
 * allocation for each label: the replay keeps one figure, the most bytes
 * live since the last mark of any label, and each mark folds it into every
 * label's open step (at most GS_MARK_LABELS of them) before starting anew.
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

/* The label's open step ends now: its figures, into its totals and the ring. */
static void end_step(struct gs_replay *r, uint32_t idx, uint64_t now)
{
    struct gs_marks *m = &r->marks;
    struct gs_mark_label *l = &m->labels[idx];
    struct gs_step st = {.label = idx,
                         .start_ns = l->last_ns,
                         .end_ns = now,
                         .peak_bytes = l->step_peak,
                         .allocated_bytes = m->bytes_in - l->start_in,
                         .freed_bytes = m->bytes_out - l->start_out,
                         .growth_bytes = (int64_t)(r->live_bytes - l->start_bytes)};
    l->steps++;
    if (l->steps == 1 || st.peak_bytes > l->max_peak) {
        l->max_peak = st.peak_bytes;
        l->max_peak_end_ns = now;
    }
    if (l->steps == 1 || st.growth_bytes > l->max_growth)
        l->max_growth = st.growth_bytes;
    l->allocated += st.allocated_bytes;
    l->freed += st.freed_bytes;
    /* saturated: a hostile trace's steps may add up past 2^63 */
    if (__builtin_add_overflow(l->growth, st.growth_bytes, &l->growth))
        l->growth = st.growth_bytes > 0 ? INT64_MAX : INT64_MIN;
    l->growing += st.growth_bytes > 0;
    m->steps[m->nsteps++ % GS_STEPS_KEPT] = st;
}

void gs_marks_on_mark(struct gs_replay *r, const struct gs_revent *e)
{
    struct gs_marks *m = &r->marks;
    if (!ready(m)) {
        m->marks++;
        m->labels_dropped++;
        return;
    }
    /* every open step has had at least the most seen since the last mark */
    for (size_t i = 0; i < m->nlabels; i++)
        if (m->labels[i].marks && m->since_peak > m->labels[i].step_peak)
            m->labels[i].step_peak = m->since_peak;
    uint32_t idx = gs_marks_label(m, e->label ? e->label : "", e->label ? e->label_len : 0, 1);
    if (idx == GS_MARK_OTHER) {
        m->labels_dropped++;
    } else {
        struct gs_mark_label *l = &m->labels[idx];
        if (l->marks) {
            end_step(r, idx, e->time_ns);
        } else {
            l->first_ns = e->time_ns;
            l->stack_id = e->stack_id;
        }
        l->marks++;
        l->last_ns = e->time_ns;
        l->start_bytes = r->live_bytes;
        l->start_in = m->bytes_in;
        l->start_out = m->bytes_out;
        l->step_peak = r->live_bytes;
    }
    m->recent[m->marks++ % GS_MARKS_KEPT] = (struct gs_mark_item){
        .label = idx,
        .time_ns = e->time_ns,
        .device_bytes = r->live_bytes,
        .block_bytes = r->blocks.live_bytes,
    };
    m->since_peak = r->live_bytes;
    GS_REPLAY_HOOKS_CALL(r, on_mark, idx, e->time_ns);
}
